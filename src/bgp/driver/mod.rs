//! The BGP speaker on smol: one task per peer owns that peer's sockets, its
//! [`Fsm`](super::fsm::Fsm) and its [`AdjRibOut`](super::rib_out::AdjRibOut);
//! a listener task hands inbound connections to the matching peer.
//!
//! * **Route changes go to the sessions as messages.** The handle, which
//!   the daemon's owner task holds, keeps the one table of originated
//!   routes ([`RibOut`]); [`SpeakerHandle::set_routes`] changes it, then
//!   sends the routes that changed, as one shared [`RouteBatch`], to every
//!   peer task, whose pure [`SessionCore`] plans from the table (no copy
//!   per peer), keeps its Adj-RIB-Out and sends the minimal
//!   UPDATE set for the difference.
//! * **Status comes back as messages.** Each peer task reports its state,
//!   counters and errors to the handle ([`SpeakerHandle::reports`],
//!   [`SpeakerHandle::apply`]); the handle keeps the peer summaries
//!   [`SpeakerHandle::peers`] shows. The routes each peer has from us are
//!   read from its session's core when asked (a `Weak` to it, on the same
//!   thread), not copied: one 10,000-route table less per peer.
//!   Nothing else is shared between the owner and the sessions.
//! * **Active connects** bind the configured local address and carry the
//!   TCP MD5 key and TTL options before the SYN. **Passive**: one listener on
//!   `bgp.listen_address:listen_port` (none when the port is -1); a
//!   connection from an address that is no configured neighbor is closed and
//!   logged. Every MD5 key is set on the listener before the first accept;
//!   when a key cannot be set, that peer does not run at all.
//! * **Timers** of the FSM become deadlines; ConnectRetryTimer and
//!   IdleHoldTimer get RFC 4271 §10 jitter; the KeepaliveTimer a window
//!   in the same 0.75–1.0 range whose end is the first wake-up of the
//!   thread in it (`bgp::session::keepalive_window`).
//! * **Graceful stop** ([`SpeakerHandle::shutdown`]): with a drain time,
//!   withdraw every route, wait the drain time, then NOTIFICATION Cease /
//!   Administrative Shutdown with the message, then close; without one,
//!   the Cease alone (the peer drops the session's routes).
//! * **Writes never block the peer's task.** What the socket does not take
//!   at once waits in the connection's buffer and leaves when the socket
//!   has room, while the task goes on reading and running its timers.
//! * Every network wait is bounded: a peer that takes none of our bytes by
//!   the FSM's SendHoldTimer (RFC 9687, fed with the writes' progress),
//!   connects by the ConnectRetryTimer, silent peers by the HoldTimer.
//!
//! This file is the speaker's side the owner holds: the handle, the table
//! of peer tasks and the owner's view of each. One peer's task is
//! `peer.rs`, the listener's `listener.rs`; the sockets' options are set in
//! `net.rs`, the codec is called in `codec.rs`.

mod codec;
mod listener;
mod net;
mod peer;

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, TcpListener};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::chan::{self, Rx, Tx};
use smol::{Async, Task};

use super::fsm::State;
use super::rib_out::RibOut;
use super::session::{RouteBatch, SessionCore, Summary};
use super::types::{PathAttrs, Prefix, RouteIntent};
use crate::config::run::{NeighborRun, RunConfig};
use crate::daemon::reload::NeighborChange;

pub use super::settings::PeerSettings;

/// Upper bound of [`SpeakerHandle::shutdown`]'s waits for peers (besides the drain).
const STOP_TIMEOUT: Duration = Duration::from_secs(3);
pub use listener::NON_NEIGHBOR_LOG_BURST;

/// A session state change, for the daemon's logs and ubus events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerEvent {
    pub peer: String,
    pub address: IpAddr,
    pub from: State,
    pub to: State,
    /// Why the session went down, when it did.
    pub reason: Option<String>,
}

pub use super::session::MessageCounters;

/// One peer as shown in /status: the configured identity, the session's
/// own [`Summary`] as its task last reported it, and what the peer has from
/// us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    pub name: String,
    pub address: IpAddr,
    pub asn: u32,
    /// The neighbor's `required` (for /readyz).
    pub required: bool,
    /// Time since the session reached Established (from
    /// `summary.established_at`, at the snapshot).
    pub uptime: Option<Duration>,
    pub summary: Summary,
}

