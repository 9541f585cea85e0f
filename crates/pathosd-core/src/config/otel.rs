//! The `otel` block: its rules and what it resolves to. Each signal's
//! collector is decided here once (endpoint, transport, path, headers), so
//! the exporter takes a [`OtlpTarget`] and parses no URL.

use super::field::{join, Errors, Quote};
use super::schema::{Config, LogLevel};
use super::target::{Host, HostPort};
use super::validate::{header, split_url};
use std::time::Duration;

/// Shortest metric export interval: a collector is not a scraper.
pub(crate) const METRICS_INTERVAL_MIN: Duration = Duration::from_secs(1);

/// How an export reaches the collector, from the endpoint's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// OTLP/HTTP with protobuf bodies: `http://` or (tls) `https://`.
    Http { tls: bool },
    /// OTLP/gRPC: `grpc://` or (tls) `grpcs://`.
    Grpc { tls: bool },
}

/// One signal's collector, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpTarget {
    pub transport: Transport,
    /// Where the exporter connects: an address, or a name looked up at each
    /// send (as a check's host is).
    pub collector: HostPort,
    /// The request path: the URL's, or `/v1/<signal>` for an empty or `/`
    /// path over OTLP/HTTP.
    pub path: String,
    /// The whole URL as it is requested (scheme, host, port, path), for the
    /// TLS client and the logs.
    pub url: String,
    /// Skip certificate verification (TLS transports only).
    pub insecure: bool,
    /// otel.headers merged with the signal's, the signal's winning.
    pub headers: Vec<(String, String)>,
}

/// The `otel` block as the daemon runs it: a signal that is off is None.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelRun {
    pub service_name: String,
    pub metrics: Option<OtlpTarget>,
    pub metrics_interval: Duration,
    pub traces: Option<OtlpTarget>,
    /// `otel.traces.sample_ratio` as a bound on a 32-bit random draw: a
    /// health_check span is kept when the draw is below it (0: none;
    /// 2^32: all). An integer, so the run type stays comparable.
    pub traces_sample: u64,
    pub logs: Option<OtlpTarget>,
    /// `logging.otel_level`; None: the logs' level (`logging.level`).
    pub log_level: Option<LogLevel>,
}

impl Default for OtelRun {
    fn default() -> OtelRun {
        OtelRun {
            service_name: "pathosd".to_string(),
            metrics: None,
            metrics_interval: Duration::from_secs(60),
            traces: None,
            traces_sample: sample_bound(0.01),
            logs: None,
            log_level: None,
        }
    }
}

/// A ratio in [0, 1] as the bound of [`OtelRun::traces_sample`].
fn sample_bound(ratio: f64) -> u64 {
    (ratio.clamp(0.0, 1.0) * 4_294_967_296.0) as u64
}

/// A written endpoint, read: what every signal sending to it shares.
struct Endpoint {
    transport: Transport,
    collector: HostPort,
    /// The URL's path, "/" when it has none.
    path: String,
}

/// An endpoint's parts, or why it is not one.
fn parse(url: &str) -> Result<Endpoint, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!(
            "{} is not a URL such as http://collector:4318 (http://, https://, grpc:// or grpcs://)",
            Quote(url)
        ));
    };
    let transport = match scheme {
        "http" => Transport::Http { tls: false },
        "https" => Transport::Http { tls: true },
        "grpc" => Transport::Grpc { tls: false },
        "grpcs" => Transport::Grpc { tls: true },
        _ => {
            return Err(format!(
                "{}: unsupported scheme {} (http://, https://, grpc:// or grpcs://)",
                Quote(url),
                Quote(scheme)
            ))
        }
    };
    let tls = matches!(
        transport,
        Transport::Http { tls: true } | Transport::Grpc { tls: true }
    );
    if tls && !crate::TLS {
        return Err(format!("{} {}", Quote(url), crate::NEEDS_TLS));
    }
    // The authority and path rules are the http checks' (no user info: it
    // would reach the logs).
    let parts = split_url(&format!("http://{rest}")).ok_or_else(|| {
        format!(
            "{} is not scheme://host[:port][/path] (user info is not supported)",
            Quote(url)
        )
    })?;
    // OTLP/gRPC calls the signal's service, whatever the URL says beyond
    // the authority: a path there is a mistake, not a prefix.
    if matches!(transport, Transport::Grpc { .. }) && parts.path != "/" {
        return Err(format!(
            "{}: an OTLP/gRPC endpoint takes no path (the method is the signal's Export)",
            Quote(url)
        ));
    }
    let port = parts.port.unwrap_or(match transport {
        Transport::Http { tls: false } => 80,
        Transport::Http { tls: true } => 443,
        // OTLP/gRPC's registered port.
        Transport::Grpc { .. } => 4317,
    });
    Ok(Endpoint {
        transport,
        collector: HostPort {
            host: Host::parse(&parts.host),
            port,
        },
        path: parts.path,
    })
}

