//! The only place with `unsafe`: thin wrappers over libc calls that std and
//! socket2 do not cover. Each wrapper states why its use of the raw API is sound.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// One address configured on a local interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IfAddr {
    pub interface: String,
    pub addr: IpAddr,
}

/// Lists the addresses of every local interface (getifaddrs(3)); the local
/// address guard reads them directly instead of running `ip`.
pub(crate) fn interface_addresses() -> io::Result<Vec<IfAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `head` on success; the list
    // stays valid until freeifaddrs, which is called exactly once below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: ifa_addr is non-null; sa_family tells which sockaddr it is,
        // and we only reinterpret it as the matching struct.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let addr = match family {
            libc::AF_INET => {
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        out.push(IfAddr {
            interface: name,
            addr,
        });
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// Write end of the signal self-pipe; -1 until `signal_pipe` installs it.
static SIGNAL_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; a full pipe just drops the
        // byte, which is fine (a pending signal of the same kind is queued).
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

/// Routes SIGTERM, SIGINT and SIGHUP into a pipe whose read end is returned:
/// each delivered signal becomes one byte (its number) to read. The daemon
/// reads it asynchronously, so no work happens inside the handler.
pub(crate) fn signal_pipe() -> io::Result<OwnedFd> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two fds on success; we take ownership of both.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds were just created by pipe2 and are owned by nobody else.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let old = SIGNAL_FD.swap(wr.as_raw_fd(), Ordering::SeqCst);
    // The write end must live for the rest of the process: the handler may
    // run at any time.
    std::mem::forget(wr);
    if old >= 0 {
        // SAFETY: `old` was a write end leaked by an earlier call; nothing else uses it.
        unsafe { libc::close(old) };
    }
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a plain handler and SA_RESTART is a
        // valid argument; on_signal only does async-signal-safe work.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(rd)
}

/// Sends SIGKILL to every process in process group `pgid` (an exec check's
/// script and its children when the check times out). Refuses pgid 0 and 1:
/// kill(0) and kill(-1) would hit our own group or every process.
pub(crate) fn kill_process_group(pgid: u32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad process group"))?;
    // SAFETY: kill(2) takes two integers and reads no memory of ours.
    let r = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Kills a child's process group unless the child was reaped: the exec
/// probe's future dropped on its timeout, or the hooks' runner dropped
/// mid-hook (the daemon stopping), leaves nothing behind.
pub(crate) struct GroupGuard {
    pub(crate) pgid: u32,
    pub(crate) armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = kill_process_group(self.pgid) {
                log::debug!("kill process group {}: {e}", self.pgid);
            }
        }
    }
}

/// Longest TCP MD5 key Linux accepts (TCP_MD5SIG_MAXKEYLEN in linux/tcp.h).
pub(crate) const TCP_MD5SIG_MAXKEYLEN: usize = 80;

/// `struct tcp_md5sig` from linux/tcp.h; libc does not define it. The layout
/// is fixed kernel ABI: a 128-octet sockaddr_storage, flags, prefix length,
/// key length, ifindex, then the key.
#[repr(C)]
struct TcpMd5Sig {
    addr: libc::sockaddr_storage,
    flags: u8,
    prefixlen: u8,
    keylen: u16,
    ifindex: libc::c_int,
    key: [u8; TCP_MD5SIG_MAXKEYLEN],
}

/// Sets (or, with an empty `key`, removes) the RFC 2385 TCP MD5 signature key
/// for segments to and from `peer` on `sock` (setsockopt TCP_MD5SIG). On a
/// listening socket the key is inherited by connections accepted from
/// `peer`. `peer` must be of the socket's family (an IPv4 peer on an IPv6
/// socket as its IPv4-mapped address). socket2 has no wrapper for it.
pub(crate) fn set_tcp_md5sig(sock: &impl AsRawFd, peer: IpAddr, key: &[u8]) -> io::Result<()> {
    if key.len() > TCP_MD5SIG_MAXKEYLEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "TCP MD5 key longer than 80 bytes",
        ));
    }
    // SAFETY: an all-zero tcp_md5sig (and sockaddr_storage) is valid.
    let mut sig: TcpMd5Sig = unsafe { std::mem::zeroed() };
    match peer {
        IpAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any
            // sockaddr; we write a sockaddr_in into its start.
            let sin = unsafe { &mut *(&mut sig.addr as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_addr.s_addr = u32::from(a).to_be();
        }
        IpAddr::V6(a) => {
            // SAFETY: as above, for a sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut sig.addr as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_addr.s6_addr = a.octets();
        }
    }
    sig.keylen = key.len() as u16; // <= 80, checked above
    sig.key[..key.len()].copy_from_slice(key);
    setsockopt_raw(
        sock,
        libc::IPPROTO_TCP,
        libc::TCP_MD5SIG,
        (&sig as *const TcpMd5Sig).cast(),
        std::mem::size_of::<TcpMd5Sig>(),
    )
}

