//! The messages libubus and ubusd send, built (the client's, the test
//! broker's and the tests'), and the method signatures an object is
//! registered with.

use super::{
    attr_id, Attr, Message, MsgError, MsgType, TableBody, UbusStatus, REPLY_PREFIX,
    UBUS_MAX_MSGLEN, UBUS_MSG_VERSION, UBUS_SYSTEM_OBJECT_EVENT,
};
use crate::ubus::blob::{AttrHdr, BlobMsgType, BlobValue, Table, BLOB_ATTR_LEN_MASK, BLOB_HDR_LEN};

impl Message {
    /// ubusd -> client right after accept(): `peer` is the client id.
    pub fn hello(client_id: u32) -> Message {
        Message::new(MsgType::Hello, 0, client_id, vec![])
    }

    /// A STATUS reply. ubusd's own replies carry only STATUS; a server's reply to an
    /// INVOKE adds OBJID (libubus `ubus_complete_request`).
    pub fn status_msg(seq: u16, peer: u32, status: UbusStatus, objid: Option<u32>) -> Message {
        let mut attrs = vec![Attr::Status(status.to_u32())];
        if let Some(id) = objid {
            attrs.push(Attr::ObjId(id));
        }
        Message::new(MsgType::Status, seq, peer, attrs)
    }

    /// A server's DATA reply to an INVOKE (libubus `ubus_send_reply`): OBJID then DATA.
    pub fn data_reply(seq: u16, peer: u32, objid: u32, data: Table) -> Message {
        Message::new(
            MsgType::Data,
            seq,
            peer,
            vec![Attr::ObjId(objid), Attr::Data(data)],
        )
    }

    /// [`Message::data_reply`] with its DATA encoded already: the
    /// message is written around `body` in place (the reply is not encoded
    /// a second time, nor held as values while it is).
    pub fn data_reply_encoded(
        seq: u16,
        peer: u32,
        objid: u32,
        body: TableBody,
    ) -> Result<Vec<u8>, MsgError> {
        let mut out = body.0;
        let data_len = out.len() - REPLY_PREFIX + BLOB_HDR_LEN;
        // Container: OBJID (header and u32), then DATA's header and body.
        let container_len = BLOB_HDR_LEN + 8 + data_len;
        if container_len > UBUS_MAX_MSGLEN || data_len > BLOB_ATTR_LEN_MASK as usize {
            return Err(MsgError::TooLong);
        }
        let hdr = |extended, id, len| AttrHdr { extended, id, len }.to_bytes();
        let mut prefix = [0u8; REPLY_PREFIX];
        prefix[0] = UBUS_MSG_VERSION;
        prefix[1] = MsgType::Data.to_u8();
        prefix[2..4].copy_from_slice(&seq.to_be_bytes());
        prefix[4..8].copy_from_slice(&peer.to_be_bytes());
        prefix[8..12].copy_from_slice(&hdr(false, 0, container_len));
        prefix[12..16].copy_from_slice(&hdr(false, attr_id::OBJID, 8));
        prefix[16..20].copy_from_slice(&objid.to_be_bytes());
        prefix[20..24].copy_from_slice(&hdr(false, attr_id::DATA, data_len));
        out[..REPLY_PREFIX].copy_from_slice(&prefix);
        Ok(out)
    }

    /// ADD_OBJECT as libubus `ubus_add_object` sends it: OBJPATH then SIGNATURE.
    pub fn add_object(seq: u16, path: &str, methods: &[MethodSig]) -> Message {
        Message::new(
            MsgType::AddObject,
            seq,
            0,
            vec![
                Attr::ObjPath(path.to_string()),
                Attr::Signature(signature(methods)),
            ],
        )
    }

    /// REMOVE_OBJECT {OBJID}.
    pub fn remove_object(seq: u16, objid: u32) -> Message {
        Message::new(MsgType::RemoveObject, seq, 0, vec![Attr::ObjId(objid)])
    }

    /// LOOKUP, of one path or (None) of every named object.
    pub fn lookup(seq: u16, path: Option<&str>) -> Message {
        let attrs = path
            .map(|p| vec![Attr::ObjPath(p.to_string())])
            .unwrap_or_default();
        Message::new(MsgType::Lookup, seq, 0, attrs)
    }

    /// A caller's INVOKE (libubus `ubus_invoke`): header peer = target objid.
    pub fn invoke(seq: u16, objid: u32, method: &str, args: Table) -> Message {
        Message::new(
            MsgType::Invoke,
            seq,
            objid,
            vec![
                Attr::ObjId(objid),
                Attr::Method(method.to_string()),
                Attr::Data(args),
            ],
        )
    }

    /// `ubus send`: INVOKE of system object 1, method `send`, DATA {id, data}.
    pub fn event_send(seq: u16, event: &str, data: Table) -> Message {
        Message::invoke(
            seq,
            UBUS_SYSTEM_OBJECT_EVENT,
            "send",
            vec![
                ("id".to_string(), BlobValue::str(event)),
                ("data".to_string(), BlobValue::Table(data)),
            ],
        )
    }

    /// `ubus listen`: INVOKE of system object 1, method `register`, DATA {object, pattern}.
    pub fn event_register(seq: u16, listener_objid: u32, pattern: &str) -> Message {
        Message::invoke(
            seq,
            UBUS_SYSTEM_OBJECT_EVENT,
            "register",
            vec![
                // libubus puts the u32 id with blobmsg_add_u32: an INT32 on the wire.
                (
                    "object".to_string(),
                    BlobValue::Int32(listener_objid as i32),
                ),
                ("pattern".to_string(), BlobValue::str(pattern)),
            ],
        )
    }
}

/// A method of a registered object and its argument policy (`struct ubus_method`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodSig {
    pub name: String,
    pub args: Vec<(String, BlobMsgType)>,
}

impl MethodSig {
    pub fn new(name: &str, args: &[(&str, BlobMsgType)]) -> MethodSig {
        MethodSig {
            name: name.to_string(),
            args: args.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        }
    }
}

/// The SIGNATURE table: one table per method whose members are INT32 policy types.
pub fn signature(methods: &[MethodSig]) -> Table {
    methods
        .iter()
        .map(|m| {
            let t = m
                .args
                .iter()
                .map(|(n, ty)| (n.clone(), BlobValue::Int32(i32::from(*ty as u8))))
                .collect();
            (m.name.clone(), BlobValue::Table(t))
        })
        .collect()
}
