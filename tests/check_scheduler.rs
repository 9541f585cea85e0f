//! The check driver end to end: real loops on smol running exec probes
//! (a script whose result the test flips with a file), the hysteresis,
//! the ad-hoc trigger and the policy Combiner; plus a virtual-time replay
//! of several checks through Schedule + Hysteresis + Combiner.

mod support;

use pathosd::check::hysteresis::Transition;
use pathosd::check::{Combiner, Hysteresis, Report, Schedule, VipChecks};
use pathosd::config::policy_expr::Expr;
use pathosd::config::{Errors, Field, Vip};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use support::*;

fn vip(v: serde_json::Value) -> Vip {
    let mut errs = Errors::default();
    let v = Vip::decode(&v, "vip", &mut errs);
    assert!(errs.is_empty(), "{:?}", errs.0);
    v.unwrap()
}

/// An exec check that passes while `flag` exists and records overlapping
/// runs: it takes a mkdir lock for 30 ms and fails loudly if it is held.
fn flag_check(name: &str, flag: &Path, lock: &Path, interval: &str) -> serde_json::Value {
    let script = format!(
        "mkdir {l} 2>/dev/null || {{ echo OVERLAP; exit 9; }}; sleep 0.03; rmdir {l}; test -e {f}",
        l = lock.display(),
        f = flag.display()
    );
    json!({"name": name, "type": "exec", "interval": interval, "timeout": "200ms",
           "rise": 2, "fall": 2, "exec": {"command": "/bin/sh", "args": ["-c", script]}})
}

fn recv(rx: &smol::channel::Receiver<Report>) -> Report {
    smol::block_on(async {
        smol::future::or(async { rx.recv().await.ok() }, async {
            async_io::Timer::after(Duration::from_secs(10)).await;
            None
        })
        .await
    })
    .expect("a report within 10 s")
}

#[test]
fn loops_hysteresis_trigger_and_policy() {
    let dir = temp_dir("sched");
    let (fa, fb) = (dir.join("a.up"), dir.join("b.up"));
    std::fs::write(&fa, "").unwrap();
    let v = vip(
        json!({"name": "web", "prefix": "10.0.0.1/32", "checks_policy": "any", "checks": [
            flag_check("a", &fa, &dir.join("a.lock"), "300ms"),
            flag_check("b", &fb, &dir.join("b.lock"), "400ms"),
        ]}),
    );
    let checks = std::sync::Arc::new(VipChecks::new(&v).unwrap());
    assert_eq!(checks.names(), ["a", "b"]);
    let (tx, rx) = smol::channel::unbounded();
    let tasks: Vec<_> = checks.loops(&tx).into_iter().map(smol::spawn).collect();
    let mut combiner = Combiner::new(Expr::Any, checks.names());
    let start = Instant::now();
    let mut firsts = std::collections::BTreeMap::new();
    let mut vip_changes = Vec::new();
    // a: up from the start, b: down until the test creates its flag.
    let mut a_healthy_at = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while a_healthy_at.is_none() || firsts.len() < 2 {
        assert!(Instant::now() < deadline, "a never became healthy");
        let r = recv(&rx);
        assert_ne!(r.result.detail, "exit 9: OVERLAP");
        firsts.entry(r.check.clone()).or_insert(start.elapsed());
        if let Some(c) = combiner.update(&r.check, r.healthy) {
            vip_changes.push(c);
        }
        if r.check == "a" && r.transition == Some(Transition::BecameHealthy) {
            // rise 2: the second consecutive success.
            assert_eq!(r.consecutive_ok, 2);
            a_healthy_at = Some(start.elapsed());
        }
        if r.check == "b" {
            assert!(
                !r.result.ok && !r.healthy && r.transition.is_none(),
                "{r:?}"
            );
        }
    }
    // The first probes fire at startup (at once; the splay applies from the
    // second run on).
    for (c, t) in &firsts {
        assert!(*t < Duration::from_millis(1000), "{c} first ran at {t:?}");
    }
    assert!(a_healthy_at.unwrap() >= Duration::from_millis(300));
    assert_eq!(vip_changes, [true]);

    // An ad-hoc trigger runs every check now, through the same counters.
    std::fs::write(&fb, "").unwrap();
    let reports = smol::block_on(checks.trigger(&tx));
    assert_eq!(reports.len(), 2);
    assert!(reports.iter().all(|r| r.adhoc && r.result.ok));
    let b = &reports[1];
    assert_eq!(
        (b.check.as_str(), b.consecutive_ok, b.healthy),
        ("b", 1, false)
    );

    // Both down: a falls after 2 failures; the VIP follows only when the
    // `any` result changes.
    std::fs::remove_file(&fa).unwrap();
    std::fs::remove_file(&fb).unwrap();
    let mut transitions = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while combiner.healthy() {
        assert!(Instant::now() < deadline, "VIP never went down");
        let r = recv(&rx);
        assert_ne!(r.result.detail, "exit 9: OVERLAP");
        if let Some(t) = r.transition {
            transitions.push((r.check.clone(), t));
        }
        if let Some(c) = combiner.update(&r.check, r.healthy) {
            vip_changes.push(c);
        }
    }
    assert_eq!(vip_changes, [true, false]);
    assert!(transitions.contains(&("a".to_string(), Transition::BecameUnhealthy)));
    drop(tasks);
}

