//! What the owner answers from its state, built without the driver: views
//! of the VIPs for a snapshot (as many as the request's scope asks), which
//! checks a trigger runs, and a finished trigger run's outcome. The owner
//! loop (`pathosd::daemon`) adds the peers, the pool and the times it owns.

use super::engine::{duration_buckets, CheckId, Engine, VipSlot};
use super::triggers::{Refusal, BURST, REFILL};
use crate::api::model::{
    select, CheckView, DampingView, PageInfo, PrefixOf, Scope, VipKey, VipView, Want,
};
use crate::api::router::ApiError;
use crate::api::TriggerOutcome;
use crate::check::policy;
use crate::check::CheckResult;
use crate::config::policy_expr::Expr;
use std::time::{Duration, Instant, SystemTime};

/// Views of the VIPs of `scope`, and for a page its counts; `to_sys`
/// turns the engine's instants into the wall-clock times /status shows.
/// Only the selected VIPs get a view: at 10,000 VIPs a view of each with
/// its checks is most of a request's cost.
pub fn vip_views(
    engine: &Engine,
    scope: &Scope,
    to_sys: &dyn Fn(Instant) -> SystemTime,
) -> (Vec<VipView>, Option<PageInfo>) {
    let (picked, page) = select_vips(engine, scope);
    let views = picked
        .into_iter()
        .filter_map(|i| engine_vip_view(engine, i, Want::Checks, to_sys))
        .collect();
    (views, page)
}

/// The view of the engine's VIP at position `i` (as [`vip_view`]), with
/// the flows its drain waits for.
pub fn engine_vip_view(
    engine: &Engine,
    i: usize,
    want: Want,
    to_sys: &dyn Fn(Instant) -> SystemTime,
) -> Option<VipView> {
    let v = engine.vips().get(i)?;
    let mut view = vip_view(v, want, to_sys);
    view.flows = engine.flows(&v.name);
    if let (Some(d), Some(p)) = (view.damping.as_mut(), engine.damping(&v.name)) {
        let (penalty, at) = p.last();
        d.penalty = penalty;
        d.last_flap = Some(to_sys(at));
        d.reuse_time = p.reuse_at().map(to_sys);
    }
    Some(view)
}

/// The positions of the VIPs of `scope` in the engine's list, and for a
/// page its counts (`api::model::select` over the engine's VIPs).
pub fn select_vips(engine: &Engine, scope: &Scope) -> (Vec<usize>, Option<PageInfo>) {
    select(
        scope,
        engine.vips().iter().map(|v| VipKey {
            name: &v.name,
            prefix: PrefixOf::Value(v.prefix, v.more_prefixes()),
            state: v.machine.state().as_str(),
            healthy: v.machine.healthy(),
            drained: v.machine.drain_file() || v.machine.drain_api(),
        }),
    )
}

