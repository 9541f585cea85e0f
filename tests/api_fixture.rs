//! Shared by the api_* tests (included with `#[path]`): a synthetic snapshot
//! for the renderers, and the daemon's state (`daemon::state::State`)
//! answering `Control` messages on a thread of its own, stepped as the
//! daemon's owner task steps it; what the owner runs beside the state
//! (sessions, pool, exporter, probes) is the snapshot's and the test's.
#![allow(dead_code)]

use pathosd::api::control::{ApiError, Control, ControlHandle, Reply, TriggerOutcome};
use pathosd::api::model::{
    CheckView, MsgCounts, OtelSignal, OtelView, PageInfo, PeerView, PoolView, ReloadRecord,
    ReloadResult, Scope, Snapshot, VipView, Want,
};
use pathosd::api::stream::Source;
use pathosd::bgp::types::{PathAttrs, Prefix};
use pathosd::check::CheckResult;
use pathosd::config::load::{load_str, Format};
use pathosd::config::RunConfig;
use pathosd::daemon::engine::{CheckId, CheckRun};
use pathosd::daemon::state::{Effects, Event, Live, State};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A loopback address private to one test binary run: 127.(160 + pid % 64).(pid / 64 % 256).`n`.
pub fn test_ip(n: u8) -> Ipv4Addr {
    let pid = std::process::id();
    Ipv4Addr::new(127, 160 + (pid % 64) as u8, (pid / 64 % 256) as u8, n)
}

pub fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

pub fn check(name: &str, kind: &str, r: CheckResult, healthy: bool, detailed: bool) -> CheckView {
    CheckView {
        name: name.into(),
        kind: kind.into(),
        healthy,
        consecutive_ok: if healthy { 3 } else { 0 },
        consecutive_fail: if healthy { 0 } else { 4 },
        last: Some(r),
        last_time: Some(at(1_790_000_100)),
        last_transition: Some((at(1_790_000_050), format!("{name}: rise threshold reached"))),
        total_ok: 10,
        total_fail: 2,
        timeouts: 1,
        bucket_bounds: vec![0.1, 0.2, 0.5, 1.0, 1.05],
        buckets: vec![5, 8, 10, 11, 12],
        duration_sum: 2.5,
        detailed_metrics: detailed,
        degraded: None,
    }
}

/// Three VIPs: `web` (announced, http + dns, detailed metrics), `db` (withdrawn,
/// a failing tcp check), and one whose name needs escaping everywhere.
pub fn snapshot() -> Snapshot {
    Snapshot {
        router_id: "10.0.0.1".into(),
        asn: 65001,
        version: "0.1.0-test",
        start_time: at(1_790_000_000),
        uptime: Duration::from_secs(3600),
        bfd_unmatched: 3,
        hook_drops: 2,
        peers: peers(),
        vips: vips(),
        last_reload: Some(ReloadRecord {
            time: at(1_790_003_000),
            result: ReloadResult::Rejected,
            errors: vec![
                "vip 'web' option prefix (line 3): \"10.10.1.1/33\" is not a prefix".into(),
                "config check (line 9) option timeout: 2s must be less than interval 1s".into(),
            ],
            needs_restart: Vec::new(),
        }),
        // Two workers busy, one job queued; 40 run, 3 refused, 1 expired.
        // Refused jobs never queue: 41 left the queue (run + expired), 6 of
        // them within 1 ms, all within 5 s.
        blocking_pool: PoolView {
            workers: 2,
            workers_max: 4,
            running: 2,
            queued: 1,
            queue_max: 32,
            run: 40,
            refused: 3,
            expired: 1,
            wait_buckets: [6, 20, 30, 36, 38, 39, 40, 41],
            wait_sum: 1.25,
            wait_count: 41,
        },
        // Metrics to a collector that is down (the next try in 2.5 s),
        // traces accepted, logs not exported.
        otel: Some(OtelView {
            exported: 12,
            failed: 3,
            dropped: 1,
            queued: 2,
            spans_dropped: 0,
            logs_dropped: 0,
            signals: [
                Some(OtelSignal {
                    endpoint: "http://192.0.2.10:4318/v1/metrics".into(),
                    queued: 2,
                    last_error: Some("connect: connection refused".into()),
                    next_try_in: Some(Duration::from_millis(2500)),
                }),
                Some(OtelSignal {
                    endpoint: "http://192.0.2.10:4318/v1/traces".into(),
                    queued: 0,
                    last_error: None,
                    next_try_in: None,
                }),
                None,
            ],
        }),
        page: None,
    }
}

