//! pathosd: a health-aware BGP VIP announcer for OpenWrt routers.
//!
//! The crate is split into pure layers (no sockets, no clock) and thin smol
//! drivers; see docs/architecture.md.

pub mod api;
pub mod bgp;
pub mod check;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod logging;
pub mod rt;
pub mod sys;
pub mod ubus;
pub mod vip;

/// Whether this build links TLS (the cargo feature `tls`, on by default):
/// https checks and gRPC over TLS. The OpenWrt package pathosd has it,
/// pathosd-nossl does not (docs/openwrt.md).
pub const TLS: bool = cfg!(feature = "tls");

/// The error a build without TLS gives for each config option that needs it,
/// naming the package that has it.
pub const NEEDS_TLS: &str = "needs pathosd built with TLS (package pathosd, not pathosd-nossl)";

/// The second line of `pathosd --version`: the optional features of this
/// build, `+name` when built in and `-name` when left out, so the package
/// variant shows from the binary alone.
pub(crate) fn features_line() -> String {
    format!("features: {}tls", if TLS { "+" } else { "-" })
}