/// RFC 5082 GTSM: drop received segments whose TTL (IPv4, IP_MINTTL) or hop
/// limit (IPv6, IPV6_MINHOPCOUNT) is below `min`. socket2 has no wrapper.
pub(crate) fn set_min_ttl(sock: &impl AsRawFd, ipv6: bool, min: u8) -> io::Result<()> {
    let v: libc::c_int = libc::c_int::from(min);
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT)
    } else {
        (libc::IPPROTO_IP, libc::IP_MINTTL)
    };
    setsockopt_raw(
        sock,
        level,
        name,
        (&v as *const libc::c_int).cast(),
        std::mem::size_of::<libc::c_int>(),
    )
}

/// Asks the kernel to hand over each datagram's received TTL (IPv4,
/// IP_RECVTTL) or Hop Limit (IPv6, IPV6_RECVHOPLIMIT) with it, which BFD
/// must check (RFC 5881 §5). socket2 has no wrapper.
pub(crate) fn set_recv_ttl(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let on: libc::c_int = 1;
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT)
    } else {
        (libc::IPPROTO_IP, libc::IP_RECVTTL)
    };
    setsockopt_raw(
        sock,
        level,
        name,
        (&on as *const libc::c_int).cast(),
        std::mem::size_of::<libc::c_int>(),
    )
}

