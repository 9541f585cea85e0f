//! Answers too large to hold whole, rendered a piece at a time: `/status`
//! (whole, or a page of its VIPs), `/metrics`, the HTML page, the OTLP
//! metrics export (in requests of bounded size) and the views of a page of
//! VIPs (ubus `status` encodes them itself). At 10,000 VIPs `/status` is
//! 8.6 to 17 MB and `/metrics` 7.5 to 27 MB: made whole, a snapshot of every
//! VIP, a JSON value tree and the text took a request 50 to 125 MB above the
//! daemon's baseline, and glibc kept most of it.
//!
//! A [`Job`] is one answer being rendered: where it is, and the piece
//! rendered last. Each [`Job::step`] renders the next piece, about
//! `budget` bytes, from a [`Source`] of the daemon's state, asking it for
//! a view of one VIP at a time. The daemon's owner makes the steps, one
//! per request of the task that writes the answer, so it answers other
//! requests and events between two pieces, and an answer holds one piece,
//! whatever the number of VIPs and however slowly its client reads. The
//! bytes are those the whole rendering gives (`tests/api_golden.rs`):
//! the same renderers (`status::vip_json`, `metrics::PER_VIP`,
//! `page::vip_row`) write each VIP.
//!
//! An answer is the state at the moment each piece was rendered: a VIP's
//! view is taken when its turn comes. The document's own members (the
//! daemon, the peers, `last_reload`) are those of the first step. A reload
//! that replaces the VIPs or the peers while an answer is written ends it
//! ([`Job::failed`]): its positions would name other VIPs.

use super::metrics::{self, PER_VIP};
use super::model::{PageInfo, Scope, Snapshot, VipView, Want};
use super::prom::Exposition;
use super::status::{self, StatusQuery};
use crate::bgp::types::{PathAttrs, Prefix};
use serde_json::Value;
use std::time::SystemTime;

/// Bytes a step of an HTTP answer renders, about: a piece held by the
/// connection writing it, and what the owner does between two events.
pub const PIECE: usize = 32 * 1024;

/// Room a piece's buffer is made with, beyond its budget: a piece ends
/// after the VIP that takes it past the budget, and the buffer is then
/// larger than the 128 KiB above which glibc (its threshold fixed there,
/// `sys::fix_mmap_threshold`) and musl map a block of its own. Mapped, it
/// costs only the pages a piece touches, and its end gives every page
/// back; taken from the heap, the buffers of a few answers at once stayed
/// in the daemon's RSS after them (malloc keeps what lies below a block
/// still in use).
const ROOM: usize = 128 * 1024;

/// Routes of a peer taken from the source at a time (`pathosd_route_state`).
const ROUTES_AT_ONCE: usize = 64;

/// The daemon's state as a streamed answer reads it. The owner's reads its
/// engine and its speaker; a [`Snapshot`] is one for tests.
pub trait Source {
    /// The daemon's own state and its peers (without their routes): the
    /// document's members other than the VIPs.
    fn head(&mut self) -> Snapshot;
    /// How many VIPs there are.
    fn vip_count(&self) -> usize;
    /// The positions of the VIPs of `scope`, and for a page its counts
    /// (`model::select`).
    fn select(&self, scope: &Scope) -> (Vec<usize>, Option<PageInfo>);
    /// A view of the VIP at position `i` in config order.
    fn vip(&self, i: usize, want: Want) -> Option<VipView>;
    /// Up to `max` of the routes that peer `peer` (its position among the
    /// head's peers) has from us, in prefix order, from the first after
    /// `after`, appended to `out`.
    fn routes(
        &self,
        peer: usize,
        after: Option<&Prefix>,
        max: usize,
        out: &mut Vec<(Prefix, PathAttrs)>,
    );
    /// Changes when the VIPs or the peers are replaced (a reload).
    fn generation(&self) -> u64;
}

impl Source for Snapshot {
    fn head(&mut self) -> Snapshot {
        Snapshot {
            router_id: self.router_id.clone(),
            asn: self.asn,
            version: self.version,
            start_time: self.start_time,
            uptime: self.uptime,
            peers: self
                .peers
                .iter()
                .map(|p| super::model::PeerView {
                    routes: Vec::new(),
                    ..p.clone()
                })
                .collect(),
            vips: Vec::new(),
            last_reload: self.last_reload.clone(),
            blocking_pool: self.blocking_pool.clone(),
            otel: self.otel.clone(),
            bfd_unmatched: self.bfd_unmatched,
            hook_drops: self.hook_drops,
            page: None,
        }
    }

