//! The configuration the daemon runs on, as validation makes it ("parse,
//! don't validate", as ntpd-rs's source configs): distinct types from the
//! decoded schema (`schema.rs`), with every default, override and
//! derivation applied once. Nothing downstream merges `check`/`checks`,
//! trims, re-parses or `unwrap_or`s a configured value: a check *is* its
//! probe's type with that type's options inside ([`ProbeSpec`]), a neighbor
//! *is* its session settings ([`PeerSettings`]), and addresses are
//! addresses (`Option<SocketAddr>` where the file says "off").
//!
//! The one way in is [`RunConfig::new`] (validate, then build), which the
//! loader and the tests' hand-built configs both take.

use super::duration::Dur;
use super::field::{ConfigError, Errors};
pub use super::otel::{OtelRun, OtlpTarget, Transport};
use super::policy_expr::{self, Expr};
use super::schema::{
    Check, CheckType, Config, DnsCheck, ExecCheck, ExpectedAnswer, GrpcCheck, HttpCheck, LogLevel,
    Logging, PingCheck, PolicyText, TcpCheck, UdpCheck, Vip, VipPolicy, GRPC_HEALTH_METHOD,
};
use super::target::{self, DnsTarget, Host, HostPort, HttpTarget, Target};
use super::validate::{grpc_code, hex_bytes, listen_addr, validate};
use crate::bgp::settings::PeerSettings;
use crate::bgp::types::{Afi, Prefix};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A configuration that passed every rule, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// `router.asn`.
    pub asn: u32,
    /// `router.router_id`: always an IPv4 address once valid.
    pub router_id: Ipv4Addr,
    /// Where the BGP listener accepts sessions: `bgp.listen_address`, else
    /// `router.local_address`, else 0.0.0.0, on `bgp.listen_port`; None for
    /// port -1 (never listen).
    pub listen: Option<SocketAddr>,
    /// `bgp.shutdown_drain`.
    pub shutdown_drain: Duration,
    /// `bgp.graceful_shutdown`: GRACEFUL_SHUTDOWN (65535:0) on pessimized
    /// routes, and on every route during the stop's drain.
    pub graceful_shutdown: bool,
    /// The BGP neighbors, each as its session runs.
    pub neighbors: Vec<NeighborRun>,
    pub api: ApiRun,
    pub logging: Logging,
    /// OTLP export: each signal's collector, or off.
    pub otel: OtelRun,
    pub vips: Vec<VipSpec>,
}

/// One BGP neighbor: its session's settings, and `required` (which only
/// /readyz reads, so it changes without restarting the session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborRun {
    pub settings: PeerSettings,
    pub required: bool,
    /// Its BFD session, when `bfd.enabled`: apart from `settings`, so that
    /// a change of BFD alone does not restart the BGP session.
    pub bfd: Option<BfdRun>,
}

/// A neighbor's BFD session as it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfdRun {
    /// The neighbor's address: where packets go and the only source
    /// trusted.
    pub peer: IpAddr,
    /// This router's address on the session (the neighbor's
    /// `local_address`, else `router.local_address`).
    pub local: IpAddr,
    pub hops: crate::bfd::Hops,
    pub timers: crate::bfd::session::Timers,
}

impl BfdRun {
    /// The session of neighbor `n` (validated), or None when BFD is off.
    fn new(c: &Config, n: &super::schema::Neighbor) -> Option<BfdRun> {
        use std::num::{NonZeroU32, NonZeroU8};
        let b = &n.bfd;
        if !b.enabled {
            return None;
        }
        let peer = n.address?;
        let local = n.local_address.or(c.router.local_address)?;
        // BFD intervals are microseconds (RFC 5880 §4.1); validation keeps
        // them within 10 ms..60 s.
        let us = |d: Dur| u32::try_from(d.get().as_micros()).ok();
        // BIRD runs a `multihop` neighbor's BFD session as multihop, and a
        // neighbor on this router's loopback needs `multihop` at BIRD. A
        // multihop peer's packets may have crossed routers (BIRD sends them
        // with its default TTL, 64): any TTL is taken, the source address
        // must still be the peer's.
        let multihop = b
            .multihop
            .unwrap_or(n.enable_multihop || peer.is_loopback());
        Some(BfdRun {
            peer,
            local,
            hops: if multihop {
                crate::bfd::Hops::Multi { min_ttl: 1 }
            } else {
                crate::bfd::Hops::Single
            },
            timers: crate::bfd::session::Timers {
                desired_min_tx: NonZeroU32::new(us(b.desired_minimum_tx_interval)?)?,
                required_min_rx: us(b.required_minimum_receive)?,
                detect_mult: NonZeroU8::new(b.detection_multiplier)?,
            },
        })
    }
}

