//! The BFD driver: the sockets and the clock of the neighbors' BFD sessions
//! (`bfd::session`, pure), run by the owner task in its own loop. The owner
//! waits on [`Bfd::ready`] beside its other events and calls [`Bfd::turn`]
//! when it fires, so a stalled owner stops sending BFD packets as well and
//! the peer's BFD declares this router's daemon down within its Detection
//! Time: that is what BFD is here for.
//!
//! Sockets (RFC 5881 §4, RFC 5883 §5):
//!
//! * one receiving socket per local address and port (3784 single hop,
//!   4784 multihop), bound to the session's local address with
//!   SO_REUSEADDR, beside a BIRD on the same router that binds the
//!   wildcard address on the same port; the kernel hands each datagram to
//!   the socket bound to its destination address. Each datagram comes with
//!   its TTL (`sys::recv_with_ttl`);
//! * one sending socket per session, bound to the local address and a
//!   source port in 49152–65535 kept for the session's life, TTL 255.
//!
//! A datagram goes to the session its Your Discriminator names, else (zero)
//! to the session of its source address on that socket; one that matches
//! none is counted ([`Bfd::unmatched`]) and dropped, as is one that fails
//! decoding or a session's checks (source, TTL), counted by the session.

use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

use pathosd_core::api::model::BfdView;
use pathosd_core::bfd::session::{Config, Event, Output, Received, Session};
use pathosd_core::bfd::wire::{self, State};
use pathosd_core::bfd::{DropReason, Hops, Time, SEND_TTL, SOURCE_PORTS};
use pathosd_core::config::run::{BfdRun, RunConfig};
use smol::Async;

/// Datagrams read from one socket in one turn: a flood cannot hold the
/// owner; what is left is read on the next turn.
const READS_PER_TURN: usize = 64;
/// Tries for a free source port before the session runs without one.
const PORT_TRIES: u32 = 64;
/// BFD Control packets are at most 24 octets plus authentication.
const DATAGRAM_MAX: usize = 512;

/// One neighbor's session with its sending socket.
struct Peer {
    name: String,
    run: BfdRun,
    session: Session,
    /// None when no source port could be bound (logged): the session runs
    /// but sends nothing, so it never comes Up and never fails the client.
    tx: Option<UdpSocket>,
    /// The earliest of the session's transmit time and detection deadline.
    deadline: Option<Instant>,
    up_since: Option<Instant>,
    downs: u32,
    /// Removed from the config: it says AdminDown for a Detection Time
    /// (RFC 5882 §8, the session's own schedule), then goes.
    retiring: bool,
}

struct Rx {
    local: SocketAddr,
    sock: Async<UdpSocket>,
}

/// Every BFD session of the daemon; empty when no neighbor enables BFD.
pub(super) struct Bfd {
    /// The sessions' clock starts here (`bfd::Time`).
    origin: Instant,
    peers: Vec<Peer>,
    rx: Vec<Rx>,
    unmatched: u64,
    /// Seeds the jitter, the discriminators and the source ports.
    rng: u64,
}

impl Bfd {
    /// The sessions of `cfg`'s neighbors that enable BFD; a socket that
    /// cannot be opened is logged and its sessions stay Down.
    pub(super) fn new(cfg: &RunConfig, now: Instant) -> Bfd {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()).rotate_left(32);
        let mut bfd = Bfd {
            origin: now,
            peers: Vec::new(),
            rx: Vec::new(),
            unmatched: 0,
            rng: seed | 1,
        };
        bfd.reconfigure(cfg, now);
        bfd
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64: enough to spread ports, discriminators and jitter.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// The sessions of a new config: a session whose peer, local address
    /// and transport are unchanged goes on (new intervals start a Poll
    /// Sequence, RFC 5880 §6.8.3); a removed one says AdminDown first, so
    /// that the peer's BGP does not take that for a failure (RFC 5882
    /// §4.2); new ones start Down.
    pub(super) fn reconfigure(&mut self, cfg: &RunConfig, now: Instant) {
        let t = self.time(now);
        let mut old = std::mem::take(&mut self.peers);
        for n in &cfg.neighbors {
            let Some(run) = n.bfd else { continue };
            let same = |p: &Peer| {
                p.name == n.name()
                    && p.run.peer == run.peer
                    && p.run.local == run.local
                    && p.run.hops == run.hops
            };
            if let Some(i) = old.iter().position(same) {
                let mut p = old.swap_remove(i);
                if p.retiring {
                    p.retiring = false;
                    let out = p.session.handle(Event::AdminUp, t);
                    carry_out(self.origin, &mut p, out, now);
                }
                if p.run.timers != run.timers {
                    p.run = run;
                    let out = p.session.handle(Event::SetTimers(run.timers), t);
                    carry_out(self.origin, &mut p, out, now);
                }
                self.peers.push(p);
            } else {
                let p = self.start(n.name(), run, now);
                self.peers.push(p);
            }
        }
        for mut p in old {
            if !p.retiring {
                p.retiring = true;
                let out = p.session.handle(Event::AdminDown, t);
                carry_out(self.origin, &mut p, out, now);
                log::info!("bfd {}: session removed", p.name);
            }
            self.peers.push(p);
        }
        self.open_rx();
    }