/// A peer task's report to the owner: which task (a restarted peer is a
/// new task) and its new summary.
#[derive(Debug, Clone)]
pub struct SessionReport {
    id: u64,
    summary: Summary,
}

/// Requests from the handle (and the listener) to one peer task (public
/// only for [`crate::chan`], which carries it). The acknowledgements
/// (`done`) and a reload's start gate are channels of `()`.
pub enum Control {
    /// Route changes of one engine step, shared by every peer; `done` is
    /// told once the UPDATEs that carry them are written.
    Routes(RouteBatch, Option<Tx<()>>),
    /// The originated routes were set into an empty table, or all
    /// withdrawn: every prefix may have changed (instead of a batch listing
    /// all of them); `done` as for `Routes`.
    TableReplaced(Option<Tx<()>>),
    /// The first evaluation of every VIP is in: End-of-RIB may go out.
    InitialDone,
    /// A connection from the peer's address, accepted by the listener.
    Inbound(Async<std::net::TcpStream>),
    /// ManualStop with the Shutdown Communication, then end the task.
    Stop(Option<String>, Tx<()>),
    /// The neighbor's BFD session went down (RFC 5882): a session that is
    /// up ends with Cease / BFD Down; the task goes on.
    BfdDown,
}

/// A running (or unstartable) peer in the driver's table, which the
/// listener reads to hand over inbound connections.
struct PeerEntry {
    name: String,
    address: IpAddr,
    /// What the peer runs with (None: the config was unusable).
    settings: Option<PeerSettings>,
    /// None when the peer does not run.
    ctl: Option<Tx<Control>>,
    task: Option<Task<()>>,
}

/// The table of peer tasks, shared by the handle and the listener's accept
/// loop: both are tasks on the daemon's one thread (`crate::rt`), so a
/// `RefCell` is enough; each borrow only looks up or edits the table and
/// ends before the next `.await`.
type PeerTable = Rc<RefCell<Vec<PeerEntry>>>;

/// One peer as the owner knows it: the configured identity and what its
/// task last reported.
struct View {
    id: u64,
    name: String,
    address: IpAddr,
    asn: u32,
    required: bool,
    summary: Summary,
    /// The running session's core, for its Adj-RIB-Out (none once the
    /// task is gone: the peer has nothing from us then).
    session: Weak<RefCell<SessionCore>>,
}

/// The owner's side: the originated routes and the peer summaries. The
/// [`SpeakerHandle`] owns it, and only the owner task holds the handle: no
/// session reads or writes it.
#[derive(Default)]
struct OwnerSide {
    /// The one table of originated routes: the sessions plan from it
    /// (`SessionCore::with_shared_rib`), all on this thread, each borrow
    /// within one call. It changes before the batch that names the changes
    /// is sent.
    rib: Rc<RefCell<RibOut>>,
    views: Vec<View>,
    next_id: u64,
}

/// Builds the speaker.
pub struct Speaker;

/// The daemon's handle on the running speaker, held by the owner task. It
/// is not `Send`: it and the tasks it starts live on the daemon's thread.
pub struct SpeakerHandle {
    peers: PeerTable,
    listener: Option<Rc<Async<TcpListener>>>,
    listener_task: Option<Task<()>>,
    events: Tx<PeerEvent>,
    reports_tx: Tx<Box<SessionReport>>,
    owner: OwnerSide,
    reports: Rx<Box<SessionReport>>,
}

