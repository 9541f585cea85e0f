//! What the router itself says about the services and interfaces VIPs
//! need: procd's notifications on its `service` object and netifd's
//! `network.interface` events, read on a connection of their own to ubusd
//! that exists only while some VIP names a service or an interface.
//!
//! What the real daemons send (procd service/service.c and instance.c,
//! netifd interface-event.c and ubus.c):
//!
//! * procd `ubus_notify`s its `service` object, to subscribers only
//!   (`ubus subscribe service`), with NO_REPLY: `instance.start` and
//!   `instance.stop` {service, instance} when an instance's process starts
//!   or exits (`/etc/init.d/NAME stop` kills it: `instance.stop` comes
//!   then), `service.start` {service} when a service is added and
//!   `service.stop` {service} once its last instance is gone; also
//!   `instance.respawn`, `instance.fail` (a crash loop) and `event.trigger`,
//!   which carry no new state here.
//! * netifd sends the ubus event `network.interface` {action: "ifup" or
//!   "ifdown", interface: NAME} to listeners (`ubus listen
//!   network.interface`) when a logical interface goes up or down.
//!
//! The wire (libubus-sub.c, ubusd_proto.c): one anonymous object (ADD_OBJECT
//! with no path) is both the subscriber and the event listener. SUBSCRIBE
//! {OBJID: it, TARGET: `service`'s id}; `register` {object, pattern} on the
//! event object 1. ubusd hands a notification or an event to it as an
//! INVOKE {[NO_REPLY], OBJID, METHOD: the type or event name, DATA}; an
//! INVOKE without NO_REPLY is answered STATUS {0, OBJID}, as libubus does.
//! When procd goes, ubusd sends UNSUBSCRIBE; when it registers `service`
//! again, ubusd's own `ubus.object.add` event {id, path} says so, and the
//! watcher subscribes again (libubus's auto-subscribe does the same).
//!
//! Nothing is known until an event comes: at start and after a reconnect
//! the VIPs' checks decide, as without this.

use std::path::PathBuf;
use std::time::Duration;

use smol::io::AsyncWriteExt;
use smol::net::unix::UnixStream;

use super::blob::{BlobValue, Table};
use super::client::{after, UbusClient};
use super::msg::{Attr, FrameBuf, Message, MsgType, UbusStatus};
use crate::config::NeedKind;
use crate::net::until;
use crate::rt::sleep_until;

/// netifd's event.
pub const EVENT_INTERFACE: &str = "network.interface";
/// ubusd's event for a new object (`ubusd_send_obj_event`).
const EVENT_OBJECT_ADD: &str = "ubus.object.add";
/// procd's object.
const PROCD_SERVICE: &str = "service";

/// What to watch and where.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub socket_path: PathBuf,
    /// Subscribe to procd's `service` notifications.
    pub services: bool,
    /// Listen to netifd's `network.interface` events.
    pub interfaces: bool,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    pub io_timeout: Duration,
}

impl WatchConfig {
    pub fn new(socket_path: PathBuf, services: bool, interfaces: bool) -> WatchConfig {
        WatchConfig {
            socket_path,
            services,
            interfaces,
            backoff_min: Duration::from_millis(200),
            backoff_max: Duration::from_secs(10),
            io_timeout: Duration::from_secs(5),
        }
    }
}

/// A service stopped or started, an interface went down or up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedEvent {
    pub kind: NeedKind,
    pub name: String,
    pub up: bool,
}

/// What one notification or event says, if anything: procd's `type`
/// {service, ...} or netifd's `network.interface` {action, interface}.
pub fn need_event(method: &str, data: &Table) -> Option<NeedEvent> {
    let get = |k: &str| field(data, k).and_then(BlobValue::as_str);
    let (kind, name, up) = match method {
        EVENT_INTERFACE => {
            let up = match get("action")? {
                "ifup" => true,
                "ifdown" => false,
                _ => return None,
            };
            (NeedKind::Interface, get("interface")?, up)
        }
        "instance.start" | "service.start" => (NeedKind::Service, get("service")?, true),
        "instance.stop" | "service.stop" => (NeedKind::Service, get("service")?, false),
        _ => return None,
    };
    Some(NeedEvent {
        kind,
        name: name.to_string(),
        up,
    })
}

/// The value of `key` in a message's DATA table.
fn field<'a>(data: &'a Table, key: &str) -> Option<&'a BlobValue> {
    data.iter().find(|(n, _)| n == key).map(|(_, v)| v)
}

