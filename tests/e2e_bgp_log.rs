//! The real `pathosd run`'s log under connections from an address that is no
//! configured neighbor: anyone who reaches the BGP port can make them, and
//! logd keeps only 16 KiB, so they are rate-limited (the limiter itself is
//! unit-tested in src/bgp/driver/log_limit.rs).

mod support;

use std::io::{Read, Write};
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

/// A raw BGP peer dialing the daemon: `from` to `to`, with a bounded wait
/// for the daemon's listener.
fn dial(from: IpAddr, to: SocketAddr) -> TcpStream {
    for _ in 0..100 {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        s.bind(&SocketAddr::new(from, 0).into()).unwrap();
        if s.connect_timeout(&to.into(), Duration::from_secs(1))
            .is_ok()
        {
            let s: TcpStream = s.into();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("pathosd never accepted a connection on {to}");
}

fn bgp_msg(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(ty);
    m.extend_from_slice(body);
    m
}

/// OPEN from AS 65000 with the 4-octet AS capability (RFC 6793).
fn open_as4(id: std::net::Ipv4Addr) -> Vec<u8> {
    let mut body = vec![4];
    body.extend_from_slice(&65000u16.to_be_bytes());
    body.extend_from_slice(&90u16.to_be_bytes());
    body.extend_from_slice(&id.octets());
    body.extend_from_slice(&[8, 2, 6, 65, 4, 0, 0, 0xfd, 0xe8]);
    bgp_msg(1, &body)
}

/// Every message until the daemon closes the connection: (type, body).
fn until_closed(s: &mut TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    while rest.len() >= 19 {
        let len = usize::from(u16::from_be_bytes([rest[16], rest[17]]));
        if len < 19 || len > rest.len() {
            break;
        }
        out.push((rest[18], rest[19..len].to_vec()));
        rest = &rest[len..];
    }
    out
}

/// The type of the next message, or None when the connection ended.
fn read_one(s: &mut TcpStream) -> Option<u8> {
    let mut head = [0u8; 19];
    s.read_exact(&mut head).ok()?;
    let len = usize::from(u16::from_be_bytes([head[16], head[17]]));
    let mut body = vec![0u8; len.checked_sub(19)?];
    s.read_exact(&mut body).ok()?;
    Some(head[18])
}

/// Two malformed-UPDATE cases the RFCs settle:
/// * RFC 4271 §8.2.2: an UPDATE in OpenConfirm is a Finite State Machine
///   Error (5/2), and nothing else is said about it: it is not decoded
///   before the 4-octet AS is in force (that would log a bogus "Malformed
///   AS_PATH" first);
/// * RFC 7606 §5.2: ORIGIN 5, AS_PATH and NEXT_HOP with no NLRI leave
///   treat-as-withdraw nothing to withdraw: session reset, NOTIFICATION 3/6.
#[test]
fn update_in_openconfirm_and_a_no_nlri_update_reset_the_session() {
    // Hosts of block 26 that the other test of this file does not use.
    let (ours, peer) = (ip(26, 11), ip(26, 12));
    let a = support::Addrs { ours, peer };
    let vips = json!([{"name": "v", "prefix": "10.226.0.1/32", "always": true}]);
    let mut cfg = config(a, vips);
    cfg["bgp"]["neighbors"][0]["passive"] = json!(true);
    cfg["bgp"]["neighbors"][0]["error_wait_min"] = json!("100ms");
    cfg["bgp"]["neighbors"][0]["error_wait_max"] = json!("200ms");
    cfg["logging"]["level"] = json!("info");
    let d = Pathosd::start(&cfg, SocketAddr::from((ours, API_PORT)));
    let bgp = SocketAddr::from((ours, PORT));
    let as4_path: &[u8] = &[0x40, 2, 6, 2, 1, 0, 0, 0xfe, 0x1c];
    let next_hop = [
        0x40,
        3,
        4,
        peer.octets()[0],
        peer.octets()[1],
        peer.octets()[2],
        peer.octets()[3],
    ];
    let update = |origin: u8, nlri: &[u8]| {
        let attrs = [&[0x40, 1, 1, origin][..], as4_path, &next_hop[..]].concat();
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend_from_slice(&attrs);
        body.extend_from_slice(nlri);
        bgp_msg(2, &body)
    };

    // OpenConfirm: our OPEN is answered by OPEN and KEEPALIVE; an UPDATE
    // then is 5/2 (RFC 6608: unexpected message in OpenConfirm).
    let mut s = dial(peer.into(), bgp);
    s.write_all(&open_as4(peer)).unwrap();
    assert_eq!(read_one(&mut s), Some(1), "{}", d.log());
    assert_eq!(read_one(&mut s), Some(4), "{}", d.log());
    s.write_all(&update(0, &[24, 10, 226, 1])).unwrap();
    let msgs = until_closed(&mut s);
    assert_eq!(
        msgs.last().map(|m| (m.0, m.1[..2].to_vec())),
        Some((3, vec![5, 2])),
        "{msgs:?}"
    );

    // Established, then the no-NLRI UPDATE: 3/6 with the ORIGIN attribute.
    // The session waits error_wait_min (100 ms) in Idle first, refusing
    // connections: retried, bounded.
    let mut tries = 0;
    let mut s = loop {
        tries += 1;
        assert!(tries <= 50, "never accepted again:\n{}", d.log());
        let mut s = dial(peer.into(), bgp);
        s.write_all(&open_as4(peer)).unwrap();
        if read_one(&mut s) == Some(1) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(read_one(&mut s), Some(4), "{}", d.log());
    s.write_all(&bgp_msg(4, &[])).unwrap();
    s.write_all(&update(5, &[])).unwrap();
    let msgs = until_closed(&mut s);
    assert_eq!(
        msgs.last(),
        Some(&(3, vec![3, 6, 0x40, 1, 1, 5])),
        "{msgs:?}"
    );
    let log = d.log();
    assert!(
        !log.contains("AS_PATH"),
        "nothing about the AS_PATH:\n{log}"
    );
    assert!(
        log.contains("sending NOTIFICATION UPDATE Message Error / Invalid ORIGIN Attribute (data 40 01 01 05)"),
        "the reset is logged:\n{log}"
    );
    assert_eq!(d.get("/healthz").map(|r| r.code), Some(200));
}
