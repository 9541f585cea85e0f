//! smol driver that registers the `pathosd` object on ubusd and serves calls.
//!
//! Lifecycle (what libubus does, openwrt-conventions §4.2): connect to the unix socket,
//! read HELLO, send ADD_OBJECT {OBJPATH, SIGNATURE}, wait for DATA {OBJID, OBJTYPE} and
//! STATUS 0, then answer every INVOKE with DATA {OBJID, DATA} (only when there is a
//! reply table) followed by STATUS {status, OBJID}, echoing the INVOKE's seq and peer.
//! When ubusd goes away the client reconnects with bounded exponential backoff and
//! registers again. At the stop it sends the queued events, answers the calls in
//! flight, sends REMOVE_OBJECT and closes only once ubusd has answered it: ubusd
//! never reads what a client wrote before a close it has already seen.
//!
//! The client also carries the daemon's pings of procd's instance watchdog
//! ([`UbusHandle::ping_procd`]): LOOKUP `service` once per connection, then
//! an INVOKE `service watchdog {name, instance}` per ping. The pings come
//! from the owner task's loop; the client only sends them, so a stalled
//! owner stops them.
//!
//! The daemon is never blocked by ubus: calls reach it as [`UbusRequest`]s, at most
//! `request_queue` unanswered at a time (more are answered UNKNOWN_ERROR instead of
//! waiting), and [`UbusHandle::send_event`] only pushes into a bounded queue that drops
//! its oldest entry when full (e.g. while ubusd is down).
//!
//! The connection's lifecycle (connect, register, the session's loop, the
//! stop) is here; the daemon's side (requests, replies, the handle) is in
//! `handle`, the INVOKEs it serves in `calls`, the watchdog pings in `procd`.

mod calls;
mod handle;
mod procd;

use calls::Calls;
use handle::{bump, Shared};
pub use handle::{serve, LinkStatus, Requests, UbusHandle, UbusHandler, UbusReply, UbusRequest};
use procd::Procd;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::Value;
use smol::future;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::unix::UnixStream;

use super::blob::{table_from_json, BlobMsgType, BlobValue, Table};
use super::msg::{FrameBuf, Message, MethodSig, MsgType, TableBody, UbusStatus, UBUS_UNIX_SOCKET};
// The daemon thread's own timers (no timer on async-io's reactor, whose
// thread re-arms its timerfd on every wake-up while one is pending).
use crate::chan::{self, Rx, Tx, UbusDone};
use crate::rt::sleep_until;

/// Event sent when a VIP changes state (announced / pessimized / withdrawn).
pub const EVENT_VIP: &str = "pathosd.vip";
/// Event sent when a BGP peer session changes state.
pub const EVENT_PEER: &str = "pathosd.peer";

/// The methods `ubus -v list pathosd` shows.
pub fn pathosd_methods() -> Vec<MethodSig> {
    use BlobMsgType::*;
    vec![
        MethodSig::new(
            "status",
            &[
                ("offset", Int32),
                ("limit", Int32),
                ("search", String),
                ("state", String),
                ("health", String),
                ("compact", BlobMsgType::BOOL),
            ],
        ),
        MethodSig::new("vip", &[("name", String)]),
        MethodSig::new("check", &[("vip", String), ("check", String)]),
        MethodSig::new("drain", &[("vip", String), ("enable", BlobMsgType::BOOL)]),
        MethodSig::new("reload", &[]),
        MethodSig::new("validate", &[("uci", Table), ("config", Table)]),
    ]
}

