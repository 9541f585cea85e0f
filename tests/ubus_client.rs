//! The ubus client against the in-tree broker on a unix socket in a temp dir. A second
//! connection built from the codec plays `ubus call` / `ubus listen`. No sleeps: every
//! wait is a poll or a receive bounded by a deadline.

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pathosd::ubus::blob::{table_from_json, BlobMsgType, BlobValue};
use pathosd::ubus::client::{pathosd_methods, serve, Requests, UbusClient, UbusConfig, UbusHandle};
use pathosd::ubus::msg::{signature, Message, MsgType, UbusStatus};
use serde_json::{json, Value};
use smol::{future, Timer};
use support::ubus::{captured_bytes, poll_until, within, Caller, Frames, STEP};
use support::ubus_broker::{Broker, BrokerConfig};
use support::TempDir;

/// A fake daemon: answers like pathosd would and records what it was asked.
fn fake_handler(
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) -> impl Fn(&str, Value) -> Result<Value, UbusStatus> {
    move |method: &str, args: Value| {
        seen.lock()
            .unwrap()
            .push((method.to_string(), args.clone()));
        match method {
            "status" => Ok(json!({"vips": [{"name": "web", "state": "announced"}], "up": true})),
            "vip" => match args.get("name").and_then(Value::as_str) {
                Some("web") => Ok(json!({"name": "web", "state": "announced", "checks": 2})),
                Some(_) => Err(UbusStatus::NotFound),
                None => Err(UbusStatus::InvalidArgument),
            },
            "check" => match (args.get("vip"), args.get("check")) {
                (Some(v), Some(c)) => Ok(json!({"vip": v, "check": c, "healthy": true, "rise": 2})),
                _ => Err(UbusStatus::InvalidArgument),
            },
            "drain" => match (args.get("vip"), args.get("enable").and_then(Value::as_bool)) {
                (Some(v), Some(e)) => Ok(json!({"vip": v, "drained": e})),
                _ => Err(UbusStatus::InvalidArgument),
            },
            "reload" => Ok(Value::Null),
            _ => Err(UbusStatus::UnknownError),
        }
    }
}

/// A daemon that takes every call and answers none, as the owner does once
/// it is stopping: the task holding the calls, and a message per call taken.
fn hold_every_call(requests: Requests) -> (smol::Task<()>, smol::channel::Receiver<()>) {
    let (seen_tx, seen) = smol::channel::unbounded::<()>();
    let task = pathosd::rt::spawn(async move {
        let mut held = Vec::new();
        while let Ok(req) = requests.recv().await {
            held.push(req);
            let _ = seen_tx.send(()).await;
        }
    });
    (task, seen)
}

struct Running {
    handle: UbusHandle,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    _tasks: Vec<smol::Task<()>>,
}

fn start_client(sock: &Path, queue: usize) -> Running {
    let cfg = UbusConfig {
        socket_path: sock.to_path_buf(),
        backoff_min: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
        event_queue: queue,
        ..UbusConfig::default()
    };
    let (client, handle, requests) = UbusClient::new(cfg);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tasks = vec![
        pathosd::rt::spawn(client.run()),
        pathosd::rt::spawn(serve(requests, fake_handler(seen.clone()))),
    ];
    Running {
        handle,
        seen,
        _tasks: tasks,
    }
}

async fn wait_registered(r: &Running, times: u32) {
    poll_until("client registered", STEP, || {
        let s = r.handle.status();
        s.registrations >= times && s.objid.is_some()
    })
    .await;
}