impl Speaker {
    /// Opens the listener (unless `bgp.listen_port` is -1), sets every
    /// neighbor's TCP MD5 key on it and starts one task per neighbor.
    /// Fails only when the listener cannot be opened; a neighbor whose MD5
    /// key cannot be set is reported in its status and does not run.
    /// `events` gets each session change.
    pub fn start(cfg: &RunConfig, events: Tx<PeerEvent>) -> io::Result<SpeakerHandle> {
        let listener = match cfg.listen {
            Some(addr) => {
                let l = net::listen(addr)
                    .map_err(|e| io::Error::new(e.kind(), format!("bgp listen on {addr}: {e}")))?;
                log::info!("bgp: listening on {addr}");
                Some(Rc::new(l))
            }
            None => None,
        };
        let (reports_tx, reports_rx) = chan::unbounded();
        let mut handle = SpeakerHandle {
            peers: Rc::new(RefCell::new(Vec::new())),
            listener: listener.clone(),
            listener_task: None,
            events,
            reports_tx,
            owner: OwnerSide::default(),
            reports: reports_rx,
        };
        for n in &cfg.neighbors {
            handle.start_peer(n, None);
        }
        if let Some(l) = listener {
            let weak = Rc::downgrade(&handle.peers);
            handle.listener_task = Some(crate::rt::spawn(listener::accept_loop(l, weak)));
        }
        Ok(handle)
    }
}

impl SpeakerHandle {
    /// Starts the task of neighbor `n` (after `gate` closes, when given: a
    /// reload's start), with the current originated routes as its first
    /// batch.
    fn start_peer(&mut self, n: &NeighborRun, gate: Option<Rx<()>>) {
        let s = n.settings.clone();
        let address = s.address;
        let md5 = match (&self.listener, &s.password) {
            (Some(l), Some(key)) => net::listener_md5(l, s.address, key)
                .map_err(|e| format!("cannot set the TCP MD5 key on the listener: {e}")),
            // A key left from before a reload would make the kernel drop
            // this peer's now unsigned SYNs; none set is fine (ENOENT).
            (Some(l), None) => {
                let _ = net::listener_md5(l, s.address, "");
                Ok(())
            }
            (None, _) => Ok(()),
        };
        let settings = md5.map(|()| s);
        let owner = &mut self.owner;
        owner.next_id = owner.next_id.wrapping_add(1);
        let id = owner.next_id;
        let mut entry = PeerEntry {
            name: n.name().to_string(),
            address: net::canonical(address),
            settings: settings.as_ref().ok().cloned(),
            ctl: None,
            task: None,
        };
        let mut summary = Summary::idle(false);
        let mut session = Weak::new();
        match settings {
            Ok(s) => {
                if s.fsm.passive && self.listener.is_none() {
                    log::warn!(
                        "bgp peer {}: passive but bgp.listen_port is -1: it can never connect",
                        s.name
                    );
                }
                summary.running = true;
                let (tx, rx) = chan::unbounded();
                // The new session plans from the whole current table once
                // it is Established; End-of-RIB is due at once if the first
                // evaluation is in.
                if owner.rib.borrow().initial_done() {
                    let _ = tx.try_send(Control::InitialDone);
                }
                let task = peer::PeerTask::new(
                    s,
                    id,
                    owner.rib.clone(),
                    self.events.clone(),
                    self.reports_tx.clone(),
                    rx,
                    gate,
                );
                session = task.core_handle();
                entry.ctl = Some(tx);
                entry.task = Some(crate::rt::spawn(task.run()));
            }
            Err(e) => {
                log::error!("bgp peer {}: not started: {e}", n.name());
                summary.last_error = Some(e);
            }
        }
        owner.views.retain(|v| v.name != n.name());
        owner.views.push(View {
            id,
            name: n.name().to_string(),
            address,
            asn: n.settings.fsm.peer_as,
            required: n.required,
            summary,
            session,
        });
        let mut peers = self.peers.borrow_mut();
        peers.retain(|p| p.name != n.name());
        peers.push(entry);
    }

    fn send_all(&self, make: impl Fn() -> Control) {
        for p in self.peers.borrow().iter() {
            if let Some(tx) = &p.ctl {
                let _ = tx.try_send(make());
            }
        }
    }

    /// Sets (`Some`) or withdraws (`None`) the route for `prefix` on every
    /// peer (the tests' shorthand; the owner sends each step's batch).
    #[cfg(any(test, feature = "test-support"))]
    pub fn set_route(&mut self, prefix: Prefix, intent: Option<RouteIntent>) {
        self.set_routes(std::iter::once((prefix, intent.map(Arc::new))));
    }

