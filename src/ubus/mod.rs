//! ubus: the `pathosd` object on OpenWrt's message bus.
//!
//! `blob` and `msg` are the pure wire codec (libubox blob/blobmsg, ubus messages),
//! `client` is the smol driver that registers `pathosd` on ubusd and serves calls.
//! The small ubusd the tests use (Debian ships none) is tests/support/ubus_broker.rs,
//! outside the shipped binary.

pub mod blob;
pub mod client;
pub mod msg;
pub mod watch;

pub use blob::{BlobMsgType, BlobValue, Table};
pub use client::{
    pathosd_methods, serve, LinkStatus, Requests, UbusClient, UbusConfig, UbusHandle, UbusHandler,
    UbusReply, UbusRequest, EVENT_PEER, EVENT_VIP,
};
pub use msg::{Message, MethodSig, MsgType, UbusStatus};
