//! Every semantic rule of the v1 config. Decoding (field.rs) already rejected
//! wrong types and unknown keys; this walks the decoded `Config` and adds one
//! error per broken rule, each at the path of the field to fix and naming the
//! bad value. A rule whose input failed to decode stays quiet, so one mistake
//! yields one error.

use super::dns_name::DnsName;
use super::duration::Dur;
use super::field::{join, Errors, Quote};
use super::policy_expr::{self, is_identifier, RESERVED};
use super::proxy::Proxy;
use super::schema::*;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};

/// Linux TCP_MD5SIG_MAXKEYLEN.
pub(crate) const MD5_KEY_MAX: usize = 80;
/// RFC 4271 §4.2: the Hold Time is a 16-bit count of seconds.
const HOLD_MAX_SECS: u64 = 65535;
/// procd gives a stopping service 5 s before SIGKILL; the drain must fit.
pub(crate) const SHUTDOWN_DRAIN_MAX: Dur = Dur::secs(4);
/// Shortest `error_wait_min`: a peer that refuses every connection at once
/// must not be redialled in a busy loop.
pub(crate) const ERROR_WAIT_MIN: Dur = Dur::ms(100);
/// Longest `error_wait_max`: a session held off longer than this after an
/// error is a misconfiguration, not damping.
pub(crate) const ERROR_WAIT_MAX: Dur = Dur::secs(3600);
/// More prepends than this no longer change best-path selection anywhere useful
/// and some peers cap AS_PATH length.
pub(crate) const PREPEND_MAX: u8 = 16;

/// Most VIPs in one config. benches/compare.sh announces 10,000 (about
/// 5 MB of peak RSS with musl, docs/performance.md, "Memory"); more is not
/// a router's job.
pub(crate) const MAX_VIPS: usize = 10_000;
/// Most checks on one VIP (each is a task probing on its own schedule).
pub(crate) const MAX_CHECKS_PER_VIP: usize = 64;
/// Most BGP neighbors (each is a session with its own RIB-out).
pub(crate) const MAX_NEIGHBORS: usize = 256;
/// Longest VIP, neighbor or check name, in bytes: names appear in API paths,
/// metric labels, ubus replies and every log line about the object.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// Most checks in all VIPs together (each is a task with its own timers and
/// buffers); a typed check also takes about 150 bytes plus its options
/// before validation.
pub(crate) const MAX_CHECKS: usize = 10_000;

/// The count limits, checked on the JSON value before the typed decode:
/// decoding 50,000 checks took 150 MiB, more than a small router has, only
/// to refuse them afterwards. True if any limit is exceeded (then nothing
/// else is worth checking).
pub(crate) fn counts_exceeded(v: &Value, errs: &mut Errors) -> bool {
    let mut counts = Counts::default();
    for vip in v["vips"].as_array().into_iter().flatten() {
        counts.add_vip(vip);
    }
    counts.exceeded(v["bgp"]["neighbors"].as_array().map_or(0, Vec::len), errs)
}

/// The VIP and check counts of a config, gathered one VIP at a time so the
/// JSON loader can count while it streams the `vips` list (and stop decoding
/// once a limit is passed) instead of holding the whole file as a value.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    vips: usize,
    checks: usize,
    /// (VIP index, its `checks` length) of each VIP over MAX_CHECKS_PER_VIP.
    over_per_vip: Vec<(usize, usize)>,
}

impl Counts {
    /// VIPs counted so far.
    pub(crate) fn vips(&self) -> usize {
        self.vips
    }

    /// Counts one element of `vips`; false once any limit is passed, when
    /// decoding it would only spend memory on a config that is refused.
    pub(crate) fn add_vip(&mut self, vip: &Value) -> bool {
        let listed = vip["checks"].as_array().map_or(0, Vec::len);
        if listed > MAX_CHECKS_PER_VIP {
            self.over_per_vip.push((self.vips, listed));
        }
        let n = listed + usize::from(vip.get("check").is_some());
        self.checks = self.checks.saturating_add(n);
        self.vips += 1;
        self.vips <= MAX_VIPS && self.over_per_vip.is_empty() && self.checks <= MAX_CHECKS
    }

    /// Reports every passed limit, as `counts_exceeded` does.
    pub(crate) fn exceeded(&self, neighbors: usize, errs: &mut Errors) -> bool {
        let mut over = too_many(errs, "bgp.neighbors", "neighbors", neighbors, MAX_NEIGHBORS);
        if too_many(errs, "vips", "VIPs", self.vips, MAX_VIPS) {
            return true;
        }
        for (i, len) in &self.over_per_vip {
            over |= too_many(
                errs,
                &format!("vips[{i}].checks"),
                "checks",
                *len,
                MAX_CHECKS_PER_VIP,
            );
        }
        over | too_many(errs, "vips", "checks in all VIPs", self.checks, MAX_CHECKS)
    }
}

/// The error for a list longer than `max`, if it is.
fn too_many(errs: &mut Errors, path: &str, what: &str, len: usize, max: usize) -> bool {
    if len > max {
        errs.push_fmt(
            path,
            format_args!("{len} {what}, more than the limit of {max}"),
        );
        true
    } else {
        false
    }
}

/// gRPC status codes by their canonical names (grpc/doc/statuscodes.md).
pub(crate) const GRPC_CODES: &[(&str, u32)] = &[
    ("OK", 0),
    ("CANCELLED", 1),
    ("UNKNOWN", 2),
    ("INVALID_ARGUMENT", 3),
    ("DEADLINE_EXCEEDED", 4),
    ("NOT_FOUND", 5),
    ("ALREADY_EXISTS", 6),
    ("PERMISSION_DENIED", 7),
    ("RESOURCE_EXHAUSTED", 8),
    ("FAILED_PRECONDITION", 9),
    ("ABORTED", 10),
    ("OUT_OF_RANGE", 11),
    ("UNIMPLEMENTED", 12),
    ("INTERNAL", 13),
    ("UNAVAILABLE", 14),
    ("DATA_LOSS", 15),
    ("UNAUTHENTICATED", 16),
];

/// Resolves an ok_codes entry as pathosd does: case-insensitive, PascalCase or
/// SCREAMING_SNAKE (underscores ignored); Go's spelling "Canceled" is accepted.
pub(crate) fn grpc_code(name: &str) -> Option<u32> {
    let norm: String = name
        .chars()
        .filter(|c| *c != '_')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if norm == "CANCELED" {
        return Some(1);
    }
    GRPC_CODES
        .iter()
        .find(|(n, _)| n.replace('_', "") == norm)
        .map(|(_, c)| *c)
}

/// The parts of an absolute http(s) URL that the checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlParts {
    pub https: bool,
    /// Host without brackets (an IPv6 literal is bare).
    pub host: String,
    pub port: Option<u16>,
    /// Path and query, "/" when empty.
    pub path: String,
}

/// Splits `http://host[:port][/path]` or `https://...`; None for anything else
/// (user info is not supported: it would leak into logs).
pub(crate) fn split_url(url: &str) -> Option<UrlParts> {
    let (https, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return None;
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace()) {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0)?),
        None => None,
    };
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Some(UrlParts {
        https,
        host: host.to_string(),
        port,
        path,
    })
}

/// Checks every rule; errors go to `errs` next to any decode errors. A
/// config that passes is one `run::build` can make a `RunConfig` of
/// without failing.
pub fn validate(c: &mut Config, errs: &mut Errors) {
    check_rules(c, errs);
}

fn check_rules(c: &Config, errs: &mut Errors) {
    match c.schema.as_str() {
        "v1" => {}
        "" => errs.push("schema", "required (set \"v1\")"),
        other => errs.push_fmt(
            "schema",
            format_args!("unsupported version {} (expected \"v1\")", Quote(other)),
        ),
    }
    router(c, errs);
    bgp(c, errs);
    api(&c.api, errs);
    super::otel::validate(c, errs);
    vips(c, errs);
}

fn router(c: &Config, errs: &mut Errors) {
    let r = &c.router;
    if r.asn == 0 {
        errs.push("router.asn", "required and must be > 0");
    }
    match r.router_id {
        None => errs.push("router.router_id", "required (an IPv4 address)"),
        Some(IpAddr::V6(a)) => errs.push_fmt(
            "router.router_id",
            format_args!("{a} is not an IPv4 address (the BGP identifier is 32 bits)"),
        ),
        Some(IpAddr::V4(a)) if a.is_unspecified() => errs.push(
            "router.router_id",
            "0.0.0.0 is not a valid BGP identifier (RFC 6286: non-zero)",
        ),
        Some(_) => {}
    }
    if let Some(IpAddr::V4(a)) = r.local_address_ipv6 {
        errs.push_fmt(
            "router.local_address_ipv6",
            format_args!("{a} is not an IPv6 address"),
        );
    }
    if r.local_address_ipv6.is_none() {
        // A prefix that failed to decode holds an IPv4 placeholder.
        let v6 = c
            .vips
            .iter()
            .enumerate()
            .find(|(_, v)| v.prefix.afi() == crate::bgp::types::Afi::Ipv6);
        if let Some((i, v)) = v6 {
            errs.push_fmt(
                "router.local_address_ipv6",
                format_args!(
                    "required because vips[{i}].prefix {} is IPv6 (it is the IPv6 next hop)",
                    v.prefix
                ),
            );
        }
    }
}

/// Hold and keepalive rules, shared by bgp and each neighbor's overrides.
fn hold_time(path: &str, hold: Dur, errs: &mut Errors) {
    if !hold.is_zero() && hold < Dur::secs(3) {
        errs.push_fmt(path, format_args!("{hold} must be 0 or at least 3s"));
    } else if hold > Dur::secs(HOLD_MAX_SECS) {
        errs.push_fmt(path, format_args!("{hold} is more than {HOLD_MAX_SECS}s"));
    } else if hold.get().subsec_nanos() != 0 {
        // RFC 4271 §4.2: the OPEN message carries the Hold Time in seconds.
        errs.push_fmt(
            path,
            format_args!("{hold} is not a whole number of seconds"),
        );
    }
}

