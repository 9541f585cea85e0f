//! The daemon's pure parts: the engine the owner task holds, the ad-hoc
//! trigger bookkeeping, the reload plan and what the owner answers from
//! its state (`views`). The owner loop itself is in the
//! pathosd crate (`pathosd::daemon`).

pub mod engine;
pub mod reload;
pub mod triggers;
pub mod views;
