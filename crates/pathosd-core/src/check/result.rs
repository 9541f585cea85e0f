//! What one probe run produced.

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The outcome of one probe run: pass/fail, a one-line human detail, how long
/// it took, whether the check timeout cut it short, and type-specific values
/// (status code, RTTs, answers...) for /status and detailed metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    pub ok: bool,
    pub detail: String,
    pub duration: Duration,
    pub timed_out: bool,
    pub details: BTreeMap<String, Value>,
}

impl CheckResult {
    pub fn pass(detail: impl Into<String>) -> CheckResult {
        CheckResult {
            ok: true,
            detail: detail.into(),
            duration: Duration::ZERO,
            timed_out: false,
            details: BTreeMap::new(),
        }
    }

    pub fn fail(detail: impl Into<String>) -> CheckResult {
        CheckResult {
            ok: false,
            ..CheckResult::pass(detail)
        }
    }

    /// Adds a type-specific detail.
    pub fn with(mut self, key: &str, v: impl Into<Value>) -> CheckResult {
        self.details.insert(key.to_string(), v.into());
        self
    }
}