    /// Several route changes applied together: the ones that change the
    /// originated table go to every peer as one batch, and every peer sends
    /// them as one minimal UPDATE set. The intents are the engine's shared
    /// `Arc`s (one per distinct set of attributes), kept as they are.
    pub fn set_routes(
        &mut self,
        routes: impl IntoIterator<Item = (Prefix, Option<Arc<RouteIntent>>)>,
    ) {
        let (batch, first) = {
            let owner = &mut self.owner;
            let mut batch = Vec::new();
            let mut rib = owner.rib.borrow_mut();
            let first = rib.desired().is_empty();
            rib.set_desired_batch(routes, |p, i| {
                if !first {
                    batch.push((p, i.cloned()));
                }
            });
            let filled = first && !rib.desired().is_empty();
            drop(rib);
            (batch, filled)
        };
        if first {
            // Every route is new: the sessions plan from the whole table,
            // no list of it.
            self.send_all(|| Control::TableReplaced(None));
            return;
        }
        if batch.is_empty() {
            return;
        }
        let batch: RouteBatch = Arc::new(batch);
        self.send_all(|| Control::Routes(batch.clone(), None));
    }

    /// The BFD session of neighbor `name` went from Up to Down: its BGP
    /// session goes down (RFC 5882 §4.2.1), and dials or waits again as
    /// after any error.
    pub fn bfd_down(&self, name: &str) {
        let table = self.peers.borrow();
        if let Some(ctl) = table
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.ctl.as_ref())
        {
            let _ = ctl.try_send(Control::BfdDown);
        }
    }

    /// The first evaluation of every VIP is in: End-of-RIB may go out.
    pub fn mark_initial_done(&mut self) {
        self.owner.rib.borrow_mut().mark_initial_done();
        self.send_all(|| Control::InitialDone);
    }

    /// The peer tasks' reports, for the owner's event loop; hand each to
    /// [`SpeakerHandle::apply`]. [`SpeakerHandle::peers`] also applies the
    /// ones still queued.
    pub fn reports(&self) -> Rx<Box<SessionReport>> {
        self.reports.clone()
    }

    /// Applies a peer task's report to the summaries. Reports of a task
    /// that was replaced or removed are dropped.
    pub fn apply(&mut self, r: SessionReport) {
        apply_report(&mut self.owner, r);
    }

    /// A snapshot of every configured peer, in configuration order.
    pub fn peers(&mut self) -> Vec<PeerStatus> {
        let now = Instant::now();
        let owner = &mut self.owner;
        // Bounded: what the tasks reported so far (they add at most a few
        // reports per message they handle).
        for _ in 0..100_000 {
            match self.reports.try_recv() {
                Ok(r) => apply_report(owner, *r),
                Err(_) => break,
            }
        }
        owner
            .views
            .iter()
            .map(|v| PeerStatus {
                name: v.name.clone(),
                address: v.address,
                asn: v.asn,
                required: v.required,
                uptime: v
                    .summary
                    .established_at
                    .map(|t| now.saturating_duration_since(t)),
                summary: v.summary.clone(),
            })
            .collect()
    }

    /// Up to `max` of the routes that peer `peer` (its position in
    /// [`Self::peers`]) has from us, its Adj-RIB-Out as sent, in prefix
    /// order from the first after `after`, appended to `out`: /metrics'
    /// route state reads them a few at a time, never a copy of the table.
    pub fn routes(
        &self,
        peer: usize,
        after: Option<&Prefix>,
        max: usize,
        out: &mut Vec<(Prefix, PathAttrs)>,
    ) {
        if let Some(v) = self.owner.views.get(peer) {
            advertised(&v.session, after, max, out);
        }
    }

    /// Applies a reloaded config as the daemon's reload plan decided for
    /// each neighbor (`plan`, by name): Restarted ones restart (Cease /
    /// Administrative Shutdown "configuration changed", then a new
    /// session), Removed ones stop, Added ones start, Required ones only
    /// take their new `required`; a peer that could not start before (its
    /// MD5 key) is tried again. Which neighbors start and stop is the
    /// plan's alone; `cfg` only gives the started ones' settings. The
    /// listener and its address are kept (a changed listen address needs a
    /// daemon restart; the reload says so).
    pub fn reconfigure(&mut self, cfg: &RunConfig, plan: &[(String, NeighborChange)]) {
        let change = |name: &str| {
            plan.iter()
                .find(|(n, _)| n == name)
                .map_or(NeighborChange::Unchanged, |(_, c)| *c)
        };
        // The plan's Restarted and Removed neighbors stop; so does one that
        // could not start before (its MD5 key), to be tried again.
        let (stopping, keep): (Vec<PeerEntry>, Vec<PeerEntry>) =
            self.peers.borrow_mut().drain(..).partition(|p| {
                p.settings.is_none()
                    || matches!(
                        change(&p.name),
                        NeighborChange::Restarted | NeighborChange::Removed
                    )
            });
        *self.peers.borrow_mut() = keep;
        let retried: Vec<&str> = stopping
            .iter()
            .filter(|p| p.settings.is_none())
            .map(|p| p.name.as_str())
            .collect();
        // The plan's Added and Restarted neighbors start, with the retried
        // ones the new config still has.
        let starting: Vec<&NeighborRun> = plan
            .iter()
            .filter(|(name, c)| {
                matches!(c, NeighborChange::Added | NeighborChange::Restarted)
                    || retried.contains(&name.as_str())
            })
            .filter_map(|(name, _)| cfg.neighbor(name))
            .collect();
        {
            let owner = &mut self.owner;
            owner
                .views
                .retain(|v| change(&v.name) != NeighborChange::Removed);
            for v in owner.views.iter_mut() {
                if let Some(n) = cfg.neighbor(&v.name) {
                    v.required = n.required;
                }
            }
        }
        // The old sessions' Cease must reach the peer before the new
        // sessions connect: a peer that sees a new connection while the old
        // session is still Established treats it as a collision (RFC 4271
        // §6.8) or, with graceful restart, as our restart (RFC 4724 §4.2);
        // BIRD then leaves the new connection in OpenConfirm until its
        // HoldTimer expires, a routing outage of up to the hold time. The
        // new tasks exist at once (route batches queue for them) and start
        // once the old ones are closed.
        let (open_tx, gate) = chan::bounded::<()>(1);
        if stopping.is_empty() {
            drop(open_tx);
        } else {
            crate::rt::spawn(async move {
                stop_peers(stopping, Some("configuration changed".to_string())).await;
                drop(open_tx);
            })
            .detach();
        }
        for n in starting {
            // The task logs "(re)starting with the new configuration" once
            // its gate opens, after the old session's Cease.
            self.start_peer(n, Some(gate.clone()));
        }
        // Keep the configured order for /status.
        let pos = |name: &str| {
            cfg.neighbors
                .iter()
                .position(|n| n.name() == name)
                .unwrap_or(usize::MAX)
        };
        self.owner.views.sort_by_key(|v| pos(&v.name));
        self.peers.borrow_mut().sort_by_key(|p| pos(&p.name));
    }

    /// Graceful stop. With a `drain`: withdraw every route from every
    /// peer, wait `drain` from the moment those UPDATEs are written (so
    /// traffic moves away before the sessions drop), then send Cease /
    /// Administrative Shutdown with `message` and close. Without one: the
    /// Cease alone, at once. Bounded: at most `drain` plus a few seconds.
    ///
    /// Why no withdrawals without a drain: a NOTIFICATION ends the session
    /// and the peer deletes every route it learnt on it (RFC 4271 §8.2.2,
    /// Established, NotifMsg), so UPDATEs withdrawing them first only
    /// delay the end (10,000 routes: 13 UPDATEs to encode and the router
    /// to process, then the Cease). Graceful Restart does not keep them:
    /// pathosd never sets the RFC 8538 N bit, so a NOTIFICATION is no
    /// restart for the peer (RFC 4724 applies to a connection lost without
    /// one), and its capability says Restart Time 0 with no forwarding
    /// state, so even a lost connection leaves nothing stale.
    pub async fn shutdown(&mut self, message: &str, drain: Duration) {
        if let Some(t) = self.listener_task.take() {
            drop(t);
        }
        // Every route withdrawn at once: the sessions plan against the
        // emptied table, with no list of the prefixes (10,000 routes: the
        // list, each session's changed set and the batch were ≈ 0.8 MB at
        // the stop).
        self.owner.rib.borrow_mut().clear();
        if !drain.is_zero() {
            let (done_tx, done_rx) = chan::unbounded();
            let mut waiting = 0u32;
            for p in self.peers.borrow().iter() {
                let Some(tx) = &p.ctl else { continue };
                if tx
                    .try_send(Control::TableReplaced(Some(done_tx.clone())))
                    .is_ok()
                {
                    waiting = waiting.saturating_add(1);
                }
            }
            drop(done_tx);
            wait_n(&done_rx, waiting, STOP_TIMEOUT).await;
            // Exact, not the runtime's usual slack: the drain is the
            // operator's figure, from the withdrawals to the Cease.
            crate::rt::sleep_exact(drain).await;
        }
        let peers = std::mem::take(&mut *self.peers.borrow_mut());
        stop_peers(peers, Some(message.to_string())).await;
        // The final statuses stay visible in the summaries.
    }

    /// The start of a planned stop with `bgp.graceful_shutdown`: every
    /// originated route re-announced in place with the GRACEFUL_SHUTDOWN
    /// community (RFC 8326), so peers that honour it move the traffic away
    /// before [`SpeakerHandle::shutdown`] withdraws the routes. The
    /// sessions send it as soon as the owner waits (the drain), and a
    /// session that cannot write keeps its own bounds.
    pub fn announce_graceful_shutdown(&mut self) {
        self.owner
            .rib
            .borrow_mut()
            .add_community(super::types::GRACEFUL_SHUTDOWN);
        // Every route changed: the sessions plan from the whole table.
        self.send_all(|| Control::TableReplaced(None));
    }
}