#[test]
fn calls_replies_and_errors() {
    let dir = TempDir::new("calls");
    let broker = Broker::start(
        &dir.sock(),
        BrokerConfig {
            deny_invoke: vec![("pathosd".into(), "reload".into())],
            ..BrokerConfig::default()
        },
    )
    .unwrap();
    pathosd::rt::block_on(async {
        let r = start_client(&dir.sock(), 8);
        wait_registered(&r, 1).await;
        let mut c = Caller::connect(broker.path()).await;

        // `ubus -v list pathosd`: our signature (minus the denied method).
        let obj = c.lookup("pathosd").await.unwrap();
        assert_eq!(obj.objid(), r.handle.status().objid);
        assert!(obj.objtype().is_some());
        let mut want = signature(&pathosd_methods());
        want.retain(|(m, _)| m != "reload");
        assert_eq!(obj.signature(), Some(&want));
        let drain = &want.iter().find(|(m, _)| m == "drain").unwrap().1;
        assert_eq!(
            drain,
            &BlobValue::Table(vec![
                ("vip".into(), BlobValue::Int32(BlobMsgType::String as i32)),
                ("enable".into(), BlobValue::Int32(7)),
            ])
        );

        assert_eq!(
            c.call("pathosd", "status", json!({})).await,
            Ok(Some(
                json!({"vips": [{"name": "web", "state": "announced"}], "up": true})
            ))
        );
        assert_eq!(
            c.call("pathosd", "vip", json!({"name": "web"})).await,
            Ok(Some(
                json!({"name": "web", "state": "announced", "checks": 2})
            ))
        );
        assert_eq!(
            c.call("pathosd", "check", json!({"vip": "web", "check": "http"}))
                .await,
            Ok(Some(
                json!({"vip": "web", "check": "http", "healthy": true, "rise": 2})
            ))
        );
        // bool travels as blobmsg INT8 and reaches the daemon as a JSON bool.
        assert_eq!(
            c.call("pathosd", "drain", json!({"vip": "web", "enable": true}))
                .await,
            Ok(Some(json!({"vip": "web", "drained": true})))
        );
        // Unknown method: the client (as libubus) answers 3.
        assert_eq!(c.call("pathosd", "nosuch", json!({})).await, Err(3));
        // Wrong argument type (string policy, INT32 given): 2, never reaches the daemon.
        let before = r.seen.lock().unwrap().len();
        assert_eq!(c.call("pathosd", "vip", json!({"name": 5})).await, Err(2));
        assert_eq!(r.seen.lock().unwrap().len(), before);
        // Missing argument: the daemon says INVALID_ARGUMENT.
        assert_eq!(c.call("pathosd", "vip", json!({})).await, Err(2));
        assert_eq!(
            c.call("pathosd", "vip", json!({"name": "db"})).await,
            Err(4)
        );
        // Broker rules: unknown object 4, ACL-denied method 6.
        assert_eq!(c.call("nosuch", "foo", json!({})).await, Err(4));
        assert_eq!(c.call("pathosd", "reload", json!({})).await, Err(6));

        let seen = r.seen.lock().unwrap().clone();
        assert_eq!(seen[0], ("status".to_string(), json!({})));
        assert_eq!(
            seen[3],
            ("drain".to_string(), json!({"vip": "web", "enable": true}))
        );
        assert!(!seen.iter().any(|(m, _)| m == "reload" || m == "nosuch"));
    });
    drop(broker);
}

#[test]
fn reply_without_data_and_publish_conflicts() {
    let dir = TempDir::new("reload");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let r = start_client(&dir.sock(), 8);
        wait_registered(&r, 1).await;
        let mut c = Caller::connect(broker.path()).await;
        // Ok(Null) -> STATUS 0 alone, like a libubus handler that sends no reply.
        assert_eq!(c.call("pathosd", "reload", json!({})).await, Ok(None));
        // A second `pathosd` is refused with 2 (ubusd: duplicate path).
        let seq = c.next_seq();
        c.send(&Message::add_object(seq, "pathosd", &pathosd_methods()))
            .await;
        assert_eq!(c.collect(seq).await, (vec![], 2));
        // An INVOKE of an object id the client does not own never reaches it.
        let seq = c.next_seq();
        c.send(&Message::invoke(seq, 0x1234_5678, "status", vec![]))
            .await;
        assert_eq!(c.collect(seq).await.1, 4);
    });
}

#[test]
fn events_are_delivered_to_listeners() {
    let dir = TempDir::new("events");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let r = start_client(&dir.sock(), 8);
        wait_registered(&r, 1).await;
        let mut all = Caller::connect(broker.path()).await;
        all.listen("pathosd.*").await;
        let mut other = Caller::connect(broker.path()).await;
        other.listen("other.event").await;

        r.handle.send_event(
            "pathosd.vip",
            json!({"vip": "web", "state": "announced", "prefix": "192.0.2.1/32"}),
        );
        r.handle.send_event(
            "pathosd.peer",
            json!({"peer": "127.0.0.2", "state": "established"}),
        );
        assert_eq!(
            all.next_event().await,
            (
                "pathosd.vip".to_string(),
                json!({"vip": "web", "state": "announced", "prefix": "192.0.2.1/32"})
            )
        );
        assert_eq!(
            all.next_event().await,
            (
                "pathosd.peer".to_string(),
                json!({"peer": "127.0.0.2", "state": "established"})
            )
        );
        // The other listener got neither: the first event it sees is its own.
        let mut sender = Caller::connect(broker.path()).await;
        let seq = sender.next_seq();
        sender
            .send(&Message::event_send(
                seq,
                "other.event",
                table_from_json(&json!({"x": 1})).unwrap(),
            ))
            .await;
        assert_eq!(sender.collect(seq).await.1, 0);
        assert_eq!(
            other.next_event().await,
            ("other.event".to_string(), json!({"x": 1}))
        );
    });
}

