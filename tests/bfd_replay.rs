//! Replays of the pure BFD layers (`bfd::wire`, `bfd::session`): golden
//! Control packets written from RFC 5880 §4.1's layout, every malformed
//! packet an error, proptest round trips, and the session driven through
//! the handshake, detection, the peer's AdminDown, Poll Sequences, timer
//! negotiation, jitter and every drop reason. Two sessions also talk over a
//! simulated link. No socket, no clock, no sleep: every event carries its
//! time.
// Scenarios against real peers and whole configurations read as one
// script, top to bottom: the workspace's function-length lint is for
// shipped code.
#![allow(clippy::too_many_lines)]

use std::num::{NonZeroU32, NonZeroU8};

use pathosd::bfd::session::{
    jitter_bounds, Cause, Change, Config, Event, Output, Received, Session, Timers, SLOW_START_TX,
};
use pathosd::bfd::wire::{decode, DecodeError, Diag, Packet, State};
use pathosd::bfd::{DropReason, Hops, Time, PORT_MULTIHOP, PORT_SINGLE_HOP, SOURCE_PORTS};

const LOCAL: u32 = 0x0a0b_0c0d;
const PEER: u32 = 0x1122_3344;

fn ms(n: u64) -> Time {
    Time(n * 1000)
}

fn timers(tx_ms: u32, rx_ms: u32, mult: u8) -> Timers {
    Timers {
        desired_min_tx: NonZeroU32::new(tx_ms * 1000).unwrap(),
        required_min_rx: rx_ms * 1000,
        detect_mult: NonZeroU8::new(mult).unwrap(),
    }
}

fn config(tx_ms: u32, rx_ms: u32, mult: u8) -> Config {
    Config {
        local_discriminator: NonZeroU32::new(LOCAL).unwrap(),
        timers: timers(tx_ms, rx_ms, mult),
        hops: Hops::Single,
    }
}

/// A packet from the peer: Detect Mult 3, 1 s / 100 ms, naming us unless
/// it is Down (a peer that has not heard us yet says 0).
fn peer(state: State) -> Packet {
    Packet {
        diag: Diag::NONE,
        state,
        poll: false,
        final_: false,
        control_plane_independent: false,
        demand: false,
        detect_mult: 3,
        my_discriminator: PEER,
        your_discriminator: if state == State::Down { 0 } else { LOCAL },
        desired_min_tx: 1_000_000,
        required_min_rx: 100_000,
        required_min_echo_rx: 0,
    }
}

fn rx(packet: Packet) -> Event {
    Event::Received(Received {
        packet,
        ttl: 255,
        source_ok: true,
    })
}

/// What this session sends, P and F clear, in `state` with `diag`.
fn ours(state: State, diag: Diag, your: u32, tx: u32, rx: u32) -> Packet {
    Packet {
        diag,
        state,
        poll: false,
        final_: false,
        control_plane_independent: false,
        demand: false,
        detect_mult: 3,
        my_discriminator: LOCAL,
        your_discriminator: your,
        desired_min_tx: tx,
        required_min_rx: rx,
        required_min_echo_rx: 0,
    }
}

fn change(from: State, to: State, diag: Diag, cause: Cause) -> Option<Change> {
    Some(Change {
        from,
        to,
        diag,
        cause,
    })
}

/// Asserts the next periodic packet is due within the jitter window of
/// `interval` µs after `now`.
fn assert_next_tx(out: &Output, now: Time, interval: u64, mult: u8) {
    let next = out.next_tx.expect("a periodic packet is scheduled");
    let (lo, hi) = jitter_bounds(interval, mult);
    let gap = next.0 - now.0;
    assert!(
        (lo..=hi).contains(&gap),
        "next packet {gap} µs after {now:?}, outside {lo}..={hi}"
    );
}

/// A session brought Up by the peer at 5 and 10 ms (config 100 ms × 3), our
/// Poll for the faster rate answered at 20 ms and the peer's own rate change
/// polled and answered at 30 ms: the steady state of a session with BIRD.
fn up_session() -> Session {
    let mut s = Session::new(config(100, 100, 3), 42, ms(0));
    s.handle(Event::Timer, ms(0));
    s.handle(rx(peer(State::Down)), ms(5));
    s.handle(rx(peer(State::Init)), ms(10));
    let mut f = peer(State::Up);
    f.final_ = true;
    s.handle(rx(f), ms(20));
    let mut p = peer(State::Up);
    p.poll = true;
    p.desired_min_tx = 100_000;
    let out = s.handle(rx(p), ms(30));
    assert_eq!(s.state(), State::Up);
    assert!(out.send.is_some_and(|p| p.final_));
    assert!(!s.poll_active());
    s
}

// ---- the codec ---------------------------------------------------------------

