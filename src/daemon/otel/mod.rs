//! The OTLP exporter: every `otel.metrics.interval` it has the owner
//! render every family of /metrics as OTLP protobuf requests of at most
//! about [`METRICS_PART`] bytes each (`pathosd_core::api::stream`, a piece
//! at a time through the control channel, as a streamed HTTP answer is:
//! the owner answers other requests and events between two pieces), and
//! sends them: over
//! OTLP/HTTP, POSTed with the probes' own HTTP/1.1 client (`http://`) or
//! ureq (`https://`); over OTLP/gRPC, as a unary call of the signal's
//! `Export` with the gRPC probe's own HTTP/2 client (`grpc::unary`, for
//! `grpc://` and `grpcs://`; `transport`). The blocking clients run on
//! the probes' bounded pool, each call at most `transport::REQUEST_TIMEOUT`,
//! one call at a time whichever signals send (`transport::POOL_TURN`).
//!
//! Traces: the owner records its spans ([`record`]), and the HTTP API a
//! server span per request ([`served`]), into a bounded buffer
//! on this thread (`spans`) and goes on; every [`SPAN_INTERVAL`] the task drains it
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
//! bounded by `transport::REQUEST_TIMEOUT`. A collector that is down, slow, refusing
//! or answering garbage costs at most [`QUEUE_MAX`] encoded requests per
//! signal and [`QUEUE_BYTES`] of memory, 4 MiB for the three (the oldest is
//! dropped first, and counted), plus the one request in flight per signal,
//! and one attempt per back-off step. Retries follow the OTLP
//! specification: over HTTP 429, 502, 503 and 504, after `Retry-After` when
//! the collector sends one, else after an exponential back-off with jitter;
//! over gRPC the retryable status codes (`transport::grpc_outcome`) after
//! the back-off; a failed connection or a reply that is neither is retried
//! too. Any other answer drops the request. The back-off stops growing at
//! [`BACKOFF_MAX`], and a request one signal's collector accepts ends the
//! other signals' back-offs at once (they mostly share one collector), so
//! the export resumes within seconds of a collector's return.
//!
//! What each signal is doing (its queue, its last failure, its next try)
//! is in [`stats`], for /status, ubus `status` and LuCI as well as
//! /metrics.
//!
//! On the stop, [`Exporter::flush`] sends each signal's last request at
//! once (the last snapshot, the spans and log records not yet drained),
//! within the owner's bound.
//!
//! What the export costs in flash is measured by benches/otel-size.sh: the
//! same tree built with and without it (feature `without-otel`, where
//! `pathosd_core::OTEL` is false and the gates in [`start`],
//! [`Exporter::flush`], `spans::tracing`, `spans::sampled` and the log
//! backend leave the rest out); docs/performance.md has the figures.

mod spans;
mod transport;

pub(crate) use spans::{record, route, sampled, served, tracing};
use transport::{send, sink, Outcome, Sink};

use crate::api::control::ControlHandle;
use crate::chan;
use crate::config::run::RunConfig;
use pathosd_core::api::model::{OtelSignal, OtelView, OTEL_SIGNALS};
use pathosd_core::api::otlp;
use pathosd_core::api::stream::{Job, Source, What, PIECE};
use smol::future::FutureExt;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Encoded requests kept per signal (metrics, traces, logs) while its
/// collector does not take them, at most; [`QUEUE_BYTES`] bounds them too,
/// and whichever bound is reached first drops the oldest. Metrics: one
/// request per `otel.metrics.interval`, whose counters are cumulative, so
/// the newest request alone still carries every count; 8 are eight
/// minutes at the default interval only while a request is small (a few
/// hundred VIPs): one is 1.75 MB at 1,000 VIPs, and the bytes then keep
/// one, the newest. Spans and log records: one request per
/// [`SPAN_INTERVAL`], so 64 are 5 min 20 s of them, unless the bytes run
/// out first (a request of a busy 5 s of route churn, or of the start's
/// one line per VIP, is tens to hundreds of KB).
const QUEUE_MAX: [usize; 3] = [8, 64, 64];
/// Bytes of encoded requests kept per signal, at most (the newest is kept
/// whatever its size): a router's memory, not the collector, sets the
/// bound, 4 MiB for the three.
const QUEUE_BYTES: [usize; 3] = [2 << 20, 1 << 20, 1 << 20];
/// The first wait after a failure; it doubles up to [`BACKOFF_MAX`]. Each
/// wait is drawn between half of it and all of it (the jitter OTLP asks
/// for: routers that export to one collector do not all try again at the
/// same instant when it comes back).
const BACKOFF_MIN: Duration = Duration::from_secs(1);
/// The longest wait between two tries of a collector that does not answer
/// or asks for a retry without a `Retry-After`: the export resumes at most
/// this long after the collector is back (plus one attempt's time). A try
/// of a collector that is down costs a refused connection, so 5 s costs
/// nothing worth a longer wait (which left a 90 s outage unexported for
/// 40 s more when the back-off doubled up to two minutes).
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// The longest `Retry-After` honoured: a collector asking for more is
/// asked again after this.
const RETRY_AFTER_MAX: Duration = Duration::from_secs(600);
/// How long the exporter waits for the owner to render a piece.
const SNAPSHOT_LIMIT: Duration = Duration::from_secs(10);
/// A metrics request's size, about: an export of more (a few hundred VIPs
/// with checks) goes as several requests of the same resource, scope and
/// time, each made once the one before was delivered, so the export holds
/// two requests at most, whatever the number of VIPs (at 10,000 VIPs with
/// a check each, one request was 17 MB).
const METRICS_PART: usize = 256 * 1024;
/// Time between two drains of the span buffer: spans reach the collector
/// within seconds, in requests of many spans each.
const SPAN_INTERVAL: Duration = Duration::from_secs(5);