/// The snapshot's peers: `frr` Established with BFD and a route, `bird`
/// Active after a NOTIFICATION.
fn peers() -> Vec<PeerView> {
    vec![
        PeerView {
            name: "frr".into(),
            address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            peer_asn: 65000,
            required: true,
            state: "established".into(),
            established_for: Some(Duration::from_secs(120)),
            last_error: None,
            notification_sent: None,
            notification_received: None,
            received: MsgCounts {
                open: 1,
                update: 2,
                notification: 0,
                keepalive: 40,
                route_refresh: 0,
            },
            sent: MsgCounts {
                open: 1,
                update: 3,
                notification: 0,
                keepalive: 41,
                route_refresh: 0,
            },
            advertised: 1,
            flaps: 0,
            routes: vec![(
                "10.10.1.1/32".parse().unwrap(),
                pathosd::bgp::types::PathAttrs {
                    origin: pathosd::bgp::types::Origin::Igp,
                    as_path: vec![65001, 65001],
                    next_hop: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
                    med: None,
                    local_pref: None,
                    communities: vec![
                        pathosd::bgp::types::Community(65001, 666),
                        pathosd::bgp::types::Community(65001, 200),
                    ],
                    large_communities: vec![],
                    otc: None,
                },
            )],
            bfd: Some(pathosd::api::model::BfdView {
                state: "up",
                remote_state: "up",
                diag: "no diagnostic",
                multihop: true,
                local_discriminator: 7,
                remote_discriminator: 9,
                up_for: Some(Duration::from_secs(118)),
                downs: 1,
                dropped: pathosd::bfd::DropReason::ALL
                    .iter()
                    .filter(|r| **r != pathosd::bfd::DropReason::NoSession)
                    .map(|r| {
                        (
                            r.as_str(),
                            u64::from(*r == pathosd::bfd::DropReason::WrongTtl),
                        )
                    })
                    .collect(),
            }),
        },
        PeerView {
            name: "bird".into(),
            address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)),
            peer_asn: 65002,
            required: false,
            state: "active".into(),
            established_for: None,
            last_error: Some("connect: connection refused".into()),
            notification_sent: None,
            notification_received: Some("6/2 Administrative Shutdown".into()),
            received: MsgCounts::default(),
            sent: MsgCounts::default(),
            advertised: 0,
            flaps: 2,
            routes: vec![],
            bfd: None,
        },
    ]
}

/// The snapshot's VIPs (see [`snapshot`]).
fn vips() -> Vec<VipView> {
    let mut http = CheckResult::pass("HTTP 200 OK").with("status_code", 200);
    http.duration = Duration::from_micros(12_345);
    let dns = CheckResult::pass("DNS OK: web.example.com.")
        .with(
            "answers",
            vec!["192.0.2.1".to_string(), "192.0.2.2".to_string()],
        )
        .with("tcp", false);
    let ping = CheckResult::pass("ping 192.0.2.9: 3/3 replies")
        .with("rtt_min_ms", 0.5)
        .with("rtt_avg_ms", 0.75)
        .with("rtt_max_ms", 1.25)
        .with("loss_ratio", 0.0);
    let mut tcp = CheckResult::fail("connect 127.0.0.1:5432: connection refused");
    tcp.timed_out = true;
    vec![
        VipView {
            name: "web".into(),
            prefix: "10.10.1.1/32".into(),
            more_prefixes: Vec::new(),
            state: "announced",
            healthy: true,
            drain_file: false,
            drain_api: false,
            as_path_prepend_base: 3,
            as_path_prepend: 0,
            communities: vec!["65001:100".into()],
            large_communities: vec!["65001:1:2".into()],
            flaps: 1,
            last_transition: Some((at(1_790_000_060), "web: rise threshold reached".into())),
            transitions: [1, 2, 0],
            checks_policy: "all".into(),
            local_address_assigned: Some(true),
            flows: None,
            degraded: None,
            damping: None,
            checks: vec![
                check("web", "http", http, true, true),
                check("dns", "dns", dns, true, true),
                check("ping", "ping", ping, true, true),
            ],
        },
        VipView {
            name: "db".into(),
            prefix: "10.10.2.1/32".into(),
            more_prefixes: Vec::new(),
            state: "withdrawn",
            healthy: false,
            drain_file: false,
            drain_api: false,
            as_path_prepend_base: 3,
            as_path_prepend: 0,
            communities: vec![],
            large_communities: vec![],
            flaps: 0,
            last_transition: Some((at(1_790_000_070), "tcp: fall threshold reached".into())),
            transitions: [1, 0, 0],
            checks_policy: "all".into(),
            local_address_assigned: None,
            flows: None,
            degraded: None,
            damping: None,
            checks: vec![check("tcp", "tcp", tcp, false, false)],
        },
        VipView {
            name: "<b>evil</b>&\"x'".into(),
            prefix: "2001:db8::1/128".into(),
            more_prefixes: Vec::new(),
            state: "pessimized",
            healthy: true,
            drain_file: true,
            drain_api: false,
            as_path_prepend_base: 2,
            as_path_prepend: 2,
            communities: vec![],
            large_communities: vec![],
            flaps: 0,
            last_transition: None,
            transitions: [0, 0, 1],
            checks_policy: "any".into(),
            local_address_assigned: None,
            flows: None,
            degraded: None,
            damping: None,
            checks: vec![check(
                "exec",
                "exec",
                CheckResult::pass("<script>alert(1)</script>").with("exit_code", 0),
                true,
                true,
            )],
        },
    ]
}

