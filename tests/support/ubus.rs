//! A ubus peer built from pathosd's own codec, shared by the ubus tests:
//! `Caller` plays `ubus call` / `ubus listen` against a broker, `Frames`
//! reads and writes whole frames on one unix stream. Every wait is bounded.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pathosd::ubus::blob::{table_from_json, table_to_json};
use pathosd::ubus::msg::{Attr, FrameBuf, Message, MsgType, UbusStatus};
use serde_json::Value;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::unix::UnixStream;
use smol::{future, Timer};

use super::TempDir;

/// The bound on every single wait of the ubus tests.
pub const STEP: Duration = Duration::from_secs(5);

impl TempDir {
    /// Where the test's broker listens.
    pub fn sock(&self) -> PathBuf {
        self.path("ubus.sock")
    }
}

/// Runs `f`, panicking with `what` when it takes longer than `d`.
pub async fn within<T>(what: &str, d: Duration, f: impl Future<Output = T>) -> T {
    future::or(f, async {
        Timer::after(d).await;
        panic!("timed out: {what}")
    })
    .await
}

/// Polls `cond` until it holds or the deadline passes (waiting on a timer between polls).
pub async fn poll_until(what: &str, d: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + d;
    while !cond() {
        assert!(Instant::now() < end, "timed out: {what}");
        Timer::after(Duration::from_millis(10)).await;
    }
}

/// Raw bytes of message `n` (1-based) of a recorded ubusd capture in tests/vectors/ubus.
pub fn captured_bytes(file: &str, n: usize) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/ubus")
        .join(file);
    let text = std::fs::read_to_string(p).unwrap();
    let raw = text
        .lines()
        .filter_map(|l| l.trim_start_matches('#').trim().strip_prefix("raw: "))
        .nth(n - 1)
        .unwrap()
        .trim();
    (0..raw.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&raw[i..i + 2], 16).unwrap())
        .collect()
}

/// Message `n` (1-based) of a recorded ubusd capture, decoded.
pub fn captured(file: &str, n: usize) -> Message {
    Message::decode(&captured_bytes(file, n)).unwrap()
}

/// Whole frames on one unix stream; `other` names the far side in failures.
pub struct Frames {
    s: UnixStream,
    fb: FrameBuf,
    other: &'static str,
}

impl Frames {
    pub fn new(s: UnixStream, other: &'static str) -> Frames {
        Frames {
            s,
            fb: FrameBuf::new(),
            other,
        }
    }

    pub async fn recv(&mut self) -> Vec<u8> {
        let other = self.other;
        within(&format!("frame from {other}"), STEP, async {
            let mut buf = [0u8; 4096];
            loop {
                if let Some(fr) = self.fb.next_frame().unwrap() {
                    return fr;
                }
                let n = self.s.read(&mut buf).await.unwrap();
                assert!(n > 0, "{other} closed");
                self.fb.push(&buf[..n]);
            }
        })
        .await
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).await.unwrap();
    }
}

/// `ubus call` / `ubus listen` built from our codec.
pub struct Caller {
    io: Frames,
    /// The client id the broker assigned in its HELLO.
    pub id: u32,
    seq: u16,
    listen_obj: Option<u32>,
    /// Events that arrived while waiting for a reply, already answered;
    /// `next_event` hands them out first.
    events: VecDeque<(String, Value)>,
}

impl Caller {
    pub async fn connect(path: &std::path::Path) -> Caller {
        let stream = within("connect", STEP, UnixStream::connect(path))
            .await
            .unwrap();
        let mut c = Caller {
            io: Frames::new(stream, "broker"),
            id: 0,
            seq: 0,
            listen_obj: None,
            events: VecDeque::new(),
        };
        let hello = c.recv().await;
        assert_eq!(hello.header.ty, MsgType::Hello);
        assert_eq!((hello.header.seq, hello.attrs.len()), (0, 0));
        assert_ne!(hello.header.peer, 0);
        c.id = hello.header.peer;
        c
    }

    pub async fn recv_bytes(&mut self) -> Vec<u8> {
        self.io.recv().await
    }