impl NeighborRun {
    pub fn name(&self) -> &str {
        &self.settings.name
    }
}

/// The local HTTP endpoint and the ubus object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRun {
    /// `api.listen` as an address; None: the endpoint is off (empty).
    pub listen: Option<SocketAddr>,
    /// The HTTP server's time limits; None where the file says 0 (off).
    pub read_header_timeout: Option<Duration>,
    pub read_timeout: Option<Duration>,
    pub write_timeout: Option<Duration>,
    pub idle_timeout: Option<Duration>,
    /// The bearer token mutating requests must send; None when unset or
    /// empty (so `"%{PATHOSD_API_TOKEN}"` switches off with an empty variable).
    pub token: Option<String>,
    /// ubusd's socket; None when empty (no ubus).
    pub ubus_socket: Option<PathBuf>,
}

/// One VIP as the daemon runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct VipSpec {
    /// Unique name; shared, not a copy per user.
    pub name: Arc<str>,
    pub prefix: Prefix,
    /// Announced while the daemon lives; then `checks` is empty.
    pub always: bool,
    /// The checks, in the file's order (from `check` or `checks`).
    pub checks: Vec<CheckSpec>,
    /// `checks_policy` as written (for /status and reload's diff).
    pub checks_policy: PolicyText,
    /// `checks_policy` compiled against the check names: what the engine
    /// evaluates (`all` for an `always` VIP).
    pub checks_expr: Expr,
    pub policy: VipPolicy,
    /// `require_local_address`, with `local_interface` narrowing it.
    pub local_address: Option<LocalAddress>,
}

/// A VIP with no name, the address 0.0.0.0/32, no checks and every other
/// field at its default, as a decoded `Vip`'s default (the engine's plain
/// VIPs are this, `always`, with a name and a prefix).
impl Default for VipSpec {
    fn default() -> VipSpec {
        VipSpec {
            name: Arc::from(""),
            prefix: Prefix::host(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            always: false,
            checks: Vec::new(),
            checks_policy: PolicyText::default(),
            checks_expr: Expr::All,
            policy: VipPolicy::default(),
            local_address: None,
        }
    }
}

/// `require_local_address`: the VIP's checks fail while its address is not
/// on a local interface (`local_interface`, or any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalAddress {
    pub interface: Option<String>,
}

/// One health check as the daemon runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSpec {
    /// The name checks_policy and /status use: `name`, else the type.
    pub name: String,
    pub interval: Duration,
    pub timeout: Duration,
    pub rise: u32,
    pub fall: u32,
    pub detailed_metrics: bool,
    pub probe: ProbeSpec,
}

/// What a check's probe is: its type with that type's options and where it
/// goes, resolved from the block and the VIP prefix. Boxed: a `CheckSpec`
/// stays small whatever the type.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeSpec {
    /// http and https (`HttpTarget::https` says which the request is).
    Http {
        https: bool,
        options: Box<HttpCheck>,
        target: Box<HttpTarget>,
    },
    Dns {
        options: Box<DnsCheck>,
        target: Box<DnsTarget>,
        /// `expected_answers`, each an address or a name.
        answers: Vec<ExpectedAnswer>,
    },
    Ping {
        options: Box<PingCheck>,
        /// `dst_ip`, else the VIP address.
        dst: IpAddr,
    },
    Tcp {
        options: Box<TcpCheck>,
        target: Box<HostPort>,
    },
    Udp {
        options: Box<UdpCheck>,
        target: Box<HostPort>,
        /// `payload`'s bytes, or `payload_hex` decoded, or one zero byte.
        datagram: Vec<u8>,
    },
    Grpc(Box<GrpcSpec>),
    Exec(Box<ExecCheck>),
}

