//! Replays of check reports, drain changes and ticks through the engine.

use super::*;
use crate::config::policy_expr::Expr;
use crate::config::{FailAction, Field, ProbeSpec};
use crate::daemon::reload::VipChange;
use serde_json::json;

/// A VIP through the run config's own constructor (from its decoded form).
fn vip(v: serde_json::Value) -> Vip {
    let mut errs = crate::config::Errors::default();
    let raw = crate::config::Vip::decode(&v, "vip", &mut errs).unwrap();
    assert!(errs.is_empty(), "{errs:?}");
    crate::config::run::vip_spec(raw).unwrap()
}

/// Sets the port of `vip`'s tcp check `i` (the check identity).
fn set_tcp_port(vip: &mut Vip, i: usize, port: u16) {
    match &mut vip.checks[i].probe {
        ProbeSpec::Tcp { options, target } => {
            options.port = port;
            target.port = port;
        }
        p => panic!("not tcp: {p:?}"),
    }
}

fn two_checks(action: &str) -> Vip {
    vip(json!({
        "name": "web", "prefix": "10.0.0.1/32",
        "checks": [
            {"name": "a", "type": "tcp", "rise": 2, "fall": 2, "tcp": {"port": 1}},
            {"name": "b", "type": "tcp", "rise": 1, "fall": 1, "interval": "10s", "tcp": {"port": 2}}
        ],
        "policy": {"fail_action": action, "lower_priority": {"communities": ["65001:666"]}}
    }))
}

/// A raw probe result of `check` of `vip` as its loop sends it, tagged
/// with the id the engine gave the check: the engine applies hysteresis.
fn res(e: &Engine, vip: &str, check: &str, ok: bool) -> Input {
    Input::Result(run(e, vip, check, ok, None))
}

fn run(e: &Engine, vip: &str, check: &str, ok: bool, trigger: Option<u64>) -> CheckRun {
    let slot = e.vip(vip).expect("known VIP");
    let c = slot
        .checks
        .iter()
        .find(|c| c.name == check)
        .expect("known check");
    CheckRun {
        check: c.id,
        result: if ok {
            CheckResult::pass("ok")
        } else {
            CheckResult::fail("connect refused")
        },
        trigger,
    }
}

fn t0() -> Instant {
    static T: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *T.get_or_init(Instant::now)
}

fn at(ms: u64) -> Instant {
    t0() + Duration::from_millis(ms)
}

/// The VIPs as validation leaves them: each carries its compiled policy.
fn configs(vips: &[(Vip, Expr)]) -> Vec<Vip> {
    vips.iter()
        .map(|(v, e)| {
            let mut v = v.clone();
            v.checks_expr = e.clone();
            v
        })
        .collect()
}

/// Engine::new, remembering the config for [`reload`].
fn new_engine(vips: &[(Vip, Expr)], now: Instant) -> (Engine, Vec<Output>) {
    let vips = configs(vips);
    Engine::new(&*vips, now)
}

/// Reloads `e` with `vips` as the daemon plans it: the engine's slots are
/// the old side of the diff.
fn reload(e: &mut Engine, vips: &[(Vip, Expr)], now: Instant) -> Vec<Output> {
    let new = configs(vips);
    let plan = crate::daemon::reload::ReloadPlan {
        vips: e.diff(&new),
        ..Default::default()
    };
    e.reload(new, &plan, now)
}

fn states(out: &[Output]) -> Vec<String> {
    out.iter()
        .map(|o| match o {
            Output::VipTransition { to, reason, .. } => format!("{} ({reason})", to.as_str()),
            Output::Route { prefix, intent } => match intent {
                Some(i) => format!("route {prefix} prepend {}", i.as_path_prepend),
                None => format!("route {prefix} withdraw"),
            },
            Output::CheckTransitionOnly { check, reason, .. } => format!("check {check}: {reason}"),
            Output::LocalAddressMissing { check, detail, .. } => {
                format!("check {check}: local address missing: {detail}")
            }
            Output::InitialDone => "initial done".into(),
        })
        .collect()
}

#[test]
fn all_policy_announces_after_the_slowest_rise_and_withdraws_on_fall() {
    let v = two_checks("withdraw");
    let (mut e, out) = new_engine(&[(v.clone(), Expr::All)], t0());
    assert!(out.is_empty());
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", true), at(0))),
        Vec::<String>::new()
    );
    // b healthy after one result, but a needs two: the VIP stays withdrawn.
    assert_eq!(
        states(&e.handle(res(&e, "web", "b", true), at(10))),
        ["check b: rise threshold reached"]
    );
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", true), at(1000))),
        [
            "announced (a: rise threshold reached)",
            "route 10.0.0.1/32 prepend 0",
            "initial done"
        ]
    );
    // One failure of a: counters only.
    assert!(e.handle(res(&e, "web", "a", false), at(2000)).is_empty());
    assert_eq!(
        e.vip("web").unwrap().checks[0]
            .hysteresis
            .consecutive_fail(),
        1
    );
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", false), at(3000))),
        [
            "withdrawn (a: fall threshold reached)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
}

#[test]
fn check_transition_without_vip_health_change_causes_no_route_output() {
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::Any)], t0());
    // An announced VIP has had its first evaluation.
    assert_eq!(
        states(&e.handle(res(&e, "web", "b", true), at(0))),
        [
            "announced (b: rise threshold reached)",
            "route 10.0.0.1/32 prepend 0",
            "initial done"
        ]
    );
    e.handle(res(&e, "web", "a", true), at(1));
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", true), at(2))),
        ["check a: rise threshold reached"]
    );
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", false), at(3)))
            .into_iter()
            .chain(states(&e.handle(res(&e, "web", "a", false), at(4))))
            .collect::<Vec<_>>(),
        ["check a: fall threshold reached"]
    );
}

#[test]
fn lower_priority_and_drain_file_pessimize_in_place() {
    let v = two_checks("lower_priority");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::Name("b".into()))], t0());
    e.handle(res(&e, "web", "b", true), at(0));
    let out = e.handle(
        Input::DrainFile {
            vip: "web".into(),
            present: true,
        },
        at(5),
    );
    assert_eq!(
        states(&out),
        [
            "pessimized (lower_priority_file created)",
            "route 10.0.0.1/32 prepend 6"
        ]
    );
    match &out[1] {
        Output::Route {
            intent: Some(i), ..
        } => assert_eq!(i.communities.len(), 1),
        o => panic!("{o:?}"),
    }
    // Failing while pessimized: still pessimized, no route change.
    assert!(states(&e.handle(res(&e, "web", "b", false), at(6)))
        .iter()
        .all(|s| !s.starts_with("route")));
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
}

