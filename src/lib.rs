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
pub mod sys;
pub mod ubus;
pub mod vip;
