//! BFD, Bidirectional Forwarding Detection (RFC 5880, asynchronous mode),
//! over UDP as RFC 5881 (single hop) and RFC 5883 (multihop) carry it: the
//! pure layers. `wire` is the Control packet codec, `session` the per-peer
//! state machine: events and `now` in, an [`session::Output`] out (a
//! packet to send now, the next transmit time, the detection deadline, a
//! state change). The driver owns the sockets and the clock, as the BGP
//! FSM's does.
//!
//! What is implemented and what is not:
//!
//! * Asynchronous mode, the three-way handshake (Down → Init → Up), the
//!   Detection Time, slow start (RFC 5880 §6.8.3), the Poll Sequence on an
//!   interval change (§6.5), per-packet jitter (§6.8.7), administrative
//!   down and up (§6.8.16), and the reception checks of §6.8.6 plus the
//!   TTL rule of RFC 5881 §5, each discard counted by reason ([`Drops`]).
//! * Demand mode is not offered: pathosd never sets D. A peer that does is
//!   honoured as RFC 5880 §6.8.6 requires (periodic transmission stops
//!   while both sides are Up and no Poll is being sent).
//! * No Echo function (Required Min Echo RX Interval is sent as zero, so
//!   the peer sends no Echo packets) and no authentication (a packet with
//!   the A bit is refused).
//!
//! A BGP session reacts to [`session::Change::fails_client`]: an Up → Down
//! that RFC 5882 §4.2 asks a client to act on (not one the peer's AdminDown
//! caused, nor our own).

pub mod session;
pub mod wire;

use std::time::{Duration, Instant};

/// RFC 5881 §4: "BFD Control packets MUST be transmitted in UDP packets
/// with destination port 3784".
pub const PORT_SINGLE_HOP: u16 = 3784;
/// RFC 5883 §5: "the UDP destination port MUST have a value of 4784".
pub const PORT_MULTIHOP: u16 = 4784;
/// RFC 5881 §4: "The source port MUST be in the range 49152 through 65535.
/// The same UDP source port number MUST be used for all BFD Control
/// packets associated with a particular session." RFC 5883 §5 keeps the
/// single-hop encapsulation apart from the destination port.
pub const SOURCE_PORTS: std::ops::RangeInclusive<u16> = 49152..=65535;
/// RFC 5881 §5: "all BFD Control packets for the session MUST be sent with
/// a Time to Live (TTL) or Hop Limit value of 255". pathosd sends 255 on
/// multihop sessions too, so the receiver can bound the hop count.
pub const SEND_TTL: u8 = 255;

/// Which transport a session runs over: it decides the destination port
/// and the TTL a received packet must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hops {
    /// RFC 5881: a directly connected peer. RFC 5881 §5: "All received BFD
    /// Control packets that are demultiplexed to the session MUST be
    /// discarded if the received TTL or Hop Limit is not equal to 255."
    Single,
    /// RFC 5883: a peer some hops away (BIRD runs a session with a
    /// `multihop` BGP neighbor, such as one on loopback, this way). RFC
    /// 5883 has no fixed TTL rule: a packet with a TTL below `min_ttl` is
    /// dropped (1 accepts any).
    Multi { min_ttl: u8 },
}

impl Hops {
    /// The UDP destination port of this transport.
    pub fn port(self) -> u16 {
        match self {
            Hops::Single => PORT_SINGLE_HOP,
            Hops::Multi { .. } => PORT_MULTIHOP,
        }
    }

    /// Whether a packet received with this TTL (or IPv6 Hop Limit) may be
    /// trusted.
    pub fn accepts_ttl(self, ttl: u8) -> bool {
        match self {
            Hops::Single => ttl == 255,
            Hops::Multi { min_ttl } => ttl >= min_ttl,
        }
    }
}

/// Microseconds since an origin the driver picks (e.g. when the session
/// started): BFD intervals are microseconds on the wire. Only differences
/// are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

impl Time {
    /// `now` relative to `origin`, saturating (a mixed-up origin must not
    /// panic).
    pub fn since(origin: Instant, now: Instant) -> Time {
        let us = now.saturating_duration_since(origin).as_micros();
        Time(u64::try_from(us).unwrap_or(u64::MAX))
    }

    /// The instant this time stands for, given the same origin.
    pub fn to_instant(self, origin: Instant) -> Instant {
        let d = Duration::from_micros(self.0);
        origin.checked_add(d).unwrap_or(origin)
    }

