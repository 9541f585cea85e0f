//! One peer's task: the FSM, its connection(s), timers and Adj-RIB-Out.
//!
//! The task waits for the first of: a control request, bytes on the
//! connection (and on a collision candidate's), the outbound connect, or the
//! earliest timer deadline. Every FSM event goes through [`PeerTask::feed`],
//! which carries out the actions in order; failures found while doing so
//! (a write that fails, a connect that cannot start) are queued as further
//! events rather than handled recursively.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use smol::channel::{Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::Async;

use super::codec::{self, Kind};
use super::net::{self, SetupError};
use super::{lock, Control, PeerEvent, PeerSettings, SharedStatus, WRITE_TIMEOUT};
use crate::bgp::fsm::{
    resolve_collision, Action, ConnectionOrigin, DownReason, Event, Fsm, State, Timer, Timestamp,
};
use crate::bgp::rib_out::{AdjRibOut, Changes, RibOut};
use crate::bgp::types::Afi;

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
}

struct Session {
    fsm: Fsm,
    conn: Option<Conn>,
    deadlines: [Option<Instant>; 4],
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
    Ctl(Option<Control>),
    Read(Which, io::Result<usize>),
    Connected(io::Result<Async<TcpStream>>),
    Timer,
}

pub(crate) struct PeerTask {
    /// The last down reason logged at info, so retries that fail the same
    /// way are logged at debug.
    logged_reason: Option<String>,
    s: PeerSettings,
    rib: Arc<Mutex<RibOut>>,
    status: SharedStatus,
    events: Sender<PeerEvent>,
    ctl: Receiver<Control>,
    main: Session,
    cand: Option<Session>,
    connecting: Option<Connecting>,
    adj: AdjRibOut,
    origin: Instant,
    rng: u64,
    queue: VecDeque<(Which, Event)>,
}

fn timer_index(t: Timer) -> usize {
    match t {
        Timer::ConnectRetry => 0,
        Timer::Hold => 1,
        Timer::Keepalive => 2,
        Timer::IdleHold => 3,
    }
}

