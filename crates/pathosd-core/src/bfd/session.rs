//! One BFD session (RFC 5880 asynchronous mode), sans-IO.
//!
//! [`Session::handle`] takes one [`Event`] and the current [`Time`] and
//! returns an [`Output`]: a Control packet to send now (if any), the state
//! change (if any), and the two deadlines the driver sleeps on: `next_tx`,
//! when the next periodic packet is due, and `detect_at`, when the peer is
//! declared down unless a packet arrives first. When either passes, the
//! driver feeds [`Event::Timer`]; a fire before a deadline (a stale timer)
//! does nothing. The session owns no socket and reads no clock; jitter comes
//! from a generator seeded by the caller, so a replay is repeatable.
//!
//! A new session is Down and due to send at once (RFC 5881 §3: "both sides
//! of a session MUST take the 'Active' role"). The driver:
//!
//! 1. decodes each datagram from the peer with `bfd::wire::decode`; a
//!    failure is [`Event::Malformed`] (counted), a packet is
//!    [`Event::Received`] with what only the driver knows: whether source
//!    address and port are the peer's, and the received TTL;
//! 2. sends [`Output::send`] from the session's source port (RFC 5881 §4)
//!    with TTL 255 (RFC 5881 §5);
//! 3. reacts to [`Output::change`]: an Up → Down that
//!    [`Change::fails_client`] takes the BGP session down (RFC 5882).
//!
//! Timers (RFC 5880 §6.8.2 to §6.8.4, §6.8.7): the transmit interval is the
//! larger of bfd.DesiredMinTxInterval and the peer's Required Min RX
//! Interval, reduced per packet by a random 0 to 25 % (10 to 25 % when our
//! Detect Mult is 1); the Detection Time is the peer's Detect Mult times the
//! larger of bfd.RequiredMinRxInterval and the peer's Desired Min TX
//! Interval. Until the session is Up, bfd.DesiredMinTxInterval is at least
//! one second (slow start). A change of either of our intervals (going Up,
//! going down, [`Event::SetTimers`]) runs a Poll Sequence: P on the periodic
//! packets until the peer answers with F; a slower transmit rate or a
//! shorter Detection Time only takes effect once it has answered.
//!
//! Behaviour chosen where the RFC leaves room:
//!
//! * A packet whose contents differ from the last one sent (other than P
//!   and F) is sent at once and restarts the periodic interval (RFC 5880
//!   §6.8.7: it "SHOULD be transmitted during the interval between periodic
//!   Control packet transmissions when the contents of that packet would
//!   differ"), so each handshake step reaches the peer without waiting.
//! * A change of intervals while a Poll Sequence runs waits for it to end
//!   and for one more packet without F from the peer (RFC 5880 §6.8.3,
//!   third choice), so each Final answers one set of values.
//! * After AdminDown, packets are sent for one Detection Time (RFC 5882
//!   §8: "The system asserting AdminDown SHOULD do so for at least one
//!   Detection Time"), then none until AdminUp. A packet received meanwhile
//!   is recorded (the peer's discriminator and intervals, a sign of life)
//!   and then discarded as RFC 5880 §6.8.6 orders, its Poll unanswered
//!   (BIRD does the same).
//! * While the peer asks for no packets (Required Min RX Interval 0) only
//!   answers to its Polls are sent.
//!
//! This file holds what crosses the session's boundary and what a packet or
//! a timer does to the state; `session/timers.rs` the intervals, the Poll
//! Sequence, the packet sent and the schedule.

use std::num::{NonZeroU32, NonZeroU8};

use super::wire::{DecodeError, Diag, Packet, State};
use super::{DropReason, Drops, Hops, Time};

mod timers;

pub use timers::jitter_bounds;
use timers::slow;

/// RFC 5880 §6.8.3: "When bfd.SessionState is not Up, the system MUST set
/// bfd.DesiredMinTxInterval to a value of not less than one second
/// (1,000,000 microseconds)."
pub const SLOW_START_TX: u32 = 1_000_000;

