//! The ubus methods of `pathosd` (api::ubus_methods) end to end: the real ubus
//! client registered on the in-tree broker, `serve_ubus` answering through a
//! ControlHandle to a fake owner task, and a second connection built from the
//! codec playing `ubus call` / `ubus listen`. Every wait is bounded.

#[path = "api_fixture.rs"]
mod fixture;
mod support;

use fixture::*;
use pathosd::api::status::status_json;
use pathosd::api::ubus_methods::{peer_event, serve_ubus, vip_event, CONCURRENT_CALLS};
use pathosd::ubus::client::{UbusClient, UbusConfig, UbusHandle, EVENT_PEER, EVENT_VIP};
use serde_json::json;
use smol::future;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant, UNIX_EPOCH};
use support::ubus::{poll_until, Caller, STEP};
use support::ubus_broker::{Broker, BrokerConfig};
use support::TempDir;

struct Running {
    handle: UbusHandle,
    owner: FakeOwner,
    _tasks: Vec<smol::Task<()>>,
}

async fn start(sock: &Path, probe_time: Duration) -> Running {
    start_with(sock, probe_time, UbusConfig::default().reply_timeout).await
}

/// As [`start`], with the client answering TIMEOUT after `reply_timeout`.
async fn start_with(sock: &Path, probe_time: Duration, reply_timeout: Duration) -> Running {
    let cfg = UbusConfig {
        socket_path: sock.to_path_buf(),
        backoff_min: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
        reply_timeout,
        ..UbusConfig::default()
    };
    let (client, handle, requests) = UbusClient::new(cfg);
    let owner = start_owner(probe_time);
    let tasks = vec![
        pathosd::rt::spawn(client.run()),
        pathosd::rt::spawn(serve_ubus(requests, owner.ctl.clone())),
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
    pathosd::rt::block_on(async {
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
        // An empty name counts as missing (docs/api.md), as for `check` and `drain`.
        assert_eq!(
            c.call("pathosd", "vip", json!({"name": ""})).await,
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
    pathosd::rt::block_on(async {
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
    pathosd::rt::block_on(async {
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

/// Issue 10.1: many slow `check` calls at once (each trigger takes 5 s in the
/// fake owner) never hold up `status`: it answers within 100 ms every time.
/// Calls the client answered TIMEOUT give their slots back at that moment, so
/// a new trigger reaches the owner while the abandoned ones still run.
#[test]
fn slow_checks_never_hold_up_status_and_timed_out_calls_free_their_slots() {
    let dir = TempDir::new("flood");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let reply_timeout = Duration::from_millis(600);
        let r = start_with(&dir.sock(), Duration::from_secs(5), reply_timeout).await;
        let log = r.owner.log.clone();
        let mut callers = Vec::new();
        for _ in 0..24 {
            callers.push(Caller::connect(broker.path()).await);
        }
        let calls: Vec<_> = callers
            .into_iter()
            .map(|mut c| {
                smol::spawn(async move { c.call("pathosd", "check", json!({"vip": "db"})).await })
            })
            .collect();
        let mut fast = Caller::connect(broker.path()).await;
        poll_until("a trigger reached the owner", STEP, || {
            log.triggers.load(SeqCst) >= 1
        })
        .await;
        for i in 0..10 {
            let t = Instant::now();
            let v = fast.call("pathosd", "status", json!({})).await;
            assert!(matches!(v, Ok(Some(_))), "status {i}: {v:?}");
            assert!(
                t.elapsed() < Duration::from_millis(100),
                "status {i} took {:?}",
                t.elapsed()
            );
        }
        // Each caller is answered: TIMEOUT (7) once the client gives up on
        // the ones the daemon took, UNKNOWN_ERROR (9, busy) at once for the rest.
        let mut timed_out = 0;
        for c in calls {
            match c.await {
                Err(7) => timed_out += 1,
                Err(9) => {}
                r => panic!("check: {r:?}"),
            }
        }
        assert_eq!(timed_out, CONCURRENT_CALLS);
        // The fake checks still run (5 s), but their slots are free again.
        let before = log.triggers.load(SeqCst);
        let mut c = Caller::connect(broker.path()).await;
        let late =
            smol::spawn(async move { c.call("pathosd", "check", json!({"vip": "db"})).await });
        poll_until(
            "a new trigger reached the owner",
            Duration::from_secs(1),
            || log.triggers.load(SeqCst) > before,
        )
        .await;
        assert_eq!(late.await, Err(7));
    });
}

#[test]
fn vip_and_peer_events_reach_listeners() {
    let dir = TempDir::new("events");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let r = start(&dir.sock(), Duration::from_millis(1)).await;
        let mut l = Caller::connect(broker.path()).await;
        l.listen("pathosd.*").await;
        let addr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        // The time of the change travels with the event (RFC 3339 UTC, as /status).
        let t = UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        r.handle.send_event(
            EVENT_VIP,
            vip_event(
                "web",
                "10.10.1.1/32",
                "announced",
                "withdrawn",
                "web: fall threshold reached",
                t,
            ),
        );
        r.handle.send_event(
            EVENT_PEER,
            peer_event(
                "frr",
                addr,
                "established",
                "idle",
                "Hold Timer Expired",
                t + Duration::from_secs(1),
            ),
        );
        assert_eq!(
            l.next_event().await,
            (
                "pathosd.vip".to_string(),
                json!({"vip": "web", "prefix": "10.10.1.1/32", "from": "announced",
                       "to": "withdrawn", "reason": "web: fall threshold reached",
                       "time": "2026-09-21T14:13:20Z"})
            )
        );
        assert_eq!(
            l.next_event().await,
            (
                "pathosd.peer".to_string(),
                json!({"peer": "frr", "address": "127.0.0.2", "from": "established",
                       "to": "idle", "reason": "Hold Timer Expired",
                       "time": "2026-09-21T14:13:21Z"})
            )
        );
        assert_eq!(broker.sent_events().len(), 2);
    });
}