#[test]
fn initial_done_is_bounded_by_the_slowest_rise_even_without_reports() {
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::All)], t0());
    // b: 10s × rise 1 + 100ms timeout + 1s slack.
    assert_eq!(e.next_deadline(), Some(at(11_100)));
    assert!(e.handle(Input::Tick, at(11_099)).is_empty());
    assert_eq!(states(&e.handle(Input::Tick, at(11_100))), ["initial done"]);
    assert_eq!(e.next_deadline(), None);
}

#[test]
fn failing_vip_completes_its_first_evaluation_after_rise_results() {
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::All)], t0());
    e.handle(res(&e, "web", "a", false), at(0));
    e.handle(res(&e, "web", "b", false), at(1));
    assert!(!e.initial_done());
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", false), at(1000))),
        ["initial done"]
    );
}

#[test]
fn always_vips_announce_at_start() {
    let v = vip(json!({"name": "node", "prefix": "10.9.0.0/24", "always": true}));
    let (e, out) = new_engine(&[(v, Expr::All)], t0());
    assert_eq!(
        states(&out),
        ["route 10.9.0.0/24 prepend 0", "initial done"]
    );
    assert_eq!(e.vip("node").unwrap().machine.state(), VipState::Announced);
    let _ = FailAction::Withdraw;
}

#[test]
fn reload_keeps_unchanged_vips_and_withdraws_changed_and_removed_ones() {
    let web = two_checks("withdraw");
    let mut other = web.clone();
    other.name = "other".into();
    other.prefix = "10.0.0.2/32".parse().unwrap();
    let (mut e, _) = new_engine(
        &[(web.clone(), Expr::Any), (other.clone(), Expr::Any)],
        t0(),
    );
    e.handle(res(&e, "web", "b", true), at(0));
    e.handle(res(&e, "other", "b", true), at(1));
    assert_eq!(e.vip("other").unwrap().machine.state(), VipState::Announced);
    // Same config: nothing happens, state and counters stay.
    let out = reload(
        &mut e,
        &[(web.clone(), Expr::Any), (other.clone(), Expr::Any)],
        at(2),
    );
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);
    assert_eq!(e.vip("web").unwrap().checks[1].runs, 1);
    // web's check identity changed (a port), other removed, a new always
    // VIP added.
    let mut web2 = web.clone();
    set_tcp_port(&mut web2, 1, 3);
    let node = vip(json!({"name": "node", "prefix": "10.9.0.0/24", "always": true}));
    let out = reload(&mut e, &[(web2, Expr::Any), (node, Expr::All)], at(3));
    assert_eq!(
        states(&out),
        [
            "withdrawn (config changed)",
            "route 10.0.0.1/32 withdraw",
            "withdrawn (removed from config)",
            "route 10.0.0.2/32 withdraw",
            "route 10.9.0.0/24 prepend 0"
        ]
    );
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Withdrawn);
    assert!(e.vip("other").is_none());
}

/// A VIP whose check identity did not change keeps its state through a
/// reload: timing alone sends nothing, new attributes re-announce the same
/// state, a new fail_action decides at once, a drain file dropped from the
/// config no longer drains.
#[test]
fn reload_keeps_the_state_of_a_vip_whose_checks_are_the_same() {
    let web = two_checks("lower_priority");
    let (mut e, _) = new_engine(&[(web.clone(), Expr::Name("b".into()))], t0());
    e.handle(res(&e, "web", "b", true), at(0));
    let flaps = e.vip("web").unwrap().machine.flaps();
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);

    // Interval, timeout, rise and fall: no output, state and counters kept.
    let mut v = web.clone();
    for c in &mut v.checks {
        c.interval = Duration::from_secs(20);
        c.timeout = Duration::from_secs(2);
        c.rise = 5;
        c.fall = 4;
    }
    let out = reload(&mut e, &[(v.clone(), Expr::Name("b".into()))], at(10));
    assert!(out.is_empty(), "{out:?}");
    let slot = e.vip("web").unwrap();
    assert_eq!(slot.machine.state(), VipState::Announced);
    assert_eq!(slot.checks[1].runs, 1);
    let h = &slot.checks[1].hysteresis;
    assert_eq!((h.healthy(), h.rise(), h.fall()), (true, 5, 4));

    // New communities and prepends: the same state, re-announced with them.
    v.policy.announce.as_path_prepend = 3;
    v.policy.announce.communities = vec![crate::bgp::types::Community(65001, 9)];
    let out = reload(&mut e, &[(v.clone(), Expr::Name("b".into()))], at(20));
    assert_eq!(states(&out), ["route 10.0.0.1/32 prepend 3"]);
    match &out[0] {
        Output::Route {
            intent: Some(i), ..
        } => assert_eq!(i.communities, v.policy.announce.communities),
        o => panic!("{o:?}"),
    }
    assert_eq!(e.vip("web").unwrap().machine.flaps(), flaps);

    // Drain file in the config, present: pessimized. Dropped from the
    // config: announced again, in the same reload.
    v.policy.lower_priority_file = Some("/nonexistent".into());
    assert!(reload(&mut e, &[(v.clone(), Expr::Name("b".into()))], at(30)).is_empty());
    e.handle(
        Input::DrainFile {
            vip: "web".into(),
            present: true,
        },
        at(31),
    );
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
    v.policy.lower_priority_file = None;
    let out = reload(&mut e, &[(v.clone(), Expr::Name("b".into()))], at(32));
    assert_eq!(
        states(&out),
        [
            "announced (lower_priority_file removed)",
            "route 10.0.0.1/32 prepend 3"
        ]
    );

    // Unhealthy under lower_priority: pessimized. fail_action becomes
    // withdraw: withdrawn by the reload itself.
    // b's fall is 4 since the first reload.
    for ms in 36..40 {
        e.handle(res(&e, "web", "b", false), at(ms));
    }
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
    v.policy.fail_action = FailAction::Withdraw;
    let out = reload(&mut e, &[(v.clone(), Expr::Name("b".into()))], at(41));
    assert_eq!(
        states(&out),
        [
            "withdrawn (policy changed by reload)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
}

/// Each check's rise and fall are counted by the engine itself, one check
/// independent of the other: the counters /status shows move with each raw
/// result and the crossings come out as transitions.
#[test]
fn rise_and_fall_cross_per_check_inside_the_engine() {
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::All)], t0());
    let counters = |e: &Engine| -> Vec<(bool, u32, u32)> {
        e.vip("web")
            .unwrap()
            .checks
            .iter()
            .map(|c| {
                let h = &c.hysteresis;
                (h.healthy(), h.consecutive_ok(), h.consecutive_fail())
            })
            .collect()
    };
    assert_eq!(counters(&e), [(false, 0, 0), (false, 0, 0)]);
    // a: rise 2. One success is not enough.
    assert!(e.handle(res(&e, "web", "a", true), at(0)).is_empty());
    assert_eq!(counters(&e), [(false, 1, 0), (false, 0, 0)]);
    // A failure resets the success count.
    assert!(e.handle(res(&e, "web", "a", false), at(1)).is_empty());
    assert_eq!(counters(&e), [(false, 0, 1), (false, 0, 0)]);
    // b: rise 1 crosses on its first success; a is untouched.
    // Both checks have had `rise` results: the first evaluation is done.
    assert_eq!(
        states(&e.handle(res(&e, "web", "b", true), at(2))),
        ["check b: rise threshold reached", "initial done"]
    );
    assert_eq!(counters(&e), [(false, 0, 1), (true, 1, 0)]);
    e.handle(res(&e, "web", "a", true), at(3));
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", true), at(4))),
        [
            "announced (a: rise threshold reached)",
            "route 10.0.0.1/32 prepend 0"
        ]
    );
    assert_eq!(counters(&e), [(true, 2, 0), (true, 1, 0)]);
    // b: fall 1, a: fall 2.
    assert_eq!(
        states(&e.handle(res(&e, "web", "b", false), at(5))),
        [
            "withdrawn (b: fall threshold reached)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
    assert!(states(&e.handle(res(&e, "web", "a", false), at(6))).is_empty());
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", false), at(7))),
        ["check a: fall threshold reached"]
    );
    assert_eq!(counters(&e), [(false, 0, 2), (false, 0, 1)]);
    let a = &e.vip("web").unwrap().checks[0];
    assert_eq!((a.runs, a.total_ok, a.total_fail), (6, 3, 3));
}

