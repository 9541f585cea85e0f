//! Sockets: the listener, active connects and per-session socket options
//! (TCP MD5, TTL, GTSM).

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};

use smol::Async;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::PeerSettings;
use crate::sys;

/// Why an active socket could not be prepared.
#[derive(Debug)]
pub(crate) enum SetupError {
    /// The TCP MD5 key could not be set: the peer must not run at all
    /// (never a silent unauthenticated session).
    Md5(io::Error),
    /// Anything else (e.g. the local address is not configured yet): the
    /// attempt fails like a refused connection and is retried.
    Other(io::Error),
}

/// `ip` as the address family of a socket bound to `family_of`: IPv4 peers
/// on an IPv6 socket are seen as IPv4-mapped addresses.
pub(crate) fn for_family(ip: IpAddr, ipv6_socket: bool) -> Option<IpAddr> {
    match (ip, ipv6_socket) {
        (IpAddr::V4(a), true) => Some(IpAddr::V6(a.to_ipv6_mapped())),
        (IpAddr::V6(a), false) => a.to_ipv4_mapped().map(IpAddr::V4),
        _ => Some(ip),
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it stands for.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The BGP listener on `addr`, non-blocking.
pub fn listen(addr: SocketAddr) -> io::Result<Async<TcpListener>> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        // One listener for both families, like GoBGP's default.
        sock.set_only_v6(false)?;
    }
    sock.bind(&SockAddr::from(addr))?;
    sock.listen(64)?;
    Async::new(TcpListener::from(sock))
}

/// The key of an MD5-protected peer on the listener: set before any accept
/// so the peer's SYN is verified (RFC 2385 §2: "every segment").
pub(crate) fn listener_md5(
    listener: &Async<TcpListener>,
    peer: IpAddr,
    key: &str,
) -> io::Result<()> {
    let ipv6 = listener.get_ref().local_addr()?.is_ipv6();
    match for_family(peer, ipv6) {
        Some(ip) => sys::set_tcp_md5sig(listener.get_ref(), ip, key.as_bytes()),
        // An IPv6 peer cannot reach an IPv4 listener at all.
        None => Ok(()),
    }
}

/// TTL and GTSM options of one session (RFC 5082 §3: "the TTL ... MUST be
/// set to 255" on transmit; received segments must carry at least `min_ttl`).
pub(crate) fn session_options(sock: &Socket, s: &PeerSettings, ipv6: bool) -> io::Result<()> {
    // Every BGP message is written whole, so Nagle only delays: without
    // TCP_NODELAY the first UPDATE / End-of-RIB after the OPEN exchange waited
    // ≈ 41 ms for the peer's delayed ACK (seen against BIRD in a capture).
    sock.set_tcp_nodelay(true)?;
    if let Some(ttl) = s.ttl {
        if ipv6 {
            sock.set_unicast_hops_v6(u32::from(ttl))?;
        } else {
            sock.set_ttl_v4(u32::from(ttl))?;
        }
    }
    if let Some(min) = s.min_ttl {
        sys::set_min_ttl(sock, ipv6, min)?;
    }
    Ok(())
}

/// An accepted connection: the session options on top of what the listener
/// passed down (the MD5 key is inherited).
pub fn accepted(stream: &Async<TcpStream>, s: &PeerSettings) -> io::Result<()> {
    let ipv6 = stream.get_ref().local_addr()?.is_ipv6();
    session_options(&socket2::SockRef::from(stream.get_ref()), s, ipv6)
}

/// A socket for an outbound connection: MD5 key, bind to the configured
/// local address, TTL options, non-blocking. Nothing is sent yet.
pub(crate) fn active_socket(s: &PeerSettings) -> Result<Socket, SetupError> {
    let peer = SocketAddr::new(s.address, s.port);
    let sock = Socket::new(Domain::for_address(peer), Type::STREAM, Some(Protocol::TCP))
        .map_err(SetupError::Other)?;
    if let Some(key) = &s.password {
        // RFC 2385: the key must be in place before the SYN goes out.
        sys::set_tcp_md5sig(&sock, s.address, key.as_bytes()).map_err(SetupError::Md5)?;
    }
    if let Some(local) = s
        .local_address
        .filter(|a| a.is_ipv4() == s.address.is_ipv4())
    {
        if !local.is_unspecified() {
            sock.bind(&SockAddr::from(SocketAddr::new(local, 0)))
                .map_err(SetupError::Other)?;
        }
    }
    session_options(&sock, s, peer.is_ipv6()).map_err(SetupError::Other)?;
    sock.set_nonblocking(true).map_err(SetupError::Other)?;
    Ok(sock)
}

