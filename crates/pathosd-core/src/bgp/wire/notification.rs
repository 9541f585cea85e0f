//! NOTIFICATION (RFC 4271 §4.5) and the error codes every other decoder
//! reports with: a decode error *is* the NOTIFICATION pathosd sends back.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Error code    | Error subcode |   Data (variable)             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use std::fmt;

/// Error codes (RFC 4271 §4.5, RFC 7313 §5 for ROUTE-REFRESH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ErrorCode {
    MessageHeader = 1,
    OpenMessage = 2,
    UpdateMessage = 3,
    HoldTimerExpired = 4,
    FiniteStateMachine = 5,
    Cease = 6,
    RouteRefreshMessage = 7,
}

impl ErrorCode {
    pub(crate) fn from_u8(v: u8) -> Option<ErrorCode> {
        Some(match v {
            1 => ErrorCode::MessageHeader,
            2 => ErrorCode::OpenMessage,
            3 => ErrorCode::UpdateMessage,
            4 => ErrorCode::HoldTimerExpired,
            5 => ErrorCode::FiniteStateMachine,
            6 => ErrorCode::Cease,
            7 => ErrorCode::RouteRefreshMessage,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::MessageHeader => "Message Header Error",
            ErrorCode::OpenMessage => "OPEN Message Error",
            ErrorCode::UpdateMessage => "UPDATE Message Error",
            ErrorCode::HoldTimerExpired => "Hold Timer Expired",
            ErrorCode::FiniteStateMachine => "Finite State Machine Error",
            ErrorCode::Cease => "Cease",
            ErrorCode::RouteRefreshMessage => "ROUTE-REFRESH Message Error",
        }
    }
}

/// "If no appropriate Error Subcode is defined, then a zero (Unspecific)
/// value is used for the Error Subcode field" (RFC 4271 §4.5).
pub const UNSPECIFIC: u8 = 0;

/// Message Header Error subcodes (RFC 4271 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HeaderError {
    ConnectionNotSynchronized = 1,
    BadMessageLength = 2,
    BadMessageType = 3,
}

/// OPEN Message Error subcodes (RFC 4271 §4.5; 7 from RFC 5492 §5, 11
/// from RFC 9234).
/// Subcode 5 (Authentication Failure) is deprecated and never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OpenError {
    UnsupportedVersionNumber = 1,
    BadPeerAs = 2,
    BadBgpIdentifier = 3,
    UnsupportedOptionalParameter = 4,
    UnacceptableHoldTime = 6,
    UnsupportedCapability = 7,
    /// RFC 9234 §4.2.
    RoleMismatch = 11,
}

/// UPDATE Message Error subcodes (RFC 4271 §4.5). Subcode 7 (AS Routing
/// Loop) is deprecated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum UpdateError {
    MalformedAttributeList = 1,
    UnrecognizedWellKnownAttribute = 2,
    MissingWellKnownAttribute = 3,
    AttributeFlagsError = 4,
    AttributeLengthError = 5,
    InvalidOriginAttribute = 6,
    InvalidNextHopAttribute = 8,
    OptionalAttributeError = 9,
    InvalidNetworkField = 10,
    MalformedAsPath = 11,
}

/// Finite State Machine Error subcodes (RFC 6608 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FsmError {
    UnexpectedMessageInOpenSent = 1,
    UnexpectedMessageInOpenConfirm = 2,
    UnexpectedMessageInEstablished = 3,
}

/// Cease subcodes (RFC 4486 §4; 9 Hard Reset from RFC 8538, 10 BFD Down
/// from RFC 9384).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CeaseSubcode {
    MaximumNumberOfPrefixesReached = 1,
    AdministrativeShutdown = 2,
    PeerDeConfigured = 3,
    AdministrativeReset = 4,
    ConnectionRejected = 5,
    OtherConfigurationChange = 6,
    ConnectionCollisionResolution = 7,
    OutOfResources = 8,
    HardReset = 9,
    BfdDown = 10,
}

/// ROUTE-REFRESH Message Error subcodes (RFC 7313 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RouteRefreshError {
    InvalidMessageLength = 1,
}

/// RFC 9003 §2: the Shutdown Communication is at most 255 octets of UTF-8.
pub const MAX_SHUTDOWN_COMMUNICATION: usize = 255;

/// A BGP NOTIFICATION: what we send when a received message is bad, and
/// what a peer sends us. Codes are kept as raw octets so that any value a
/// peer sends survives a decode/encode round trip; the enums above name them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Notification {
    pub code: u8,
    pub subcode: u8,
    pub data: Vec<u8>,
}

impl Notification {
    pub fn new(code: ErrorCode, subcode: u8, data: Vec<u8>) -> Notification {
        Notification {
            code: code as u8,
            subcode,
            data,
        }
    }

    pub fn header(sub: HeaderError, data: Vec<u8>) -> Notification {
        Notification::new(ErrorCode::MessageHeader, sub as u8, data)
    }

