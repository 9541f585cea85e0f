//! The HTTP API under abuse: with 1,000 idle connections and 300
//! slowloris clients held open against it, a normal client's `GET /status`
//! succeeds every time within 1 s. Everything runs on real loopback sockets,
//! with the shipped default timeouts; every attacker reconnects as soon as
//! the server closes it. The attackers come from 8 addresses (8 x 32 is more
//! than the 128 connections the server holds, so both caps evict), the
//! client from its own, as a LAN scraper does. (A client sharing the
//! attackers' address competes with them in connection age: see
//! `tests/api_http_server.rs` for eviction within one source.)
//!
//! The test process holds about 1,400 sockets: it raises its soft
//! RLIMIT_NOFILE (and fails, not skips, when the hard limit is too low).

#[path = "api_fixture.rs"]
mod fixture;

use fixture::*;
use smol::future::FutureExt;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

const IDLE: usize = 1_000;
const SLOWLORIS: usize = 300;
const POLLS: usize = 40;
/// Between two polls, so that the polls span more than the header timeout
/// (5 s): the slowloris clients are cut off and come back meanwhile.
const POLL_SPACING: Duration = Duration::from_millis(150);
const POLL_LIMIT: Duration = Duration::from_secs(1);
/// A closed attacker comes back after this (a connect failing at once, e.g.
/// for lack of file descriptors, must not spin).
const RECONNECT: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Stats {
    connects: AtomicUsize,
    closed_by_server: AtomicUsize,
    slow_heads: AtomicUsize,
    slow_bytes: AtomicUsize,
}

/// Attackers come from this many source addresses, 127.x.y.10 and up: more
/// than the global cap holds at the per-source cap, so the global eviction
/// is exercised too.
const ATTACK_SOURCES: usize = 8;

/// A non-blocking connect from `src` (socket2 binds before connecting).
async fn connect_from(src: Ipv4Addr, addr: SocketAddr) -> std::io::Result<smol::net::TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.set_nonblocking(true)?;
    s.bind(&SocketAddr::from((src, 0)).into())?;
    match s.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    let a = async_io::Async::new(TcpStream::from(s))?;
    a.writable().await?;
    if let Some(e) = a.get_ref().take_error()? {
        return Err(e);
    }
    Ok(smol::net::TcpStream::from(a))
}

/// Connects attacker `i`, counting it; tells `up` about its first connect.
async fn attach(
    addr: SocketAddr,
    i: usize,
    stats: &Stats,
    up: &mut Option<mpsc::Sender<()>>,
) -> smol::net::TcpStream {
    let o = match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.octets(),
        std::net::IpAddr::V6(_) => unreachable!("IPv4 test address"),
    };
    let src = Ipv4Addr::new(o[0], o[1], o[2], 10 + (i % ATTACK_SOURCES) as u8);
    loop {
        if let Ok(s) = connect_from(src, addr).await {
            stats.connects.fetch_add(1, Ordering::Relaxed);
            if let Some(tx) = up.take() {
                let _ = tx.send(());
            }
            return s;
        }
        smol::Timer::after(RECONNECT).await;
    }
}

/// Holds a connection open and idle. Every other one makes one request on
/// its first connection and stays kept alive; the rest, and every
/// reconnect, never send a byte (a client that sends requests as fast as it
/// is let in is a request flood, not an idle connection).
async fn idle_attacker(
    addr: SocketAddr,
    i: usize,
    keep_alive: bool,
    stats: Arc<Stats>,
    up: mpsc::Sender<()>,
) {
    let mut up = Some(up);
    let mut buf = [0u8; 4096];
    let mut first = true;
    loop {
        let mut s = attach(addr, i, &stats, &mut up).await;
        if keep_alive && std::mem::take(&mut first) {
            let _ = s
                .write_all(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
                .await;
        }
        // The response (if any) is read and dropped; 0 or an error is the
        // server closing the connection.
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
        stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
        smol::Timer::after(RECONNECT).await;
    }
}

/// Sends a request head one byte at a time, every 100..280 ms, never
/// finishing it; reconnects when the server closes.
async fn slowloris(addr: SocketAddr, i: usize, stats: Arc<Stats>, up: mpsc::Sender<()>) {
    let mut up = Some(up);
    let every = Duration::from_millis(100 + 20 * (i % 10) as u64);
    let mut buf = [0u8; 4096];
    loop {
        let mut s = attach(addr, IDLE + i, &stats, &mut up).await;
        let mut open = s
            .write_all(b"GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .is_ok();
        if open {
            stats.slow_heads.fetch_add(1, Ordering::Relaxed);
        }
        while open {
            let mut r = s.clone();
            let closed = async {
                // Anything the server says (408) comes before its close.
                while let Ok(n) = r.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
                true
            }
            .or(async {
                smol::Timer::after(every).await;
                false
            })
            .await;
            open = !closed && s.write_all(b"a").await.is_ok();
            if open {
                stats.slow_bytes.fetch_add(1, Ordering::Relaxed);
            }
        }
        stats.closed_by_server.fetch_add(1, Ordering::Relaxed);
        smol::Timer::after(RECONNECT).await;
    }
}

/// Connects to `addr` from `from`.
fn connect(addr: SocketAddr, from: Ipv4Addr) -> std::io::Result<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SocketAddr::from((from, 0)).into())?;
    s.connect_timeout(&addr.into(), POLL_LIMIT)?;
    Ok(s.into())
}

