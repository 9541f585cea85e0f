//! One peer's task: the driver of one session. It owns the connection(s)
//! and the timers and feeds two pure cores: the [`PeerFsm`] (the RFC 4271
//! FSM of the session and of a colliding second connection, and which of
//! them stays, RFC 4271 §6.8) and the [`SessionCore`] (route batches →
//! UPDATE passes, the Adj-RIB-Out, status, retry jitter). It only moves
//! bytes and time: what to send, which socket to keep and what to report
//! comes from the cores; after each wake-up the core's status reports go to
//! the owner.
//!
//! The task waits for the first of: a control request, bytes on the
//! connection (and on a collision candidate's), the outbound connect, or the
//! earliest timer deadline. Every FSM event goes through [`PeerTask::feed`],
//! which carries out the steps in order; failures found while doing so
//! (a write that fails, a connect that cannot start) are queued as further
//! events rather than handled recursively.
//!
//! This file is the task and its wait loop, the owner's requests and the
//! route passes; feeding the FSMs and carrying out their steps is
//! `peer/actions.rs`, the connections' reads, writes, the inbound
//! connection's placing and the close `peer/connection.rs`.

use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::TcpStream;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::chan::{Rx, Tx};
use smol::io::AsyncReadExt;
use smol::Async;

use super::codec::{self, Kind};
use super::{Control, PeerEvent, PeerSettings, SessionReport};
use crate::bgp::fsm::{DownReason, Event, Timer};
use crate::bgp::rib_out::RibOut;
use crate::bgp::session::{Conn as Which, PeerFsm, SessionCore};
use crate::bgp::types::Afi;

mod actions;
mod connection;

/// Reads per wake-up; a message is at most 4096 octets (RFC 4271 §4.1).
const READ_CHUNK: usize = 4096;
/// How long a closed connection may linger to let a NOTIFICATION drain.
const CLOSE_LINGER: Duration = Duration::from_secs(1);

struct Conn {
    stream: Async<TcpStream>,
    rbuf: Vec<u8>,
    /// What the messages of one read made us send, written together once
    /// they are handled (see [`PeerTask::input`]), and the counts of it.
    wbuf: Vec<u8>,
    wcount: Vec<(Kind, u32)>,
    /// Bytes the socket did not take yet, from `out_at` on, and the
    /// messages they complete (counted once written). At most one route
    /// pass and a few small messages: the next pass waits for this one
    /// (`SessionCore::write_done`).
    out: Vec<u8>,
    out_at: usize,
    out_count: Vec<(Kind, u32)>,
    /// The SendHoldTimer ended this connection: reset it, do not linger.
    abort: bool,
}

impl Conn {
    fn new(stream: Async<TcpStream>) -> Conn {
        Conn {
            stream,
            rbuf: Vec::new(),
            wbuf: Vec::new(),
            wcount: Vec::new(),
            out: Vec::new(),
            out_at: 0,
            out_count: Vec::new(),
            abort: false,
        }
    }

    /// Whether bytes wait to be written.
    fn waiting(&self) -> bool {
        self.out_at < self.out.len()
    }
}

/// What one of the peer's connections has beyond its FSM (which is in
/// the [`PeerFsm`]): the socket, the timers' deadlines, the codec context.
#[derive(Default)]
struct Session {
    conn: Option<Conn>,
    /// Per timer: (earliest, latest) it may fire; the same instant but
    /// for the KeepaliveTimer (see `keepalive_window`).
    deadlines: [Option<(Instant, Instant)>; 5],
    ctx: codec::Ctx,
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<Async<TcpStream>>>>>;

enum Wake {
    /// A request; None: the handle is gone.
    Ctl(Option<Control>),
    Read(Which, io::Result<usize>),
    /// The connection's socket has room for the bytes that wait.
    Writable(Which),
    Connected(io::Result<Async<TcpStream>>),
    Timer,
}

pub(crate) struct PeerTask {
    s: PeerSettings,
    /// The peer's id in the speaker's table, on every report.
    id: u64,
    /// Everything beyond the FSM: routes, coalescing, status, jitter.
    /// Shared with the owner, which reads the Adj-RIB-Out for /metrics
    /// instead of keeping a copy of it (memory: a 10,000-route table per
    /// peer). Both run on the daemon's one thread; the task borrows it only
    /// within a statement, never across an `.await`.
    core: Rc<RefCell<SessionCore>>,
    events: Tx<PeerEvent>,
    reports: Tx<Box<SessionReport>>,
    ctl: Rx<Control>,
    /// Closed (its sender dropped) once the sessions this one replaces are
    /// closed; the task starts then.
    gate: Option<Rx<()>>,
    /// The session's FSM and a collision candidate's, and which of them
    /// stays: decided there, carried out here.
    fsm: PeerFsm,
    main: Session,
    cand: Option<Session>,
    connecting: Option<Connecting>,
    origin: Instant,
    queue: VecDeque<(Which, Event)>,
    /// While the messages of one read are handled: writes go to the
    /// connection's `wbuf` and leave in one write afterwards.
    batching: bool,
    /// The candidate just became the session (`Step::Promote`): the rest
    /// of its read is the session's.
    promoted: bool,
    /// The owner's acknowledgements of route batches whose UPDATEs still
    /// wait to be written: told once they are (or the connection is gone).
    acks: Vec<Tx<()>>,
}

/// Polls every future and returns the first value ready.
async fn first<T>(mut futs: Vec<Pin<Box<dyn Future<Output = T> + '_>>>) -> T {
    std::future::poll_fn(|cx| {
        for f in futs.iter_mut() {
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                return Poll::Ready(v);
            }
        }
        Poll::Pending
    })
    .await
}

