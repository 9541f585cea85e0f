//! A point-in-time copy of the daemon's state, made by the owner task and
//! rendered elsewhere (JSON, metrics, HTML, ubus) so rendering never holds up
//! routing decisions.

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
}

#[derive(Debug, Clone, PartialEq)]
pub struct VipView {
    pub name: String,
    pub prefix: String,
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
    pub checks: Vec<CheckView>,
}

/// The last reload attempt (SIGHUP or ubus `reload`) since
/// start: a rejected one leaves the previous configuration running, which
/// nothing else shows, so /status and ubus `status` carry it for LuCI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadRecord {
    pub time: SystemTime,
    /// false: rejected, the previous configuration still runs.
    pub applied: bool,
    /// Why it was rejected (each error names its place in the file).
    pub errors: Vec<String>,
    /// Settings that changed but apply only after a restart (config
    /// paths such as `api.listen`); empty when rejected.
    pub needs_restart: Vec<String>,
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
}

impl Snapshot {
    /// Required peers that are not Established (for /readyz).
    pub(crate) fn unready_peers(&self) -> Vec<&PeerView> {
        self.peers
            .iter()
            .filter(|p| p.required && p.state != "established")
            .collect()
    }
}
