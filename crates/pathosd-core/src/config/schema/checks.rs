//! A VIP's health checks as the file writes them: the check, and each
//! type's options block.

use super::super::duration::Dur;
use super::super::field::{quote, show, Errors, Field};
use crate::check::jsonmatch::JsonExpr;
use crate::{config_enum, config_struct};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::IpAddr;

config_enum! {
    /// The probe a check runs.
    pub enum CheckType {
        Http = "http",
        Https = "https",
        Dns = "dns",
        Ping = "ping",
        Tcp = "tcp",
        Udp = "udp",
        Grpc = "grpc",
        Exec = "exec",
        Ubus = "ubus",
    }
}

config_struct! {
    /// One health check.
    pub struct Check {
        /// Identifier used by checks_policy; defaults to the type.
        name: Option<String> = None,
        /// Probe type.
        kind ("type"): Option<CheckType> = None,
        /// Time between probes.
        interval: Dur = Dur::secs(1),
        /// Time one probe may take; less than interval.
        timeout: Dur = Dur::ms(100),
        /// Time between probes while rise or fall is counting (from the first result against the health until the threshold decides); more than timeout, at most interval; unset: interval.
        fast_interval: Option<Dur> = None,
        /// Consecutive successes that make the check healthy.
        rise: u32 = 1,
        /// Consecutive failures that make the check unhealthy.
        fall: u32 = 3,
        /// Export the per-type metrics of this check.
        detailed_metrics: bool = false,
        /// A passing probe slower than this is slow: fall slow probes in a row pessimize the VIP (degraded), rise fast ones end it; unset: off.
        degraded_latency: Option<Dur> = None,
        /// Least time between two changes of degraded: a backend hovering at degraded_latency moves the route at most once per period.
        degraded_hold_down: Dur = Dur::secs(60),
        /// Options for http and https.
        http: Option<Box<HttpCheck>> = None,
        /// Options for dns.
        dns: Option<Box<DnsCheck>> = None,
        /// Options for ping.
        ping: Option<Box<PingCheck>> = None,
        /// Options for tcp.
        tcp: Option<Box<TcpCheck>> = None,
        /// Options for udp.
        udp: Option<Box<UdpCheck>> = None,
        /// Options for grpc.
        grpc: Option<Box<GrpcCheck>> = None,
        /// Options for exec.
        exec: Option<Box<ExecCheck>> = None,
        /// Options for ubus.
        ubus: Option<Box<UbusCheck>> = None,
    }
}

impl Check {
    /// The name checks_policy refers to: `name`, else the type.
    pub fn effective_name(&self) -> String {
        match (&self.name, self.kind) {
            (Some(n), _) => n.clone(),
            (None, Some(k)) => k.as_str().to_string(),
            (None, None) => String::new(),
        }
    }
}

config_enum! {
    /// HTTP request method.
    pub enum HttpMethod { Get = "GET", Head = "HEAD", Post = "POST" }
}

config_struct! {
    /// http / https check options.
    pub struct HttpCheck {
        /// Full URL (scheme, host, port and path) or a path on the VIP address.
        url: String = "/".to_string(),
        /// Address to connect to; the URL host (or the VIP address for a path) when unset.
        host: Option<String> = None,
        /// Port to connect to; from the URL, else 80 or 443.
        port: Option<u16> = None,
        /// Request method.
        method: HttpMethod = HttpMethod::Get,
        /// Extra request headers.
        headers: BTreeMap<String, String> = BTreeMap::new(),
        /// Accepted status codes: numbers or ranges such as "200-299".
        response_codes: Vec<CodeRange> = vec![CodeRange(200, 200)],
        /// The body must contain this text.
        response_text: Option<String> = None,
        /// The body must match this regular expression.
        response_regex: Option<BodyRegex> = None,
        /// The body must be JSON and this expression true (see docs/checks.md).
        response_jq: Option<BodyJq> = None,
        /// Forward proxy URL (http://[user:pass@]host:port).
        proxy: Option<String> = None,
        /// Reuse the connection between probes (TLS is then re-verified only on reconnect).
        keep_alive: bool = false,
        /// PEM file of CA certificates to trust (instead of the system store).
        tls_ca_cert: Option<String> = None,
        /// Name for SNI and certificate verification.
        tls_server_name: Option<String> = None,
        /// Skip certificate verification.
        tls_insecure: bool = false,
        /// PEM client certificate for mutual TLS.
        tls_client_cert: Option<String> = None,
        /// PEM private key of tls_client_cert.
        tls_client_key: Option<String> = None,
    }
}

/// A `response_regex`, compiled when the config is read: a pattern that
/// does not compile is a config error at its path, and the probe takes the
/// compiled regex (it cannot fail to build on it).
#[derive(Debug, Clone)]
pub struct BodyRegex(regex_lite::Regex);

impl BodyRegex {
    pub fn regex(&self) -> &regex_lite::Regex {
        &self.0
    }
}

