//! The BFD Control packet (RFC 5880 §4.1): decode and encode, without I/O.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Vers |  Diag   |Sta|P|F|C|A|D|M|  Detect Mult  |    Length     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       My Discriminator                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Your Discriminator                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Desired Min TX Interval                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                   Required Min RX Interval                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Required Min Echo RX Interval                 |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Auth Type   |   Auth Len    |    Authentication Data...     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! [`decode`] applies the checks of RFC 5880 §6.8.6 that need nothing but
//! the packet, in the RFC's order, and returns every failure as a
//! [`DecodeError`] (never a panic: every read is bounds-checked and the
//! arithmetic is on `usize` lengths no larger than the input). The checks
//! that need the session (Your Discriminator naming it, the TTL, the
//! source) are the session's (`bfd::session`). Authentication is not
//! supported: a packet with the A bit is parsed far enough to check its
//! lengths and then refused, as §6.8.6 orders for a session without
//! authentication.
//!
//! [`Packet::encode`] writes the 24-byte mandatory section. The decoded
//! [`Packet`] holds every field of that section except Version (always 1),
//! Length (always 24 when pathosd writes it), A and M (a packet with either
//! set is refused), so `decode(b).encode()` is `b`'s first 24 bytes with
//! Length set to 24: the canonical form the fuzz target checks.

use std::fmt;

/// RFC 5880 §4.1: "Version (Vers): The version number of the protocol.
/// This document defines protocol version 1."
pub const VERSION: u8 = 1;

/// The mandatory section's length: "the minimum correct value (24 if the A
/// bit is clear, or 26 if the A bit is set)" (RFC 5880 §6.8.6).
pub const LEN: usize = 24;
const LEN_WITH_AUTH: usize = 26;

const FLAG_POLL: u8 = 0x20;
const FLAG_FINAL: u8 = 0x10;
const FLAG_CPI: u8 = 0x08;
const FLAG_AUTH: u8 = 0x04;
const FLAG_DEMAND: u8 = 0x02;
const FLAG_MULTIPOINT: u8 = 0x01;

/// A session state (RFC 5880 §4.1 "State (Sta)", the values of
/// bfd.SessionState in §6.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    AdminDown,
    Down,
    Init,
    Up,
}

impl State {
    /// The two bits on the wire: 0 AdminDown, 1 Down, 2 Init, 3 Up.
    pub fn code(self) -> u8 {
        match self {
            State::AdminDown => 0,
            State::Down => 1,
            State::Init => 2,
            State::Up => 3,
        }
    }

    /// The state of the two low bits of `bits` (every value is a state).
    pub fn from_bits(bits: u8) -> State {
        match bits & 3 {
            0 => State::AdminDown,
            1 => State::Down,
            2 => State::Init,
            _ => State::Up,
        }
    }

    /// Lower-case name for /status and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            State::AdminDown => "admin_down",
            State::Down => "down",
            State::Init => "init",
            State::Up => "up",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A diagnostic code (RFC 5880 §4.1 "Diagnostic (Diag)"): five bits, so
/// every value 0..=31 is representable; 9..=31 are unassigned and kept as
/// received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Diag(u8);

impl Diag {
    pub const NONE: Diag = Diag(0);
    pub const CONTROL_DETECTION_TIME_EXPIRED: Diag = Diag(1);
    pub const ECHO_FUNCTION_FAILED: Diag = Diag(2);
    pub const NEIGHBOR_SIGNALED_SESSION_DOWN: Diag = Diag(3);
    pub const FORWARDING_PLANE_RESET: Diag = Diag(4);
    pub const PATH_DOWN: Diag = Diag(5);
    pub const CONCATENATED_PATH_DOWN: Diag = Diag(6);
    pub const ADMINISTRATIVELY_DOWN: Diag = Diag(7);
    pub const REVERSE_CONCATENATED_PATH_DOWN: Diag = Diag(8);

    /// The diagnostic of the five low bits of `bits`.
    pub fn from_bits(bits: u8) -> Diag {
        Diag(bits & 0x1f)
    }