    fn start(&mut self, name: &str, run: BfdRun, now: Instant) -> Peer {
        let discr = loop {
            // RFC 5880 §6.8.1, bfd.LocalDiscr: "It MUST be unique across
            // all BFD sessions on this system, and nonzero."
            let d = (self.next_random() >> 32) as u32;
            if let Some(d) = std::num::NonZeroU32::new(d) {
                if self
                    .peers
                    .iter()
                    .all(|p| p.session.local_discriminator() != d.get())
                {
                    break d;
                }
            }
        };
        let cfg = Config {
            local_discriminator: discr,
            timers: run.timers,
            hops: run.hops,
        };
        let seed = self.next_random();
        let session = Session::new(cfg, seed, self.time(now));
        let tx = match self.open_tx(&run) {
            Ok(s) => Some(s),
            Err(e) => {
                log::error!(
                    "bfd {name}: cannot open a socket from {} to send to {}: {e}; the session stays down",
                    run.local,
                    run.peer
                );
                None
            }
        };
        log::info!(
            "bfd {name}: session to {} from {} ({}), discriminator {discr}",
            run.peer,
            run.local,
            match run.hops {
                Hops::Single => "single hop",
                Hops::Multi { .. } => "multihop",
            }
        );
        Peer {
            name: name.to_string(),
            run,
            session,
            tx,
            // Due at once: a new session sends its first packet now.
            deadline: Some(now),
            up_since: None,
            downs: 0,
            retiring: false,
        }
    }

    /// A sending socket from the local address and a source port of RFC
    /// 5881 §4's range, with TTL 255 (RFC 5881 §5).
    fn open_tx(&mut self, run: &BfdRun) -> std::io::Result<UdpSocket> {
        use socket2::{Domain, Protocol, Socket, Type};
        let v6 = run.local.is_ipv6();
        let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
        let sock = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        if v6 {
            sock.set_unicast_hops_v6(u32::from(SEND_TTL))?;
        } else {
            sock.set_ttl_v4(u32::from(SEND_TTL))?;
            // Network control precedence, as routing protocols send.
            let _ = sock.set_tos_v4(0xc0);
        }
        sock.set_nonblocking(true)?;
        let span = u64::from(SOURCE_PORTS.end() - SOURCE_PORTS.start()) + 1;
        let mut last = None;
        for _ in 0..PORT_TRIES {
            let port = SOURCE_PORTS.start() + (self.next_random() % span) as u16;
            match sock.bind(&SocketAddr::new(run.local, port).into()) {
                Ok(()) => return Ok(sock.into()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::AddrInUse)))
    }

    /// A receiving socket for every (local address, port) a session needs,
    /// and none for those no session needs any more.
    fn open_rx(&mut self) {
        let want: Vec<SocketAddr> = self
            .peers
            .iter()
            .map(|p| SocketAddr::new(p.run.local, p.run.hops.port()))
            .collect();
        self.rx.retain(|r| want.contains(&r.local));
        for local in want {
            if self.rx.iter().any(|r| r.local == local) {
                continue;
            }
            match open_rx(local) {
                Ok(sock) => self.rx.push(Rx { local, sock }),
                Err(e) => {
                    log::error!("bfd: cannot receive on {local}: {e}; its sessions stay down")
                }
            }
        }
    }

    fn time(&self, now: Instant) -> Time {
        Time::since(self.origin, now)
    }

