//! The pure side of health checks: rise/fall hysteresis, the checks policy,
//! a check's result and the report the engine consumes. Probes and the
//! scheduler are in the pathosd crate (`pathosd::check`).

pub mod hysteresis;
pub mod jsonmatch;
pub mod policy;
pub mod result;

pub use hysteresis::{Hysteresis, Transition};
pub use policy::Combiner;
pub use result::CheckResult;

/// One check result after hysteresis, as the policy layer consumes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The VIP's name.
    pub vip: String,
    /// The check's effective name (checks_policy refers to it).
    pub check: String,
    pub result: CheckResult,
    /// Health after this result.
    pub healthy: bool,
    pub consecutive_ok: u32,
    pub consecutive_fail: u32,
    /// Set only when this result crossed rise or fall.
    pub transition: Option<Transition>,
    /// Whether an ad-hoc trigger (not the schedule) ran this probe.
    pub adhoc: bool,
}
