//! The daemon's pure parts: the owner's state and its step (`state`), and
//! what it is made of: the engine, the ad-hoc trigger bookkeeping, the
//! reload plan and what the owner answers from its state (`views`). The
//! owner loop that carries the steps' effects out is in the pathosd crate
//! (`pathosd::daemon`).

pub mod engine;
pub mod hooks;
pub mod reload;
pub mod state;
pub mod triggers;
pub mod views;
