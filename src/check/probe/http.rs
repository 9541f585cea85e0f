//! http / https. Plain `http://`, direct or through an `http://` proxy, is
//! one async HTTP/1.1 exchange on the daemon's thread ([`super::http1`]);
//! https and checks through an `https://` proxy go through ureq (blocking,
//! so on the bounded pool, [`super::blocking`]) with rustls on the ring
//! provider. Both paths feed the same evaluation (status, body text, regex,
//! jq). ureq is built only with the `tls` feature: without it an https
//! target or proxy is refused when the probe is built (validation already
//! names the option, see config::validate).
//!
//! Through an `http://` proxy the request goes to the proxy with the
//! absolute URL as its target (RFC 9112 §3.2.2), the URL's authority as
//! Host, and the proxy URL's user and password as Basic credentials
//! (`Proxy-Authorization`, RFC 9110 §11.7.2, RFC 7617); the proxy resolves
//! the URL's host. A status the proxy answers itself (502 or 503 when it
//! cannot reach the backend, 407 without valid credentials) is the
//! response, checked against response_codes like any other.
//!
//! Target selection follows pathosd ("curl --resolve" semantics): the
//! request is sent to `host:port` (the URL host, or the VIP address for a
//! bare path), while the URL's name is used for the Host header, SNI and
//! certificate verification. ureq takes SNI from the request URI, so the
//! URI carries the verification name and a fixed resolver dials `host:port`.
//!
//! Redirects are never followed: a 3xx passes only if listed in
//! response_codes. Without keep_alive every probe builds a fresh agent, so
//! each probe opens a new connection and does a full TLS handshake (no
//! session resumption): the certificate is re-verified every time.

use super::http1::Failure;
use super::io_msg;
use crate::check::jsonmatch::{self, JsonExpr};
use crate::check::result::CheckResult;
#[cfg(feature = "tls")]
use crate::config::proxy::Proxy;
use crate::config::target::{Host, HostPort, HttpTarget};
use crate::config::{CodeRange, HttpCheck, HttpMethod};
use std::net::SocketAddr;
#[cfg(feature = "tls")]
use std::net::ToSocketAddrs;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::time::{Duration, Instant};
#[cfg(feature = "tls")]
use ureq::tls::{Certificate, ClientCert, PemItem, RootCerts, TlsConfig, TlsProvider};
#[cfg(feature = "tls")]
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
#[cfg(feature = "tls")]
use ureq::unversioned::transport::DefaultConnector;
#[cfg(feature = "tls")]
use ureq::Agent;

/// The body is read (only when a body check is configured) up to this size.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// Where OpenWrt's ca-bundle (and Debian's ca-certificates) keep system CAs.
#[cfg(feature = "tls")]
pub(crate) const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

#[derive(Debug)]
pub(crate) struct HttpProbe {
    method: HttpMethod,
    /// The request URL (its host is the Host/SNI/verification name): ureq's,
    /// and the request target through an http:// proxy.
    url: String,
    /// Where the connection goes (ignored through a proxy).
    connect: HostPort,
    headers: Vec<(String, String)>,
    codes: Vec<CodeRange>,
    text: Option<String>,
    regex: Option<regex_lite::Regex>,
    jq: Option<JsonExpr>,
    /// The proxy of the ureq path (an https target, or an https:// proxy).
    #[cfg(feature = "tls")]
    proxy: Option<ureq::Proxy>,
    keep_alive: bool,
    #[cfg(feature = "tls")]
    tls: TlsConfig,
    /// ureq's own bound (the async path has only `Probe::run`'s).
    #[cfg(feature = "tls")]
    timeout: Duration,
    /// The reused agent with keep_alive (ureq path). A `RefCell` for the
    /// same reason as [`Plain::conn`]: replaced by a fresh one (an empty
    /// pool) after a failed probe.
    #[cfg(feature = "tls")]
    agent: std::cell::RefCell<Option<Agent>>,
    /// The async path (plain http, direct or through an http:// proxy): the
    /// request head, rendered once, and the connection kept for the next
    /// probe with keep_alive.
    plain: Option<Plain>,
}

/// A plain http check's request and its kept-alive connection.
#[derive(Debug)]
struct Plain {
    request: Vec<u8>,
    /// The http:// proxy the connection goes to instead of `connect`.
    proxy: Option<HostPort>,
    /// Only the check's own loop runs the probe, one run at a time, on the
    /// daemon's thread: a `RefCell`, taken at the start of a run and put
    /// back at its end, never borrowed across an await.
    ///
    /// With the time it went idle ([`MAX_IDLE`]).
    conn: std::cell::RefCell<Option<(async_io::Async<std::net::TcpStream>, Instant)>>,
}