/// A trigger caller's reply channel, as the daemon's owner holds it.
pub type TriggerReply = Reply<Result<TriggerOutcome, ApiError>>;

/// The daemon's configuration behind [`snapshot`]'s VIPs: `web` (three
/// checks with detailed metrics, withdrawn when unhealthy), `db` (a tcp
/// check) and one whose name needs escaping everywhere (`any`, drained by
/// its lower_priority_file). Its peers are the snapshot's.
pub const CONFIG: &str = r#"{"schema":"v1",
 "router":{"asn":65001,"router_id":"10.0.0.1","local_address":"127.0.0.1","local_address_ipv6":"::1"},
 "bgp":{"listen_port":-1,"neighbors":[
   {"name":"frr","address":"127.0.0.2","peer_asn":65000,"required":true},
   {"name":"bird","address":"127.0.0.3","peer_asn":65002}]},
 "vips":[
  {"name":"web","prefix":"10.10.1.1/32","require_local_address":true,
   "checks":[
    {"name":"web","type":"http","interval":"2s","timeout":"1s","rise":3,"fall":2,"detailed_metrics":true,
     "http":{"url":"http://127.0.0.1:8080/"}},
    {"name":"dns","type":"dns","interval":"2s","timeout":"1s","rise":3,"fall":2,"detailed_metrics":true,
     "dns":{"names":["web.example.com."],"resolver":"127.0.0.53"}},
    {"name":"ping","type":"ping","interval":"2s","timeout":"1s","rise":3,"fall":2,"detailed_metrics":true,
     "ping":{"count":3}}],
   "policy":{"fail_action":"withdraw",
     "announce":{"as_path_prepend":3,"communities":["65001:100"],"large_communities":["65001:1:2"]}}},
  {"name":"db","prefix":"10.10.2.1/32",
   "check":{"name":"tcp","type":"tcp","interval":"2s","timeout":"1s","rise":3,"fall":4,
     "tcp":{"host":"127.0.0.1","port":5432}},
   "policy":{"fail_action":"withdraw","announce":{"as_path_prepend":3}}},
  {"name":"evil","prefix":"2001:db8::1/128","checks_policy":"any",
   "checks":[{"name":"exec","type":"exec","interval":"2s","timeout":"1s","detailed_metrics":true,
     "exec":{"command":"/bin/true"}}],
   "policy":{"announce":{"as_path_prepend":2},"lower_priority":{"as_path_prepend":0},
     "lower_priority_file":"/nonexistent/pathosd-test.drain"}}]}"#;

/// The name of [`CONFIG`]'s third VIP as the tests know it: the
/// validation refuses such a name, so it is given after the load.
pub const EVIL: &str = "<b>evil</b>&\"x'";

/// [`CONFIG`], loaded, with the third VIP renamed to [`EVIL`].
pub fn config() -> RunConfig {
    let mut c = load_str(CONFIG, Some(Format::Json), &|_| None).unwrap();
    c.vips[2].name = EVIL.into();
    c
}