fn keepalive(path: &str, keepalive: Dur, hold: Dur, errs: &mut Errors) {
    if keepalive.is_zero() {
        return;
    }
    if hold.is_zero() {
        errs.push_fmt(
            path,
            format_args!("{keepalive} must be 0 when hold_time is 0 (no keepalives)"),
        );
    } else if keepalive >= hold {
        errs.push_fmt(
            path,
            format_args!("{keepalive} must be less than hold_time {hold}"),
        );
    }
}

fn bgp(c: &Config, errs: &mut Errors) {
    let b = &c.bgp;
    if b.listen_port != -1 && !(1..=65535).contains(&b.listen_port) {
        errs.push_fmt(
            "bgp.listen_port",
            format_args!(
                "{} must be -1 (disabled) or in range 1..65535",
                b.listen_port
            ),
        );
    }
    hold_time("bgp.hold_time", b.hold_time, errs);
    if !errs.has("bgp.hold_time") {
        keepalive("bgp.keepalive_time", b.keepalive_time, b.hold_time, errs);
    }
    if b.shutdown_drain > SHUTDOWN_DRAIN_MAX {
        errs.push_fmt(
            "bgp.shutdown_drain",
            format_args!(
                "{} is more than {SHUTDOWN_DRAIN_MAX} (procd kills a stopping service after 5s)",
                b.shutdown_drain
            ),
        );
    }
    // An entry that failed to decode empties the list; that is reported already.
    if b.neighbors.is_empty() && !errs.has_under("bgp.neighbors") {
        errs.push("bgp.neighbors", "at least one neighbor is required");
    }
    // Too many: one error, not one per entry.
    if too_many(
        errs,
        "bgp.neighbors",
        "neighbors",
        b.neighbors.len(),
        MAX_NEIGHBORS,
    ) {
        return;
    }
    // Duplicates are found by a search of the neighbors before this one:
    // at most MAX_NEIGHBORS (256), so at most ≈ 33,000 comparisons, and no
    // B-tree compiled for `&str` and `IpAddr` keys just for this.
    for (i, n) in b.neighbors.iter().enumerate() {
        let before = b.neighbors.get(..i).unwrap_or_default();
        let p = format!("bgp.neighbors[{i}]");
        neighbor(c, n, &p, errs);
        if n.passive && b.listen_port == -1 {
            errs.push(
                join(&p, "passive"),
                "a passive neighbor can never connect: bgp.listen_port is -1 (no listener)",
            );
        }
        // An accepted connection is matched to its neighbor by address.
        if let Some(a) = n.address {
            if let Some(first) = before.iter().position(|m| m.address == Some(a)) {
                errs.push_fmt(
                    join(&p, "address"),
                    format_args!("duplicate neighbor address {a} (also bgp.neighbors[{first}])"),
                );
            }
        }
        if !n.name.is_empty() {
            if let Some(first) = before.iter().position(|m| m.name == n.name) {
                errs.push_fmt(
                    join(&p, "name"),
                    format_args!(
                        "duplicate neighbor name {} (also bgp.neighbors[{first}])",
                        Quote(&n.name)
                    ),
                );
            }
        }
    }
}

/// Names used in API paths, metric labels and ubus: printable and URL-safe.
fn object_name(path: &str, name: &str, errs: &mut Errors) {
    if name.is_empty() {
        errs.push(path, "required");
    } else if name.len() > MAX_NAME_LEN {
        errs.push_fmt(
            path,
            format_args!("{} is longer than {MAX_NAME_LEN} bytes", Quote(name)),
        );
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        errs.push_fmt(
            path,
            format_args!(
                "{} may contain only letters, digits, '_', '-' and '.'",
                Quote(name)
            ),
        );
    }
}

fn neighbor(c: &Config, n: &Neighbor, p: &str, errs: &mut Errors) {
    object_name(&join(p, "name"), &n.name, errs);
    match n.address {
        None => errs.push(join(p, "address"), "required"),
        Some(a) if a.is_unspecified() || a.is_multicast() => errs.push_fmt(
            join(p, "address"),
            format_args!("{a} is not a unicast address"),
        ),
        Some(_) => {}
    }
    if n.peer_asn == 0 {
        errs.push(join(p, "peer_asn"), "required and must be > 0");
    }
    if n.port == 0 {
        errs.push(join(p, "port"), "0 is not a port (1..65535)");
    }
    if let (Some(l), Some(a)) = (n.local_address, n.address) {
        if l.is_ipv4() != a.is_ipv4() {
            errs.push_fmt(
                join(p, "local_address"),
                format_args!("{l} and address {a} are of different address families"),
            );
        }
    }
    // From pathosd's buildPeer: dialing our own address would connect to
    // our own listener and look like a session collision forever.
    let local = n.local_address.or(c.router.local_address);
    if let (false, Some(l), Some(a)) = (n.passive, local, n.address) {
        if l == a {
            errs.push_fmt(
                join(p, "local_address"),
                format_args!("active peer local_address {:?} must differ from neighbor address {:?} to avoid self-dial", l.to_string(), a.to_string()),
            );
        }
    }
    if let Some(pw) = &n.auth_password {
        if pw.len() > MD5_KEY_MAX {
            // The key itself is a secret: say how long, not what.
            errs.push_fmt(
                join(p, "auth_password"),
                format_args!(
                    "is {} bytes; TCP MD5 keys are at most {MD5_KEY_MAX} bytes",
                    pw.len()
                ),
            );
        }
    }
    if n.multihop_ttl != 0 && !n.enable_multihop {
        errs.push_fmt(
            join(p, "multihop_ttl"),
            format_args!(
                "{} has no effect when enable_multihop is false",
                n.multihop_ttl
            ),
        );
    } else if n.multihop_ttl == 1 {
        errs.push(
            join(p, "multihop_ttl"),
            "1 must be 0 (meaning 255) or at least 2",
        );
    }
    if let Some(h) = n.hold_time {
        hold_time(&join(p, "hold_time"), h, errs);
    }
    let hold = n.hold_time.unwrap_or(c.bgp.hold_time);
    let ka = n.keepalive_time.unwrap_or(c.bgp.keepalive_time);
    // The global pair was checked already; report here only what this
    // neighbor's overrides broke.
    let overrides = n.hold_time.is_some() || n.keepalive_time.is_some();
    if overrides && !errs.has(&join(p, "hold_time")) {
        keepalive(&join(p, "keepalive_time"), ka, hold, errs);
    }
    error_wait(n, p, errs);
}

/// The damping bounds: each within ERROR_WAIT_MIN..=ERROR_WAIT_MAX, and the
/// minimum not above the maximum.
fn error_wait(n: &Neighbor, p: &str, errs: &mut Errors) {
    let mut in_range = true;
    for (name, d) in [
        ("error_wait_min", n.error_wait_min),
        ("error_wait_max", n.error_wait_max),
    ] {
        if d < ERROR_WAIT_MIN {
            errs.push_fmt(
                join(p, name),
                format_args!("{d} is less than {ERROR_WAIT_MIN} (a refused peer would be redialled in a busy loop)"),
            );
            in_range = false;
        } else if d > ERROR_WAIT_MAX {
            errs.push_fmt(
                join(p, name),
                format_args!("{d} is more than {ERROR_WAIT_MAX}"),
            );
            in_range = false;
        }
    }
    if in_range && n.error_wait_min > n.error_wait_max {
        errs.push_fmt(
            join(p, "error_wait_min"),
            format_args!(
                "{} must not be more than error_wait_max {}",
                n.error_wait_min, n.error_wait_max
            ),
        );
    }
}

/// Shortest `api.token`: 16 characters of the b64token alphabet are about
/// 96 bits, too many to guess over HTTP.
pub(crate) const API_TOKEN_MIN: usize = 16;
/// Longest `api.token` (it travels in one header of an 8 KiB request head).
pub(crate) const API_TOKEN_MAX: usize = 256;

fn api(a: &Api, errs: &mut Errors) {
    if !a.listen.is_empty() && listen_addr(&a.listen).is_none() {
        errs.push_fmt(
            "api.listen",
            format_args!(
                "{} is not host:port such as 127.0.0.1:59179 (empty disables the API)",
                Quote(&a.listen)
            ),
        );
    }
    if let Some(t) = a.token() {
        // The token itself is a secret: say what is wrong, not what it is.
        // RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" /
        // "~" / "+" / "/" ) *"=".
        let body = t.trim_end_matches('=');
        let b64token = !body.is_empty()
            && body
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"-._~+/".contains(&c));
        if !b64token {
            errs.push(
                "api.token",
                "may contain only letters, digits and - . _ ~ + / (then = padding), as a bearer token (RFC 6750)",
            );
        } else if !(API_TOKEN_MIN..=API_TOKEN_MAX).contains(&t.len()) {
            errs.push_fmt(
                "api.token",
                format_args!(
                    "is {} characters; it must have {API_TOKEN_MIN} to {API_TOKEN_MAX}",
                    t.len()
                ),
            );
        }
    }
}

