//! UPDATE (RFC 4271 §4.3) with the path attributes pathosd knows, the
//! multiprotocol attributes of RFC 4760 for IPv6 unicast, and the revised
//! error handling of RFC 7606.
//!
//! ```text
//! +-----------------------------------------------------+
//! |   Withdrawn Routes Length (2 octets)                |
//! +-----------------------------------------------------+
//! |   Withdrawn Routes (variable)                       |
//! +-----------------------------------------------------+
//! |   Total Path Attribute Length (2 octets)            |
//! +-----------------------------------------------------+
//! |   Path Attributes (variable)                        |
//! +-----------------------------------------------------+
//! |   Network Layer Reachability Information (variable) |
//! +-----------------------------------------------------+
//! ```
//!
//! pathosd imports no routes, but a received UPDATE is still validated so a
//! broken peer is noticed: errors RFC 7606 lets a session survive are listed
//! in [`Update::errors`]; the rest make [`super::decode`] fail with the
//! NOTIFICATION to send.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::parse::{bytes, u16_, u8_};
use super::{
    afi_code, afi_from_code, HeaderError, Notification, UpdateError, AS_TRANS, SAFI_UNICAST,
};
use crate::bgp::types::{Afi, Community, LargeCommunity, Origin, Prefix};

/// Path attribute type codes (IANA "BGP Path Attributes").
pub mod attr_type {
    pub const ORIGIN: u8 = 1;
    pub const AS_PATH: u8 = 2;
    pub const NEXT_HOP: u8 = 3;
    pub(crate) const MULTI_EXIT_DISC: u8 = 4;
    pub const LOCAL_PREF: u8 = 5;
    pub const ATOMIC_AGGREGATE: u8 = 6;
    pub const AGGREGATOR: u8 = 7;
    pub const COMMUNITIES: u8 = 8;
    pub(crate) const ORIGINATOR_ID: u8 = 9;
    pub(crate) const CLUSTER_LIST: u8 = 10;
    pub const MP_REACH_NLRI: u8 = 14;
    pub const MP_UNREACH_NLRI: u8 = 15;
    pub const AS4_PATH: u8 = 17;
    pub(crate) const AS4_AGGREGATOR: u8 = 18;
    pub const LARGE_COMMUNITIES: u8 = 32;
}

use attr_type as at;

// Attribute Flags (RFC 4271 §4.3).
pub(crate) const FLAG_OPTIONAL: u8 = 0x80;
pub(crate) const FLAG_TRANSITIVE: u8 = 0x40;
pub(crate) const FLAG_EXTENDED: u8 = 0x10;

/// The Optional and Transitive bits a known attribute must carry (RFC 4271
/// §5 and each attribute's RFC); `None` for attributes we pass through.
fn expected_flags(type_code: u8) -> Option<u8> {
    let wk = FLAG_TRANSITIVE;
    let opt_trans = FLAG_OPTIONAL | FLAG_TRANSITIVE;
    let opt_non_trans = FLAG_OPTIONAL;
    Some(match type_code {
        at::ORIGIN | at::AS_PATH | at::NEXT_HOP | at::LOCAL_PREF | at::ATOMIC_AGGREGATE => wk,
        at::MULTI_EXIT_DISC | at::MP_REACH_NLRI | at::MP_UNREACH_NLRI => opt_non_trans,
        at::AGGREGATOR
        | at::COMMUNITIES
        | at::AS4_PATH
        | at::AS4_AGGREGATOR
        | at::LARGE_COMMUNITIES => opt_trans,
        _ => return None,
    })
}

fn attr_name(type_code: u8) -> &'static str {
    match type_code {
        at::ORIGIN => "ORIGIN",
        at::AS_PATH => "AS_PATH",
        at::NEXT_HOP => "NEXT_HOP",
        at::MULTI_EXIT_DISC => "MULTI_EXIT_DISC",
        at::LOCAL_PREF => "LOCAL_PREF",
        at::ATOMIC_AGGREGATE => "ATOMIC_AGGREGATE",
        at::AGGREGATOR => "AGGREGATOR",
        at::COMMUNITIES => "COMMUNITIES",
        at::ORIGINATOR_ID => "ORIGINATOR_ID",
        at::CLUSTER_LIST => "CLUSTER_LIST",
        at::MP_REACH_NLRI => "MP_REACH_NLRI",
        at::MP_UNREACH_NLRI => "MP_UNREACH_NLRI",
        at::AS4_PATH => "AS4_PATH",
        at::AS4_AGGREGATOR => "AS4_AGGREGATOR",
        at::LARGE_COMMUNITIES => "LARGE_COMMUNITIES",
        _ => "attribute",
    }
}

/// AS_PATH segment types (RFC 4271 §4.3; confederation ones RFC 5065 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SegmentType {
    Set = 1,
    Sequence = 2,
    ConfedSequence = 3,
    ConfedSet = 4,
}

