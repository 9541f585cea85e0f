//! The test broker replayed against recorded ubusd traffic: raw client bytes from the
//! captures go in, and what comes out must be the bytes ubusd sent, once the random
//! client/object ids of the recording are mapped to the ones this broker assigned.
//! And the broker reads a client as ubusd does: nothing after a close it has seen.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pathosd::ubus::blob::{table_from_json, BlobValue};
use pathosd::ubus::msg::{Attr, Message, MsgType};
use serde_json::json;
use support::ubus::{captured, Caller, STEP};
use support::ubus_broker::{Broker, BrokerConfig};
use support::TempDir;

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

/// Registers the example server's `test` object from the recorded ADD_OBJECT and maps
/// the recorded objid/objtype to the assigned ones.
async fn register_test_object(server: &mut Caller, ids: &mut Ids) {
    let add = captured("03_add_object_with_signature.hex", 2);
    server.send_bytes(&add.encode().unwrap()).await;
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
        let mut c = Caller::connect(broker.path()).await;
        c.send_bytes(&captured("02_lookup_empty_bus.hex", 2).encode().unwrap())
            .await;
        assert_eq!(
            c.recv_bytes().await,
            captured("02_lookup_empty_bus.hex", 3).encode().unwrap()
        );
        c.send_bytes(
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
        let mut server = Caller::connect(broker.path()).await;
        register_test_object(&mut server, &mut ids).await;
        // Anonymous subscriber object: DATA {OBJID} only, then STATUS 0.
        server
            .send_bytes(&captured("04_add_object_anonymous.hex", 1).encode().unwrap())
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
        let mut cli = Caller::connect(broker.path()).await;
        ids.0.insert(captured(f, 1).header.peer, cli.id);
        // `ubus list` (all) and `ubus -v list test`: the anonymous object is not listed.
        cli.send_bytes(&captured("05_lookup_all.hex", 2).encode().unwrap())
            .await;
        assert_eq!(
            cli.recv_bytes().await,
            ids.apply(&captured("05_lookup_all.hex", 3))
        );
        assert_eq!(
            cli.recv_bytes().await,
            ids.apply(&captured("05_lookup_all.hex", 4))
        );
        cli.send_bytes(&ids.apply(&captured(f, 2))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 3)));
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 4)));
        // INVOKE: forwarded with peer = caller id and USER/GROUP added.
        cli.send_bytes(&ids.apply(&captured(f, 5))).await;
        assert_eq!(server.recv_bytes().await, ids.apply(&captured(f, 6)));
        // The server's DATA + STATUS relayed with peer = objid.
        server.send_bytes(&ids.apply(&captured(f, 7))).await;
        server.send_bytes(&ids.apply(&captured(f, 8))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 9)));
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 10)));

        // Method not found is the server's answer, relayed unchanged (ubusd does not
        // check method names).
        let f = "10_error_method_not_found.hex";
        ids.0.insert(captured(f, 1).header.peer, cli.id);
        cli.send_bytes(&ids.apply(&captured(f, 5))).await;
        assert_eq!(server.recv_bytes().await, ids.apply(&captured(f, 6)));
        server.send_bytes(&ids.apply(&captured(f, 7))).await;
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 8)));

        // A response for an object the sender does not own is dropped: the caller
        // gets nothing from this forged STATUS, and the next real reply still arrives.
        let mut forger = Caller::connect(broker.path()).await;
        forger.send_bytes(&ids.apply(&captured(f, 7))).await;
        // A round trip on the same connection proves the broker processed it.
        forger
            .send_bytes(&captured("02_lookup_empty_bus.hex", 2).encode().unwrap())
            .await;
        while forger.recv().await.header.ty != MsgType::Status {}
        let f = "12_error_invalid_argument.hex";
        ids.0.insert(captured(f, 1).header.peer, cli.id);
        cli.send_bytes(&ids.apply(&captured(f, 5))).await;
        assert_eq!(server.recv_bytes().await, ids.apply(&captured(f, 6)));
        server.send_bytes(&ids.apply(&captured(f, 7))).await;
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
        let mut server = Caller::connect(broker.path()).await;
        server.send_bytes(&captured(f, 2).encode().unwrap()).await;
        assert_eq!(server.recv_bytes().await, captured(f, 3).encode().unwrap());
        server.send_bytes(&captured(f, 4).encode().unwrap()).await;
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
        let mut server = Caller::connect(broker.path()).await;
        register_test_object(&mut server, &mut ids).await;
        // The capture's run had other ids: map those too.
        let f = "15_error_permission_denied_invoke.hex";
        let rec = captured(f, 3);
        let assigned = ids.map(0x8419a1ab);
        ids.0.insert(rec.objid().unwrap(), assigned);
        ids.0.insert(rec.objtype().unwrap(), ids.map(0x143dd39b));
        let mut cli = Caller::connect(broker.path()).await;
        cli.send_bytes(&captured(f, 2).encode().unwrap()).await;
        // LOOKUP shows only the permitted method.
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 3)));
        assert_eq!(cli.recv_bytes().await, ids.apply(&captured(f, 4)));
        // INVOKE of a denied method: STATUS 6 from the broker, never forwarded.
        cli.send_bytes(&ids.apply(&captured(f, 5))).await;
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
        let mut listener = Caller::connect(broker.path()).await;
        listener.send_bytes(&captured(f, 2).encode().unwrap()).await;
        let d = listener.recv().await;
        ids.0
            .insert(captured(f, 3).objid().unwrap(), d.objid().unwrap());
        assert_eq!(d.encode().unwrap(), ids.apply(&captured(f, 3)));
        assert_eq!(listener.recv_bytes().await, ids.apply(&captured(f, 4)));
        listener.send_bytes(&ids.apply(&captured(f, 5))).await;
        assert_eq!(listener.recv_bytes().await, ids.apply(&captured(f, 6)));

        let f = "14_event_send_and_delivery.hex";
        let mut sender = Caller::connect(broker.path()).await;
        sender.send_bytes(&captured(f, 2).encode().unwrap()).await;
        // Delivery: INVOKE peer 0, seq = ubusd's event counter (1 for the first).
        assert_eq!(listener.recv_bytes().await, ids.apply(&captured(f, 3)));
        assert_eq!(sender.recv_bytes().await, captured(f, 4).encode().unwrap());
        // The listener's STATUS (peer 0) goes nowhere; the bus keeps working.
        listener.send_bytes(&ids.apply(&captured(f, 5))).await;
        sender.send_bytes(&captured(f, 2).encode().unwrap()).await;
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