/// Parses `ip:port`, `[v6]:port` or `:port` (every address).
pub(crate) fn listen_addr(s: &str) -> Option<SocketAddr> {
    if let Some(port) = s.strip_prefix(':') {
        let port: u16 = port.parse().ok()?;
        return Some(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    s.parse().ok()
}

fn vips(c: &Config, errs: &mut Errors) {
    if c.vips.is_empty() && !errs.has_under("vips") {
        errs.push("vips", "at least one VIP is required");
    }
    if too_many(errs, "vips", "VIPs", c.vips.len(), MAX_VIPS) {
        return;
    }
    // The first VIP with each name and prefix, found through index lists
    // sorted by name and by prefix (4 bytes a VIP), not through maps (two
    // BTreeMaps were 0.9 MB at 10,000 VIPs, at the start's peak).
    // A prefix that is missing or failed to decode (reported by the
    // decoder) holds a placeholder: it takes no part in this rule.
    let prefix_ok: Vec<bool> = (0..c.vips.len())
        .map(|i| !errs.has(&format!("vips[{i}].prefix")))
        .collect();
    let n = c.vips.len();
    let first_name = first_of(n, &|i| !c.vips[i].name.is_empty(), &|a, b| {
        c.vips[a].name.cmp(&c.vips[b].name)
    });
    let first_prefix = first_of(n, &|i| prefix_ok[i], &|a, b| {
        c.vips[a].prefix.cmp(&c.vips[b].prefix)
    });
    for (i, v) in c.vips.iter().enumerate() {
        let p = format!("vips[{i}]");
        object_name(&join(&p, "name"), &v.name, errs);
        if let Some(first) = first_name[i] {
            errs.push_fmt(
                join(&p, "name"),
                format_args!("duplicate VIP name {} (also vips[{first}])", Quote(&v.name)),
            );
        }
        let pp = join(&p, "prefix");
        if let Some(first) = first_prefix[i] {
            errs.push_fmt(
                pp,
                format_args!("duplicate prefix {} (also vips[{first}].prefix)", v.prefix),
            );
        }
        vip(v, &p, errs);
    }
}

/// For each of `n` items whose key an earlier item has too, the index of
/// the first such item (None for the first and for items without a key).
/// `cmp` orders two items by key; `keyed` tells the items that have one.
/// Not generic: one sort in the binary for both rules (flash).
fn first_of(
    n: usize,
    keyed: &dyn Fn(usize) -> bool,
    cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering,
) -> Vec<Option<u32>> {
    let mut order: Vec<u32> = (0..n)
        .filter(|&i| keyed(i))
        .filter_map(|i| u32::try_from(i).ok())
        .collect();
    // Equal keys in index order, the first one first.
    order.sort_unstable_by(|&a, &b| cmp(a as usize, b as usize).then(a.cmp(&b)));
    let mut first = vec![None; n];
    let mut run: Option<u32> = None;
    for i in order {
        match run {
            Some(f) if cmp(f as usize, i as usize).is_eq() => first[i as usize] = Some(f),
            _ => run = Some(i),
        }
    }
    first
}

fn vip(v: &Vip, p: &str, errs: &mut Errors) {
    if v.always {
        for (key, set) in [("check", v.check.is_some()), ("checks", v.checks.is_some())] {
            if set {
                errs.push(
                    join(p, key),
                    "not allowed with always: true (the VIP is announced without checks)",
                );
            }
        }
    } else {
        match (&v.check, &v.checks) {
            (Some(_), Some(_)) => {
                errs.push(join(p, "checks"), "set either check or checks, not both")
            }
            (None, None)
                if !errs.has_under(&join(p, "check")) && !errs.has_under(&join(p, "checks")) =>
            {
                errs.push(
                    p,
                    "exactly one of check or checks is required (or always: true)",
                )
            }
            (None, Some(cs)) if cs.is_empty() => {
                errs.push(join(p, "checks"), "at least one check is required")
            }
            _ => {}
        }
    }
    let list: Vec<(String, &Check)> = match (&v.check, &v.checks) {
        (Some(c), _) => vec![(join(p, "check"), c)],
        (None, Some(cs)) => cs
            .iter()
            .enumerate()
            .map(|(j, c)| (format!("{p}.checks[{j}]"), c))
            .collect(),
        (None, None) => Vec::new(),
    };
    if too_many(
        errs,
        &join(p, "checks"),
        "checks",
        list.len(),
        MAX_CHECKS_PER_VIP,
    ) {
        return;
    }
    // Names seen so far and the path of the check that has each: at most
    // MAX_CHECKS_PER_VIP (64), searched in order (no map type for this).
    let mut seen: Vec<(String, &String)> = Vec::new();
    let mut names_ok = true;
    for (cp, c) in &list {
        check(v, cp, c, errs);
        let name = c.effective_name();
        let np = join(cp, "name");
        if let Some(n) = &c.name {
            if n.len() > MAX_NAME_LEN {
                errs.push_fmt(
                    &np,
                    format_args!("{} is longer than {MAX_NAME_LEN} bytes", Quote(n)),
                );
                names_ok = false;
            } else if !is_identifier(n) {
                errs.push_fmt(
                    &np,
                    format_args!("{} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", Quote(n)),
                );
                names_ok = false;
            } else if RESERVED.contains(&n.as_str()) {
                errs.push_fmt(
                    &np,
                    format_args!("{} is reserved in checks_policy", Quote(n)),
                );
                names_ok = false;
            }
        }
        if name.is_empty() {
            names_ok = false;
            continue;
        }
        match seen
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, first)| first)
        {
            Some(first) => {
                errs.push_fmt(
                    &np,
                    format_args!("duplicate check name {} (also {first}); two checks of the same type need explicit names", Quote(&name)),
                );
                names_ok = false;
            }
            None => seen.push((name, cp)),
        }
    }
    let pp = join(p, "checks_policy");
    if !v.always && names_ok && !list.is_empty() && !errs.has(&pp) {
        let names: Vec<String> = list.iter().map(|(_, c)| c.effective_name()).collect();
        if let Err(e) = policy_expr::compile(&v.checks_policy, &names) {
            errs.push_fmt(
                pp,
                format_args!(
                    "column {} of {}: {}",
                    e.column,
                    Quote(&v.checks_policy),
                    e.message
                ),
            );
        }
    }
    if let Some(ifname) = &v.local_interface {
        let ip = join(p, "local_interface");
        if !v.require_local_address {
            errs.push(&ip, "has no effect unless require_local_address is true");
        } else if ifname.is_empty()
            || ifname.len() > 15
            || ifname.chars().any(|c| c == '/' || c.is_whitespace())
        {
            errs.push_fmt(
                &ip,
                format_args!("{} is not an interface name", Quote(ifname)),
            );
        }
    }
    policy(&v.policy, &join(p, "policy"), errs);
}

fn policy(pol: &Policy, p: &str, errs: &mut Errors) {
    for (path, n) in [
        (
            join(p, "announce.as_path_prepend"),
            pol.announce.as_path_prepend,
        ),
        (
            join(p, "lower_priority.as_path_prepend"),
            pol.lower_priority.as_path_prepend,
        ),
    ] {
        if n > PREPEND_MAX {
            errs.push_fmt(path, format_args!("{n} is more than {PREPEND_MAX}"));
        }
    }
    if pol.fail_action == FailAction::DrainThenWithdraw && pol.drain_time.is_zero() {
        errs.push(
            join(p, "drain_time"),
            "0s must be greater than 0 for fail_action drain_then_withdraw",
        );
    }
    if let Some(f) = &pol.lower_priority_file {
        if !f.starts_with('/') {
            errs.push_fmt(
                join(p, "lower_priority_file"),
                format_args!("{} must be an absolute path", Quote(f)),
            );
        }
    }
}

/// Whether `s` is a non-empty hex string of whole bytes.
/// `s` as bytes: an even number of hex digits (either case), nothing else.
/// Validation rejects what this refuses; resolution decodes with it.
pub(crate) fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || s.len() % 2 != 0 {
        return None;
    }
    s.as_bytes()
        .chunks(2)
        .map(|p| {
            let digit = |b: u8| char::from(b).to_digit(16);
            u8::try_from(digit(*p.first()?)? * 16 + digit(*p.get(1)?)?).ok()
        })
        .collect()
}

