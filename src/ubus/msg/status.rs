//! ubus' status codes (`enum ubus_msg_status`): what a STATUS message
//! carries and a call is answered with.

use std::fmt;

/// `enum ubus_msg_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UbusStatus {
    Ok,
    InvalidCommand,
    InvalidArgument,
    MethodNotFound,
    NotFound,
    NoData,
    PermissionDenied,
    Timeout,
    NotSupported,
    UnknownError,
    ConnectionFailed,
    NoMemory,
    ParseError,
    SystemError,
    /// A code newer than this list; kept so it can be relayed unchanged.
    Other(u32),
}

impl UbusStatus {
    pub(crate) fn from_u32(v: u32) -> UbusStatus {
        match v {
            0 => UbusStatus::Ok,
            1 => UbusStatus::InvalidCommand,
            2 => UbusStatus::InvalidArgument,
            3 => UbusStatus::MethodNotFound,
            4 => UbusStatus::NotFound,
            5 => UbusStatus::NoData,
            6 => UbusStatus::PermissionDenied,
            7 => UbusStatus::Timeout,
            8 => UbusStatus::NotSupported,
            9 => UbusStatus::UnknownError,
            10 => UbusStatus::ConnectionFailed,
            11 => UbusStatus::NoMemory,
            12 => UbusStatus::ParseError,
            13 => UbusStatus::SystemError,
            x => UbusStatus::Other(x),
        }
    }

    pub(crate) fn to_u32(self) -> u32 {
        match self {
            UbusStatus::Ok => 0,
            UbusStatus::InvalidCommand => 1,
            UbusStatus::InvalidArgument => 2,
            UbusStatus::MethodNotFound => 3,
            UbusStatus::NotFound => 4,
            UbusStatus::NoData => 5,
            UbusStatus::PermissionDenied => 6,
            UbusStatus::Timeout => 7,
            UbusStatus::NotSupported => 8,
            UbusStatus::UnknownError => 9,
            UbusStatus::ConnectionFailed => 10,
            UbusStatus::NoMemory => 11,
            UbusStatus::ParseError => 12,
            UbusStatus::SystemError => 13,
            UbusStatus::Other(x) => x,
        }
    }
}

impl fmt::Display for UbusStatus {
    /// The strings `ubus_strerror` prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            UbusStatus::Ok => "Success",
            UbusStatus::InvalidCommand => "Invalid command",
            UbusStatus::InvalidArgument => "Invalid argument",
            UbusStatus::MethodNotFound => "Method not found",
            UbusStatus::NotFound => "Not found",
            UbusStatus::NoData => "No response",
            UbusStatus::PermissionDenied => "Permission denied",
            UbusStatus::Timeout => "Request timed out",
            UbusStatus::NotSupported => "Operation not supported",
            UbusStatus::UnknownError => "Unknown error",
            UbusStatus::ConnectionFailed => "Connection failed",
            UbusStatus::NoMemory => "Out of memory",
            UbusStatus::ParseError => "Parsing message data failed",
            UbusStatus::SystemError => "System error",
            UbusStatus::Other(x) => return write!(f, "Unknown status {x}"),
        };
        f.write_str(s)
    }
}

impl std::error::Error for UbusStatus {}
