//! The real daemon, real BIRD and the in-tree ubus broker: a VIP that names
//! a procd service and a netifd interface is withdrawn at BIRD as soon as a
//! stand-in procd notifies the service's stop (as procd's `ubus_notify` on
//! its `service` object does) or a stand-in netifd sends `network.interface`
//! {action: ifdown}, though its check runs every 10 s; the start and the
//! ifup probe it at once (back at BIRD well before the next scheduled
//! probe). Twenty rounds of each; the figures are printed (docs/testing.md).
// A scenario read as one script, top to bottom.
#![allow(clippy::too_many_lines)]

mod support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::daemon::{is_announced, policy, Setup};
use support::ubus::Caller;
use support::ubus_broker::{Broker, BrokerConfig};
use support::TempDir;

use pathosd::ubus::blob::table_from_json;
use pathosd::ubus::Message;

/// How long BIRD takes to show `want` (route there or not) for `p`,
/// asked as fast as birdc answers; None past `limit`.
fn until_bird(s: &Setup, p: &str, there: bool, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    loop {
        let r = s.bird.route(p);
        if r.as_deref().is_some_and(is_announced) == there && (there || r.is_none()) {
            return Some(t0.elapsed());
        }
        if t0.elapsed() > limit {
            return None;
        }
    }
}

#[test]
fn a_stopped_service_or_a_downed_interface_withdraws_at_once() {
    let n = 4;
    let dir = TempDir::new("e2e-events");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    // procd is there before pathosd, as on a router.
    let (mut procd, service) = smol::block_on(async {
        let mut procd = Caller::connect(&sock).await;
        let id = procd.add_object("service").await;
        (procd, id)
    });
    let p = format!("10.{}.0.1/32", 200 + n);
    let check = json!({"type": "exec", "interval": "10s", "timeout": "2s", "rise": 1, "fall": 3,
                       "exec": {"command": "/bin/true"}});
    let vips = json!([{"name": "dns", "prefix": p, "check": check, "policy": policy("withdraw"),
                       "services": ["dnsmasq"], "interfaces": ["wan"]}]);
    let s = Setup::start(n, vips, |c| {
        c["api"]["ubus_socket"] = json!(sock.display().to_string())
    });
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);
    let limit = Duration::from_secs(5);
    smol::block_on(async {
        // Subscribed: ubusd tells procd's object it has a subscriber.
        procd.wait_subscribed().await;
        let mut netifd = Caller::connect(&sock).await;
        let mut figures = Vec::new();
        for round in 0..20 {
            // `/etc/init.d/dnsmasq stop`: procd's instance.stop when the
            // process exits, then service.stop.
            let data = json!({"service": "dnsmasq", "instance": "dnsmasq"});
            procd.notify(service, "instance.stop", data.clone()).await;
            procd
                .notify(service, "service.stop", json!({"service": "dnsmasq"}))
                .await;
            let gone = until_bird(&s, &p, false, limit)
                .unwrap_or_else(|| panic!("round {round}: not withdrawn\n{}", s.d.log()));
            procd.notify(service, "instance.start", data).await;
            let back = until_bird(&s, &p, true, limit)
                .unwrap_or_else(|| panic!("round {round}: not back\n{}", s.d.log()));
            figures.push(("service", gone, back));

            let seq = netifd.next_seq();
            let down = table_from_json(&json!({"action": "ifdown", "interface": "wan"})).unwrap();
            netifd
                .send(&Message::event_send(seq, "network.interface", down))
                .await;
            assert_eq!(netifd.collect(seq).await.1, 0);
            let gone = until_bird(&s, &p, false, limit)
                .unwrap_or_else(|| panic!("round {round}: not withdrawn on ifdown\n{}", s.d.log()));
            let seq = netifd.next_seq();
            let up = table_from_json(&json!({"action": "ifup", "interface": "wan"})).unwrap();
            netifd
                .send(&Message::event_send(seq, "network.interface", up))
                .await;
            assert_eq!(netifd.collect(seq).await.1, 0);
            let back = until_bird(&s, &p, true, limit)
                .unwrap_or_else(|| panic!("round {round}: not back on ifup\n{}", s.d.log()));
            figures.push(("interface", gone, back));
        }
        for kind in ["service", "interface"] {
            let mut gone: Vec<Duration> = figures
                .iter()
                .filter(|f| f.0 == kind)
                .map(|f| f.1)
                .collect();
            let mut back: Vec<Duration> = figures
                .iter()
                .filter(|f| f.0 == kind)
                .map(|f| f.2)
                .collect();
            gone.sort();
            back.sort();
            // p99 of 20 is the largest.
            let (g, b) = (gone[gone.len() - 1], back[back.len() - 1]);
            eprintln!(
                "{kind}: 20 rounds: withdrawn at BIRD after median {} ms, p99 {} ms; back after median {} ms, p99 {} ms",
                gone[gone.len() / 2].as_millis(),
                g.as_millis(),
                back[back.len() / 2].as_millis(),
                b.as_millis()
            );
            // The check's interval is 10 s and fall 3: without the events
            // the withdraw would take 20 to 30 s, the return up to 10 s.
            assert!(g < Duration::from_secs(1), "{kind}: {gone:?}");
            assert!(b < Duration::from_secs(1), "{kind}: {back:?}");
        }
        let log = s.d.log();
        assert!(log.contains("service dnsmasq stopped"), "{log}");
        assert!(log.contains("interface wan down"), "{log}");
    });
}
