//! The pure side of the API: the snapshot model, the renderers over it
//! (status JSON, Prometheus text, the HTML page), the rules a mutating
//! request must pass and the routing (`router`: a request in, the answer and
//! the line to log out). The HTTP server, the owner-task control channel and
//! the logging are in the pathosd crate (`pathosd::api`).

pub mod access;
pub mod metrics;
pub mod model;
pub mod otlp;
pub mod page;
pub mod prom;
pub mod router;
pub mod status;
pub mod stream;

use crate::check::CheckResult;

/// Longest caller-supplied string written to the log, in characters.
pub const LOGGED_NAME_CHARS: usize = 64;

/// A string a caller supplied (VIP or check name, ...), as it goes into a log
/// line: Debug-quoted (control characters escaped) and cut after
/// [`LOGGED_NAME_CHARS`] characters with "…", so that one request cannot
/// write an arbitrarily long line (logd keeps a small ring on a router).
pub struct Quoted<'a>(pub &'a str);

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
