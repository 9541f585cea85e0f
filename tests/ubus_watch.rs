//! The watch of procd's service notifications and netifd's interface
//! events (`pathosd::ubus::watch`) against the test broker, which follows
//! ubusd's SUBSCRIBE / NOTIFY / event rules (tests/support/ubus_broker.rs):
//! a stand-in procd registers `service` and notifies as procd does
//! (`ubus_notify(..., -1)`: NO_REPLY), a stand-in netifd sends
//! `network.interface` events, and procd going and coming back is
//! followed through ubusd's `ubus.object.add` event.

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use pathosd::config::NeedKind;
use pathosd::ubus::blob::table_from_json;
use pathosd::ubus::watch::{watch, NeedEvent, WatchConfig};
use pathosd::ubus::Message;
use serde_json::json;
use support::ubus::{poll_until, Caller, STEP};
use support::ubus_broker::{Broker, BrokerConfig};
use support::TempDir;

fn ev(kind: NeedKind, name: &str, up: bool) -> NeedEvent {
    NeedEvent {
        kind,
        name: name.into(),
        up,
    }
}

#[test]
fn procd_notifications_and_netifd_events() {
    let dir = TempDir::new("watch");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        // procd is up first, as on a router.
        let mut procd = Caller::connect(broker.path()).await;
        let service = procd.add_object("service").await;
        let mut netifd = Caller::connect(broker.path()).await;

        let seen: Rc<RefCell<Vec<NeedEvent>>> = Rc::default();
        let cfg = WatchConfig {
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(100),
            ..WatchConfig::new(dir.sock(), true, true)
        };
        let s = seen.clone();
        let task = pathosd::rt::spawn(watch(cfg, move |e| {
            s.borrow_mut().push(e);
            true
        }));
        // The subscription is there once ubusd tells procd's object it
        // has a subscriber (NOTIFY {ACTIVE 1}).
        procd.wait_subscribed().await;
        procd
            .notify(
                service,
                "instance.stop",
                json!({"service": "dnsmasq", "instance": "cfg01"}),
            )
            .await;
        procd
            .notify(service, "service.stop", json!({"service": "dnsmasq"}))
            .await;
        // Another kind of notification carries no state.
        procd
            .notify(service, "event.trigger", json!({"type": "config.change"}))
            .await;
        // The listen is set up before the subscription: the event gets there.
        let seq = netifd.next_seq();
        let body = table_from_json(&json!({"action": "ifdown", "interface": "wan"})).unwrap();
        netifd
            .send(&Message::event_send(seq, "network.interface", body))
            .await;
        assert_eq!(netifd.collect(seq).await.1, 0);
        let want = vec![
            ev(NeedKind::Service, "dnsmasq", false),
            ev(NeedKind::Service, "dnsmasq", false),
            ev(NeedKind::Interface, "wan", false),
        ];
        poll_until("three events", STEP, || *seen.borrow() == want).await;

        // procd re-executes: its object goes and comes back under a new
        // id; the watch subscribes again from ubusd's ubus.object.add.
        drop(procd);
        let mut procd = Caller::connect(broker.path()).await;
        let service = procd.add_object("service").await;
        procd.wait_subscribed().await;
        procd
            .notify(
                service,
                "instance.start",
                json!({"service": "dnsmasq", "instance": "cfg01"}),
            )
            .await;
        poll_until("the start after procd came back", STEP, || {
            seen.borrow().last() == Some(&ev(NeedKind::Service, "dnsmasq", true))
        })
        .await;
        drop(task);
    });
    broker.stop();
}

/// `network.interface` {action, interface: wan} from a stand-in netifd,
/// sent until `got` holds (the watch may not have registered yet: an event
/// then reaches no one, as on ubusd), within [`STEP`].
async fn send_until(sock: &std::path::Path, action: &str, got: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    let mut netifd = Caller::connect(sock).await;
    while !got() {
        assert!(t0.elapsed() < STEP, "the watch never got {action}");
        let seq = netifd.next_seq();
        let body = table_from_json(&json!({"action": action, "interface": "wan"})).unwrap();
        netifd
            .send(&Message::event_send(seq, "network.interface", body))
            .await;
        assert_eq!(netifd.collect(seq).await.1, 0);
        smol::Timer::after(Duration::from_millis(20)).await;
    }
}

#[test]
fn reconnects_after_ubusd_restarts() {
    let dir = TempDir::new("watch-restart");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let seen: Rc<RefCell<Vec<NeedEvent>>> = Rc::default();
        let cfg = WatchConfig {
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(100),
            ..WatchConfig::new(dir.sock(), false, true)
        };
        let s = seen.clone();
        let _task = pathosd::rt::spawn(watch(cfg, move |e| {
            s.borrow_mut().push(e);
            true
        }));
        send_until(&dir.sock(), "ifdown", || !seen.borrow().is_empty()).await;
        assert_eq!(seen.borrow()[0], ev(NeedKind::Interface, "wan", false));
        broker.stop();
        let _ = std::fs::remove_file(dir.sock());
        let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
        send_until(&dir.sock(), "ifup", || {
            seen.borrow().last() == Some(&ev(NeedKind::Interface, "wan", true))
        })
        .await;
        broker.stop();
    });
}
