//! Feeding the peer's FSMs and carrying out what they return: the event
//! queue (a failure found while acting is queued, not handled
//! recursively), the steps (connect, send, timers, the session up and
//! down, a collision candidate promoted or forgotten), and the state
//! changes reported and logged.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use super::codec::{self, Kind};
use super::connection::close;
use super::{describe_down, PeerTask, Which};
use crate::bgp::driver::net::{self, SetupError};
use crate::bgp::driver::PeerEvent;
use crate::bgp::fsm::{Action, Event, Timer, Timestamp};
use crate::bgp::session::{keepalive_window, Step, Transition};

impl PeerTask {
    pub(super) fn now(&self) -> Timestamp {
        Timestamp::since(self.origin, Instant::now())
    }

    /// Feeds one event, carries out its steps, then any events those
    /// produced.
    pub(super) async fn feed(&mut self, which: Which, event: Event) {
        self.queue.push_back((which, event));
        self.drain_queue().await;
    }

    pub(super) async fn drain_queue(&mut self) {
        // Bounded: each event yields at most a few follow-ups, and the FSM
        // ends in Idle where failures are ignored.
        let mut budget = 64u32;
        while let Some((which, event)) = self.queue.pop_front() {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                log::error!("bgp peer {}: event loop budget exceeded", self.s.name);
                self.queue.clear();
                return;
            }
            let now = self.now();
            let steps = self.fsm.handle(which, event, now);
            for step in steps {
                self.step(step).await;
            }
        }
    }

    /// Carries out one step of the peer's FSMs (an inbound connection's
    /// first step is [`PeerTask::inbound`]'s: it places the socket).
    pub(super) async fn step(&mut self, step: Step) {
        match step {
            Step::Fsm(which, action) => self.act(which, action).await,
            Step::Collision { kept } => log::info!(
                "bgp peer {}: connection collision: keeping {}",
                self.s.name,
                match kept {
                    Which::Main => "the existing connection",
                    Which::Candidate => "the peer's connection",
                }
            ),
            Step::Promote => {
                self.connecting = None;
                if let Some(cand) = self.cand.take() {
                    self.main = cand;
                }
                self.promoted = true;
            }
            Step::ForgetCandidate => self.cand = None,
            Step::Transition(t) => self.transition(t),
            Step::AcceptMain | Step::AcceptCandidate | Step::Refuse(_) => {}
        }
    }

    pub(super) fn transition(&mut self, t: Transition) {
        let Transition {
            from: before,
            to: after,
            reason,
            stalled,
        } = t;
        let reason = reason.as_ref().map(describe_down);
        if let Some(late) = stalled {
            // Why this restart skips error_wait_min: the FSM's own
            // timers show that this process stood still.
            log::warn!(
                "bgp peer {}: its KEEPALIVE was {:.1}s overdue, so this daemon had stood still: redialling at once",
                self.s.name,
                late.as_secs_f64()
            );
        }
        let info = self.core().on_transition(before, after, reason.as_deref());
        let level = if info {
            log::Level::Info
        } else {
            log::Level::Debug
        };
        match &reason {
            Some(r) => log::log!(
                level,
                "bgp peer {} ({}): {} -> {}: {r}",
                self.s.name,
                self.s.address,
                before.as_str(),
                after.as_str()
            ),
            None => log::log!(
                level,
                "bgp peer {} ({}): {} -> {}",
                self.s.name,
                self.s.address,
                before.as_str(),
                after.as_str()
            ),
        }
        let _ = self.events.try_send(PeerEvent {
            peer: self.s.name.clone(),
            address: self.s.address,
            from: before,
            to: after,
            reason,
        });
    }

    pub(super) fn set_error(&mut self, e: String) {
        log::debug!("bgp peer {}: {e}", self.s.name);
        self.core().on_error(e);
    }

    /// Carries out one FSM action on `which`'s connection.
    pub(super) async fn act(&mut self, which: Which, action: Action) {
        match action {
            Action::Connect => self.connect(),
            Action::DropConnection => {
                // A NOTIFICATION written in this batch goes out first.
                self.flush_out(which);
                if which == Which::Main {
                    self.connecting = None;
                }
                if let Some(conn) = self.session(which).and_then(|s| s.conn.take()) {
                    close(conn);
                }
            }
            Action::SendOpen(info) => {
                let bytes = codec::encode_open(&info);
                self.write(which, &bytes, Kind::Open, 1);
            }
            Action::SendKeepalive => {
                self.write(which, &codec::encode_keepalive(), Kind::Keepalive, 1);
            }
            Action::SendNotification(n) => {
                let text = codec::describe(&n);
                if which == Which::Main {
                    log::warn!("bgp peer {}: sending NOTIFICATION {text}", self.s.name);
                    self.core().on_notification_sent(text);
                }
                self.write(
                    which,
                    &codec::encode_notification(&n),
                    Kind::Notification,
                    1,
                );
            }
            Action::StartTimer(t, d) => {
                let (earliest, latest) = match t {
                    Timer::ConnectRetry | Timer::IdleHold => {
                        let d = self.core().jitter(d);
                        (d, d)
                    }
                    Timer::Hold | Timer::SendHold => (d, d),
                    // RFC 4271 §10 jitter, taken where the thread is
                    // awake anyway: see `keepalive_window`.
                    Timer::Keepalive => keepalive_window(d),
                };
                let now = Instant::now();
                let at = now.checked_add(earliest).zip(now.checked_add(latest));
                if let Some(s) = self.session(which) {
                    s.deadlines[t.index()] = at;
                }
            }
            Action::StopTimer(t) => {
                if let Some(s) = self.session(which) {
                    s.deadlines[t.index()] = None;
                }
            }
            Action::SessionEstablished(n) => {
                self.main.ctx = codec::ctx(n.four_octet_as, n.ebgp);
                log::info!(
                    "bgp peer {}: established: hold {}s, keepalive {}s, families {:?}, peer id {}",
                    self.s.name,
                    n.hold_time,
                    n.keepalive,
                    n.families,
                    n.peer_id
                );
                let mut shape = self.session_shape();
                shape.ipv4_next_hop_v6 = n.extended_next_hop;
                self.core()
                    .on_established(&n.families, n.four_octet_as, shape, Instant::now());
                self.flush_routes().await;
            }
            Action::SessionDown(_) => self.core().on_session_down(),
            Action::ResendRoutes(afi) => {
                let pass = self.core().on_route_refresh(afi);
                if !pass.bytes.is_empty() {
                    self.write(Which::Main, &pass.bytes, Kind::Update, pass.updates);
                }
            }
        }
    }

    /// `local_address: 0.0.0.0` / `::`: the next hop is this session's own
    /// source address.
    pub(super) fn session_shape(&self) -> crate::bgp::rib_out::PeerShape {
        let local = self
            .main
            .conn
            .as_ref()
            .and_then(|c| c.stream.get_ref().local_addr().ok())
            .map(|a| net::canonical(a.ip()));
        let mut shape = self.s.shape.clone();
        match local {
            Some(IpAddr::V4(a)) if self.s.next_hop_v4_from_session => shape.next_hop_v4 = Some(a),
            Some(IpAddr::V6(a)) if self.s.next_hop_v6_from_session => shape.next_hop_v6 = Some(a),
            _ => {}
        }
        shape
    }

    pub(super) fn connect(&mut self) {
        let peer = SocketAddr::new(self.s.address, self.s.port);
        match net::active_socket(&self.s) {
            Ok(sock) => self.connecting = Some(Box::pin(net::connect(sock, peer))),
            Err(SetupError::Md5(e)) => {
                // Never a silent unauthenticated session: this peer stops.
                let msg = format!("cannot set the TCP MD5 key: {e}; peer stopped");
                log::error!("bgp peer {}: {msg}", self.s.name);
                self.core().on_stopped_for_good(msg);
                self.queue.push_back((
                    Which::Main,
                    Event::ManualStop {
                        shutdown_message: None,
                    },
                ));
            }
            Err(SetupError::Other(e)) => {
                self.set_error(format!("connect: {e}"));
                self.queue
                    .push_back((Which::Main, Event::TcpConnectionFails));
            }
        }
    }
}
