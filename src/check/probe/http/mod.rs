//! http / https. Plain `http://`, direct or through an `http://` proxy, is
//! one async HTTP/1.1 exchange on the daemon's thread
//! ([`crate::net::http1`]); https and checks through an `https://` proxy
//! go through ureq (blocking, so on the bounded pool, [`crate::pool`]) with
//! rustls on the ring provider ([`https`]). Both paths feed the same
//! evaluation (status, body text, regex, jq). ureq is built only with the
//! `tls` feature: without it `https` is a stand-in whose client cannot be
//! made, and an https target or proxy is refused when the probe is built
//! (validation already names the option, see config::validate).
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
//! certificate verification ([`https`] says how ureq is made to).
//!
//! Redirects are never followed: a 3xx passes only if listed in
//! response_codes.

#[cfg(feature = "tls")]
mod https;
#[cfg(not(feature = "tls"))]
#[path = "no_https.rs"]
mod https;

use crate::check::body::BodyMatch;
use crate::check::result::CheckResult;
use crate::config::proxy::Proxy;
use crate::config::target::{Host, HostPort, HttpTarget};
use crate::config::{CodeRange, HttpCheck, HttpMethod};
use crate::net::http1::{self, Failure, Method};
use crate::net::io_msg;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

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
    body: BodyMatch,
    keep_alive: bool,
    client: Client,
}

/// How the request goes out.
#[derive(Debug)]
enum Client {
    /// Plain http, direct or through an http:// proxy: the async path, its
    /// request head rendered once, and the connection kept for the next
    /// probe with keep_alive.
    Plain(Plain),
    /// An https target, or any target through an https:// proxy: ureq.
    Https(https::Https),
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

impl HttpProbe {
    /// `t`: `c`'s target (connect address, request URL, Host), as
    /// validation resolved it from `url`, `host`, `port`, `tls_server_name`
    /// and the VIP prefix. Fails only on what the machine decides (a CA or
    /// client certificate file that cannot be read).
    pub fn new(c: &HttpCheck, t: &HttpTarget, timeout: Duration) -> Result<HttpProbe, String> {
        // An http:// proxy of a plain http check is the async path's; any
        // other (an https target's, an https:// proxy) is ureq's. Both take
        // the proxy as validation read it (`t.proxy`).
        let http_proxy = t.proxy.as_ref().filter(|p| !t.https && !p.https);
        let ureq = t.https || (t.proxy.is_some() && http_proxy.is_none());
        let https = match ureq {
            true => Some(https::Https::new(c, t, timeout)?),
            false => None,
        };
        let mut headers: Vec<(String, String)> = c
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !has(&headers, "host") {
            // pathosd sends the URL's authority (with the port only if the
            // URL had one); for a bare path, the connect host.
            headers.push(("Host".into(), t.authority.clone()));
        }
        if c.response_jq.is_some() && !has(&headers, "accept") {
            headers.push(("Accept".into(), "application/json".into()));
        }
        let client = match https {
            Some(h) => Client::Https(h),
            None => Client::Plain(Plain::new(c, t, &headers, http_proxy.map(|p| &**p))?),
        };
        Ok(HttpProbe {
            method: c.method,
            url: t.url.clone(),
            connect: t.connect.clone(),
            headers,
            codes: c.response_codes.clone(),
            body: BodyMatch::new(
                c.response_text.as_ref(),
                c.response_regex.as_ref(),
                c.response_jq.as_ref(),
            ),
            keep_alive: c.keep_alive,
            client,
        })
    }

    pub fn what(&self) -> String {
        format!("{} {}", self.method.as_str(), self.url)
    }

    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        let want_body = self.body.wants_body();
        let got = match &self.client {
            Client::Plain(plain) => self.run_plain(plain, want_body).await,
            Client::Https(h) => {
                h.fetch(self.method, &self.url, &self.headers, want_body)
                    .await
            }
        };
        let (status, body) = match got {
            Ok(r) => r,
            Err(detail) => return CheckResult::fail(detail),
        };
        let r = self.evaluate(status, &body);
        if !r.ok {
            // A failed probe keeps no connection (keep_alive): the next one
            // tests a fresh connection to the backend, as a probe without
            // keep_alive does, instead of reusing the one that failed.
            match &self.client {
                Client::Plain(plain) => drop(plain.conn.take()),
                Client::Https(h) => h.failed(),
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
                one = [crate::net::resolve(&self.connect).await?];
                &one
            }
            Some(via) => {
                many = self.proxy_addrs(via).await?;
                &many
            }
        };
        let r = http1::exchange(
            addrs,
            kept,
            &[&plain.request],
            match self.method {
                HttpMethod::Get => Method::Get,
                HttpMethod::Head => Method::Head,
                HttpMethod::Post => Method::Post,
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
            Host::Name(n) => crate::net::lookup(n, via.port)
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
        if let Err(detail) = self.body.judge(body) {
            return CheckResult { detail, ..r };
        }
        CheckResult {
            ok: true,
            detail: format!("HTTP {status} OK"),
            ..r
        }
    }
}

/// Whether `h` has a header named `n` (any case).
fn has(h: &[(String, String)], n: &str) -> bool {
    h.iter().any(|(k, _)| k.eq_ignore_ascii_case(n))
}

impl Plain {
    /// The request of a plain http check, direct or through the http://
    /// proxy `via`, with `headers` (Host and Accept already added).
    fn new(
        c: &HttpCheck,
        t: &HttpTarget,
        headers: &[(String, String)],
        via: Option<&Proxy>,
    ) -> Result<Plain, String> {
        let request = match via {
            None => render_request(c.method, path_of(&t.url), headers, c.keep_alive)?,
            Some(via) => {
                // RFC 9112 §3.2.2: a request to a proxy MUST use the
                // absolute-form. Host stays the URL's authority, and §3.2:
                // it MUST be identical to the target's authority, so the
                // port 80 that the URL left out is left out here too.
                let target = t
                    .url
                    .strip_prefix("http://")
                    .and_then(|r| r.strip_prefix(t.authority.as_str()))
                    .and_then(|r| r.strip_prefix(":80"))
                    .filter(|path| path.starts_with(['/', '?']))
                    .map(|path| format!("http://{}{path}", t.authority));
                let mut headers = headers.to_vec();
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
                    c.method,
                    target.as_deref().unwrap_or(&t.url),
                    &headers,
                    c.keep_alive,
                )?
            }
        };
        Ok(Plain {
            request,
            proxy: via.map(|via| via.at.clone()),
            conn: std::cell::RefCell::new(None),
        })
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

#[cfg(test)]
mod tests;