    fn vip_count(&self) -> usize {
        self.vips.len()
    }

    fn select(&self, scope: &Scope) -> (Vec<usize>, Option<PageInfo>) {
        super::model::select(scope, self.vips.iter().map(super::model::key_of))
    }

    fn vip(&self, i: usize, want: Want) -> Option<VipView> {
        let mut v = self.vips.get(i)?.clone();
        let detailed = v.checks.iter().any(|c| c.detailed_metrics);
        if want == Want::Vip || (want == Want::Detailed && !detailed) {
            v.checks.clear();
        }
        Some(v)
    }

    fn routes(
        &self,
        peer: usize,
        after: Option<&Prefix>,
        max: usize,
        out: &mut Vec<(Prefix, PathAttrs)>,
    ) {
        let Some(p) = self.peers.get(peer) else {
            return;
        };
        let from = after.map_or(0, |a| p.routes.partition_point(|(q, _)| q <= a));
        out.extend(p.routes.iter().skip(from).take(max).cloned());
    }

    fn generation(&self) -> u64 {
        0
    }
}

/// The answers a [`Job`] renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// `/status`: the whole document, or one page of the VIPs.
    Status(Option<StatusQuery>),
    /// `GET /`: the HTML page.
    Page,
    /// `/metrics`: Prometheus text.
    Metrics,
    /// The families of /metrics as OTLP metrics requests of about `part`
    /// bytes each, stamped `now`, for service `service`.
    Otlp {
        now: SystemTime,
        service: String,
        part: usize,
    },
    /// The views of a page of the VIPs, a step's worth at a time.
    Views(StatusQuery),
}

impl What {
    /// The HTTP Content-Type of the answer.
    pub fn content_type(&self) -> &'static str {
        match self {
            What::Page => "text/html; charset=utf-8",
            What::Metrics => "text/plain; version=0.0.4; charset=utf-8",
            What::Otlp { .. } => "application/x-protobuf",
            What::Status(_) | What::Views(_) => "application/json",
        }
    }
}

/// Where a /metrics answer is.
struct Families {
    e: Exposition,
    /// The section: 0 the daemon's families, 1 to `PER_VIP.len()` those
    /// over the VIPs, then the peers', the routes, the pool's and the
    /// exporter's.
    section: usize,
    /// Whether the lazy family being written has its header out.
    started: bool,
    /// In the routes: the peer, and the last route written of it.
    peer: usize,
    after: Option<Prefix>,
}

const ROUTES: usize = PER_VIP.len() + 2;
const TAIL: usize = ROUTES + 1;

/// One answer being rendered (see the module's documentation).
pub struct Job {
    what: What,
    budget: usize,
    started: bool,
    done: bool,
    failed: Option<&'static str>,
    generation: u64,
    head: Option<Box<Snapshot>>,
    page: Option<PageInfo>,
    /// The positions of the VIPs shown (a page's), or None for all.
    picked: Option<Vec<usize>>,
    /// How many VIPs the answer shows, and how many it has so far.
    count: usize,
    at: usize,
    /// The piece rendered by the last step.
    out: Vec<u8>,
    /// What follows the VIPs (JSON, HTML).
    tail: Vec<u8>,
    /// [`What::Views`]: the views of the last step.
    views: Vec<VipView>,
    families: Option<Box<Families>>,
}

/// Where the VIPs go in the pretty-printed document rendered with none:
/// a top-level member (two spaces in) whose value is `[]`. A string never
/// holds a raw newline, so nothing else in the document matches.
const VIPS_AT: &[u8] = b"\n  \"vips\": []";

impl Job {
    /// A job for `what` whose steps render about `budget` bytes each (for
    /// [`What::Views`], `budget` views).
    pub fn new(what: What, budget: usize) -> Job {
        Job {
            what,
            budget: budget.max(1),
            started: false,
            done: false,
            failed: None,
            generation: 0,
            head: None,
            page: None,
            picked: None,
            count: 0,
            at: 0,
            out: Vec::new(),
            tail: Vec::new(),
            views: Vec::new(),
            families: None,
        }
    }

