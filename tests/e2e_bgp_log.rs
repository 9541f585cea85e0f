//! The real `pathosd run`'s log under connections from an address that is no
//! configured neighbor: anyone who reaches the BGP port can make them, and
//! logd keeps only 16 KiB, so they are rate-limited (the limiter itself is
//! unit-tested in src/bgp/driver/log_limit.rs).

mod support;

use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use pathosd::bgp::driver::NON_NEIGHBOR_LOG_BURST;
use serde_json::json;
use socket2::{Domain, Socket, Type};
use support::daemon::{addrs, config, ip, Pathosd, API_PORT};
use support::PORT;

/// Connects from `from` and waits (bounded) until pathosd closes the
/// connection, which proves it accepted and handled it.
fn connect_and_wait_close(from: IpAddr, to: SocketAddr) -> bool {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(from, 0).into()).unwrap();
    if s.connect_timeout(&to.into(), Duration::from_secs(2))
        .is_err()
    {
        return false;
    }
    let mut s: TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(_) => false,
    }
}

#[test]
fn five_hundred_connections_from_a_non_neighbor_give_a_bounded_log() {
    let n = 26;
    let a = addrs(n);
    let stranger = IpAddr::V4(ip(n, 7));
    let vips = json!([{"name": "v", "prefix": format!("10.{}.0.1/32", 200 + n), "always": true}]);
    let mut cfg = config(a, vips);
    // No BIRD: the configured neighbor only gives connect failures.
    cfg["logging"]["level"] = json!("info");
    let d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
    let bgp = SocketAddr::from((a.ours, PORT));
    let started = Instant::now();
    let mut handled = 0;
    for _ in 0..500 {
        if connect_and_wait_close(stranger, bgp) {
            handled += 1;
        }
    }
    assert_eq!(handled, 500, "pathosd did not close every connection");
    eprintln!("500 connections in {:?}", started.elapsed());
    // Every connection was closed, so every log line about them is written.
    let log = d.log();
    let single = log
        .lines()
        .filter(|l| l.contains(&format!("connection from {}:", ip(n, 7))))
        .count();
    assert_eq!(
        single, NON_NEIGHBOR_LOG_BURST as usize,
        "lines for single connections:\n{log}"
    );
    // The rest is counted for one summary line per interval (60 s), not
    // logged; the whole log stays small.
    assert!(
        log.lines().count() < 40,
        "{} lines:\n{log}",
        log.lines().count()
    );
    // The daemon is still fine.
    assert_eq!(d.get("/healthz").map(|r| r.code), Some(200));
}
