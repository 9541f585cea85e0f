//! A drain that waits for the traffic (`drain_until_flows_below`), against
//! a real BIRD, in a network namespace the test creates: pathosd, BIRD, a
//! backend (a `TcpListener` of this test) on the VIP addresses and the
//! long-lived client connections to them all live in it, and nftables
//! there has a `ct state` rule, without which the kernel tracks no
//! connection in a namespace (so the conntrack table pathosd reads,
//! `/proc/net/nf_conntrack`, would stay empty).
//!
//! VIP `web` (drain_time 20 s, threshold 1): drained through the API with
//! three connections open, it stays announced (pessimized) while any is
//! open and is withdrawn within about a second of the last one closing.
//! VIP `stuck` (drain_time 3 s, threshold 1): its connection never closes,
//! and the withdraw comes at drain_time, not before and not much later.
// Scenarios against real peers and whole configurations read as one
// script, top to bottom: the workspace's function-length lint is for
// shipped code.
#![allow(clippy::too_many_lines)]

mod support;

use serde_json::json;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::bird::attr;
use support::daemon::{as_path, Setup};
use support::netns::{ip, run_ignored_in, sh, Netns};

const ENV: &str = "PATHOSD_DRAIN_FLOWS_NETNS";
const PORT: u16 = 8080;

#[test]
fn drain_waits_for_the_flows_in_namespace() {
    let ns = Netns(format!("pd-flows-{}", std::process::id()));
    let _ = std::process::Command::new("ip")
        .args(["netns", "del", &ns.0])
        .stderr(std::process::Stdio::null())
        .status();
    ip(&["netns", "add", &ns.0]);
    ip(&["netns", "exec", &ns.0, "ip", "link", "set", "lo", "up"]);
    run_ignored_in(&ns.0, "inner_drain_flows", ENV);
}

/// A backend on `addr` that hands each accepted connection to the test.
fn backend(addr: SocketAddr) -> mpsc::Receiver<TcpStream> {
    let l = TcpListener::bind(addr).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            if tx.send(s).is_err() {
                return;
            }
        }
    });
    rx
}

/// A client connection to `addr` and its accepted end, with a byte each
/// way (both ends established).
fn connect(addr: SocketAddr, accepted: &mpsc::Receiver<TcpStream>) -> (TcpStream, TcpStream) {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).unwrap();
    let mut s = accepted.recv_timeout(Duration::from_secs(3)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut b = [0u8; 1];
    c.write_all(b"x").unwrap();
    s.read_exact(&mut b).unwrap();
    s.write_all(b"y").unwrap();
    c.read_exact(&mut b).unwrap();
    (c, s)
}

/// BIRD's route for `prefix` carries the pessimized AS path (1 + 6
/// prepends: the defaults).
fn pessimized(block: &str) -> bool {
    attr(block, "as_path").as_deref() == Some(as_path(7).as_str())
}