/// The intervals a session asks for (microseconds) and its Detect Mult.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Timers {
    /// bfd.DesiredMinTxInterval once Up (RFC 5880 §4.1: "The value zero is
    /// reserved").
    pub desired_min_tx: NonZeroU32,
    /// bfd.RequiredMinRxInterval; zero asks the peer to send nothing, and
    /// then nothing is detected.
    pub required_min_rx: u32,
    /// bfd.DetectMult (RFC 5880 §6.8.1: "This variable MUST be a nonzero
    /// integer").
    pub detect_mult: NonZeroU8,
}

/// What a session is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    /// bfd.LocalDiscr: RFC 5880 §6.8.1 "It MUST be unique across all BFD
    /// sessions on this system, and nonzero"; the driver picks it.
    pub local_discriminator: NonZeroU32,
    pub timers: Timers,
    pub hops: Hops,
}

/// A decoded packet from the peer's address, with the facts of its
/// reception only the driver knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub packet: Packet,
    /// The IPv4 TTL or IPv6 Hop Limit it arrived with.
    pub ttl: u8,
    /// Its source address and port are the session's peer's.
    pub source_ok: bool,
}

/// What the session is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A Control packet for this session.
    Received(Received),
    /// A datagram from the peer's address that `wire::decode` refused: only
    /// counted.
    Malformed(DecodeError),
    /// A deadline of the last [`Output`] passed (or the driver woke up).
    Timer,
    /// RFC 5880 §6.8.16: the session is administratively disabled.
    AdminDown,
    /// RFC 5880 §6.8.16: the session is administratively enabled again.
    AdminUp,
    /// New intervals (a reload): a Poll Sequence tells the peer.
    SetTimers(Timers),
}

/// Why the session changed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The three-way handshake moved it forward (Down → Init → Up).
    Handshake,
    /// No valid packet for a Detection Time (RFC 5880 §6.8.4).
    DetectionTimeExpired,
    /// The peer said Down while we were Up.
    NeighborDown,
    /// The peer said AdminDown.
    NeighborAdminDown,
    /// [`Event::AdminDown`].
    AdminDown,
    /// [`Event::AdminUp`].
    AdminUp,
}

/// A change of bfd.SessionState, with the diagnostic it sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Change {
    pub from: State,
    pub to: State,
    pub diag: Diag,
    pub cause: Cause,
}

impl Change {
    /// Whether a client such as BGP should act on this change: RFC 5882
    /// §4.2.1 "when a BFD session transitions from Up to Down, action
    /// SHOULD be taken in the control protocol", except RFC 5882 §4.2: "If
    /// a BFD session transitions from Up state to AdminDown, or the session
    /// transitions from Up to Down because the remote system is indicating
    /// that the session is in state AdminDown, clients SHOULD NOT take any
    /// control protocol action." The handshake's own steps never count
    /// (RFC 5882 §3.3).
    pub fn fails_client(&self) -> bool {
        self.from == State::Up && self.to == State::Down && self.cause != Cause::NeighborAdminDown
    }
}

/// What the driver does after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// Send this packet now.
    pub send: Option<Packet>,
    pub change: Option<Change>,
    /// When the next periodic packet is due (`None`: none is).
    pub next_tx: Option<Time>,
    /// When the peer is declared down without a packet (`None`: no packet
    /// is expected).
    pub detect_at: Option<Time>,
}