impl SegmentType {
    fn from_u8(v: u8) -> Option<SegmentType> {
        Some(match v {
            1 => SegmentType::Set,
            2 => SegmentType::Sequence,
            3 => SegmentType::ConfedSequence,
            4 => SegmentType::ConfedSet,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AsSegment {
    pub kind: SegmentType,
    /// 1..=255 AS numbers.
    pub asns: Vec<u32>,
}

/// AS_PATH or AS4_PATH contents.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AsPath {
    pub segments: Vec<AsSegment>,
}

impl AsPath {
    /// One AS_SEQUENCE, split into segments of at most 255 ASes because the
    /// segment length is one octet (RFC 4271 §4.3; RFC 4271 §9.2.2.2 on
    /// prepending into a new segment when the first one is full).
    pub fn sequence(asns: &[u32]) -> AsPath {
        AsPath {
            segments: asns
                .chunks(255)
                .map(|c| AsSegment {
                    kind: SegmentType::Sequence,
                    asns: c.to_vec(),
                })
                .collect(),
        }
    }

    /// All ASes in order, segment boundaries removed.
    pub fn asns(&self) -> Vec<u32> {
        self.segments
            .iter()
            .flat_map(|s| s.asns.iter().copied())
            .collect()
    }

    fn encode(&self, four_octet: bool, out: &mut Vec<u8>) -> Option<()> {
        for s in &self.segments {
            out.push(s.kind as u8);
            out.push(u8::try_from(s.asns.len()).ok()?);
            for a in &s.asns {
                if four_octet {
                    out.extend_from_slice(&a.to_be_bytes());
                } else {
                    // RFC 6793 §4.2.2: a four-octet AS goes into AS_PATH as AS_TRANS.
                    out.extend_from_slice(&u16::try_from(*a).unwrap_or(AS_TRANS).to_be_bytes());
                }
            }
        }
        Some(())
    }

    /// `None` if malformed: unknown segment type, empty segment or a
    /// segment running past the attribute (RFC 7606 §7.2).
    fn decode(mut i: &[u8], four_octet: bool) -> Option<AsPath> {
        let width = if four_octet { 4 } else { 2 };
        let mut segments = Vec::new();
        while !i.is_empty() {
            let (&ty, rest) = i.split_first()?;
            let (&count, rest) = rest.split_first()?;
            let kind = SegmentType::from_u8(ty)?;
            if count == 0 {
                return None;
            }
            let n = usize::from(count).checked_mul(width)?;
            let body = rest.get(..n)?;
            let asns = body
                .chunks_exact(width)
                .map(|c| match *c {
                    [a, b] => u32::from(u16::from_be_bytes([a, b])),
                    [a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
                    _ => 0,
                })
                .collect();
            segments.push(AsSegment { kind, asns });
            i = &rest[n..];
        }
        Some(AsPath { segments })
    }
}

/// Next hop of MP_REACH_NLRI (RFC 4760 §3; RFC 2545 §3 for IPv6: a global
/// address, optionally followed by a link-local one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MpNextHop {
    Ipv4(Ipv4Addr),
    Ipv6 {
        global: Ipv6Addr,
        link_local: Option<Ipv6Addr>,
    },
}

impl MpNextHop {
    fn len(&self) -> u8 {
        match self {
            MpNextHop::Ipv4(_) => 4,
            MpNextHop::Ipv6 {
                link_local: None, ..
            } => 16,
            MpNextHop::Ipv6 {
                link_local: Some(_),
                ..
            } => 32,
        }
    }

    pub fn addr(&self) -> IpAddr {
        match self {
            MpNextHop::Ipv4(a) => IpAddr::V4(*a),
            MpNextHop::Ipv6 { global, .. } => IpAddr::V6(*global),
        }
    }
}

/// MP_REACH_NLRI for IPv4 or IPv6 unicast (RFC 4760 §3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MpReach {
    pub afi: Afi,
    pub next_hop: MpNextHop,
    pub nlri: Vec<Prefix>,
}

/// MP_UNREACH_NLRI for IPv4 or IPv6 unicast (RFC 4760 §4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MpUnreach {
    pub afi: Afi,
    pub withdrawn: Vec<Prefix>,
}

/// One path attribute. Attributes pathosd has no use for, and MP attributes
/// of other address families, are kept raw as `Unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathAttr {
    Origin(Origin),
    AsPath(AsPath),
    NextHop(Ipv4Addr),
    Med(u32),
    LocalPref(u32),
    AtomicAggregate,
    /// AS width follows the session (2 octets unless four-octet AS).
    Aggregator {
        asn: u32,
        addr: Ipv4Addr,
    },
    Communities(Vec<Community>),
    MpReach(MpReach),
    MpUnreach(MpUnreach),
    /// RFC 6793 §3: always four-octet ASes.
    As4Path(AsPath),
    As4Aggregator {
        asn: u32,
        addr: Ipv4Addr,
    },
    /// RFC 8092.
    LargeCommunities(Vec<LargeCommunity>),
    /// `flags` without the Extended Length bit, which the encoder derives.
    Unknown {
        flags: u8,
        type_code: u8,
        value: Vec<u8>,
    },
}

impl PathAttr {
    pub fn type_code(&self) -> u8 {
        match self {
            PathAttr::Origin(_) => at::ORIGIN,
            PathAttr::AsPath(_) => at::AS_PATH,
            PathAttr::NextHop(_) => at::NEXT_HOP,
            PathAttr::Med(_) => at::MULTI_EXIT_DISC,
            PathAttr::LocalPref(_) => at::LOCAL_PREF,
            PathAttr::AtomicAggregate => at::ATOMIC_AGGREGATE,
            PathAttr::Aggregator { .. } => at::AGGREGATOR,
            PathAttr::Communities(_) => at::COMMUNITIES,
            PathAttr::MpReach(_) => at::MP_REACH_NLRI,
            PathAttr::MpUnreach(_) => at::MP_UNREACH_NLRI,
            PathAttr::As4Path(_) => at::AS4_PATH,
            PathAttr::As4Aggregator { .. } => at::AS4_AGGREGATOR,
            PathAttr::LargeCommunities(_) => at::LARGE_COMMUNITIES,
            PathAttr::Unknown { type_code, .. } => *type_code,
        }
    }

