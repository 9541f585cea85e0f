//! The BGP speaker on smol: one task per peer owns that peer's sockets, its
//! [`Fsm`](super::fsm::Fsm) and its [`AdjRibOut`](super::rib_out::AdjRibOut);
//! a listener task hands inbound connections to the matching peer.
//!
//! * **Desired routes** live in one [`RibOut`] shared by all peers.
//!   [`SpeakerHandle::set_route`] / [`SpeakerHandle::set_routes`] change it and
//!   wake every peer, which sends the minimal UPDATE set for the difference.
//! * **Active connects** bind the configured local address and carry the
//!   TCP MD5 key and TTL options before the SYN. **Passive**: one listener on
//!   `bgp.listen_address:listen_port` (none when the port is -1); a
//!   connection from an address that is no configured neighbor is closed and
//!   logged. Every MD5 key is set on the listener before the first accept;
//!   when a key cannot be set, that peer does not run at all.
//! * **Timers** of the FSM become deadlines; ConnectRetryTimer and
//!   IdleHoldTimer get RFC 4271 §10 jitter.
//! * **Graceful stop** ([`SpeakerHandle::shutdown`]): withdraw every route,
//!   wait the drain time, then NOTIFICATION Cease / Administrative Shutdown
//!   with the message, then close.
//! * Every network wait is bounded: writes by [`WRITE_TIMEOUT`], connects by
//!   the ConnectRetryTimer, silent peers by the HoldTimer.

mod codec;
mod log_limit;
mod net;
mod peer;

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver, Sender};
use smol::{Async, Task};

use super::fsm::State;
use super::rib_out::RibOut;
use super::types::{PathAttrs, Prefix, RouteIntent};
use crate::config::schema::{Config, Neighbor};

pub use super::settings::{listen_addr, PeerSettings};

/// Longest time one write to a peer may take before the connection is
/// considered failed.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound of [`SpeakerHandle::shutdown`]'s waits for peers (besides the drain).
const STOP_TIMEOUT: Duration = Duration::from_secs(3);
/// Connections from addresses that are no configured neighbor: this many are
/// logged one by one, then one summary line per [`NON_NEIGHBOR_LOG_INTERVAL`]
/// while they go on (anyone who reaches the port can make them; logd keeps
/// only 16 KiB).
pub const NON_NEIGHBOR_LOG_BURST: u32 = 5;
pub(crate) const NON_NEIGHBOR_LOG_INTERVAL: Duration = Duration::from_secs(60);

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
    fn count(&mut self, kind: codec::Kind) {
        // Counters wrap like Prometheus counters reset: u32 only (no 64-bit
        // atomics on 32-bit MIPS) and never an overflow panic.
        let c = match kind {
            codec::Kind::Open => &mut self.open,
            codec::Kind::Update => &mut self.update,
            codec::Kind::Notification => &mut self.notification,
            codec::Kind::Keepalive => &mut self.keepalive,
            codec::Kind::RouteRefresh => &mut self.route_refresh,
        };
        *c = c.wrapping_add(1);
    }

    pub fn total(&self) -> u32 {
        self.open
            .wrapping_add(self.update)
            .wrapping_add(self.notification)
            .wrapping_add(self.keepalive)
            .wrapping_add(self.route_refresh)
    }
}

/// One peer as shown in /status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    pub name: String,
    pub address: IpAddr,
    pub asn: u32,
    /// RFC 4271 state, lower case (GoBGP's spelling).
    pub state: &'static str,
    /// False when the peer could not be started (e.g. its TCP MD5 key could
    /// not be set); `last_error` says why.
    pub running: bool,
    /// Time since the session reached Established.
    pub uptime: Option<Duration>,
    /// How often the session reached Established.
    pub established_count: u32,
    /// How often the session left Established.
    pub flaps: u32,
    /// The neighbor's `required` (for /readyz).
    pub required: bool,
    pub last_error: Option<String>,
    pub last_notification_sent: Option<String>,
    pub last_notification_received: Option<String>,
    pub messages_in: MessageCounters,
    pub messages_out: MessageCounters,
    /// Prefixes the peer currently has from us.
    pub advertised: u32,
    /// What the peer has from us (Adj-RIB-Out), for /metrics' route state.
    pub routes: Vec<(Prefix, PathAttrs)>,
}

/// What a peer task writes and the handle reads.
#[derive(Debug, Clone)]
struct StatusCell {
    status: PeerStatus,
    established_at: Option<Instant>,
}

type SharedStatus = Arc<Mutex<StatusCell>>;

