//! The local HTTP endpoint and the shared API model: a minimal HTTP/1.1
//! server, Prometheus text, the snapshot types and the owner-task control
//! channel that HTTP and ubus both use.

pub mod access;
pub mod control;
pub mod http;
pub mod metrics;
pub mod model;
pub mod page;
pub mod prom;
pub mod routes;
pub mod status;
pub mod ubus_methods;