thread_local! {
    // The exporter and the owner run on the daemon's one thread.
    static STATS: RefCell<OtelView> = const { RefCell::new(OtelView {
        exported: 0, failed: 0, dropped: 0, queued: 0, spans_dropped: 0, logs_dropped: 0,
        signals: [None, None, None],
    }) };
    /// When each signal tries again, while it waits to.
    static NEXT_TRY: Cell<[Option<Instant>; 3]> = const { Cell::new([None; 3]) };
}

/// The exporter's counters and each signal's state, for /metrics and
/// /status.
pub(crate) fn stats() -> OtelView {
    let mut v = STATS.with(|s| s.borrow().clone());
    v.logs_dropped = crate::logging::otel_dropped();
    let now = Instant::now();
    for (s, at) in v.signals.iter_mut().zip(NEXT_TRY.with(Cell::get)) {
        if let Some(s) = s {
            s.next_try_in = at.map(|at| at.saturating_duration_since(now));
        }
    }
    v
}

fn count(f: impl FnOnce(&mut OtelView)) {
    STATS.with(|s| f(&mut s.borrow_mut()));
}

/// Changes what /status shows of one signal.
fn set_signal(i: usize, f: impl FnOnce(&mut OtelSignal)) {
    count(|v| {
        if let Some(s) = &mut v.signals[i] {
            f(s);
        }
    });
}

fn next_try(i: usize, at: Option<Instant>) {
    NEXT_TRY.with(|n| {
        let mut a = n.get();
        a[i] = at;
        n.set(a);
    });
}

/// The running exporter; dropping it ends its task.
pub(crate) struct Exporter {
    task: smol::Task<()>,
    /// Each signal's collector, for the last export.
    sinks: [Option<Sink>; 3],
    service: String,
}

/// A request's signal: the index of its [`Sink`] in the task's.
const METRICS: usize = 0;
const TRACES: usize = 1;
const LOGS: usize = 2;

impl Exporter {
    /// The last export, on the way out: the task stops (what it had queued
    /// is dropped), and the state after the withdrawals and the Cease,
    /// read from `state` (the owner's, which serves nothing else by then),
    /// goes to the metrics' collector a request at a time while the spans
    /// and the log records not yet drained (the stop's among them) go to
    /// theirs, all within `limit` (a collector that is down or slow does
    /// not hold up the exit past it).
    pub(crate) async fn flush(self, state: &mut dyn Source, limit: Duration) {
        drop(self.task);
        // Without the export no Exporter is ever made; said again here so
        // that the compiler leaves out everything the stop would send.
        if !pathosd_core::OTEL {
            return;
        }
        let deadline = Instant::now() + limit;
        let [m, t, l] = self.sinks;
        let service = &self.service;
        let spans = t.and_then(|s| Some((s, drain_spans(service)?)));
        let logs = l.and_then(|s| Some((s, drain_logs(service)?)));
        // Each its own task, while the metrics go out here: the owner
        // waits for two tasks, not for a future that polls three sends
        // (less code, and not inlined into the owner's).
        let tasks = [
            crate::rt::spawn(last("spans", spans, deadline)),
            crate::rt::spawn(last("log records", logs, deadline)),
        ];
        if let Some(sink) = m {
            last_metrics(&sink, state, service, deadline).await;
        }
        for t in tasks {
            t.await;
        }
    }
}