/// A listener that makes a call while an event is on its way gets the reply
/// and still the event, in order: the caller keeps what arrives in between.
#[test]
fn an_event_arriving_during_a_call_is_kept_for_next_event() {
    let dir = TempDir::new("event-during-call");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let r = start_client(&dir.sock(), 8);
        wait_registered(&r, 1).await;
        let mut l = Caller::connect(broker.path()).await;
        l.listen("demo.*").await;
        let mut sender = Caller::connect(broker.path()).await;
        for x in 1..=2 {
            let seq = sender.next_seq();
            let data = table_from_json(&json!({ "x": x })).unwrap();
            sender
                .send(&Message::event_send(seq, "demo.event", data))
                .await;
            // The broker has queued the delivery to `l` before this STATUS,
            // so it reaches `l` ahead of the replies to the call below.
            assert_eq!(sender.collect(seq).await.1, 0);
        }
        assert_eq!(
            l.call("pathosd", "vip", json!({"name": "web"})).await,
            Ok(Some(
                json!({"name": "web", "state": "announced", "checks": 2})
            ))
        );
        for x in 1..=2 {
            assert_eq!(
                l.next_event().await,
                ("demo.event".to_string(), json!({ "x": x }))
            );
        }
    });
}

#[test]
fn reconnects_and_registers_again_after_broker_restart() {
    let dir = TempDir::new("restart");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let r = start_client(&dir.sock(), 8);
        wait_registered(&r, 1).await;
        let first = r.handle.status().objid;

        broker.stop();
        poll_until("client noticed ubusd is gone", STEP, || {
            !r.handle.status().connected
        })
        .await;
        // Events while down are kept, not blocking.
        r.handle
            .send_event("pathosd.vip", json!({"vip": "web", "state": "withdrawn"}));

        let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
        wait_registered(&r, 2).await;
        assert_ne!(r.handle.status().objid, first, "new ubusd, new object id");
        let mut c = Caller::connect(broker.path()).await;
        assert_eq!(
            c.call("pathosd", "vip", json!({"name": "web"})).await,
            Ok(Some(
                json!({"name": "web", "state": "announced", "checks": 2})
            ))
        );
        poll_until("queued event flushed", STEP, || {
            broker.sent_events()
                == vec![(
                    "pathosd.vip".to_string(),
                    json!({"vip": "web", "state": "withdrawn"}),
                )]
        })
        .await;
    });
}

#[test]
fn absent_broker_never_blocks_and_drops_oldest_events() {
    let dir = TempDir::new("absent");
    pathosd::rt::block_on(async {
        let r = start_client(&dir.sock(), 4);
        for i in 0..10 {
            r.handle.send_event("pathosd.vip", json!({"n": i}));
        }
        let s = r.handle.status();
        assert!(!s.connected);
        assert_eq!(s.objid, None);
        assert_eq!(s.events_dropped, 6);
        // It keeps retrying (bounded backoff) while the caller goes on.
        poll_until("several connect attempts", STEP, || {
            r.handle.status().connect_attempts >= 3
        })
        .await;
        assert_eq!(r.handle.status().registrations, 0);

        let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
        wait_registered(&r, 1).await;
        let want: Vec<(String, Value)> = (6..10)
            .map(|i| ("pathosd.vip".to_string(), json!({"n": i})))
            .collect();
        poll_until("newest 4 events delivered", STEP, || {
            broker.sent_events() == want
        })
        .await;
    });
}