/// How the client connects and how patient it is.
#[derive(Debug, Clone)]
pub struct UbusConfig {
    /// ubusd's socket (default `/var/run/ubus/ubus.sock`).
    pub socket_path: PathBuf,
    /// Object path to register (default `pathosd`); empty: none (a client
    /// that only pings procd's watchdog, when `api.ubus_socket` is off).
    pub object: String,
    pub methods: Vec<MethodSig>,
    /// First reconnect delay; doubles up to `backoff_max` and resets once registered.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// Events kept while ubusd is unreachable; the oldest is dropped beyond this.
    pub event_queue: usize,
    /// Calls the daemon has not answered yet (queued or being served); more are
    /// answered UNKNOWN_ERROR at once. Counting unanswered calls rather than
    /// sizing a channel means a burst is refused only when the daemon really
    /// holds that many, not because it had not yet taken them off the queue.
    pub request_queue: usize,
    /// A call the daemon has not answered by then gets STATUS TIMEOUT (the `ubus`
    /// CLI gives up after 30 s by default).
    pub reply_timeout: Duration,
    /// Bound on HELLO + ADD_OBJECT and on each write to ubusd.
    pub io_timeout: Duration,
}

impl Default for UbusConfig {
    fn default() -> UbusConfig {
        UbusConfig {
            socket_path: PathBuf::from(UBUS_UNIX_SOCKET),
            object: "pathosd".to_string(),
            methods: pathosd_methods(),
            backoff_min: Duration::from_millis(200),
            backoff_max: Duration::from_secs(10),
            event_queue: 64,
            request_queue: 64,
            reply_timeout: Duration::from_secs(10),
            io_timeout: Duration::from_secs(5),
        }
    }
}

/// What a call is answered with: a JSON object, or a table encoded ahead
/// (a large reply, encoded as it was made: `status`).
#[derive(Debug)]
pub enum ReplyData {
    Json(Value),
    Encoded(TableBody),
}

/// The connection task. Create with [`UbusClient::new`], then spawn [`UbusClient::run`].
pub struct UbusClient {
    config: UbusConfig,
    shared: Rc<Shared>,
    /// ADD_OBJECT refusals are warned about once until the next success.
    refusal_warned: Cell<bool>,
    /// Calls refused as busy since the last warning, and when that was: a
    /// flood of calls gets one line per `BUSY_LOG_EVERY`, not one per call.
    /// Only this task touches them.
    busy_refused: Cell<u32>,
    busy_told: Cell<Option<Instant>>,
    /// A failed watchdog ping (no `service` object, an unknown instance) is
    /// warned about once until a ping succeeds.
    ping_warned: Cell<bool>,
    wake: Rx<()>,
    requests: Tx<UbusRequest>,
    /// Dropped with the client, which tells [`UbusHandle::stopped`].
    _done: Tx<()>,
}

enum End {
    Shutdown,
    Lost(String),
}

enum Ev {
    Read(std::io::Result<usize>),
    Wake(bool),
    /// A handler's answer.
    Done(UbusDone),
    Deadline,
}

/// `now + d`, without the panic `Instant + Duration` has for absurd configured values.
pub(super) fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(Duration::from_secs(86_400)))
        .unwrap_or(now)
}

fn wrap_object(v: Value) -> Table {
    match table_from_json(&v) {
        Some(t) => t,
        None => vec![("value".to_string(), BlobValue::from_json(&v))],
    }
}

impl UbusClient {
    /// Returns the client task, the daemon's handle, and the stream of calls.
    pub fn new(config: UbusConfig) -> (UbusClient, UbusHandle, Requests) {
        let shared = Rc::new(Shared {
            events: RefCell::new(VecDeque::new()),
            event_cap: config.event_queue,
            events_dropped: Cell::new(0),
            connect_attempts: Cell::new(0),
            connected: Cell::new(false),
            objid: Cell::new(None),
            registrations: Cell::new(0),
            shutdown: Cell::new(false),
            ping: RefCell::new(None),
        });
        let (wake_tx, wake_rx) = chan::bounded(1);
        // Bounded by `request_queue` through the pending map (see on_message).
        let (req_tx, req_rx) = chan::unbounded();
        let (done_tx, done_rx) = chan::bounded(1);
        (
            UbusClient {
                config,
                shared: shared.clone(),
                refusal_warned: Cell::new(false),
                busy_refused: Cell::new(0),
                busy_told: Cell::new(None),
                ping_warned: Cell::new(false),
                wake: wake_rx,
                requests: req_tx,
                _done: done_tx,
            },
            UbusHandle {
                shared,
                wake: wake_tx,
                done: done_rx,
            },
            Requests(req_rx),
        )
    }

