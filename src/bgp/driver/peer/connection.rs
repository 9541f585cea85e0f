//! The connections' bytes: reading and framing the peer's messages, an
//! inbound connection placed where the peer's FSMs say (the session's, the
//! RFC 4271 §6.8 collision candidate, or closed), writes (one per batch of
//! replies; what the socket does not take at once waits, for the wait loop
//! and RFC 9687's SendHoldTimer), and the graceful close.

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::Async;

use super::codec::{self, Kind};
use super::{Conn, PeerTask, Session, Which, CLOSE_LINGER};
use crate::bgp::driver::net;
use crate::bgp::fsm::{Event, State};
use crate::bgp::session::{Refusal, Step};

impl PeerTask {
    /// A connection from the peer's address: the peer's FSMs say whether
    /// it is the session's, the collision candidate, or closed.
    pub(super) async fn inbound(&mut self, stream: Async<TcpStream>) {
        let name = &self.s.name;
        if let Err(e) = net::accepted(&stream, &self.s) {
            log::warn!("bgp peer {name}: inbound connection closed: socket options: {e}");
            return;
        }
        let mut conn = Some(Conn::new(stream));
        let steps = self.fsm.inbound(self.now());
        for step in steps {
            match step {
                Step::AcceptMain => {
                    self.connecting = None;
                    self.main.conn = conn.take();
                }
                Step::AcceptCandidate => {
                    self.cand = Some(Session {
                        conn: conn.take(),
                        ..Session::default()
                    });
                }
                Step::Refuse(Refusal::Idle) => {
                    log::debug!(
                        "bgp peer {}: inbound connection refused in Idle",
                        self.s.name
                    );
                }
                Step::Refuse(Refusal::CandidateTracked) => {
                    log::debug!(
                        "bgp peer {}: inbound connection closed: collision already tracked",
                        self.s.name
                    );
                }
                step => self.step(step).await,
            }
        }
        self.drain_queue().await;
    }

    /// Frames and handles every complete message buffered on `which`; what
    /// they make us send leaves in one write per connection when all are
    /// handled. Why: a peer whose OPEN and KEEPALIVE arrive together gets
    /// our KEEPALIVE, the first UPDATEs and End-of-RIB in one segment — one
    /// wake-up of the peer instead of two, and one write(2) here.
    pub(super) async fn input(&mut self, which: Which) {
        self.batching = true;
        self.input_messages(which).await;
        self.batching = false;
        for w in [Which::Main, Which::Candidate] {
            self.flush_out(w);
        }
        // A failed write queued TcpConnectionFails.
        self.drain_queue().await;
    }

