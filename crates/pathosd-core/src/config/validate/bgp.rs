//! The rules of `router` and `bgp`: the router's identity and addresses,
//! the session timers, and each neighbor.

use super::*;

pub(super) fn router(c: &Config, errs: &mut Errors) {
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
pub(super) fn hold_time(path: &str, hold: Dur, errs: &mut Errors) {
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

pub(super) fn keepalive(path: &str, keepalive: Dur, hold: Dur, errs: &mut Errors) {
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

pub(super) fn bgp(c: &Config, errs: &mut Errors) {
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

pub(super) fn neighbor(c: &Config, n: &Neighbor, p: &str, errs: &mut Errors) {
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
    bfd(c, n, &join(p, "bfd"), errs);
}

/// Shortest BFD interval accepted: a router's CPU answers a peer every
/// 10 ms without strain; faster rates are for hardware.
const BFD_INTERVAL_MIN: Dur = Dur::ms(10);
/// Longest: detection beyond minutes is the hold timer's job.
const BFD_INTERVAL_MAX: Dur = Dur::secs(60);

/// A neighbor's `bfd` block: its intervals and multiplier always (one rule
/// each, used or not), and a source address once enabled.
fn bfd(c: &Config, n: &Neighbor, p: &str, errs: &mut Errors) {
    let b = &n.bfd;
    for (name, d) in [
        ("desired_minimum_tx_interval", b.desired_minimum_tx_interval),
        ("required_minimum_receive", b.required_minimum_receive),
    ] {
        if d < BFD_INTERVAL_MIN || d > BFD_INTERVAL_MAX {
            errs.push_fmt(
                join(p, name),
                format_args!("{d} is not within {BFD_INTERVAL_MIN}..{BFD_INTERVAL_MAX}"),
            );
        }
    }
    // RFC 5880 §6.8.1: bfd.DetectMult "MUST be a nonzero integer"; 1 would
    // declare the peer down on a single lost packet.
    if b.detection_multiplier < 2 {
        errs.push_fmt(
            join(p, "detection_multiplier"),
            format_args!(
                "{} must be at least 2 (one lost packet must not take the session down)",
                b.detection_multiplier
            ),
        );
    }
    if !b.enabled {
        return;
    }
    // The packets' source and the address the peer's arrive on: a wildcard
    // socket on BFD's port would take the port from a BIRD on this router.
    match n.local_address.or(c.router.local_address) {
        Some(l) if !l.is_unspecified() => {}
        _ => errs.push(
            join(p, "enabled"),
            "BFD needs a source address: set this neighbor's local_address or router.local_address",
        ),
    }
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