    fn stopping(&self) -> bool {
        self.shared.shutdown.get()
    }

    fn set_link(&self, connected: bool, objid: Option<u32>) {
        self.shared.connected.set(connected);
        self.shared.objid.set(objid);
    }

    /// Runs until [`UbusHandle::shutdown`] or until every handle is dropped. Never
    /// returns an error: ubusd being absent only means retrying later.
    pub async fn run(self) {
        let mut backoff = self.config.backoff_min;
        let mut was_up = false;
        // Say once that ubusd is unreachable; the retries after that are debug noise.
        let mut told_down = false;
        loop {
            if self.stopping() {
                return;
            }
            let end = self
                .session(&mut backoff, &mut was_up, &mut told_down)
                .await;
            self.set_link(false, None);
            match end {
                End::Shutdown => return,
                End::Lost(why) => {
                    if was_up {
                        log::warn!("ubus: connection to ubusd lost: {why}; reconnecting");
                        was_up = false;
                        told_down = true;
                    } else if !told_down {
                        log::info!("ubus: ubusd unavailable ({why}); retrying in the background");
                        told_down = true;
                    } else {
                        log::debug!("ubus: ubusd unavailable: {why}");
                    }
                }
            }
            // Sleep out the backoff, still answering wake-ups (events just queue up).
            let until = after(backoff);
            loop {
                let timer = async {
                    sleep_until(until).await;
                    None
                };
                let woke = async { Some(self.wake.recv().await.is_ok()) };
                match future::or(timer, woke).await {
                    None => break,
                    Some(false) => return,
                    Some(true) if self.stopping() => return,
                    Some(true) => {}
                }
            }
            backoff = backoff.saturating_mul(2).min(self.config.backoff_max);
        }
    }

    async fn session(
        &self,
        backoff: &mut Duration,
        was_up: &mut bool,
        told_down: &mut bool,
    ) -> End {
        bump(&self.shared.connect_attempts);
        // A wedged ubusd with a full accept backlog would otherwise hold connect() forever.
        let connect = future::or(UnixStream::connect(&self.config.socket_path), async {
            sleep_until(after(self.config.io_timeout)).await;
            Err(std::io::ErrorKind::TimedOut.into())
        });
        let mut stream = match connect.await {
            Ok(s) => s,
            Err(e) => return End::Lost(format!("connect {:?}: {e}", self.config.socket_path)),
        };
        self.set_link(true, None);
        let mut fb = FrameBuf::new();
        let mut seq: u16 = 0;
        let objid = match future::or(self.register(&mut stream, &mut fb, &mut seq), async {
            sleep_until(after(self.config.io_timeout)).await;
            Err("timed out registering".to_string())
        })
        .await
        {
            Ok(id) => id,
            Err(e) => return End::Lost(e),
        };
        self.set_link(true, objid);
        // No object of our own: nothing can call us, so no INVOKE names 0.
        let objid = match objid {
            Some(id) => {
                bump(&self.shared.registrations);
                self.refusal_warned.set(false);
                log::info!(
                    "ubus: registered object {} as {id:#010x}",
                    self.config.object
                );
                id
            }
            None => {
                log::info!("ubus: connected to ubusd (no object: watchdog pings only)");
                0
            }
        };
        *backoff = self.config.backoff_min;
        *was_up = true;
        *told_down = false;
        match self
            .serve_session(&mut stream, &mut fb, &mut seq, objid)
            .await
        {
            Ok(end) => end,
            Err(e) => End::Lost(e),
        }
    }

