//! The local HTTP endpoint: a minimal HTTP/1.1 server and Prometheus text.

pub mod http;
pub mod prom;
