//! The test broker replayed against recorded ubusd traffic: raw client bytes from the
//! captures go in, and what comes out must be the bytes ubusd sent, once the random
//! client/object ids of the recording are mapped to the ones this broker assigned.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pathosd::ubus::blob::BlobValue;
use pathosd::ubus::broker::{Broker, BrokerConfig};
use pathosd::ubus::msg::{Attr, FrameBuf, Message, MsgType};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::unix::UnixStream;
use smol::{future, Timer};

const STEP: Duration = Duration::from_secs(5);

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("pathosd-ubusb-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn sock(&self) -> PathBuf {
        self.0.join("ubus.sock")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    future::or(f, async {
        Timer::after(STEP).await;
        panic!("timed out: {what}")
    })
    .await
}

fn captured(file: &str, n: usize) -> Message {
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
    let bytes: Vec<u8> = (0..raw.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&raw[i..i + 2], 16).unwrap())
        .collect();
    Message::decode(&bytes).unwrap()
}

/// Recorded id -> id in this run.
#[derive(Default)]
struct Ids(HashMap<u32, u32>);

impl Ids {
    fn map(&self, v: u32) -> u32 {
        *self.0.get(&v).unwrap_or(&v)
    }

    /// Rewrites every id of a recorded message into this run's ids.
    fn apply(&self, m: &Message) -> Vec<u8> {
        let mut m = m.clone();
        m.header.peer = self.map(m.header.peer);
        for a in &mut m.attrs {
            match a {
                Attr::ObjId(v) | Attr::ObjType(v) => *v = self.map(*v),
                Attr::Data(t) => {
                    for (k, v) in t.iter_mut() {
                        if let (true, BlobValue::Int32(i)) = (k == "object", &v) {
                            *v = BlobValue::Int32(self.map(*i as u32) as i32);
                        }
                    }
                }
                _ => {}
            }
        }
        m.encode().unwrap()
    }
}

struct Conn {
    s: UnixStream,
    fb: FrameBuf,
    id: u32,
}

impl Conn {
    async fn connect(path: &Path) -> Conn {
        let s = within("connect", UnixStream::connect(path)).await.unwrap();
        let mut c = Conn {
            s,
            fb: FrameBuf::new(),
            id: 0,
        };
        let hello = c.recv().await;
        assert_eq!(hello.header.ty, MsgType::Hello);
        assert_eq!((hello.header.seq, hello.attrs.len()), (0, 0));
        c.id = hello.header.peer;
        c
    }

    async fn recv_bytes(&mut self) -> Vec<u8> {
        within("message from broker", async {
            let mut buf = [0u8; 4096];
            loop {
                if let Some(fr) = self.fb.next_frame().unwrap() {
                    return fr;
                }
                let n = self.s.read(&mut buf).await.unwrap();
                assert!(n > 0, "broker closed");
                self.fb.push(&buf[..n]);
            }
        })
        .await
    }

    async fn recv(&mut self) -> Message {
        Message::decode(&self.recv_bytes().await).unwrap()
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).await.unwrap();
    }
}

/// Registers the example server's `test` object from the recorded ADD_OBJECT and maps
/// the recorded objid/objtype to the assigned ones.
async fn register_test_object(server: &mut Conn, ids: &mut Ids) {
    let add = captured("03_add_object_with_signature.hex", 2);
    server.send(&add.encode().unwrap()).await;
    let data = server.recv().await;
    let rec = captured("03_add_object_with_signature.hex", 3);
    ids.0.insert(rec.objid().unwrap(), data.objid().unwrap());
    ids.0
        .insert(rec.objtype().unwrap(), data.objtype().unwrap());
    assert_eq!(data.encode().unwrap(), ids.apply(&rec));
    let st = server.recv_bytes().await;
    assert_eq!(
        st,
        ids.apply(&captured("03_add_object_with_signature.hex", 4))
    );
}