/// The last metrics, made and sent a request at a time by `deadline`.
async fn last_metrics(sink: &Sink, state: &mut dyn Source, service: &str, deadline: Instant) {
    let mut job = metrics_job(service);
    let mut sent = 0u32;
    loop {
        if Instant::now() >= deadline {
            return log::warn!("otel: last metrics not sent in time ({sent} requests sent)");
        }
        job.step(state);
        if let Some(why) = job.failed() {
            return log::warn!("otel: last metrics not sent: {why}");
        }
        if !job.piece().is_empty() {
            let body = Arc::new(job.take_piece());
            match crate::net::until(deadline, send(sink, body)).await {
                Some(Outcome::Accepted) => sent += 1,
                Some(Outcome::Retry(_, why) | Outcome::Refused(why)) => {
                    return log::warn!("otel: last metrics not sent: {why}");
                }
                None => {
                    return log::warn!("otel: last metrics not sent in time ({sent} requests sent)")
                }
            }
        }
        if job.done() {
            return log::debug!("otel: last metrics sent ({sent} requests)");
        }
    }
}

/// A metrics export of now, in requests of [`METRICS_PART`].
fn metrics_job(service: &str) -> Box<Job> {
    let what = What::Otlp {
        now: SystemTime::now(),
        service: service.to_string(),
        part: METRICS_PART,
    };
    Box::new(Job::new(what, PIECE))
}

/// An export of the metrics into `lane`: the owner renders it a piece at
/// a time; each request made goes into the queue, and the next is made
/// once the queue is empty again (the collector took the one before), so
/// an export holds a request in flight and the one being made; at the
/// latest at `until` (the next export's time, the collector slow or down)
/// the rest goes in as it is made, the queue dropping its oldest.
async fn export_metrics(lane: &Lane, ctl: &ControlHandle, service: &str, until: Instant) {
    let mut job = metrics_job(service);
    loop {
        job = match ctl.render(job, SNAPSHOT_LIMIT).await {
            Ok(j) => j,
            Err(e) => return log::debug!("otel: no metrics: {e}"),
        };
        if let Some(why) = job.failed() {
            return log::debug!("otel: metrics export ended: {why}");
        }
        if !job.piece().is_empty() {
            lane.push(job.take_piece());
            if !job.done() {
                lane.emptied(until).await;
            }
        }
        if job.done() {
            return;
        }
    }
}

/// One signal's last request, sent once by `deadline`.
async fn last(what: &'static str, request: Option<(Sink, Vec<u8>)>, deadline: Instant) {
    let Some((sink, body)) = request else {
        return;
    };
    match crate::net::until(deadline, send(&sink, Arc::new(body))).await {
        Some(Outcome::Accepted) => log::debug!("otel: last {what} sent"),
        Some(Outcome::Retry(_, why) | Outcome::Refused(why)) => {
            log::warn!("otel: last {what} not sent: {why}")
        }
        None => log::warn!("otel: last {what} not sent in time"),
    }
}

