//! The pure core of one BGP session: everything the driver's peer task
//! decides beyond RFC 4271's state machine ([`super::fsm`]).
//!
//! Pure like the FSM: no socket, no clock read, no log. The driver
//! (`bgp::driver::peer`) feeds it events with the time they happened and
//! carries out what it returns; it only moves bytes and time.
//!
//! * **Route batches → UPDATEs.** The daemon's owner sends every session
//!   the route changes of one engine step as one shared [`RouteBatch`].
//!   The core plans from the owner's table of originated routes
//!   ([`RibOut`], shared: [`SessionCore::with_shared_rib`]; a core of the
//!   replay tests keeps one the batches built), keeps the session's
//!   Adj-RIB-Out ([`AdjRibOut`]), and turns the difference into one
//!   [`Pass`]: every UPDATE of the difference encoded into one buffer,
//!   written with one write. The full table goes out on
//!   Established, End-of-RIB once the owner says the initial evaluation is
//!   done.
//! * **Coalescing.** While a pass is being written, further batches only
//!   mark their prefixes; the next pass carries all of them at once
//!   ([`SessionCore::next_pass`] returns nothing until
//!   [`SessionCore::write_done`]). 10,000 single-route batches queued while
//!   a session comes up cost one pass over the changed prefixes, not
//!   10,000 passes over the table.
//! * **Routes the encoder skips are not advertised.** A route that cannot
//!   be encoded (its attributes leave no room for a prefix in 4096 octets)
//!   is reported in [`Pass::skipped`] and is not recorded in the
//!   Adj-RIB-Out; if the peer held an older version of it, that one is
//!   withdrawn, as it no longer says what pathosd means.
//! * **Status bookkeeping.** State, uptime start, counters and errors are
//!   kept here and handed to the owner as a [`Summary`] when it changed
//!   ([`SessionCore::take_summary`]); the owner
//!   keeps the summaries /status shows. The routes the peer has from us
//!   (the Adj-RIB-Out) the owner reads from the core itself.
//! * **Connection collisions** (RFC 4271 §6.8): [`PeerFsm`] runs the
//!   session's FSM and a second connection's, and decides which stays
//!   (`session/peer_fsm.rs`).
//! * **Retry jitter** (RFC 4271 §10) for the ConnectRetryTimer and the
//!   IdleHoldTimer, whose doubling back-off lives in the FSM.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fsm::State;
use super::rib_out::{AdjRibOut, Changes, PeerShape, PrefixSet, RibOut, Scope, Warning};
use super::types::{Afi, PathAttrs, Prefix, RouteIntent};
use super::wire::{self, MessageType, Skipped};

mod peer_fsm;

pub use peer_fsm::{Conn, PeerFsm, Refusal, Step, Transition};

/// Route changes of one engine step, shared by every session (one
/// allocation for all peers): `None` withdraws the prefix. Equal intents
/// are one `Arc` (the owner shares them), which the sessions' tables keep.
/// An `Arc<Vec>`, not an `Arc<[_]>`: made from a `Vec` it takes the buffer
/// as it is, where a slice would be a copy with the `Vec` alive (320 KB
/// more at the start's peak at 10,000 `always` VIPs).
pub type RouteBatch = Arc<Vec<(Prefix, Option<Arc<RouteIntent>>)>>;

/// Message kinds, for the per-type counters in the peer status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Open,
    Update,
    Notification,
    Keepalive,
    RouteRefresh,
}

impl MessageKind {
    /// The kind a message header says (byte 18), when it is a known type.
    pub fn of(msg: &[u8]) -> Option<MessageKind> {
        let ty = msg.get(18).copied().and_then(MessageType::from_u8)?;
        Some(match ty {
            MessageType::Open => MessageKind::Open,
            MessageType::Update => MessageKind::Update,
            MessageType::Notification => MessageKind::Notification,
            MessageType::Keepalive => MessageKind::Keepalive,
            MessageType::RouteRefresh => MessageKind::RouteRefresh,
        })
    }
}

/// Messages by type, one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageCounters {
    pub open: u32,
    pub update: u32,
    pub notification: u32,
    pub keepalive: u32,
    pub route_refresh: u32,
}