/// The per-peer state machine. See the module documentation.
#[derive(Debug, Clone)]
pub struct Session {
    cfg: Config,
    state: State,
    diag: Diag,
    remote_state: State,
    remote_discr: u32,
    remote_diag: Diag,
    remote_demand: bool,
    /// bfd.RemoteMinRxInterval: RFC 5880 §6.8.1 "This variable MUST be
    /// initialized to 1."
    remote_min_rx: u32,
    /// The peer's last Desired Min TX Interval.
    remote_desired_tx: u32,
    /// The peer's last Detect Mult (0 before any packet).
    remote_detect_mult: u8,
    /// bfd.DesiredMinTxInterval and bfd.RequiredMinRxInterval: what the
    /// packets carry.
    adv_tx: u32,
    adv_rx: u32,
    /// What the timers use: they lag `adv_*` while a Poll Sequence for a
    /// slower rate or a shorter Detection Time has not been answered.
    tx_used: u32,
    rx_used: u32,
    /// A Poll Sequence is being transmitted.
    poll: bool,
    /// A Poll Sequence ended and no packet without F has arrived since.
    poll_fence: bool,
    /// An interval change waits for the running Poll Sequence (and the
    /// fence) to end before it is advertised.
    poll_pending: bool,
    last_rx: Option<Time>,
    last_tx: Option<Time>,
    /// The last packet sent, P and F cleared.
    last_sent: Option<Packet>,
    next_tx: Option<Time>,
    /// The transmit interval `next_tx` was drawn from.
    scheduled_interval: u64,
    /// Until when AdminDown packets are still sent.
    admin_tx_until: Option<Time>,
    rng: u64,
    drops: Drops,
}

/// What one event decided, before the packet is built.
#[derive(Default)]
struct Step {
    /// A Poll was received: answer with F.
    final_: bool,
    /// The periodic packet is due.
    due: bool,
    change: Option<Change>,
}

impl Session {
    /// A Down session, due to send its first packet at `now`. `seed` only
    /// needs to differ between sessions and restarts (jitter must not
    /// synchronise them).
    pub fn new(cfg: Config, seed: u64, now: Time) -> Session {
        let tx = slow(cfg.timers.desired_min_tx.get());
        let rx = cfg.timers.required_min_rx;
        Session {
            cfg,
            // RFC 5880 §6.8.1, bfd.SessionState and bfd.RemoteSessionState:
            // "This variable MUST be initialized to Down."
            state: State::Down,
            // bfd.LocalDiag: "This MUST be initialized to zero (No
            // Diagnostic)."
            diag: Diag::NONE,
            remote_state: State::Down,
            // bfd.RemoteDiscr: "This variable MUST be initialized to zero."
            remote_discr: 0,
            remote_diag: Diag::NONE,
            // bfd.RemoteDemandMode: "This variable MUST be initialized to
            // zero."
            remote_demand: false,
            remote_min_rx: 1,
            remote_desired_tx: 0,
            remote_detect_mult: 0,
            adv_tx: tx,
            adv_rx: rx,
            tx_used: tx,
            rx_used: rx,
            poll: false,
            poll_fence: false,
            poll_pending: false,
            last_rx: None,
            last_tx: None,
            last_sent: None,
            next_tx: Some(now),
            scheduled_interval: u64::from(tx),
            admin_tx_until: None,
            // xorshift never leaves zero: make sure it never starts there.
            rng: seed | 1,
            drops: Drops::default(),
        }
    }