    pub(crate) async fn read_msg(
        stream: &mut UnixStream,
        fb: &mut FrameBuf,
    ) -> Result<Message, String> {
        let mut buf = [0u8; 4096];
        loop {
            match fb.next_frame() {
                Ok(Some(fr)) => return Message::decode(&fr).map_err(|e| e.to_string()),
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
            let n = stream.read(&mut buf).await.map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("ubusd closed the connection".to_string());
            }
            fb.push(&buf[..n]);
        }
    }

    /// HELLO, then ADD_OBJECT until DATA {OBJID} + STATUS 0 with our seq.
    async fn register(
        &self,
        stream: &mut UnixStream,
        fb: &mut FrameBuf,
        seq: &mut u16,
    ) -> Result<Option<u32>, String> {
        let hello = Self::read_msg(stream, fb).await?;
        if hello.header.ty != MsgType::Hello {
            return Err(format!("expected HELLO, got {:?}", hello.header.ty));
        }
        if self.config.object.is_empty() {
            return Ok(None);
        }
        *seq = seq.wrapping_add(1);
        let add = Message::add_object(*seq, &self.config.object, &self.config.methods);
        let bytes = add.encode().map_err(|e| e.to_string())?;
        stream.write_all(&bytes).await.map_err(|e| e.to_string())?;
        let mut objid = None;
        loop {
            let m = Self::read_msg(stream, fb).await?;
            if m.header.seq != *seq {
                continue;
            }
            match m.header.ty {
                MsgType::Data => objid = m.objid().or(objid),
                MsgType::Status => {
                    let st = UbusStatus::from_u32(m.status().unwrap_or(u32::MAX));
                    return match (st, objid) {
                        (UbusStatus::Ok, Some(id)) => Ok(Some(id)),
                        (UbusStatus::Ok, None) => Err("ADD_OBJECT: no object id".into()),
                        // 2 is also what ubusd says for a duplicate path or an ACL
                        // without `publish` (ubusd_create_object returns NULL).
                        (st, _) => {
                            let why = format!("ADD_OBJECT {} refused: {st}", self.config.object);
                            // Another pathosd, or an ACL without `publish`: worth a warning,
                            // once until the next successful registration.
                            if !self.refusal_warned.replace(true) {
                                log::warn!("ubus: {why}; retrying");
                            }
                            Err(why)
                        }
                    };
                }
                _ => {}
            }
        }
    }

    async fn write(&self, stream: &mut UnixStream, m: &Message) -> Result<(), String> {
        let bytes = match m.encode() {
            Ok(b) => b,
            Err(e) => {
                // Our own value was too big: not a link problem.
                log::warn!("ubus: dropping unencodable message: {e}");
                return Ok(());
            }
        };
        self.write_bytes(stream, &bytes).await
    }

    /// Writes an encoded message within the I/O timeout.
    async fn write_bytes(&self, stream: &mut UnixStream, bytes: &[u8]) -> Result<(), String> {
        future::or(
            async { stream.write_all(bytes).await.map_err(|e| e.to_string()) },
            async {
                sleep_until(after(self.config.io_timeout)).await;
                Err("write to ubusd timed out".to_string())
            },
        )
        .await
    }

    async fn flush_events(&self, stream: &mut UnixStream, seq: &mut u16) -> Result<(), String> {
        loop {
            // The borrow ends here, before the write's await.
            let next = self.shared.events.borrow_mut().pop_front();
            let Some((name, data)) = next else {
                return Ok(());
            };
            *seq = seq.wrapping_add(1);
            self.write(stream, &Message::event_send(*seq, &name, wrap_object(data)))
                .await?;
        }
    }

