//! JSON renderings of a [`Snapshot`] for `/status`, `/readyz`, the ubus
//! `status` / `vip` methods and the check trigger. Field names follow the Go
//! pathosd's `/status` (router_id, asn, session_state, state/state_name,
//! health/health_name, ...) so its consumers keep working; everything beyond
//! that is additive. Objects are serde_json maps, which are key-sorted in this
//! build: sorted keys are the "stable order".

use super::model::{
    CheckView, MsgCounts, OtelView, PageInfo, PeerView, PoolView, ReloadRecord, Snapshot, VipKey,
    VipView, OTEL_SIGNALS,
};
use super::TriggerOutcome;
use crate::check::CheckResult;
use crate::time::utc_timestamp;
use serde_json::{Map, Value};
use std::time::{Duration, SystemTime};

/// A JSON object built member by member. The renderings below build their
/// objects through this one routine rather than `json!`, which compiles a
/// `to_value` with its error path and a map insert for every member (about
/// 13 KB on mips for the /status renderings). The values are the
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

    /// `key` only when there is a value (a field most objects lack).
    pub fn put_some(self, key: &str, v: Option<Value>) -> Obj {
        match v {
            Some(v) => self.put(key, v),
            None => self,
        }
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
        .put("bfd", p.bfd.as_ref().map_or(Value::Null, bfd_json))
        .done()
}

fn bfd_json(b: &super::model::BfdView) -> Value {
    let dropped = b
        .dropped
        .iter()
        .fold(Obj::default(), |o, (reason, n)| o.put(reason, (*n).into()));
    Obj::default()
        .put("state", b.state.into())
        .put("remote_state", b.remote_state.into())
        .put("diagnostic", b.diag.into())
        .put("multihop", b.multihop.into())
        .put("local_discriminator", b.local_discriminator.into())
        .put("remote_discriminator", b.remote_discriminator.into())
        .put("uptime_seconds", b.up_for.map(|d| d.as_secs()).into())
        .put("downs", b.downs.into())
        .put("dropped", dropped.done())
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
        .put_some("degraded", c.degraded.map(Into::into))
        .done()
}

/// Every prefix of the VIP, the first first.
fn prefixes(v: &VipView) -> Value {
    let mut all = Vec::with_capacity(1 + v.more_prefixes.len());
    all.push(Value::from(v.prefix.as_str()));
    for p in &v.more_prefixes {
        all.push(Value::from(p.as_str()));
    }
    Value::Array(all)
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
        .put("prefixes", prefixes(v))
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
        .put_some("flows", v.flows.map(Into::into))
        .put_some("degraded", v.degraded.map(Into::into))
        .put_some(
            "damping",
            v.damping.as_ref().map(|d| {
                Obj::default()
                    .put("suppressed", d.suppressed.into())
                    .put("penalty", d.penalty.into())
                    .put("last_flap_time", time(d.last_flap))
                    .put("reuse_time", time(d.reuse_time))
                    .done()
            }),
        )
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

/// The whole `/status` document.
pub fn status_json(s: &Snapshot) -> Value {
    status_json_with(s, s.vips.iter().map(vip_json).collect())
}

/// The document with `vips` given (all of them, or a page).
pub fn status_json_with(s: &Snapshot, vips: Value) -> Value {
    Obj::default()
        .put("router_id", s.router_id.clone().into())
        .put("asn", s.asn.into())
        .put("version", s.version.into())
        .put("start_time", utc_timestamp(s.start_time).into())
        .put("uptime_seconds", s.uptime.as_secs().into())
        .put("peers", s.peers.iter().map(peer_json).collect())
        .put("vips", vips)
        .put(
            "last_reload",
            s.last_reload.as_ref().map(reload_json).into(),
        )
        .put("blocking_pool", pool_json(&s.blocking_pool))
        .put("hook_events_dropped", s.hook_drops.into())
        .put("otel", s.otel.as_ref().map(otel_json).into())
        .done()
}

/// Most VIPs one page of the status holds (`limit`).
pub const MAX_PAGE: usize = 1000;
/// VIPs a page holds when the caller does not say (`limit`).
pub const DEFAULT_PAGE: usize = 100;
/// Longest `search` text, in bytes: VIP names are at most 64 characters and
/// prefixes shorter.
const MAX_SEARCH: usize = 128;

/// A page of the VIPs, as the ubus `status` method's arguments and the
/// query of `GET /status?…` ask for it: at 10,000 VIPs the whole document
/// is about 15 MB, over ubusd's 1 MiB message limit and more than a
/// browser page wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusQuery {
    pub offset: usize,
    pub limit: usize,
    /// Lower case; matches a VIP whose name or one of whose prefixes contains it. ASCII
    /// case only: VIP names and prefixes are ASCII, and `to_lowercase`
    /// would bring Unicode's case tables into the binary.
    pub search: Option<String>,
    /// withdrawn, announced or pessimized.
    pub state: Option<&'static str>,
    /// true: healthy only; false: unhealthy only.
    pub healthy: Option<bool>,
    /// VIPs without their `checks` list.
    pub compact: bool,
}

