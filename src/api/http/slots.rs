//! The connection table: who holds a connection and what it is doing, the
//! caps (in all and per source), and whom a newcomer evicts when one is
//! reached.

use crate::chan::{Rx, Tx};
use smol::net::TcpStream;
use std::cell::RefCell;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::time::Instant;

use super::{MAX_CONNECTIONS, MAX_CONNECTIONS_PER_SOURCE};

/// What a connection is doing, for choosing whom to evict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Accepted, nothing read yet. Evicted last: its request may already be
    /// on the way, only not read yet.
    Fresh,
    /// Kept alive after a response, waiting for the next request.
    Idle,
    /// A request has started arriving but is not complete.
    Reading,
    /// The request is being answered (handler or response write).
    Busy,
}

struct Slot {
    id: u64,
    source: IpAddr,
    peer: SocketAddr,
    phase: Phase,
    /// When `phase` was entered.
    since: Instant,
    /// The connection (a second handle), to see whether its request has
    /// arrived before closing it as idle.
    stream: TcpStream,
    /// Dropped to evict: the connection's task waits on the other end.
    _evict: Tx<()>,
}

#[derive(Default)]
pub(super) struct Slots {
    next_id: u64,
    slots: Vec<Slot>,
}

/// Why a connection was let in or not.
pub(super) enum Admission {
    In {
        id: u64,
        evict: Rx<()>,
        evicted: Option<SocketAddr>,
    },
    Refused,
}

/// The per-source key: an IPv4 address, or the /64 of an IPv6 one (a host
/// usually has a whole /64 to pick addresses from).
fn source_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(a) => {
            let mut o = a.octets();
            o[8..].fill(0);
            IpAddr::V6(Ipv6Addr::from(o))
        }
        v4 => v4,
    }
}

impl Slots {
    /// Closes the connection matching `pick` that has been kept alive idle
    /// the longest, else the one that has been sending its request the
    /// longest, else the oldest that has sent nothing yet. Busy connections
    /// are never chosen.
    fn evict_one(&mut self, pick: impl Fn(&Slot) -> bool) -> Option<SocketAddr> {
        let mut order: Vec<(u8, Instant, usize)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| pick(s))
            .filter_map(|(i, s)| {
                let rank = match s.phase {
                    Phase::Idle => 0,
                    Phase::Reading => 1,
                    Phase::Fresh => 2,
                    Phase::Busy => return None,
                };
                Some((rank, s.since, i))
            })
            .collect();
        order.sort_unstable();
        // An idle or fresh connection whose request has arrived (just not
        // been read yet) is about to be busy: closing it would drop a
        // request that a client already sent.
        let (_, _, i) = order.into_iter().find(|&(rank, _, i)| {
            rank == 1
                || self
                    .slots
                    .get(i)
                    .is_some_and(|s| !request_waiting(&s.stream))
        })?;
        Some(self.slots.swap_remove(i).peer)
    }

    /// At the global cap: evicts (as [`Slots::evict_one`] does) from the
    /// source holding the most connections that has one to spare, so a
    /// source with few connections (a scraper) is the last to lose one to
    /// many sources at their caps.
    fn evict_from_largest_source(&mut self) -> Option<SocketAddr> {
        let mut counts: Vec<(IpAddr, usize)> = Vec::new();
        for s in &self.slots {
            match counts.iter_mut().find(|(src, _)| *src == s.source) {
                Some((_, n)) => *n = n.saturating_add(1),
                None => counts.push((s.source, 1)),
            }
        }
        counts.sort_by_key(|c| std::cmp::Reverse(c.1));
        counts
            .into_iter()
            .find_map(|(src, _)| self.evict_one(|s| s.source == src))
    }

    pub(super) fn admit(
        &mut self,
        stream: &TcpStream,
        peer: SocketAddr,
        now: Instant,
    ) -> Admission {
        let source = source_of(peer.ip());
        let mut evicted = None;
        if self.slots.iter().filter(|s| s.source == source).count() >= MAX_CONNECTIONS_PER_SOURCE {
            match self.evict_one(|s| s.source == source) {
                Some(p) => evicted = Some(p),
                None => return Admission::Refused,
            }
        }
        if self.slots.len() >= MAX_CONNECTIONS {
            match self.evict_from_largest_source() {
                Some(p) => evicted = Some(p),
                None => return Admission::Refused,
            }
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let (tx, rx) = crate::chan::bounded(1);
        self.slots.push(Slot {
            id,
            source,
            peer,
            phase: Phase::Fresh,
            since: now,
            stream: stream.clone(),
            _evict: tx,
        });
        Admission::In {
            id,
            evict: rx,
            evicted,
        }
    }
}

/// Whether bytes wait to be read on `s` (a peek; the socket is non-blocking).
/// A closed or failed connection has none.
fn request_waiting(s: &TcpStream) -> bool {
    let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    matches!(socket2::SockRef::from(s).peek(&mut b), Ok(n) if n > 0)
}

/// The connection table, shared by the accept loop and the connections'
/// tasks, all on the daemon's one thread: each borrow admits, marks or
/// frees one slot and ends before the next await.
pub(super) type SlotTable = Rc<RefCell<Slots>>;

/// One admitted connection's place in the table; dropping it frees the slot.
pub(super) struct Conn {
    pub(super) slots: SlotTable,
    pub(super) id: u64,
    pub(super) evicted: Rx<()>,
}

impl Conn {
    /// Enters `phase`; false when the connection was evicted meanwhile.
    pub(super) fn set(&self, phase: Phase) -> bool {
        let mut t = self.slots.borrow_mut();
        match t.slots.iter_mut().find(|s| s.id == self.id) {
            Some(s) => {
                if s.phase != phase {
                    s.phase = phase;
                    s.since = Instant::now();
                }
                true
            }
            None => false,
        }
    }

    /// Resolves once the connection is evicted.
    pub(super) async fn evicted(&self) {
        let _ = self.evicted.recv().await;
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut t = self.slots.borrow_mut();
        if let Some(i) = t.slots.iter().position(|s| s.id == self.id) {
            // The evicted connection's sender drops after the borrow ends.
            let gone = t.slots.swap_remove(i);
            drop(t);
            drop(gone);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_addresses_and_ipv6_slash_64s() {
        let s = |a: &str| source_of(a.parse().unwrap());
        assert_eq!(s("192.0.2.1"), s("192.0.2.1"));
        assert_ne!(s("192.0.2.1"), s("192.0.2.2"));
        assert_eq!(s("2001:db8::1"), s("2001:db8::ffff:1"));
        assert_ne!(s("2001:db8::1"), s("2001:db8:0:1::1"));
        assert_eq!(s("::ffff:192.0.2.1"), s("192.0.2.1"));
    }
}
