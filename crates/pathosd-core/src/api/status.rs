//! JSON renderings of a [`Snapshot`] for `/status`, `/readyz`, the ubus
//! `status` / `vip` methods and the check trigger. Field names follow the Go
//! pathosd's `/status` (router_id, asn, session_state, state/state_name,
//! health/health_name, ...) so its consumers keep working; everything beyond
//! that is additive. Objects are serde_json maps, which are key-sorted in this
//! build: sorted keys are the "stable order".

use super::model::{CheckView, MsgCounts, PeerView, PoolView, ReloadRecord, Snapshot, VipView};
use super::TriggerOutcome;
use crate::check::CheckResult;
use crate::time::utc_timestamp;
use serde_json::{json, Map, Value};
use std::time::{Duration, SystemTime};

/// Milliseconds as a float, rounded to the microsecond.
pub(crate) fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn time(t: Option<SystemTime>) -> Value {
    t.map_or(Value::Null, |t| Value::String(utc_timestamp(t)))
}

fn opt_str(s: &Option<String>) -> Value {
    s.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
}

/// The numeric VIP state of the Go pathosd: 0 withdrawn, 1 announced, 2 pessimized.
pub(crate) fn state_code(state: &str) -> u8 {
    match state {
        "announced" => 1,
        "pessimized" => 2,
        _ => 0,
    }
}

/// 1 healthy, 2 unhealthy (0, unknown, is never produced: a check that has not
/// reported counts as unhealthy).
fn health(healthy: bool) -> (u8, &'static str) {
    if healthy {
        (1, "healthy")
    } else {
        (2, "unhealthy")
    }
}

fn counts(c: &MsgCounts) -> Value {
    json!({
        "open": c.open,
        "update": c.update,
        "notification": c.notification,
        "keepalive": c.keepalive,
        "route_refresh": c.route_refresh,
        "total": c.total(),
    })
}

pub(crate) fn peer_json(p: &PeerView) -> Value {
    json!({
        "name": p.name,
        "address": p.address.to_string(),
        "peer_asn": p.peer_asn,
        "session_state": p.state,
        "required": p.required,
        "uptime_seconds": p.established_for.map(|d| d.as_secs()),
        "last_error": opt_str(&p.last_error),
        "notification_sent": opt_str(&p.notification_sent),
        "notification_received": opt_str(&p.notification_received),
        "messages_received": counts(&p.received),
        "messages_sent": counts(&p.sent),
        "advertised": p.advertised,
        "flaps": p.flaps,
    })
}

/// One check result as the trigger returns it (and /status embeds it).
pub(crate) fn result_json(r: &CheckResult) -> Value {
    json!({
        "success": r.ok,
        "detail": r.detail,
        "duration_ms": millis(r.duration),
        "timed_out": r.timed_out,
        "details": r.details,
    })
}

pub(crate) fn check_json(c: &CheckView) -> Value {
    let (h, hn) = health(c.healthy);
    let last = c.last.as_ref();
    json!({
        "name": c.name,
        "type": c.kind,
        "health": h,
        "health_name": hn,
        "consecutive_ok": c.consecutive_ok,
        "consecutive_fail": c.consecutive_fail,
        "last_check_success": last.map(|r| r.ok),
        "last_check_detail": last.map(|r| r.detail.clone()),
        "last_check_duration_ms": last.map(|r| millis(r.duration)),
        "last_check_time": time(c.last_time),
        "timed_out": last.map(|r| r.timed_out),
        "details": last.map_or_else(|| Value::Object(Map::new()), |r| json!(r.details)),
        "last_transition_time": time(c.last_transition.as_ref().map(|t| t.0)),
        "last_transition_reason": c.last_transition.as_ref().map(|t| t.1.clone()),
        "total_ok": c.total_ok,
        "total_fail": c.total_fail,
        "timeouts": c.timeouts,
        "detailed_metrics": c.detailed_metrics,
    })
}

