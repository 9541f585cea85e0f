//! Shared by the api_* tests (included with `#[path]`): a synthetic snapshot
//! and a stand-in for the daemon's owner task that answers `Control`
//! messages the way the contract in `api::control` describes.
#![allow(dead_code)]

use pathosd::api::control::{ApiError, Control, ControlHandle, TriggerOutcome};
use pathosd::api::model::{
    CheckView, MsgCounts, OtelSignal, OtelView, PeerView, PoolView, ReloadRecord, ReloadResult,
    Snapshot, VipView,
};
use pathosd::check::CheckResult;
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
    }
}

/// Three VIPs: `web` (announced, http + dns, detailed metrics), `db` (withdrawn,
/// a failing tcp check), and one whose name needs escaping everywhere.
pub fn snapshot() -> Snapshot {
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
    Snapshot {
        router_id: "10.0.0.1".into(),
        asn: 65001,
        version: "0.1.0-test",
        start_time: at(1_790_000_000),
        uptime: Duration::from_secs(3600),
        bfd_unmatched: 3,
        peers: vec![
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
        ],
        vips: vec![
            VipView {
                name: "web".into(),
                prefix: "10.10.1.1/32".into(),
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
                checks: vec![
                    check("web", "http", http, true, true),
                    check("dns", "dns", dns, true, true),
                    check("ping", "ping", ping, true, true),
                ],
            },
            VipView {
                name: "db".into(),
                prefix: "10.10.2.1/32".into(),
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
                checks: vec![check("tcp", "tcp", tcp, false, false)],
            },
            VipView {
                name: "<b>evil</b>&\"x'".into(),
                prefix: "2001:db8::1/128".into(),
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
                checks: vec![check(
                    "exec",
                    "exec",
                    CheckResult::pass("<script>alert(1)</script>").with("exit_code", 0),
                    true,
                    true,
                )],
            },
        ],
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

/// What the fake owner saw.
#[derive(Default)]
pub struct OwnerLog {
    /// Triggers running at once per VIP, now and at most.
    pub in_flight: Mutex<HashMap<String, u32>>,
    pub max_in_flight: AtomicU32,
    pub triggers: AtomicU32,
    pub reloads: AtomicU32,
    /// Pieces of streamed answers rendered.
    pub renders: AtomicU32,
}

pub struct FakeOwner {
    pub ctl: ControlHandle,
    pub snapshot: Arc<Mutex<Snapshot>>,
    pub log: Arc<OwnerLog>,
    /// Reload answers these errors when non-empty; else a record applied
    /// at 1_790_004_000 whose errors (what was not applied) are
    /// `reload_not_applied`.
    pub reload_errors: Arc<Mutex<Vec<String>>>,
    pub reload_not_applied: Arc<Mutex<Vec<String>>>,
    /// Called before each snapshot (or streamed answer) is answered, with
    /// how many were answered before.
    pub on_snapshot: Arc<Mutex<Option<SnapshotHook>>>,
}

pub type SnapshotHook = Box<dyn FnMut(&mut Snapshot, u32) + Send>;

/// Starts the fake owner on its own thread. Each trigger runs on its own task
/// for `probe_time`, so two triggers for one VIP overlap unless the API
/// serializes them; `max_in_flight` shows whether they did.
pub fn start_owner(probe_time: Duration) -> FakeOwner {
    let (tx, rx) = pathosd::chan::bounded::<Control>(64);
    let snapshot = Arc::new(Mutex::new(snapshot()));
    let log = Arc::new(OwnerLog::default());
    let reload_errors = Arc::new(Mutex::new(Vec::new()));
    let reload_not_applied = Arc::new(Mutex::new(Vec::new()));
    let on_snapshot: Arc<Mutex<Option<SnapshotHook>>> = Arc::new(Mutex::new(None));
    let (s2, l2, r2, h2, n2) = (
        snapshot.clone(),
        log.clone(),
        reload_errors.clone(),
        on_snapshot.clone(),
        reload_not_applied.clone(),
    );
    std::thread::spawn(move || {
        // Parks like the daemon's thread (see api_abuse.rs).
        smol::future::block_on(async move {
            let mut served = 0u32;
            while let Ok(m) = rx.recv().await {
                match m {
                    Control::Snapshot { scope, reply } => {
                        let mut s = s2.lock().unwrap();
                        if let Some(h) = h2.lock().unwrap().as_mut() {
                            h(&mut s, served);
                        }
                        served += 1;
                        // As the owner: views of the scope's VIPs only.
                        let _ = reply.try_send(s.clone().scoped(&scope));
                    }
                    Control::Render { mut job, reply } => {
                        // As the owner: the next piece, from its state
                        // (a new answer counts as a snapshot served).
                        let mut s = s2.lock().unwrap();
                        if job.head().is_none() {
                            if let Some(h) = h2.lock().unwrap().as_mut() {
                                h(&mut s, served);
                            }
                            served += 1;
                        }
                        job.step(&mut *s);
                        l2.renders.fetch_add(1, Ordering::SeqCst);
                        let _ = reply.try_send(job);
                    }
                    Control::Trigger { vip, check, reply } => {
                        let s = s2.lock().unwrap().clone();
                        let log = l2.clone();
                        smol::spawn(async move {
                            let r = trigger(&s, &log, &vip, check.as_deref(), probe_time).await;
                            let _ = reply.try_send(r);
                        })
                        .detach();
                    }
                    Control::Drain { vip, enable, reply } => {
                        let mut s = s2.lock().unwrap();
                        let r = match s.vips.iter_mut().find(|v| v.name == vip) {
                            Some(v) => {
                                v.drain_api = enable;
                                if v.state == "announced" && enable {
                                    v.state = "pessimized";
                                } else if v.state == "pessimized" && !enable && !v.drain_file {
                                    v.state = "announced";
                                }
                                Ok(v.state)
                            }
                            None => Err(ApiError::NotFound(format!("VIP not found: {vip}"))),
                        };
                        let _ = reply.try_send(r);
                    }
                    Control::Reload { reply } => {
                        l2.reloads.fetch_add(1, Ordering::SeqCst);
                        let errs = r2.lock().unwrap().clone();
                        let not_applied = n2.lock().unwrap().clone();
                        let record = ReloadRecord {
                            time: at(1_790_004_000),
                            result: if not_applied.is_empty() {
                                ReloadResult::Applied
                            } else {
                                ReloadResult::PartiallyApplied
                            },
                            errors: not_applied,
                            needs_restart: Vec::new(),
                        };
                        let _ = reply.try_send(if errs.is_empty() {
                            Ok(record)
                        } else {
                            Err(errs)
                        });
                    }
                }
            }
        })
    });
    FakeOwner {
        ctl: ControlHandle::new(tx),
        snapshot,
        log,
        reload_errors,
        reload_not_applied,
        on_snapshot,
    }
}

async fn trigger(
    s: &Snapshot,
    log: &OwnerLog,
    vip: &str,
    check: Option<&str>,
    probe_time: Duration,
) -> Result<TriggerOutcome, ApiError> {
    let Some(v) = s.vips.iter().find(|v| v.name == vip) else {
        return Err(ApiError::NotFound(format!("VIP not found: {vip}")));
    };
    if let Some(c) = check {
        if !v.checks.iter().any(|x| x.name == c) {
            return Err(ApiError::NotFound(format!("check not found: {c}")));
        }
    }
    log.triggers.fetch_add(1, Ordering::SeqCst);
    {
        let mut m = log.in_flight.lock().unwrap();
        let n = m.entry(vip.to_string()).or_insert(0);
        *n += 1;
        log.max_in_flight.fetch_max(*n, Ordering::SeqCst);
    }
    // The probe's run time: what makes overlapping triggers observable.
    let started = Instant::now();
    smol::Timer::after(probe_time).await;
    *log.in_flight.lock().unwrap().get_mut(vip).unwrap() -= 1;
    let results: Vec<(String, CheckResult)> = v
        .checks
        .iter()
        .filter(|c| check.is_none_or(|n| n == c.name))
        .map(|c| {
            let mut r = c.last.clone().unwrap();
            r.duration = started.elapsed();
            (c.name.clone(), r)
        })
        .collect();
    let combined = results.len() == v.checks.len() && results.iter().all(|(_, r)| r.ok);
    Ok(TriggerOutcome {
        vip: vip.to_string(),
        results,
        combined,
        state: v.state,
    })
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