/// ubusd's `client_cb` reads nothing more from a client whose end it has seen
/// closed: an event written just before the close is lost when the broker
/// comes to the socket after the close, and delivered when the sender waited
/// for ubusd's STATUS to it before closing.
#[test]
fn what_a_client_wrote_before_a_close_the_broker_saw_first_is_lost() {
    let dir = TempDir::new("eof");
    let broker = Broker::start(
        &dir.sock(),
        BrokerConfig {
            latency: Duration::from_millis(50),
            ..BrokerConfig::default()
        },
    )
    .unwrap();
    smol::block_on(async {
        let mut listener = Caller::connect(broker.path()).await;
        listener.listen("demo.*").await;
        let mut lookup = Caller::connect(broker.path()).await;
        for wait in [false, true] {
            let mut sender = Caller::connect(broker.path()).await;
            // Its object shows when the broker has let the client go.
            let seq = sender.next_seq();
            sender.send(&Message::add_object(seq, "sender", &[])).await;
            assert_eq!(sender.collect(seq).await.1, 0);
            let seq = sender.next_seq();
            let data = table_from_json(&json!({ "wait": wait })).unwrap();
            sender
                .send(&Message::event_send(seq, "demo.event", data))
                .await;
            if wait {
                assert_eq!(sender.collect(seq).await.1, 0);
            }
            drop(sender);
            let end = Instant::now() + STEP;
            while lookup.lookup("sender").await.is_ok() {
                assert!(Instant::now() < end, "the closed client's object stays");
            }
        }
        assert_eq!(
            broker.sent_events(),
            vec![("demo.event".to_string(), json!({ "wait": true }))]
        );
        assert_eq!(listener.next_event().await.1, json!({ "wait": true }));
    });
}
