//! The OTLP exporter: every `otel.metrics.interval` it takes the
//! snapshot /metrics is rendered from (through the control channel, as an
//! HTTP request does), encodes every family as an OTLP protobuf request
//! (`pathosd_core::api::metrics::otlp_request`) and sends it: over
//! OTLP/HTTP, POSTed with the probes' own HTTP/1.1 client (`http://`) or
//! ureq (`https://`); over OTLP/gRPC, as a unary call of the signal's
//! `Export` with the gRPC probe's own HTTP/2 client (`grpc::unary`, for
//! `grpc://` and `grpcs://`). The blocking clients run on the probes'
//! bounded pool, each call at most [`REQUEST_TIMEOUT`], one call at a time
//! whichever signals send ([`POOL_TURN`]).
//!
//! Traces: the owner records its spans ([`record`]), and the HTTP API a
//! server span per request ([`served`]), into a bounded buffer
//! on this thread and goes on; every [`SPAN_INTERVAL`] the task drains it
//! into one `ExportTraceServiceRequest`, and the log records the log
//! backend copied (`logging::take_otel`) into one
//! `ExportLogsServiceRequest`.
//!
//! Each signal has its own queue of encoded requests, its own sender and
//! its own back-off: a collector that is down, slow or refusing one signal
//! holds up only that signal (metrics, traces and logs may each go to a
//! collector of their own, or one collector may refuse one of them).
//!
//! It is a task of its own on the daemon's thread: the owner never waits
//! for it, and it waits for the collectors only in its own awaits, each
//! bounded by [`REQUEST_TIMEOUT`]. A collector that is down, slow, refusing
//! or answering garbage costs at most [`QUEUE_MAX`] encoded requests per
//! signal and [`QUEUE_BYTES`] of memory, 4 MiB for the three (the oldest is
//! dropped first, and counted), plus the one request in flight per signal,
//! and one attempt per back-off step. Retries follow the OTLP
//! specification: over HTTP 429, 502, 503 and 504, after `Retry-After` when
//! the collector sends one, else after an exponential back-off; over gRPC
//! the retryable status codes ([`grpc_outcome`]) after the back-off; a
//! failed connection or a reply that is neither is retried too. Any other
//! answer drops the request.
//!
//! On the stop, [`Exporter::flush`] sends each signal's last request at
//! once (the last snapshot, the spans and log records not yet drained),
//! within the owner's bound.
//!
//! What the export costs in flash, on mips without TLS
//! (scripts/cross-build.sh --no-default-features mips-unknown-linux-musl,
//! stripped bytes): 82,984 in all (1,784,108 at e32dea6, before it ->
//! 1,867,092), of which the per-signal queues, the last export of every
//! signal, OTLP/gRPC and the HTTP server spans are 17,952 (1,849,140 at
//! 3b30ecb).

use crate::api::control::ControlHandle;
use crate::chan;
use crate::check::probe::grpc;
use crate::check::probe::http1::{self, Method};
use crate::config::run::{OtlpTarget, RunConfig, Transport};
use crate::config::target::Host;
use pathosd_core::api::model::{OtelView, Scope};
use pathosd_core::api::otlp::{self, Span, SpanKind};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Encoded requests kept per signal while its collector does not take
/// them: at the default interval, eight minutes of metrics; forty seconds
/// of spans or log records.
const QUEUE_MAX: usize = 8;
/// Bytes of encoded requests kept per signal, at most (the newest is kept
/// whatever its size): a router's memory, not the collector, sets the
/// bound, 4 MiB for the three. Metrics' requests grow with the VIPs (1.75
/// MB at 1,000); a drain of spans ([`SPANS_MAX`]) or log records (512) is a
/// few hundred KB at most.
const QUEUE_BYTES: [usize; 3] = [3 << 20, 768 << 10, 256 << 10];
const USER_AGENT: &str = concat!("pathosd/", env!("CARGO_PKG_VERSION"));
/// One attempt: connect, send, and the response head.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The first wait after a failure; it doubles up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(120);
/// The longest `Retry-After` honoured: a collector asking for more is
/// asked again after this.
const RETRY_AFTER_MAX: Duration = Duration::from_secs(600);
/// How long the exporter waits for the owner's snapshot.
const SNAPSHOT_LIMIT: Duration = Duration::from_secs(10);
/// Time between two drains of the span buffer: spans reach the collector
/// within seconds, in requests of many spans each.
const SPAN_INTERVAL: Duration = Duration::from_secs(5);
/// Spans kept between two drains (the oldest is dropped first, and
/// counted): 200 spans a second for a few hundred KB at most.
const SPANS_MAX: usize = 1024;