/// Asserts that BIRD keeps the route for `prefix` for `d`.
fn stays(s: &Setup, prefix: &str, d: Duration, what: &str) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        assert!(
            s.bird.route(prefix).is_some(),
            "{prefix} withdrawn {what}\n{}",
            s.d.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (bounded by `limit`) until BIRD has no route for `prefix`;
/// returns when it saw it gone.
fn gone_within(s: &Setup, prefix: &str, limit: Duration) -> Instant {
    let seen = support::poll(limit, || s.bird.route(prefix).is_none().then(Instant::now));
    seen.unwrap_or_else(|| {
        panic!(
            "{prefix} still at BIRD after {limit:?}: {:?}\n{}",
            s.bird.route(prefix),
            s.d.log()
        )
    })
}

#[test]
#[ignore = "run by drain_waits_for_the_flows_in_namespace"]
fn inner_drain_flows() {
    let ns = std::env::var(ENV).expect("runs only inside its namespace");
    assert!(ns.starts_with("pd-flows-"));
    support::init_log();
    // Connection tracking in this namespace: a rule that uses it.
    sh(&["nft", "add", "table", "inet", "pdflows"]);
    sh(&[
        "nft",
        "add chain inet pdflows input { type filter hook input priority 0 ; }",
    ]);
    sh(&[
        "nft",
        "add",
        "rule",
        "inet",
        "pdflows",
        "input",
        "ct",
        "state",
        "established",
        "accept",
    ]);
    let (web, stuck) = (Ipv4Addr::new(10, 253, 7, 1), Ipv4Addr::new(10, 253, 7, 2));
    for a in [web, stuck] {
        ip(&["addr", "add", &format!("{a}/32"), "dev", "lo"]);
    }
    let (web_addr, stuck_addr) = (
        SocketAddr::from((web, PORT)),
        SocketAddr::from((stuck, PORT)),
    );
    let (web_rx, stuck_rx) = (backend(web_addr), backend(stuck_addr));
    let (wp, sp) = ("10.253.7.1/32", "10.253.7.2/32");
    let vips = json!([
        {"name": "web", "prefix": wp, "always": true,
         "policy": {"drain_time": "20s", "drain_until_flows_below": 1}},
        {"name": "stuck", "prefix": sp, "always": true,
         "policy": {"drain_time": "3s", "drain_until_flows_below": 1}}
    ]);
    let s = Setup::start(31, vips, |_| {});
    s.wait_established();
    s.wait_route(wp, "announced", |b| !pessimized(b));
    s.wait_route(sp, "announced", |b| !pessimized(b));

    // The table is read, and counts these connections.
    let mut conns: Vec<(TcpStream, TcpStream)> =
        (0..3).map(|_| connect(web_addr, &web_rx)).collect();
    let _forever = connect(stuck_addr, &stuck_rx);
    let table = std::fs::read_to_string("/proc/net/nf_conntrack")
        .expect("/proc/net/nf_conntrack (nf_conntrack with procfs)");
    let tracked = table
        .lines()
        .filter(|l| l.contains("dst=10.253.7.1 ") && l.contains(" ESTABLISHED "))
        .count();
    assert_eq!(tracked, 3, "{table}");

    // Drain web with three connections open: pessimized, not withdrawn.
    let r = s.d.request("POST", "/api/v1/vips/web/drain").unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    s.wait_route(wp, "pessimized", pessimized);
    // The count shows in /status once read (each second).
    let shown = support::poll(Duration::from_secs(3), || {
        (s.d.vip("web")["flows"] == 3).then_some(())
    });
    assert!(shown.is_some(), "{}\n{}", s.d.vip("web"), s.d.log());
    stays(&s, wp, Duration::from_millis(2_500), "with 3 flows open");
    conns.truncate(1);
    stays(&s, wp, Duration::from_millis(2_000), "with 1 flow open");
    assert!(s.bird.route(wp).is_some_and(|b| pessimized(&b)));

    // The last one ends: withdrawn within about a second (one read a
    // second), long before drain_time (20 s).
    let closed = Instant::now();
    conns.clear();
    let gone = gone_within(&s, wp, Duration::from_secs(5));
    let took = gone - closed;
    assert!(
        took <= Duration::from_millis(2_000),
        "withdrawn {took:?} after the last flow ended\n{}",
        s.d.log()
    );
    assert!(s
        .d
        .log()
        .contains("pessimized -> withdrawn (active flows below drain_until_flows_below)"));
    eprintln!("web: withdrawn {took:?} after its last connection closed");

    // stuck: its connection never ends; the withdraw comes at drain_time.
    let drained = Instant::now();
    let r = s.d.request("POST", "/api/v1/vips/stuck/drain").unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    s.wait_route(sp, "pessimized", pessimized);
    stays(
        &s,
        sp,
        Duration::from_millis(2_500).saturating_sub(drained.elapsed()),
        "before drain_time with its flow open",
    );
    let gone = gone_within(&s, sp, Duration::from_secs(5));
    let took = gone - drained;
    assert!(
        took >= Duration::from_millis(2_900) && took <= Duration::from_millis(4_000),
        "withdrawn {took:?} after the drain (drain_time 3 s)\n{}",
        s.d.log()
    );
    assert!(s
        .d
        .log()
        .contains("vip stuck 10.253.7.2/32: pessimized -> withdrawn (drain_time elapsed)"));
    eprintln!("stuck: withdrawn {took:?} after the drain (drain_time 3 s)");

    // The drains end: both announced again.
    for v in ["web", "stuck"] {
        let r =
            s.d.request("DELETE", &format!("/api/v1/vips/{v}/drain"))
                .unwrap();
        assert_eq!(r.code, 200, "{}", r.body);
    }
    s.wait_route(wp, "announced again", |b| !pessimized(b));
    s.wait_route(sp, "announced again", |b| !pessimized(b));
}
