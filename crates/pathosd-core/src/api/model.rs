//! A point-in-time copy of the daemon's state, made by the owner task and
//! rendered elsewhere (JSON, metrics, HTML, ubus) so rendering never holds up
//! routing decisions.

use super::status::StatusQuery;
use crate::check::CheckResult;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MsgCounts {
    pub open: u32,
    pub update: u32,
    pub notification: u32,
    pub keepalive: u32,
    pub route_refresh: u32,
}

impl MsgCounts {
    pub fn total(&self) -> u32 {
        self.open
            .saturating_add(self.update)
            .saturating_add(self.notification)
            .saturating_add(self.keepalive)
            .saturating_add(self.route_refresh)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PeerView {
    pub name: String,
    pub address: IpAddr,
    pub peer_asn: u32,
    pub required: bool,
    /// RFC 4271 state, lower case: idle, connect, active, opensent, openconfirm, established.
    pub state: String,
    pub established_for: Option<Duration>,
    pub last_error: Option<String>,
    pub notification_sent: Option<String>,
    pub notification_received: Option<String>,
    pub received: MsgCounts,
    pub sent: MsgCounts,
    /// Prefixes currently advertised to this peer.
    pub advertised: u32,
    /// Times the session left Established.
    pub flaps: u32,
    /// What the peer has from us now (its Adj-RIB-Out), as sent.
    pub routes: Vec<(crate::bgp::types::Prefix, crate::bgp::types::PathAttrs)>,
    /// Its BFD session, when the neighbor has `bfd.enabled`.
    pub bfd: Option<BfdView>,
}

/// A neighbor's BFD session (RFC 5880) as the owner's BFD driver holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct BfdView {
    /// bfd.SessionState: admin_down, down, init or up.
    pub state: &'static str,
    /// bfd.RemoteSessionState, as the peer last said.
    pub remote_state: &'static str,
    /// bfd.LocalDiag: why the session last changed state (RFC 5880 §4.1's
    /// names, lower case with underscores).
    pub diag: &'static str,
    /// RFC 5883 multihop (port 4784) rather than RFC 5881 single hop.
    pub multihop: bool,
    pub local_discriminator: u32,
    /// 0 until the peer is heard.
    pub remote_discriminator: u32,
    /// Since when the session is Up.
    pub up_for: Option<Duration>,
    /// Up → Down transitions that took the BGP session down (RFC 5882).
    pub downs: u32,
    /// Datagrams from the peer's address dropped, by reason, every reason
    /// listed (`bfd::DropReason::as_str`).
    pub dropped: Vec<(&'static str, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckView {
    pub name: String,
    pub kind: String,
    pub healthy: bool,
    pub consecutive_ok: u32,
    pub consecutive_fail: u32,
    pub last: Option<CheckResult>,
    pub last_time: Option<SystemTime>,
    pub last_transition: Option<(SystemTime, String)>,
    pub total_ok: u32,
    pub total_fail: u32,
    pub timeouts: u32,
    pub bucket_bounds: Vec<f64>,
    pub buckets: Vec<u64>,
    pub duration_sum: f64,
    pub detailed_metrics: bool,
    /// Some for a check with graded health (`degraded_latency`): whether
    /// its passing probes are too slow.
    pub degraded: Option<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VipView {
    pub name: String,
    /// The first prefix.
    pub prefix: String,
    /// The others, when the VIP has several (empty for one).
    pub more_prefixes: Vec<String>,
    /// withdrawn, announced or pessimized.
    pub state: &'static str,
    pub healthy: bool,
    pub drain_file: bool,
    pub drain_api: bool,
    pub as_path_prepend_base: u8,
    /// Prepends applied now (0 while withdrawn).
    pub as_path_prepend: u8,
    pub communities: Vec<String>,
    pub large_communities: Vec<String>,
    pub flaps: u32,
    pub last_transition: Option<(SystemTime, String)>,
    /// Transitions into withdrawn, announced, pessimized.
    pub transitions: [u32; 3],
    pub checks_policy: String,
    /// Some while require_local_address is set: whether the address is local.
    pub local_address_assigned: Option<bool>,
    /// Some while the VIP's drain waits for its flows
    /// (`drain_until_flows_below`): the last count of them.
    pub flows: Option<u32>,
    /// Some when a check of the VIP has graded health: whether one of them
    /// says degraded (the VIP is then pessimized while healthy).
    pub degraded: Option<bool>,
    /// Some while the VIP has `policy.damping` enabled.
    pub damping: Option<DampingView>,
    pub checks: Vec<CheckView>,
}

/// A VIP's damping: whether it suppresses the VIP now, and its penalty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DampingView {
    pub suppressed: bool,
    /// The penalty at the last flap (it decays with half_life from then).
    pub penalty: u32,
    pub last_flap: Option<SystemTime>,
    /// While suppressed: when the penalty falls below reuse.
    pub reuse_time: Option<SystemTime>,
}

/// The last reload attempt (SIGHUP or ubus `reload`) since
/// start: a rejected one leaves the previous configuration running, and a
/// partly applied one leaves part of it running, which nothing else shows,
/// so /status and ubus `status` carry it for LuCI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadRecord {
    pub time: SystemTime,
    pub result: ReloadResult,
    /// Rejected: why (each error names its place in the file). Partly
    /// applied: what did not take effect, and why.
    pub errors: Vec<String>,
    /// Settings that changed but apply only after a restart (config
    /// paths such as `api.listen`); empty when rejected.
    pub needs_restart: Vec<String>,
}

/// What became of a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadResult {
    /// The file is valid and every change took effect (or waits for a
    /// restart, as `needs_restart` says).
    Applied,
    /// The file is valid and applied, but something the owner runs beside
    /// the state could not take its new settings (the API's new address
    /// could not be bound): `errors` says what and why; that part runs on
    /// with its old settings.
    PartiallyApplied,
    /// The file is invalid: the previous configuration still runs.
    Rejected,
}

