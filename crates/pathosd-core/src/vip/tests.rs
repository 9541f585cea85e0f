//! Replay tests: a script of timed events against one VIP, with the expected
//! state after each step. No clock, no sockets.

use super::*;
use crate::bgp::types::Community;
use crate::config::{Dur, FailAction, VipSpec as Vip};

enum Ev {
    Health(bool),
    DrainFile(bool),
    DrainApi(bool),
    Flows(u32),
    /// The engine's drain_time of the drain (file or API) came.
    DrainExpired,
    Tick,
}

fn vip(action: FailAction, f: impl FnOnce(&mut Vip)) -> VipMachine {
    let mut v = Vip::default();
    v.policy.fail_action = action;
    v.policy.announce.as_path_prepend = 4;
    v.policy.announce.communities = vec![Community(65001, 200)];
    v.policy.lower_priority.communities = vec![Community(65001, 666)];
    f(&mut v);
    VipMachine::new(
        VipPolicy::from_config(&v, false, &mut SharedIntents::default()),
        base(),
    )
}

fn base() -> Instant {
    // A fixed origin; only offsets matter.
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Runs `(millis, event, expected state)` steps; returns the transitions.
fn replay(m: &mut VipMachine, steps: &[(u64, Ev, VipState)]) -> Vec<Transition> {
    let mut out = Vec::new();
    for (i, (ms, ev, want)) in steps.iter().enumerate() {
        let now = base() + Duration::from_millis(*ms);
        let t = match ev {
            Ev::Health(h) => m.set_health(*h, now, if *h { "rise" } else { "fall" }),
            Ev::DrainFile(p) => m.set_drain_file(*p, now),
            Ev::DrainApi(p) => m.set_drain_api(*p, now),
            Ev::Flows(n) => m.set_flows(*n, now),
            Ev::DrainExpired => m.drain_expired(now),
            Ev::Tick => m.tick(now),
        };
        out.extend(t);
        assert_eq!(m.state(), *want, "step {i} at {ms}ms");
    }
    out
}

use Ev::*;
use VipState::*;

#[test]
fn starts_withdrawn_and_follows_the_seed_diagram_for_withdraw() {
    let mut m = vip(FailAction::Withdraw, |_| {});
    assert_eq!(m.state(), Withdrawn);
    assert!(m.intent().is_none());
    let ts = replay(
        &mut m,
        &[
            (0, Health(false), Withdrawn),
            (1000, Health(true), Announced),
            (2000, DrainFile(true), Pessimized),
            (3000, DrainFile(false), Announced),
            (4000, Health(false), Withdrawn),
        ],
    );
    let reasons: Vec<_> = ts.iter().map(|t| t.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "rise",
            "lower_priority_file created",
            "lower_priority_file removed",
            "fall"
        ]
    );
    // Left announced twice: to pessimized (drain file), then to withdrawn.
    assert_eq!(m.flaps(), 2);
}

#[test]
fn lower_priority_pessimizes_but_never_announces_an_unproven_vip() {
    let mut m = vip(FailAction::LowerPriority, |_| {});
    replay(
        &mut m,
        &[
            (0, Health(false), Withdrawn),
            (0, DrainFile(true), Withdrawn),
            (1, DrainFile(false), Withdrawn),
            (2, Health(true), Announced),
            (3, Health(false), Pessimized),
            (4, Health(true), Announced),
        ],
    );
}

#[test]
fn healthy_with_drain_file_goes_straight_to_pessimized() {
    let mut m = vip(FailAction::Withdraw, |_| {});
    replay(
        &mut m,
        &[
            (0, DrainFile(true), Withdrawn),
            (1, Health(true), Pessimized),
            (2, DrainFile(false), Announced),
            (3, DrainApi(true), Pessimized),
            (4, DrainApi(false), Announced),
        ],
    );
}

#[test]
fn pessimized_attributes_add_up_and_keep_both_community_sets() {
    let mut m = vip(FailAction::LowerPriority, |_| {});
    replay(&mut m, &[(0, Health(true), Announced)]);
    let i = m.intent().unwrap().clone();
    assert_eq!(i.as_path_prepend, 4);
    assert_eq!(i.communities, vec![Community(65001, 200)]);
    replay(&mut m, &[(1, Health(false), Pessimized)]);
    let p = m.intent().unwrap();
    assert_eq!(p.as_path_prepend, 10);
    assert_eq!(
        p.communities,
        vec![Community(65001, 200), Community(65001, 666)]
    );
}

