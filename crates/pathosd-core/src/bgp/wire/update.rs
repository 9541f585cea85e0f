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
//!
//! This file holds the message and its attributes as types, their encoding
//! and the accessors; the decoder is `update/decode.rs`, and the encoder
//! that packs many routes into few UPDATEs is `super::pack`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{afi_code, Notification, AS_TRANS, SAFI_UNICAST};
use crate::bgp::types::{Afi, Community, LargeCommunity, Origin, Prefix};

mod decode;

pub(crate) use decode::decode_body;

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
    /// RFC 9234 §5 ONLY_TO_CUSTOMER.
    pub const OTC: u8 = 35;
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
        | at::LARGE_COMMUNITIES
        | at::OTC => opt_trans,
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
        at::OTC => "ONLY_TO_CUSTOMER",
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
    /// RFC 9234 §5: "an optional transitive attribute ... [that] contains
    /// an AS number", 4 octets.
    Otc(u32),
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
            PathAttr::Otc(_) => at::OTC,
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
            PathAttr::Med(x) | PathAttr::LocalPref(x) | PathAttr::Otc(x) => {
                v.extend_from_slice(&x.to_be_bytes())
            }
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
    /// `REPORT_PREFIXES` prefixes and `REPORT_BYTES` octets in hex, each
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
        // The NLRI goes last: encoded straight after the attributes.
        write_update_body(&w, &a, &[], out)?;
        for p in &self.nlri {
            encode_prefix(p, out);
        }
        Some(())
    }
}

/// Appends an UPDATE's body from its encoded parts (RFC 4271 §4.3):
/// Withdrawn Routes Length, Withdrawn Routes, Total Path Attribute Length,
/// Path Attributes, NLRI. None if a length does not fit its 2 octets.
pub(crate) fn write_update_body(
    withdrawn: &[u8],
    attrs: &[u8],
    nlri: &[u8],
    out: &mut Vec<u8>,
) -> Option<()> {
    out.extend_from_slice(&u16::try_from(withdrawn.len()).ok()?.to_be_bytes());
    out.extend_from_slice(withdrawn);
    out.extend_from_slice(&u16::try_from(attrs.len()).ok()?.to_be_bytes());
    out.extend_from_slice(attrs);
    out.extend_from_slice(nlri);
    Some(())
}