/// The results each check's probe answers (its duration is the probe's
/// time): the snapshot's, with the local address guard's detail on
/// `web`'s checks (its VIP requires the address).
pub fn probe_results() -> HashMap<String, CheckResult> {
    let s = snapshot();
    let mut m = HashMap::new();
    for v in &s.vips {
        for c in &v.checks {
            let mut r = c.last.clone().unwrap();
            if v.name == "web" {
                r = r.with("local_address_assigned", true);
            }
            m.insert(c.name.clone(), r);
        }
    }
    m
}

/// The wall-clock time of the state's start: [`at`]`(1_790_000_000)`.
pub const START: u64 = 1_790_000_000;
/// How long the daemon has run when the tests begin: the history below
/// is before it; requests are answered at this plus the real time since.
pub const RUNNING_FOR: Duration = Duration::from_secs(3600);

/// What the tests' owner runs beside the state, as the daemon's owner
/// does (the speaker's sessions, the blocking pool, the exporter, the
/// probes, the config file): what the tests set.
pub struct Driver {
    /// The sessions, with the routes each peer has from us.
    pub peers: Vec<PeerView>,
    pub blocking_pool: PoolView,
    pub otel: Option<OtelView>,
    pub bfd_unmatched: u64,
    pub hook_drops: u64,
    /// What a probe answers a trigger run, by check name.
    pub probes: HashMap<String, CheckResult>,
    /// What a reload loads: the configuration the state started with.
    pub file: RunConfig,
    /// The next reload's file is refused with these errors when there
    /// are any.
    pub reload_errors: Vec<String>,
    /// What the owner could not carry out of a valid reload's plan
    /// (`State::reload_not_applied`).
    pub reload_not_applied: Vec<String>,
}

/// The daemon's state and the driver's parts, shared by the owner's
/// thread and the test.
pub struct Owned {
    pub state: State<TriggerReply>,
    pub driver: Driver,
    t0: Instant,
    since: Instant,
}

impl Owned {
    /// The owner's clock: [`RUNNING_FOR`] after the start, and the real
    /// time since (the trigger rate limit refills with it).
    pub fn now(&self) -> Instant {
        self.t0 + RUNNING_FOR + self.since.elapsed()
    }

    /// A step at `now`, after the engine's deadline if it is due (the
    /// owner's timer).
    pub fn step(&mut self, ev: Event<TriggerReply>, now: Instant) -> Effects<TriggerReply> {
        if self.state.next_deadline().is_some_and(|d| d <= now) {
            self.state.step(Event::Tick, now);
        }
        self.state.step(ev, now)
    }

    /// A scheduled result of `vip`'s check `check`, at `now`.
    pub fn report(&mut self, vip: &str, check: &str, result: CheckResult, now: Instant) {
        let id = self.check_id(vip, check);
        let run = CheckRun {
            check: id,
            result,
            trigger: None,
        };
        self.step(Event::Result(run), now);
    }

    pub fn check_id(&self, vip: &str, check: &str) -> CheckId {
        let slot = self.state.engine().vip(vip).unwrap();
        slot.checks.iter().find(|c| c.name == check).unwrap().id
    }

    /// Whether the API drains `vip` (the engine's VIP machine says).
    pub fn drain_api(&self, vip: &str) -> bool {
        self.state.engine().vip(vip).unwrap().machine.drain_api()
    }

    fn live(&self) -> Live {
        let d = &self.driver;
        Live {
            version: "0.1.0-test",
            // As the owner's: the routes are read a few at a time
            // (`Reading::routes`), never copied into a snapshot.
            peers: d
                .peers
                .iter()
                .map(|p| PeerView {
                    routes: Vec::new(),
                    ..p.clone()
                })
                .collect(),
            blocking_pool: d.blocking_pool.clone(),
            otel: d.otel.clone(),
            bfd_unmatched: d.bfd_unmatched,
            hook_drops: d.hook_drops,
        }
    }
}