/// Control packets written field by field from RFC 5880 §4.1:
/// `Vers(3) Diag(5) | Sta(2) P F C A D M | Detect Mult | Length |
/// My Discriminator | Your Discriminator | Desired Min TX | Required Min RX
/// | Required Min Echo RX`.
#[test]
fn golden_vectors_decode_and_encode_byte_for_byte() {
    struct Vector {
        name: &'static str,
        bytes: [u8; 24],
        packet: Packet,
    }
    let vectors = [
        Vector {
            // The first packet of a session: Down, nobody heard, slow start.
            name: "down, your discriminator 0",
            bytes: [
                0x20, // version 1, diag 0
                0x40, // Down, no flags
                0x03, // Detect Mult 3
                0x18, // Length 24
                0x0a, 0x0b, 0x0c, 0x0d, // My Discriminator
                0x00, 0x00, 0x00, 0x00, // Your Discriminator
                0x00, 0x0f, 0x42, 0x40, // Desired Min TX 1,000,000 µs
                0x00, 0x01, 0x86, 0xa0, // Required Min RX 100,000 µs
                0x00, 0x00, 0x00, 0x00, // Required Min Echo RX 0
            ],
            packet: ours(State::Down, Diag::NONE, 0, 1_000_000, 100_000),
        },
        Vector {
            name: "init",
            bytes: [
                0x20, 0x80, 0x03, 0x18, //
                0x0a, 0x0b, 0x0c, 0x0d, //
                0x11, 0x22, 0x33, 0x44, //
                0x00, 0x0f, 0x42, 0x40, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x00, 0x00, 0x00,
            ],
            packet: ours(State::Init, Diag::NONE, PEER, 1_000_000, 100_000),
        },
        Vector {
            // Up, polling for the faster rate: P = 0x20.
            name: "up with poll",
            bytes: [
                0x20, 0xe0, 0x03, 0x18, //
                0x0a, 0x0b, 0x0c, 0x0d, //
                0x11, 0x22, 0x33, 0x44, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x00, 0x00, 0x00,
            ],
            packet: Packet {
                poll: true,
                ..ours(State::Up, Diag::NONE, PEER, 100_000, 100_000)
            },
        },
        Vector {
            // Up answering a poll: F = 0x10.
            name: "up with final",
            bytes: [
                0x20, 0xd0, 0x03, 0x18, //
                0x0a, 0x0b, 0x0c, 0x0d, //
                0x11, 0x22, 0x33, 0x44, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x00, 0x00, 0x00,
            ],
            packet: Packet {
                final_: true,
                ..ours(State::Up, Diag::NONE, PEER, 100_000, 100_000)
            },
        },
        Vector {
            // Down after the Detection Time: diag 1 in the low five bits.
            name: "down, control detection time expired",
            bytes: [
                0x21, 0x40, 0x03, 0x18, //
                0x0a, 0x0b, 0x0c, 0x0d, //
                0x00, 0x00, 0x00, 0x00, //
                0x00, 0x0f, 0x42, 0x40, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x00, 0x00, 0x00,
            ],
            packet: ours(
                State::Down,
                Diag::CONTROL_DETECTION_TIME_EXPIRED,
                0,
                1_000_000,
                100_000,
            ),
        },
        Vector {
            // AdminDown (state 0) with diag 7.
            name: "admin down",
            bytes: [
                0x27, 0x00, 0x03, 0x18, //
                0x0a, 0x0b, 0x0c, 0x0d, //
                0x11, 0x22, 0x33, 0x44, //
                0x00, 0x0f, 0x42, 0x40, //
                0x00, 0x01, 0x86, 0xa0, //
                0x00, 0x00, 0x00, 0x00,
            ],
            packet: ours(
                State::AdminDown,
                Diag::ADMINISTRATIVELY_DOWN,
                PEER,
                1_000_000,
                100_000,
            ),
        },
        Vector {
            // A peer's packet with C and D, Detect Mult 255, the largest
            // intervals and an Echo interval: every field at its extreme.
            name: "peer with C, D and extremes",
            bytes: [
                0x3f, 0xca, 0xff, 0x18, //
                0xff, 0xff, 0xff, 0xff, //
                0xff, 0xff, 0xff, 0xfe, //
                0xff, 0xff, 0xff, 0xff, //
                0xff, 0xff, 0xff, 0xff, //
                0x00, 0x00, 0x27, 0x10,
            ],
            packet: Packet {
                diag: Diag::from_bits(31),
                state: State::Up,
                poll: false,
                final_: false,
                control_plane_independent: true,
                demand: true,
                detect_mult: 255,
                my_discriminator: u32::MAX,
                your_discriminator: u32::MAX - 1,
                desired_min_tx: u32::MAX,
                required_min_rx: u32::MAX,
                required_min_echo_rx: 10_000,
            },
        },
    ];
    for v in &vectors {
        assert_eq!(decode(&v.bytes), Ok(v.packet), "{}", v.name);
        assert_eq!(v.packet.encode(), v.bytes, "{}", v.name);
    }
}

/// Each check of RFC 5880 §6.8.6 that needs only the packet, with the drop
/// counter it feeds.
#[test]
fn every_malformed_packet_is_an_error() {
    let good = ours(State::Up, Diag::NONE, PEER, 100_000, 100_000).encode();
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.to_vec();
        f(&mut b);
        b
    };
    let cases: Vec<(&str, Vec<u8>, DecodeError, DropReason)> = vec![
        (
            "empty",
            vec![],
            DecodeError::Short { len: 0 },
            DropReason::Short,
        ),
        (
            "23 bytes",
            good[..23].to_vec(),
            DecodeError::Short { len: 23 },
            DropReason::Short,
        ),
        (
            "version 0",
            with(&|b| b[0] &= 0x1f),
            DecodeError::Version(0),
            DropReason::Version,
        ),
        (
            "version 7",
            with(&|b| b[0] |= 0xe0),
            DecodeError::Version(7),
            DropReason::Version,
        ),
        (
            "Length 23",
            with(&|b| b[3] = 23),
            DecodeError::Length {
                field: 23,
                datagram: 24,
            },
            DropReason::Length,
        ),
        (
            "Length 0",
            with(&|b| b[3] = 0),
            DecodeError::Length {
                field: 0,
                datagram: 24,
            },
            DropReason::Length,
        ),
        (
            "Length beyond the datagram",
            with(&|b| b[3] = 25),
            DecodeError::Length {
                field: 25,
                datagram: 24,
            },
            DropReason::Length,
        ),
        (
            "Length 255",
            with(&|b| b[3] = 255),
            DecodeError::Length {
                field: 255,
                datagram: 24,
            },
            DropReason::Length,
        ),
        (
            "A set, Length 24",
            with(&|b| b[1] |= 0x04),
            DecodeError::Length {
                field: 24,
                datagram: 24,
            },
            DropReason::Length,
        ),
        (
            "Detect Mult 0",
            with(&|b| b[2] = 0),
            DecodeError::DetectMult,
            DropReason::DetectMult,
        ),
        (
            "Multipoint",
            with(&|b| b[1] |= 0x01),
            DecodeError::Multipoint,
            DropReason::Multipoint,
        ),
        (
            "Poll and Final",
            with(&|b| b[1] |= 0x30),
            DecodeError::PollAndFinal,
            DropReason::PollAndFinal,
        ),
        (
            "My Discriminator 0",
            with(&|b| b[4..8].fill(0)),
            DecodeError::MyDiscriminator,
            DropReason::MyDiscriminatorZero,
        ),
        (
            "Your Discriminator 0 in Up",
            with(&|b| b[8..12].fill(0)),
            DecodeError::YourDiscriminator(State::Up),
            DropReason::YourDiscriminatorZero,
        ),
        (
            "Your Discriminator 0 in Init",
            with(&|b| {
                b[1] = 0x80;
                b[8..12].fill(0)
            }),
            DecodeError::YourDiscriminator(State::Init),
            DropReason::YourDiscriminatorZero,
        ),
        (
            "Keyed SHA1 (type 4, Auth Len 28)",
            with(&|b| {
                b[1] |= 0x04;
                b[3] = 52;
                b.extend_from_slice(&[4, 28]);
                b.extend_from_slice(&[0; 26]);
            }),
            DecodeError::Authentication { auth_type: 4 },
            DropReason::Authentication,
        ),
        (
            "Auth Len past Length",
            with(&|b| {
                b[1] |= 0x04;
                b[3] = 26;
                b.extend_from_slice(&[1, 3]);
            }),
            DecodeError::Length {
                field: 26,
                datagram: 26,
            },
            DropReason::Length,
        ),
    ];
    for (name, bytes, err, reason) in cases {
        assert_eq!(decode(&bytes), Err(err), "{name}");
        assert_eq!(err.reason(), reason, "{name}");
        assert!(!err.to_string().is_empty());
    }
    // Your Discriminator 0 is fine in Down and AdminDown (a peer that has
    // not heard us, or one shutting down before it did).
    for state in [State::Down, State::AdminDown] {
        let mut b = good;
        b[1] = state.code() << 6;
        b[8..12].fill(0);
        assert_eq!(decode(&b).map(|p| p.state), Ok(state));
    }
}