/// A grpc check resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcSpec {
    pub options: GrpcCheck,
    pub target: HostPort,
    /// `method` with its leading `/`, else the health check's.
    pub path: String,
    /// `ok_codes` as status numbers (grpc/doc/statuscodes.md).
    pub ok_codes: Vec<u32>,
    /// The `:authority` and TLS name: `tls_server_name`, else the host.
    pub server_name: Host,
}

impl ProbeSpec {
    pub fn kind(&self) -> CheckType {
        match self {
            ProbeSpec::Http { https: false, .. } => CheckType::Http,
            ProbeSpec::Http { https: true, .. } => CheckType::Https,
            ProbeSpec::Dns { .. } => CheckType::Dns,
            ProbeSpec::Ping { .. } => CheckType::Ping,
            ProbeSpec::Tcp { .. } => CheckType::Tcp,
            ProbeSpec::Udp { .. } => CheckType::Udp,
            ProbeSpec::Grpc(_) => CheckType::Grpc,
            ProbeSpec::Exec(_) => CheckType::Exec,
        }
    }
}

impl RunConfig {
    /// Validates `c` and builds what the daemon runs on: every error with
    /// its path, or the run config. The one way from a decoded (or
    /// hand-built) config to one the daemon runs.
    pub fn new(mut c: Config) -> Result<RunConfig, Vec<ConfigError>> {
        let mut errs = Errors::default();
        validate(&mut c, &mut errs);
        if !errs.is_empty() {
            return Err(errs.0);
        }
        build(c).map_err(|e| vec![e])
    }

    /// The neighbor named `name`.
    pub fn neighbor(&self, name: &str) -> Option<&NeighborRun> {
        self.neighbors.iter().find(|n| n.name() == name)
    }

    /// Takes the VIPs out, leaving none: the daemon's engine keeps them
    /// from then on (the one copy).
    pub fn take_vips(&mut self) -> Vec<VipSpec> {
        std::mem::take(&mut self.vips)
    }

    /// The level `run --debug` asks for.
    pub fn set_log_level(&mut self, level: LogLevel) {
        self.logging.level = level;
    }
}

/// Something validation should have refused, found while building: a bug,
/// reported as an error rather than run on a placeholder.
fn unbuildable(what: &str) -> ConfigError {
    ConfigError {
        path: String::new(),
        message: format!("internal error: {what} passed validation but cannot be built"),
    }
}

/// The run config of a config that passed every rule. Consumes it: each
/// VIP moves into its `VipSpec`, so a 10,000-VIP config is never held twice.
pub(crate) fn build(c: Config) -> Result<RunConfig, ConfigError> {
    let IpAddr::V4(router_id) = c.router.router_id.ok_or_else(|| unbuildable("router_id"))? else {
        return Err(unbuildable("router_id"));
    };
    let mp_ipv6 =
        c.vips.iter().any(|v| v.prefix.afi() == Afi::Ipv6) || c.router.local_address_ipv6.is_some();
    let neighbors = c
        .bgp
        .neighbors
        .iter()
        .map(|n| {
            Ok(NeighborRun {
                settings: PeerSettings::new(&c, n, router_id, mp_ipv6)
                    .ok_or_else(|| unbuildable("a neighbor"))?,
                required: n.required,
                bfd: if n.bfd.enabled {
                    Some(BfdRun::new(&c, n).ok_or_else(|| unbuildable("a neighbor's bfd"))?)
                } else {
                    None
                },
            })
        })
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let off = |d: Dur| (!d.is_zero()).then(|| d.get());
    let a = &c.api;
    let api = ApiRun {
        listen: listen_addr(a.listen.trim()),
        read_header_timeout: off(a.read_header_timeout),
        read_timeout: off(a.read_timeout),
        write_timeout: off(a.write_timeout),
        idle_timeout: off(a.idle_timeout),
        token: a.token().map(str::to_string),
        ubus_socket: match a.ubus_socket.trim() {
            "" => None,
            s => Some(PathBuf::from(s)),
        },
    };
    let listen = u16::try_from(c.bgp.listen_port).ok().map(|port| {
        let ip = c
            .bgp
            .listen_address
            .or(c.router.local_address)
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        SocketAddr::new(ip, port)
    });
    let otel = super::otel::build(&c);
    let Config {
        router,
        bgp,
        logging,
        vips,
        ..
    } = c;
    let vips = vips
        .into_iter()
        .map(vip_spec)
        .collect::<Result<Vec<_>, ConfigError>>()?;
    Ok(RunConfig {
        asn: router.asn,
        router_id,
        listen,
        shutdown_drain: bgp.shutdown_drain.get(),
        graceful_shutdown: bgp.graceful_shutdown,
        neighbors,
        api,
        logging,
        otel,
        vips,
    })
}