/// The same pattern is the same regex.
impl PartialEq for BodyRegex {
    fn eq(&self, other: &BodyRegex) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Field for BodyRegex {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let Value::String(re) = v else {
            errs.push_fmt(path, format_args!("{} is not a string", show(v)));
            return None;
        };
        match regex_lite::Regex::new(re) {
            Ok(r) => Some(BodyRegex(r)),
            Err(e) => {
                // regex_lite's message ends with the reason on its last line.
                let e = e.to_string();
                let reason = e.lines().last().unwrap_or_default().trim();
                errs.push_fmt(
                    path,
                    format_args!("{} does not compile: {reason}", quote(re)),
                );
                None
            }
        }
    }
    fn encode(&self) -> Value {
        json!(self.0.as_str())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string"})
    }
}

/// A `response_jq` expression, parsed when the config is read (a typo is a
/// config error, not a VIP whose checks never start).
#[derive(Debug, Clone, PartialEq)]
pub struct BodyJq {
    text: String,
    expr: JsonExpr,
}

impl BodyJq {
    pub fn expr(&self) -> &JsonExpr {
        &self.expr
    }
}

impl Field for BodyJq {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let Value::String(jq) = v else {
            errs.push_fmt(path, format_args!("{} is not a string", show(v)));
            return None;
        };
        if jq.trim().is_empty() {
            errs.push(path, "must not be empty");
            return None;
        }
        match crate::check::jsonmatch::parse(jq) {
            Ok(expr) => Some(BodyJq {
                text: jq.clone(),
                expr,
            }),
            Err(e) => {
                errs.push_fmt(path, format_args!("{}: {e}", quote(jq)));
                None
            }
        }
    }
    fn encode(&self) -> Value {
        json!(self.text)
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string"})
    }
}

/// An accepted HTTP status code range, inclusive; one code is `(c, c)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeRange(pub u16, pub u16);

impl CodeRange {
    pub fn contains(&self, code: u16) -> bool {
        self.0 <= code && code <= self.1
    }
}

impl std::fmt::Display for CodeRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 == self.1 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{}-{}", self.0, self.1)
        }
    }
}

impl Field for CodeRange {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let code = |s: &str| {
            s.trim()
                .parse::<u16>()
                .ok()
                .filter(|c| (100..=599).contains(c))
        };
        let r = match v {
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .filter(|c| (100..=599).contains(c))
                .map(|c| CodeRange(c, c)),
            Value::String(s) => match s.split_once('-') {
                Some((a, b)) => match (code(a), code(b)) {
                    (Some(a), Some(b)) if a <= b => Some(CodeRange(a, b)),
                    _ => None,
                },
                None => code(s).map(|c| CodeRange(c, c)),
            },
            _ => None,
        };
        if r.is_none() {
            errs.push_fmt(
                path,
                format_args!(
                    "{} is not a status code (100..599) or range such as \"200-299\"",
                    show(v)
                ),
            );
        }
        r
    }
    fn encode(&self) -> Value {
        if self.0 == self.1 {
            json!(self.0)
        } else {
            json!(self.to_string())
        }
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"anyOf": [
            {"type": "integer", "minimum": 100, "maximum": 599},
            {"type": "string", "pattern": "^[1-5][0-9]{2}(-[1-5][0-9]{2})?$"}
        ]})
    }
}

config_enum! {
    /// DNS query type.
    pub enum DnsQueryType {
        A = "A", Aaaa = "AAAA", Cname = "CNAME", Mx = "MX", Txt = "TXT",
        Srv = "SRV", Ptr = "PTR", Ns = "NS", Soa = "SOA",
    }
}

config_enum! {
    /// DNS response code.
    pub enum DnsRcode {
        NoError = "NOERROR", FormErr = "FORMERR", ServFail = "SERVFAIL",
        NxDomain = "NXDOMAIN", NotImp = "NOTIMP", Refused = "REFUSED",
    }
}

config_enum! {
    /// How expected answers must be matched.
    pub enum AnswerMatch { Any = "any", All = "all" }
}

config_struct! {
    /// dns check options.
    pub struct DnsCheck {
        /// Names to query; each must pass.
        names: Vec<String> = Vec::new(),
        /// Server address; the VIP address for a host prefix when unset.
        resolver: Option<String> = None,
        /// Server port.
        port: u16 = 53,
        /// Query type.
        query_type: DnsQueryType = DnsQueryType::A,
        /// The response code that passes.
        expected_rcode: DnsRcode = DnsRcode::NoError,
        /// Answers (addresses or names) that must appear; empty: any answer passes (none needed unless NOERROR).
        expected_answers: Vec<String> = Vec::new(),
        /// Whether any or all expected_answers must appear.
        expected_match: AnswerMatch = AnswerMatch::Any,
    }
}

