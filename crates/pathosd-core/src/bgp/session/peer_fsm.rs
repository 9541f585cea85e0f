//! One peer's connections: the session's FSM and, while a second
//! connection from the peer is open, the collision candidate's (RFC 4271
//! §6.8), and which of the two stays. Pure like [`Fsm`]: the driver
//! (`bgp::driver::peer`) owns the sockets and the time, feeds every event
//! with the connection it came on, and carries out the [`Step`]s in order.
//!
//! The two FSMs are kept by role, not by who opened the connection (as
//! rustybgp's `PeerFsm { active, passive }` does): the session's own
//! connection ([`Conn::Main`]) may be ours or the peer's (the peer's
//! connection replaces our attempt in Connect and Active), and the
//! candidate ([`Conn::Candidate`]) is always the peer's.
//!
//! * An inbound connection ([`PeerFsm::inbound`]): Connect and Active
//!   take it as the session's (RFC 4271 §8.2.2, Event 17, "the local
//!   system ... aborts the outbound connection attempt"); Idle refuses it;
//!   from OpenSent on it is the candidate, which sends our OPEN and waits
//!   for the peer's. One candidate at a time: a third connection is closed.
//! * The candidate's OPEN decides the collision ([`resolve_collision`]):
//!   the loser gets Cease / Connection Collision Resolution and goes; a
//!   winning candidate becomes the session ([`Step::Promote`]) and its
//!   OPEN is handled there.
//! * A candidate whose FSM fails (its connection closes, its HoldTimer
//!   expires, the peer sends a NOTIFICATION) is forgotten.

use std::time::Duration;

use crate::bgp::fsm::{
    resolve_collision, Action, ConnectionOrigin, DownReason, Event, Fsm, OpenInfo, PeerConfig,
    State, Timestamp,
};

/// Which of the peer's connections an event or a step is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conn {
    /// The session's connection (and its outbound connect attempt).
    Main,
    /// The RFC 4271 §6.8 collision candidate: a second, inbound connection.
    Candidate,
}

/// Why an inbound connection is closed unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// RFC 4271 §8.2.2: Idle "refuses all incoming BGP connections".
    Idle,
    /// A collision candidate is already tracked.
    CandidateTracked,
}

/// The main session's state changed; what the owner and the log hear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub from: State,
    pub to: State,
    /// Why it went to Idle.
    pub reason: Option<DownReason>,
    /// How long this process had stood still, if the session went to Idle
    /// after a stall of its own ([`Fsm::stalled`]).
    pub stalled: Option<Duration>,
}

/// What the driver does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An FSM action on that connection.
    Fsm(Conn, Action),
    /// The inbound connection is the session's now: it replaces the
    /// outbound connect attempt.
    AcceptMain,
    /// The inbound connection is the collision candidate.
    AcceptCandidate,
    /// Close the inbound connection unused.
    Refuse(Refusal),
    /// The collision is decided: `kept` stays, the other connection got
    /// Cease / Connection Collision Resolution.
    Collision { kept: Conn },
    /// The candidate is the session now: its connection, timers and codec
    /// context replace the main ones (and the outbound connect attempt).
    Promote,
    /// The candidate's FSM ended: its connection and timers go.
    ForgetCandidate,
    /// The main session changed state.
    Transition(Transition),
}

/// A peer's one or two FSMs. See the module documentation.
#[derive(Debug, Clone)]
pub struct PeerFsm {
    main: Fsm,
    /// Who opened the main FSM's connection, once it has one.
    main_origin: ConnectionOrigin,
    candidate: Option<Fsm>,
}

impl PeerFsm {
    pub fn new(config: PeerConfig) -> PeerFsm {
        PeerFsm {
            main: Fsm::new(config),
            main_origin: ConnectionOrigin::Local,
            candidate: None,
        }
    }

    /// The state of `conn`'s FSM (None: no candidate).
    pub fn state(&self, conn: Conn) -> Option<State> {
        match conn {
            Conn::Main => Some(self.main.state()),
            Conn::Candidate => self.candidate.as_ref().map(Fsm::state),
        }
    }

    /// Who opened the main FSM's connection, while it has one (OpenSent,
    /// OpenConfirm, Established: in Connect and Active it has at most an
    /// attempt, in Idle none).
    pub fn main_connection(&self) -> Option<ConnectionOrigin> {
        matches!(
            self.main.state(),
            State::OpenSent | State::OpenConfirm | State::Established
        )
        .then_some(self.main_origin)
    }

    /// Feeds `event`, which happened on `conn`; returns the steps.
    pub fn handle(&mut self, conn: Conn, event: Event, now: Timestamp) -> Vec<Step> {
        let mut out = Vec::new();
        match (conn, event) {
            (Conn::Main, event) => {
                if matches!(event, Event::ManualStop { .. }) && self.candidate.take().is_some() {
                    // The peer is stopped: the candidate's connection goes
                    // with no message of its own, the session's Cease says it.
                    out.push(Step::ForgetCandidate);
                }
                if event == Event::TcpCrAcked && self.main.accepts_connection() {
                    self.main_origin = ConnectionOrigin::Local;
                }
                self.feed_main(event, now, &mut out);
            }
            (Conn::Candidate, Event::BGPOpen(open)) if self.candidate.is_some() => {
                self.collide(open, now, &mut out);
            }
            (Conn::Candidate, event) => self.feed_candidate(event, now, &mut out),
        }
        out
    }

