//! The v1 configuration schema (pathosd's), as typed structs. Each field has
//! exactly one default, given here; validation rules live in `validate.rs`.

use super::duration::Dur;
use super::field::{show, Errors, Field};
use crate::bgp::types::{Community, LargeCommunity, Prefix};
use crate::{config_enum, config_struct};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

mod checks;

pub use checks::*;

config_struct! {
    /// A pathosd configuration, schema v1.
    pub struct Config {
        /// Schema version; must be "v1".
        schema: String = String::new(),
        /// This router's BGP identity.
        router: Router = Router::default(),
        /// BGP listener, timers and neighbors.
        bgp: Bgp = Bgp::default(),
        /// The local HTTP endpoint and the ubus object.
        api: Api = Api::default(),
        /// Log level and destination.
        logging: Logging = Logging::default(),
        /// OpenTelemetry (OTLP) export to a collector; off while no endpoint is set.
        otel: Otel = Otel::default(),
        /// Scripts run on each VIP transition, as OpenWrt's hotplug.d.
        hooks: Hooks = Hooks::default(),
        /// The VIP prefixes to announce, each with its health checks and policy.
        vips: Vec<Vip> = Vec::new(),
    }
}

config_struct! {
    /// This router's BGP identity.
    pub struct Router {
        /// Local AS number (1..4294967295).
        asn: u32 = 0,
        /// BGP identifier; must be an IPv4 address.
        router_id: Option<IpAddr> = None,
        /// Source address for sessions and the IPv4 next hop (router_id when unset).
        local_address: Option<IpAddr> = None,
        /// The IPv6 next hop; required when any VIP prefix is IPv6.
        local_address_ipv6: Option<IpAddr> = None,
    }
}

config_struct! {
    /// BGP listener, timers and neighbors.
    pub struct Bgp {
        /// Address to accept sessions on (router.local_address, then 0.0.0.0, when unset).
        listen_address: Option<IpAddr> = None,
        /// TCP port to accept sessions on; -1 never listens.
        listen_port: i32 = 179,
        /// Hold time offered in OPEN: 0 (no keepalives) or at least 3s.
        hold_time: Dur = Dur::secs(90),
        /// Keepalive interval; 0 means hold_time / 3.
        keepalive_time: Dur = Dur::ZERO,
        /// Advertise graceful restart (restart time 0, no forwarding state).
        graceful_restart: bool = true,
        /// Delay between the withdraw of every VIP and the Cease on shutdown (at most 4s).
        shutdown_drain: Dur = Dur::ZERO,
        /// Add the GRACEFUL_SHUTDOWN community 65535:0 (RFC 8326) to pessimized routes, and to every route during shutdown_drain at a stop.
        graceful_shutdown: bool = false,
        /// BGP peers; at least one.
        neighbors: Vec<Neighbor> = Vec::new(),
    }
}

config_struct! {
    /// One BGP peer.
    pub struct Neighbor {
        /// Unique name, shown in status and logs.
        name: String = String::new(),
        /// Peer address (IPv4 or IPv6).
        address: Option<IpAddr> = None,
        /// Peer TCP port for active connects.
        port: u16 = 179,
        /// Peer AS number; equal to router.asn makes the session iBGP.
        peer_asn: u32 = 0,
        /// Source address for this session (router.local_address when unset).
        local_address: Option<IpAddr> = None,
        /// Never connect; only accept the peer's connection.
        passive: bool = false,
        /// /readyz reports not ready while this peer is not Established.
        required: bool = true,
        /// TCP MD5 signature key (RFC 2385), at most 80 bytes.
        auth_password: Option<String> = None,
        /// Allow an eBGP peer that is not directly connected.
        enable_multihop: bool = false,
        /// TTL for multihop eBGP (2..255); 0 means 255.
        multihop_ttl: u8 = 0,
        /// GTSM (RFC 5082): send TTL 255 and accept only TTL >= 255 - (hops - 1).
        ttl_security: bool = false,
        /// Per-peer hold time; bgp.hold_time when unset.
        hold_time: Option<Dur> = None,
        /// Per-peer keepalive; bgp.keepalive_time when unset.
        keepalive_time: Option<Dur> = None,
        /// RFC 8950: offer IPv4 routes with the IPv6 next hop (router.local_address_ipv6), e.g. over an IPv6 session; used when the peer offers it too.
        extended_next_hop: bool = false,
        /// RFC 9234 BGP Role of this router towards the (eBGP) peer; sent in the OPEN, the peer's must match (provider-customer, rs-rs-client, peer-peer).
        role: Option<BgpRole> = None,
        /// RFC 9234 strict mode (BIRD's require roles): a peer that sends no Role is refused too; needs role.
        require_role: bool = false,
        /// RFC 9687: close the session when the peer takes none of our bytes for this long; unset: the greater of 8m and 2 x hold_time; 0 disables; else more than hold_time.
        send_hold_time: Option<Dur> = None,
        /// Per-peer graceful restart; bgp.graceful_restart when unset.
        graceful_restart: Option<bool> = None,
        /// Wait before restarting the session after its first error (BIRD's error wait time minimum); doubles on each further error.
        error_wait_min: Dur = Dur::secs(1),
        /// Cap of the doubling wait; a session Established at least this long restarts at once when it goes down.
        error_wait_max: Dur = Dur::secs(60),
        /// BFD (RFC 5880) beside this session: when it goes down, so does the session (RFC 5882).
        bfd: Bfd = Bfd::default(),
     }
}