    pub fn code(self) -> u8 {
        self.0
    }

    /// The RFC's name, for logs and /status.
    pub fn as_str(self) -> &'static str {
        match self.0 {
            0 => "no diagnostic",
            1 => "control detection time expired",
            2 => "echo function failed",
            3 => "neighbor signaled session down",
            4 => "forwarding plane reset",
            5 => "path down",
            6 => "concatenated path down",
            7 => "administratively down",
            8 => "reverse concatenated path down",
            _ => "unassigned",
        }
    }
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.as_str(), self.0)
    }
}

/// A BFD Control packet without authentication, as decoded or to be sent.
/// Intervals are in microseconds, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Packet {
    pub diag: Diag,
    pub state: State,
    /// P: the sender asks for verification of connectivity or of a
    /// parameter change (a Poll Sequence, RFC 5880 §6.5).
    pub poll: bool,
    /// F: the sender answers a packet that had P set.
    pub final_: bool,
    /// C: the sender's BFD does not share fate with its control plane.
    pub control_plane_independent: bool,
    /// D: the sender wishes to run Demand mode (pathosd never sets it).
    pub demand: bool,
    pub detect_mult: u8,
    pub my_discriminator: u32,
    pub your_discriminator: u32,
    pub desired_min_tx: u32,
    pub required_min_rx: u32,
    pub required_min_echo_rx: u32,
}

impl Packet {
    /// The 24-byte mandatory section: Version 1, Length 24, A and M clear
    /// (RFC 5880 §6.8.7: "Version: Set to the current version number (1)",
    /// "Authentication Present (A): Set to 1 if authentication is in use
    /// on this session (bfd.AuthType is nonzero), or 0 if not",
    /// "Multipoint (M): Set to 0"). Every other field is written as given.
    pub fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0] = (VERSION << 5) | self.diag.code();
        let mut flags = self.state.code() << 6;
        for (set, bit) in [
            (self.poll, FLAG_POLL),
            (self.final_, FLAG_FINAL),
            (self.control_plane_independent, FLAG_CPI),
            (self.demand, FLAG_DEMAND),
        ] {
            if set {
                flags |= bit;
            }
        }
        b[1] = flags;
        b[2] = self.detect_mult;
        // LEN is 24: it fits the octet.
        b[3] = LEN as u8;
        b[4..8].copy_from_slice(&self.my_discriminator.to_be_bytes());
        b[8..12].copy_from_slice(&self.your_discriminator.to_be_bytes());
        b[12..16].copy_from_slice(&self.desired_min_tx.to_be_bytes());
        b[16..20].copy_from_slice(&self.required_min_rx.to_be_bytes());
        b[20..24].copy_from_slice(&self.required_min_echo_rx.to_be_bytes());
        b
    }
}

/// Why a datagram is not a usable BFD Control packet. Each is a reason to
/// discard it (RFC 5880 §6.8.6), counted under [`DecodeError::reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecodeError {
    /// Fewer bytes than the mandatory section.
    Short { len: usize },
    /// RFC 5880 §6.8.6: "If the version number is not correct (1), the
    /// packet MUST be discarded."
    Version(u8),
    /// RFC 5880 §6.8.6: "If the Length field is less than the minimum
    /// correct value (24 if the A bit is clear, or 26 if the A bit is set),
    /// the packet MUST be discarded" and "If the Length field is greater
    /// than the payload of the encapsulating protocol, the packet MUST be
    /// discarded"; also an Auth Len that does not end where Length does.
    Length { field: u8, datagram: usize },
    /// RFC 5880 §6.8.6: "If the Detect Mult field is zero, the packet MUST
    /// be discarded."
    DetectMult,
    /// RFC 5880 §6.8.6: "If the Multipoint (M) bit is nonzero, the packet
    /// MUST be discarded."
    Multipoint,
    /// Both P and F: RFC 5880 §6.5 "A BFD Control packet MUST NOT have both
    /// the Poll (P) and Final (F) bits set." Such a packet is neither a
    /// poll nor an answer; BIRD discards it too.
    PollAndFinal,
    /// RFC 5880 §6.8.6: "If the My Discriminator field is zero, the packet
    /// MUST be discarded."
    MyDiscriminator,
    /// RFC 5880 §6.8.6: "If the Your Discriminator field is zero and the
    /// State field is not Down or AdminDown, the packet MUST be discarded."
    YourDiscriminator(State),
    /// The A bit: RFC 5880 §6.8.6 "If the A bit is set and no
    /// authentication is in use (bfd.AuthType is zero), the packet MUST be
    /// discarded." pathosd supports no authentication type.
    Authentication { auth_type: u8 },
}

