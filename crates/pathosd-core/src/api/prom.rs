//! Prometheus text exposition format (version 0.0.4) writer. Families are
//! written whole (HELP, TYPE, then every sample) because promtool rejects a
//! family whose samples are split.

use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Collects one scrape's text, or (`otlp`) the same families as an OTLP
/// request: one renderer writes both, so the two never differ.
#[derive(Default)]
pub(crate) struct Exposition {
    out: String,
    otlp: Option<super::otlp::Metrics>,
}

/// A metric family being written.
pub(crate) struct Family<'a> {
    out: &'a mut String,
    otlp: Option<&'a mut super::otlp::Metrics>,
    name: &'a str,
}

/// Escapes a label value: backslash, double quote and newline (text format 0.0.4).
pub(crate) fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn labels(l: &[(&str, &str)]) -> String {
    if l.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

fn num(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.is_nan() {
        "NaN".to_string()
    } else {
        format!("{v}")
    }
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Writes OTLP instead of text (see `otlp::Metrics::new`).
    pub(crate) fn otlp(start_ns: u64, now_ns: u64) -> Exposition {
        Exposition {
            out: String::new(),
            otlp: Some(super::otlp::Metrics::new(start_ns, now_ns)),
        }
    }

    /// The OTLP request, for an exposition made by [`Self::otlp`].
    pub(crate) fn finish_otlp(
        self,
        resource: &[(&str, &str)],
        scope: (&str, &str),
    ) -> Option<Vec<u8>> {
        Some(self.otlp?.finish(resource, scope))
    }

    /// Starts a family; `help` is one line.
    pub(crate) fn family<'a>(&'a mut self, name: &'a str, kind: Kind, help: &str) -> Family<'a> {
        if let Some(o) = self.otlp.as_mut() {
            o.family(name, kind, help);
            return Family {
                out: &mut self.out,
                otlp: Some(o),
                name,
            };
        }
        let k = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {k}");
        Family {
            out: &mut self.out,
            otlp: None,
            name,
        }
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

impl Family<'_> {
    pub(crate) fn sample(&mut self, l: &[(&str, &str)], v: f64) -> &mut Self {
        if let Some(o) = self.otlp.as_mut() {
            o.number(l, v);
            return self;
        }
        let _ = writeln!(self.out, "{}{} {}", self.name, labels(l), num(v));
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
        if let Some(o) = self.otlp.as_mut() {
            o.histogram(l, buckets, sum, count);
            return self;
        }
        for (le, c) in buckets {
            let le = num(*le);
            let mut ls: Vec<(&str, &str)> = l.to_vec();
            ls.push(("le", &le));
            let _ = writeln!(self.out, "{}_bucket{} {}", self.name, labels(&ls), c);
        }
        let mut ls: Vec<(&str, &str)> = l.to_vec();
        ls.push(("le", "+Inf"));
        let _ = writeln!(self.out, "{}_bucket{} {}", self.name, labels(&ls), count);
        let _ = writeln!(self.out, "{}_sum{} {}", self.name, labels(l), num(sum));
        let _ = writeln!(self.out, "{}_count{} {}", self.name, labels(l), count);
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
        let t = e.finish();
        assert!(
            t.contains("pathosd_vip_state{vip=\"a\\\"b\\\\c\\nd\"} 1\n"),
            "{t}"
        );
        assert!(t.contains("pathosd_check_duration_seconds_bucket{vip=\"w\",le=\"0.1\"} 3\n"));
        assert!(t.contains("pathosd_check_duration_seconds_bucket{vip=\"w\",le=\"+Inf\"} 4\n"));
        assert!(t.contains("pathosd_check_duration_seconds_count{vip=\"w\"} 4\n"));
    }
}