/// Locks ignoring poisoning: a panicked peer task must not take the status
/// or the RIB of every other peer with it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Requests from the handle (and the listener) to one peer task.
enum Control {
    /// The desired table changed; `done` is told once the UPDATEs are written.
    Sync(Option<Sender<()>>),
    /// A connection from the peer's address, accepted by the listener.
    Inbound(Async<std::net::TcpStream>),
    /// ManualStop with the Shutdown Communication, then end the task.
    Stop(Option<String>, Sender<()>),
}

struct PeerEntry {
    name: String,
    address: IpAddr,
    /// What the peer runs with (None: the config was unusable).
    settings: Option<PeerSettings>,
    status: SharedStatus,
    /// None when the peer does not run.
    ctl: Option<Sender<Control>>,
    task: Option<Task<()>>,
}

struct Shared {
    rib: Arc<Mutex<RibOut>>,
    peers: Mutex<Vec<PeerEntry>>,
    listener: Option<Arc<Async<TcpListener>>>,
    listener_task: Mutex<Option<Task<()>>>,
    events: Sender<PeerEvent>,
}

/// Builds the speaker.
pub struct Speaker;

/// The daemon's handle on the running speaker. Cheap to clone.
#[derive(Clone)]
pub struct SpeakerHandle {
    shared: Arc<Shared>,
}

impl Speaker {
    /// Opens the listener (unless `bgp.listen_port` is -1), sets every
    /// neighbor's TCP MD5 key on it and starts one task per neighbor.
    /// Fails only when the listener cannot be opened; a neighbor whose MD5
    /// key cannot be set is reported in its status and does not run.
    pub fn start(cfg: &Config, events: Sender<PeerEvent>) -> io::Result<SpeakerHandle> {
        let listener = match listen_addr(cfg) {
            Some(addr) => {
                let l = net::listen(addr)
                    .map_err(|e| io::Error::new(e.kind(), format!("bgp listen on {addr}: {e}")))?;
                log::info!("bgp: listening on {addr}");
                Some(Arc::new(l))
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            rib: Arc::new(Mutex::new(RibOut::new())),
            peers: Mutex::new(Vec::new()),
            listener: listener.clone(),
            listener_task: Mutex::new(None),
            events,
        });
        let handle = SpeakerHandle { shared };
        for n in &cfg.bgp.neighbors {
            handle.start_peer(cfg, n);
        }
        if let Some(l) = listener {
            let weak = Arc::downgrade(&handle.shared);
            *lock(&handle.shared.listener_task) = Some(smol::spawn(accept_loop(l, weak)));
        }
        Ok(handle)
    }
}

impl SpeakerHandle {
    fn start_peer(&self, cfg: &Config, n: &Neighbor) {
        let address = n.address.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        let mut status = PeerStatus {
            name: n.name.clone(),
            address,
            asn: n.peer_asn,
            state: State::Idle.as_str(),
            running: false,
            uptime: None,
            established_count: 0,
            flaps: 0,
            required: n.required,
            last_error: None,
            last_notification_sent: None,
            last_notification_received: None,
            messages_in: MessageCounters::default(),
            messages_out: MessageCounters::default(),
            advertised: 0,
            routes: Vec::new(),
        };
        let settings = PeerSettings::from_config(cfg, n).and_then(|s| {
            match (&self.shared.listener, &s.password) {
                (Some(l), Some(key)) => net::listener_md5(l, s.address, key)
                    .map_err(|e| format!("cannot set the TCP MD5 key on the listener: {e}"))?,
                // A key left from before a reload would make the kernel drop
                // this peer's now unsigned SYNs; none set is fine (ENOENT).
                (Some(l), None) => {
                    let _ = net::listener_md5(l, s.address, "");
                }
                (None, _) => {}
            }
            Ok(s)
        });
        let mut entry = PeerEntry {
            name: n.name.clone(),
            address: net::canonical(address),
            settings: settings.as_ref().ok().cloned(),
            status: Arc::new(Mutex::new(StatusCell {
                status: status.clone(),
                established_at: None,
            })),
            ctl: None,
            task: None,
        };
        match settings {
            Ok(s) => {
                if s.fsm.passive && self.shared.listener.is_none() {
                    log::warn!(
                        "bgp peer {}: passive but bgp.listen_port is -1: it can never connect",
                        s.name
                    );
                }
                status.running = true;
                lock(&entry.status).status = status;
                let (tx, rx) = channel::unbounded();
                let task = peer::PeerTask::new(
                    s,
                    self.shared.rib.clone(),
                    entry.status.clone(),
                    self.shared.events.clone(),
                    rx,
                );
                entry.ctl = Some(tx);
                entry.task = Some(smol::spawn(task.run()));
            }
            Err(e) => {
                log::error!("bgp peer {}: not started: {e}", n.name);
                status.last_error = Some(e);
                lock(&entry.status).status = status;
            }
        }
        let mut peers = lock(&self.shared.peers);
        peers.retain(|p| p.name != n.name);
        peers.push(entry);
    }

