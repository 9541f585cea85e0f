//! The UPDATE encoder used by the RIB-out: shapes [`PathAttrs`] into wire
//! attributes and packs prefixes that share them into as few UPDATEs as fit
//! in 4096 octets.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::update::{
    encode_prefix, mp_reach_head, prefix_wire_len, write_attr, write_update_body, FLAG_OPTIONAL,
};
use super::{
    afi_code, attr_type, finish_header, header_start, AsPath, MessageType, MpNextHop, PathAttr,
    Update, HEADER_LEN, MAX_MESSAGE_LEN, SAFI_UNICAST,
};
use crate::bgp::types::{Afi, PathAttrs, Prefix};

/// Withdrawn Routes Length + Total Path Attribute Length.
const UPDATE_FIXED: usize = HEADER_LEN + 4;
/// Flags, type and 2-octet length of an Extended Length attribute.
const EXT_ATTR_HEADER: usize = 4;

/// The wire attributes of `attrs` for routes of `afi`, in type-code order
/// (BIRD sends the same order). The next hop of an IPv6 route is not here:
/// it goes into MP_REACH_NLRI, which [`encode_updates`] places first.
/// `None` if the next hop cannot be expressed for the family.
pub fn wire_attrs(attrs: &PathAttrs, afi: Afi, four_octet_as: bool) -> Option<Vec<PathAttr>> {
    let mut v = vec![
        PathAttr::Origin(attrs.origin),
        PathAttr::AsPath(AsPath::sequence(&attrs.as_path)),
    ];
    if afi == Afi::Ipv4 {
        v.push(PathAttr::NextHop(ipv4_next_hop(attrs.next_hop)?));
    }
    if let Some(m) = attrs.med {
        v.push(PathAttr::Med(m));
    }
    if let Some(l) = attrs.local_pref {
        v.push(PathAttr::LocalPref(l));
    }
    if !attrs.communities.is_empty() {
        v.push(PathAttr::Communities(attrs.communities.clone()));
    }
    // RFC 6793 §4.2.2: towards an OLD speaker, "whenever the AS path
    // information contains one or more 4-octet (i.e., non-mappable) AS
    // numbers", AS_PATH carries AS_TRANS in their place and AS4_PATH the
    // real path.
    if !four_octet_as && attrs.as_path.iter().any(|a| *a > u32::from(u16::MAX)) {
        v.push(PathAttr::As4Path(AsPath::sequence(&attrs.as_path)));
    }
    if !attrs.large_communities.is_empty() {
        v.push(PathAttr::LargeCommunities(attrs.large_communities.clone()));
    }
    if let Some(asn) = attrs.otc {
        v.push(PathAttr::Otc(asn));
    }
    Some(v)
}

fn ipv4_next_hop(nh: IpAddr) -> Option<Ipv4Addr> {
    match nh {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(a) => a.to_ipv4_mapped(),
    }
}

/// An IPv4 next hop for IPv6 routes is sent IPv4-mapped, as BIRD does
/// without `next hop address`.
fn ipv6_next_hop(nh: IpAddr) -> Ipv6Addr {
    match nh {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// What [`encode_updates`] made: the UPDATE messages, and the routes it
/// could not encode with the reason. The codec does not log (it is a pure
/// layer, docs/architecture.md): the BGP driver logs each [`Skipped`],
/// naming the peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Updates {
    pub messages: Vec<Vec<u8>>,
    pub skipped: Vec<Skipped>,
}

/// Routes left out of the UPDATEs, all for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub prefixes: Vec<Prefix>,
    /// They were to be withdrawn (else announced).
    pub withdrawn: bool,
    pub reason: SkipReason,
}

/// Why routes could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// A next hop that cannot be expressed for the prefixes' family. Not
    /// produced since IPv4 prefixes with an IPv6 next hop go in
    /// MP_REACH_NLRI (RFC 8950); kept so that `wire_attrs` failing is
    /// reported rather than panicked on.
    NextHopFamily(IpAddr),
    /// The path attributes take this many octets and leave no room for a
    /// prefix in a 4096-octet UPDATE.
    AttributesTooLong(usize),
    /// An attribute or the message outgrew its length field. Unreachable by
    /// construction (every body is sized to fit); reported, not panicked on.
    Oversized,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::NextHopFamily(nh) => {
                write!(f, "next hop {nh} cannot be sent with IPv4 prefixes")
            }
            SkipReason::AttributesTooLong(n) => write!(f, "path attributes too long ({n} octets)"),
            SkipReason::Oversized => write!(
                f,
                "internal error, an attribute or the UPDATE exceeds its length (at most {MAX_MESSAGE_LEN} octets)"
            ),
        }
    }
}

/// "3 routes to announce skipped (192.0.2.0/24, ...): <reason>", for the log.
impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.withdrawn {
            "withdraw"
        } else {
            "announce"
        };
        write!(f, "{} routes to {verb} skipped (", self.prefixes.len())?;
        for (i, p) in self.prefixes.iter().take(3).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{p}")?;
        }
        if self.prefixes.len() > 3 {
            f.write_str(", ...")?;
        }
        write!(f, "): {}", self.reason)
    }
}

