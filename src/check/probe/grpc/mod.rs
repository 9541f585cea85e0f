//! grpc: the standard grpc.health.v1.Health/Check (passes only on SERVING,
//! with an optional service name) or any unary method with ok_codes, over
//! h2c (prior knowledge) or TLS with ALPN h2. The HTTP/2 client is our own
//! ([`h2`], [`hpack`]): a gRPC stack would cost far more than the size
//! budget allows. [`unary`] makes one call on a fresh connection, for this
//! probe and for the OTLP/gRPC exporter (`daemon::otel`). Without the
//! `tls` feature only h2c is built in: `tls: true` is refused when the probe
//! is built (validation already names the option, see config::validate).

mod h2;
mod hpack;

use super::{io_msg, on_addr};
use crate::check::result::CheckResult;
use crate::config::run::GrpcSpec;
use crate::config::target::{Host, HostPort};
#[cfg(feature = "tls")]
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
#[cfg(feature = "tls")]
use rustls::crypto::CryptoProvider;
#[cfg(feature = "tls")]
use rustls::pki_types::pem::PemObject;
#[cfg(feature = "tls")]
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
#[cfg(feature = "tls")]
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// gRPC status codes by number (grpc/doc/statuscodes.md).
const CODES: [&str; 17] = [
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

/// The TLS client config; a build without TLS can never hold one.
#[cfg(feature = "tls")]
pub(crate) type TlsConfig = Arc<ClientConfig>;
#[cfg(not(feature = "tls"))]
pub(crate) type TlsConfig = std::convert::Infallible;

#[derive(Debug)]
struct Inner {
    /// Where the probe connects, as validation resolved it.
    target: HostPort,
    tls: Option<TlsConfig>,
    /// `tls_server_name`, else the target host: the `:authority` and the
    /// TLS name.
    server_name: Host,
    /// The request path, as validation resolved it (`method`, else the
    /// health Check).
    path: String,
    /// Whether this is the health Check (no `method`): its request carries
    /// `service` and only SERVING passes.
    health: bool,
    service: String,
    /// `ok_codes`, as validation resolved them.
    ok_codes: Vec<u32>,
    metadata: Vec<(String, String)>,
}

#[derive(Debug)]
pub(crate) struct GrpcProbe(Arc<Inner>);

/// Accepts any certificate (tls_insecure) but still checks the handshake
/// signatures, so the connection is at least consistent.
#[cfg(feature = "tls")]
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

#[cfg(feature = "tls")]
impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The rustls client config: ring provider, ALPN h2, the CA file `ca`
/// (else the system store), or no verification with `insecure`.
#[cfg(feature = "tls")]
pub(crate) fn tls_config(ca: Option<&str>, insecure: bool) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let mut cfg = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else {
        let (what, path) = match ca {
            Some(p) => ("tls_ca_cert", p),
            None => ("system CA file", super::http::SYSTEM_CA_FILE),
        };
        let pem = std::fs::read(path).map_err(|e| format!("reading {what} {path}: {}", io_msg(&e)));
        let certs: Vec<CertificateDer<'static>> = match (pem, ca) {
            (Ok(p), _) => CertificateDer::pem_slice_iter(&p)
                .filter_map(Result::ok)
                .collect(),
            (Err(e), Some(_)) => return Err(e),
            // No system store: every call fails verification, visibly.
            (Err(_), None) => Vec::new(),
        };
        if certs.is_empty() && ca.is_some() {
            return Err(format!("parsing tls_ca_cert {path}: no certificates found"));
        }
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(certs);
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    // RFC 9113 §3.2: HTTP/2 over TLS is negotiated with ALPN "h2".
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

impl GrpcProbe {
    /// `target`: `c`'s, as validation resolved it.
    pub fn new(spec: &GrpcSpec) -> Result<GrpcProbe, String> {
        let (c, target) = (&spec.options, &spec.target);
        if !c.tls && (c.tls_insecure || c.tls_ca_cert.is_some() || c.tls_server_name.is_some()) {
            return Err("tls_insecure, tls_ca_cert and tls_server_name need tls: true".into());
        }
        if c.tls_insecure && c.tls_ca_cert.is_some() {
            return Err("tls_insecure and tls_ca_cert are mutually exclusive".into());
        }
        #[cfg(feature = "tls")]
        let tls = if c.tls {
            Some(tls_config(c.tls_ca_cert.as_deref(), c.tls_insecure)?)
        } else {
            None
        };
        #[cfg(not(feature = "tls"))]
        let tls = if c.tls {
            return Err(format!("tls: true {}", crate::NEEDS_TLS));
        } else {
            None
        };
        let metadata = c
            .metadata
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        Ok(GrpcProbe(Arc::new(Inner {
            server_name: spec.server_name.clone(),
            target: target.clone(),
            tls,
            path: spec.path.clone(),
            health: c.method.is_none(),
            service: c.service.clone(),
            ok_codes: spec.ok_codes.clone(),
            metadata,
        })))
    }

    pub fn what(&self) -> String {
        format!("grpc {} {}", self.0.target, self.0.path)
    }

    pub fn run(&self, deadline: Instant) -> impl std::future::Future<Output = CheckResult> + '_ {
        on_addr(&self.0.target, move |addr| async move {
            let inner = self.0.clone();
            match super::blocking::pool()
                .run(move || inner.call(addr, deadline))
                .await
            {
                Ok(r) => r,
                Err(busy) => CheckResult::fail(format!("{}: {busy}", self.what())),
            }
        })
    }
}

