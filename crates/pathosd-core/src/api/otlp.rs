//! OTLP metrics and traces as protobuf: an `ExportMetricsServiceRequest`
//! (opentelemetry-proto, `collector/metrics/v1/metrics_service.proto` and
//! `metrics/v1/metrics.proto`) written by hand. The renderer of /metrics
//! feeds it family by family (`prom::Exposition::otlp`), so every family of
//! /metrics is exported with the same names and labels, and a new family
//! needs nothing here. A generated codec (prost) would cost far more flash
//! than these few writers; `tests/otel_export.rs` decodes what they write
//! with the official Python definitions.
//!
//! Spans ([`traces_request`]) and log records ([`logs_request`]) share the
//! writers and the request's frame.
//!
//! Nesting is fixed (request > resource metrics > scope metrics > metric >
//! data > point > attribute > value), so each message is written into its
//! own buffer and then framed into its parent with its length.

use super::prom::Kind;

// Protobuf wire types.
const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;

/// AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE.
const CUMULATIVE: u64 = 2;

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    // At most ten bytes: seven bits each.
    for _ in 0..10 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, I64);
    out.extend_from_slice(&v.to_le_bytes());
}

fn double(out: &mut Vec<u8>, field: u32, v: f64) {
    fixed64(out, field, v.to_bits());
}

/// A `KeyValue` with a string `AnyValue`, as field `field` of its parent.
fn attribute(out: &mut Vec<u8>, field: u32, k: &str, v: &str, scratch: &mut Vec<u8>) {
    scratch.clear();
    bytes(scratch, 1, k.as_bytes());
    // AnyValue { string_value = 1 }, framed as KeyValue.value = 2.
    let mut any = Vec::with_capacity(v.len() + 2);
    bytes(&mut any, 1, v.as_bytes());
    bytes(scratch, 2, &any);
    bytes(out, field, scratch);
}

/// One request being written: the metrics so far and the one open.
pub(crate) struct Metrics {
    /// Every finished `Metric`, each framed as ScopeMetrics.metrics = 2.
    done: Vec<u8>,
    /// The open metric's name and description, and its kind.
    head: Vec<u8>,
    kind: Kind,
    /// The open metric's data points, each framed in its data message.
    points: Vec<u8>,
    open: bool,
    start_ns: u64,
    now_ns: u64,
    scratch: Vec<u8>,
}

impl Metrics {
    /// Points are stamped `now_ns`; sums and histograms count from
    /// `start_ns` (the daemon's start: their values are since then).
    pub(crate) fn new(start_ns: u64, now_ns: u64) -> Metrics {
        Metrics {
            done: Vec::new(),
            head: Vec::new(),
            kind: Kind::Gauge,
            points: Vec::new(),
            open: false,
            start_ns,
            now_ns,
            scratch: Vec::new(),
        }
    }

    /// Starts a metric, closing the one before.
    pub(crate) fn family(&mut self, name: &str, kind: Kind, help: &str) {
        self.close();
        self.head.clear();
        bytes(&mut self.head, 1, name.as_bytes());
        bytes(&mut self.head, 2, help.as_bytes());
        self.kind = kind;
        self.open = true;
    }

    fn attributes(&mut self, point: &mut Vec<u8>, field: u32, l: &[(&str, &str)]) {
        for (k, v) in l {
            attribute(point, field, k, v, &mut self.scratch);
        }
    }

    /// A NumberDataPoint (a gauge's or a counter's value).
    pub(crate) fn number(&mut self, l: &[(&str, &str)], v: f64) {
        let mut p = Vec::with_capacity(64);
        self.attributes(&mut p, 7, l);
        if self.kind != Kind::Gauge {
            fixed64(&mut p, 2, self.start_ns);
        }
        fixed64(&mut p, 3, self.now_ns);
        double(&mut p, 4, v);
        bytes(&mut self.points, 1, &p);
    }

    /// A HistogramDataPoint from Prometheus's cumulative buckets: OTLP
    /// counts each bucket alone, with one more bucket above the last bound.
    pub(crate) fn histogram(
        &mut self,
        l: &[(&str, &str)],
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) {
        let mut p = Vec::with_capacity(128);
        self.attributes(&mut p, 9, l);
        fixed64(&mut p, 2, self.start_ns);
        fixed64(&mut p, 3, self.now_ns);
        fixed64(&mut p, 4, count);
        double(&mut p, 5, sum);
        // Packed repeated fixed64 and double: 8 bytes each.
        let mut counts = Vec::with_capacity(8 * (buckets.len() + 1));
        let mut below = 0u64;
        for (_, c) in buckets {
            counts.extend_from_slice(&c.saturating_sub(below).to_le_bytes());
            below = below.max(*c);
        }
        counts.extend_from_slice(&count.saturating_sub(below).to_le_bytes());
        bytes(&mut p, 6, &counts);
        let bounds: Vec<u8> = buckets
            .iter()
            .flat_map(|(le, _)| le.to_bits().to_le_bytes())
            .collect();
        bytes(&mut p, 7, &bounds);
        bytes(&mut self.points, 1, &p);
    }