/// One `GET /status` on a new connection, as a scraper does it; the time it
/// took, or what went wrong.
fn poll(addr: SocketAddr, from: Ipv4Addr) -> Result<Duration, String> {
    let t0 = Instant::now();
    let mut s = connect(addr, from).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(POLL_LIMIT))
        .and_then(|()| s.set_write_timeout(Some(POLL_LIMIT)))
        .map_err(|e| e.to_string())?;
    s.write_all(
        format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    s.take(4 << 20)
        .read_to_end(&mut raw)
        .map_err(|e| format!("read after {:?}: {e}", t0.elapsed()))?;
    let took = t0.elapsed();
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no response head: {text:?}"))?;
    if !head.starts_with("HTTP/1.1 200 ") {
        return Err(format!("{head}\n{body}"));
    }
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))?;
    if v["vips"][0]["name"] != "web" {
        return Err(format!("unexpected /status: {body}"));
    }
    if took > POLL_LIMIT {
        return Err(format!("answered after {took:?}"));
    }
    Ok(took)
}

#[test]
fn status_stays_available_under_idle_and_slowloris_connections() {
    let want = (IDLE + SLOWLORIS + 500) as u64;
    let nofile = pathosd::sys::raise_nofile_limit(want).expect("setrlimit(RLIMIT_NOFILE)");
    assert!(
        nofile >= want,
        "this test needs {want} file descriptors; the hard limit allows {nofile} (raise it: ulimit -Hn)"
    );

    // The shipped defaults, not test values.
    let api = pathosd::config::schema::Api::default();
    let lim = pathosd::api::http::Limits {
        read_header_timeout: api.read_header_timeout.get(),
        read_timeout: api.read_timeout.get(),
        write_timeout: api.write_timeout.get(),
        idle_timeout: api.idle_timeout.get(),
    };
    let owner = start_owner(Duration::from_millis(1));
    let addr = start_http(test_ip(1), owner.ctl.clone(), lim);

    let stats = Arc::new(Stats::default());
    let (up_tx, up_rx) = mpsc::channel::<()>();
    let (stop_tx, stop_rx) = smol::channel::bounded::<()>(1);
    let st = stats.clone();
    let attackers = std::thread::spawn(move || {
        let ex = smol::LocalExecutor::new();
        for i in 0..IDLE {
            ex.spawn(idle_attacker(
                addr,
                i,
                i % 2 == 0,
                st.clone(),
                up_tx.clone(),
            ))
            .detach();
        }
        for i in 0..SLOWLORIS {
            ex.spawn(slowloris(addr, i, st.clone(), up_tx.clone()))
                .detach();
        }
        drop(up_tx);
        // Dropping the executor at the end cancels every attacker and
        // closes its socket.
        // Parks between tasks like the daemon's thread (rt::block_on), so
        // async-io's poller thread serves both sides as it does in a
        // daemon: under async_io::block_on this thread would take turns
        // at the reactor with it and hold up the server's wake-ups.
        smol::future::block_on(ex.run(async {
            let _ = stop_rx.recv().await;
        }));
    });
    let stop = StopOnDrop(Some(stop_tx));

    let t0 = Instant::now();
    for n in 0..IDLE + SLOWLORIS {
        let left = Duration::from_secs(60).saturating_sub(t0.elapsed());
        up_rx
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("only {n} attackers connected within 60 s: {e}"));
    }
    eprintln!(
        "{} attackers connected in {:?}",
        IDLE + SLOWLORIS,
        t0.elapsed()
    );

    let mut times = Vec::new();
    // The scraper has an address of its own, as on a LAN.
    let from = test_ip(2);
    for i in 0..POLLS {
        match poll(addr, from) {
            Ok(t) => times.push(t),
            Err(e) => panic!(
                "poll {i} of {POLLS} failed under attack ({} connects, {} closed by the server so far): {e}",
                stats.connects.load(Ordering::Relaxed),
                stats.closed_by_server.load(Ordering::Relaxed)
            ),
        }
        std::thread::sleep(POLL_SPACING);
    }
    times.sort();
    eprintln!(
        "{POLLS} polls: median {:?}, max {:?}; attackers: {} connects, {} closed by the server, {} slowloris heads started, {} more bytes dribbled",
        times[POLLS / 2],
        times[POLLS - 1],
        stats.connects.load(Ordering::Relaxed),
        stats.closed_by_server.load(Ordering::Relaxed),
        stats.slow_heads.load(Ordering::Relaxed),
        stats.slow_bytes.load(Ordering::Relaxed)
    );
    // The attack went on all along: the server kept closing attackers and
    // they kept coming back (each slowloris client more than once).
    assert!(stats.slow_heads.load(Ordering::Relaxed) > 2 * SLOWLORIS);
    assert!(stats.closed_by_server.load(Ordering::Relaxed) > IDLE + SLOWLORIS);
    drop(stop);
    attackers.join().expect("attacker thread");
}

/// Stops the attackers also when an assertion fails first.
struct StopOnDrop(Option<smol::channel::Sender<()>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.try_send(());
        }
    }
}