/// A protobuf message with only field 1 as a length-delimited string
/// (grpc.health.v1.HealthCheckRequest{service}).
fn health_request(service: &str) -> Vec<u8> {
    if service.is_empty() {
        return Vec::new();
    }
    let mut m = vec![0x0a];
    let mut n = service.len();
    while n >= 0x80 {
        m.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    m.push(n as u8);
    m.extend_from_slice(service.as_bytes());
    m
}

/// HealthCheckResponse.status (field 1, varint); absent means UNKNOWN (0).
fn health_status(msg: &[u8]) -> Result<u64, String> {
    let mut i = 0usize;
    let mut status = 0;
    let varint = |i: &mut usize| -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *msg.get(*i).ok_or("truncated varint")?;
            *i += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long".into())
    };
    while i < msg.len() {
        let key = varint(&mut i)?;
        match (key >> 3, key & 7) {
            (1, 0) => status = varint(&mut i)?,
            (_, 0) => {
                varint(&mut i)?;
            }
            (_, 2) => {
                let n = usize::try_from(varint(&mut i)?).map_err(|_| "bad length")?;
                i = i
                    .checked_add(n)
                    .filter(|e| *e <= msg.len())
                    .ok_or("bad length")?;
            }
            (_, 1) => i = i.saturating_add(8),
            (_, 5) => i = i.saturating_add(4),
            _ => return Err("unsupported wire type".into()),
        }
    }
    Ok(status)
}

const SERVING_STATUS: [&str; 4] = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];

