//! Maps pathosd's UCI layout (docs/config-uci.md) to the v1 JSON value, so
//! that UCI and JSON share one decoder and one validator. Every JSON path the
//! mapping writes remembers the UCI section, option and line it came from, so
//! errors on UCI input are reported in UCI words:
//! `check 'web_http' option timeout (line 14): 1s must be less than interval 1s`.
//!
//! UCI has only strings; the decoder accepts strings for integers ("65001"),
//! booleans ('0'/'1') and numbers, so every value is passed through as text.

use super::field::{quote, ConfigError, Errors};
use super::schema::CheckType;
use super::uci::{command, outside_section, overwrites, Cmd, Lexer, Line, UciError};
use super::validate::{MAX_CHECKS, MAX_CHECKS_PER_VIP, MAX_NEIGHBORS, MAX_VIPS};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// One string.
    Scalar,
    /// A JSON array; written with `list` (an `option` gives one element).
    List,
    /// A JSON object from `list NAME 'Key: value'` entries.
    Pairs,
}

use Kind::*;

/// One UCI option: its name, where its value goes (relative to the
/// section's JSON object; dots nest), and its shape.
type Row = (&'static str, &'static str, Kind);

/// The name of the one `pathosd` section: `pathosd.main` to uci, the init
/// script and LuCI.
const MAIN: &str = "main";

/// `config pathosd 'main'`: the global settings.
const GLOBAL: &[Row] = &[
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

const NEIGHBOR: &[Row] = &[
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

const VIP: &[Row] = &[
    ("name", "name", Scalar),
    ("prefix", "prefix", Scalar),
    ("allow_default_route", "allow_default_route", Scalar),
    ("always", "always", Scalar),
    ("checks_policy", "checks_policy", Scalar),
    ("require_local_address", "require_local_address", Scalar),
    ("local_interface", "local_interface", Scalar),
    ("fail_action", "policy.fail_action", Scalar),
    ("lower_priority_file", "policy.lower_priority_file", Scalar),
    ("drain_time", "policy.drain_time", Scalar),
    (
        "drain_until_flows_below",
        "policy.drain_until_flows_below",
        Scalar,
    ),
    ("recovery_hold", "policy.recovery_hold", Scalar),
    ("as_path_prepend", "policy.announce.as_path_prepend", Scalar),
    ("community", "policy.announce.communities", List),
    ("large_community", "policy.announce.large_communities", List),
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
];

/// Options every `config check` takes, whatever its type.
const CHECK: &[Row] = &[
    ("name", "name", Scalar),
    ("type", "type", Scalar),
    ("interval", "interval", Scalar),
    ("timeout", "timeout", Scalar),
    ("rise", "rise", Scalar),
    ("fall", "fall", Scalar),
    ("detailed_metrics", "detailed_metrics", Scalar),
];

const HTTP: &[Row] = &[
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

const DNS: &[Row] = &[
    ("query", "dns.names", List),
    ("resolver", "dns.resolver", Scalar),
    ("port", "dns.port", Scalar),
    ("query_type", "dns.query_type", Scalar),
    ("expected_rcode", "dns.expected_rcode", Scalar),
    ("expected_answer", "dns.expected_answers", List),
    ("expected_match", "dns.expected_match", Scalar),
];

const PING: &[Row] = &[
    ("dst_ip", "ping.dst_ip", Scalar),
    ("src_ip", "ping.src_ip", Scalar),
    ("privileged", "ping.privileged", Scalar),
    ("count", "ping.count", Scalar),
    ("ping_interval", "ping.interval", Scalar),
    ("max_loss_ratio", "ping.max_loss_ratio", Scalar),
];

const TCP: &[Row] = &[
    ("host", "tcp.host", Scalar),
    ("port", "tcp.port", Scalar),
    ("send", "tcp.send", Scalar),
    ("expect", "tcp.expect", Scalar),
];

const UDP: &[Row] = &[
    ("host", "udp.host", Scalar),
    ("port", "udp.port", Scalar),
    ("payload", "udp.payload", Scalar),
    ("payload_hex", "udp.payload_hex", Scalar),
    ("expect", "udp.expect", Scalar),
];

const GRPC: &[Row] = &[
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

const EXEC: &[Row] = &[
    ("command", "exec.command", Scalar),
    ("arg", "exec.args", List),
];

fn type_rows(t: CheckType) -> &'static [Row] {
    match t {
        CheckType::Http | CheckType::Https => HTTP,
        CheckType::Dns => DNS,
        CheckType::Ping => PING,
        CheckType::Tcp => TCP,
        CheckType::Udp => UDP,
        CheckType::Grpc => GRPC,
        CheckType::Exec => EXEC,
    }
}

fn check_type(s: &str) -> Option<CheckType> {
    Some(match s {
        "http" => CheckType::Http,
        "https" => CheckType::Https,
        "dns" => CheckType::Dns,
        "ping" => CheckType::Ping,
        "tcp" => CheckType::Tcp,
        "udp" => CheckType::Udp,
        "grpc" => CheckType::Grpc,
        "exec" => CheckType::Exec,
        _ => return None,
    })
}

/// The section types pathosd reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionKind {
    Pathosd,
    Neighbor,
    Vip,
    Check,
}

impl SectionKind {
    fn of(s: &str) -> Option<SectionKind> {
        Some(match s {
            "pathosd" => SectionKind::Pathosd,
            "neighbor" => SectionKind::Neighbor,
            "vip" => SectionKind::Vip,
            "check" => SectionKind::Check,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            SectionKind::Pathosd => "pathosd",
            SectionKind::Neighbor => "neighbor",
            SectionKind::Vip => "vip",
            SectionKind::Check => "check",
        }
    }

    /// Most sections of the kind a file may have (`config` statements,
    /// enabled or not); the one pathosd section has its own rule.
    fn limit(self) -> usize {
        match self {
            SectionKind::Pathosd => usize::MAX,
            SectionKind::Neighbor => MAX_NEIGHBORS,
            SectionKind::Vip => MAX_VIPS,
            SectionKind::Check => MAX_CHECKS,
        }
    }
}

/// Most option values and list items one VIP with its checks, or the
/// pathosd and neighbor sections together, may hold: the JSON value of one
/// of them is all the loader holds at once (a VIP of 64 checks with ten
/// options each needs 650).
pub(crate) const MAX_UNIT_VALUES: usize = 16_384;

/// "No occurrence", at the end of a section's chain.
const NONE: u32 = u32::MAX;

fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(NONE)
}

/// A section of a known type as the index has it: no options, only where
/// its statements are (the `config` statements that open it, a chain
/// through `Source::occs`).
#[derive(Debug)]
struct Head<'a> {
    kind: SectionKind,
    name: Option<Cow<'a, str>>,
    /// Position among the sections of the same type (for `@type[N]`).
    index: u32,
    line: u32,
    first: u32,
}

impl Head<'_> {
    /// How `uci` addresses the section: `vip 'web'` or `@check[1]`.
    fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{} '{n}'", self.kind.as_str()),
            None => format!("@{}[{}]", self.kind.as_str(), self.index),
        }
    }
}