config_struct! {
    /// BFD (RFC 5880, asynchronous mode) beside a neighbor's BGP session.
    pub struct Bfd {
        /// Run a BFD session with the neighbor; its Up to Down takes the BGP session down.
        enabled: bool = false,
        /// Fastest this router sends once Up (bfd.DesiredMinTxInterval), 10ms..60s; at least 1s until Up.
        desired_minimum_tx_interval: Dur = Dur::ms(300),
        /// Fastest the neighbor may send (bfd.RequiredMinRxInterval), 10ms..60s.
        required_minimum_receive: Dur = Dur::ms(300),
        /// Intervals without a packet before the neighbor is declared down (Detect Mult), 2..255.
        detection_multiplier: u8 = 3,
        /// RFC 5883 multihop (UDP port 4784) instead of RFC 5881 single hop (3784); default: on with enable_multihop or a loopback address.
        multihop: Option<bool> = None,
    }
}

config_struct! {
    /// The local HTTP endpoint and the ubus object.
    pub struct Api {
        /// HTTP listen address (host:port); empty disables the endpoint.
        listen: String = "127.0.0.1:59179".to_string(),
        /// Time to receive request headers; 0 disables.
        read_header_timeout: Dur = Dur::secs(5),
        /// Time to receive the whole request; 0 disables.
        read_timeout: Dur = Dur::secs(30),
        /// Time to send the response; 0 disables.
        write_timeout: Dur = Dur::secs(60),
        /// Time a kept-alive connection may stay idle; 0 disables.
        idle_timeout: Dur = Dur::secs(5),
        /// Bearer token that drain and check-trigger requests must send (Authorization: Bearer); empty or unset requires none.
        token: Option<String> = None,
        /// ubusd socket to register the `pathosd` object on; empty disables ubus.
        ubus_socket: String = "/var/run/ubus/ubus.sock".to_string(),
     }
}

config_enum! {
    /// Log verbosity.
    pub enum LogLevel { Debug = "debug", Info = "info", Warn = "warn", Error = "error" }
}

config_struct! {
    /// Log level and destination.
    pub struct Logging {
        /// Minimum level logged.
        level: LogLevel = LogLevel::Info,
        /// Prefix lines with a timestamp; default: only when not logging to syslog.
        timestamps: Option<bool> = None,
        /// Log to syslog (/dev/log); default: when /dev/log exists.
        syslog: Option<bool> = None,
        /// Minimum level of the logs exported over OTLP; level when unset.
        otel_level: Option<LogLevel> = None,
    }
}

config_struct! {
    /// Scripts run on each VIP transition, as OpenWrt's hotplug.d.
    pub struct Hooks {
        /// Directory whose scripts run, in file-name order, on each VIP transition; empty: none.
        dir: String = crate::daemon::hooks::DEFAULT_DIR.to_string(),
        /// How long one script may run before its process group is killed.
        timeout: Dur = Dur::secs(10),
        /// Events waiting for the scripts; more are dropped and counted (1..10000).
        queue: u32 = 64,
    }
}

