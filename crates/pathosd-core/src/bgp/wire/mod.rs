//! BGP-4 wire codec: framing, decoding and encoding of the five message
//! types, without I/O.
//!
//! A TCP reader first calls [`frame`] on its buffer: it checks the 19-byte
//! header (RFC 4271 §4.1, §6.1) and says how long the next message is once it
//! is fully buffered. Only then [`decode`] parses the whole message with
//! `complete` parsers, so a short read can never be mistaken for a malformed
//! message. Every decode error is the [`Notification`] to send to the peer;
//! RFC 7606 recoverable UPDATE errors are not errors but are reported inside
//! the decoded [`Update`] (see [`AttrError`]).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                                                               +
//! |                           Marker                              |
//! +                                                               +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Length               |      Type     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

mod notification;
mod open;
mod pack;
mod parse;
mod update;

pub use notification::{
    CeaseSubcode, ErrorCode, FsmError, HeaderError, Notification, OpenError, RouteRefreshError,
    UpdateError, MAX_SHUTDOWN_COMMUNICATION, UNSPECIFIC,
};
pub use open::{
    Capability, GracefulRestart, GracefulRestartFamily, Open, AS_TRANS, BGP_VERSION,
    GR_FAMILY_FORWARDING, GR_FLAG_NOTIFICATION, GR_FLAG_RESTART_STATE, ROLE_CONFLICT,
};
pub use pack::{encode_end_of_rib, encode_updates, wire_attrs, SkipReason, Skipped, Updates};
pub use update::{
    attr_type, AsPath, AsSegment, AttrAction, AttrError, MpNextHop, MpReach, MpUnreach, PathAttr,
    SegmentType, Update,
};

use crate::bgp::types::Afi;

/// All-ones marker (RFC 4271 §4.1: "This 16-octet field is included for
/// compatibility; it MUST be set to all ones").
pub const MARKER: [u8; 16] = [0xff; 16];
pub const HEADER_LEN: usize = 19;
/// RFC 4271 §4.1: "The value of the Length field MUST always be at least 19
/// and no greater than 4096". Extended messages (RFC 8654) are not offered.
pub const MAX_MESSAGE_LEN: usize = 4096;

/// RFC 4760 Address Family Identifiers and the one SAFI pathosd uses.
pub const AFI_IPV4: u16 = 1;
pub const AFI_IPV6: u16 = 2;
pub const SAFI_UNICAST: u8 = 1;

/// Message type codes (RFC 4271 §4.1, RFC 2918 §3 for ROUTE-REFRESH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MessageType {
    Open = 1,
    Update = 2,
    Notification = 3,
    Keepalive = 4,
    RouteRefresh = 5,
}

impl MessageType {
    pub fn from_u8(v: u8) -> Option<MessageType> {
        Some(match v {
            1 => MessageType::Open,
            2 => MessageType::Update,
            3 => MessageType::Notification,
            4 => MessageType::Keepalive,
            5 => MessageType::RouteRefresh,
            _ => return None,
        })
    }

    /// RFC 4271 §6.1 minimum (and for KEEPALIVE exact) message lengths.
    fn min_len(self) -> usize {
        match self {
            // 19 header + version, My AS, Hold Time, BGP Identifier, Opt Parm Len.
            MessageType::Open => 29,
            // 19 header + Withdrawn Routes Length + Total Path Attribute Length.
            MessageType::Update => 23,
            // 19 header + Error code + Error subcode.
            MessageType::Notification => 21,
            MessageType::Keepalive => 19,
            // 19 header + AFI, Reserved/Subtype, SAFI (RFC 2918 §3).
            MessageType::RouteRefresh => 23,
        }
    }
}

/// What the decoder needs to know about the session (negotiated state is
/// data, never global).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeCtx {
    /// Both sides advertised the four-octet AS capability (RFC 6793 §3), so
    /// AS_PATH and AGGREGATOR carry four-octet AS numbers.
    pub four_octet_as: bool,
    /// The peer is in another AS (changes RFC 7606 handling of LOCAL_PREF
    /// and confederation segments).
    pub ebgp: bool,
}

impl DecodeCtx {
    /// The context after both OPENs: four-octet ASes only if both sides
    /// advertised the capability (RFC 6793 §4), eBGP if the ASes differ.
    pub fn negotiated(ours: &Open, theirs: &Open) -> DecodeCtx {
        DecodeCtx {
            four_octet_as: ours.four_octet_as().is_some() && theirs.four_octet_as().is_some(),
            ebgp: ours.asn() != theirs.asn(),
        }
    }
}