/// The history before the tests: every check of `web` passes 7 times,
/// fails twice (the first timed out) and passes 3 times, one round each
/// 5 s, `web` last (so the VIP's last transition is `web`'s rise, at
/// 60 s); `db`'s check passes 10 times, then fails 4 (the last timed
/// out); the third VIP's check passes and its drain file appears at 40 s;
/// a reload was rejected at 3000 s.
pub fn history(o: &mut Owned) {
    let t0 = o.t0;
    let probes = probe_results();
    let took = |r: &CheckResult, ms: f64| {
        let mut r = r.clone();
        r.duration = Duration::from_secs_f64(ms / 1000.0);
        r
    };
    let failed = |ms: f64, timed_out: bool| {
        let mut r = took(&CheckResult::fail("connect: connection refused"), ms);
        r.timed_out = timed_out;
        r
    };
    // 5, 8, 10, 11 and 12 of them within the 0.1, 0.2, 0.5, 1 and 1.05 s
    // buckets of a 1 s timeout; the last as the snapshot's http result.
    let ms = [
        150.0, 150.0, 150.0, 300.0, 300.0, 700.0, 20.0, 1020.0, 20.0, 20.0, 20.0, 12.345,
    ];
    for round in 0..14u64 {
        let at = t0 + Duration::from_secs(5 * (round + 1));
        let i = round as usize;
        if round < 12 {
            for c in ["ping", "dns", "web"] {
                let r = match i {
                    7 => failed(ms[i], true),
                    8 => failed(ms[i], false),
                    _ => took(&probes[c], ms[i]),
                };
                o.report("web", c, r, at);
            }
        }
        let r = match i {
            0..=9 => took(&CheckResult::pass("connect 127.0.0.1:5432: ok"), 3.0),
            13 => took(&probes["tcp"], 1020.0),
            _ => failed(1020.0, false),
        };
        o.report("db", "tcp", r, at);
        if round == 0 {
            o.report(EVIL, "exec", took(&probes["exec"], 3.0), at);
        }
        if round == 7 {
            let ev = Event::DrainFile {
                vip: EVIL.into(),
                present: true,
            };
            o.step(ev, at);
        }
    }
    let errors = snapshot().last_reload.unwrap().errors;
    o.step(Event::Reload(Err(errors)), t0 + Duration::from_secs(3000));
}

/// What the owner saw.
#[derive(Default)]
pub struct OwnerLog {
    /// Trigger requests received.
    pub triggers: AtomicU32,
    /// Trigger runs started (the probes asked).
    pub runs: AtomicU32,
    /// Trigger requests waiting for their answer in the owner, now and at
    /// most.
    pub waiting: AtomicU32,
    pub max_waiting: AtomicU32,
    pub reloads: AtomicU32,
    /// Pieces of streamed answers rendered.
    pub renders: AtomicU32,
}

pub struct Owner {
    pub ctl: ControlHandle,
    pub owned: Arc<Mutex<Owned>>,
    pub log: Arc<OwnerLog>,
    /// Called before each snapshot (or streamed answer) is answered, with
    /// how many were answered before.
    pub on_snapshot: Arc<Mutex<Option<SnapshotHook>>>,
}

impl Owner {
    /// Changes the driver's parts.
    pub fn driver(&self, f: impl FnOnce(&mut Driver)) {
        f(&mut self.owned.lock().unwrap().driver);
    }

    /// Whether the API drains `vip`.
    pub fn drain_api(&self, vip: &str) -> bool {
        self.owned.lock().unwrap().drain_api(vip)
    }

    /// The state with views of every VIP, as the owner answers it now.
    pub fn snapshot(&self) -> Snapshot {
        let o = self.owned.lock().unwrap();
        let live = o.live();
        o.state.snapshot(&Scope::All, o.now(), live)
    }
}

pub type SnapshotHook = Box<dyn FnMut(&mut Owned, u32) + Send>;

/// Starts the tests' owner on its own thread: the daemon's state
/// ([`config`] after [`history`]) driven as the daemon's owner task
/// drives it (`pathosd::daemon`'s `Owner::control`), with probes that
/// answer [`probe_results`] after `probe_time`.
pub fn start_owner(probe_time: Duration) -> Owner {
    start_owner_with(config(), probe_time, history)
}