    /// Feeds one event; returns what to do.
    pub fn handle(&mut self, event: Event, now: Time) -> Output {
        let mut step = Step::default();
        match event {
            Event::Received(rx) => self.receive(rx, now, &mut step),
            Event::Malformed(e) => self.drops.count(e.reason()),
            Event::Timer => self.timer(now, &mut step),
            Event::AdminDown => self.admin_down(now, &mut step),
            Event::AdminUp => self.admin_up(&mut step),
            Event::SetTimers(t) => self.cfg.timers = t,
        }
        self.update_intervals();
        self.finish(now, step)
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// bfd.LocalDiag: why the session last changed state.
    pub fn diag(&self) -> Diag {
        self.diag
    }

    pub fn remote_state(&self) -> State {
        self.remote_state
    }

    /// The peer's last diagnostic (why its session last changed state).
    pub fn remote_diag(&self) -> Diag {
        self.remote_diag
    }

    pub fn local_discriminator(&self) -> u32 {
        self.cfg.local_discriminator.get()
    }

    /// bfd.RemoteDiscr (0 until the peer is heard, and again after a
    /// Detection Time of silence).
    pub fn remote_discriminator(&self) -> u32 {
        self.remote_discr
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Datagrams dropped, by reason.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    pub fn next_tx(&self) -> Option<Time> {
        self.next_tx
    }

    /// The transmit interval in use before jitter, in microseconds (RFC
    /// 5880 §6.8.7: "the greater of" bfd.DesiredMinTxInterval and
    /// bfd.RemoteMinRxInterval).
    pub fn tx_interval(&self) -> u64 {
        u64::from(self.tx_used.max(self.remote_min_rx))
    }

    /// The Detection Time in microseconds, `None` before the peer is heard
    /// (or when we asked for no packets). RFC 5880 §6.8.4: "the Detection
    /// Time calculated in the local system is equal to the value of Detect
    /// Mult received from the remote system, multiplied by the agreed
    /// transmit interval of the remote system (the greater of
    /// bfd.RequiredMinRxInterval and the last received Desired Min TX
    /// Interval)."
    pub fn detection_time(&self) -> Option<u64> {
        if self.rx_used == 0 || self.remote_detect_mult == 0 {
            return None;
        }
        let interval = u64::from(self.rx_used.max(self.remote_desired_tx));
        Some(u64::from(self.remote_detect_mult) * interval)
    }

    /// When the peer is declared down if nothing arrives.
    pub fn detect_at(&self) -> Option<Time> {
        let last = self.last_rx?;
        Some(last.plus(self.detection_time()?))
    }

    /// Whether a Poll Sequence is being transmitted.
    #[cfg(any(test, feature = "test-support"))]
    pub fn poll_active(&self) -> bool {
        self.poll
    }

    // ---- events ---------------------------------------------------------

    fn receive(&mut self, rx: Received, now: Time, step: &mut Step) {
        let p = rx.packet;
        // The checks only the session can make; the codec made the others.
        // A packet from the wrong source or with the wrong TTL is
        // never trusted, so these come before the packet changes anything.
        if !rx.source_ok {
            return self.drops.count(DropReason::WrongSource);
        }
        // RFC 5881 §5 (single hop): "All received BFD Control packets that
        // are demultiplexed to the session MUST be discarded if the
        // received TTL or Hop Limit is not equal to 255"; a minimum for
        // multihop sessions.
        if !self.cfg.hops.accepts_ttl(rx.ttl) {
            return self.drops.count(DropReason::WrongTtl);
        }
        // RFC 5880 §6.8.6: "If the Your Discriminator field is nonzero, it
        // MUST be used to select the session with which this BFD packet is
        // associated. If no session is found, the packet MUST be
        // discarded."
        if p.your_discriminator != 0 && p.your_discriminator != self.local_discriminator() {
            return self.drops.count(DropReason::WrongDiscriminator);
        }
        // RFC 5880 §6.8.6: "Set bfd.RemoteDiscr to the value of My
        // Discriminator. Set bfd.RemoteState to the value of the State (Sta)
        // field. Set bfd.RemoteDemandMode to the value of the Demand (D)
        // bit. Set bfd.RemoteMinRxInterval to the value of Required Min RX
        // Interval."
        self.remote_discr = p.my_discriminator;
        self.remote_state = p.state;
        self.remote_diag = p.diag;
        self.remote_demand = p.demand;
        self.remote_min_rx = p.required_min_rx;
        self.remote_desired_tx = p.desired_min_tx;
        self.remote_detect_mult = p.detect_mult;
        if p.final_ {
            // RFC 5880 §6.8.6: "If a Poll Sequence is being transmitted by
            // the local system and the Final (F) bit in the received packet
            // is set, the Poll Sequence MUST be terminated."
            if self.poll {
                self.terminate_poll();
            }
        } else {
            self.poll_fence = false;
        }
        // RFC 5880 §6.8.6: "If the packet was not discarded, it has been
        // received for purposes of the Detection Time expiration rules in
        // section 6.8.4." (The interval updates of §6.8.2 and §6.8.4 follow
        // from these variables.)
        self.last_rx = Some(now);
        // RFC 5880 §6.8.6: "If bfd.SessionState is AdminDown: Discard the
        // packet".
        if self.state == State::AdminDown {
            return;
        }
        self.transition(p.state, step);
        // RFC 5880 §6.8.6: "If the Poll (P) bit is set, send a BFD Control
        // packet to the remote system with the Poll (P) bit clear, and the
        // Final (F) bit set".
        if p.poll {
            step.final_ = true;
        }
    }

    /// The state table of RFC 5880 §6.8.6.
    fn transition(&mut self, remote: State, step: &mut Step) {
        use State::*;
        // "If received state is AdminDown: If bfd.SessionState is not Down:
        // Set bfd.LocalDiag to 3 (Neighbor signaled session down), Set
        // bfd.SessionState to Down".
        if remote == AdminDown {
            if self.state != Down {
                self.set_state(
                    Down,
                    Diag::NEIGHBOR_SIGNALED_SESSION_DOWN,
                    Cause::NeighborAdminDown,
                    step,
                );
            }
            return;
        }
        match (self.state, remote) {
            // "If bfd.SessionState is Down: If received State is Down: Set
            // bfd.SessionState to Init. Else if received State is Init: Set
            // bfd.SessionState to Up".
            (Down, Down) => self.set_state(Init, Diag::NONE, Cause::Handshake, step),
            (Down, Init) => self.set_state(Up, Diag::NONE, Cause::Handshake, step),
            // "Else if bfd.SessionState is Init: If received State is Init
            // or Up: Set bfd.SessionState to Up".
            (Init, Init | Up) => self.set_state(Up, Diag::NONE, Cause::Handshake, step),
            // "Else (bfd.SessionState is Up): If received State is Down: Set
            // bfd.LocalDiag to 3 (Neighbor signaled session down), Set
            // bfd.SessionState to Down".
            (Up, Down) => self.set_state(
                Down,
                Diag::NEIGHBOR_SIGNALED_SESSION_DOWN,
                Cause::NeighborDown,
                step,
            ),
            _ => {}
        }
    }

    fn timer(&mut self, now: Time, step: &mut Step) {
        if self.detect_at().is_some_and(|t| t <= now) {
            self.expire(step);
        }
        if self.next_tx.is_some_and(|t| t <= now) {
            step.due = true;
        }
    }

    /// A Detection Time passed without a valid packet.
    fn expire(&mut self, step: &mut Step) {
        // RFC 5880 §6.8.4: "If Demand mode is not active, and a period of
        // time equal to the Detection Time passes without receiving a BFD
        // Control packet from the remote system, and bfd.SessionState is
        // Init or Up, the session has gone down -- the local system MUST set
        // bfd.SessionState to Down and bfd.LocalDiag to 1 (Control Detection
        // Time Expired)." (pathosd never runs Demand mode.)
        if matches!(self.state, State::Init | State::Up) {
            self.set_state(
                State::Down,
                Diag::CONTROL_DETECTION_TIME_EXPIRED,
                Cause::DetectionTimeExpired,
                step,
            );
        }
        // RFC 5880 §6.8.1, bfd.RemoteDiscr: "If a period of a Detection
        // Time passes without the receipt of a valid, authenticated BFD
        // packet from the remote system, this variable MUST be set to
        // zero." RFC 5880 §6.8.18: the system "SHOULD reset
        // bfd.RemoteMinRxInterval to its initial value of 1".
        self.remote_discr = 0;
        self.remote_state = State::Down;
        self.remote_demand = false;
        self.remote_min_rx = 1;
        self.remote_desired_tx = 0;
        self.remote_detect_mult = 0;
        self.last_rx = None;
        // Nobody is left to answer a Poll.
        self.poll = false;
        self.poll_fence = false;
        self.tx_used = self.adv_tx;
        self.rx_used = self.adv_rx;
    }

    fn admin_down(&mut self, now: Time, step: &mut Step) {
        if self.state == State::AdminDown {
            return;
        }
        // RFC 5880 §6.8.16: "Set bfd.SessionState to AdminDown. Set
        // bfd.LocalDiag to an appropriate value."
        self.set_state(
            State::AdminDown,
            Diag::ADMINISTRATIVELY_DOWN,
            Cause::AdminDown,
            step,
        );
        self.update_intervals();
        // RFC 5880 §6.8.16: "BFD Control packets SHOULD be transmitted for
        // at least a Detection Time after transitioning to AdminDown state":
        // the peer's Detection Time of us is our Detect Mult times our
        // transmit interval.
        let window = u64::from(self.cfg.timers.detect_mult.get()) * self.tx_interval();
        self.admin_tx_until = Some(now.plus(window));
    }

    fn admin_up(&mut self, step: &mut Step) {
        if self.state != State::AdminDown {
            return;
        }
        // RFC 5880 §6.8.16: "Set bfd.SessionState to Down. Set
        // bfd.LocalDiag to an appropriate value." None fits better than 0.
        self.set_state(State::Down, Diag::NONE, Cause::AdminUp, step);
        self.admin_tx_until = None;
    }

    fn set_state(&mut self, to: State, diag: Diag, cause: Cause, step: &mut Step) {
        step.change = Some(Change {
            from: self.state,
            to,
            diag,
            cause,
        });
        self.state = to;
        self.diag = diag;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(tx_ms: u32, rx_ms: u32, mult: u8) -> Config {
        Config {
            local_discriminator: NonZeroU32::new(0x1111).unwrap(),
            timers: Timers {
                desired_min_tx: NonZeroU32::new(tx_ms * 1000).unwrap(),
                required_min_rx: rx_ms * 1000,
                detect_mult: NonZeroU8::new(mult).unwrap(),
            },
            hops: Hops::Single,
        }
    }

    #[test]
    fn a_new_session_is_down_sends_at_once_and_advertises_slow_start() {
        let mut s = Session::new(cfg(100, 100, 3), 7, Time(0));
        assert_eq!(s.state(), State::Down);
        assert_eq!(s.next_tx(), Some(Time(0)));
        let out = s.handle(Event::Timer, Time(0));
        let p = out.send.expect("first packet");
        assert_eq!(p.state, State::Down);
        assert_eq!(p.desired_min_tx, SLOW_START_TX);
        assert_eq!(p.required_min_rx, 100_000);
        assert_eq!(p.your_discriminator, 0);
        assert!(!p.poll && !p.final_ && !p.demand);
        // Next periodic packet within 75..100 % of 1 s.
        let next = out.next_tx.expect("periodic").0;
        assert!((750_000..=1_000_000).contains(&next), "{next}");
        assert_eq!(out.detect_at, None);
    }

    #[test]
    fn jitter_bounds_follow_the_rfc() {
        assert_eq!(jitter_bounds(1_000_000, 3), (750_000, 1_000_000));
        assert_eq!(jitter_bounds(1_000_000, 1), (750_000, 900_000));
        assert_eq!(jitter_bounds(1, 3), (1, 1));
        assert_eq!(jitter_bounds(0, 1), (0, 0));
        let max = u64::from(u32::MAX);
        let (lo, hi) = jitter_bounds(max, 2);
        assert!(lo <= hi && hi == max);
    }

    #[test]
    fn a_stale_timer_does_nothing() {
        let mut s = Session::new(cfg(100, 100, 3), 7, Time(0));
        let first = s.handle(Event::Timer, Time(0));
        let again = s.handle(Event::Timer, Time(10));
        assert_eq!(again.send, None);
        assert_eq!(again.next_tx, first.next_tx);
    }
}
