//! Health checks: probes, rise/fall hysteresis, checks policy and the scheduler.
//!
//! Daemon wiring: build a [`scheduler::VipChecks`] per VIP, spawn its
//! [`scheduler::VipChecks::loops`], and feed each [`scheduler::Report`] from
//! the channel into that VIP's [`policy::Combiner`]; ad-hoc triggers call
//! [`scheduler::VipChecks::trigger`]. Hysteresis, policy, results and the
//! JSON matcher are pure (crate pathosd-core, re-exported at the same paths).

pub use pathosd_core::check::{hysteresis, jsonmatch, policy, result};

pub mod guard;
pub mod probe;
pub mod scheduler;

pub use hysteresis::{Hysteresis, Transition};
pub use policy::Combiner;
pub use probe::Probe;
pub use result::CheckResult;
pub use scheduler::{CheckRunner, Report, Schedule, VipChecks};