/// A reload that changes only rise and fall keeps each check's slot, id,
/// health and counters inside the engine; the counters clamp to the new
/// thresholds and the next result decides with them.
#[test]
fn reload_retunes_the_hysteresis_keeping_clamped_counters() {
    let v = vip(json!({
        "name": "web", "prefix": "10.0.0.1/32",
        "checks": [
            {"name": "a", "type": "tcp", "rise": 3, "fall": 3, "tcp": {"port": 1}},
            {"name": "b", "type": "tcp", "rise": 1, "fall": 3, "tcp": {"port": 2}}
        ],
        "checks_policy": "b", "policy": {"fail_action": "withdraw"}
    }));
    let (mut e, _) = new_engine(&[(v.clone(), Expr::Name("b".into()))], t0());
    let ids: Vec<CheckId> = e.vip("web").unwrap().checks.iter().map(|c| c.id).collect();
    // a: two successes of three; b: healthy, then two failures of three.
    e.handle(res(&e, "web", "a", true), at(0));
    e.handle(res(&e, "web", "a", true), at(1));
    e.handle(res(&e, "web", "b", true), at(2));
    e.handle(res(&e, "web", "b", false), at(3));
    e.handle(res(&e, "web", "b", false), at(4));
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);

    // a: rise 2 (its 2 successes are kept); b: fall 1 (its 2 failures
    // clamp to 1, and b stays healthy until its next result).
    let mut v2 = v.clone();
    v2.checks[0].rise = 2;
    v2.checks[1].fall = 1;
    let out = reload(&mut e, &[(v2.clone(), Expr::Name("b".into()))], at(10));
    assert!(out.is_empty(), "{out:?}");
    let slot = e.vip("web").unwrap();
    let ids2: Vec<CheckId> = slot.checks.iter().map(|c| c.id).collect();
    assert_eq!(ids2, ids, "the same checks keep their ids");
    let h: Vec<_> = slot.checks.iter().map(|c| c.hysteresis.clone()).collect();
    assert_eq!(
        (h[0].healthy(), h[0].consecutive_ok(), h[0].rise()),
        (false, 2, 2)
    );
    assert_eq!(
        (h[1].healthy(), h[1].consecutive_fail(), h[1].fall()),
        (true, 1, 1)
    );
    // b's next failure crosses fall 1 at once: the VIP goes.
    assert_eq!(
        states(&e.handle(res(&e, "web", "b", false), at(11))),
        [
            "withdrawn (b: fall threshold reached)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
    // a, unhealthy with its 2 kept successes under rise 2: a reload never
    // flips health by itself, the next success crosses.
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", true), at(12))),
        ["check a: rise threshold reached"]
    );
    // A check whose identity changed gets a new id: its old loop's last
    // result, still on the way, is ignored.
    let mut v3 = v2.clone();
    set_tcp_port(&mut v3, 0, 9);
    reload(&mut e, &[(v3, Expr::Name("b".into()))], at(20));
    assert!(e.check(ids[0]).is_none());
    let stale = CheckRun {
        check: ids[0],
        result: CheckResult::pass("late"),
        trigger: None,
    };
    assert!(e.handle(Input::Result(stale), at(21)).is_empty());
    assert!(e.vip("web").unwrap().checks.iter().all(|c| c.runs == 0));
}

