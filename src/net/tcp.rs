//! TCP connects with as little reactor work as the network allows, and the
//! reset close that keeps a connect-only probe's socket for the next one:
//! the tcp and http probes' connections and the OTLP exporter's.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

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
    use smol::future::FutureExt;
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::Instant;

    // 127.203.11.0/24 is net's (here and in lookup.rs): no other test uses it.

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
