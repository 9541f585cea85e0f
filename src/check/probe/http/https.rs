//! The https path of the http probe: ureq (blocking, so on the bounded
//! pool, [`crate::pool`]) with rustls on the ring provider, for an https
//! target or any target through an https:// proxy. Built only with the
//! `tls` feature; without it `no_https.rs` stands in, whose client cannot
//! be made.
//!
//! ureq takes SNI from the request URI, so the URI carries the
//! verification name and a fixed resolver dials the check's `host:port`.
//! Without keep_alive every probe builds a fresh agent, so each probe opens
//! a new connection and does a full TLS handshake (no session resumption):
//! the certificate is re-verified every time.

use super::MAX_IDLE;
use crate::config::proxy::Proxy;
use crate::config::target::{Host, HostPort, HttpTarget};
use crate::config::{HttpCheck, HttpMethod};
use crate::net::http1::MAX_BODY;
use crate::net::{io_msg, tls};
use std::cell::RefCell;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;
use ureq::tls::TlsConfig;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::DefaultConnector;
use ureq::Agent;

/// The ureq client of one check.
#[derive(Debug)]
pub(super) struct Https {
    /// Where the connection goes (ignored through a proxy).
    connect: HostPort,
    /// The check's proxy (an https target's, or an https:// proxy).
    proxy: Option<ureq::Proxy>,
    keep_alive: bool,
    tls: TlsConfig,
    /// ureq's own bound (the async path has only `Probe::run`'s).
    timeout: Duration,
    /// The reused agent with keep_alive. A `RefCell` for the same reason
    /// as the plain path's kept connection (only the check's own loop runs
    /// the probe, one run at a time, never borrowed across an await):
    /// replaced by a fresh one (an empty pool) after a failed probe.
    agent: RefCell<Option<Agent>>,
}

impl Https {
    /// The client of `c` to `t`; fails on a proxy ureq cannot take, or a
    /// CA or client certificate file that cannot be read.
    pub(super) fn new(c: &HttpCheck, t: &HttpTarget, timeout: Duration) -> Result<Https, String> {
        let proxy = match &t.proxy {
            // Named by its host and port: the URL may hold a password.
            Some(p) => Some(ureq_proxy(p).map_err(|e| format!("proxy {}: {e}", p.at))?),
            None => None,
        };
        let roots = match &c.tls_ca_cert {
            Some(f) => tls::pem_certs("tls_ca_cert", f)?,
            // A missing system store only matters for https without
            // tls_insecure; then every probe fails with "unknown issuer".
            None if t.https && !c.tls_insecure => tls::system_roots(),
            None => Vec::new(),
        };
        let client = match (&c.tls_client_cert, &c.tls_client_key) {
            (Some(cert), Some(key)) => Some(tls::client_cert(cert, key)?),
            _ => None,
        };
        let h = Https {
            connect: t.connect.clone(),
            proxy,
            keep_alive: c.keep_alive,
            tls: tls::ureq_config(roots, client, c.tls_insecure),
            timeout,
            agent: RefCell::new(None),
        };
        if h.keep_alive {
            h.agent.replace(Some(h.agent()));
        }
        Ok(h)
    }

    /// A new agent: no redirects, statuses as answers, the check's
    /// timeout, an idle connection kept only with keep_alive.
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
            .max_idle_connections_per_host(idle)
            .tls_config(self.tls.clone());
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

    /// One request with ureq on the blocking pool: the status and (when
    /// `want_body`) the body, or the probe's detail of what failed.
    pub(super) async fn fetch(
        &self,
        method: HttpMethod,
        url: &str,
        headers: &[(String, String)],
        want_body: bool,
    ) -> Result<(u16, Vec<u8>), String> {
        let kept = self.agent.borrow().clone();
        let agent = match kept {
            Some(a) => a,
            None => self.agent(),
        };
        let what = || format!("{} {url}", method.as_str());
        let (u, h) = (url.to_owned(), headers.to_vec());
        let res = crate::pool::pool()
            .run(move || fetch(&agent, method, &u, &h, want_body))
            .await;
        match res {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(self.describe(e, &what())),
            Err(busy) => Err(format!("{}: {busy}", what())),
        }
    }

    /// After a failed probe: a kept agent is replaced by a fresh one, so the
    /// next probe tests a new connection.
    pub(super) fn failed(&self) {
        if self.agent.borrow().is_some() {
            self.agent.replace(Some(self.agent()));
        }
    }

