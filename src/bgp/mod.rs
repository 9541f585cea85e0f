//! BGP speaker: `wire` (codec), `fsm` (RFC 4271 state machine), RIB-out and
//! the peer settings are pure (crate pathosd-core, re-exported here at the
//! same paths); the smol driver is here.

pub use pathosd_core::bgp::{fsm, rib_out, settings, types, wire};

pub mod driver;
pub mod speaker;