/// One `config` statement of an indexed section: where its options start
/// (byte offset and line) and the next statement of the same section.
#[derive(Debug)]
struct Occ {
    at: u32,
    line: u32,
    next: u32,
}

/// A UCI file as the loader reads it: the text and an index of its
/// sections (a few dozen bytes each). Options are read from the text when
/// a section is mapped, one VIP (with its checks) at a time, never all at
/// once: a 4 MiB file of short options as values took 200 MB.
pub(crate) struct Source<'a> {
    text: &'a str,
    /// Whether a section count passed its limit (the errors say which):
    /// the file is refused before anything is mapped.
    pub(crate) over_limit: bool,
    heads: Vec<Head<'a>>,
    occs: Vec<Occ>,
    /// Whether errors name lines (not for sections handed over as values).
    lines: bool,
}

/// An option's merged value, borrowed from the file's text when it can be.
enum Val<'a> {
    One(Cow<'a, str>),
    List(Vec<(Cow<'a, str>, usize)>),
}

/// An option of a section, merged as libuci merges repeated statements.
struct Opt<'a> {
    name: &'static str,
    value: Val<'a>,
    /// Line of the last statement that set it.
    line: usize,
}

impl<'a> Source<'a> {
    /// Reads the text once: every statement is checked (a syntax error is
    /// returned as libuci reports it), sections of an unknown type or past
    /// a limit are errors in `errs`, and the others are indexed.
    pub(crate) fn index(
        text: &'a str,
        lines: bool,
        errs: &mut Errors,
    ) -> Result<Source<'a>, UciError> {
        let mut src = Source {
            text,
            over_limit: false,
            heads: Vec::new(),
            occs: Vec::new(),
            lines,
        };
        let mut lx = Lexer::new(text);
        // Section name → (type, line, head): for merging and for libuci's
        // rule that a name keeps its type.
        let mut by_name: HashMap<Cow<'a, str>, (Cow<'a, str>, u32, u32)> = HashMap::new();
        // `config` statements per known type, and sections per type.
        let mut written = [0usize; 4];
        let mut per_kind = [0u32; 4];
        let mut global: Option<u32> = None;
        let mut in_section = false;
        // The last occurrence of each head, to chain the next one.
        let mut last_occ: Vec<u32> = Vec::new();
        while let Some(c) = command(&mut lx)? {
            let (name, kind_text) = match &c.cmd {
                Cmd::Package(_) => {
                    in_section = false;
                    continue;
                }
                Cmd::Option { .. } if !in_section => return Err(outside_section(&c)),
                Cmd::Option { .. } => continue,
                Cmd::Config { kind, name } => (name.clone(), kind.clone()),
            };
            in_section = true;
            let kind = SectionKind::of(&kind_text);
            let (at, at_line) = lx.place();
            let occ = Occ {
                at: small(at),
                line: small(at_line),
                next: NONE,
            };
            if let Some(k) = kind {
                written[k as usize] += 1;
            }
            let over = kind.is_some_and(|k| written[k as usize] > k.limit());
            let earlier = name.as_ref().and_then(|n| by_name.get(n));
            if let (Some(n), Some((ekind, eline, head))) = (&name, earlier) {
                if *ekind != kind_text {
                    return Err(overwrites(&c, n, &kind_text, ekind, *eline as usize));
                }
                // The same section again: its statements are read with it.
                if *head != NONE && !over {
                    let i = small(src.occs.len());
                    let h = *head as usize;
                    match last_occ
                        .get(h)
                        .copied()
                        .and_then(|o| src.occs.get_mut(o as usize))
                    {
                        Some(prev) => prev.next = i,
                        None => continue,
                    }
                    last_occ[h] = i;
                    src.occs.push(occ);
                }
                continue;
            }
            let index = match kind {
                Some(k) => {
                    let counter = &mut per_kind[k as usize];
                    *counter = counter.saturating_add(1);
                    *counter - 1
                }
                None => 0,
            };
            let head = match kind {
                None => {
                    errs.push_as_written(
                        format_args!("config {kind_text}{}", Line(if lines { c.line } else { 0 })),
                        format_args!(
                            "unknown section type {} (pathosd, neighbor, vip or check)",
                            quote(&kind_text)
                        ),
                    );
                    NONE
                }
                Some(_) if over => NONE,
                Some(SectionKind::Pathosd) if global.is_some() => {
                    let first = global.and_then(|g| src.heads.get(g as usize));
                    let this = Head {
                        kind: SectionKind::Pathosd,
                        name: name.clone(),
                        index,
                        line: small(c.line),
                        first: NONE,
                    };
                    errs.push_as_written(
                        format_args!("{}{}", this.label(), src.at(c.line)),
                        format_args!(
                            "only one pathosd section is allowed (the first is {}{})",
                            first.map_or_else(String::new, Head::label),
                            src.at(first.map_or(0, |f| f.line as usize))
                        ),
                    );
                    NONE
                }
                Some(k) => {
                    let h = small(src.heads.len());
                    if k == SectionKind::Pathosd {
                        global = Some(h);
                    }
                    let o = small(src.occs.len());
                    src.heads.push(Head {
                        kind: k,
                        name: name.clone(),
                        index,
                        line: small(c.line),
                        first: o,
                    });
                    src.occs.push(occ);
                    last_occ.push(o);
                    h
                }
            };
            // The names of sections past a limit, or of unknown type past
            // the errors' limit, are not kept: the file is refused whatever
            // they say.
            if let Some(n) = name {
                if head != NONE || (kind.is_none() && !errs.stopped()) {
                    by_name.insert(n, (kind_text, small(c.line), head));
                }
            }
        }
        for k in [SectionKind::Neighbor, SectionKind::Vip, SectionKind::Check] {
            let n = written[k as usize];
            if n > k.limit() {
                src.over_limit = true;
                errs.push_as_written(
                    format_args!("config {}", k.as_str()),
                    format_args!(
                        "{n} {} sections, more than the limit of {}",
                        k.as_str(),
                        k.limit()
                    ),
                );
            }
        }
        src.heads.shrink_to_fit();
        src.occs.shrink_to_fit();
        Ok(src)
    }

    /// " (line N)", or nothing without lines.
    fn at(&self, line: usize) -> Line {
        Line(if self.lines { line } else { 0 })
    }

    /// Calls `f` with every option and list statement of `h`, in file
    /// order: (list?, name, value, line).
    fn each_option(
        &self,
        h: &Head<'a>,
        f: &mut dyn FnMut(bool, Cow<'a, str>, Cow<'a, str>, usize) -> bool,
    ) {
        let mut o = h.first;
        while let Some(occ) = self.occs.get(o as usize) {
            let mut lx = Lexer::at(self.text, occ.at as usize, occ.line as usize);
            // The index checked every statement: none fails here.
            while let Ok(Some(c)) = command(&mut lx) {
                match c.cmd {
                    Cmd::Option { list, name, value } => {
                        if !f(list, name, value, c.line) {
                            return;
                        }
                    }
                    _ => break,
                }
            }
            o = occ.next;
        }
    }

    /// The options of `h` that `known` names (by a static name), merged as
    /// libuci merges them: an option replaces, a list appends (and makes an
    /// earlier option its first item). Others go to `unknown` with their
    /// line. At most `budget` values are kept; false in `.1` once more were
    /// written.
    fn options(
        &self,
        h: &Head<'a>,
        known: &dyn Fn(&str) -> Option<&'static str>,
        unknown: &mut dyn FnMut(&str, usize),
        budget: &mut usize,
    ) -> (Vec<Opt<'a>>, bool) {
        let mut opts: Vec<Opt<'a>> = Vec::new();
        let mut ok = true;
        self.each_option(h, &mut |list, name, value, line| {
            let Some(key) = known(&name) else {
                unknown(&name, line);
                return true;
            };
            if *budget == 0 {
                ok = false;
                return false;
            }
            *budget -= 1;
            match opts.iter_mut().find(|o| o.name == key) {
                Some(o) => {
                    let old_line = std::mem::replace(&mut o.line, line);
                    if list {
                        let mut items = match std::mem::replace(&mut o.value, Val::List(Vec::new()))
                        {
                            Val::One(v) => vec![(v, old_line)],
                            Val::List(l) => l,
                        };
                        items.push((value, line));
                        o.value = Val::List(items);
                    } else {
                        o.value = Val::One(value);
                    }
                }
                None => opts.push(Opt {
                    name: key,
                    value: if list {
                        Val::List(vec![(value, line)])
                    } else {
                        Val::One(value)
                    },
                    line,
                }),
            }
            true
        });
        (opts, ok)
    }

    /// The few options of `h` named in `names` (no others are kept).
    fn some_options(&self, h: &Head<'a>, names: &'static [&'static str]) -> Vec<Opt<'a>> {
        let known = |n: &str| names.iter().find(|k| **k == n).copied();
        let mut budget = MAX_UNIT_VALUES;
        self.options(h, &known, &mut |_, _| {}, &mut budget).0
    }
}

fn one<'o, 'a>(opts: &'o [Opt<'a>], name: &str) -> Option<&'o Cow<'a, str>> {
    match opts.iter().find(|o| o.name == name).map(|o| &o.value) {
        Some(Val::One(v)) => Some(v),
        _ => None,
    }
}