/// A valid VIP as it runs.
pub fn vip_spec(v: Vip) -> Result<VipSpec, ConfigError> {
    let prefix = v.prefix;
    let raw: Vec<Check> = match (v.check, v.checks) {
        (Some(c), _) => vec![*c],
        (None, Some(cs)) => cs,
        (None, None) => Vec::new(),
    };
    let checks = raw
        .into_iter()
        .map(|c| check_spec(c, &prefix))
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let checks_expr = if v.always {
        Expr::All
    } else {
        let names: Vec<String> = checks.iter().map(|c| c.name.clone()).collect();
        policy_expr::compile(&v.checks_policy, &names)
            .map_err(|_| unbuildable("a checks_policy"))?
    };
    Ok(VipSpec {
        name: v.name,
        prefix,
        always: v.always,
        checks,
        checks_policy: v.checks_policy,
        checks_expr,
        policy: v.policy,
        local_address: v.require_local_address.then_some(LocalAddress {
            interface: v.local_interface,
        }),
    })
}

/// A valid check as it runs, its type's block and the VIP prefix resolved
/// into its probe.
pub fn check_spec(c: Check, vip: &Prefix) -> Result<CheckSpec, ConfigError> {
    let name = c.effective_name();
    let bad = || unbuildable("a check");
    let t = target::target(&c, vip).ok_or_else(bad)?;
    let probe = match t {
        Target::Http(t) => ProbeSpec::Http {
            https: t.https,
            options: c.http.unwrap_or_default(),
            target: t,
        },
        Target::Dns(t) => {
            let options = c.dns.ok_or_else(bad)?;
            let answers = options
                .expected_answers
                .iter()
                .map(|a| ExpectedAnswer::parse(a))
                .collect();
            ProbeSpec::Dns {
                options,
                target: t,
                answers,
            }
        }
        Target::Ping(dst) => ProbeSpec::Ping {
            options: c.ping.unwrap_or_default(),
            dst,
        },
        Target::Tcp(t) => ProbeSpec::Tcp {
            options: c.tcp.ok_or_else(bad)?,
            target: t,
        },
        Target::Udp(t) => {
            let options = c.udp.ok_or_else(bad)?;
            let datagram = match (&options.payload, &options.payload_hex) {
                (Some(_), Some(_)) => return Err(bad()),
                (Some(p), None) => p.as_bytes().to_vec(),
                (None, Some(h)) => hex_bytes(h).ok_or_else(bad)?,
                (None, None) => vec![0],
            };
            ProbeSpec::Udp {
                options,
                target: t,
                datagram,
            }
        }
        Target::Grpc(t) => {
            let options = *c.grpc.ok_or_else(bad)?;
            let path = match options.method.as_deref() {
                None => GRPC_HEALTH_METHOD.to_string(),
                Some("") => return Err(bad()),
                Some(m) if m.starts_with('/') => m.to_string(),
                Some(m) => format!("/{m}"),
            };
            let ok_codes = options
                .ok_codes
                .iter()
                .map(|s| grpc_code(s))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(bad)?;
            let server_name = match &options.tls_server_name {
                Some(n) if !n.is_empty() => Host::parse(n),
                _ => t.host.clone(),
            };
            ProbeSpec::Grpc(Box::new(GrpcSpec {
                options,
                target: *t,
                path,
                ok_codes,
                server_name,
            }))
        }
        Target::Exec => ProbeSpec::Exec(c.exec.ok_or_else(bad)?),
    };
    Ok(CheckSpec {
        name,
        interval: c.interval.get(),
        timeout: c.timeout.get(),
        rise: c.rise,
        fall: c.fall,
        detailed_metrics: c.detailed_metrics,
        probe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Validation leaves every value a probe takes parsed: dns's expected
    /// answers as addresses or names, udp's datagram, grpc's path and status
    /// numbers, and the http and ping blocks (their defaults when absent).
    #[test]
    fn a_check_spec_carries_the_parsed_values() {
        let cfg = |checks: serde_json::Value| {
            serde_json::json!({
                "schema": "v1",
                "router": {"asn": 65001, "router_id": "10.0.0.1"},
                "bgp": {"neighbors": [{"name": "r", "address": "10.0.0.2", "peer_asn": 65000}]},
                "vips": [{"name": "v", "prefix": "10.1.0.1/32", "checks": checks}],
            })
            .to_string()
        };
        let text = cfg(serde_json::json!([
            {"name": "d", "type": "dns", "dns": {"names": ["a.test"],
                "expected_answers": [" 2001:db8:0::1 ", "Web.Example."]}},
            {"name": "u", "type": "udp", "udp": {"port": 53, "payload_hex": "00fF1a"}},
            {"name": "u0", "type": "udp", "udp": {"port": 53}},
            {"name": "ut", "type": "udp", "udp": {"port": 53, "payload": "hi"}},
            {"name": "g", "type": "grpc", "grpc": {"port": 1, "method": "pkg.S/M",
                "ok_codes": ["OK", "not_found", "Canceled"]}},
            {"name": "h", "type": "grpc", "grpc": {"port": 1}},
            {"name": "w", "type": "http"},
            {"name": "p", "type": "ping"},
        ]));
        let c = crate::config::load_str(&text, None, &|_| None).unwrap_or_else(|e| panic!("{e:?}"));
        let k = &c.vips[0].checks;
        let ProbeSpec::Dns { answers, .. } = &k[0].probe else {
            panic!("{:?}", k[0].probe)
        };
        assert_eq!(answers[0].addr, Some("2001:db8::1".parse().unwrap()));
        assert_eq!(answers[0].text, " 2001:db8:0::1 ");
        assert_eq!(
            (answers[1].addr, answers[1].text.as_str()),
            (None, "Web.Example.")
        );
        let datagram = |i: usize| match &k[i].probe {
            ProbeSpec::Udp { datagram, .. } => datagram.clone(),
            p => panic!("{p:?}"),
        };
        assert_eq!(datagram(1), vec![0, 0xff, 0x1a]);
        assert_eq!(datagram(2), vec![0]);
        assert_eq!(datagram(3), b"hi".to_vec());
        let grpc = |i: usize| match &k[i].probe {
            ProbeSpec::Grpc(g) => g.clone(),
            p => panic!("{p:?}"),
        };
        let g = grpc(4);
        assert_eq!(
            (g.path.as_str(), &g.ok_codes[..]),
            ("/pkg.S/M", &[0, 5, 1][..])
        );
        assert_eq!(g.server_name, Host::Ip("10.1.0.1".parse().unwrap()));
        let h = grpc(5);
        assert_eq!(
            (h.path.as_str(), &h.ok_codes[..]),
            (GRPC_HEALTH_METHOD, &[0][..])
        );
        assert!(
            matches!(&k[6].probe, ProbeSpec::Http { options, https: false, .. } if **options == HttpCheck::default())
        );
        assert!(
            matches!(&k[7].probe, ProbeSpec::Ping { options, .. } if **options == PingCheck::default())
        );
    }
}