    async fn serve_session(
        &self,
        stream: &mut UnixStream,
        fb: &mut FrameBuf,
        seq: &mut u16,
        objid: u32,
    ) -> Result<End, String> {
        let (done_tx, done_rx) = chan::unbounded::<UbusDone>();
        let mut pending = Calls::default();
        let mut next_key: u32 = 0;
        let mut procd = Procd::default();
        let mut buf = vec![0u8; 4096];
        self.flush_events(stream, seq).await?;
        self.ping(stream, seq, &mut procd).await?;
        loop {
            // Messages already buffered first.
            while let Some(fr) = fb.next_frame().map_err(|e| e.to_string())? {
                match Message::decode(&fr) {
                    Ok(m) => {
                        if !self.on_answer(stream, &m, seq, &mut procd).await? {
                            self.on_message(stream, m, objid, &done_tx, &mut pending, &mut next_key)
                                .await?
                        }
                    }
                    Err(e) => log::warn!("ubus: ignoring undecodable message: {e}"),
                }
            }
            let earliest = pending.0.iter().map(|(_, p)| p.deadline).min();
            // Each branch is cancel-safe: a single read(), channel receives, a timer.
            let ev = future::race(
                async { Ev::Read(stream.read(&mut buf).await) },
                future::race(
                    async { Ev::Wake(self.wake.recv().await.is_ok()) },
                    future::race(
                        async {
                            match done_rx.recv().await {
                                Ok(c) => Ev::Done(c),
                                Err(_) => future::pending().await,
                            }
                        },
                        async {
                            match earliest {
                                Some(t) => {
                                    sleep_until(t).await;
                                    Ev::Deadline
                                }
                                None => future::pending().await,
                            }
                        },
                    ),
                ),
            )
            .await;
            match ev {
                Ev::Read(Ok(0)) => return Err("ubusd closed the connection".into()),
                Ev::Read(Ok(n)) => fb.push(&buf[..n]),
                Ev::Read(Err(e)) => return Err(e.to_string()),
                Ev::Wake(alive) => {
                    if !alive || self.stopping() {
                        self.finish(stream, fb, seq, objid, &mut pending).await;
                        return Ok(End::Shutdown);
                    }
                    self.flush_events(stream, seq).await?;
                    self.ping(stream, seq, &mut procd).await?;
                }
                Ev::Done((key, result)) => {
                    if let Some(p) = pending.remove(key) {
                        if !p.no_reply {
                            self.reply(stream, &p, objid, result).await?;
                        }
                    }
                }
                Ev::Deadline => {
                    let now = Instant::now();
                    let expired: Vec<u32> = pending
                        .0
                        .iter()
                        .filter(|(_, p)| p.deadline <= now)
                        .map(|(k, _)| *k)
                        .collect();
                    for k in expired {
                        if let Some(p) = pending.remove(k) {
                            log::warn!("ubus: call not answered in time");
                            if !p.no_reply {
                                self.reply(stream, &p, objid, Err(UbusStatus::Timeout))
                                    .await?;
                            }
                        }
                    }
                }
            }
        }
    }