#[test]
fn transport_constants_are_the_rfcs() {
    assert_eq!(PORT_SINGLE_HOP, 3784);
    assert_eq!(PORT_MULTIHOP, 4784);
    assert_eq!((*SOURCE_PORTS.start(), *SOURCE_PORTS.end()), (49152, 65535));
    assert_eq!(Hops::Single.port(), PORT_SINGLE_HOP);
    assert_eq!(Hops::Multi { min_ttl: 1 }.port(), PORT_MULTIHOP);
}

// ---- the handshake -----------------------------------------------------------

/// RFC 5880 §6.2's three-way handshake, step by step, with the exact
/// packets: Down → Init on the peer's Down, Init → Up on its Init; the
/// faster rate is polled for once Up.
#[test]
fn handshake_down_init_up() {
    let mut s = Session::new(config(100, 100, 3), 1, ms(0));

    let out = s.handle(Event::Timer, ms(0));
    assert_eq!(
        out.send,
        Some(ours(State::Down, Diag::NONE, 0, SLOW_START_TX, 100_000))
    );
    assert_eq!(out.change, None);
    assert_eq!(out.detect_at, None);
    assert_next_tx(&out, ms(0), 1_000_000, 3);

    // The peer's Down: Init, sent at once (the contents changed), naming it.
    let out = s.handle(rx(peer(State::Down)), ms(5));
    assert_eq!(
        out.change,
        change(State::Down, State::Init, Diag::NONE, Cause::Handshake)
    );
    assert_eq!(
        out.send,
        Some(ours(State::Init, Diag::NONE, PEER, SLOW_START_TX, 100_000))
    );
    assert_next_tx(&out, ms(5), 1_000_000, 3);
    // Detection: the peer's Detect Mult 3 × max(our 100 ms, its 1 s).
    assert_eq!(out.detect_at, Some(ms(5 + 3000)));
    assert_eq!(s.remote_discriminator(), PEER);

    // The peer's Init: Up. bfd.DesiredMinTxInterval drops from the slow
    // start second to 100 ms, so a Poll Sequence starts (RFC 5880 §6.8.3).
    let out = s.handle(rx(peer(State::Init)), ms(10));
    assert_eq!(
        out.change,
        change(State::Init, State::Up, Diag::NONE, Cause::Handshake)
    );
    assert_eq!(
        out.send,
        Some(Packet {
            poll: true,
            ..ours(State::Up, Diag::NONE, PEER, 100_000, 100_000)
        })
    );
    assert!(!out.change.unwrap().fails_client());
    // A faster rate applies at once: max(100 ms, peer's 100 ms).
    assert_next_tx(&out, ms(10), 100_000, 3);
    assert_eq!(out.detect_at, Some(ms(10 + 3000)));

    // The periodic packets keep P until the peer answers with F.
    let t = out.next_tx.unwrap();
    let out = s.handle(Event::Timer, t);
    assert!(out.send.is_some_and(|p| p.poll && !p.final_));
    let mut f = peer(State::Up);
    f.final_ = true;
    let out = s.handle(rx(f), t.plus(1000));
    assert_eq!(out.send, None, "a Final needs no answer");
    assert!(!s.poll_active());
    let t = out.next_tx.unwrap();
    let out = s.handle(Event::Timer, t);
    assert_eq!(
        out.send,
        Some(ours(State::Up, Diag::NONE, PEER, 100_000, 100_000))
    );
}

/// A peer already in Init (it heard us first) brings us from Down straight
/// to Up; a peer still Up from an old session does not.
#[test]
fn handshake_shortcuts_and_non_transitions() {
    let mut s = Session::new(config(100, 100, 3), 1, ms(0));
    s.handle(Event::Timer, ms(0));
    let out = s.handle(rx(peer(State::Init)), ms(1));
    assert_eq!(
        out.change,
        change(State::Down, State::Up, Diag::NONE, Cause::Handshake)
    );

    let mut s = Session::new(config(100, 100, 3), 1, ms(0));
    s.handle(Event::Timer, ms(0));
    let out = s.handle(rx(peer(State::Up)), ms(1));
    assert_eq!(out.change, None, "Down ignores a peer in Up");
    assert_eq!(s.state(), State::Down);
    // Init ignores a peer in Down.
    s.handle(rx(peer(State::Down)), ms(2));
    assert_eq!(s.state(), State::Init);
    let out = s.handle(rx(peer(State::Down)), ms(3));
    assert_eq!(out.change, None);
    assert_eq!(out.send, None, "nothing new to say");
    // Up ignores Init and Up.
    s.handle(rx(peer(State::Up)), ms(4));
    assert_eq!(s.state(), State::Up);
    for st in [State::Init, State::Up] {
        assert_eq!(s.handle(rx(peer(st)), ms(5)).change, None);
    }
}

// ---- detection, the peer's Down and AdminDown ----------------------------------

/// No packet for a Detection Time: Down with diag 1, the peer forgotten,
/// back to slow start; the BGP session must react (RFC 5882 §4.2.1).
#[test]
fn detection_time_expiry_takes_the_session_down() {
    let mut s = up_session();
    // Last packet at 30 ms; the peer's 100 ms × 3.
    assert_eq!(s.detection_time(), Some(300_000));
    assert_eq!(s.detect_at(), Some(ms(330)));
    // A timer just before the deadline (a periodic one) only transmits.
    let out = s.handle(Event::Timer, ms(329));
    assert_eq!(out.change, None);
    assert_eq!(s.state(), State::Up);

    let out = s.handle(Event::Timer, ms(330));
    let c = out.change.expect("went down");
    assert_eq!(
        c,
        Change {
            from: State::Up,
            to: State::Down,
            diag: Diag::CONTROL_DETECTION_TIME_EXPIRED,
            cause: Cause::DetectionTimeExpired,
        }
    );
    assert!(c.fails_client());
    // Sent at once: Down, diag 1, Your Discriminator reset (RFC 5880 §6.8.1),
    // 1 s again (slow start), no Poll towards a peer nobody hears.
    assert_eq!(
        out.send,
        Some(ours(
            State::Down,
            Diag::CONTROL_DETECTION_TIME_EXPIRED,
            0,
            SLOW_START_TX,
            100_000
        ))
    );
    assert_eq!(out.detect_at, None);
    assert_eq!(s.remote_discriminator(), 0);
    assert!(!s.poll_active());
    assert_next_tx(&out, ms(330), 1_000_000, 3);

    // A detection timeout in Init is a Down too, but never a client failure.
    let mut s = Session::new(config(100, 100, 3), 1, ms(0));
    s.handle(rx(peer(State::Down)), ms(1));
    assert_eq!(s.state(), State::Init);
    let out = s.handle(Event::Timer, ms(3001));
    let c = out.change.expect("init timed out");
    assert_eq!((c.from, c.to, c.diag.code()), (State::Init, State::Down, 1));
    assert!(!c.fails_client());

    // In Down the expiry only forgets the peer.
    let mut s = Session::new(config(100, 100, 3), 1, ms(0));
    let mut admin = peer(State::AdminDown);
    admin.your_discriminator = 0;
    s.handle(rx(admin), ms(1));
    assert_eq!(s.remote_discriminator(), PEER);
    let out = s.handle(Event::Timer, ms(3001));
    assert_eq!(out.change, None);
    assert_eq!(s.remote_discriminator(), 0);
}

