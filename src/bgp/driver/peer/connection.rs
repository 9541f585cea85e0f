//! The connections' bytes: reading and framing the peer's messages, an
//! inbound connection placed where the peer's FSMs say (the session's, the
//! RFC 4271 §6.8 collision candidate, or closed), writes (one per batch of
//! replies), and the graceful close.

use std::io;
use std::net::TcpStream;
use std::time::Instant;

use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::Async;

use super::codec::{self, Kind};
use super::{Conn, PeerTask, Session, Which, CLOSE_LINGER};
use crate::bgp::driver::{net, WRITE_TIMEOUT};
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
            self.flush_out(w).await;
        }
        // A failed write queued TcpConnectionFails.
        self.drain_queue().await;
    }

    /// Writes what the messages handled so far made us send on `which`.
    pub(super) async fn flush_out(&mut self, which: Which) {
        let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        if conn.wbuf.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut conn.wbuf);
        let counts = std::mem::take(&mut conn.wcount);
        self.send(which, &bytes, &counts).await;
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

    /// Writes `bytes` (`n` messages of `kind`) in one go, or, while a
    /// read's messages are handled, adds them to that batch.
    pub(super) async fn write(&mut self, which: Which, bytes: &[u8], kind: Kind, n: u32) {
        if self.batching {
            if let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) {
                conn.wbuf.extend_from_slice(bytes);
                conn.wcount.push((kind, n));
            }
            return;
        }
        self.send(which, bytes, &[(kind, n)]).await;
    }

    /// Writes `bytes` (the messages `counts` counts) with one write.
    pub(super) async fn send(&mut self, which: Which, bytes: &[u8], counts: &[(Kind, u32)]) {
        let Some(conn) = self.session(which).and_then(|s| s.conn.as_ref()) else {
            return;
        };
        let stream = &conn.stream;
        let r = smol::future::or(
            async move {
                let mut w = stream;
                w.write_all(bytes).await?;
                w.flush().await
            },
            async {
                crate::rt::sleep_until(Instant::now() + WRITE_TIMEOUT).await;
                Err(io::Error::new(io::ErrorKind::TimedOut, "write timed out"))
            },
        )
        .await;
        match r {
            Ok(()) => {
                if which == Which::Main {
                    for &(kind, n) in counts {
                        self.core().on_message_out(kind, n);
                    }
                }
            }
            Err(e) => {
                self.set_error(format!("write: {e}"));
                if let Some(s) = self.session(which) {
                    s.conn = None;
                }
                self.queue.push_back((which, Event::TcpConnectionFails));
            }
        }
    }
}

/// Closes a connection gracefully: our side is shut down for writing (so a
/// NOTIFICATION just written is followed by FIN rather than lost to a
/// reset), and whatever the peer still sends is read and dropped for a
/// bounded time.
pub(super) fn close(stream: Async<TcpStream>) {
    let _ = stream.get_ref().shutdown(std::net::Shutdown::Write);
    crate::rt::spawn(async move {
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