    fn close(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let mut data = std::mem::take(&mut self.points);
        let field = match self.kind {
            Kind::Gauge => 5,
            Kind::Counter => {
                // Sum: aggregation_temporality = 2, is_monotonic = 3.
                key(&mut data, 2, VARINT);
                varint(&mut data, CUMULATIVE);
                key(&mut data, 3, VARINT);
                varint(&mut data, 1);
                7
            }
            Kind::Histogram => {
                key(&mut data, 2, VARINT);
                varint(&mut data, CUMULATIVE);
                9
            }
        };
        let mut metric = std::mem::take(&mut self.head);
        bytes(&mut metric, field, &data);
        bytes(&mut self.done, 2, &metric);
    }

    /// The request: one resource with `resource` attributes, one scope.
    pub(crate) fn finish(mut self, resource: &[(&str, &str)], scope: (&str, &str)) -> Vec<u8> {
        self.close();
        envelope(resource, scope, self.done)
    }

    /// Bytes written so far, about the size of the request [`Self::split`]
    /// would make.
    pub(crate) fn len(&self) -> usize {
        self.done.len() + self.head.len() + self.points.len()
    }

    /// The request so far, as [`Self::finish`] makes it; the writing goes
    /// on into a new request, in which the metric open now is opened again
    /// (its points so far stay in this one). A metric in two requests is
    /// one metric to the collector: the same name, resource and scope.
    pub(crate) fn split(&mut self, resource: &[(&str, &str)], scope: (&str, &str)) -> Vec<u8> {
        // A metric with no point yet goes on in the next request whole.
        let reopen = (self.open && !self.points.is_empty()).then(|| (self.head.clone(), self.kind));
        if reopen.is_some() {
            self.close();
        }
        let part = envelope(resource, scope, std::mem::take(&mut self.done));
        if let Some((head, kind)) = reopen {
            self.head = head;
            self.kind = kind;
            self.open = true;
        }
        part
    }
}

/// An export request of any signal: the three signals' requests have the
/// same frame (request.resource_X = 1 > resource = 1, scope_X = 2 >
/// scope = 1, then `items`, each already framed as field 2 of the scope).
/// The frame is put in front of the items in their own buffer: the request
/// is never copied whole (at 1,000 VIPs a metrics request is 1.75 MB, and a
/// copy per level of nesting held two of them at once).
fn envelope(resource: &[(&str, &str)], scope: (&str, &str), mut items: Vec<u8>) -> Vec<u8> {
    let mut res = Vec::new();
    let mut scratch = Vec::new();
    for (k, v) in resource {
        attribute(&mut res, 1, k, v, &mut scratch);
    }
    let mut sc = Vec::new();
    bytes(&mut sc, 1, scope.0.as_bytes());
    bytes(&mut sc, 2, scope.1.as_bytes());
    // ScopeX: its scope, then the items.
    let mut scoped_head = Vec::new();
    bytes(&mut scoped_head, 1, &sc);
    let scoped_len = scoped_head.len() + items.len();
    // ResourceX: its resource, then the ScopeX's frame.
    let mut rm_head = Vec::new();
    bytes(&mut rm_head, 1, &res);
    key(&mut rm_head, 2, LEN);
    varint(&mut rm_head, scoped_len as u64);
    let rm_len = rm_head.len() + scoped_len;
    // The request: the ResourceX's frame.
    let mut head = Vec::with_capacity(rm_head.len() + scoped_head.len() + 16);
    key(&mut head, 1, LEN);
    varint(&mut head, rm_len as u64);
    head.extend_from_slice(&rm_head);
    head.extend_from_slice(&scoped_head);
    items.splice(0..0, head);
    // A queued request keeps its buffer: no growth slack with it.
    items.shrink_to_fit();
    items
}

/// `t` as OTLP's times are: nanoseconds since the Unix epoch (0 before it;
/// the most a u64 holds after it).
pub fn unix_nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A span attribute's value (`AnyValue`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// A span's kind (`Span.SpanKind`): the daemon's own work, or a request
/// it served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Internal = 1,
    Server = 2,
}

