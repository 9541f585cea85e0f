//! OPEN (RFC 4271 §4.2) with Capabilities (RFC 5492) and the extended
//! optional parameters length of RFC 9072.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+
//! |    Version    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     My Autonomous System      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Hold Time           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         BGP Identifier                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Opt Parm Len  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |             Optional Parameters (variable)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use std::net::Ipv4Addr;

use super::parse::{bytes, u16_, u32_, u8_};
use super::{afi_code, HeaderError, Notification, OpenError, SAFI_UNICAST};
use crate::bgp::types::Afi;

pub const BGP_VERSION: u8 = 4;
/// RFC 6793 §9: the reserved 2-octet AS a four-octet-only speaker puts in
/// My Autonomous System.
pub const AS_TRANS: u16 = 23456;

/// Optional parameter type "Capabilities" (RFC 5492 §4).
const PARAM_CAPABILITIES: u8 = 2;
/// RFC 9072 §2: Non-Ext OP Type value announcing the extended format.
const PARAM_EXTENDED: u8 = 255;

const CAP_MULTIPROTOCOL: u8 = 1;
const CAP_ROUTE_REFRESH: u8 = 2;
const CAP_ROLE: u8 = 9;
const CAP_EXTENDED_NEXT_HOP: u8 = 5;
const CAP_GRACEFUL_RESTART: u8 = 64;
const CAP_FOUR_OCTET_AS: u8 = 65;

/// Restart State bit of the Graceful Restart Capability (RFC 4724 §3).
pub const GR_FLAG_RESTART_STATE: u8 = 0x8;
/// Notification bit of the Graceful Restart Capability (RFC 8538 §2).
pub const GR_FLAG_NOTIFICATION: u8 = 0x4;
/// "Forwarding State" bit of a Graceful Restart address family (RFC 4724 §3).
pub const GR_FAMILY_FORWARDING: u8 = 0x80;

/// One address family in the Graceful Restart Capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GracefulRestartFamily {
    pub afi: u16,
    pub safi: u8,
    /// Flags for Address Family; 0x80 = forwarding state preserved.
    pub flags: u8,
}

/// Graceful Restart Capability value (RFC 4724 §3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GracefulRestart {
    /// The four Restart Flags bits (R = 0x8, N = 0x4).
    pub flags: u8,
    /// Restart Time in seconds, 12 bits.
    pub restart_time: u16,
    pub families: Vec<GracefulRestartFamily>,
}

impl GracefulRestart {
    /// What pathosd advertises: Restart Time 0 and no Forwarding State bit
    /// for any family, so a peer never retains pathosd's routes after the
    /// session drops. RFC 4724 §4.2: the receiving speaker deletes the stale
    /// routes when the Restart Time passes without a new session, and on
    /// the new OPEN drops those of families whose Forwarding State bit is
    /// clear; both happen at once here. pathosd still learns whether the
    /// peer can help, and sends End-of-RIB.
    pub(crate) fn helper_only(families: &[Afi]) -> GracefulRestart {
        GracefulRestart {
            flags: 0,
            restart_time: 0,
            families: families
                .iter()
                .map(|a| GracefulRestartFamily {
                    afi: afi_code(*a),
                    safi: SAFI_UNICAST,
                    flags: 0,
                })
                .collect(),
        }
    }
}

/// What [`Open::role`] gives for differing Role capabilities: 255, an
/// unassigned value (RFC 9234 §4.1 assigns 0 to 4).
pub const ROLE_CONFLICT: u8 = 255;

/// A capability (RFC 5492 §4). Unknown ones are kept as raw bytes so they
/// can be logged and re-encoded unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Capability {
    /// RFC 4760 §8.
    Multiprotocol {
        afi: u16,
        safi: u8,
    },
    /// RFC 2918 §2.
    RouteRefresh,
    /// RFC 4724 §3.
    GracefulRestart(GracefulRestart),
    /// RFC 6793 §3.
    FourOctetAs(u32),
    /// RFC 8950 §3: Extended Next Hop Encoding, (NLRI AFI, NLRI SAFI,
    /// Next Hop AFI) triples.
    ExtendedNextHop(Vec<(u16, u16, u16)>),
    /// RFC 9234 §4.1: the BGP Role, one octet (0 Provider, 1 RS, 2
    /// RS-Client, 3 Customer, 4 Peer; the rest unassigned).
    Role(u8),
    Unknown {
        code: u8,
        value: Vec<u8>,
    },
}