impl MessageCounters {
    /// Counts `n` messages of `kind`.
    pub fn count(&mut self, kind: MessageKind, n: u32) {
        // Counters wrap like Prometheus counters reset: u32 only (no 64-bit
        // atomics on 32-bit MIPS) and never an overflow panic.
        let c = match kind {
            MessageKind::Open => &mut self.open,
            MessageKind::Update => &mut self.update,
            MessageKind::Notification => &mut self.notification,
            MessageKind::Keepalive => &mut self.keepalive,
            MessageKind::RouteRefresh => &mut self.route_refresh,
        };
        *c = c.wrapping_add(n);
    }

    pub fn total(&self) -> u32 {
        self.open
            .wrapping_add(self.update)
            .wrapping_add(self.notification)
            .wrapping_add(self.keepalive)
            .wrapping_add(self.route_refresh)
    }
}

/// What a session reports about itself (the routes aside: the owner reads
/// them from the session, see [`SessionCore::take_summary`]); the owner adds the configured
/// name, address, AS and `required`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// RFC 4271 state, lower case (GoBGP's spelling).
    pub state: &'static str,
    /// False once the peer stopped for good (e.g. its TCP MD5 key could not
    /// be set); `last_error` says why.
    pub running: bool,
    /// When the session reached Established (None when it is not).
    pub established_at: Option<Instant>,
    /// How often the session reached Established.
    pub established_count: u32,
    /// How often the session left Established.
    pub flaps: u32,
    pub last_error: Option<String>,
    pub last_notification_sent: Option<String>,
    pub last_notification_received: Option<String>,
    pub messages_in: MessageCounters,
    pub messages_out: MessageCounters,
    /// Prefixes the peer currently has from us.
    pub advertised: u32,
}

impl Summary {
    /// A peer that has not started yet.
    pub fn idle(running: bool) -> Summary {
        Summary {
            state: State::Idle.as_str(),
            running,
            established_at: None,
            established_count: 0,
            flaps: 0,
            last_error: None,
            last_notification_sent: None,
            last_notification_received: None,
            messages_in: MessageCounters::default(),
            messages_out: MessageCounters::default(),
            advertised: 0,
        }
    }
}

/// UPDATEs to write in one go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Every UPDATE of the pass, back to back.
    pub bytes: Vec<u8>,
    /// How many UPDATE messages `bytes` holds.
    pub updates: u32,
    /// Routes the session cannot send (reported once per session).
    pub warnings: Vec<Warning>,
    /// Routes the encoder could not encode: not advertised.
    pub skipped: Vec<Skipped>,
}

/// The per-session core. See the module documentation.
#[derive(Debug, Clone)]
pub struct SessionCore {
    /// The originated routes, as the route batches built them (a core of
    /// its own, the replay tests'; empty when `shared`).
    rib: RibOut,
    /// The owner's table of originated routes, which the daemon's sessions
    /// plan from instead of keeping a copy each (10,000 routes: ≈ 280 KB a
    /// peer, and the list it was built from). Its route batches
    /// then only say which prefixes changed. The owner and the sessions run
    /// on one thread and borrow it only within a call.
    shared: Option<Rc<RefCell<RibOut>>>,
    /// The owner said the first evaluation is in (its `InitialDone`, in
    /// order with the route batches): End-of-RIB may go out.
    initial_done: bool,
    adj: AdjRibOut,
    /// Prefixes changed by batches since the last pass (Established only).
    dirty: PrefixSet,
    /// The whole table is due (the session just came up).
    full: bool,
    /// End-of-RIB may have become due.
    eor_check: bool,
    /// A pass is being written.
    writing: bool,
    four_octet_as: bool,
    summary: Summary,
    summary_changed: bool,
    /// The last down reason reported at info, so retries that fail the same
    /// way are logged at debug.
    logged_reason: Option<String>,
    rng: u64,
}

impl SessionCore {
    /// `seed` only needs to differ between peers and restarts (the driver
    /// mixes the time and the peer's name).
    pub fn new(shape: PeerShape, seed: u64) -> SessionCore {
        SessionCore {
            rib: RibOut::new(),
            shared: None,
            initial_done: false,
            adj: AdjRibOut::new(shape),
            dirty: PrefixSet::new(),
            full: false,
            eor_check: false,
            writing: false,
            four_octet_as: false,
            summary: Summary::idle(true),
            summary_changed: true,
            logged_reason: None,
            rng: seed | 1,
        }
    }