#[test]
fn drain_then_withdraw_pessimizes_first_then_withdraws_after_drain_time() {
    let mut m = vip(FailAction::DrainThenWithdraw, |v| {
        v.policy.drain_time = Dur::secs(30)
    });
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, Health(false), Pessimized),
            (30_999, Tick, Pessimized),
        ],
    );
    assert_eq!(
        m.next_deadline(),
        Some(base() + Duration::from_millis(31_000))
    );
    replay(&mut m, &[(31_000, Tick, Withdrawn)]);
    assert_eq!(m.next_deadline(), None);
    // One flap: leaving announced; pessimized -> withdrawn is the same outage.
    assert_eq!(m.flaps(), 1);
}

#[test]
fn drain_then_withdraw_recovers_when_health_returns_within_drain_time() {
    let mut m = vip(FailAction::DrainThenWithdraw, |v| {
        v.policy.drain_time = Dur::secs(10)
    });
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, Health(false), Pessimized),
            (5_000, Health(true), Announced),
            (20_000, Tick, Announced),
        ],
    );
    assert_eq!(m.next_deadline(), None);
}

#[test]
fn recovery_hold_delays_only_re_announcements() {
    let mut m = vip(FailAction::Withdraw, |v| {
        v.policy.recovery_hold = Dur::secs(60)
    });
    replay(
        &mut m,
        &[
            // The first announcement after start is not held.
            (0, Health(true), Announced),
            (1_000, Health(false), Withdrawn),
            (2_000, Health(true), Withdrawn),
            (61_999, Tick, Withdrawn),
        ],
    );
    assert_eq!(
        m.next_deadline(),
        Some(base() + Duration::from_millis(62_000))
    );
    // A failure during the hold restarts it.
    replay(
        &mut m,
        &[
            (50_000, Health(false), Withdrawn),
            (51_000, Health(true), Withdrawn),
            (62_000, Tick, Withdrawn),
            (111_000, Tick, Announced),
        ],
    );
}

#[test]
fn always_vips_are_announced_from_start_and_ignore_health() {
    let mut m = vip(FailAction::Withdraw, |v| v.always = true);
    assert_eq!(m.state(), Announced);
    replay(
        &mut m,
        &[
            (1, Health(false), Announced),
            (2, DrainFile(true), Pessimized),
            (3, DrainFile(false), Announced),
        ],
    );
}

#[test]
fn repeated_inputs_are_no_ops() {
    let mut m = vip(FailAction::Withdraw, |_| {});
    let ts = replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1, Health(true), Announced),
            (2, DrainFile(false), Announced),
            (3, DrainApi(false), Announced),
            (4, Tick, Announced),
        ],
    );
    assert_eq!(ts.len(), 1);
    assert_eq!(m.flaps(), 0);
}

fn gshut_vip(action: FailAction, f: impl FnOnce(&mut Vip)) -> VipMachine {
    let mut v = Vip::default();
    v.policy.fail_action = action;
    v.policy.announce.communities = vec![Community(65001, 200)];
    v.policy.lower_priority.communities = vec![Community(65001, 666)];
    f(&mut v);
    VipMachine::new(
        VipPolicy::from_config(&v, true, &mut SharedIntents::default()),
        base(),
    )
}