pub(crate) fn describe_down(r: &DownReason) -> String {
    match r {
        DownReason::ManualStop => "administratively stopped".into(),
        DownReason::ConnectionFailed => "connection failed or closed".into(),
        DownReason::HoldTimerExpired => "hold timer expired".into(),
        // RFC 9687 §5: "an error message SHOULD be logged"; the error code's
        // name, as the RFC gives it (code 8).
        DownReason::SendHoldTimerExpired => {
            "send hold timer expired: the peer took none of our bytes".into()
        }
        DownReason::NotificationSent(n) => format!("sent NOTIFICATION {}", codec::describe(n)),
        DownReason::NotificationReceived(n) => {
            format!("received NOTIFICATION {}", codec::describe(n))
        }
        DownReason::CollisionDump => "connection collision".into(),
    }
}

impl PeerTask {
    /// `rib` is the owner's table of originated routes, which the session
    /// plans from.
    pub fn new(
        s: PeerSettings,
        id: u64,
        rib: Rc<RefCell<RibOut>>,
        events: Tx<PeerEvent>,
        reports: Tx<Box<SessionReport>>,
        ctl: Rx<Control>,
        gate: Option<Rx<()>>,
    ) -> PeerTask {
        let origin = Instant::now();
        // Jitter only needs to differ between peers and restarts.
        let mut seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        for b in s.name.bytes() {
            seed = seed.rotate_left(5) ^ u64::from(b);
        }
        PeerTask {
            fsm: PeerFsm::new(s.fsm.clone()),
            main: Session::default(),
            core: Rc::new(RefCell::new(SessionCore::with_shared_rib(
                s.shape.clone(),
                seed,
                rib,
            ))),
            s,
            id,
            events,
            reports,
            ctl,
            gate,
            cand: None,
            connecting: None,
            origin,
            queue: VecDeque::new(),
            batching: false,
            promoted: false,
            acks: Vec::new(),
        }
    }

    /// The session's core, for the owner's reads (see `core`).
    pub fn core_handle(&self) -> Weak<RefCell<SessionCore>> {
        Rc::downgrade(&self.core)
    }