/// One `expected_answers` entry, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedAnswer {
    /// The entry as configured (shown in a failing probe's detail).
    pub text: String,
    /// The entry as an address (trimmed), compared by value with the A and
    /// AAAA answers; `None` for a name or text, compared as text.
    pub addr: Option<IpAddr>,
}

impl ExpectedAnswer {
    pub fn parse(text: &str) -> ExpectedAnswer {
        ExpectedAnswer {
            text: text.to_string(),
            addr: text.trim().parse().ok(),
        }
    }
}

config_struct! {
    /// ping check options.
    pub struct PingCheck {
        /// Address to ping; the VIP address for a host prefix when unset.
        dst_ip: Option<IpAddr> = None,
        /// Source address.
        src_ip: Option<IpAddr> = None,
        /// Raw ICMP socket (needs CAP_NET_RAW) instead of an ICMP datagram socket.
        privileged: bool = false,
        /// Echo requests per probe (1..60).
        count: u32 = 1,
        /// Gap between echo requests.
        interval: Dur = Dur::ms(100),
        /// Largest loss ratio that passes (0 <= x < 1).
        max_loss_ratio: f64 = 0.0,
    }
}

config_struct! {
    /// tcp check options.
    pub struct TcpCheck {
        /// Address to connect to; the VIP address for a host prefix when unset.
        host: Option<String> = None,
        /// Port to connect to.
        port: u16 = 0,
        /// Text to send after connecting.
        send: Option<String> = None,
        /// Text the reply (banner) must contain.
        expect: Option<String> = None,
    }
}

config_struct! {
    /// udp check options.
    pub struct UdpCheck {
        /// Address to send to; the VIP address for a host prefix when unset.
        host: Option<String> = None,
        /// Port to send to.
        port: u16 = 0,
        /// Datagram payload as text; one zero byte when unset.
        payload: Option<String> = None,
        /// Datagram payload as hex; exclusive with payload.
        payload_hex: Option<String> = None,
        /// Text the reply must contain; then silence fails.
        expect: Option<String> = None,
    }
}

config_struct! {
    /// grpc check options.
    pub struct GrpcCheck {
        /// Address to connect to; the VIP address for a host prefix when unset.
        host: Option<String> = None,
        /// Port to connect to.
        port: u16 = 0,
        /// Use TLS (h2 over ALPN) instead of plaintext h2c.
        tls: bool = false,
        /// Skip certificate verification.
        tls_insecure: bool = false,
        /// PEM file of CA certificates to trust.
        tls_ca_cert: Option<String> = None,
        /// Name for SNI and certificate verification.
        tls_server_name: Option<String> = None,
        /// Unary method "/pkg.Service/Method"; grpc.health.v1 Check when unset.
        method: Option<String> = None,
        /// Service name for the health Check.
        service: String = String::new(),
        /// gRPC status codes that pass a custom method.
        ok_codes: Vec<String> = vec!["OK".to_string()],
        /// Request metadata.
        metadata: BTreeMap<String, String> = BTreeMap::new(),
    }
}

/// The standard health check's method (grpc.health.v1), called when a grpc
/// check has no `method`.
pub const GRPC_HEALTH_METHOD: &str = "/grpc.health.v1.Health/Check";

config_struct! {
    /// ubus check options: one call, its reply judged as an http body.
    pub struct UbusCheck {
        /// The object to call, as `ubus list` shows it (e.g. network.interface.wan).
        object: String = String::new(),
        /// Its method (e.g. status).
        method: String = String::new(),
        /// The call's arguments, a JSON object (in UCI a string holding one).
        args: UbusArgs = UbusArgs::default(),
        /// ubusd's socket.
        socket: String = "/var/run/ubus/ubus.sock".to_string(),
        /// The reply (its table as JSON text) must contain this text.
        response_text: Option<String> = None,
        /// The reply must match this regular expression.
        response_regex: Option<BodyRegex> = None,
        /// The reply must make this expression true (see docs/checks.md).
        response_jq: Option<BodyJq> = None,
    }
}

/// A ubus call's arguments: a JSON object, or (as UCI has only strings) a
/// string holding one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UbusArgs(pub serde_json::Map<String, Value>);

impl Field for UbusArgs {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let parsed;
        let obj = match v {
            Value::String(s) => {
                // from_slice: the one JSON reader on flash (config::load).
                parsed = serde_json::from_slice::<Value>(s.as_bytes()).ok();
                parsed.as_ref()
            }
            v => Some(v),
        };
        match obj {
            Some(Value::Object(m)) => Some(UbusArgs(m.clone())),
            _ => {
                errs.push_fmt(path, format_args!("{} is not a JSON object", show(v)));
                None
            }
        }
    }
    fn encode(&self) -> Value {
        Value::Object(self.0.clone())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": ["object", "string"]})
    }
}

config_struct! {
    /// exec check options.
    pub struct ExecCheck {
        /// Program to run (no shell); exit 0 passes.
        command: String = String::new(),
        /// Arguments.
        args: Vec<String> = Vec::new(),
    }
}