/// ROUTE-REFRESH (RFC 2918 §3). `subtype` is the former Reserved octet, which
/// RFC 7313 §3.2 uses for BoRR (1) and EoRR (2); 0 is a plain refresh request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RouteRefresh {
    pub afi: u16,
    pub subtype: u8,
    pub safi: u8,
}

impl RouteRefresh {
    /// A plain refresh request for the unicast SAFI of `afi`.
    pub fn request(afi: Afi) -> RouteRefresh {
        RouteRefresh {
            afi: afi_code(afi),
            subtype: 0,
            safi: SAFI_UNICAST,
        }
    }

    /// The address family when it is one pathosd speaks.
    pub fn afi(&self) -> Option<Afi> {
        if self.safi != SAFI_UNICAST {
            return None;
        }
        afi_from_code(self.afi)
    }
}

/// One BGP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Open(Open),
    Update(Update),
    Notification(Notification),
    Keepalive,
    RouteRefresh(RouteRefresh),
}

impl Message {
    pub(crate) fn message_type(&self) -> MessageType {
        match self {
            Message::Open(_) => MessageType::Open,
            Message::Update(_) => MessageType::Update,
            Message::Notification(_) => MessageType::Notification,
            Message::Keepalive => MessageType::Keepalive,
            Message::RouteRefresh(_) => MessageType::RouteRefresh,
        }
    }
}

/// One line per message for logs, e.g. `UPDATE +3 -1 prefixes` or
/// `OPEN AS 65001 hold 90 id 192.0.2.1`.
impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Open(o) => write!(
                f,
                "OPEN AS {} hold {} id {} ({} capabilities)",
                o.asn(),
                o.hold_time,
                o.bgp_id,
                o.capabilities.len()
            ),
            Message::Update(u) => match u.is_end_of_rib() {
                Some(afi) => write!(f, "UPDATE End-of-RIB {afi:?}"),
                None => {
                    write!(
                        f,
                        "UPDATE +{} -{} prefixes",
                        u.announced().len(),
                        u.withdrawn_prefixes().len()
                    )?;
                    for e in &u.errors {
                        write!(f, "; {e}")?;
                    }
                    Ok(())
                }
            },
            Message::Notification(n) => write!(f, "NOTIFICATION {n}"),
            Message::Keepalive => f.write_str("KEEPALIVE"),
            Message::RouteRefresh(r) => write!(
                f,
                "ROUTE-REFRESH AFI {} SAFI {} subtype {}",
                r.afi, r.safi, r.subtype
            ),
        }
    }
}

pub(crate) fn afi_code(afi: Afi) -> u16 {
    match afi {
        Afi::Ipv4 => AFI_IPV4,
        Afi::Ipv6 => AFI_IPV6,
    }
}

pub(crate) fn afi_from_code(code: u16) -> Option<Afi> {
    match code {
        AFI_IPV4 => Some(Afi::Ipv4),
        AFI_IPV6 => Some(Afi::Ipv6),
        _ => None,
    }
}

/// A length as the 2-octet data of a Bad Message Length NOTIFICATION.
pub(crate) fn length_field(len: usize) -> Vec<u8> {
    u16::try_from(len)
        .unwrap_or(u16::MAX)
        .to_be_bytes()
        .to_vec()
}

/// Checks the message header at the start of `buf` and returns the length of
/// the first message once all of it is buffered (`Ok(None)`: read more).
///
/// RFC 4271 §6.1 header checks, in the RFC's order:
/// * marker not all ones → Connection Not Synchronized;
/// * length < 19, > 4096, or below the minimum for the type (exactly 19 for
///   KEEPALIVE) → Bad Message Length, data = the Length field;
/// * unknown type → Bad Message Type, data = the Type field.
pub fn frame(buf: &[u8]) -> Result<Option<usize>, Notification> {
    // An early mismatch in the marker is reported without waiting for 19 octets.
    let seen = buf.len().min(MARKER.len());
    if buf[..seen] != MARKER[..seen] {
        return Err(Notification::header(
            HeaderError::ConnectionNotSynchronized,
            Vec::new(),
        ));
    }
    let header = match buf.get(..HEADER_LEN) {
        Some(h) => h,
        None => return Ok(None),
    };
    let len = usize::from(u16::from_be_bytes([header[16], header[17]]));
    let bad_length =
        || Notification::header(HeaderError::BadMessageLength, vec![header[16], header[17]]);
    if !(HEADER_LEN..=MAX_MESSAGE_LEN).contains(&len) {
        return Err(bad_length());
    }
    let ty = match MessageType::from_u8(header[18]) {
        Some(t) => t,
        None => {
            return Err(Notification::header(
                HeaderError::BadMessageType,
                vec![header[18]],
            ))
        }
    };
    if len < ty.min_len() || (ty == MessageType::Keepalive && len != HEADER_LEN) {
        return Err(bad_length());
    }
    Ok(if buf.len() >= len { Some(len) } else { None })
}

