//! The check driver end to end: real loops on smol running exec probes
//! (a script whose result the test flips with a file) feeding their raw
//! results into the engine, which owns the hysteresis and the checks
//! policy; ad-hoc triggers as messages to the loops; plus a virtual-time
//! replay of several checks through Schedule + Hysteresis + Combiner.

mod support;

use pathosd::chan::{Rx, Tx};
use pathosd::check::scheduler::{self, run_check_loop, TriggerSlot};
use pathosd::check::{Combiner, Hysteresis, Schedule};
use pathosd::config::policy_expr::Expr;
use pathosd::config::{Errors, Field, VipSpec as Vip};
use pathosd::daemon::engine::{CheckId, CheckRun, Engine, Input, Output};
use serde_json::json;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};
use support::*;

/// A VIP through the run config's own constructor.
fn vip(v: serde_json::Value) -> Vip {
    let mut errs = Errors::default();
    let v = pathosd::config::Vip::decode(&v, "vip", &mut errs).expect("a VIP");
    assert!(errs.is_empty(), "{:?}", errs.0);
    pathosd::config::run::vip_spec(v).expect("a valid VIP")
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

/// The loops of every check of `v` (ids from `engine`), as the owner
/// spawns them (on the daemon thread, `support::on_rt`): each task, and the
/// slot that asks it for a trigger run (shared with the loop on that
/// thread, so reached there).
fn spawn_loops(
    engine: &Engine,
    v: &Vip,
    tx: &Tx<CheckRun>,
) -> Vec<(OnRt<Rc<TriggerSlot>>, smol::Task<()>)> {
    let ids: Vec<CheckId> = engine
        .vip(&v.name)
        .unwrap()
        .checks
        .iter()
        .map(|c| c.id)
        .collect();
    scheduler::build(v, &ids)
        .unwrap()
        .into_iter()
        .map(|c| {
            let slot = OnRt::new(|| Rc::new(TriggerSlot::default()));
            let tx = tx.clone();
            let task =
                slot.with(move |s| pathosd::rt::spawn(run_check_loop(c, s.clone(), tx.clone())));
            (slot, task)
        })
        .collect()
}

/// The next check result (the loops send them as to the owner).
fn recv(rx: &Rx<CheckRun>) -> CheckRun {
    smol::block_on(async {
        smol::future::or(async { rx.recv().await.ok() }, async {
            async_io::Timer::after(Duration::from_secs(10)).await;
            None
        })
        .await
    })
    .expect("a result within 10 s")
}

fn name_of(e: &Engine, id: CheckId) -> String {
    let (slot, k) = e.check(id).expect("a known check");
    slot.checks[k].name.clone()
}

#[test]
fn loops_feed_the_engine_and_run_triggers() {
    let dir = temp_dir("sched");
    let (fa, fb) = (dir.join("a.up"), dir.join("b.up"));
    std::fs::write(&fa, "").unwrap();
    let v = vip(
        json!({"name": "web", "prefix": "10.0.0.1/32", "checks_policy": "any", "checks": [
            flag_check("a", &fa, &dir.join("a.lock"), "300ms"),
            flag_check("b", &fb, &dir.join("b.lock"), "400ms"),
        ]}),
    );
    let (mut e, _) = Engine::new(&[with_expr(&v, Expr::Any)], Instant::now());
    let (tx, rx) = pathosd::chan::unbounded();
    let loops = spawn_loops(&e, &v, &tx);
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
        assert_eq!(r.trigger, None);
        let name = name_of(&e, r.check);
        firsts.entry(name.clone()).or_insert(start.elapsed());
        let b_failed = name == "b" && !r.result.ok;
        for o in e.handle(Input::Result(r), Instant::now()) {
            match o {
                Output::VipTransition { to, .. } => vip_changes.push(to.as_str()),
                Output::CheckTransitionOnly { check, .. } => panic!("{check} alone crossed"),
                _ => {}
            }
        }
        let slot = e.vip("web").unwrap();
        let a = &slot.checks[0].hysteresis;
        if a.healthy() && a_healthy_at.is_none() {
            // rise 2: the second consecutive success.
            assert_eq!(a.consecutive_ok(), 2);
            a_healthy_at = Some(start.elapsed());
        }
        if name == "b" {
            assert!(b_failed && !slot.checks[1].hysteresis.healthy());
        }
    }
    // The first probes fire at startup (at once; the splay applies from the
    // second run on).
    for (c, t) in &firsts {
        assert!(*t < Duration::from_millis(1000), "{c} first ran at {t:?}");
    }
    assert!(a_healthy_at.unwrap() >= Duration::from_millis(300));
    assert_eq!(vip_changes, ["announced"]);

    // An ad-hoc trigger is a message to each loop: one run each, tagged.
    std::fs::write(&fb, "").unwrap();
    for (t, _) in &loops {
        assert!(t.with(|t| t.request(42)));
    }
    let mut tagged = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while tagged.len() < 2 {
        assert!(Instant::now() < deadline, "trigger runs missing");
        let r = recv(&rx);
        if r.trigger == Some(42) {
            assert!(r.result.ok, "{r:?}");
            tagged.push(name_of(&e, r.check));
        }
        e.handle(Input::Result(r), Instant::now());
    }
    tagged.sort();
    assert_eq!(tagged, ["a", "b"]);

    // Both down: a falls after 2 failures; the VIP follows only when the
    // `any` result changes.
    std::fs::remove_file(&fa).unwrap();
    std::fs::remove_file(&fb).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.vip("web").unwrap().machine.healthy() {
        assert!(Instant::now() < deadline, "VIP never went down");
        let r = recv(&rx);
        assert_ne!(r.result.detail, "exit 9: OVERLAP");
        for o in e.handle(Input::Result(r), Instant::now()) {
            if let Output::VipTransition { to, .. } = o {
                vip_changes.push(to.as_str());
            }
        }
    }
    let slot = e.vip("web").unwrap();
    assert!(slot.checks.iter().all(|c| !c.hysteresis.healthy()));
    assert_eq!(vip_changes.len(), 2, "{vip_changes:?}");
    drop(loops);
}