/// [`start_owner`] with the configuration `cfg` and the history
/// `before` makes.
pub fn start_owner_with(
    cfg: RunConfig,
    probe_time: Duration,
    before: impl FnOnce(&mut Owned),
) -> Owner {
    let t0 = Instant::now() - RUNNING_FOR;
    let file = cfg.clone();
    let (state, _) = State::start(cfg, t0, at(START));
    let s = snapshot();
    let mut owned = Owned {
        state,
        driver: Driver {
            peers: s.peers,
            blocking_pool: s.blocking_pool,
            otel: s.otel,
            bfd_unmatched: s.bfd_unmatched,
            hook_drops: s.hook_drops,
            probes: probe_results(),
            file,
            reload_errors: Vec::new(),
            reload_not_applied: Vec::new(),
        },
        t0,
        since: Instant::now(),
    };
    before(&mut owned);
    let owned = Arc::new(Mutex::new(owned));
    let log = Arc::new(OwnerLog::default());
    let on_snapshot: Arc<Mutex<Option<SnapshotHook>>> = Arc::new(Mutex::new(None));
    let (tx, rx) = pathosd::chan::bounded::<Control>(64);
    let (o2, l2, h2) = (owned.clone(), log.clone(), on_snapshot.clone());
    std::thread::spawn(move || {
        // Parks like the daemon's thread (see api_abuse.rs).
        smol::future::block_on(run_owner(rx, o2, l2, h2, probe_time))
    });
    Owner {
        ctl: ControlHandle::new(tx),
        owned,
        log,
        on_snapshot,
    }
}

enum Wake {
    Control(Control),
    Probe(CheckRun),
}

async fn run_owner(
    rx: pathosd::chan::Rx<Control>,
    owned: Arc<Mutex<Owned>>,
    log: Arc<OwnerLog>,
    hook: Arc<Mutex<Option<SnapshotHook>>>,
    probe_time: Duration,
) {
    let (probe_tx, probe_rx) = pathosd::chan::unbounded::<CheckRun>();
    let mut served = 0u32;
    loop {
        let wake = smol::future::or(async { rx.recv().await.ok().map(Wake::Control) }, async {
            probe_rx.recv().await.ok().map(Wake::Probe)
        })
        .await;
        let mut o = owned.lock().unwrap();
        let now = o.now();
        let fx = match wake {
            None => return,
            Some(Wake::Probe(run)) => o.step(Event::Result(run), now),
            Some(Wake::Control(c)) => {
                let mut fresh = |o: &mut Owned| {
                    if let Some(h) = hook.lock().unwrap().as_mut() {
                        h(o, served);
                    }
                    served += 1;
                };
                match c {
                    Control::Snapshot { scope, reply } => {
                        fresh(&mut o);
                        let live = o.live();
                        let _ = reply.try_send(o.state.snapshot(&scope, now, live));
                        continue;
                    }
                    Control::Render { mut job, reply } => {
                        // A new answer counts as a snapshot served.
                        if job.head().is_none() {
                            fresh(&mut o);
                        }
                        job.step(&mut Reading { owned: &o, now });
                        log.renders.fetch_add(1, Ordering::SeqCst);
                        let _ = reply.try_send(job);
                        continue;
                    }
                    Control::Drain { vip, enable, reply } => {
                        let mut fx = o.step(Event::Drain { vip, enable }, now);
                        if let Some(r) = fx.drain.take() {
                            let _ = reply.try_send(r);
                        }
                        fx
                    }
                    Control::Reload { reply } => {
                        log.reloads.fetch_add(1, Ordering::SeqCst);
                        let _ = reply.try_send(reload(&mut o, now));
                        continue;
                    }
                    Control::Need { kind, name, up } => o.step(Event::Need { kind, name, up }, now),
                    Control::Trigger { vip, check, reply } => {
                        log.triggers.fetch_add(1, Ordering::SeqCst);
                        let n = log.waiting.fetch_add(1, Ordering::SeqCst) + 1;
                        log.max_waiting.fetch_max(n, Ordering::SeqCst);
                        let ev = Event::Trigger {
                            vip,
                            check,
                            running: true,
                            reply,
                        };
                        o.step(ev, now)
                    }
                }
            }
        };
        carry_out(&o, fx, &log, &probe_tx, probe_time);
    }
}

