//! The ubus methods of `pathosd` (api::ubus_methods) end to end: the real ubus
//! client registered on the in-tree broker, `serve_ubus` answering through a
//! ControlHandle to a fake owner task, and a second connection built from the
//! codec playing `ubus call` / `ubus listen`. Every wait is bounded.

#[path = "api_fixture.rs"]
mod fixture;

use fixture::*;
use pathosd::api::status::status_json;
use pathosd::api::ubus_methods::{peer_event, serve_ubus, vip_event};
use pathosd::ubus::blob::{table_from_json, table_to_json};
use pathosd::ubus::broker::{Broker, BrokerConfig};
use pathosd::ubus::client::{UbusClient, UbusConfig, UbusHandle, EVENT_PEER, EVENT_VIP};
use pathosd::ubus::msg::{FrameBuf, Message, MsgType, UbusStatus};
use serde_json::{json, Value};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::unix::UnixStream;
use smol::{future, Timer};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const STEP: Duration = Duration::from_secs(5);

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("pathosd-apiubus-{}-{name}", std::process::id()));
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

async fn within<T>(what: &str, d: Duration, f: impl Future<Output = T>) -> T {
    future::or(f, async {
        Timer::after(d).await;
        panic!("timed out: {what}")
    })
    .await
}

/// Polls `cond` until it holds or the deadline passes (waiting on a timer between polls).
async fn poll_until(what: &str, d: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + d;
    while !cond() {
        assert!(Instant::now() < end, "timed out: {what}");
        Timer::after(Duration::from_millis(10)).await;
    }
}

/// `ubus call` / `ubus listen` built from our codec.
struct Caller {
    stream: UnixStream,
    fb: FrameBuf,
    seq: u16,
    listen_obj: Option<u32>,
}

impl Caller {
    async fn connect(path: &Path) -> Caller {
        let stream = within("connect", STEP, UnixStream::connect(path))
            .await
            .unwrap();
        let mut c = Caller {
            stream,
            fb: FrameBuf::new(),
            seq: 0,
            listen_obj: None,
        };
        let hello = c.recv().await;
        assert_eq!(hello.header.ty, MsgType::Hello);
        assert_ne!(hello.header.peer, 0);
        c
    }