    /// A ureq error as the probe's detail; `what` is the probe's
    /// ("GET https://...").
    fn describe(&self, e: ureq::Error, what: &str) -> String {
        let dst = self.connect.to_string();
        match e {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("connect {dst}: connection refused")
            }
            ureq::Error::Io(io) => format!("{}: {}", what, io_msg(&io)),
            ureq::Error::Timeout(_) => {
                format!("{}: timed out after {:?}", what, self.timeout)
            }
            ureq::Error::HostNotFound => format!("resolve {}: host not found", self.connect.host),
            ureq::Error::Tls(m) => format!("tls {dst}: {m}"),
            ureq::Error::Rustls(e) => format!("tls {dst}: {e}"),
            other => format!("{}: {other}", what),
        }
    }
}

/// Dials the configured address whatever name the URL carries.
#[derive(Debug)]
struct FixedResolver {
    connect: HostPort,
}

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

/// ureq's proxy, made from the parts validation read, as their canonical
/// URL (`Proxy::url`): the proxy the configured URL named. It fails only on
/// a form ureq would refuse, which validation refuses first (the tests make
/// it from every form validation accepts).
pub(super) fn ureq_proxy(p: &Proxy) -> Result<ureq::Proxy, ureq::Error> {
    ureq::Proxy::new(&p.url())
}

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
mod tests {
    use super::*;

    /// What ureq's proxy reads back: scheme, host, port, user, password.
    fn ureq_parts(p: &ureq::Proxy) -> (bool, String, u16, String, String) {
        (
            p.protocol() == ureq::ProxyProtocol::Https,
            p.host().to_string(),
            p.port(),
            p.username().unwrap_or_default().to_string(),
            p.password().unwrap_or_default().to_string(),
        )
    }

    /// Whether two hosts of a URL are the same IP address, each written its
    /// own way (brackets around an IPv6 address, or not).
    fn same_ip(a: &str, b: &str) -> bool {
        let ip = |h: &str| {
            h.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
        };
        matches!((ip(a), ip(b)), (Ok(x), Ok(y)) if x == y)
    }

    /// ureq's proxy is built from every proxy URL validation accepts, and
    /// it is the proxy the URL names: the one ureq read from the URL itself
    /// when ureq could (the probes did so before validation read it).
    fn ureq_agrees(url: &str) -> Result<(), String> {
        let Ok(p) = Proxy::parse(url) else {
            return Ok(());
        };
        let built = ureq_proxy(&p).map_err(|e| format!("{url}: {e}"))?;
        let creds = p
            .credentials
            .clone()
            .unwrap_or(crate::config::proxy::Credentials {
                user: String::new(),
                password: String::new(),
            });
        let want = (
            p.https,
            p.at.host.for_url(),
            p.at.port,
            creds.user,
            creds.password,
        );
        if ureq_parts(&built) != want {
            return Err(format!(
                "{url}: built {:?}, read {want:?}",
                ureq_parts(&built)
            ));
        }
        if let Ok(own) = ureq::Proxy::new(url) {
            // ureq keeps an IP literal as written ("[::0]"), validation as the
            // address it is ("[::]"): the same host.
            let mut own = ureq_parts(&own);
            if same_ip(&own.1, &want.1) {
                own.1.clone_from(&want.1);
            }
            if own != want {
                return Err(format!("{url}: ureq read {own:?}, validation {want:?}"));
            }
        }
        Ok(())
    }

    #[test]
    fn ureq_builds_every_proxy_validation_accepts() {
        for url in [
            "http://p.example:3128",
            "https://p.example",
            "http://p.example/",
            "http://[::1]:8080",
            "http://[2001:db8::1]",
            "http://[::0]",
            "http://10.0.0.1:3128/x?y",
            "http://Aladdin:open%20sesame@p:1",
            "http://u:p%2540%3a@p:1",
            "http://u@p:1",
            "http://u:@p:1",
            "http://u@x:y@p:1",
            "http://!$&'()*+,;=:%zz@p_1.x~y-z:65535",
        ] {
            Proxy::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            ureq_agrees(url).unwrap();
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]
        /// Random URLs made of the pieces a proxy URL has, and of the
        /// characters that break one.
        #[test]
        fn ureq_agrees_on_random_proxy_urls(
            scheme in "(http|https)://",
            userinfo in "([a-zA-Z0-9%:@!$&'()*+,;=._~ /\\-]{0,12}@)?",
            host in "([a-z0-9._~-]{0,10}|[0-9]{1,3}(\\.[0-9]{1,3}){3}|\\[[0-9a-f:.]{0,16}\\]|[a-z%\\[\\] é]{1,6})",
            port in "(:[0-9]{0,6})?",
            tail in "(/[a-z?#]{0,4})?",
        ) {
            let url = format!("{scheme}{userinfo}{host}{port}{tail}");
            if let Err(e) = ureq_agrees(&url) {
                proptest::prop_assert!(false, "{}", e);
            }
        }
    }
}