    /// Appends flags, type, length and value. `None` if the value exceeds
    /// the 2-octet Extended Length.
    pub(crate) fn encode(&self, four_octet: bool, out: &mut Vec<u8>) -> Option<()> {
        let mut v = Vec::new();
        let mut force_extended = false;
        match self {
            PathAttr::Origin(o) => v.push(match o {
                Origin::Igp => 0,
                Origin::Egp => 1,
                Origin::Incomplete => 2,
            }),
            PathAttr::AsPath(p) => p.encode(four_octet, &mut v)?,
            PathAttr::NextHop(a) => v.extend_from_slice(&a.octets()),
            PathAttr::Med(x) | PathAttr::LocalPref(x) => v.extend_from_slice(&x.to_be_bytes()),
            PathAttr::AtomicAggregate => {}
            PathAttr::Aggregator { asn, addr } => {
                if four_octet {
                    v.extend_from_slice(&asn.to_be_bytes());
                } else {
                    v.extend_from_slice(&u16::try_from(*asn).unwrap_or(AS_TRANS).to_be_bytes());
                }
                v.extend_from_slice(&addr.octets());
            }
            PathAttr::Communities(cs) => {
                for c in cs {
                    v.extend_from_slice(&c.as_u32().to_be_bytes());
                }
            }
            PathAttr::MpReach(r) => {
                // Extended Length always, as BIRD does: lets an encoder
                // reserve the header before it knows how much NLRI fits.
                force_extended = true;
                mp_reach_head(r.afi, &r.next_hop, &mut v);
                for p in &r.nlri {
                    encode_prefix(p, &mut v);
                }
            }
            PathAttr::MpUnreach(u) => {
                force_extended = !u.withdrawn.is_empty();
                v.extend_from_slice(&afi_code(u.afi).to_be_bytes());
                v.push(SAFI_UNICAST);
                for p in &u.withdrawn {
                    encode_prefix(p, &mut v);
                }
            }
            PathAttr::As4Path(p) => p.encode(true, &mut v)?,
            PathAttr::As4Aggregator { asn, addr } => {
                v.extend_from_slice(&asn.to_be_bytes());
                v.extend_from_slice(&addr.octets());
            }
            PathAttr::LargeCommunities(ls) => {
                for l in ls {
                    v.extend_from_slice(&l.0.to_be_bytes());
                    v.extend_from_slice(&l.1.to_be_bytes());
                    v.extend_from_slice(&l.2.to_be_bytes());
                }
            }
            PathAttr::Unknown { value, .. } => v.extend_from_slice(value),
        }
        let flags = match self {
            PathAttr::Unknown { flags, .. } => flags & !FLAG_EXTENDED,
            _ => expected_flags(self.type_code()).unwrap_or(FLAG_OPTIONAL),
        };
        write_attr(flags, self.type_code(), &v, force_extended, out)
    }
}

/// Writes one attribute TLV, with the Extended Length bit when needed.
pub(crate) fn write_attr(
    flags: u8,
    type_code: u8,
    value: &[u8],
    force_extended: bool,
    out: &mut Vec<u8>,
) -> Option<()> {
    if force_extended || value.len() > 255 {
        out.push(flags | FLAG_EXTENDED);
        out.push(type_code);
        out.extend_from_slice(&u16::try_from(value.len()).ok()?.to_be_bytes());
    } else {
        out.push(flags & !FLAG_EXTENDED);
        out.push(type_code);
        out.push(u8::try_from(value.len()).ok()?);
    }
    out.extend_from_slice(value);
    Some(())
}

/// AFI, SAFI, next hop and Reserved of MP_REACH_NLRI (everything before
/// the NLRI).
pub(crate) fn mp_reach_head(afi: Afi, nh: &MpNextHop, out: &mut Vec<u8>) {
    out.extend_from_slice(&afi_code(afi).to_be_bytes());
    out.push(SAFI_UNICAST);
    out.push(nh.len());
    match nh {
        MpNextHop::Ipv4(a) => out.extend_from_slice(&a.octets()),
        MpNextHop::Ipv6 { global, link_local } => {
            out.extend_from_slice(&global.octets());
            if let Some(ll) = link_local {
                out.extend_from_slice(&ll.octets());
            }
        }
    }
    // RFC 4760 §3: "Reserved: ... MUST be set to 0".
    out.push(0);
}

/// Octets a prefix takes in an NLRI field: length octet plus the address
/// octets that the length covers (RFC 4271 §4.3).
pub(crate) fn prefix_wire_len(p: &Prefix) -> usize {
    1 + usize::from(p.len()).div_ceil(8)
}

pub(crate) fn encode_prefix(p: &Prefix, out: &mut Vec<u8>) {
    let n = usize::from(p.len()).div_ceil(8);
    out.push(p.len());
    match p.addr() {
        IpAddr::V4(a) => out.extend_from_slice(&a.octets()[..n]),
        IpAddr::V6(a) => out.extend_from_slice(&a.octets()[..n]),
    }
}

/// Parses a run of prefixes of one family; `None` on a length beyond the
/// family's width or a truncated address.
fn decode_prefixes(mut i: &[u8], afi: Afi) -> Option<Vec<Prefix>> {
    let max = match afi {
        Afi::Ipv4 => 32,
        Afi::Ipv6 => 128,
    };
    let mut out = Vec::new();
    while !i.is_empty() {
        let (&len, rest) = i.split_first()?;
        if len > max {
            return None;
        }
        let n = usize::from(len).div_ceil(8);
        let addr_bytes = rest.get(..n)?;
        let addr = match afi {
            Afi::Ipv4 => {
                let mut b = [0u8; 4];
                b[..n].copy_from_slice(addr_bytes);
                IpAddr::V4(Ipv4Addr::from(b))
            }
            Afi::Ipv6 => {
                let mut b = [0u8; 16];
                b[..n].copy_from_slice(addr_bytes);
                IpAddr::V6(Ipv6Addr::from(b))
            }
        };
        out.push(Prefix::new(addr, len).ok()?);
        i = &rest[n..];
    }
    Some(out)
}