config_struct! {
    /// OpenTelemetry (OTLP) export to a collector; off while no endpoint is set.
    pub struct Otel {
        /// Export at all; false turns every signal off.
        enabled: bool = true,
        /// Collector URL; the scheme picks the transport: http:// or https:// (OTLP/HTTP), grpc:// or grpcs:// (OTLP/gRPC). Empty: no export.
        endpoint: String = String::new(),
        /// Do not verify the collector's TLS certificate (https:// and grpcs:// only).
        insecure: bool = false,
        /// Headers sent with every export, such as an API key ("%{VAR}" reads it from the environment).
        headers: BTreeMap<String, String> = BTreeMap::new(),
        /// The service.name resource attribute; must not be empty when an endpoint is set.
        service_name: String = "pathosd".to_string(),
        /// Trace export; overrides the settings above.
        traces: OtelTraces = OtelTraces::default(),
        /// Metric export; overrides the settings above.
        metrics: OtelMetrics = OtelMetrics::default(),
        /// Log export; overrides the settings above.
        logs: OtelSignal = OtelSignal::default(),
    }
}

config_struct! {
    /// One OTLP signal's settings; each unset one is otel's.
    pub struct OtelSignal {
        /// Export this signal (when otel.enabled and an endpoint is set).
        enabled: bool = true,
        /// This signal's collector URL; otel.endpoint when empty.
        endpoint: String = String::new(),
        /// Overrides otel.insecure.
        insecure: Option<bool> = None,
        /// Added to otel.headers; a name in both takes this value.
        headers: BTreeMap<String, String> = BTreeMap::new(),
    }
}

config_struct! {
    /// The trace signal's settings; each unset one is otel's.
    pub struct OtelTraces {
        /// Export traces (when otel.enabled and an endpoint is set).
        enabled: bool = true,
        /// The traces collector URL; otel.endpoint when empty.
        endpoint: String = String::new(),
        /// Overrides otel.insecure.
        insecure: Option<bool> = None,
        /// Added to otel.headers; a name in both takes this value.
        headers: BTreeMap<String, String> = BTreeMap::new(),
        /// Share of health_check spans exported, 0 to 1 (bgp.* spans are all exported).
        sample_ratio: f64 = 0.01,
    }
}

config_struct! {
    /// The metric signal's settings; each unset one is otel's.
    pub struct OtelMetrics {
        /// Export metrics (when otel.enabled and an endpoint is set).
        enabled: bool = true,
        /// The metrics collector URL; otel.endpoint when empty.
        endpoint: String = String::new(),
        /// Overrides otel.insecure.
        insecure: Option<bool> = None,
        /// Added to otel.headers; a name in both takes this value.
        headers: BTreeMap<String, String> = BTreeMap::new(),
        /// Time between two exports of every /metrics family (at least 1s).
        interval: Dur = Dur::secs(60),
    }
}

config_enum! {
    /// RFC 9234 §4.1 BGP Roles.
    pub enum BgpRole {
        Provider = "provider",
        Rs = "rs",
        RsClient = "rs-client",
        Customer = "customer",
        Peer = "peer",
    }
}

config_enum! {
    /// What an unhealthy VIP does.
    pub enum FailAction {
        Withdraw = "withdraw",
        LowerPriority = "lower_priority",
        DrainThenWithdraw = "drain_then_withdraw",
    }
}

/// A VIP's prefixes: the first, and the others when `prefix` is a list
/// (empty for the usual one prefix, which costs no allocation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefixes {
    pub first: Prefix,
    pub more: Box<[Prefix]>,
}

