//! Replays of check reports, drain changes and ticks through the engine.

use super::*;
use crate::check::hysteresis::Hysteresis;
use crate::config::{FailAction, Field};
use serde_json::json;

fn vip(v: serde_json::Value) -> Vip {
    let mut errs = crate::config::Errors::default();
    let vip = Vip::decode(&v, "vip", &mut errs).unwrap();
    assert!(errs.is_empty(), "{errs:?}");
    vip
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

/// Feeds results for one check through a real Hysteresis, like the runner does.
struct Feeder {
    h: std::collections::BTreeMap<String, Hysteresis>,
}

impl Feeder {
    fn new(v: &Vip) -> Feeder {
        Feeder {
            h: v.check_list()
                .iter()
                .map(|c| (c.effective_name(), Hysteresis::new(c.rise, c.fall)))
                .collect(),
        }
    }

    fn report(&mut self, check: &str, ok: bool) -> Input {
        let h = self.h.get_mut(check).unwrap();
        let transition = h.observe(ok);
        Input::Report(Report {
            vip: "web".into(),
            check: check.into(),
            result: if ok {
                CheckResult::pass("ok")
            } else {
                CheckResult::fail("connect refused")
            },
            healthy: h.healthy(),
            consecutive_ok: h.consecutive_ok(),
            consecutive_fail: h.consecutive_fail(),
            transition,
            adhoc: false,
        })
    }
}

fn t0() -> Instant {
    static T: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *T.get_or_init(Instant::now)
}

fn at(ms: u64) -> Instant {
    t0() + Duration::from_millis(ms)
}

/// Reloads `e` with `vips` as the one diff plans it.
fn reload(e: &mut Engine, vips: &[(Vip, Expr)], now: Instant) -> Vec<Output> {
    let old: Vec<Vip> = e.vips().iter().map(|s| s.config.clone()).collect();
    let new: Vec<Vip> = vips.iter().map(|(v, _)| v.clone()).collect();
    let plan = crate::daemon::reload::ReloadPlan {
        vips: crate::daemon::reload::diff_vips(&old, &new),
        ..Default::default()
    };
    e.reload(vips, &plan, now)
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
            Output::InitialDone => "initial done".into(),
        })
        .collect()
}

#[test]
fn all_policy_announces_after_the_slowest_rise_and_withdraws_on_fall() {
    let v = two_checks("withdraw");
    let (mut e, out) = Engine::new(&[(v.clone(), Expr::All)], t0());
    assert!(out.is_empty());
    let mut f = Feeder::new(&v);
    assert_eq!(
        states(&e.handle(f.report("a", true), at(0))),
        Vec::<String>::new()
    );
    // b healthy after one result, but a needs two: the VIP stays withdrawn.
    assert_eq!(
        states(&e.handle(f.report("b", true), at(10))),
        ["check b: rise threshold reached"]
    );
    assert_eq!(
        states(&e.handle(f.report("a", true), at(1000))),
        [
            "announced (a: rise threshold reached)",
            "route 10.0.0.1/32 prepend 0",
            "initial done"
        ]
    );
    // One failure of a: counters only.
    assert!(e.handle(f.report("a", false), at(2000)).is_empty());
    assert_eq!(e.vip("web").unwrap().checks[0].consecutive_fail, 1);
    assert_eq!(
        states(&e.handle(f.report("a", false), at(3000))),
        [
            "withdrawn (a: fall threshold reached)",
            "route 10.0.0.1/32 withdraw"
        ]
    );
}