/// A trigger run completes when the engine has seen a tagged result of
/// each check it asked for: the owner feeds every result to the engine,
/// then the tagged ones to `daemon::triggers`. Scheduled results of the
/// same checks in between go through the same hysteresis, in order, and do
/// not count for the trigger.
#[test]
fn a_trigger_completes_on_the_tagged_results_the_engine_has_seen() {
    use crate::daemon::triggers::{Admit, Triggers};
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::All)], t0());
    let ids: Vec<CheckId> = e.vip("web").unwrap().checks.iter().map(|c| c.id).collect();
    let mut t: Triggers<&str> = Triggers::default();
    assert_eq!(t.admit("web", None, &ids, "caller", at(0)), Admit::Start(1));
    let mut done = None;
    let steps = [
        ("a", true, None),    // scheduled
        ("b", true, Some(1)), // b's trigger run
        ("a", true, None),    // scheduled, before a's trigger run
        ("a", false, Some(1)),
    ];
    for (n, (check, ok, trigger)) in steps.into_iter().enumerate() {
        assert!(done.is_none(), "complete before step {n}");
        let r = run(&e, "web", check, ok, trigger);
        let tagged = r.trigger.map(|id| (id, r.check, r.result.clone()));
        let (slot, k) = e.check(r.check).unwrap();
        let name = slot.checks[k].name.clone();
        e.handle(Input::Result(r), at(10 + n as u64));
        if let Some((id, c, result)) = tagged {
            done = t.record("web", id, c, (k, &name), result);
        }
    }
    let done = done.expect("complete after both tagged results");
    assert_eq!(done.waiters, ["caller"]);
    let got: Vec<(&str, bool)> = done
        .results
        .iter()
        .map(|(c, r)| (c.as_str(), r.ok))
        .collect();
    assert_eq!(got, [("a", false), ("b", true)]);
    // a saw pass, pass, fail in that order: healthy (rise 2), then one
    // failure of fall 2.
    let a = &e.vip("web").unwrap().checks[0].hysteresis;
    assert_eq!((a.healthy(), a.consecutive_fail()), (true, 1));
}

/// The last result is kept compactly and comes back whole for /status.
#[test]
fn the_last_result_keeps_every_detail() {
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::All)], t0());
    let mut r = run(&e, "web", "a", true, None);
    r.result = r
        .result
        .with("address", "127.0.0.1:1")
        .with("local_address_assigned", true);
    r.result.duration = Duration::from_millis(3);
    let want = r.result.clone();
    e.handle(Input::Result(r), at(0));
    let last = e.vip("web").unwrap().checks[0].last.clone().unwrap();
    assert_eq!(last.get("local_address_assigned"), Some(&json!(true)));
    assert_eq!(last.get("nope"), None);
    assert_eq!(last.to_result(), want);
}

/// The require_local_address warning, an engine output now: a guarded
/// failure warns while the check is healthy or has not reported yet, so
/// one loss gives one warning until the check falls, not one per probe.
#[test]
fn a_missing_local_address_warns_until_the_check_falls() {
    let v = two_checks("withdraw");
    let (mut e, _) = new_engine(&[(v.clone(), Expr::All)], t0());
    let guarded = |e: &Engine, ok: bool| {
        let mut r = run(e, "web", "a", ok, None);
        if ok {
            r.result = r.result.with("local_address_assigned", true);
        } else {
            r.result =
                CheckResult::fail("VIP address 10.0.0.1 is not configured on a local interface")
                    .with("local_address_assigned", false);
        }
        Input::Result(r)
    };
    let warn = "check a: local address missing: VIP address 10.0.0.1 is not configured on a local interface";
    // First result: not reported yet.
    assert_eq!(states(&e.handle(guarded(&e, false), at(0))), [warn]);
    // Unhealthy and reported: no more warnings.
    assert!(e.handle(guarded(&e, false), at(1)).is_empty());
    // Healthy (rise 2), then the address goes: a warning per failure until
    // fall (2) is reached.
    e.handle(guarded(&e, true), at(2));
    e.handle(guarded(&e, true), at(3));
    assert!(e.vip("web").unwrap().checks[0].hysteresis.healthy());
    assert_eq!(states(&e.handle(guarded(&e, false), at(4))), [warn]);
    let out = states(&e.handle(guarded(&e, false), at(5)));
    assert_eq!(out[0], warn);
    assert!(e.handle(guarded(&e, false), at(6)).is_empty());
    // An ordinary failure (no guard detail) never warns.
    assert!(e.handle(res(&e, "web", "a", false), at(7)).is_empty());
}

/// 10,000 `always` VIPs: a slot holds no combiner for a VIP
/// without checks and shares its route intents with every VIP of the same
/// policy (the slot was 400 bytes: a Combiner and two RouteIntents inline).
#[test]
fn always_vips_share_their_intents_and_have_no_combiner() {
    assert!(
        std::mem::size_of::<VipSlot>() <= 128,
        "VipSlot is {} bytes",
        std::mem::size_of::<VipSlot>()
    );
    let a = vip(json!({"name": "a", "prefix": "10.0.0.1/32", "always": true}));
    let b = vip(json!({"name": "b", "prefix": "10.0.0.2/32", "always": true}));
    let (e, out) = new_engine(&[(a, Expr::All), (b, Expr::All)], t0());
    assert_eq!(
        states(&out),
        [
            "route 10.0.0.1/32 prepend 0",
            "route 10.0.0.2/32 prepend 0",
            "initial done"
        ]
    );
    let (sa, sb) = (e.vip("a").unwrap(), e.vip("b").unwrap());
    assert!(sa.combiner().is_none() && sb.combiner().is_none());
    // The fixed reason is borrowed, not a String per VIP.
    assert_eq!(
        sa.machine.last_transition().map(|(_, r)| r),
        Some("always announced")
    );
    assert!(sa.machine.last_reason_is_fixed());
    assert!(std::sync::Arc::ptr_eq(
        &sa.machine.policy().healthy_intent,
        &sb.machine.policy().healthy_intent
    ));
    // So is the whole policy: one for both.
    assert!(std::ptr::eq(sa.machine.policy(), sb.machine.policy()));
    // The slot's name is the config's, not a copy.
    let vips = [vip(
        json!({"name": "c", "prefix": "10.0.0.3/32", "always": true}),
    )];
    let (e, _) = Engine::new(&vips, t0());
    assert!(std::sync::Arc::ptr_eq(
        &e.vip("c").unwrap().name,
        &vips[0].name
    ));
    // A checked VIP has its combiner.
    let (e, _) = new_engine(&[(two_checks("withdraw"), Expr::All)], t0());
    assert!(e.vip("web").unwrap().combiner().is_some());
}

/// The engine keeps the VIPs' configs, the old side of reload's
/// diff, and nothing of a plain VIP (`always`, every other field at its
/// default), which it rebuilds equal from its slot's name and prefix.
#[test]
fn the_engine_keeps_the_configs_and_nothing_of_a_plain_vip() {
    let plain = vip(json!({"name": "p", "prefix": "10.0.0.1/32", "always": true}));
    let with_policy = vip(json!({
        "name": "q", "prefix": "10.0.0.2/32", "always": true,
        "policy": {"announce": {"communities": ["65001:7"]}}
    }));
    let checked = two_checks("withdraw");
    let vips = [
        (plain.clone(), Expr::All),
        (with_policy.clone(), Expr::All),
        (checked.clone(), Expr::All),
    ];
    let (e, _) = new_engine(&vips, t0());
    assert!(e.vip("p").unwrap().full_config().is_none());
    assert_eq!(*e.vip("p").unwrap().config(), plain);
    assert_eq!(e.vip("q").unwrap().full_config(), Some(&with_policy));
    assert_eq!(*e.vip("q").unwrap().config(), with_policy);
    assert_eq!(*e.vip("web").unwrap().config(), configs(&vips)[2]);
    // An unchanged config diffs as unchanged against the engine.
    assert!(e
        .diff(&configs(&vips))
        .iter()
        .all(|(_, c)| *c == VipChange::Unchanged));
}

