//! The rules of `router` and `bgp`: the router's identity and addresses,
//! the session timers, and each neighbor, each neighbor's rules building
//! its session as it runs.

use super::super::duration::Dur;
use super::super::field::{join, Errors, Quote};
use super::super::run::{BfdRun, NeighborRun};
use super::super::schema::{Config, Neighbor};
use super::{
    object_name, too_many, ERROR_WAIT_MAX, ERROR_WAIT_MIN, HOLD_MAX_SECS, MAX_NEIGHBORS,
    MD5_KEY_MAX, SHUTDOWN_DRAIN_MAX,
};
use crate::bgp::fsm::default_send_hold_time;
use crate::bgp::settings::PeerSettings;
use crate::bgp::types::Afi;
use std::net::{IpAddr, Ipv4Addr};
use std::num::{NonZeroU32, NonZeroU8};
use std::time::Duration;

/// The rules of `router`; its BGP identifier.
pub(super) fn router(c: &Config, errs: &mut Errors) -> Option<Ipv4Addr> {
    let r = &c.router;
    if r.asn == 0 {
        errs.push("router.asn", "required and must be > 0");
    }
    let id = match r.router_id {
        None => {
            errs.push("router.router_id", "required (an IPv4 address)");
            None
        }
        Some(IpAddr::V6(a)) => {
            errs.push_fmt(
                "router.router_id",
                format_args!("{a} is not an IPv4 address (the BGP identifier is 32 bits)"),
            );
            None
        }
        Some(IpAddr::V4(a)) if a.is_unspecified() => {
            errs.push(
                "router.router_id",
                "0.0.0.0 is not a valid BGP identifier (RFC 6286: non-zero)",
            );
            None
        }
        Some(IpAddr::V4(a)) => Some(a),
    };
    if let Some(IpAddr::V4(a)) = r.local_address_ipv6 {
        errs.push_fmt(
            "router.local_address_ipv6",
            format_args!("{a} is not an IPv6 address"),
        );
    }
    if r.local_address_ipv6.is_none() {
        // A prefix that failed to decode holds an IPv4 placeholder.
        // The first IPv6 prefix, by VIP and item.
        let v6 = c.vips.iter().enumerate().find_map(|(i, v)| {
            let j = (v.prefix.first.afi() == Afi::Ipv6)
                .then_some(0)
                .or_else(|| {
                    v.prefix
                        .more
                        .iter()
                        .position(|x| x.afi() == Afi::Ipv6)
                        .map(|j| j + 1)
                })?;
            Some((i, v, j))
        });
        if let Some((i, v, j)) = v6 {
            let x = if j == 0 {
                v.prefix.first
            } else {
                v.prefix.more[j - 1]
            };
            let at = if v.prefix.more.is_empty() {
                format!("vips[{i}].prefix")
            } else {
                format!("vips[{i}].prefix[{j}]")
            };
            errs.push_fmt(
                "router.local_address_ipv6",
                format_args!("required because {at} {x} is IPv6 (it is the IPv6 next hop)"),
            );
        }
    }
    id
}

/// Hold and keepalive rules, shared by bgp and each neighbor's overrides.
/// The hold time in seconds, as the OPEN message carries it.
pub(super) fn hold_time(path: &str, hold: Dur, errs: &mut Errors) -> Option<u16> {
    let secs = u16::try_from(hold.get().as_secs());
    if !hold.is_zero() && hold < Dur::secs(3) {
        errs.push_fmt(path, format_args!("{hold} must be 0 or at least 3s"));
    } else if hold > Dur::secs(HOLD_MAX_SECS) || secs.is_err() {
        errs.push_fmt(path, format_args!("{hold} is more than {HOLD_MAX_SECS}s"));
    } else if hold.get().subsec_nanos() != 0 {
        // RFC 4271 §4.2: the OPEN message carries the Hold Time in seconds.
        errs.push_fmt(
            path,
            format_args!("{hold} is not a whole number of seconds"),
        );
    } else {
        return secs.ok();
    }
    None
}

/// The keepalive time in whole seconds (0: none). None also when `hold`
/// broke its own rule (reported there).
pub(super) fn keepalive(path: &str, keepalive: Dur, hold: Dur, errs: &mut Errors) -> Option<u16> {
    if keepalive.is_zero() {
        return Some(0);
    }
    if hold.is_zero() {
        errs.push_fmt(
            path,
            format_args!("{keepalive} must be 0 when hold_time is 0 (no keepalives)"),
        );
        return None;
    }
    if keepalive >= hold {
        errs.push_fmt(
            path,
            format_args!("{keepalive} must be less than hold_time {hold}"),
        );
        return None;
    }
    u16::try_from(keepalive.get().as_secs()).ok()
}