impl Updates {
    fn skip(&mut self, prefixes: &[Prefix], withdrawn: bool, reason: SkipReason) {
        self.skipped.push(Skipped {
            prefixes: prefixes.to_vec(),
            withdrawn,
            reason,
        });
    }
}

/// Encodes withdrawals and announcements as complete UPDATE messages.
///
/// IPv4 prefixes use the classic Withdrawn Routes and NLRI fields (but see
/// below), IPv6
/// prefixes MP_UNREACH_NLRI / MP_REACH_NLRI (RFC 4760). Routes with equal
/// `PathAttrs` share messages, filled up to 4096 octets; groups keep the
/// order in which their first route appears, prefixes their input order.
/// Withdrawals come first. IPv4 prefixes with an IPv6 next hop (RFC 8950)
/// go in MP_REACH_NLRI too. A route that cannot be encoded is skipped and
/// returned in [`Updates::skipped`] for the caller to report.
pub fn encode_updates<A: Borrow<PathAttrs>>(
    routes: &[(Prefix, A)],
    withdrawn: &[Prefix],
    four_octet_as: bool,
) -> Updates {
    let mut out = Updates::default();
    let (w4, w6): (Vec<Prefix>, Vec<Prefix>) = withdrawn.iter().partition(|p| p.afi() == Afi::Ipv4);
    pack_withdrawn_v4(&w4, &mut out);
    pack_withdrawn_v6(&w6, &mut out);

    let mut groups: Vec<(&PathAttrs, Vec<Prefix>, Vec<Prefix>)> = Vec::new();
    let mut index: HashMap<&PathAttrs, usize> = HashMap::new();
    // Routes of one state share one `Arc<PathAttrs>` (the RIB-out's
    // shaping): a run of the same attributes skips the hash lookup.
    let mut last: Option<(&PathAttrs, usize)> = None;
    for (p, a) in routes {
        let a = a.borrow();
        let i = match last {
            Some((l, i)) if std::ptr::eq(l, a) => i,
            _ => *index.entry(a).or_insert_with(|| {
                groups.push((a, Vec::new(), Vec::new()));
                groups.len() - 1
            }),
        };
        last = Some((a, i));
        match p.afi() {
            Afi::Ipv4 => groups[i].1.push(*p),
            Afi::Ipv6 => groups[i].2.push(*p),
        }
    }
    for (attrs, v4, v6) in groups {
        if !v4.is_empty() {
            pack_reach_v4(attrs, &v4, four_octet_as, &mut out);
        }
        if !v6.is_empty() {
            pack_reach_mp(Afi::Ipv6, attrs, &v6, four_octet_as, &mut out);
        }
    }
    out
}

/// Splits `prefixes` into runs whose encoding fits `room` octets each.
fn chunks(prefixes: &[Prefix], room: usize) -> Vec<&[Prefix]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, p) in prefixes.iter().enumerate() {
        let n = prefix_wire_len(p);
        if used + n > room && i > start {
            out.push(&prefixes[start..i]);
            start = i;
            used = 0;
        }
        used += n;
    }
    if start < prefixes.len() {
        out.push(&prefixes[start..]);
    }
    out
}

/// The UPDATE of the encoded `withdrawn` routes, `attrs` and `nlri`,
/// carrying `ps` (withdrawn ones if `withdrawal`); if it cannot be framed,
/// `ps` are reported skipped.
fn push_update(
    withdrawn: &[u8],
    attrs: &[u8],
    nlri: &[u8],
    ps: &[Prefix],
    withdrawal: bool,
    out: &mut Updates,
) {
    let mut m = header_start();
    let framed = write_update_body(withdrawn, attrs, nlri, &mut m)
        .and_then(|()| finish_header(m, MessageType::Update));
    match framed {
        Some(m) => out.messages.push(m),
        // Unreachable by construction: every message is sized to fit.
        None => out.skip(ps, withdrawal, SkipReason::Oversized),
    }
}

fn prefix_bytes(ps: &[Prefix]) -> Vec<u8> {
    let mut v = Vec::new();
    for p in ps {
        encode_prefix(p, &mut v);
    }
    v
}

/// An MP_REACH_NLRI or MP_UNREACH_NLRI attribute holding `value`, always
/// with the Extended Length bit (as BIRD sends them); None if too long.
fn mp_attr(type_code: u8, value: &[u8]) -> Option<Vec<u8>> {
    let mut attr = Vec::new();
    write_attr(FLAG_OPTIONAL, type_code, value, true, &mut attr)?;
    Some(attr)
}

fn pack_withdrawn_v4(ps: &[Prefix], out: &mut Updates) {
    for chunk in chunks(ps, MAX_MESSAGE_LEN - UPDATE_FIXED) {
        push_update(&prefix_bytes(chunk), &[], &[], chunk, true, out);
    }
}