/// Reload's diff against the engine's slots: a VIP whose check identity did
/// not change keeps its state (a plain VIP that takes a policy too); one
/// whose identity changed restarts withdrawn; and after the reload the
/// engine's configs are the new ones.
#[test]
fn reload_diffs_against_the_engine() {
    let a = vip(json!({"name": "a", "prefix": "10.0.0.1/32", "always": true}));
    let b = vip(json!({"name": "b", "prefix": "10.0.0.2/32", "always": true}));
    let gone = vip(json!({"name": "gone", "prefix": "10.0.0.3/32", "always": true}));
    let web = two_checks("withdraw");
    let (mut e, _) = new_engine(
        &[
            (a.clone(), Expr::All),
            (b.clone(), Expr::All),
            (gone, Expr::All),
            (web.clone(), Expr::All),
        ],
        t0(),
    );
    // web's checks come up: announced.
    for t in 1..=2 {
        for c in ["a", "b"] {
            e.handle(res(&e, "web", c, true), at(t));
        }
    }
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);
    let mut a2 = a.clone();
    a2.policy.announce.as_path_prepend = 2;
    let mut b2 = b.clone();
    b2.prefix = "10.0.0.9/32".parse().unwrap();
    let mut web_timing = web.clone();
    web_timing.checks[0].interval = Duration::from_secs(5);
    let new = [
        (a2.clone(), Expr::All),
        (b2.clone(), Expr::All),
        (web_timing.clone(), Expr::All),
    ];
    let plan = e.diff(&configs(&new));
    assert_eq!(
        plan,
        [
            (
                "a".to_string(),
                VipChange::Kept {
                    attributes: true,
                    timing: false
                }
            ),
            ("b".to_string(), VipChange::Restarted("prefix")),
            (
                "web".to_string(),
                VipChange::Kept {
                    attributes: false,
                    timing: true
                }
            ),
            ("gone".to_string(), VipChange::Removed),
        ]
    );
    let out = reload(&mut e, &new, at(3));
    assert_eq!(
        states(&out),
        [
            "withdrawn (config changed)",
            "route 10.0.0.2/32 withdraw",
            "withdrawn (removed from config)",
            "route 10.0.0.3/32 withdraw",
            "route 10.0.0.1/32 prepend 2",
            "route 10.0.0.9/32 prepend 0",
        ]
    );
    // The kept ones kept their state; the restarted `always` one is
    // announced anew at its new prefix.
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);
    assert_eq!(e.vip("a").unwrap().machine.state(), VipState::Announced);
    assert!(e.vip("gone").is_none());
    // The engine now holds the new configs: a's is no longer plain.
    assert_eq!(e.vip("a").unwrap().full_config(), Some(&a2));
    assert_eq!(*e.vip("b").unwrap().config(), b2);
    assert!(e
        .diff(&configs(&new))
        .iter()
        .all(|(_, c)| *c == VipChange::Unchanged));
    // A check whose identity changes restarts its VIP, withdrawn.
    let mut web_port = web_timing.clone();
    web_port.checks[1].name = "c".into();
    let new2 = [(a2, Expr::All), (b2, Expr::All), (web_port, Expr::All)];
    assert_eq!(
        e.diff(&configs(&new2))[2],
        ("web".to_string(), VipChange::Restarted("checks"))
    );
    reload(&mut e, &new2, at(4));
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Withdrawn);
}

/// A reload of 10,000 VIPs finds each kept slot through the name
/// index (it was a linear search and a `Vec::remove` each, O(n²)). Every
/// kept VIP keeps its state and counters, whatever the new order; changed
/// and removed ones are withdrawn, new ones announced, in the same order as
/// before.
#[test]
fn a_reload_of_10000_vips_keeps_every_state() {
    const N: u32 = 10_000;
    let plain = |i: u32, prepend: u8| {
        let mut v = vip(json!({
            "name": format!("v{i:05}"),
            "prefix": format!("10.{}.{}.0/24", i / 256, i % 256),
            "always": true
        }));
        v.policy.announce.as_path_prepend = prepend;
        (v, Expr::All)
    };
    // One checked VIP among them, brought up by its checks.
    let mut web = two_checks("withdraw");
    web.name = "web".into();
    let mut first: Vec<(Vip, Expr)> = (0..N).map(|i| plain(i, 0)).collect();
    first.insert(5_000, (web.clone(), Expr::All));
    let (mut e, _) = new_engine(&first, t0());
    for t in 1..=2 {
        for c in ["a", "b"] {
            e.handle(res(&e, "web", c, true), at(t));
        }
    }
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);
    // Drained by the API: kept across the reload.
    e.handle(
        Input::DrainApi {
            vip: "v00007".into(),
            enable: true,
        },
        at(3),
    );
    assert_eq!(
        e.vip("v00007").unwrap().machine.state(),
        VipState::Pessimized
    );
    let before = |e: &Engine, name: &str| {
        let s = e.vip(name).unwrap();
        (
            s.machine.state(),
            s.transitions,
            s.machine.intent().cloned(),
        )
    };
    let web_before = before(&e, "web");
    let v7_before = before(&e, "v00007");
    let plain_before = before(&e, "v00500");
    // The new config: reversed, v00000..v00009 removed, every 1,000th gets
    // a new attribute (kept, re-announced), every 1,000th + 1 a new prefix
    // (restarted), and 10 new VIPs.
    let mut new: Vec<(Vip, Expr)> = Vec::new();
    for i in (10..N + 10).rev() {
        if i >= N {
            new.push(plain(i, 0));
        } else if i % 1_000 == 0 {
            new.push(plain(i, 3));
        } else if i % 1_000 == 1 {
            let (mut v, x) = plain(i, 0);
            v.prefix = format!("11.{}.{}.0/24", i / 256, i % 256).parse().unwrap();
            new.push((v, x));
        } else {
            new.push(plain(i, 0));
        }
    }
    new.push((web, Expr::All));
    new.push(plain(7, 0));
    let cfg = configs(&new);
    let plan = crate::daemon::reload::ReloadPlan {
        vips: e.diff(&cfg),
        ..Default::default()
    };
    let out = e.reload(cfg, &plan, at(4));
    let s = states(&out);
    let withdraws = s.iter().filter(|l| l.ends_with("withdraw")).count();
    // 9 restarted (9001 .. 1001), then the 9 removed ones (v00007 stays),
    // in the engine's order.
    assert_eq!(withdraws, 9 + 9, "{s:?}");
    assert_eq!(s[0], "withdrawn (config changed)");
    assert_eq!(s[1], "route 10.35.41.0/24 withdraw", "v09001 first");
    assert_eq!(s[18], "withdrawn (removed from config)");
    assert_eq!(s[19], "route 10.0.0.0/24 withdraw", "v00000 first");
    // Then the announces in the new config's order: 10 new, 9 with new
    // attributes, 9 at new prefixes, interleaved as the new config lists
    // them.
    let announces: Vec<&String> = s[36..].iter().collect();
    assert_eq!(announces.len(), 10 + 9 + 9, "{s:?}");
    assert_eq!(announces[0], "route 10.39.25.0/24 prepend 0", "v10009");
    assert_eq!(announces[10], "route 11.35.41.0/24 prepend 0", "v09001");
    assert_eq!(announces[11], "route 10.35.40.0/24 prepend 3", "v09000");
    assert_eq!(e.vips().len(), N as usize + 2);
    assert_eq!(before(&e, "web"), web_before);
    assert_eq!(before(&e, "v00007"), v7_before);
    for i in 10..N {
        let name = format!("v{i:05}");
        let (state, transitions, intent) = before(&e, &name);
        assert_eq!(state, VipState::Announced, "{name}");
        let prepend = intent.map(|i| i.as_path_prepend);
        assert_eq!(prepend, Some(if i % 1_000 == 0 { 3 } else { 0 }), "{name}");
        if i % 1_000 != 1 {
            // Kept: not announced again.
            assert_eq!(transitions, plain_before.1, "{name}");
        }
    }
    // The engine is consistent: a check result still reaches web.
    e.handle(res(&e, "web", "b", false), at(5));
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Withdrawn);
    // The engine now runs the new config.
    assert!(e
        .diff(&configs(&new))
        .iter()
        .all(|(_, c)| *c == VipChange::Unchanged));
}

