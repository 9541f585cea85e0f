//! Fuzzes the BGP codec: `frame` over a byte stream, `decode` of each framed
//! message under every DecodeCtx, and for every decoded message the round
//! trip decode(encode(m)) == m (for UPDATEs repaired under RFC 7606: the
//! same prefixes and kept attributes). A second mode feeds `encode_updates`
//! and checks that its messages fit and decode back to the input prefixes.
//! Panics (including overflow, which is checked in this profile) are the
//! bugs it looks for.
//!
//! First input byte: bit 0 four-octet AS, bit 1 eBGP, bit 2 "raw body" mode
//! where the fuzzer supplies only type + body and a valid header is built
//! (so it need not rediscover the marker and length to reach the body
//! parsers), bit 3 `encode_updates` mode.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use pathosd::bgp::types::{Community, LargeCommunity, Origin, PathAttrs, Prefix};
use pathosd::bgp::wire::{
    decode, encode, encode_updates, frame, DecodeCtx, Message, MARKER, MAX_MESSAGE_LEN,
};

fn check_round_trip(m: &Message, ctx: &DecodeCtx) {
    // Log formatting must not panic either.
    let _ = m.to_string();
    let Some(bytes) = encode(m, ctx) else {
        return;
    };
    let again = decode(&bytes, ctx).expect("re-encoded message must decode");
    match (m, &again) {
        (Message::Update(a), Message::Update(b)) if !a.errors.is_empty() => {
            // Discarded attributes are gone and the rest was valid, so
            // re-encoding keeps exactly what survived.
            assert_eq!(a.withdrawn, b.withdrawn);
            assert_eq!(a.attrs, b.attrs);
            assert_eq!(a.nlri, b.nlri);
            let _ = (a.announced(), a.withdrawn_prefixes(), a.next_hop());
        }
        _ => assert_eq!(&again, m, "round trip changed the message"),
    }
}

fn decode_one(msg: &[u8], ctx: &DecodeCtx) {
    match decode(msg, ctx) {
        Ok(m) => check_round_trip(&m, ctx),
        Err(n) => {
            let _ = n.to_string();
        }
    }
}

/// Routes and withdrawals from fuzz bytes, then checks the packed UPDATEs.
fn fuzz_encode_updates(data: &[u8], four_octet_as: bool) {
    let Some((head, body)) = data.split_first_chunk::<4>() else {
        return;
    };
    let path_len = usize::from(head[0]) % 300;
    let as_path: Vec<u32> = (0..path_len)
        .map(|i| u32::from_be_bytes(*head).wrapping_mul(i as u32 + 1))
        .collect();
    let attrs = [
        PathAttrs {
            origin: Origin::Igp,
            as_path: as_path.clone(),
            next_hop: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            med: (head[1] & 1 != 0).then_some(u32::from(head[2])),
            local_pref: (head[1] & 2 != 0).then_some(100),
            communities: (0..head[2] % 40)
                .map(|i| Community(65001, u16::from(i)))
                .collect(),
            large_communities: (0..head[3] % 20)
                .map(|i| LargeCommunity(1, 2, u32::from(i)))
                .collect(),
            otc: (head[1] & 4 != 0).then_some(65001),
        },
        PathAttrs {
            origin: Origin::Incomplete,
            as_path,
            next_hop: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            med: None,
            local_pref: None,
            communities: vec![],
            large_communities: vec![],
            otc: None,
        },
    ];
    let mut routes = Vec::new();
    let mut withdrawn = Vec::new();
    for c in body.chunks_exact(17) {
        let ctl = c[0];
        let len = ctl & 0x7f;
        let p = if ctl & 0x80 == 0 {
            let a = Ipv4Addr::new(c[1], c[2], c[3], c[4]);
            Prefix::new(IpAddr::V4(a), len % 33)
        } else {
            let mut b = [0u8; 16];
            b.copy_from_slice(&c[1..17]);
            Prefix::new(IpAddr::V6(Ipv6Addr::from(b)), len % 129)
        };
        let Ok(p) = p else { continue };
        match c[16] % 3 {
            0 => withdrawn.push(p),
            1 => routes.push((p, attrs[0].clone())),
            _ => routes.push((p, attrs[1].clone())),
        }
    }
    let out = encode_updates(&routes, &withdrawn, four_octet_as);
    let msgs = out.messages;
    let ctx = DecodeCtx {
        four_octet_as,
        ebgp: false,
    };
    let mut announced = Vec::new();
    let mut gone = Vec::new();
    for m in &msgs {
        assert!(m.len() <= MAX_MESSAGE_LEN);
        let Ok(Message::Update(u)) = decode(m, &ctx) else {
            panic!("encode_updates produced an undecodable message");
        };
        assert!(u.errors.is_empty(), "{:?}", u.errors);
        announced.extend(u.announced());
        gone.extend(u.withdrawn_prefixes());
    }
    // IPv4 routes with the IPv6 next hop cannot be sent (no RFC 8950).
    let mut want: Vec<Prefix> = routes
        .iter()
        .filter(|(p, a)| !(p.addr().is_ipv4() && a.next_hop.is_ipv6()))
        .map(|(p, _)| *p)
        .collect();
    want.sort();
    announced.sort();
    assert_eq!(announced, want);
    // ... and are returned as skipped, the only routes that are.
    let mut skipped: Vec<Prefix> = out.skipped.iter().flat_map(|s| s.prefixes.clone()).collect();
    let mut unsendable: Vec<Prefix> = routes
        .iter()
        .filter(|(p, a)| p.addr().is_ipv4() && a.next_hop.is_ipv6())
        .map(|(p, _)| *p)
        .collect();
    skipped.sort();
    unsendable.sort();
    assert_eq!(skipped, unsendable);
    withdrawn.sort();
    gone.sort();
    assert_eq!(gone, withdrawn);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let ctx = DecodeCtx {
        four_octet_as: mode & 1 != 0,
        ebgp: mode & 2 != 0,
    };
    if mode & 8 != 0 {
        fuzz_encode_updates(rest, ctx.four_octet_as);
        return;
    }
    if mode & 4 != 0 {
        let Some((&ty, body)) = rest.split_first() else {
            return;
        };
        let body = &body[..body.len().min(MAX_MESSAGE_LEN - 19)];
        let mut msg = MARKER.to_vec();
        msg.extend_from_slice(&((body.len() + 19) as u16).to_be_bytes());
        msg.push(ty % 6);
        msg.extend_from_slice(body);
        decode_one(&msg, &ctx);
        return;
    }
    let mut buf = rest;
    for _ in 0..64 {
        match frame(buf) {
            Ok(Some(len)) => {
                let (msg, tail) = buf.split_at(len);
                decode_one(msg, &ctx);
                buf = tail;
            }
            Ok(None) => break,
            Err(n) => {
                let _ = n.to_string();
                break;
            }
        }
    }
});