#[test]
fn peer_down_while_up_fails_the_client() {
    let mut s = up_session();
    // The peer restarted: Down, not naming us.
    let out = s.handle(rx(peer(State::Down)), ms(40));
    let c = out.change.expect("down");
    assert_eq!(c.diag, Diag::NEIGHBOR_SIGNALED_SESSION_DOWN);
    assert_eq!(c.cause, Cause::NeighborDown);
    assert!(c.fails_client());
    let sent = out.send.expect("sent at once");
    assert_eq!((sent.state, sent.diag.code()), (State::Down, 3));
    assert_eq!(sent.desired_min_tx, SLOW_START_TX);
    // The peer is still known, so the slower rate is polled for.
    assert!(sent.poll);
    // Its next Down restarts the handshake.
    let out = s.handle(rx(peer(State::Down)), ms(50));
    assert_eq!(s.state(), State::Init);
    assert_eq!(out.change.unwrap().cause, Cause::Handshake);
}

/// RFC 5882 §4.2: the peer's AdminDown takes the session Down with diag 3,
/// but a client takes no action.
#[test]
fn peer_admin_down_is_not_a_client_failure() {
    let mut s = up_session();
    let mut p = peer(State::AdminDown);
    p.diag = Diag::ADMINISTRATIVELY_DOWN;
    let out = s.handle(rx(p), ms(40));
    let c = out.change.expect("down");
    assert_eq!(
        c,
        Change {
            from: State::Up,
            to: State::Down,
            diag: Diag::NEIGHBOR_SIGNALED_SESSION_DOWN,
            cause: Cause::NeighborAdminDown,
        }
    );
    assert!(!c.fails_client());
    assert_eq!(s.remote_state(), State::AdminDown);
    assert_eq!(s.remote_diag(), Diag::ADMINISTRATIVELY_DOWN);
    // Down stays Down while the peer is AdminDown.
    assert_eq!(s.handle(rx(p), ms(50)).change, None);

    // From Init as well.
    let mut s = Session::new(config(100, 100, 3), 1, ms(0));
    s.handle(rx(peer(State::Down)), ms(1));
    let out = s.handle(rx(p), ms(2));
    assert_eq!(
        out.change,
        change(
            State::Init,
            State::Down,
            Diag::NEIGHBOR_SIGNALED_SESSION_DOWN,
            Cause::NeighborAdminDown
        )
    );
}

// ---- administrative control ------------------------------------------------------

/// RFC 5880 §6.8.16: AdminDown is sent at once with diag 7, kept up for a
/// Detection Time, then silence; packets change nothing and Polls go
/// unanswered; AdminUp returns to Down.
#[test]
fn admin_down_and_up() {
    let mut s = up_session();
    let out = s.handle(Event::AdminDown, ms(40));
    let c = out.change.expect("admin down");
    assert_eq!(
        (c.from, c.to, c.diag, c.cause),
        (
            State::Up,
            State::AdminDown,
            Diag::ADMINISTRATIVELY_DOWN,
            Cause::AdminDown
        )
    );
    assert!(!c.fails_client());
    let sent = out.send.expect("sent at once");
    assert_eq!((sent.state, sent.diag.code()), (State::AdminDown, 7));
    assert_eq!(sent.desired_min_tx, SLOW_START_TX);

    // Periodic AdminDown packets for our Detect Mult × the 1 s interval.
    let mut now = ms(40);
    let (mut sent, mut last) = (0, now);
    while let Some(t) = s.next_tx() {
        // Keep the peer alive meanwhile (its packets change nothing).
        let mut p = peer(State::Up);
        p.poll = true;
        let out = s.handle(rx(p), t);
        assert_eq!(out.change, None);
        assert!(out.send.is_none_or(|p| !p.final_), "no Final in AdminDown");
        let out = s.handle(Event::Timer, t);
        if let Some(p) = out.send {
            assert_eq!(p.state, State::AdminDown);
            sent += 1;
            last = t;
        }
        now = t;
        assert!(sent < 10, "never stops");
    }
    assert!((2..=4).contains(&sent), "{sent} periodic AdminDown packets");
    assert!(last < ms(40 + 3000), "sent until {last:?}");
    assert_eq!(s.state(), State::AdminDown);
    // Twice is once.
    assert_eq!(s.handle(Event::AdminDown, now).change, None);

    let out = s.handle(Event::AdminUp, ms(5000));
    assert_eq!(
        out.change,
        change(State::AdminDown, State::Down, Diag::NONE, Cause::AdminUp)
    );
    assert_eq!(out.send.map(|p| p.state), Some(State::Down));
    assert_next_tx(&out, ms(5000), 1_000_000, 3);
    // AdminUp when not AdminDown does nothing.
    assert_eq!(s.handle(Event::AdminUp, ms(5001)).change, None);
}

// ---- Poll Sequences and timer negotiation -----------------------------------------

/// A Poll from the peer is answered at once, whatever the transmit timer
/// says, with F set and P clear even while our own Poll runs.
#[test]
fn a_poll_is_answered_at_once_with_final() {
    let mut s = Session::new(config(100, 100, 3), 1, ms(0));
    s.handle(Event::Timer, ms(0));
    s.handle(rx(peer(State::Down)), ms(5));
    let out = s.handle(rx(peer(State::Init)), ms(10));
    assert!(out.send.unwrap().poll, "our Poll runs");
    let mut p = peer(State::Up);
    p.poll = true;
    let out = s.handle(rx(p), ms(12));
    assert_eq!(
        out.send,
        Some(Packet {
            final_: true,
            ..ours(State::Up, Diag::NONE, PEER, 100_000, 100_000)
        })
    );
    // The Final does not move the periodic schedule.
    let before = s.next_tx();
    assert!(before > Some(ms(12)));
    assert!(s.poll_active(), "our Poll still waits for its Final");
    let out = s.handle(Event::Timer, before.unwrap());
    assert!(out.send.unwrap().poll);
}