/// Runs until `tell` returns false (the daemon stops): connects, watches,
/// and reconnects with a bounded exponential backoff when ubusd goes.
pub async fn watch(cfg: WatchConfig, tell: impl Fn(NeedEvent) -> bool) {
    let mut backoff = cfg.backoff_min;
    let mut told = false;
    loop {
        let mut w = Watch {
            cfg: &cfg,
            tell: &tell,
            me: 0,
            seq: 0,
            fb: FrameBuf::new(),
            up: false,
        };
        let why = w.session().await;
        if w.up {
            backoff = cfg.backoff_min;
            told = false;
        }
        match why {
            Stop::Daemon => return,
            Stop::Lost(why) if !told => {
                log::warn!("ubus: service and interface events: {why}; retrying");
                told = true;
            }
            Stop::Lost(why) => log::debug!("ubus: service and interface events: {why}"),
        }
        sleep_until(after(backoff)).await;
        backoff = backoff.saturating_mul(2).min(cfg.backoff_max);
    }
}

enum Stop {
    Daemon,
    Lost(String),
}

struct Watch<'a, F> {
    cfg: &'a WatchConfig,
    tell: &'a F,
    /// Our anonymous object: subscriber and listener.
    me: u32,
    seq: u16,
    fb: FrameBuf,
    /// The watch was set up (the backoff starts over).
    up: bool,
}