impl ReloadResult {
    /// As `last_reload.result` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReloadResult::Applied => "applied",
            ReloadResult::PartiallyApplied => "partially_applied",
            ReloadResult::Rejected => "rejected",
        }
    }
}

/// Upper bounds (seconds) of the blocking pool's queue-wait histogram: a
/// job that waits longer than its check timeout is dropped unrun, and check
/// timeouts are milliseconds to a few seconds.
pub const POOL_WAIT_BOUNDS: [f64; 8] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// The load of the bounded pool for probe work that can only block (https,
/// proxied http, gRPC), as its worker threads counted it. The counters run
/// from the daemon's start (the pool lives as long as the process).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolView {
    /// Worker threads started (started as the work needs them, then kept).
    pub workers: u32,
    pub workers_max: u32,
    /// Jobs a worker runs now.
    pub running: u32,
    /// Jobs waiting for a worker now.
    pub queued: u32,
    pub queue_max: u32,
    /// Jobs a worker ran (a panic counts: it ran).
    pub run: u64,
    /// Jobs not run because the queue was full (their probe failed at once).
    pub refused: u64,
    /// Jobs dropped unrun: their probe timed out before a worker took them.
    pub expired: u64,
    /// Jobs that waited at most each of [`POOL_WAIT_BOUNDS`] (cumulative).
    pub wait_buckets: [u64; POOL_WAIT_BOUNDS.len()],
    /// Seconds that the jobs taken so far waited in the queue, summed.
    pub wait_sum: f64,
    /// Jobs taken from the queue (run + expired).
    pub wait_count: u64,
}

/// Which VIPs a snapshot holds views of. A view of every VIP with its
/// checks is most of what a status request costs at scale (10,000 VIPs:
/// hundreds of milliseconds on the daemon's one thread), so each request
/// asks for what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every VIP: /status, /metrics, the HTML page.
    All,
    /// No VIP, only the daemon's own state and the peers: /healthz, /readyz.
    Summary,
    /// The VIP of that name, if there is one: ubus `vip`, /api/v1/vips/NAME.
    Vip(String),
    /// One page of the VIPs that match, with the counts of all of them:
    /// ubus `status`, /status with a query.
    Page(StatusQuery),
}

/// How much of a VIP a view holds: a streamed answer asks for a view per
/// VIP and per family of /metrics, and most families show nothing of the
/// checks, whose views are most of a view's cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// The VIP without its checks (`checks` empty).
    Vip,
    /// The VIP and its checks.
    Checks,
    /// The checks only when one of them has `detailed_metrics` (else none).
    Detailed,
}

/// How many VIPs there are in each state, over all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VipCounts {
    pub total: u32,
    pub withdrawn: u32,
    pub announced: u32,
    pub pessimized: u32,
    pub healthy: u32,
    pub unhealthy: u32,
    pub drained: u32,
}