impl Endpoint {
    /// Where `signal` goes at this endpoint: over OTLP/HTTP the URL's path,
    /// or `/v1/<signal>` for none; over OTLP/gRPC the signal's Export.
    fn target(&self, signal: &str) -> OtlpTarget {
        let scheme = match self.transport {
            Transport::Http { tls: false } => "http",
            Transport::Http { tls: true } => "https",
            Transport::Grpc { tls: false } => "grpc",
            Transport::Grpc { tls: true } => "grpcs",
        };
        let host = self.collector.host.for_url();
        let port = self.collector.port;
        let (path, url) = match self.transport {
            Transport::Http { .. } => {
                let path = if self.path == "/" {
                    format!("/v1/{signal}")
                } else {
                    self.path.clone()
                };
                let url = format!("{scheme}://{host}:{port}{path}");
                (path, url)
            }
            Transport::Grpc { .. } => {
                let service = match signal {
                    "traces" => "trace.v1.TraceService",
                    "logs" => "logs.v1.LogsService",
                    _ => "metrics.v1.MetricsService",
                };
                let path = format!("/opentelemetry.proto.collector.{service}/Export");
                (path, format!("{scheme}://{host}:{port}"))
            }
        };
        OtlpTarget {
            transport: self.transport,
            collector: self.collector.clone(),
            path,
            url,
            insecure: false,
            headers: Vec::new(),
        }
    }
}

/// One signal's settings as the file has them, by reference.
struct Signal<'a> {
    name: &'static str,
    enabled: bool,
    endpoint: &'a str,
    insecure: Option<bool>,
    headers: &'a std::collections::BTreeMap<String, String>,
}

fn signals(c: &Config) -> [Signal<'_>; 3] {
    let o = &c.otel;
    [
        Signal {
            name: "metrics",
            enabled: o.metrics.enabled,
            endpoint: &o.metrics.endpoint,
            insecure: o.metrics.insecure,
            headers: &o.metrics.headers,
        },
        Signal {
            name: "traces",
            enabled: o.traces.enabled,
            endpoint: &o.traces.endpoint,
            insecure: o.traces.insecure,
            headers: &o.traces.headers,
        },
        Signal {
            name: "logs",
            enabled: o.logs.enabled,
            endpoint: &o.logs.endpoint,
            insecure: o.logs.insecure,
            headers: &o.logs.headers,
        },
    ]
}

/// The endpoint written at `path`, read: None when nothing is written, or
/// when it is not an endpoint (then with its error).
fn endpoint(path: &str, written: &str, errs: &mut Errors) -> Option<Endpoint> {
    let written = written.trim();
    if written.is_empty() {
        return None;
    }
    parse(written).map_err(|e| errs.push(path, e)).ok()
}

/// The endpoints written in the block, each with its path, whether or not
/// a signal uses it.
fn written_endpoints(c: &Config) -> impl Iterator<Item = (&'static str, &str)> {
    let o = &c.otel;
    [
        ("otel.endpoint", &o.endpoint),
        ("otel.metrics.endpoint", &o.metrics.endpoint),
        ("otel.traces.endpoint", &o.traces.endpoint),
        ("otel.logs.endpoint", &o.logs.endpoint),
    ]
    .into_iter()
    .map(|(path, e)| (path, e.trim()))
    .filter(|(_, e)| !e.is_empty())
}