    pub fn what(&self) -> &What {
        &self.what
    }

    /// Nothing is left to render (the last piece may still be in
    /// [`Self::piece`]).
    pub fn done(&self) -> bool {
        self.done
    }

    /// Why the answer cannot be finished, if it cannot.
    pub fn failed(&self) -> Option<&'static str> {
        self.failed
    }

    /// The piece the last step rendered (an OTLP request, for
    /// [`What::Otlp`]; empty when a step had none ready).
    pub fn piece(&self) -> &[u8] {
        &self.out
    }

    /// The piece, taken out of the job.
    pub fn take_piece(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The document's members but the VIPs, from the first step.
    pub fn head(&self) -> Option<&Snapshot> {
        self.head.as_deref()
    }

    /// [`What::Views`] and a page of `/status`: the page's counts.
    pub fn page(&self) -> Option<&PageInfo> {
        self.page.as_ref()
    }

    /// How many VIPs the answer shows (a page's, or all).
    #[cfg(any(test, feature = "test-support"))]
    pub fn vips_shown(&self) -> usize {
        self.count
    }

    /// [`What::Views`]: the views the last step took, in order.
    pub fn take_views(&mut self) -> Vec<VipView> {
        std::mem::take(&mut self.views)
    }

    /// Renders the next piece from `src`, replacing the last one.
    pub fn step(&mut self, src: &mut dyn Source) {
        self.out.clear();
        self.views.clear();
        if self.done {
            return;
        }
        if !self.started {
            self.start(src);
        } else if src.generation() != self.generation {
            return self.fail("the configuration was reloaded while the answer was being written");
        }
        match self.what {
            What::Status(_) => self.json_vips(src),
            What::Page => self.html_vips(src),
            What::Metrics | What::Otlp { .. } => self.metrics(src),
            What::Views(_) => self.views(src),
        }
    }

    fn fail(&mut self, why: &'static str) {
        self.failed = Some(why);
        self.done = true;
        self.out.clear();
    }

    /// The position of the `at`-th VIP shown.
    fn index(&self, at: usize) -> usize {
        self.picked
            .as_ref()
            .map_or(Some(at), |p| p.get(at).copied())
            .unwrap_or(usize::MAX)
    }

    /// The first step: the head, the VIPs shown, what comes before them.
    fn start(&mut self, src: &mut dyn Source) {
        self.started = true;
        self.generation = src.generation();
        if matches!(self.what, What::Status(_) | What::Page | What::Metrics) {
            self.out.reserve_exact(self.budget.min(PIECE) + ROOM);
        }
        let head = src.head();
        match &self.what {
            What::Status(Some(q)) | What::Views(q) => {
                let (picked, page) = src.select(&Scope::Page(q.clone()));
                self.count = picked.len();
                self.picked = Some(picked);
                self.page = page;
            }
            _ => self.count = src.vip_count(),
        }
        match &self.what {
            What::Status(_) => {
                let doc = match &self.page {
                    Some(p) => status::page_json(&head, p, Value::Array(Vec::new()), self.count),
                    None => status::status_json_with(&head, Value::Array(Vec::new())),
                };
                let mut text = format!("{doc:#}").into_bytes();
                text.push(b'\n');
                let at = text
                    .windows(VIPS_AT.len())
                    .position(|w| w == VIPS_AT)
                    .unwrap_or(text.len());
                // Up to the `[`; the `]` comes after the VIPs.
                let open = (at + VIPS_AT.len()).saturating_sub(1).min(text.len());
                self.tail = text.split_off(open);
                if !self.tail.is_empty() {
                    self.tail.remove(0);
                }
                self.out.extend_from_slice(&text);
            }
            What::Page => {
                let mut o = String::new();
                super::page::head(&mut o, &head);
                self.out.extend_from_slice(o.as_bytes());
                let mut t = String::new();
                super::page::tail(&mut t, &head);
                self.tail = t.into_bytes();
            }
            What::Metrics | What::Otlp { .. } => {
                let mut e = match &self.what {
                    What::Otlp { now, .. } => Exposition::otlp(
                        super::otlp::unix_nanos(head.start_time),
                        super::otlp::unix_nanos(*now),
                    ),
                    _ => Exposition::new(),
                };
                metrics::head_families(&mut e, &head);
                self.families = Some(Box::new(Families {
                    e,
                    section: 1,
                    started: false,
                    peer: 0,
                    after: None,
                }));
            }
            What::Views(_) => {}
        }
        self.head = Some(Box::new(head));
    }

    /// `/status`'s VIPs: each as `status::vip_json` renders it, printed as
    /// serde_json prints an array's element two levels in.
    fn json_vips(&mut self, src: &mut dyn Source) {
        let query = match &self.what {
            What::Status(q) => q.clone(),
            _ => None,
        };
        while self.at < self.count && self.out.len() < self.budget {
            let Some(v) = src.vip(self.index(self.at), Want::Checks) else {
                return self.fail("a VIP went away while the answer was being written");
            };
            let j = match &query {
                Some(q) => status::page_vip_json(&v, q),
                None => status::vip_json(&v),
            };
            self.out
                .extend_from_slice(if self.at == 0 { b"\n    " } else { b",\n    " });
            indented(&mut self.out, &j);
            self.at += 1;
        }
        if self.at == self.count {
            self.out
                .extend_from_slice(if self.count > 0 { b"\n  ]" } else { b"]" });
            self.out.append(&mut self.tail);
            self.done = true;
        }
    }

    /// The HTML page's rows, one per VIP.
    fn html_vips(&mut self, src: &mut dyn Source) {
        let mut row = String::new();
        while self.at < self.count && self.out.len() < self.budget {
            let Some(v) = src.vip(self.at, Want::Checks) else {
                return self.fail("a VIP went away while the answer was being written");
            };
            row.clear();
            super::page::vip_row(&mut row, &v);
            self.out.extend_from_slice(row.as_bytes());
            self.at += 1;
        }
        if self.at == self.count {
            self.out.append(&mut self.tail);
            self.done = true;
        }
    }

    /// [`What::Views`]: up to `budget` views of the page's VIPs.
    fn views(&mut self, src: &mut dyn Source) {
        while self.at < self.count && self.views.len() < self.budget {
            let Some(v) = src.vip(self.index(self.at), Want::Checks) else {
                return self.fail("a VIP went away while the answer was being written");
            };
            self.views.push(v);
            self.at += 1;
        }
        self.done = self.at == self.count;
    }

    /// /metrics, or its OTLP requests: the sections in order, a family
    /// over the VIPs one VIP at a time, the routes a few at a time.
    fn metrics(&mut self, src: &mut dyn Source) {
        let Some(mut f) = self.families.take() else {
            return self.fail("no families");
        };
        let Some(head) = self.head.take() else {
            return self.fail("no head");
        };
        let part = match &self.what {
            What::Otlp { part, .. } => Some(*part),
            _ => None,
        };
        // An OTLP step ends when it has a request ready, or when it has
        // encoded about `budget` bytes (what the owner does in one go).
        let budget = self.budget;
        let otlp_len = |f: &Families| f.e.otlp.as_ref().map_or(0, |o| o.len());
        let begun = otlp_len(&f);
        let full = |f: &Families, out: &[u8]| match part {
            Some(p) => otlp_len(f) >= p || otlp_len(f).saturating_sub(begun) >= budget,
            None => out.len() + f.e.out.len() >= budget,
        };
        // What the first step wrote (the daemon's families).
        self.out.append(&mut f.e.out);
        let mut routes = Vec::new();
        while f.section < TAIL && !full(&f, &self.out) {
            if let Some(fam) = f.section.checked_sub(1).and_then(|i| PER_VIP.get(i)) {
                if self.at == 0 && !fam.lazy && !f.started {
                    f.started = true;
                    f.e.family(fam.name, fam.kind, fam.help);
                }
                if self.at < self.count {
                    let Some(v) = src.vip(self.at, fam.want) else {
                        self.families = Some(f);
                        self.head = Some(head);
                        return self.fail("a VIP went away while the answer was being written");
                    };
                    let Families { e, started, .. } = &mut *f;
                    let mut family = if fam.lazy {
                        e.lazy(fam.name, fam.kind, fam.help, started)
                    } else {
                        e.resume(fam.name)
                    };
                    (fam.write)(&v, &mut family);
                    self.at += 1;
                } else {
                    f.section += 1;
                    f.started = false;
                    self.at = 0;
                }
            } else if f.section == ROUTES - 1 {
                metrics::peer_families(&mut f.e, &head.peers, head.bfd_unmatched);
                f.section += 1;
            } else {
                let (name, kind, help) = metrics::ROUTE_STATE;
                if !f.started {
                    f.started = true;
                    f.e.family(name, kind, help);
                }
                let Some(p) = head.peers.get(f.peer) else {
                    f.section += 1;
                    f.started = false;
                    continue;
                };
                routes.clear();
                src.routes(f.peer, f.after.as_ref(), ROUTES_AT_ONCE, &mut routes);
                let mut written = 0;
                for (prefix, attrs) in &routes {
                    metrics::route_sample(&mut f.e.resume(name), p, prefix, attrs);
                    f.after = Some(*prefix);
                    written += 1;
                    self.out.append(&mut f.e.out);
                    if full(&f, &self.out) {
                        break;
                    }
                }
                if written == routes.len() && routes.len() < ROUTES_AT_ONCE {
                    f.peer += 1;
                    f.after = None;
                }
            }
            // The text goes out as it is written.
            self.out.append(&mut f.e.out);
        }
        if f.section == TAIL {
            metrics::tail_families(&mut f.e, &head);
            self.out.append(&mut f.e.out);
            self.done = true;
        }
        self.otlp_request(&mut f, &head, part);
        self.families = Some(f);
        self.head = Some(head);
    }

    /// For the OTLP export: the request out of what was encoded, once it
    /// holds `part` bytes or the answer is complete.
    fn otlp_request(&mut self, f: &mut Families, head: &Snapshot, part: Option<usize>) {
        let What::Otlp { service, .. } = &self.what else {
            return;
        };
        let resource = [
            ("service.name", service.as_str()),
            ("service.instance.id", head.router_id.as_str()),
            ("service.version", head.version),
        ];
        let scope = ("pathosd", head.version);
        if let Some(o) = f.e.otlp.as_mut() {
            if self.done {
                if let Some(o) = f.e.otlp.take() {
                    self.out = o.finish(&resource, scope);
                }
            } else if o.len() >= part.unwrap_or(usize::MAX) {
                self.out = o.split(&resource, scope);
            }
        }
    }
}