/// Connects `sock` (non-blocking) to the peer. The caller bounds the time
/// (ConnectRetryTimer).
///
/// Why not always wait for writable on the reactor: to a peer on this host
/// (loopback, a router's own BIRD) the kernel completes the handshake, or
/// gets the RST, while connect(2) still holds the socket, so it is done when
/// the call returns EINPROGRESS; a second connect(2) says so (0 on Linux,
/// EISCONN elsewhere) or returns the connect's error. Waiting on the reactor
/// for it would cost a wake-up of async-io's thread and then of this one
/// before the OPEN goes out — at start-up, a thread that has not run yet.
/// Only EALREADY (the SYN is still out, as to any remote peer) waits.
pub async fn connect(sock: Socket, peer: SocketAddr) -> io::Result<Async<TcpStream>> {
    let addr = SockAddr::from(peer);
    match sock.connect(&addr) {
        Ok(()) => return Async::new_nonblocking(TcpStream::from(sock)),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    match sock.connect(&addr) {
        Ok(()) => return Async::new_nonblocking(TcpStream::from(sock)),
        Err(e) if e.raw_os_error() == Some(libc::EISCONN) => {
            return Async::new_nonblocking(TcpStream::from(sock));
        }
        Err(e) if e.raw_os_error() == Some(libc::EALREADY) => {}
        Err(e) => return Err(e),
    }
    // Still non-blocking from active_socket: no fcntl again.
    let stream = Async::new_nonblocking(TcpStream::from(sock))?;
    // A non-blocking connect completes when the socket becomes writable;
    // SO_ERROR then says whether it succeeded.
    stream.writable().await?;
    if let Some(e) = stream.get_ref().take_error()? {
        return Err(e);
    }
    // Writable without error but not connected (rare): peer_addr says so.
    stream.get_ref().peer_addr()?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Neighbor};

    fn settings() -> PeerSettings {
        let mut c = Config::default();
        c.router.asn = 65001;
        c.router.router_id = Some("192.0.2.1".parse().unwrap());
        c.bgp.neighbors = vec![Neighbor {
            name: "n".into(),
            address: Some("127.0.77.2".parse().unwrap()),
            peer_asn: 65000,
            ..Neighbor::default()
        }];
        c.schema = "v1".into();
        c.vips = vec![crate::config::Vip {
            name: "v".into(),
            prefix: "10.0.0.1/32".parse().unwrap(),
            always: true,
            ..crate::config::Vip::default()
        }];
        crate::config::RunConfig::new(c).unwrap().neighbors[0]
            .settings
            .clone()
    }

    /// To a peer on this host the connect is done when connect(2) returns:
    /// the first poll has the connection (or the refusal), without waiting
    /// for the reactor's thread — which, at start-up, delayed the OPEN.
    #[test]
    fn local_connect_is_ready_at_the_first_poll() {
        let l = TcpListener::bind("127.0.77.3:0").unwrap();
        let addr = l.local_addr().unwrap();
        let sock = active_socket(&settings()).unwrap();
        let first = smol::future::block_on(smol::future::poll_once(connect(sock, addr)));
        let stream = match first {
            Some(r) => r.unwrap(),
            None => panic!("connect to {addr} waited for the reactor"),
        };
        let (accepted, from) = l.accept().unwrap();
        assert_eq!(from, stream.get_ref().local_addr().unwrap());
        assert_eq!(accepted.local_addr().unwrap(), addr);
        // Nothing listens any more: the refusal is there at once as well.
        drop(l);
        let sock = active_socket(&settings()).unwrap();
        match smol::future::block_on(smol::future::poll_once(connect(sock, addr))) {
            Some(Err(e)) => assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}"),
            Some(Ok(_)) => panic!("connected to {addr} with no listener"),
            None => panic!("refused connect to {addr} waited for the reactor"),
        }
    }

    /// Both ends of a session, dialled and accepted, have Nagle off.
    #[test]
    fn bgp_sockets_set_tcp_nodelay() {
        let s = settings();
        let sock = active_socket(&s).unwrap();
        assert!(sock.tcp_nodelay().unwrap());
        let l = TcpListener::bind("127.0.77.1:0").unwrap();
        let _client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        let a = Async::new(a).unwrap();
        assert!(!socket2::SockRef::from(a.get_ref()).tcp_nodelay().unwrap());
        accepted(&a, &s).unwrap();
        assert!(socket2::SockRef::from(a.get_ref()).tcp_nodelay().unwrap());
    }
}