thread_local! {
    // The exporter and the owner run on the daemon's one thread.
    static STATS: Cell<OtelView> = const { Cell::new(OtelView { exported: 0, failed: 0, dropped: 0, queued: 0, spans_dropped: 0, logs_dropped: 0 }) };
    // A const initializer (the seed is drawn by `start`): no lazy
    // initialization compiled for it.
    static SPANS: RefCell<Spans> = const { RefCell::new(Spans {
        buf: VecDeque::new(),
        on: false,
        sample: 0,
        rng: 0,
    }) };
}

/// The span buffer and what decides which spans go in.
struct Spans {
    buf: VecDeque<Span>,
    /// A traces collector is set.
    on: bool,
    /// `OtelRun::traces_sample`.
    sample: u64,
    /// xorshift64 state for ids and sampling: ids need to be unique, not
    /// unguessable, so no crate and no entropy source beyond the seed
    /// (drawn by [`start`]; 0 until then, when nothing is recorded).
    rng: u64,
}

fn seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // Never zero: xorshift would stay there.
    (t ^ (u64::from(std::process::id()) << 32)) | 1
}

impl Spans {
    fn next(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

/// The exporter's calls that run on the probes' blocking pool (https://
/// with ureq, OTLP/gRPC) take turns, whichever signals are sending: a
/// collector that never answers holds one of the pool's workers, not one
/// per signal, and the checks keep the others.
static POOL_TURN: smol::lock::Semaphore = smol::lock::Semaphore::new(1);

/// A route change's span: `name` is `bgp.announce`, `bgp.withdraw` or
/// `bgp.pessimize`, and its operation the word after `bgp.`.
pub(crate) fn route(name: &'static str, prefix: &impl std::fmt::Display, prepend: u8) {
    let op = name.trim_start_matches("bgp.");
    record(
        name,
        Duration::ZERO,
        vec![
            ("bgp.prefix", otlp::Value::Str(prefix.to_string())),
            ("bgp.operation", otlp::Value::Str(op.to_string())),
            ("bgp.prepend", otlp::Value::Int(i64::from(prepend))),
        ],
        false,
    );
}

/// Whether spans are recorded at all (a traces collector is set).
pub(crate) fn tracing() -> bool {
    SPANS.with(|s| s.borrow().on)
}

/// Whether to record this health_check span: `otel.traces.sample_ratio`.
pub(crate) fn sampled() -> bool {
    SPANS.with(|s| {
        let mut s = s.borrow_mut();
        s.on && (s.next() >> 32) < s.sample
    })
}

/// Records a finished span of the daemon's own work (kind INTERNAL) of
/// `duration` that ended now, in a trace of its own; when the buffer is
/// full the oldest span goes.
pub(crate) fn record(
    name: &'static str,
    duration: Duration,
    attributes: Vec<(&'static str, otlp::Value)>,
    error: bool,
) {
    record_span(name.into(), SpanKind::Internal, duration, attributes, error);
}

/// A request the HTTP API served, as a server span named as OpenTelemetry's
/// HTTP conventions say ("GET /status": the method and the route's
/// template; the method alone for a path no route takes; "HTTP" for a
/// method they do not know), with the method, path, route and status;
/// status ERROR for a 5xx. Every request is recorded while traces are on,
/// not sampled as health_check spans are: API requests come from an
/// operator or a scraper, a few a minute, and a trace of one that went
/// wrong is worth more than the bytes.
pub(crate) fn served(
    method: &str,
    path: &str,
    route: Option<&'static str>,
    status: u16,
    duration: Duration,
) {
    if !tracing() {
        return;
    }
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    let known = KNOWN.contains(&method);
    let name = match (known, route) {
        (true, Some(r)) => format!("{method} {r}"),
        (true, None) => method.to_string(),
        (false, Some(r)) => format!("HTTP {r}"),
        (false, None) => "HTTP".to_string(),
    };
    let mut attributes = vec![
        (
            "http.request.method",
            otlp::Value::Str(if known { method } else { "_OTHER" }.to_string()),
        ),
        ("url.path", otlp::Value::Str(path.to_string())),
        (
            "http.response.status_code",
            otlp::Value::Int(i64::from(status)),
        ),
    ];
    if let Some(r) = route {
        attributes.push(("http.route", otlp::Value::Str(r.to_string())));
    }
    record_span(
        name.into(),
        SpanKind::Server,
        duration,
        attributes,
        status >= 500,
    );
}

fn record_span(
    name: std::borrow::Cow<'static, str>,
    kind: SpanKind,
    duration: Duration,
    attributes: Vec<(&'static str, otlp::Value)>,
    error: bool,
) {
    let end = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let start = end.saturating_sub(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
    SPANS.with(|s| {
        let mut s = s.borrow_mut();
        if !s.on {
            return;
        }
        let mut trace_id = [0; 16];
        trace_id[..8].copy_from_slice(&s.next().to_le_bytes());
        trace_id[8..].copy_from_slice(&s.next().to_le_bytes());
        let span_id = s.next().to_le_bytes();
        if s.buf.len() >= SPANS_MAX {
            s.buf.pop_front();
            count(|v| v.spans_dropped = v.spans_dropped.saturating_add(1));
        }
        s.buf.push_back(Span {
            trace_id,
            span_id,
            name,
            kind,
            start_ns: start,
            end_ns: end,
            attributes,
            error,
        });
    });
}

/// The exporter's counters, for /metrics.
pub(crate) fn stats() -> OtelView {
    let mut v = STATS.with(Cell::get);
    v.logs_dropped = crate::logging::otel_dropped();
    v
}

fn count(f: impl FnOnce(&mut OtelView)) {
    STATS.with(|s| {
        let mut v = s.get();
        f(&mut v);
        s.set(v);
    });
}

/// The running exporter; dropping it ends its task.
pub(crate) struct Exporter {
    task: smol::Task<()>,
    /// Each signal's collector, for the last export.
    sinks: [Option<Sink>; 3],
    service: String,
}

/// One signal's collector and how to reach it.
#[derive(Clone)]
struct Sink {
    target: OtlpTarget,
    client: Client,
}

/// A request's signal: the index of its [`Sink`] in the task's.
const METRICS: usize = 0;
const TRACES: usize = 1;
const LOGS: usize = 2;

/// How requests go out: plain http:// on the daemon's thread; https://
/// with ureq on the bounded blocking pool (its agent built once, with the
/// system's CA store read once); grpc:// and grpcs:// with the gRPC
/// probe's client (`grpc::unary`) on the same pool, with its TLS config
/// built once.
#[derive(Clone)]
enum Client {
    Plain,
    #[cfg(feature = "tls")]
    Tls(ureq::Agent),
    Grpc(Option<grpc::TlsConfig>),
}

#[cfg(feature = "tls")]
fn tls_agent(t: &OtlpTarget) -> ureq::Agent {
    use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
    let roots = if t.insecure {
        Vec::new()
    } else {
        crate::check::probe::http::system_roots()
    };
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::Specific(std::sync::Arc::new(roots)))
        .disable_verification(t.insecure)
        .unversioned_rustls_crypto_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .build();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(REQUEST_TIMEOUT))
        .user_agent(USER_AGENT)
        .max_idle_connections(0)
        .tls_config(tls)
        .build();
    ureq::Agent::new_with_config(config)
}

/// One https:// request with ureq, on the blocking pool: the status and
/// its Retry-After.
#[cfg(feature = "tls")]
async fn exchange_tls(
    agent: &ureq::Agent,
    t: &OtlpTarget,
    body: Arc<Vec<u8>>,
) -> Result<(u16, Option<u64>), String> {
    let agent = agent.clone();
    let url = t.url.clone();
    let headers = t.headers.clone();
    let r = crate::check::probe::blocking::pool()
        .run(move || {
            let mut req = agent
                .post(&url)
                .header("Content-Type", "application/x-protobuf");
            for (k, v) in &headers {
                req = req.header(k, v);
            }
            let resp = req.send(&body[..]).map_err(|e| e.to_string())?;
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok());
            Ok((resp.status().as_u16(), retry_after))
        })
        .await?;
    r
}

impl Exporter {
    /// The last export, on the way out: the task stops (what it had queued
    /// is dropped), and `snapshot`, the state after the withdrawals and the
    /// Cease, goes to the metrics' collector while the spans and the log
    /// records not yet drained (the stop's among them) go to theirs, all at
    /// once and all within `limit` (a collector that is down or slow does
    /// not hold up the exit past it).
    pub(crate) async fn flush(
        self,
        snapshot: &pathosd_core::api::model::Snapshot,
        limit: Duration,
    ) {
        drop(self.task);
        let deadline = Instant::now() + limit;
        let [m, t, l] = self.sinks;
        let service = &self.service;
        let metrics = m.map(|s| {
            let body =
                pathosd_core::api::metrics::otlp_request(snapshot, SystemTime::now(), service);
            (s, body)
        });
        let spans = t.and_then(|s| Some((s, drain_spans(service)?)));
        let logs = l.and_then(|s| Some((s, drain_logs(service)?)));
        // Each its own task, all at once: the owner waits for the three
        // tasks, not for a future that polls three sends (less code, and
        // not inlined into the owner's).
        let tasks = [
            crate::rt::spawn(last("metrics", metrics, deadline)),
            crate::rt::spawn(last("spans", spans, deadline)),
            crate::rt::spawn(last("log records", logs, deadline)),
        ];
        for t in tasks {
            t.await;
        }
    }
}

/// One signal's last request, sent once by `deadline`.
async fn last(what: &'static str, request: Option<(Sink, Vec<u8>)>, deadline: Instant) {
    let Some((sink, body)) = request else {
        return;
    };
    match crate::check::probe::until(deadline, send(&sink.target, &sink.client, Arc::new(body)))
        .await
    {
        Some(Outcome::Accepted) => log::debug!("otel: last {what} sent"),
        Some(Outcome::Retry(_, why) | Outcome::Refused(why)) => {
            log::warn!("otel: last {what} not sent: {why}")
        }
        None => log::warn!("otel: last {what} not sent in time"),
    }
}

/// The client for `target`, or None for a transport this build cannot
/// take (validation refuses https:// and grpcs:// without TLS) or a TLS
/// setup that failed.
fn sink(mut target: OtlpTarget) -> Option<Sink> {
    let client = match target.transport {
        Transport::Http { tls: false } => Client::Plain,
        #[cfg(feature = "tls")]
        Transport::Http { tls: true } => Client::Tls(tls_agent(&target)),
        Transport::Grpc { tls } => {
            // gRPC metadata names are lower-case (HTTP/2 header names).
            for (k, _) in &mut target.headers {
                k.make_ascii_lowercase();
            }
            match grpc_tls(&target, tls) {
                Ok(c) => Client::Grpc(c),
                Err(e) => {
                    log::error!("otel: {}: {e}", target.url);
                    return None;
                }
            }
        }
        #[cfg(not(feature = "tls"))]
        Transport::Http { tls: true } => {
            log::error!("otel: {} {}", target.url, crate::NEEDS_TLS);
            return None;
        }
    };
    Some(Sink { target, client })
}

/// grpcs://'s TLS config (the system's CA store, or none with
/// `insecure`), built once.
#[cfg(feature = "tls")]
fn grpc_tls(t: &OtlpTarget, tls: bool) -> Result<Option<grpc::TlsConfig>, String> {
    tls.then(|| grpc::tls_config(None, t.insecure)).transpose()
}

#[cfg(not(feature = "tls"))]
fn grpc_tls(_: &OtlpTarget, tls: bool) -> Result<Option<grpc::TlsConfig>, String> {
    match tls {
        true => Err(crate::NEEDS_TLS.to_string()),
        false => Ok(None),
    }
}

/// Starts the exporter when `otel` has a metrics, traces or logs collector.
pub(crate) fn start(cfg: &RunConfig, ctl: ControlHandle) -> Option<Exporter> {
    let o = &cfg.otel;
    let metrics = o.metrics.clone().and_then(sink);
    let traces = o.traces.clone().and_then(sink);
    let logs = o.logs.clone().and_then(sink);
    crate::logging::set_otel(logs.is_some(), o.log_level.map(super::owner::level_filter));
    // The span buffer follows the new settings at once; what the old
    // exporter had not drained is dropped with its queue.
    SPANS.with(|s| {
        let mut s = s.borrow_mut();
        s.buf.clear();
        s.on = traces.is_some();
        s.sample = o.traces_sample;
        if s.rng == 0 {
            s.rng = seed();
        }
    });
    if metrics.is_none() && traces.is_none() && logs.is_none() {
        return None;
    }
    // A new exporter (a reload) starts with an empty queue; the counters
    // go on, cumulative since the daemon's start.
    count(|v| v.queued = 0);
    let sinks = [metrics, traces, logs];
    // One line per signal, from one call site.
    for (name, s) in ["metrics", "traces", "logs"].iter().zip(&sinks) {
        if let Some(s) = s {
            log::info!("otel: exporting {name} to {}", s.target.url);
        }
    }
    let task = crate::rt::spawn(run(
        sinks.clone(),
        o.service_name.clone(),
        o.metrics_interval,
        ctl,
    ));
    Some(Exporter {
        task,
        sinks,
        service: o.service_name.clone(),
    })
}

/// What became of one attempt.
enum Outcome {
    Accepted,
    /// Retry, after the collector's `Retry-After` when it sent one.
    Retry(Option<Duration>, String),
    /// The collector refused it for good.
    Refused(String),
}

/// One signal's queue: encoded requests, oldest first, each with its
/// number (the one being sent may be dropped from the queue while it is in
/// flight).
struct Queue {
    items: VecDeque<(u64, Arc<Vec<u8>>)>,
    next: u64,
    /// This signal's share of the bytes, [`QUEUE_BYTES`].
    bytes_max: usize,
}

impl Queue {
    fn new(bytes_max: usize) -> Queue {
        Queue {
            items: VecDeque::with_capacity(QUEUE_MAX),
            next: 0,
            bytes_max,
        }
    }

    fn push(&mut self, body: Vec<u8>) {
        // Bounded in count and in bytes (a metrics request grows with the
        // VIPs: at 10,000 of them it is megabytes); the newest always stays.
        let mut bytes: usize = self.items.iter().map(|(_, b)| b.len()).sum();
        while !self.items.is_empty()
            && (self.items.len() >= QUEUE_MAX || bytes + body.len() > self.bytes_max)
        {
            if let Some((_, b)) = self.items.pop_front() {
                bytes -= b.len();
            }
            count(|v| {
                v.dropped = v.dropped.saturating_add(1);
                v.queued = v.queued.saturating_sub(1);
            });
        }
        self.items.push_back((self.next, Arc::new(body)));
        self.next += 1;
        count(|v| v.queued = v.queued.saturating_add(1));
    }

    fn remove(&mut self, seq: u64) {
        let before = self.items.len();
        self.items.retain(|(s, _)| *s != seq);
        if self.items.len() < before {
            count(|v| v.queued = v.queued.saturating_sub(1));
        }
    }
}

/// One signal's way out: its collector, its queue, and the wake-up its
/// sender waits for while the queue is empty.
struct Lane {
    sink: Sink,
    queue: RefCell<Queue>,
    wake: (chan::Tx<()>, chan::Rx<()>),
}

impl Lane {
    fn new(sink: Sink, bytes_max: usize) -> Lane {
        Lane {
            sink,
            queue: RefCell::new(Queue::new(bytes_max)),
            // One wake-up is as good as many: the sender looks at the
            // queue, not at the count.
            wake: chan::bounded(1),
        }
    }

    fn push(&self, body: Vec<u8>) {
        self.queue.borrow_mut().push(body);
        let _ = self.wake.0.try_send(());
    }

    /// Sends the queue's oldest request until it is accepted or refused,
    /// waiting its own back-off between tries, for as long as the exporter
    /// runs. Every signal has one of these: a collector that is down or
    /// refuses one signal holds up only that signal's requests.
    async fn deliver(&self) {
        let url = &self.sink.target.url;
        let mut backoff = BACKOFF_MIN;
        // Only the first failure of a run of them is logged at warn level,
        // and the recovery once: a collector down for a day writes two lines.
        let mut failing = false;
        loop {
            let front = self.queue.borrow().items.front().cloned();
            let Some((seq, body)) = front else {
                if self.wake.1.recv().await.is_err() {
                    // Not while the exporter runs: it holds the sender.
                    return;
                }
                continue;
            };
            // The exports go on while a request is in flight (a collector
            // that never answers holds it for REQUEST_TIMEOUT), so the
            // queue's bound is what limits memory, not the collector's speed.
            match send(&self.sink.target, &self.sink.client, body).await {
                Outcome::Accepted => {
                    self.queue.borrow_mut().remove(seq);
                    backoff = BACKOFF_MIN;
                    count(|v| v.exported = v.exported.saturating_add(1));
                    if failing {
                        failing = false;
                        log::info!("otel: {url} accepts exports again");
                    }
                }
                Outcome::Retry(after, why) => {
                    count(|v| v.failed = v.failed.saturating_add(1));
                    let wait = after.map_or(backoff, |a| a.min(RETRY_AFTER_MAX));
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    if !failing {
                        failing = true;
                        log::warn!("otel: export to {url} failed: {why}; retrying");
                    } else {
                        log::debug!(
                            "otel: export to {url} failed again: {why}; next try in {wait:?}"
                        );
                    }
                    crate::rt::sleep(wait).await;
                }
                Outcome::Refused(why) => {
                    self.queue.borrow_mut().remove(seq);
                    count(|v| {
                        v.failed = v.failed.saturating_add(1);
                        v.dropped = v.dropped.saturating_add(1);
                    });
                    log::warn!("otel: {url} refused an export: {why}; dropped");
                }
            }
        }
    }
}

/// When the next metrics export and the next drain of the span and log
/// buffers are due.
struct Ticks {
    metrics: Option<Instant>,
    spans: Option<Instant>,
    interval: Duration,
}

impl Ticks {
    fn next(&self) -> Instant {
        match (self.metrics, self.spans) {
            (Some(m), Some(s)) => m.min(s),
            (Some(t), None) | (None, Some(t)) => t,
            // Not started without a signal; a day is as good as never.
            (None, None) => Instant::now() + Duration::from_secs(86_400),
        }
    }

    /// Whatever is due: the owner's snapshot or the span and log buffers,
    /// encoded and queued. Each is counted from now, not from the missed
    /// tick: after a stall the exporter does not catch up with a burst.
    async fn run(&mut self, lanes: &[Option<Lane>; 3], service: &str, ctl: &ControlHandle) {
        let now = Instant::now();
        if self.spans.is_some_and(|t| now >= t) {
            self.spans = Some(now + SPAN_INTERVAL);
            if let Some(l) = &lanes[TRACES] {
                if let Some(body) = drain_spans(service) {
                    l.push(body);
                }
            }
            if let Some(l) = &lanes[LOGS] {
                if let Some(body) = drain_logs(service) {
                    l.push(body);
                }
            }
        }
        if self.metrics.is_some_and(|t| now >= t) {
            self.metrics = Some(now + self.interval);
            match ctl.snapshot(Scope::All, SNAPSHOT_LIMIT).await {
                Ok(s) => {
                    if let Some(l) = &lanes[METRICS] {
                        l.push(pathosd_core::api::metrics::otlp_request(
                            &s,
                            SystemTime::now(),
                            service,
                        ));
                    }
                }
                Err(e) => log::debug!("otel: no snapshot: {e:?}"),
            }
        }
    }
}

const SCOPE: (&str, &str) = ("pathosd", env!("CARGO_PKG_VERSION"));

/// The span buffer as one request, emptied; None when it was empty.
fn drain_spans(service: &str) -> Option<Vec<u8>> {
    // Taken whole, not drained: no draining iterator compiled for it.
    let spans = Vec::from(SPANS.with(|s| std::mem::take(&mut s.borrow_mut().buf)));
    (!spans.is_empty()).then(|| otlp::traces_request(&spans, &[("service.name", service)], SCOPE))
}

/// The log records copied since the last drain as one request; None when
/// there were none.
fn drain_logs(service: &str) -> Option<Vec<u8>> {
    let logs = crate::logging::take_otel();
    (!logs.is_empty()).then(|| logs_request(&logs, service, SCOPE))
}

/// Each `log::Level`'s (Error = 1 to Trace = 5) severity number in the
/// OTLP data model, and its text.
const SEVERITY: [(u8, &str); 5] = [
    (17, "ERROR"),
    (13, "WARN"),
    (9, "INFO"),
    (5, "DEBUG"),
    (1, "TRACE"),
];

/// The records as an OTLP request.
fn logs_request(
    logs: &[crate::logging::OtelRecord],
    service: &str,
    scope: (&str, &str),
) -> Vec<u8> {
    let records: Vec<otlp::LogRecord<'_>> = logs
        .iter()
        .map(|r| otlp::LogRecord {
            time_ns: r
                .time
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            severity: SEVERITY[r.level as usize - 1].0,
            severity_text: SEVERITY[r.level as usize - 1].1,
            body: &r.body,
        })
        .collect();
    otlp::logs_request(&records, &[("service.name", service)], scope)
}

async fn run(sinks: [Option<Sink>; 3], service: String, interval: Duration, ctl: ControlHandle) {
    let [m, t, l] = sinks;
    let lane = |s: Option<Sink>, signal: usize| s.map(|s| Lane::new(s, QUEUE_BYTES[signal]));
    let lanes = [lane(m, METRICS), lane(t, TRACES), lane(l, LOGS)];
    let mut ticks = Ticks {
        metrics: lanes[METRICS].as_ref().map(|_| Instant::now() + interval),
        spans: (lanes[TRACES].is_some() || lanes[LOGS].is_some())
            .then(|| Instant::now() + SPAN_INTERVAL),
        interval,
    };
    let tick = async {
        loop {
            crate::rt::sleep_until(ticks.next()).await;
            ticks.run(&lanes, &service, &ctl).await;
        }
    };
    // The ticks and the three senders take turns on this task: none of
    // them waits for another.
    let [m, t, l] = &lanes;
    smol::future::or(
        tick,
        smol::future::or(
            deliver(m.as_ref()),
            smol::future::or(deliver(t.as_ref()), deliver(l.as_ref())),
        ),
    )
    .await;
}

/// A signal's sender, or nothing for a signal that is off.
async fn deliver(lane: Option<&Lane>) {
    match lane {
        Some(l) => l.deliver().await,
        None => std::future::pending().await,
    }
}

/// The request's head for a body of `body_len` bytes, on a new
/// connection (one request a minute does not need a kept one).
fn request_head(t: &OtlpTarget, body_len: usize) -> Vec<u8> {
    let host = if t.host.contains(':') {
        format!("[{}]", t.host)
    } else {
        t.host.clone()
    };
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {host}:{}\r\nUser-Agent: pathosd/{}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n",
        t.path,
        t.port,
        env!("CARGO_PKG_VERSION"),
        body_len
    );
    for (k, v) in &t.headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// The collector's addresses: its IP, or what its name resolves to.
async fn addrs(t: &OtlpTarget) -> Result<Vec<SocketAddr>, String> {
    match t.host.parse::<IpAddr>() {
        Ok(ip) => Ok(vec![SocketAddr::new(ip, t.port)]),
        Err(_) => crate::check::probe::lookup(&t.host, t.port).await,
    }
}

/// One OTLP/gRPC call (the signal's Export, `t.path`) with `grpc::unary`
/// on the blocking pool, bounded by `deadline`: its grpc-status and
/// grpc-message.
async fn exchange_grpc(
    t: &OtlpTarget,
    tls: Option<&grpc::TlsConfig>,
    body: Arc<Vec<u8>>,
    deadline: Instant,
) -> Result<(u32, String), String> {
    let addrs = addrs(t).await?;
    let tls = tls.cloned();
    let host = Host::parse(&t.host);
    let (port, path, metadata) = (t.port, t.path.clone(), t.headers.clone());
    let r = crate::check::probe::blocking::pool()
        .run(move || {
            grpc::unary(&grpc::Call {
                addrs: &addrs,
                tls: tls.as_ref(),
                server_name: &host,
                port,
                path: &path,
                metadata: &metadata,
                user_agent: USER_AGENT,
                message: &body,
                deadline,
            })
            .map(|r| (r.code, r.message))
        })
        .await?;
    r
}

/// An OTLP/HTTP answer: accepted, retried or refused.
fn http_outcome((status, retry_after): (u16, Option<u64>)) -> Outcome {
    match status {
        200..=299 => Outcome::Accepted,
        // OTLP/HTTP: the retryable responses.
        429 | 502 | 503 | 504 => Outcome::Retry(
            retry_after.map(Duration::from_secs),
            format!("HTTP {status}"),
        ),
        s => Outcome::Refused(format!("HTTP {s}")),
    }
}

/// An OTLP/gRPC answer. The specification's retryable codes are retried
/// on the back-off: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE,
/// UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED, which it retries only
/// when the server sends RetryInfo: its details (and any
/// grpc-retry-pushback-ms) are not read, so it is always retried, after
/// the back-off rather than the server's delay. Any other code drops the
/// request.
fn grpc_outcome((code, message): (u32, String)) -> Outcome {
    let why = if message.is_empty() {
        format!("gRPC {}", grpc::code_name(code))
    } else {
        format!("gRPC {}: {message}", grpc::code_name(code))
    };
    match code {
        0 => Outcome::Accepted,
        1 | 4 | 8 | 10 | 11 | 14 | 15 => Outcome::Retry(None, why),
        _ => Outcome::Refused(why),
    }
}

async fn send(t: &OtlpTarget, client: &Client, body: Arc<Vec<u8>>) -> Outcome {
    // The calls on the pool take turns (`POOL_TURN`); waiting for the turn
    // is not the call's time.
    let _turn = match client {
        Client::Plain => None,
        _ => Some(POOL_TURN.acquire().await),
    };
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let attempt = async {
        match client {
            Client::Plain => {
                let addrs = addrs(t).await?;
                // Head and body written one after the other: the body (up
                // to megabytes at 10,000 VIPs) is not copied behind it.
                let head = request_head(t, body.len());
                http1::exchange(&addrs, None, &[&head, &body], Method::Post, false, false)
                    .await
                    .map(|r| http_outcome((r.status, r.retry_after)))
                    .map_err(|f| f.detail("request", &t.url))
            }
            #[cfg(feature = "tls")]
            Client::Tls(agent) => exchange_tls(agent, t, body).await.map(http_outcome),
            Client::Grpc(tls) => exchange_grpc(t, tls.as_ref(), body, deadline)
                .await
                .map(grpc_outcome),
        }
    };
    match crate::check::probe::until(deadline, attempt).await {
        None => Outcome::Retry(None, format!("no answer in {REQUEST_TIMEOUT:?}")),
        Some(Err(why)) => Outcome::Retry(None, why),
        Some(Ok(o)) => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> OtlpTarget {
        OtlpTarget {
            transport: Transport::Http { tls: false },
            host: "::1".into(),
            port: 4318,
            path: "/v1/metrics".into(),
            url: "http://[::1]:4318/v1/metrics".into(),
            insecure: false,
            headers: vec![("X-Key".into(), "k".into())],
        }
    }

    #[test]
    fn the_request_head_carries_the_body_length_and_the_headers() {
        let r = request_head(&target(), 2);
        let text = String::from_utf8_lossy(&r);
        assert!(text.starts_with("POST /v1/metrics HTTP/1.1\r\nHost: [::1]:4318\r\n"));
        assert!(text.contains("\r\nContent-Type: application/x-protobuf\r\n"));
        assert!(text.contains("\r\nContent-Length: 2\r\n"));
        assert!(text.contains("\r\nX-Key: k\r\n\r\n"));
        assert!(r.ends_with(b"\r\n\r\n"), "the head ends the head only");
    }

    /// OTLP's retryable gRPC codes are retried, the others dropped; the
    /// reason names the code and carries the server's message.
    #[test]
    fn grpc_codes_are_retried_or_dropped_as_otlp_says() {
        let o = |c: u32| grpc_outcome((c, String::new()));
        assert!(matches!(o(0), Outcome::Accepted));
        for c in [1, 4, 8, 10, 11, 14, 15] {
            assert!(matches!(o(c), Outcome::Retry(None, _)), "{c}");
        }
        for c in [2, 3, 5, 6, 7, 9, 12, 13, 16, 99] {
            assert!(matches!(o(c), Outcome::Refused(_)), "{c}");
        }
        let Outcome::Retry(_, why) = grpc_outcome((14, "down".into())) else {
            panic!("retried");
        };
        assert_eq!(why, "gRPC UNAVAILABLE (14): down");
    }

    #[test]
    fn a_queue_drops_its_oldest_by_count_and_by_bytes() {
        let before = stats();
        let mut q = Queue::new(QUEUE_BYTES[TRACES]);
        for i in 0..QUEUE_MAX + 3 {
            q.push(vec![i as u8]);
        }
        assert_eq!(q.items.len(), QUEUE_MAX);
        assert_eq!(q.items.front().map(|(s, _)| *s), Some(3));
        assert_eq!(stats().dropped - before.dropped, 3);
        assert_eq!(stats().queued - before.queued, QUEUE_MAX as u32);
        // One request larger than the signal's bytes: it alone stays.
        q.push(vec![0; QUEUE_BYTES[TRACES] + 1]);
        assert_eq!(q.items.len(), 1);
        assert_eq!(stats().dropped - before.dropped, 3 + QUEUE_MAX as u32);
        // The one in flight may be gone already; removing it is harmless.
        q.remove(3);
        q.remove(QUEUE_MAX as u64 + 3);
        assert!(q.items.is_empty());
        assert_eq!(stats().queued, before.queued);
    }

    #[test]
    fn the_span_buffer_keeps_the_newest_and_counts_the_rest() {
        SPANS.with(|s| {
            let mut s = s.borrow_mut();
            s.buf.clear();
            s.on = true;
            s.sample = 0;
            s.rng = seed();
        });
        let before = stats().spans_dropped;
        assert!(!sampled(), "a ratio of 0 samples nothing");
        for _ in 0..SPANS_MAX + 2 {
            record("s", Duration::from_millis(5), Vec::new(), false);
        }
        let (len, first) = SPANS.with(|s| {
            let s = s.borrow();
            (s.buf.len(), s.buf.front().cloned())
        });
        assert_eq!(len, SPANS_MAX);
        assert_eq!(stats().spans_dropped - before, 2);
        let first = first.expect("a span");
        assert_eq!(first.end_ns - first.start_ns, 5_000_000);
        assert_ne!(first.trace_id, [0; 16]);
        SPANS.with(|s| s.borrow_mut().on = false);
        record("s", Duration::ZERO, Vec::new(), false);
        assert_eq!(SPANS.with(|s| s.borrow().buf.len()), SPANS_MAX);
    }
}