/// A step's answers to the trigger callers, and its trigger runs to the
/// probes, whose results come back after `probe_time` as the loops' do.
fn carry_out(
    o: &Owned,
    fx: Effects<TriggerReply>,
    log: &OwnerLog,
    probe_tx: &pathosd::chan::Tx<CheckRun>,
    probe_time: Duration,
) {
    for (waiters, answer) in fx.answers {
        for w in waiters {
            log.waiting.fetch_sub(1, Ordering::SeqCst);
            let _ = w.try_send(answer.clone());
        }
    }
    for ask in fx.asks {
        log.runs.fetch_add(1, Ordering::SeqCst);
        for c in ask.checks {
            let Some((slot, k)) = o.state.engine().check(c) else {
                continue;
            };
            let name = &slot.checks[k].name;
            let mut result = o.driver.probes[name].clone();
            let tx = probe_tx.clone();
            let id = ask.id;
            smol::spawn(async move {
                // The probe's run time: what makes a run in flight
                // observable.
                let started = Instant::now();
                smol::Timer::after(probe_time).await;
                result.duration = started.elapsed();
                let _ = tx.try_send(CheckRun {
                    check: c,
                    result,
                    trigger: Some(id),
                });
            })
            .detach();
        }
    }
}

/// A reload as the owner's: the state's step, then what the driver could
/// not carry out.
fn reload(o: &mut Owned, now: Instant) -> Result<ReloadRecord, Vec<String>> {
    let new = if o.driver.reload_errors.is_empty() {
        Ok(Box::new(o.driver.file.clone()))
    } else {
        Err(o.driver.reload_errors.clone())
    };
    let mut fx = o.step(Event::Reload(new), now);
    match fx.reload.take() {
        Some(Ok(_)) => {
            let not_applied = o.driver.reload_not_applied.clone();
            o.state.reload_not_applied(not_applied);
            o.state.last_reload().cloned().ok_or_else(Vec::new)
        }
        Some(Err(e)) => Err(e),
        None => Err(Vec::new()),
    }
}

/// The state as a streamed answer reads it, as the owner's `Reading`:
/// a view of one VIP at a time, the peers' routes from the driver.
struct Reading<'a> {
    owned: &'a Owned,
    now: Instant,
}

impl Source for Reading<'_> {
    fn head(&mut self) -> Snapshot {
        let live = self.owned.live();
        self.owned.state.snapshot(&Scope::Summary, self.now, live)
    }

    fn vip_count(&self) -> usize {
        self.owned.state.engine().vips().len()
    }

    fn select(&self, scope: &Scope) -> (Vec<usize>, Option<PageInfo>) {
        self.owned.state.select_vips(scope)
    }

    fn vip(&self, i: usize, want: Want) -> Option<VipView> {
        self.owned.state.vip_view(i, want)
    }

    fn routes(
        &self,
        peer: usize,
        after: Option<&Prefix>,
        max: usize,
        out: &mut Vec<(Prefix, PathAttrs)>,
    ) {
        let Some(p) = self.owned.driver.peers.get(peer) else {
            return;
        };
        let from = p
            .routes
            .partition_point(|(r, _)| after.is_some_and(|a| r <= a));
        out.extend(p.routes[from..].iter().take(max).cloned());
    }

    fn generation(&self) -> u64 {
        self.owned.state.generation()
    }
}

/// Starts the HTTP server with the real routes on `ip`; returns its address.
pub fn start_http(ip: Ipv4Addr, ctl: ControlHandle, lim: pathosd::api::http::Limits) -> SocketAddr {
    start_http_with(ip, ctl, lim, pathosd::api::routes::Options::default())
}

