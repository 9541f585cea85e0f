//! The HTTP server against real sockets: keep-alive, limits and timeouts.

use pathosd::api::http::{
    serve, Handler, Limits, Response, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_SOURCE,
};
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn limits(ms: u64) -> Limits {
    let d = Duration::from_millis(ms);
    Limits {
        read_header_timeout: d,
        read_timeout: d,
        write_timeout: d,
        idle_timeout: d,
    }
}

/// The test's /24 for server `octet`: 127.(100 + pid % 100).`octet`.0.
fn net(octet: u8) -> (u8, u8) {
    (100 + (std::process::id() % 100) as u8, octet)
}

/// Starts a server on its own 127.x address; returns its address.
fn start(octet: u8, lim: Limits) -> SocketAddr {
    start_holding(octet, lim).0
}

/// As [`start`]; requests for `/hold` are answered only once the returned
/// sender is dropped, so they keep their connection busy until then.
fn start_holding(octet: u8, lim: Limits) -> (SocketAddr, smol::channel::Sender<()>) {
    let (addr, release, _entered) = start_observed(octet, lim);
    (addr, release)
}

/// As [`start_holding`]; the receiver gets one message per `/hold` request
/// that has reached the handler.
fn start_observed(
    octet: u8,
    lim: Limits,
) -> (
    SocketAddr,
    smol::channel::Sender<()>,
    std::sync::mpsc::Receiver<()>,
) {
    let (a, b) = net(octet);
    let ip = format!("127.{a}.{b}.1");
    let listener = smol::block_on(smol::net::TcpListener::bind((ip.as_str(), 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    let (hold_tx, hold_rx) = smol::channel::bounded::<()>(1);
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let entered_tx = std::sync::Mutex::new(entered_tx);
    let handler: Handler = Arc::new(move |req| {
        let hold = hold_rx.clone();
        if req.path == "/hold" {
            let _ = entered_tx.lock().unwrap().send(());
        }
        Box::pin(async move {
            if req.path == "/hold" {
                let _ = hold.recv().await;
            }
            let body = format!(
                "{} {} {:?} {}",
                req.method,
                req.path,
                req.query,
                req.body.len()
            );
            Response::new(200, "text/plain", body).into()
        })
    });
    std::thread::spawn(move || pathosd::rt::block_on(serve(listener, handler, lim)));
    (addr, hold_tx, entered_rx)
}

/// Connects to `addr` from source address 127.x.y.`host` of `addr`'s /24.
fn connect_from(host: u8, addr: SocketAddr) -> TcpStream {
    let IpAddr::V4(ip) = addr.ip() else {
        unreachable!("IPv4 test addresses")
    };
    let o = ip.octets();
    let src = SocketAddr::from((Ipv4Addr::new(o[0], o[1], o[2], host), 0));
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&src.into()).unwrap();
    s.connect_timeout(&addr.into(), Duration::from_secs(2))
        .unwrap();
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Whether the server has closed `s` (EOF or reset within the read timeout).
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Ok(0))
        || matches!(s.read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads one response (head + Content-Length body).
fn read_response(s: &mut TcpStream) -> (u16, String, String) {
    let mut buf = Vec::new();
    let mut b = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut b).unwrap(),
            1,
            "connection closed in head: {buf:?}"
        );
        buf.push(b[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let status: u16 = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (status, head, String::from_utf8(body).unwrap())
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let addr = start(1, limits(2000));
    let mut s = connect(addr);
    s.write_all(b"GET /status?x=1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
        .unwrap();
    let (st, head, body) = read_response(&mut s);
    assert_eq!(st, 200);
    assert!(head.contains("Connection: keep-alive"));
    assert_eq!(body, "GET /status Some(\"x=1\") 0");
    let (st, _, body) = read_response(&mut s);
    assert_eq!(st, 200);
    assert_eq!(body, "POST /b None 3");
}

#[test]
fn oversized_header_gets_431_and_close() {
    let addr = start(2, limits(2000));
    let mut s = connect(addr);
    let big = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(9000));
    let _ = s.write_all(big.as_bytes());
    let (st, head, _) = read_response(&mut s);
    assert_eq!(st, 431);
    assert!(head.contains("Connection: close"));
}

#[test]
fn body_too_large_and_chunked_are_refused() {
    let addr = start(3, limits(2000));
    let mut s = connect(addr);
    s.write_all(b"POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s).0, 413);
    let mut s = connect(addr);
    s.write_all(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s).0, 411);
    let mut s = connect(addr);
    s.write_all(b"\x16\x03\x01garbage\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s).0, 400);
}

#[test]
fn slow_header_client_is_cut_off_by_read_header_timeout() {
    let addr = start(4, limits(300));
    let mut s = connect(addr);
    let t0 = Instant::now();
    s.write_all(b"GET / HTTP/1.1\r\nX-Slow: ").unwrap();
    let (st, _, _) = read_response(&mut s);
    assert_eq!(st, 408);
    assert!(t0.elapsed() < Duration::from_secs(3));
    // Meanwhile other clients are served.
    let mut s2 = connect(addr);
    s2.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s2).0, 200);
}

#[test]
fn idle_keep_alive_connection_is_closed_after_idle_timeout() {
    let addr = start(5, limits(300));
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(&mut s).0, 200);
    let t0 = Instant::now();
    let mut b = [0u8; 1];
    assert_eq!(
        s.read(&mut b).unwrap(),
        0,
        "server must close the idle connection"
    );
    assert!(t0.elapsed() < Duration::from_secs(3));
}

/// One request on `s`, answered 200: the connection is then kept alive idle.
fn one_request(s: &mut TcpStream) {
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(read_response(s).0, 200);
}

/// At the per-source cap a new connection is served, and the connection idle
/// the longest makes room: idle clients cannot keep others out (on the old
/// server the 33rd connection got 503 for the whole idle timeout).
#[test]
fn idle_connections_make_room_at_the_per_source_cap() {
    let addr = start(6, limits(20_000));
    let mut held: Vec<TcpStream> = (0..MAX_CONNECTIONS_PER_SOURCE)
        .map(|_| {
            let mut s = connect_from(2, addr);
            one_request(&mut s);
            s
        })
        .collect();
    let mut extra = connect_from(2, addr);
    one_request(&mut extra);
    assert!(closed_by_server(&mut held[0]), "oldest idle one is closed");
    // The others stay usable.
    one_request(&mut held[1]);
    one_request(&mut extra);
}

/// A connection whose request is being answered is never evicted: with all
/// of a source's slots busy its next connection gets 503, while another
/// source is served.
#[test]
fn busy_connections_are_kept_and_the_source_beyond_its_cap_gets_503() {
    let (addr, release, entered) = start_observed(7, limits(20_000));
    let mut busy: Vec<TcpStream> = (0..MAX_CONNECTIONS_PER_SOURCE)
        .map(|_| {
            let mut s = connect_from(2, addr);
            s.write_all(b"GET /hold HTTP/1.1\r\n\r\n").unwrap();
            s
        })
        .collect();
    for _ in 0..MAX_CONNECTIONS_PER_SOURCE {
        entered
            .recv_timeout(Duration::from_secs(5))
            .expect("every /hold request reaches the handler");
    }
    let mut extra = connect_from(2, addr);
    let _ = extra.write_all(b"GET / HTTP/1.1\r\n\r\n");
    let (st, _, body) = read_response(&mut extra);
    assert_eq!(st, 503, "{body}");
    assert!(body.contains("too many connections"), "{body}");
    let mut other = connect_from(3, addr);
    one_request(&mut other);
    drop(release);
    for s in &mut busy {
        let (st, _, body) = read_response(s);
        assert_eq!((st, body.as_str()), (200, "GET /hold None 0"));
    }
}

/// At the global cap the connection to close comes from the source holding
/// the most: a scraper with one connection keeps it even when it is the
/// oldest idle one of all, and the newcomer from yet another source is
/// served.
#[test]
fn global_cap_evicts_from_the_largest_source() {
    let addr = start(8, limits(20_000));
    let mut scraper = connect_from(2, addr);
    one_request(&mut scraper);
    let mut held: Vec<TcpStream> = Vec::new();
    let mut src = 3u8;
    while held.len() + 1 < MAX_CONNECTIONS {
        for _ in 0..MAX_CONNECTIONS_PER_SOURCE.min(MAX_CONNECTIONS - 1 - held.len()) {
            let mut s = connect_from(src, addr);
            one_request(&mut s);
            held.push(s);
        }
        src += 1;
    }
    let mut extra = connect_from(100, addr);
    one_request(&mut extra);
    one_request(&mut scraper);
    // The oldest connection of the first full source made room.
    assert!(closed_by_server(&mut held[0]));
}

/// Clients dribbling a request head are evicted too, oldest first, when no
/// connection is idle.
#[test]
fn slow_request_heads_make_room_when_none_is_idle() {
    let addr = start(9, limits(20_000));
    let _slow: Vec<TcpStream> = (0..MAX_CONNECTIONS_PER_SOURCE)
        .map(|_| {
            let mut s = connect_from(2, addr);
            s.write_all(b"GET / HTTP/1.1\r\nX-Slow: ").unwrap();
            s
        })
        .collect();
    // A head that has arrived but is not read yet protects its connection
    // (it may be a whole request), so until the server has read them a
    // newcomer can get 503; once read, the slow heads make room. Which one
    // goes depends on the order they were read in.
    let t0 = Instant::now();
    let mut answers = Vec::new();
    loop {
        let mut extra = connect_from(2, addr);
        extra.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let st = read_response(&mut extra).0;
        answers.push(st);
        if st == 200 {
            break;
        }
        assert_eq!(st, 503);
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "no room made within 1 s: {answers:?}"
        );
    }
}