    pub fn open(sub: OpenError, data: Vec<u8>) -> Notification {
        Notification::new(ErrorCode::OpenMessage, sub as u8, data)
    }

    /// OPEN Message Error with subcode 0, for malformed OPEN content that
    /// RFC 4271 gives no subcode for (e.g. a truncated capability).
    pub(crate) fn open_unspecific() -> Notification {
        Notification::new(ErrorCode::OpenMessage, UNSPECIFIC, Vec::new())
    }

    pub fn update(sub: UpdateError, data: Vec<u8>) -> Notification {
        Notification::new(ErrorCode::UpdateMessage, sub as u8, data)
    }

    pub fn hold_timer_expired() -> Notification {
        Notification::new(ErrorCode::HoldTimerExpired, UNSPECIFIC, Vec::new())
    }

    pub fn fsm(sub: FsmError) -> Notification {
        Notification::new(ErrorCode::FiniteStateMachine, sub as u8, Vec::new())
    }

    pub fn cease(sub: CeaseSubcode) -> Notification {
        Notification::new(ErrorCode::Cease, sub as u8, Vec::new())
    }

    /// Cease / Administrative Shutdown carrying a Shutdown Communication
    /// (RFC 9003 §2). An empty message sends no data at all.
    pub fn administrative_shutdown(message: &str) -> Notification {
        Notification::with_shutdown_communication(CeaseSubcode::AdministrativeShutdown, message)
    }

    /// Cease / Administrative Reset carrying a Shutdown Communication
    /// (RFC 9003 §2). The daemon sends only Administrative Shutdown; the
    /// wire tests build this one.
    #[cfg(any(test, feature = "test-support"))]
    pub fn administrative_reset(message: &str) -> Notification {
        Notification::with_shutdown_communication(CeaseSubcode::AdministrativeReset, message)
    }

    fn with_shutdown_communication(sub: CeaseSubcode, message: &str) -> Notification {
        let mut n = Notification::cease(sub);
        if message.is_empty() {
            return n;
        }
        // RFC 9003 §2: "the Shutdown Communication ... up to 255 octets".
        // Cut on a character boundary so the peer still receives valid UTF-8.
        let mut end = message.len().min(MAX_SHUTDOWN_COMMUNICATION);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let text = &message.as_bytes()[..end];
        // `end` <= 255, so the length octet cannot truncate.
        n.data.push(u8::try_from(end).unwrap_or(u8::MAX));
        n.data.extend_from_slice(text);
        n
    }

    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_u8(self.code)
    }

    /// The Shutdown Communication of an Administrative Shutdown or Reset
    /// (RFC 9003 §2), if the data carries a well-formed one.
    ///
    /// RFC 9003 §4: a malformed communication (length beyond the data,
    /// invalid UTF-8) must not affect the Cease itself, so it is `None`
    /// here and the raw data stays available in `data`.
    pub fn shutdown_communication(&self) -> Option<&str> {
        let is_admin = self.code == ErrorCode::Cease as u8
            && (self.subcode == CeaseSubcode::AdministrativeShutdown as u8
                || self.subcode == CeaseSubcode::AdministrativeReset as u8);
        if !is_admin {
            return None;
        }
        let (&len, rest) = self.data.split_first()?;
        let text = rest.get(..usize::from(len))?;
        std::str::from_utf8(text).ok()
    }

    /// Body of the NOTIFICATION message (without the 19-byte header).
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.push(self.code);
        out.push(self.subcode);
        out.extend_from_slice(&self.data);
    }

    /// Parses the body of a NOTIFICATION (the header check guaranteed at
    /// least the two code octets).
    pub(crate) fn decode_body(body: &[u8]) -> Result<Notification, Notification> {
        match body {
            [code, subcode, data @ ..] => Ok(Notification {
                code: *code,
                subcode: *subcode,
                data: data.to_vec(),
            }),
            _ => Err(Notification::header(
                HeaderError::BadMessageLength,
                super::length_field(body.len()),
            )),
        }
    }

    /// The RFC name of the subcode, if the code defines one.
    pub(crate) fn subcode_name(&self) -> Option<&'static str> {
        let name = match (self.error_code()?, self.subcode) {
            (_, UNSPECIFIC) => "Unspecific",
            (ErrorCode::MessageHeader, 1) => "Connection Not Synchronized",
            (ErrorCode::MessageHeader, 2) => "Bad Message Length",
            (ErrorCode::MessageHeader, 3) => "Bad Message Type",
            (ErrorCode::OpenMessage, 1) => "Unsupported Version Number",
            (ErrorCode::OpenMessage, 2) => "Bad Peer AS",
            (ErrorCode::OpenMessage, 3) => "Bad BGP Identifier",
            (ErrorCode::OpenMessage, 4) => "Unsupported Optional Parameter",
            (ErrorCode::OpenMessage, 5) => "Authentication Failure (deprecated)",
            (ErrorCode::OpenMessage, 6) => "Unacceptable Hold Time",
            (ErrorCode::OpenMessage, 7) => "Unsupported Capability",
            (ErrorCode::OpenMessage, 11) => "Role Mismatch",
            (ErrorCode::UpdateMessage, 1) => "Malformed Attribute List",
            (ErrorCode::UpdateMessage, 2) => "Unrecognized Well-known Attribute",
            (ErrorCode::UpdateMessage, 3) => "Missing Well-known Attribute",
            (ErrorCode::UpdateMessage, 4) => "Attribute Flags Error",
            (ErrorCode::UpdateMessage, 5) => "Attribute Length Error",
            (ErrorCode::UpdateMessage, 6) => "Invalid ORIGIN Attribute",
            (ErrorCode::UpdateMessage, 7) => "AS Routing Loop (deprecated)",
            (ErrorCode::UpdateMessage, 8) => "Invalid NEXT_HOP Attribute",
            (ErrorCode::UpdateMessage, 9) => "Optional Attribute Error",
            (ErrorCode::UpdateMessage, 10) => "Invalid Network Field",
            (ErrorCode::UpdateMessage, 11) => "Malformed AS_PATH",
            (ErrorCode::FiniteStateMachine, 1) => "Receive Unexpected Message in OpenSent State",
            (ErrorCode::FiniteStateMachine, 2) => "Receive Unexpected Message in OpenConfirm State",
            (ErrorCode::FiniteStateMachine, 3) => "Receive Unexpected Message in Established State",
            (ErrorCode::Cease, 1) => "Maximum Number of Prefixes Reached",
            (ErrorCode::Cease, 2) => "Administrative Shutdown",
            (ErrorCode::Cease, 3) => "Peer De-configured",
            (ErrorCode::Cease, 4) => "Administrative Reset",
            (ErrorCode::Cease, 5) => "Connection Rejected",
            (ErrorCode::Cease, 6) => "Other Configuration Change",
            (ErrorCode::Cease, 7) => "Connection Collision Resolution",
            (ErrorCode::Cease, 8) => "Out of Resources",
            (ErrorCode::Cease, 9) => "Hard Reset",
            (ErrorCode::Cease, 10) => "BFD Down",
            (ErrorCode::RouteRefreshMessage, 1) => "Invalid Message Length",
            _ => return None,
        };
        Some(name)
    }
}

