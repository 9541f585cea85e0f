//! A unary gRPC call on a new connection, over h2c (prior knowledge) or
//! TLS with ALPN h2 ([`super::tls`]), with the project's own HTTP/2 client
//! ([`h2`], [`hpack`]): a gRPC stack would cost far more than the size
//! budget allows. The grpc probe's health Check and the OTLP/gRPC
//! exporter's Export are such calls. It blocks: callers run it on the
//! bounded pool ([`crate::pool`]).

mod h2;
mod hpack;

use super::io_msg;
use super::tls::{self, H2Config};
use crate::config::target::{Host, HostPort};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// gRPC status codes by number (grpc/doc/statuscodes.md).
pub(crate) const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A status code by its name: "UNAVAILABLE (14)".
pub(crate) fn code_name(c: u32) -> String {
    match usize::try_from(c).ok().and_then(|i| CODES.get(i)) {
        Some(n) => format!("{n} ({c})"),
        None => format!("code {c}"),
    }
}

/// One unary call: where it goes, and what it sends.
pub(crate) struct Call<'a> {
    /// Tried in order until one accepts the connection.
    pub addrs: &'a [SocketAddr],
    pub tls: Option<&'a H2Config>,
    /// The `:authority` (with `port`) and the TLS server name.
    pub server_name: &'a Host,
    pub port: u16,
    /// The method, `/package.Service/Method`.
    pub path: &'a str,
    /// Lower-case names, sent as they are after the call's own headers.
    pub metadata: &'a [(String, String)],
    pub user_agent: &'a str,
    /// The request message, unframed.
    pub message: &'a [u8],
    pub deadline: Instant,
}

/// A call's answer: its grpc-status and grpc-message, and the response
/// body as it came (length-prefixed messages).
pub(crate) struct Reply {
    pub code: u32,
    pub message: String,
    pub data: Vec<u8>,
}

/// A TCP stream whose every read and write is bounded by what is left
/// until the deadline: socket timeouts alone bound each read, and a peer
/// that trickles a byte at a time could make many of them.
struct Bounded {
    tcp: TcpStream,
    deadline: Instant,
}

impl Bounded {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Bounded {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        self.tcp.set_read_timeout(Some(self.left()?))?;
        self.tcp.read(b)
    }
}

impl Write for Bounded {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.tcp.set_write_timeout(Some(self.left()?))?;
        self.tcp.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

/// Makes the call `c` on a new connection, blocking (run it on the
/// blocking pool), bounded by `c.deadline`. Errors name the address and,
/// past the connection, the method.
pub(crate) fn unary(c: &Call<'_>) -> Result<Reply, String> {
    let left = || {
        c.deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let mut tcp = Err(String::from("no address"));
    for addr in c.addrs {
        tcp = TcpStream::connect_timeout(addr, left())
            .map(|t| (t, *addr))
            .map_err(|e| format!("connect {addr}: {}", io_msg(&e)));
        if tcp.is_ok() {
            break;
        }
    }
    let (tcp, addr) = tcp?;
    let _ = tcp.set_nodelay(true);
    let tcp = Bounded {
        tcp,
        deadline: c.deadline,
    };
    let path = c.path;
    // gRPC over HTTP/2: a 5-byte prefix (compressed flag, length).
    let len = u32::try_from(c.message.len())
        .map_err(|_| format!("grpc {addr} {path}: message too large"))?;
    let mut prefix = [0u8; 5];
    prefix[1..].copy_from_slice(&len.to_be_bytes());
    let ms = left().as_millis().max(1);
    let mut headers: Vec<(String, String)> = vec![
        (":method".into(), "POST".into()),
        (
            ":scheme".into(),
            if c.tls.is_some() { "https" } else { "http" }.into(),
        ),
        (":path".into(), path.to_string()),
        (
            ":authority".into(),
            HostPort {
                host: c.server_name.clone(),
                port: c.port,
            }
            .to_string(),
        ),
        ("content-type".into(), "application/grpc".into()),
        ("te".into(), "trailers".into()),
        ("grpc-timeout".into(), format!("{ms}m")),
        ("user-agent".into(), c.user_agent.to_string()),
    ];
    headers.extend(c.metadata.iter().cloned());
    let body: [&[u8]; 2] = [&prefix, c.message];
    let resp = match c.tls {
        None => {
            let mut s = tcp;
            h2::request(&mut s, &headers, &body)
        }
        Some(cfg) => {
            let mut s = tls::connect_h2(cfg, c.server_name, tcp, addr)?;
            h2::request(&mut s, &headers, &body)
        }
    };
    let resp = resp.map_err(|e| format!("grpc {addr} {path}: {e}"))?;
    let status = resp.get(":status").unwrap_or("");
    if status != "200" {
        return Err(format!("grpc {addr} {path}: http status {status}"));
    }
    let code = match resp.get("grpc-status").map(|c| c.trim().parse::<u32>()) {
        Some(Ok(c)) => c,
        _ => return Err(format!("grpc {addr} {path}: no grpc-status")),
    };
    Ok(Reply {
        code,
        message: resp.get("grpc-message").unwrap_or("").to_string(),
        data: resp.data,
    })
}