/// How long a kept-alive connection may sit idle and still be reused: the
/// specification's "the idle connection is dropped (after 90s idle, or when
/// the server closes it)", Go's `http.Transport` default (IdleConnTimeout).
/// A check with a longer interval reconnects at every probe, as without
/// keep_alive.
pub(crate) const MAX_IDLE: Duration = Duration::from_secs(90);

/// The kept connection, if it has not been idle for [`MAX_IDLE`] at `now`.
fn within_idle_limit<T>(kept: Option<(T, Instant)>, now: Instant) -> Option<T> {
    kept.filter(|(_, since)| now.saturating_duration_since(*since) < MAX_IDLE)
        .map(|(c, _)| c)
}

#[cfg(feature = "tls")]
fn read_file(what: &str, path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("reading {what} {path}: {}", io_msg(&e)))
}

/// The system's CA certificates (none when the file is missing: every
/// verified connection then fails with "unknown issuer"), for the OTLP
/// exporter's https:// client.
#[cfg(feature = "tls")]
pub(crate) fn system_roots() -> Vec<Certificate<'static>> {
    pem_certs("system CA file", SYSTEM_CA_FILE).unwrap_or_default()
}

/// Every certificate in a PEM file.
#[cfg(feature = "tls")]
fn pem_certs(what: &str, path: &str) -> Result<Vec<Certificate<'static>>, String> {
    let pem = read_file(what, path)?;
    let certs: Vec<_> = ureq::tls::parse_pem(&pem)
        .filter_map(|i| match i {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(format!("parsing {what} {path}: no certificates found"));
    }
    Ok(certs)
}

#[cfg(feature = "tls")]
fn client_cert(cert: &str, key: &str) -> Result<ClientCert, String> {
    let chain = pem_certs("tls_client_cert", cert)?;
    let pem = read_file("tls_client_key", key)?;
    let key = ureq::tls::parse_pem(&pem)
        .find_map(|i| match i {
            Ok(PemItem::PrivateKey(k)) => Some(k),
            _ => None,
        })
        .ok_or_else(|| format!("parsing tls_client_key {key}: no private key found"))?;
    Ok(ClientCert::new_with_certs(&chain, key))
}

/// Dials the configured address whatever name the URL carries.
#[cfg(feature = "tls")]
#[derive(Debug)]
struct FixedResolver {
    connect: HostPort,
}