/// Starts the exporter when `otel` has a metrics, traces or logs collector.
pub(crate) fn start(cfg: &RunConfig, ctl: ControlHandle) -> Option<Exporter> {
    if !pathosd_core::OTEL {
        return None;
    }
    let o = &cfg.otel;
    let metrics = o.metrics.as_ref().and_then(sink);
    let traces = o.traces.as_ref().and_then(sink);
    let logs = o.logs.as_ref().and_then(sink);
    crate::logging::set_otel(logs.is_some(), o.log_level.map(super::owner::level_filter));
    // The span buffer follows the new settings at once; what the old
    // exporter had not drained is dropped with its queue.
    spans::configure(traces.is_some(), o.traces_sample);
    if metrics.is_none() && traces.is_none() && logs.is_none() {
        return None;
    }
    // A new exporter (a reload) starts with empty queues; the counters
    // go on, cumulative since the daemon's start.
    let sinks = [metrics, traces, logs];
    count(|v| {
        v.queued = 0;
        v.signals = sinks.clone().map(|s| {
            s.map(|s| OtelSignal {
                endpoint: s.target.url.clone(),
                ..OtelSignal::default()
            })
        });
    });
    NEXT_TRY.with(|n| n.set([None; 3]));
    // One line per signal, from one call site.
    for (name, s) in OTEL_SIGNALS.iter().zip(&sinks) {
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

/// One signal's queue: encoded requests, oldest first, each with its
/// number (the one being sent may be dropped from the queue while it is in
/// flight).
struct Queue {
    items: VecDeque<(u64, Arc<Vec<u8>>)>,
    next: u64,
    /// Its signal, the index of its bounds in [`QUEUE_MAX`] and
    /// [`QUEUE_BYTES`].
    signal: usize,
}

impl Queue {
    fn new(signal: usize) -> Queue {
        Queue {
            items: VecDeque::new(),
            next: 0,
            signal,
        }
    }

    fn push(&mut self, body: Vec<u8>) {
        // Bounded in count and in bytes (a metrics request grows with the
        // VIPs: at 10,000 of them it is megabytes); the newest always stays.
        let i = self.signal;
        let mut bytes: usize = self.items.iter().map(|(_, b)| b.len()).sum();
        while !self.items.is_empty()
            && (self.items.len() >= QUEUE_MAX[i] || bytes + body.len() > QUEUE_BYTES[i])
        {
            if let Some((_, b)) = self.items.pop_front() {
                bytes -= b.len();
            }
            count(|v| v.dropped = v.dropped.saturating_add(1));
        }
        self.items.push_back((self.next, Arc::new(body)));
        self.next += 1;
        self.counted();
    }

    /// Removes the request numbered `seq` if it is still queued: it was
    /// the oldest when it was sent, and requests leave only from the
    /// front, so it is the front or gone.
    fn remove(&mut self, seq: u64) {
        if self.items.front().is_some_and(|(s, _)| *s == seq) {
            self.items.pop_front();
            self.counted();
        }
    }

    /// The queue's length, in its signal's state and in the total.
    fn counted(&self) {
        let n = u32::try_from(self.items.len()).unwrap_or(u32::MAX);
        count(|v| {
            let was = v.signals[self.signal].as_ref().map_or(0, |s| s.queued);
            v.queued = v.queued.saturating_sub(was).saturating_add(n);
        });
        set_signal(self.signal, |s| s.queued = n);
    }
}

/// One signal's way out: its collector, its queue, the wake-up its
/// sender waits for while the queue is empty, the one a metrics export
/// waits for while it is full, and the one that ends its back-off when
/// another signal's collector accepted a request.
struct Lane {
    sink: Sink,
    queue: RefCell<Queue>,
    wake: (chan::Tx<()>, chan::Rx<()>),
    kick: (chan::Tx<()>, chan::Rx<()>),
    freed: (chan::Tx<()>, chan::Rx<()>),
}

impl Lane {
    fn new(sink: Sink, signal: usize) -> Lane {
        Lane {
            sink,
            queue: RefCell::new(Queue::new(signal)),
            // One wake-up is as good as many: the sender looks at the
            // queue, not at the count.
            wake: chan::bounded(1),
            kick: chan::bounded(1),
            freed: chan::bounded(1),
        }
    }

    /// Waits `wait` before the next try; a back-off (`kickable`) ends
    /// early when another signal's collector accepts a request, a
    /// collector's `Retry-After` does not.
    async fn pause(&self, wait: Duration, kickable: bool) {
        // A kick from before this failure says nothing about the collector
        // now.
        while self.kick.1.try_recv().is_ok() {}
        let signal = self.queue.borrow().signal;
        next_try(signal, Some(Instant::now() + wait));
        if kickable {
            smol::future::or(crate::rt::sleep(wait), async {
                let _ = self.kick.1.recv().await;
            })
            .await;
        } else {
            crate::rt::sleep(wait).await;
        }
        next_try(signal, None);
    }

    /// Waits until the queue is empty (what it held was delivered or
    /// dropped), or `until`.
    async fn emptied(&self, until: Instant) {
        while !self.queue.borrow().items.is_empty() && Instant::now() < until {
            let freed = async {
                let _ = self.freed.1.recv().await;
            };
            freed
                .or(async { crate::rt::sleep_until(until).await })
                .await;
        }
    }

    /// The request numbered `seq` leaves the queue.
    fn remove(&self, seq: u64) {
        self.queue.borrow_mut().remove(seq);
        let _ = self.freed.0.try_send(());
    }

    fn push(&self, body: Vec<u8>) {
        self.queue.borrow_mut().push(body);
        let _ = self.wake.0.try_send(());
    }

    /// Sends the queue's oldest request until it is accepted or refused,
    /// waiting its own back-off between tries, for as long as the exporter
    /// runs. Every signal has one of these: a collector that is down or
    /// refuses one signal holds up only that signal's requests; one that
    /// accepts a request ends the back-off of the others (`lanes`).
    async fn deliver(&self, lanes: &[Option<Lane>; 3]) {
        let url = &self.sink.target.url;
        let signal = self.queue.borrow().signal;
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
            match send(&self.sink, body).await {
                Outcome::Accepted => {
                    self.remove(seq);
                    backoff = BACKOFF_MIN;
                    count(|v| v.exported = v.exported.saturating_add(1));
                    set_signal(signal, |s| s.last_error = None);
                    if failing {
                        failing = false;
                        log::info!("otel: {url} accepts exports again");
                    }
                    // A collector answers: the signals that wait for one (the
                    // same, mostly) try again now, not at their back-off's end.
                    for l in lanes.iter().flatten() {
                        let _ = l.kick.0.try_send(());
                    }
                }
                Outcome::Retry(after, why) => {
                    count(|v| v.failed = v.failed.saturating_add(1));
                    let wait = after.map_or_else(|| jitter(backoff), |a| a.min(RETRY_AFTER_MAX));
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    if !failing {
                        failing = true;
                        log::warn!("otel: export to {url} failed: {why}; retrying");
                    } else {
                        log::debug!(
                            "otel: export to {url} failed again: {why}; next try in {wait:?}"
                        );
                    }
                    set_signal(signal, |s| s.last_error = Some(why));
                    self.pause(wait, after.is_none()).await;
                }
                Outcome::Refused(why) => {
                    self.remove(seq);
                    count(|v| {
                        v.failed = v.failed.saturating_add(1);
                        v.dropped = v.dropped.saturating_add(1);
                    });
                    log::warn!("otel: {url} refused an export: {why}; dropped");
                    set_signal(signal, |s| s.last_error = Some(why));
                }
            }
        }
    }
}

/// A wait between half of `backoff` and all of it, to the millisecond,
/// drawn from the clock's nanoseconds (spread over routers, not secret; in
/// integers: no float code for it on soft-float CPUs).
fn jitter(backoff: Duration) -> Duration {
    let half = backoff / 2;
    let nanos = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let ms = u32::try_from(half.as_millis()).unwrap_or(u32::MAX);
    half + Duration::from_millis(u64::from(nanos % ms.saturating_add(1)))
}

const SCOPE: (&str, &str) = ("pathosd", env!("CARGO_PKG_VERSION"));

/// The span buffer as one request, emptied; None when it was empty.
fn drain_spans(service: &str) -> Option<Vec<u8>> {
    let spans = spans::take();
    (!spans.is_empty())
        .then(|| otlp::traces_request(spans.iter(), &[("service.name", service)], SCOPE))
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
    logs: &VecDeque<crate::logging::OtelRecord>,
    service: &str,
    scope: (&str, &str),
) -> Vec<u8> {
    let records: Vec<otlp::LogRecord<'_>> = logs
        .iter()
        .map(|r| otlp::LogRecord {
            time_ns: otlp::unix_nanos(r.time),
            severity: SEVERITY[r.level as usize - 1].0,
            severity_text: SEVERITY[r.level as usize - 1].1,
            body: &r.body,
        })
        .collect();
    otlp::logs_request(&records, &[("service.name", service)], scope)
}

async fn run(sinks: [Option<Sink>; 3], service: String, interval: Duration, ctl: ControlHandle) {
    let [m, t, l] = sinks;
    let lane = |s: Option<Sink>, signal: usize| s.map(|s| Lane::new(s, signal));
    let lanes = [lane(m, METRICS), lane(t, TRACES), lane(l, LOGS)];
    // Each tick is counted from when it ran, not from the one missed:
    // after a stall the exporter does not catch up with a burst.
    let metrics = async {
        let Some(lane) = &lanes[METRICS] else {
            return std::future::pending().await;
        };
        let mut next = Instant::now() + interval;
        loop {
            crate::rt::sleep_until(next).await;
            next = Instant::now() + interval;
            export_metrics(lane, &ctl, &service, next).await;
        }
    };
    let buffers = async {
        if lanes[TRACES].is_none() && lanes[LOGS].is_none() {
            return std::future::pending().await;
        }
        loop {
            crate::rt::sleep(SPAN_INTERVAL).await;
            if let Some(l) = &lanes[TRACES] {
                if let Some(body) = drain_spans(&service) {
                    l.push(body);
                }
            }
            if let Some(l) = &lanes[LOGS] {
                if let Some(body) = drain_logs(&service) {
                    l.push(body);
                }
            }
        }
    };
    // The exports, the drains and the three senders take turns on this
    // task: none of them waits for another.
    let [m, t, l] = &lanes;
    smol::future::or(
        smol::future::or(metrics, buffers),
        smol::future::or(
            deliver(m.as_ref(), &lanes),
            smol::future::or(deliver(t.as_ref(), &lanes), deliver(l.as_ref(), &lanes)),
        ),
    )
    .await;
}

/// A signal's sender, or nothing for a signal that is off.
async fn deliver(lane: Option<&Lane>, lanes: &[Option<Lane>; 3]) {
    match lane {
        Some(l) => l.deliver(lanes).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_drops_its_oldest_by_count_and_by_bytes() {
        count(|v| v.signals[TRACES] = Some(OtelSignal::default()));
        let before = stats();
        let max = QUEUE_MAX[TRACES];
        let mut q = Queue::new(TRACES);
        for i in 0..max + 3 {
            q.push(vec![i as u8]);
        }
        assert_eq!(q.items.len(), max);
        assert_eq!(q.items.front().map(|(s, _)| *s), Some(3));
        assert_eq!(stats().dropped - before.dropped, 3);
        assert_eq!(stats().queued - before.queued, max as u32);
        assert_eq!(
            stats().signals[TRACES].as_ref().map(|s| s.queued),
            Some(max as u32)
        );
        // One request larger than the signal's bytes: it alone stays.
        q.push(vec![0; QUEUE_BYTES[TRACES] + 1]);
        assert_eq!(q.items.len(), 1);
        assert_eq!(stats().dropped - before.dropped, 3 + max as u32);
        // The one in flight may be gone already; removing it is harmless.
        q.remove(3);
        q.remove(max as u64 + 3);
        assert!(q.items.is_empty());
        assert_eq!(stats().queued, before.queued);
        assert_eq!(stats().signals[TRACES].as_ref().map(|s| s.queued), Some(0));
    }

    /// A back-off ends when another signal's collector accepts a request;
    /// a kick from before the failure does not cut it short, nor does one
    /// cut a collector's `Retry-After`.
    #[test]
    fn a_success_of_another_signal_ends_a_back_off() {
        let target = pathosd_core::config::run::OtlpTarget {
            transport: pathosd_core::config::run::Transport::Http { tls: false },
            collector: crate::config::target::HostPort {
                host: crate::config::target::Host::Ip(std::net::Ipv4Addr::LOCALHOST.into()),
                port: 9,
            },
            path: "/v1/metrics".into(),
            url: "http://127.0.0.1:9/v1/metrics".into(),
            insecure: false,
            headers: Vec::new(),
        };
        let lane = Lane::new(sink(&target).expect("a plain sink"), METRICS);
        smol::block_on(async {
            let _ = lane.kick.0.try_send(());
            let t = Instant::now();
            lane.pause(Duration::from_millis(300), true).await;
            assert!(
                t.elapsed() >= Duration::from_millis(290),
                "a stale kick ended it"
            );
            let kicked = async {
                async_io::Timer::after(Duration::from_millis(50)).await;
                let _ = lane.kick.0.try_send(());
            };
            let t = Instant::now();
            smol::future::zip(lane.pause(Duration::from_secs(30), true), kicked).await;
            assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
            let kicked = async {
                async_io::Timer::after(Duration::from_millis(50)).await;
                let _ = lane.kick.0.try_send(());
            };
            let t = Instant::now();
            smol::future::zip(lane.pause(Duration::from_millis(400), false), kicked).await;
            assert!(
                t.elapsed() >= Duration::from_millis(390),
                "a Retry-After was cut short"
            );
        });
    }

    #[test]
    fn the_jitter_stays_within_half_and_all_of_the_back_off() {
        for _ in 0..100 {
            let j = jitter(BACKOFF_MAX);
            assert!((BACKOFF_MAX / 2..=BACKOFF_MAX).contains(&j), "{j:?}");
        }
    }
}