/// RFC 9112 §6.3: differing Content-Length values are invalid framing, 400
/// and close (the old server took the first). Equal repeats are one value.
#[test]
fn conflicting_content_length_is_400_and_closes() {
    let addr = start(10, limits(5000));
    for bad in [
        "Content-Length: 3\r\nContent-Length: 5\r\n",
        "Content-Length: 5\r\nContent-Length: 3\r\n",
        "Content-Length: 3, 5\r\n",
        "Content-Length: +3\r\n",
        "Content-Length: 0x3\r\n",
        "Content-Length: \r\n",
        "Content-Length: 3,\r\n",
    ] {
        let mut s = connect(addr);
        let _ = s.write_all(format!("POST /b HTTP/1.1\r\n{bad}\r\nabcde").as_bytes());
        let (st, head, body) = read_response(&mut s);
        assert_eq!(st, 400, "{bad:?}: {body}");
        assert!(head.contains("Connection: close"), "{bad:?}");
        assert!(closed_by_server(&mut s), "{bad:?}");
    }
    for good in [
        "Content-Length: 3\r\nContent-Length: 3\r\n",
        "Content-Length: 3, 3\r\n",
        "Content-Length: 3\r\nContent-Length: 003\r\n",
    ] {
        let mut s = connect(addr);
        s.write_all(format!("POST /b HTTP/1.1\r\n{good}\r\nabc").as_bytes())
            .unwrap();
        let (st, _, body) = read_response(&mut s);
        assert_eq!((st, body.as_str()), (200, "POST /b None 3"), "{good:?}");
    }
    // RFC 9112 §3.2: more than one Host is 400 too.
    let mut s = connect(addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
        .unwrap();
    assert_eq!(read_response(&mut s).0, 400);
}