/// RFC 7606 §2 error handling approaches, mildest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttrAction {
    /// "attribute discard": the attribute is dropped, the UPDATE is kept.
    Discard,
    /// "treat-as-withdraw": every prefix the UPDATE announces counts as
    /// withdrawn.
    TreatAsWithdraw,
    /// "session reset": the decoder returns the NOTIFICATION instead.
    Reset,
}

/// An attribute error a received UPDATE survived, with the NOTIFICATION
/// RFC 4271 would have sent for it (for logs; `None` where the RFCs say
/// to ignore the attribute without it being an error).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttrError {
    pub type_code: u8,
    pub action: AttrAction,
    pub notification: Option<Notification>,
}

impl fmt::Display for AttrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let action = match self.action {
            AttrAction::Discard => "attribute discarded",
            AttrAction::TreatAsWithdraw => "treat-as-withdraw",
            AttrAction::Reset => "session reset",
        };
        write!(
            f,
            "{} (type {}): {action}",
            attr_name(self.type_code),
            self.type_code
        )?;
        match &self.notification {
            Some(n) => write!(f, ": {n}"),
            None => Ok(()),
        }
    }
}

/// Prefixes named in a treat-as-withdraw report (see [`Update::withdraw_report`]).
pub const REPORT_PREFIXES: usize = 8;
/// Octets of the UPDATE shown in hex in that report: its header, the
/// withdrawn routes and the start of its attributes.
pub const REPORT_BYTES: usize = 96;

/// An UPDATE message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Update {
    /// IPv4 Withdrawn Routes.
    pub withdrawn: Vec<Prefix>,
    /// Path attributes in wire order.
    pub attrs: Vec<PathAttr>,
    /// IPv4 Network Layer Reachability Information.
    pub nlri: Vec<Prefix>,
    /// Errors the decoder handled by attribute discard or treat-as-withdraw
    /// (always empty on messages built for sending).
    pub errors: Vec<AttrError>,
}

impl Update {
    /// The End-of-RIB marker of a family (RFC 4724 §2): an empty UPDATE for
    /// IPv4 unicast, an UPDATE with only an empty MP_UNREACH_NLRI otherwise.
    pub fn end_of_rib(afi: Afi) -> Update {
        match afi {
            Afi::Ipv4 => Update::default(),
            Afi::Ipv6 => Update {
                attrs: vec![PathAttr::MpUnreach(MpUnreach {
                    afi,
                    withdrawn: Vec::new(),
                })],
                ..Update::default()
            },
        }
    }

    /// The family whose End-of-RIB this UPDATE is (RFC 4724 §2).
    pub fn is_end_of_rib(&self) -> Option<Afi> {
        if !self.withdrawn.is_empty() || !self.nlri.is_empty() || !self.errors.is_empty() {
            return None;
        }
        match self.attrs.as_slice() {
            [] => Some(Afi::Ipv4),
            [PathAttr::MpUnreach(u)] if u.withdrawn.is_empty() => Some(u.afi),
            _ => None,
        }
    }

    /// Some error required treat-as-withdraw (RFC 7606 §2).
    pub fn treat_as_withdraw(&self) -> bool {
        self.errors
            .iter()
            .any(|e| e.action == AttrAction::TreatAsWithdraw)
    }

    /// What RFC 7606 §6 asks to be logged when an UPDATE is treated as a
    /// withdrawal: the NLRI affected and the UPDATE itself, so the sender's
    /// error can be found. Bounded for a router's small log: at most
    /// [`REPORT_PREFIXES`] prefixes and [`REPORT_BYTES`] octets in hex, each
    /// with the total. None when nothing was treated as withdrawn.
    pub fn withdraw_report(&self, msg: &[u8]) -> Option<String> {
        if !self.treat_as_withdraw() {
            return None;
        }
        let nlri = self.announced_raw();
        let mut out = format!("treated as withdraw: NLRI ({})", nlri.len());
        for p in nlri.iter().take(REPORT_PREFIXES) {
            out.push_str(&format!(" {p}"));
        }
        if nlri.len() > REPORT_PREFIXES {
            out.push_str(" …");
        }
        out.push_str(&format!("; UPDATE ({} octets)", msg.len()));
        out.push(' ');
        for b in msg.iter().take(REPORT_BYTES) {
            out.push_str(&format!("{b:02x}"));
        }
        if msg.len() > REPORT_BYTES {
            out.push('…');
        }
        Some(out)
    }

    fn mp_reach(&self) -> Option<&MpReach> {
        self.attrs.iter().find_map(|a| match a {
            PathAttr::MpReach(r) => Some(r),
            _ => None,
        })
    }

    fn announced_raw(&self) -> Vec<Prefix> {
        let mut v = self.nlri.clone();
        if let Some(r) = self.mp_reach() {
            v.extend_from_slice(&r.nlri);
        }
        v
    }

    /// Prefixes this UPDATE makes reachable (none under treat-as-withdraw).
    pub fn announced(&self) -> Vec<Prefix> {
        if self.treat_as_withdraw() {
            Vec::new()
        } else {
            self.announced_raw()
        }
    }