impl Capability {
    pub(crate) fn multiprotocol(afi: Afi) -> Capability {
        Capability::Multiprotocol {
            afi: afi_code(afi),
            safi: SAFI_UNICAST,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) -> Option<()> {
        let (code, value) = match self {
            Capability::Multiprotocol { afi, safi } => {
                let a = afi.to_be_bytes();
                (CAP_MULTIPROTOCOL, vec![a[0], a[1], 0, *safi])
            }
            Capability::RouteRefresh => (CAP_ROUTE_REFRESH, Vec::new()),
            Capability::GracefulRestart(gr) => {
                let mut v = Vec::with_capacity(2 + 4 * gr.families.len());
                let word = (u16::from(gr.flags & 0x0f) << 12) | (gr.restart_time & 0x0fff);
                v.extend_from_slice(&word.to_be_bytes());
                for f in &gr.families {
                    v.extend_from_slice(&f.afi.to_be_bytes());
                    v.push(f.safi);
                    v.push(f.flags);
                }
                (CAP_GRACEFUL_RESTART, v)
            }
            Capability::FourOctetAs(asn) => (CAP_FOUR_OCTET_AS, asn.to_be_bytes().to_vec()),
            Capability::Role(r) => (CAP_ROLE, vec![*r]),
            Capability::ExtendedNextHop(t) => {
                let mut v = Vec::with_capacity(6 * t.len());
                for (afi, safi, nh) in t {
                    v.extend_from_slice(&afi.to_be_bytes());
                    v.extend_from_slice(&safi.to_be_bytes());
                    v.extend_from_slice(&nh.to_be_bytes());
                }
                (CAP_EXTENDED_NEXT_HOP, v)
            }
            Capability::Unknown { code, value } => (*code, value.clone()),
        };
        out.push(code);
        out.push(u8::try_from(value.len()).ok()?);
        out.extend_from_slice(&value);
        Some(())
    }

    fn decode(code: u8, value: &[u8]) -> Result<Capability, Notification> {
        // A known capability with an impossible length leaves us unable to
        // tell what the peer supports; RFC 5492 defines no subcode for it,
        // so it is an OPEN Message Error with the Unspecific subcode.
        let bad = Notification::open_unspecific;
        Ok(match code {
            CAP_MULTIPROTOCOL => match value {
                [a0, a1, _reserved, safi] => Capability::Multiprotocol {
                    afi: u16::from_be_bytes([*a0, *a1]),
                    safi: *safi,
                },
                _ => return Err(bad()),
            },
            CAP_ROUTE_REFRESH if value.is_empty() => Capability::RouteRefresh,
            CAP_ROUTE_REFRESH => return Err(bad()),
            CAP_GRACEFUL_RESTART => {
                let (rest, word) = u16_(value, bad)?;
                if rest.len() % 4 != 0 {
                    return Err(bad());
                }
                let families = rest
                    .chunks_exact(4)
                    .map(|c| GracefulRestartFamily {
                        afi: u16::from_be_bytes([c[0], c[1]]),
                        safi: c[2],
                        flags: c[3],
                    })
                    .collect();
                Capability::GracefulRestart(GracefulRestart {
                    flags: (word >> 12) as u8,
                    restart_time: word & 0x0fff,
                    families,
                })
            }
            CAP_FOUR_OCTET_AS => match value {
                [a, b, c, d] => Capability::FourOctetAs(u32::from_be_bytes([*a, *b, *c, *d])),
                _ => return Err(bad()),
            },
            // RFC 9234 §4.1 gives the Role capability length 1 and no
            // handling for another; as every known capability here (and
            // as BIRD does), it is an OPEN Message Error, Unspecific.
            // RFC 8950 §3: one or more 6-octet triples.
            CAP_EXTENDED_NEXT_HOP if !value.is_empty() && value.len() % 6 == 0 => {
                Capability::ExtendedNextHop(
                    value
                        .chunks_exact(6)
                        .map(|c| {
                            let w = |i: usize| u16::from_be_bytes([c[i], c[i + 1]]);
                            (w(0), w(2), w(4))
                        })
                        .collect(),
                )
            }
            CAP_EXTENDED_NEXT_HOP => return Err(bad()),
            CAP_ROLE => match value {
                [r] => Capability::Role(*r),
                _ => return Err(bad()),
            },
            _ => Capability::Unknown {
                code,
                value: value.to_vec(),
            },
        })
    }
}

/// An OPEN message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Open {
    /// The 2-octet My Autonomous System field (AS_TRANS for a larger AS).
    pub my_as: u16,
    pub hold_time: u16,
    pub bgp_id: Ipv4Addr,
    pub capabilities: Vec<Capability>,
}

