//! ubus: one call, as `ubus call OBJECT METHOD ARGS` makes it, on a
//! connection of the probe's own to ubusd (HELLO, LOOKUP of the object,
//! INVOKE of the method), with pathosd's ubus codec. The reply's table, as
//! JSON text, is judged by the http check's body expectations (text, regex,
//! jq). No object, a failed call or no answer within the timeout fails
//! the probe, with ubus's own words for the status.

use crate::check::body::BodyMatch;
use crate::check::result::CheckResult;
use crate::config::UbusCheck;
use crate::net::io_msg;
use crate::ubus::blob::{table_from_json, table_to_json};
use crate::ubus::client::UbusClient;
use crate::ubus::msg::{FrameBuf, Message, MsgType, UbusStatus};
use smol::io::AsyncWriteExt;
use smol::net::unix::UnixStream;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug)]
pub(crate) struct UbusProbe {
    /// A `PathBuf`, as the daemon's client has it: one connect for both.
    socket: PathBuf,
    object: String,
    method: String,
    /// Made a table at each call (from a reference: no clone of a table).
    args: serde_json::Value,
    body: BodyMatch,
}

impl UbusProbe {
    pub fn new(c: &UbusCheck) -> UbusProbe {
        UbusProbe {
            socket: PathBuf::from(&c.socket),
            object: c.object.clone(),
            method: c.method.clone(),
            args: serde_json::Value::Object(c.args.0.clone()),
            body: BodyMatch::new(
                c.response_text.as_ref(),
                c.response_regex.as_ref(),
                c.response_jq.as_ref(),
            ),
        }
    }

    pub fn what(&self) -> String {
        format!("ubus call {} {}", self.object, self.method)
    }

    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        let judged = match self.call().await {
            Ok(reply) => self.body.judge(reply.to_string().as_bytes()),
            Err(e) => Err(e),
        };
        let what = self.what();
        match judged {
            Ok(()) => CheckResult::pass(format!("{what}: ok")),
            Err(e) => CheckResult::fail(format!("{what}: {e}")),
        }
    }

    /// The reply's table as JSON (`{}` for a call that answered no data).
    async fn call(&self) -> Result<serde_json::Value, String> {
        let mut s = UnixStream::connect(&self.socket)
            .await
            .map_err(|e| format!("connect {}: {}", self.socket.display(), io_msg(&e)))?;
        let mut fb = FrameBuf::new();
        let hello = UbusClient::read_msg(&mut s, &mut fb).await?;
        if hello.header.ty != MsgType::Hello {
            return Err(format!("expected HELLO, got {:?}", hello.header.ty));
        }
        let lookup = Message::lookup(1, Some(&self.object));
        let objid = match exchange(&mut s, &mut fb, &lookup).await? {
            (UbusStatus::Ok, Some(m)) => m.objid(),
            (st, _) => return Err(format!("object {}: {st}", self.object)),
        };
        let objid = objid.ok_or_else(|| format!("object {}: not found", self.object))?;
        // An object: validation decoded it as one.
        let args = table_from_json(&self.args).unwrap_or_default();
        let invoke = Message::invoke(2, objid, &self.method, args);
        match exchange(&mut s, &mut fb, &invoke).await? {
            (UbusStatus::Ok, data) => Ok(data
                .and_then(|m| m.data().map(table_to_json))
                .unwrap_or_else(|| serde_json::json!({}))),
            (st, _) => Err(st.to_string()),
        }
    }
}

/// Sends `m` and reads up to the STATUS of its seq: that status, and the
/// DATA before it, if any.
async fn exchange(
    s: &mut UnixStream,
    fb: &mut FrameBuf,
    m: &Message,
) -> Result<(UbusStatus, Option<Message>), String> {
    let bytes = m.encode().map_err(|e| e.to_string())?;
    s.write_all(&bytes).await.map_err(|e| io_msg(&e))?;
    let mut data = None;
    loop {
        let r = UbusClient::read_msg(s, fb).await?;
        if r.header.seq != m.header.seq {
            continue;
        }
        match r.header.ty {
            MsgType::Data => data = Some(r),
            MsgType::Status => {
                let st = UbusStatus::from_u32(r.status().unwrap_or(u32::MAX));
                return Ok((st, data));
            }
            _ => {}
        }
    }
}