/// What goes where: the global section, the enabled neighbors and VIPs in
/// file order, and each VIP's checks (by VIP, in file order).
pub(crate) struct Plan {
    /// Whether a VIP has more checks than MAX_CHECKS_PER_VIP (the errors
    /// say which): the file is refused before anything is mapped.
    pub(crate) over_limit: bool,
    global: Option<u32>,
    neighbors: Vec<u32>,
    vips: Vec<u32>,
    /// (VIP, check section, its type if valid), sorted by VIP, each VIP's
    /// in file order.
    checks: Vec<(u32, u32, Option<CheckType>)>,
}

impl Plan {
    /// The VIPs to map, in order.
    pub(crate) fn vip_count(&self) -> usize {
        self.vips.len()
    }

    fn checks_of(&self, vip: usize) -> &[(u32, u32, Option<CheckType>)] {
        let v = small(vip);
        let from = self.checks.partition_point(|(x, _, _)| *x < v);
        let to = self.checks.partition_point(|(x, _, _)| *x <= v);
        self.checks.get(from..to).unwrap_or(&[])
    }
}

/// Whether `option enabled` switches a section off; an unreadable value is
/// an error and leaves it on.
fn disabled(src: &Source<'_>, h: &Head<'_>, opts: &[Opt<'_>], errs: &mut Errors) -> bool {
    let Some(o) = opts.iter().find(|o| o.name == "enabled") else {
        return false;
    };
    match &o.value {
        Val::One(v) => match v.as_ref() {
            "0" | "false" | "no" | "off" | "disabled" => true,
            "1" | "true" | "yes" | "on" | "enabled" => false,
            _ => {
                errs.push_as_written(
                    format_args!("{} option enabled{}", h.label(), src.at(o.line)),
                    format_args!("{} is not a boolean ('0' or '1')", quote(v)),
                );
                false
            }
        },
        Val::List(_) => false,
    }
}

/// Finds the enabled sections and attaches each check to its VIP (by the
/// VIP's name, or its section name when `option name` differs; the first
/// VIP that has it wins). Errors are UCI's own: an unreadable `enabled`, a
/// check without a VIP or with one that does not exist, more than
/// MAX_CHECKS_PER_VIP checks on a VIP.
pub(crate) fn plan(src: &Source<'_>, errs: &mut Errors) -> Plan {
    let mut p = Plan {
        over_limit: false,
        global: None,
        neighbors: Vec::new(),
        vips: Vec::new(),
        checks: Vec::new(),
    };
    // VIP names (and section names) → VIP, or NONE for a disabled one.
    let mut by_name: HashMap<Cow<'_, str>, u32> = HashMap::new();
    for (i, h) in src.heads.iter().enumerate() {
        let i = small(i);
        match h.kind {
            SectionKind::Pathosd => {
                p.global = Some(i);
                // The init script and LuCI read the switch as
                // `pathosd.main.enabled`: under another name, or none, the
                // file has no switch, and a daemon that accepted it would
                // run a file its init script reads as disabled.
                if h.name.as_deref() != Some(MAIN) {
                    errs.push_as_written(
                        format_args!("{}{}", h.label(), src.at(h.line as usize)),
                        format_args!(
                            "the pathosd section must be named 'main' (config pathosd 'main'): \
                             the init script and LuCI read its option enabled there"
                        ),
                    );
                }
            }
            SectionKind::Neighbor => {
                let opts = src.some_options(h, &["enabled"]);
                if !disabled(src, h, &opts, errs) {
                    p.neighbors.push(i);
                }
            }
            SectionKind::Vip => {
                let opts = src.some_options(h, &["enabled", "name"]);
                let off = disabled(src, h, &opts, errs);
                let slot = if off { NONE } else { small(p.vips.len()) };
                if !off {
                    p.vips.push(i);
                }
                let names = [one(&opts, "name").cloned(), h.name.clone()];
                for n in names.into_iter().flatten() {
                    let e = by_name.entry(n).or_insert(slot);
                    // An enabled VIP wins over a disabled one of the name.
                    if *e == NONE {
                        *e = slot;
                    }
                }
            }
            SectionKind::Check => {}
        }
    }
    if p.global.is_none() {
        errs.push_as_written(
            format_args!("config pathosd '{MAIN}'"),
            format_args!(
                "missing (it holds asn, router_id and the other global settings, and the \
                 init script's option enabled)"
            ),
        );
    }
    for (i, h) in src.heads.iter().enumerate() {
        if h.kind != SectionKind::Check {
            continue;
        }
        let opts = src.some_options(h, &["enabled", "vip", "type"]);
        if disabled(src, h, &opts, errs) {
            continue;
        }
        let Some(o) = opts.iter().find(|o| o.name == "vip") else {
            errs.push_as_written(
                format_args!("{}{}", h.label(), src.at(h.line as usize)),
                format_args!(
                    "option vip is required (the name of the vip section this check belongs to)"
                ),
            );
            continue;
        };
        let Val::One(target) = &o.value else {
            errs.push_as_written(
                format_args!("{} list vip{}", h.label(), src.at(o.line)),
                format_args!("a check belongs to one vip: write option vip, not list"),
            );
            continue;
        };
        match by_name.get(target) {
            Some(&NONE) => {}
            Some(&v) => {
                let t = one(&opts, "type").and_then(|t| check_type(t));
                p.checks.push((v, small(i), t));
            }
            None => errs.push_as_written(
                format_args!("{} option vip{}", h.label(), src.at(o.line)),
                format_args!("no vip section named {}", quote(target)),
            ),
        }
    }
    // Stable: each VIP's checks stay in file order.
    p.checks.sort_by_key(|(v, _, _)| *v);
    let mut over = false;
    for (k, &h) in p.vips.iter().enumerate() {
        let n = p.checks_of(k).len();
        if n > MAX_CHECKS_PER_VIP {
            over = true;
            if let Some(h) = src.heads.get(h as usize) {
                errs.push_as_written(
                format_args!("{}{}", h.label(), src.at(h.line as usize)),
                    format_args!(
                        "{n} check sections, more than the limit of {MAX_CHECKS_PER_VIP} for one vip"
                    ),
                );
            }
        }
    }
    p.over_limit = over;
    p
}

/// Where a JSON path came from in the UCI file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Loc {
    section: String,
    /// `option NAME` or `list NAME`; None for the section itself.
    option: Option<String>,
    line: usize,
    /// The section's rows, to name an option that was not written.
    rows: [&'static [Row]; 2],
}

/// Maps sections to v1 values. While loading it reports UCI's own errors
/// (unknown options, a list for a single value, a header that is not
/// "Name: value"); to locate an error it records instead where each v1
/// path came from.
struct Mapper<'m, 'a> {
    src: &'m Source<'a>,
    errs: Option<&'m mut Errors>,
    locs: Option<&'m mut Vec<(String, Loc)>>,
    /// Values the current unit may still hold.
    budget: usize,
    over: bool,
}

impl<'a> Mapper<'_, 'a> {
    fn error(&mut self, path: std::fmt::Arguments<'_>, message: std::fmt::Arguments<'_>) {
        if let Some(e) = self.errs.as_deref_mut() {
            e.push_as_written(path, message);
        }
    }

    fn loc(
        &mut self,
        path: String,
        h: &Head<'_>,
        option: Option<String>,
        line: usize,
        rows: [&'static [Row]; 2],
    ) {
        if let Some(l) = self.locs.as_deref_mut() {
            l.push((
                path,
                Loc {
                    section: h.label(),
                    option,
                    line: if self.src.lines { line } else { 0 },
                    rows,
                },
            ));
        }
    }

    /// Copies the options of `h` that `rows` know into `obj` (JSON path
    /// `base`); `skip` lists options handled elsewhere; other options are
    /// errors unless `quiet` (their type is unknown, which is reported).
    fn fill(
        &mut self,
        h: &Head<'a>,
        rows: [&'static [Row]; 2],
        skip: &'static [&'static str],
        quiet: bool,
        base: &str,
        obj: &mut Map<String, Value>,
    ) {
        let src = self.src;
        let row = |name: &str| {
            rows.iter()
                .flat_map(|r| r.iter())
                .find(|(u, _, _)| *u == name)
                .map(|(u, _, _)| *u)
                .or_else(|| skip.iter().find(|k| **k == name).copied())
        };
        self.loc(base.to_string(), h, None, h.line as usize, rows);
        let mut budget = self.budget;
        let label = h.label();
        let mut errs = self.errs.as_deref_mut().filter(|_| !quiet);
        let (opts, ok) = src.options(
            h,
            &row,
            &mut |name, line| {
                if let Some(e) = errs.as_deref_mut() {
                    e.push_as_written(
                        format_args!("{label} option {name}{}", src.at(line)),
                        format_args!("unknown option for a {} section", h.kind.as_str()),
                    );
                }
            },
            &mut budget,
        );
        self.budget = budget;
        if !ok && !self.over {
            self.over = true;
            self.error(
                format_args!("{}{}", h.label(), src.at(h.line as usize)),
                format_args!(
                    "{} hold more than the limit of {MAX_UNIT_VALUES} option values and list items",
                    if h.kind == SectionKind::Vip || h.kind == SectionKind::Check {
                        "a vip section and its check sections"
                    } else {
                        "the pathosd and neighbor sections"
                    }
                ),
            );
        }
        for o in opts {
            if skip.contains(&o.name) {
                continue;
            }
            let Some(&(_, json_rel, kind)) = rows
                .iter()
                .flat_map(|r| r.iter())
                .find(|(u, _, _)| *u == o.name)
            else {
                continue;
            };
            let path = join(base, json_rel);
            let word = match &o.value {
                Val::One(_) => "option",
                Val::List(_) => "list",
            };
            match (kind, o.value) {
                (Scalar, Val::One(v)) => {
                    self.loc(path, h, Some(format!("option {}", o.name)), o.line, rows);
                    insert(obj, json_rel, Value::String(v.into_owned()));
                }
                (Scalar, Val::List(_)) => self.error(
                    format_args!("{} list {}{}", h.label(), o.name, src.at(o.line)),
                    format_args!(
                        "{} takes one value: write option {}, not list",
                        o.name, o.name
                    ),
                ),
                (List, Val::One(v)) => {
                    self.loc(path, h, Some(format!("option {}", o.name)), o.line, rows);
                    insert(
                        obj,
                        json_rel,
                        Value::Array(vec![Value::String(v.into_owned())]),
                    );
                }
                (List, Val::List(items)) => {
                    if self.locs.is_some() {
                        self.loc(
                            path.clone(),
                            h,
                            Some(format!("list {}", o.name)),
                            o.line,
                            rows,
                        );
                        for (k, (_, line)) in items.iter().enumerate() {
                            self.loc(
                                format!("{path}[{k}]"),
                                h,
                                Some(format!("list {}", o.name)),
                                *line,
                                rows,
                            );
                        }
                    }
                    let vals: Vec<Value> = items
                        .into_iter()
                        .map(|(v, _)| Value::String(v.into_owned()))
                        .collect();
                    insert(obj, json_rel, Value::Array(vals));
                }
                (Pairs, value) => {
                    let items = match value {
                        Val::One(v) => vec![(v, o.line)],
                        Val::List(l) => l,
                    };
                    self.loc(
                        path.clone(),
                        h,
                        Some(format!("{word} {}", o.name)),
                        o.line,
                        rows,
                    );
                    let mut m = Map::new();
                    for (item, line) in items {
                        match item.split_once(':') {
                            Some((k, v)) if !k.trim().is_empty() => {
                                let k = k.trim().to_string();
                                if self.locs.is_some() {
                                    self.loc(
                                        join(&path, &k),
                                        h,
                                        Some(format!("list {}", o.name)),
                                        line,
                                        rows,
                                    );
                                }
                                m.insert(k, Value::String(v.trim_start().to_string()));
                            }
                            _ => self.error(
                                format_args!("{} list {}{}", h.label(), o.name, src.at(line)),
                                format_args!("{} is not \"Name: value\"", quote(&item)),
                            ),
                        }
                    }
                    insert(obj, json_rel, Value::Object(m));
                }
            }
        }
    }

    /// Everything but the VIPs: the pathosd section and the enabled
    /// neighbors, as the v1 value without `vips`.
    fn rest(&mut self, plan: &Plan) -> Value {
        let src = self.src;
        self.budget = MAX_UNIT_VALUES;
        let mut root = Map::new();
        root.insert("schema".into(), json!("v1"));
        if let Some(h) = plan.global.and_then(|g| src.heads.get(g as usize)) {
            // `enabled` is the init script's switch; the daemon reads the
            // rest whatever it says, so `validate` works on a disabled config.
            self.fill(h, [GLOBAL, &[]], &["enabled"], false, "", &mut root);
        }
        let mut neighbors = Vec::new();
        for (k, h) in plan
            .neighbors
            .iter()
            .filter_map(|&h| src.heads.get(h as usize))
            .enumerate()
        {
            let mut obj = Map::new();
            if let Some(n) = &h.name {
                obj.insert("name".into(), json!(n));
            }
            let base = format!("bgp.neighbors[{k}]");
            self.fill(h, [NEIGHBOR, &[]], &["enabled"], false, &base, &mut obj);
            neighbors.push(Value::Object(obj));
        }
        insert(&mut root, "bgp.neighbors", Value::Array(neighbors));
        Value::Object(root)
    }

    /// VIP `k` of the plan with its checks, as its v1 value.
    fn vip(&mut self, plan: &Plan, k: usize) -> Value {
        let src = self.src;
        self.budget = MAX_UNIT_VALUES;
        let mut obj = Map::new();
        let Some(h) = plan.vips.get(k).and_then(|&h| src.heads.get(h as usize)) else {
            return Value::Object(obj);
        };
        if let Some(n) = &h.name {
            obj.insert("name".into(), json!(n));
        }
        let base = format!("vips[{k}]");
        self.fill(h, [VIP, &[]], &["enabled"], false, &base, &mut obj);
        let checks = plan.checks_of(k);
        let single_check = checks.len() == 1;
        let mut list = Vec::new();
        for (j, (s, t)) in checks
            .iter()
            .filter_map(|&(_, c, t)| Some((src.heads.get(c as usize)?, t)))
            .enumerate()
        {
            let base = if single_check {
                format!("{base}.check")
            } else {
                format!("{base}.checks[{j}]")
            };
            let mut c = Map::new();
            if let Some(n) = &s.name {
                c.insert("name".into(), json!(n));
            }
            match t {
                Some(t) => self.fill(
                    s,
                    [CHECK, type_rows(t)],
                    &["enabled", "vip"],
                    false,
                    &base,
                    &mut c,
                ),
                // Without a valid type the type's options cannot be placed;
                // the decoder reports the type itself.
                None => self.fill(s, [CHECK, &[]], &["enabled", "vip"], true, &base, &mut c),
            }
            list.push(Value::Object(c));
        }
        if single_check {
            if let Some(c) = list.pop() {
                obj.insert("check".into(), c);
            }
        } else if !list.is_empty() {
            obj.insert("checks".into(), Value::Array(list));
        }
        Value::Object(obj)
    }
}

/// The v1 value of everything but the VIPs, with UCI's own errors in
/// `errs`; None when it holds more than MAX_UNIT_VALUES.
pub(crate) fn rest_value(src: &Source<'_>, plan: &Plan, errs: &mut Errors) -> Option<Value> {
    let mut m = Mapper {
        src,
        errs: Some(errs),
        locs: None,
        budget: MAX_UNIT_VALUES,
        over: false,
    };
    let v = m.rest(plan);
    (!m.over).then_some(v)
}

/// The v1 value of VIP `k` of the plan with its checks, with UCI's own
/// errors in `errs`; None when it holds more than MAX_UNIT_VALUES.
pub(crate) fn vip_value(
    src: &Source<'_>,
    plan: &Plan,
    k: usize,
    errs: &mut Errors,
) -> Option<Value> {
    let mut m = Mapper {
        src,
        errs: Some(errs),
        locs: None,
        budget: MAX_UNIT_VALUES,
        over: false,
    };
    let v = m.vip(plan, k);
    (!m.over).then_some(v)
}

/// Rewrites errors about v1 paths into UCI places: the VIP or the rest
/// that a path is in is mapped again, recording where each path came from.
pub(crate) struct Locator<'s, 'a> {
    pub(crate) src: &'s Source<'a>,
    pub(crate) plan: &'s Plan,
}

impl Locator<'_, '_> {
    /// Rewrites an error about a v1 path into UCI terms: its place and the
    /// places it names.
    pub(crate) fn locate(&self, e: ConfigError) -> ConfigError {
        let message = self.rewrite_also(&e.message);
        ConfigError {
            path: self.uci_path(&e.path),
            message,
        }
    }

    /// Where each path of the unit holding `path` came from.
    fn locs(&self, path: &str) -> Vec<(String, Loc)> {
        let mut locs = Vec::new();
        let mut m = Mapper {
            src: self.src,
            errs: None,
            locs: Some(&mut locs),
            budget: MAX_UNIT_VALUES,
            over: false,
        };
        let vip = path
            .strip_prefix("vips[")
            .and_then(|r| r.split_once(']'))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        match vip {
            Some(k) => {
                m.vip(self.plan, k);
            }
            None => {
                m.rest(self.plan);
            }
        }
        locs
    }

    /// A v1 path in a message (`(also vips[0].checks[1])`, `because
    /// vips[1].prefix …`) names a UCI place instead. Quoted text is the
    /// user's own and stays as it is.
    fn rewrite_also(&self, msg: &str) -> String {
        let is_path_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']');
        let mut out = String::with_capacity(msg.len());
        let mut in_quote = false;
        let mut escaped = false;
        let mut i = 0;
        while let Some(c) = msg[i..].chars().next() {
            if in_quote {
                out.push(c);
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_quote = false,
                    _ => {}
                }
                i += c.len_utf8();
                continue;
            }
            let rest = &msg[i..];
            let at_word_start = msg[..i]
                .chars()
                .next_back()
                .is_none_or(|p| !is_path_char(p));
            if at_word_start && (rest.starts_with("vips[") || rest.starts_with("bgp.neighbors[")) {
                let len = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
                let path = rest[..len].trim_end_matches('.');
                out.push_str(&self.uci_path(path));
                i += path.len();
                continue;
            }
            if let Some((json, uci)) = UCI_WORDS.iter().find(|(j, _)| rest.starts_with(j)) {
                out.push_str(uci);
                i += json.len();
                continue;
            }
            if c == '"' {
                in_quote = true;
            }
            out.push(c);
            i += c.len_utf8();
        }
        out
    }

    fn uci_path(&self, path: &str) -> String {
        let locs = self.locs(path);
        // The longest location that is `path` or a parent of it (`path`
        // continues with '.' or '['); "" covers everything. Candidates are
        // `path` itself and its prefixes ending before a '.' or '[', longest
        // first; of several entries for one path the last counts.
        let cuts = path
            .char_indices()
            .filter(|(_, c)| matches!(c, '.' | '['))
            .map(|(i, _)| i)
            .rev();
        let best = std::iter::once(path.len())
            .chain(cuts)
            .chain(std::iter::once(0))
            .find_map(|end| locs.iter().rev().find(|(p, _)| *p == path[..end]));
        let Some((p, loc)) = best else {
            return fallback(path);
        };
        let rest = path[p.len()..].trim_start_matches('.');
        match (&loc.option, rest) {
            (Some(opt), "") => format!("{} {opt}{}", loc.section, Line(loc.line)),
            (Some(opt), rest) => format!("{} {opt}{} {rest}", loc.section, Line(loc.line)),
            (None, "") => format!("{}{}", loc.section, Line(loc.line)),
            (None, rest) => match loc
                .rows
                .iter()
                .flat_map(|r| r.iter())
                .find(|(_, j, _)| *j == rest)
            {
                Some((u, _, _)) => format!("{}{} option {u}", loc.section, Line(loc.line)),
                // The global section covers every path; only its own
                // options are worth naming it for.
                None if p.is_empty() => fallback(path),
                None => format!("{}{} {rest}", loc.section, Line(loc.line)),
            },
        }
    }
}