#[test]
fn graceful_shutdown_marks_every_pessimized_route_and_no_announced_one() {
    let c = |n| Community(65001, n);
    let gshut = crate::bgp::types::GRACEFUL_SHUTDOWN;
    assert_eq!(gshut, Community(65535, 0));
    let pessimized = vec![c(200), c(666), gshut];
    // lower_priority: unhealthy; the drain file; the API's drain.
    let mut m = gshut_vip(FailAction::LowerPriority, |_| {});
    replay(&mut m, &[(0, Health(true), Announced)]);
    assert_eq!(m.intent().unwrap().communities, vec![c(200)]);
    replay(&mut m, &[(1, Health(false), Pessimized)]);
    assert_eq!(m.intent().unwrap().communities, pessimized);
    replay(
        &mut m,
        &[
            (2, Health(true), Announced),
            (3, DrainFile(true), Pessimized),
        ],
    );
    assert_eq!(m.intent().unwrap().communities, pessimized);
    replay(
        &mut m,
        &[
            (4, DrainFile(false), Announced),
            (5, DrainApi(true), Pessimized),
        ],
    );
    assert_eq!(m.intent().unwrap().communities, pessimized);
    // drain_then_withdraw: its drain phase carries it, until the withdraw.
    let mut m = gshut_vip(FailAction::DrainThenWithdraw, |v| {
        v.policy.drain_time = Dur::secs(30)
    });
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, Health(false), Pessimized),
        ],
    );
    assert_eq!(m.intent().unwrap().communities, pessimized);
    replay(&mut m, &[(31_000, Tick, Withdrawn)]);
    assert!(m.intent().is_none());
    // An always VIP drained through the API.
    let mut m = gshut_vip(FailAction::Withdraw, |v| v.always = true);
    assert_eq!(m.intent().unwrap().communities, vec![c(200)]);
    replay(&mut m, &[(1, DrainApi(true), Pessimized)]);
    assert_eq!(m.intent().unwrap().communities, pessimized);
}

#[test]
fn med_and_local_pref_step_down_when_pessimized_and_default_to_the_announced_ones() {
    let intents = |f: fn(&mut Vip)| {
        let mut v = Vip::default();
        f(&mut v);
        let mut m = VipMachine::new(
            VipPolicy::from_config(&v, false, &mut SharedIntents::default()),
            base(),
        );
        replay(&mut m, &[(0, Health(true), Announced)]);
        let up = m.intent().unwrap().clone();
        replay(&mut m, &[(1, Health(false), Pessimized)]);
        let down = m.intent().unwrap().clone();
        ((up.med, up.local_pref), (down.med, down.local_pref))
    };
    // Neither set: no MED, LOCAL_PREF 100 both ways.
    assert_eq!(intents(|_| {}), ((None, 100), (None, 100)));
    // Only the announced ones: kept while pessimized.
    assert_eq!(
        intents(|v| {
            v.policy.announce.med = Some(10);
            v.policy.announce.local_pref = 200;
        }),
        ((Some(10), 200), (Some(10), 200))
    );
    // Both: the pessimized step.
    assert_eq!(
        intents(|v| {
            v.policy.announce.med = Some(10);
            v.policy.lower_priority.med = Some(500);
            v.policy.lower_priority.local_pref = Some(50);
        }),
        ((Some(10), 100), (Some(500), 50))
    );
}

#[test]
fn graceful_shutdown_is_not_added_twice_nor_without_the_option() {
    let gshut = crate::bgp::types::GRACEFUL_SHUTDOWN;
    // Configured by hand as well: once.
    let mut m = gshut_vip(FailAction::LowerPriority, |v| {
        v.policy.lower_priority.communities = vec![gshut, Community(65001, 666)]
    });
    replay(
        &mut m,
        &[(0, Health(true), Announced), (1, Health(false), Pessimized)],
    );
    assert_eq!(
        m.intent().unwrap().communities,
        vec![Community(65001, 200), gshut, Community(65001, 666)]
    );
    // Off (the default): the configured communities only.
    let mut m = vip(FailAction::LowerPriority, |_| {});
    replay(
        &mut m,
        &[(0, Health(true), Announced), (1, Health(false), Pessimized)],
    );
    assert!(!m.intent().unwrap().communities.contains(&gshut));
}

/// `drain_until_flows_below` 1, drain_time 20 s: an API drain pessimizes,
/// and withdraws at the first count of no flows, long before drain_time.
#[test]
fn a_drain_that_waits_for_the_flows_withdraws_when_they_end() {
    let mut m = vip(FailAction::LowerPriority, |v| {
        v.policy.drain_time = Dur::secs(20);
        v.policy.drain_until_flows_below = 1;
    });
    let ts = replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, DrainApi(true), Pessimized),
            (2_000, Flows(3), Pessimized),
            (3_000, Flows(1), Pessimized),
            (3_500, Tick, Pessimized),
            (4_000, Flows(0), Withdrawn),
            // Withdrawn for the rest of the drain, whatever is counted.
            (5_000, Flows(7), Withdrawn),
            (30_000, Tick, Withdrawn),
        ],
    );
    assert_eq!(
        ts.last().unwrap().reason,
        "active flows below drain_until_flows_below"
    );
    assert!(!m.waits_for_flows());
    assert_eq!(m.next_deadline(), None);
    // The drain ends: announced again at once.
    replay(&mut m, &[(31_000, DrainApi(false), Announced)]);
}