impl Open {
    /// An OPEN for `asn`, with My AS set per RFC 6793 §4.1 ("... if the
    /// speaker's AS number is not mappable, AS_TRANS").
    pub fn new(asn: u32, hold_time: u16, bgp_id: Ipv4Addr, capabilities: Vec<Capability>) -> Open {
        Open {
            my_as: u16::try_from(asn).unwrap_or(AS_TRANS),
            hold_time,
            bgp_id,
            capabilities,
        }
    }

    /// pathosd's OPEN: Multiprotocol for each family, Extended Next Hop
    /// for IPv4 when enabled, Route Refresh,
    /// four-octet AS, if enabled Graceful Restart as a helper only, and
    /// the BGP Role when one is configured.
    pub fn pathosd(
        asn: u32,
        hold_time: u16,
        bgp_id: Ipv4Addr,
        families: &[Afi],
        graceful_restart: bool,
        extended_next_hop: bool,
        role: Option<u8>,
    ) -> Open {
        let mut caps: Vec<Capability> = families
            .iter()
            .map(|a| Capability::multiprotocol(*a))
            .collect();
        if extended_next_hop {
            // RFC 8950: IPv4 unicast NLRI with an IPv6 next hop.
            caps.push(Capability::ExtendedNextHop(vec![(
                super::AFI_IPV4,
                u16::from(SAFI_UNICAST),
                super::AFI_IPV6,
            )]));
        }
        caps.push(Capability::RouteRefresh);
        if graceful_restart {
            caps.push(Capability::GracefulRestart(GracefulRestart::helper_only(
                families,
            )));
        }
        caps.push(Capability::FourOctetAs(asn));
        // RFC 9234 §4.1: "If the BGP Role is locally configured, the eBGP
        // speaker MUST advertise the BGP Role Capability in the BGP OPEN
        // message. An eBGP speaker MUST NOT advertise multiple versions of
        // the BGP Role Capability": one, at most.
        caps.extend(role.map(Capability::Role));
        Open::new(asn, hold_time, bgp_id, caps)
    }

    /// The speaker's AS: the four-octet AS capability if present (RFC 6793
    /// §4.1), otherwise My Autonomous System.
    pub fn asn(&self) -> u32 {
        self.four_octet_as().unwrap_or(u32::from(self.my_as))
    }

    pub fn four_octet_as(&self) -> Option<u32> {
        self.capabilities.iter().find_map(|c| match c {
            Capability::FourOctetAs(a) => Some(*a),
            _ => None,
        })
    }

    /// Address families from the Multiprotocol capabilities. RFC 4760 §8: a
    /// speaker without any is assumed to support IPv4 unicast only.
    pub fn families(&self) -> Vec<(u16, u8)> {
        let v: Vec<(u16, u8)> = self
            .capabilities
            .iter()
            .filter_map(|c| match c {
                Capability::Multiprotocol { afi, safi } => Some((*afi, *safi)),
                _ => None,
            })
            .collect();
        if v.is_empty() {
            vec![(super::AFI_IPV4, SAFI_UNICAST)]
        } else {
            v
        }
    }