#[cfg(feature = "tls")]
impl Resolver for FixedResolver {
    fn resolve(
        &self,
        _uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut out = self.empty();
        let addrs: Vec<SocketAddr> = match &self.connect.host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, self.connect.port)],
            // Runs on the blocking pool, bounded by the check timeout.
            Host::Name(n) => (n.as_str(), self.connect.port)
                .to_socket_addrs()
                .map_err(|_| ureq::Error::HostNotFound)?
                .collect(),
        };
        for a in addrs.into_iter().take(16) {
            out.push(a);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

impl HttpProbe {
    /// `t`: `c`'s target (connect address, request URL, Host), as
    /// validation resolved it from `url`, `host`, `port`, `tls_server_name`
    /// and the VIP prefix. Fails only on what the machine decides (a CA or
    /// client certificate file that cannot be read).
    pub fn new(c: &HttpCheck, t: &HttpTarget, timeout: Duration) -> Result<HttpProbe, String> {
        let https = t.https;
        if !crate::TLS && https {
            return Err(format!("https ({}) {}", c.url, crate::NEEDS_TLS));
        }
        // An http:// proxy of a plain http check is the async path's; any
        // other (an https target's, an https:// proxy) is ureq's. Both take
        // the proxy as validation read it (`t.proxy`).
        let http_proxy = t.proxy.as_ref().filter(|p| !https && !p.https);
        #[cfg(feature = "tls")]
        let proxy = match &t.proxy {
            // Named by its host and port: the URL may hold a password.
            Some(p) if http_proxy.is_none() => {
                Some(ureq_proxy(p).map_err(|e| format!("proxy {}: {e}", p.at))?)
            }
            _ => None,
        };
        #[cfg(not(feature = "tls"))]
        if let Some(p) = t.proxy.as_ref().filter(|_| http_proxy.is_none()) {
            return Err(format!("proxy {} {}", p.at, crate::NEEDS_TLS));
        }
        #[cfg(not(feature = "tls"))]
        let _ = timeout;
        let url = t.url.clone();
        let mut headers: Vec<(String, String)> = c
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let has =
            |h: &[(String, String)], n: &str| h.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
        if !has(&headers, "host") {
            // pathosd sends the URL's authority (with the port only if the
            // URL had one); for a bare path, the connect host.
            headers.push(("Host".into(), t.authority.clone()));
        }
        if c.response_jq.is_some() && !has(&headers, "accept") {
            headers.push(("Accept".into(), "application/json".into()));
        }
        // Compiled when the config was read.
        let regex = c.response_regex.as_ref().map(|r| r.regex().clone());
        let jq = c.response_jq.as_ref().map(|j| j.expr().clone());
        #[cfg(feature = "tls")]
        let roots = match &c.tls_ca_cert {
            Some(f) => pem_certs("tls_ca_cert", f)?,
            // A missing system store only matters for https without
            // tls_insecure; then every probe fails with "unknown issuer".
            None if https && !c.tls_insecure => {
                pem_certs("system CA file", SYSTEM_CA_FILE).unwrap_or_default()
            }
            None => Vec::new(),
        };
        #[cfg(feature = "tls")]
        let client = match (&c.tls_client_cert, &c.tls_client_key) {
            (Some(cert), Some(key)) => Some(client_cert(cert, key)?),
            _ => None,
        };
        #[cfg(feature = "tls")]
        let tls = TlsConfig::builder()
            .provider(TlsProvider::Rustls)
            .root_certs(RootCerts::Specific(Arc::new(roots)))
            .client_cert(client)
            .disable_verification(c.tls_insecure)
            .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .build();
        let mut p = HttpProbe {
            method: c.method,
            url,
            connect: t.connect.clone(),
            headers,
            codes: c.response_codes.clone(),
            text: c.response_text.clone(),
            regex,
            jq,
            #[cfg(feature = "tls")]
            proxy,
            keep_alive: c.keep_alive,
            #[cfg(feature = "tls")]
            tls,
            #[cfg(feature = "tls")]
            timeout,
            #[cfg(feature = "tls")]
            agent: std::cell::RefCell::new(None),
            plain: None,
        };
        #[cfg(feature = "tls")]
        if https || p.proxy.is_some() {
            if p.keep_alive {
                p.agent = std::cell::RefCell::new(Some(p.agent()));
            }
            return Ok(p);
        }
        let request = match &http_proxy {
            None => render_request(p.method, path_of(&p.url), &p.headers, p.keep_alive)?,
            Some(via) => {
                // RFC 9112 §3.2.2: a request to a proxy MUST use the
                // absolute-form. Host stays the URL's authority, and §3.2:
                // it MUST be identical to the target's authority, so the
                // port 80 that the URL left out is left out here too.
                let target = p
                    .url
                    .strip_prefix("http://")
                    .and_then(|r| r.strip_prefix(t.authority.as_str()))
                    .and_then(|r| r.strip_prefix(":80"))
                    .filter(|path| path.starts_with(['/', '?']))
                    .map(|path| format!("http://{}{path}", t.authority));
                let mut headers = p.headers.clone();
                if let Some(creds) = via.credentials.as_ref().filter(|_| {
                    !headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("proxy-authorization"))
                }) {
                    // RFC 9110 §11.7.2, RFC 7617 §2.
                    headers.push((
                        "Proxy-Authorization".into(),
                        format!("Basic {}", creds.basic()),
                    ));
                }
                render_request(
                    p.method,
                    target.as_deref().unwrap_or(&p.url),
                    &headers,
                    p.keep_alive,
                )?
            }
        };
        p.plain = Some(Plain {
            request,
            proxy: http_proxy.map(|via| via.at.clone()),
            conn: std::cell::RefCell::new(None),
        });
        Ok(p)
    }

    #[cfg(feature = "tls")]
    fn agent(&self) -> Agent {
        let idle = if self.keep_alive { 1 } else { 0 };
        let builder = Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(self.timeout))
            .user_agent("pathosd-check/1.0")
            .proxy(self.proxy.clone())
            .max_idle_connections(idle)
            .max_idle_age(MAX_IDLE)
            .max_idle_connections_per_host(idle);
        #[cfg(feature = "tls")]
        let builder = builder.tls_config(self.tls.clone());
        let config = builder.build();
        if self.proxy.is_some() {
            // Through a proxy the proxy resolves the URL's host.
            Agent::new_with_config(config)
        } else {
            Agent::with_parts(
                config,
                DefaultConnector::new(),
                FixedResolver {
                    connect: self.connect.clone(),
                },
            )
        }
    }

    pub fn what(&self) -> String {
        format!("{} {}", self.method.as_str(), self.url)
    }

    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        let want_body = self.text.is_some() || self.regex.is_some() || self.jq.is_some();
        let (status, body) = match &self.plain {
            Some(plain) => match self.run_plain(plain, want_body).await {
                Ok(r) => r,
                Err(detail) => return CheckResult::fail(detail),
            },
            #[cfg(not(feature = "tls"))]
            None => return CheckResult::fail(format!("{}: {}", self.what(), crate::NEEDS_TLS)),
            #[cfg(feature = "tls")]
            None => {
                let kept = self.agent.borrow().clone();
                let agent = match kept {
                    Some(a) => a,
                    None => self.agent(),
                };
                let method = self.method;
                let url = self.url.clone();
                let headers = self.headers.clone();
                let res = super::blocking::pool()
                    .run(move || fetch(&agent, method, &url, &headers, want_body))
                    .await;
                match res {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => return CheckResult::fail(self.describe(e)),
                    Err(busy) => return CheckResult::fail(format!("{}: {busy}", self.what())),
                }
            }
        };
        let r = self.evaluate(status, &body);
        if !r.ok {
            // A failed probe keeps no connection (keep_alive): the next one
            // tests a fresh connection to the backend, as a probe without
            // keep_alive does, instead of reusing the one that failed.
            if let Some(plain) = &self.plain {
                plain.conn.take();
            }
            #[cfg(feature = "tls")]
            if self.agent.borrow().is_some() {
                self.agent.replace(Some(self.agent()));
            }
        }
        r
    }

    /// The async exchange of a plain http check.
    async fn run_plain(&self, plain: &Plain, want_body: bool) -> Result<(u16, Vec<u8>), String> {
        let dst = self.connect.to_string();
        let kept = within_idle_limit(plain.conn.take(), Instant::now());
        // Direct: the one address of `connect`, without an allocation.
        let (one, many);
        let addrs: &[SocketAddr] = match &plain.proxy {
            None => {
                one = [super::resolve(&self.connect).await?];
                &one
            }
            Some(via) => {
                many = self.proxy_addrs(via).await?;
                &many
            }
        };
        let r = super::http1::exchange(
            addrs,
            kept,
            &[&plain.request],
            match self.method {
                HttpMethod::Get => super::http1::Method::Get,
                HttpMethod::Head => super::http1::Method::Head,
                HttpMethod::Post => super::http1::Method::Post,
            },
            want_body,
            self.keep_alive,
        )
        .await
        .map_err(|f| match plain.proxy {
            None => f.detail(&self.what(), &dst),
            Some(_) => self.proxy_failure(f, &dst),
        })?;
        plain.conn.replace(r.reusable.map(|c| (c, Instant::now())));
        Ok((r.status, r.body))
    }

    /// The proxy's addresses, tried in order as ureq tried them (at most
    /// 16), looked up at each probe. Failures worded as ureq's were.
    async fn proxy_addrs(&self, via: &HostPort) -> Result<Vec<SocketAddr>, String> {
        let addrs = match &via.host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, via.port)],
            Host::Name(n) => super::lookup(n, via.port)
                .await
                .map_err(|e| format!("{}: {e}", self.what()))?,
        };
        if addrs.is_empty() {
            return Err(format!("resolve {}: host not found", self.connect.host));
        }
        Ok(addrs)
    }

    /// A failed exchange through an http:// proxy, in the words the ureq
    /// path used (tests/check_http.rs pins them): a refused connection is
    /// "connect DST: connection refused", with DST the check's target as
    /// before, any other I/O error "METHOD URL: error".
    fn proxy_failure(&self, f: Failure, dst: &str) -> String {
        match f {
            Failure::Connect(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("connect {dst}: connection refused")
            }
            Failure::Connect(e) | Failure::Io(e) => format!("{}: {}", self.what(), io_msg(&e)),
            Failure::Protocol(m) => format!("{}: bad response: {m}", self.what()),
        }
    }

    /// Status, body text, regex and jq, as configured, for both paths.
    fn evaluate(&self, status: u16, body: &[u8]) -> CheckResult {
        let r = CheckResult::fail("").with("status_code", status);
        if !self.codes.iter().any(|c| c.contains(status)) {
            let want: Vec<String> = self.codes.iter().map(|c| c.to_string()).collect();
            return CheckResult {
                detail: format!("status {status} not in [{}]", want.join(", ")),
                ..r
            };
        }
        let body_text = String::from_utf8_lossy(body);
        if let Some(t) = &self.text {
            if !body_text.contains(t.as_str()) {
                return CheckResult {
                    detail: format!("body does not contain {t:?}"),
                    ..r
                };
            }
        }
        if let Some(re) = &self.regex {
            if !re.is_match(&body_text) {
                return CheckResult {
                    detail: format!("body does not match /{}/", re.as_str()),
                    ..r
                };
            }
        }
        if let Some(jq) = &self.jq {
            let doc: serde_json::Value = match serde_json::from_slice(body) {
                Ok(d) => d,
                Err(_) => {
                    return CheckResult {
                        detail: "response is not valid JSON".into(),
                        ..r
                    }
                }
            };
            if let Err(e) = jsonmatch::matches(jq, &doc) {
                return CheckResult { detail: e, ..r };
            }
        }
        CheckResult {
            ok: true,
            detail: format!("HTTP {status} OK"),
            ..r
        }
    }

    #[cfg(feature = "tls")]
    fn describe(&self, e: ureq::Error) -> String {
        let dst = self.connect.to_string();
        match e {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("connect {dst}: connection refused")
            }
            ureq::Error::Io(io) => format!("{}: {}", self.what(), io_msg(&io)),
            ureq::Error::Timeout(_) => {
                format!("{}: timed out after {:?}", self.what(), self.timeout)
            }
            ureq::Error::HostNotFound => format!("resolve {}: host not found", self.connect.host),
            #[cfg(feature = "tls")]
            ureq::Error::Tls(m) => format!("tls {dst}: {m}"),
            #[cfg(feature = "tls")]
            ureq::Error::Rustls(e) => format!("tls {dst}: {e}"),
            other => format!("{}: {other}", self.what()),
        }
    }
}

