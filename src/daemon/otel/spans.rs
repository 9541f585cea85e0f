//! The span buffer: what the owner (its steps and its stop) and the HTTP
//! API record (`route`, `record`, `served`), kept on the daemon's thread until
//! the exporter drains it (`take`), and the sampling of health_check spans.

use super::count;
use pathosd_core::api::otlp::{self, Span, SpanKind};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

/// Spans kept between two drains (the oldest is dropped first, and
/// counted): 200 spans a second for a few hundred KB at most.
const SPANS_MAX: usize = 1024;

thread_local! {
    // The exporter and the owner run on the daemon's one thread.
    // A const initializer (the seed is drawn by `configure`): no lazy
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
    /// (drawn by [`configure`]; 0 until then, when nothing is recorded).
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

/// A route change's span: `name` is `bgp.announce`, `bgp.withdraw` or
/// `bgp.pessimize`, and its operation the word after `bgp.`.
pub(crate) fn route(name: &'static str, prefix: &impl std::fmt::Display, prepend: u8) {
    // strip_prefix, not trim_start_matches: the same here, and a
    // comparison instead of a searcher's loop (1.6 KB on mips).
    let op = name.strip_prefix("bgp.").unwrap_or(name);
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
    pathosd_core::OTEL && SPANS.with(|s| s.borrow().on)
}

/// Whether to record this health_check span: `otel.traces.sample_ratio`.
pub(crate) fn sampled() -> bool {
    pathosd_core::OTEL
        && SPANS.with(|s| {
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
    let end = otlp::unix_nanos(SystemTime::now());
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

/// A new exporter's settings (`on`: a traces collector is set; `sample`:
/// `OtelRun::traces_sample`), at once: what the old exporter had not
/// drained is dropped with its queue.
pub(super) fn configure(on: bool, sample: u64) {
    SPANS.with(|s| {
        let mut s = s.borrow_mut();
        s.buf.clear();
        s.on = on;
        s.sample = sample;
        if s.rng == 0 {
            s.rng = seed();
        }
    });
}

/// The spans recorded since the last take, oldest first.
pub(super) fn take() -> VecDeque<Span> {
    // Taken whole, not drained (no draining iterator compiled for it), and
    // not made a Vec (no rotation compiled for it).
    SPANS.with(|s| std::mem::take(&mut s.borrow_mut().buf))
}

#[cfg(test)]
mod tests {
    use super::super::stats;
    use super::*;

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
