//! Requests from the HTTP endpoint and ubus to the daemon's owner task. Each
//! carries a one-shot reply channel; the owner answers from its own state, so
//! the API never reads daemon state concurrently.

use super::model::Snapshot;
use crate::check::CheckResult;
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

/// Longest caller-supplied string written to the log, in characters.
pub(crate) const LOGGED_NAME_CHARS: usize = 64;

/// A string a caller supplied (VIP or check name, ...), as it goes into a log
/// line: Debug-quoted (control characters escaped) and cut after
/// [`LOGGED_NAME_CHARS`] characters with "…", so that one request cannot
/// write an arbitrarily long line (logd keeps a small ring on a router).
pub(crate) struct Quoted<'a>(pub &'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // char_indices: the cut is always at a char boundary.
        match self.0.char_indices().nth(LOGGED_NAME_CHARS) {
            Some((i, _)) => write!(f, "{:?}…", &self.0[..i]),
            None => write!(f, "{:?}", self.0),
        }
    }
}

/// The outcome of an ad-hoc check trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerOutcome {
    pub vip: String,
    /// Each check that ran, by name, in config order.
    pub results: Vec<(String, CheckResult)>,
    /// checks_policy over these results (checks that did not run count as failed).
    pub combined: bool,
    /// The VIP state after the results went through the hysteresis.
    pub state: &'static str,
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_names_are_cut_at_a_char_boundary() {
        assert_eq!(Quoted("web").to_string(), "\"web\"");
        assert_eq!(Quoted("a\nb").to_string(), "\"a\\nb\"");
        let exact = "x".repeat(LOGGED_NAME_CHARS);
        assert_eq!(Quoted(&exact).to_string(), format!("{exact:?}"));
        // Multi-byte characters: 64 of them, never a split one.
        let long = "é".repeat(900_000);
        let q = Quoted(&long).to_string();
        assert_eq!(q, format!("{:?}…", "é".repeat(LOGGED_NAME_CHARS)));
        assert!(q.len() < 200);
    }
}