/// Decodes one complete message (exactly the bytes [`frame`] delimited).
pub fn decode(msg: &[u8], ctx: &DecodeCtx) -> Result<Message, Notification> {
    let len = match frame(msg)? {
        Some(l) => l,
        None => {
            return Err(Notification::header(
                HeaderError::BadMessageLength,
                msg.get(16..18).map(<[u8]>::to_vec).unwrap_or_default(),
            ))
        }
    };
    if len != msg.len() {
        // The caller passed more than one message: a framing bug, but still
        // reported as the header it contradicts.
        return Err(Notification::header(
            HeaderError::BadMessageLength,
            vec![msg[16], msg[17]],
        ));
    }
    let body = &msg[HEADER_LEN..];
    match MessageType::from_u8(msg[18]) {
        Some(MessageType::Open) => open::decode_body(body).map(Message::Open),
        Some(MessageType::Update) => update::decode_body(body, ctx).map(Message::Update),
        Some(MessageType::Notification) => {
            Notification::decode_body(body).map(Message::Notification)
        }
        Some(MessageType::Keepalive) => Ok(Message::Keepalive),
        Some(MessageType::RouteRefresh) => decode_route_refresh(msg).map(Message::RouteRefresh),
        // frame() already rejected unknown types.
        None => Err(Notification::header(
            HeaderError::BadMessageType,
            vec![msg[18]],
        )),
    }
}

fn decode_route_refresh(msg: &[u8]) -> Result<RouteRefresh, Notification> {
    let body = &msg[HEADER_LEN..];
    match body {
        [a0, a1, subtype, safi] => Ok(RouteRefresh {
            afi: u16::from_be_bytes([*a0, *a1]),
            subtype: *subtype,
            safi: *safi,
        }),
        [_, _, 1 | 2, ..] => {
            // RFC 7313 §5: "If the length, excluding the fixed-size message
            // header, of the received ROUTE-REFRESH message with Message
            // Subtype 1 and 2 is not 4, then the BGP speaker MUST send a
            // NOTIFICATION message with the Error Code of "ROUTE-REFRESH
            // Message Error" and the subcode of "Invalid Message Length". The
            // Data field of the NOTIFICATION message MUST contain the
            // complete ROUTE-REFRESH message."
            Err(Notification::new(
                ErrorCode::RouteRefreshMessage,
                RouteRefreshError::InvalidMessageLength as u8,
                msg.to_vec(),
            ))
        }
        _ => Err(Notification::header(
            HeaderError::BadMessageLength,
            vec![msg[16], msg[17]],
        )),
    }
}

/// Encodes a message; `ctx` decides the AS number width in UPDATEs.
/// Returns `None` only if the message would exceed 4096 octets.
pub fn encode(msg: &Message, ctx: &DecodeCtx) -> Option<Vec<u8>> {
    let mut out = header_start();
    match msg {
        Message::Open(o) => o.encode_body(&mut out)?,
        Message::Update(u) => u.encode_body(ctx.four_octet_as, &mut out)?,
        Message::Notification(n) => n.encode_body(&mut out),
        Message::Keepalive => {}
        Message::RouteRefresh(r) => {
            out.extend_from_slice(&r.afi.to_be_bytes());
            out.push(r.subtype);
            out.push(r.safi);
        }
    }
    finish_header(out, msg.message_type())
}

/// The KEEPALIVE message: a bare header (RFC 4271 §4.4).
pub fn encode_keepalive() -> Vec<u8> {
    let mut out = header_start();
    out[16] = 0;
    out[17] = HEADER_LEN as u8;
    out[18] = MessageType::Keepalive as u8;
    out
}

pub(crate) fn header_start() -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(&[0, 0, 0]);
    out
}