/// The validator's words for JSON values and keys, and what a UCI file
/// writes instead: an error about a UCI file says `option always '1'`,
/// not `always: true`. Longest first where one begins another.
const UCI_WORDS: &[(&str, &str)] = &[
    (
        "exactly one of check or checks is required (or always: true)",
        "a check section with option vip naming this vip is required (or option always '1')",
    ),
    ("always: true", "option always '1'"),
    (
        "allow_default_route: true",
        "option allow_default_route '1'",
    ),
    (
        "require_local_address is true",
        "option require_local_address is '1'",
    ),
    ("enable_multihop is false", "option enable_multihop is '0'"),
    ("unless tls is true", "unless option tls is '1'"),
    ("true needs pathosd built", "'1' needs pathosd built"),
    (
        "bgp.listen_port is -1",
        "option listen_port of the pathosd section is '-1'",
    ),
    ("(count - 1) x interval", "(count - 1) x ping_interval"),
];

/// Names a place that no section covers: a missing section or global option.
fn fallback(path: &str) -> String {
    if path == "vips" {
        return "config vip".into();
    }
    if path == "bgp.neighbors" {
        return "config neighbor".into();
    }
    match GLOBAL.iter().find(|(_, j, _)| *j == path) {
        Some((u, _, _)) => format!("config pathosd option {u}"),
        None => path.to_string(),
    }
}