    fn senders(&self) -> Vec<Sender<Control>> {
        lock(&self.shared.peers)
            .iter()
            .filter_map(|p| p.ctl.clone())
            .collect()
    }

    fn sync_all(&self) {
        for tx in self.senders() {
            let _ = tx.try_send(Control::Sync(None));
        }
    }

    /// Sets (`Some`) or withdraws (`None`) the route for `prefix` on every
    /// peer.
    pub fn set_route(&self, prefix: Prefix, intent: Option<RouteIntent>) {
        self.set_routes(std::iter::once((prefix, intent)));
    }

    /// Several route changes applied together: every peer gets them as one
    /// minimal UPDATE set.
    pub fn set_routes(&self, routes: impl IntoIterator<Item = (Prefix, Option<RouteIntent>)>) {
        let mut changed = false;
        {
            let mut rib = lock(&self.shared.rib);
            for (prefix, intent) in routes {
                changed |= rib.set_desired(prefix, intent);
            }
        }
        if changed {
            self.sync_all();
        }
    }

    /// The first evaluation of every VIP is in: End-of-RIB may go out.
    pub fn mark_initial_done(&self) {
        lock(&self.shared.rib).mark_initial_done();
        self.sync_all();
    }

    /// A snapshot of every configured peer, in configuration order.
    pub fn peers(&self) -> Vec<PeerStatus> {
        let now = Instant::now();
        lock(&self.shared.peers)
            .iter()
            .map(|p| {
                let cell = lock(&p.status);
                let mut s = cell.status.clone();
                s.uptime = cell
                    .established_at
                    .map(|t| now.saturating_duration_since(t));
                s
            })
            .collect()
    }

    /// Applies a reloaded config: the neighbors named in `restart` (whose
    /// session settings changed, as the daemon's reload plan decided)
    /// restart (Cease / Administrative Shutdown "configuration changed",
    /// then a new session), removed ones stop, new ones start, and a peer
    /// that could not start before is tried again; the other sessions are
    /// not touched, only their `required` is updated. The listener and its
    /// address are kept (a changed listen address needs a daemon restart;
    /// the reload says so).
    pub fn reconfigure(&self, cfg: &Config, restart: &[&str]) {
        let mut stopping = Vec::new();
        {
            let mut peers = lock(&self.shared.peers);
            let mut keep = Vec::new();
            for p in peers.drain(..) {
                let n = cfg.bgp.neighbors.iter().find(|n| n.name == p.name);
                match n {
                    Some(n) if p.settings.is_some() && !restart.contains(&n.name.as_str()) => {
                        lock(&p.status).status.required = n.required;
                        keep.push(p);
                    }
                    _ => stopping.push(p),
                }
            }
            *peers = keep;
        }
        let running: Vec<String> = lock(&self.shared.peers)
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let starting: Vec<Neighbor> = cfg
            .bgp
            .neighbors
            .iter()
            .filter(|n| !running.contains(&n.name))
            .cloned()
            .collect();
        if stopping.is_empty() {
            self.start_peers(cfg, &starting);
            return;
        }
        // The old sessions' Cease must reach the peer before the new
        // sessions connect: a peer that sees a new connection while the old
        // session is still Established treats it as a collision (RFC 4271
        // §6.8) or, with graceful restart, as our restart (RFC 4724 §4.2);
        // BIRD then leaves the new connection in OpenConfirm until its
        // HoldTimer expires, a routing outage of up to the hold time.
        let handle = self.clone();
        let cfg = cfg.clone();
        smol::spawn(async move {
            stop_peers(stopping, Some("configuration changed".to_string())).await;
            // A later reload may have started some of them meanwhile.
            let present: Vec<String> = lock(&handle.shared.peers)
                .iter()
                .map(|p| p.name.clone())
                .collect();
            let starting: Vec<Neighbor> = starting
                .into_iter()
                .filter(|n| !present.contains(&n.name))
                .collect();
            handle.start_peers(&cfg, &starting);
        })
        .detach();
    }