pub fn vip_json(v: &VipView) -> Value {
    let (h, hn) = health(v.healthy);
    // The Go pathosd had one check per VIP; its VIP-level check fields now
    // mirror the first check so its consumers keep working.
    let first = v.checks.first();
    let last = first.and_then(|c| c.last.as_ref());
    json!({
        "name": v.name,
        "prefix": v.prefix,
        "state": state_code(v.state),
        "state_name": v.state,
        "health": h,
        "health_name": hn,
        "drain": v.drain_file || v.drain_api,
        "drain_file": v.drain_file,
        "drain_api": v.drain_api,
        "as_path_prepend_base": v.as_path_prepend_base,
        "as_path_prepend": v.as_path_prepend,
        "communities": v.communities,
        "large_communities": v.large_communities,
        "flaps": v.flaps,
        "transitions": {
            "withdrawn": v.transitions[0],
            "announced": v.transitions[1],
            "pessimized": v.transitions[2],
        },
        "last_transition_time": time(v.last_transition.as_ref().map(|t| t.0)),
        "last_transition_reason": v.last_transition.as_ref().map(|t| t.1.clone()),
        "checks_policy": v.checks_policy,
        "local_address_assigned": v.local_address_assigned,
        "consecutive_ok": first.map_or(0, |c| c.consecutive_ok),
        "consecutive_fail": first.map_or(0, |c| c.consecutive_fail),
        "check_type": first.map(|c| c.kind.clone()),
        "last_check_success": last.map(|r| r.ok),
        "last_check_detail": last.map(|r| r.detail.clone()),
        "last_check_time": time(first.and_then(|c| c.last_time)),
        "checks": v.checks.iter().map(check_json).collect::<Vec<_>>(),
    })
}

/// The whole `/status` document (also ubus `status`).
pub fn status_json(s: &Snapshot) -> Value {
    json!({
        "router_id": s.router_id,
        "asn": s.asn,
        "version": s.version,
        "start_time": utc_timestamp(s.start_time),
        "uptime_seconds": s.uptime.as_secs(),
        "peers": s.peers.iter().map(peer_json).collect::<Vec<_>>(),
        "vips": s.vips.iter().map(vip_json).collect::<Vec<_>>(),
        "last_reload": s.last_reload.as_ref().map(reload_json),
        "blocking_pool": pool_json(&s.blocking_pool),
    })
}

/// `blocking_pool` of `/status`: the pool of https, proxied http and gRPC
/// probes, its load now and its counters since start.
pub(crate) fn pool_json(p: &PoolView) -> Value {
    json!({
        "workers": p.workers,
        "workers_max": p.workers_max,
        "running": p.running,
        "queued": p.queued,
        "queue_max": p.queue_max,
        "run": p.run,
        "refused": p.refused,
        "expired": p.expired,
        // As `millis` rounds, without a Duration (from_secs_f64 panics on
        // values out of its range).
        "queue_wait_ms": (p.wait_sum * 1e6).round() / 1e3,
    })
}

/// `last_reload` of `/status`: `result` is "applied" or "rejected" (the
/// daemon kept its previous configuration), `errors` every reason.
pub(crate) fn reload_json(r: &ReloadRecord) -> Value {
    json!({
        "time": utc_timestamp(r.time),
        "result": if r.applied { "applied" } else { "rejected" },
        "errors": r.errors,
        "needs_restart": r.needs_restart,
    })
}

/// `/readyz`: ready when every required peer is Established (no peers is ready).
pub(crate) fn ready_json(s: &Snapshot) -> (bool, Value) {
    let unready: Vec<&str> = s.unready_peers().iter().map(|p| p.name.as_str()).collect();
    let peers: Vec<Value> = s.peers.iter().map(peer_json).collect();
    if unready.is_empty() {
        (true, json!({"status": "ready", "peers": peers}))
    } else {
        (
            false,
            json!({"status": "not_ready", "unready": unready, "peers": peers}),
        )
    }
}

/// The ad-hoc trigger's answer. `results` holds every check that ran by name;
/// `result` keeps the Go pathosd's field: the single check's result when one
/// check ran, else the combination under checks_policy with the longest
/// duration and `details` keyed by check name.
pub fn trigger_json(o: &TriggerOutcome) -> Value {
    let results: Map<String, Value> = o
        .results
        .iter()
        .map(|(n, r)| (n.clone(), result_json(r)))
        .collect();
    let result = match o.results.as_slice() {
        [(_, r)] => {
            let mut v = result_json(r);
            // checks_policy may still disagree (a ?check= run on a VIP whose
            // other checks count as failed): the combination decides success,
            // and the detail says why it differs from the check's own.
            if o.combined != r.ok {
                v["success"] = Value::Bool(o.combined);
                let policy = if o.combined { "holds" } else { "fails" };
                v["detail"] = Value::String(format!("{}; checks_policy {policy}", r.detail));
            }
            v
        }
        rs => {
            let detail: Vec<String> = rs
                .iter()
                .map(|(n, r)| format!("{n}: {}", r.detail))
                .collect();
            let longest = rs.iter().map(|(_, r)| r.duration).max().unwrap_or_default();
            let details: Map<String, Value> = rs
                .iter()
                .map(|(n, r)| (n.clone(), json!(r.details)))
                .collect();
            json!({
                "success": o.combined,
                "detail": detail.join("; "),
                "duration_ms": millis(longest),
                "timed_out": rs.iter().any(|(_, r)| r.timed_out),
                "details": details,
            })
        }
    };
    json!({
        "vip": o.vip,
        "result": result,
        "results": results,
        "state": o.state,
    })
}