    /// The core, borrowed for one statement (never across an `.await`).
    fn core(&self) -> RefMut<'_, SessionCore> {
        self.core.borrow_mut()
    }

    pub async fn run(mut self) {
        if let Some(gate) = self.gate.take() {
            // A reload's start: the sessions this one replaces close first
            // (their stop is bounded, then the gate's sender is dropped);
            // route batches queue meanwhile.
            let _ = gate.recv().await;
            log::info!(
                "bgp peer {}: (re)starting with the new configuration",
                self.s.name
            );
        }
        log::info!(
            "bgp peer {} ({}): starting, AS {}",
            self.s.name,
            self.s.address,
            self.s.fsm.peer_as
        );
        self.feed(Which::Main, Event::ManualStart).await;
        self.publish();
        let mut bufs = [vec![0u8; READ_CHUNK], vec![0u8; READ_CHUNK]];
        loop {
            let wake = self.wait(&mut bufs).await;
            let stop = self.on_wake(wake, &bufs).await;
            self.publish();
            if stop {
                return;
            }
        }
    }

    /// Waits for the first of: a request, bytes on a connection (read into
    /// `bufs`: the main one's, the candidate's), the outbound connect, the
    /// earliest timer.
    async fn wait(&mut self, bufs: &mut [Vec<u8>; 2]) -> Wake {
        let deadline = self.next_deadline();
        let mut futs: Vec<Pin<Box<dyn Future<Output = Wake> + '_>>> = Vec::new();
        let ctl = &self.ctl;
        futs.push(Box::pin(async move { Wake::Ctl(ctl.recv().await.ok()) }));
        let [buf_main, buf_cand] = bufs;
        if let Some(c) = &self.main.conn {
            let st = &c.stream;
            futs.push(Box::pin(async move {
                Wake::Read(Which::Main, (&*st).read(buf_main).await)
            }));
        }
        if let Some(c) = self.cand.as_ref().and_then(|c| c.conn.as_ref()) {
            let st = &c.stream;
            futs.push(Box::pin(async move {
                Wake::Read(Which::Candidate, (&*st).read(buf_cand).await)
            }));
        }
        for (which, s) in [
            (Which::Main, Some(&self.main)),
            (Which::Candidate, self.cand.as_ref()),
        ] {
            if let Some(c) = s.and_then(|s| s.conn.as_ref()).filter(|c| c.waiting()) {
                let st = &c.stream;
                futs.push(Box::pin(async move {
                    // An error shows in the write that follows.
                    let _ = st.writable().await;
                    Wake::Writable(which)
                }));
            }
        }
        if let Some(f) = self.connecting.as_mut() {
            futs.push(Box::pin(async move { Wake::Connected(f.await) }));
        }
        if let Some((earliest, latest)) = deadline {
            futs.push(Box::pin(async move {
                // The runtime's shared timer: no reactor timer set and
                // dropped per wake-up of this loop; a KEEPALIVE due within
                // its window leaves at the thread's first wake-up there.
                crate::rt::sleep_window(earliest, latest).await;
                Wake::Timer
            }));
        }
        first(futs).await
    }

    /// Handles one wake-up; true when the task ends (stopped, or its
    /// handle gone).
    async fn on_wake(&mut self, wake: Wake, bufs: &[Vec<u8>; 2]) -> bool {
        match wake {
            Wake::Ctl(None) => {
                // The handle is gone: stop like a shutdown without message.
                self.feed(
                    Which::Main,
                    Event::ManualStop {
                        shutdown_message: None,
                    },
                )
                .await;
                return true;
            }
            Wake::Ctl(Some(c)) => {
                if let Some((message, done)) = self.control(c).await {
                    self.feed(
                        Which::Main,
                        Event::ManualStop {
                            shutdown_message: message,
                        },
                    )
                    .await;
                    self.publish();
                    let _ = done.try_send(());
                    return true;
                }
            }
            Wake::Read(which, Ok(n)) if n > 0 => {
                let buf = match which {
                    Which::Main => &bufs[0],
                    Which::Candidate => &bufs[1],
                };
                if let Some(conn) = self.session(which).and_then(|s| s.conn.as_mut()) {
                    conn.rbuf.extend_from_slice(&buf[..n.min(buf.len())]);
                }
                self.input(which).await;
            }
            Wake::Read(which, r) => {
                if let Err(e) = r {
                    self.set_error(format!("read: {e}"));
                }
                if let Some(s) = self.session(which) {
                    s.conn = None;
                }
                self.feed(which, Event::TcpConnectionFails).await;
            }
            Wake::Connected(r) => {
                self.connecting = None;
                match r {
                    Ok(stream) => {
                        self.main.conn = Some(Conn::new(stream));
                        self.feed(Which::Main, Event::TcpCrAcked).await;
                    }
                    Err(e) => {
                        self.set_error(format!("connect: {e}"));
                        self.feed(Which::Main, Event::TcpConnectionFails).await;
                    }
                }
            }
            Wake::Writable(which) => {
                let drained = self.write_waiting(which);
                self.drain_queue().await;
                if drained && which == Which::Main {
                    // The pass (or whatever held it back) is out: the
                    // changes that came meanwhile go out together now.
                    if self.core().writing() {
                        self.core().write_done();
                    }
                    self.flush_routes().await;
                }
            }
            Wake::Timer => self.fire_timers().await,
        }
        // Writes report to the FSM through the queue.
        self.drain_queue().await;
        let waiting = self.main.conn.as_ref().is_some_and(Conn::waiting);
        if !waiting {
            for done in self.acks.drain(..) {
                let _ = done.try_send(());
            }
        }
        false
    }

    /// Hands what changed in the status and the Adj-RIB-Out to the owner.
    fn publish(&mut self) {
        if let Some(summary) = self.core().take_summary() {
            let _ = self.reports.try_send(Box::new(SessionReport {
                id: self.id,
                summary,
            }));
        }
    }

    fn session(&mut self, which: Which) -> Option<&mut Session> {
        match which {
            Which::Main => Some(&mut self.main),
            Which::Candidate => self.cand.as_mut(),
        }
    }

    /// The earliest time any timer may fire and the earliest time one must.
    fn next_deadline(&self) -> Option<(Instant, Instant)> {
        self.main
            .deadlines
            .iter()
            .chain(self.cand.iter().flat_map(|c| c.deadlines.iter()))
            .flatten()
            .fold(None, |acc, &(e, l)| match acc {
                None => Some((e, l)),
                Some((ae, al)) => Some((ae.min(e), al.min(l))),
            })
    }

    async fn fire_timers(&mut self) {
        for which in [Which::Main, Which::Candidate] {
            for t in Timer::ALL {
                let now = Instant::now();
                let due = self
                    .session(which)
                    .and_then(|s| s.deadlines[t.index()])
                    .is_some_and(|(earliest, _)| earliest <= now);
                if due {
                    if let Some(s) = self.session(which) {
                        s.deadlines[t.index()] = None;
                        if t == Timer::SendHold {
                            // Nothing of what waits can leave: the
                            // connection is reset when dropped.
                            if let Some(c) = s.conn.as_mut() {
                                c.abort = true;
                            }
                        }
                    }
                    if t == Timer::SendHold {
                        self.send_hold_expired(which);
                    }
                    self.feed(which, t.expiry()).await;
                }
            }
        }
    }

    /// RFC 9687 §5: "an error message SHOULD be logged into the local
    /// system", and "BGP speakers SHOULD provide this reason as part of
    /// their operational state": the log and the peer's last error say it.
    fn send_hold_expired(&mut self, which: Which) {
        let waiting = self
            .session(which)
            .and_then(|s| s.conn.as_ref())
            .map_or(0, |c| c.out.len().saturating_sub(c.out_at));
        let msg = format!(
            "send hold timer expired: {waiting} bytes could not be written for {}s; closing without NOTIFICATION",
            self.s.fsm.send_hold_time.as_secs()
        );
        log::warn!("bgp peer {}: {msg}", self.s.name);
        if which == Which::Main {
            self.core().on_error(msg);
        }
    }

    /// Handles `c` and every request queued behind it, then writes one
    /// pass for all the route batches among them (the core coalesces them:
    /// batches that arrived while the last pass was written wait in the
    /// channel and go out together now). Returns the stop request, if one
    /// came: it ends the task after the acknowledgements.
    async fn control(&mut self, c: Control) -> Option<(Option<String>, Tx<()>)> {
        let mut dones = Vec::new();
        let mut stop = None;
        let mut next = Some(c);
        // Bounded: the queue holds what the owner sent so far.
        let mut budget = 100_000u32;
        while let Some(c) = next.take() {
            match c {
                Control::Routes(batch, done) => {
                    self.core().on_routes(&batch);
                    dones.extend(done);
                }
                Control::TableReplaced(done) => {
                    self.core().on_table_replaced();
                    dones.extend(done);
                }
                Control::InitialDone => self.core().on_initial_done(),
                Control::BfdDown => self.feed(Which::Main, Event::BfdDown).await,
                Control::Inbound(stream) => self.inbound(stream).await,
                Control::Stop(message, done) => {
                    stop = Some((message, done));
                    break;
                }
            }
            budget = budget.saturating_sub(1);
            if budget == 0 {
                break;
            }
            next = self.ctl.try_recv().ok();
        }
        self.flush_routes().await;
        // Told once the UPDATEs are written (see `on_wake`).
        self.acks.extend(dones);
        stop
    }

    /// Writes what the core has to send (at most a few passes: a pass
    /// empties the core's changed set, and nothing arrives while writing).
    /// A pass the socket does not take at once holds the next one back
    /// until it is written (`Wake::Writable`): the changes that come
    /// meanwhile go out together then, and no more than one pass waits.
    async fn flush_routes(&mut self) {
        for _ in 0..4 {
            if self.main.conn.as_ref().is_some_and(Conn::waiting) {
                return;
            }
            let Some(pass) = self.core().next_pass() else {
                return;
            };
            for w in &pass.warnings {
                log::warn!("bgp peer {}: {}", self.s.name, describe_warning(w));
            }
            for s in &pass.skipped {
                log::warn!("bgp peer {}: {s}", self.s.name);
            }
            if !pass.bytes.is_empty() {
                self.write(Which::Main, &pass.bytes, Kind::Update, pass.updates);
            }
            if self.main.conn.as_ref().is_some_and(Conn::waiting) {
                return;
            }
            self.core().write_done();
        }
    }
}

fn describe_warning(w: &crate::bgp::rib_out::Warning) -> String {
    use crate::bgp::rib_out::Warning;
    match w {
        Warning::PrependIgnoredOnIbgp { prefix, prepend } => {
            format!("{prefix}: AS-path prepend {prepend} ignored on an iBGP session")
        }
        Warning::FamilyNotNegotiated { prefix } => {
            let fam = match prefix.afi() {
                Afi::Ipv4 => "IPv4",
                Afi::Ipv6 => "IPv6",
            };
            format!("{prefix}: not sent: the session did not negotiate {fam} unicast")
        }
        Warning::NoNextHop { prefix } => {
            format!("{prefix}: not sent: no local next hop of its family is configured")
        }
    }
}