/// One finished span, as the daemon records it (`trace/v1/trace.proto`).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// A fixed name (`health_check`), or one made per span (an HTTP
    /// server span's `GET /status`).
    pub name: std::borrow::Cow<'static, str>,
    pub kind: SpanKind,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<(&'static str, Value)>,
    /// Status ERROR (a failed check) rather than unset.
    pub error: bool,
}

impl Span {
    /// Its size when encoded, roughly: what the span buffer counts.
    pub fn weight(&self) -> usize {
        64 + self
            .attributes
            .iter()
            .map(|(k, v)| {
                k.len()
                    + 8
                    + match v {
                        Value::Str(s) => s.len(),
                        _ => 8,
                    }
            })
            .sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        let mut sp = Vec::with_capacity(self.weight());
        bytes(&mut sp, 1, &self.trace_id);
        bytes(&mut sp, 2, &self.span_id);
        bytes(&mut sp, 5, self.name.as_bytes());
        key(&mut sp, 6, VARINT);
        varint(&mut sp, self.kind as u64);
        fixed64(&mut sp, 7, self.start_ns);
        fixed64(&mut sp, 8, self.end_ns);
        for (k, v) in &self.attributes {
            let mut any = Vec::new();
            match v {
                Value::Str(s) => bytes(&mut any, 1, s.as_bytes()),
                Value::Bool(b) => {
                    key(&mut any, 2, VARINT);
                    varint(&mut any, u64::from(*b));
                }
                Value::Int(i) => {
                    key(&mut any, 3, VARINT);
                    // int64: two's complement in ten bytes when negative.
                    varint(&mut any, *i as u64);
                }
                Value::Double(d) => double(&mut any, 4, *d),
            }
            scratch.clear();
            bytes(scratch, 1, k.as_bytes());
            bytes(scratch, 2, &any);
            bytes(&mut sp, 9, scratch);
        }
        if self.error {
            // Status { code = 3: STATUS_CODE_ERROR (2) }.
            bytes(&mut sp, 15, &[0x18, 2]);
        }
        bytes(out, 2, &sp);
    }
}

/// An `ExportTraceServiceRequest` (`collector/trace/v1/trace_service.proto`)
/// of `spans`, with one resource and one scope.
pub fn traces_request<'a>(
    spans: impl Iterator<Item = &'a Span> + Clone,
    resource: &[(&str, &str)],
    scope: (&str, &str),
) -> Vec<u8> {
    let mut items = Vec::with_capacity(spans.clone().map(Span::weight).sum());
    let mut scratch = Vec::new();
    for s in spans {
        s.encode(&mut items, &mut scratch);
    }
    envelope(resource, scope, items)
}

/// One log record (`logs/v1/logs.proto`): its time, severity number (1
/// to 24: 5 DEBUG, 9 INFO, 13 WARN, 17 ERROR) and text, and its body.
pub struct LogRecord<'a> {
    pub time_ns: u64,
    pub severity: u8,
    pub severity_text: &'a str,
    pub body: &'a str,
}