#[test]
fn lookup_on_empty_bus_and_unknown_object() {
    let dir = TempDir::new("empty");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let mut c = Conn::connect(broker.path()).await;
        c.send(&captured("02_lookup_empty_bus.hex", 2).encode().unwrap())
            .await;
        assert_eq!(
            c.recv_bytes().await,
            captured("02_lookup_empty_bus.hex", 3).encode().unwrap()
        );
        c.send(
            &captured("11_error_object_not_found.hex", 2)
                .encode()
                .unwrap(),
        )
        .await;
        assert_eq!(
            c.recv_bytes().await,
            captured("11_error_object_not_found.hex", 3)
                .encode()
                .unwrap()
        );
    });
}

#[test]
fn add_object_lookup_and_call_relay() {
    let dir = TempDir::new("call");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let mut ids = Ids::default();
        let mut server = Conn::connect(broker.path()).await;
        register_test_object(&mut server, &mut ids).await;
        // Anonymous subscriber object: DATA {OBJID} only, then STATUS 0.
        server
            .send(&captured("04_add_object_anonymous.hex", 1).encode().unwrap())
            .await;
        let d = server.recv().await;
        ids.0.insert(
            captured("04_add_object_anonymous.hex", 2).objid().unwrap(),
            d.objid().unwrap(),
        );
        assert_eq!(
            d.encode().unwrap(),
            ids.apply(&captured("04_add_object_anonymous.hex", 2))
        );
        assert_eq!(
            server.recv_bytes().await,
            ids.apply(&captured("04_add_object_anonymous.hex", 3))
        );

        let f = "07_call_hello_deferred_with_fd.hex";
        let mut cli = Conn::connect(broker.path()).await;
        ids.0.insert(captured(f, 1).header.peer, cli.id);
        // `ubus list` (all) and `ubus -v list test`: the anonymous object is not listed.
        cli.send(&captured("05_lookup_all.hex", 2).encode().unwrap())
            .await;
        assert_eq!(
            cli.recv_bytes().await,
            ids.apply(&captured("05_lookup_all.hex", 3))
        );
        assert_eq!(
            cli.recv_bytes().await,
            ids.apply(&captured("05_lookup_all.hex", 4))
        );
        cli.send(&ids.apply(&captured(f, 2))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 3)));
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 4)));
        // INVOKE: forwarded with peer = caller id and USER/GROUP added.
        cli.send(&ids.apply(&captured(f, 5))).await;
        assert_eq!(server.recv_bytes().await, ids.apply(&captured(f, 6)));
        // The server's DATA + STATUS relayed with peer = objid.
        server.send(&ids.apply(&captured(f, 7))).await;
        server.send(&ids.apply(&captured(f, 8))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 9)));
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 10)));

        // Method not found is the server's answer, relayed unchanged (ubusd does not
        // check method names).
        let f = "10_error_method_not_found.hex";
        ids.0.insert(captured(f, 1).header.peer, cli.id);
        cli.send(&ids.apply(&captured(f, 5))).await;
        assert_eq!(server.recv_bytes().await, ids.apply(&captured(f, 6)));
        server.send(&ids.apply(&captured(f, 7))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 8)));

        // A response for an object the sender does not own is dropped: the caller
        // gets nothing from this forged STATUS, and the next real reply still arrives.
        let mut forger = Conn::connect(broker.path()).await;
        forger.send(&ids.apply(&captured(f, 7))).await;
        // A round trip on the same connection proves the broker processed it.
        forger
            .send(&captured("02_lookup_empty_bus.hex", 2).encode().unwrap())
            .await;
        while forger.recv().await.header.ty != MsgType::Status {}
        let f = "12_error_invalid_argument.hex";
        ids.0.insert(captured(f, 1).header.peer, cli.id);
        cli.send(&ids.apply(&captured(f, 5))).await;
        assert_eq!(server.recv_bytes().await, ids.apply(&captured(f, 6)));
        server.send(&ids.apply(&captured(f, 7))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 8)));
    });
}

