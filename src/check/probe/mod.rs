//! Probes: each turns its check config into a [`CheckResult`].
//!
//! Probes run on the daemon's one thread ([`crate::rt`]) and never block
//! it: socket probes (plain http included) are async, exec runs through
//! smol::process, and what can only block (ureq for https and https://
//! proxies, the HTTP/2 client for grpc, the lookup of a host that is a
//! name) runs on the bounded pool in [`blocking`]. [`Probe::run`] races every probe against the check
//! timeout, so the timeout is always honoured even if a probe misbehaves.

pub mod blocking;
pub mod dns;
pub mod exec;
pub mod grpc;
pub mod http;
pub(crate) mod http1;
pub mod ping;
pub mod tcp;
pub mod udp;

use super::result::CheckResult;
use crate::config::target::{Host, HostPort};
use crate::config::{CheckSpec, ProbeSpec};
use smol::future::FutureExt;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A ready-to-run probe built from one check.
#[derive(Debug)]
pub struct Probe {
    timeout: Duration,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Http(Box<http::HttpProbe>),
    Dns(dns::DnsProbe),
    Ping(ping::PingProbe),
    Tcp(tcp::TcpProbe),
    Udp(udp::UdpProbe),
    Grpc(Box<grpc::GrpcProbe>),
    Exec(exec::ExecProbe),
}