    fn start_peers(&self, cfg: &Config, starting: &[Neighbor]) {
        for n in starting {
            log::info!(
                "bgp peer {}: (re)starting with the new configuration",
                n.name
            );
            self.start_peer(cfg, n);
        }
        // Keep the configured order for /status.
        lock(&self.shared.peers).sort_by_key(|p| {
            cfg.bgp
                .neighbors
                .iter()
                .position(|n| n.name == p.name)
                .unwrap_or(usize::MAX)
        });
    }

    /// Graceful stop: withdraw every route from every peer, wait `drain`
    /// (so traffic moves away before the sessions drop), then send Cease /
    /// Administrative Shutdown with `message` and close. Bounded: at most
    /// `drain` plus a few seconds.
    pub async fn shutdown(&self, message: &str, drain: Duration) {
        if let Some(t) = lock(&self.shared.listener_task).take() {
            drop(t);
        }
        let keys: Vec<Prefix> = lock(&self.shared.rib).desired().keys().copied().collect();
        {
            let mut rib = lock(&self.shared.rib);
            for p in keys {
                rib.set_desired(p, None);
            }
        }
        let (done_tx, done_rx) = channel::unbounded();
        let mut waiting = 0u32;
        for tx in self.senders() {
            if tx.try_send(Control::Sync(Some(done_tx.clone()))).is_ok() {
                waiting = waiting.saturating_add(1);
            }
        }
        drop(done_tx);
        wait_n(&done_rx, waiting, STOP_TIMEOUT).await;
        if !drain.is_zero() {
            smol::Timer::after(drain).await;
        }
        let peers = std::mem::take(&mut *lock(&self.shared.peers));
        let kept: Vec<PeerEntry> = peers
            .iter()
            .map(|p| PeerEntry {
                name: p.name.clone(),
                address: p.address,
                settings: None,
                status: p.status.clone(),
                ctl: None,
                task: None,
            })
            .collect();
        stop_peers(peers, Some(message.to_string())).await;
        // Keep the final statuses visible.
        *lock(&self.shared.peers) = kept;
    }
}

/// Waits for `n` acknowledgements or `timeout`, whichever is first.
async fn wait_n(rx: &Receiver<()>, n: u32, timeout: Duration) {
    let all = async {
        for _ in 0..n {
            if rx.recv().await.is_err() {
                break;
            }
        }
    };
    smol::future::or(all, async {
        smol::Timer::after(timeout).await;
    })
    .await;
}

/// ManualStop with `message` to each peer; waits (bounded) for their
/// NOTIFICATIONs to be written, then drops the tasks.
async fn stop_peers(peers: Vec<PeerEntry>, message: Option<String>) {
    let (done_tx, done_rx) = channel::unbounded();
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
                smol::Timer::after(Duration::from_millis(200)).await;
            })
            .await;
        }
    }
}

