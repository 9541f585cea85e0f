//! The connections' bytes: reading and framing the peer's messages, an
//! inbound connection taken over or tracked as a collision candidate
//! (RFC 4271 §6.8), writes (one per batch of replies), and the graceful
//! close.

use smol::io::AsyncWriteExt;

use super::*;
use crate::bgp::driver::{net, WRITE_TIMEOUT};
use crate::bgp::fsm::State;
use crate::bgp::session::{on_candidate_open, on_inbound, Collision, Inbound};

impl PeerTask {
    pub(super) async fn inbound(&mut self, stream: Async<TcpStream>) {
        let name = &self.s.name;
        if let Err(e) = net::accepted(&stream, &self.s) {
            log::warn!("bgp peer {name}: inbound connection closed: socket options: {e}");
            return;
        }
        let conn = Conn::new(stream, ConnectionOrigin::Remote);
        let decision = on_inbound(
            self.main.fsm.state(),
            self.main.fsm.accepts_connection(),
            self.cand.is_some(),
        );
        match decision {
            Inbound::Replace => {
                self.connecting = None;
                self.main.conn = Some(conn);
                self.feed(Which::Main, Event::TcpConnectionConfirmed).await;
            }
            Inbound::Refuse => {
                log::debug!("bgp peer {name}: inbound connection refused in Idle");
            }
            Inbound::AlreadyTracked => {
                log::debug!(
                    "bgp peer {name}: inbound connection closed: collision already tracked"
                );
            }
            Inbound::Track { dump_now } => {
                let (fsm, actions) =
                    Fsm::collision_candidate(self.main.fsm.config().clone(), self.now());
                let mut cand = Session::new(fsm);
                cand.conn = Some(conn);
                self.cand = Some(cand);
                self.execute(Which::Cand, actions).await;
                if dump_now {
                    self.feed(Which::Cand, Event::OpenCollisionDump).await;
                }
                self.drain_queue().await;
            }
        }
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
        for w in [Which::Main, Which::Cand] {
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
        loop {
            let Some(sess) = self.session(which) else {
                return;
            };
            let ctx = sess.ctx;
            let established = sess.fsm.state() == State::Established;
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
            match (which, event) {
                (Which::Cand, Event::BGPOpen(open)) => {
                    which = self.collide(open).await;
                }
                (w, e) => self.feed(w, e).await,
            }
        }
    }

    /// The candidate's OPEN arrived: RFC 4271 §6.8 decides which connection
    /// stays. Returns which session now owns the candidate's connection.
    pub(super) async fn collide(&mut self, open: crate::bgp::fsm::OpenInfo) -> Which {
        let cfg = self.main.fsm.config();
        let existing = self.main.conn.as_ref().map(|c| c.origin);
        let decision = on_candidate_open(
            existing,
            self.main.fsm.state(),
            cfg.router_id,
            cfg.local_as,
            open.bgp_id,
            open.asn,
        );
        let Collision::KeepCandidate { dump_existing } = decision else {
            log::info!(
                "bgp peer {}: connection collision: keeping the existing connection",
                self.s.name
            );
            self.feed(Which::Cand, Event::OpenCollisionDump).await;
            self.cand = None;
            return Which::Cand;
        };
        log::info!(
            "bgp peer {}: connection collision: keeping the peer's connection",
            self.s.name
        );
        if dump_existing {
            self.feed(Which::Main, Event::OpenCollisionDump).await;
        }
        let Some(cand) = self.cand.take() else {
            return Which::Cand;
        };
        self.connecting = None;
        self.main = cand;
        self.feed(Which::Main, Event::BGPOpen(open)).await;
        Which::Main
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