impl Default for StatusQuery {
    fn default() -> StatusQuery {
        StatusQuery {
            offset: 0,
            limit: DEFAULT_PAGE,
            search: None,
            state: None,
            healthy: None,
            compact: false,
        }
    }
}

impl StatusQuery {
    /// Sets one argument. Numbers and booleans may be JSON numbers and
    /// booleans (ubus) or text (an HTTP query); anything else is an error
    /// naming the argument and what it takes.
    pub fn set(&mut self, key: &str, v: &Value) -> Result<(), String> {
        let text = v.as_str();
        let int = || {
            v.as_u64()
                .or_else(|| text.and_then(|t| t.parse().ok()))
                .and_then(|n| usize::try_from(n).ok())
        };
        let bad = |what: &str| Err(format!("{key}: expected {what}"));
        match key {
            "offset" => match int() {
                Some(n) => self.offset = n,
                None => return bad("a number from 0"),
            },
            "limit" => match int() {
                Some(n) if n <= MAX_PAGE => self.limit = n,
                _ => return bad("a number from 0 to 1000"),
            },
            "search" => match text {
                Some(t) if t.len() <= MAX_SEARCH => {
                    self.search = (!t.is_empty()).then(|| t.to_ascii_lowercase())
                }
                _ => return bad("text of at most 128 bytes"),
            },
            "state" => match text {
                Some(s @ ("withdrawn" | "announced" | "pessimized")) => {
                    self.state = Some(match s {
                        "withdrawn" => "withdrawn",
                        "announced" => "announced",
                        _ => "pessimized",
                    })
                }
                _ => return bad("announced, pessimized or withdrawn"),
            },
            "health" => match text {
                Some("healthy") => self.healthy = Some(true),
                Some("unhealthy") => self.healthy = Some(false),
                _ => return bad("healthy or unhealthy"),
            },
            // blobmsg has no real bool: `ubus call` sends one as INT8, other
            // callers 0/1 as a wider integer, an HTTP query as text.
            "compact" => match (v.as_bool(), v.as_u64(), text) {
                (Some(b), _, _) => self.compact = b,
                (_, Some(0), _) | (_, _, Some("0" | "false")) => self.compact = false,
                (_, Some(1), _) | (_, _, Some("1" | "true")) => self.compact = true,
                _ => return bad("true or false (or 1 or 0)"),
            },
            _ => {
                return Err(format!(
                    "unknown argument {} (offset, limit, search, state, health, compact)",
                    crate::api::Quoted(key)
                ))
            }
        }
        Ok(())
    }

    pub(crate) fn matches(&self, v: &VipKey) -> bool {
        self.state.is_none_or(|s| s == v.state)
            && self.healthy.is_none_or(|h| h == v.healthy)
            && self.search.as_deref().is_none_or(|t| {
                v.name.to_ascii_lowercase().contains(t)
                    || v.prefix.text().to_ascii_lowercase().contains(t)
            })
    }
}

