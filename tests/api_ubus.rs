//! The ubus methods of `pathosd` (api::ubus_methods) end to end: the real ubus
//! client registered on the in-tree broker, `serve_ubus` answering through a
//! ControlHandle to the daemon's state (the fixture's owner), and a second connection built from the
//! codec playing `ubus call` / `ubus listen`. Every wait is bounded.

#[path = "api_fixture.rs"]
mod fixture;
mod support;

use fixture::*;
use pathosd::api::status::status_json;
use pathosd::api::ubus_methods::{peer_event, serve_ubus, vip_event, CONCURRENT_CALLS};
use pathosd::config::RunConfig;
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
    owner: Owner,
    _tasks: Vec<smol::Task<()>>,
}

async fn start(sock: &Path, probe_time: Duration) -> Running {
    start_with(sock, probe_time, UbusConfig::default().reply_timeout).await
}

/// As [`start`], with the client answering TIMEOUT after `reply_timeout`.
async fn start_with(sock: &Path, probe_time: Duration, reply_timeout: Duration) -> Running {
    start_owned(sock, reply_timeout, start_owner(probe_time)).await
}

/// As [`start`], with the owner's state started from `cfg` and the history
/// `before` makes.
async fn start_for(sock: &Path, cfg: RunConfig, before: impl FnOnce(&mut Owned)) -> Running {
    let owner = start_owner_with(cfg, Duration::from_millis(1), before);
    start_owned(sock, UbusConfig::default().reply_timeout, owner).await
}

async fn start_owned(sock: &Path, reply_timeout: Duration, owner: Owner) -> Running {
    let cfg = UbusConfig {
        socket_path: sock.to_path_buf(),
        backoff_min: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
        reply_timeout,
        ..UbusConfig::default()
    };
    let (client, handle, requests) = UbusClient::new(cfg);
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
        let r = start(&dir.sock(), Duration::from_millis(1)).await;
        let mut c = Caller::connect(broker.path()).await;
        let got = c
            .call("pathosd", "status", json!({}))
            .await
            .unwrap()
            .unwrap();
        // Through blobmsg and back, the document is the /status one (every
        // VIP fits the first page) with the page's counts; the uptime is
        // the owner's clock's at either moment.
        let mut whole = status_json(&r.owner.snapshot());
        let up = got["uptime_seconds"].as_u64().unwrap();
        assert!((3600..3660).contains(&up), "{up}");
        let m = whole.as_object_mut().unwrap();
        m.insert("uptime_seconds".into(), json!(up));
        m.insert(
            "vip_counts".into(),
            json!({"total": 3, "announced": 1, "pessimized": 1, "withdrawn": 1,
                   "healthy": 2, "unhealthy": 1, "drained": 1}),
        );
        m.insert("vips_matched".into(), json!(3));
        m.insert("offset".into(), json!(0));
        m.insert("limit".into(), json!(100));
        m.insert("next_offset".into(), json!(null));
        assert_eq!(got, whole);
        assert_eq!(
            got["vips"][0]["checks"][0]["last_check_duration_ms"],
            12.345
        );
        // Each peer's BFD session, which LuCI's status page shows: an
        // object while the neighbor runs BFD, null (blobmsg UNSPEC) without.
        assert_eq!(got["peers"][0]["bfd"]["state"], "up");
        assert_eq!(got["peers"][0]["bfd"]["downs"], 1);
        assert_eq!(got["peers"][0]["bfd"]["dropped"]["wrong_ttl"], 1);
        assert!(got["peers"][1]
            .as_object()
            .is_some_and(|p| p.contains_key("bfd")));
        assert!(got["peers"][1]["bfd"].is_null());
        status_filters(&mut c).await;

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

/// `status` with filters, a compact page, pages and the counts alone, the
/// session rpcd adds, and bad arguments.
async fn status_filters(c: &mut Caller) {
    // Filters, a compact page and the counts alone.
    let got = c
        .call(
            "pathosd",
            "status",
            json!({"state": "withdrawn", "compact": true}),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got["vips_matched"], 1);
    assert_eq!(got["vips"][0]["name"], "db");
    assert!(got["vips"][0].get("checks").is_none());
    let got = c
        .call(
            "pathosd",
            "status",
            json!({"search": "EVIL", "health": "healthy"}),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got["vips"][0]["prefix"], "2001:db8::1/128");
    // LuCI's calls come with the session rpcd added (uhttpd's ubus
    // handler does the same): ignored, not an unknown argument.
    let got = c
        .call(
            "pathosd",
            "status",
            json!({"limit": 5, "ubus_rpc_session": "0123456789abcdef"}),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got["limit"], 5);
    let got = c
        .call("pathosd", "status", json!({"limit": 0}))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got["vips"], json!([]));
    assert_eq!(got["vip_counts"]["total"], 3);
    assert_eq!(got["next_offset"], json!(null));
    let got = c
        .call("pathosd", "status", json!({"offset": 1, "limit": 1}))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got["vips"][0]["name"], "db");
    assert_eq!(got["next_offset"], 2);
    for bad in [
        json!({"limit": 1001}),
        json!({"state": "up"}),
        json!({"health": 1}),
        json!({"offset": "x"}),
        json!({"colour": "red"}),
        json!({"search": "x".repeat(129)}),
    ] {
        assert_eq!(
            c.call("pathosd", "status", bad.clone()).await,
            Err(INVALID_ARGUMENT),
            "{bad}"
        );
    }
}

