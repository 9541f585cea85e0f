//! Every semantic rule of the v1 config. Decoding (field.rs) already rejected
//! wrong types and unknown keys; this walks the decoded `Config` and adds one
//! error per broken rule, each at the path of the field to fix and naming the
//! bad value. A rule whose input failed to decode stays quiet, so one mistake
//! yields one error. Each rule returns the run value it checked, as it
//! reads it ("parse, don't validate", as ntpd-rs builds its typed
//! configuration while checking it), so nothing is parsed twice and a
//! config that passes is its [`RunConfig`]. The rules of `router` and `bgp`
//! are in `bgp`, the VIPs' in `vip`, a check's in `check` and `http`; the
//! count limits and the API's here.

use super::duration::Dur;
use super::field::{Errors, Quote};
use super::run::{ApiRun, RunConfig};
use super::schema::{Api, Config};
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

mod bgp;
mod check;
mod http;
#[cfg(test)]
mod tests;
mod values;
mod vip;

// One VIP's or one check's rules alone: run's test constructors.
#[cfg(any(test, feature = "test-support"))]
pub(crate) use check::check;
pub(crate) use values::{header, split_url};
#[cfg(any(test, feature = "test-support"))]
pub(crate) use vip::vip;

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

/// Checks every rule of `c`, consuming it; errors go to `errs` next to any
/// decode errors. The run config of `c`, built as its rules read it; it
/// runs only if `errs` is then empty (None: a rule failed, and said so in
/// `errs`). Each VIP moves into its `VipSpec`, so a 10,000-VIP config is
/// never held twice.
pub(crate) fn validate(c: Config, errs: &mut Errors) -> Option<RunConfig> {
    match c.schema.as_str() {
        "v1" => {}
        "" => errs.push("schema", "required (set \"v1\")"),
        other => errs.push_fmt(
            "schema",
            format_args!("unsupported version {} (expected \"v1\")", Quote(other)),
        ),
    }
    let router_id = bgp::router(&c, errs);
    let neighbors = bgp::bgp(&c, router_id, errs);
    let api = api(&c.api, errs);
    let otel = super::otel::validate(&c, errs);
    // Port -1: never listen (any other port outside 1..65535 broke its rule).
    let listen = u16::try_from(c.bgp.listen_port).ok().map(|port| {
        let ip = c
            .bgp
            .listen_address
            .or(c.router.local_address)
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        SocketAddr::new(ip, port)
    });
    let Config {
        router,
        bgp,
        logging,
        hooks,
        vips,
        ..
    } = c;
    if !(1..=10_000).contains(&hooks.queue) {
        errs.push("hooks.queue", "must be 1..10000");
    }
    if hooks.timeout.get().is_zero() {
        errs.push("hooks.timeout", "must be more than 0s");
    }
    let vips = vip::vips(vips, errs);
    Some(RunConfig {
        asn: router.asn,
        router_id: router_id?,
        listen,
        shutdown_drain: bgp.shutdown_drain.get(),
        graceful_shutdown: bgp.graceful_shutdown,
        neighbors: neighbors?,
        api: api?,
        logging,
        otel,
        hooks,
        vips: vips?,
    })
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

/// The rules of `api`; the endpoint and the ubus object as they run.
fn api(a: &Api, errs: &mut Errors) -> Option<ApiRun> {
    // Some(None): the endpoint is off.
    let listen = if a.listen.is_empty() {
        Some(None)
    } else {
        let addr = listen_addr(&a.listen);
        if addr.is_none() {
            errs.push_fmt(
                "api.listen",
                format_args!(
                    "{} is not host:port such as 127.0.0.1:59179 (empty disables the API)",
                    Quote(&a.listen)
                ),
            );
        }
        addr.map(Some)
    };
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
    let off = |d: Dur| (!d.is_zero()).then(|| d.get());
    Some(ApiRun {
        listen: listen?,
        read_header_timeout: off(a.read_header_timeout),
        read_timeout: off(a.read_timeout),
        write_timeout: off(a.write_timeout),
        idle_timeout: off(a.idle_timeout),
        token: a.token().map(str::to_string),
        ubus_socket: match a.ubus_socket.trim() {
            "" => None,
            s => Some(PathBuf::from(s)),
        },
    })
}

/// Parses `ip:port`, `[v6]:port` or `:port` (every address).
pub(crate) fn listen_addr(s: &str) -> Option<SocketAddr> {
    if let Some(port) = s.strip_prefix(':') {
        let port: u16 = port.parse().ok()?;
        return Some(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    s.parse().ok()
}