/// What every neighbor's session takes from `router` and `bgp`: None
/// where their own rules failed.
struct Shared {
    router_id: Option<Ipv4Addr>,
    /// Whether any VIP is IPv6 or `router.local_address_ipv6` is set.
    mp_ipv6: bool,
    /// `bgp.hold_time` and `bgp.keepalive_time` in seconds.
    hold: Option<u16>,
    keepalive: Option<u16>,
}

/// The rules of `bgp`; each neighbor's session.
pub(super) fn bgp(
    c: &Config,
    router_id: Option<Ipv4Addr>,
    errs: &mut Errors,
) -> Option<Vec<NeighborRun>> {
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
    let hold = hold_time("bgp.hold_time", b.hold_time, errs);
    let keepalive = if errs.has("bgp.hold_time") {
        None
    } else {
        keepalive("bgp.keepalive_time", b.keepalive_time, b.hold_time, errs)
    };
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
        return None;
    }
    let shared = Shared {
        router_id,
        mp_ipv6: c.vips.iter().any(|v| {
            v.prefix.first.afi() == Afi::Ipv6 || v.prefix.more.iter().any(|x| x.afi() == Afi::Ipv6)
        }) || c.router.local_address_ipv6.is_some(),
        hold,
        keepalive,
    };
    // Duplicates are found by a search of the neighbors before this one:
    // at most MAX_NEIGHBORS (256), so at most ≈ 33,000 comparisons, and no
    // B-tree compiled for `&str` and `IpAddr` keys just for this.
    let mut runs = Vec::with_capacity(b.neighbors.len());
    for (i, n) in b.neighbors.iter().enumerate() {
        let before = b.neighbors.get(..i).unwrap_or_default();
        let p = format!("bgp.neighbors[{i}]");
        runs.push(neighbor(c, n, &p, &shared, errs));
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
    runs.into_iter().collect()
}

/// Neighbor `n` at `p`: its rules, and its session as it runs.
fn neighbor(
    c: &Config,
    n: &Neighbor,
    p: &str,
    shared: &Shared,
    errs: &mut Errors,
) -> Option<NeighborRun> {
    object_name(&join(p, "name"), &n.name, errs);
    let address = match n.address {
        None => {
            errs.push(join(p, "address"), "required");
            None
        }
        Some(a) if a.is_unspecified() || a.is_multicast() => {
            errs.push_fmt(
                join(p, "address"),
                format_args!("{a} is not a unicast address"),
            );
            None
        }
        Some(a) => Some(a),
    };
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
    roles(c, n, p, errs);
    let timers = timers(c, n, p, shared, errs);
    let send_hold = send_hold_time(n, p, timers.map(|t| t.0), errs);
    error_wait(n, p, errs);
    let bfd = bfd(c, n, &join(p, "bfd"), errs);
    let mut settings =
        PeerSettings::new(c, n, address?, timers?, shared.router_id?, shared.mp_ipv6);
    settings.fsm.send_hold_time = send_hold?;
    Some(NeighborRun {
        settings,
        required: n.required,
        bfd: bfd?,
    })
}

/// A neighbor's hold and keepalive times in seconds: its overrides, else
/// `bgp`'s. The global pair was checked already; report here only what
/// this neighbor's overrides broke.
fn timers(
    c: &Config,
    n: &Neighbor,
    p: &str,
    shared: &Shared,
    errs: &mut Errors,
) -> Option<(u16, u16)> {
    let own_hold = n
        .hold_time
        .map(|h| hold_time(&join(p, "hold_time"), h, errs));
    let overrides = n.hold_time.is_some() || n.keepalive_time.is_some();
    let keepalive_secs = if !overrides {
        shared.keepalive
    } else if errs.has(&join(p, "hold_time")) {
        None
    } else {
        let hold = n.hold_time.unwrap_or(c.bgp.hold_time);
        let ka = n.keepalive_time.unwrap_or(c.bgp.keepalive_time);
        keepalive(&join(p, "keepalive_time"), ka, hold, errs)
    };
    Some((own_hold.unwrap_or(shared.hold)?, keepalive_secs?))
}

/// RFC 9234 roles: between ASes only ("the eBGP speaker", §4.1; an iBGP
/// session has no business relationship to agree on), and strict mode
/// only with a role to check.
fn roles(c: &Config, n: &Neighbor, p: &str, errs: &mut Errors) {
    if let Some(r) = n.role {
        if n.peer_asn == c.router.asn {
            errs.push_fmt(
                join(p, "role"),
                format_args!(
                    "{r} is for eBGP sessions only (RFC 9234); peer_asn is the router's own AS"
                ),
            );
        }
    } else if n.require_role {
        errs.push(join(p, "require_role"), "needs role");
    }
}

