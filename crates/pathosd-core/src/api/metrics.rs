//! `/metrics`: the Go pathosd's `pathosd_*` families (with the `check` label
//! its multi-check successor added), BGP session families in the spirit of
//! GoBGP's collectors, and the opt-in per-check-type details. The families
//! are written in this order: the daemon's own ([`head_families`]), those
//! over the VIPs ([`PER_VIP`], each over every VIP), the peers'
//! ([`peer_families`]), the routes each peer has ([`ROUTE_STATE`]), the
//! blocking pool's and the exporter's ([`tail_families`]). `api::stream`
//! writes them a piece at a time, from views of one VIP at a time, into
//! the text of a scrape or an OTLP request.

use super::model::{CheckView, PeerView, PoolView, Snapshot, VipView, Want, POOL_WAIT_BOUNDS};
use super::prom::{Exposition, Family, Kind};
use super::status::state_code;
use crate::bgp::types::{PathAttrs, Prefix};
use std::time::{SystemTime, UNIX_EPOCH};

/// RFC 4271 §8.2.2 session states, the values of `bgp_peer_state`'s label.
pub(crate) const SESSION_STATES: [&str; 6] = [
    "idle",
    "connect",
    "active",
    "opensent",
    "openconfirm",
    "established",
];

const VIP_STATES: [&str; 3] = ["withdrawn", "announced", "pessimized"];

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn b(v: bool) -> f64 {
    if v {
        1.0
    } else {
        0.0
    }
}

fn vip_labels(v: &VipView) -> [(&str, &str); 2] {
    [("vip", &v.name), ("nlri", &v.prefix)]
}

fn check_labels<'a>(v: &'a VipView, c: &'a CheckView) -> [(&'a str, &'a str); 4] {
    [
        ("vip", &v.name),
        ("nlri", &v.prefix),
        ("check", &c.name),
        ("type", &c.kind),
    ]
}

/// A numeric detail of a check's last result, for checks with detailed_metrics.
fn detail(c: &CheckView, key: &str) -> Option<f64> {
    if !c.detailed_metrics {
        return None;
    }
    c.last.as_ref()?.details.get(key)?.as_f64()
}

/// The families written before the VIPs': what the daemon is.
pub(crate) fn head_families(e: &mut Exposition, s: &Snapshot) {
    e.family(
        "pathosd_build_info",
        Kind::Gauge,
        "pathosd build information; always 1.",
    )
    .sample(&[("version", s.version)], 1.0);
    e.family(
        "pathosd_start_time_seconds",
        Kind::Gauge,
        "Unix time the daemon started.",
    )
    .sample(&[], unix(s.start_time));
}

/// The families written after the routes: the blocking pool's, the
/// hooks' and the exporter's.
pub(crate) fn tail_families(e: &mut Exposition, s: &Snapshot) {
    pool_families(e, &s.blocking_pool);
    e.family(
        "pathosd_hook_events_dropped_total",
        Kind::Counter,
        "VIP transitions whose hooks did not run because the hooks' queue was full.",
    )
    .sample(&[], s.hook_drops as f64);
    if let Some(o) = &s.otel {
        otel_families(e, o);
    }
}