    /// The peer's BGP Role (RFC 9234 §4.1). RFC 9234 §4.2: "If multiple
    /// BGP Role Capabilities are received and not all of them have the same
    /// value, then the BGP speaker MUST reject the connection using the Role
    /// Mismatch Notification": such an OPEN gives [`ROLE_CONFLICT`], an
    /// unassigned value, which corresponds to no role.
    pub fn role(&self) -> Option<u8> {
        let mut roles = self.capabilities.iter().filter_map(|c| match c {
            Capability::Role(r) => Some(*r),
            _ => None,
        });
        let first = roles.next()?;
        Some(if roles.all(|r| r == first) {
            first
        } else {
            ROLE_CONFLICT
        })
    }

    /// The peer takes IPv4 unicast routes with an IPv6 next hop (RFC 8950).
    pub fn extended_next_hop_ipv4(&self) -> bool {
        let want = (super::AFI_IPV4, u16::from(SAFI_UNICAST), super::AFI_IPV6);
        self.capabilities.iter().any(|c| match c {
            Capability::ExtendedNextHop(t) => t.contains(&want),
            _ => false,
        })
    }

    pub fn supports_route_refresh(&self) -> bool {
        self.capabilities.contains(&Capability::RouteRefresh)
    }

    pub fn graceful_restart(&self) -> Option<&GracefulRestart> {
        self.capabilities.iter().find_map(|c| match c {
            Capability::GracefulRestart(g) => Some(g),
            _ => None,
        })
    }

