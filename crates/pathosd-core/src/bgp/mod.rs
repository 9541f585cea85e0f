//! The pure BGP layers: `wire` (codec), `fsm` (RFC 4271 state machine),
//! RIB-out and the per-peer settings a config gives. The smol driver is in
//! the pathosd crate (`pathosd::bgp::driver`).

pub mod fsm;
pub mod rib_out;
pub mod settings;
pub mod types;
pub mod wire;
