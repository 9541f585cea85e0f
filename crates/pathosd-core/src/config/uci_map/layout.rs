//! pathosd's UCI layout (docs/config-uci.md): the section types, and for
//! each the options it takes, where each goes in the v1 value and its
//! shape.

use super::super::schema::CheckType;
use super::super::validate::{MAX_CHECKS, MAX_NEIGHBORS, MAX_VIPS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// One string.
    Scalar,
    /// A JSON array; written with `list` (an `option` gives one element).
    List,
    /// One string from `option`, a JSON array from `list` (a VIP's
    /// prefixes).
    OneOrList,
    /// A JSON object from `list NAME 'Key: value'` entries.
    Pairs,
}

pub(super) use Kind::*;

/// One UCI option: its name, where its value goes (relative to the
/// section's JSON object; dots nest), and its shape.
pub(super) type Row = (&'static str, &'static str, Kind);

/// The name of the one `pathosd` section: `pathosd.main` to uci, the init
/// script and LuCI.
pub(super) const MAIN: &str = "main";

/// `config pathosd 'main'`: the global settings.
pub(super) const GLOBAL: &[Row] = &[
    ("asn", "router.asn", Scalar),
    ("router_id", "router.router_id", Scalar),
    ("local_address", "router.local_address", Scalar),
    ("local_address_ipv6", "router.local_address_ipv6", Scalar),
    ("listen_address", "bgp.listen_address", Scalar),
    ("listen_port", "bgp.listen_port", Scalar),
    ("hold_time", "bgp.hold_time", Scalar),
    ("keepalive_time", "bgp.keepalive_time", Scalar),
    ("graceful_restart", "bgp.graceful_restart", Scalar),
    ("shutdown_drain", "bgp.shutdown_drain", Scalar),
    ("graceful_shutdown", "bgp.graceful_shutdown", Scalar),
    ("api_listen", "api.listen", Scalar),
    ("api_read_header_timeout", "api.read_header_timeout", Scalar),
    ("api_read_timeout", "api.read_timeout", Scalar),
    ("api_write_timeout", "api.write_timeout", Scalar),
    ("api_idle_timeout", "api.idle_timeout", Scalar),
    ("api_token", "api.token", Scalar),
    ("ubus_socket", "api.ubus_socket", Scalar),
    ("log_level", "logging.level", Scalar),
    ("log_timestamps", "logging.timestamps", Scalar),
    ("log_syslog", "logging.syslog", Scalar),
    ("log_otel_level", "logging.otel_level", Scalar),
    ("hooks_dir", "hooks.dir", Scalar),
    ("hook_timeout", "hooks.timeout", Scalar),
    ("hook_queue", "hooks.queue", Scalar),
    ("otel_enabled", "otel.enabled", Scalar),
    ("otel_endpoint", "otel.endpoint", Scalar),
    ("otel_insecure", "otel.insecure", Scalar),
    ("otel_header", "otel.headers", Pairs),
    ("otel_service_name", "otel.service_name", Scalar),
    ("otel_metrics_enabled", "otel.metrics.enabled", Scalar),
    ("otel_metrics_endpoint", "otel.metrics.endpoint", Scalar),
    ("otel_metrics_insecure", "otel.metrics.insecure", Scalar),
    ("otel_metrics_header", "otel.metrics.headers", Pairs),
    ("otel_metrics_interval", "otel.metrics.interval", Scalar),
    ("otel_traces_enabled", "otel.traces.enabled", Scalar),
    ("otel_traces_endpoint", "otel.traces.endpoint", Scalar),
    ("otel_traces_insecure", "otel.traces.insecure", Scalar),
    ("otel_traces_header", "otel.traces.headers", Pairs),
    (
        "otel_traces_sample_ratio",
        "otel.traces.sample_ratio",
        Scalar,
    ),
    ("otel_logs_enabled", "otel.logs.enabled", Scalar),
    ("otel_logs_endpoint", "otel.logs.endpoint", Scalar),
    ("otel_logs_insecure", "otel.logs.insecure", Scalar),
    ("otel_logs_header", "otel.logs.headers", Pairs),
];

