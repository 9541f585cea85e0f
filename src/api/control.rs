//! Requests from the HTTP endpoint and ubus to the daemon's owner task. Each
//! carries a one-shot reply channel; the owner answers from its own state, so
//! the API never reads daemon state concurrently.

use super::model::Snapshot;
use smol::channel::{bounded, Sender};

/// Why the owner refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Unknown VIP or check (HTTP 404, ubus NOT_FOUND).
    NotFound(String),
    /// Bad arguments (HTTP 400, ubus INVALID_ARGUMENT).
    BadRequest(String),
    /// The daemon is stopping or busy (HTTP 503, ubus UNKNOWN_ERROR).
    Unavailable(String),
    /// A trigger refused by the per-VIP rate limit or because another one of
    /// the VIP runs with a different check selection: try again after
    /// `retry_after` (HTTP 429 with Retry-After, ubus UNKNOWN_ERROR).
    Busy {
        message: String,
        retry_after: std::time::Duration,
    },
}

impl ApiError {
    /// What went wrong, without the caller-supplied names the message may
    /// hold: for log lines.
    pub fn kind(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not found",
            ApiError::BadRequest(_) => "bad request",
            ApiError::Unavailable(_) => "daemon unavailable",
            ApiError::Busy { .. } => "busy (rate limit or another trigger running)",
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::NotFound(m) | ApiError::BadRequest(m) | ApiError::Unavailable(m) => {
                f.write_str(m)
            }
            ApiError::Busy { message, .. } => f.write_str(message),
        }
    }
}

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