impl VipCounts {
    fn add(&mut self, v: &VipKey) {
        self.total += 1;
        match v.state {
            "announced" => self.announced += 1,
            "pessimized" => self.pessimized += 1,
            _ => self.withdrawn += 1,
        }
        if v.healthy {
            self.healthy += 1;
        } else {
            self.unhealthy += 1;
        }
        if v.drained {
            self.drained += 1;
        }
    }
}

/// A page's place among the VIPs (with [`Scope::Page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageInfo {
    pub query: StatusQuery,
    pub counts: VipCounts,
    /// VIPs that match the query's filters.
    pub matched: usize,
}

/// What selecting VIPs for a scope looks at, per VIP: cheap to read from
/// the daemon's state, unlike a whole view.
pub struct VipKey<'a> {
    pub name: &'a str,
    /// Written out only when the query has a `search`.
    pub prefix: PrefixOf<'a>,
    pub state: &'static str,
    pub healthy: bool,
    pub drained: bool,
}

/// A VIP's prefixes as the owner has them (values) or a view has them
/// (text): the first, and the others of a VIP with several.
pub enum PrefixOf<'a> {
    Value(crate::bgp::types::Prefix, &'a [crate::bgp::types::Prefix]),
    Text(&'a str, &'a [String]),
}

impl PrefixOf<'_> {
    /// Every prefix, separated by spaces (what a search looks in).
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        use std::fmt::Write;
        let mut out = String::new();
        match self {
            PrefixOf::Value(p, more) => {
                for p in std::iter::once(p).chain(*more) {
                    let _ = write!(out, "{p} ");
                }
            }
            PrefixOf::Text(t, []) => return (*t).into(),
            PrefixOf::Text(t, more) => {
                for p in std::iter::once(*t).chain(more.iter().map(String::as_str)) {
                    out.push_str(p);
                    out.push(' ');
                }
            }
        }
        out.pop();
        out.into()
    }
}

/// What selecting looks at of a view.
pub(crate) fn key_of(v: &VipView) -> VipKey<'_> {
    VipKey {
        name: &v.name,
        prefix: PrefixOf::Text(&v.prefix, &v.more_prefixes),
        state: v.state,
        healthy: v.healthy,
        drained: v.drain_file || v.drain_api,
    }
}