impl Probe {
    /// Builds the probe of a check: its spec says which probe and where it
    /// goes, every value already parsed by validation. Errors are one-line
    /// problems only the machine decides (a CA file that cannot be read).
    pub fn new(check: &CheckSpec) -> Result<Probe, String> {
        let timeout = check.timeout;
        if timeout.is_zero() {
            return Err("timeout must be greater than 0".into());
        }
        // Runs of one check never overlap because a probe ends (at the
        // latest) at its timeout, before the next tick.
        if timeout >= check.interval {
            return Err(format!(
                "timeout {:?} must be less than interval {:?}",
                timeout, check.interval
            ));
        }
        let kind = match &check.probe {
            ProbeSpec::Http {
                options, target, ..
            } => Kind::Http(Box::new(http::HttpProbe::new(options, target, timeout)?)),
            ProbeSpec::Dns {
                options,
                target,
                answers,
            } => Kind::Dns(dns::DnsProbe::new(options, target, answers)),
            ProbeSpec::Ping { options, dst } => Kind::Ping(ping::PingProbe::new(options, *dst)?),
            ProbeSpec::Tcp { options, target } => Kind::Tcp(tcp::TcpProbe::new(options, target)),
            ProbeSpec::Udp {
                options,
                target,
                datagram,
            } => Kind::Udp(udp::UdpProbe::new(options, target, datagram)),
            ProbeSpec::Grpc(spec) => Kind::Grpc(Box::new(grpc::GrpcProbe::new(spec)?)),
            ProbeSpec::Exec(options) => Kind::Exec(exec::ExecProbe::new(options)),
        };
        Ok(Probe { timeout, kind })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What the probe does, for the timeout detail ("connect 127.0.0.1:80").
    fn what(&self) -> String {
        match &self.kind {
            Kind::Http(p) => p.what(),
            Kind::Dns(p) => p.what(),
            Kind::Ping(p) => p.what(),
            Kind::Tcp(p) => p.what(),
            Kind::Udp(p) => p.what(),
            Kind::Grpc(p) => p.what(),
            Kind::Exec(p) => p.what(),
        }
    }

    /// Runs the probe once, bounded by the check timeout.
    pub async fn run(&self) -> CheckResult {
        let start = Instant::now();
        let deadline = start + self.timeout;
        // Each kind's future boxed, at its own size: inline, every check
        // loop would carry the largest kind's state (≈ 17 KiB) while it
        // sleeps, and every run would allocate that much.
        let probe = async {
            match &self.kind {
                Kind::Http(p) => Box::pin(p.run(deadline)).await,
                Kind::Dns(p) => Box::pin(p.run(deadline)).await,
                Kind::Ping(p) => Box::pin(p.run(deadline)).await,
                Kind::Tcp(p) => Box::pin(p.run(deadline)).await,
                Kind::Udp(p) => Box::pin(p.run(deadline)).await,
                Kind::Grpc(p) => Box::pin(p.run(deadline)).await,
                Kind::Exec(p) => Box::pin(p.run(deadline)).await,
            }
        };
        let timer = async {
            crate::rt::sleep_until(deadline).await;
            let mut r = CheckResult::fail(format!(
                "{}: timed out after {:?}",
                self.what(),
                self.timeout
            ));
            r.timed_out = true;
            r
        };
        let mut r = probe.or(timer).await;
        r.duration = start.elapsed();
        r
    }
}

/// Runs `probe` on the socket address of `target`: the start every probe
/// that goes to one host and port shares (tcp, udp, dns, grpc). A target
/// that is a name is looked up first ([`resolve`]); a lookup that fails is
/// the probe's failure, with its detail.
pub(crate) async fn on_addr<F>(
    target: &HostPort,
    probe: impl FnOnce(SocketAddr) -> F,
) -> CheckResult
where
    F: std::future::Future<Output = CheckResult>,
{
    match resolve(target).await {
        Ok(addr) => probe(addr).await,
        Err(e) => CheckResult::fail(e),
    }
}

/// The socket address of `t`: at once for an address, by a lookup for a
/// name (at each probe, so a name that moves is followed): the first of
/// [`lookup`]'s.
pub(crate) async fn resolve(t: &HostPort) -> Result<SocketAddr, String> {
    let name = match &t.host {
        Host::Ip(ip) => return Ok(SocketAddr::new(*ip, t.port)),
        Host::Name(n) => n,
    };
    let addrs = lookup(name, t.port)
        .await
        .map_err(|e| format!("resolve {name}: {e}"))?;
    addrs
        .into_iter()
        .next()
        .ok_or_else(|| format!("resolve {name}: no addresses"))
}

/// Every address of `t`, to be tried in turn: itself for an address, a
/// lookup's (at each call) for a name.
pub(crate) async fn addrs(t: &HostPort) -> Result<Vec<SocketAddr>, String> {
    match &t.host {
        Host::Ip(ip) => Ok(vec![SocketAddr::new(*ip, t.port)]),
        Host::Name(n) => lookup(n, t.port)
            .await
            .map_err(|e| format!("resolve {n}: {e}")),
    }
}

/// The most addresses a lookup keeps, in the resolver's order (ureq's
/// resolver kept as many).
const MAX_ADDRS: usize = 16;

/// The addresses of the name `name` with `port` (at most [`MAX_ADDRS`], in
/// the system resolver's order), or why there are none.
///
/// getaddrinfo(3) can only block, so it runs on the daemon's bounded pool
/// ([`blocking`]) like every other probe client that blocks: a lookup
/// starts no thread the pool does not own (`smol::net::resolve` ran it on
/// the `blocking` crate's own pool, up to 500 threads). The check's
/// timeout bounds the wait ([`Probe::run`] races every probe against it):
/// a lookup still queued then is dropped unrun, and one that is running
/// keeps its worker until the resolver gives up (resolv.conf's timeout
/// and attempts), as ureq's requests do.
pub(crate) async fn lookup(name: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    use std::net::ToSocketAddrs;
    let name = name.to_owned();
    blocking::pool()
        .run(move || {
            (name.as_str(), port)
                .to_socket_addrs()
                .map(|addrs| addrs.take(MAX_ADDRS).collect())
                .map_err(|e| io_msg(&e))
        })
        .await?
}

/// An io::Error as a short lower-case phrase ("connection refused").
pub(crate) fn io_msg(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => return "connection refused".into(),
        io::ErrorKind::ConnectionReset => return "connection reset".into(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => return "timed out".into(),
        io::ErrorKind::UnexpectedEof => return "connection closed".into(),
        _ => {}
    }
    let s = e.to_string();
    let s = match s.find(" (os error") {
        Some(i) => &s[..i],
        None => &s,
    };
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => "error".into(),
    }
}

/// Awaits `fut` until `deadline`; None when the deadline came first.
///
/// Not an `async fn`: as one, its future held `fut` three times (the
/// argument, the block that awaits it, and the `Or` that holds the block),
/// and every probe's and export's future is one of these (an OTLP send:
/// 27 KB instead of 9 KB).
pub(crate) fn until<T>(
    deadline: Instant,
    fut: impl std::future::Future<Output = T>,
) -> impl std::future::Future<Output = Option<T>> {
    async { Some(fut.await) }.or(async move {
        crate::rt::sleep_until(deadline).await;
        None
    })
}

/// Text shown in details: at most 80 characters of one line.
pub(crate) fn snippet(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let line = s.lines().next().unwrap_or("").trim();
    line.chars().take(80).collect()
}

