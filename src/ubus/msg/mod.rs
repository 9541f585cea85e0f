//! ubus messages (openwrt/ubus: ubusmsg.h, libubus-obj.c, libubus-req.c, ubusd_proto.c).
//!
//! A message is an 8-byte `ubus_msghdr` {u8 version, u8 type, be16 seq, be32 peer}
//! followed by one plain `blob_attr` container (id 0) holding ubus attributes
//! (plain blob attrs; DATA and SIGNATURE nest blobmsg tables). Attributes keep their
//! wire order so that a decoded message re-encodes to the same bytes.
//!
//! The attributes' codec and the message's reading are here; the messages
//! built in `build`, the framing on the socket in `frame`, the status codes
//! in `status`.

use std::fmt;

use super::blob::{
    decode_cstring, decode_table, put_attr, put_table, AttrHdr, AttrIter, BlobError, Table,
    BLOB_HDR_LEN,
};

mod build;
mod frame;
mod status;

pub use build::{signature, MethodSig};
pub(crate) use frame::frame_len;
pub use frame::FrameBuf;
pub use status::UbusStatus;

/// `ubus_msghdr` size.
pub(crate) const HDR_LEN: usize = 8;
/// Bytes needed to know a message's full length: header + container `blob_attr`.
pub(crate) const PREFIX_LEN: usize = HDR_LEN + BLOB_HDR_LEN;
/// `UBUS_MAX_MSGLEN`: ubusd drops clients that announce more.
pub(crate) const UBUS_MAX_MSGLEN: usize = 1_048_576;
/// `UBUS_MSG_CHUNK_SIZE` is irrelevant to us; the header version is always 0.
pub(crate) const UBUS_MSG_VERSION: u8 = 0;
/// `UBUS_SYSTEM_OBJECT_EVENT`: the object inside ubusd that handles `send`/`register`.
pub const UBUS_SYSTEM_OBJECT_EVENT: u32 = 1;
#[cfg(feature = "test-support")]
/// ubusd reserves object ids below this for system objects.
pub const UBUS_SYSTEM_OBJECT_MAX: u32 = 1024;
/// Default socket path (`UBUS_UNIX_SOCKET` in ubus' CMakeLists.txt).
pub(crate) const UBUS_UNIX_SOCKET: &str = "/var/run/ubus/ubus.sock";

/// `enum ubus_msg_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgType {
    Hello,
    Status,
    Data,
    Ping,
    Lookup,
    Invoke,
    AddObject,
    RemoveObject,
    Subscribe,
    Unsubscribe,
    Notify,
    Monitor,
    /// A type this codec does not know; ubusd answers those with INVALID_COMMAND.
    Unknown(u8),
}

impl MsgType {
    pub(crate) fn from_u8(v: u8) -> MsgType {
        match v {
            0 => MsgType::Hello,
            1 => MsgType::Status,
            2 => MsgType::Data,
            3 => MsgType::Ping,
            4 => MsgType::Lookup,
            5 => MsgType::Invoke,
            6 => MsgType::AddObject,
            7 => MsgType::RemoveObject,
            8 => MsgType::Subscribe,
            9 => MsgType::Unsubscribe,
            10 => MsgType::Notify,
            11 => MsgType::Monitor,
            x => MsgType::Unknown(x),
        }
    }

    pub(crate) fn to_u8(self) -> u8 {
        match self {
            MsgType::Hello => 0,
            MsgType::Status => 1,
            MsgType::Data => 2,
            MsgType::Ping => 3,
            MsgType::Lookup => 4,
            MsgType::Invoke => 5,
            MsgType::AddObject => 6,
            MsgType::RemoveObject => 7,
            MsgType::Subscribe => 8,
            MsgType::Unsubscribe => 9,
            MsgType::Notify => 10,
            MsgType::Monitor => 11,
            MsgType::Unknown(x) => x,
        }
    }
}

/// `enum ubus_msg_attr` ids.
pub mod attr_id {
    pub const STATUS: u8 = 1;
    pub const OBJPATH: u8 = 2;
    pub const OBJID: u8 = 3;
    pub const METHOD: u8 = 4;
    pub const OBJTYPE: u8 = 5;
    pub const SIGNATURE: u8 = 6;
    pub const DATA: u8 = 7;
    pub const TARGET: u8 = 8;
    pub(crate) const ACTIVE: u8 = 9;
    pub(crate) const NO_REPLY: u8 = 10;
    pub(crate) const SUBSCRIBERS: u8 = 11;
    pub const USER: u8 = 12;
    pub const GROUP: u8 = 13;
}