/// The placeholder a VIP without a prefix (an error) holds.
impl Default for Prefixes {
    fn default() -> Prefixes {
        Prefixes {
            first: Prefix::host(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            more: Box::default(),
        }
    }
}

/// The one-prefix form.
impl From<Prefix> for Prefixes {
    fn from(first: Prefix) -> Prefixes {
        Prefixes {
            first,
            more: Box::default(),
        }
    }
}

/// One prefix, as `"10.0.0.1/32"` (the tests' shorthand).
impl std::str::FromStr for Prefixes {
    type Err = <Prefix as std::str::FromStr>::Err;
    fn from_str(s: &str) -> Result<Prefixes, Self::Err> {
        s.parse::<Prefix>().map(Prefixes::from)
    }
}

impl Prefixes {
    /// Every prefix, the first first.
    pub fn iter(&self) -> impl Iterator<Item = Prefix> + '_ {
        std::iter::once(self.first).chain(self.more.iter().copied())
    }
}

config_struct! {
    /// One VIP prefix with its checks and policy.
    pub struct Vip {
        /// Unique name; used in the API path, metrics and ubus.
        name: std::sync::Arc<str> = std::sync::Arc::from(""),
        /// The prefix announced, IPv4 or IPv6, any length (a default route, length 0, only with allow_default_route); or a list of up to 16 (IPv4 and IPv6 together), announced, pessimized and withdrawn together on the one check set.
        prefix: Prefixes = Prefixes::default(),
        /// Allow a prefix of length 0 (0.0.0.0/0, ::/0): a default route draws all of the peers' traffic to this router.
        allow_default_route: bool = false,
        /// Announce for as long as the daemon lives, with no checks.
        always: bool = false,
        /// The single check (exactly one of check and checks, unless always).
        check: Option<Box<Check>> = None,
        /// Several checks, combined by checks_policy.
        checks: Option<Vec<Check>> = None,
        /// How checks combine: all, any, a boolean expression of check names, at_least(N) or ratio >= X.
        checks_policy: PolicyText = PolicyText::default(),
        /// Announce, pessimize and drain behaviour.
        policy: VipPolicy = VipPolicy::default(),
        /// Fail the checks while the VIP address is not on a local interface.
        require_local_address: bool = false,
        /// Narrow require_local_address to this interface.
        local_interface: Option<String> = None,
        /// procd services (init script names, e.g. dnsmasq) the VIP needs: procd's stop of one fails the VIP at once, its start probes the checks at once.
        services: Option<Box<Vec<String>>> = None,
        /// netifd interfaces (logical names, e.g. wan) the VIP needs: an ifdown fails the VIP at once, an ifup probes the checks at once.
        interfaces: Option<Box<Vec<String>>> = None,
     }
}

config_struct! {
    /// Announce, pessimize and drain behaviour of a VIP.
    pub struct Policy {
        /// What an unhealthy VIP does: withdraw, lower_priority, or drain_then_withdraw.
        fail_action: FailAction = FailAction::LowerPriority,
        /// Attributes while healthy (standby ordering).
        announce: Announce = Announce::default(),
        /// Attributes added while pessimized.
        lower_priority: LowerPriority = LowerPriority::default(),
        /// While this file exists the VIP is pessimized.
        lower_priority_file: Option<String> = None,
        /// drain_then_withdraw: time pessimized before the withdraw.
        drain_time: Dur = Dur::secs(30),
        /// Withdraw a draining VIP as soon as fewer flows than this (conntrack entries to its prefix) remain, drain_time at the latest; 0: off.
        drain_until_flows_below: u32 = 0,
        /// A withdrawn VIP is re-announced only after being healthy this long.
        recovery_hold: Dur = Dur::ZERO,
        /// Route flap damping (RFC 2439's) of this VIP's own announcements.
        damping: Damping = Damping::default(),
    }
}

config_struct! {
    /// Route flap damping of a VIP's own announcements (RFC 2439's figure of merit): each loss of health adds 1000 to a penalty that halves every half_life; above suppress the VIP is damped (kept withdrawn, or pessimized with fail_action lower_priority) until the penalty decays below reuse.
    pub struct Damping {
        /// Damp this VIP.
        enabled: bool = false,
        /// Time for the penalty to halve (1s to 45m).
        half_life: Dur = Dur::secs(300),
        /// Penalty above which the VIP is damped; a flap adds 1000.
        suppress: u32 = 2000,
        /// Penalty below which a damped VIP is released; less than suppress.
        reuse: u32 = 750,
        /// Longest a VIP stays damped after its last flap, at most 12h (caps the penalty below reuse × 2^(max_suppress/half_life)).
        max_suppress: Dur = Dur::secs(1200),
    }
}