/// Inserts `v` at a dotted path below `obj`, creating objects on the way.
fn insert(obj: &mut Map<String, Value>, dotted: &str, v: Value) {
    match dotted.split_once('.') {
        None => {
            obj.insert(dotted.to_string(), v);
        }
        Some((head, tail)) => {
            let child = obj
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !child.is_object() {
                *child = Value::Object(Map::new());
            }
            if let Value::Object(m) = child {
                insert(m, tail, v);
            }
        }
    }
}

fn join(base: &str, rel: &str) -> String {
    if base.is_empty() {
        rel.to_string()
    } else {
        format!("{base}.{rel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file mapped as the loader maps it, the VIPs put together as one
    /// value; UCI's own errors.
    struct Mapped {
        value: Value,
        errors: Vec<ConfigError>,
        text: String,
    }

    impl Mapped {
        fn locate(&self, e: ConfigError) -> ConfigError {
            let mut errs = Errors::default();
            let src = Source::index(&self.text, true, &mut errs).unwrap();
            let plan = plan(&src, &mut errs);
            Locator {
                src: &src,
                plan: &plan,
            }
            .locate(e)
        }
    }

    fn mapped(text: &str) -> Mapped {
        let mut errs = Errors::default();
        let src = Source::index(text, true, &mut errs).unwrap();
        let plan = plan(&src, &mut errs);
        let mut value = rest_value(&src, &plan, &mut errs).unwrap();
        let vips: Vec<Value> = (0..plan.vip_count())
            .map(|k| vip_value(&src, &plan, k, &mut errs).unwrap())
            .collect();
        value["vips"] = Value::Array(vips);
        Mapped {
            value,
            errors: errs.into_vec(),
            text: text.to_string(),
        }
    }

    #[test]
    fn maps_sections_to_v1() {
        let m = mapped(
            "config pathosd 'main'\n\
             \toption enabled '1'\n\
             \toption asn '65001'\n\
             \toption router_id '10.0.0.1'\n\
             \toption listen_port '-1'\n\
             \toption log_level 'debug'\n\
             \toption api_token '0123456789abcdef'\n\
             config neighbor 'bird'\n\
             \toption address '127.0.0.1'\n\
             \toption peer_asn '65000'\n\
             config neighbor 'off'\n\
             \toption enabled '0'\n\
             config vip 'web'\n\
             \toption prefix '192.0.2.1/32'\n\
             \tlist community '65001:1'\n\
             \toption lower_priority_as_path_prepend '4'\n\
             config check\n\
             \toption vip 'web'\n\
             \toption type 'http'\n\
             \toption url '/healthz'\n\
             \tlist header 'Host: example.com'\n\
             \tlist response_code '200-299'\n\
             config vip 'two'\n\
             \toption prefix '192.0.2.2/32'\n\
             config check 'a'\n\
             \toption vip 'two'\n\
             \toption type 'tcp'\n\
             \toption port '80'\n\
             config check 'b'\n\
             \toption vip 'two'\n\
             \toption type 'ping'\n\
             \toption ping_interval '10ms'\n",
        );
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(
            m.value,
            json!({
                "schema": "v1",
                "router": {"asn": "65001", "router_id": "10.0.0.1"},
                "bgp": {"listen_port": "-1", "neighbors": [
                    {"name": "bird", "address": "127.0.0.1", "peer_asn": "65000"}]},
                "api": {"token": "0123456789abcdef"},
                "logging": {"level": "debug"},
                "vips": [
                    {"name": "web", "prefix": "192.0.2.1/32",
                     "policy": {"announce": {"communities": ["65001:1"]},
                                "lower_priority": {"as_path_prepend": "4"}},
                     "check": {"type": "http", "http": {"url": "/healthz",
                        "headers": {"Host": "example.com"}, "response_codes": ["200-299"]}}},
                    {"name": "two", "prefix": "192.0.2.2/32", "checks": [
                        {"name": "a", "type": "tcp", "tcp": {"port": "80"}},
                        {"name": "b", "type": "ping", "ping": {"interval": "10ms"}}]}
                ]
            })
        );
    }

    /// A section opened twice is read from both places, merged as libuci
    /// merges it; a check of a disabled VIP goes with it, and an enabled VIP
    /// wins over a disabled one of the same name.
    #[test]
    fn reopened_sections_and_disabled_vips() {
        let m = mapped(
            "config pathosd 'main'\n\
             config vip 'web'\n\toption prefix '192.0.2.1/32'\n\tlist community '1:1'\n\
             config vip 'old'\n\toption name 'web2'\n\toption enabled '0'\n\
             config vip 'web2'\n\toption prefix '192.0.2.2/32'\n\toption always '1'\n\
             config check\n\toption vip 'old'\n\toption type 'tcp'\n\
             config check 'a'\n\toption vip 'web2'\n\toption type 'tcp'\n\
             config vip 'web'\n\tlist community '1:2'\n\toption prefix '192.0.2.3/32'\n",
        );
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(m.value["vips"][0]["prefix"], "192.0.2.3/32");
        assert_eq!(
            m.value["vips"][0]["policy"]["announce"]["communities"],
            json!(["1:1", "1:2"])
        );
        assert_eq!(m.value["vips"][1]["name"], "web2");
        assert_eq!(m.value["vips"][1]["check"]["name"], "a");
        assert_eq!(m.value["vips"].as_array().map(Vec::len), Some(2));
    }

    /// Sections past a count limit are refused before anything is mapped,
    /// as are more checks on one VIP than it may have.
    #[test]
    fn section_counts_are_limited_as_written() {
        let many = |kind: &str, n: usize| -> String {
            (0..n)
                .map(|i| format!("config {kind} 's{i}'\n\toption enabled '0'\n"))
                .collect()
        };
        for (kind, limit) in [
            ("neighbor", MAX_NEIGHBORS),
            ("vip", MAX_VIPS),
            ("check", MAX_CHECKS),
        ] {
            let mut errs = Errors::default();
            let text = many(kind, limit + 1);
            let src = Source::index(&text, true, &mut errs).unwrap();
            assert!(src.over_limit, "{kind}");
            assert_eq!(
                errs.into_vec()[0].to_string(),
                format!(
                    "config {kind}: {} {kind} sections, more than the limit of {limit}",
                    limit + 1
                )
            );
            let mut errs = Errors::default();
            let text = many(kind, limit);
            assert!(!Source::index(&text, true, &mut errs).unwrap().over_limit);
            assert!(errs.is_empty());
        }
        let mut text =
            "config pathosd 'main'\nconfig vip 'web'\n\toption prefix '10.0.0.1/32'\n".to_string();
        for i in 0..=MAX_CHECKS_PER_VIP {
            text.push_str(&format!("config check 'c{i}'\n\toption vip 'web'\n"));
        }
        let mut errs = Errors::default();
        let src = Source::index(&text, true, &mut errs).unwrap();
        assert!(plan(&src, &mut errs).over_limit);
        assert_eq!(
            errs.into_vec()[0].to_string(),
            "vip 'web' (line 2): 65 check sections, more than the limit of 64 for one vip"
        );
    }

    /// One VIP with its checks may hold MAX_UNIT_VALUES values: past them
    /// its value is not built, and one error says so.
    #[test]
    fn a_vip_holds_a_bounded_number_of_values() {
        let mut text =
            "config pathosd 'main'\nconfig vip 'web'\n\toption prefix '10.0.0.1/32'\n".to_string();
        for i in 0..MAX_UNIT_VALUES {
            text.push_str(&format!("\tlist community '1:{}'\n", i % 65_536));
        }
        let mut errs = Errors::default();
        let src = Source::index(&text, true, &mut errs).unwrap();
        let p = plan(&src, &mut errs);
        assert!(vip_value(&src, &p, 0, &mut errs).is_none());
        assert_eq!(
            errs.into_vec()[0].to_string(),
            format!("vip 'web' (line 2): a vip section and its check sections hold more than the limit of {MAX_UNIT_VALUES} option values and list items")
        );
        // One fewer fits.
        let fits = text.replacen("\tlist community '1:0'\n", "", 1);
        let mut errs = Errors::default();
        let src = Source::index(&fits, true, &mut errs).unwrap();
        let p = plan(&src, &mut errs);
        assert!(vip_value(&src, &p, 0, &mut errs).is_some());
        assert!(errs.is_empty());
    }

    #[test]
    fn checks_find_their_vip_by_name_or_section() {
        let m = mapped(
            "config pathosd 'main'\n\
             config vip 'web_1'\n\toption name 'web-1'\n\toption prefix '192.0.2.1/32'\n\
             config check 'a'\n\toption vip 'web-1'\n\toption type 'ping'\n\
             config check 'b'\n\toption vip 'web_1'\n\toption type 'ping'\n",
        );
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(m.value["vips"][0]["name"], "web-1");
        assert_eq!(m.value["vips"][0]["checks"][1]["name"], "b");
    }

    #[test]
    fn paths_inside_messages_are_rewritten_but_not_quoted_values() {
        let m = mapped("config vip 'web'\n\toption prefix '2001:db8::1/128'\n");
        let e = m.locate(ConfigError {
            path: "router.local_address_ipv6".into(),
            message: "required because vips[0].prefix 2001:db8::1/128 is IPv6; \"vips[0]\" and \"a\\\"vips[0]\" stay".into(),
        });
        assert_eq!(
            e.to_string(),
            "config pathosd option local_address_ipv6: required because vip 'web' option prefix (line 2) 2001:db8::1/128 is IPv6; \"vips[0]\" and \"a\\\"vips[0]\" stay"
        );
    }

    #[test]
    fn uci_only_errors() {
        let m = mapped(
            "config pathosd\n\
             \toption colour 'red'\n\
             config pathosd 'again'\n\
             config vpn 'x'\n\
             config vip 'web'\n\
             \tlist prefix '192.0.2.1/32'\n\
             config check\n\
             \toption type 'tcp'\n\
             config check\n\
             \toption vip 'nope'\n\
             config check\n\
             \toption vip 'web'\n\
             \toption type 'tcp'\n\
             \toption url '/'\n\
             \tlist header 'nocolon'\n\
             config vip 'off'\n\
             \toption enabled '0'\n\
             config check\n\
             \toption vip 'off'\n\
             \toption type 'bogus'\n\
             \toption anything 'x'\n",
        );
        let got: Vec<String> = m.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            got,
            vec![
                "pathosd 'again' (line 3): only one pathosd section is allowed (the first is @pathosd[0] (line 1))",
                "config vpn (line 4): unknown section type \"vpn\" (pathosd, neighbor, vip or check)",
                "@pathosd[0] (line 1): the pathosd section must be named 'main' (config pathosd 'main'): the init script and LuCI read its option enabled there",
                "@check[0] (line 7): option vip is required (the name of the vip section this check belongs to)",
                "@check[1] option vip (line 10): no vip section named \"nope\"",
                "@pathosd[0] option colour (line 2): unknown option for a pathosd section",
                "vip 'web' list prefix (line 6): prefix takes one value: write option prefix, not list",
                "@check[2] option url (line 14): unknown option for a check section",
                "@check[2] option header (line 15): unknown option for a check section",
            ]
        );
    }

    /// The init script and LuCI read the switch as `pathosd.main.enabled`:
    /// a file whose pathosd section has another name, or none, or that has
    /// no pathosd section, is not one the daemon runs.
    #[test]
    fn the_pathosd_section_is_main() {
        let rest =
            "config neighbor 'bird'\n\toption address '127.0.0.1'\n\toption peer_asn '65000'\n";
        let errors = |main: &str| -> Vec<String> {
            mapped(&format!("{rest}{main}"))
                .errors
                .iter()
                .map(|e| e.to_string())
                .collect()
        };
        assert_eq!(
            errors("config pathosd 'main'\n\toption enabled '1'\n"),
            Vec::<String>::new()
        );
        let named = "the pathosd section must be named 'main' (config pathosd 'main'): \
                     the init script and LuCI read its option enabled there";
        assert_eq!(
            errors("config pathosd 'global'\n\toption enabled '1'\n"),
            [format!("pathosd 'global' (line 4): {named}")]
        );
        assert_eq!(
            errors("config pathosd\n\toption enabled '1'\n"),
            [format!("@pathosd[0] (line 4): {named}")]
        );
        assert_eq!(
            errors(""),
            [
                "config pathosd 'main': missing (it holds asn, router_id and the other global \
              settings, and the init script's option enabled)"
            ]
        );
    }

    #[test]
    fn locates_v1_paths() {
        let m = mapped(
            "config pathosd 'main'\n\
             \toption asn '1'\n\
             config vip 'web'\n\
             \tlist community '1:1'\n\
             \tlist community '1:x'\n\
             config check 'a'\n\
             \toption vip 'web'\n\
             \toption type 'tcp'\n\
             config check 'b'\n\
             \toption vip 'web'\n\
             \toption type 'http'\n\
             \tlist header 'X Y: 1'\n",
        );
        let at = |p: &str| {
            m.locate(ConfigError {
                path: p.into(),
                message: "m (also vips[0].checks[0])".into(),
            })
            .to_string()
        };
        assert_eq!(
            at("router.asn"),
            "pathosd 'main' option asn (line 2): m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("router.router_id"),
            "pathosd 'main' (line 1) option router_id: m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0].policy.announce.communities[1]"),
            "vip 'web' list community (line 5): m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0].checks[0].tcp.port"),
            "check 'a' (line 6) option port: m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0].checks[1].http.headers.X Y"),
            "check 'b' list header (line 12): m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0]"),
            "vip 'web' (line 3): m (also check 'a' (line 6))"
        );
        assert_eq!(at("vips"), "config vip: m (also check 'a' (line 6))");
        assert_eq!(
            at("bgp.neighbors"),
            "config neighbor: m (also check 'a' (line 6))"
        );
    }
}