/// The status with one page of the VIPs: the document's other members as
/// in [`status_json`], `vips` the page (config order), and `vip_counts`
/// (every VIP), `vips_matched`, `offset`, `limit`, `next_offset` (null at
/// the end). `s` is a snapshot of [`Scope::Page`](super::model::Scope::Page)
/// (without its page information: the whole document). `fits` is asked
/// about each VIP in turn: a transport with a message limit (ubus) ends the
/// page early, and `next_offset` then says where the next one starts. The
/// first VIP of a page is always taken, so paging always moves on.
#[cfg(any(test, feature = "test-support"))]
pub fn status_page_json(s: &Snapshot, fits: &mut dyn FnMut(&Value) -> bool) -> Value {
    let Some(p) = &s.page else {
        return status_json(s);
    };
    let mut page = Vec::new();
    for v in &s.vips {
        let j = page_vip_json(v, &p.query);
        if !page.is_empty() && !fits(&j) {
            break;
        }
        page.push(j);
    }
    let shown = page.len();
    page_json(s, p, Value::Array(page), shown)
}

/// A VIP as a page shows it: without its checks when the query is compact.
pub fn page_vip_json(v: &VipView, q: &StatusQuery) -> Value {
    let mut j = vip_json(v);
    if q.compact {
        if let Value::Object(m) = &mut j {
            m.remove("checks");
        }
    }
    j
}

/// The document of a page of `shown` VIPs (`vips`) among those `p`
/// counts: the whole document's members and the page's.
pub fn page_json(s: &Snapshot, p: &PageInfo, vips: Value, shown: usize) -> Value {
    let q = &p.query;
    let shown = q.offset.saturating_add(shown);
    let next = (q.limit > 0 && shown < p.matched).then_some(shown);
    let c = &p.counts;
    let counts = Obj::default()
        .put("total", c.total.into())
        .put("withdrawn", c.withdrawn.into())
        .put("announced", c.announced.into())
        .put("pessimized", c.pessimized.into())
        .put("healthy", c.healthy.into())
        .put("unhealthy", c.unhealthy.into())
        .put("drained", c.drained.into())
        .done();
    let mut doc = status_json_with(s, vips);
    if let Value::Object(m) = &mut doc {
        m.insert("vip_counts".into(), counts);
        m.insert("vips_matched".into(), p.matched.into());
        m.insert("offset".into(), q.offset.into());
        m.insert("limit".into(), q.limit.into());
        m.insert("next_offset".into(), next.into());
    }
    doc
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

/// `otel` of `/status` (null while nothing is exported): the exporter's
/// counters, as in /metrics, and per signal (null when it is off) its
/// collector, its queue, why its last attempt failed (null once one is
/// accepted again) and, while it waits to try again, in how long.
pub(crate) fn otel_json(o: &OtelView) -> Value {
    let mut j = Obj::default()
        .put("exported", o.exported.into())
        .put("failed", o.failed.into())
        .put("dropped", o.dropped.into())
        .put("queued", o.queued.into())
        .put("spans_dropped", o.spans_dropped.into())
        .put("logs_dropped", o.logs_dropped.into());
    for (name, s) in OTEL_SIGNALS.iter().zip(&o.signals) {
        let v = s.as_ref().map(|s| {
            Obj::default()
                .put("endpoint", s.endpoint.clone().into())
                .put("queued", s.queued.into())
                .put("last_error", s.last_error.clone().into())
                .put(
                    "next_try_in_ms",
                    s.next_try_in
                        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                        .into(),
                )
                .done()
        });
        j = j.put(name, v.into());
    }
    j.done()
}

/// `last_reload` of `/status`: `result` is "applied", "partially_applied"
/// (some settings could not take effect: `errors` says which) or
/// "rejected" (the daemon kept its previous configuration), `errors`
/// every reason.
pub fn reload_json(r: &ReloadRecord) -> Value {
    Obj::default()
        .put("time", utc_timestamp(r.time).into())
        .put("result", r.result.as_str().into())
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
/// duration and `details` keyed by check name (a VIP without checks: none
/// ran, `success` is its health, and the detail says why).
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
            let detail: Vec<String> = match rs {
                // A VIP without checks (`always`) has none to run: the
                // answer says so instead of an empty detail.
                [] => vec![format!(
                    "VIP {} has no checks to run: it is always announced",
                    o.vip
                )],
                rs => rs
                    .iter()
                    .map(|(n, r)| format!("{n}: {}", r.detail))
                    .collect(),
            };
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