/// A view of one VIP, with as much of its checks as `want` says.
pub fn vip_view(v: &VipSlot, want: Want, to_sys: &dyn Fn(Instant) -> SystemTime) -> VipView {
    // The engine keeps the VIPs' configs (a plain one's is rebuilt).
    let config = v.config();
    let intent = v.machine.intent();
    VipView {
        name: v.name.to_string(),
        prefix: v.prefix.to_string(),
        more_prefixes: v.more_prefixes().iter().map(|p| p.to_string()).collect(),
        state: v.machine.state().as_str(),
        healthy: v.machine.healthy(),
        drain_file: v.machine.drain_file(),
        drain_api: v.machine.drain_api(),
        as_path_prepend_base: config.policy.announce.as_path_prepend,
        as_path_prepend: intent.map_or(0, |i| i.as_path_prepend),
        communities: intent
            .map(|i| i.communities.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default(),
        large_communities: intent
            .map(|i| i.large_communities.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default(),
        flaps: v.machine.flaps(),
        last_transition: v
            .machine
            .last_transition()
            .map(|(t, r)| (to_sys(*t), r.to_string())),
        transitions: v.transitions,
        checks_policy: config.checks_policy.to_string(),
        // From the newest guarded result; false until one arrives.
        local_address_assigned: config.local_address.as_ref().map(|_| {
            v.checks
                .iter()
                .filter_map(|c| Some((c.last_time?, c.last.as_ref()?)))
                .max_by_key(|(t, _)| *t)
                .and_then(|(_, r)| r.get("local_address_assigned")?.as_bool())
                .unwrap_or(false)
        }),
        // The engine's, set by the caller that has it.
        flows: None,
        degraded: v
            .checks
            .iter()
            .any(|c| c.degradation.is_some())
            .then(|| v.machine.degraded()),
        damping: v.machine.policy().damping.map(|_| DampingView {
            suppressed: v.machine.damped(),
            penalty: 0,
            last_flap: None,
            reuse_time: None,
        }),
        checks: v
            .checks
            .iter()
            .zip(&config.checks)
            .take(match want {
                Want::Checks => usize::MAX,
                Want::Detailed if config.checks.iter().any(|c| c.detailed_metrics) => usize::MAX,
                Want::Vip | Want::Detailed => 0,
            })
            .map(|(c, cfg)| CheckView {
                name: c.name.clone(),
                kind: cfg.probe.kind().as_str().to_string(),
                healthy: c.hysteresis.healthy(),
                consecutive_ok: c.hysteresis.consecutive_ok(),
                consecutive_fail: c.hysteresis.consecutive_fail(),
                last: c.last.as_ref().map(|r| r.to_result()),
                last_time: c.last_time.map(to_sys),
                last_transition: c.last_transition.map(|(t, r)| (to_sys(t), r.to_string())),
                total_ok: c.total_ok,
                total_fail: c.total_fail,
                timeouts: c.timeouts,
                bucket_bounds: duration_buckets(c.bucket_timeout).to_vec(),
                buckets: c.buckets.to_vec(),
                duration_sum: c.duration_sum,
                detailed_metrics: cfg.detailed_metrics,
                degraded: c.degradation.as_ref().map(|d| d.degraded()),
            })
            .collect(),
    }
}

/// The checks a trigger of `vip` (only `check`, when given) runs; `running`
/// says whether the VIP's check loops run (not when they could not start).
/// A VIP without checks (`always`) runs none, which is its answer (see
/// [`trigger_outcome`]); else none to run is an error naming why: no such
/// VIP or check, or checks that are not running.
pub fn trigger_checks(
    engine: &Engine,
    vip: &str,
    check: Option<&str>,
    running: bool,
) -> Result<Vec<CheckId>, ApiError> {
    let Some(slot) = engine.vip(vip) else {
        return Err(ApiError::NotFound(format!("VIP not found: {vip}")));
    };
    let not_found = |c: &str| ApiError::NotFound(format!("check not found: {c}"));
    if slot.checks.is_empty() {
        return match check {
            Some(c) => Err(not_found(c)),
            None => Ok(Vec::new()),
        };
    }
    if !running {
        return Err(ApiError::Unavailable(format!(
            "the checks of VIP {vip} are not running"
        )));
    }
    let selected: Vec<CheckId> = slot
        .checks
        .iter()
        .filter(|c| check.is_none_or(|n| c.name == n))
        .map(|c| c.id)
        .collect();
    match check {
        Some(c) if selected.is_empty() => Err(not_found(c)),
        _ => Ok(selected),
    }
}

/// The answer to a trigger the rate limit or a running one refused.
pub fn trigger_refused(vip: &str, why: Refusal, retry_after: Duration) -> ApiError {
    let message = match why {
        Refusal::RateLimited => format!(
            "too many triggers for VIP {vip}: at most {BURST} at once, then one per {} s",
            REFILL.as_secs_f64()
        ),
        Refusal::Running => format!("another trigger of VIP {vip} is running"),
    };
    ApiError::Busy {
        message,
        retry_after,
    }
}

/// The outcome of a finished trigger run of `vip`: each check's result,
/// the VIP's checks_policy over them (a check that did not run counts as
/// failed) and the VIP's state after the results went through the
/// hysteresis.
pub fn trigger_outcome(
    engine: &Engine,
    vip: &str,
    results: Vec<(String, CheckResult)>,
) -> Result<TriggerOutcome, ApiError> {
    let slot = engine
        .vip(vip)
        .ok_or_else(|| ApiError::NotFound(format!("VIP not found: {vip}")))?;
    let names: Vec<String> = slot.checks.iter().map(|c| c.name.clone()).collect();
    let all = Expr::All;
    let expr = slot.full_config().map_or(&all, |v| &v.checks_expr);
    // A VIP without checks: its health (an `always` VIP's is good).
    let combined = if names.is_empty() {
        slot.machine.healthy()
    } else {
        policy::eval(expr, &names, &|n| {
            results.iter().any(|(c, r)| c == n && r.ok)
        })
    };
    Ok(TriggerOutcome {
        vip: vip.to_string(),
        results,
        combined,
        state: slot.machine.state().as_str(),
    })
}