/// `n` VIPs `vip00000`… in 10.x.y.1/32, each with web's three checks.
fn many_vips(n: u32) -> RunConfig {
    let mut cfg = config();
    let model = cfg.vips[0].clone();
    cfg.vips = (0..n)
        .map(|i| {
            let mut v = model.clone();
            v.name = format!("vip{i:05}").into();
            v.prefix = format!("10.{}.{}.1/32", i / 256, i % 256).parse().unwrap();
            v
        })
        .collect();
    cfg
}

/// Every check of [`many_vips`] with its last result: every other VIP's
/// pass three times (their rise), which announces it, the others' once.
fn half_announced(o: &mut Owned) {
    let ok = probe_results();
    let now = o.now();
    let vips: Vec<String> = o
        .state
        .engine()
        .vips()
        .iter()
        .map(|v| v.name.to_string())
        .collect();
    for (i, vip) in vips.iter().enumerate() {
        for c in ["web", "dns", "ping"] {
            for _ in 0..[3, 1][i % 2] {
                o.report(vip, c, ok[c].clone(), now);
            }
        }
    }
}

/// 10,000 VIPs with three checks each: about 15 MB of status, fifteen times
/// what ubusd carries in one message and forty times what a reply holds.
/// Every method answers, and paging through `next_offset` returns every VIP
/// once, in order.
#[test]
fn every_method_answers_at_10000_vips() {
    let dir = TempDir::new("scale");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let _r = start_for(&dir.sock(), many_vips(10_000), half_announced).await;
        let mut c = Caller::connect(broker.path()).await;
        let mut names = Vec::new();
        let mut offset = 0u64;
        let mut pages = 0;
        let mut cut_early = false;
        // Bounded: 10,000 VIPs at no fewer than 100 a page.
        while pages < 100 {
            let got = c
                .call(
                    "pathosd",
                    "status",
                    json!({"offset": offset, "limit": 1000}),
                )
                .await
                .unwrap()
                .unwrap();
            pages += 1;
            let vips = got["vips"].as_array().unwrap();
            assert!(!vips.is_empty());
            // A reply holds about 384 KiB: some 140 of these VIPs (a page
            // filled ubusd's 1 MiB, about 380 of them, before).
            assert!(vips.len() <= 150, "{} VIPs in a reply", vips.len());
            assert_eq!(got["vip_counts"]["total"], 10_000);
            assert_eq!(got["vip_counts"]["withdrawn"], 5_000);
            names.extend(vips.iter().map(|v| v["name"].as_str().unwrap().to_string()));
            match got["next_offset"].as_u64() {
                Some(next) => {
                    assert_eq!(next, offset + vips.len() as u64);
                    cut_early |= vips.len() < 1000;
                    offset = next;
                }
                None => break,
            }
        }
        assert_eq!(names.len(), 10_000, "after {pages} pages");
        assert!(names
            .iter()
            .enumerate()
            .all(|(i, n)| *n == format!("vip{i:05}")));
        assert!(
            cut_early,
            "1000 VIPs with checks are over a reply's 384 KiB: the page ends early"
        );
        // The default page, the counts alone, and a filter over all of them.
        let got = c
            .call("pathosd", "status", json!({}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got["vips"].as_array().unwrap().len(), 100);
        assert_eq!(got["next_offset"], 100);
        let got = c
            .call(
                "pathosd",
                "status",
                json!({"search": "vip0999", "compact": true}),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got["vips_matched"], 10);
        // One VIP, a check trigger and a drain on the last VIP.
        let v = c
            .call("pathosd", "vip", json!({"name": "vip09999"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v["prefix"], "10.39.15.1/32");
        let v = c
            .call("pathosd", "check", json!({"vip": "vip09999"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v["vip"], "vip09999");
        let v = c
            .call(
                "pathosd",
                "drain",
                json!({"vip": "vip09999", "enable": true}),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v["drain"], true);
    });
}

/// `validate` runs the daemon's loader on what it is given: rpcd's `uci get`
/// values (LuCI's staged sections) or v1 JSON. Errors are the reply, named
/// by section and option; what is not a configuration is INVALID_ARGUMENT.
#[test]
fn validate_checks_a_given_configuration() {
    let dir = TempDir::new("validate");
    let broker = Broker::start(&dir.sock(), BrokerConfig::default()).unwrap();
    pathosd::rt::block_on(async {
        let _r = start(&dir.sock(), Duration::from_millis(1)).await;
        let mut c = Caller::connect(broker.path()).await;
        let values = |prefix: &str| {
            json!({
                "main": {".type": "pathosd", ".name": "main", ".anonymous": false, ".index": 0,
                         "asn": "65001", "router_id": "10.0.0.1", "listen_port": "-1"},
                "bird": {".type": "neighbor", ".name": "bird", ".anonymous": false, ".index": 1,
                         "address": "127.0.0.1", "peer_asn": "65000", "passive": "1"},
                "web": {".type": "vip", ".name": "web", ".anonymous": false, ".index": 2,
                        "prefix": prefix},
                "web_tcp": {".type": "check", ".name": "web_tcp", ".anonymous": false, ".index": 3,
                            "vip": "web", "type": "tcp", "port": "8081",
                            "send": "PING", "expect": "PONG"}
            })
        };
        let got = c
            .call(
                "pathosd",
                "validate",
                json!({"uci": values("10.10.1.5/24")}),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got["valid"], false);
        let errors: Vec<&str> = got["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(
            errors,
            vec![
                "vip 'web' option prefix: \"10.10.1.5/24\" has host bits set: write 10.10.1.5/32 for the address or 10.10.1.0/24 for the network",
                "neighbor 'bird' option passive: a passive neighbor can never connect: option listen_port of the pathosd section is '-1' (no listener)",
            ]
        );
        let mut ok = values("10.10.1.5/32");
        ok["bird"].as_object_mut().unwrap().remove("passive");
        let got = c
            .call(
                "pathosd",
                "validate",
                json!({"uci": ok, "ubus_rpc_session": "0123456789abcdef"}),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, json!({"valid": true, "errors": []}));
        let got = c
            .call(
                "pathosd",
                "validate",
                json!({"config": {"router": {"asn": 65001, "router_id": "10.0.0.1"}}}),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got["valid"], false);
        for bad in [
            json!({}),
            json!({"uci": "x"}),
            json!({"uci": {}, "config": {}}),
        ] {
            assert_eq!(
                c.call("pathosd", "validate", bad.clone()).await,
                Err(INVALID_ARGUMENT),
                "{bad}"
            );
        }
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
        assert!(r.owner.drain_api("web"));
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

        reloads(&r, &mut c).await;
    });
}

/// `reload`: applied, applied in part (saying what was not), refused.
async fn reloads(r: &Running, c: &mut Caller) {
    let v = c
        .call("pathosd", "reload", json!({}))
        .await
        .unwrap()
        .unwrap();
    // The reload's record, as /status's last_reload, and `reloaded`.
    let time = r.owner.snapshot().last_reload.unwrap().time;
    assert_eq!(
        v,
        json!({"reloaded": true, "result": "applied",
               "time": pathosd::logging::utc_timestamp(time),
               "errors": [], "needs_restart": []})
    );
    // A valid file the daemon could apply only in part: still a reply,
    // saying what was not applied.
    let why = "api.listen 127.0.0.1:80: cannot listen (Address in use (os error 98)); \
               the API stays on http://127.0.0.1:59179 with its old settings";
    r.owner.driver(|d| d.reload_not_applied = vec![why.into()]);
    let v = c
        .call("pathosd", "reload", json!({}))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v["reloaded"], true, "{v}");
    assert_eq!(v["result"], "partially_applied", "{v}");
    assert_eq!(v["errors"], json!([why]), "{v}");
    r.owner
        .driver(|d| d.reload_errors = vec!["vips[0].prefix: bad".into()]);
    assert_eq!(
        c.call("pathosd", "reload", json!({})).await,
        Err(INVALID_ARGUMENT)
    );
    assert_eq!(
        r.owner
            .log
            .reloads
            .load(std::sync::atomic::Ordering::SeqCst),
        3
    );
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

/// Many slow `check` calls at once (each trigger takes 5 s in the
/// owner's probes) never hold up `status`: it answers within 100 ms every time.
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
        // The probes still run (5 s), but their slots are free again.
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
