//! Probes: each turns its check config into a [`CheckResult`].
//!
//! Probes run on the daemon's one thread ([`crate::rt`]) and never block
//! it: socket probes (plain http included) are async, exec runs through
//! smol::process, and what can only block (ureq for https and https://
//! proxies, the HTTP/2 client for grpc, the lookup of a host that is a
//! name) runs on the bounded pool ([`crate::pool`]). The clients
//! themselves (lookup, TCP connect, HTTP/1.1, gRPC, TLS) are
//! [`crate::net`]'s, shared with the OTLP exporter; a probe says what to
//! ask and judges the answer. [`Probe::run`] races every probe against the
//! check timeout, so the timeout is always honoured even if a probe
//! misbehaves.

pub mod dns;
pub mod exec;
pub mod grpc;
pub mod http;
pub mod ping;
pub mod tcp;
pub mod ubus;
pub mod udp;

use super::result::CheckResult;
use crate::config::target::HostPort;
use crate::config::{CheckSpec, ProbeSpec};
use crate::net::resolve;
use smol::future::FutureExt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A ready-to-run probe built from one check.
#[derive(Debug)]
pub struct Probe {
    timeout: Duration,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Http(Box<http::HttpProbe>),
    Dns(dns::DnsProbe),
    Ping(ping::PingProbe),
    Tcp(tcp::TcpProbe),
    Udp(udp::UdpProbe),
    Grpc(Box<grpc::GrpcProbe>),
    Exec(exec::ExecProbe),
    Ubus(ubus::UbusProbe),
}

impl Probe {
    /// Builds the probe of a check: its spec says which probe and where it
    /// goes, every value already parsed by validation. Errors are one-line
    /// problems only the machine decides (a CA file that cannot be read).
    pub fn new(check: &CheckSpec) -> Result<Probe, String> {
        let timeout = check.timeout;
        if timeout.is_zero() {
            return Err("timeout must be greater than 0".into());
        }
        // Runs of one check never overlap because a probe ends (at the
        // latest) at its timeout, before the next tick.
        if timeout >= check.interval {
            return Err(format!(
                "timeout {:?} must be less than interval {:?}",
                timeout, check.interval
            ));
        }
        let kind = match &check.probe {
            ProbeSpec::Http {
                options, target, ..
            } => Kind::Http(Box::new(http::HttpProbe::new(options, target, timeout)?)),
            ProbeSpec::Dns {
                options,
                target,
                answers,
            } => Kind::Dns(dns::DnsProbe::new(options, target, answers)),
            ProbeSpec::Ping { options, dst } => Kind::Ping(ping::PingProbe::new(options, *dst)?),
            ProbeSpec::Tcp { options, target } => Kind::Tcp(tcp::TcpProbe::new(options, target)),
            ProbeSpec::Udp {
                options,
                target,
                datagram,
            } => Kind::Udp(udp::UdpProbe::new(options, target, datagram)),
            ProbeSpec::Grpc(spec) => Kind::Grpc(Box::new(grpc::GrpcProbe::new(spec)?)),
            ProbeSpec::Exec(options) => Kind::Exec(exec::ExecProbe::new(options)),
            ProbeSpec::Ubus(options) => Kind::Ubus(ubus::UbusProbe::new(options)),
        };
        Ok(Probe { timeout, kind })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What the probe does, for the timeout detail ("connect 127.0.0.1:80").
    fn what(&self) -> String {
        match &self.kind {
            Kind::Http(p) => p.what(),
            Kind::Dns(p) => p.what(),
            Kind::Ping(p) => p.what(),
            Kind::Tcp(p) => p.what(),
            Kind::Udp(p) => p.what(),
            Kind::Grpc(p) => p.what(),
            Kind::Exec(p) => p.what(),
            Kind::Ubus(p) => p.what(),
        }
    }

    /// Runs the probe once, bounded by the check timeout.
    pub async fn run(&self) -> CheckResult {
        let start = Instant::now();
        let deadline = start + self.timeout;
        // Each kind's future boxed, at its own size: inline, every check
        // loop would carry the largest kind's state (≈ 17 KiB) while it
        // sleeps, and every run would allocate that much.
        let probe = async {
            match &self.kind {
                Kind::Http(p) => Box::pin(p.run(deadline)).await,
                Kind::Dns(p) => Box::pin(p.run(deadline)).await,
                Kind::Ping(p) => Box::pin(p.run(deadline)).await,
                Kind::Tcp(p) => Box::pin(p.run(deadline)).await,
                Kind::Udp(p) => Box::pin(p.run(deadline)).await,
                Kind::Grpc(p) => Box::pin(p.run(deadline)).await,
                Kind::Exec(p) => Box::pin(p.run(deadline)).await,
                Kind::Ubus(p) => Box::pin(p.run(deadline)).await,
            }
        };
        let timer = async {
            crate::rt::sleep_until(deadline).await;
            let mut r = CheckResult::fail(format!(
                "{}: timed out after {:?}",
                self.what(),
                self.timeout
            ));
            r.timed_out = true;
            r
        };
        let mut r = probe.or(timer).await;
        r.duration = start.elapsed();
        r
    }
}

/// Runs `probe` on the socket address of `target`: the start every probe
/// that goes to one host and port shares (tcp, udp, dns, grpc). A target
/// that is a name is looked up first ([`crate::net::resolve`]); a lookup that fails is
/// the probe's failure, with its detail.
pub(crate) async fn on_addr<F>(
    target: &HostPort,
    probe: impl FnOnce(SocketAddr) -> F,
) -> CheckResult
where
    F: std::future::Future<Output = CheckResult>,
{
    match resolve(target).await {
        Ok(addr) => probe(addr).await,
        Err(e) => CheckResult::fail(e),
    }
}

/// Text shown in details: at most 80 characters of one line.
pub(crate) fn snippet(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let line = s.lines().next().unwrap_or("").trim();
    line.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe is its spec's: validation made one variant per check
    /// type with the type's options inside, so there is no `type` to read
    /// again and no missing block to report.
    #[test]
    fn the_probe_is_its_specs() {
        let vip: crate::bgp::types::Prefix = "10.0.0.1/32".parse().unwrap();
        let spec = |v: serde_json::Value| {
            let mut errs = crate::config::Errors::default();
            let c = <crate::config::Check as crate::config::Field>::decode(&v, "c", &mut errs)
                .expect("decodes");
            crate::config::run::check_spec(c, &vip).expect("a valid check")
        };
        let tcp = spec(serde_json::json!({"type": "tcp", "tcp": {"port": 80}}));
        let dns = spec(serde_json::json!({"type": "dns", "dns": {"names": [r"a\.b.example."]}}));
        assert_eq!(
            Probe::new(&tcp).map(|p| p.what()).as_deref(),
            Ok("connect 10.0.0.1:80")
        );
        assert_eq!(
            Probe::new(&dns).map(|p| p.what()).as_deref(),
            Ok("dns 10.0.0.1:53")
        );
    }
}