    /// Prefixes this UPDATE makes unreachable, including the announced ones
    /// under treat-as-withdraw.
    pub fn withdrawn_prefixes(&self) -> Vec<Prefix> {
        let mut v = self.withdrawn.clone();
        for a in &self.attrs {
            if let PathAttr::MpUnreach(u) = a {
                v.extend_from_slice(&u.withdrawn);
            }
        }
        if self.treat_as_withdraw() {
            v.extend(self.announced_raw());
        }
        v
    }

    pub fn origin(&self) -> Option<Origin> {
        self.attrs.iter().find_map(|a| match a {
            PathAttr::Origin(o) => Some(*o),
            _ => None,
        })
    }

    pub fn as_path(&self) -> Option<&AsPath> {
        self.attrs.iter().find_map(|a| match a {
            PathAttr::AsPath(p) => Some(p),
            _ => None,
        })
    }

    /// The IPv4 NEXT_HOP, or the MP_REACH_NLRI next hop.
    pub fn next_hop(&self) -> Option<IpAddr> {
        self.attrs
            .iter()
            .find_map(|a| match a {
                PathAttr::NextHop(n) => Some(IpAddr::V4(*n)),
                _ => None,
            })
            .or_else(|| self.mp_reach().map(|r| r.next_hop.addr()))
    }

    pub fn med(&self) -> Option<u32> {
        self.attrs.iter().find_map(|a| match a {
            PathAttr::Med(m) => Some(*m),
            _ => None,
        })
    }

    pub fn local_pref(&self) -> Option<u32> {
        self.attrs.iter().find_map(|a| match a {
            PathAttr::LocalPref(m) => Some(*m),
            _ => None,
        })
    }

