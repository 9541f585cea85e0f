//! Health checks: probes, rise/fall hysteresis, checks policy and the scheduler.
//!
//! Daemon wiring: build a [`scheduler::VipChecks`] per VIP, spawn its
//! [`scheduler::VipChecks::loops`], and feed each [`scheduler::Report`] from
//! the channel into that VIP's [`policy::Combiner`]; ad-hoc triggers call
//! [`scheduler::VipChecks::trigger`].

pub mod guard;
pub mod hysteresis;
pub mod jsonmatch;
pub mod policy;
pub mod probe;
pub mod result;
pub mod scheduler;

pub use hysteresis::{Hysteresis, Transition};
pub use policy::Combiner;
pub use probe::Probe;
pub use result::CheckResult;
pub use scheduler::{CheckRunner, Report, Schedule, VipChecks};