/// An `ExportLogsServiceRequest` (`collector/logs/v1/logs_service.proto`)
/// of `records`, with one resource and one scope.
pub fn logs_request(
    records: &[LogRecord<'_>],
    resource: &[(&str, &str)],
    scope: (&str, &str),
) -> Vec<u8> {
    let mut items = Vec::new();
    let mut r = Vec::new();
    let mut any = Vec::new();
    for l in records {
        r.clear();
        fixed64(&mut r, 1, l.time_ns);
        key(&mut r, 2, VARINT);
        varint(&mut r, u64::from(l.severity));
        bytes(&mut r, 3, l.severity_text.as_bytes());
        any.clear();
        bytes(&mut any, 1, l.body.as_bytes());
        bytes(&mut r, 5, &any);
        // observed_time_unix_nano: recorded when it happened.
        fixed64(&mut r, 11, l.time_ns);
        bytes(&mut items, 2, &r);
    }
    envelope(resource, scope, items)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame written in front of the items is the nesting written the
    /// plain way, each level into its own buffer, for lengths whose varints
    /// take one, two and three bytes.
    #[test]
    fn the_frame_in_front_is_the_nested_frame() {
        let resource = [("service.name", "pathosd"), ("host.name", "r1")];
        for n in [0usize, 100, 300, 20_000] {
            let items = vec![0x5a; n];
            let mut res = Vec::new();
            let mut scratch = Vec::new();
            for (k, v) in resource {
                attribute(&mut res, 1, k, v, &mut scratch);
            }
            let mut sc = Vec::new();
            bytes(&mut sc, 1, b"pathosd");
            bytes(&mut sc, 2, b"0.1.0");
            let mut scoped = Vec::new();
            bytes(&mut scoped, 1, &sc);
            scoped.extend_from_slice(&items);
            let mut rm = Vec::new();
            bytes(&mut rm, 1, &res);
            bytes(&mut rm, 2, &scoped);
            let mut want = Vec::new();
            bytes(&mut want, 1, &rm);
            let got = envelope(&resource, ("pathosd", "0.1.0"), items);
            assert_eq!(got, want, "{n} bytes of items");
            assert_eq!(got.capacity(), got.len());
        }
    }

    #[test]
    fn varints_are_base_128_little_endian() {
        let enc = |v| {
            let mut o = Vec::new();
            varint(&mut o, v);
            o
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [127]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(u64::MAX).len(), 10);
    }

    /// The bytes of a small request, worked out by hand from the .proto
    /// field numbers (the python decoder in tests/otel_export.rs checks the
    /// real thing).
    #[test]
    fn a_gauge_request_has_the_fields_of_the_proto() {
        let mut m = Metrics::new(1, 2);
        m.family("g", Kind::Gauge, "h");
        m.number(&[("k", "v")], 1.0);
        let req = m.finish(&[], ("s", "1"));
        let mut point = vec![0x3a, 8, 0x0a, 1, b'k', 0x12, 3, 0x0a, 1, b'v'];
        point.extend([0x19, 2, 0, 0, 0, 0, 0, 0, 0]);
        point.push(0x21);
        point.extend(1.0f64.to_le_bytes());
        let mut gauge = vec![0x0a, point.len() as u8];
        gauge.extend(&point);
        let mut metric = vec![0x0a, 1, b'g', 0x12, 1, b'h', 0x2a, gauge.len() as u8];
        metric.extend(&gauge);
        let mut sm = vec![
            0x0a,
            6,
            0x0a,
            1,
            b's',
            0x12,
            1,
            b'1',
            0x12,
            metric.len() as u8,
        ];
        sm.extend(&metric);
        let mut rm = vec![0x0a, 0, 0x12, sm.len() as u8];
        rm.extend(&sm);
        let mut want = vec![0x0a, rm.len() as u8];
        want.extend(&rm);
        assert_eq!(req, want);
    }

    #[test]
    fn a_span_has_its_ids_name_times_attributes_and_status() {
        let span = Span {
            trace_id: [1; 16],
            span_id: [2; 8],
            name: "s".into(),
            kind: SpanKind::Server,
            start_ns: 3,
            end_ns: 4,
            attributes: vec![("b", Value::Bool(true)), ("i", Value::Int(-1))],
            error: true,
        };
        let req = traces_request([span].iter(), &[], ("p", ""));
        let mut want = vec![0x0a, 16];
        want.extend([1; 16]);
        want.extend([0x12, 8]);
        want.extend([2; 8]);
        want.extend([0x2a, 1, b's', 0x30, 2, 0x39, 3, 0, 0, 0, 0, 0, 0, 0]);
        want.extend([0x41, 4, 0, 0, 0, 0, 0, 0, 0]);
        want.extend([0x4a, 7, 0x0a, 1, b'b', 0x12, 2, 0x10, 1]);
        want.extend([0x4a, 16, 0x0a, 1, b'i', 0x12, 11, 0x18]);
        want.extend([0xff; 9]);
        want.push(1);
        want.extend([0x7a, 2, 0x18, 2]);
        assert!(req.windows(want.len()).any(|w| w == want.as_slice()));
    }

    #[test]
    fn a_log_record_has_its_time_severity_and_body() {
        let rec = LogRecord {
            time_ns: 7,
            severity: 13,
            severity_text: "WARN",
            body: "b",
        };
        let req = logs_request(&[rec], &[], ("p", ""));
        let mut want = vec![0x09, 7, 0, 0, 0, 0, 0, 0, 0, 0x10, 13];
        want.extend([0x1a, 4, b'W', b'A', b'R', b'N', 0x2a, 3, 0x0a, 1, b'b']);
        want.extend([0x59, 7, 0, 0, 0, 0, 0, 0, 0]);
        assert!(req.windows(want.len()).any(|w| w == want.as_slice()));
    }

    #[test]
    fn histogram_buckets_are_counted_alone() {
        let mut m = Metrics::new(1, 2);
        m.family("h", Kind::Histogram, "");
        m.histogram(&[], &[(0.1, 1), (1.0, 3)], 2.5, 4);
        let req = m.finish(&[], ("s", ""));
        let counts: Vec<u8> = [1u64, 2, 1].iter().flat_map(|c| c.to_le_bytes()).collect();
        let mut field = vec![0x32, 24];
        field.extend(&counts);
        assert!(req.windows(field.len()).any(|w| w == field.as_slice()));
    }
}
