//! Prometheus text exposition format (version 0.0.4) writer. Families are
//! written whole (HELP, TYPE, then every sample) because promtool rejects a
//! family whose samples are split; a family's samples may be written over
//! several calls (`api::stream` writes /metrics a piece at a time), the
//! writer keeps no state between them but the OTLP request being built.

use std::io::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Collects a scrape's text, or (`otlp`) the same families as an OTLP
/// request: one renderer writes both, so the two never differ.
#[derive(Default)]
pub(crate) struct Exposition {
    /// The text written since the caller last took it.
    pub(crate) out: Vec<u8>,
    pub(crate) otlp: Option<super::otlp::Metrics>,
}

/// A metric family being written.
pub(crate) struct Family<'a> {
    e: &'a mut Exposition,
    name: &'a str,
    /// A family written only once it has a sample: its kind and help, and
    /// whether its header is out (kept by the caller across pieces).
    lazy: Option<(Kind, &'a str, &'a mut bool)>,
}

/// Writes a label value escaped: backslash, double quote and newline
/// (text format 0.0.4).
fn escape_into(out: &mut Vec<u8>, v: &str) {
    for b in v.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b => out.push(b),
        }
    }
}

/// Writes `{k="v",...}` (nothing for no labels), with `le` last when given.
/// Straight into the text: a scrape writes millions of labels, and a
/// string made and dropped for each was most of its time.
fn labels(out: &mut Vec<u8>, l: &[(&str, &str)], le: Option<&dyn std::fmt::Display>) {
    if l.is_empty() && le.is_none() {
        return;
    }
    out.push(b'{');
    for (i, (k, v)) in l.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"=\"");
        escape_into(out, v);
        out.push(b'"');
    }
    if let Some(le) = le {
        if !l.is_empty() {
            out.push(b',');
        }
        let _ = write!(out, "le=\"{le}\"");
    }
    out.push(b'}');
}

/// A sample's value as the text format writes it.
struct Num(f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v.is_infinite() {
            f.write_str(if v > 0.0 { "+Inf" } else { "-Inf" })
        } else if v.is_nan() {
            f.write_str("NaN")
        } else {
            write!(f, "{v}")
        }
    }
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Writes OTLP instead of text (see `otlp::Metrics::new`).
    pub(crate) fn otlp(start_ns: u64, now_ns: u64) -> Exposition {
        Exposition {
            out: Vec::new(),
            otlp: Some(super::otlp::Metrics::new(start_ns, now_ns)),
        }
    }

    /// A family's header: HELP and TYPE, or a new OTLP metric.
    fn header(&mut self, name: &str, kind: Kind, help: &str) {
        if let Some(o) = self.otlp.as_mut() {
            o.family(name, kind, help);
            return;
        }
        let k = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {k}");
    }

    /// Starts a family; `help` is one line.
    pub(crate) fn family<'a>(&'a mut self, name: &'a str, kind: Kind, help: &str) -> Family<'a> {
        self.header(name, kind, help);
        Family {
            e: self,
            name,
            lazy: None,
        }
    }

    /// Goes on with family `name`, whose header is written already.
    pub(crate) fn resume<'a>(&'a mut self, name: &'a str) -> Family<'a> {
        Family {
            e: self,
            name,
            lazy: None,
        }
    }

    /// A family written only if it gets a sample: its header goes out
    /// before the first, and `started` says whether it has.
    pub(crate) fn lazy<'a>(
        &'a mut self,
        name: &'a str,
        kind: Kind,
        help: &'a str,
        started: &'a mut bool,
    ) -> Family<'a> {
        Family {
            e: self,
            name,
            lazy: Some((kind, help, started)),
        }
    }
}

impl Family<'_> {
    /// Writes the header of a lazy family before its first sample.
    fn open(&mut self) {
        if let Some((kind, help, started)) = &mut self.lazy {
            if !**started {
                **started = true;
                self.e.header(self.name, *kind, help);
            }
        }
    }

    pub(crate) fn sample(&mut self, l: &[(&str, &str)], v: f64) -> &mut Self {
        self.open();
        if let Some(o) = self.e.otlp.as_mut() {
            o.number(l, v);
            return self;
        }
        let out = &mut self.e.out;
        out.extend_from_slice(self.name.as_bytes());
        labels(out, l, None);
        let _ = writeln!(out, " {}", Num(v));
        self
    }

    /// Writes a histogram: cumulative `buckets` (upper bound, count), sum and count.
    pub(crate) fn histogram(
        &mut self,
        l: &[(&str, &str)],
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) -> &mut Self {
        self.open();
        if let Some(o) = self.e.otlp.as_mut() {
            o.histogram(l, buckets, sum, count);
            return self;
        }
        let out = &mut self.e.out;
        let name = self.name.as_bytes();
        for (le, c) in buckets {
            out.extend_from_slice(name);
            out.extend_from_slice(b"_bucket");
            labels(out, l, Some(&Num(*le)));
            let _ = writeln!(out, " {c}");
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b"_bucket");
        labels(out, l, Some(&"+Inf"));
        let _ = writeln!(out, " {count}");
        out.extend_from_slice(name);
        out.extend_from_slice(b"_sum");
        labels(out, l, None);
        let _ = writeln!(out, " {}", Num(sum));
        out.extend_from_slice(name);
        out.extend_from_slice(b"_count");
        labels(out, l, None);
        let _ = writeln!(out, " {count}");
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_families_and_escapes_labels() {
        let mut e = Exposition::new();
        e.family("pathosd_vip_state", Kind::Gauge, "VIP state")
            .sample(&[("vip", "a\"b\\c\nd")], 1.0);
        e.family(
            "pathosd_check_duration_seconds",
            Kind::Histogram,
            "probe time",
        )
        .histogram(&[("vip", "w")], &[(0.005, 1), (0.1, 3)], 0.12, 4);
        let mut started = false;
        e.lazy("never", Kind::Gauge, "no sample", &mut started);
        let t = String::from_utf8(e.out).unwrap();
        assert!(
            t.contains("pathosd_vip_state{vip=\"a\\\"b\\\\c\\nd\"} 1\n"),
            "{t}"
        );
        assert!(t.contains("pathosd_check_duration_seconds_bucket{vip=\"w\",le=\"0.1\"} 3\n"));
        assert!(t.contains("pathosd_check_duration_seconds_bucket{vip=\"w\",le=\"+Inf\"} 4\n"));
        assert!(t.contains("pathosd_check_duration_seconds_count{vip=\"w\"} 4\n"));
        assert!(!t.contains("never"), "{t}");
    }
}