#[test]
fn acl_denials() {
    let dir = TempDir::new("acl");
    let broker = Broker::start(
        &dir.sock(),
        BrokerConfig {
            deny_invoke: vec![
                ("test".into(), "hello".into()),
                ("test".into(), "watch".into()),
            ],
            deny_publish: vec!["test".into()],
            ..BrokerConfig::default()
        },
    )
    .unwrap();
    smol::block_on(async {
        // Publishing `test` is refused with 2 and no DATA; an anonymous object is fine.
        let f = "16_error_add_object_not_permitted.hex";
        let mut server = Conn::connect(broker.path()).await;
        server.send(&captured(f, 2).encode().unwrap()).await;
        assert_eq!(server.recv_bytes().await, captured(f, 3).encode().unwrap());
        server.send(&captured(f, 4).encode().unwrap()).await;
        let d = server.recv().await;
        let mut ids = Ids::default();
        ids.0
            .insert(captured(f, 5).objid().unwrap(), d.objid().unwrap());
        assert_eq!(d.encode().unwrap(), ids.apply(&captured(f, 5)));
        assert_eq!(server.recv_bytes().await, captured(f, 6).encode().unwrap());
    });
    drop(broker);

    let broker = Broker::start(
        &dir.sock(),
        BrokerConfig {
            deny_invoke: vec![
                ("test".into(), "hello".into()),
                ("test".into(), "watch".into()),
            ],
            ..BrokerConfig::default()
        },
    )
    .unwrap();
    smol::block_on(async {
        let mut ids = Ids::default();
        let mut server = Conn::connect(broker.path()).await;
        register_test_object(&mut server, &mut ids).await;
        // The capture's run had other ids: map those too.
        let f = "15_error_permission_denied_invoke.hex";
        let rec = captured(f, 3);
        let assigned = ids.map(0x8419a1ab);
        ids.0.insert(rec.objid().unwrap(), assigned);
        ids.0.insert(rec.objtype().unwrap(), ids.map(0x143dd39b));
        let mut cli = Conn::connect(broker.path()).await;
        cli.send(&captured(f, 2).encode().unwrap()).await;
        // LOOKUP shows only the permitted method.
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 3)));
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 4)));
        // INVOKE of a denied method: STATUS 6 from the broker, never forwarded.
        cli.send(&ids.apply(&captured(f, 5))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 6)));
    });
}

#[test]
fn event_register_send_and_delivery() {
    let dir = TempDir::new("event");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let mut ids = Ids::default();
        let f = "13_event_listen_register.hex";
        let mut listener = Conn::connect(broker.path()).await;
        listener.send(&captured(f, 2).encode().unwrap()).await;
        let d = listener.recv().await;
        ids.0
            .insert(captured(f, 3).objid().unwrap(), d.objid().unwrap());
        assert_eq!(d.encode().unwrap(), ids.apply(&captured(f, 3)));
        assert_eq!(listener.recv_bytes().await, ids.apply(&captured(f, 4)));
        listener.send(&ids.apply(&captured(f, 5))).await;
        assert_eq!(listener.recv_bytes().await, ids.apply(&captured(f, 6)));

        let f = "14_event_send_and_delivery.hex";
        let mut sender = Conn::connect(broker.path()).await;
        sender.send(&captured(f, 2).encode().unwrap()).await;
        // Delivery: INVOKE peer 0, seq = ubusd's event counter (1 for the first).
        assert_eq!(listener.recv_bytes().await, ids.apply(&captured(f, 3)));
        assert_eq!(sender.recv_bytes().await, captured(f, 4).encode().unwrap());
        // The listener's STATUS (peer 0) goes nowhere; the bus keeps working.
        listener.send(&ids.apply(&captured(f, 5))).await;
        sender.send(&captured(f, 2).encode().unwrap()).await;
        let second = listener.recv().await;
        assert_eq!(second.header.seq, 2);
        assert_eq!(second.method(), Some("demo.event"));
        assert_eq!(
            broker.sent_events().len(),
            2,
            "both sends reached the broker"
        );
    });
}