pub fn start_http_with(
    ip: Ipv4Addr,
    ctl: ControlHandle,
    lim: pathosd::api::http::Limits,
    opts: pathosd::api::routes::Options,
) -> SocketAddr {
    let listener = pathosd::api::http::listen(SocketAddr::from((ip, 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    let h = pathosd::api::routes::handler_with(ctl, opts);
    std::thread::spawn(move || pathosd::rt::block_on(pathosd::api::http::serve(listener, h, lim)));
    addr
}

pub fn limits(ms: u64) -> pathosd::api::http::Limits {
    let d = Duration::from_millis(ms);
    pathosd::api::http::Limits {
        read_header_timeout: d,
        read_timeout: d,
        write_timeout: d,
        idle_timeout: d,
    }
}

/// `n` VIPs of every kind the renderers distinguish, made from their index
/// alone (no clock, no randomness): states, drains, none to four checks of
/// each type with and without detailed metrics and results, names that need
/// escaping in JSON, Prometheus text and HTML, local address guards, and
/// the fixture's peers with a route per VIP on the first (some with
/// attributes only a few have). Large enough that every streamed answer
/// takes many pieces.
pub fn large_snapshot(n: usize) -> Snapshot {
    use pathosd::bgp::types::{Community, LargeCommunity, Origin, PathAttrs};
    let mut s = snapshot();
    let kinds = ["http", "dns", "ping", "tcp", "udp", "grpc", "exec"];
    s.vips = (0..n)
        .map(|i| {
            let state = ["announced", "withdrawn", "pessimized"][i % 3];
            let name = match i % 11 {
                0 => format!("v{i} \"q\" \\ <&'>\né"),
                _ => format!("vip-{i:05}"),
            };
            let checks = (0..i % 5)
                .map(|k| {
                    let kind = kinds[(i + k) % kinds.len()];
                    let r = match kind {
                        "http" => CheckResult::pass("HTTP 200 OK").with("status_code", 200 + k),
                        "dns" => CheckResult::pass("DNS OK")
                            .with("answers", vec![format!("192.0.2.{k}")])
                            .with("tcp", i % 2 == 0),
                        "ping" => CheckResult::pass("3/3")
                            .with("rtt_min_ms", 0.25 * k as f64)
                            .with("rtt_avg_ms", 1.5)
                            .with("rtt_max_ms", 3.0)
                            .with("loss_ratio", 0.0),
                        "exec" => CheckResult::fail("exit 3").with("exit_code", 3),
                        _ => CheckResult::fail(format!("connect: refused \"{k}\"\n")),
                    };
                    let mut c = check(&format!("c{k}"), kind, r, k % 2 == 0, (i + k) % 3 == 0);
                    c.last_time = Some(at(1_790_000_000 + i as u64));
                    if (i + k) % 7 == 0 {
                        // A check that has not run yet.
                        c.last = None;
                        c.last_time = None;
                        c.last_transition = None;
                    }
                    c.total_ok = (i * 7 + k) as u32;
                    c.duration_sum = i as f64 / 8.0;
                    c
                })
                .collect::<Vec<_>>();
            VipView {
                name,
                prefix: if i % 13 == 0 {
                    format!("2001:db8::{i:x}/128")
                } else {
                    format!("10.{}.{}.{}/32", i / 65536, (i / 256) % 256, i % 256)
                },
                // Some VIPs have an IPv6 prefix beside their first.
                more_prefixes: (i % 29 == 0)
                    .then(|| format!("2001:db8:1::{i:x}/128"))
                    .into_iter()
                    .collect(),
                state,
                healthy: i % 4 != 1,
                drain_file: i % 6 == 2,
                drain_api: i % 10 == 5,
                as_path_prepend_base: (i % 4) as u8,
                as_path_prepend: if state == "pessimized" { 3 } else { 0 },
                communities: (0..i % 3).map(|c| format!("65001:{c}")).collect(),
                large_communities: (0..i % 2).map(|c| format!("65001:{c}:{i}")).collect(),
                flaps: (i % 9) as u32,
                last_transition: (i % 8 != 0)
                    .then(|| (at(1_790_000_000 + 3 * i as u64), format!("c0: reason {i}"))),
                transitions: [(i % 3) as u32, (i % 5) as u32, (i % 2) as u32],
                checks_policy: if i % 5 == 4 {
                    "c0 || c1".into()
                } else {
                    "all".into()
                },
                local_address_assigned: match i % 17 {
                    3 => Some(true),
                    9 => Some(false),
                    _ => None,
                },
                flows: None,
                degraded: None,
                damping: None,
                checks,
            }
        })
        .collect();
    s.peers[0].routes = (0..n)
        .map(|i| {
            let prefix = format!("10.{}.{}.{}/32", i / 65536, (i / 256) % 256, i % 256);
            let attrs = PathAttrs {
                origin: Origin::Igp,
                as_path: vec![65001; 1 + i % 3],
                next_hop: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
                med: (i % 4 == 0).then_some(i as u32),
                local_pref: (i % 5 == 0).then_some(100),
                communities: (0..i % 3)
                    .map(|c| Community(65001, 100 + c as u16))
                    .collect(),
                large_communities: (0..i % 2)
                    .map(|c| LargeCommunity(65001, c as u32, 2))
                    .collect(),
                otc: None,
            };
            (prefix.parse().unwrap(), attrs)
        })
        .collect();
    s.peers[0].routes.sort_by_key(|r| r.0);
    s
}

/// FNV-1a, 64 bits: pins a large rendering in a test without a file of
/// megabytes (a mismatch says so; the fixture's pinned files give diffs).
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