/// RFC 5880 §6.8.3: a slower rate (a higher Desired Min TX while Up) is
/// advertised at once but used only once the peer answers the Poll; a
/// second change while the Poll runs waits for it, and for a packet
/// without F after it, before its own Poll.
#[test]
fn poll_sequence_defers_a_slower_rate_until_final() {
    let mut s = up_session();
    assert_eq!(s.tx_interval(), 100_000);
    let out = s.handle(Event::SetTimers(timers(300, 100, 3)), ms(40));
    let sent = out.send.expect("contents changed: sent at once");
    assert!(sent.poll);
    assert_eq!(sent.desired_min_tx, 300_000);
    assert_eq!(s.tx_interval(), 100_000, "still the old rate");
    assert_next_tx(&out, ms(40), 100_000, 3);

    // Another change while the Poll runs: not advertised yet.
    let out = s.handle(Event::SetTimers(timers(500, 100, 3)), ms(41));
    assert_eq!(out.send, None);
    let t = s.next_tx().unwrap();
    let p = s.handle(Event::Timer, t).send.unwrap();
    assert!(p.poll);
    assert_eq!(p.desired_min_tx, 300_000);

    // The Final: 300 ms applies; the 500 ms change waits for a packet
    // without F.
    let mut f = peer(State::Up);
    f.final_ = true;
    f.desired_min_tx = 100_000;
    let out = s.handle(rx(f), t.plus(2000));
    assert_eq!(s.tx_interval(), 300_000);
    assert!(!s.poll_active());
    assert_eq!(out.send, None);
    assert_next_tx(&out, t, 300_000, 3);

    let mut plain = peer(State::Up);
    plain.desired_min_tx = 100_000;
    let out = s.handle(rx(plain), t.plus(3000));
    let p = out.send.expect("the pending change goes out");
    assert!(p.poll);
    assert_eq!(p.desired_min_tx, 500_000);
    assert_eq!(s.tx_interval(), 300_000);
    s.handle(rx(f), t.plus(4000));
    assert_eq!(s.tx_interval(), 500_000);
}

/// RFC 5880 §6.8.3: a lower Required Min RX while Up keeps the old
/// Detection Time until the Poll is answered; a higher one applies at once.
#[test]
fn poll_sequence_defers_a_shorter_detection_time_until_final() {
    let mut s = up_session();
    // The peer sends every 100 ms: detection 3 × max(100, 100).
    assert_eq!(s.detection_time(), Some(300_000));
    s.handle(Event::SetTimers(timers(100, 50, 3)), ms(40));
    let mut p = peer(State::Up);
    p.desired_min_tx = 20_000;
    s.handle(rx(p), ms(41));
    assert_eq!(s.detection_time(), Some(300_000), "old 100 ms kept");
    p.final_ = true;
    s.handle(rx(p), ms(42));
    assert_eq!(s.detection_time(), Some(150_000), "3 × max(50, 20) ms");

    // Raising it applies at once.
    p.final_ = false;
    s.handle(rx(p), ms(43));
    s.handle(Event::SetTimers(timers(100, 400, 3)), ms(44));
    assert_eq!(s.detection_time(), Some(1_200_000));
}

/// RFC 5880 §6.8.2, §6.8.4, §6.8.7: transmit at the slower of our Desired
/// Min TX and the peer's Required Min RX; detect after the peer's Detect
/// Mult × the slower of our Required Min RX and its Desired Min TX.
#[test]
fn timer_negotiation_takes_the_slower_side() {
    // (our tx ms, our rx ms), (peer tx ms, peer rx ms, peer mult),
    // (tx interval ms, Detection Time ms)
    type Case = ((u32, u32), (u32, u32, u8), (u64, u64));
    let cases: [Case; 5] = [
        ((100, 100), (100, 100, 3), (100, 300)),
        ((100, 100), (300, 100, 3), (100, 900)),
        ((100, 100), (100, 250, 5), (250, 500)),
        ((50, 200), (20, 30, 2), (50, 400)),
        ((300, 300), (100, 100, 1), (300, 300)),
    ];
    for ((tx, rx_ms), (ptx, prx, pmult), (want_tx, want_detect)) in cases {
        let mut s = up_session();
        s.handle(Event::SetTimers(timers(tx, rx_ms, 3)), ms(40));
        let mut f = peer(State::Up);
        f.final_ = true;
        f.desired_min_tx = ptx * 1000;
        f.required_min_rx = prx * 1000;
        f.detect_mult = pmult;
        s.handle(rx(f), ms(41));
        let name = format!("ours {tx}/{rx_ms}, peer {ptx}/{prx}×{pmult}");
        assert_eq!(s.tx_interval(), want_tx * 1000, "{name}");
        assert_eq!(s.detection_time(), Some(want_detect * 1000), "{name}");
        assert_eq!(s.detect_at(), Some(ms(41 + want_detect)), "{name}");
    }
}

/// RFC 5880 §6.8.3: slow start. Until Up, bfd.DesiredMinTxInterval is at
/// least 1 s whatever is configured, so the peer detects us after its
/// multiple of 1 s; a configured rate above 1 s is kept as it is.
#[test]
fn slow_start_until_up() {
    let mut s = Session::new(config(20, 20, 3), 1, ms(0));
    let out = s.handle(Event::Timer, ms(0));
    assert_eq!(out.send.unwrap().desired_min_tx, SLOW_START_TX);
    assert_eq!(s.tx_interval(), 1_000_000);
    s.handle(rx(peer(State::Down)), ms(1));
    assert_eq!(s.tx_interval(), 1_000_000, "Init is not Up");
    let out = s.handle(rx(peer(State::Init)), ms(2));
    assert_eq!(out.send.unwrap().desired_min_tx, 20_000);
    // The peer's Required Min RX (100 ms) bounds us now.
    assert_eq!(s.tx_interval(), 100_000);

    let mut s = Session::new(config(2000, 2000, 3), 1, ms(0));
    let out = s.handle(Event::Timer, ms(0));
    assert_eq!(out.send.unwrap().desired_min_tx, 2_000_000);
}

/// RFC 5880 §6.8.3: "If the local system reduces its transmit interval due
/// to bfd.RemoteMinRxInterval being reduced ... the local system MUST honor
/// the new interval immediately", counted from the last packet.
#[test]
fn a_faster_peer_is_honoured_at_once() {
    let mut s = up_session();
    let t = s.next_tx().unwrap();
    let out = s.handle(Event::Timer, t);
    assert_next_tx(&out, t, 100_000, 3);
    let mut p = peer(State::Up);
    p.desired_min_tx = 100_000;
    p.required_min_rx = 1_000_000;
    let out = s.handle(rx(p), t.plus(1000));
    assert_next_tx(&out, t, 1_000_000, 3);
    p.required_min_rx = 10_000;
    let out = s.handle(rx(p), t.plus(2000));
    // Our own 100 ms is the floor.
    assert_next_tx(&out, t, 100_000, 3);
}