#[test]
fn shutdown_removes_the_object() {
    let dir = TempDir::new("shutdown");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let cfg = UbusConfig {
            socket_path: dir.sock(),
            ..UbusConfig::default()
        };
        let (client, handle, _requests) = UbusClient::new(cfg);
        let task = pathosd::rt::spawn(client.run());
        poll_until("registered", STEP, || handle.status().objid.is_some()).await;
        let mut c = Caller::connect(broker.path()).await;
        assert!(c.lookup("pathosd").await.is_ok());
        handle.shutdown();
        within("run() returns after shutdown", STEP, task).await;
        // REMOVE_OBJECT and our LOOKUP travel on different connections: poll.
        let end = Instant::now() + STEP;
        loop {
            match c.lookup("pathosd").await {
                Err(4) => break,
                _ => assert!(Instant::now() < end, "object still registered"),
            }
            Timer::after(Duration::from_millis(10)).await;
        }
    });
}

#[test]
fn unanswered_calls_time_out_and_dropped_replies_fail() {
    let dir = TempDir::new("timeout");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let cfg = UbusConfig {
            socket_path: dir.sock(),
            reply_timeout: Duration::from_millis(200),
            ..UbusConfig::default()
        };
        let (client, handle, requests) = UbusClient::new(cfg);
        let _client = pathosd::rt::spawn(client.run());
        // A daemon that sits on `status` and drops `vip` unanswered.
        let _daemon = pathosd::rt::spawn(async move {
            let mut held = Vec::new();
            while let Ok(req) = requests.recv().await {
                match req.method.as_str() {
                    "status" => held.push(req),
                    _ => drop(req),
                }
            }
        });
        poll_until("registered", STEP, || handle.status().objid.is_some()).await;
        let mut c = Caller::connect(broker.path()).await;
        let t0 = Instant::now();
        assert_eq!(c.call("pathosd", "status", json!({})).await, Err(7));
        assert!(t0.elapsed() >= Duration::from_millis(200));
        assert_eq!(c.call("pathosd", "vip", json!({"name": "x"})).await, Err(9));
        // The connection is still healthy afterwards.
        assert_eq!(c.call("pathosd", "nosuch", json!({})).await, Err(3));
    });
}

/// A handler learns when the client stops waiting for its answer: after the
/// TIMEOUT the caller got, `UbusReply::abandoned` resolves (so the daemon can
/// free what the call holds); while the caller waits it does not.
#[test]
fn a_timed_out_call_is_abandoned_for_the_handler() {
    let dir = TempDir::new("abandoned");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let cfg = UbusConfig {
            socket_path: dir.sock(),
            reply_timeout: Duration::from_millis(300),
            ..UbusConfig::default()
        };
        let (client, handle, requests) = UbusClient::new(cfg);
        let _client = pathosd::rt::spawn(client.run());
        let (gave_up_tx, gave_up) = smol::channel::bounded::<Duration>(1);
        let _daemon = pathosd::rt::spawn(async move {
            while let Ok(req) = requests.recv().await {
                let t0 = Instant::now();
                req.reply.abandoned().await;
                let _ = gave_up_tx.send(t0.elapsed()).await;
                // Too late: discarded, the caller already has its TIMEOUT.
                req.reply.send(Ok(json!({"late": true})));
            }
        });
        poll_until("registered", STEP, || handle.status().objid.is_some()).await;
        let mut c = Caller::connect(broker.path()).await;
        assert_eq!(c.call("pathosd", "status", json!({})).await, Err(7));
        let waited = within("abandoned() resolves", STEP, gave_up.recv())
            .await
            .unwrap();
        assert!(waited >= Duration::from_millis(250), "{waited:?}");
        // The connection is still healthy afterwards.
        assert_eq!(c.call("pathosd", "nosuch", json!({})).await, Err(3));
    });
}

/// At most `request_queue` calls wait for the daemon's answer; one more is
/// answered UNKNOWN_ERROR at once instead of waiting.
#[test]
fn unanswered_calls_are_bounded_by_request_queue() {
    let dir = TempDir::new("queue");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let cfg = UbusConfig {
            socket_path: dir.sock(),
            request_queue: 2,
            reply_timeout: Duration::from_secs(3),
            ..UbusConfig::default()
        };
        let (client, handle, requests) = UbusClient::new(cfg);
        let _client = pathosd::rt::spawn(client.run());
        let (_daemon, seen) = hold_every_call(requests);
        poll_until("registered", STEP, || handle.status().objid.is_some()).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut c = Caller::connect(broker.path()).await;
            held.push(pathosd::rt::spawn(async move {
                c.call("pathosd", "status", json!({})).await
            }));
            within("the daemon got the call", STEP, seen.recv())
                .await
                .unwrap();
        }
        let mut c = Caller::connect(broker.path()).await;
        let t0 = Instant::now();
        assert_eq!(c.call("pathosd", "status", json!({})).await, Err(9));
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        for h in held {
            assert_eq!(h.await, Err(7));
        }
    });
}

