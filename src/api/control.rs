//! Requests from the HTTP endpoint and ubus to the daemon's owner task. Each
//! carries a one-shot reply channel; the owner answers from its own state, so
//! the API never reads daemon state concurrently.

use super::model::{ReloadRecord, Scope, Snapshot};
use super::stream::Job;
use crate::chan::{bounded, Rx, Tx};
use std::time::Duration;

pub use pathosd_core::api::router::ApiError;
pub use pathosd_core::api::{Quoted, TriggerOutcome, LOGGED_NAME_CHARS};

pub enum Control {
    /// The daemon's state with views of the VIPs of `scope`.
    Snapshot {
        scope: Scope,
        reply: Reply<Snapshot>,
    },
    /// The next piece of a streamed answer (`api::stream`): the owner
    /// renders it from its state and sends the job back.
    Render {
        job: Box<Job>,
        reply: Reply<Box<Job>>,
    },
    /// Run the VIP's checks (or only `check`) now, through the hysteresis.
    Trigger {
        vip: String,
        check: Option<String>,
        reply: Reply<Result<TriggerOutcome, ApiError>>,
    },
    /// Drain (pessimize) a VIP at runtime, or stop draining it.
    Drain {
        vip: String,
        enable: bool,
        reply: Reply<Result<&'static str, ApiError>>,
    },
    /// procd reported a service stopped or started, netifd an interface
    /// down or up (`ubus::watch`); nothing is answered.
    Need {
        kind: crate::config::NeedKind,
        name: String,
        up: bool,
    },
    /// Re-read the config file: the reload's record (applied, or partly
    /// applied), or the validation messages of a rejected file.
    Reload {
        reply: Reply<Result<ReloadRecord, Vec<String>>>,
    },
}

/// The owner's answer to one request, whichever it was: every request's
/// one-shot reply channel carries this one type, so there is one kind of
/// reply channel, not four (each kind of channel costs a little code, see
/// [`crate::chan`]). The snapshot is boxed: inline it would make every
/// slot of every channel its size (three times the others).
pub enum Answer {
    Snapshot(Box<Snapshot>),
    Render(Box<Job>),
    Trigger(Result<TriggerOutcome, ApiError>),
    Drain(Result<&'static str, ApiError>),
    Reload(Result<ReloadRecord, Vec<String>>),
}

/// The owner's end of a request's reply channel: sends a `T` as its
/// [`Answer`].
pub struct Reply<T> {
    tx: Tx<Answer>,
    wrap: fn(T) -> Answer,
}

impl<T> Clone for Reply<T> {
    fn clone(&self) -> Self {
        Reply {
            tx: self.tx.clone(),
            wrap: self.wrap,
        }
    }
}

impl<T> Reply<T> {
    /// Answers; false when the requester is gone (it timed out).
    pub fn try_send(&self, v: T) -> bool {
        self.tx.try_send((self.wrap)(v)).is_ok()
    }
}

/// A request's reply channel: the owner's end, answering with `wrap`, and
/// the requester's.
fn reply<T>(wrap: fn(T) -> Answer) -> (Reply<T>, Rx<Answer>) {
    let (tx, rx) = bounded(1);
    (Reply { tx, wrap }, rx)
}

/// The sending side, cloned into the HTTP handler and the ubus server.
#[derive(Clone)]
pub struct ControlHandle {
    tx: Tx<Control>,
}

fn gone() -> ApiError {
    ApiError::Unavailable("daemon is stopping".into())
}

impl ControlHandle {
    pub fn new(tx: Tx<Control>) -> ControlHandle {
        ControlHandle { tx }
    }

    /// Sends `c` and waits for its answer; None when the owner is gone
    /// (the daemon is stopping).
    async fn ask_unbounded(&self, c: Control, rx: Rx<Answer>) -> Option<Answer> {
        self.tx.send(c).await.ok()?;
        rx.recv().await.ok()
    }

    /// [`Self::ask_unbounded`] for at most `limit` (the owner not
    /// answering in time is 503, [`super::routes::bounded`]): one timed
    /// wait in the binary for every request, not one per answer type.
    async fn ask(&self, c: Control, rx: Rx<Answer>, limit: Duration) -> Result<Answer, ApiError> {
        super::routes::bounded(limit, async {
            self.ask_unbounded(c, rx).await.ok_or_else(gone)
        })
        .await
    }

    /// Tells the owner of a service or interface event; false once the
    /// owner is gone (the daemon stops).
    pub fn need(&self, ev: crate::ubus::watch::NeedEvent) -> bool {
        let c = Control::Need {
            kind: ev.kind,
            name: ev.name,
            up: ev.up,
        };
        self.tx.try_send(c).is_ok()
    }

    /// The owner's snapshot of the VIPs of `scope`, within `limit`.
    pub async fn snapshot(&self, scope: Scope, limit: Duration) -> Result<Snapshot, ApiError> {
        let (reply, rx) = reply(|s| Answer::Snapshot(Box::new(s)));
        match self
            .ask(Control::Snapshot { scope, reply }, rx, limit)
            .await?
        {
            Answer::Snapshot(s) => Ok(*s),
            _ => Err(gone()),
        }
    }

    /// The job with its next piece rendered by the owner, within `limit`.
    pub async fn render(&self, job: Box<Job>, limit: Duration) -> Result<Box<Job>, ApiError> {
        let (reply, rx) = reply(Answer::Render);
        match self.ask(Control::Render { job, reply }, rx, limit).await? {
            Answer::Render(j) => Ok(j),
            _ => Err(gone()),
        }
    }

    /// Triggers the VIP's checks (or only `check`) and waits, within
    /// `limit`, for their outcome.
    pub async fn trigger(
        &self,
        vip: &str,
        check: Option<&str>,
        limit: Duration,
    ) -> Result<TriggerOutcome, ApiError> {
        let (reply, rx) = reply(Answer::Trigger);
        let c = Control::Trigger {
            vip: vip.to_string(),
            check: check.map(str::to_string),
            reply,
        };
        match self.ask(c, rx, limit).await? {
            Answer::Trigger(r) => r,
            _ => Err(gone()),
        }
    }

    /// Drains the VIP (or stops draining it), within `limit`.
    pub async fn drain(
        &self,
        vip: &str,
        enable: bool,
        limit: Duration,
    ) -> Result<&'static str, ApiError> {
        let (reply, rx) = reply(Answer::Drain);
        let c = Control::Drain {
            vip: vip.to_string(),
            enable,
            reply,
        };
        match self.ask(c, rx, limit).await? {
            Answer::Drain(r) => r,
            _ => Err(gone()),
        }
    }

    /// The reload's record, or the reasons the file was not applied; the
    /// outer error when the owner takes no more requests (the daemon is
    /// stopping): no file was read then, so none was rejected.
    pub async fn reload(&self) -> Result<Result<ReloadRecord, Vec<String>>, ApiError> {
        let (reply, rx) = reply(Answer::Reload);
        match self.ask_unbounded(Control::Reload { reply }, rx).await {
            Some(Answer::Reload(r)) => Ok(r),
            _ => Err(gone()),
        }
    }
}