/// A TCP connection [`connect_tcp`] made: either done before any reactor
/// operation, or registered with the reactor because it had to wait.
pub(crate) enum Connected {
    Now(std::net::TcpStream),
    Waited(async_io::Async<std::net::TcpStream>),
}

impl Connected {
    /// The connection on the reactor, for probes that read or write. Only
    /// now is a connection made at once registered (one `epoll_ctl`).
    pub(crate) fn into_async(self) -> io::Result<async_io::Async<std::net::TcpStream>> {
        match self {
            // Still non-blocking from socket(2): no fcntl needed.
            Connected::Now(s) => async_io::Async::new_nonblocking(s),
            Connected::Waited(s) => Ok(s),
        }
    }

    /// Ends a connection that carried no data with a reset (RST) instead
    /// of a FIN, and keeps the socket for the next probe when it can.
    ///
    /// Why a reset, for a connect-only check: a FIN close is a four-segment
    /// exchange, and on loopback the kernel runs the backend's side of it
    /// in our close(2); then the prober's socket sits in TIME_WAIT for 60 s
    /// (at 1,000 checks a second about 60,000 of them on the router). A
    /// reset is one segment and leaves nothing behind. HAProxy's plain
    /// `check` ends the same way (its outgoing connections are marked
    /// "close hard if needed", `linger_risk`, in `tcp_connect_server`:
    /// SYN, SYN-ACK, ACK, RST on the wire), and keepalived's TCP_CHECK set
    /// `SO_LINGER` {1, 0} in `tcp_bind_connect` for years ("free the tcp
    /// port after closing the socket descriptor"; newer releases linger
    /// 5 s). Only for connections that sent nothing: a reset may discard
    /// data still unsent, so probes that send (tcp `send`, http) close
    /// normally.
    ///
    /// Why keep the socket: a connection made at once is reset with
    /// connect(2) to `AF_UNSPEC` ([`crate::sys::tcp_disconnect`]), which
    /// leaves a CLOSED, unbound socket that [`connect_tcp`] takes again:
    /// no socket(2) and close(2) per probe (a file, an inode and a socket
    /// allocated and freed: about a tenth of a loopback probe's CPU). At
    /// most [`IDLE_SOCKETS`] wait per address family; any other is closed
    /// with `SO_LINGER` {on, 0}, which resets the same way.
    pub(crate) fn close_with_reset(self, ipv6: bool) {
        match self {
            Connected::Now(s) => {
                let s = socket2::Socket::from(s);
                if crate::sys::tcp_disconnect(&s).is_ok() {
                    // Kept, or closed when dropped here (reset already).
                    let _ = IDLE.try_with(|idle| {
                        let mut idle = idle.borrow_mut();
                        let idle = &mut idle[usize::from(ipv6)];
                        if idle.len() < IDLE_SOCKETS {
                            idle.push(s);
                        }
                    });
                    return;
                }
                let _ = s.set_linger(Some(Duration::ZERO));
            }
            Connected::Waited(s) => {
                let _ = socket2::SockRef::from(s.get_ref()).set_linger(Some(Duration::ZERO));
            }
        }
    }
}

/// Idle probe sockets kept per address family (see
/// [`Connected::close_with_reset`]): the daemon's thread runs one loopback
/// connect at a time, so one would do; a few cover probes that overlap.
const IDLE_SOCKETS: usize = 4;

thread_local! {
    /// CLOSED TCP sockets ready to connect again: IPv4, IPv6.
    static IDLE: std::cell::RefCell<[Vec<socket2::Socket>; 2]> =
        const { std::cell::RefCell::new([Vec::new(), Vec::new()]) };
}

/// A socket for a connection to `addr`: an idle one, or a new one.
fn probe_socket(addr: SocketAddr) -> io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let idle = IDLE
        .try_with(|idle| idle.borrow_mut()[usize::from(addr.is_ipv6())].pop())
        .ok()
        .flatten();
    match idle {
        Some(s) => Ok(s),
        None => Socket::new(
            Domain::for_address(addr),
            Type::STREAM.nonblocking(),
            Some(Protocol::TCP),
        ),
    }
}