    /// The stop: the last events (the withdrawals of a shutdown), an answer
    /// to every call still in flight, then REMOVE_OBJECT, and the return
    /// only once ubusd has answered the REMOVE_OBJECT.
    ///
    /// Written is not enough: ubusd (`client_cb` in ubusd_main.c) reads
    /// nothing more from a client once uloop has seen its end of the
    /// connection (EPOLLRDHUP sets `sock->eof`), and frees it with whatever
    /// it had not read yet. A daemon that exits right after writing loses
    /// its last events whenever ubusd comes to the socket after the close,
    /// which a busy ubusd on a loaded router does. ubusd handles one
    /// client's messages in order and answers each (`ubusd_proto_receive_message`),
    /// so its STATUS for the REMOVE_OBJECT means every event before it has
    /// been handed to the listeners (`ubusd_send_event`). libubus waits for
    /// that STATUS in every `ubus_send_event` and `ubus_remove_object`, so C
    /// daemons never meet this. Bounded by `io_timeout` (the owner's wait is
    /// shorter).
    async fn finish(
        &self,
        stream: &mut UnixStream,
        fb: &mut FrameBuf,
        seq: &mut u16,
        objid: u32,
        pending: &mut Calls,
    ) {
        let done = async {
            self.flush_events(stream, seq).await?;
            // A caller waiting for an answer the daemon will not give gets
            // one now, while the object still exists: after REMOVE_OBJECT
            // ubusd drops our replies (`ubusd_handle_response` finds no
            // object) and the caller would wait out its own timeout (30 s
            // for `ubus call`). 9 is what a call gets when the daemon cannot
            // answer it.
            let cut = std::mem::take(&mut pending.0);
            let mut answered = 0u32;
            for (_, p) in cut.iter().filter(|(_, p)| !p.no_reply) {
                self.reply(stream, p, objid, Err(UbusStatus::UnknownError))
                    .await?;
                answered += 1;
            }
            if answered > 0 {
                log::info!("ubus: stopping: {answered} calls in flight answered 9");
            }
            // A client without an object (watchdog pings only) has
            // nothing to remove; the close is all.
            if self.config.object.is_empty() {
                return Ok(());
            }
            *seq = seq.wrapping_add(1);
            let remove = *seq;
            self.write(stream, &Message::remove_object(remove, objid))
                .await?;
            // Calls ubusd forwarded before it removed the object arrive
            // first; their answers would be dropped, so they get none.
            loop {
                let m = Self::read_msg(stream, fb).await?;
                if m.header.ty == MsgType::Status && m.header.seq == remove {
                    return Ok::<(), String>(());
                }
            }
        };
        let r = future::or(done, async {
            sleep_until(after(self.config.io_timeout)).await;
            Err("ubusd did not answer REMOVE_OBJECT in time".to_string())
        })
        .await;
        if let Err(e) = r {
            // ubusd drops our object with the connection anyway, but what
            // it had not read is lost.
            log::warn!("ubus: stopping: {e}; the last events may be lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::calls::check_args;
    use super::*;

    fn assert_send<T: Send>(_: &T) {}

    /// The client and its handles live on the daemon's thread (they share
    /// `Cell`s, not locks); the calls it receives are plain messages.
    #[test]
    fn calls_are_messages() {
        let (_client, _handle, requests) = UbusClient::new(UbusConfig::default());
        assert_send(&requests);
    }

    #[test]
    fn event_queue_drops_oldest() {
        let cfg = UbusConfig {
            event_queue: 2,
            ..UbusConfig::default()
        };
        let (_client, handle, _requests) = UbusClient::new(cfg);
        for i in 0..5 {
            handle.send_event(EVENT_VIP, serde_json::json!({ "n": i }));
        }
        let q: Vec<Value> = handle
            .shared
            .events
            .borrow()
            .iter()
            .map(|(_, v)| v.clone())
            .collect();
        assert_eq!(
            q,
            vec![serde_json::json!({"n": 3}), serde_json::json!({"n": 4})]
        );
        assert_eq!(handle.status().events_dropped, 3);
    }

    #[test]
    fn argument_types_follow_the_signature() {
        let sig = &pathosd_methods()[3];
        let ok = table_from_json(&serde_json::json!({"vip": "a", "enable": false})).unwrap();
        assert_eq!(check_args(sig, &ok), Ok(()));
        let bad = table_from_json(&serde_json::json!({"vip": "a", "enable": 1})).unwrap();
        assert_eq!(check_args(sig, &bad), Err(UbusStatus::InvalidArgument));
        // Unknown members are left to the daemon, as blobmsg_parse ignores them.
        let extra = table_from_json(&serde_json::json!({"vip": "a", "x": 1})).unwrap();
        assert_eq!(check_args(sig, &extra), Ok(()));
    }
}