/// RFC 5880 §6.8.7: no periodic packets while the peer's Required Min RX
/// is 0; its Polls are still answered; periodic packets resume when it
/// asks again.
#[test]
fn remote_min_rx_zero_stops_periodic_transmission() {
    let mut s = up_session();
    let mut p = peer(State::Up);
    p.desired_min_tx = 100_000;
    p.required_min_rx = 0;
    let out = s.handle(rx(p), ms(40));
    assert_eq!(out.next_tx, None);
    assert_eq!(s.handle(Event::Timer, ms(200)).send, None);
    p.poll = true;
    let out = s.handle(rx(p), ms(210));
    assert!(out.send.is_some_and(|p| p.final_ && !p.poll));
    assert_eq!(out.next_tx, None);
    p.poll = false;
    p.required_min_rx = 100_000;
    let out = s.handle(rx(p), ms(220));
    assert!(out.next_tx.is_some());
}

/// Demand mode is never ours (D is never set), and a peer's is honoured:
/// RFC 5880 §6.8.6, with bfd.RemoteDemandMode 1 and both sides Up "the
/// local system MUST cease the periodic transmission", except while a Poll
/// Sequence is being transmitted; our Detection Time still runs.
#[test]
fn a_peer_in_demand_mode_stops_our_periodic_packets() {
    let mut s = up_session();
    let mut p = peer(State::Up);
    p.desired_min_tx = 100_000;
    p.demand = true;
    let out = s.handle(rx(p), ms(40));
    assert_eq!(out.next_tx, None);
    assert_eq!(out.detect_at, Some(ms(340)));
    // Our Poll (an interval change) is sent on periodic packets anyway.
    let out = s.handle(Event::SetTimers(timers(200, 100, 3)), ms(50));
    assert!(out.send.is_some_and(|p| p.poll && !p.demand));
    assert!(out.next_tx.is_some());
    p.final_ = true;
    let out = s.handle(rx(p), ms(60));
    assert_eq!(out.next_tx, None, "poll over: quiet again");
    p.final_ = false;
    p.demand = false;
    let out = s.handle(rx(p), ms(70));
    assert!(out.next_tx.is_some());
}

// ---- jitter ------------------------------------------------------------------

/// The gaps between periodic packets over many seeds stay within 75-100 %
/// of the interval (75-90 % with Detect Mult 1), and spread over the range.
#[test]
fn jitter_stays_within_the_rfc_bounds() {
    for mult in [3u8, 1] {
        let (lo, hi) = jitter_bounds(1_000_000, mult);
        let (mut min, mut max) = (u64::MAX, 0);
        for seed in 0..50u64 {
            let mut s = Session::new(config(1000, 1000, mult), seed, ms(0));
            let mut now = ms(0);
            s.handle(Event::Timer, now);
            for _ in 0..40 {
                let next = s.next_tx().expect("periodic");
                let gap = next.0 - now.0;
                assert!((lo..=hi).contains(&gap), "mult {mult} seed {seed}: {gap}");
                min = min.min(gap);
                max = max.max(gap);
                now = next;
                assert!(s.handle(Event::Timer, now).send.is_some());
            }
        }
        let width = hi - lo;
        assert!(min < lo + width / 20, "mult {mult}: smallest gap {min}");
        assert!(max > hi - width / 20, "mult {mult}: largest gap {max}");
    }
    // Two seeds do not march in step.
    let gaps = |seed| {
        let mut s = Session::new(config(1000, 1000, 3), seed, ms(0));
        (0..5)
            .map(|_| {
                let t = s.next_tx().unwrap();
                s.handle(Event::Timer, t);
                s.next_tx().unwrap().0 - t.0
            })
            .collect::<Vec<_>>()
    };
    assert_ne!(gaps(1), gaps(2));
    assert_eq!(gaps(3), gaps(3), "same seed, same replay");
}

// ---- drops -------------------------------------------------------------------

/// A packet from the wrong source, with the wrong TTL or the wrong
/// discriminator, or one the codec refused, is counted and changes
/// nothing: not even an AdminDown or a Poll is believed.
#[test]
fn every_drop_reason_is_counted_and_never_trusted() {
    let mut s = up_session();
    let detect = s.detect_at();
    let mut admin = peer(State::AdminDown);
    admin.poll = true;
    let cases = [
        (
            Received {
                packet: admin,
                ttl: 255,
                source_ok: false,
            },
            DropReason::WrongSource,
        ),
        (
            Received {
                packet: admin,
                ttl: 254,
                source_ok: true,
            },
            DropReason::WrongTtl,
        ),
        (
            Received {
                packet: Packet {
                    your_discriminator: LOCAL + 1,
                    ..admin
                },
                ttl: 255,
                source_ok: true,
            },
            DropReason::WrongDiscriminator,
        ),
    ];
    for (i, (r, reason)) in cases.into_iter().enumerate() {
        let out = s.handle(Event::Received(r), ms(40 + i as u64));
        assert_eq!(out.send, None, "{reason:?}");
        assert_eq!(out.change, None, "{reason:?}");
        assert_eq!(out.detect_at, detect, "{reason:?}: not a sign of life");
        assert_eq!(s.drops().get(reason), 1, "{reason:?}");
    }
    for e in [
        DecodeError::Short { len: 3 },
        DecodeError::Version(0),
        DecodeError::Length {
            field: 9,
            datagram: 24,
        },
        DecodeError::DetectMult,
        DecodeError::Multipoint,
        DecodeError::PollAndFinal,
        DecodeError::MyDiscriminator,
        DecodeError::YourDiscriminator(State::Up),
        DecodeError::Authentication { auth_type: 2 },
    ] {
        let out = s.handle(Event::Malformed(e), ms(50));
        assert_eq!((out.send, out.change), (None, None));
        assert_eq!(s.drops().get(e.reason()), 1, "{e:?}");
    }
    assert_eq!(s.state(), State::Up);
    assert_eq!(s.drops().total(), 12);
    assert_eq!(s.drops().get(DropReason::NoSession), 0);
    assert_eq!(s.drops().iter().count(), DropReason::ALL.len());
    assert_eq!(DropReason::WrongTtl.as_str(), "wrong_ttl");

    // Multihop: a configured minimum TTL, not 255.
    let mut cfg = config(100, 100, 3);
    cfg.hops = Hops::Multi { min_ttl: 250 };
    let mut s = Session::new(cfg, 1, ms(0));
    let r = |ttl| {
        Event::Received(Received {
            packet: peer(State::Down),
            ttl,
            source_ok: true,
        })
    };
    s.handle(r(249), ms(1));
    assert_eq!(s.drops().get(DropReason::WrongTtl), 1);
    assert_eq!(s.state(), State::Down);
    s.handle(r(250), ms(2));
    assert_eq!(s.state(), State::Init);
}

