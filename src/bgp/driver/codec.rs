//! The one place the driver touches the wire codec: turns framed bytes into
//! FSM events and FSM actions / RIB-out changes into bytes. The FSM uses the
//! codec's NOTIFICATION type as is.

use super::super::fsm::{Capabilities, Event, Notification, OpenInfo};
use super::super::types::Afi;
use super::super::wire::{self, DecodeCtx, ErrorCode, Message, OpenError};

/// Message kinds, for the per-type counters in the peer status.
pub(crate) use super::super::session::MessageKind as Kind;

/// RFC 4271 §6.1 header checks: `Ok(Some(len))` once a whole message is
/// buffered, `Ok(None)` to read more, `Err` the Message Header Error to send.
pub fn frame(buf: &[u8]) -> Result<Option<usize>, Notification> {
    wire::frame(buf)
}

/// The FSM event for one framed message, or `None` for a message the FSM
/// does not see (a ROUTE-REFRESH for a family we do not speak: RFC 2918 §4
/// says to ignore it). Codec errors become the RFC 4271 §8.1 error events
/// by the error code the codec chose: Message Header Error → BGPHeaderErr,
/// OPEN Message Error → BGPOpenMsgErr, UPDATE Message Error → UpdateMsgErr.
pub fn decode(msg: &[u8], ctx: &DecodeCtx, peer: &str) -> Option<Event> {
    match wire::decode(msg, ctx) {
        Ok(Message::Open(o)) => Some(Event::BGPOpen(open_info(&o))),
        Ok(Message::Update(u)) => {
            for e in &u.errors {
                log::warn!("bgp peer {peer}: received UPDATE error handled per RFC 7606: {e}");
            }
            if let Some(report) = u.withdraw_report(msg) {
                log::warn!("bgp peer {peer}: UPDATE {report}");
            }
            Some(Event::UpdateMsg)
        }
        Ok(Message::Notification(n)) => {
            // RFC 4271 §8.1.2 Event 24: a NOTIFICATION with "the Error Code
            // of OPEN Message Error and the Error Subcode of Unsupported
            // Version Number" is NotifMsgVerErr.
            if n.error_code() == Some(ErrorCode::OpenMessage)
                && n.subcode == OpenError::UnsupportedVersionNumber as u8
            {
                Some(Event::NotifMsgVerErr)
            } else {
                Some(Event::NotifMsg(n))
            }
        }
        Ok(Message::Keepalive) => Some(Event::KeepAliveMsg),
        Ok(Message::RouteRefresh(r)) => r.afi().map(Event::RouteRefreshMsg),
        Err(n) => Some(match n.error_code() {
            Some(ErrorCode::OpenMessage) => Event::BGPOpenMsgErr(n),
            Some(ErrorCode::UpdateMessage) => Event::UpdateMsgErr(n),
            _ => Event::BGPHeaderErr(n),
        }),
    }
}

/// The FSM's view of a received OPEN. The AS is the four-octet one when
/// the capability is present (RFC 6793 §4.1: AS_TRANS in My Autonomous
/// System is resolved here, before the FSM compares it with peer_asn).
fn open_info(o: &wire::Open) -> OpenInfo {
    let families = o.families();
    let has = |afi: Afi| {
        families
            .iter()
            .any(|(a, s)| *a == wire_afi(afi) && *s == wire::SAFI_UNICAST)
    };
    OpenInfo {
        asn: o.asn(),
        hold_time: o.hold_time,
        bgp_id: o.bgp_id,
        capabilities: Capabilities {
            four_octet_as: o.four_octet_as().is_some(),
            mp_ipv4: has(Afi::Ipv4),
            mp_ipv6: has(Afi::Ipv6),
            route_refresh: o.supports_route_refresh(),
            graceful_restart: o.graceful_restart().is_some(),
            extended_next_hop: o.extended_next_hop_ipv4(),
            role: o.role(),
        },
    }
}

