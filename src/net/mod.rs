//! The network clients the daemon shares: the health probes (`check::probe`)
//! and the OTLP exporter (`daemon::otel`) reach their peers with them. Name
//! lookup ([`lookup`]), TCP connects ([`tcp`]), one HTTP/1.1 exchange
//! ([`http1`]), a unary gRPC call over the project's own HTTP/2 client
//! ([`grpc`]) and, with the `tls` feature, the TLS client configurations
//! ([`tls`]; without it, a stand-in whose configurations cannot exist).
//! What a probe makes of an answer (health) stays in the probe.

pub(crate) mod grpc;
pub(crate) mod http1;
pub(crate) mod lookup;
pub(crate) mod tcp;
#[cfg(feature = "tls")]
pub(crate) mod tls;
#[cfg(not(feature = "tls"))]
#[path = "no_tls.rs"]
pub(crate) mod tls;

pub(crate) use lookup::{addrs, lookup, resolve};
pub(crate) use tcp::{connect_tcp, Connected};

use smol::future::FutureExt;
use std::io;
use std::time::Instant;

/// An io::Error as a short lower-case phrase ("connection refused").
pub(crate) fn io_msg(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => return "connection refused".into(),
        io::ErrorKind::ConnectionReset => return "connection reset".into(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => return "timed out".into(),
        io::ErrorKind::UnexpectedEof => return "connection closed".into(),
        _ => {}
    }
    let s = e.to_string();
    let s = match s.find(" (os error") {
        Some(i) => &s[..i],
        None => &s,
    };
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => "error".into(),
    }
}

/// Awaits `fut` until `deadline`; None when the deadline came first.
///
/// Not an `async fn`: as one, its future held `fut` three times (the
/// argument, the block that awaits it, and the `Or` that holds the block),
/// and every probe's and export's future is one of these (an OTLP send:
/// 27 KB instead of 9 KB).
pub(crate) fn until<T>(
    deadline: Instant,
    fut: impl std::future::Future<Output = T>,
) -> impl std::future::Future<Output = Option<T>> {
    async { Some(fut.await) }.or(async move {
        crate::rt::sleep_until(deadline).await;
        None
    })
}