/// `struct ubus_msghdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub ty: MsgType,
    pub seq: u16,
    pub peer: u32,
}

impl Header {
    pub fn new(ty: MsgType, seq: u16, peer: u32) -> Header {
        Header {
            version: UBUS_MSG_VERSION,
            ty,
            seq,
            peer,
        }
    }
}

/// One ubus attribute inside the message container.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Status(u32),
    ObjPath(String),
    ObjId(u32),
    Method(String),
    ObjType(u32),
    /// One blobmsg table per method: argument name -> INT32 blobmsg type.
    Signature(Table),
    /// Method arguments, a reply, or event data: a blobmsg table body.
    Data(Table),
    Target(u32),
    Active(u8),
    NoReply(u8),
    /// Nested plain attributes (OBJIDs of subscribers).
    Subscribers(Vec<Attr>),
    User(String),
    Group(String),
    /// An id this codec does not know (or an EXTENDED attribute): kept verbatim.
    Unknown {
        extended: bool,
        id: u8,
        payload: Vec<u8>,
    },
}

/// Why a message could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MsgError {
    Blob(BlobError),
    /// The container is not blob id 0 or its length disagrees with the buffer.
    BadContainer,
    /// Over `UBUS_MAX_MSGLEN`.
    TooLong,
    /// A known attribute has the wrong payload size.
    BadAttr(u8),
}

impl fmt::Display for MsgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MsgError::Blob(e) => write!(f, "{e}"),
            MsgError::BadContainer => f.write_str("bad ubus message container"),
            MsgError::TooLong => f.write_str("ubus message over 1 MiB"),
            MsgError::BadAttr(id) => write!(f, "bad ubus attribute {id}"),
        }
    }
}

impl std::error::Error for MsgError {}

impl From<BlobError> for MsgError {
    fn from(e: BlobError) -> MsgError {
        MsgError::Blob(e)
    }
}

fn u32_of(id: u8, p: &[u8]) -> Result<u32, MsgError> {
    p.try_into()
        .map(u32::from_be_bytes)
        .map_err(|_| MsgError::BadAttr(id))
}

fn u8_of(id: u8, p: &[u8]) -> Result<u8, MsgError> {
    match p {
        [b] => Ok(*b),
        _ => Err(MsgError::BadAttr(id)),
    }
}

fn decode_attrs(body: &[u8]) -> Result<Vec<Attr>, MsgError> {
    let mut out = Vec::new();
    for item in AttrIter::new(body) {
        let (hdr, p) = item?;
        out.push(decode_attr(hdr, p)?);
    }
    Ok(out)
}

fn decode_attr(hdr: AttrHdr, p: &[u8]) -> Result<Attr, MsgError> {
    use attr_id::*;
    if hdr.extended {
        return Ok(Attr::Unknown {
            extended: true,
            id: hdr.id,
            payload: p.to_vec(),
        });
    }
    let id = hdr.id;
    let s = |p: &[u8]| decode_cstring(p).map_err(|_| MsgError::BadAttr(id));
    Ok(match id {
        STATUS => Attr::Status(u32_of(id, p)?),
        OBJPATH => Attr::ObjPath(s(p)?),
        OBJID => Attr::ObjId(u32_of(id, p)?),
        METHOD => Attr::Method(s(p)?),
        OBJTYPE => Attr::ObjType(u32_of(id, p)?),
        SIGNATURE => Attr::Signature(decode_table(p)?),
        DATA => Attr::Data(decode_table(p)?),
        TARGET => Attr::Target(u32_of(id, p)?),
        ACTIVE => Attr::Active(u8_of(id, p)?),
        NO_REPLY => Attr::NoReply(u8_of(id, p)?),
        SUBSCRIBERS => Attr::Subscribers(decode_attrs(p)?),
        USER => Attr::User(s(p)?),
        GROUP => Attr::Group(s(p)?),
        _ => Attr::Unknown {
            extended: false,
            id,
            payload: p.to_vec(),
        },
    })
}