    /// A connection from the peer's address was accepted; returns what
    /// becomes of it (the first step says which connection it is, or that
    /// it is closed) and the FSM actions that follow.
    pub fn inbound(&mut self, now: Timestamp) -> Vec<Step> {
        let mut out = Vec::new();
        if self.main.accepts_connection() {
            // RFC 4271 §8.2.2 Connect and Active, Event 17
            // (TcpConnectionConfirmed): the peer's connection is the
            // session's; our attempt is aborted.
            out.push(Step::AcceptMain);
            self.main_origin = ConnectionOrigin::Remote;
            self.feed_main(Event::TcpConnectionConfirmed, now, &mut out);
        } else if self.main.state() == State::Idle {
            // RFC 4271 §8.2.2 Idle: "the BGP FSM refuses all incoming BGP
            // connections for this peer".
            out.push(Step::Refuse(Refusal::Idle));
        } else if self.candidate.is_some() {
            out.push(Step::Refuse(Refusal::CandidateTracked));
        } else {
            // RFC 4271 §8.2.2 OpenSent (and OpenConfirm, Established),
            // Event 16 or 17: "If a TcpConnection_Valid (Event 14),
            // Tcp_CR_Acked (Event 16), or a TcpConnectionConfirmed event
            // (Event 17) is received, a second TCP connection may be in
            // progress. This second TCP connection is tracked per Connection
            // Collision processing (Section 6.8) until an OPEN message is
            // received."
            out.push(Step::AcceptCandidate);
            let (fsm, actions) = Fsm::collision_candidate(self.main.config().clone(), now);
            out.extend(actions.into_iter().map(|a| Step::Fsm(Conn::Candidate, a)));
            self.candidate = Some(fsm);
            if self.main.state() == State::Established {
                // RFC 4271 §6.8: "Unless allowed via configuration, a
                // connection collision with an existing BGP connection that
                // is in the Established state causes closing of the newly
                // created connection." It gets the Cease at once, not after
                // its OPEN: the OPEN could change nothing.
                self.feed_candidate(Event::OpenCollisionDump, now, &mut out);
            }
        }
        out
    }

    fn feed_main(&mut self, event: Event, now: Timestamp, out: &mut Vec<Step>) {
        let from = self.main.state();
        let actions = self.main.handle(event, now);
        out.extend(actions.into_iter().map(|a| Step::Fsm(Conn::Main, a)));
        let to = self.main.state();
        if from != to {
            let idle = to == State::Idle;
            out.push(Step::Transition(Transition {
                from,
                to,
                reason: idle
                    .then(|| self.main.last_down_reason().cloned())
                    .flatten(),
                stalled: self.main.stalled().filter(|_| idle),
            }));
        }
    }

    fn feed_candidate(&mut self, event: Event, now: Timestamp, out: &mut Vec<Step>) {
        let Some(fsm) = self.candidate.as_mut() else {
            return;
        };
        let actions = fsm.handle(event, now);
        out.extend(actions.into_iter().map(|a| Step::Fsm(Conn::Candidate, a)));
        if fsm.state() == State::Idle {
            // Its connection is closed: the candidate is over (a failed
            // candidate does not retry; the session's FSM does).
            self.candidate = None;
            out.push(Step::ForgetCandidate);
        }
    }

    /// The candidate's OPEN arrived.
    ///
    /// RFC 4271 §6.8: "Upon receipt of an OPEN message, the local system
    /// MUST examine all of its connections that are in the OpenConfirm
    /// state. A BGP speaker MAY also examine connections in an OpenSent
    /// state if it knows the BGP Identifier of the peer by means outside of
    /// the protocol." The main connection is examined in OpenSent too: both
    /// connections come from the one configured peer address, so the OPEN's
    /// BGP Identifier is that peer's, and deciding now spares the loser a
    /// KEEPALIVE (the outcome is the same as waiting for the other OPEN:
    /// [`resolve_collision`] depends on the identifiers and who opened
    /// which connection, not on the order).
    fn collide(&mut self, open: OpenInfo, now: Timestamp, out: &mut Vec<Step>) {
        let cfg = self.main.config();
        let keep_candidate = match self.main_connection() {
            // The session has no connection left (it failed while the
            // candidate waited): there is nothing to collide with, the
            // candidate simply carries on as the session.
            None => true,
            Some(origin) => {
                let kept = resolve_collision(
                    origin,
                    self.main.state() == State::Established,
                    cfg.router_id,
                    cfg.local_as,
                    open.bgp_id,
                    open.asn,
                );
                kept != origin
            }
        };
        if !keep_candidate {
            // RFC 4271 §6.8: "the local system closes the newly created BGP
            // connection (the one associated with the newly received OPEN
            // message), and continues to use the existing one". The closing
            // is §8.2.2's OpenCollisionDump (Event 23): "sends a
            // NOTIFICATION with a Cease" (RFC 4486 §4: subcode 7,
            // Connection Collision Resolution).
            out.push(Step::Collision { kept: Conn::Main });
            self.feed_candidate(Event::OpenCollisionDump, now, out);
            if self.candidate.take().is_some() {
                out.push(Step::ForgetCandidate);
            }
            return;
        }
        let had_connection = self.main_connection().is_some();
        if had_connection {
            // RFC 4271 §6.8: "the local system closes the BGP connection
            // that already exists (the one that is already in the
            // OpenConfirm state), and accepts the BGP connection initiated
            // by the remote system"; the Cease as above.
            out.push(Step::Collision {
                kept: Conn::Candidate,
            });
            self.feed_main(Event::OpenCollisionDump, now, out);
        }
        let Some(candidate) = self.candidate.take() else {
            return;
        };
        self.main = candidate;
        self.main_origin = ConnectionOrigin::Remote;
        out.push(Step::Promote);
        self.feed_main(Event::BGPOpen(open), now, out);
    }
}
