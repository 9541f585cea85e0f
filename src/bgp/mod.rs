//! BGP speaker: `wire` (codec), `fsm` (RFC 4271 state machine), RIB-out and the smol driver.

pub mod driver;
pub mod fsm;
pub mod rib_out;
pub mod session;
pub mod speaker;
pub mod types;
pub mod wire;