pub(super) const NEIGHBOR: &[Row] = &[
    ("name", "name", Scalar),
    ("address", "address", Scalar),
    ("port", "port", Scalar),
    ("peer_asn", "peer_asn", Scalar),
    ("local_address", "local_address", Scalar),
    ("passive", "passive", Scalar),
    ("required", "required", Scalar),
    ("auth_password", "auth_password", Scalar),
    ("enable_multihop", "enable_multihop", Scalar),
    ("multihop_ttl", "multihop_ttl", Scalar),
    ("ttl_security", "ttl_security", Scalar),
    ("hold_time", "hold_time", Scalar),
    ("keepalive_time", "keepalive_time", Scalar),
    ("send_hold_time", "send_hold_time", Scalar),
    ("role", "role", Scalar),
    ("extended_next_hop", "extended_next_hop", Scalar),
    ("require_role", "require_role", Scalar),
    ("graceful_restart", "graceful_restart", Scalar),
    ("error_wait_min", "error_wait_min", Scalar),
    ("error_wait_max", "error_wait_max", Scalar),
    ("bfd", "bfd.enabled", Scalar),
    (
        "bfd_desired_minimum_tx_interval",
        "bfd.desired_minimum_tx_interval",
        Scalar,
    ),
    (
        "bfd_required_minimum_receive",
        "bfd.required_minimum_receive",
        Scalar,
    ),
    (
        "bfd_detection_multiplier",
        "bfd.detection_multiplier",
        Scalar,
    ),
    ("bfd_multihop", "bfd.multihop", Scalar),
];

pub(super) const VIP: &[Row] = &[
    ("name", "name", Scalar),
    ("prefix", "prefix", OneOrList),
    ("allow_default_route", "allow_default_route", Scalar),
    ("always", "always", Scalar),
    ("checks_policy", "checks_policy", Scalar),
    ("require_local_address", "require_local_address", Scalar),
    ("local_interface", "local_interface", Scalar),
    ("service", "services", List),
    ("interface", "interfaces", List),
    ("fail_action", "policy.fail_action", Scalar),
    ("lower_priority_file", "policy.lower_priority_file", Scalar),
    ("drain_time", "policy.drain_time", Scalar),
    (
        "drain_until_flows_below",
        "policy.drain_until_flows_below",
        Scalar,
    ),
    ("recovery_hold", "policy.recovery_hold", Scalar),
    ("damping", "policy.damping.enabled", Scalar),
    ("damping_half_life", "policy.damping.half_life", Scalar),
    ("damping_suppress", "policy.damping.suppress", Scalar),
    ("damping_reuse", "policy.damping.reuse", Scalar),
    (
        "damping_max_suppress",
        "policy.damping.max_suppress",
        Scalar,
    ),
    ("as_path_prepend", "policy.announce.as_path_prepend", Scalar),
    ("community", "policy.announce.communities", List),
    ("large_community", "policy.announce.large_communities", List),
    ("med", "policy.announce.med", Scalar),
    ("local_pref", "policy.announce.local_pref", Scalar),
    (
        "lower_priority_as_path_prepend",
        "policy.lower_priority.as_path_prepend",
        Scalar,
    ),
    (
        "lower_priority_community",
        "policy.lower_priority.communities",
        List,
    ),
    (
        "lower_priority_large_community",
        "policy.lower_priority.large_communities",
        List,
    ),
    ("lower_priority_med", "policy.lower_priority.med", Scalar),
    (
        "lower_priority_local_pref",
        "policy.lower_priority.local_pref",
        Scalar,
    ),
];

/// Options every `config check` takes, whatever its type.
pub(super) const CHECK: &[Row] = &[
    ("name", "name", Scalar),
    ("type", "type", Scalar),
    ("interval", "interval", Scalar),
    ("fast_interval", "fast_interval", Scalar),
    ("timeout", "timeout", Scalar),
    ("rise", "rise", Scalar),
    ("fall", "fall", Scalar),
    ("detailed_metrics", "detailed_metrics", Scalar),
    ("degraded_latency", "degraded_latency", Scalar),
    ("degraded_hold_down", "degraded_hold_down", Scalar),
];

pub(super) const HTTP: &[Row] = &[
    ("url", "http.url", Scalar),
    ("host", "http.host", Scalar),
    ("port", "http.port", Scalar),
    ("method", "http.method", Scalar),
    ("header", "http.headers", Pairs),
    ("response_code", "http.response_codes", List),
    ("response_text", "http.response_text", Scalar),
    ("response_regex", "http.response_regex", Scalar),
    ("response_jq", "http.response_jq", Scalar),
    ("proxy", "http.proxy", Scalar),
    ("keep_alive", "http.keep_alive", Scalar),
    ("tls_ca_cert", "http.tls_ca_cert", Scalar),
    ("tls_server_name", "http.tls_server_name", Scalar),
    ("tls_insecure", "http.tls_insecure", Scalar),
    ("tls_client_cert", "http.tls_client_cert", Scalar),
    ("tls_client_key", "http.tls_client_key", Scalar),
];

