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
    let out = e.reload(
        &[(web.clone(), Expr::Any), (other.clone(), Expr::Any)],
        at(2),
    );
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(e.vip("web").unwrap().machine.state(), VipState::Announced);
    assert_eq!(e.vip("web").unwrap().checks[1].runs, 1);
    // web changed (fall), other removed, a new always VIP added.
    let mut web2 = web.clone();
    web2.checks.as_mut().unwrap()[1].fall = 5;
    let node = vip(json!({"name": "node", "prefix": "10.9.0.0/24", "always": true}));
    let out = e.reload(&[(web2, Expr::Any), (node, Expr::All)], at(3));
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