    /// A core that plans from `rib`, the owner's table, which the owner
    /// changes before it sends the route batches (see `shared`).
    pub fn with_shared_rib(shape: PeerShape, seed: u64, rib: Rc<RefCell<RibOut>>) -> SessionCore {
        let mut c = SessionCore::new(shape, seed);
        c.shared = Some(rib);
        c
    }

    /// What the peer has from us: the owner reads it for /metrics.
    pub fn adj_rib_out(&self) -> &AdjRibOut {
        &self.adj
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    // ---- routes -------------------------------------------------------

    /// A batch of route changes from the owner.
    pub fn on_routes(&mut self, batch: &[(Prefix, Option<Arc<RouteIntent>>)]) {
        let established = self.adj.is_established();
        if self.shared.is_some() {
            // The owner's table has them already: the batch only says
            // which prefixes to look at.
            if established {
                self.dirty.extend(batch.iter().map(|(p, _)| *p));
            }
            return;
        }
        // Collected, then added to the set in one go (see `PrefixSet`).
        let mut changed = Vec::new();
        self.rib
            .set_desired_batch(batch.iter().map(|(p, i)| (*p, i.clone())), |prefix, _| {
                if established {
                    changed.push(prefix);
                }
            });
        self.dirty.extend(changed);
    }

    /// The owner's table, which this core plans from, was filled from
    /// empty or emptied (the shutdown's withdrawal): every route may have
    /// changed (a batch listing them all would be a 320 KB list, and the
    /// changed set another 0.25 MB, at 10,000 routes).
    pub fn on_table_replaced(&mut self) {
        if self.adj.is_established() {
            self.full = true;
        }
    }

    /// The owner's first evaluation of every VIP is in.
    pub fn on_initial_done(&mut self) {
        self.rib.mark_initial_done();
        self.initial_done = true;
        self.eor_check = true;
    }

    /// The session reached Established with `families`; `shape` is the
    /// shaping with the session's own next hops when they come from it.
    pub fn on_established(
        &mut self,
        families: &[Afi],
        four_octet_as: bool,
        shape: PeerShape,
        now: Instant,
    ) {
        self.adj.set_shape(shape);
        self.adj.establish(families);
        self.four_octet_as = four_octet_as;
        self.dirty.clear();
        self.full = true;
        self.writing = false;
        let s = &mut self.summary;
        s.established_at = Some(now);
        s.established_count = s.established_count.wrapping_add(1);
        s.last_error = None;
        self.summary_changed = true;
    }

    /// The session left Established: the peer dropped what we sent.
    pub fn on_session_down(&mut self) {
        self.adj.on_session_down();
        self.dirty.clear();
        self.full = false;
        self.writing = false;
        let s = &mut self.summary;
        s.established_at = None;
        s.advertised = 0;
        s.flaps = s.flaps.wrapping_add(1);
        self.summary_changed = true;
    }

    /// The next UPDATEs to write, if any: None while a pass is being
    /// written (the batches that arrive meanwhile go into the next one),
    /// while the session is not Established, or when nothing changed.
    pub fn next_pass(&mut self) -> Option<Pass> {
        if self.writing || !self.adj.is_established() {
            return None;
        }
        let shared = self.shared.as_ref().map(|r| r.borrow());
        let desired = shared.as_deref().unwrap_or(&self.rib).desired();
        let changes = if self.full {
            self.full = false;
            self.dirty.clear();
            self.adj.plan_in(desired, self.initial_done, Scope::All)
        } else if !self.dirty.is_empty() || self.eor_check {
            let dirty = std::mem::take(&mut self.dirty);
            self.adj
                .plan_in(desired, self.initial_done, Scope::Changed(&dirty))
        } else {
            return None;
        };
        drop(shared);
        self.eor_check = false;
        if changes.is_empty() && changes.warnings.is_empty() {
            return None;
        }
        let pass = self.encode(changes, true);
        self.writing = !pass.bytes.is_empty();
        Some(pass)
    }

    /// The pass returned by [`SessionCore::next_pass`] was written (or the
    /// write failed, which drops the connection and so the session).
    pub fn write_done(&mut self) {
        self.writing = false;
    }

    /// Whether a pass is being written.
    pub fn writing(&self) -> bool {
        self.writing
    }

    /// RFC 2918 §4: on a ROUTE-REFRESH "the BGP speaker may re-advertise to
    /// that peer the Adj-RIB-Out of the <AFI, SAFI> carried in the message".
    pub fn on_route_refresh(&mut self, afi: Afi) -> Pass {
        let changes = self.adj.route_refresh(afi);
        self.encode(changes, false)
    }

    /// Encodes `changes` into one buffer; with `record`, what could be
    /// encoded becomes the Adj-RIB-Out.
    fn encode(&mut self, mut changes: Changes, record: bool) -> Pass {
        let four = self.four_octet_as;
        // The order of NLRI means nothing to BGP but much to the router's
        // memory: BIRD lays a session's routes out in the order they
        // arrive and, when the session ends, frees them in its table's
        // walk order. Sent in that order, the flush reads memory in
        // sequence: 10,000 routes gone 1.4 ms after our Cease instead of
        // 4.4 (benches/stop-timing.sh). In place: no second copy of the
        // table at a new session's peak.
        changes
            .announce
            .sort_unstable_by_key(|(p, _)| p.bird_walk_key());
        let out = wire::encode_updates(&changes.announce, &changes.withdraw, four);
        let mut skipped = out.skipped;
        let mut messages = out.messages;
        let skipped_announce: PrefixSet = skipped
            .iter()
            .filter(|s| !s.withdrawn)
            .flat_map(|s| s.prefixes.iter().copied())
            .collect();
        let mut skipped_withdraw: PrefixSet = skipped
            .iter()
            .filter(|s| s.withdrawn)
            .flat_map(|s| s.prefixes.iter().copied())
            .collect();
        if !skipped_announce.is_empty() {
            changes
                .announce
                .retain(|(p, _)| !skipped_announce.contains(p));
            // The peer still holds an older version of a skipped route: it
            // no longer says what we mean, so it goes.
            let stale: Vec<Prefix> = skipped_announce
                .iter()
                .filter(|p| record && self.adj.advertised().contains_key(*p))
                .copied()
                .collect();
            if !stale.is_empty() {
                let w = wire::encode_updates::<Arc<PathAttrs>>(&[], &stale, four);
                messages.extend(w.messages);
                for s in &w.skipped {
                    skipped_withdraw.extend(s.prefixes.iter().copied());
                }
                skipped.extend(w.skipped);
                changes.withdraw.extend(stale);
            }
        }
        // A withdrawal that could not be encoded leaves the route with the
        // peer: it stays in the Adj-RIB-Out.
        changes.withdraw.retain(|p| !skipped_withdraw.contains(p));
        for afi in &changes.end_of_rib {
            messages.push(wire::encode_end_of_rib(*afi));
        }
        let mut bytes = Vec::with_capacity(messages.iter().map(Vec::len).sum());
        for m in &messages {
            bytes.extend_from_slice(m);
        }
        let updates = u32::try_from(messages.len()).unwrap_or(u32::MAX);
        // Gone before the Adj-RIB-Out is built: a new session's first pass
        // is the daemon's peak.
        drop(messages);
        if record {
            let mut announce = std::mem::take(&mut changes.announce);
            // Back in prefix order, the order the Adj-RIB-Out's bulk build
            // takes without sorting a copy of its own.
            announce.sort_unstable_by_key(|(p, _)| *p);
            self.adj.commit_taking(announce, &changes.withdraw);
            let advertised = u32::try_from(self.adj.advertised().len()).unwrap_or(u32::MAX);
            if advertised != self.summary.advertised {
                self.summary.advertised = advertised;
                self.summary_changed = true;
            }
        }
        Pass {
            bytes,
            updates,
            warnings: changes.warnings,
            skipped,
        }
    }

    // ---- status -------------------------------------------------------

    pub fn on_message_in(&mut self, kind: MessageKind) {
        self.summary.messages_in.count(kind, 1);
        self.summary_changed = true;
    }

    pub fn on_message_out(&mut self, kind: MessageKind, n: u32) {
        self.summary.messages_out.count(kind, n);
        self.summary_changed = true;
    }

    pub fn on_notification_sent(&mut self, text: String) {
        self.summary.last_notification_sent = Some(text);
        self.summary_changed = true;
    }

    pub fn on_notification_received(&mut self, text: String) {
        self.summary.last_notification_received = Some(text);
        self.summary_changed = true;
    }

    /// A socket error (read, write, connect) worth showing.
    pub fn on_error(&mut self, text: String) {
        self.summary.last_error = Some(text);
        self.summary_changed = true;
    }

    /// The peer stopped for good (e.g. its TCP MD5 key cannot be set).
    pub fn on_stopped_for_good(&mut self, text: String) {
        self.summary.last_error = Some(text);
        self.summary.running = false;
        self.summary_changed = true;
    }

    /// The FSM moved from `before` to `after` (`reason`: why it went to
    /// Idle). Returns whether the change is worth an info line: session up
    /// and down and a new failure reason are; retries that fail the same
    /// way again are debug (logd keeps 16 KiB: a peer that stays down must
    /// not fill it).
    pub fn on_transition(&mut self, before: State, after: State, reason: Option<&str>) -> bool {
        self.summary.state = after.as_str();
        if let Some(r) = reason {
            self.summary.last_error = Some(r.to_string());
        }
        self.summary_changed = true;
        let session = before == State::Established || after == State::Established;
        let new_reason = reason.is_some() && reason != self.logged_reason.as_deref();
        if after == State::Established {
            self.logged_reason = None;
        } else if let Some(r) = reason {
            self.logged_reason = Some(r.to_string());
        }
        session || new_reason
    }

    /// The summary, if it changed since the last call: the session's
    /// report to the owner. The routes the peer has from us are not
    /// reported: the owner reads them from the session
    /// ([`SessionCore::adj_rib_out`]) when /metrics asks, instead of keeping
    /// a copy of each session's Adj-RIB-Out (10,000 routes, ≈ 280 KB, a
    /// peer at 10,000 `always` VIPs).
    pub fn take_summary(&mut self) -> Option<Summary> {
        if !self.summary_changed {
            return None;
        }
        self.summary_changed = false;
        Some(self.summary.clone())
    }

    // ---- timers -------------------------------------------------------

    /// `d` times a factor uniformly spread over 0.75 .. 1.0.
    pub fn jitter(&mut self, d: Duration) -> Duration {
        // RFC 4271 §10: "the base value ... is multiplied by a random factor
        // which is uniformly distributed in the range from 0.75 to 1.0".
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let permille = 750 + u32::try_from(self.rng % 251).unwrap_or(0);
        d.saturating_mul(permille) / 1000
    }
}

/// When a due KEEPALIVE may leave after a KeepaliveTimer of `d` starts:
/// (earliest, latest), as offsets from the start. The driver sends it at
/// the first wake-up of its thread inside the window, and at `latest` if
/// nothing woke the thread before, so a KEEPALIVE rides on a wake-up the
/// daemon has anyway (a probe's) instead of waking it alone.
///
/// RFC 4271 §10: "jitter SHOULD be applied to the timers associated with
/// MinASOriginationIntervalTimer, KeepaliveTimer, ..." and "The suggested
/// default amount of jitter SHALL be determined by multiplying the base
/// value of the appropriate timer by a random factor, which is uniformly
/// distributed in the range from 0.75 to 1.0." Here the factor is wherever
/// in 0.75 .. 1.0 the thread happens to be awake: not uniform, but never
/// outside the range (and the thread's other wake-ups are spread, so
/// neither are the KEEPALIVEs).
///
/// RFC 4271 §4.4: "KEEPALIVE messages MUST NOT be sent more frequently
/// than one per second": the window never opens before 1 s. So with a
/// keepalive of 1 s (hold time 3 s) it is empty: 1 s, as before.
pub fn keepalive_window(d: Duration) -> (Duration, Duration) {
    let earliest = (d.saturating_mul(3) / 4).max(Duration::from_secs(1)).min(d);
    (earliest, d)
}