fn apply_report(owner: &mut OwnerSide, r: SessionReport) {
    let Some(v) = owner.views.iter_mut().find(|v| v.id == r.id) else {
        return;
    };
    v.summary = r.summary;
}

/// What the peer has from us now: its session's Adj-RIB-Out. The peer
/// tasks borrow their core only between `.await`s, and the owner runs on
/// the same thread, so the borrow is free here; were it not, the peer
/// shows no routes rather than the daemon stopping.
fn advertised(
    session: &Weak<RefCell<SessionCore>>,
    after: Option<&Prefix>,
    max: usize,
    out: &mut Vec<(Prefix, PathAttrs)>,
) {
    let Some(core) = session.upgrade() else {
        return;
    };
    let Ok(core) = core.try_borrow() else {
        return;
    };
    use std::ops::Bound;
    let from = after.map_or(Bound::Unbounded, Bound::Excluded);
    out.extend(
        core.adj_rib_out()
            .advertised()
            .range((from, Bound::Unbounded))
            .take(max)
            .map(|(p, a)| (*p, (**a).clone())),
    );
}

/// Waits for `n` acknowledgements or `timeout`, whichever is first.
async fn wait_n(rx: &Rx<()>, n: u32, timeout: Duration) {
    let all = async {
        for _ in 0..n {
            if rx.recv().await.is_err() {
                break;
            }
        }
    };
    smol::future::or(all, async {
        crate::rt::sleep(timeout).await;
    })
    .await;
}

/// ManualStop with `message` to each peer; waits (bounded) for their
/// NOTIFICATIONs to be written, then drops the tasks.
async fn stop_peers(peers: Vec<PeerEntry>, message: Option<String>) {
    let (done_tx, done_rx) = chan::unbounded();
    let mut waiting = 0u32;
    for p in &peers {
        if let Some(tx) = &p.ctl {
            if tx
                .try_send(Control::Stop(message.clone(), done_tx.clone()))
                .is_ok()
            {
                waiting = waiting.saturating_add(1);
            }
        }
    }
    drop(done_tx);
    wait_n(&done_rx, waiting, STOP_TIMEOUT).await;
    for mut p in peers {
        if let Some(t) = p.task.take() {
            // Finished tasks return at once; a stuck one is cancelled.
            let _ = smol::future::or(t, async {
                crate::rt::sleep(Duration::from_millis(200)).await;
            })
            .await;
        }
    }
}

#[cfg(test)]
mod tests;
