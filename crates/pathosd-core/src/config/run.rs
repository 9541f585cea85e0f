//! The configuration the daemon runs on, as validation makes it ("parse,
//! don't validate", as ntpd-rs's source configs): distinct types from the
//! decoded schema (`schema.rs`), with every default, override and
//! derivation applied once. Nothing downstream merges `check`/`checks`,
//! trims, re-parses or `unwrap_or`s a configured value: a check *is* its
//! probe's type with that type's options inside ([`ProbeSpec`]), a neighbor
//! *is* its session settings ([`PeerSettings`]), and addresses are
//! addresses (`Option<SocketAddr>` where the file says "off").
//!
//! Validation builds them: each rule returns the value it checked
//! (`validate`). The one way in is [`RunConfig::new`], which the loader
//! and the tests' hand-built configs both take.

use super::field::{ConfigError, Errors};
pub use super::otel::{OtelRun, OtlpTarget, Transport};
use super::policy_expr::Expr;
#[cfg(any(test, feature = "test-support"))]
use super::schema::{Check, Vip};
use super::schema::{
    CheckType, Config, DnsCheck, ExecCheck, ExpectedAnswer, GrpcCheck, HttpCheck, LogLevel,
    Logging, PingCheck, PolicyText, TcpCheck, UbusCheck, UdpCheck, VipPolicy,
};
use super::target::{DnsTarget, Host, HostPort, HttpTarget};
use super::validate::validate;
use crate::bgp::settings::PeerSettings;
use crate::bgp::types::Prefix;
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
    /// `hooks`: the hotplug.d scripts run on VIP transitions.
    pub hooks: super::Hooks,
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
    /// The first prefix: the VIP's in /status, logs and events.
    pub prefix: Prefix,
    /// The others, when `prefix` was a list; they change with the first,
    /// in the same step. Empty for the usual one prefix.
    pub more_prefixes: Box<[Prefix]>,
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
    /// The procd services and netifd interfaces the VIP needs.
    pub needs: Needs,
}

/// `services` and `interfaces`: what the VIP needs of the router, watched
/// on ubus (procd's `service` notifications, netifd's `network.interface`
/// events). Empty in most VIPs: then nothing is watched for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    pub services: Vec<String>,
    pub interfaces: Vec<String>,
}

impl Needs {
    pub fn is_empty(&self) -> bool {
        self.services.is_empty() && self.interfaces.is_empty()
    }

    /// Whether `name` of `kind` is one of them.
    pub fn names(&self, kind: NeedKind, name: &str) -> bool {
        let list = match kind {
            NeedKind::Service => &self.services,
            NeedKind::Interface => &self.interfaces,
        };
        list.iter().any(|n| n == name)
    }
}

/// Which of a VIP's needs an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeedKind {
    /// A procd service (`services`).
    Service,
    /// A netifd interface (`interfaces`).
    Interface,
}

impl NeedKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NeedKind::Service => "service",
            NeedKind::Interface => "interface",
        }
    }
}

/// A VIP with no name, the address 0.0.0.0/32, no checks and every other
/// field at its default, as a decoded `Vip`'s default (the engine's plain
/// VIPs are this, `always`, with a name and a prefix).
impl VipSpec {
    /// Every prefix of the VIP, the first first.
    pub fn prefixes(&self) -> impl Iterator<Item = Prefix> + '_ {
        std::iter::once(self.prefix).chain(self.more_prefixes.iter().copied())
    }
}

impl Default for VipSpec {
    fn default() -> VipSpec {
        VipSpec {
            name: Arc::from(""),
            prefix: Prefix::host(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            more_prefixes: Box::default(),
            always: false,
            checks: Vec::new(),
            checks_policy: PolicyText::default(),
            checks_expr: Expr::All,
            policy: VipPolicy::default(),
            local_address: None,
            needs: Needs::default(),
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
    /// `fast_interval`, the interval when it is unset.
    pub fast_interval: Duration,
    pub timeout: Duration,
    pub rise: u32,
    pub fall: u32,
    pub detailed_metrics: bool,
    /// `degraded_latency` and `degraded_hold_down`, when graded health is on.
    pub degraded: Option<Degraded>,
    pub probe: ProbeSpec,
}

/// Graded health of a check: how slow a passing probe may be before it
/// counts toward degraded, and the least time between two changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Degraded {
    pub latency: Duration,
    pub hold_down: Duration,
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
    Ubus(Box<UbusCheck>),
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
            ProbeSpec::Ubus(_) => CheckType::Ubus,
        }
    }
}

impl RunConfig {
    /// Validates `c` and builds what the daemon runs on: every error with
    /// its path, or the run config. The one way from a decoded (or
    /// hand-built) config to one the daemon runs.
    pub fn new(c: Config) -> Result<RunConfig, Vec<ConfigError>> {
        let mut errs = Errors::default();
        match validate(c, &mut errs) {
            Some(run) if errs.is_empty() => Ok(run),
            _ => Err(errs.0),
        }
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

/// VIP `v` as its rules build it (its name and prefix apart, which are
/// checked against the other VIPs'), for tests that make one VIP: built
/// whenever its rules leave something to build, even if one that does not
/// stop the build failed; else the first error.
#[cfg(any(test, feature = "test-support"))]
pub fn vip_spec(v: Vip) -> Result<VipSpec, ConfigError> {
    let mut errs = Errors::default();
    let spec = super::validate::vip(v, "vip", &mut errs);
    built(spec, errs)
}

/// Check `c` of a VIP with prefix `vip` as its rules build it, for tests
/// that make one probe: built whenever its rules leave something to build
/// (so a test sees a probe refuse what validation would), else the first
/// error.
#[cfg(any(test, feature = "test-support"))]
pub fn check_spec(c: Check, vip: &Prefix) -> Result<CheckSpec, ConfigError> {
    let mut errs = Errors::default();
    let spec = super::validate::check(vip, "check", c, &mut errs);
    built(spec, errs)
}

/// `value`, else the first error, which a rule that builds nothing
/// reports.
#[cfg(any(test, feature = "test-support"))]
fn built<T>(value: Option<T>, errs: Errors) -> Result<T, ConfigError> {
    value.ok_or_else(|| {
        errs.0.into_iter().next().unwrap_or(ConfigError {
            path: String::new(),
            message: "internal error: a rule failed without saying why".to_string(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schema::GRPC_HEALTH_METHOD;

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
