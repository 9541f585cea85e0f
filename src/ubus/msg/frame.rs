//! The framing of ubus messages on the socket: a message's length from
//! its first bytes, and messages reassembled from what was read.

use super::{MsgError, HDR_LEN, PREFIX_LEN, UBUS_MAX_MSGLEN};
use crate::ubus::blob::AttrHdr;

/// Total wire length of the message whose first [`PREFIX_LEN`] bytes are `prefix`
/// (header + container length). ubusd drops a client announcing a container shorter
/// than its header or a message over `UBUS_MAX_MSGLEN` (ubusd_main.c), so do we.
pub(crate) fn frame_len(prefix: &[u8]) -> Result<usize, MsgError> {
    let hdr = AttrHdr::parse(prefix.get(HDR_LEN..).ok_or(MsgError::BadContainer)?)?;
    if hdr.extended || hdr.id != 0 {
        return Err(MsgError::BadContainer);
    }
    if hdr.len > UBUS_MAX_MSGLEN {
        return Err(MsgError::TooLong);
    }
    Ok(HDR_LEN + hdr.len)
}

/// Reassembles messages from a byte stream. Pure: the caller feeds what it read.
#[derive(Debug, Default)]
pub struct FrameBuf {
    buf: Vec<u8>,
}

impl FrameBuf {
    pub fn new() -> FrameBuf {
        FrameBuf::default()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message's bytes, `Ok(None)` if more bytes are needed, or an
    /// error when the stream is unusable (the connection must be dropped).
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, MsgError> {
        if self.buf.len() < PREFIX_LEN {
            return Ok(None);
        }
        let total = frame_len(&self.buf)?;
        if self.buf.len() < total {
            return Ok(None);
        }
        let rest = self.buf.split_off(total);
        Ok(Some(std::mem::replace(&mut self.buf, rest)))
    }

    #[cfg(test)]
    pub(super) fn buffered(&self) -> usize {
        self.buf.len()
    }
}
