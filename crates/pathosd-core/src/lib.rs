//! pathosd's pure layers (docs/architecture.md, "Modules"): no sockets, no
//! clock reads, no logging, no `unsafe`. The compiler checks the layering:
//! this crate depends on no runtime, socket or libc crate, so a driver
//! concern cannot creep in without a Cargo.toml change. The pathosd crate
//! re-exports every module here at the same path (`pathosd::config`,
//! `pathosd::bgp::wire`, ...).
#![forbid(unsafe_code)]

pub mod api;
pub mod bfd;
pub mod bgp;
pub mod check;
pub mod config;
pub mod daemon;
pub mod intern;
pub mod time;
pub mod vip;

/// Whether this build links TLS (the cargo feature `tls`, on by default):
/// https checks and gRPC over TLS. The OpenWrt package pathosd has it,
/// pathosd-nossl does not (docs/openwrt.md).
pub const TLS: bool = cfg!(feature = "tls");
/// Whether this build has the OpenTelemetry export (feature `without-otel`
/// takes it away, for benches/otel-size.sh's measurement).
pub const OTEL: bool = !cfg!(feature = "without-otel");

/// The error a build without TLS gives for each config option that needs it,
/// naming the package that has it.
pub const NEEDS_TLS: &str = "needs pathosd built with TLS (package pathosd, not pathosd-nossl)";