async fn accept_loop(listener: Arc<Async<TcpListener>>, shared: Weak<Shared>) {
    let mut strangers = log_limit::LogLimit::new(NON_NEIGHBOR_LOG_BURST, NON_NEIGHBOR_LOG_INTERVAL);
    // The last address counted but not logged, for the summary line.
    let mut last_stranger: Option<SocketAddr> = None;
    loop {
        // Wake for the summary too, so a burst that stops is still reported.
        let accepted = match strangers.next_summary() {
            Some(at) => {
                smol::future::or(async { Some(listener.accept().await) }, async {
                    smol::Timer::at(at).await;
                    None
                })
                .await
            }
            None => Some(listener.accept().await),
        };
        if let Some(n) = strangers.summary(Instant::now()) {
            log::info!(
                "bgp: {n} more connections from addresses that are not configured neighbors closed in the last {}s (the last from {})",
                strangers.interval().as_secs(),
                last_stranger.map_or_else(|| "?".to_string(), |a| a.to_string())
            );
        }
        let Some(accepted) = accepted else {
            continue;
        };
        let (stream, from) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // E.g. out of file descriptors: back off instead of spinning.
                log::warn!("bgp: accept failed: {e}");
                smol::Timer::after(Duration::from_millis(200)).await;
                continue;
            }
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let ip = net::canonical(from.ip());
        let tx = lock(&shared.peers)
            .iter()
            .find(|p| p.address == ip)
            .map(|p| p.ctl.clone());
        match tx {
            Some(Some(tx)) => {
                if tx.try_send(Control::Inbound(stream)).is_err() {
                    log::debug!("bgp: connection from {from} closed: peer stopped");
                }
            }
            Some(None) => log::info!("bgp: connection from {from} closed: peer not running"),
            None => {
                if strangers.event(Instant::now()) {
                    log::info!("bgp: connection from {from} closed: not a configured neighbor");
                } else {
                    last_stranger = Some(from);
                }
                // Closed after the line is written, so a test that saw the
                // close finds the line.
                drop(stream);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(n: Neighbor) -> Config {
        let mut c = Config::default();
        c.router.asn = 65001;
        c.router.router_id = Some("192.0.2.1".parse().unwrap());
        c.bgp.neighbors = vec![n];
        c
    }

    fn neighbor(peer_asn: u32) -> Neighbor {
        Neighbor {
            name: "n".into(),
            address: Some("192.0.2.2".parse().unwrap()),
            peer_asn,
            ..Neighbor::default()
        }
    }

    fn settings(c: &Config) -> PeerSettings {
        PeerSettings::from_config(c, &c.bgp.neighbors[0]).unwrap()
    }

    #[test]
    fn ttl_rules_for_ebgp_multihop_gtsm_and_ibgp() {
        let s = settings(&cfg(neighbor(65000)));
        assert_eq!((s.ttl, s.min_ttl), (Some(1), None));
        let mut n = neighbor(65000);
        n.enable_multihop = true;
        assert_eq!(settings(&cfg(n.clone())).ttl, Some(255));
        n.multihop_ttl = 5;
        assert_eq!(settings(&cfg(n.clone())).ttl, Some(5));
        // RFC 5082: 255 - (hops - 1).
        n.ttl_security = true;
        let s = settings(&cfg(n));
        assert_eq!((s.ttl, s.min_ttl), (Some(255), Some(251)));
        let mut n = neighbor(65000);
        n.ttl_security = true;
        assert_eq!(settings(&cfg(n)).min_ttl, Some(255));
        let s = settings(&cfg(neighbor(65001)));
        assert_eq!((s.ttl, s.min_ttl, s.shape.ebgp), (None, None, false));
    }

    #[test]
    fn next_hops_and_families_from_router_settings() {
        let mut c = cfg(neighbor(65000));
        let s = settings(&c);
        assert_eq!(s.shape.next_hop_v4, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(s.shape.next_hop_v6, None);
        assert!(!s.fsm.capabilities.mp_ipv6);
        c.router.local_address = Some("0.0.0.0".parse().unwrap());
        c.router.local_address_ipv6 = Some("2001:db8::1".parse().unwrap());
        let s = settings(&c);
        assert!(s.next_hop_v4_from_session);
        assert_eq!(s.shape.next_hop_v6, Some("2001:db8::1".parse().unwrap()));
        assert!(s.fsm.capabilities.mp_ipv6);
        c.router.local_address = Some("198.51.100.1".parse().unwrap());
        let s = settings(&c);
        assert_eq!(s.shape.next_hop_v4, Some("198.51.100.1".parse().unwrap()));
        assert_eq!(s.local_address, c.router.local_address);
    }

    #[test]
    fn timers_come_from_the_neighbor_then_bgp() {
        let mut c = cfg(neighbor(65000));
        c.bgp.hold_time = crate::config::Dur::secs(30);
        c.bgp.keepalive_time = crate::config::Dur::secs(0);
        let s = settings(&c);
        assert_eq!((s.fsm.hold_time, s.fsm.keepalive_time), (30, None));
        c.bgp.neighbors[0].hold_time = Some(crate::config::Dur::secs(9));
        c.bgp.neighbors[0].keepalive_time = Some(crate::config::Dur::secs(2));
        let s = settings(&c);
        assert_eq!((s.fsm.hold_time, s.fsm.keepalive_time), (9, Some(2)));
        c.router.router_id = None;
        assert!(PeerSettings::from_config(&c, &c.bgp.neighbors[0]).is_err());
    }

    #[test]
    fn error_wait_bounds_drive_the_fsm_back_off() {
        let mut c = cfg(neighbor(65000));
        let s = settings(&c);
        assert_eq!(
            (
                s.fsm.idle_hold_time,
                s.fsm.idle_hold_time_max,
                s.fsm.stable_time
            ),
            (
                Duration::from_secs(1),
                Duration::from_secs(60),
                Duration::from_secs(60)
            )
        );
        c.bgp.neighbors[0].error_wait_min = crate::config::Dur::ms(250);
        c.bgp.neighbors[0].error_wait_max = crate::config::Dur::secs(5);
        let s = settings(&c);
        assert_eq!(
            (
                s.fsm.idle_hold_time,
                s.fsm.idle_hold_time_max,
                s.fsm.stable_time
            ),
            (
                Duration::from_millis(250),
                Duration::from_secs(5),
                Duration::from_secs(5)
            )
        );
    }
}