config_struct! {
    /// Attributes a healthy VIP is announced with.
    pub struct Announce {
        /// Extra copies of the local AS (0..16), to rank standby nodes.
        as_path_prepend: u8 = 0,
        /// Standard communities "asn:value".
        communities: Vec<Community> = Vec::new(),
        /// Large communities "global:local1:local2".
        large_communities: Vec<LargeCommunity> = Vec::new(),
        /// MULTI_EXIT_DISC (0..4294967295; lower is preferred); unset: none sent.
        med: Option<u32> = None,
        /// LOCAL_PREF sent to iBGP neighbors (higher is preferred).
        local_pref: u32 = crate::bgp::types::DEFAULT_LOCAL_PREF,
    }
}

config_struct! {
    /// Attributes added while a VIP is pessimized.
    pub struct LowerPriority {
        /// Prepends added to announce.as_path_prepend (0..16).
        as_path_prepend: u8 = 6,
        /// Standard communities added to announce.communities.
        communities: Vec<Community> = Vec::new(),
        /// Large communities added to announce.large_communities.
        large_communities: Vec<LargeCommunity> = Vec::new(),
        /// MULTI_EXIT_DISC while pessimized, not below announce.med; unset: announce.med.
        med: Option<u32> = None,
        /// LOCAL_PREF while pessimized (iBGP), not above announce.local_pref; unset: announce.local_pref.
        local_pref: Option<u32> = None,
    }
}

impl Neighbor {
    /// The TCP MD5 key to set, if any. An empty auth_password means none, so
    /// `"%{PATHOSD_BGP_MD5}"` can be switched off by an empty variable.
    pub(crate) fn md5_key(&self) -> Option<&str> {
        self.auth_password.as_deref().filter(|k| !k.is_empty())
    }
}

impl Api {
    /// The bearer token mutating HTTP requests must send, if any. An empty
    /// token means none, so `"%{PATHOSD_API_TOKEN}"` can be switched off by
    /// an empty variable.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref().filter(|t| !t.is_empty())
    }
}

/// A VIP's `policy`, held only when it is not the default. The owner keeps
/// the whole validated config for reload's diff, 10,000 VIPs at most, and a
/// `Policy` is 176 bytes of mostly empty lists: inline it was half of each
/// `Vip` (328 bytes), for `always` VIPs that nearly all leave it unset. It
/// reads as a `Policy` (`Deref`); writing through it stores a copy.
#[derive(Debug, Clone, Default)]
pub struct VipPolicy(Option<Box<Policy>>);

impl VipPolicy {
    /// The default policy, shared by every VIP that sets none.
    fn default_policy() -> &'static Policy {
        &DEFAULT_POLICY
    }
}

/// `Policy::default()` as a constant (a test keeps the two equal): a plain
/// static, no once-initialised cell (no lock in the daemon, tests/lock_sites.rs).
static DEFAULT_POLICY: Policy = Policy {
    fail_action: FailAction::LowerPriority,
    announce: Announce {
        as_path_prepend: 0,
        communities: Vec::new(),
        large_communities: Vec::new(),
        med: None,
        local_pref: crate::bgp::types::DEFAULT_LOCAL_PREF,
    },
    lower_priority: LowerPriority {
        as_path_prepend: 6,
        communities: Vec::new(),
        large_communities: Vec::new(),
        med: None,
        local_pref: None,
    },
    lower_priority_file: None,
    drain_time: Dur::secs(30),
    drain_until_flows_below: 0,
    recovery_hold: Dur::ZERO,
    damping: Damping {
        enabled: false,
        half_life: Dur::secs(300),
        suppress: 2000,
        reuse: 750,
        max_suppress: Dur::secs(1200),
    },
};

impl From<Policy> for VipPolicy {
    fn from(p: Policy) -> Self {
        if p == *VipPolicy::default_policy() {
            VipPolicy(None)
        } else {
            VipPolicy(Some(Box::new(p)))
        }
    }
}

impl std::ops::Deref for VipPolicy {
    type Target = Policy;
    fn deref(&self) -> &Policy {
        match &self.0 {
            Some(p) => p,
            None => VipPolicy::default_policy(),
        }
    }
}

