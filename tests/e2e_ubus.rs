//! The real daemon on the in-tree ubus broker (api.ubus_socket pointing at
//! it): `ubus call pathosd status` answers from the running daemon, and a
//! VIP transition arrives as a `pathosd.vip` event at a listener. The caller
//! and listener are built from pathosd's own ubus codec.

mod support;

use pathosd::ubus::blob::{table_from_json, table_to_json};
use pathosd::ubus::broker::{Broker, BrokerConfig};
use pathosd::ubus::msg::{FrameBuf, Message, MsgType, UbusStatus};
use serde_json::{json, Value};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::unix::UnixStream;
use smol::{future, Timer};
use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};
use support::daemon::{is_announced, policy, Setup};
use support::TempDir;

const STEP: Duration = Duration::from_secs(5);

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    future::or(f, async {
        Timer::after(STEP).await;
        panic!("timed out: {what}")
    })
    .await
}

/// `ubus call` / `ubus listen`.
struct Caller {
    stream: UnixStream,
    fb: FrameBuf,
    seq: u16,
    listen_obj: Option<u32>,
}

impl Caller {
    async fn connect(path: &Path) -> Caller {
        let stream = within("connect", UnixStream::connect(path)).await.unwrap();
        let mut c = Caller {
            stream,
            fb: FrameBuf::new(),
            seq: 0,
            listen_obj: None,
        };
        assert_eq!(c.recv().await.header.ty, MsgType::Hello);
        c
    }

    async fn recv(&mut self) -> Message {
        within("message from the broker", async {
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

    /// DATA messages, then the STATUS code, for `seq` (events in between
    /// are answered and kept).
    async fn collect(
        &mut self,
        seq: u16,
        events: &mut Vec<(String, Value)>,
    ) -> (Vec<Message>, u32) {
        let mut data = Vec::new();
        loop {
            let m = self.recv().await;
            if m.header.ty == MsgType::Invoke && m.header.peer == 0 {
                events.push(self.ack_event(m).await);
                continue;
            }
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

    async fn ack_event(&mut self, m: Message) -> (String, Value) {
        let reply = Message::status_msg(m.header.seq, 0, UbusStatus::Ok, m.objid());
        self.send(&reply).await;
        (
            m.method().unwrap().to_string(),
            table_to_json(m.data().unwrap()),
        )
    }

    /// Calls `path`.`method`: the reply table, or the non-zero status.
    async fn call(
        &mut self,
        path: &str,
        method: &str,
        args: Value,
        events: &mut Vec<(String, Value)>,
    ) -> Result<Option<Value>, u32> {
        let seq = self.next_seq();
        self.send(&Message::lookup(seq, Some(path))).await;
        let (data, st) = self.collect(seq, events).await;
        if st != 0 {
            return Err(st);
        }
        let obj = data[0].objid().unwrap();
        let seq = self.next_seq();
        let args = table_from_json(&args).unwrap();
        self.send(&Message::invoke(seq, obj, method, args)).await;
        let (data, st) = self.collect(seq, events).await;
        match st {
            0 => Ok(data.first().map(|d| table_to_json(d.data().unwrap()))),
            s => Err(s),
        }
    }

    async fn listen(&mut self, pattern: &str) {
        let mut ev = Vec::new();
        let seq = self.next_seq();
        self.send(&Message::new(MsgType::AddObject, seq, 0, vec![]))
            .await;
        let (data, st) = self.collect(seq, &mut ev).await;
        assert_eq!(st, 0);
        let obj = data[0].objid().unwrap();
        let seq = self.next_seq();
        self.send(&Message::event_register(seq, obj, pattern)).await;
        assert_eq!(self.collect(seq, &mut ev).await.1, 0);
        self.listen_obj = Some(obj);
    }

    async fn next_event(&mut self) -> (String, Value) {
        loop {
            let m = self.recv().await;
            if m.header.ty == MsgType::Invoke && m.header.peer == 0 {
                assert_eq!(m.objid(), self.listen_obj);
                return self.ack_event(m).await;
            }
        }
    }
}

#[test]
fn ubus_status_from_the_real_daemon_and_vip_events() {
    let n = 17;
    let dir = TempDir::new("e2e-ubus");
    let sock = dir.path("ubus.sock");
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let p = format!("10.{}.0.1/32", 200 + n);
    let check = json!({"type": "exec", "interval": "300ms", "timeout": "200ms", "rise": 1, "fall": 2,
                       "exec": {"command": "/usr/bin/test", "args": ["-e", up.display().to_string()]}});
    let vips = json!([{"name": "web", "prefix": p, "check": check, "policy": policy("withdraw")}]);
    let s = Setup::start(n, vips, |c| {
        c["api"]["ubus_socket"] = json!(sock.display().to_string())
    });
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);

    smol::block_on(async {
        let mut listener = Caller::connect(&sock).await;
        listener.listen("pathosd.*").await;
        let mut caller = Caller::connect(&sock).await;
        let mut stray = Vec::new();

        // The daemon registers `pathosd` after its start; wait for it.
        let end = Instant::now() + STEP;
        let status = loop {
            match caller
                .call("pathosd", "status", json!({}), &mut stray)
                .await
            {
                Ok(Some(v)) => break v,
                Err(4) if Instant::now() < end => Timer::after(Duration::from_millis(50)).await,
                r => panic!("status: {r:?}\n{}", s.d.log()),
            };
        };
        assert_eq!(status["asn"], 65001, "{status}");
        assert_eq!(status["router_id"], s.a.ours.to_string(), "{status}");
        assert_eq!(status["vips"][0]["name"], "web", "{status}");
        assert_eq!(status["vips"][0]["state_name"], "announced", "{status}");
        assert_eq!(status["peers"][0]["name"], "bird", "{status}");
        assert_eq!(
            status["peers"][0]["session_state"], "established",
            "{status}"
        );

        let vip = caller
            .call("pathosd", "vip", json!({"name": "web"}), &mut stray)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(vip["prefix"], p.as_str(), "{vip}");

        // The target goes: fall 2, then a pathosd.vip event.
        std::fs::remove_file(&up).unwrap();
        let (id, ev) = loop {
            let (id, ev) = listener.next_event().await;
            if id == "pathosd.vip" {
                break (id, ev);
            }
        };
        assert_eq!(id, "pathosd.vip");
        assert_eq!(
            ev,
            json!({"vip": "web", "prefix": p, "from": "announced", "to": "withdrawn",
                   "reason": "exec: fall threshold reached"})
        );

        // A runtime drain through ubus answers from the daemon too.
        std::fs::write(&up, "").unwrap();
        let (_, ev) = loop {
            let e = listener.next_event().await;
            if e.0 == "pathosd.vip" {
                break e;
            }
        };
        assert_eq!(ev["to"], "announced", "{ev}");
        let r = caller
            .call(
                "pathosd",
                "drain",
                json!({"vip": "web", "enable": true}),
                &mut stray,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            json!({"vip": "web", "drain": true, "state": "pessimized"})
        );
        let (_, ev) = listener.next_event().await;
        assert_eq!(ev["to"], "pessimized", "{ev}");
        assert_eq!(ev["reason"], "drain enabled via API", "{ev}");
    });
    s.wait_route(&p, "drained via ubus", support::daemon::is_pessimized);
}
