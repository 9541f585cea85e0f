//! Health checks: probes, rise/fall hysteresis, checks policy and the scheduler.
//!
//! Daemon wiring: the owner builds a VIP's [`scheduler::CheckLoop`]s
//! ([`scheduler::build`]) with the check ids its engine gave, spawns
//! [`scheduler::run_check_loop`] for each, and feeds every raw result into
//! the engine ([`crate::daemon::engine`]), which owns each check's
//! [`Hysteresis`] and the VIP's [`policy::Combiner`]; an ad-hoc trigger is
//! a message to the check's loop.
//!
//! Hysteresis, policy, results and the JSON matcher are pure (crate
//! pathosd-core, re-exported at the same paths).

pub use pathosd_core::check::{body, hysteresis, jsonmatch, policy, result};

pub mod guard;
pub mod probe;
pub mod scheduler;

pub use hysteresis::{Hysteresis, Transition};
pub use policy::Combiner;
pub use probe::Probe;
pub use result::CheckResult;
pub use scheduler::{CheckLoop, Schedule};