    /// The RFC 4271 §6.2 checks that need configuration: the peer's AS and,
    /// for iBGP, our own BGP Identifier. Version, Hold Time and a zero
    /// identifier are already checked by the decoder.
    pub fn validate(
        &self,
        local_as: u32,
        local_id: Ipv4Addr,
        peer_as: u32,
    ) -> Result<(), Notification> {
        // RFC 4271 §6.2: "If the Autonomous System field of the OPEN message
        // is unacceptable, then the Error Subcode MUST be set to Bad Peer AS."
        // With the capability, the AS to compare is the four-octet one
        // (RFC 6793 §4.1).
        if self.asn() != peer_as {
            return Err(Notification::open(OpenError::BadPeerAs, Vec::new()));
        }
        // RFC 6286 §2.2: "... if it is the same as the BGP Identifier of the
        // local BGP speaker and the message is from an internal peer, then
        // the Error Subcode is set to "Bad BGP Identifier"."
        if peer_as == local_as && self.bgp_id == local_id {
            return Err(Notification::open(OpenError::BadBgpIdentifier, Vec::new()));
        }
        Ok(())
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Option<()> {
        out.push(BGP_VERSION);
        out.extend_from_slice(&self.my_as.to_be_bytes());
        out.extend_from_slice(&self.hold_time.to_be_bytes());
        out.extend_from_slice(&self.bgp_id.octets());
        let mut caps = Vec::new();
        for c in &self.capabilities {
            c.encode(&mut caps)?;
        }
        if caps.is_empty() {
            out.push(0);
        } else if caps.len() + 2 <= 255 {
            // All capabilities in one Capabilities parameter, as BIRD and
            // FRR send them.
            out.push(u8::try_from(caps.len() + 2).ok()?);
            out.push(PARAM_CAPABILITIES);
            out.push(u8::try_from(caps.len()).ok()?);
            out.extend_from_slice(&caps);
        } else {
            // RFC 9072 §2: Non-Ext OP Len 255, Non-Ext OP Type 255, then a
            // 2-octet length and parameters with 2-octet lengths.
            let total = u16::try_from(caps.len() + 3).ok()?;
            out.extend_from_slice(&[255, PARAM_EXTENDED]);
            out.extend_from_slice(&total.to_be_bytes());
            out.push(PARAM_CAPABILITIES);
            out.extend_from_slice(&u16::try_from(caps.len()).ok()?.to_be_bytes());
            out.extend_from_slice(&caps);
        }
        Some(())
    }
}

pub(crate) fn decode_body(body: &[u8]) -> Result<Open, Notification> {
    let short = || {
        Notification::header(
            HeaderError::BadMessageLength,
            super::length_field(body.len() + super::HEADER_LEN),
        )
    };
    let (i, version) = u8_(body, short)?;
    // RFC 4271 §6.2: "If the version number in the Version field of the
    // received OPEN message is not supported, then the Error Subcode MUST be
    // set to Unsupported Version Number. The Data field is a 2-octet
    // unsigned integer, which indicates the largest, locally-supported
    // version number less than the version the remote BGP peer bid ..., or
    // if the smallest, locally-supported version number is greater than the
    // version the remote BGP peer bid, then the smallest, locally-supported
    // version number." Only version 4 exists here, so that is always 4.
    if version != BGP_VERSION {
        return Err(Notification::open(
            OpenError::UnsupportedVersionNumber,
            u16::from(BGP_VERSION).to_be_bytes().to_vec(),
        ));
    }
    let (i, my_as) = u16_(i, short)?;
    let (i, hold_time) = u16_(i, short)?;
    // RFC 4271 §6.2: "... the Hold Time field of the OPEN message ... MUST be
    // either zero or at least three seconds ... If the Hold Time field of
    // the OPEN message is unacceptable, then the Error Subcode MUST be set to
    // Unacceptable Hold Time."
    if hold_time == 1 || hold_time == 2 {
        return Err(Notification::open(
            OpenError::UnacceptableHoldTime,
            Vec::new(),
        ));
    }
    let (i, id) = u32_(i, short)?;
    // RFC 6286 §2.2: "If the BGP Identifier field of the OPEN message is
    // zero ... then the Error Subcode is set to "Bad BGP Identifier"."
    if id == 0 {
        return Err(Notification::open(OpenError::BadBgpIdentifier, Vec::new()));
    }
    let (i, opt_len) = u8_(i, short)?;
    let params = decode_params(i, opt_len)?;
    let mut capabilities = Vec::new();
    for (ty, value) in params {
        if ty != PARAM_CAPABILITIES {
            // RFC 4271 §6.2: "If one of the Optional Parameters in the OPEN
            // message is not recognized, then the Error Subcode MUST be set
            // to Unsupported Optional Parameters."
            return Err(Notification::open(
                OpenError::UnsupportedOptionalParameter,
                Vec::new(),
            ));
        }
        // RFC 5492 §4: a parameter holds one or more capability TLVs.
        let mut rest = value;
        while !rest.is_empty() {
            let (r, code) = u8_(rest, Notification::open_unspecific)?;
            let (r, len) = u8_(r, Notification::open_unspecific)?;
            let (r, v) = bytes(r, usize::from(len), Notification::open_unspecific)?;
            capabilities.push(Capability::decode(code, v)?);
            rest = r;
        }
    }
    Ok(Open {
        my_as,
        hold_time,
        bgp_id: Ipv4Addr::from(id),
        capabilities,
    })
}

/// Splits the Optional Parameters into (type, value), accepting both the
/// RFC 4271 format and the RFC 9072 extended one.
fn decode_params(i: &[u8], opt_len: u8) -> Result<Vec<(u8, &[u8])>, Notification> {
    // The parameters must fill the rest of the message exactly; RFC 4271
    // names no subcode for a mismatch, so it is Unspecific.
    let bad = Notification::open_unspecific;
    let mut out = Vec::new();
    let extended = opt_len == 255 && i.first() == Some(&PARAM_EXTENDED);
    if extended {
        // RFC 9072 §2: "the Non-Ext OP Type field ... 255 ... Extended
        // Opt. Parm. Length (2 octets)".
        let (r, _) = u8_(i, bad)?;
        let (r, len) = u16_(r, bad)?;
        if usize::from(len) != r.len() {
            return Err(bad());
        }
        let mut rest = r;
        while !rest.is_empty() {
            let (r, ty) = u8_(rest, bad)?;
            let (r, len) = u16_(r, bad)?;
            let (r, v) = bytes(r, usize::from(len), bad)?;
            out.push((ty, v));
            rest = r;
        }
    } else {
        if usize::from(opt_len) != i.len() {
            return Err(bad());
        }
        let mut rest = i;
        while !rest.is_empty() {
            let (r, (ty, v)) = super::parse::run(
                nom::number::complete::be_u8(rest).and_then(|(r, ty)| {
                    super::parse::length_value_u8(r).map(|(r, v)| (r, (ty, v)))
                }),
                bad,
            )?;
            out.push((ty, v));
            rest = r;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(open: &Open) -> Vec<u8> {
        let mut v = Vec::new();
        open.encode_body(&mut v).unwrap();
        v
    }

    #[test]
    fn pathosd_open_uses_as_trans_and_helper_only_graceful_restart() {
        let o = Open::pathosd(
            4_200_000_001,
            90,
            Ipv4Addr::new(192, 0, 2, 1),
            &[Afi::Ipv4, Afi::Ipv6],
            true,
            false,
            None,
        );
        assert_eq!(o.my_as, AS_TRANS);
        assert_eq!(o.asn(), 4_200_000_001);
        let gr = o.graceful_restart().unwrap();
        assert_eq!(gr.restart_time, 0);
        assert!(gr
            .families
            .iter()
            .all(|f| f.flags & GR_FAMILY_FORWARDING == 0));
        let b = body(&o);
        assert_eq!(decode_body(&b), Ok(o));
        let small = Open::pathosd(
            65001,
            90,
            Ipv4Addr::new(192, 0, 2, 1),
            &[Afi::Ipv4],
            false,
            false,
            None,
        );
        assert_eq!(small.my_as, 65001);
        assert!(small.graceful_restart().is_none());
    }

    #[test]
    fn open_errors_carry_rfc_subcodes() {
        let o = Open::new(65001, 90, Ipv4Addr::new(10, 0, 0, 1), vec![]);
        let good = body(&o);
        let mut v = good.clone();
        v[0] = 3;
        assert_eq!(
            decode_body(&v),
            Err(Notification::open(
                OpenError::UnsupportedVersionNumber,
                vec![0, 4]
            ))
        );
        for hold in [1u8, 2] {
            let mut v = good.clone();
            v[4] = hold;
            assert_eq!(
                decode_body(&v).unwrap_err().subcode,
                OpenError::UnacceptableHoldTime as u8
            );
        }
        let mut v = good.clone();
        v[4] = 0;
        assert_eq!(decode_body(&v).unwrap().hold_time, 0);
        let mut v = good.clone();
        v[5..9].copy_from_slice(&[0, 0, 0, 0]);
        assert_eq!(
            decode_body(&v).unwrap_err().subcode,
            OpenError::BadBgpIdentifier as u8
        );
        let mut v = good.clone();
        v[9] = 3;
        v.extend_from_slice(&[1, 1, 0]);
        assert_eq!(
            decode_body(&v).unwrap_err().subcode,
            OpenError::UnsupportedOptionalParameter as u8
        );
        let mut v = good.clone();
        v[9] = 4;
        v.extend_from_slice(&[2, 2, 65, 4]);
        assert_eq!(decode_body(&v), Err(Notification::open_unspecific()));
    }

    #[test]
    fn validate_checks_peer_as_and_ibgp_identifier() {
        let id = Ipv4Addr::new(10, 0, 0, 1);
        let o = Open::pathosd(4_200_000_001, 90, id, &[Afi::Ipv4], false, false, None);
        assert_eq!(
            o.validate(65001, Ipv4Addr::new(10, 0, 0, 2), 4_200_000_001),
            Ok(())
        );
        assert_eq!(
            o.validate(65001, Ipv4Addr::new(10, 0, 0, 2), 23456)
                .unwrap_err()
                .subcode,
            OpenError::BadPeerAs as u8
        );
        assert_eq!(
            o.validate(4_200_000_001, id, 4_200_000_001)
                .unwrap_err()
                .subcode,
            OpenError::BadBgpIdentifier as u8
        );
    }

    #[test]
    fn extended_optional_parameters_round_trip() {
        let caps: Vec<Capability> = (0..100u8)
            .map(|i| Capability::Unknown {
                code: 200,
                value: vec![i],
            })
            .collect();
        let o = Open::new(65001, 90, Ipv4Addr::new(10, 0, 0, 1), caps);
        let b = body(&o);
        assert_eq!(&b[9..11], &[255, 255]);
        assert_eq!(decode_body(&b), Ok(o));
    }
}