/// Events queued just before `shutdown` reach a listener, and `stopped`
/// says when that is done: on a broker slow to come to the socket (a busy
/// ubusd) they are read only if the client has not closed by then, since
/// ubusd reads nothing from a connection it has seen closed.
#[test]
fn shutdown_sends_queued_events_first() {
    let dir = TempDir::new("shutdown-events");
    let broker = Broker::start(
        &dir.sock(),
        BrokerConfig {
            latency: Duration::from_millis(50),
            ..BrokerConfig::default()
        },
    )
    .unwrap();
    pathosd::rt::block_on(async {
        let cfg = UbusConfig {
            socket_path: dir.sock(),
            ..UbusConfig::default()
        };
        let (client, handle, _requests) = UbusClient::new(cfg);
        let task = pathosd::rt::spawn(client.run());
        poll_until("registered", STEP, || handle.status().objid.is_some()).await;
        let mut l = Caller::connect(broker.path()).await;
        l.listen("pathosd.*").await;
        for i in 0..3 {
            handle.send_event("pathosd.vip", json!({ "n": i }));
        }
        handle.shutdown();
        within("stopped() after shutdown", STEP, handle.stopped()).await;
        // The daemon exits here: its end of the connection closes.
        within("run() returns", STEP, task).await;
        for i in 0..3 {
            assert_eq!(l.next_event().await.1, json!({ "n": i }));
        }
        assert_eq!(broker.sent_events().len(), 3);
    });
}

/// A call the daemon has not answered when it stops is answered 9 before
/// the object goes (after REMOVE_OBJECT ubusd would drop the answer and the
/// caller would wait out its own timeout).
#[test]
fn a_call_in_flight_at_the_stop_is_answered() {
    let dir = TempDir::new("stop-calls");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let cfg = UbusConfig {
            socket_path: dir.sock(),
            reply_timeout: Duration::from_secs(30),
            ..UbusConfig::default()
        };
        let (client, handle, requests) = UbusClient::new(cfg);
        let _client = pathosd::rt::spawn(client.run());
        let (_daemon, seen) = hold_every_call(requests);
        poll_until("registered", STEP, || handle.status().objid.is_some()).await;
        let mut c = Caller::connect(broker.path()).await;
        let call =
            pathosd::rt::spawn(
                async move { c.call("pathosd", "check", json!({"vip": "web"})).await },
            );
        within("the daemon got the call", STEP, seen.recv())
            .await
            .unwrap();
        handle.shutdown();
        assert_eq!(within("the call's answer", STEP, call).await, Err(9));
        within("stopped() after shutdown", STEP, handle.stopped()).await;
    });
}

