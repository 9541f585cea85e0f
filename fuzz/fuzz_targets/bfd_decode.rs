//! Fuzzes the BFD Control packet codec and the session behind it.
//!
//! The whole input is one datagram: `decode` never panics (overflow checks
//! are on in this profile), its errors format, and a packet it accepts
//! encodes to the canonical form of the input (its first 24 bytes with
//! Length 24) and decodes back equal.
//!
//! The same input, cut into records of 26 bytes (an event byte, a TTL or
//! time byte, then a 24-byte datagram), also drives one session: datagrams
//! that decode are received, the others counted as malformed, with timers
//! and administrative events between them. Whatever arrives, no packet the
//! session sends has both P and F or D, and each one round trips.
#![no_main]

use std::num::{NonZeroU32, NonZeroU8};

use libfuzzer_sys::fuzz_target;
use pathosd::bfd::session::{Config, Event, Received, Session, Timers};
use pathosd::bfd::wire::{decode, LEN};
use pathosd::bfd::{Hops, Time};

fn check_datagram(data: &[u8]) {
    match decode(data) {
        Ok(p) => {
            let mut canonical = [0u8; LEN];
            canonical.copy_from_slice(&data[..LEN]);
            canonical[3] = LEN as u8;
            assert_eq!(p.encode(), canonical, "not the canonical form");
            assert_eq!(decode(&p.encode()), Ok(p), "round trip changed it");
        }
        Err(e) => {
            let _ = (e.to_string(), e.reason());
        }
    }
}

fn drive_session(data: &[u8]) {
    let (Some(local), Some(tx), Some(mult)) = (
        NonZeroU32::new(0x0a0b_0c0d),
        NonZeroU32::new(100_000),
        NonZeroU8::new(3),
    ) else {
        return;
    };
    let cfg = Config {
        local_discriminator: local,
        timers: Timers {
            desired_min_tx: tx,
            required_min_rx: 100_000,
            detect_mult: mult,
        },
        hops: Hops::Single,
    };
    let mut s = Session::new(cfg, 1, Time(0));
    let mut now = Time(0);
    for rec in data.chunks_exact(LEN + 2) {
        let (kind, arg, datagram) = (rec[0], rec[1], &rec[2..]);
        now = now.plus(u64::from(arg) * 1000);
        let event = match kind % 8 {
            0 => Event::Timer,
            1 => Event::AdminDown,
            2 => Event::AdminUp,
            3 => Event::SetTimers(Timers {
                desired_min_tx: NonZeroU32::new(u32::from(arg) * 10_000 + 1).unwrap_or(tx),
                required_min_rx: u32::from(arg) * 10_000,
                detect_mult: NonZeroU8::new(arg).unwrap_or(mult),
            }),
            _ => match decode(datagram) {
                Ok(packet) => Event::Received(Received {
                    packet,
                    ttl: if kind & 0x80 != 0 { arg } else { 255 },
                    source_ok: kind & 0x40 == 0,
                }),
                Err(e) => Event::Malformed(e),
            },
        };
        let out = s.handle(event, now);
        if let Some(p) = out.send {
            assert!(!(p.poll && p.final_), "P and F: {p:?}");
            assert!(!p.demand, "D: {p:?}");
            assert_eq!(decode(&p.encode()), Ok(p));
        }
        let _ = (out.change.map(|c| c.fails_client()), s.drops().total());
    }
}

fuzz_target!(|data: &[u8]| {
    check_datagram(data);
    drive_session(data);
});