// ---- two sessions on a simulated link ------------------------------------------------

/// Two sessions and the packets between them, delivered after `latency`.
/// Each step runs the earliest of: a delivery, a session's deadline.
struct Link {
    a: Session,
    b: Session,
    now: Time,
    latency: u64,
    /// Deliver a → b (false: a's packets are lost).
    a_to_b: bool,
    b_to_a: bool,
    /// (arrival, to b, packet)
    in_flight: Vec<(Time, bool, Packet)>,
    /// (time, side, change)
    changes: Vec<(Time, char, Change)>,
    sent: [u32; 2],
}

impl Link {
    fn new(a: Config, b: Config, latency_us: u64) -> Link {
        Link {
            a: Session::new(a, 11, Time(0)),
            b: Session::new(b, 22, Time(0)),
            now: Time(0),
            latency: latency_us,
            a_to_b: true,
            b_to_a: true,
            in_flight: Vec::new(),
            changes: Vec::new(),
            sent: [0, 0],
        }
    }

    fn deadline(s: &Session) -> Option<Time> {
        [s.next_tx(), s.detect_at()].into_iter().flatten().min()
    }

    /// Takes one side's output: its change, and its packet onto the link.
    fn apply(&mut self, from_b: bool, out: Output) {
        let side = if from_b { 'b' } else { 'a' };
        if let Some(c) = out.change {
            self.changes.push((self.now, side, c));
        }
        if let Some(p) = out.send {
            // Invariants of every packet either side sends.
            assert!(!(p.poll && p.final_), "P and F together: {p:?}");
            assert!(!p.demand);
            assert_eq!(decode(&p.encode()), Ok(p), "does not round trip");
            if p.state != State::Up {
                assert!(p.desired_min_tx >= SLOW_START_TX, "slow start: {p:?}");
            }
            self.sent[usize::from(from_b)] += 1;
            let deliver = if from_b { self.b_to_a } else { self.a_to_b };
            if deliver {
                self.in_flight
                    .push((self.now.plus(self.latency), !from_b, p));
            }
        }
    }

    /// Runs until `until`, at most 100,000 steps.
    fn run_until(&mut self, until: Time) {
        for _ in 0..100_000 {
            let arrival = self.in_flight.iter().map(|(t, ..)| *t).min();
            let da = Link::deadline(&self.a);
            let db = Link::deadline(&self.b);
            let Some(next) = [arrival, da, db].into_iter().flatten().min() else {
                return;
            };
            if next > until {
                self.now = until;
                return;
            }
            assert!(next >= self.now, "time went back");
            self.now = next;
            if arrival == Some(next) {
                let i = self
                    .in_flight
                    .iter()
                    .position(|(t, ..)| *t == next)
                    .unwrap();
                let (_, to_b, p) = self.in_flight.remove(i);
                let ev = Event::Received(Received {
                    packet: p,
                    ttl: 255,
                    source_ok: true,
                });
                let out = if to_b {
                    self.b.handle(ev, next)
                } else {
                    self.a.handle(ev, next)
                };
                // The receiver's output.
                self.apply(to_b, out);
            } else if da == Some(next) {
                let out = self.a.handle(Event::Timer, next);
                self.apply(false, out);
            } else {
                let out = self.b.handle(Event::Timer, next);
                self.apply(true, out);
            }
        }
        panic!("no end by {until:?}");
    }
}

fn peer_config(tx_ms: u32, rx_ms: u32, mult: u8) -> Config {
    Config {
        local_discriminator: NonZeroU32::new(PEER).unwrap(),
        timers: timers(tx_ms, rx_ms, mult),
        hops: Hops::Single,
    }
}

/// Two sessions at 100 ms × 3 come Up within the slow-start second, settle
/// at the fast rate, and when one goes silent (a stalled daemon) the other
/// declares it down within the 300 ms Detection Time.
#[test]
fn two_sessions_come_up_and_detect_a_silent_peer() {
    let mut link = Link::new(config(100, 100, 3), peer_config(100, 100, 3), 500);
    link.run_until(ms(1000));
    assert_eq!((link.a.state(), link.b.state()), (State::Up, State::Up));
    let up: Vec<_> = link
        .changes
        .iter()
        .filter(|(_, _, c)| c.to == State::Up)
        .collect();
    assert_eq!(up.len(), 2);
    assert!(up.iter().all(|(t, ..)| *t < ms(10)), "{up:?}");

    // Settled: both Poll Sequences answered, 100 ms each way.
    link.run_until(ms(3000));
    assert!(!link.a.poll_active() && !link.b.poll_active());
    assert_eq!(link.a.tx_interval(), 100_000);
    assert_eq!(link.a.detection_time(), Some(300_000));
    // About 10 packets a second each way (75-100 % jitter: 10 to 13.4).
    let before = link.sent;
    link.run_until(ms(13_000));
    for (side, sent_before) in before.iter().enumerate() {
        let n = link.sent[side] - sent_before;
        assert!((100..=134).contains(&n), "side {side}: {n} in 10 s");
    }
    assert_eq!(link.changes.len(), 4, "no flap: {:?}", link.changes);

    // b stalls: nothing more from it. a notices within 300 ms of b's last
    // packet (and its last packet left at most one interval before).
    link.b_to_a = false;
    let stalled = link.now;
    link.run_until(ms(14_000));
    let (t, side, c) = link.changes[4];
    assert_eq!(side, 'a');
    assert!(c.fails_client());
    assert_eq!(c.diag, Diag::CONTROL_DETECTION_TIME_EXPIRED);
    let took = t.0 - stalled.0;
    assert!(took <= 300_000, "detected after {took} µs");
    // b, hearing a's Down, goes down too (neighbor signaled).
    let (_, side, c) = link.changes[5];
    assert_eq!((side, c.diag), ('b', Diag::NEIGHBOR_SIGNALED_SESSION_DOWN));

    // b recovers: both Up again within the slow-start exchange.
    link.b_to_a = true;
    link.run_until(ms(18_000));
    assert_eq!((link.a.state(), link.b.state()), (State::Up, State::Up));
    assert_eq!(link.a.drops().total() + link.b.drops().total(), 0);
}