/// A trigger that arrives while the scheduled probe of the same check runs
/// waits for it: the two runs never overlap (the script holds a lock) and
/// the results come in the order they ran, the scheduled one first, so the
/// engine counts them in that order. The script blocks on FIFOs the test
/// holds, so "while it runs" is an event, not a guess at timing.
#[test]
fn a_trigger_and_a_scheduled_run_of_one_check_are_serialized() {
    let dir = temp_dir("sched-serial");
    let (started, release, lock) = (dir.join("started"), dir.join("release"), dir.join("lock"));
    for f in [&started, &release] {
        let st = std::process::Command::new("mkfifo")
            .arg(f)
            .status()
            .unwrap();
        assert!(st.success(), "mkfifo {}", f.display());
    }
    let script = format!(
        "mkdir {l} 2>/dev/null || {{ echo OVERLAP; exit 9; }}; echo run > {s}; read x < {r}; rmdir {l}",
        l = lock.display(),
        s = started.display(),
        r = release.display()
    );
    let v = vip(json!({"name": "web", "prefix": "10.0.0.1/32", "check": {
        "name": "x", "type": "exec", "interval": "5s", "timeout": "3s", "rise": 2, "fall": 2,
        "exec": {"command": "/bin/sh", "args": ["-c", script]}}}));
    let (mut e, _) = Engine::new(&[with_expr(&v, Expr::All)], Instant::now());
    let (tx, rx) = pathosd::chan::unbounded();
    let loops = spawn_loops(&e, &v, &tx);

    // Blocking FIFO opens, off the test thread, each bounded by a timeout.
    let fifo = |path: std::path::PathBuf, write: bool| {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = if write {
                std::fs::write(
                    &path, "go
",
                )
            } else {
                std::fs::read_to_string(&path).map(|_| ())
            };
            let _ = done_tx.send(r.is_ok());
        });
        assert_eq!(
            done_rx.recv_timeout(Duration::from_secs(10)),
            Ok(true),
            "fifo {write}"
        );
    };
    // The scheduled first run is inside the probe now.
    fifo(started.clone(), false);
    assert!(loops[0].0.with(|t| t.request(7)));
    assert!(
        !loops[0].0.with(|t| t.request(8)),
        "one request waits at a time"
    );
    // Asking again for the run that waits (a reload asks a VIP's loops
    // again) is granted, and it still runs once.
    assert!(loops[0].0.with(|t| t.request(7)));
    fifo(release.clone(), true);
    // The triggered run starts only after the scheduled one ended.
    fifo(started.clone(), false);
    fifo(release.clone(), true);
    let first = recv(&rx);
    let second = recv(&rx);
    assert_eq!((first.trigger, first.result.ok), (None, true), "{first:?}");
    assert_eq!(
        (second.trigger, second.result.ok),
        (Some(7), true),
        "{second:?}"
    );
    e.handle(Input::Result(first), Instant::now());
    let h = &e.vip("web").unwrap().checks[0].hysteresis;
    assert_eq!((h.consecutive_ok(), h.healthy()), (1, false));
    e.handle(Input::Result(second), Instant::now());
    let h = &e.vip("web").unwrap().checks[0].hysteresis;
    assert_eq!((h.consecutive_ok(), h.healthy()), (2, true));
    drop(loops);
}

