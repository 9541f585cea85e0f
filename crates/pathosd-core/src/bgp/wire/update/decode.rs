//! The UPDATE decoder: an UPDATE's body into an [`Update`], with RFC 7606's
//! revised error handling. The errors a session survives (attribute
//! discard, treat-as-withdraw) are listed in [`Update::errors`]; the rest
//! are the NOTIFICATION to send.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{
    at, expected_flags, AsPath, AsSegment, AttrAction, AttrError, MpNextHop, MpReach, MpUnreach,
    PathAttr, SegmentType, Update, FLAG_EXTENDED, FLAG_OPTIONAL, FLAG_TRANSITIVE,
};
use crate::bgp::types::{Afi, Community, LargeCommunity, Origin, Prefix};
use crate::bgp::wire::parse::{bytes, u16_, u8_};
use crate::bgp::wire::{
    afi_from_code, length_field, DecodeCtx, HeaderError, Notification, UpdateError, HEADER_LEN,
    SAFI_UNICAST,
};

impl AsPath {
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

fn malformed_list() -> Notification {
    Notification::update(UpdateError::MalformedAttributeList, Vec::new())
}

fn invalid_network() -> Notification {
    Notification::update(UpdateError::InvalidNetworkField, Vec::new())
}

/// Decodes an UPDATE body (everything after the 19-byte header).
pub(crate) fn decode_body(body: &[u8], ctx: &DecodeCtx) -> Result<Update, Notification> {
    // RFC 4271 §6.3: "If the Withdrawn Routes Length or Total Attribute
    // Length is too large (i.e., if Withdrawn Routes Length + Total
    // Attribute Length + 23 exceeds the message Length), then the Error
    // Subcode MUST be set to Malformed Attribute List." RFC 7606 §5.3 keeps
    // this a session reset: without the lengths the NLRI cannot be found.
    let short = || {
        Notification::header(
            HeaderError::BadMessageLength,
            length_field(body.len() + HEADER_LEN),
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
    let seen = decode_attrs(abytes, ctx, &mut update)?;
    check_attr_errors(&mut update, &seen)?;
    Ok(update)
}

/// Decodes the path attributes into `update` (the errors a session
/// survives into its `errors`); returns which type codes were present.
fn decode_attrs(
    abytes: &[u8],
    ctx: &DecodeCtx,
    update: &mut Update,
) -> Result<[bool; 256], Notification> {
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

    Ok(seen)
}

/// The checks once every attribute is read: a treat-as-withdraw error
/// with nothing to withdraw, and a missing well-known mandatory attribute.
fn check_attr_errors(update: &mut Update, seen: &[bool; 256]) -> Result<(), Notification> {
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
    Ok(())
}

/// Decodes one attribute value; the error says which RFC 7606 approach
/// applies.
fn decode_attr(
    flags: u8,
    type_code: u8,
    v: &[u8],
    whole: &[u8],
    ctx: &DecodeCtx,
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
    ctx: &DecodeCtx,
    len_err: &LenErr<'_>,
    fail: &Fail<'_>,
) -> Result<PathAttr, AttrError> {
    let taw = AttrAction::TreatAsWithdraw;
    let discard = AttrAction::Discard;
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
        _ => decode_extension(type_code, v, whole, ctx, len_err, fail)?,
    })
}

/// The attributes of RFC 4271's extensions: communities (RFC 1997, RFC
/// 8092), the four-octet AS copies (RFC 6793), the multiprotocol ones (RFC
/// 4760); any other is kept raw.
fn decode_extension(
    type_code: u8,
    v: &[u8],
    whole: &[u8],
    ctx: &DecodeCtx,
    len_err: &LenErr<'_>,
    fail: &Fail<'_>,
) -> Result<PathAttr, AttrError> {
    let taw = AttrAction::TreatAsWithdraw;
    let discard = AttrAction::Discard;
    let reset = AttrAction::Reset;
    Ok(match type_code {
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
        // RFC 9234 §5: "The OTC Attribute is considered malformed if the
        // length value is not 4. An UPDATE message with a malformed OTC
        // Attribute SHALL be handled using the approach of
        // "treat-as-withdraw"".
        at::OTC => match *v {
            [a, b, c, d] => PathAttr::Otc(u32::from_be_bytes([a, b, c, d])),
            _ => return Err(len_err(taw)),
        },
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
    // link-local) octets; RFC 8950 allows them for IPv4 NLRI too (pathosd
    // imports no routes, so they are taken whether it offered that or not).
    let next_hop = match (afi, nh.len()) {
        (Afi::Ipv4, 4) => MpNextHop::Ipv4(Ipv4Addr::new(nh[0], nh[1], nh[2], nh[3])),
        (_, 16) => MpNextHop::Ipv6 {
            global: Ipv6Addr::from(<[u8; 16]>::try_from(nh).ok()?),
            link_local: None,
        },
        (_, 32) => MpNextHop::Ipv6 {
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
