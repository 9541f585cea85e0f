//! The daemon: one owner task holds all state (the pure [`engine::Engine`])
//! and is the only writer of it. Check loops, the BGP speaker, the HTTP
//! endpoint, ubus and signals feed it through one event channel; it answers
//! API requests from its own state and pushes route intents to the speaker in
//! the same step that decided them.

pub mod engine;
mod owner;
pub mod reload;
pub mod triggers;

pub use owner::{run, Options};