pub(super) const DNS: &[Row] = &[
    ("query", "dns.names", List),
    ("resolver", "dns.resolver", Scalar),
    ("port", "dns.port", Scalar),
    ("query_type", "dns.query_type", Scalar),
    ("expected_rcode", "dns.expected_rcode", Scalar),
    ("expected_answer", "dns.expected_answers", List),
    ("expected_match", "dns.expected_match", Scalar),
];

pub(super) const PING: &[Row] = &[
    ("dst_ip", "ping.dst_ip", Scalar),
    ("src_ip", "ping.src_ip", Scalar),
    ("privileged", "ping.privileged", Scalar),
    ("count", "ping.count", Scalar),
    ("ping_interval", "ping.interval", Scalar),
    ("max_loss_ratio", "ping.max_loss_ratio", Scalar),
];

pub(super) const TCP: &[Row] = &[
    ("host", "tcp.host", Scalar),
    ("port", "tcp.port", Scalar),
    ("send", "tcp.send", Scalar),
    ("expect", "tcp.expect", Scalar),
];

pub(super) const UDP: &[Row] = &[
    ("host", "udp.host", Scalar),
    ("port", "udp.port", Scalar),
    ("payload", "udp.payload", Scalar),
    ("payload_hex", "udp.payload_hex", Scalar),
    ("expect", "udp.expect", Scalar),
];

pub(super) const GRPC: &[Row] = &[
    ("host", "grpc.host", Scalar),
    ("port", "grpc.port", Scalar),
    ("tls", "grpc.tls", Scalar),
    ("tls_insecure", "grpc.tls_insecure", Scalar),
    ("tls_ca_cert", "grpc.tls_ca_cert", Scalar),
    ("tls_server_name", "grpc.tls_server_name", Scalar),
    ("method", "grpc.method", Scalar),
    ("service", "grpc.service", Scalar),
    ("ok_code", "grpc.ok_codes", List),
    ("metadata", "grpc.metadata", Pairs),
];

pub(super) const EXEC: &[Row] = &[
    ("command", "exec.command", Scalar),
    ("arg", "exec.args", List),
];

pub(super) const UBUS: &[Row] = &[
    ("object", "ubus.object", Scalar),
    ("method", "ubus.method", Scalar),
    ("args", "ubus.args", Scalar),
    ("socket", "ubus.socket", Scalar),
    ("response_text", "ubus.response_text", Scalar),
    ("response_regex", "ubus.response_regex", Scalar),
    ("response_jq", "ubus.response_jq", Scalar),
];

pub(super) fn type_rows(t: CheckType) -> &'static [Row] {
    match t {
        CheckType::Http | CheckType::Https => HTTP,
        CheckType::Dns => DNS,
        CheckType::Ping => PING,
        CheckType::Tcp => TCP,
        CheckType::Udp => UDP,
        CheckType::Grpc => GRPC,
        CheckType::Exec => EXEC,
        CheckType::Ubus => UBUS,
    }
}

pub(super) fn check_type(s: &str) -> Option<CheckType> {
    Some(match s {
        "http" => CheckType::Http,
        "https" => CheckType::Https,
        "dns" => CheckType::Dns,
        "ping" => CheckType::Ping,
        "tcp" => CheckType::Tcp,
        "udp" => CheckType::Udp,
        "grpc" => CheckType::Grpc,
        "exec" => CheckType::Exec,
        "ubus" => CheckType::Ubus,
        _ => return None,
    })
}

/// The section types pathosd reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SectionKind {
    Pathosd,
    Neighbor,
    Vip,
    Check,
}

impl SectionKind {
    pub(super) fn of(s: &str) -> Option<SectionKind> {
        Some(match s {
            "pathosd" => SectionKind::Pathosd,
            "neighbor" => SectionKind::Neighbor,
            "vip" => SectionKind::Vip,
            "check" => SectionKind::Check,
            _ => return None,
        })
    }

    pub(super) fn as_str(self) -> &'static str {
        match self {
            SectionKind::Pathosd => "pathosd",
            SectionKind::Neighbor => "neighbor",
            SectionKind::Vip => "vip",
            SectionKind::Check => "check",
        }
    }

    /// Most sections of the kind a file may have (`config` statements,
    /// enabled or not); the one pathosd section has its own rule.
    pub(super) fn limit(self) -> usize {
        match self {
            SectionKind::Pathosd => usize::MAX,
            SectionKind::Neighbor => MAX_NEIGHBORS,
            SectionKind::Vip => MAX_VIPS,
            SectionKind::Check => MAX_CHECKS,
        }
    }
}