    /// Writes what the messages handled so far made us send on `which`.
    pub(super) fn flush_out(&mut self, which: Which) {
        let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        if conn.wbuf.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut conn.wbuf);
        let counts = std::mem::take(&mut conn.wcount);
        self.send(which, &bytes, &counts);
    }

    pub(super) async fn input_messages(&mut self, mut which: Which) {
        self.promoted = false;
        loop {
            let established = self.fsm.state(which) == Some(State::Established);
            let Some(sess) = self.session(which) else {
                return;
            };
            let ctx = sess.ctx;
            let Some(conn) = sess.conn.as_mut() else {
                return;
            };
            let msg: Vec<u8> = match codec::frame(&conn.rbuf) {
                Ok(None) => return,
                Ok(Some(len)) => conn.rbuf.drain(..len).collect(),
                Err(n) => {
                    conn.rbuf.clear();
                    self.feed(which, Event::BGPHeaderErr(n)).await;
                    return;
                }
            };
            let kind = Kind::of(&msg);
            if let Some(kind) = kind {
                self.core().on_message_in(kind);
            }
            // RFC 4271 §8.2.2: before Established an UPDATE (Event 27) or a
            // malformed one (Event 28) is a Finite State Machine Error
            // either way. It is not decoded: the session's 4-octet AS is not
            // in force yet, and decoding would log errors of an UPDATE read
            // with the wrong AS width before the FSM's 5/x.
            let event = if kind == Some(Kind::Update) && !established {
                Some(Event::UpdateMsg)
            } else {
                codec::decode(&msg, &ctx, &self.s.name)
            };
            let Some(event) = event else {
                continue;
            };
            if let Event::NotifMsg(n) = &event {
                let text = codec::describe(n);
                log::warn!("bgp peer {}: received NOTIFICATION {text}", self.s.name);
                self.core().on_notification_received(text);
            }
            self.feed(which, event).await;
            if which == Which::Candidate && std::mem::take(&mut self.promoted) {
                // The candidate won the collision: the rest of its read
                // belongs to the session now.
                which = Which::Main;
            }
        }
    }

    /// Writes `bytes` (`n` messages of `kind`), or, while a read's
    /// messages are handled, adds them to that batch.
    pub(super) fn write(&mut self, which: Which, bytes: &[u8], kind: Kind, n: u32) {
        if self.batching {
            if let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) {
                conn.wbuf.extend_from_slice(bytes);
                conn.wcount.push((kind, n));
            }
            return;
        }
        self.send(which, bytes, &[(kind, n)]);
    }

    /// Hands `bytes` (the messages `counts` counts) to the connection:
    /// written at once as far as the socket takes them, the rest waits
    /// (after what already waits, in order) for the wait loop to write it
    /// when the socket has room. The task never blocks on a write: it goes
    /// on reading the peer and running its timers, and a peer that takes
    /// nothing is the SendHoldTimer's (RFC 9687), which the FSM runs from
    /// the [`Event::WriteBlocked`] and [`Event::WriteProgress`] reported
    /// here.
    pub(super) fn send(&mut self, which: Which, bytes: &[u8], counts: &[(Kind, u32)]) {
        let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        if conn.waiting() {
            conn.out.extend_from_slice(bytes);
            conn.out_count.extend_from_slice(counts);
            return;
        }
        let r = write_now(&conn.stream, bytes);
        let r = r.map(|n| {
            let rest = bytes.get(n..).unwrap_or_default();
            if !rest.is_empty() {
                conn.out.extend_from_slice(rest);
                conn.out_count.extend_from_slice(counts);
            }
            (n > 0, !rest.is_empty())
        });
        match r {
            Ok((_, false)) => self.count_out(which, counts),
            Ok((moved, true)) => {
                // Bytes wait now: the SendHoldTimer starts.
                let event = if moved {
                    Event::WriteProgress { waiting: true }
                } else {
                    Event::WriteBlocked
                };
                self.queue.push_back((which, event));
            }
            Err(e) => self.write_failed(which, e),
        }
    }

    /// The socket of `which` has room: writes what waits, as far as it
    /// goes. Returns whether nothing waits any more.
    pub(super) fn write_waiting(&mut self, which: Which) -> bool {
        let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) else {
            return true;
        };
        let at = conn.out_at;
        match write_now(&conn.stream, conn.out.get(at..).unwrap_or_default()) {
            Ok(0) => false,
            Ok(n) => {
                conn.out_at = at.saturating_add(n);
                let waiting = conn.waiting();
                let mut counts = Vec::new();
                if !waiting {
                    counts = std::mem::take(&mut conn.out_count);
                    conn.out_at = 0;
                    // A full table's pass is ≈ 50 KB: not kept per peer.
                    conn.out = Vec::new();
                }
                self.count_out(which, &counts);
                self.queue
                    .push_back((which, Event::WriteProgress { waiting }));
                !waiting
            }
            Err(e) => {
                self.write_failed(which, e);
                true
            }
        }
    }

    fn count_out(&mut self, which: Which, counts: &[(Kind, u32)]) {
        if which == Which::Main {
            for &(kind, n) in counts {
                self.core().on_message_out(kind, n);
            }
        }
    }

    fn write_failed(&mut self, which: Which, e: io::Error) {
        self.set_error(format!("write: {e}"));
        if let Some(s) = self.session(which) {
            s.conn = None;
        }
        self.queue.push_back((which, Event::TcpConnectionFails));
    }
}

/// Writes as much of `buf` as the socket takes without blocking; the
/// number of bytes written.
fn write_now(stream: &Async<TcpStream>, buf: &[u8]) -> io::Result<usize> {
    let mut w = stream.get_ref();
    let mut done = 0;
    while let Some(rest) = buf.get(done..).filter(|r| !r.is_empty()) {
        match w.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Closes a connection gracefully: what still waits to be written (a
/// NOTIFICATION behind UPDATEs the peer reads slowly) gets
/// [`CLOSE_LINGER`] to leave, then our side is shut down for writing (so
/// a NOTIFICATION just written is followed by FIN rather than lost to a
/// reset), and whatever the peer still sends is read and dropped for a
/// bounded time. A connection the SendHoldTimer ended (`abort`), or whose
/// bytes still cannot leave, is reset instead: the kernel would otherwise
/// keep it, its full buffer and the FIN queued behind it, for as long as
/// it retries.
pub(super) fn close(conn: Conn) {
    let Conn {
        stream,
        out,
        out_at,
        abort,
        ..
    } = conn;
    let reset = |stream: Async<TcpStream>| {
        let _ = socket2::SockRef::from(stream.get_ref()).set_linger(Some(Duration::ZERO));
    };
    if abort {
        reset(stream);
        return;
    }
    let rest = out.get(out_at..).unwrap_or_default().to_vec();
    drop(out);
    if rest.is_empty() {
        let _ = stream.get_ref().shutdown(std::net::Shutdown::Write);
    }
    crate::rt::spawn(async move {
        if !rest.is_empty() {
            let written = smol::future::or(
                async {
                    let mut w = &stream;
                    w.write_all(&rest).await.is_ok()
                },
                async {
                    crate::rt::sleep(CLOSE_LINGER).await;
                    false
                },
            )
            .await;
            if !written {
                reset(stream);
                return;
            }
            let _ = stream.get_ref().shutdown(std::net::Shutdown::Write);
        }
        let drain = async {
            let mut buf = [0u8; 512];
            let mut r = &stream;
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        };
        smol::future::or(drain, async {
            crate::rt::sleep(CLOSE_LINGER).await;
        })
        .await;
    })
    .detach();
}
