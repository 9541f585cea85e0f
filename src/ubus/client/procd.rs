//! procd's instance watchdog over the client's connection: LOOKUP
//! `service` once per connection, then an INVOKE `service watchdog
//! {name, instance}` per ping the owner asked for.

use smol::net::unix::UnixStream;

use super::UbusClient;
use crate::ubus::blob::BlobValue;
use crate::ubus::msg::{Message, MsgType, UbusStatus};

/// Where the watchdog pings of one connection stand: procd's `service`
/// object once looked up, and the seqs of the LOOKUP in flight and of the
/// last INVOKE.
#[derive(Default)]
pub(super) struct Procd {
    service: Option<u32>,
    lookup: Option<u16>,
    invoke: Option<u16>,
}

impl UbusClient {
    /// Sends the watchdog ping the owner asked for, if any: the INVOKE when
    /// procd's `service` object is known, else its LOOKUP first (the ping
    /// stays asked for until the LOOKUP is answered, one LOOKUP at a time).
    /// A ping does not wait for procd's answer to the one before: only the
    /// last one's answer is looked at.
    pub(super) async fn ping(
        &self,
        stream: &mut UnixStream,
        seq: &mut u16,
        procd: &mut Procd,
    ) -> Result<(), String> {
        if procd.lookup.is_some() || self.shared.ping.borrow().is_none() {
            return Ok(());
        }
        *seq = seq.wrapping_add(1);
        let Some(service) = procd.service else {
            procd.lookup = Some(*seq);
            return self
                .write(stream, &Message::lookup(*seq, Some("service")))
                .await;
        };
        let Some((name, instance)) = self.shared.ping.borrow_mut().take() else {
            return Ok(());
        };
        let args = vec![
            ("name".to_string(), BlobValue::String(name)),
            ("instance".to_string(), BlobValue::String(instance)),
        ];
        procd.invoke = Some(*seq);
        self.write(stream, &Message::invoke(*seq, service, "watchdog", args))
            .await
    }

    /// ubusd's answers to the watchdog's LOOKUP and INVOKE (matched by
    /// seq; true when `m` was one of them). A failure is warned about once
    /// until a ping gets through: under procd without the watchdog, or
    /// with another instance name, every ping fails the same way.
    pub(super) async fn on_answer(
        &self,
        stream: &mut UnixStream,
        m: &Message,
        seq: &mut u16,
        procd: &mut Procd,
    ) -> Result<bool, String> {
        let s = Some(m.header.seq);
        let lookup = s == procd.lookup;
        if !lookup && s != procd.invoke {
            return Ok(false);
        }
        match m.header.ty {
            // The one object of that path.
            MsgType::Data if lookup => {
                procd.service = m.objid();
                return Ok(true);
            }
            MsgType::Status => {}
            // procd's reply to the ping (name, instance, mode, timeout).
            _ => return Ok(true),
        }
        let st = UbusStatus::from_u32(m.status().unwrap_or(u32::MAX));
        if lookup {
            procd.lookup = None;
        } else {
            procd.invoke = None;
        }
        if st == UbusStatus::Ok && procd.service.is_some() {
            if !lookup {
                self.ping_warned.set(false);
            }
            // The ping that waited for the LOOKUP, or one asked for meanwhile.
            self.ping(stream, seq, procd).await?;
            return Ok(true);
        }
        // Looked up again at the next ping: procd may register `service`
        // later, or (re-executed) under another id.
        procd.service = None;
        let what = if lookup {
            "no object `service` on ubus"
        } else {
            "`ubus call service watchdog` failed"
        };
        if !self.ping_warned.replace(true) {
            log::warn!(
                "procd watchdog: {what} ({st}); procd restarts pathosd when its watchdog time passes without a ping"
            );
        }
        // The ping asked for is dropped with the failure: the next one
        // comes from the owner's next turn.
        self.shared.ping.borrow_mut().take();
        Ok(true)
    }
}