/// Flows that never end: the withdraw comes at drain_time (the engine
/// keeps the drain's start and says when, `DrainExpired`).
#[test]
fn a_drain_that_waits_for_the_flows_withdraws_at_drain_time_at_the_latest() {
    let mut m = vip(FailAction::Withdraw, |v| {
        v.policy.drain_time = Dur::secs(3);
        v.policy.drain_until_flows_below = 1;
    });
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, DrainFile(true), Pessimized),
            (1_500, Flows(2), Pessimized),
            (2_000, DrainApi(true), Pessimized),
            (3_000, Flows(2), Pessimized),
        ],
    );
    assert!(m.waits_for_flows() && m.drain_time_pending());
    assert_eq!(m.next_deadline(), None);
    let ts = replay(&mut m, &[(4_000, DrainExpired, Withdrawn)]);
    assert_eq!(ts.last().unwrap().reason, "drain_time elapsed");
    assert!(!m.drain_time_pending());
    // Still drained by the API after the file is gone: still withdrawn.
    replay(
        &mut m,
        &[
            (5_000, DrainFile(false), Withdrawn),
            (6_000, DrainApi(false), Announced),
            // Not draining: nothing expires.
            (7_000, DrainExpired, Announced),
        ],
    );
}

/// A count from an earlier drain never ends a new one; a VIP drained
/// before it was ever announced is not announced for the drain.
#[test]
fn a_new_drain_waits_for_a_count_of_its_own() {
    let mut m = vip(FailAction::LowerPriority, |v| {
        v.policy.drain_time = Dur::secs(20);
        v.policy.drain_until_flows_below = 2;
    });
    replay(
        &mut m,
        &[
            (0, DrainApi(true), Withdrawn),
            (1_000, Health(true), Withdrawn),
            (2_000, DrainApi(false), Announced),
            (3_000, DrainApi(true), Pessimized),
            (4_000, Flows(1), Withdrawn),
            (5_000, DrainApi(false), Announced),
            // Low when last read, but this drain has not counted yet.
            (6_000, DrainApi(true), Pessimized),
            (7_000, Flows(2), Pessimized),
            (8_000, Flows(1), Withdrawn),
        ],
    );
}

/// drain_then_withdraw with the option: an unhealthy VIP is withdrawn
/// when its flows end, or at drain_time; without the option the count
/// changes nothing (today's behaviour).
#[test]
fn drain_then_withdraw_waits_for_the_flows_only_with_the_option() {
    let mut m = vip(FailAction::DrainThenWithdraw, |v| {
        v.policy.drain_time = Dur::secs(30);
        v.policy.drain_until_flows_below = 1;
    });
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, Health(false), Pessimized),
            (2_000, Flows(4), Pessimized),
            (3_000, Flows(0), Withdrawn),
            (4_000, Health(true), Announced),
            (5_000, Health(false), Pessimized),
            (34_999, Tick, Pessimized),
            (35_000, Tick, Withdrawn),
        ],
    );
    let mut m = vip(FailAction::DrainThenWithdraw, |v| {
        v.policy.drain_time = Dur::secs(30)
    });
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, Health(false), Pessimized),
            (2_000, Flows(0), Pessimized),
            (3_000, DrainApi(true), Pessimized),
            (4_000, Flows(0), Pessimized),
        ],
    );
    assert!(!m.waits_for_flows());
    let mut m = vip(FailAction::LowerPriority, |_| {});
    replay(
        &mut m,
        &[
            (0, Health(true), Announced),
            (1_000, DrainApi(true), Pessimized),
            (2_000, Flows(0), Pessimized),
            (60_000, Tick, Pessimized),
        ],
    );
    assert!(!m.waits_for_flows());
}