fn check(v: &Vip, cp: &str, c: &Check, errs: &mut Errors) {
    let interval_p = join(cp, "interval");
    let timeout_p = join(cp, "timeout");
    if c.interval.is_zero() {
        errs.push(&interval_p, "0s must be greater than 0");
    }
    if c.timeout.is_zero() {
        errs.push(&timeout_p, "0s must be greater than 0");
    } else if c.timeout >= c.interval && !errs.has(&interval_p) && !errs.has(&timeout_p) {
        errs.push_fmt(
            &timeout_p,
            format_args!("{} must be less than interval {}", c.timeout, c.interval),
        );
    }
    for (key, n) in [("rise", c.rise), ("fall", c.fall)] {
        if n == 0 {
            errs.push(join(cp, key), "0 must be at least 1");
        }
    }
    let Some(kind) = c.kind else {
        if !errs.has(&join(cp, "type")) {
            errs.push_fmt(
                join(cp, "type"),
                format_args!("required (one of {})", CheckType::ALL.join(", ")),
            );
        }
        return;
    };
    // A block for another type is almost always a copy-paste slip: the
    // probe would silently ignore it.
    let blocks: [(&str, bool, bool); 7] = [
        (
            "http",
            c.http.is_some(),
            matches!(kind, CheckType::Http | CheckType::Https),
        ),
        ("dns", c.dns.is_some(), kind == CheckType::Dns),
        ("ping", c.ping.is_some(), kind == CheckType::Ping),
        ("tcp", c.tcp.is_some(), kind == CheckType::Tcp),
        ("udp", c.udp.is_some(), kind == CheckType::Udp),
        ("grpc", c.grpc.is_some(), kind == CheckType::Grpc),
        ("exec", c.exec.is_some(), kind == CheckType::Exec),
    ];
    for (key, present, applies) in blocks {
        if present && !applies {
            errs.push_fmt(
                join(cp, key),
                format_args!("a {key} block does not apply to a {kind} check"),
            );
        }
    }
    // A prefix that is missing or failed to decode holds a placeholder
    // host prefix (0.0.0.0/32): the host rules then stay quiet.
    let host_prefix = Some((v.prefix.is_host(), v.prefix));
    let need_host = |path: String, errs: &mut Errors| {
        if let Some((false, px)) = host_prefix {
            errs.push_fmt(
                path,
                format_args!("required because prefix {px} is not a single address (/32 or /128)"),
            );
        }
    };
    let not_empty = |path: String, s: &Option<String>, errs: &mut Errors| {
        if s.as_deref() == Some("") {
            errs.push(path, "must not be empty");
        }
    };
    match kind {
        CheckType::Http | CheckType::Https => {
            let d = HttpCheck::default();
            let h = c.http.as_deref().unwrap_or(&d);
            if kind == CheckType::Https && !crate::TLS {
                errs.push_fmt(join(cp, "type"), format_args!("https {}", crate::NEEDS_TLS));
            }
            http(h, kind, &join(cp, "http"), &need_host, errs);
            not_empty(join(cp, "http.host"), &h.host, errs);
        }
        CheckType::Dns => {
            let p = join(cp, "dns");
            let d = DnsCheck::default();
            let dns = c.dns.as_deref().unwrap_or(&d);
            if dns.names.is_empty() {
                errs.push(join(&p, "names"), "at least one name is required");
            }
            for (k, n) in dns.names.iter().enumerate() {
                if n.trim().is_empty() {
                    errs.push(format!("{p}.names[{k}]"), "must not be empty");
                } else if let Err(why) = DnsName::parse(n) {
                    // The query is built from the labels read here: a name
                    // the probe could not send is refused now.
                    errs.push(
                        format!("{p}.names[{k}]"),
                        format!("{} is not a DNS name: {why}", Quote(n)),
                    );
                }
            }
            match &dns.resolver {
                None => need_host(join(&p, "resolver"), errs),
                Some(r) if r.is_empty() => errs.push(join(&p, "resolver"), "must not be empty"),
                Some(_) => {}
            }
            if dns.port == 0 {
                errs.push(join(&p, "port"), "0 is not a port (1..65535)");
            }
        }
        CheckType::Ping => {
            let p = join(cp, "ping");
            let d = PingCheck::default();
            let ping = c.ping.as_deref().unwrap_or(&d);
            if !(1..=60).contains(&ping.count) {
                errs.push_fmt(
                    join(&p, "count"),
                    format_args!("{} is not in 1..60", ping.count),
                );
            }
            if !(0.0..1.0).contains(&ping.max_loss_ratio) {
                errs.push_fmt(
                    join(&p, "max_loss_ratio"),
                    format_args!("{} is not in [0, 1)", ping.max_loss_ratio),
                );
            }
            if ping.count > 1 && ping.interval.is_zero() {
                errs.push(join(&p, "interval"), "0s must be greater than 0");
            } else if (1..=60).contains(&ping.count) && !errs.has(&timeout_p) {
                // All echo requests must be sent before the check times out,
                // or the last ones are lost by construction.
                let gaps = ping.interval.get().saturating_mul(ping.count - 1);
                if Dur(gaps) >= c.timeout {
                    errs.push_fmt(
                        join(&p, "interval"),
                        format_args!(
                            "(count - 1) x interval = {} must be less than the check timeout {}",
                            Dur(gaps),
                            c.timeout
                        ),
                    );
                }
            }
            match ping.dst_ip {
                None => need_host(join(&p, "dst_ip"), errs),
                Some(dst) => {
                    if let Some(src) = ping.src_ip {
                        if src.is_ipv4() != dst.is_ipv4() {
                            errs.push_fmt(
                                join(&p, "src_ip"),
                                format_args!(
                                    "{src} and dst_ip {dst} are of different address families"
                                ),
                            );
                        }
                    }
                }
            }
        }
        CheckType::Tcp => {
            let p = join(cp, "tcp");
            let d = TcpCheck::default();
            let t = c.tcp.as_deref().unwrap_or(&d);
            port_required(&join(&p, "port"), t.port, errs);
            match &t.host {
                None => need_host(join(&p, "host"), errs),
                h => not_empty(join(&p, "host"), h, errs),
            }
        }
        CheckType::Udp => {
            let p = join(cp, "udp");
            let d = UdpCheck::default();
            let u = c.udp.as_deref().unwrap_or(&d);
            port_required(&join(&p, "port"), u.port, errs);
            match &u.host {
                None => need_host(join(&p, "host"), errs),
                h => not_empty(join(&p, "host"), h, errs),
            }
            if let Some(hex) = &u.payload_hex {
                if u.payload.is_some() {
                    errs.push(join(&p, "payload_hex"), "cannot be combined with payload");
                } else if hex_bytes(hex).is_none() {
                    errs.push_fmt(
                        join(&p, "payload_hex"),
                        format_args!(
                            "{} is not hex (an even number of 0-9a-f digits)",
                            Quote(hex)
                        ),
                    );
                }
            }
        }
        CheckType::Grpc => {
            let p = join(cp, "grpc");
            let d = GrpcCheck::default();
            let g = c.grpc.as_deref().unwrap_or(&d);
            port_required(&join(&p, "port"), g.port, errs);
            match &g.host {
                None => need_host(join(&p, "host"), errs),
                h => not_empty(join(&p, "host"), h, errs),
            }
            if g.tls && !crate::TLS {
                errs.push_fmt(join(&p, "tls"), format_args!("true {}", crate::NEEDS_TLS));
            }
            if !g.tls {
                for (key, set) in [
                    ("tls_insecure", g.tls_insecure),
                    ("tls_ca_cert", g.tls_ca_cert.is_some()),
                    ("tls_server_name", g.tls_server_name.is_some()),
                ] {
                    if set {
                        errs.push(join(&p, key), "has no effect unless tls is true");
                    }
                }
            } else if g.tls_insecure && g.tls_ca_cert.is_some() {
                errs.push(
                    join(&p, "tls_insecure"),
                    "cannot be combined with tls_ca_cert",
                );
            }
            if let Some(m) = &g.method {
                let m = m.strip_prefix('/').unwrap_or(m);
                let ok = match m.split_once('/') {
                    Some((svc, meth)) => {
                        !svc.is_empty()
                            && !meth.is_empty()
                            && !meth.contains('/')
                            && !m.chars().any(|c| c.is_whitespace())
                    }
                    None => false,
                };
                if !ok {
                    errs.push_fmt(
                        join(&p, "method"),
                        format_args!(
                            "{} is not a method such as /pkg.Service/Method",
                            Quote(g.method.as_deref().unwrap_or_default())
                        ),
                    );
                }
            }
            if g.ok_codes.is_empty() {
                errs.push(join(&p, "ok_codes"), "at least one code is required");
            }
            for (k, code) in g.ok_codes.iter().enumerate() {
                if grpc_code(code).is_none() {
                    errs.push_fmt(
                        format!("{p}.ok_codes[{k}]"),
                        format_args!(
                            "{} is not a gRPC status code such as OK or NOT_FOUND",
                            Quote(code)
                        ),
                    );
                }
            }
            for (k, val) in &g.metadata {
                header(&join(&join(&p, "metadata"), k), k, val, errs);
            }
        }
        CheckType::Exec => {
            let p = join(cp, "exec");
            let d = ExecCheck::default();
            let e = c.exec.as_deref().unwrap_or(&d);
            if e.command.trim().is_empty() {
                errs.push(join(&p, "command"), "required");
            }
        }
    }
}

fn port_required(path: &str, port: u16, errs: &mut Errors) {
    if port == 0 {
        errs.push(path, "required (1..65535)");
    }
}

/// RFC 9110 §5.1 field names are tokens; values must not smuggle a line break.
pub(crate) fn header(path: &str, name: &str, value: &str, errs: &mut Errors) {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(tchar) {
        errs.push_fmt(
            path,
            format_args!("{} is not a valid header name", Quote(name)),
        );
    } else if value.chars().any(|c| matches!(c, '\r' | '\n' | '\0')) {
        errs.push(path, "value contains a line break or NUL");
    }
}

