//! The daemon: one owner task holds all state (the pure [`engine::Engine`]),
//! fed by the check loops, the BGP speaker, the API and signals.

pub mod engine;
