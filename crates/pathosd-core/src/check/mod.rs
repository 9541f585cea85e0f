//! The pure side of health checks: rise/fall hysteresis, the checks policy
//! and a check's result (the engine applies the hysteresis to raw results,
//! `daemon::engine::CheckRun`). Probes and the
//! scheduler are in the pathosd crate (`pathosd::check`).

pub mod body;
pub mod degraded;
pub mod hysteresis;
pub mod jsonmatch;
pub mod policy;
pub mod result;

pub use body::BodyMatch;
pub use degraded::Degradation;
pub use hysteresis::{Hysteresis, Transition};
pub use policy::Combiner;
pub use result::CheckResult;