/// One datagram received without waiting (`WouldBlock` when none is
/// queued): its length in `buf`, its source, and the TTL or Hop Limit it
/// arrived with when the socket asked for it ([`set_recv_ttl`]). std and
/// socket2 give the source but not the ancillary data.
pub(crate) fn recv_with_ttl(
    sock: &impl AsRawFd,
    buf: &mut [u8],
) -> io::Result<(usize, std::net::SocketAddr, Option<u8>)> {
    // SAFETY: all-zero is a valid sockaddr_storage (family AF_UNSPEC).
    let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // Room for one IP_TTL or IPV6_HOPLIMIT message (an int each) and then
    // some, aligned as cmsghdr requires.
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid msghdr (no name, no buffers, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` points at a live buffer of the length
    // given beside it (`buf` through `iov`, `from`, `control`), all
    // outliving the call; the kernel writes at most those lengths.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    let Ok(n) = usize::try_from(n) else {
        return Err(io::Error::last_os_error());
    };
    let mut ttl = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // within `msg.msg_controllen`, which it set; each header they return
    // lies inside `control`, and the data of the two types read here is
    // one int (ip(7), ipv6(7)), read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let (level, kind) = ((*c).cmsg_level, (*c).cmsg_type);
            if (level == libc::IPPROTO_IP && kind == libc::IP_TTL)
                || (level == libc::IPPROTO_IPV6 && kind == libc::IPV6_HOPLIMIT)
            {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                ttl = u8::try_from(v).ok();
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let from = match libc::c_int::from(from.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in,
            // which it is large enough and aligned for.
            let sin =
                unsafe { &*(&from as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            std::net::SocketAddr::new(
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))),
                u16::from_be(sin.sin_port),
            )
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 =
                unsafe { &*(&from as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            std::net::SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)),
                u16::from_be(sin6.sin6_port),
            )
        }
        _ => return Err(io::Error::from(io::ErrorKind::InvalidData)),
    };
    Ok((n, from, ttl))
}

/// Raises the soft RLIMIT_NOFILE to `want` (at most the hard limit) and
/// returns the soft limit now in force. Used by tests that hold more than the
/// usual 1,024 sockets open (the HTTP abuse test).
// rlim_t is u64 on musl and 64-bit glibc but c_ulong on 32-bit glibc.
#[cfg(feature = "test-support")]
#[allow(clippy::useless_conversion)]
pub fn raise_nofile_limit(want: u64) -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the live value we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let want = libc::rlim_t::try_from(want).unwrap_or(libc::rlim_t::MAX);
    if lim.rlim_cur >= want {
        return Ok(u64::try_from(lim.rlim_cur).unwrap_or(u64::MAX));
    }
    lim.rlim_cur = want.min(lim.rlim_max);
    // SAFETY: setrlimit only reads the rlimit we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::try_from(lim.rlim_cur).unwrap_or(u64::MAX))
}

fn setsockopt_raw(
    sock: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: *const libc::c_void,
    len: usize,
) -> io::Result<()> {
    let len =
        libc::socklen_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: callers pass a pointer to a live value of exactly `len` octets
    // of the type the option expects; the kernel only reads it.
    if unsafe { libc::setsockopt(sock.as_raw_fd(), level, name, value, len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Keeps glibc's mmap threshold at its 128 KiB default. glibc raises it to
/// the size of each large block freed (up to 32 MiB), so after the config
/// loader freed its buffers every later large block (the route tables'
/// builds, a session's first plan) came from the heap, and freeing them left
/// holes RSS kept: 10,000 `always` VIPs ran with 6.2 MB anonymous memory
/// instead of 4.7 (measured; the figure is in the history of
/// docs/performance.md). Setting the threshold turns the
/// adjustment off: large blocks are mapped and unmapped whole.
/// musl, OpenWrt's libc, maps large blocks itself and has no mallopt.
pub(crate) fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt takes no pointer and only sets a glibc malloc
    // parameter; it is called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Gives the heap's free memory back to the system, after the start's load
/// and after each reload. glibc keeps what the config loader freed as long
/// as a later allocation sits above it (a refused reload of a 4 MiB file
/// left 1.5 MB); musl, OpenWrt's libc, unmaps freed memory itself and has
/// no malloc_trim.
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and only releases free pages of
    // glibc's own arenas; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Lowers this thread's CPU priority to nice 10 (on Linux nice is a
/// thread's own): for the stop's bookkeeping once the Cease is out, so
/// that a router on the same CPU flushes our routes before it. Not 19: on
/// a CPU kept busy at nice 0 a thread at 19 gets about 1.5 % of it, and
/// the bookkeeping of 10,000 VIPs (85 ms at log level info) would then
/// outlast procd's 5 s; at 10 it gets about 10 %. Failure changes nothing
/// worth reporting.
pub(crate) fn lower_thread_priority() {
    // SAFETY: setpriority takes no pointer; who 0 is the calling thread.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// Waits until `fd` can be read (data or its end) for at most `limit`:
/// false when the time ran out. poll(2) of the one descriptor.
pub(crate) fn wait_readable(fd: &impl AsRawFd, limit: std::time::Duration) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(limit.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `p` is one valid pollfd, and the count passed is 1.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    match n {
        n if n < 0 => Err(io::Error::last_os_error()),
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Dissolves a TCP socket's connection: connect(2) with an `AF_UNSPEC`
/// address. An established connection is reset (one RST, as a close with
/// `SO_LINGER` {on, 0}); the socket is CLOSED again, its port released,
/// and it may connect anew (Linux `tcp_disconnect`).
pub(crate) fn tcp_disconnect(fd: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: an all-zero sockaddr is a valid value of the plain C struct.
    let mut sa: libc::sockaddr = unsafe { std::mem::zeroed() };
    sa.sa_family = libc::AF_UNSPEC as libc::sa_family_t;
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr>())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `sa` is a valid sockaddr of `len` bytes for the call.
    if unsafe { libc::connect(fd.as_raw_fd(), &sa, len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_127_0_0_1() {
        let addrs = interface_addresses().unwrap();
        assert!(addrs
            .iter()
            .any(|a| a.interface == "lo" && a.addr == IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }

    #[test]
    fn md5_and_min_ttl_are_accepted_by_the_kernel() {
        let s = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        set_tcp_md5sig(&s, peer, b"secret").unwrap();
        set_tcp_md5sig(&s, peer, b"").unwrap();
        assert!(set_tcp_md5sig(&s, peer, &[b'x'; 81]).is_err());
        set_min_ttl(&s, false, 254).unwrap();
    }
}
