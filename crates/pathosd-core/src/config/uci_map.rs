//! Maps pathosd's UCI layout (docs/config-uci.md) to the v1 JSON value, so
//! that UCI and JSON share one decoder and one validator. Every JSON path the
//! mapping writes remembers the UCI section, option and line it came from, so
//! errors on UCI input are reported in UCI words:
//! `check 'web_http' option timeout (line 14): 1s must be less than interval 1s`.
//!
//! UCI has only strings; the decoder accepts strings for integers ("65001"),
//! booleans ('0'/'1') and numbers, so every value is passed through as text.

use super::field::{quote, ConfigError};
use super::schema::CheckType;
use super::uci::{Line, Section, UciFile, UciValue};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq, Eq)]
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
];

const VIP: &[Row] = &[
    ("name", "name", Scalar),
    ("prefix", "prefix", Scalar),
    ("always", "always", Scalar),
    ("checks_policy", "checks_policy", Scalar),
    ("require_local_address", "require_local_address", Scalar),
    ("local_interface", "local_interface", Scalar),
    ("fail_action", "policy.fail_action", Scalar),
    ("lower_priority_file", "policy.lower_priority_file", Scalar),
    ("drain_time", "policy.drain_time", Scalar),
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

/// Where a JSON path came from in the UCI file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Loc {
    section: String,
    /// `option NAME` or `list NAME`; None for the section itself.
    option: Option<String>,
    line: usize,
    /// The section's rows, to name an option that was not written.
    rows: Vec<(&'static str, &'static str)>,
}

/// The result of mapping: the v1 value, errors only UCI can have (unknown
/// section types and options, dangling references), and the location table.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub value: Value,
    pub errors: Vec<ConfigError>,
    locs: Vec<(String, Loc)>,
    /// v1 path → index of its last entry in `locs`, so that `uci_path`
    /// looks up each prefix of a path instead of scanning every location
    /// (a 4 MiB file has hundreds of thousands).
    loc_index: HashMap<String, usize>,
}

impl Mapped {
    /// Rewrites an error about a v1 path into UCI terms.
    pub(crate) fn locate(&self, e: ConfigError) -> ConfigError {
        let message = self.rewrite_also(&e.message);
        ConfigError {
            path: self.uci_path(&e.path),
            message,
        }
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
            if c == '"' {
                in_quote = true;
            }
            out.push(c);
            i += c.len_utf8();
        }
        out
    }

    fn uci_path(&self, path: &str) -> String {
        // The longest location that is `path` or a parent of it (`path`
        // continues with '.' or '['); "" covers everything. Candidates are
        // `path` itself and its prefixes ending before a '.' or '[', longest
        // first.
        let cuts = path
            .char_indices()
            .filter(|(_, c)| matches!(c, '.' | '['))
            .map(|(i, _)| i)
            .rev();
        let best = std::iter::once(path.len())
            .chain(cuts)
            .chain(std::iter::once(0))
            .find_map(|end| self.loc_index.get(&path[..end]))
            .and_then(|&i| self.locs.get(i));
        let Some((p, loc)) = best else {
            return fallback(path);
        };
        let rest = path[p.len()..].trim_start_matches('.');
        match (&loc.option, rest) {
            (Some(opt), "") => format!("{} {opt}{}", loc.section, Line(loc.line)),
            (Some(opt), rest) => format!("{} {opt}{} {rest}", loc.section, Line(loc.line)),
            (None, "") => format!("{}{}", loc.section, Line(loc.line)),
            (None, rest) => match loc.rows.iter().find(|(_, j)| *j == rest) {
                Some((u, _)) => format!("{}{} option {u}", loc.section, Line(loc.line)),
                // The global section covers every path; only its own
                // options are worth naming it for.
                None if p.is_empty() => fallback(path),
                None => format!("{}{} {rest}", loc.section, Line(loc.line)),
            },
        }
    }
}

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

struct Mapper {
    errors: Vec<ConfigError>,
    locs: Vec<(String, Loc)>,
    /// Whether to record `locs` (only errors need them).
    track: bool,
}