fn http(
    h: &HttpCheck,
    kind: CheckType,
    p: &str,
    need_host: &dyn Fn(String, &mut Errors),
    errs: &mut Errors,
) {
    let url_p = join(p, "url");
    let mut tls = kind == CheckType::Https;
    let mut full: Option<UrlParts> = None;
    if h.url.starts_with('/') {
        if h.host.is_none() {
            need_host(join(p, "host"), errs);
        }
    } else {
        match split_url(&h.url) {
            None => errs.push_fmt(
                &url_p,
                format_args!(
                    "{} must be a path such as /healthz or an http:// or https:// URL",
                    Quote(&h.url)
                ),
            ),
            Some(u) => {
                if kind == CheckType::Https && !u.https {
                    errs.push_fmt(
                        &url_p,
                        format_args!("{} is http:// but the check type is https", Quote(&h.url)),
                    );
                }
                if u.https && kind == CheckType::Http && !crate::TLS {
                    errs.push_fmt(&url_p, format_args!("{:?} {}", h.url, crate::NEEDS_TLS));
                }
                tls |= u.https;
                full = Some(u);
            }
        }
    }
    if h.url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        errs.push_fmt(
            &url_p,
            format_args!("{} contains whitespace", Quote(&h.url)),
        );
    }
    if h.port == Some(0) {
        errs.push(join(p, "port"), "0 is not a port (1..65535)");
    }
    if h.response_codes.is_empty() {
        errs.push(join(p, "response_codes"), "at least one code is required");
    }
    // response_regex and response_jq are compiled by the decoder
    // (`BodyRegex`, `BodyJq`), which reports a pattern that does not compile.
    if h.method == HttpMethod::Head {
        for (key, set) in [
            ("response_text", h.response_text.is_some()),
            ("response_regex", h.response_regex.is_some()),
            ("response_jq", h.response_jq.is_some()),
        ] {
            if set {
                errs.push(
                    join(p, key),
                    "cannot be checked: a HEAD response has no body",
                );
            }
        }
    }
    if let Some(proxy) = &h.proxy {
        let pp = join(p, "proxy");
        if !(proxy.starts_with("http://") || proxy.starts_with("https://")) {
            errs.push_fmt(
                &pp,
                format_args!("{} is not an http:// or https:// proxy URL", Quote(proxy)),
            );
        } else if let Err(why) = Proxy::parse(proxy) {
            // The probes connect with the parts read here.
            errs.push(
                &pp,
                format!("{} is not a usable proxy URL: {why}", Quote(proxy)),
            );
        } else if full
            .as_ref()
            .is_none_or(|u| u.host.parse::<IpAddr>().is_ok())
        {
            errs.push(
                &pp,
                "needs url to be a full URL with a host name (the proxy connects by name)",
            );
        } else if proxy.starts_with("https://") && !crate::TLS {
            // The connection to an https:// proxy is itself TLS.
            errs.push_fmt(&pp, format_args!("{proxy:?} {}", crate::NEEDS_TLS));
        }
    }
    if h.tls_insecure && h.tls_ca_cert.is_some() {
        errs.push(
            join(p, "tls_insecure"),
            "cannot be combined with tls_ca_cert",
        );
    }
    match (&h.tls_client_cert, &h.tls_client_key) {
        (Some(_), None) => errs.push(join(p, "tls_client_key"), "required with tls_client_cert"),
        (None, Some(_)) => errs.push(join(p, "tls_client_cert"), "required with tls_client_key"),
        _ => {}
    }
    if !tls {
        for (key, set) in [
            ("tls_insecure", h.tls_insecure),
            ("tls_ca_cert", h.tls_ca_cert.is_some()),
            ("tls_server_name", h.tls_server_name.is_some()),
            ("tls_client_cert", h.tls_client_cert.is_some()),
            ("tls_client_key", h.tls_client_key.is_some()),
        ] {
            if set {
                errs.push(
                    join(p, key),
                    "has no effect without TLS (type https or an https:// url)",
                );
            }
        }
    }
    for (k, val) in &h.headers {
        header(&join(&join(p, "headers"), k), k, val, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::settings::PeerSettings;
    use crate::config::field::Field;
    use serde_json::{json, Value};

    /// A minimal valid config; each test breaks one thing in it.
    fn base() -> Value {
        json!({
            "schema": "v1",
            "router": {"asn": 65001, "router_id": "10.0.0.1", "local_address": "127.0.0.1"},
            "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.2", "peer_asn": 65000}]},
            "vips": [{"name": "web", "prefix": "192.0.2.10/32",
                      "check": {"type": "tcp", "tcp": {"port": 80}}}]
        })
    }

    fn errors(v: &Value) -> Vec<String> {
        let mut errs = Errors::default();
        if let Some(mut c) = Config::decode(v, "", &mut errs) {
            validate(&mut c, &mut errs);
        }
        errs.0.iter().map(|e| e.to_string()).collect()
    }

    /// Applies `patch` (a JSON pointer and a value; Null deletes) to base()
    /// and asserts the exact, single error.
    fn one(patches: &[(&str, Value)], want: &str) {
        let mut v = base();
        for (ptr, val) in patches {
            let (parent, key) = ptr.rsplit_once('/').unwrap();
            let target = v.pointer_mut(parent).unwrap();
            match (target, val) {
                (Value::Object(m), Value::Null) => {
                    m.remove(key);
                }
                (Value::Object(m), val) => {
                    m.insert(key.to_string(), val.clone());
                }
                (Value::Array(a), val) => {
                    let i: usize = key.parse().unwrap();
                    if i == a.len() {
                        a.push(val.clone());
                    } else {
                        a[i] = val.clone();
                    }
                }
                _ => panic!("bad pointer {ptr}"),
            }
        }
        // The other rules hold in a build without TLS too (cargo test
        // --no-default-features): there an https check also gets the
        // NEEDS_TLS error, which tls_needs_the_feature tests by itself.
        let got: Vec<String> = errors(&v)
            .into_iter()
            .filter(|e| want.contains(crate::NEEDS_TLS) || !e.contains(crate::NEEDS_TLS))
            .collect();
        assert_eq!(got, vec![want.to_string()], "patches {patches:?}");
    }

    /// Every option that needs TLS names itself in a build without it (the
    /// pathosd-nossl package), and is accepted in a build with it.
    #[test]
    fn tls_needs_the_feature() {
        let why = crate::NEEDS_TLS;
        let cases = [
            (
                json!({"type": "https", "http": {"url": "/healthz"}}),
                format!("vips[0].check.type: https {why}"),
            ),
            (
                json!({"type": "http", "http": {"url": "https://web.example/healthz"}}),
                format!("vips[0].check.http.url: \"https://web.example/healthz\" {why}"),
            ),
            (
                json!({"type": "grpc", "grpc": {"port": 50051, "tls": true}}),
                format!("vips[0].check.grpc.tls: true {why}"),
            ),
            (
                json!({"type": "http", "http": {"url": "http://web.example/", "proxy": "https://p.example:3128"}}),
                format!("vips[0].check.http.proxy: \"https://p.example:3128\" {why}"),
            ),
        ];
        for (check, want) in cases {
            let mut v = base();
            v["vips"][0]["check"] = check.clone();
            let want = if crate::TLS { vec![] } else { vec![want] };
            assert_eq!(errors(&v), want, "check {check}");
        }
        // Plain http (also through an http:// proxy) and h2c gRPC need nothing.
        for check in [
            json!({"type": "http", "http": {"url": "http://web.example/"}}),
            json!({"type": "http", "http": {"url": "http://web.example/", "proxy": "http://p.example:3128"}}),
            json!({"type": "grpc", "grpc": {"port": 50051}}),
        ] {
            let mut v = base();
            v["vips"][0]["check"] = check.clone();
            assert_eq!(errors(&v), Vec::<String>::new(), "check {check}");
        }
    }

    fn loaded(v: Value) -> Config {
        crate::config::load::check_str(&v.to_string(), None, &|_| None).unwrap()
    }

    fn run(v: Value) -> crate::config::RunConfig {
        crate::config::RunConfig::new(loaded(v)).unwrap()
    }

    /// Validation hands the daemon the compiled checks_policy: the one
    /// `policy_expr::compile` gives for the VIP's check names, `all` for an
    /// `always` VIP.
    #[test]
    fn a_valid_config_carries_its_compiled_policies() {
        let mut v = base();
        v["vips"][0]["check"] = Value::Null;
        v["vips"][0]["checks"] = json!([
            {"name": "web", "type": "tcp", "tcp": {"port": 80}},
            {"type": "ping"}
        ]);
        v["vips"][0]["checks_policy"] = json!("web && !ping || at_least(2)");
        if let Some(vips) = v["vips"].as_array_mut() {
            vips.push(
                json!({"name": "a", "prefix": "192.0.2.11/32", "always": true,
                             "checks_policy": "any"}),
            );
        }
        let c = run(v);
        let names = ["web".to_string(), "ping".to_string()];
        let want = policy_expr::compile("web && !ping || at_least(2)", &names).unwrap();
        assert_eq!(c.vips[0].checks_expr, want);
        assert_ne!(want, policy_expr::Expr::All);
        assert_eq!(c.vips[1].checks_expr, policy_expr::Expr::All);
        // And it evaluates as written: web && !ping || at_least(2).
        let eval = |up: &[&str]| {
            crate::check::policy::eval(&c.vips[0].checks_expr, &names, &|n| up.contains(&n))
        };
        assert!(eval(&["web"]));
        assert!(!eval(&["ping"]));
        assert!(eval(&["web", "ping"]));
        assert!(!eval(&[]));
    }

    /// The prefix is required by the decoder, so a decoded VIP holds a
    /// `Prefix` (no `Option` for the engine or the checks to unwrap); the
    /// errors stay what validation said before, also for an explicit null.
    #[test]
    fn a_vip_prefix_is_required_when_decoding() {
        for missing in [None, Some(Value::Null)] {
            let mut v = base();
            match missing {
                None => {
                    v["vips"][0].as_object_mut().map(|o| o.remove("prefix"));
                }
                Some(n) => v["vips"][0]["prefix"] = n,
            }
            v["router"]["asn"] = json!(0);
            assert_eq!(
                errors(&v),
                [
                    "vips[0].prefix: required",
                    "router.asn: required and must be > 0"
                ]
            );
        }
        // Two VIPs without a prefix are not duplicates of each other.
        let mut v = base();
        v["vips"] = json!([
            {"name": "a", "always": true},
            {"name": "b", "always": true, "prefix": "0.0.0.0/32"},
            {"name": "c", "always": true, "prefix": "10.0.0.300/32"}
        ]);
        assert_eq!(
            errors(&v),
            [
                "vips[0].prefix: required",
                "vips[2].prefix: \"10.0.0.300/32\" is not a valid prefix (\"10.0.0.300\" is not an IP address)"
            ]
        );
        assert_eq!(
            loaded(base()).vips[0].prefix,
            "192.0.2.10/32".parse().unwrap()
        );
    }

    #[test]
    fn a_valid_config_carries_its_api_listen_address() {
        let mut v = base();
        assert_eq!(
            run(v.clone()).api.listen,
            Some("127.0.0.1:59179".parse().unwrap())
        );
        v["api"] = json!({"listen": ":8080"});
        assert_eq!(
            run(v.clone()).api.listen,
            Some("0.0.0.0:8080".parse().unwrap())
        );
        v["api"] = json!({"listen": "[::1]:1"});
        assert_eq!(run(v.clone()).api.listen, Some("[::1]:1".parse().unwrap()));
        v["api"] = json!({"listen": ""});
        assert_eq!(run(v).api.listen, None);
    }

    /// Every default and override of a neighbor is applied once, by
    /// validation: the speaker reads the result.
    #[test]
    fn a_valid_config_carries_each_neighbors_session() {
        let mut v = base();
        v["router"]["local_address"] = json!("0.0.0.0");
        v["router"]["local_address_ipv6"] = json!("2001:db8::1");
        v["bgp"]["hold_time"] = json!("30s");
        v["bgp"]["keepalive_time"] = json!("10s");
        v["bgp"]["graceful_restart"] = json!(false);
        v["bgp"]["neighbors"] = json!([
            {"name": "ebgp", "address": "127.0.0.2", "peer_asn": 65000, "auth_password": ""},
            {"name": "mh", "address": "127.0.0.3", "peer_asn": 65000, "enable_multihop": true,
             "multihop_ttl": 5, "ttl_security": true, "hold_time": "9s", "keepalive_time": "0s",
             "graceful_restart": true, "auth_password": "k", "local_address": "127.0.0.9"},
            {"name": "ibgp", "address": "127.0.0.4", "peer_asn": 65001, "passive": true}
        ]);
        let c = run(v);
        let s: Vec<&PeerSettings> = c.neighbors.iter().map(|n| &n.settings).collect();
        let id: std::net::Ipv4Addr = "10.0.0.1".parse().unwrap();
        let ebgp = s[0];
        assert_eq!(ebgp.address, "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(ebgp.local_address, Some("0.0.0.0".parse().unwrap()));
        assert_eq!((ebgp.fsm.router_id, ebgp.fsm.local_as), (id, 65001));
        assert!(ebgp.shape.ebgp);
        assert_eq!(
            (ebgp.fsm.hold_time, ebgp.fsm.keepalive_time),
            (30, Some(10))
        );
        assert!(!ebgp.fsm.capabilities.graceful_restart);
        assert!(ebgp.fsm.capabilities.mp_ipv6);
        assert_eq!(ebgp.password, None);
        assert_eq!((ebgp.ttl, ebgp.min_ttl), (Some(1), None));
        assert_eq!(ebgp.shape.next_hop_v4, Some(id));
        assert!(ebgp.next_hop_v4_from_session);
        assert_eq!(ebgp.shape.next_hop_v6, Some("2001:db8::1".parse().unwrap()));
        assert!(!ebgp.next_hop_v6_from_session);
        // RFC 5082 §3: 255 out, at least 255 - (5 - 1) in.
        assert_eq!((s[1].ttl, s[1].min_ttl), (Some(255), Some(251)));
        assert_eq!((s[1].fsm.hold_time, s[1].fsm.keepalive_time), (9, None));
        assert!(s[1].fsm.capabilities.graceful_restart);
        assert_eq!(s[1].password.as_deref(), Some("k"));
        assert_eq!(s[1].local_address, Some("127.0.0.9".parse().unwrap()));
        assert_eq!(
            (s[2].shape.ebgp, s[2].ttl, s[2].min_ttl),
            (false, None, None)
        );
        assert!(s[2].fsm.passive);
    }

    #[test]
    fn base_is_valid() {
        assert_eq!(errors(&base()), Vec::<String>::new());
    }

    #[test]
    fn top_level_and_router_rules() {
        one(&[("/schema", Value::Null)], "schema: required (set \"v1\")");
        one(
            &[("/schema", json!("v2"))],
            "schema: unsupported version \"v2\" (expected \"v1\")",
        );
        one(
            &[("/router/asn", json!(0))],
            "router.asn: required and must be > 0",
        );
        one(
            &[("/router/router_id", Value::Null)],
            "router.router_id: required (an IPv4 address)",
        );
        one(
            &[("/router/router_id", json!("2001:db8::1"))],
            "router.router_id: 2001:db8::1 is not an IPv4 address (the BGP identifier is 32 bits)",
        );
        one(
            &[("/router/router_id", json!("0.0.0.0"))],
            "router.router_id: 0.0.0.0 is not a valid BGP identifier (RFC 6286: non-zero)",
        );
        one(
            &[("/router/local_address_ipv6", json!("10.0.0.9"))],
            "router.local_address_ipv6: 10.0.0.9 is not an IPv6 address",
        );
        one(
            &[("/vips/1", json!({"name": "v6", "prefix": "2001:db8::1/128", "always": true}))],
            "router.local_address_ipv6: required because vips[1].prefix 2001:db8::1/128 is IPv6 (it is the IPv6 next hop)",
        );
        one(
            &[("/vips", json!([]))],
            "vips: at least one VIP is required",
        );
        one(&[("/api", json!({"listen": "localhost"}))],
            "api.listen: \"localhost\" is not host:port such as 127.0.0.1:59179 (empty disables the API)");
        one(
            &[("/api", json!({"token": "short"}))],
            "api.token: is 5 characters; it must have 16 to 256",
        );
        one(
            &[("/api", json!({"token": "x".repeat(257)}))],
            "api.token: is 257 characters; it must have 16 to 256",
        );
        for bad in [
            "has space in it 0123",
            "quote\"0123456789abcdef",
            "ümlaut0123456789abc",
            "=0123456789abcdefgh",
        ] {
            one(&[("/api", json!({"token": bad}))],
                "api.token: may contain only letters, digits and - . _ ~ + / (then = padding), as a bearer token (RFC 6750)");
        }
        for good in ["", "0123456789abcdef", "aB3-._~+/0123456789==="] {
            let mut v = base();
            v["api"] = json!({"token": good});
            assert_eq!(errors(&v), Vec::<String>::new(), "{good}");
        }
        assert_eq!(
            errors(&{
                let mut v = base();
                v["api"] = json!({"listen": ":59179"});
                v
            }),
            Vec::<String>::new()
        );
    }

    #[test]
    fn bgp_rules() {
        one(
            &[("/bgp/listen_port", json!(0))],
            "bgp.listen_port: 0 must be -1 (disabled) or in range 1..65535",
        );
        one(
            &[("/bgp/listen_port", json!(65536))],
            "bgp.listen_port: 65536 must be -1 (disabled) or in range 1..65535",
        );
        one(
            &[("/bgp/hold_time", json!("2s"))],
            "bgp.hold_time: 2s must be 0 or at least 3s",
        );
        one(
            &[("/bgp/hold_time", json!("4.5s"))],
            "bgp.hold_time: 4.5s is not a whole number of seconds",
        );
        one(
            &[("/bgp/hold_time", json!("20h"))],
            "bgp.hold_time: 20h is more than 65535s",
        );
        one(
            &[("/bgp/keepalive_time", json!("90s"))],
            "bgp.keepalive_time: 1m30s must be less than hold_time 1m30s",
        );
        one(
            &[
                ("/bgp/hold_time", json!("0s")),
                ("/bgp/keepalive_time", json!("1s")),
            ],
            "bgp.keepalive_time: 1s must be 0 when hold_time is 0 (no keepalives)",
        );
        one(
            &[("/bgp/shutdown_drain", json!("5s"))],
            "bgp.shutdown_drain: 5s is more than 4s (procd kills a stopping service after 5s)",
        );
        one(
            &[("/bgp/neighbors", json!([]))],
            "bgp.neighbors: at least one neighbor is required",
        );
    }

    #[test]
    fn neighbor_rules() {
        let n = "/bgp/neighbors/0";
        one(
            &[(&format!("{n}/name"), json!(""))],
            "bgp.neighbors[0].name: required",
        );
        one(
            &[(&format!("{n}/name"), json!("a b"))],
            "bgp.neighbors[0].name: \"a b\" may contain only letters, digits, '_', '-' and '.'",
        );
        one(
            &[(
                "/bgp/neighbors/1",
                json!({"name": "bird", "address": "127.0.0.3", "peer_asn": 1}),
            )],
            "bgp.neighbors[1].name: duplicate neighbor name \"bird\" (also bgp.neighbors[0])",
        );
        one(
            &[(
                "/bgp/neighbors/1",
                json!({"name": "frr", "address": "127.0.0.2", "peer_asn": 1}),
            )],
            "bgp.neighbors[1].address: duplicate neighbor address 127.0.0.2 (also bgp.neighbors[0])",
        );
        one(
            &[(&format!("{n}/passive"), json!(true)), ("/bgp/listen_port", json!(-1))],
            "bgp.neighbors[0].passive: a passive neighbor can never connect: bgp.listen_port is -1 (no listener)",
        );
        one(
            &[(&format!("{n}/address"), Value::Null)],
            "bgp.neighbors[0].address: required",
        );
        one(
            &[(&format!("{n}/address"), json!("224.0.0.1"))],
            "bgp.neighbors[0].address: 224.0.0.1 is not a unicast address",
        );
        one(
            &[(&format!("{n}/peer_asn"), json!(0))],
            "bgp.neighbors[0].peer_asn: required and must be > 0",
        );
        one(
            &[(&format!("{n}/port"), json!(0))],
            "bgp.neighbors[0].port: 0 is not a port (1..65535)",
        );
        one(&[(&format!("{n}/address"), json!("127.0.0.1"))],
            "bgp.neighbors[0].local_address: active peer local_address \"127.0.0.1\" must differ from neighbor address \"127.0.0.1\" to avoid self-dial");
        // Passive peers never dial, so the guard does not apply.
        one(
            &[
                (&format!("{n}/address"), json!("127.0.0.1")),
                (&format!("{n}/passive"), json!(true)),
                ("/schema", json!("v0")),
            ],
            "schema: unsupported version \"v0\" (expected \"v1\")",
        );
        one(&[(&format!("{n}/local_address"), json!("::1"))],
            "bgp.neighbors[0].local_address: ::1 and address 127.0.0.2 are of different address families");
        one(
            &[(&format!("{n}/auth_password"), json!("x".repeat(81)))],
            "bgp.neighbors[0].auth_password: is 81 bytes; TCP MD5 keys are at most 80 bytes",
        );
        one(
            &[(&format!("{n}/multihop_ttl"), json!(5))],
            "bgp.neighbors[0].multihop_ttl: 5 has no effect when enable_multihop is false",
        );
        one(
            &[
                (&format!("{n}/multihop_ttl"), json!(1)),
                (&format!("{n}/enable_multihop"), json!(true)),
            ],
            "bgp.neighbors[0].multihop_ttl: 1 must be 0 (meaning 255) or at least 2",
        );
        one(
            &[(&format!("{n}/hold_time"), json!("1s"))],
            "bgp.neighbors[0].hold_time: 1s must be 0 or at least 3s",
        );
        one(
            &[(&format!("{n}/keepalive_time"), json!("2m"))],
            "bgp.neighbors[0].keepalive_time: 2m must be less than hold_time 1m30s",
        );
        // The global keepalive is fine for the global hold, not for this peer's.
        one(
            &[
                (&format!("{n}/hold_time"), json!("9s")),
                ("/bgp/keepalive_time", json!("30s")),
            ],
            "bgp.neighbors[0].keepalive_time: 30s must be less than hold_time 9s",
        );
        one(
            &[(&format!("{n}/error_wait_min"), json!("50ms"))],
            "bgp.neighbors[0].error_wait_min: 50ms is less than 100ms (a refused peer would be redialled in a busy loop)",
        );
        one(
            &[(&format!("{n}/error_wait_max"), json!("2h"))],
            "bgp.neighbors[0].error_wait_max: 2h is more than 1h",
        );
        // The default cap (60s) is below this minimum.
        one(
            &[(&format!("{n}/error_wait_min"), json!("2m"))],
            "bgp.neighbors[0].error_wait_min: 2m must not be more than error_wait_max 1m",
        );
        one(
            &[
                (&format!("{n}/error_wait_min"), json!("5s")),
                (&format!("{n}/error_wait_max"), json!("2s")),
            ],
            "bgp.neighbors[0].error_wait_min: 5s must not be more than error_wait_max 2s",
        );
    }

    /// Duplicate names and prefixes name the first VIP that has them, in VIP
    /// order, however many repeat it; a prefix that failed to decode takes
    /// no part (found through sorted index lists, not maps: memory).
    #[test]
    fn duplicates_name_the_first_vip() {
        let mut v = base();
        let vip =
            |name: &str, prefix: Value| json!({"name": name, "prefix": prefix, "always": true});
        v["vips"] = json!([
            vip("b", json!("192.0.2.2/32")),
            vip("a", json!("192.0.2.1/32")),
            vip("b", json!("bad")),
            vip("a", json!("192.0.2.2/32")),
            vip("c", json!("bad")),
            vip("b", json!("192.0.2.1/32")),
        ]);
        assert_eq!(
            errors(&v),
            [
                "vips[2].prefix: \"bad\" is not a prefix such as 192.0.2.1/32",
                "vips[4].prefix: \"bad\" is not a prefix such as 192.0.2.1/32",
                "vips[2].name: duplicate VIP name \"b\" (also vips[0])",
                "vips[3].name: duplicate VIP name \"a\" (also vips[1])",
                "vips[3].prefix: duplicate prefix 192.0.2.2/32 (also vips[0].prefix)",
                "vips[5].name: duplicate VIP name \"b\" (also vips[0])",
                "vips[5].prefix: duplicate prefix 192.0.2.1/32 (also vips[1].prefix)",
            ]
        );
    }

    #[test]
    fn vip_rules() {
        let v = "/vips/0";
        one(
            &[(&format!("{v}/name"), json!("a/b"))],
            "vips[0].name: \"a/b\" may contain only letters, digits, '_', '-' and '.'",
        );
        one(
            &[(
                "/vips/1",
                json!({"name": "web", "prefix": "192.0.2.11/32", "always": true}),
            )],
            "vips[1].name: duplicate VIP name \"web\" (also vips[0])",
        );
        one(
            &[
                (
                    "/vips/1",
                    json!({"name": "net", "prefix": "192.0.2.0/24", "always": true}),
                ),
                (
                    "/vips/2",
                    json!({"name": "net2", "prefix": "192.0.2.0/24", "always": true}),
                ),
            ],
            "vips[2].prefix: duplicate prefix 192.0.2.0/24 (also vips[1].prefix)",
        );
        // Host bits name both readings instead of announcing the network.
        one(
            &[(
                "/vips/1",
                json!({"name": "net", "prefix": "10.10.1.5/24", "always": true}),
            )],
            "vips[1].prefix: \"10.10.1.5/24\" has host bits set: write 10.10.1.5/32 for the address or 10.10.1.0/24 for the network",
        );
        one(
            &[(
                "/vips/1",
                json!({"name": "net", "prefix": "2001:db8::1/64", "always": true}),
            )],
            "vips[1].prefix: \"2001:db8::1/64\" has host bits set: write 2001:db8::1/128 for the address or 2001:db8::/64 for the network",
        );
        one(
            &[(&format!("{v}/prefix"), Value::Null)],
            "vips[0].prefix: required",
        );
        one(
            &[(&format!("{v}/check"), Value::Null)],
            "vips[0]: exactly one of check or checks is required (or always: true)",
        );
        one(
            &[(&format!("{v}/checks"), json!([{"type": "ping"}]))],
            "vips[0].checks: set either check or checks, not both",
        );
        one(
            &[
                (&format!("{v}/check"), Value::Null),
                (&format!("{v}/checks"), json!([])),
            ],
            "vips[0].checks: at least one check is required",
        );
        one(
            &[(&format!("{v}/always"), json!(true))],
            "vips[0].check: not allowed with always: true (the VIP is announced without checks)",
        );
        one(
            &[(&format!("{v}/local_interface"), json!("lo"))],
            "vips[0].local_interface: has no effect unless require_local_address is true",
        );
        one(
            &[
                (
                    &format!("{v}/local_interface"),
                    json!("a-very-long-interface"),
                ),
                (&format!("{v}/require_local_address"), json!(true)),
            ],
            "vips[0].local_interface: \"a-very-long-interface\" is not an interface name",
        );
        one(
            &[(
                &format!("{v}/policy"),
                json!({"announce": {"as_path_prepend": 17}}),
            )],
            "vips[0].policy.announce.as_path_prepend: 17 is more than 16",
        );
        one(
            &[(
                &format!("{v}/policy"),
                json!({"lower_priority": {"as_path_prepend": 20}}),
            )],
            "vips[0].policy.lower_priority.as_path_prepend: 20 is more than 16",
        );
        one(&[(&format!("{v}/policy"), json!({"fail_action": "drain_then_withdraw", "drain_time": "0s"}))],
            "vips[0].policy.drain_time: 0s must be greater than 0 for fail_action drain_then_withdraw");
        one(
            &[(
                &format!("{v}/policy"),
                json!({"lower_priority_file": "drain"}),
            )],
            "vips[0].policy.lower_priority_file: \"drain\" must be an absolute path",
        );
        one(&[(&format!("{v}/policy"), json!({"announce": {"communities": ["65536:1"]}}))],
            "vips[0].policy.announce.communities[0]: \"65536:1\" is not a community \"asn:value\" with 16-bit parts");
        one(&[(&format!("{v}/policy"), json!({"lower_priority": {"large_communities": ["1:2"]}}))],
            "vips[0].policy.lower_priority.large_communities[0]: \"1:2\" is not a large community \"global:local1:local2\" with 32-bit parts");
    }

    fn checks(list: Value) -> [(&'static str, Value); 2] {
        [("/vips/0/check", Value::Null), ("/vips/0/checks", list)]
    }

    #[test]
    fn check_names_and_policy() {
        let tcp = json!({"type": "tcp", "tcp": {"port": 80}});
        one(&checks(json!([tcp, tcp])),
            "vips[0].checks[1].name: duplicate check name \"tcp\" (also vips[0].checks[0]); two checks of the same type need explicit names");
        one(
            &checks(json!([{"name": "web-1", "type": "tcp", "tcp": {"port": 80}}])),
            "vips[0].checks[0].name: \"web-1\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)",
        );
        one(
            &checks(json!([{"name": "any", "type": "tcp", "tcp": {"port": 80}}])),
            "vips[0].checks[0].name: \"any\" is reserved in checks_policy",
        );
        let mut p =
            checks(json!([{"name": "web", "type": "tcp", "tcp": {"port": 80}}, {"type": "ping"}]))
                .to_vec();
        p.push(("/vips/0/checks_policy", json!("web || pnig")));
        one(&p, "vips[0].checks_policy: column 8 of \"web || pnig\": unknown check \"pnig\" (checks: web, ping)");
        p.pop();
        p.push(("/vips/0/checks_policy", json!("web &&")));
        one(&p, "vips[0].checks_policy: column 7 of \"web &&\": expected a check name, all, any, !, or \"(\" but found end of policy");
    }

    #[test]
    fn common_check_rules() {
        let c = "/vips/0/check";
        one(
            &[(&format!("{c}/timeout"), json!("1s"))],
            "vips[0].check.timeout: 1s must be less than interval 1s",
        );
        one(
            &[(&format!("{c}/interval"), json!("0s"))],
            "vips[0].check.interval: 0s must be greater than 0",
        );
        one(
            &[(&format!("{c}/timeout"), json!("0s"))],
            "vips[0].check.timeout: 0s must be greater than 0",
        );
        one(
            &[(&format!("{c}/rise"), json!(0))],
            "vips[0].check.rise: 0 must be at least 1",
        );
        one(
            &[(&format!("{c}/fall"), json!(0))],
            "vips[0].check.fall: 0 must be at least 1",
        );
        one(
            &[(&format!("{c}/type"), Value::Null)],
            "vips[0].check.type: required (one of http, https, dns, ping, tcp, udp, grpc, exec)",
        );
        one(
            &[(&format!("{c}/http"), json!({}))],
            "vips[0].check.http: a http block does not apply to a tcp check",
        );
        // A check that is not an object is one error, not also "no checks".
        one(
            &checks(json!(["tcp"])),
            "vips[0].checks[0]: \"tcp\" is not an object",
        );
        one(&[("/vips/1", json!(7))], "vips[1]: 7 is not an object");
        one(
            &[("/bgp/neighbors/0", json!("bird"))],
            "bgp.neighbors[0]: \"bird\" is not an object",
        );
        // A bad interval is one error, not also a timeout comparison.
        one(&[(&format!("{c}/interval"), json!("1"))],
            "vips[0].check.interval: \"1\" is not a duration such as \"500ms\", \"2s\" or \"1m30s\"");
    }

    fn chk(c: Value) -> [(&'static str, Value); 1] {
        [("/vips/0/check", c)]
    }

    fn net(c: Value) -> [(&'static str, Value); 2] {
        [
            ("/vips/0/prefix", json!("192.0.2.0/24")),
            ("/vips/0/check", c),
        ]
    }

    #[test]
    fn host_needed_for_network_prefixes() {
        let why = "required because prefix 192.0.2.0/24 is not a single address (/32 or /128)";
        one(
            &net(json!({"type": "tcp", "tcp": {"port": 80}})),
            &format!("vips[0].check.tcp.host: {why}"),
        );
        one(
            &net(json!({"type": "udp", "udp": {"port": 53}})),
            &format!("vips[0].check.udp.host: {why}"),
        );
        one(
            &net(json!({"type": "grpc", "grpc": {"port": 50051}})),
            &format!("vips[0].check.grpc.host: {why}"),
        );
        one(
            &net(json!({"type": "http"})),
            &format!("vips[0].check.http.host: {why}"),
        );
        one(
            &net(json!({"type": "dns", "dns": {"names": ["a."]}})),
            &format!("vips[0].check.dns.resolver: {why}"),
        );
        one(
            &net(json!({"type": "ping"})),
            &format!("vips[0].check.ping.dst_ip: {why}"),
        );
        // A full URL names its host.
        one(
            &[
                ("/vips/0/prefix", json!("192.0.2.0/24")),
                (
                    "/vips/0/check",
                    json!({"type": "http", "http": {"url": "http://example.com/"}}),
                ),
                ("/schema", json!("x")),
            ],
            "schema: unsupported version \"x\" (expected \"v1\")",
        );
    }

    #[test]
    fn http_rules() {
        let h = |o: Value| chk(json!({"type": "http", "http": o}));
        let hs = |o: Value| chk(json!({"type": "https", "http": o}));
        one(&h(json!({"url": "ftp://x/"})),
            "vips[0].check.http.url: \"ftp://x/\" must be a path such as /healthz or an http:// or https:// URL");
        one(
            &hs(json!({"url": "http://x/"})),
            "vips[0].check.http.url: \"http://x/\" is http:// but the check type is https",
        );
        one(
            &h(json!({"port": 0})),
            "vips[0].check.http.port: 0 is not a port (1..65535)",
        );
        one(
            &h(json!({"response_codes": []})),
            "vips[0].check.http.response_codes: at least one code is required",
        );
        one(&h(json!({"response_codes": [99]})),
            "vips[0].check.http.response_codes[0]: 99 is not a status code (100..599) or range such as \"200-299\"");
        one(&h(json!({"response_regex": "("})),
            "vips[0].check.http.response_regex: \"(\" does not compile: found open group without closing ')'");
        let e = crate::check::jsonmatch::parse(".ready ==").unwrap_err();
        one(
            &h(json!({"response_jq": ".ready =="})),
            &format!("vips[0].check.http.response_jq: \".ready ==\": {e}"),
        );
        one(
            &h(json!({"method": "HEAD", "response_text": "ok"})),
            "vips[0].check.http.response_text: cannot be checked: a HEAD response has no body",
        );
        one(
            &h(json!({"method": "PUT"})),
            "vips[0].check.http.method: \"PUT\" is not one of GET, HEAD, POST",
        );
        one(
            &h(json!({"proxy": "socks5://p:1"})),
            "vips[0].check.http.proxy: \"socks5://p:1\" is not an http:// or https:// proxy URL",
        );
        one(&h(json!({"proxy": "http://p:3128", "url": "http://10.0.0.1/"})),
            "vips[0].check.http.proxy: needs url to be a full URL with a host name (the proxy connects by name)");
        one(
            &hs(json!({"tls_insecure": true, "tls_ca_cert": "/etc/ca.pem"})),
            "vips[0].check.http.tls_insecure: cannot be combined with tls_ca_cert",
        );
        one(
            &hs(json!({"tls_client_cert": "/c.pem"})),
            "vips[0].check.http.tls_client_key: required with tls_client_cert",
        );
        one(&h(json!({"tls_insecure": true})),
            "vips[0].check.http.tls_insecure: has no effect without TLS (type https or an https:// url)");
        one(
            &h(json!({"headers": {"X Bad": "1"}})),
            "vips[0].check.http.headers.X Bad: \"X Bad\" is not a valid header name",
        );
        one(
            &h(json!({"headers": {"X-Ok": "a\r\nInjected: 1"}})),
            "vips[0].check.http.headers.X-Ok: value contains a line break or NUL",
        );
        one(
            &h(json!({"host": ""})),
            "vips[0].check.http.host: must not be empty",
        );
        // type http with an https:// URL is how pathosd's examples spell TLS.
        one(
            &[
                (
                    "/vips/0/check",
                    json!({"type": "http", "http": {"url": "https://web.example.com/healthz", "tls_insecure": true}}),
                ),
                ("/schema", json!("x")),
            ],
            "schema: unsupported version \"x\" (expected \"v1\")",
        );
    }

    #[test]
    fn other_type_rules() {
        one(
            &chk(json!({"type": "dns"})),
            "vips[0].check.dns.names: at least one name is required",
        );
        one(
            &chk(json!({"type": "dns", "dns": {"names": [" "]}})),
            "vips[0].check.dns.names[0]: must not be empty",
        );
        one(&chk(json!({"type": "dns", "dns": {"names": ["a."], "query_type": "a"}})),
            "vips[0].check.dns.query_type: \"a\" is not one of A, AAAA, CNAME, MX, TXT, SRV, PTR, NS, SOA");
        one(
            &chk(json!({"type": "ping", "ping": {"count": 0}})),
            "vips[0].check.ping.count: 0 is not in 1..60",
        );
        one(
            &chk(json!({"type": "ping", "ping": {"count": 61}})),
            "vips[0].check.ping.count: 61 is not in 1..60",
        );
        one(
            &chk(json!({"type": "ping", "ping": {"max_loss_ratio": 1}})),
            "vips[0].check.ping.max_loss_ratio: 1 is not in [0, 1)",
        );
        one(&chk(json!({"type": "ping", "timeout": "800ms", "ping": {"count": 3, "interval": "400ms"}})),
            "vips[0].check.ping.interval: (count - 1) x interval = 800ms must be less than the check timeout 800ms");
        one(
            &chk(json!({"type": "ping", "ping": {"dst_ip": "::1", "src_ip": "127.0.0.1"}})),
            "vips[0].check.ping.src_ip: 127.0.0.1 and dst_ip ::1 are of different address families",
        );
        one(
            &chk(json!({"type": "tcp"})),
            "vips[0].check.tcp.port: required (1..65535)",
        );
        one(
            &chk(json!({"type": "udp", "udp": {"port": 53, "payload": "x", "payload_hex": "00"}})),
            "vips[0].check.udp.payload_hex: cannot be combined with payload",
        );
        one(
            &chk(json!({"type": "udp", "udp": {"port": 53, "payload_hex": "0g"}})),
            "vips[0].check.udp.payload_hex: \"0g\" is not hex (an even number of 0-9a-f digits)",
        );
        one(
            &chk(json!({"type": "grpc"})),
            "vips[0].check.grpc.port: required (1..65535)",
        );
        one(
            &chk(json!({"type": "grpc", "grpc": {"port": 1, "tls_insecure": true}})),
            "vips[0].check.grpc.tls_insecure: has no effect unless tls is true",
        );
        one(
            &chk(
                json!({"type": "grpc", "grpc": {"port": 1, "tls": true, "tls_insecure": true, "tls_ca_cert": "/ca"}}),
            ),
            "vips[0].check.grpc.tls_insecure: cannot be combined with tls_ca_cert",
        );
        one(&chk(json!({"type": "grpc", "grpc": {"port": 1, "ok_codes": ["OK", "NotFound", "not_found", "Nope"]}})),
            "vips[0].check.grpc.ok_codes[3]: \"Nope\" is not a gRPC status code such as OK or NOT_FOUND");
        one(
            &chk(json!({"type": "grpc", "grpc": {"port": 1, "method": "Ping"}})),
            "vips[0].check.grpc.method: \"Ping\" is not a method such as /pkg.Service/Method",
        );
        one(
            &chk(json!({"type": "exec"})),
            "vips[0].check.exec.command: required",
        );
        one(
            &chk(
                json!({"type": "exec", "exec": {"command": "/bin/true", "args": ["-x"]}, "extra": 1}),
            ),
            "vips[0].check.extra: unknown field",
        );
    }

    #[test]
    fn helpers() {
        assert_eq!(grpc_code("DeadlineExceeded"), Some(4));
        assert_eq!(grpc_code("deadline_exceeded"), Some(4));
        assert_eq!(grpc_code("Canceled"), Some(1));
        assert_eq!(grpc_code("OKAY"), None);
        assert_eq!(
            split_url("https://[2001:db8::1]:8443/x?y").unwrap(),
            UrlParts {
                https: true,
                host: "2001:db8::1".into(),
                port: Some(8443),
                path: "/x?y".into()
            }
        );
        assert_eq!(split_url("http://a?q").unwrap().path, "/?q");
        assert_eq!(split_url("http://a:0/"), None);
        assert_eq!(split_url("http://u:p@a/"), None);
        assert_eq!(split_url("http:///x"), None);
        assert_eq!(listen_addr("[::1]:80"), Some("[::1]:80".parse().unwrap()));
    }
}