    /// `micros` later, saturating.
    pub fn plus(self, micros: u64) -> Time {
        Time(self.0.saturating_add(micros))
    }
}

/// Why a received datagram was dropped: one counter each (the driver
/// exports them as a labelled family in /metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Fewer bytes than the 24-byte mandatory section.
    Short,
    /// Version is not 1.
    Version,
    /// The Length field is below the minimum or beyond the datagram.
    Length,
    /// Detect Mult is zero.
    DetectMult,
    /// The Multipoint bit is set.
    Multipoint,
    /// Both Poll and Final are set.
    PollAndFinal,
    /// My Discriminator is zero.
    MyDiscriminatorZero,
    /// Your Discriminator is zero in a state other than Down or AdminDown.
    YourDiscriminatorZero,
    /// The A bit: authentication is not supported.
    Authentication,
    /// Your Discriminator is not this session's.
    WrongDiscriminator,
    /// The source address or port is not the session's peer.
    WrongSource,
    /// The TTL (Hop Limit) is not what the transport requires.
    WrongTtl,
    /// No session is configured for the source (the driver's count).
    NoSession,
}

impl DropReason {
    pub const ALL: [DropReason; 13] = [
        DropReason::Short,
        DropReason::Version,
        DropReason::Length,
        DropReason::DetectMult,
        DropReason::Multipoint,
        DropReason::PollAndFinal,
        DropReason::MyDiscriminatorZero,
        DropReason::YourDiscriminatorZero,
        DropReason::Authentication,
        DropReason::WrongDiscriminator,
        DropReason::WrongSource,
        DropReason::WrongTtl,
        DropReason::NoSession,
    ];

    /// The label value in /metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Short => "short",
            DropReason::Version => "version",
            DropReason::Length => "length",
            DropReason::DetectMult => "detect_mult",
            DropReason::Multipoint => "multipoint",
            DropReason::PollAndFinal => "poll_and_final",
            DropReason::MyDiscriminatorZero => "my_discriminator_zero",
            DropReason::YourDiscriminatorZero => "your_discriminator_zero",
            DropReason::Authentication => "authentication",
            DropReason::WrongDiscriminator => "wrong_discriminator",
            DropReason::WrongSource => "wrong_source",
            DropReason::WrongTtl => "wrong_ttl",
            DropReason::NoSession => "no_session",
        }
    }

    fn index(self) -> usize {
        // ALL lists every variant in declaration order.
        self as usize
    }
}

/// Dropped datagrams by reason. Plain counters (one thread owns a session),
/// saturating: a flood can pin one at the maximum, never wrap or panic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drops([u64; DropReason::ALL.len()]);

impl Drops {
    pub fn count(&mut self, reason: DropReason) {
        let c = &mut self.0[reason.index()];
        *c = c.saturating_add(1);
    }

    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason.index()]
    }

    /// Every reason with its count, zeros included (a /metrics family
    /// shows every label from the start).
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&r| (r, self.get(r)))
    }

    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, &c| a.saturating_add(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_reasons_are_listed_in_declaration_order() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i, "{r:?}");
        }
        let mut names: Vec<&str> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DropReason::ALL.len());
    }

    #[test]
    fn counters_saturate() {
        let mut d = Drops::default();
        d.0[DropReason::WrongTtl.index()] = u64::MAX;
        d.count(DropReason::WrongTtl);
        d.count(DropReason::Short);
        assert_eq!(d.get(DropReason::WrongTtl), u64::MAX);
        assert_eq!(d.total(), u64::MAX);
        assert_eq!(d.iter().filter(|(_, c)| *c > 0).count(), 2);
    }

    #[test]
    fn ttl_rules() {
        assert!(Hops::Single.accepts_ttl(255));
        assert!(!Hops::Single.accepts_ttl(254));
        assert!(Hops::Multi { min_ttl: 1 }.accepts_ttl(1));
        assert!(Hops::Multi { min_ttl: 254 }.accepts_ttl(254));
        assert!(!Hops::Multi { min_ttl: 254 }.accepts_ttl(64));
        assert_eq!(Hops::Single.port(), 3784);
        assert_eq!(Hops::Multi { min_ttl: 1 }.port(), 4784);
    }

    #[test]
    fn time_saturates() {
        assert_eq!(Time(u64::MAX).plus(1), Time(u64::MAX));
        let o = Instant::now();
        assert_eq!(Time::since(o, o), Time(0));
        assert_eq!(Time(1500).to_instant(o) - o, Duration::from_micros(1500));
    }
}