impl Mapper {
    fn error(&mut self, path: String, message: String) {
        self.errors.push(ConfigError { path, message });
    }

    /// Whether `option enabled '0'` switches the section off.
    fn disabled(&mut self, s: &Section) -> bool {
        match s.get("enabled").map(|o| &o.value) {
            Some(UciValue::Single(v)) => match v.as_str() {
                "0" | "false" | "no" | "off" | "disabled" => true,
                "1" | "true" | "yes" | "on" | "enabled" => false,
                _ => {
                    self.error(
                        format!(
                            "{} option enabled{}",
                            s.label(),
                            Line(s.get("enabled").map_or(s.line, |o| o.line))
                        ),
                        format!("{} is not a boolean ('0' or '1')", quote(v)),
                    );
                    false
                }
            },
            Some(UciValue::List(_)) => false,
            None => false,
        }
    }

    /// Copies the options of `s` that `rows` know into `obj` (JSON path
    /// `base`); `skip` lists options handled elsewhere; other options are
    /// errors unless `quiet` (their type is unknown, which is reported).
    fn fill(
        &mut self,
        s: &Section,
        rows: &[&[Row]],
        skip: &[&str],
        quiet: bool,
        base: &str,
        obj: &mut Map<String, Value>,
    ) {
        let all: Vec<(&'static str, &'static str)> = rows
            .iter()
            .flat_map(|r| r.iter().map(|(u, j, _)| (*u, *j)))
            .collect();
        if self.track {
            self.locs.push((
                base.to_string(),
                Loc {
                    section: s.label(),
                    option: None,
                    line: s.line,
                    rows: all.clone(),
                },
            ));
        }
        for o in &s.options {
            if skip.contains(&o.name.as_str()) {
                continue;
            }
            let Some(&(_, json_rel, kind)) = rows
                .iter()
                .flat_map(|r| r.iter())
                .find(|(u, _, _)| *u == o.name)
            else {
                if !quiet {
                    self.error(
                        format!("{} option {}{}", s.label(), o.name, Line(o.line)),
                        format!("unknown option for a {} section", s.kind),
                    );
                }
                continue;
            };
            let path = join(base, json_rel);
            let rel = json_rel.to_string();
            match (kind, &o.value) {
                (Scalar, UciValue::Single(v)) => {
                    self.loc(&path, s, format!("option {}", o.name), o.line);
                    insert(obj, &rel, json!(v));
                }
                (Scalar, UciValue::List(_)) => self.error(
                    format!("{} list {}{}", s.label(), o.name, Line(o.line)),
                    format!(
                        "{} takes one value: write option {}, not list",
                        o.name, o.name
                    ),
                ),
                (List, UciValue::Single(v)) => {
                    self.loc(&path, s, format!("option {}", o.name), o.line);
                    insert(obj, &rel, json!([v]));
                }
                (List, UciValue::List(items)) => {
                    self.loc(&path, s, format!("list {}", o.name), o.line);
                    for (k, (_, line)) in items.iter().enumerate() {
                        self.loc(
                            &format!("{path}[{k}]"),
                            s,
                            format!("list {}", o.name),
                            *line,
                        );
                    }
                    let vals: Vec<Value> = items.iter().map(|(v, _)| json!(v)).collect();
                    insert(obj, &rel, Value::Array(vals));
                }
                (Pairs, value) => {
                    let items: Vec<(String, usize)> = match value {
                        UciValue::Single(v) => vec![(v.clone(), o.line)],
                        UciValue::List(l) => l.clone(),
                    };
                    self.loc(&path, s, format!("list {}", o.name), o.line);
                    let mut m = Map::new();
                    for (item, line) in items {
                        match item.split_once(':') {
                            Some((k, v)) if !k.trim().is_empty() => {
                                let k = k.trim().to_string();
                                self.loc(&join(&path, &k), s, format!("list {}", o.name), line);
                                m.insert(k, json!(v.trim_start()));
                            }
                            _ => self.error(
                                format!("{} list {}{}", s.label(), o.name, Line(line)),
                                format!("{} is not \"Name: value\"", quote(&item)),
                            ),
                        }
                    }
                    insert(obj, &rel, Value::Object(m));
                }
            }
        }
    }

