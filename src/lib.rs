//! pathosd: a health-aware BGP VIP announcer for OpenWrt routers.
//!
//! The crate is split into pure layers (no sockets, no clock), which live in
//! the workspace crate pathosd-core and are re-exported here at the same
//! paths, and thin smol drivers; see docs/architecture.md.

pub mod api;
pub mod bgp;
pub mod chan;
pub mod check;
pub mod cli;
pub mod config_file;
pub mod daemon;
pub mod logging;
pub(crate) mod net;
pub mod pool;
pub mod rt;
pub mod sys;
pub mod ubus;

pub use pathosd_core::{bfd, config, intern, vip};

/// Whether this build links TLS (the cargo feature `tls`, forwarded to
/// pathosd-core, whose config validation asks) and the error naming the
/// package that has it.
pub use pathosd_core::{NEEDS_TLS, TLS};

/// The second line of `pathosd --version`: the optional features of this
/// build, `+name` when built in and `-name` when left out, so the package
/// variant shows from the binary alone.
pub(crate) fn features_line() -> String {
    format!("features: {}tls", if TLS { "+" } else { "-" })
}