fn pack_withdrawn_v6(ps: &[Prefix], out: &mut Updates) {
    // MP_UNREACH_NLRI: extended header, AFI, SAFI, withdrawn routes.
    let room = MAX_MESSAGE_LEN - UPDATE_FIXED - EXT_ATTR_HEADER - 3;
    for chunk in chunks(ps, room) {
        let mut value = afi_code(Afi::Ipv6).to_be_bytes().to_vec();
        value.push(SAFI_UNICAST);
        value.extend_from_slice(&prefix_bytes(chunk));
        match mp_attr(attr_type::MP_UNREACH_NLRI, &value) {
            Some(attr) => push_update(&[], &attr, &[], chunk, true, out),
            None => out.skip(chunk, true, SkipReason::Oversized),
        }
    }
}

fn encode_attrs(attrs: &[PathAttr], four_octet_as: bool) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    for a in attrs {
        a.encode(four_octet_as, &mut v)?;
    }
    Some(v)
}

fn pack_reach_v4(attrs: &PathAttrs, ps: &[Prefix], four_octet_as: bool, out: &mut Updates) {
    if let IpAddr::V6(a) = attrs.next_hop {
        if a.to_ipv4_mapped().is_none() {
            // RFC 8950: IPv4 NLRI with an IPv6 next hop go in MP_REACH_NLRI
            // (AFI 1, SAFI 1); the RIB-out gives IPv4 routes such a next
            // hop only on a session that negotiated it.
            return pack_reach_mp(Afi::Ipv4, attrs, ps, four_octet_as, out);
        }
    }
    let Some(wire) = wire_attrs(attrs, Afi::Ipv4, four_octet_as) else {
        out.skip(ps, false, SkipReason::NextHopFamily(attrs.next_hop));
        return;
    };
    let Some(a) = encode_attrs(&wire, four_octet_as) else {
        out.skip(ps, false, SkipReason::Oversized);
        return;
    };
    let Some(room) = MAX_MESSAGE_LEN
        .checked_sub(UPDATE_FIXED + a.len())
        .filter(|r| *r >= 5)
    else {
        out.skip(ps, false, SkipReason::AttributesTooLong(a.len()));
        return;
    };
    for chunk in chunks(ps, room) {
        push_update(&[], &a, &prefix_bytes(chunk), chunk, false, out);
    }
}

/// Routes of `afi` in MP_REACH_NLRI with an IPv6 next hop: IPv6 routes,
/// and IPv4 ones with an IPv6 next hop (RFC 8950).
fn pack_reach_mp(
    afi: Afi,
    attrs: &PathAttrs,
    ps: &[Prefix],
    four_octet_as: bool,
    out: &mut Updates,
) {
    // Every next hop fits here (an IPv4 one goes IPv4-mapped), so
    // wire_attrs does not fail; were it to, the routes are reported. The
    // attributes are those of IPv6 routes: no NEXT_HOP.
    let Some(wire) = wire_attrs(attrs, Afi::Ipv6, four_octet_as) else {
        out.skip(ps, false, SkipReason::NextHopFamily(attrs.next_hop));
        return;
    };
    let Some(a) = encode_attrs(&wire, four_octet_as) else {
        out.skip(ps, false, SkipReason::Oversized);
        return;
    };
    let nh = MpNextHop::Ipv6 {
        global: ipv6_next_hop(attrs.next_hop),
        link_local: None,
    };
    let mut head = Vec::new();
    mp_reach_head(afi, &nh, &mut head);
    let fixed = UPDATE_FIXED + EXT_ATTR_HEADER + head.len() + a.len();
    let Some(room) = MAX_MESSAGE_LEN.checked_sub(fixed).filter(|r| *r >= 17) else {
        out.skip(ps, false, SkipReason::AttributesTooLong(a.len()));
        return;
    };
    for chunk in chunks(ps, room) {
        // RFC 7606 §5.1: "the MP_REACH_NLRI or MP_UNREACH_NLRI attribute (if
        // present) SHALL be encoded as the very first path attribute in an
        // UPDATE message", so a receiver can find the NLRI even when a later
        // attribute is malformed.
        let mut value = head.clone();
        value.extend_from_slice(&prefix_bytes(chunk));
        match mp_attr(attr_type::MP_REACH_NLRI, &value) {
            Some(mut all) => {
                all.extend_from_slice(&a);
                push_update(&[], &all, &[], chunk, false, out);
            }
            None => out.skip(chunk, false, SkipReason::Oversized),
        }
    }
}

/// The End-of-RIB marker for `afi` (RFC 4724 §2).
pub fn encode_end_of_rib(afi: Afi) -> Vec<u8> {
    let mut body = Vec::new();
    // Only an MP_UNREACH_NLRI for IPv6: 3 octets, always fits.
    if Update::end_of_rib(afi)
        .encode_body(false, &mut body)
        .is_none()
    {
        body = vec![0, 0, 0, 0];
    }
    let mut m = header_start();
    m.extend_from_slice(&body);
    finish_header(m, MessageType::Update).unwrap_or_default()
}