/// A family with samples of each VIP: /metrics is written one such family
/// at a time, each over every VIP in config order, so that a view of one
/// VIP at a time is all a scrape holds (`api::stream`).
pub(crate) struct PerVip {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// Written only when some VIP has a sample (else the family is left
    /// out, header and all).
    pub lazy: bool,
    /// How much of each VIP the samples need.
    pub want: Want,
    pub write: fn(&VipView, &mut Family<'_>),
}

/// A family over every VIP, reading what `want` asks of each.
const fn family(
    want: Want,
    name: &'static str,
    kind: Kind,
    help: &'static str,
    write: fn(&VipView, &mut Family<'_>),
) -> PerVip {
    PerVip {
        name,
        kind,
        help,
        lazy: false,
        want,
        write,
    }
}

/// A family of `detailed_metrics`, written only when some check has it.
const fn detail_family(
    name: &'static str,
    help: &'static str,
    write: fn(&VipView, &mut Family<'_>),
) -> PerVip {
    PerVip {
        name,
        kind: Kind::Gauge,
        help,
        lazy: true,
        want: Want::Detailed,
        write,
    }
}

/// A detail family's samples of one VIP: `key` of each check that has it,
/// times `scale`.
fn simple_detail(v: &VipView, f: &mut Family<'_>, key: &str, scale: f64) {
    for c in &v.checks {
        if let Some(x) = detail(c, key) {
            f.sample(&check_labels(v, c), x * scale);
        }
    }
}

/// Every family over the VIPs, in the order /metrics writes them.
pub(crate) static PER_VIP: [PerVip; 20] = [
    family(
        Want::Vip,
        "pathosd_vip_state",
        Kind::Gauge,
        "VIP state: 0 withdrawn, 1 announced, 2 pessimized; a series per prefix of the VIP.",
        |v, f| {
            let state = f64::from(state_code(v.state));
            f.sample(&vip_labels(v), state);
            // The other prefixes of a VIP with several: they share its state.
            for p in &v.more_prefixes {
                f.sample(&[("vip", &v.name), ("nlri", p)], state);
            }
        },
    ),
    family(
        Want::Vip,
        "pathosd_vip_transitions_total",
        Kind::Counter,
        "VIP state changes, by the state entered.",
        |v, f| {
            for (to, n) in VIP_STATES.iter().zip(v.transitions.iter()) {
                f.sample(
                    &[("vip", &v.name), ("nlri", &v.prefix), ("to", to)],
                    f64::from(*n),
                );
            }
        },
    ),
    family(
        Want::Vip,
        "pathosd_vip_last_transition_timestamp_seconds",
        Kind::Gauge,
        "Unix time of the VIP's last state change.",
        |v, f| {
            if let Some((t, _)) = &v.last_transition {
                f.sample(&vip_labels(v), unix(*t));
            }
        },
    ),
    family(
        Want::Vip,
        "pathosd_vip_priority_status",
        Kind::Gauge,
        "AS-path prepends applied to the VIP's route now (0 while withdrawn).",
        |v, f| {
            f.sample(&vip_labels(v), f64::from(v.as_path_prepend));
        },
    ),
    family(
        Want::Vip,
        "pathosd_vip_healthy",
        Kind::Gauge,
        "1 while the VIP's checks_policy holds.",
        |v, f| {
            f.sample(&vip_labels(v), b(v.healthy));
        },
    ),
    family(
        Want::Vip,
        "pathosd_vip_drained",
        Kind::Gauge,
        "1 while the VIP is drained, by source (file or api).",
        |v, f| {
            for (source, on) in [("file", v.drain_file), ("api", v.drain_api)] {
                f.sample(
                    &[("vip", &v.name), ("nlri", &v.prefix), ("source", source)],
                    b(on),
                );
            }
        },
    ),
    family(
        Want::Vip,
        "pathosd_vip_flaps_total",
        Kind::Counter,
        "Times the VIP left the announced state.",
        |v, f| {
            f.sample(&vip_labels(v), f64::from(v.flaps));
        },
    ),
    // Only VIPs with require_local_address have it: absent when none has.
    PerVip {
        lazy: true,
        ..family(
            Want::Vip,
            "pathosd_vip_local_address_assigned",
            Kind::Gauge,
            "1 while the VIP address is configured on the host (require_local_address).",
            |v, f| {
                if let Some(a) = v.local_address_assigned {
                    f.sample(&vip_labels(v), b(a));
                }
            },
        )
    },
    // Only VIPs with damping have it.
    PerVip {
        lazy: true,
        ..family(
            Want::Vip,
            "pathosd_vip_damped",
            Kind::Gauge,
            "1 while damping suppresses the VIP (its penalty exceeded suppress and has not decayed below reuse).",
            |v, f| {
                if let Some(d) = &v.damping {
                    f.sample(&vip_labels(v), b(d.suppressed));
                }
            },
        )
    },
    // Only VIPs whose drain waits for their flows have it.
    PerVip {
        lazy: true,
        ..family(
            Want::Vip,
            "pathosd_vip_flows",
            Kind::Gauge,
            "Active flows (conntrack entries) to the VIP's prefix, while its drain waits for them to fall below drain_until_flows_below.",
            |v, f| {
                if let Some(n) = v.flows {
                    f.sample(&vip_labels(v), f64::from(n));
                }
            },
        )
    },
    family(
        Want::Checks,
        "pathosd_check_total",
        Kind::Counter,
        "Check runs, by result (success or fail).",
        |v, f| {
            for c in &v.checks {
                let l = check_labels(v, c);
                for (result, n) in [("success", c.total_ok), ("fail", c.total_fail)] {
                    let mut ls = l.to_vec();
                    ls.push(("result", result));
                    f.sample(&ls, f64::from(n));
                }
            }
        },
    ),
    family(
        Want::Checks,
        "pathosd_check_duration_seconds",
        Kind::Histogram,
        "Check run time.",
        |v, f| {
            for c in &v.checks {
                let count = u64::from(c.total_ok).saturating_add(u64::from(c.total_fail));
                let buckets: Vec<(f64, u64)> = c
                    .bucket_bounds
                    .iter()
                    .copied()
                    .zip(c.buckets.iter().copied())
                    .collect();
                f.histogram(&check_labels(v, c), &buckets, c.duration_sum, count);
            }
        },
    ),
    family(
        Want::Checks,
        "pathosd_check_last_result",
        Kind::Gauge,
        "Result of the check's last run: 1 success, 0 fail.",
        |v, f| {
            for c in &v.checks {
                if let Some(r) = &c.last {
                    f.sample(&check_labels(v, c), b(r.ok));
                }
            }
        },
    ),
    family(
        Want::Checks,
        "pathosd_check_timeout_exceeded_total",
        Kind::Counter,
        "Check runs cut short by the check timeout.",
        |v, f| {
            for c in &v.checks {
                f.sample(&check_labels(v, c), f64::from(c.timeouts));
            }
        },
    ),
    family(
        Want::Checks,
        "pathosd_check_healthy",
        Kind::Gauge,
        "1 while the check is healthy after rise/fall hysteresis.",
        |v, f| {
            for c in &v.checks {
                f.sample(&check_labels(v, c), b(c.healthy));
            }
        },
    ),
    detail_family(
        "pathosd_check_http_status_code",
        "HTTP status code of the last http check (detailed_metrics).",
        |v, f| simple_detail(v, f, "status_code", 1.0),
    ),
    detail_family(
        "pathosd_check_ping_rtt_seconds",
        "Round-trip times of the last ping check, by stat (detailed_metrics).",
        |v, f| {
            for c in &v.checks {
                for (stat, key) in [
                    ("min", "rtt_min_ms"),
                    ("avg", "rtt_avg_ms"),
                    ("max", "rtt_max_ms"),
                ] {
                    if let Some(x) = detail(c, key) {
                        let mut l = check_labels(v, c).to_vec();
                        l.push(("stat", stat));
                        f.sample(&l, x / 1e3);
                    }
                }
            }
        },
    ),
    detail_family(
        "pathosd_check_ping_loss_ratio",
        "Share of echo requests of the last ping check left unanswered (detailed_metrics).",
        |v, f| simple_detail(v, f, "loss_ratio", 1.0),
    ),
    detail_family(
        "pathosd_check_dns_answers",
        "Answer records of the last dns check (detailed_metrics).",
        |v, f| {
            for c in v.checks.iter().filter(|c| c.detailed_metrics) {
                let answers = c.last.as_ref().and_then(|r| r.details.get("answers"));
                if let Some(a) = answers.and_then(|a| a.as_array()) {
                    f.sample(&check_labels(v, c), a.len() as f64);
                }
            }
        },
    ),
    detail_family(
        "pathosd_check_exec_exit_code",
        "Exit code of the last exec check (detailed_metrics).",
        |v, f| simple_detail(v, f, "exit_code", 1.0),
    ),
];

/// The OTLP exporter's own health, when one runs.
fn otel_families(e: &mut Exposition, o: &super::model::OtelView) {
    {
        let mut f = e.family(
            "pathosd_otel_export_requests_total",
            Kind::Counter,
            "OTLP export attempts (every signal), by result: ok (accepted) or failed.",
        );
        f.sample(&[("result", "ok")], f64::from(o.exported));
        f.sample(&[("result", "failed")], f64::from(o.failed));
    }
    e.family(
        "pathosd_otel_export_dropped_total",
        Kind::Counter,
        "OTLP batches (of any signal) dropped: the oldest when its signal's queue was full, or refused for good by the collector.",
    )
    .sample(&[], f64::from(o.dropped));
    e.family(
        "pathosd_otel_export_queued",
        Kind::Gauge,
        "OTLP batches (of any signal) waiting to be sent.",
    )
    .sample(&[], f64::from(o.queued));
    e.family(
        "pathosd_otel_spans_dropped_total",
        Kind::Counter,
        "Spans dropped before export: the oldest when the span buffer was full.",
    )
    .sample(&[], f64::from(o.spans_dropped));
    e.family(
        "pathosd_otel_logs_dropped_total",
        Kind::Counter,
        "Log records dropped before export: the oldest when the log buffer was full.",
    )
    .sample(&[], f64::from(o.logs_dropped));
}

/// The bounded pool of probes that can only block (https, proxied http,
/// gRPC): always written, zeros before its first job.
fn pool_families(e: &mut Exposition, p: &PoolView) {
    for (name, help, v) in [
        (
            "pathosd_blocking_pool_workers",
            "Worker threads of the blocking probe pool started (kept once started).",
            p.workers,
        ),
        (
            "pathosd_blocking_pool_workers_max",
            "Worker threads the blocking probe pool may start.",
            p.workers_max,
        ),
        (
            "pathosd_blocking_pool_jobs_running",
            "Probes a blocking pool worker runs now.",
            p.running,
        ),
        (
            "pathosd_blocking_pool_jobs_queued",
            "Probes waiting for a blocking pool worker now.",
            p.queued,
        ),
        (
            "pathosd_blocking_pool_jobs_queued_max",
            "Probes that may wait for a blocking pool worker; more fail at once.",
            p.queue_max,
        ),
    ] {
        e.family(name, Kind::Gauge, help).sample(&[], f64::from(v));
    }
    {
        let mut f = e.family(
            "pathosd_blocking_pool_jobs_total",
            Kind::Counter,
            "Probes given to the blocking pool, by result: run, refused (queue full, failed at once) or expired (timed out before a worker took it).",
        );
        for (result, n) in [
            ("run", p.run),
            ("refused", p.refused),
            ("expired", p.expired),
        ] {
            // Exact up to 2^53 jobs, far beyond a router's lifetime.
            f.sample(&[("result", result)], n as f64);
        }
    }
    let buckets: Vec<(f64, u64)> = POOL_WAIT_BOUNDS
        .iter()
        .copied()
        .zip(p.wait_buckets.iter().copied())
        .collect();
    e.family(
        "pathosd_blocking_pool_queue_wait_seconds",
        Kind::Histogram,
        "Time probes waited in the blocking pool's queue for a worker.",
    )
    .histogram(&[], &buckets, p.wait_sum, p.wait_count);
}

/// The BGP families but the routes': a few series per peer, then BFD's.
pub(crate) fn peer_families(e: &mut Exposition, peers: &[PeerView], bfd_unmatched: u64) {
    session_families(e, peers);
    message_families(e, peers);
    bfd_families(e, peers, bfd_unmatched);
}

/// Each peer's configuration and its session's state, uptime and flaps.
fn session_families(e: &mut Exposition, peers: &[PeerView]) {
    {
        let mut f = e.family(
            "bgp_peer_info",
            Kind::Gauge,
            "Configured BGP peers; always 1.",
        );
        for p in peers {
            let addr = p.address.to_string();
            let asn = p.peer_asn.to_string();
            let required = if p.required { "true" } else { "false" };
            f.sample(
                &[
                    ("peer", &p.name),
                    ("address", &addr),
                    ("peer_asn", &asn),
                    ("required", required),
                ],
                1.0,
            );
        }
    }
    {
        let mut f = e.family(
            "bgp_peer_state",
            Kind::Gauge,
            "BGP session state, one series per state: 1 for the current one.",
        );
        for p in peers {
            for st in SESSION_STATES {
                f.sample(
                    &[("peer", &p.name), ("session_state", st)],
                    b(p.state == st),
                );
            }
        }
    }
    {
        let mut f = e.family(
            "bgp_peer_up",
            Kind::Gauge,
            "1 while the BGP session is Established.",
        );
        for p in peers {
            f.sample(&[("peer", &p.name)], b(p.state == "established"));
        }
    }
    {
        let mut f = e.family(
            "bgp_peer_uptime_seconds",
            Kind::Gauge,
            "Time the BGP session has been Established (0 while down).",
        );
        for p in peers {
            let up = p.established_for.map_or(0.0, |d| d.as_secs_f64().floor());
            f.sample(&[("peer", &p.name)], up);
        }
    }
    {
        let mut f = e.family(
            "bgp_peer_flaps_total",
            Kind::Counter,
            "Times the BGP session left Established.",
        );
        for p in peers {
            f.sample(&[("peer", &p.name)], f64::from(p.flaps));
        }
    }
}

/// The messages each session received and sent, by type, and the prefixes
/// advertised to it.
fn message_families(e: &mut Exposition, peers: &[PeerView]) {
    for (name, help, pick) in [
        (
            "bgp_received_messages_total",
            "BGP messages received, by type.",
            (|p: &PeerView| &p.received) as fn(&PeerView) -> &super::model::MsgCounts,
        ),
        (
            "bgp_sent_messages_total",
            "BGP messages sent, by type.",
            |p: &PeerView| &p.sent,
        ),
    ] {
        let mut f = e.family(name, Kind::Counter, help);
        for p in peers {
            let c = pick(p);
            for (ty, n) in [
                ("open", c.open),
                ("update", c.update),
                ("notification", c.notification),
                ("keepalive", c.keepalive),
                ("route_refresh", c.route_refresh),
            ] {
                f.sample(&[("peer", &p.name), ("type", ty)], f64::from(n));
            }
        }
    }
    {
        let mut f = e.family(
            "bgp_routes_advertised",
            Kind::Gauge,
            "Prefixes currently advertised to the peer.",
        );
        for p in peers {
            f.sample(&[("peer", &p.name)], f64::from(p.advertised));
        }
    }
}

/// BFD's state names, as `BfdView::state` gives them.
const BFD_STATES: [&str; 4] = ["admin_down", "down", "init", "up"];

/// The BFD sessions of the peers that run one, and the datagrams that
/// matched none.
fn bfd_families(e: &mut Exposition, peers: &[PeerView], unmatched: u64) {
    let bfd = || {
        peers
            .iter()
            .filter_map(|p| Some((p.name.as_str(), p.bfd.as_ref()?)))
    };
    {
        let mut f = e.family(
            "pathosd_bfd_session_state",
            Kind::Gauge,
            "BFD session state (RFC 5880), one series per state: 1 for the current one.",
        );
        for (peer, v) in bfd() {
            for st in BFD_STATES {
                f.sample(&[("peer", peer), ("bfd_state", st)], b(v.state == st));
            }
        }
    }
    {
        let mut f = e.family(
            "pathosd_bfd_session_downs_total",
            Kind::Counter,
            "Times the BFD session went from Up to Down and took the BGP session down.",
        );
        for (peer, v) in bfd() {
            f.sample(&[("peer", peer)], f64::from(v.downs));
        }
    }
    {
        let mut f = e.family(
            "pathosd_bfd_dropped_packets_total",
            Kind::Counter,
            "BFD datagrams from the peer's address dropped, by reason.",
        );
        for (peer, v) in bfd() {
            for (reason, n) in &v.dropped {
                f.sample(&[("peer", peer), ("reason", reason)], *n as f64);
            }
        }
    }
    e.family(
        "pathosd_bfd_unmatched_packets_total",
        Kind::Counter,
        "BFD datagrams that matched no session (unknown source or discriminator), dropped.",
    )
    .sample(&[], unmatched as f64);
}

/// `pathosd_route_state`: one series per route a peer has from us, labelled
/// as pathosd's route_state; a route that is withdrawn simply disappears.
/// Its samples are written a peer's routes at a time ([`route_sample`]).
pub(crate) const ROUTE_STATE: (&str, Kind, &str) = (
    "pathosd_route_state",
    Kind::Gauge,
    "Routes in each peer's Adj-RIB-Out (1 = advertised), with their attributes.",
);

/// The series of one route that peer `p` has from us.
pub(crate) fn route_sample(f: &mut Family<'_>, p: &PeerView, prefix: &Prefix, a: &PathAttrs) {
    let peer_ip = p.address.to_string();
    let peer_asn = p.peer_asn.to_string();
    let nlri = prefix.to_string();
    let as_path: Vec<String> = a.as_path.iter().map(u32::to_string).collect();
    let mut comms: Vec<String> = a.communities.iter().map(|c| c.to_string()).collect();
    comms.sort();
    let lp = a.local_pref.map(|x| x.to_string()).unwrap_or_default();
    let med = a.med.map(|x| x.to_string()).unwrap_or_default();
    let family = match prefix.afi() {
        crate::bgp::types::Afi::Ipv4 => "ipv4-unicast",
        crate::bgp::types::Afi::Ipv6 => "ipv6-unicast",
    };
    f.sample(
        &[
            ("nlri", &nlri),
            ("peer", &p.name),
            ("peer_ip", &peer_ip),
            ("peer_asn", &peer_asn),
            ("as_path", &as_path.join(" ")),
            ("communities", &comms.join(",")),
            ("local_preference", &lp),
            ("med", &med),
            ("family", family),
        ],
        1.0,
    );
}