#[test]
fn check_transition_without_vip_health_change_causes_no_route_output() {
    let v = two_checks("withdraw");
    let (mut e, _) = Engine::new(&[(v.clone(), Expr::Any)], t0());
    let mut f = Feeder::new(&v);
    // An announced VIP has had its first evaluation.
    assert_eq!(
        states(&e.handle(f.report("b", true), at(0))),
        [
            "announced (b: rise threshold reached)",
            "route 10.0.0.1/32 prepend 0",
            "initial done"
        ]
    );
    e.handle(f.report("a", true), at(1));
    assert_eq!(
        states(&e.handle(f.report("a", true), at(2))),
        ["check a: rise threshold reached"]
    );
    assert_eq!(
        states(&e.handle(f.report("a", false), at(3)))
            .into_iter()
            .chain(states(&e.handle(f.report("a", false), at(4))))
            .collect::<Vec<_>>(),
        ["check a: fall threshold reached"]
    );
}

#[test]
fn lower_priority_and_drain_file_pessimize_in_place() {
    let v = two_checks("lower_priority");
    let (mut e, _) = Engine::new(&[(v.clone(), Expr::Name("b".into()))], t0());
    let mut f = Feeder::new(&v);
    e.handle(f.report("b", true), at(0));
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
    assert!(states(&e.handle(f.report("b", false), at(6)))
        .iter()
        .all(|s| !s.starts_with("route")));
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Pessimized);
}

#[test]
fn initial_done_is_bounded_by_the_slowest_rise_even_without_reports() {
    let v = two_checks("withdraw");
    let (mut e, _) = Engine::new(&[(v.clone(), Expr::All)], t0());
    // b: 10s × rise 1 + 100ms timeout + 1s slack.
    assert_eq!(e.next_deadline(), Some(at(11_100)));
    assert!(e.handle(Input::Tick, at(11_099)).is_empty());
    assert_eq!(states(&e.handle(Input::Tick, at(11_100))), ["initial done"]);
    assert_eq!(e.next_deadline(), None);
}

#[test]
fn failing_vip_completes_its_first_evaluation_after_rise_results() {
    let v = two_checks("withdraw");
    let (mut e, _) = Engine::new(&[(v.clone(), Expr::All)], t0());
    let mut f = Feeder::new(&v);
    e.handle(f.report("a", false), at(0));
    e.handle(f.report("b", false), at(1));
    assert!(!e.initial_done());
    assert_eq!(
        states(&e.handle(f.report("a", false), at(1000))),
        ["initial done"]
    );
}

#[test]
fn always_vips_announce_at_start() {
    let v = vip(json!({"name": "node", "prefix": "10.9.0.0/24", "always": true}));
    let (e, out) = Engine::new(&[(v, Expr::All)], t0());
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
    other.prefix = Some("10.0.0.2/32".parse().unwrap());
    let (mut e, _) = Engine::new(
        &[(web.clone(), Expr::Any), (other.clone(), Expr::Any)],
        t0(),
    );
    let mut f = Feeder::new(&web);
    e.handle(f.report("b", true), at(0));
    let mut r = f.report("b", true);
    if let Input::Report(rep) = &mut r {
        rep.vip = "other".into();
    }
    e.handle(r, at(1));
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
    web2.checks.as_mut().unwrap()[1].tcp.as_mut().unwrap().port = 3;
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
    let (mut e, _) = Engine::new(&[(web.clone(), Expr::Name("b".into()))], t0());
    let mut f = Feeder::new(&web);
    e.handle(f.report("b", true), at(0));
    let flaps = e.vip("web").unwrap().machine.flaps();
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);

    // Interval, timeout, rise and fall: no output, state and counters kept.
    let mut v = web.clone();
    for c in v.checks.as_mut().unwrap() {
        c.interval = crate::config::Dur::secs(20);
        c.timeout = crate::config::Dur::secs(2);
        c.rise = 5;
        c.fall = 4;
    }
    let out = reload(&mut e, &[(v.clone(), Expr::Name("b".into()))], at(10));
    assert!(out.is_empty(), "{out:?}");
    let slot = e.vip("web").unwrap();
    assert_eq!(slot.machine.state(), VipState::Announced);
    assert_eq!(slot.checks[1].runs, 1);
    assert_eq!(slot.config, v);

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
    e.handle(f.report("b", false), at(40));
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