impl std::ops::DerefMut for VipPolicy {
    fn deref_mut(&mut self) -> &mut Policy {
        self.0
            .get_or_insert_with(|| Box::new(VipPolicy::default_policy().clone()))
    }
}

/// Equal when the policies are, whichever way each is held.
impl PartialEq for VipPolicy {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// The JSON and the schema are `Policy`'s.
impl Field for VipPolicy {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        Policy::decode(v, path, errs).map(VipPolicy::from)
    }
    fn encode(&self) -> Value {
        (**self).encode()
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        Policy::schema()
    }
}

/// A VIP's `checks_policy` text. The daemon evaluates the compiled
/// `Vip::checks_expr`; the text stays for reload's diff and /status. The
/// default, "all", and "any" are borrowed, not a heap string per VIP (a
/// 32-byte block each, for 10,000 `always` VIPs that never set it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyText(std::borrow::Cow<'static, str>);

impl PolicyText {
    pub fn new(s: &str) -> Self {
        PolicyText(match s {
            "all" => "all".into(),
            "any" => "any".into(),
            _ => s.to_string().into(),
        })
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for PolicyText {
    fn default() -> Self {
        PolicyText("all".into())
    }
}

impl std::ops::Deref for PolicyText {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PolicyText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The JSON and the schema are a string's.
impl Field for PolicyText {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::String(s) => Some(PolicyText::new(s)),
            _ => String::decode(v, path, errs).map(|s| PolicyText::new(&s)),
        }
    }
    fn encode(&self) -> Value {
        json!(self.as_str())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        String::schema()
    }
}

impl Field for Community {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let parsed = v.as_str().and_then(|s| {
            let (a, b) = s.split_once(':')?;
            Some(Community(a.trim().parse().ok()?, b.trim().parse().ok()?))
        });
        if parsed.is_none() {
            errs.push_fmt(
                path,
                format_args!(
                    "{} is not a community \"asn:value\" with 16-bit parts",
                    show(v)
                ),
            );
        }
        parsed
    }
    fn encode(&self) -> Value {
        json!(self.to_string())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string", "pattern": "^[0-9]{1,5}:[0-9]{1,5}$"})
    }
}