    /// Resolves when a datagram waits or a session's deadline has come;
    /// never while there is no session.
    pub(super) async fn ready(&self) {
        use smol::future::FutureExt;
        if self.peers.is_empty() {
            return std::future::pending().await;
        }
        let deadline = self.peers.iter().filter_map(|p| p.deadline).min();
        let timer = async {
            match deadline {
                Some(d) => crate::rt::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        // The first socket readable, or failed: the turn reads it. Polled
        // in place: this wait is made anew on every turn of the owner.
        let readable = std::future::poll_fn(|cx| {
            if self.rx.iter().any(|r| r.sock.poll_readable(cx).is_ready()) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        });
        timer.or(readable).await
    }

    /// Reads what waits on the sockets, fires the deadlines that have come
    /// and sends what the sessions ask for. Returns the neighbors whose
    /// session went from Up to Down in a way their BGP session must act on
    /// (`Change::fails_client`).
    pub(super) fn turn(&mut self, now: Instant) -> Vec<String> {
        let mut failed = Vec::new();
        let mut buf = [0u8; DATAGRAM_MAX];
        for k in 0..self.rx.len() {
            for _ in 0..READS_PER_TURN {
                let (n, from, ttl) =
                    match crate::sys::recv_with_ttl(self.rx[k].sock.get_ref(), &mut buf) {
                        Ok(r) => r,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => {
                            log::debug!("bfd: receive on {}: {e}", self.rx[k].local);
                            break;
                        }
                    };
                let local = self.rx[k].local;
                self.datagram(local, &buf[..n], from, ttl, now, &mut failed);
            }
        }
        let t = self.time(now);
        for i in 0..self.peers.len() {
            if self.peers[i].deadline.is_some_and(|d| d <= now) {
                let out = self.peers[i].session.handle(Event::Timer, t);
                let p = &mut self.peers[i];
                if carry_out(self.origin, p, out, now) && !p.retiring {
                    failed.push(p.name.clone());
                }
            }
        }
        // A retired session has said AdminDown long enough.
        let before = self.peers.len();
        self.peers
            .retain(|p| !(p.retiring && p.session.next_tx().is_none()));
        if self.peers.len() < before {
            self.open_rx();
        }
        failed
    }

    /// One datagram that arrived on the socket of `local`.
    fn datagram(
        &mut self,
        local: SocketAddr,
        bytes: &[u8],
        from: SocketAddr,
        ttl: Option<u8>,
        now: Instant,
        failed: &mut Vec<String>,
    ) {
        let on_socket = |p: &Peer| p.run.local == local.ip() && p.run.hops.port() == local.port();
        let decoded = wire::decode(bytes);
        // RFC 5880 §6.8.6: "If the Your Discriminator field is nonzero, it
        // MUST be used to select the session with which this BFD packet is
        // associated. If no session is found, the packet MUST be
        // discarded." Otherwise the session is the one of the source
        // address on this socket.
        let i = match &decoded {
            Ok(p) if p.your_discriminator != 0 => self.peers.iter().position(|s| {
                on_socket(s) && s.session.local_discriminator() == p.your_discriminator
            }),
            _ => self
                .peers
                .iter()
                .position(|s| on_socket(s) && s.run.peer == from.ip()),
        };
        let Some(i) = i else {
            self.unmatched = self.unmatched.saturating_add(1);
            return;
        };
        let event = match decoded {
            Ok(packet) => Event::Received(Received {
                packet,
                // Without the ancillary data the TTL is unknown: 0 is
                // refused by every session.
                ttl: ttl.unwrap_or(0),
                source_ok: from.ip() == self.peers[i].run.peer,
            }),
            Err(e) => Event::Malformed(e),
        };
        let t = self.time(now);
        let out = self.peers[i].session.handle(event, t);
        let p = &mut self.peers[i];
        if carry_out(self.origin, p, out, now) && !p.retiring {
            failed.push(p.name.clone());
        }
    }

    /// The view of neighbor `name`'s session, if it runs one.
    pub(super) fn view(&self, name: &str, now: Instant) -> Option<BfdView> {
        let p = self.peers.iter().find(|p| p.name == name && !p.retiring)?;
        let s = &p.session;
        Some(BfdView {
            state: s.state().as_str(),
            remote_state: s.remote_state().as_str(),
            diag: s.diag().as_str(),
            multihop: matches!(p.run.hops, Hops::Multi { .. }),
            local_discriminator: s.local_discriminator(),
            remote_discriminator: s.remote_discriminator(),
            up_for: p.up_since.map(|t| now.saturating_duration_since(t)),
            downs: p.downs,
            dropped: s
                .drops()
                .iter()
                .filter(|(r, _)| *r != DropReason::NoSession)
                .map(|(r, n)| (r.as_str(), n))
                .collect(),
        })
    }

    /// Datagrams that matched no session.
    pub(super) fn unmatched(&self) -> u64 {
        self.unmatched
    }
}

fn open_rx(local: SocketAddr) -> std::io::Result<Async<UdpSocket>> {
    use socket2::{Domain, Protocol, Socket, Type};
    let v6 = local.is_ipv6();
    let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
    let sock = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if v6 {
        sock.set_only_v6(true)?;
    }
    // Beside a BIRD on this router, whose BFD binds the wildcard address
    // on the same port (also with SO_REUSEADDR).
    sock.set_reuse_address(true)?;
    crate::sys::set_recv_ttl(&sock, v6)?;
    sock.bind(&local.into())?;
    Async::new(UdpSocket::from(sock))
}

/// Sends the packet of `out`, logs its state change and keeps its
/// deadlines; true when the change fails the BGP session.
fn carry_out(origin: Instant, p: &mut Peer, out: Output, now: Instant) -> bool {
    if let (Some(packet), Some(tx)) = (out.send, &p.tx) {
        let to = SocketAddr::new(p.run.peer, p.run.hops.port());
        if let Err(e) = tx.send_to(&packet.encode(), to) {
            log::debug!("bfd {}: send to {to}: {e}", p.name);
        }
    }
    p.deadline = [out.next_tx, out.detect_at]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.to_instant(origin));
    let Some(c) = out.change else {
        return false;
    };
    if c.to == State::Up {
        p.up_since = Some(now);
    } else if c.from == State::Up {
        p.up_since = None;
    }
    let fails = c.fails_client();
    if fails {
        p.downs = p.downs.saturating_add(1);
        log::warn!(
            "bfd {}: session {} -> {} ({}): taking the BGP session down",
            p.name,
            c.from,
            c.to,
            c.diag
        );
    } else {
        log::info!(
            "bfd {}: session {} -> {} ({})",
            p.name,
            c.from,
            c.to,
            c.diag
        );
    }
    fails
}