/// Every rule of `otel` and `logging.otel_level`; the block as it runs.
/// Each written endpoint is read where it is written, whether or not a
/// signal uses it, so a typo never waits for the day it is switched on.
pub(crate) fn validate(c: &Config, errs: &mut Errors) -> OtelRun {
    let o = &c.otel;
    if !crate::OTEL {
        // A build without the export has nothing to send to them.
        for (path, e) in written_endpoints(c) {
            errs.push_fmt(
                path,
                format_args!("{}: this build has no OpenTelemetry export", Quote(e)),
            );
        }
        return OtelRun::default();
    }
    let shared = endpoint("otel.endpoint", &o.endpoint, errs);
    for (k, v) in &o.headers {
        header(&join("otel.headers", k), k, v, errs);
    }
    let [metrics, traces, logs] = signals(c).map(|s| {
        let p = join("otel", s.name);
        let own = endpoint(&join(&p, "endpoint"), s.endpoint, errs);
        for (k, v) in s.headers {
            header(&join(&join(&p, "headers"), k), k, v, errs);
        }
        // A signal without an endpoint of its own sends to the shared one.
        let at = if s.endpoint.trim().is_empty() {
            shared.as_ref()
        } else {
            own.as_ref()
        };
        at.filter(|_| o.enabled && s.enabled).map(|e| {
            let mut t = e.target(s.name);
            t.insecure = s.insecure.unwrap_or(o.insecure);
            let mut h = o.headers.clone();
            h.extend(s.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
            t.headers = h.into_iter().collect();
            t
        })
    });
    // As the reference has it: any endpoint written, whether or not it is
    // switched on, needs a service name (so switching it on cannot fail).
    if written_endpoints(c).next().is_some() && o.service_name.trim().is_empty() {
        errs.push(
            "otel.service_name",
            "must not be empty when an endpoint is set",
        );
    }
    let ratio = o.traces.sample_ratio;
    if !(0.0..=1.0).contains(&ratio) {
        errs.push_fmt(
            "otel.traces.sample_ratio",
            format_args!("{ratio} is not in [0, 1]"),
        );
    }
    if o.metrics.interval.get() < METRICS_INTERVAL_MIN {
        errs.push_fmt(
            "otel.metrics.interval",
            format_args!("{} is shorter than 1s", o.metrics.interval),
        );
    }
    OtelRun {
        service_name: o.service_name.trim().to_string(),
        metrics,
        metrics_interval: o.metrics.interval.get(),
        traces,
        traces_sample: sample_bound(ratio),
        logs,
        log_level: c.logging.otel_level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `signal` goes at the endpoint `url`.
    fn read(url: &str, signal: &str) -> Result<OtlpTarget, String> {
        parse(url).map(|e| e.target(signal))
    }

    #[test]
    fn endpoints_resolve_their_transport_port_and_path() {
        let t = read("http://127.0.0.1:4318", "metrics").unwrap();
        assert_eq!(t.transport, Transport::Http { tls: false });
        assert_eq!(t.collector.to_string(), "127.0.0.1:4318");
        assert_eq!(t.path, "/v1/metrics");
        assert_eq!(t.url, "http://127.0.0.1:4318/v1/metrics");
        let t = read("http://c.example/", "logs").unwrap();
        assert_eq!(t.collector.host, Host::Name("c.example".into()));
        assert_eq!((t.collector.port, t.path.as_str()), (80, "/v1/logs"));
        let t = read("http://[::1]:9/otlp/v1/metrics", "metrics").unwrap();
        assert_eq!(
            t.collector.host,
            Host::Ip(std::net::Ipv6Addr::LOCALHOST.into())
        );
        assert_eq!(t.path, "/otlp/v1/metrics");
        assert_eq!(t.url, "http://[::1]:9/otlp/v1/metrics");
        let t = read("grpc://c:4317", "traces").unwrap();
        assert_eq!(t.transport, Transport::Grpc { tls: false });
        assert_eq!(
            t.path,
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
        );
        assert_eq!(t.url, "grpc://c:4317");
        let t = read("grpc://[::1]/", "logs").unwrap();
        assert_eq!(t.collector.port, 4317);
        assert_eq!(
            t.path,
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
        );
        let t = read("grpc://c", "metrics").unwrap();
        assert_eq!(
            t.path,
            "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
        );
        assert!(read("grpc://c/v1/metrics", "metrics")
            .unwrap_err()
            .contains("takes no path"));
        assert!(read("ftp://c", "metrics")
            .unwrap_err()
            .contains("unsupported scheme \"ftp\""));
        assert!(read("c:4318", "metrics").is_err());
        assert!(read("http://u:p@c", "metrics").is_err());
        assert!(read("http://c:0", "metrics").is_err());
        let tls = read("https://c", "metrics");
        if crate::TLS {
            assert_eq!(tls.unwrap().collector.port, 443);
        } else {
            assert!(tls.unwrap_err().contains(crate::NEEDS_TLS));
        }
    }

    fn errors(otel: serde_json::Value) -> Vec<String> {
        let v = serde_json::json!({"schema": "v1",
            "router": {"asn": 65001, "router_id": "10.0.0.1"},
            "bgp": {"neighbors": [{"name": "n", "address": "127.0.0.1", "peer_asn": 65000}]},
            "otel": otel,
            "vips": [{"name": "v", "prefix": "10.0.0.1/32", "always": true}]});
        match crate::config::load_str(&v.to_string(), None, &|_| None) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn each_error_names_its_path_and_value() {
        assert_eq!(errors(serde_json::json!({})), Vec::<String>::new());
        assert_eq!(
            errors(serde_json::json!({"endpoint": "udp://c:1"})),
            ["otel.endpoint: \"udp://c:1\": unsupported scheme \"udp\" (http://, https://, grpc:// or grpcs://)"]
        );
        assert_eq!(
            errors(serde_json::json!({"traces": {"endpoint": "collector:4318"}})),
            ["otel.traces.endpoint: \"collector:4318\" is not a URL such as http://collector:4318 (http://, https://, grpc:// or grpcs://)"]
        );
        assert_eq!(
            errors(serde_json::json!({"endpoint": "grpc://127.0.0.1:4317"})),
            Vec::<String>::new()
        );
        assert_eq!(
            errors(serde_json::json!({"logs": {"endpoint": "grpc://c:4317/otlp"}})),
            ["otel.logs.endpoint: \"grpc://c:4317/otlp\": an OTLP/gRPC endpoint takes no path (the method is the signal's Export)"]
        );
        assert_eq!(
            errors(serde_json::json!({"traces": {"sample_ratio": 1.5}})),
            ["otel.traces.sample_ratio: 1.5 is not in [0, 1]"]
        );
        assert_eq!(sample_bound(1.0), 1 << 32);
        assert_eq!(sample_bound(0.0), 0);
        // An endpoint switched off is still checked, and still needs a name.
        assert_eq!(
            errors(
                serde_json::json!({"enabled": false, "endpoint": "http://c", "service_name": ""})
            ),
            ["otel.service_name: must not be empty when an endpoint is set"]
        );
        assert_eq!(
            errors(serde_json::json!({"enabled": false, "endpoint": "ftp://c"})),
            ["otel.endpoint: \"ftp://c\": unsupported scheme \"ftp\" (http://, https://, grpc:// or grpcs://)"]
        );
        assert_eq!(
            errors(serde_json::json!({"metrics": {"headers": {"X-K": "a\nb"}}})),
            ["otel.metrics.headers.X-K: value contains a line break or NUL"]
        );
        let https = errors(serde_json::json!({"endpoint": "https://c"}));
        if crate::TLS {
            assert_eq!(https, Vec::<String>::new());
        } else {
            assert_eq!(
                https,
                [format!("otel.endpoint: \"https://c\" {}", crate::NEEDS_TLS)]
            );
        }
    }

    /// The build without the export (feature without-otel, which
    /// benches/otel-size.sh measures against) refuses each endpoint where it
    /// is written, instead of running without the collector it names.
    #[test]
    fn a_build_without_the_export_refuses_each_endpoint() {
        let e =
            errors(serde_json::json!({"endpoint": "http://c", "logs": {"endpoint": "grpc://d"}}));
        if crate::OTEL {
            assert_eq!(e, Vec::<String>::new());
        } else {
            assert_eq!(
                e,
                [
                    "otel.endpoint: \"http://c\": this build has no OpenTelemetry export",
                    "otel.logs.endpoint: \"grpc://d\": this build has no OpenTelemetry export"
                ]
            );
        }
    }
}