/// One unary call: where it goes, and what it sends.
pub(crate) struct Call<'a> {
    /// Tried in order until one accepts the connection.
    pub addrs: &'a [SocketAddr],
    pub tls: Option<&'a TlsConfig>,
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
        #[cfg(not(feature = "tls"))]
        Some(never) => match *never {},
        #[cfg(feature = "tls")]
        Some(cfg) => {
            let name = match c.server_name {
                Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
                Host::Name(n) => ServerName::try_from(n.clone())
                    .map_err(|_| format!("tls: invalid server name {n:?}"))?,
            };
            let conn = rustls::ClientConnection::new(cfg.clone(), name)
                .map_err(|e| format!("tls {addr}: {e}"))?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            while s.conn.is_handshaking() {
                s.conn
                    .complete_io(&mut s.sock)
                    .map_err(|e| format!("tls {addr}: {}", io_msg(&e)))?;
            }
            if s.conn.alpn_protocol() != Some(b"h2") {
                return Err(format!("tls {addr}: server did not negotiate h2"));
            }
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

impl Inner {
    fn call(&self, addr: SocketAddr, deadline: Instant) -> CheckResult {
        let msg = if self.health {
            health_request(&self.service)
        } else {
            Vec::new()
        };
        let call = Call {
            addrs: &[addr],
            tls: self.tls.as_ref(),
            server_name: &self.server_name,
            port: self.target.port,
            path: &self.path,
            metadata: &self.metadata,
            user_agent: "pathosd-check/1.0",
            message: &msg,
            deadline,
        };
        let Reply {
            code,
            message,
            data,
        } = match unary(&call) {
            Ok(r) => r,
            Err(e) => return CheckResult::fail(e),
        };
        let with_msg = |s: String| {
            if message.is_empty() {
                s
            } else {
                format!("{s}: {message}")
            }
        };
        let r = CheckResult::fail("").with("grpc_status", code);
        match (&self.path, self.health) {
            (m, false) => {
                let ok = self.ok_codes.contains(&code);
                let want: Vec<&str> = self
                    .ok_codes
                    .iter()
                    .filter_map(|c| CODES.get(usize::try_from(*c).ok()?).copied())
                    .collect();
                CheckResult {
                    ok,
                    detail: if ok {
                        format!("grpc {m}: status {}", code_name(code))
                    } else {
                        with_msg(format!(
                            "grpc {m}: status {} not in [{}]",
                            code_name(code),
                            want.join(", ")
                        ))
                    },
                    ..r
                }
            }
            (_, true) => {
                if code != 0 {
                    return CheckResult {
                        detail: with_msg(format!("grpc health: status {}", code_name(code))),
                        ..r
                    };
                }
                let serving = match data.get(5..).map(health_status) {
                    Some(Ok(s)) if data[0] == 0 => s,
                    _ => {
                        return CheckResult {
                            detail: "grpc health: malformed HealthCheckResponse".into(),
                            ..r
                        }
                    }
                };
                let name = usize::try_from(serving)
                    .ok()
                    .and_then(|i| SERVING_STATUS.get(i))
                    .copied()
                    .unwrap_or("UNKNOWN");
                CheckResult {
                    ok: serving == 1,
                    detail: format!("grpc health: {name}"),
                    ..r.with("serving_status", name)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tls: true` is refused by a build without TLS; h2c always works.
    #[test]
    fn tls_needs_the_tls_feature() {
        let vip = HostPort {
            host: Host::Ip("192.0.2.10".parse().unwrap()),
            port: 50051,
        };
        use crate::config::GrpcCheck;
        let spec = |options: GrpcCheck| GrpcSpec {
            options,
            target: vip.clone(),
            path: crate::config::GRPC_HEALTH_METHOD.into(),
            ok_codes: vec![0],
            server_name: vip.host.clone(),
        };
        let h2c = GrpcCheck {
            port: 50051,
            ..GrpcCheck::default()
        };
        assert!(GrpcProbe::new(&spec(h2c.clone())).is_ok());
        let tls = GrpcCheck {
            tls: true,
            tls_insecure: true,
            ..h2c
        };
        let r = GrpcProbe::new(&spec(tls));
        assert_eq!(r.is_ok(), crate::TLS, "{:?}", r.as_ref().err());
        if let Err(e) = r {
            assert!(e.contains(crate::NEEDS_TLS), "{e}");
        }
    }

    #[test]
    fn protobuf() {
        assert_eq!(health_request(""), Vec::<u8>::new());
        assert_eq!(health_request("web"), b"\x0a\x03web");
        assert_eq!(health_request(&"x".repeat(200))[..3], [0x0a, 0xc8, 0x01]);
        assert_eq!(health_status(b"\x08\x01").unwrap(), 1);
        assert_eq!(health_status(b"").unwrap(), 0);
        assert_eq!(health_status(b"\x12\x01a\x08\x02").unwrap(), 2);
        assert!(health_status(b"\x08").is_err());
        assert!(health_status(b"\x12\x09a").is_err());
    }
}