/// The neighbor's RFC 9687 SendHoldTime: its `send_hold_time`, else the
/// RFC's default for its hold time (`hold`, seconds; None when that broke
/// its own rule); zero disables it ("An implementation MAY make it
/// configurable", RFC 9687 §3.4).
fn send_hold_time(n: &Neighbor, p: &str, hold: Option<u16>, errs: &mut Errors) -> Option<Duration> {
    let hold = hold?;
    let Some(d) = n.send_hold_time else {
        return Some(default_send_hold_time(hold));
    };
    // RFC 9687 §3.4: "SendHoldTime MUST be greater than the value of
    // HoldTime."
    let hold = Dur::secs(u64::from(hold));
    if !d.is_zero() && d <= hold {
        errs.push_fmt(
            join(p, "send_hold_time"),
            format_args!("{d} must be 0 (off) or more than hold_time {hold}"),
        );
        return None;
    }
    Some(d.get())
}

/// Shortest BFD interval accepted: a router's CPU answers a peer every
/// 10 ms without strain; faster rates are for hardware.
const BFD_INTERVAL_MIN: Dur = Dur::ms(10);
/// Longest: detection beyond minutes is the hold timer's job.
const BFD_INTERVAL_MAX: Dur = Dur::secs(60);

/// A BFD interval at `path` in microseconds (RFC 5880 §4.1).
fn bfd_interval(path: String, d: Dur, errs: &mut Errors) -> Option<NonZeroU32> {
    let us = u32::try_from(d.get().as_micros())
        .ok()
        .and_then(NonZeroU32::new);
    match us {
        Some(us) if (BFD_INTERVAL_MIN..=BFD_INTERVAL_MAX).contains(&d) => Some(us),
        _ => {
            errs.push_fmt(
                path,
                format_args!("{d} is not within {BFD_INTERVAL_MIN}..{BFD_INTERVAL_MAX}"),
            );
            None
        }
    }
}

/// A neighbor's `bfd` block: its intervals and multiplier always (one rule
/// each, used or not), and a source address once enabled. Its session
/// (None inside when BFD is off); None when a rule failed.
#[allow(clippy::option_option)]
fn bfd(c: &Config, n: &Neighbor, p: &str, errs: &mut Errors) -> Option<Option<BfdRun>> {
    let b = &n.bfd;
    let tx = bfd_interval(
        join(p, "desired_minimum_tx_interval"),
        b.desired_minimum_tx_interval,
        errs,
    );
    let rx = bfd_interval(
        join(p, "required_minimum_receive"),
        b.required_minimum_receive,
        errs,
    );
    // RFC 5880 §6.8.1: bfd.DetectMult "MUST be a nonzero integer"; 1 would
    // declare the peer down on a single lost packet.
    let mult = NonZeroU8::new(b.detection_multiplier).filter(|m| m.get() >= 2);
    if mult.is_none() {
        errs.push_fmt(
            join(p, "detection_multiplier"),
            format_args!(
                "{} must be at least 2 (one lost packet must not take the session down)",
                b.detection_multiplier
            ),
        );
    }
    if !b.enabled {
        return Some(None);
    }
    // The packets' source and the address the peer's arrive on: a wildcard
    // socket on BFD's port would take the port from a BIRD on this router.
    let local = match n.local_address.or(c.router.local_address) {
        Some(l) if !l.is_unspecified() => Some(l),
        _ => {
            errs.push(
                join(p, "enabled"),
                "BFD needs a source address: set this neighbor's local_address or router.local_address",
            );
            None
        }
    };
    // The neighbor's address is the neighbor rule's (reported there).
    let peer = n.address?;
    // BIRD runs a `multihop` neighbor's BFD session as multihop, and a
    // neighbor on this router's loopback needs `multihop` at BIRD. A
    // multihop peer's packets may have crossed routers (BIRD sends them
    // with its default TTL, 64): any TTL is taken, the source address
    // must still be the peer's.
    let multihop = b
        .multihop
        .unwrap_or(n.enable_multihop || peer.is_loopback());
    Some(Some(BfdRun {
        peer,
        local: local?,
        hops: if multihop {
            crate::bfd::Hops::Multi { min_ttl: 1 }
        } else {
            crate::bfd::Hops::Single
        },
        timers: crate::bfd::session::Timers {
            desired_min_tx: tx?,
            required_min_rx: rx?.get(),
            detect_mult: mult?,
        },
    }))
}

/// The damping bounds: each within ERROR_WAIT_MIN..=ERROR_WAIT_MAX, and the
/// minimum not above the maximum.
pub(super) fn error_wait(n: &Neighbor, p: &str, errs: &mut Errors) {
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
