//! The HTTP server against real sockets: keep-alive, limits and timeouts.

use pathosd::api::http::{serve, Handler, Limits, Response};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
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

/// Starts a server on its own 127.x address; returns its address.
fn start(octet: u8, lim: Limits) -> SocketAddr {
    let ip = format!("127.{}.{}.1", 100 + (std::process::id() % 100) as u8, octet);
    let listener = smol::block_on(smol::net::TcpListener::bind((ip.as_str(), 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    let handler: Handler = Arc::new(|req| {
        Box::pin(async move {
            let body = format!(
                "{} {} {:?} {}",
                req.method,
                req.path,
                req.query,
                req.body.len()
            );
            Response::new(200, "text/plain", body)
        })
    });
    std::thread::spawn(move || smol::block_on(serve(listener, handler, lim)));
    addr
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

#[test]
fn connections_beyond_the_cap_get_503() {
    let addr = start(6, limits(5000));
    let held: Vec<TcpStream> = (0..pathosd::api::http::MAX_CONNECTIONS)
        .map(|_| {
            let mut s = connect(addr);
            s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            assert_eq!(read_response(&mut s).0, 200);
            s
        })
        .collect();
    let mut extra = connect(addr);
    let _ = extra.write_all(b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(read_response(&mut extra).0, 503);
    drop(held);
}
