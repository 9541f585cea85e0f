//! The calls ubusd forwards to the `pathosd` object: each INVOKE checked
//! against the method's signature, handed to the daemon as a
//! [`UbusRequest`] (at most `request_queue` unanswered), and answered
//! DATA + STATUS, echoing its seq and peer.

use std::time::{Duration, Instant};

use serde_json::Value;
use smol::net::unix::UnixStream;

use super::handle::{bump, UbusReply, UbusRequest};
use super::{after, wrap_object, ReplyData, UbusClient};
use crate::chan::{self, Tx, UbusDone};
use crate::ubus::blob::{table_to_json, BlobMsgType, Table};
use crate::ubus::msg::{Message, MethodSig, MsgType, UbusStatus};

/// How often a flood of calls refused as busy is logged.
const BUSY_LOG_EVERY: Duration = Duration::from_secs(10);

/// The calls waiting for the daemon's answer, by call key, oldest first:
/// at most `request_queue` (64) of them, so a `Vec` searched in order
/// rather than a `HashMap`, whose table code (and SipHash of the keys)
/// would be compiled for this one type (≈ 3 KB on mips).
#[derive(Default)]
pub(super) struct Calls(pub(super) Vec<(u32, Pending)>);

impl Calls {
    pub(super) fn remove(&mut self, key: u32) -> Option<Pending> {
        let i = self.0.iter().position(|(k, _)| *k == key)?;
        Some(self.0.remove(i).1)
    }

    /// Adds call `key`, replacing one of the same key (as a map would; the
    /// keys wrap only after 2^32 calls).
    fn insert(&mut self, key: u32, p: Pending) {
        self.remove(key);
        self.0.push((key, p));
    }
}

pub(super) struct Pending {
    pub(super) seq: u16,
    pub(super) peer: u32,
    pub(super) deadline: Instant,
    pub(super) no_reply: bool,
    /// Dropped with the entry, which tells [`UbusReply::abandoned`].
    pub(super) _waiting: Option<Tx<()>>,
}

/// Checks the argument types against the method's policy. libubus' blobmsg_parse
/// silently skips a mistyped field, which the handler then reports as missing
/// (INVALID_ARGUMENT); rejecting it here gives the same status with less guessing.
pub(super) fn check_args(sig: &MethodSig, args: &Table) -> Result<(), UbusStatus> {
    for (name, v) in args {
        if let Some((_, ty)) = sig.args.iter().find(|(n, _)| n == name) {
            if *ty != BlobMsgType::Unspec && v.msg_type() != *ty {
                return Err(UbusStatus::InvalidArgument);
            }
        }
    }
    Ok(())
}

impl UbusClient {
    fn tell_busy(&self) {
        let n = bump(&self.busy_refused);
        if self
            .busy_told
            .get()
            .is_none_or(|t| t.elapsed() >= BUSY_LOG_EVERY)
        {
            log::warn!("ubus: daemon busy: refused {n} calls (answered 9)");
            self.busy_refused.set(0);
            self.busy_told.set(Some(Instant::now()));
        }
    }

    pub(super) async fn reply(
        &self,
        stream: &mut UnixStream,
        p: &Pending,
        objid: u32,
        result: Result<ReplyData, UbusStatus>,
    ) -> Result<(), String> {
        let status = match result {
            Ok(ReplyData::Json(Value::Null)) => UbusStatus::Ok,
            Ok(data) => {
                let bytes = match data {
                    ReplyData::Json(v) => {
                        Message::data_reply(p.seq, p.peer, objid, wrap_object(v)).encode()
                    }
                    ReplyData::Encoded(body) => {
                        Message::data_reply_encoded(p.seq, p.peer, objid, body)
                    }
                };
                if let Ok(bytes) = bytes {
                    self.write_bytes(stream, &bytes).await?;
                    UbusStatus::Ok
                } else {
                    // Over ubusd's 1 MiB limit: say so rather than succeed without data.
                    log::warn!("ubus: reply too large");
                    UbusStatus::UnknownError
                }
            }
            // An error that says "ok" would look like success without data.
            Err(UbusStatus::Ok) => UbusStatus::UnknownError,
            Err(s) => s,
        };
        self.write(
            stream,
            &Message::status_msg(p.seq, p.peer, status, Some(objid)),
        )
        .await
    }

    pub(super) async fn on_message(
        &self,
        stream: &mut UnixStream,
        m: Message,
        objid: u32,
        done_tx: &Tx<UbusDone>,
        pending: &mut Calls,
        next_key: &mut u32,
    ) -> Result<(), String> {
        match m.header.ty {
            MsgType::Invoke => {}
            MsgType::Status => {
                // Answers to our event sends (peer = system object 1).
                if let Some(st) = m.status().filter(|s| *s != 0) {
                    log::debug!(
                        "ubus: ubusd answered seq {}: {}",
                        m.header.seq,
                        UbusStatus::from_u32(st)
                    );
                }
                return Ok(());
            }
            _ => return Ok(()),
        }
        let mut p = Pending {
            seq: m.header.seq,
            peer: m.header.peer,
            deadline: after(self.config.reply_timeout),
            no_reply: m.no_reply(),
            _waiting: None,
        };
        let target = m.objid();
        if target != Some(objid) {
            return self
                .reply(
                    stream,
                    &p,
                    target.unwrap_or(objid),
                    Err(UbusStatus::NotFound),
                )
                .await;
        }
        let method = m.method().unwrap_or_default();
        let Some(sig) = self.config.methods.iter().find(|s| s.name == method) else {
            // libubus: ubus_process_invoke finds no method -> METHOD_NOT_FOUND.
            return if p.no_reply {
                Ok(())
            } else {
                self.reply(stream, &p, objid, Err(UbusStatus::MethodNotFound))
                    .await
            };
        };
        let empty = Vec::new();
        let args = m.data().unwrap_or(&empty);
        if let Err(st) = check_args(sig, args) {
            return if p.no_reply {
                Ok(())
            } else {
                self.reply(stream, &p, objid, Err(st)).await
            };
        }
        if pending.0.len() >= self.config.request_queue.max(1) {
            self.tell_busy();
            return if p.no_reply {
                Ok(())
            } else {
                self.reply(stream, &p, objid, Err(UbusStatus::UnknownError))
                    .await
            };
        }
        *next_key = next_key.wrapping_add(1);
        let key = *next_key;
        let (waiting_tx, waiting_rx) = chan::bounded(1);
        p._waiting = Some(waiting_tx);
        pending.insert(key, p);
        let req = UbusRequest {
            method: sig.name.clone(),
            args: table_to_json(args),
            reply: UbusReply {
                key,
                tx: Some(done_tx.clone()),
                waiting: waiting_rx,
            },
        };
        // Unbounded, so never Full; Closed (the daemon stopped serving): the
        // dropped request's UbusReply answers UNKNOWN_ERROR through done_tx.
        let _ = self.requests.try_send(req);
        Ok(())
    }
}
