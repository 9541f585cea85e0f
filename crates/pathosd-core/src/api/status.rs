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
use serde_json::{Map, Value};
use std::time::{Duration, SystemTime};

/// A JSON object built member by member. The renderings below build their
/// objects through this one routine rather than `json!`, which compiles a
/// `to_value` with its error path and a map insert for every member (about
/// 13 KB on mips for the /status renderings, issue 12). The values are the
/// ones `to_value` gives: `Value::from` of the same number, string, bool or
/// list.
#[derive(Default)]
pub struct Obj(Map<String, Value>);

impl Obj {
    /// Adds the member `key` (replacing one of that name, as `json!` does).
    #[inline(never)]
    pub fn put(mut self, key: &str, v: Value) -> Obj {
        self.0.insert(key.to_string(), v);
        self
    }

    /// `last_transition_time` and `last_transition_reason`, written the
    /// same way for a check and for a VIP (both null before the first
    /// transition).
    #[inline(never)]
    fn transition(self, t: &Option<(SystemTime, String)>) -> Obj {
        let (at, reason) = match t {
            Some((at, reason)) => (Some(*at), Value::String(reason.clone())),
            None => (None, Value::Null),
        };
        self.put("last_transition_time", time(at))
            .put("last_transition_reason", reason)
    }

    pub fn done(self) -> Value {
        Value::Object(self.0)
    }
}

/// Milliseconds as a float, rounded to the microsecond.
pub(crate) fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn time(t: Option<SystemTime>) -> Value {
    t.map_or(Value::Null, |t| Value::String(utc_timestamp(t)))
}