impl fmt::Display for Notification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error_code() {
            Some(c) => f.write_str(c.name())?,
            None => write!(f, "error code {}", self.code)?,
        }
        match self.subcode_name() {
            Some(s) => write!(f, " / {s}")?,
            None => write!(f, " / subcode {}", self.subcode)?,
        }
        if let Some(text) = self.shutdown_communication() {
            return write!(f, ": {text:?}");
        }
        if !self.data.is_empty() {
            f.write_str(" (data")?;
            for b in self.data.iter().take(32) {
                write!(f, " {b:02x}")?;
            }
            if self.data.len() > 32 {
                write!(f, " … {} octets", self.data.len())?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

impl std::error::Error for Notification {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_code_and_subcode() {
        let n = Notification::header(HeaderError::BadMessageLength, vec![0x00, 0x0d]);
        assert_eq!(
            n.to_string(),
            "Message Header Error / Bad Message Length (data 00 0d)"
        );
        assert_eq!(
            Notification::hold_timer_expired().to_string(),
            "Hold Timer Expired / Unspecific"
        );
        let odd = Notification {
            code: 99,
            subcode: 3,
            data: vec![],
        };
        assert_eq!(odd.to_string(), "error code 99 / subcode 3");
    }

    #[test]
    fn shutdown_communication_round_trips_and_truncates_on_char_boundary() {
        let n = Notification::administrative_shutdown("maintenance");
        assert_eq!(n.data[0], 11);
        assert_eq!(n.shutdown_communication(), Some("maintenance"));
        assert_eq!(
            n.to_string(),
            "Cease / Administrative Shutdown: \"maintenance\""
        );
        // 200 two-octet characters: the cut must fall between characters.
        let long = "é".repeat(200);
        let n = Notification::administrative_reset(&long);
        assert_eq!(n.data[0], 254);
        assert_eq!(n.data.len(), 255);
        assert_eq!(n.shutdown_communication(), Some(&long[..254]));
        assert!(Notification::administrative_shutdown("").data.is_empty());
    }

    #[test]
    fn malformed_shutdown_communication_is_ignored() {
        let mut n = Notification::cease(CeaseSubcode::AdministrativeShutdown);
        n.data = vec![10, b'a'];
        assert_eq!(n.shutdown_communication(), None);
        n.data = vec![2, 0xff, 0xfe];
        assert_eq!(n.shutdown_communication(), None);
        assert!(n.to_string().contains("data 02 ff fe"));
    }
}
