//! The real daemon on the in-tree ubus broker (api.ubus_socket pointing at
//! it): `ubus call pathosd status` answers from the running daemon, and a
//! VIP transition arrives as a `pathosd.vip` event at a listener. The caller
//! and listener are built from pathosd's own ubus codec.

mod support;

use pathosd::ubus::broker::{Broker, BrokerConfig};
use serde_json::json;
use smol::Timer;
use std::time::{Duration, Instant};
use support::daemon::{is_announced, policy, Setup};
use support::ubus::{Caller, STEP};
use support::TempDir;

#[test]
fn ubus_status_from_the_real_daemon_and_vip_events() {
    let n = 17;
    let dir = TempDir::new("e2e-ubus");
    let sock = dir.sock();
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

        // The daemon registers `pathosd` after its start; wait for it.
        let end = Instant::now() + STEP;
        let status = loop {
            match caller.call("pathosd", "status", json!({})).await {
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
            .call("pathosd", "vip", json!({"name": "web"}))
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
            .call("pathosd", "drain", json!({"vip": "web", "enable": true}))
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
