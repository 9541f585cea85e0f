//! One peer's task: the driver of one session. It owns the connection(s)
//! and the timers and feeds two pure cores: the RFC 4271 [`Fsm`] and the
//! [`SessionCore`] (route batches → UPDATE passes, the Adj-RIB-Out, status,
//! collision decisions, retry jitter). It only moves bytes and time: what
//! to send and what to report comes from the cores; after each wake-up the
//! core's status reports go to the owner.
//!
//! The task waits for the first of: a control request, bytes on the
//! connection (and on a collision candidate's), the outbound connect, or the
//! earliest timer deadline. Every FSM event goes through [`PeerTask::feed`],
//! which carries out the actions in order; failures found while doing so
//! (a write that fails, a connect that cannot start) are queued as further
//! events rather than handled recursively.

use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};

use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::Async;

use super::codec::{self, Kind};
use super::net::{self, SetupError};
use super::{Control, PeerEvent, PeerSettings, SessionReport, WRITE_TIMEOUT};
use crate::bgp::fsm::{Action, ConnectionOrigin, DownReason, Event, Fsm, State, Timer, Timestamp};
use crate::bgp::rib_out::RibOut;
use crate::bgp::session::{
    keepalive_window, on_candidate_open, on_inbound, Collision, Inbound, SessionCore,
};
use crate::bgp::types::Afi;
use crate::daemon::Msg;

/// Reads per wake-up; a message is at most 4096 octets (RFC 4271 §4.1).
const READ_CHUNK: usize = 4096;
/// How long a closed connection may linger to let a NOTIFICATION drain.
const CLOSE_LINGER: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Main,
    /// The RFC 4271 §6.8 collision candidate: a second, inbound connection.
    Cand,
}

struct Conn {
    stream: Async<TcpStream>,
    rbuf: Vec<u8>,
    origin: ConnectionOrigin,
    /// What the messages of one read made us send, written together once
    /// they are handled (see [`PeerTask::input`]), and the counts of it.
    wbuf: Vec<u8>,
    wcount: Vec<(Kind, u32)>,
}

impl Conn {
    fn new(stream: Async<TcpStream>, origin: ConnectionOrigin) -> Conn {
        Conn {
            stream,
            rbuf: Vec::new(),
            origin,
            wbuf: Vec::new(),
            wcount: Vec::new(),
        }
    }
}

struct Session {
    fsm: Fsm,
    conn: Option<Conn>,
    /// Per timer: (earliest, latest) it may fire; the same instant but
    /// for the KeepaliveTimer (see `keepalive_window`).
    deadlines: [Option<(Instant, Instant)>; 4],
    ctx: codec::Ctx,
}