    pub fn communities(&self) -> &[Community] {
        self.attrs
            .iter()
            .find_map(|a| match a {
                PathAttr::Communities(c) => Some(c.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }

    pub fn large_communities(&self) -> &[LargeCommunity] {
        self.attrs
            .iter()
            .find_map(|a| match a {
                PathAttr::LargeCommunities(c) => Some(c.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }

    pub(crate) fn encode_body(&self, four_octet: bool, out: &mut Vec<u8>) -> Option<()> {
        let mut w = Vec::new();
        for p in &self.withdrawn {
            encode_prefix(p, &mut w);
        }
        let mut a = Vec::new();
        for attr in &self.attrs {
            attr.encode(four_octet, &mut a)?;
        }
        let mut n = Vec::new();
        for p in &self.nlri {
            encode_prefix(p, &mut n);
        }
        out.extend_from_slice(&update_body(&w, &a, &n)?);
        Some(())
    }
}

/// An UPDATE's body from its encoded parts (RFC 4271 §4.3): Withdrawn
/// Routes Length, Withdrawn Routes, Total Path Attribute Length, Path
/// Attributes, NLRI. None if a length does not fit its 2 octets.
pub(crate) fn update_body(withdrawn: &[u8], attrs: &[u8], nlri: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::with_capacity(4 + withdrawn.len() + attrs.len() + nlri.len());
    body.extend_from_slice(&u16::try_from(withdrawn.len()).ok()?.to_be_bytes());
    body.extend_from_slice(withdrawn);
    body.extend_from_slice(&u16::try_from(attrs.len()).ok()?.to_be_bytes());
    body.extend_from_slice(attrs);
    body.extend_from_slice(nlri);
    Some(body)
}

fn malformed_list() -> Notification {
    Notification::update(UpdateError::MalformedAttributeList, Vec::new())
}

fn invalid_network() -> Notification {
    Notification::update(UpdateError::InvalidNetworkField, Vec::new())
}

/// Decodes an UPDATE body (everything after the 19-byte header).
pub(crate) fn decode_body(body: &[u8], ctx: &super::DecodeCtx) -> Result<Update, Notification> {
    // RFC 4271 §6.3: "If the Withdrawn Routes Length or Total Attribute
    // Length is too large (i.e., if Withdrawn Routes Length + Total
    // Attribute Length + 23 exceeds the message Length), then the Error
    // Subcode MUST be set to Malformed Attribute List." RFC 7606 §5.3 keeps
    // this a session reset: without the lengths the NLRI cannot be found.
    let short = || {
        Notification::header(
            HeaderError::BadMessageLength,
            super::length_field(body.len() + super::HEADER_LEN),
        )
    };
    let (i, wlen) = u16_(body, short)?;
    let (i, wbytes) = bytes(i, usize::from(wlen), malformed_list)?;
    let (i, alen) = u16_(i, malformed_list)?;
    let (nlri_bytes, abytes) = bytes(i, usize::from(alen), malformed_list)?;

    // RFC 7606 §5.3: a syntactically incorrect Withdrawn Routes or NLRI
    // field cannot be handled by treat-as-withdraw: "session reset".
    let withdrawn = decode_prefixes(wbytes, Afi::Ipv4).ok_or_else(invalid_network)?;
    let nlri = decode_prefixes(nlri_bytes, Afi::Ipv4).ok_or_else(invalid_network)?;

    let mut update = Update {
        withdrawn,
        attrs: Vec::new(),
        nlri,
        errors: Vec::new(),
    };
    let mut seen = [false; 256];
    let mut rest = abytes;
    while !rest.is_empty() {
        let start = rest;
        let flags = rest[0];
        let header_len = if flags & FLAG_EXTENDED != 0 { 4 } else { 3 };
        let parsed = if rest.len() < header_len {
            None
        } else {
            let type_code = rest[1];
            let len = if header_len == 4 {
                usize::from(u16::from_be_bytes([rest[2], rest[3]]))
            } else {
                usize::from(rest[2])
            };
            header_len
                .checked_add(len)
                .filter(|end| *end <= rest.len())
                .map(|end| (type_code, &rest[header_len..end], &rest[end..]))
        };
        let (type_code, value, next) = match parsed {
            Some(p) => p,
            None => {
                // RFC 7606 §4: when an attribute's length runs past the
                // Total Attribute Length, or fewer than three (four with
                // Extended Length) octets remain, "the "treat-as-withdraw"
                // approach MUST be used ... and the Total Attribute Length
                // MUST be relied upon to enable the beginning of the NLRI
                // field to be located."
                update.errors.push(AttrError {
                    type_code: rest.get(1).copied().unwrap_or(0),
                    action: AttrAction::TreatAsWithdraw,
                    notification: Some(Notification::update(
                        UpdateError::AttributeLengthError,
                        rest.to_vec(),
                    )),
                });
                break;
            }
        };
        let whole = &start[..start.len() - next.len()];
        rest = next;
        let slot = &mut seen[usize::from(type_code)];
        if *slot {
            // RFC 7606 §3 g: "If the MP_REACH_NLRI attribute or the
            // MP_UNREACH_NLRI attribute appears more than once in the UPDATE
            // message, then a NOTIFICATION message MUST be sent with the
            // Error Subcode "Malformed Attribute List". If any other
            // attribute (whether recognized or unrecognized) appears more
            // than once in an UPDATE message, then all the occurrences of the
            // attribute other than the first one SHALL be discarded".
            if type_code == at::MP_REACH_NLRI || type_code == at::MP_UNREACH_NLRI {
                return Err(malformed_list());
            }
            update.errors.push(AttrError {
                type_code,
                action: AttrAction::Discard,
                notification: Some(Notification::update(
                    UpdateError::MalformedAttributeList,
                    whole.to_vec(),
                )),
            });
            continue;
        }
        *slot = true;
        match decode_attr(flags, type_code, value, whole, ctx) {
            Ok((attr, soft)) => {
                update.attrs.push(attr);
                update.errors.extend(soft);
            }
            Err(e) if e.action == AttrAction::Reset => {
                return Err(e.notification.unwrap_or_else(malformed_list))
            }
            Err(e) => update.errors.push(e),
        }
    }

    // RFC 7606 §5.2: an UPDATE with path attributes but no NLRI (neither
    // the NLRI field nor MP_REACH_NLRI) has nothing to withdraw, so an
    // error that calls for "treat-as-withdraw" cannot be handled that way:
    // "session reset" MUST be used. The first such error is the one sent.
    let announces_mp = seen[usize::from(at::MP_REACH_NLRI)];
    if update.nlri.is_empty() && !announces_mp {
        if let Some(e) = update
            .errors
            .iter_mut()
            .find(|e| e.action == AttrAction::TreatAsWithdraw)
        {
            return Err(e.notification.take().unwrap_or_else(malformed_list));
        }
    }

    // RFC 7606 §3 d: "If any of the well-known mandatory attributes are not
    // present in an UPDATE message, then "treat-as-withdraw" MUST be used."
    // They are only mandatory when the UPDATE announces something; NEXT_HOP
    // only for IPv4 NLRI in the classic field (RFC 4760 §3).
    if !update.nlri.is_empty() || announces_mp {
        let mut required = vec![at::ORIGIN, at::AS_PATH];
        if !update.nlri.is_empty() {
            required.push(at::NEXT_HOP);
        }
        for t in required {
            if !seen[usize::from(t)] {
                update.errors.push(AttrError {
                    type_code: t,
                    action: AttrAction::TreatAsWithdraw,
                    notification: Some(Notification::update(
                        UpdateError::MissingWellKnownAttribute,
                        vec![t],
                    )),
                });
            }
        }
    }
    Ok(update)
}

/// Decodes one attribute value; the error says which RFC 7606 approach
/// applies.
fn decode_attr(
    flags: u8,
    type_code: u8,
    v: &[u8],
    whole: &[u8],
    ctx: &super::DecodeCtx,
) -> Result<(PathAttr, Option<AttrError>), AttrError> {
    let fail = |action: AttrAction, sub: UpdateError, data: Vec<u8>| AttrError {
        type_code,
        action,
        notification: Some(Notification::update(sub, data)),
    };
    let len_err = |action| fail(action, UpdateError::AttributeLengthError, whole.to_vec());

    let expected = match expected_flags(type_code) {
        Some(e) => e,
        None => {
            // RFC 4271 §6.3: "If any of the mandatory well-known attributes
            // are not recognized, then the Error Subcode MUST be set to
            // Unrecognized Well-known Attribute." An attribute with the
            // Optional bit clear that we do not know is such an attribute. Unknown optional ones are
            // kept (transitive) or may be ignored (non-transitive); keeping
            // both raw is harmless since pathosd never re-advertises them.
            if flags & FLAG_OPTIONAL == 0 {
                return Err(fail(
                    AttrAction::Reset,
                    UpdateError::UnrecognizedWellKnownAttribute,
                    whole.to_vec(),
                ));
            }
            let attr = PathAttr::Unknown {
                flags: flags & !FLAG_EXTENDED,
                type_code,
                value: v.to_vec(),
            };
            return Ok((attr, None));
        }
    };
    // Decode the value first: MP attributes must be parsed even when their
    // flags are wrong, so that treat-as-withdraw knows what to withdraw.
    let attr = decode_known(type_code, v, whole, ctx, &len_err, &fail)?;
    // RFC 7606 §3 c: "If the value of either the Optional or Transitive bits
    // in the Attribute Flags is in conflict with their specified values,
    // then the attribute MUST be treated as malformed and the
    // "treat-as-withdraw" approach used, unless the specification for this
    // attribute mandates different handling for incorrect Attribute Flags."
    if flags & (FLAG_OPTIONAL | FLAG_TRANSITIVE) != expected {
        let err = fail(
            AttrAction::TreatAsWithdraw,
            UpdateError::AttributeFlagsError,
            whole.to_vec(),
        );
        if matches!(attr, PathAttr::MpReach(_) | PathAttr::MpUnreach(_)) {
            // Keep the parsed NLRI: treat-as-withdraw needs to know it.
            return Ok((attr, Some(err)));
        }
        return Err(err);
    }
    Ok((attr, None))
}

/// An attribute dropped without it being an error in RFC 4271 terms.
fn ignored(type_code: u8) -> AttrError {
    AttrError {
        type_code,
        action: AttrAction::Discard,
        notification: None,
    }
}

type LenErr<'a> = dyn Fn(AttrAction) -> AttrError + 'a;
type Fail<'a> = dyn Fn(AttrAction, UpdateError, Vec<u8>) -> AttrError + 'a;

fn decode_known(
    type_code: u8,
    v: &[u8],
    whole: &[u8],
    ctx: &super::DecodeCtx,
    len_err: &LenErr<'_>,
    fail: &Fail<'_>,
) -> Result<PathAttr, AttrError> {
    let taw = AttrAction::TreatAsWithdraw;
    let discard = AttrAction::Discard;
    let reset = AttrAction::Reset;
    let u32_of = |v: &[u8]| match *v {
        [a, b, c, d] => Some(u32::from_be_bytes([a, b, c, d])),
        _ => None,
    };
    Ok(match type_code {
        at::ORIGIN => {
            // RFC 7606 §7.1: "The attribute is considered malformed if its
            // length is not 1 or if it has an undefined value ... An UPDATE
            // message with a malformed ORIGIN attribute SHALL be handled using
            // the approach of "treat-as-withdraw"."
            match v {
                [0] => PathAttr::Origin(Origin::Igp),
                [1] => PathAttr::Origin(Origin::Egp),
                [2] => PathAttr::Origin(Origin::Incomplete),
                [_] => {
                    return Err(fail(
                        taw,
                        UpdateError::InvalidOriginAttribute,
                        whole.to_vec(),
                    ))
                }
                _ => return Err(len_err(taw)),
            }
        }
        at::AS_PATH => {
            // RFC 7606 §7.2: a malformed AS_PATH (bad segment type, zero
            // segment length, overrun) is handled by "treat-as-withdraw";
            // so is a confederation segment from a peer outside our
            // confederation (RFC 5065 §5; pathosd is in none).
            let path = AsPath::decode(v, ctx.four_octet_as)
                .ok_or_else(|| fail(taw, UpdateError::MalformedAsPath, Vec::new()))?;
            let confed = path
                .segments
                .iter()
                .any(|s| matches!(s.kind, SegmentType::ConfedSequence | SegmentType::ConfedSet));
            if confed && ctx.ebgp {
                return Err(fail(taw, UpdateError::MalformedAsPath, Vec::new()));
            }
            PathAttr::AsPath(path)
        }
        at::NEXT_HOP => match *v {
            // RFC 7606 §7.3: "The attribute is considered malformed if its
            // length is not 4 ... treat-as-withdraw".
            [a, b, c, d] => PathAttr::NextHop(Ipv4Addr::new(a, b, c, d)),
            _ => return Err(len_err(taw)),
        },
        // RFC 7606 §7.4: MULTI_EXIT_DISC of length other than 4 is
        // "treat-as-withdraw".
        at::MULTI_EXIT_DISC => PathAttr::Med(u32_of(v).ok_or_else(|| len_err(taw))?),
        at::LOCAL_PREF => {
            // RFC 7606 §7.5: "If the LOCAL_PREF attribute is received from an
            // external neighbor, it SHALL be discarded ... the attribute is
            // considered malformed if its length is not equal to 4 ...
            // treat-as-withdraw".
            if ctx.ebgp {
                return Err(ignored(type_code));
            }
            PathAttr::LocalPref(u32_of(v).ok_or_else(|| len_err(taw))?)
        }
        at::ATOMIC_AGGREGATE => {
            // RFC 7606 §7.6: length other than 0 → "attribute discard".
            if !v.is_empty() {
                return Err(len_err(discard));
            }
            PathAttr::AtomicAggregate
        }
        at::AGGREGATOR => {
            // RFC 7606 §7.7: length other than 6 (8 with four-octet ASes) →
            // "attribute discard".
            match (ctx.four_octet_as, v) {
                (false, [a, b, rest @ ..]) if rest.len() == 4 => PathAttr::Aggregator {
                    asn: u32::from(u16::from_be_bytes([*a, *b])),
                    addr: Ipv4Addr::new(rest[0], rest[1], rest[2], rest[3]),
                },
                (true, [a, b, c, d, rest @ ..]) if rest.len() == 4 => PathAttr::Aggregator {
                    asn: u32::from_be_bytes([*a, *b, *c, *d]),
                    addr: Ipv4Addr::new(rest[0], rest[1], rest[2], rest[3]),
                },
                _ => return Err(len_err(discard)),
            }
        }
        at::COMMUNITIES => {
            // RFC 7606 §7.8: "The error handling of [RFC1997] is revised as
            // follows: the attribute is malformed if the length is not a
            // non-zero multiple of 4 ... treat-as-withdraw".
            if v.is_empty() || v.len() % 4 != 0 {
                return Err(len_err(taw));
            }
            PathAttr::Communities(
                v.chunks_exact(4)
                    .map(|c| {
                        Community(
                            u16::from_be_bytes([c[0], c[1]]),
                            u16::from_be_bytes([c[2], c[3]]),
                        )
                    })
                    .collect(),
            )
        }
        at::LARGE_COMMUNITIES => {
            // RFC 8092 §5: "... the Large Communities attribute ... is
            // considered malformed if the length is not a non-zero multiple
            // of 12 ... treat-as-withdraw".
            if v.is_empty() || v.len() % 12 != 0 {
                return Err(len_err(taw));
            }
            PathAttr::LargeCommunities(
                v.chunks_exact(12)
                    .map(|c| {
                        LargeCommunity(
                            u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                            u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
                            u32::from_be_bytes([c[8], c[9], c[10], c[11]]),
                        )
                    })
                    .collect(),
            )
        }
        at::AS4_PATH | at::AS4_AGGREGATOR => {
            // RFC 6793 §4.1: AS4_PATH and AS4_AGGREGATOR are only sent to
            // OLD speakers; between two NEW speakers AS_PATH already holds
            // four-octet ASes, so copies received anyway are discarded.
            if ctx.four_octet_as {
                return Err(ignored(type_code));
            }
            // RFC 6793 §6: malformed AS4_PATH / AS4_AGGREGATOR is handled by
            // "attribute discard"; AS4_PATH may not hold confederation segments.
            if type_code == at::AS4_PATH {
                let path = AsPath::decode(v, true)
                    .filter(|p| {
                        p.segments
                            .iter()
                            .all(|s| matches!(s.kind, SegmentType::Set | SegmentType::Sequence))
                    })
                    .ok_or_else(|| {
                        fail(discard, UpdateError::OptionalAttributeError, whole.to_vec())
                    })?;
                PathAttr::As4Path(path)
            } else {
                match *v {
                    [a, b, c, d, e, f, g, h] => PathAttr::As4Aggregator {
                        asn: u32::from_be_bytes([a, b, c, d]),
                        addr: Ipv4Addr::new(e, f, g, h),
                    },
                    _ => return Err(len_err(discard)),
                }
            }
        }
        at::MP_REACH_NLRI | at::MP_UNREACH_NLRI => {
            // RFC 7606 §7.11 and §5.3: an MP attribute whose NLRI cannot be
            // parsed leaves nothing to treat as withdrawn: "session reset",
            // with RFC 4760 §7's "UPDATE Message Error"/"Optional Attribute
            // Error".
            let bad = || fail(reset, UpdateError::OptionalAttributeError, whole.to_vec());
            match decode_mp(type_code, v) {
                Some(Some(a)) => a,
                // A family pathosd did not negotiate: kept raw, RFC 4760 §7
                // lets the speaker ignore routes of that AFI/SAFI.
                Some(None) => PathAttr::Unknown {
                    flags: FLAG_OPTIONAL,
                    type_code,
                    value: v.to_vec(),
                },
                None => return Err(bad()),
            }
        }
        _ => PathAttr::Unknown {
            flags: FLAG_OPTIONAL,
            type_code,
            value: v.to_vec(),
        },
    })
}

/// `None`: malformed; `Some(None)`: a family other than IPv4/IPv6 unicast.
fn decode_mp(type_code: u8, v: &[u8]) -> Option<Option<PathAttr>> {
    let (i, afi) = u16_(v, malformed_list).ok()?;
    let (i, safi) = u8_(i, malformed_list).ok()?;
    let afi = match afi_from_code(afi) {
        Some(a) if safi == SAFI_UNICAST => a,
        _ => return Some(None),
    };
    if type_code == at::MP_UNREACH_NLRI {
        let withdrawn = decode_prefixes(i, afi)?;
        return Some(Some(PathAttr::MpUnreach(MpUnreach { afi, withdrawn })));
    }
    let (i, nh_len) = u8_(i, malformed_list).ok()?;
    let (i, nh) = bytes(i, usize::from(nh_len), malformed_list).ok()?;
    // RFC 7606 §7.11: a next hop length inconsistent with the AFI is
    // malformed. RFC 2545 §3: IPv6 has 16 (global) or 32 (global +
    // link-local) octets.
    let next_hop = match (afi, nh.len()) {
        (Afi::Ipv4, 4) => MpNextHop::Ipv4(Ipv4Addr::new(nh[0], nh[1], nh[2], nh[3])),
        (Afi::Ipv6, 16) => MpNextHop::Ipv6 {
            global: Ipv6Addr::from(<[u8; 16]>::try_from(nh).ok()?),
            link_local: None,
        },
        (Afi::Ipv6, 32) => MpNextHop::Ipv6 {
            global: Ipv6Addr::from(<[u8; 16]>::try_from(&nh[..16]).ok()?),
            link_local: Some(Ipv6Addr::from(<[u8; 16]>::try_from(&nh[16..]).ok()?)),
        },
        _ => return None,
    };
    // RFC 4760 §3: Reserved "SHOULD be ignored upon receipt".
    let (i, _reserved) = u8_(i, malformed_list).ok()?;
    let nlri = decode_prefixes(i, afi)?;
    Some(Some(PathAttr::MpReach(MpReach {
        afi,
        next_hop,
        nlri,
    })))
}