/// Asymmetric settings: each side transmits at the slower of its Desired
/// Min TX and the other's Required Min RX, and the Detection Times follow.
#[test]
fn two_sessions_negotiate_asymmetric_rates() {
    let mut link = Link::new(config(50, 300, 3), peer_config(200, 100, 5), 1000);
    link.run_until(ms(5000));
    assert_eq!((link.a.state(), link.b.state()), (State::Up, State::Up));
    // a sends at max(50, b's rx 100) = 100 ms; b at max(200, a's rx 300).
    assert_eq!(link.a.tx_interval(), 100_000);
    assert_eq!(link.b.tx_interval(), 300_000);
    // a detects b after b's mult 5 × max(a's rx 300, b's tx 200) = 1.5 s;
    // b detects a after 3 × max(100, 50) = 300 ms.
    assert_eq!(link.a.detection_time(), Some(1_500_000));
    assert_eq!(link.b.detection_time(), Some(300_000));
    link.run_until(ms(20_000));
    assert_eq!(link.changes.len(), 4, "no flap: {:?}", link.changes);
}

/// Detect Mult 1 is the tightest the RFC allows (75-90 % jitter): with a
/// 1 ms link it holds without a flap.
#[test]
fn detect_mult_one_holds_on_a_fast_link() {
    let mut link = Link::new(config(100, 100, 1), peer_config(100, 100, 1), 1000);
    link.run_until(ms(60_000));
    assert_eq!((link.a.state(), link.b.state()), (State::Up, State::Up));
    assert_eq!(link.changes.len(), 4, "{:?}", link.changes);
}

// ---- proptest ----------------------------------------------------------------

mod props {
    use super::*;
    use proptest::prelude::*;

    fn state() -> impl Strategy<Value = State> {
        (0u8..4).prop_map(State::from_bits)
    }

    /// Any packet the decoder could return.
    fn valid_packet() -> impl Strategy<Value = Packet> {
        (
            (
                0u8..32,
                state(),
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
            ),
            (any::<bool>(), 1u8..=255, 1u32..=u32::MAX, any::<u32>()),
            (any::<u32>(), any::<u32>(), any::<u32>()),
        )
            .prop_map(
                |((diag, state, poll, cpi, demand), (fin, mult, my, your), (tx, rx, echo))| {
                    let your = if your == 0 && !matches!(state, State::Down | State::AdminDown) {
                        1
                    } else {
                        your
                    };
                    Packet {
                        diag: Diag::from_bits(diag),
                        state,
                        poll,
                        final_: fin && !poll,
                        control_plane_independent: cpi,
                        demand,
                        detect_mult: mult,
                        my_discriminator: my,
                        your_discriminator: your,
                        desired_min_tx: tx,
                        required_min_rx: rx,
                        required_min_echo_rx: echo,
                    }
                },
            )
    }

    /// One event for a session, with the time step before it (µs).
    fn event() -> impl Strategy<Value = (u64, Event)> {
        let received = (valid_packet(), any::<u8>(), any::<bool>(), any::<bool>()).prop_map(
            |(mut p, ttl, source_ok, ours)| {
                if ours {
                    // Mostly about this session, so the state machine moves.
                    p.your_discriminator = if matches!(p.state, State::Down | State::AdminDown) {
                        0
                    } else {
                        LOCAL
                    };
                }
                Event::Received(Received {
                    packet: p,
                    ttl: if ttl < 128 { 255 } else { ttl },
                    source_ok: source_ok || ttl % 2 == 0,
                })
            },
        );
        let ev = prop_oneof![
            6 => received,
            4 => Just(Event::Timer),
            1 => Just(Event::AdminDown),
            1 => Just(Event::AdminUp),
            1 => (1u32..=2_000_000, any::<u32>(), 1u8..=255).prop_map(|(tx, rx, m)| {
                Event::SetTimers(Timers {
                    desired_min_tx: NonZeroU32::new(tx).unwrap(),
                    required_min_rx: rx % 3_000_000,
                    detect_mult: NonZeroU8::new(m).unwrap(),
                })
            }),
        ];
        (0u64..2_000_000, ev)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every packet the decoder accepts encodes back to the decoded
        /// fields, and encoding is the canonical form of the input.
        #[test]
        fn any_bytes_decode_to_an_error_or_a_canonical_packet(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            if let Ok(p) = decode(&bytes) {
                let mut canonical = [0u8; 24];
                canonical.copy_from_slice(&bytes[..24]);
                canonical[3] = 24;
                prop_assert_eq!(p.encode(), canonical);
                prop_assert_eq!(decode(&p.encode()), Ok(p));
            }
        }

        #[test]
        fn valid_packets_round_trip(p in valid_packet()) {
            prop_assert_eq!(decode(&p.encode()), Ok(p));
        }

        /// Random event sequences never panic, never send P with F or D,
        /// keep slow start outside Up, never schedule in the past, and
        /// stay within the jitter bounds.
        #[test]
        fn random_sessions_keep_the_rules(
            mult in 1u8..=5,
            seed in any::<u64>(),
            events in proptest::collection::vec(event(), 1..120),
        ) {
            let mut s = Session::new(config(100, 100, mult), seed, Time(0));
            let mut now = Time(0);
            for (dt, ev) in events {
                // Timers fire at their deadline; others after the step.
                now = match ev {
                    Event::Timer => [s.next_tx(), s.detect_at()]
                        .into_iter()
                        .flatten()
                        .min()
                        .unwrap_or(now.plus(dt))
                        .max(now),
                    _ => now.plus(dt),
                };
                let before = s.state();
                let out = s.handle(ev, now);
                if let Some(p) = out.send {
                    prop_assert!(!(p.poll && p.final_));
                    prop_assert!(!p.demand);
                    prop_assert_eq!(p.my_discriminator, LOCAL);
                    prop_assert_eq!(p.required_min_echo_rx, 0);
                    prop_assert_eq!(p.state, s.state());
                    if p.state != State::Up {
                        prop_assert!(p.desired_min_tx >= SLOW_START_TX);
                    }
                    prop_assert_eq!(decode(&p.encode()), Ok(p));
                }
                match out.change {
                    Some(c) => {
                        prop_assert_eq!(c.from, before);
                        prop_assert_eq!(c.to, s.state());
                        prop_assert!(c.from != c.to);
                    }
                    None => prop_assert_eq!(before, s.state()),
                }
                // After a timer nothing due is left behind: the next
                // periodic packet is not in the past (at `now` only when
                // transmission just resumed) and a passed Detection Time
                // has been acted on.
                if matches!(ev, Event::Timer) {
                    prop_assert!(out.next_tx.is_none_or(|t| t >= now));
                    prop_assert!(out.detect_at.is_none_or(|t| t > now));
                }
                prop_assert_eq!(out.next_tx, s.next_tx());
                prop_assert_eq!(out.detect_at, s.detect_at());
            }
        }
    }
}
