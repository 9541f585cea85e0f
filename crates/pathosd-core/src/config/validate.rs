//! Every semantic rule of the v1 config. Decoding (field.rs) already rejected
//! wrong types and unknown keys; this walks the decoded `Config` and adds one
//! error per broken rule, each at the path of the field to fix and naming the
//! bad value. A rule whose input failed to decode stays quiet, so one mistake
//! yields one error. The rules of `router` and `bgp` are in `bgp`, a
//! check's in `check`; the count limits, the API's and the VIPs' here.

use super::dns_name::DnsName;
use super::duration::Dur;
use super::field::{join, Errors, Quote};
use super::policy_expr::{self, is_identifier, RESERVED};
use super::proxy::Proxy;
use super::schema::*;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};

mod bgp;
mod check;
#[cfg(test)]
mod tests;

pub(crate) use check::{grpc_code, header, hex_bytes, split_url};

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
    bgp::router(c, errs);
    bgp::bgp(c, errs);
    api(&c.api, errs);
    super::otel::validate(c, errs);
    vips(c, errs);
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
    // A VIP written as 0.0.0.0/0 is far more often a slip (a form's empty
    // address, a copied route) than a wish to draw every peer's traffic
    // here, and announcing it takes the peers' default route.
    if v.prefix.is_empty() && !v.allow_default_route {
        errs.push_fmt(
            join(p, "prefix"),
            format_args!(
                "{} is a default route: announced, it draws all of the peers' traffic to this router (set allow_default_route: true if that is meant)",
                v.prefix
            ),
        );
    }
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
        check::check(v, cp, c, errs);
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
    } else if pol.drain_until_flows_below > 0 && pol.drain_time.is_zero() {
        // drain_time bounds the wait for the flows: without it a drain
        // could wait for ever.
        errs.push(
            join(p, "drain_time"),
            "0s must be greater than 0 with drain_until_flows_below",
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