impl Field for LargeCommunity {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let parsed = v.as_str().and_then(|s| {
            let mut it = s.split(':');
            let a = it.next()?.trim().parse().ok()?;
            let b = it.next()?.trim().parse().ok()?;
            let c = it.next()?.trim().parse().ok()?;
            it.next().is_none().then_some(LargeCommunity(a, b, c))
        });
        if parsed.is_none() {
            errs.push_fmt(
                path,
                format_args!(
                    "{} is not a large community \"global:local1:local2\" with 32-bit parts",
                    show(v)
                ),
            );
        }
        parsed
    }
    fn encode(&self) -> Value {
        json!(self.to_string())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string", "pattern": "^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(v: Value) -> (Option<Config>, Vec<String>) {
        let mut errs = Errors::default();
        let c = Config::decode(&v, "", &mut errs);
        (c, errs.0.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn the_default_policy_constant_is_policy_default() {
        assert_eq!(DEFAULT_POLICY, Policy::default());
    }

    #[test]
    fn decodes_defaults_and_collects_every_error() {
        let (c, errs) = decode(json!({
            "schema": "v1",
            "router": {"asn": 65001, "router_id": "10.0.0.1", "colour": 1},
            "bgp": {"hold_time": "9x", "neighbors": [{"name": "b", "address": "127.0.0.2", "peer_asn": "65000"}]},
            "vips": [{"name": "web", "prefix": "10.0.0.300/32",
                      "check": {"type": "tcp", "tcp": {"port": 80}},
                      "policy": {"announce": {"communities": ["65001:70000"]}}}]
        }));
        assert_eq!(
            errs,
            vec![
                "router.colour: unknown field",
                "bgp.hold_time: \"9x\" is not a duration such as \"500ms\", \"2s\" or \"1m30s\"",
                "vips[0].prefix: \"10.0.0.300/32\" is not a valid prefix (\"10.0.0.300\" is not an IP address)",
                "vips[0].policy.announce.communities[0]: \"65001:70000\" is not a community \"asn:value\" with 16-bit parts",
            ]
        );
        let c = c.unwrap();
        assert_eq!(c.bgp.hold_time, Dur::secs(90));
        assert_eq!(c.bgp.neighbors[0].peer_asn, 65000);
        let chk = c.vips[0].check.as_deref().unwrap();
        assert_eq!(chk.kind, Some(CheckType::Tcp));
        assert_eq!(
            (chk.interval, chk.timeout, chk.rise, chk.fall),
            (Dur::secs(1), Dur::ms(100), 1, 3)
        );
        assert_eq!(c.vips[0].policy.lower_priority.as_path_prepend, 6);
    }

    /// A decoded VIP is held while the file is loaded, 10,000 times at
    /// most: the per-type blocks of a check must not be inline (a `Vip`
    /// was 1,216 bytes when they were, 920 of them an unused `Check`).
    /// What the engine keeps is a `run::VipSpec` (its own test).
    #[test]
    fn a_vip_stays_small() {
        let vip = std::mem::size_of::<Vip>();
        // 328 with the policy inline; 152 with it boxed when set and the
        // name an `Arc<str>`; `services` and `interfaces` boxed, as few
        // VIPs name any.
        assert!(vip <= 168, "Vip is {vip} bytes");
        assert_eq!(std::mem::size_of::<VipPolicy>(), 8);
        // 160, then 184 with fast_interval and graded health's two
        // durations: 240 KB more at 10,000 checks while a file loads.
        let check = std::mem::size_of::<Check>();
        assert!(check <= 184, "Check is {check} bytes");
    }

    /// A VIP's policy is held only when it is not the default; it reads and
    /// encodes as the policy given, and a write changes that VIP alone.
    #[test]
    fn a_default_policy_is_not_held() {
        let (c, errs) = decode(json!({
            "schema": "v1",
            "router": {"asn": 65001, "router_id": "10.0.0.1"},
            "vips": [
                {"name": "a", "prefix": "10.0.0.1/32", "always": true},
                {"name": "b", "prefix": "10.0.0.2/32", "always": true,
                 "policy": {"drain_time": "30s"}, "checks_policy": "all"},
                {"name": "c", "prefix": "10.0.0.3/32", "always": true,
                 "policy": {"announce": {"as_path_prepend": 3}}}
            ]
        }));
        assert!(errs.is_empty(), "{errs:?}");
        let mut c = c.unwrap();
        assert!(c.vips[0].policy.0.is_none() && c.vips[1].policy.0.is_none());
        assert!(c.vips[2].policy.0.is_some());
        assert_eq!(c.vips[2].policy.announce.as_path_prepend, 3);
        assert_eq!(c.vips[1].policy.drain_time, Dur::secs(30));
        assert_eq!(c.vips[0].policy, c.vips[1].policy);
        assert_ne!(c.vips[0].policy, c.vips[2].policy);
        assert_eq!(c.vips[1].checks_policy.as_str(), "all");
        assert!(matches!(
            c.vips[1].checks_policy.0,
            std::borrow::Cow::Borrowed(_)
        ));
        c.vips[0].policy.announce.as_path_prepend = 5;
        assert_eq!(c.vips[0].policy.announce.as_path_prepend, 5);
        assert_eq!(c.vips[1].policy.announce.as_path_prepend, 0);
        assert_eq!(Policy::default().announce.as_path_prepend, 0);
        assert_eq!(
            c.vips[0].encode()["policy"]["announce"]["as_path_prepend"],
            json!(5)
        );
        assert_eq!(
            c.vips[2].encode()["policy"]["announce"]["as_path_prepend"],
            json!(3)
        );
    }

    #[test]
    fn encode_round_trips() {
        let (c, errs) = decode(json!({
            "schema": "v1",
            "router": {"asn": 65001, "router_id": "10.0.0.1"},
            "vips": [{"name": "w", "prefix": "2001:db8::1/128", "checks": [
                {"type": "http", "http": {"response_codes": [200, "300-302"]}}]}]
        }));
        assert!(errs.is_empty(), "{errs:?}");
        let c = c.unwrap();
        let (again, errs) = decode(c.encode());
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(again.unwrap(), c);
    }
}