/// An always VIP whose drain withdraws once fewer than `below` flows remain,
/// drain_time `drain` at the latest.
fn flow_vip(name: &str, prefix: &str, below: u32, drain: &str) -> (Vip, Expr) {
    let v = vip(json!({
        "name": name, "prefix": prefix, "always": true,
        "policy": {"drain_time": drain, "drain_until_flows_below": below}
    }));
    (v, Expr::All)
}

fn api_drain(vip: &str, enable: bool) -> Input {
    Input::DrainApi {
        vip: vip.into(),
        enable,
    }
}

/// The API drain with drain_until_flows_below 1 and drain_time 20 s: the
/// engine asks for the VIP's flows while it is pessimized, withdraws at the
/// first count of none, and then asks no more.
#[test]
fn a_drain_withdraws_when_the_flows_end() {
    let (mut e, _) = new_engine(
        &[
            flow_vip("web", "10.0.0.1/32", 1, "20s"),
            flow_vip("dns", "10.0.0.2/32", 1, "20s"),
        ],
        t0(),
    );
    assert_eq!(e.flow_waits().count(), 0);
    let out = e.handle(api_drain("web", true), at(1_000));
    assert_eq!(
        states(&out),
        [
            "pessimized (drain enabled via API)",
            "route 10.0.0.1/32 prepend 6"
        ]
    );
    let waits: Vec<_> = e.flow_waits().map(|s| s.name.to_string()).collect();
    assert_eq!(waits, ["web"]);
    assert_eq!(e.next_deadline(), Some(at(21_000)));
    let out = e.handle(Input::Flows(vec![("web".into(), 2)]), at(2_000));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(e.flows("web"), Some(2));
    let out = e.handle(Input::Flows(vec![("web".into(), 0)]), at(3_000));
    assert_eq!(
        states(&out),
        [
            "withdrawn (active flows below drain_until_flows_below)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
    assert_eq!(e.flow_waits().count(), 0);
    assert_eq!(e.flows("web"), None);
    // No drain_time deadline left: the VIP is withdrawn already.
    assert_eq!(e.next_deadline(), None);
    assert!(e.handle(Input::Tick, at(21_000)).is_empty());
    let out = e.handle(api_drain("web", false), at(22_000));
    assert_eq!(
        states(&out),
        [
            "announced (drain disabled via API)",
            "route 10.0.0.1/32 prepend 0"
        ]
    );
}

/// Flows that never end: withdrawn at drain_time, counted from the drain's
/// start, whatever the counts say; a second drain source does not restart
/// it, and a new drain has a drain_time of its own.
#[test]
fn a_drain_withdraws_at_drain_time_at_the_latest() {
    let (mut e, _) = new_engine(&[flow_vip("web", "10.0.0.1/32", 1, "3s")], t0());
    e.handle(api_drain("web", true), at(1_000));
    e.handle(
        Input::DrainFile {
            vip: "web".into(),
            present: true,
        },
        at(2_000),
    );
    for ms in [1_500, 2_500, 3_500] {
        assert!(e
            .handle(Input::Flows(vec![("web".into(), 5)]), at(ms))
            .is_empty());
    }
    assert_eq!(e.next_deadline(), Some(at(4_000)));
    assert!(e.handle(Input::Tick, at(3_999)).is_empty());
    let out = e.handle(Input::Tick, at(4_000));
    assert_eq!(
        states(&out),
        [
            "withdrawn (drain_time elapsed)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
    assert_eq!(e.next_deadline(), None);
    e.handle(api_drain("web", false), at(5_000));
    let out = e.handle(
        Input::DrainFile {
            vip: "web".into(),
            present: false,
        },
        at(6_000),
    );
    assert_eq!(states(&out)[0], "announced (lower_priority_file removed)");
    e.handle(api_drain("web", true), at(10_000));
    assert_eq!(e.next_deadline(), Some(at(13_000)));
    assert_eq!(
        states(&e.handle(Input::Tick, at(13_000)))[0],
        "withdrawn (drain_time elapsed)"
    );
}

/// Without drain_until_flows_below a drain pessimizes as before: no flows
/// are asked for, no deadline, counts change nothing.
#[test]
fn a_drain_without_the_option_only_pessimizes() {
    let v = vip(json!({"name": "web", "prefix": "10.0.0.1/32", "always": true}));
    let (mut e, _) = new_engine(&[(v, Expr::All)], t0());
    e.handle(api_drain("web", true), at(1_000));
    assert_eq!(e.flow_waits().count(), 0);
    assert_eq!(e.next_deadline(), None);
    assert!(e
        .handle(Input::Flows(vec![("web".into(), 0)]), at(2_000))
        .is_empty());
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
}

/// A reload that gives a drained VIP drain_until_flows_below: its drain
/// waits for the flows from then on, drain_time counted from the reload;
/// one that takes it away leaves the VIP pessimized, with no deadline.
#[test]
fn a_reload_starts_and_stops_the_wait_for_the_flows() {
    let plain = vip(
        json!({"name": "web", "prefix": "10.0.0.1/32", "always": true,
                            "policy": {"drain_time": "3s"}}),
    );
    let (mut e, _) = new_engine(&[(plain.clone(), Expr::All)], t0());
    e.handle(api_drain("web", true), at(1_000));
    assert_eq!(e.next_deadline(), None);
    let out = reload(
        &mut e,
        &[flow_vip("web", "10.0.0.1/32", 1, "3s")],
        at(5_000),
    );
    assert!(
        states(&out).iter().all(|s| !s.contains("withdraw")),
        "{out:?}"
    );
    assert_eq!(e.flow_waits().count(), 1);
    assert_eq!(e.next_deadline(), Some(at(8_000)));
    e.handle(Input::Flows(vec![("web".into(), 4)]), at(6_000));
    assert_eq!(e.flows("web"), Some(4));
    reload(&mut e, &[(plain, Expr::All)], at(7_000));
    assert_eq!(e.flow_waits().count(), 0);
    assert_eq!(e.flows("web"), None);
    assert_eq!(e.next_deadline(), None);
    assert!(e.handle(Input::Tick, at(8_000)).is_empty());
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
}

/// A passing probe of `took` ms.
fn slow(e: &Engine, vip: &str, check: &str, took: u64) -> Input {
    let mut r = run(e, vip, check, true, None);
    r.result.duration = Duration::from_millis(took);
    Input::Result(r)
}

/// Graded health: announced, then pessimized in place while the backend is
/// slow, withdrawn only when it fails (the last step), and never more than
/// one step per hold-down while it hovers at the threshold.
#[test]
fn a_slow_backend_is_pessimized_in_place_before_its_failure_withdraws_it() {
    let v = vip(json!({
        "name": "web", "prefix": "10.0.0.1/32",
        "checks": [{"name": "a", "type": "tcp", "rise": 1, "fall": 2, "interval": "1s",
                    "timeout": "500ms", "degraded_latency": "200ms",
                    "degraded_hold_down": "10s", "tcp": {"port": 1}}],
        "policy": {"fail_action": "withdraw"}
    }));
    let (mut e, _) = new_engine(&[(v, Expr::All)], t0());
    let out = e.handle(slow(&e, "web", "a", 50), at(0));
    assert_eq!(states(&out)[1], "route 10.0.0.1/32 prepend 0");
    assert!(states(&e.handle(slow(&e, "web", "a", 300), at(1_000))).is_empty());
    assert_eq!(
        states(&e.handle(slow(&e, "web", "a", 300), at(2_000))),
        [
            "pessimized (a: degraded: 300 ms above degraded_latency 200 ms)",
            "route 10.0.0.1/32 prepend 6"
        ]
    );
    // Fast again at once, but within the hold-down: no step.
    assert!(states(&e.handle(slow(&e, "web", "a", 50), at(3_000))).is_empty());
    assert!(states(&e.handle(slow(&e, "web", "a", 50), at(11_000))).is_empty());
    assert_eq!(
        states(&e.handle(slow(&e, "web", "a", 50), at(12_000))),
        [
            "announced (a: no longer degraded: 50 ms within degraded_latency 200 ms)",
            "route 10.0.0.1/32 prepend 0"
        ]
    );
    // Slow, then failing: pessimized first, withdrawn at the fall.
    e.handle(slow(&e, "web", "a", 300), at(23_000));
    let out = e.handle(slow(&e, "web", "a", 300), at(24_000));
    assert_eq!(states(&out)[1], "route 10.0.0.1/32 prepend 6");
    assert!(states(&e.handle(res(&e, "web", "a", false), at(25_000))).is_empty());
    assert_eq!(
        states(&e.handle(res(&e, "web", "a", false), at(26_000))),
        [
            "withdrawn (a: fall threshold reached)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
    let view = crate::daemon::views::vip_view(
        e.vip("web").unwrap(),
        crate::api::model::Want::Checks,
        &|_| std::time::UNIX_EPOCH,
    );
    assert_eq!(view.degraded, Some(true));
    assert_eq!(view.checks[0].degraded, Some(true));
}

fn damped_vip(action: &str) -> (Vip, Expr) {
    let v = vip(json!({
        "name": "web", "prefix": "10.0.0.1/32",
        "check": {"type": "tcp", "rise": 1, "fall": 1, "tcp": {"port": 80}},
        "policy": {"fail_action": action,
                   "damping": {"enabled": true, "half_life": "10s", "max_suppress": "40s"}}
    }));
    (v, Expr::All)
}

/// Flaps `web` (healthy, then not) every 2 s from `from` ms, `n` times.
fn flap(e: &mut Engine, from: u64, n: u64) -> Vec<String> {
    let mut out = Vec::new();
    for k in 0..n {
        out.extend(states(
            &e.handle(res(e, "web", "tcp", true), at(from + k * 4000)),
        ));
        out.extend(states(
            &e.handle(res(e, "web", "tcp", false), at(from + k * 4000 + 2000)),
        ));
    }
    out
}

/// With fail_action lower_priority the owner wants the route kept: damping
/// holds the VIP pessimized, steady, never withdrawn and never announced
/// in full while it lasts.
#[test]
fn damping_holds_a_lower_priority_vip_pessimized() {
    let (mut e, _) = new_engine(&[damped_vip("lower_priority")], at(0));
    let out = flap(&mut e, 0, 3);
    assert_eq!(
        out.last().map(String::as_str),
        Some("route 10.0.0.1/32 prepend 6")
    );
    assert!(e.vip("web").unwrap().machine.damped());
    // Healthy again and flapping on: nothing changes.
    assert!(flap(&mut e, 12_000, 5).is_empty());
    assert!(e.handle(res(&e, "web", "tcp", true), at(32_000)).is_empty());
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
    // Released by the timer alone.
    let due = e.next_deadline().unwrap();
    assert!(e
        .handle(Input::Tick, due - Duration::from_millis(1))
        .is_empty());
    assert_eq!(
        states(&e.handle(Input::Tick, due)),
        [
            "announced (damping penalty below reuse)",
            "route 10.0.0.1/32 prepend 0"
        ]
    );
    assert!(e.damping("web").is_some_and(|p| p.reuse_at().is_none()));
}

/// A reload that switches damping off lets a damped VIP go at once; one
/// that keeps it keeps the penalty.
#[test]
fn a_reload_keeps_the_penalty_or_ends_the_damping() {
    let (mut e, _) = new_engine(&[damped_vip("withdraw")], at(0));
    flap(&mut e, 0, 3);
    e.handle(res(&e, "web", "tcp", true), at(12_000));
    assert!(e.vip("web").unwrap().machine.damped());
    let before = e.damping("web").copied();
    let out = reload(&mut e, &[damped_vip("withdraw")], at(13_000));
    assert!(out.is_empty(), "{:?}", states(&out));
    assert_eq!(e.damping("web").copied(), before);
    let (mut off, x) = damped_vip("withdraw");
    off.policy.damping.enabled = false;
    let out = states(&reload(&mut e, &[(off, x)], at(14_000)));
    assert_eq!(
        out,
        [
            "announced (policy changed by reload)",
            "route 10.0.0.1/32 prepend 0"
        ]
    );
    assert!(e.damping("web").is_none());
    assert_eq!(e.next_deadline(), None);
}

/// A VIP restarted by a reload (its check changed) keeps its name's
/// penalty, as a router keeps a prefix's: it stays damped, withdrawn,
/// until the release time it had.
#[test]
fn a_restarted_vip_stays_damped() {
    let (mut e, _) = new_engine(&[damped_vip("withdraw")], at(0));
    flap(&mut e, 0, 3);
    let due = e.next_deadline().unwrap();
    let (mut v, x) = damped_vip("withdraw");
    set_tcp_port(&mut v, 0, 81);
    reload(&mut e, &[(v, x)], at(11_000));
    assert!(e.vip("web").unwrap().machine.damped());
    assert_eq!(e.next_deadline(), Some(due));
    assert!(e.handle(res(&e, "web", "tcp", true), at(12_000)).is_empty());
    assert_eq!(
        states(&e.handle(Input::Tick, due)),
        [
            "announced (damping penalty below reuse)",
            "route 10.0.0.1/32 prepend 0"
        ]
    );
}

/// A VIP with an IPv4 and an IPv6 prefix: one check set, one state
/// machine; each transition's step carries a route of every prefix, right
/// after the transition, and a reload that adds a prefix restarts the VIP
/// as a changed prefix does (withdrawing every old prefix first).
#[test]
fn a_vip_with_several_prefixes_moves_them_in_one_step() {
    let v = vip(json!({
        "name": "dual", "prefix": ["10.0.0.7/32", "2001:db8::7/128"],
        "check": {"type": "tcp", "rise": 1, "fall": 1, "tcp": {"port": 1}},
        "policy": {"fail_action": "lower_priority"}
    }));
    assert_eq!(v.prefixes().count(), 2);
    let (mut e, out) = new_engine(&[(v.clone(), Expr::All)], t0());
    assert!(out.is_empty());
    let check = e.vip("dual").unwrap().checks[0].name.clone();
    assert_eq!(
        states(&e.handle(res(&e, "dual", &check, true), at(0))),
        [
            "announced (tcp: rise threshold reached)",
            "route 10.0.0.7/32 prepend 0",
            "route 2001:db8::7/128 prepend 0",
            "initial done"
        ]
    );
    assert_eq!(
        e.routes().map(|(p, _)| p.to_string()).collect::<Vec<_>>(),
        ["10.0.0.7/32", "2001:db8::7/128"]
    );
    assert_eq!(
        states(&e.handle(res(&e, "dual", &check, false), at(1000))),
        [
            "pessimized (tcp: fall threshold reached)",
            "route 10.0.0.7/32 prepend 6",
            "route 2001:db8::7/128 prepend 6"
        ]
    );
    let out = e.handle(
        Input::DrainApi {
            vip: "dual".into(),
            enable: true,
        },
        at(1500),
    );
    assert!(out.is_empty(), "{out:?}");
    // The VIP's view lists both.
    let view = crate::daemon::views::vip_view(
        e.vip("dual").unwrap(),
        crate::api::model::Want::Vip,
        &|_| std::time::UNIX_EPOCH,
    );
    assert_eq!(
        (view.prefix.as_str(), view.more_prefixes.as_slice()),
        ("10.0.0.7/32", &["2001:db8::7/128".to_string()][..])
    );
    // A search finds the VIP by any of its prefixes, from the engine and
    // from its view.
    for (t, n) in [("2001:db8::7", 1), ("10.0.0.7", 1), ("fd00::", 0)] {
        let mut q = crate::api::status::StatusQuery::default();
        q.set("search", &json!(t)).unwrap();
        let scope = crate::api::model::Scope::Page(q.clone());
        assert_eq!(
            crate::daemon::views::select_vips(&e, &scope).0.len(),
            n,
            "{t}"
        );
        assert_eq!(q.matches(&crate::api::model::key_of(&view)), n == 1, "{t}");
    }
    // A third prefix: the VIP restarts, its two routes withdrawn first.
    let mut three = v.clone();
    three.more_prefixes = vec![
        "2001:db8::7/128".parse().unwrap(),
        "10.0.1.7/32".parse().unwrap(),
    ]
    .into();
    let out = reload(&mut e, &[(three, Expr::All)], at(2000));
    assert_eq!(
        states(&out),
        [
            "withdrawn (config changed)",
            "route 10.0.0.7/32 withdraw",
            "route 2001:db8::7/128 withdraw"
        ]
    );
    assert_eq!(
        states(&e.handle(res(&e, "dual", &check, true), at(3000))),
        [
            "announced (tcp: rise threshold reached)",
            "route 10.0.0.7/32 prepend 0",
            "route 2001:db8::7/128 prepend 0",
            "route 10.0.1.7/32 prepend 0"
        ]
    );
}