fn wire_afi(afi: Afi) -> u16 {
    match afi {
        Afi::Ipv4 => wire::AFI_IPV4,
        Afi::Ipv6 => wire::AFI_IPV6,
    }
}

/// Our OPEN: the families of `info.capabilities`, Route Refresh, 4-octet AS
/// and (when `graceful_restart`) the helper-only Graceful Restart capability.
pub(crate) fn encode_open(info: &OpenInfo) -> Vec<u8> {
    let caps = &info.capabilities;
    let mut families = Vec::new();
    if caps.mp_ipv4 {
        families.push(Afi::Ipv4);
    }
    if caps.mp_ipv6 {
        families.push(Afi::Ipv6);
    }
    let open = wire::Open::pathosd(
        info.asn,
        info.hold_time,
        info.bgp_id,
        &families,
        caps.graceful_restart,
        caps.extended_next_hop,
        caps.role,
    );
    // An OPEN with at most five capabilities is far below 4096 octets.
    wire::encode(&Message::Open(open), &DecodeCtx::default()).unwrap_or_default()
}

pub fn encode_keepalive() -> Vec<u8> {
    wire::encode_keepalive()
}

pub(crate) fn encode_notification(n: &Notification) -> Vec<u8> {
    let mut n = n.clone();
    // RFC 4271 §4.5: the Data field must fit the 4096-octet message; data
    // we echo back (e.g. a bad attribute) is cut rather than not sent.
    n.data
        .truncate(wire::MAX_MESSAGE_LEN - wire::HEADER_LEN - 2);
    wire::encode(&Message::Notification(n), &DecodeCtx::default()).unwrap_or_default()
}

/// The decoder context for a session.
pub fn ctx(four_octet_as: bool, ebgp: bool) -> DecodeCtx {
    DecodeCtx {
        four_octet_as,
        ebgp,
    }
}

pub(crate) type Ctx = DecodeCtx;

/// "Cease / Administrative Shutdown: \"text\"" for logs and status.
pub(crate) fn describe(n: &Notification) -> String {
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn open_round_trips_into_fsm_view() {
        let info = OpenInfo {
            asn: 4_200_000_001,
            hold_time: 9,
            bgp_id: Ipv4Addr::new(192, 0, 2, 1),
            capabilities: Capabilities {
                four_octet_as: true,
                mp_ipv4: true,
                mp_ipv6: true,
                route_refresh: true,
                graceful_restart: true,
                extended_next_hop: true,
                role: None,
            },
        };
        let bytes = encode_open(&info);
        assert_eq!(frame(&bytes).unwrap(), Some(bytes.len()));
        assert_eq!(Kind::of(&bytes), Some(Kind::Open));
        // AS_TRANS on the wire, the real AS in the event.
        assert_eq!(
            decode(&bytes, &DecodeCtx::default(), "t"),
            Some(Event::BGPOpen(info))
        );
    }

    #[test]
    fn codec_errors_map_to_fsm_error_events() {
        let mut bad = encode_keepalive();
        bad[0] = 0;
        assert_eq!(frame(&bad).unwrap_err().code, 1);
        let mut open = encode_open(&OpenInfo {
            asn: 65001,
            hold_time: 90,
            bgp_id: Ipv4Addr::new(192, 0, 2, 1),
            capabilities: Capabilities::default(),
        });
        open[19] = 3; // version 3
        assert!(matches!(
            decode(&open, &DecodeCtx::default(), "t"),
            Some(Event::BGPOpenMsgErr(n)) if n.code == 2 && n.subcode == 1
        ));
        let shut = Notification::administrative_shutdown("bye");
        let bytes = encode_notification(&shut);
        assert_eq!(
            decode(&bytes, &DecodeCtx::default(), "t"),
            Some(Event::NotifMsg(shut.clone()))
        );
        assert!(describe(&shut).contains("bye"));
    }
}