/// The client against a scripted ubusd that replays recorded ubusd bytes: what the
/// client writes back must be the bytes libubus wrote in the same situation.
#[test]
fn client_replays_recorded_ubusd_exchange_byte_for_byte() {
    let dir = TempDir::new("replay");
    pathosd::rt::block_on(async {
        let listener = smol::net::unix::UnixListener::bind(dir.sock()).unwrap();
        let r = start_client(&dir.sock(), 8);
        let (s, _) = within("client connects", STEP, listener.accept())
            .await
            .unwrap();
        let mut d = Frames::new(s, "client");
        // HELLO as ubusd sent it to the example server.
        d.send(&captured_bytes("03_add_object_with_signature.hex", 1))
            .await;
        // ADD_OBJECT: the libubus layout (checked against capture 03 in ubus_golden).
        let add = d.recv().await;
        assert_eq!(
            add,
            Message::add_object(1, "pathosd", &pathosd_methods())
                .encode()
                .unwrap()
        );
        // ubusd's DATA {OBJID 0x8419a1ab, OBJTYPE} + STATUS 0 for seq 1.
        d.send(&captured_bytes("03_add_object_with_signature.hex", 3))
            .await;
        d.send(&captured_bytes("03_add_object_with_signature.hex", 4))
            .await;
        wait_registered(&r, 1).await;
        assert_eq!(r.handle.status().objid, Some(0x8419a1ab));

        // Forwarded INVOKE of an unknown method -> exactly libubus' STATUS 3 {OBJID}.
        d.send(&captured_bytes("10_error_method_not_found.hex", 6))
            .await;
        assert_eq!(
            d.recv().await,
            captured_bytes("10_error_method_not_found.hex", 7)
        );

        // A forwarded INVOKE of `check` (USER/GROUP, seq 2, caller 0xe275577a): DATA
        // {OBJID, DATA} then exactly the example server's STATUS {0, OBJID}.
        let inv = Message::new(
            MsgType::Invoke,
            2,
            0xe275577a,
            vec![
                pathosd::ubus::msg::Attr::ObjId(0x8419a1ab),
                pathosd::ubus::msg::Attr::Method("check".into()),
                pathosd::ubus::msg::Attr::User("root".into()),
                pathosd::ubus::msg::Attr::Group("root".into()),
                pathosd::ubus::msg::Attr::Data(
                    table_from_json(&json!({"vip": "web", "check": "rc"})).unwrap(),
                ),
            ],
        );
        d.send(&inv.encode().unwrap()).await;
        let reply = json!({"vip": "web", "check": "rc", "healthy": true, "rise": 2});
        let want = Message::data_reply(2, 0xe275577a, 0x8419a1ab, table_from_json(&reply).unwrap());
        assert_eq!(d.recv().await, want.encode().unwrap());
        assert_eq!(
            d.recv().await,
            captured_bytes("08_call_count_immediate.hex", 8)
        );

        // An event: `ubus send demo.event '{"a":1,"s":"x"}'` bytes, with our seq (2).
        r.handle.send_event("demo.event", json!({"a": 1, "s": "x"}));
        let mut want = captured_bytes("14_event_send_and_delivery.hex", 2);
        want[2..4].copy_from_slice(&2u16.to_be_bytes());
        assert_eq!(d.recv().await, want);
        // ubusd's STATUS for it (peer 1) is consumed silently; the link stays up.
        let mut st = captured_bytes("14_event_send_and_delivery.hex", 4);
        st[2..4].copy_from_slice(&2u16.to_be_bytes());
        d.send(&st).await;
        d.send(&captured_bytes("10_error_method_not_found.hex", 6))
            .await;
        assert_eq!(
            d.recv().await,
            captured_bytes("10_error_method_not_found.hex", 7)
        );

        // The stop: REMOVE_OBJECT {OBJID} as libubus writes it, and the
        // client is done only once ubusd has answered it (DATA {OBJID,
        // OBJTYPE} and STATUS 0 with its seq and peer, as
        // ubusd_handle_remove_object and ubusd_proto_receive_message do).
        r.handle.shutdown();
        assert_eq!(
            d.recv().await,
            Message::remove_object(3, 0x8419a1ab).encode().unwrap()
        );
        assert!(
            future::poll_once(r.handle.stopped()).await.is_none(),
            "stopped before ubusd answered REMOVE_OBJECT"
        );
        let data = Message::new(
            MsgType::Data,
            3,
            0,
            vec![
                pathosd::ubus::msg::Attr::ObjId(0x8419a1ab),
                pathosd::ubus::msg::Attr::ObjType(0x143dd39b),
            ],
        );
        d.send(&data.encode().unwrap()).await;
        let st = Message::status_msg(3, 0, UbusStatus::Ok, None);
        d.send(&st.encode().unwrap()).await;
        within("stopped() once ubusd answered", STEP, r.handle.stopped()).await;
    });
}

#[test]
fn retries_while_another_pathosd_holds_the_name() {
    let dir = TempDir::new("dup");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let mut squatter = Caller::connect(broker.path()).await;
        let seq = squatter.next_seq();
        squatter
            .send(&Message::add_object(seq, "pathosd", &[]))
            .await;
        assert_eq!(squatter.collect(seq).await.1, 0);

        let r = start_client(&dir.sock(), 8);
        // Refused with 2 each time, and it keeps trying.
        poll_until("refused attempts", STEP, || {
            r.handle.status().connect_attempts >= 3
        })
        .await;
        assert_eq!(r.handle.status().registrations, 0);
        // The other instance goes away: its object goes with its connection.
        drop(squatter);
        wait_registered(&r, 1).await;
        let mut c = Caller::connect(broker.path()).await;
        let obj = c.lookup("pathosd").await.unwrap();
        assert_eq!(obj.signature(), Some(&signature(&pathosd_methods())));
    });
}