    async fn recv(&mut self) -> Message {
        within("message from broker", STEP, async {
            let mut buf = [0u8; 4096];
            loop {
                if let Some(fr) = self.fb.next_frame().unwrap() {
                    return Message::decode(&fr).unwrap();
                }
                let n = self.stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "broker closed");
                self.fb.push(&buf[..n]);
            }
        })
        .await
    }

    async fn send(&mut self, m: &Message) {
        self.stream.write_all(&m.encode().unwrap()).await.unwrap();
    }

    fn next_seq(&mut self) -> u16 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// DATA messages then the STATUS code for `seq`.
    async fn collect(&mut self, seq: u16) -> (Vec<Message>, u32) {
        let mut data = Vec::new();
        loop {
            let m = self.recv().await;
            if m.header.seq != seq {
                continue;
            }
            match m.header.ty {
                MsgType::Data => data.push(m),
                MsgType::Status => return (data, m.status().unwrap()),
                t => panic!("unexpected {t:?}"),
            }
        }
    }

    async fn lookup(&mut self, path: &str) -> Result<Message, u32> {
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
    async fn call(&mut self, path: &str, method: &str, args: Value) -> Result<Option<Value>, u32> {
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

    async fn listen(&mut self, pattern: &str) {
        let seq = self.next_seq();
        self.send(&Message::new(MsgType::AddObject, seq, 0, vec![]))
            .await;
        let (data, st) = self.collect(seq).await;
        assert_eq!(st, 0);
        let obj = data[0].objid().unwrap();
        assert_eq!(data[0].objtype(), None, "anonymous object has no type");
        let seq = self.next_seq();
        self.send(&Message::event_register(seq, obj, pattern)).await;
        assert_eq!(self.collect(seq).await.1, 0);
        self.listen_obj = Some(obj);
    }

    async fn next_event(&mut self) -> (String, Value) {
        loop {
            let m = self.recv().await;
            if m.header.ty != MsgType::Invoke {
                continue;
            }
            assert_eq!(m.header.peer, 0);
            assert_eq!(m.objid(), self.listen_obj);
            let reply = Message::status_msg(m.header.seq, 0, UbusStatus::Ok, m.objid());
            self.send(&reply).await;
            return (
                m.method().unwrap().to_string(),
                table_to_json(m.data().unwrap()),
            );
        }
    }
}

struct Running {
    handle: UbusHandle,
    owner: FakeOwner,
    _tasks: Vec<smol::Task<()>>,
}

async fn start(sock: &Path, probe_time: Duration) -> Running {
    let cfg = UbusConfig {
        socket_path: sock.to_path_buf(),
        backoff_min: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
        ..UbusConfig::default()
    };
    let (client, handle, requests) = UbusClient::new(cfg);
    let owner = start_owner(probe_time);
    let tasks = vec![
        smol::spawn(client.run()),
        smol::spawn(serve_ubus(requests, owner.ctl.clone())),
    ];
    poll_until("client registered", STEP, || {
        handle.status().objid.is_some()
    })
    .await;
    Running {
        handle,
        owner,
        _tasks: tasks,
    }
}

const INVALID_ARGUMENT: u32 = 2;
const METHOD_NOT_FOUND: u32 = 3;
const NOT_FOUND: u32 = 4;

#[test]
fn status_and_vip() {
    let dir = TempDir::new("status");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let _r = start(&dir.sock(), Duration::from_millis(1)).await;
        let mut c = Caller::connect(broker.path()).await;
        let got = c
            .call("pathosd", "status", json!({}))
            .await
            .unwrap()
            .unwrap();
        // Through blobmsg and back, the document is the /status one.
        assert_eq!(got, status_json(&snapshot()));
        assert_eq!(
            got["vips"][0]["checks"][0]["last_check_duration_ms"],
            12.345
        );

        let v = c
            .call("pathosd", "vip", json!({"name": "db"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v["state_name"], "withdrawn");
        assert_eq!(v["checks"][0]["name"], "tcp");
        assert_eq!(
            c.call("pathosd", "vip", json!({"name": "nope"})).await,
            Err(NOT_FOUND)
        );
        assert_eq!(
            c.call("pathosd", "vip", json!({})).await,
            Err(INVALID_ARGUMENT)
        );
        assert_eq!(
            c.call("pathosd", "vip", json!({"name": 5})).await,
            Err(INVALID_ARGUMENT)
        );
        assert_eq!(
            c.call("pathosd", "frobnicate", json!({})).await,
            Err(METHOD_NOT_FOUND)
        );
    });
}

#[test]
fn check_drain_and_reload() {
    let dir = TempDir::new("methods");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let r = start(&dir.sock(), Duration::from_millis(1)).await;
        let mut c = Caller::connect(broker.path()).await;

        let v = c
            .call("pathosd", "check", json!({"vip": "web"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v["vip"], "web");
        assert_eq!(v["state"], "announced");
        assert_eq!(v["result"]["success"], true);
        assert_eq!(v["results"].as_object().unwrap().len(), 3);
        assert_eq!(v["results"]["web"]["details"]["status_code"], 200);
        let v = c
            .call("pathosd", "check", json!({"vip": "web", "check": "dns"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v["results"].as_object().unwrap().len(), 1);
        assert_eq!(v["results"]["dns"]["details"]["answers"][0], "192.0.2.1");
        assert_eq!(
            c.call("pathosd", "check", json!({"vip": "nope"})).await,
            Err(NOT_FOUND)
        );
        assert_eq!(
            c.call("pathosd", "check", json!({"vip": "web", "check": "nope"}))
                .await,
            Err(NOT_FOUND)
        );
        assert_eq!(
            c.call("pathosd", "check", json!({})).await,
            Err(INVALID_ARGUMENT)
        );

        // `ubus call pathosd drain '{"vip":"web","enable":true}'` sends INT8.
        let v = c
            .call("pathosd", "drain", json!({"vip": "web", "enable": true}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            v,
            json!({"vip": "web", "drain": true, "state": "pessimized"})
        );
        assert!(r.owner.snapshot.lock().unwrap().vips[0].drain_api);
        let v = c
            .call("pathosd", "drain", json!({"vip": "web", "enable": false}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            v,
            json!({"vip": "web", "drain": false, "state": "announced"})
        );
        assert_eq!(
            c.call("pathosd", "drain", json!({"vip": "web"})).await,
            Err(INVALID_ARGUMENT)
        );
        assert_eq!(
            c.call("pathosd", "drain", json!({"vip": "nope", "enable": true}))
                .await,
            Err(NOT_FOUND)
        );

        let v = c
            .call("pathosd", "reload", json!({}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v, json!({"reloaded": true}));
        *r.owner.reload_errors.lock().unwrap() = vec!["vips[0].prefix: bad".into()];
        assert_eq!(
            c.call("pathosd", "reload", json!({})).await,
            Err(INVALID_ARGUMENT)
        );
        assert_eq!(
            r.owner
                .log
                .reloads
                .load(std::sync::atomic::Ordering::SeqCst),
            2
        );
    });
}

#[test]
fn slow_trigger_does_not_hold_up_status() {
    let dir = TempDir::new("slow");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let r = start(&dir.sock(), Duration::from_millis(1500)).await;
        let log = r.owner.log.clone();
        let mut slow = Caller::connect(broker.path()).await;
        let mut fast = Caller::connect(broker.path()).await;
        let trigger = async {
            let v = slow
                .call("pathosd", "check", json!({"vip": "db"}))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(v["vip"], "db");
            Instant::now()
        };
        let status = async {
            // Ask once the check is running in the owner.
            poll_until("trigger reached the owner", STEP, || {
                log.triggers.load(std::sync::atomic::Ordering::SeqCst) == 1
            })
            .await;
            let v = fast.call("pathosd", "status", json!({})).await.unwrap();
            assert!(v.is_some());
            Instant::now()
        };
        let (t_done, s_done) = future::zip(trigger, status).await;
        assert!(s_done < t_done, "status answered while the check ran");
    });
}

#[test]
fn vip_and_peer_events_reach_listeners() {
    let dir = TempDir::new("events");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    smol::block_on(async {
        let r = start(&dir.sock(), Duration::from_millis(1)).await;
        let mut l = Caller::connect(broker.path()).await;
        l.listen("pathosd.*").await;
        let addr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        r.handle.send_event(
            EVENT_VIP,
            vip_event(
                "web",
                "10.10.1.1/32",
                "announced",
                "withdrawn",
                "web: fall threshold reached",
            ),
        );
        r.handle.send_event(
            EVENT_PEER,
            peer_event("frr", addr, "established", "idle", "Hold Timer Expired"),
        );
        assert_eq!(
            l.next_event().await,
            (
                "pathosd.vip".to_string(),
                json!({"vip": "web", "prefix": "10.10.1.1/32", "from": "announced",
                       "to": "withdrawn", "reason": "web: fall threshold reached"})
            )
        );
        assert_eq!(
            l.next_event().await,
            (
                "pathosd.peer".to_string(),
                json!({"peer": "frr", "address": "127.0.0.2", "from": "established",
                       "to": "idle", "reason": "Hold Timer Expired"})
            )
        );
        assert_eq!(broker.sent_events().len(), 2);
    });
}