#[test]
fn always_vip_has_no_checks_and_bad_checks_name_the_check() {
    let v = vip(json!({"name": "static", "prefix": "10.0.0.0/24", "always": true}));
    assert!(scheduler::build(&v, &[]).unwrap().is_empty());
    // A probe that cannot be built (validation rejects this one; what
    // reaches the scheduler is e.g. an unreadable CA file) names the check.
    let v = vip(json!({"name": "web", "prefix": "10.0.0.1/32",
                       "check": {"type": "ping", "ping": {"src_ip": "::1"}}}));
    assert_eq!(
        scheduler::build(&v, &[CheckId(0)]).unwrap_err(),
        "vip web check ping: src_ip and dst_ip are of different families"
    );
}

/// Virtual-time replay (1 ms steps, each probe taking 5 ms) of checks with
/// the given intervals in seconds, rise 1 and fall 3, combined by `expr`;
/// `up(check, t_ms)` is the probe outcome. Returns the VIP changes as
/// (time in ms, healthy).
fn replay(expr: Expr, checks: &[(&str, u64)], up: impl Fn(&str, u64) -> bool) -> Vec<(u64, bool)> {
    replay_runs(expr, checks, None, up).0
}

/// [`replay`] with every check's `fast_interval` (ms) if given; also
/// returns the time of each probe, of every check.
fn replay_runs(
    expr: Expr,
    checks: &[(&str, u64)],
    fast_ms: Option<u64>,
    up: impl Fn(&str, u64) -> bool,
) -> (Vec<(u64, bool)>, Vec<u64>) {
    let names: Vec<String> = checks.iter().map(|(n, _)| n.to_string()).collect();
    let mut state: Vec<(Schedule, Hysteresis)> = checks
        .iter()
        .map(|(n, i)| {
            let s = Schedule::new(&format!("v/{n}"), Duration::from_secs(*i));
            let s = match fast_ms {
                Some(f) => s.with_fast(Duration::from_millis(f), 1, 3),
                None => s,
            };
            (s, Hysteresis::new(1, 3))
        })
        .collect();
    let mut comb = Combiner::new(expr, names.clone());
    let mut out = Vec::new();
    let mut runs = Vec::new();
    for now_ms in 0..200_000u64 {
        let now = Duration::from_millis(now_ms);
        for (i, (s, h)) in state.iter_mut().enumerate() {
            if s.due() == now {
                runs.push(now_ms);
                let ok = up(&names[i], now_ms);
                h.observe(ok);
                if let Some(c) = comb.update(&names[i], h.healthy()) {
                    out.push((now_ms, c));
                }
                s.advance(now + Duration::from_millis(5), ok);
            }
        }
    }
    (out, runs)
}

