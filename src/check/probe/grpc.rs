//! grpc: the standard grpc.health.v1.Health/Check (passes only on SERVING,
//! with an optional service name) or any unary method with ok_codes, over
//! h2c (prior knowledge) or TLS with ALPN h2. The call itself is
//! [`crate::net::grpc::unary`], on the blocking pool; this probe makes the
//! request and judges the reply. Without the `tls` feature only h2c is
//! built in: `tls: true` is refused when the probe is built (validation
//! already names the option, see config::validate).

use super::on_addr;
use crate::check::result::CheckResult;
use crate::config::run::GrpcSpec;
use crate::config::target::{Host, HostPort};
use crate::net::grpc::{code_name, unary, Call, Reply, CODES};
use crate::net::tls::{self, H2Config};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug)]
struct Inner {
    /// Where the probe connects, as validation resolved it.
    target: HostPort,
    tls: Option<H2Config>,
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
        if c.tls && !crate::TLS {
            return Err(format!("tls: true {}", crate::NEEDS_TLS));
        }
        let tls = match c.tls {
            true => Some(tls::h2_config(c.tls_ca_cert.as_deref(), c.tls_insecure)?),
            false => None,
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
            match crate::pool::pool()
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
