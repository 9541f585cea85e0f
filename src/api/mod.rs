//! The local HTTP endpoint and the shared API model: a minimal HTTP/1.1
//! server, Prometheus text, the snapshot types and the owner-task control
//! channel that HTTP and ubus both use. The model, the renderers and the
//! access rules are pure (crate pathosd-core, re-exported at the same paths).

pub use pathosd_core::api::{access, metrics, model, page, prom, status, stream};

pub mod control;
pub mod http;
pub mod routes;
pub mod ubus_methods;