/// Fills in Length and Type; `None` if the message is too long to send.
pub(crate) fn finish_header(mut out: Vec<u8>, ty: MessageType) -> Option<Vec<u8>> {
    if out.len() > MAX_MESSAGE_LEN {
        return None;
    }
    let len = u16::try_from(out.len()).ok()?;
    out[16..18].copy_from_slice(&len.to_be_bytes());
    out[18] = ty as u8;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(len: u16, ty: u8) -> Vec<u8> {
        let mut v = MARKER.to_vec();
        v.extend_from_slice(&len.to_be_bytes());
        v.push(ty);
        v
    }

    #[test]
    fn frame_waits_for_complete_message() {
        let ka = encode_keepalive();
        assert_eq!(frame(&ka[..10]), Ok(None));
        assert_eq!(frame(&ka), Ok(Some(19)));
        let mut two = ka.clone();
        two.extend_from_slice(&ka);
        assert_eq!(frame(&two), Ok(Some(19)));
        let mut upd = hdr(23, 2);
        assert_eq!(frame(&upd), Ok(None));
        upd.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(frame(&upd), Ok(Some(23)));
    }

    #[test]
    fn frame_rejects_bad_headers() {
        let mut bad_marker = hdr(19, 4);
        bad_marker[3] = 0;
        assert_eq!(
            frame(&bad_marker),
            Err(Notification::header(
                HeaderError::ConnectionNotSynchronized,
                vec![]
            ))
        );
        assert_eq!(
            frame(&[0xff, 0xfe]).map_err(|n| (n.code, n.subcode)),
            Err((1, 1))
        );
        for (len, ty) in [(18u16, 4u8), (4097, 2), (20, 4), (28, 1), (22, 2), (20, 3)] {
            assert_eq!(
                frame(&hdr(len, ty)),
                Err(Notification::header(
                    HeaderError::BadMessageLength,
                    len.to_be_bytes().to_vec()
                )),
                "len {len} type {ty}"
            );
        }
        assert_eq!(
            frame(&hdr(19, 9)),
            Err(Notification::header(HeaderError::BadMessageType, vec![9]))
        );
    }

    #[test]
    fn keepalive_and_route_refresh_round_trip() {
        let ctx = DecodeCtx::default();
        assert_eq!(decode(&encode_keepalive(), &ctx), Ok(Message::Keepalive));
        assert_eq!(encode(&Message::Keepalive, &ctx), Some(encode_keepalive()));
        let rr = Message::RouteRefresh(RouteRefresh::request(Afi::Ipv6));
        assert_eq!(rr.to_string(), "ROUTE-REFRESH AFI 2 SAFI 1 subtype 0");
        assert_eq!(
            Message::Update(Update::end_of_rib(Afi::Ipv6)).to_string(),
            "UPDATE End-of-RIB Ipv6"
        );
        let bytes = encode(&rr, &ctx).unwrap();
        assert_eq!(&bytes[16..], &[0, 23, 5, 0, 2, 0, 1]);
        assert_eq!(decode(&bytes, &ctx), Ok(rr));
    }

    #[test]
    fn route_refresh_length_errors() {
        let ctx = DecodeCtx::default();
        let mut borr = hdr(24, 5);
        borr.extend_from_slice(&[0, 1, 1, 1, 0]);
        let n = decode(&borr, &ctx).unwrap_err();
        assert_eq!((n.code, n.subcode), (7, 1));
        assert_eq!(n.data, borr);
        let mut plain = hdr(24, 5);
        plain.extend_from_slice(&[0, 1, 0, 1, 0]);
        let n = decode(&plain, &ctx).unwrap_err();
        assert_eq!((n.code, n.subcode, n.data), (1, 2, vec![0, 24]));
    }

    #[test]
    fn negotiated_context_needs_both_four_octet_capabilities() {
        let id = std::net::Ipv4Addr::new(10, 0, 0, 1);
        let ours = Open::pathosd(65001, 90, id, &[Afi::Ipv4], false, false, None);
        let new_peer = Open::pathosd(65002, 90, id, &[Afi::Ipv4], false, false, None);
        let old_peer = Open::new(65001, 90, id, vec![]);
        assert_eq!(
            DecodeCtx::negotiated(&ours, &new_peer),
            DecodeCtx {
                four_octet_as: true,
                ebgp: true
            }
        );
        assert_eq!(
            DecodeCtx::negotiated(&ours, &old_peer),
            DecodeCtx {
                four_octet_as: false,
                ebgp: false
            }
        );
    }

    #[test]
    fn decode_rejects_trailing_bytes() {
        let mut two = encode_keepalive();
        two.push(0);
        let n = decode(&two, &DecodeCtx::default()).unwrap_err();
        assert_eq!((n.code, n.subcode), (1, 2));
    }
}