/// The VIPs of `scope`, by their position in `vips` (config order), and
/// for a page its counts: the one selection rule for the daemon's owner,
/// which then builds views of those VIPs only, and for
/// [`Snapshot::scoped`].
pub fn select<'a>(
    scope: &Scope,
    vips: impl Iterator<Item = VipKey<'a>>,
) -> (Vec<usize>, Option<PageInfo>) {
    match scope {
        Scope::All => (vips.enumerate().map(|(i, _)| i).collect(), None),
        Scope::Summary => (Vec::new(), None),
        Scope::Vip(name) => (
            vips.enumerate()
                .filter(|(_, v)| v.name == name)
                .map(|(i, _)| i)
                .take(1)
                .collect(),
            None,
        ),
        Scope::Page(q) => {
            let mut counts = VipCounts::default();
            let mut matched = 0usize;
            let mut picked = Vec::new();
            for (i, v) in vips.enumerate() {
                counts.add(&v);
                if q.matches(&v) {
                    if matched >= q.offset && picked.len() < q.limit {
                        picked.push(i);
                    }
                    matched += 1;
                }
            }
            let page = PageInfo {
                query: q.clone(),
                counts,
                matched,
            };
            (picked, Some(page))
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub router_id: String,
    pub asn: u32,
    pub version: &'static str,
    pub start_time: SystemTime,
    pub uptime: Duration,
    pub peers: Vec<PeerView>,
    pub vips: Vec<VipView>,
    /// None until the first reload attempt.
    pub last_reload: Option<ReloadRecord>,
    pub blocking_pool: PoolView,
    /// The OTLP metrics exporter's counters; None while none runs.
    pub otel: Option<OtelView>,
    /// BFD datagrams that matched no session (an unknown source address or
    /// discriminator), dropped.
    pub bfd_unmatched: u64,
    /// Hook events dropped because the hooks' queue was full.
    pub hook_drops: u64,
    /// With [`Scope::Page`]: where `vips` is among all of them.
    pub page: Option<PageInfo>,
}

impl Snapshot {
    /// This snapshot of every VIP cut down to `scope`, as the owner would
    /// have built it (for test owners, which hold one snapshot).
    pub fn scoped(mut self, scope: &Scope) -> Snapshot {
        let (picked, page) = select(scope, self.vips.iter().map(key_of));
        let mut keep = picked.into_iter().peekable();
        let mut i = 0;
        self.vips.retain(|_| {
            let k = keep.peek() == Some(&i);
            if k {
                keep.next();
            }
            i += 1;
            k
        });
        self.page = page;
        self
    }

    /// Required peers that are not Established (for /readyz).
    pub(crate) fn unready_peers(&self) -> Vec<&PeerView> {
        self.peers
            .iter()
            .filter(|p| p.required && p.state != "established")
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<(String, &'static str, bool)> {
        (0..n)
            .map(|i| {
                let state = ["announced", "withdrawn", "pessimized"][i % 3];
                (format!("vip{i}"), state, i % 3 != 1)
            })
            .collect()
    }

    fn pick(scope: &Scope, v: &[(String, &'static str, bool)]) -> (Vec<usize>, Option<PageInfo>) {
        select(
            scope,
            v.iter().map(|(name, state, healthy)| VipKey {
                name,
                prefix: PrefixOf::Text("10.0.0.1/32", &[]),
                state,
                healthy: *healthy,
                drained: *state == "pessimized",
            }),
        )
    }

    /// A page counts every VIP, numbers the matching ones and takes
    /// `limit` of them from `offset`; the other scopes pick all, none or one.
    #[test]
    fn select_pages_and_counts() {
        let v = keys(10);
        let q = StatusQuery {
            offset: 1,
            limit: 2,
            state: Some("announced"),
            ..StatusQuery::default()
        };
        let (picked, page) = pick(&Scope::Page(q), &v);
        // announced: 0, 3, 6, 9; from the second, two.
        assert_eq!(picked, vec![3, 6]);
        let page = page.unwrap();
        assert_eq!(page.matched, 4);
        assert_eq!(
            page.counts,
            VipCounts {
                total: 10,
                announced: 4,
                withdrawn: 3,
                pessimized: 3,
                healthy: 7,
                unhealthy: 3,
                drained: 3,
            }
        );
        assert_eq!(pick(&Scope::All, &v).0.len(), 10);
        assert!(pick(&Scope::Summary, &v).0.is_empty());
        assert_eq!(pick(&Scope::Vip("vip7".into()), &v).0, vec![7]);
        assert!(pick(&Scope::Vip("nope".into()), &v).0.is_empty());
        let search = StatusQuery {
            search: Some("0.0.1/".into()),
            ..StatusQuery::default()
        };
        assert_eq!(pick(&Scope::Page(search), &v).0.len(), 10);
    }
}

/// The OTLP exporter: requests by outcome since the daemon started
/// (u32: one a second would take 136 years to wrap), its queues now, and
/// each signal's collector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtelView {
    /// Requests the collector accepted (2xx).
    pub exported: u32,
    /// Attempts that failed (and were retried or, not retryable, dropped).
    pub failed: u32,
    /// Batches dropped: the oldest when its signal's queue was full, or refused by
    /// the collector with a status that is not retryable.
    pub dropped: u32,
    /// Batches waiting to be sent, all signals together.
    pub queued: u32,
    /// Spans dropped before they were encoded: the oldest when the span
    /// buffer was full between two drains.
    pub spans_dropped: u32,
    /// Log records dropped before they were encoded: the oldest when the
    /// buffer was full, or one that found the buffer being drained.
    pub logs_dropped: u32,
    /// Metrics, traces and logs ([`OTEL_SIGNALS`]): None for a signal
    /// that is not exported.
    pub signals: [Option<OtelSignal>; 3],
}

/// The names of [`OtelView::signals`], in order.
pub const OTEL_SIGNALS: [&str; 3] = ["metrics", "traces", "logs"];

/// One signal's way to its collector, now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtelSignal {
    /// The collector's URL.
    pub endpoint: String,
    /// Requests waiting to be sent.
    pub queued: u32,
    /// Why the last attempt failed; None once one is accepted again.
    pub last_error: Option<String>,
    /// While the signal waits to try again: how long until it does.
    pub next_try_in: Option<Duration>,
}
