//! Requests from the HTTP endpoint and ubus to the daemon's owner task. Each
//! carries a one-shot reply channel; the owner answers from its own state, so
//! the API never reads daemon state concurrently.

use super::model::Snapshot;
use smol::channel::{bounded, Sender};

pub use pathosd_core::api::router::ApiError;
pub use pathosd_core::api::{Quoted, TriggerOutcome, LOGGED_NAME_CHARS};

pub enum Control {
    Snapshot {
        reply: Sender<Snapshot>,
    },
    /// Run the VIP's checks (or only `check`) now, through the hysteresis.
    Trigger {
        vip: String,
        check: Option<String>,
        reply: Sender<Result<TriggerOutcome, ApiError>>,
    },
    /// Drain (pessimize) a VIP at runtime, or stop draining it.
    Drain {
        vip: String,
        enable: bool,
        reply: Sender<Result<&'static str, ApiError>>,
    },
    /// Re-read the config file; errors are the validation messages.
    Reload {
        reply: Sender<Result<(), Vec<String>>>,
    },
}

/// The sending side, cloned into the HTTP handler and the ubus server.
#[derive(Clone)]
pub struct ControlHandle {
    tx: Sender<Control>,
}

fn gone() -> ApiError {
    ApiError::Unavailable("daemon is stopping".into())
}

impl ControlHandle {
    pub fn new(tx: Sender<Control>) -> ControlHandle {
        ControlHandle { tx }
    }

    pub async fn snapshot(&self) -> Result<Snapshot, ApiError> {
        let (reply, rx) = bounded(1);
        self.tx
            .send(Control::Snapshot { reply })
            .await
            .map_err(|_| gone())?;
        rx.recv().await.map_err(|_| gone())
    }

    pub async fn trigger(
        &self,
        vip: &str,
        check: Option<&str>,
    ) -> Result<TriggerOutcome, ApiError> {
        let (reply, rx) = bounded(1);
        self.tx
            .send(Control::Trigger {
                vip: vip.to_string(),
                check: check.map(str::to_string),
                reply,
            })
            .await
            .map_err(|_| gone())?;
        rx.recv().await.map_err(|_| gone())?
    }

    pub async fn drain(&self, vip: &str, enable: bool) -> Result<&'static str, ApiError> {
        let (reply, rx) = bounded(1);
        self.tx
            .send(Control::Drain {
                vip: vip.to_string(),
                enable,
                reply,
            })
            .await
            .map_err(|_| gone())?;
        rx.recv().await.map_err(|_| gone())?
    }

    pub async fn reload(&self) -> Result<(), Vec<String>> {
        let (reply, rx) = bounded(1);
        self.tx
            .send(Control::Reload { reply })
            .await
            .map_err(|_| vec!["daemon is stopping".to_string()])?;
        rx.recv()
            .await
            .map_err(|_| vec!["daemon is stopping".to_string()])?
    }
}
