//! Fuzzes the BGP codec: `frame` over a byte stream, `decode` of each framed
//! message under every DecodeCtx, and for every message that decodes cleanly
//! the round trip decode(encode(m)) == m. Panics (including overflow, which
//! is checked in this profile) are the bugs it looks for.
//!
//! First input byte: bit 0 four-octet AS, bit 1 eBGP, bit 2 "raw body" mode
//! where the fuzzer supplies only type + body and a valid header is built,
//! so it does not have to rediscover the marker and length to reach the
//! body parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathosd::bgp::wire::{decode, encode, frame, DecodeCtx, Message, MARKER, MAX_MESSAGE_LEN};

fn check_round_trip(m: &Message, ctx: &DecodeCtx) {
    if let Message::Update(u) = m {
        if !u.errors.is_empty() {
            // RFC 7606 repairs (discarded attributes) are not re-encoded.
            return;
        }
    }
    if let Some(bytes) = encode(m, ctx) {
        let again = decode(&bytes, ctx).expect("re-encoded message must decode");
        assert_eq!(&again, m, "round trip changed the message");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let ctx = DecodeCtx {
        four_octet_as: mode & 1 != 0,
        ebgp: mode & 2 != 0,
    };
    if mode & 4 != 0 {
        let Some((&ty, body)) = rest.split_first() else {
            return;
        };
        let body = &body[..body.len().min(MAX_MESSAGE_LEN - 19)];
        let mut msg = MARKER.to_vec();
        msg.extend_from_slice(&((body.len() + 19) as u16).to_be_bytes());
        msg.push(ty % 6);
        msg.extend_from_slice(body);
        if let Ok(m) = decode(&msg, &ctx) {
            check_round_trip(&m, &ctx);
        }
        return;
    }
    let mut buf = rest;
    for _ in 0..64 {
        match frame(buf) {
            Ok(Some(len)) => {
                let (msg, tail) = buf.split_at(len);
                if let Ok(m) = decode(msg, &ctx) {
                    check_round_trip(&m, &ctx);
                }
                buf = tail;
            }
            _ => break,
        }
    }
});