/// The path and query of a URL this module built ("scheme://authority/...").
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find(['/', '?']).map_or("/", |i| &rest[i..])
}

/// The request head of a plain http check, with the headers ureq sends
/// (Host, User-Agent, Accept; Content-Length for the empty POST body) so
/// both paths send the same request. A header that cannot be sent (a name
/// that is not a token, a value with a line break) is a config error.
fn render_request(
    method: HttpMethod,
    path: &str,
    headers: &[(String, String)],
    keep_alive: bool,
) -> Result<Vec<u8>, String> {
    let token = |n: &str| {
        !n.is_empty()
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let mut r = format!("{} {path} HTTP/1.1\r\n", method.as_str()).into_bytes();
    let has = |n: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    let mut all: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    if !has("user-agent") {
        all.push(("User-Agent", "pathosd-check/1.0"));
    }
    if !has("accept") {
        all.push(("Accept", "*/*"));
    }
    if method == HttpMethod::Post && !has("content-length") {
        all.push(("Content-Length", "0"));
    }
    if !has("connection") && !keep_alive {
        all.push(("Connection", "close"));
    }
    for (k, v) in all {
        if !token(k) {
            return Err(format!("headers: {k:?} is not a valid header name"));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(format!("headers: the value of {k} has a line break"));
        }
        r.extend_from_slice(k.as_bytes());
        r.extend_from_slice(b": ");
        r.extend_from_slice(v.as_bytes());
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(b"\r\n");
    Ok(r)
}

/// ureq's proxy, made from the parts validation read, as their canonical
/// URL (`Proxy::url`): the proxy the configured URL named. It fails only on
/// a form ureq would refuse, which validation refuses first (the tests make
/// it from every form validation accepts).
#[cfg(feature = "tls")]
fn ureq_proxy(p: &Proxy) -> Result<ureq::Proxy, ureq::Error> {
    ureq::Proxy::new(&p.url())
}

#[cfg(feature = "tls")]
fn fetch(
    agent: &Agent,
    method: HttpMethod,
    url: &str,
    headers: &[(String, String)],
    want_body: bool,
) -> Result<(u16, Vec<u8>), ureq::Error> {
    let mut resp = match method {
        HttpMethod::Get | HttpMethod::Head => {
            let mut rb = if method == HttpMethod::Get {
                agent.get(url)
            } else {
                agent.head(url)
            };
            for (k, v) in headers {
                rb = rb.header(k, v);
            }
            rb.call()?
        }
        HttpMethod::Post => {
            let mut rb = agent.post(url);
            for (k, v) in headers {
                rb = rb.header(k, v);
            }
            rb.send_empty()?
        }
    };
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    if want_body && method != HttpMethod::Head {
        use std::io::Read;
        resp.body_mut()
            .as_reader()
            .take(MAX_BODY as u64)
            .read_to_end(&mut body)
            .map_err(ureq::Error::Io)?;
    }
    Ok((status, body))
}

#[cfg(test)]
mod tests;