impl Session {
    fn new(fsm: Fsm) -> Session {
        Session {
            fsm,
            conn: None,
            deadlines: [None; 4],
            ctx: codec::Ctx::default(),
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<Async<TcpStream>>> + Send>>;

enum Wake {
    /// A request (always a `Msg::Session`); None: the handle is gone.
    Ctl(Option<Msg>),
    Read(Which, io::Result<usize>),
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
    events: Sender<Msg>,
    reports: Sender<Msg>,
    ctl: Receiver<Msg>,
    /// Closed (its sender dropped) once the sessions this one replaces are
    /// closed; the task starts then.
    gate: Option<Receiver<Msg>>,
    main: Session,
    cand: Option<Session>,
    connecting: Option<Connecting>,
    origin: Instant,
    queue: VecDeque<(Which, Event)>,
    /// While the messages of one read are handled: writes go to the
    /// connection's `wbuf` and leave in one write afterwards.
    batching: bool,
}

/// Polls every future and returns the first value ready.
async fn first<T>(mut futs: Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>) -> T {
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
        events: Sender<Msg>,
        reports: Sender<Msg>,
        ctl: Receiver<Msg>,
        gate: Option<Receiver<Msg>>,
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
            main: Session::new(Fsm::new(s.fsm.clone())),
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
        let mut buf_main = vec![0u8; READ_CHUNK];
        let mut buf_cand = vec![0u8; READ_CHUNK];
        loop {
            let deadline = self.next_deadline();
            let wake = {
                let mut futs: Vec<Pin<Box<dyn Future<Output = Wake> + Send + '_>>> = Vec::new();
                let ctl = &self.ctl;
                futs.push(Box::pin(async move { Wake::Ctl(ctl.recv().await.ok()) }));
                if let Some(c) = &self.main.conn {
                    let st = &c.stream;
                    let b = &mut buf_main;
                    futs.push(Box::pin(async move {
                        Wake::Read(Which::Main, (&*st).read(b).await)
                    }));
                }
                if let Some(c) = self.cand.as_ref().and_then(|c| c.conn.as_ref()) {
                    let st = &c.stream;
                    let b = &mut buf_cand;
                    futs.push(Box::pin(async move {
                        Wake::Read(Which::Cand, (&*st).read(b).await)
                    }));
                }
                if let Some(f) = self.connecting.as_mut() {
                    futs.push(Box::pin(async move { Wake::Connected(f.await) }));
                }
                if let Some((earliest, latest)) = deadline {
                    futs.push(Box::pin(async move {
                        // The runtime's shared timer: no reactor timer set
                        // and dropped per wake-up of this loop; a KEEPALIVE
                        // due within its window leaves at the thread's
                        // first wake-up there.
                        crate::rt::sleep_window(earliest, latest).await;
                        Wake::Timer
                    }));
                }
                first(futs).await
            };
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
                    self.publish();
                    return;
                }
                Wake::Ctl(Some(c)) => {
                    if let Some((message, done)) = self.control(c).await {
                        self.cand = None;
                        self.feed(
                            Which::Main,
                            Event::ManualStop {
                                shutdown_message: message,
                            },
                        )
                        .await;
                        self.publish();
                        let _ = done.try_send(Msg::Wake);
                        return;
                    }
                }
                Wake::Read(which, Ok(n)) if n > 0 => {
                    let buf = match which {
                        Which::Main => &buf_main,
                        Which::Cand => &buf_cand,
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
                            self.main.conn = Some(Conn::new(stream, ConnectionOrigin::Local));
                            self.feed(Which::Main, Event::TcpCrAcked).await;
                        }
                        Err(e) => {
                            self.set_error(format!("connect: {e}"));
                            self.feed(Which::Main, Event::TcpConnectionFails).await;
                        }
                    }
                }
                Wake::Timer => self.fire_timers().await,
            }
            self.publish();
        }
    }

    /// Hands what changed in the status and the Adj-RIB-Out to the owner.
    fn publish(&mut self) {
        let updates = self.core().take_updates();
        for update in updates {
            let _ = self.reports.try_send(Msg::Report(Box::new(SessionReport {
                id: self.id,
                update,
            })));
        }
    }

    fn session(&mut self, which: Which) -> Option<&mut Session> {
        match which {
            Which::Main => Some(&mut self.main),
            Which::Cand => self.cand.as_mut(),
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
        for which in [Which::Main, Which::Cand] {
            for t in Timer::ALL {
                let now = Instant::now();
                let due = self
                    .session(which)
                    .and_then(|s| s.deadlines[t.index()])
                    .is_some_and(|(earliest, _)| earliest <= now);
                if due {
                    if let Some(s) = self.session(which) {
                        s.deadlines[t.index()] = None;
                    }
                    self.feed(which, t.expiry()).await;
                }
            }
        }
    }

    /// Handles `c` and every request queued behind it, then writes one
    /// pass for all the route batches among them (the core coalesces them:
    /// batches that arrived while the last pass was written wait in the
    /// channel and go out together now). Returns the stop request, if one
    /// came: it ends the task after the acknowledgements.
    async fn control(&mut self, c: Msg) -> Option<(Option<String>, Sender<Msg>)> {
        let mut dones = Vec::new();
        let mut stop = None;
        let mut next = Some(c);
        // Bounded: the queue holds what the owner sent so far.
        let mut budget = 100_000u32;
        while let Some(c) = next.take() {
            // The session's channel carries only `Msg::Session`.
            match c {
                Msg::Session(Control::Routes(batch, done)) => {
                    self.core().on_routes(&batch);
                    dones.extend(done);
                }
                Msg::Session(Control::TableReplaced(done)) => {
                    self.core().on_table_replaced();
                    dones.extend(done);
                }
                Msg::Session(Control::InitialDone) => self.core().on_initial_done(),
                Msg::Session(Control::Inbound(stream)) => self.inbound(stream).await,
                Msg::Session(Control::Stop(message, done)) => {
                    stop = Some((message, done));
                    break;
                }
                _ => {}
            }
            budget = budget.saturating_sub(1);
            if budget == 0 {
                break;
            }
            next = self.ctl.try_recv().ok();
        }
        self.flush_routes().await;
        for done in dones {
            let _ = done.try_send(Msg::Wake);
        }
        stop
    }

    /// Writes what the core has to send (at most a few passes: a pass
    /// empties the core's changed set, and nothing arrives while writing).
    async fn flush_routes(&mut self) {
        for _ in 0..4 {
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
                self.write(Which::Main, &pass.bytes, Kind::Update, pass.updates)
                    .await;
            }
            self.core().write_done();
        }
    }

    async fn inbound(&mut self, stream: Async<TcpStream>) {
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
    async fn input(&mut self, which: Which) {
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
    async fn flush_out(&mut self, which: Which) {
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

    async fn input_messages(&mut self, mut which: Which) {
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
    async fn collide(&mut self, open: crate::bgp::fsm::OpenInfo) -> Which {
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

    fn now(&self) -> Timestamp {
        Timestamp::since(self.origin, Instant::now())
    }

    /// Feeds one event, carries out its actions, then any events those
    /// produced.
    async fn feed(&mut self, which: Which, event: Event) {
        self.queue.push_back((which, event));
        self.drain_queue().await;
    }

    async fn drain_queue(&mut self) {
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
            let Some(sess) = self.session(which) else {
                continue;
            };
            let before = sess.fsm.state();
            let actions = sess.fsm.handle(event, now);
            self.execute(which, actions).await;
            match which {
                Which::Main => self.transition(before),
                Which::Cand => {
                    if self
                        .cand
                        .as_ref()
                        .is_some_and(|c| c.fsm.state() == State::Idle)
                    {
                        self.cand = None;
                    }
                }
            }
        }
    }

    fn transition(&mut self, before: State) {
        let after = self.main.fsm.state();
        if before == after {
            return;
        }
        let reason = if after == State::Idle {
            self.main.fsm.last_down_reason().map(describe_down)
        } else {
            None
        };
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
        let _ = self.events.try_send(Msg::Peer(PeerEvent {
            peer: self.s.name.clone(),
            address: self.s.address,
            from: before,
            to: after,
            reason,
        }));
    }

    fn set_error(&mut self, e: String) {
        log::debug!("bgp peer {}: {e}", self.s.name);
        self.core().on_error(e);
    }

    async fn execute(&mut self, which: Which, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Connect => self.connect(),
                Action::DropConnection => {
                    // A NOTIFICATION written in this batch goes out first.
                    self.flush_out(which).await;
                    if which == Which::Main {
                        self.connecting = None;
                    }
                    if let Some(conn) = self.session(which).and_then(|s| s.conn.take()) {
                        close(conn.stream);
                    }
                }
                Action::SendOpen(info) => {
                    let bytes = codec::encode_open(&info);
                    self.write(which, &bytes, Kind::Open, 1).await;
                }
                Action::SendKeepalive => {
                    self.write(which, &codec::encode_keepalive(), Kind::Keepalive, 1)
                        .await;
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
                    )
                    .await;
                }
                Action::StartTimer(t, d) => {
                    let (earliest, latest) = match t {
                        Timer::ConnectRetry | Timer::IdleHold => {
                            let d = self.core().jitter(d);
                            (d, d)
                        }
                        Timer::Hold => (d, d),
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
                    let shape = self.session_shape();
                    self.core()
                        .on_established(&n.families, n.four_octet_as, shape, Instant::now());
                    self.flush_routes().await;
                }
                Action::SessionDown(_) => self.core().on_session_down(),
                Action::ResendRoutes(afi) => {
                    let pass = self.core().on_route_refresh(afi);
                    if !pass.bytes.is_empty() {
                        self.write(Which::Main, &pass.bytes, Kind::Update, pass.updates)
                            .await;
                    }
                }
            }
        }
    }

    /// `local_address: 0.0.0.0` / `::`: the next hop is this session's own
    /// source address.
    fn session_shape(&self) -> crate::bgp::rib_out::PeerShape {
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

    fn connect(&mut self) {
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

    /// Writes `bytes` (`n` messages of `kind`) in one go, or, while a
    /// read's messages are handled, adds them to that batch.
    async fn write(&mut self, which: Which, bytes: &[u8], kind: Kind, n: u32) {
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
    async fn send(&mut self, which: Which, bytes: &[u8], counts: &[(Kind, u32)]) {
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

/// Closes a connection gracefully: our side is shut down for writing (so a
/// NOTIFICATION just written is followed by FIN rather than lost to a
/// reset), and whatever the peer still sends is read and dropped for a
/// bounded time.
fn close(stream: Async<TcpStream>) {
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
            smol::Timer::after(CLOSE_LINGER).await;
        })
        .await;
    })
    .detach();
}