impl<F: Fn(NeedEvent) -> bool> Watch<'_, F> {
    async fn session(&mut self) -> Stop {
        let limit = self.cfg.io_timeout;
        let connect = until(after(limit), UnixStream::connect(&self.cfg.socket_path)).await;
        let mut s = match connect.unwrap_or_else(|| Err(std::io::ErrorKind::TimedOut.into())) {
            Ok(s) => s,
            Err(e) => return Stop::Lost(format!("connect {:?}: {e}", self.cfg.socket_path)),
        };
        match until(after(limit), self.setup(&mut s)).await {
            Some(Ok(())) => {}
            Some(Err(stop)) => return stop,
            None => return Stop::Lost("ubusd did not answer in time".into()),
        }
        self.up = true;
        log::info!(
            "ubus: watching{}{}",
            if self.cfg.services {
                " procd's service events"
            } else {
                ""
            },
            if self.cfg.interfaces {
                " netifd's interface events"
            } else {
                ""
            },
        );
        loop {
            let m = match UbusClient::read_msg(&mut s, &mut self.fb).await {
                Ok(m) => m,
                Err(e) => return Stop::Lost(e),
            };
            if let Err(stop) = self.on_message(&mut s, m).await {
                return stop;
            }
        }
    }

    /// HELLO, our object, the listens, the subscription.
    async fn setup(&mut self, s: &mut UnixStream) -> Result<(), Stop> {
        let hello = UbusClient::read_msg(s, &mut self.fb)
            .await
            .map_err(Stop::Lost)?;
        if hello.header.ty != MsgType::Hello {
            return Err(Stop::Lost(format!(
                "expected HELLO, got {:?}",
                hello.header.ty
            )));
        }
        let seq = self.next_seq();
        let (st, data) = self
            .request(s, Message::new(MsgType::AddObject, seq, 0, vec![]))
            .await?;
        self.me = match (st, data.iter().find_map(Message::objid)) {
            (UbusStatus::Ok, Some(id)) => id,
            (st, _) => return Err(Stop::Lost(format!("ADD_OBJECT: {st}"))),
        };
        let mut patterns = Vec::new();
        if self.cfg.interfaces {
            patterns.push(EVENT_INTERFACE);
        }
        if self.cfg.services {
            patterns.push(EVENT_OBJECT_ADD);
        }
        for p in patterns {
            let seq = self.next_seq();
            let reg = Message::event_register(seq, self.me, p);
            let (st, _) = self.request(s, reg).await?;
            if st != UbusStatus::Ok {
                return Err(Stop::Lost(format!("listening to {p}: {st}")));
            }
        }
        if self.cfg.services {
            let seq = self.next_seq();
            let (st, data) = self
                .request(s, Message::lookup(seq, Some(PROCD_SERVICE)))
                .await?;
            match (st, data.iter().find_map(Message::objid)) {
                (UbusStatus::Ok, Some(id)) => self.subscribe(s, id).await?,
                // procd not (yet) there: its ADD_OBJECT will say so.
                (st, _) => log::warn!(
                    "ubus: no object `service` ({st}): procd's service events follow once it registers"
                ),
            }
        }
        Ok(())
    }

    fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    async fn write(&self, s: &mut UnixStream, m: &Message) -> Result<(), Stop> {
        let bytes = m.encode().map_err(|e| Stop::Lost(e.to_string()))?;
        match until(after(self.cfg.io_timeout), s.write_all(&bytes)).await {
            Some(r) => r.map_err(|e| Stop::Lost(e.to_string())),
            None => Err(Stop::Lost("write to ubusd timed out".into())),
        }
    }

    /// Sends `m` and reads until ubusd's STATUS for it, with the DATA
    /// before it; events that come meanwhile are handled as they come.
    async fn request(
        &mut self,
        s: &mut UnixStream,
        m: Message,
    ) -> Result<(UbusStatus, Vec<Message>), Stop> {
        let seq = m.header.seq;
        self.write(s, &m).await?;
        let mut data = Vec::new();
        loop {
            let r = UbusClient::read_msg(s, &mut self.fb)
                .await
                .map_err(Stop::Lost)?;
            match r.header.ty {
                MsgType::Status if r.header.seq == seq => {
                    let st = UbusStatus::from_u32(r.status().unwrap_or(u32::MAX));
                    return Ok((st, data));
                }
                MsgType::Data if r.header.seq == seq => data.push(r),
                _ => self.on_message(s, r).await?,
            }
        }
    }

    /// SUBSCRIBE to procd's `service`; the answer is looked at in
    /// [`Self::on_message`].
    async fn subscribe(&mut self, s: &mut UnixStream, target: u32) -> Result<(), Stop> {
        let seq = self.next_seq();
        let m = Message::new(
            MsgType::Subscribe,
            seq,
            0,
            vec![Attr::ObjId(self.me), Attr::Target(target)],
        );
        self.write(s, &m).await
    }

    /// One message that is no answer to a request of the setup's.
    async fn on_message(&mut self, s: &mut UnixStream, m: Message) -> Result<(), Stop> {
        match m.header.ty {
            MsgType::Invoke if m.objid() == Some(self.me) => {
                let no_reply = m
                    .attrs
                    .iter()
                    .any(|a| matches!(a, Attr::NoReply(n) if *n != 0));
                let method = m.method().unwrap_or("");
                let empty = Table::new();
                let data = m.data().unwrap_or(&empty);
                if method == EVENT_OBJECT_ADD {
                    let path = field(data, "path").and_then(BlobValue::as_str);
                    let id = field(data, "id").and_then(BlobValue::as_i64);
                    if let (Some(PROCD_SERVICE), Some(id)) = (path, id) {
                        log::info!("ubus: procd's `service` registered again: subscribing");
                        self.subscribe(s, id as u32).await?;
                    }
                } else if let Some(ev) = need_event(method, data) {
                    log::debug!("ubus: {method} {} {}", ev.kind.as_str(), ev.name);
                    if !(self.tell)(ev) {
                        return Err(Stop::Daemon);
                    }
                }
                if !no_reply {
                    let st = Message::status_msg(
                        m.header.seq,
                        m.header.peer,
                        UbusStatus::Ok,
                        Some(self.me),
                    );
                    self.write(s, &st).await?;
                }
            }
            MsgType::Unsubscribe => {
                log::warn!(
                    "ubus: procd's `service` went away: service events follow once it is back"
                );
            }
            MsgType::Status => {
                let st = UbusStatus::from_u32(m.status().unwrap_or(u32::MAX));
                if st != UbusStatus::Ok {
                    log::warn!("ubus: subscribing to procd's `service`: {st}");
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pairs: &[(&str, &str)]) -> Table {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), BlobValue::str(v)))
            .collect()
    }

    #[test]
    fn procd_and_netifd_messages() {
        let stop = need_event(
            "instance.stop",
            &t(&[("service", "dnsmasq"), ("instance", "cfg01")]),
        );
        assert_eq!(
            stop,
            Some(NeedEvent {
                kind: NeedKind::Service,
                name: "dnsmasq".into(),
                up: false
            })
        );
        assert_eq!(
            need_event("service.start", &t(&[("service", "x")])).map(|e| e.up),
            Some(true)
        );
        let down = need_event(
            EVENT_INTERFACE,
            &t(&[("action", "ifdown"), ("interface", "wan")]),
        );
        assert_eq!(
            down.map(|e| (e.kind, e.up)),
            Some((NeedKind::Interface, false))
        );
        assert_eq!(
            need_event(
                EVENT_INTERFACE,
                &t(&[("action", "ifupdate"), ("interface", "wan")])
            ),
            None
        );
        assert_eq!(
            need_event("instance.respawn", &t(&[("service", "x")])),
            None
        );
        assert_eq!(need_event("instance.stop", &t(&[])), None);
    }
}