/// A 10 s check with a fast_interval of 1 s and fall 3 (as ExaBGP's
/// --fast-interval): the backend dies at t = 60 s. The first failure is
/// seen at the first tick after that; the next two probes follow 1 s
/// apart and the third failure withdraws 2 s after the first, not 20 s;
/// then the check is back at 10 s. Recovery (rise 1) is one probe, at the
/// first 10 s tick after t = 120 s; a single failed probe (t = 150 s, fall
/// not reached) brings two fast probes, the second back to health, then
/// the 10 s grid again.
#[test]
fn fast_interval_replay() {
    let backend =
        |_: &str, t: u64| !(60_000..120_000).contains(&t) && !(150_000..151_000).contains(&t);
    let (slow, slow_runs) = replay_runs(Expr::All, &[("web", 10)], None, backend);
    let (fast, runs) = replay_runs(Expr::All, &[("web", 10)], Some(1000), backend);
    let splay = scheduler::splay("v/web", Duration::from_secs(10)).as_millis() as u64;
    let tick = |k: u64| splay + k * 10_000;
    // The first failure at the first tick at or after 60 s.
    let first = tick(6);
    assert_eq!(slow[1], (first + 20_000, false), "{slow:?}");
    assert_eq!(fast[1], (first + 2_000, false), "{fast:?}");
    assert_eq!(fast[2], (tick(12), true), "{fast:?}");
    assert_eq!(fast.len(), 3, "{fast:?}");
    // The probes: on the 10 s grid, two fast ones after each first
    // failure, then the grid again.
    let mut expected = vec![0];
    for k in 1..=19 {
        expected.push(tick(k));
        if k == 6 || k == 15 {
            expected.push(tick(k) + 1_000);
            if k == 6 {
                expected.push(tick(k) + 2_000);
            }
        }
    }
    assert_eq!(runs, expected);
    // Without it, the grid only.
    assert_eq!(slow_runs.len(), 20, "{slow_runs:?}");
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

/// The first probe of every check runs at start; the splay only
/// spreads the later runs. A check whose splay is near its 1 s bound
/// reports well before that splay (the old loops waited for it first: a
/// rise-1 check took 309 ms from start to route).
#[test]
fn the_first_probe_runs_at_start_not_after_the_splay() {
    let interval = Duration::from_secs(60);
    // A check name whose splay is at least 800 ms (splay is deterministic).
    let key = |n: &str| format!("first/{n}");
    let name = (0..1000)
        .map(|i| format!("c{i}"))
        .find(|n| scheduler::splay(&key(n), interval) >= Duration::from_millis(800))
        .expect("a name with a long splay");
    let splay = scheduler::splay(&key(&name), interval);
    let v = vip(json!({"name": "first", "prefix": "10.0.0.2/32", "check": {
        "name": name, "type": "exec", "interval": "60s", "timeout": "2s",
        "exec": {"command": "/bin/true"}}}));
    let (e, _) = Engine::new(&[with_expr(&v, Expr::All)], Instant::now());
    let (tx, rx) = pathosd::chan::unbounded();
    let start = Instant::now();
    let _loops = spawn_loops(&e, &v, &tx);
    let r = recv(&rx);
    let at = start.elapsed();
    assert!(r.result.ok, "{:?}", r.result);
    assert!(
        at < splay,
        "first result after {at:?}: the loop waited for its splay ({splay:?})"
    );
}

/// `v` as validation leaves it: carrying its compiled checks_policy.
fn with_expr(v: &Vip, e: Expr) -> Vip {
    let mut v = v.clone();
    v.checks_expr = e;
    v
}
