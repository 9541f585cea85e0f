//! The speaker against a hand-driven TCP peer on loopback: what it does with
//! connections from unknown addresses and with malformed bytes from a
//! configured neighbor (RFC 4271 §6.1: a NOTIFICATION, then close; never a
//! panic).

mod support;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use support::{poll, Addrs, PORT};

/// A TCP connection to pathosd's listener from `from`.
fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::new(from, 0).into()).unwrap();
    s.connect_timeout(&to.into(), Duration::from_secs(2))
        .unwrap();
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s
}

/// Reads until EOF (bounded by the read timeout); returns everything.
fn read_to_close(s: &mut TcpStream) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + Duration::from_secs(4);
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => break,
        }
    }
    (out, false)
}

/// The BGP messages in `bytes`, as (type, body).
fn messages(bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = bytes;
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

fn passive_speaker(a: Addrs) -> support::TestSpeaker {
    support::init_log();
    let mut cfg = support::config(a);
    cfg.bgp.neighbors[0].passive = true;
    let (tx, _rx) = pathosd::chan::unbounded();
    {
        let cfg = cfg.clone();
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap()
}

#[test]
fn connection_from_an_unknown_address_is_closed() {
    let a = Addrs::new(30);
    let speaker = passive_speaker(a);
    let stranger = IpAddr::V4(std::net::Ipv4Addr::new(127, 30, a.ours.octets()[2], 3));
    let mut s = connect_from(stranger, SocketAddr::new(a.ours.into(), PORT));
    let (bytes, closed) = read_to_close(&mut s);
    assert!(closed, "connection from a stranger stayed open");
    assert!(bytes.is_empty(), "sent {bytes:?} to a stranger");
    assert_eq!(speaker.peers()[0].summary.messages_out.open, 0);
}

#[test]
fn garbage_from_the_neighbor_gets_a_header_error_notification() {
    let a = Addrs::new(31);
    let speaker = passive_speaker(a);
    let mut s = connect_from(a.peer.into(), SocketAddr::new(a.ours.into(), PORT));
    // Not a BGP marker: RFC 4271 §6.1 Connection Not Synchronized.
    s.write_all(&[0u8; 19]).unwrap();
    let (bytes, closed) = read_to_close(&mut s);
    assert!(closed);
    let msgs = messages(&bytes);
    assert_eq!(msgs.first().map(|m| m.0), Some(1), "OPEN first: {msgs:?}");
    assert_eq!(msgs.last(), Some(&(3, vec![1, 1])), "{msgs:?}");
    let st = poll(Duration::from_secs(2), || {
        let p = speaker.peers().remove(0);
        p.summary.last_notification_sent.is_some().then_some(p)
    })
    .unwrap();
    assert!(
        st.summary
            .last_notification_sent
            .as_deref()
            .unwrap()
            .contains("Connection Not Synchronized"),
        "{st:?}"
    );
    // The peer is still alive: it takes the next connection.
    let mut again = poll(Duration::from_secs(5), || {
        let mut s = connect_from(a.peer.into(), SocketAddr::new(a.ours.into(), PORT));
        let mut head = [0u8; 19];
        s.read_exact(&mut head).ok()?;
        // Consume the whole OPEN so only what follows is parsed below.
        let len = usize::from(u16::from_be_bytes([head[16], head[17]]));
        let mut body = vec![0u8; len.checked_sub(19)?];
        s.read_exact(&mut body).ok()?;
        (head[18] == 1).then_some(s)
    });
    assert!(
        again.is_some(),
        "no OPEN on a new connection after the error"
    );
    // A message of an unknown type: Bad Message Type with the type as data.
    let mut bad = vec![0xff; 16];
    bad.extend_from_slice(&[0, 19, 9]);
    let s = again.as_mut().unwrap();
    s.write_all(&bad).unwrap();
    let (bytes, closed) = read_to_close(s);
    assert!(closed);
    let msgs = messages(&bytes);
    assert_eq!(msgs.last(), Some(&(3, vec![1, 3, 9])), "{msgs:?}");
}

#[test]
fn open_with_the_wrong_as_gets_bad_peer_as() {
    let a = Addrs::new(32);
    let _speaker = passive_speaker(a);
    let mut s = connect_from(a.peer.into(), SocketAddr::new(a.ours.into(), PORT));
    // OPEN: version 4, AS 64999 (configured: 65000), hold 90, id = peer.
    let mut open = vec![0xff; 16];
    open.extend_from_slice(&[0, 29, 1, 4]);
    open.extend_from_slice(&64999u16.to_be_bytes());
    open.extend_from_slice(&90u16.to_be_bytes());
    open.extend_from_slice(&a.peer.octets());
    open.push(0);
    s.write_all(&open).unwrap();
    let (bytes, closed) = read_to_close(&mut s);
    assert!(closed);
    let msgs = messages(&bytes);
    assert_eq!(msgs.last(), Some(&(3, vec![2, 2])), "{msgs:?}");
}

fn open_msg(asn: u16, id: std::net::Ipv4Addr) -> Vec<u8> {
    let mut open = vec![0xff; 16];
    open.extend_from_slice(&[0, 29, 1, 4]);
    open.extend_from_slice(&asn.to_be_bytes());
    open.extend_from_slice(&90u16.to_be_bytes());
    open.extend_from_slice(&id.octets());
    open.push(0);
    open
}

/// Reads one whole message; (type, body).
fn read_msg(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 19];
    s.read_exact(&mut head).unwrap();
    let len = usize::from(u16::from_be_bytes([head[16], head[17]]));
    let mut body = vec![0u8; len - 19];
    s.read_exact(&mut body).unwrap();
    (head[18], body)
}

/// RFC 4271 §6.8 with both connections open: we dialed the raw peer (it
/// accepts on its listener) and it dialed us. The connection opened by the
/// side with the larger BGP Identifier survives; the other gets Cease /
/// Connection Collision Resolution (6/7).
fn collision(block: u8, peer_id: std::net::Ipv4Addr, inbound_wins: bool) {
    support::init_log();
    let a = Addrs::new(block);
    let raw_listener = std::net::TcpListener::bind((a.peer, PORT)).unwrap();
    let (tx, _rx) = pathosd::chan::unbounded();
    let speaker = {
        let cfg = support::config(a).clone();
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    // Our outbound connection, and our OPEN on it: OpenSent.
    let (mut outbound, _) = raw_listener.accept().unwrap();
    outbound
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    assert_eq!(read_msg(&mut outbound).0, 1);
    // The peer's own connection: the collision candidate, also sent our OPEN.
    let mut inbound = connect_from(a.peer.into(), SocketAddr::new(a.ours.into(), PORT));
    assert_eq!(read_msg(&mut inbound).0, 1);
    inbound.write_all(&open_msg(65000, peer_id)).unwrap();
    let (loser, mut winner) = if inbound_wins {
        (&mut outbound, inbound)
    } else {
        (&mut inbound, outbound)
    };
    assert_eq!(read_msg(loser), (3, vec![6, 7]));
    if !inbound_wins {
        // The surviving connection still needs the peer's OPEN.
        winner.write_all(&open_msg(65000, peer_id)).unwrap();
    }
    assert_eq!(read_msg(&mut winner).0, 4, "KEEPALIVE on the survivor");
    let mut ka = vec![0xff; 16];
    ka.extend_from_slice(&[0, 19, 4]);
    winner.write_all(&ka).unwrap();
    let up = poll(Duration::from_secs(3), || {
        (speaker.peers()[0].summary.state == "established").then_some(())
    });
    assert!(up.is_some(), "{:?}", speaker.peers());
}

#[test]
fn collision_keeps_the_inbound_connection_of_a_larger_identifier() {
    let a = Addrs::new(33);
    // The peer's identifier (127.33.x.2) is larger than ours (.1).
    collision(33, a.peer, true);
}

#[test]
fn collision_keeps_our_connection_against_a_smaller_identifier() {
    collision(34, std::net::Ipv4Addr::new(1, 1, 1, 1), false);
}

/// The TCP segments with data that `s` received so far (`ss`'s
/// `data_segs_in`, the kernel's `tcpi_data_segs_in`).
fn data_segs_in(s: &TcpStream) -> u64 {
    let local = s.local_addr().unwrap();
    let peer = s.peer_addr().unwrap();
    let out = std::process::Command::new("ss")
        .args(["-tinH", "state", "established"])
        .arg("src")
        .arg(local.to_string())
        .arg("dst")
        .arg(peer.to_string())
        .output()
        .expect("ss (iproute2) runs");
    assert!(out.status.success(), "ss: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let n = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("data_segs_in:"))
        .unwrap_or_else(|| panic!("no data_segs_in for {local} -> {peer} in {text:?}"));
    n.parse().unwrap()
}

/// A peer whose OPEN and KEEPALIVE arrive together (one segment) gets our
/// KEEPALIVE, the first UPDATE and the End-of-RIB in one segment right
/// after them: one wake-up of the peer, not two (start → route). Our OPEN
/// left alone at connect, before the peer's OPEN.
#[test]
fn keepalive_first_update_and_end_of_rib_leave_in_one_segment() {
    support::init_log();
    let a = Addrs::new(35);
    let raw_listener = std::net::TcpListener::bind((a.peer, PORT)).unwrap();
    let (tx, _rx) = pathosd::chan::unbounded();
    let speaker = {
        let cfg = support::config(a);
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    let (mut s, _) = raw_listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    assert_eq!(read_msg(&mut s).0, 1, "our OPEN at connect");
    // The route and End-of-RIB wait in the session (OpenSent) for
    // Established; they are queued before the peer's bytes are written, and
    // the session handles its queue before its socket.
    speaker.set_route(
        "10.35.0.1/32".parse().unwrap(),
        Some(pathosd::bgp::types::RouteIntent::default()),
    );
    speaker.mark_initial_done();
    let mut open_and_keepalive = open_msg(65000, a.peer);
    open_and_keepalive.extend_from_slice(&[0xff; 16]);
    open_and_keepalive.extend_from_slice(&[0, 19, 4]);
    s.write_all(&open_and_keepalive).unwrap();
    let got: Vec<(u8, Vec<u8>)> = (0..3).map(|_| read_msg(&mut s)).collect();
    assert_eq!(got[0], (4, vec![]), "KEEPALIVE first: {got:?}");
    assert_eq!(got[1].0, 2, "then the UPDATE: {got:?}");
    assert!(got[1].1.ends_with(&[32, 10, 35, 0, 1]), "{got:?}");
    assert_eq!(got[2], (2, vec![0, 0, 0, 0]), "then End-of-RIB: {got:?}");
    assert_eq!(
        data_segs_in(&s),
        2,
        "our OPEN, then KEEPALIVE + UPDATE + End-of-RIB in one segment"
    );
}

/// RFC 9687 send hold timer: a peer that completes the session, keeps
/// sending KEEPALIVEs (so our HoldTimer never fires) but stops reading
/// while we have a large table to send. Its tiny receive buffer fills, ours
/// too, no byte moves: the session is closed once the send hold time has
/// passed without progress, within bounded slack, with "send hold timer
/// expired" as the reason and no NOTIFICATION (the connection is reset).
#[test]
fn a_peer_that_stops_reading_is_closed_by_the_send_hold_timer() {
    support::init_log();
    let a = Addrs::new(36);
    // A small receive buffer, inherited by the accepted connection, so
    // that the stall comes after a few KB rather than megabytes.
    let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    l.set_reuse_address(true).unwrap();
    l.set_recv_buffer_size(4096).unwrap();
    l.bind(&SocketAddr::new(IpAddr::V4(a.peer), PORT).into())
        .unwrap();
    l.listen(1).unwrap();
    let raw_listener: std::net::TcpListener = l.into();
    let send_hold = Duration::from_secs(4);
    let (tx, rx) = pathosd::chan::unbounded();
    let speaker = {
        let mut cfg = support::config(a);
        // More than the 3 s hold time, as RFC 9687 §3.4 requires.
        cfg.bgp.neighbors[0].send_hold_time = Some(pathosd::config::duration::Dur::secs(4));
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    let (mut s, _) = raw_listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    assert_eq!(read_msg(&mut s).0, 1, "our OPEN");
    let mut open_and_keepalive = open_msg(65000, a.peer);
    open_and_keepalive.extend_from_slice(&[0xff; 16]);
    open_and_keepalive.extend_from_slice(&[0, 19, 4]);
    s.write_all(&open_and_keepalive).unwrap();
    assert_eq!(read_msg(&mut s), (4, vec![]), "our KEEPALIVE");
    // The peer keeps its side of the session alive and reads nothing.
    let mut w = s.try_clone().unwrap();
    let keepalives = std::thread::spawn(move || {
        let keepalive: Vec<u8> = [[0xff; 16].as_slice(), &[0, 19, 4]].concat();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end && w.write_all(&keepalive).is_ok() {
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    assert!(
        poll(Duration::from_secs(3), || {
            (speaker.peers()[0].summary.state == "established").then_some(())
        })
        .is_some(),
        "established"
    );
    let routes = sixteen_megabytes_of_routes();
    let start = Instant::now();
    speaker.set_routes(routes);
    speaker.mark_initial_done();
    // Awaited, not polled: the session's down event.
    let down = smol::block_on(smol::future::or(
        async {
            while let Ok(e) = rx.recv().await {
                if e.from == pathosd::bgp::fsm::State::Established {
                    return Some(e);
                }
            }
            None
        },
        async {
            smol::Timer::after(send_hold + Duration::from_secs(10)).await;
            None
        },
    ))
    .expect("the session went down");
    let took = start.elapsed();
    let reason = down.reason.unwrap_or_default();
    assert!(
        reason.contains("send hold timer expired"),
        "reason: {reason:?}"
    );
    // Not before the send hold time (the timer starts at the first byte
    // that could not go, after `start`), and within bounded slack.
    assert!(took >= send_hold, "closed after {took:?}");
    assert!(
        took < send_hold + Duration::from_secs(2),
        "closed after {took:?}"
    );
    let peer = &speaker.peers()[0].summary;
    assert_eq!(peer.last_notification_sent, None, "no NOTIFICATION");
    let error = peer.last_error.clone().unwrap_or_default();
    assert!(error.contains("send hold timer expired"), "{error:?}");
    drop(s);
    keepalives.join().unwrap();
}

/// 16,000 routes, each with its own 1 KB of large communities, so each its
/// own UPDATE: ≈ 16 MB, more than loopback's send buffer grows to
/// (tcp_wmem's 4 MB cap) and the peer's receive buffer together.
fn sixteen_megabytes_of_routes() -> Vec<(
    pathosd::bgp::types::Prefix,
    Option<pathosd::bgp::types::RouteIntent>,
)> {
    (0..16_000u32)
        .map(|i| {
            let ip = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            let large_communities = (0..80)
                .map(|j| pathosd::bgp::types::LargeCommunity(65001, i, j))
                .collect();
            (
                pathosd::bgp::types::Prefix::new(IpAddr::V4(ip), 32).unwrap(),
                Some(pathosd::bgp::types::RouteIntent {
                    large_communities,
                    ..Default::default()
                }),
            )
        })
        .collect()
}

/// A slow reader: while a large pass waits in our buffer, a further route
/// change only marks its prefix; once the peer reads again and the pass is
/// out, the change follows on its own (no further batch needed), and the
/// session stays up.
#[test]
fn a_change_that_came_while_a_pass_waited_follows_it() {
    support::init_log();
    let a = Addrs::new(47);
    let raw_listener = std::net::TcpListener::bind((a.peer, PORT)).unwrap();
    let (tx, _rx) = pathosd::chan::unbounded();
    let speaker = {
        let mut cfg = support::config(a);
        // No KEEPALIVEs to keep up with while the peer does not read.
        cfg.bgp.hold_time = pathosd::config::duration::Dur::secs(0);
        support::TestSpeaker::start(&cfg, tx)
    }
    .unwrap();
    let (mut s, _) = raw_listener.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(read_msg(&mut s).0, 1, "our OPEN");
    let mut open_and_keepalive = open_msg(65000, a.peer);
    open_and_keepalive[22..24].copy_from_slice(&0u16.to_be_bytes());
    open_and_keepalive.extend_from_slice(&[0xff; 16]);
    open_and_keepalive.extend_from_slice(&[0, 19, 4]);
    s.write_all(&open_and_keepalive).unwrap();
    assert_eq!(read_msg(&mut s), (4, vec![]), "our KEEPALIVE");
    assert!(poll(Duration::from_secs(3), || {
        (speaker.peers()[0].summary.state == "established").then_some(())
    })
    .is_some());
    // ≈ 16 MB of UPDATEs (see the send hold timer test): most of it waits.
    let routes = sixteen_megabytes_of_routes();
    speaker.set_routes(routes);
    speaker.set_route(
        "10.99.0.1/32".parse().unwrap(),
        Some(pathosd::bgp::types::RouteIntent::default()),
    );
    // Now read: every UPDATE of the pass (one route each) and the one with
    // 10.99.0.1, in whatever order the pass put them.
    let end = Instant::now() + Duration::from_secs(30);
    let mut updates = 0u32;
    let mut seen = false;
    while !(seen && updates > 16_000) {
        assert!(
            Instant::now() < end,
            "10.99.0.1/32 came: {seen}, after {updates} UPDATEs"
        );
        let (ty, body) = read_msg(&mut s);
        if ty != 2 {
            continue;
        }
        updates += 1;
        seen |= body.ends_with(&[32, 10, 99, 0, 1]);
    }
    assert_eq!(speaker.peers()[0].summary.state, "established");
}

/// An OPEN from the peer (AS 65000, hold 90, id `id`) with the optional
/// parameters `params`.
fn open_with(id: std::net::Ipv4Addr, params: &[u8]) -> Vec<u8> {
    let mut open = vec![0xff; 16];
    open.extend_from_slice(&((29 + params.len()) as u16).to_be_bytes());
    open.extend_from_slice(&[1, 4]);
    open.extend_from_slice(&65000u16.to_be_bytes());
    open.extend_from_slice(&90u16.to_be_bytes());
    open.extend_from_slice(&id.octets());
    open.push(params.len() as u8);
    open.extend_from_slice(params);
    open
}

/// A new connection to the speaker once it takes one again (after its
/// error wait), with our OPEN read.
fn reconnect(a: Addrs) -> TcpStream {
    poll(Duration::from_secs(5), || {
        let mut s = connect_from(a.peer.into(), SocketAddr::new(a.ours.into(), PORT));
        (read_msg_opt(&mut s)?.0 == 1).then_some(s)
    })
    .expect("the speaker takes a new connection")
}

fn read_msg_opt(s: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 19];
    s.read_exact(&mut head).ok()?;
    let len = usize::from(u16::from_be_bytes([head[16], head[17]]));
    let mut body = vec![0u8; len.checked_sub(19)?];
    s.read_exact(&mut body).ok()?;
    Some((head[18], body))
}

/// The malformed and mismatching inputs of RFC 9234 and RFC 8950 against a
/// running speaker (role provider, strict): a Role or Extended Next Hop
/// capability of the wrong length is 2/0, a Role that does not pair with
/// ours or none at all is 2/11 Role Mismatch; the right Role establishes,
/// and an UPDATE with a malformed ONLY_TO_CUSTOMER is treat-as-withdraw:
/// no NOTIFICATION, the session stays up.
#[test]
fn malformed_and_mismatching_role_and_extended_next_hop_input() {
    use pathosd::config::duration::Dur;
    support::init_log();
    let a = Addrs::new(48);
    let mut cfg = support::config(a);
    let n = &mut cfg.bgp.neighbors[0];
    n.passive = true;
    n.role = Some(pathosd::config::schema::BgpRole::Provider);
    n.require_role = true;
    n.error_wait_min = Dur::ms(100);
    n.error_wait_max = Dur::ms(200);
    let (tx, _rx) = pathosd::chan::unbounded();
    let speaker = support::TestSpeaker::start(&cfg, tx).unwrap();
    let cases: [(&str, &[u8], Vec<u8>); 5] = [
        ("Role of length 2", &[2, 4, 9, 2, 3, 3], vec![2, 0]),
        (
            "Extended Next Hop of 5 octets",
            &[2, 7, 5, 5, 0, 1, 0, 1, 0],
            vec![2, 0],
        ),
        (
            "Role provider towards a provider",
            &[2, 3, 9, 1, 0],
            vec![2, 11],
        ),
        (
            "two differing Roles",
            &[2, 6, 9, 1, 3, 9, 1, 4],
            vec![2, 11],
        ),
        ("no Role, strict", &[], vec![2, 11]),
    ];
    for (what, params, want) in cases {
        let mut s = reconnect(a);
        s.write_all(&open_with(a.peer, params)).unwrap();
        let (bytes, closed) = read_to_close(&mut s);
        assert!(closed, "{what}");
        let msgs = messages(&bytes);
        assert_eq!(msgs.last(), Some(&(3, want)), "{what}: {msgs:?}");
    }
    // Customer: establishes.
    let mut s = reconnect(a);
    let mut open = open_with(a.peer, &[2, 3, 9, 1, 3]);
    open.extend_from_slice(&[0xff; 16]);
    open.extend_from_slice(&[0, 19, 4]);
    s.write_all(&open).unwrap();
    assert_eq!(read_msg(&mut s), (4, vec![]), "our KEEPALIVE");
    assert!(poll(Duration::from_secs(3), || {
        (speaker.peers()[0].summary.state == "established").then_some(())
    })
    .is_some());
    // UPDATE: ORIGIN, AS_PATH [65000], NEXT_HOP, OTC of 3 octets; NLRI.
    let attrs: &[u8] = &[
        0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe8, 0x40, 3, 4, 127, 0, 0, 2, 0xc0, 35, 3,
        0, 0xfd, 0xe8,
    ];
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(attrs);
    body.extend_from_slice(&[24, 198, 51, 100]);
    let mut update = vec![0xff; 16];
    update.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    update.push(2);
    update.extend_from_slice(&body);
    s.write_all(&update).unwrap();
    // Still up well past that UPDATE: our KEEPALIVEs (hold 3 s: every
    // second) keep coming and nothing else does.
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        let (ty, _) = read_msg(&mut s);
        assert_ne!(ty, 3, "a NOTIFICATION for a malformed OTC");
    }
    let st = &speaker.peers()[0].summary;
    assert_eq!(st.state, "established");
    assert!(st.messages_in.update >= 1);
}