    fn loc(&mut self, path: &str, s: &Section, option: String, line: usize) {
        if !self.track {
            return;
        }
        self.locs.push((
            path.to_string(),
            Loc {
                section: s.label(),
                option: Some(option),
                line,
                rows: Vec::new(),
            },
        ));
    }
}

fn single<'a>(s: &'a Section, name: &str) -> Option<&'a str> {
    match s.get(name).map(|o| &o.value) {
        Some(UciValue::Single(v)) => Some(v),
        _ => None,
    }
}

/// A named object's name: `option name`, else the section name.
fn object_name(s: &Section) -> Option<String> {
    single(s, "name")
        .map(str::to_string)
        .or_else(|| s.name.clone())
}

/// Maps a parsed UCI file to the v1 value.
pub fn map(file: &UciFile) -> Mapped {
    map_with(file, true)
}

/// `map` without the UCI location of each v1 path: the same value and
/// errors, and `locate` leaves errors as they are. The locations take more
/// memory than the value (5.6 MB for 10,000 VIPs) and only errors need
/// them, so the loader maps again with them when there are errors.
pub(crate) fn map_untracked(file: &UciFile) -> Mapped {
    map_with(file, false)
}

fn map_with(file: &UciFile, track: bool) -> Mapped {
    let mut m = Mapper {
        errors: Vec::new(),
        locs: Vec::new(),
        track,
    };
    let mut root = Map::new();
    root.insert("schema".into(), json!("v1"));
    let mut neighbors: Vec<Value> = Vec::new();
    // (vip name, JSON object, index of the section)
    let mut vips: Vec<(Option<String>, Map<String, Value>, &Section)> = Vec::new();
    let mut disabled_vips: Vec<String> = Vec::new();
    let mut global_seen: Option<&Section> = None;

    for s in &file.sections {
        match s.kind.as_str() {
            "pathosd" => {
                if let Some(first) = global_seen {
                    m.error(
                        format!("{}{}", s.label(), Line(s.line)),
                        format!(
                            "only one pathosd section is allowed (the first is {}{})",
                            first.label(),
                            Line(first.line)
                        ),
                    );
                    continue;
                }
                global_seen = Some(s);
                // The init script and LuCI read the switch as
                // `pathosd.main.enabled`: under another name, or none, the
                // file has no switch, and a daemon that accepted it would
                // run a file its init script reads as disabled.
                if s.name.as_deref() != Some(MAIN) {
                    m.error(
                        format!("{}{}", s.label(), Line(s.line)),
                        "the pathosd section must be named 'main' (config pathosd 'main'): \
                         the init script and LuCI read its option enabled there"
                            .to_string(),
                    );
                }
                // `enabled` is the init script's switch; the daemon reads the
                // rest whatever it says, so `validate` works on a disabled config.
                m.fill(s, &[GLOBAL], &["enabled"], false, "", &mut root);
            }
            "neighbor" => {
                if m.disabled(s) {
                    continue;
                }
                let mut obj = Map::new();
                if let Some(n) = object_name(s) {
                    obj.insert("name".into(), json!(n));
                }
                let base = format!("bgp.neighbors[{}]", neighbors.len());
                m.fill(s, &[NEIGHBOR], &["enabled"], false, &base, &mut obj);
                neighbors.push(Value::Object(obj));
            }
            "vip" => {
                let name = object_name(s);
                if m.disabled(s) {
                    disabled_vips.extend(name);
                    disabled_vips.extend(s.name.clone());
                    continue;
                }
                let mut obj = Map::new();
                if let Some(n) = &name {
                    obj.insert("name".into(), json!(n));
                }
                let base = format!("vips[{}]", vips.len());
                m.fill(s, &[VIP], &["enabled"], false, &base, &mut obj);
                vips.push((name, obj, s));
            }
            "check" => {}
            other => m.error(
                format!("config {other}{}", Line(s.line)),
                format!(
                    "unknown section type {} (pathosd, neighbor, vip or check)",
                    quote(other)
                ),
            ),
        }
    }

    if global_seen.is_none() {
        m.error(
            format!("config pathosd '{MAIN}'"),
            "missing (it holds asn, router_id and the other global settings, and the \
             init script's option enabled)"
                .to_string(),
        );
    }

    // Checks attach to their VIP by name; each VIP's checks keep file order.
    let mut per_vip: Vec<Vec<&Section>> = vec![Vec::new(); vips.len()];
    // By the VIP's name, or by its section name when `option name` differs;
    // the first VIP that has it wins. An index, not a search per check: a
    // 4 MiB file can hold 10,000 VIPs and 50,000 checks.
    let mut vip_index: HashMap<&str, usize> = HashMap::new();
    for (i, (n, _, sec)) in vips.iter().enumerate() {
        for key in [n.as_deref(), sec.name.as_deref()].into_iter().flatten() {
            vip_index.entry(key).or_insert(i);
        }
    }
    for s in file.sections.iter().filter(|s| s.kind == "check") {
        if m.disabled(s) {
            continue;
        }
        let Some(opt) = s.get("vip") else {
            m.error(
                format!("{}{}", s.label(), Line(s.line)),
                "option vip is required (the name of the vip section this check belongs to)".into(),
            );
            continue;
        };
        let UciValue::Single(target) = &opt.value else {
            m.error(
                format!("{} list vip{}", s.label(), Line(opt.line)),
                "a check belongs to one vip: write option vip, not list".into(),
            );
            continue;
        };
        match vip_index.get(target.as_str()) {
            Some(&i) => per_vip[i].push(s),
            None if disabled_vips.contains(target) => {}
            None => m.error(
                format!("{} option vip{}", s.label(), Line(opt.line)),
                format!("no vip section named {}", quote(target)),
            ),
        }
    }

    let mut vip_values = Vec::new();
    for (i, ((_, mut obj, _), checks)) in vips.into_iter().zip(per_vip).enumerate() {
        let single_check = checks.len() == 1;
        let mut list = Vec::new();
        for (j, s) in checks.iter().enumerate() {
            let base = if single_check {
                format!("vips[{i}].check")
            } else {
                format!("vips[{i}].checks[{j}]")
            };
            let mut c = Map::new();
            if let Some(n) = object_name(s) {
                c.insert("name".into(), json!(n));
            }
            let t = single(s, "type").and_then(check_type);
            match t {
                Some(t) => m.fill(
                    s,
                    &[CHECK, type_rows(t)],
                    &["enabled", "vip"],
                    false,
                    &base,
                    &mut c,
                ),
                // Without a valid type the type's options cannot be placed;
                // the decoder reports the type itself.
                None => m.fill(s, &[CHECK], &["enabled", "vip"], true, &base, &mut c),
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
        vip_values.push(Value::Object(obj));
    }

    insert(&mut root, "bgp.neighbors", Value::Array(neighbors));
    root.insert("vips".into(), Value::Array(vip_values));
    Mapped {
        value: Value::Object(root),
        errors: m.errors,
        loc_index: m
            .locs
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (p.clone(), i))
            .collect(),
        locs: m.locs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::uci::parse;

    fn mapped(src: &str) -> Mapped {
        map(&parse(src).unwrap())
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
                "@pathosd[0] (line 1): the pathosd section must be named 'main' (config pathosd 'main'): the init script and LuCI read its option enabled there",
                "@pathosd[0] option colour (line 2): unknown option for a pathosd section",
                "pathosd 'again' (line 3): only one pathosd section is allowed (the first is @pathosd[0] (line 1))",
                "config vpn (line 4): unknown section type \"vpn\" (pathosd, neighbor, vip or check)",
                "vip 'web' list prefix (line 6): prefix takes one value: write option prefix, not list",
                "@check[0] (line 7): option vip is required (the name of the vip section this check belongs to)",
                "@check[1] option vip (line 10): no vip section named \"nope\"",
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