#[test]
fn always_vip_has_no_checks_and_bad_checks_name_the_check() {
    let v = vip(json!({"name": "static", "prefix": "10.0.0.0/24", "always": true}));
    assert!(VipChecks::new(&v).unwrap().checks.is_empty());
    let v = vip(json!({"name": "web", "prefix": "10.0.0.0/24",
                       "check": {"type": "tcp", "tcp": {"port": 80}}}));
    assert_eq!(
        VipChecks::new(&v).unwrap_err(),
        "vip web check tcp: host is required: the VIP prefix 10.0.0.0/24 is not a single address"
    );
}

/// Virtual-time replay (1 ms steps, each probe taking 5 ms) of checks with
/// the given intervals in seconds, rise 1 and fall 3, combined by `expr`;
/// `up(check, t_ms)` is the probe outcome. Returns the VIP changes as
/// (time in ms, healthy).
fn replay(expr: Expr, checks: &[(&str, u64)], up: impl Fn(&str, u64) -> bool) -> Vec<(u64, bool)> {
    let names: Vec<String> = checks.iter().map(|(n, _)| n.to_string()).collect();
    let mut state: Vec<(Schedule, Hysteresis)> = checks
        .iter()
        .map(|(n, i)| {
            (
                Schedule::new(&format!("v/{n}"), Duration::from_secs(*i)),
                Hysteresis::new(1, 3),
            )
        })
        .collect();
    let mut comb = Combiner::new(expr, names.clone());
    let mut out = Vec::new();
    for now_ms in 0..200_000u64 {
        let now = Duration::from_millis(now_ms);
        for (i, (s, h)) in state.iter_mut().enumerate() {
            if s.due() == now {
                h.observe(up(&names[i], now_ms));
                if let Some(c) = comb.update(&names[i], h.healthy()) {
                    out.push((now_ms, c));
                }
                s.advance(now + Duration::from_millis(5));
            }
        }
    }
    out
}

/// The seed's reaction-time example: web (1 s) and dns (10 s); the backend
/// dies at t = 60 s and comes back at t = 120 s.
#[test]
fn reaction_time_replay() {
    let backend = |_: &str, t: u64| !(60_000..120_000).contains(&t);
    let changes = replay(Expr::All, &[("web", 1), ("dns", 10)], backend);
    // Up once both have reported (dns's first probe); down at web's third
    // failure, ~3 s after the outage; up again at the first success of
    // the slower check after recovery.
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert!(changes[0].1 && changes[0].0 < 1_000, "{changes:?}");
    assert!(
        !changes[1].1 && (62_000..63_000).contains(&changes[1].0),
        "{changes:?}"
    );
    assert!(
        changes[2].1 && (120_000..131_000).contains(&changes[2].0),
        "{changes:?}"
    );
    // With `any`, the VIP goes down only when the slower dns check falls
    // too, about fall x 10 s after the outage.
    let changes = replay(Expr::Any, &[("web", 1), ("dns", 10)], backend);
    assert!(
        !changes[1].1 && (80_000..81_000).contains(&changes[1].0),
        "{changes:?}"
    );
    // A dns-only outage under web || dns changes nothing.
    let changes = replay(Expr::Any, &[("web", 1), ("dns", 10)], |n, t| {
        n == "web" || t < 60_000
    });
    assert_eq!(changes.len(), 1, "{changes:?}");
}

/// Issue 11: checks rebuilt by a reload that changed only their timing keep
/// each check's health and counters (a fresh start would be unhealthy until
/// `rise`); the new rise / fall apply from the next result (counters
/// clamped); the new loop runs at the new interval.
#[test]
fn retimed_checks_keep_health_and_take_the_new_thresholds() {
    let dir = temp_dir("sched-retime");
    let up = dir.join("up");
    std::fs::write(&up, "").unwrap();
    let check = |interval: &str, rise: u32, fall: u32| {
        let mut c = flag_check("a", &up, &dir.join("a.lock"), interval);
        c["rise"] = json!(rise);
        c["fall"] = json!(fall);
        vip(json!({"name": "web", "prefix": "10.0.0.1/32", "checks": [c]}))
    };
    let old = VipChecks::new(&check("300ms", 1, 3)).unwrap();
    let r = smol::block_on(old.checks[0].run_once(false));
    assert!(r.healthy, "{r:?}");

    // Rise 5, fall 1, another interval: still healthy after one more pass
    // (fresh checks would need five), and one failure now makes it unhealthy.
    let new_vip = check("250ms", 5, 1);
    let fresh = VipChecks::new(&new_vip).unwrap();
    let r = smol::block_on(fresh.checks[0].run_once(false));
    assert!(!r.healthy, "a fresh check is unhealthy until rise: {r:?}");
    let new = VipChecks::retimed(&new_vip, &old).unwrap();
    assert_eq!(new.checks[0].interval(), Duration::from_millis(250));
    let r = smol::block_on(new.checks[0].run_once(false));
    assert!(r.healthy, "{r:?}");
    // The kept count (1, rise 1 saturates there) goes on under rise 5.
    assert_eq!((r.consecutive_ok, r.transition), (2, None), "{r:?}");
    std::fs::remove_file(&up).unwrap();
    let r = smol::block_on(new.checks[0].run_once(false));
    assert_eq!(
        (r.healthy, r.consecutive_fail, r.transition),
        (false, 1, Some(Transition::BecameUnhealthy)),
        "{r:?}"
    );
    // The old runner (say, a trigger still in flight) shares the state.
    let r = smol::block_on(old.checks[0].run_once(true));
    assert!(!r.healthy, "{r:?}");
}