/// Connects to `addr` (a non-blocking connect(2)), with as little reactor
/// work as the network allows.
///
/// Why: a probe that waits for its connect on the reactor costs three
/// `epoll_ctl` (register, arm for writable, deregister at close) and a
/// wake-up of the thread just for the handshake. On loopback, and to a
/// backend on this host in general, the kernel completes the handshake
/// (or receives the RST) while connect(2) still holds the socket, so it is
/// done when the call returns EINPROGRESS: a second connect(2) then says so
/// (0 on Linux, EISCONN elsewhere) or returns the connect's error. Only when
/// it says EALREADY (the SYN is still out, as to any remote backend) does
/// the socket go on the reactor and wait to become writable, as
/// `Async::<TcpStream>::connect` does. What the backend sees is the same:
/// one handshake, and a normal close when the stream is dropped (or a
/// reset, [`Connected::close_with_reset`]).
pub(crate) async fn connect_tcp(addr: SocketAddr) -> io::Result<Connected> {
    let sock = probe_socket(addr)?;
    let addr = socket2::SockAddr::from(addr);
    match sock.connect(&addr) {
        Ok(()) => return Ok(Connected::Now(sock.into())),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    match sock.connect(&addr) {
        Ok(()) => return Ok(Connected::Now(sock.into())),
        Err(e) if e.raw_os_error() == Some(libc::EISCONN) => {
            return Ok(Connected::Now(sock.into()))
        }
        Err(e) if e.raw_os_error() == Some(libc::EALREADY) => {}
        Err(e) => return Err(e),
    }
    let stream = async_io::Async::new_nonblocking(std::net::TcpStream::from(sock))?;
    // The socket becomes writable when the handshake ends, either way.
    stream.writable().await?;
    match stream.get_ref().take_error()? {
        None => Ok(Connected::Waited(stream)),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    // 127.203.11.0/24 is this module's: no other test uses it.

    /// The probe is its spec's: validation made one variant per check
    /// type with the type's options inside, so there is no `type` to read
    /// again and no missing block to report.
    #[test]
    fn the_probe_is_its_specs() {
        let vip: crate::bgp::types::Prefix = "10.0.0.1/32".parse().unwrap();
        let spec = |v: serde_json::Value| {
            let mut errs = crate::config::Errors::default();
            let c = <crate::config::Check as crate::config::Field>::decode(&v, "c", &mut errs)
                .expect("decodes");
            crate::config::run::check_spec(c, &vip).expect("a valid check")
        };
        let tcp = spec(serde_json::json!({"type": "tcp", "tcp": {"port": 80}}));
        let dns = spec(serde_json::json!({"type": "dns", "dns": {"names": [r"a\.b.example."]}}));
        assert_eq!(
            Probe::new(&tcp).map(|p| p.what()).as_deref(),
            Ok("connect 10.0.0.1:80")
        );
        assert_eq!(
            Probe::new(&dns).map(|p| p.what()).as_deref(),
            Ok("dns 10.0.0.1:53")
        );
    }

    /// A host that is a name is looked up on the daemon's bounded pool (a
    /// job the pool counts), not on a thread of its own; `localhost` is the
    /// one name every machine resolves without a DNS server.
    #[test]
    fn a_name_is_looked_up_on_the_pool() {
        use crate::config::target::{Host, HostPort};
        let ip = HostPort {
            host: Host::Ip("127.203.11.5".parse().expect("address")),
            port: 7,
        };
        assert_eq!(
            crate::rt::block_on(resolve(&ip)),
            Ok("127.203.11.5:7".parse().expect("address"))
        );
        let before = blocking::stats().run;
        let named = HostPort {
            host: Host::Name("localhost".into()),
            port: 7,
        };
        let a = crate::rt::block_on(resolve(&named)).expect("localhost resolves");
        assert!(a.ip().is_loopback() && a.port() == 7, "{a}");
        assert!(blocking::stats().run > before, "not run on the pool");
        // Every address, for a client that tries them in turn.
        assert_eq!(
            crate::rt::block_on(addrs(&ip)),
            Ok(vec!["127.203.11.5:7".parse().expect("address")])
        );
        let all = crate::rt::block_on(addrs(&named)).expect("localhost resolves");
        assert!(all.contains(&a), "{all:?} has {a}");
        assert!(
            all.iter().all(|x| x.ip().is_loopback() && x.port() == 7),
            "{all:?}"
        );
    }

    /// On loopback the handshake is done when connect(2) returns: the
    /// connection never goes on the reactor, and the listener gets it.
    #[test]
    fn loopback_connect_is_done_without_the_reactor() {
        let l = TcpListener::bind("127.203.11.1:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let c = crate::rt::block_on(connect_tcp(addr)).expect("connect");
        assert!(matches!(c, Connected::Now(_)), "waited on the reactor");
        let (mut accepted, _) = l.accept().expect("accept");
        drop(c);
        // A normal close: the backend reads end of stream, not a reset.
        let mut buf = [0u8; 8];
        assert_eq!(accepted.read(&mut buf).expect("read after close"), 0);
    }

    /// A connect-only probe's connection is reset and its socket kept: the
    /// next connect takes it (no new socket), and the backend sees two
    /// connections, each reset, never a FIN.
    #[test]
    fn reset_connection_leaves_its_socket_for_the_next() {
        use std::os::fd::AsRawFd;
        let l = TcpListener::bind("127.203.11.4:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        let idle = || {
            IDLE.with(|i| {
                i.borrow()[0]
                    .iter()
                    .map(|s| s.as_raw_fd())
                    .collect::<Vec<_>>()
            })
        };
        let (first, second) = crate::rt::block_on(async {
            let a = connect_tcp(addr).await.expect("connect");
            let Connected::Now(s) = &a else {
                panic!("waited on the reactor")
            };
            let fd = s.as_raw_fd();
            a.close_with_reset(false);
            assert!(idle().contains(&fd), "{fd} not kept: {:?}", idle());
            let b = connect_tcp(addr).await.expect("connect again");
            let Connected::Now(s) = &b else {
                panic!("waited on the reactor")
            };
            let fd2 = s.as_raw_fd();
            b.close_with_reset(false);
            (fd, fd2)
        });
        assert_eq!(first, second, "a new socket instead of the idle one");
        for _ in 0..2 {
            let (mut accepted, _) = l.accept().expect("accept");
            let got = accepted.read(&mut [0u8; 8]);
            assert!(
                matches!(&got, Err(e) if e.kind() == io::ErrorKind::ConnectionReset),
                "{got:?}"
            );
        }
    }

    /// A refused connect is an error at once (the RST came during connect).
    #[test]
    fn loopback_refused_is_an_error() {
        let l = TcpListener::bind("127.203.11.2:0").expect("bind");
        let addr = l.local_addr().expect("addr");
        drop(l);
        let e = crate::rt::block_on(connect_tcp(addr))
            .err()
            .expect("connect to a closed port succeeded");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
    }

    /// A handshake that is not done when connect(2) returns (here the SYN
    /// is dropped because the listener's accept queue is full, so it is
    /// retransmitted after the kernel's initial RTO, 1 s) waits on the
    /// reactor and then succeeds.
    #[test]
    fn slow_handshake_waits_on_the_reactor() {
        use socket2::{Domain, Socket, Type};
        let l = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
        let bind: SocketAddr = "127.203.11.3:0".parse().expect("addr");
        l.bind(&bind.into()).expect("bind");
        // Backlog 0: Linux queues one connection, then drops SYNs.
        l.listen(0).expect("listen");
        let addr = l
            .local_addr()
            .expect("addr")
            .as_socket()
            .expect("inet address");
        let l: TcpListener = l.into();
        let t0 = Instant::now();
        let (held, got, accepter) = crate::rt::block_on(async {
            // Fill the queue to the kernel's limit, whatever it is (bounded).
            let mut held = Vec::new();
            let waiting = loop {
                assert!(held.len() < 16, "the accept queue never filled");
                let mut pending = Box::pin(connect_tcp(addr));
                match smol::future::poll_once(&mut pending).await {
                    Some(c) => held.push(c.expect("connect")),
                    None => break pending,
                }
            };
            // Room in the queue: the retransmitted SYN gets in.
            let n = held.len() + 1;
            let accepter = std::thread::spawn(move || {
                (0..n)
                    .map(|_| l.accept().map(|(s, _)| s))
                    .collect::<Vec<_>>()
            });
            let deadline = Instant::now() + Duration::from_secs(10);
            let got = async { Some(waiting.await) }
                .or(async {
                    crate::rt::sleep_until(deadline).await;
                    None
                })
                .await;
            (held, got, accepter)
        });
        let got = got.expect("no connect within 10 s").expect("connect");
        assert!(!held.is_empty());
        assert!(matches!(got, Connected::Waited(_)), "done at once");
        assert!(t0.elapsed() >= Duration::from_millis(500));
        let accepted = accepter.join().expect("accepter");
        assert!(accepted.iter().all(Result::is_ok), "{accepted:?}");
    }
}