/// Writes `v` as serde_json pretty-prints it two levels in: four more
/// spaces after each newline (a string in JSON never holds a raw one).
/// Printed whole first: the printer the other JSON answers use, not a
/// second one compiled for a writer that indents (flash).
fn indented(out: &mut Vec<u8>, v: &Value) {
    let text = format!("{v:#}").into_bytes();
    for line in text.split_inclusive(|b| *b == b'\n') {
        out.extend_from_slice(line);
        if line.ends_with(b"\n") {
            out.extend_from_slice(b"    ");
        }
    }
}

/// The whole answer `what` from `src`, in steps of `budget` bytes (for
/// [`What::Otlp`], its requests one after another): what tests compare.
pub fn render(what: What, budget: usize, src: &mut dyn Source) -> Result<Vec<u8>, &'static str> {
    let mut job = Job::new(what, budget);
    let mut all = Vec::new();
    // Bounded: each step renders at least one VIP, route or section.
    for _ in 0..100_000_000u64 {
        job.step(src);
        if let Some(why) = job.failed() {
            return Err(why);
        }
        all.extend_from_slice(job.piece());
        if job.done() {
            return Ok(all);
        }
    }
    Err("too many steps")
}

/// The requests of an OTLP metrics export from `src`, each about `part`
/// bytes, in order.
#[cfg(any(test, feature = "test-support"))]
pub fn otlp_requests(
    src: &mut dyn Source,
    now: SystemTime,
    service: &str,
    part: usize,
) -> Result<Vec<Vec<u8>>, &'static str> {
    let what = What::Otlp {
        now,
        service: service.to_string(),
        part,
    };
    let mut job = Job::new(what, PIECE);
    let mut parts = Vec::new();
    for _ in 0..100_000_000u64 {
        job.step(src);
        if let Some(why) = job.failed() {
            return Err(why);
        }
        if !job.piece().is_empty() {
            parts.push(job.take_piece());
        }
        if job.done() {
            return Ok(parts);
        }
    }
    Err("too many steps")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::model::{CheckView, PeerView, PoolView};
    use crate::check::CheckResult;
    use std::time::{Duration, UNIX_EPOCH};

    fn view(i: usize) -> VipView {
        VipView {
            name: format!("v{i}"),
            prefix: format!("10.0.{}.{}/32", i / 256, i % 256),
            more_prefixes: Vec::new(),
            state: ["announced", "withdrawn", "pessimized"][i % 3],
            healthy: i % 2 == 0,
            drain_file: false,
            drain_api: i % 5 == 0,
            as_path_prepend_base: 2,
            as_path_prepend: 0,
            communities: vec!["65001:1".into()],
            large_communities: Vec::new(),
            flaps: 1,
            last_transition: None,
            transitions: [1, 2, 3],
            checks_policy: "all".into(),
            local_address_assigned: (i % 4 == 0).then_some(true),
            flows: None,
            degraded: None,
            damping: None,
            checks: (0..i % 3)
                .map(|k| CheckView {
                    name: format!("c{k}"),
                    kind: "http".into(),
                    healthy: true,
                    consecutive_ok: 1,
                    consecutive_fail: 0,
                    last: Some(CheckResult::pass("ok").with("status_code", 200)),
                    last_time: None,
                    last_transition: None,
                    total_ok: 1,
                    total_fail: 0,
                    timeouts: 0,
                    bucket_bounds: vec![0.1, 1.0],
                    buckets: vec![1, 1],
                    duration_sum: 0.05,
                    detailed_metrics: k == 1,
                    degraded: None,
                })
                .collect(),
        }
    }

    fn snapshot(n: usize) -> Snapshot {
        Snapshot {
            router_id: "10.0.0.1".into(),
            asn: 65001,
            version: "t",
            start_time: UNIX_EPOCH + Duration::from_secs(1_000),
            uptime: Duration::from_secs(5),
            peers: vec![PeerView {
                name: "p".into(),
                address: "127.0.0.2".parse().unwrap(),
                peer_asn: 65000,
                required: true,
                state: "established".into(),
                established_for: None,
                last_error: None,
                notification_sent: None,
                notification_received: None,
                received: Default::default(),
                sent: Default::default(),
                advertised: n as u32,
                flaps: 0,
                routes: (0..n)
                    .map(|i| {
                        let p: Prefix = format!("10.0.{}.{}/32", i / 256, i % 256).parse().unwrap();
                        let a = PathAttrs {
                            origin: crate::bgp::types::Origin::Igp,
                            as_path: vec![65001],
                            next_hop: "127.0.0.1".parse().unwrap(),
                            med: None,
                            local_pref: None,
                            communities: Vec::new(),
                            large_communities: Vec::new(),
                            otc: None,
                        };
                        (p, a)
                    })
                    .collect(),
                bfd: None,
            }],
            vips: (0..n).map(view).collect(),
            last_reload: None,
            blocking_pool: PoolView::default(),
            otel: None,
            bfd_unmatched: 0,
            hook_drops: 0,
            page: None,
        }
    }

    fn whole(what: &What, s: &mut Snapshot) -> Vec<u8> {
        render(what.clone(), usize::MAX, s).unwrap()
    }

    /// Whatever the size of a step, the answer is the same bytes: a step
    /// of one byte renders one VIP (or route, or section).
    #[test]
    fn pieces_of_any_size_make_the_same_answer() {
        for n in [0, 1, 2, 3, 150] {
            let mut s = snapshot(n);
            let page = StatusQuery {
                offset: 1,
                limit: 70,
                ..StatusQuery::default()
            };
            for what in [
                What::Status(None),
                What::Status(Some(page)),
                What::Page,
                What::Metrics,
            ] {
                let all = whole(&what, &mut s);
                for budget in [1, 100, 4096] {
                    assert_eq!(
                        render(what.clone(), budget, &mut s).unwrap(),
                        all,
                        "{what:?}, {n} VIPs, pieces of {budget}"
                    );
                }
            }
        }
    }

    /// The whole document is the one `status_json` renders, and a step
    /// ends near its budget.
    #[test]
    fn status_is_the_rendered_document_and_steps_keep_to_their_budget() {
        let mut s = snapshot(200);
        let mut want = serde_json::to_vec_pretty(&status::status_json(&s)).unwrap();
        want.push(b'\n');
        assert_eq!(whole(&What::Status(None), &mut s), want);
        let mut job = Job::new(What::Status(None), 4096);
        let mut steps = 0;
        while !job.done() {
            job.step(&mut s);
            assert!(job.piece().len() < 4096 + 2048, "{}", job.piece().len());
            steps += 1;
        }
        assert!(steps > want.len() / 6000, "{steps} steps");
    }

    /// OTLP requests of a bounded size: each a whole request, together
    /// every point of the one request made without a bound.
    #[test]
    fn otlp_parts_are_bounded_and_together_whole() {
        let mut s = snapshot(300);
        let now = UNIX_EPOCH + Duration::from_secs(2_000);
        let one = otlp_requests(&mut s, now, "svc", usize::MAX).unwrap();
        assert_eq!(one.len(), 1);
        let parts = otlp_requests(&mut s, now, "svc", 8192).unwrap();
        assert!(parts.len() > 5, "{} parts", parts.len());
        for p in &parts {
            // A part ends once it passes the bound, with the VIP it was on.
            assert!(p.len() < 8192 + 4096, "{}", p.len());
        }
        // Every point is in one of the parts: the data point records
        // (field 1 of a Gauge, Sum or Histogram) add up.
        let points = |b: &[u8]| b.windows(4).filter(|w| w == b"v123").count();
        let total: usize = parts.iter().map(|p| points(p)).sum();
        assert_eq!(total, points(&one[0]));
    }

    /// A reload between two steps ends the answer.
    #[test]
    fn a_reload_ends_the_answer() {
        struct Reloading(Snapshot, u64);
        impl Source for Reloading {
            fn head(&mut self) -> Snapshot {
                self.0.head()
            }
            fn vip_count(&self) -> usize {
                self.0.vip_count()
            }
            fn select(&self, scope: &Scope) -> (Vec<usize>, Option<PageInfo>) {
                self.0.select(scope)
            }
            fn vip(&self, i: usize, want: Want) -> Option<VipView> {
                self.0.vip(i, want)
            }
            fn routes(
                &self,
                peer: usize,
                after: Option<&Prefix>,
                max: usize,
                out: &mut Vec<(Prefix, PathAttrs)>,
            ) {
                self.0.routes(peer, after, max, out)
            }
            fn generation(&self) -> u64 {
                self.1
            }
        }
        let mut src = Reloading(snapshot(100), 1);
        let mut job = Job::new(What::Metrics, 256);
        job.step(&mut src);
        assert!(!job.done());
        src.1 = 2;
        job.step(&mut src);
        assert!(job.done());
        assert!(job.failed().is_some());
        assert!(job.piece().is_empty());
    }

    #[test]
    fn views_come_a_budget_at_a_time() {
        let mut s = snapshot(10);
        let q = StatusQuery {
            limit: 7,
            ..StatusQuery::default()
        };
        let mut job = Job::new(What::Views(q), 3);
        let mut names = Vec::new();
        while !job.done() {
            job.step(&mut s);
            let v = job.take_views();
            assert!(v.len() <= 3);
            names.extend(v.into_iter().map(|v| v.name));
        }
        assert_eq!(names, ["v0", "v1", "v2", "v3", "v4", "v5", "v6"]);
        assert_eq!(job.page().map(|p| p.matched), Some(10));
    }

    #[test]
    fn the_vips_of_a_document_are_found_only_at_the_top_level() {
        let mut s = snapshot(1);
        s.last_reload = Some(crate::api::model::ReloadRecord {
            time: UNIX_EPOCH,
            result: crate::api::model::ReloadResult::Rejected,
            errors: vec!["\n  \"vips\": []".into()],
            needs_restart: Vec::new(),
        });
        let mut want = serde_json::to_vec_pretty(&status::status_json(&s)).unwrap();
        want.push(b'\n');
        assert_eq!(whole(&What::Status(None), &mut s), want);
    }
}
