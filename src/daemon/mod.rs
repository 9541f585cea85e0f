//! The daemon: one owner task holds all state (the pure [`engine::Engine`])
//! and is the only writer of it. Check loops, the BGP speaker, the HTTP
//! endpoint, ubus and signals feed it through typed channels
//! ([`crate::chan`]), one kind of message each; it answers
//! API requests from its own state and pushes route intents to the speaker in
//! the same step that decided them. The engine, triggers and reload diff are
//! pure (crate pathosd-core, re-exported at the same paths).

pub use pathosd_core::daemon::{engine, hooks, reload, state, triggers, views};

mod bfd;
mod flows;
pub(crate) mod hotplug;
mod http;
pub(crate) mod otel;
mod owner;
mod signals;
mod ubus;
mod watchdog;

pub use owner::{run, Options};