/// A result's `details` as JSON (what `to_value` of the map gives).
fn details(d: &std::collections::BTreeMap<String, Value>) -> Value {
    Value::Object(d.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
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
    Obj::default()
        .put("open", c.open.into())
        .put("update", c.update.into())
        .put("notification", c.notification.into())
        .put("keepalive", c.keepalive.into())
        .put("route_refresh", c.route_refresh.into())
        .put("total", c.total().into())
        .done()
}

pub(crate) fn peer_json(p: &PeerView) -> Value {
    Obj::default()
        .put("name", p.name.clone().into())
        .put("address", p.address.to_string().into())
        .put("peer_asn", p.peer_asn.into())
        .put("session_state", p.state.clone().into())
        .put("required", p.required.into())
        .put(
            "uptime_seconds",
            p.established_for.map(|d| d.as_secs()).into(),
        )
        .put("last_error", opt_str(&p.last_error))
        .put("notification_sent", opt_str(&p.notification_sent))
        .put("notification_received", opt_str(&p.notification_received))
        .put("messages_received", counts(&p.received))
        .put("messages_sent", counts(&p.sent))
        .put("advertised", p.advertised.into())
        .put("flaps", p.flaps.into())
        .done()
}

/// One check result as the trigger returns it (and /status embeds it).
pub(crate) fn result_json(r: &CheckResult) -> Value {
    Obj::default()
        .put("success", r.ok.into())
        .put("detail", r.detail.clone().into())
        .put("duration_ms", millis(r.duration).into())
        .put("timed_out", r.timed_out.into())
        .put("details", details(&r.details))
        .done()
}

pub(crate) fn check_json(c: &CheckView) -> Value {
    let (h, hn) = health(c.healthy);
    let last = c.last.as_ref();
    Obj::default()
        .put("name", c.name.clone().into())
        .put("type", c.kind.clone().into())
        .put("health", h.into())
        .put("health_name", hn.into())
        .put("consecutive_ok", c.consecutive_ok.into())
        .put("consecutive_fail", c.consecutive_fail.into())
        .put("last_check_success", last.map(|r| r.ok).into())
        .put("last_check_detail", last.map(|r| r.detail.clone()).into())
        .put(
            "last_check_duration_ms",
            last.map(|r| millis(r.duration)).into(),
        )
        .put("last_check_time", time(c.last_time))
        .put("timed_out", last.map(|r| r.timed_out).into())
        .put(
            "details",
            last.map_or_else(|| Value::Object(Map::new()), |r| details(&r.details)),
        )
        .transition(&c.last_transition)
        .put("total_ok", c.total_ok.into())
        .put("total_fail", c.total_fail.into())
        .put("timeouts", c.timeouts.into())
        .put("detailed_metrics", c.detailed_metrics.into())
        .done()
}

pub fn vip_json(v: &VipView) -> Value {
    let (h, hn) = health(v.healthy);
    // The Go pathosd had one check per VIP; its VIP-level check fields now
    // mirror the first check so its consumers keep working.
    let first = v.checks.first();
    let last = first.and_then(|c| c.last.as_ref());
    let [withdrawn, announced, pessimized] = v.transitions;
    Obj::default()
        .put("name", v.name.clone().into())
        .put("prefix", v.prefix.clone().into())
        .put("state", state_code(v.state).into())
        .put("state_name", v.state.into())
        .put("health", h.into())
        .put("health_name", hn.into())
        .put("drain", (v.drain_file || v.drain_api).into())
        .put("drain_file", v.drain_file.into())
        .put("drain_api", v.drain_api.into())
        .put("as_path_prepend_base", v.as_path_prepend_base.into())
        .put("as_path_prepend", v.as_path_prepend.into())
        .put("communities", v.communities.clone().into())
        .put("large_communities", v.large_communities.clone().into())
        .put("flaps", v.flaps.into())
        .put(
            "transitions",
            Obj::default()
                .put("withdrawn", withdrawn.into())
                .put("announced", announced.into())
                .put("pessimized", pessimized.into())
                .done(),
        )
        .transition(&v.last_transition)
        .put("checks_policy", v.checks_policy.clone().into())
        .put("local_address_assigned", v.local_address_assigned.into())
        .put(
            "consecutive_ok",
            first.map_or(0, |c| c.consecutive_ok).into(),
        )
        .put(
            "consecutive_fail",
            first.map_or(0, |c| c.consecutive_fail).into(),
        )
        .put("check_type", first.map(|c| c.kind.clone()).into())
        .put("last_check_success", last.map(|r| r.ok).into())
        .put("last_check_detail", last.map(|r| r.detail.clone()).into())
        .put("last_check_time", time(first.and_then(|c| c.last_time)))
        .put("checks", v.checks.iter().map(check_json).collect())
        .done()
}

/// The whole `/status` document (also ubus `status`).
pub fn status_json(s: &Snapshot) -> Value {
    Obj::default()
        .put("router_id", s.router_id.clone().into())
        .put("asn", s.asn.into())
        .put("version", s.version.into())
        .put("start_time", utc_timestamp(s.start_time).into())
        .put("uptime_seconds", s.uptime.as_secs().into())
        .put("peers", s.peers.iter().map(peer_json).collect())
        .put("vips", s.vips.iter().map(vip_json).collect())
        .put(
            "last_reload",
            s.last_reload.as_ref().map(reload_json).into(),
        )
        .put("blocking_pool", pool_json(&s.blocking_pool))
        .done()
}

/// `blocking_pool` of `/status`: the pool of https, proxied http and gRPC
/// probes, its load now and its counters since start.
pub(crate) fn pool_json(p: &PoolView) -> Value {
    // As `millis` rounds, without a Duration (from_secs_f64 panics on
    // values out of its range).
    let queue_wait_ms = (p.wait_sum * 1e6).round() / 1e3;
    Obj::default()
        .put("workers", p.workers.into())
        .put("workers_max", p.workers_max.into())
        .put("running", p.running.into())
        .put("queued", p.queued.into())
        .put("queue_max", p.queue_max.into())
        .put("run", p.run.into())
        .put("refused", p.refused.into())
        .put("expired", p.expired.into())
        .put("queue_wait_ms", queue_wait_ms.into())
        .done()
}

/// `last_reload` of `/status`: `result` is "applied" or "rejected" (the
/// daemon kept its previous configuration), `errors` every reason.
pub(crate) fn reload_json(r: &ReloadRecord) -> Value {
    Obj::default()
        .put("time", utc_timestamp(r.time).into())
        .put(
            "result",
            if r.applied { "applied" } else { "rejected" }.into(),
        )
        .put("errors", r.errors.clone().into())
        .put("needs_restart", r.needs_restart.clone().into())
        .done()
}

/// `/readyz`: ready when every required peer is Established (no peers is ready).
pub(crate) fn ready_json(s: &Snapshot) -> (bool, Value) {
    let unready: Vec<&str> = s.unready_peers().iter().map(|p| p.name.as_str()).collect();
    let peers: Vec<Value> = s.peers.iter().map(peer_json).collect();
    if unready.is_empty() {
        let v = Obj::default()
            .put("status", "ready".into())
            .put("peers", peers.into());
        (true, v.done())
    } else {
        let v = Obj::default()
            .put("status", "not_ready".into())
            .put("unready", unready.into())
            .put("peers", peers.into());
        (false, v.done())
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
                .map(|(n, r)| (n.clone(), details(&r.details)))
                .collect();
            Obj::default()
                .put("success", o.combined.into())
                .put("detail", detail.join("; ").into())
                .put("duration_ms", millis(longest).into())
                .put("timed_out", rs.iter().any(|(_, r)| r.timed_out).into())
                .put("details", details.into())
                .done()
        }
    };
    Obj::default()
        .put("vip", o.vip.clone().into())
        .put("result", result)
        .put("results", results.into())
        .put("state", o.state.into())
        .done()
}