impl DecodeError {
    /// The drop counter this error counts under.
    pub fn reason(&self) -> super::DropReason {
        use super::DropReason as R;
        match self {
            DecodeError::Short { .. } => R::Short,
            DecodeError::Version(_) => R::Version,
            DecodeError::Length { .. } => R::Length,
            DecodeError::DetectMult => R::DetectMult,
            DecodeError::Multipoint => R::Multipoint,
            DecodeError::PollAndFinal => R::PollAndFinal,
            DecodeError::MyDiscriminator => R::MyDiscriminatorZero,
            DecodeError::YourDiscriminator(_) => R::YourDiscriminatorZero,
            DecodeError::Authentication { .. } => R::Authentication,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short { len } => {
                write!(f, "{len} bytes, shorter than the {LEN}-byte header")
            }
            DecodeError::Version(v) => write!(f, "version {v}, not {VERSION}"),
            DecodeError::Length { field, datagram } => {
                write!(
                    f,
                    "Length field {field} wrong for a {datagram}-byte datagram"
                )
            }
            DecodeError::DetectMult => f.write_str("Detect Mult is zero"),
            DecodeError::Multipoint => f.write_str("Multipoint (M) bit set"),
            DecodeError::PollAndFinal => f.write_str("both Poll (P) and Final (F) set"),
            DecodeError::MyDiscriminator => f.write_str("My Discriminator is zero"),
            DecodeError::YourDiscriminator(s) => {
                write!(f, "Your Discriminator is zero in state {s}")
            }
            DecodeError::Authentication { auth_type } => {
                write!(f, "authentication type {auth_type} not supported")
            }
        }
    }
}