fn put_ubus_attr(out: &mut Vec<u8>, a: &Attr) -> Result<(), BlobError> {
    use attr_id::*;
    let u32a = |out: &mut Vec<u8>, id, v: u32| {
        put_attr(out, false, id, |o| {
            o.extend_from_slice(&v.to_be_bytes());
            Ok(())
        })
    };
    let stra = |out: &mut Vec<u8>, id, v: &str| {
        put_attr(out, false, id, |o| {
            o.extend_from_slice(v.as_bytes());
            o.push(0);
            Ok(())
        })
    };
    let u8a = |out: &mut Vec<u8>, id, v: u8| {
        put_attr(out, false, id, |o| {
            o.push(v);
            Ok(())
        })
    };
    match a {
        Attr::Status(v) => u32a(out, STATUS, *v),
        Attr::ObjPath(v) => stra(out, OBJPATH, v),
        Attr::ObjId(v) => u32a(out, OBJID, *v),
        Attr::Method(v) => stra(out, METHOD, v),
        Attr::ObjType(v) => u32a(out, OBJTYPE, *v),
        Attr::Signature(t) => put_attr(out, false, SIGNATURE, |o| put_table(o, t)),
        Attr::Data(t) => put_attr(out, false, DATA, |o| put_table(o, t)),
        Attr::Target(v) => u32a(out, TARGET, *v),
        Attr::Active(v) => u8a(out, ACTIVE, *v),
        Attr::NoReply(v) => u8a(out, NO_REPLY, *v),
        Attr::Subscribers(list) => put_attr(out, false, SUBSCRIBERS, |o| {
            for a in list {
                put_ubus_attr(o, a)?;
            }
            Ok(())
        }),
        Attr::User(v) => stra(out, USER, v),
        Attr::Group(v) => stra(out, GROUP, v),
        Attr::Unknown {
            extended,
            id,
            payload,
        } => put_attr(out, *extended, *id, |o| {
            o.extend_from_slice(payload);
            Ok(())
        }),
    }
}

/// Bytes of a DATA reply before its table body: the header, the
/// container's header, OBJID, DATA's header.
const REPLY_PREFIX: usize = HDR_LEN + BLOB_HDR_LEN + 8 + BLOB_HDR_LEN;

/// A reply's table body encoded ahead (each member a named blobmsg
/// attribute), with room in front for the message around it
/// ([`Message::data_reply_encoded`]).
#[derive(Debug, PartialEq)]
pub struct TableBody(Vec<u8>);

impl TableBody {
    /// An empty body that may grow to `capacity` bytes without moving.
    pub fn with_capacity(capacity: usize) -> TableBody {
        let mut v = Vec::with_capacity(REPLY_PREFIX + capacity);
        v.resize(REPLY_PREFIX, 0);
        TableBody(v)
    }

    /// The body's length.
    pub fn len(&self) -> usize {
        self.0.len() - REPLY_PREFIX
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer members are appended to (what is before the body is
    /// the message's, written last).
    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }

    /// Drops what the body has beyond `len` bytes.
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(REPLY_PREFIX + len);
    }

    /// Puts `members` at the body's start.
    pub(crate) fn prepend(&mut self, members: &[u8]) {
        self.0
            .splice(REPLY_PREFIX..REPLY_PREFIX, members.iter().copied());
    }
}

/// A whole ubus message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub header: Header,
    pub attrs: Vec<Attr>,
}

impl Message {
    pub fn new(ty: MsgType, seq: u16, peer: u32, attrs: Vec<Attr>) -> Message {
        Message {
            header: Header::new(ty, seq, peer),
            attrs,
        }
    }

    /// Decodes exactly one message; `bytes` must hold it and nothing more.
    pub fn decode(bytes: &[u8]) -> Result<Message, MsgError> {
        let total = frame_len(bytes)?;
        if total != bytes.len() {
            return Err(MsgError::BadContainer);
        }
        let header = Header {
            version: bytes[0],
            ty: MsgType::from_u8(bytes[1]),
            seq: u16::from_be_bytes([bytes[2], bytes[3]]),
            peer: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        };
        let attrs = decode_attrs(&bytes[PREFIX_LEN..])?;
        Ok(Message { header, attrs })
    }

    pub fn encode(&self) -> Result<Vec<u8>, MsgError> {
        let mut out = Vec::with_capacity(64);
        out.push(self.header.version);
        out.push(self.header.ty.to_u8());
        out.extend_from_slice(&self.header.seq.to_be_bytes());
        out.extend_from_slice(&self.header.peer.to_be_bytes());
        put_attr(&mut out, false, 0, |o| {
            for a in &self.attrs {
                put_ubus_attr(o, a)?;
            }
            Ok(())
        })?;
        if out.len() > HDR_LEN + UBUS_MAX_MSGLEN {
            return Err(MsgError::TooLong);
        }
        Ok(out)
    }