fn timer_event(t: Timer) -> Event {
    match t {
        Timer::ConnectRetry => Event::ConnectRetryTimerExpires,
        Timer::Hold => Event::HoldTimerExpires,
        Timer::Keepalive => Event::KeepaliveTimerExpires,
        Timer::IdleHold => Event::IdleHoldTimerExpires,
    }
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
    pub fn new(
        s: PeerSettings,
        rib: Arc<Mutex<RibOut>>,
        status: SharedStatus,
        events: Sender<PeerEvent>,
        ctl: Receiver<Control>,
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
            logged_reason: None,
            main: Session::new(Fsm::new(s.fsm.clone())),
            adj: AdjRibOut::new(s.shape.clone()),
            s,
            rib,
            status,
            events,
            ctl,
            cand: None,
            connecting: None,
            origin,
            rng: seed | 1,
            queue: VecDeque::new(),
        }
    }

    pub async fn run(mut self) {
        log::info!(
            "bgp peer {} ({}): starting, AS {}",
            self.s.name,
            self.s.address,
            self.s.fsm.peer_as
        );
        self.feed(Which::Main, Event::ManualStart).await;
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
                if let Some(d) = deadline {
                    futs.push(Box::pin(async move {
                        // The runtime's shared timer: no reactor timer set
                        // and dropped per wake-up of this loop.
                        crate::rt::sleep_until(d).await;
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
                    return;
                }
                Wake::Ctl(Some(Control::Stop(message, done))) => {
                    self.cand = None;
                    self.feed(
                        Which::Main,
                        Event::ManualStop {
                            shutdown_message: message,
                        },
                    )
                    .await;
                    let _ = done.try_send(());
                    return;
                }
                Wake::Ctl(Some(c)) => self.control(c).await,
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
                            self.main.conn = Some(Conn {
                                stream,
                                rbuf: Vec::new(),
                                origin: ConnectionOrigin::Local,
                            });
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
        }
    }

    fn session(&mut self, which: Which) -> Option<&mut Session> {
        match which {
            Which::Main => Some(&mut self.main),
            Which::Cand => self.cand.as_mut(),
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.main
            .deadlines
            .iter()
            .chain(self.cand.iter().flat_map(|c| c.deadlines.iter()))
            .flatten()
            .min()
            .copied()
    }

    async fn fire_timers(&mut self) {
        for which in [Which::Main, Which::Cand] {
            for t in Timer::ALL {
                let now = Instant::now();
                let due = self
                    .session(which)
                    .and_then(|s| s.deadlines[timer_index(t)])
                    .is_some_and(|d| d <= now);
                if due {
                    if let Some(s) = self.session(which) {
                        s.deadlines[timer_index(t)] = None;
                    }
                    self.feed(which, timer_event(t)).await;
                }
            }
        }
    }

    async fn control(&mut self, c: Control) {
        match c {
            Control::Sync(done) => {
                // Route changes queued behind this one are in the RIB
                // already, so one pass serves them all. Without this, N
                // changes queued while a session comes up cost N passes over
                // the whole table (O(N²), minutes of CPU at 10,000 VIPs). A
                // different request stops the draining and runs after the
                // pass, keeping the order.
                let mut dones: Vec<_> = done.into_iter().collect();
                let mut next = None;
                while let Ok(c) = self.ctl.try_recv() {
                    match c {
                        Control::Sync(d) => dones.extend(d),
                        other => {
                            next = Some(other);
                            break;
                        }
                    }
                }
                if self.main.fsm.state() == State::Established {
                    let changes = {
                        let rib = lock(&self.rib);
                        self.adj.sync(&rib)
                    };
                    self.send_changes(changes).await;
                }
                for done in dones {
                    let _ = done.try_send(());
                }
                if let Some(c) = next {
                    Box::pin(self.control(c)).await;
                }
            }
            Control::Inbound(stream) => self.inbound(stream).await,
            // Handled in run().
            Control::Stop(..) => {}
        }
    }

    async fn inbound(&mut self, stream: Async<TcpStream>) {
        let name = &self.s.name;
        if let Err(e) = net::accepted(&stream, &self.s) {
            log::warn!("bgp peer {name}: inbound connection closed: socket options: {e}");
            return;
        }
        let conn = Conn {
            stream,
            rbuf: Vec::new(),
            origin: ConnectionOrigin::Remote,
        };
        if self.main.fsm.accepts_connection() {
            // Connect/Active: the peer's connection replaces our attempt.
            self.connecting = None;
            self.main.conn = Some(conn);
            self.feed(Which::Main, Event::TcpConnectionConfirmed).await;
        } else if self.main.fsm.state() == State::Idle {
            // RFC 4271 §8.2.2 Idle: "refuses all incoming BGP connections".
            log::debug!("bgp peer {name}: inbound connection refused in Idle");
        } else if self.cand.is_some() {
            log::debug!("bgp peer {name}: inbound connection closed: collision already tracked");
        } else {
            // RFC 4271 §6.8: track the new connection until its OPEN arrives.
            let (fsm, actions) =
                Fsm::collision_candidate(self.main.fsm.config().clone(), self.now());
            let mut cand = Session::new(fsm);
            cand.conn = Some(conn);
            self.cand = Some(cand);
            self.execute(Which::Cand, actions).await;
            if self.main.fsm.state() == State::Established {
                // "a connection collision with an existing BGP connection
                // that is in the Established state causes closing of the
                // newly created connection."
                self.feed(Which::Cand, Event::OpenCollisionDump).await;
            }
            self.drain_queue().await;
        }
    }

    /// Frames and handles every complete message buffered on `which`.
    async fn input(&mut self, mut which: Which) {
        loop {
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
            if let Some(kind) = Kind::of(&msg) {
                lock(&self.status).status.messages_in.count(kind);
            }
            let Some(event) = codec::decode(&msg, &ctx, &self.s.name) else {
                continue;
            };
            if let Event::NotifMsg(n) = &event {
                let text = codec::describe(n);
                log::warn!("bgp peer {}: received NOTIFICATION {text}", self.s.name);
                lock(&self.status).status.last_notification_received = Some(text);
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
        let keep_existing = existing.is_some_and(|origin| {
            resolve_collision(
                origin,
                self.main.fsm.state() == State::Established,
                cfg.router_id,
                cfg.local_as,
                open.bgp_id,
                open.asn,
            ) == origin
        });
        if keep_existing {
            log::info!(
                "bgp peer {}: connection collision: keeping the existing connection",
                self.s.name
            );
            self.feed(Which::Cand, Event::OpenCollisionDump).await;
            self.cand = None;
            return Which::Cand;
        }
        log::info!(
            "bgp peer {}: connection collision: keeping the peer's connection",
            self.s.name
        );
        if existing.is_some() {
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
        // logd keeps 16 KiB: a peer that stays down must not fill it. Session
        // up/down and a new failure reason are info; the retry churn that
        // repeats the last reason is debug.
        let session = before == State::Established || after == State::Established;
        let new_reason = reason.is_some() && reason != self.logged_reason;
        let level = if session || new_reason {
            log::Level::Info
        } else {
            log::Level::Debug
        };
        if after == State::Established {
            self.logged_reason = None;
        } else if reason.is_some() {
            self.logged_reason = reason.clone();
        }
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
        {
            let mut cell = lock(&self.status);
            cell.status.state = after.as_str();
            if let Some(r) = &reason {
                cell.status.last_error = Some(r.clone());
            }
        }
        let _ = self.events.try_send(PeerEvent {
            peer: self.s.name.clone(),
            address: self.s.address,
            from: before,
            to: after,
            reason,
        });
    }

    fn set_error(&self, e: String) {
        log::debug!("bgp peer {}: {e}", self.s.name);
        lock(&self.status).status.last_error = Some(e);
    }

    fn jitter(&mut self, d: Duration) -> Duration {
        // RFC 4271 §10: "the base value ... is multiplied by a random factor
        // which is uniformly distributed in the range from 0.75 to 1.0".
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let permille = 750 + u32::try_from(self.rng % 251).unwrap_or(0);
        d.saturating_mul(permille) / 1000
    }

    async fn execute(&mut self, which: Which, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Connect => self.connect(),
                Action::DropConnection => {
                    if which == Which::Main {
                        self.connecting = None;
                    }
                    if let Some(conn) = self.session(which).and_then(|s| s.conn.take()) {
                        close(conn.stream);
                    }
                }
                Action::SendOpen(info) => {
                    let bytes = codec::encode_open(&info);
                    self.write(which, &bytes, Kind::Open).await;
                }
                Action::SendKeepalive => {
                    self.write(which, &codec::encode_keepalive(), Kind::Keepalive)
                        .await;
                }
                Action::SendNotification(n) => {
                    let text = codec::describe(&n);
                    if which == Which::Main {
                        log::warn!("bgp peer {}: sending NOTIFICATION {text}", self.s.name);
                        lock(&self.status).status.last_notification_sent = Some(text);
                    }
                    self.write(which, &codec::encode_notification(&n), Kind::Notification)
                        .await;
                }
                Action::StartTimer(t, d) => {
                    let d = match t {
                        Timer::ConnectRetry | Timer::IdleHold => self.jitter(d),
                        Timer::Hold | Timer::Keepalive => d,
                    };
                    let at = Instant::now().checked_add(d);
                    if let Some(s) = self.session(which) {
                        s.deadlines[timer_index(t)] = at;
                    }
                }
                Action::StopTimer(t) => {
                    if let Some(s) = self.session(which) {
                        s.deadlines[timer_index(t)] = None;
                    }
                }
                Action::SessionEstablished(n) => {
                    self.main.ctx = codec::ctx(n.four_octet_as, n.ebgp);
                    self.apply_session_next_hops();
                    log::info!(
                        "bgp peer {}: established: hold {}s, keepalive {}s, families {:?}, peer id {}",
                        self.s.name,
                        n.hold_time,
                        n.keepalive,
                        n.families,
                        n.peer_id
                    );
                    {
                        let mut cell = lock(&self.status);
                        cell.established_at = Some(Instant::now());
                        cell.status.established_count =
                            cell.status.established_count.wrapping_add(1);
                        cell.status.last_error = None;
                    }
                    let changes = {
                        let rib = lock(&self.rib);
                        self.adj.on_established(&n.families, &rib)
                    };
                    self.send_changes(changes).await;
                }
                Action::SessionDown(_) => {
                    self.adj.on_session_down();
                    let mut cell = lock(&self.status);
                    cell.established_at = None;
                    cell.status.advertised = 0;
                    cell.status.routes.clear();
                    cell.status.flaps = cell.status.flaps.wrapping_add(1);
                }
                Action::ResendRoutes(afi) => {
                    let changes = self.adj.route_refresh(afi);
                    self.send_changes(changes).await;
                }
            }
        }
    }

    /// `local_address: 0.0.0.0` / `::`: the next hop is this session's own
    /// source address.
    fn apply_session_next_hops(&mut self) {
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
        self.adj.set_shape(shape);
    }

    fn connect(&mut self) {
        let peer = SocketAddr::new(self.s.address, self.s.port);
        match net::active_socket(&self.s) {
            Ok(sock) => self.connecting = Some(Box::pin(net::connect(sock, peer))),
            Err(SetupError::Md5(e)) => {
                // Never a silent unauthenticated session: this peer stops.
                let msg = format!("cannot set the TCP MD5 key: {e}; peer stopped");
                log::error!("bgp peer {}: {msg}", self.s.name);
                {
                    let mut cell = lock(&self.status);
                    cell.status.last_error = Some(msg);
                    cell.status.running = false;
                }
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

    async fn write(&mut self, which: Which, bytes: &[u8], kind: Kind) {
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
                    lock(&self.status).status.messages_out.count(kind);
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

    async fn send_changes(&mut self, changes: Changes) {
        for w in &changes.warnings {
            log::warn!("bgp peer {}: {}", self.s.name, describe_warning(w));
        }
        if !changes.is_empty() {
            let four = self.main.fsm.negotiated().is_some_and(|n| n.four_octet_as);
            let updates = codec::encode_changes(&changes, four);
            for s in &updates.skipped {
                log::warn!("bgp peer {}: {s}", self.s.name);
            }
            for m in updates.messages {
                self.write(Which::Main, &m, Kind::Update).await;
            }
        }
        let n = u32::try_from(self.adj.advertised().len()).unwrap_or(u32::MAX);
        let routes: Vec<_> = self
            .adj
            .advertised()
            .iter()
            .map(|(p, a)| (*p, a.clone()))
            .collect();
        let mut cell = lock(&self.status);
        cell.status.advertised = n;
        cell.status.routes = routes;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_three_quarters_and_one() {
        let (tx, _rx) = smol::channel::unbounded();
        let (_ctl_tx, ctl_rx) = smol::channel::unbounded();
        let cfg = crate::config::Config {
            router: crate::config::Router {
                asn: 65001,
                router_id: Some("192.0.2.1".parse().unwrap()),
                ..Default::default()
            },
            ..Default::default()
        };
        let n = crate::config::Neighbor {
            name: "n".into(),
            address: Some("192.0.2.2".parse().unwrap()),
            peer_asn: 65000,
            ..Default::default()
        };
        let s = PeerSettings::from_config(&cfg, &n).unwrap();
        let status = Arc::new(Mutex::new(super::super::StatusCell {
            status: super::super::PeerStatus {
                name: "n".into(),
                address: s.address,
                asn: 65000,
                state: "idle",
                running: true,
                uptime: None,
                established_count: 0,
                flaps: 0,
                required: true,
                last_error: None,
                last_notification_sent: None,
                last_notification_received: None,
                messages_in: Default::default(),
                messages_out: Default::default(),
                advertised: 0,
                routes: Vec::new(),
            },
            established_at: None,
        }));
        let mut t = PeerTask::new(s, Arc::default(), status, tx, ctl_rx);
        let base = Duration::from_secs(30);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            let d = t.jitter(base);
            assert!(d >= base * 3 / 4 && d <= base, "{d:?}");
            seen.insert(d.as_millis() / 1000);
        }
        // Spread over the whole range, not one value.
        assert!(seen.len() >= 7, "{seen:?}");
    }
}