fn u32_at(b: &[u8; LEN], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Decodes one datagram's payload (the UDP payload: its length is "the
/// payload of the encapsulating protocol"). Bytes after Length are ignored.
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    let Some(head) = datagram.first_chunk::<LEN>() else {
        return Err(DecodeError::Short {
            len: datagram.len(),
        });
    };
    let version = head[0] >> 5;
    if version != VERSION {
        return Err(DecodeError::Version(version));
    }
    let flags = head[1];
    let auth = flags & FLAG_AUTH != 0;
    let length = head[3];
    let min = if auth { LEN_WITH_AUTH } else { LEN };
    if usize::from(length) < min || usize::from(length) > datagram.len() {
        return Err(DecodeError::Length {
            field: length,
            datagram: datagram.len(),
        });
    }
    let detect_mult = head[2];
    if detect_mult == 0 {
        return Err(DecodeError::DetectMult);
    }
    if flags & FLAG_MULTIPOINT != 0 {
        return Err(DecodeError::Multipoint);
    }
    let poll = flags & FLAG_POLL != 0;
    let final_ = flags & FLAG_FINAL != 0;
    if poll && final_ {
        return Err(DecodeError::PollAndFinal);
    }
    let my_discriminator = u32_at(head, 4);
    if my_discriminator == 0 {
        return Err(DecodeError::MyDiscriminator);
    }
    let state = State::from_bits(flags >> 6);
    let your_discriminator = u32_at(head, 8);
    if your_discriminator == 0 && !matches!(state, State::Down | State::AdminDown) {
        return Err(DecodeError::YourDiscriminator(state));
    }
    if auth {
        // RFC 5880 §4.1: "Auth Len: The length, in bytes, of the
        // authentication section, including the Auth Type and Auth Len
        // fields." Length ≥ 26 was checked and Length ≤ the datagram, so
        // both octets are there.
        let auth_type = datagram[LEN];
        let auth_len = usize::from(datagram[LEN + 1]);
        if LEN + auth_len != usize::from(length) {
            return Err(DecodeError::Length {
                field: length,
                datagram: datagram.len(),
            });
        }
        return Err(DecodeError::Authentication { auth_type });
    }
    Ok(Packet {
        diag: Diag::from_bits(head[0]),
        state,
        poll,
        final_,
        control_plane_independent: flags & FLAG_CPI != 0,
        demand: flags & FLAG_DEMAND != 0,
        detect_mult,
        my_discriminator,
        your_discriminator,
        desired_min_tx: u32_at(head, 12),
        required_min_rx: u32_at(head, 16),
        required_min_echo_rx: u32_at(head, 20),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Down packet as a session sends before it knows its peer: Version 1,
    /// no diagnostic, Down, Detect Mult 3, Length 24, My Discriminator 1,
    /// Your Discriminator 0, 1 s / 1 s / no echo.
    fn down_bytes() -> [u8; 24] {
        [
            0x20, 0x40, 3, 24, //
            0, 0, 0, 1, //
            0, 0, 0, 0, //
            0x00, 0x0f, 0x42, 0x40, //
            0x00, 0x0f, 0x42, 0x40, //
            0, 0, 0, 0,
        ]
    }

    #[test]
    fn every_state_and_diag_round_trips_through_its_bits() {
        for s in [State::AdminDown, State::Down, State::Init, State::Up] {
            assert_eq!(State::from_bits(s.code()), s);
        }
        for d in 0..32 {
            assert_eq!(Diag::from_bits(d).code(), d);
        }
        assert_eq!(Diag::from_bits(0xff).code(), 31);
        assert_eq!(Diag::from_bits(9).as_str(), "unassigned");
    }

    #[test]
    fn trailing_bytes_after_length_are_ignored() {
        let mut b = down_bytes().to_vec();
        b.extend_from_slice(&[0xde, 0xad]);
        let p = decode(&b).expect("valid");
        assert_eq!(p.encode(), down_bytes());
    }

    #[test]
    fn a_length_inside_the_datagram_above_24_is_accepted_without_auth() {
        // RFC 5880 §6.8.6 discards only a Length below the minimum or
        // beyond the payload (BIRD and FRR accept the same).
        let mut b = down_bytes().to_vec();
        b[3] = 28;
        b.extend_from_slice(&[0; 4]);
        assert!(decode(&b).is_ok());
    }

    #[test]
    fn authentication_is_parsed_for_its_length_then_refused() {
        // Simple Password (type 1), Auth Len 7: type, len, key id, 4 bytes.
        let mut b = down_bytes().to_vec();
        b[1] |= FLAG_AUTH;
        b[3] = 31;
        b.extend_from_slice(&[1, 7, 1, b'a', b'b', b'c', b'd']);
        assert_eq!(
            decode(&b),
            Err(DecodeError::Authentication { auth_type: 1 })
        );
        // Auth Len that does not end where Length does.
        b[25] = 6;
        assert_eq!(
            decode(&b),
            Err(DecodeError::Length {
                field: 31,
                datagram: 31
            })
        );
        // A set but Length 24 or 25: below the minimum of 26.
        let mut c = down_bytes().to_vec();
        c[1] |= FLAG_AUTH;
        c.push(1);
        c[3] = 25;
        assert_eq!(
            decode(&c),
            Err(DecodeError::Length {
                field: 25,
                datagram: 25
            })
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        assert_eq!(
            DecodeError::Length {
                field: 30,
                datagram: 24
            }
            .to_string(),
            "Length field 30 wrong for a 24-byte datagram"
        );
        assert_eq!(
            DecodeError::YourDiscriminator(State::Up).to_string(),
            "Your Discriminator is zero in state up"
        );
        assert_eq!(
            Diag::CONTROL_DETECTION_TIME_EXPIRED.to_string(),
            "control detection time expired (1)"
        );
    }
}