    // ---- accessors

    fn find<'a, T>(&'a self, f: impl Fn(&'a Attr) -> Option<T>) -> Option<T> {
        // blob_parse stores the last occurrence of each id; libubus-built messages never
        // repeat ids, and taking the first one is what the broker relays anyway.
        self.attrs.iter().find_map(f)
    }

    pub fn status(&self) -> Option<u32> {
        self.find(|a| match a {
            Attr::Status(v) => Some(*v),
            _ => None,
        })
    }

    pub fn objid(&self) -> Option<u32> {
        self.find(|a| match a {
            Attr::ObjId(v) => Some(*v),
            _ => None,
        })
    }

    #[cfg(feature = "test-support")]
    pub fn objtype(&self) -> Option<u32> {
        self.find(|a| match a {
            Attr::ObjType(v) => Some(*v),
            _ => None,
        })
    }

    #[cfg(feature = "test-support")]
    pub fn objpath(&self) -> Option<&str> {
        self.find(|a| match a {
            Attr::ObjPath(v) => Some(v.as_str()),
            _ => None,
        })
    }

    pub fn method(&self) -> Option<&str> {
        self.find(|a| match a {
            Attr::Method(v) => Some(v.as_str()),
            _ => None,
        })
    }

    pub fn data(&self) -> Option<&Table> {
        self.find(|a| match a {
            Attr::Data(v) => Some(v),
            _ => None,
        })
    }

    pub fn signature(&self) -> Option<&Table> {
        self.find(|a| match a {
            Attr::Signature(v) => Some(v),
            _ => None,
        })
    }

    pub(crate) fn no_reply(&self) -> bool {
        self.find(|a| match a {
            Attr::NoReply(v) => Some(*v != 0),
            _ => None,
        })
        .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply whose body was encoded ahead is the reply encoded whole.
    #[test]
    fn an_encoded_reply_is_the_whole_one() {
        let v = serde_json::json!({"a": [1, {"b": "c"}], "d": null, "e": 2.5});
        let t = super::super::blob::table_from_json(&v).unwrap();
        let want = Message::data_reply(5, 0x1234, 77, t.clone())
            .encode()
            .unwrap();
        let mut body = TableBody::with_capacity(0);
        put_table(body.buf(), &t).unwrap();
        assert_eq!(
            Message::data_reply_encoded(5, 0x1234, 77, body).unwrap(),
            want
        );
        assert_eq!(Message::decode(&want).unwrap().data(), Some(&t));
    }

    #[test]
    fn frame_reassembly() {
        let m = Message::status_msg(7, 9, UbusStatus::MethodNotFound, Some(3))
            .encode()
            .unwrap();
        let mut fb = FrameBuf::new();
        fb.push(&m[..5]);
        assert_eq!(fb.next_frame().unwrap(), None);
        fb.push(&m[5..]);
        fb.push(&m[..3]);
        assert_eq!(fb.next_frame().unwrap().as_deref(), Some(&m[..]));
        assert_eq!(fb.next_frame().unwrap(), None);
        assert_eq!(fb.buffered(), 3);
    }

    #[test]
    fn rejects_bad_frames() {
        // Container shorter than its header.
        assert!(frame_len(&[0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]).is_err());
        // Container with a non-zero id.
        assert!(frame_len(&[0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 4]).is_err());
        // Over 1 MiB.
        assert_eq!(
            frame_len(&[0, 1, 0, 1, 0, 0, 0, 0, 0, 0x10, 0, 8]),
            Err(MsgError::TooLong)
        );
        // STATUS with a 2-byte payload.
        let bad = [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 12, 1, 0, 0, 6, 0, 0, 0, 0];
        assert_eq!(Message::decode(&bad), Err(MsgError::BadAttr(1)));
        // Trailing garbage after the container.
        let mut m = Message::hello(5).encode().unwrap();
        m.push(0);
        assert_eq!(Message::decode(&m), Err(MsgError::BadContainer));
    }

    #[test]
    fn status_codes_roundtrip() {
        for v in 0..20 {
            assert_eq!(UbusStatus::from_u32(v).to_u32(), v);
        }
        for v in 0..=255u8 {
            assert_eq!(MsgType::from_u8(v).to_u8(), v);
        }
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..128)) {
            let _ = Message::decode(&bytes);
            let mut fb = FrameBuf::new();
            fb.push(&bytes);
            let _ = fb.next_frame();
        }
    }
}