    pub async fn recv(&mut self) -> Message {
        Message::decode(&self.recv_bytes().await).unwrap()
    }

    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.io.send(bytes).await;
    }

    pub async fn send(&mut self, m: &Message) {
        self.send_bytes(&m.encode().unwrap()).await;
    }

    pub fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// DATA messages then the STATUS code for `seq`. Events in between are
    /// answered and kept for `next_event`.
    pub async fn collect(&mut self, seq: u16) -> (Vec<Message>, u32) {
        let mut data = Vec::new();
        loop {
            let m = self.recv().await;
            if m.header.ty == MsgType::Invoke && m.header.peer == 0 {
                let ev = self.ack_event(m).await;
                self.events.push_back(ev);
                continue;
            }
            // ubusd's own NOTIFY {ACTIVE} to an object's owner.
            if m.header.seq != seq || m.header.ty == MsgType::Notify {
                continue;
            }
            match m.header.ty {
                MsgType::Data => data.push(m),
                MsgType::Status => return (data, m.status().unwrap()),
                t => panic!("unexpected {t:?}"),
            }
        }
    }

    pub async fn lookup(&mut self, path: &str) -> Result<Message, u32> {
        let seq = self.next_seq();
        self.send(&Message::lookup(seq, Some(path))).await;
        let (mut data, st) = self.collect(seq).await;
        if st != 0 {
            assert!(data.is_empty());
            return Err(st);
        }
        assert_eq!(data.len(), 1);
        Ok(data.remove(0))
    }

    /// Returns the reply table as JSON (None without DATA), or the non-zero status.
    pub async fn call(
        &mut self,
        path: &str,
        method: &str,
        args: Value,
    ) -> Result<Option<Value>, u32> {
        let obj = self.lookup(path).await?.objid().unwrap();
        let seq = self.next_seq();
        let args = table_from_json(&args).unwrap();
        self.send(&Message::invoke(seq, obj, method, args)).await;
        let (data, st) = self.collect(seq).await;
        for d in &data {
            assert_eq!(d.header.peer, obj, "relayed reply carries the objid");
            assert_eq!(d.objid(), Some(obj));
        }
        match st {
            0 => Ok(data.first().map(|d| table_to_json(d.data().unwrap()))),
            s => {
                assert!(data.is_empty(), "no DATA with an error status");
                Err(s)
            }
        }
    }

    /// ADD_OBJECT of `path` (no methods): a stand-in for procd's `service`.
    pub async fn add_object(&mut self, path: &str) -> u32 {
        let seq = self.next_seq();
        self.send(&Message::add_object(seq, path, &[])).await;
        let (data, st) = self.collect(seq).await;
        assert_eq!(st, 0);
        data[0].objid().unwrap()
    }

    /// Reads until ubusd tells this client's object it has a subscriber
    /// (NOTIFY {ACTIVE 1}, what `ubus subscribe` makes it send): at most 64
    /// messages, each within STEP.
    pub async fn wait_subscribed(&mut self) {
        for _ in 0..64 {
            if self.recv().await.header.ty == MsgType::Notify {
                return;
            }
        }
        panic!("no NOTIFY of a subscriber in 64 messages");
    }

    /// `ubus_notify(ctx, obj, type, msg, -1)` as procd sends it: NOTIFY
    /// {OBJID, METHOD, DATA, NO_REPLY 1}; ubusd answers nothing.
    pub async fn notify(&mut self, objid: u32, ty: &str, data: Value) {
        let seq = self.next_seq();
        let m = Message::new(
            MsgType::Notify,
            seq,
            objid,
            vec![
                Attr::ObjId(objid),
                Attr::Method(ty.to_string()),
                Attr::Data(table_from_json(&data).unwrap()),
                Attr::NoReply(1),
            ],
        );
        self.send(&m).await;
    }

    pub async fn listen(&mut self, pattern: &str) {
        let seq = self.next_seq();
        self.send(&Message::new(MsgType::AddObject, seq, 0, vec![]))
            .await;
        let (data, st) = self.collect(seq).await;
        assert_eq!(st, 0);
        let obj = data[0].objid().unwrap();
        assert_eq!(data[0].objtype(), None, "anonymous object has no type");
        // Set before registering: an event may come ahead of the STATUS.
        self.listen_obj = Some(obj);
        let seq = self.next_seq();
        self.send(&Message::event_register(seq, obj, pattern)).await;
        assert_eq!(self.collect(seq).await.1, 0);
    }

    /// The next event (id, data) delivered to this listener, answered.
    pub async fn next_event(&mut self) -> (String, Value) {
        if let Some(ev) = self.events.pop_front() {
            return ev;
        }
        loop {
            let m = self.recv().await;
            if m.header.ty != MsgType::Invoke {
                continue;
            }
            assert_eq!(m.header.peer, 0);
            return self.ack_event(m).await;
        }
    }

    /// Answers an event INVOKE with STATUS 0 as `ubus listen` does.
    async fn ack_event(&mut self, m: Message) -> (String, Value) {
        assert_eq!(m.objid(), self.listen_obj);
        let reply = Message::status_msg(m.header.seq, 0, UbusStatus::Ok, m.objid());
        self.send(&reply).await;
        (
            m.method().unwrap().to_string(),
            table_to_json(m.data().unwrap()),
        )
    }
}

/// The next whole message from a blocking socket with a read timeout (a
/// stand-in object's thread); None once `stop` is set or the broker is
/// gone. `who` names the stand-in in a panic.
pub fn read_blocking(
    s: &mut std::os::unix::net::UnixStream,
    fb: &mut FrameBuf,
    stop: &std::sync::atomic::AtomicBool,
    who: &str,
) -> Option<Message> {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    loop {
        if let Some(fr) = fb.next_frame().unwrap() {
            return Some(Message::decode(&fr).unwrap());
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        match s.read(&mut buf) {
            Ok(0) => return None,
            Ok(n) => fb.push(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("{who}: {e}"),
        }
    }
}
