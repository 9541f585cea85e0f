//! Where each check's probe goes, as validation resolves it ("parse, don't
//! validate"): the host (an address, or a DNS name the probe looks up at each
//! run), the port, for http(s) the request URL, Host header and proxy, and
//! for dns the query names. The check rules (`validate::check`) build them
//! into the probe's spec; no probe parses a URL, a host string or a DNS
//! name.

use super::dns_name::DnsName;
use super::proxy::Proxy;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// A configured host: an IP literal, or a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Ip(IpAddr),
    /// Resolved (DNS) by the probe at each run.
    Name(String),
}

impl Host {
    /// `s` trimmed: an IP literal (an IPv6 one with or without brackets),
    /// else a name.
    pub fn parse(s: &str) -> Host {
        let s = s.trim();
        match s
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(s.to_string()),
        }
    }

    /// As inside a URL: IPv6 literals in brackets.
    pub fn for_url(&self) -> String {
        match self {
            Host::Ip(IpAddr::V6(a)) => format!("[{a}]"),
            h => h.to_string(),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(ip) => ip.fmt(f),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// A host and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: Host,
    pub port: u16,
}

impl HostPort {
    /// The socket address when the host is an address (no lookup needed).
    pub fn addr(&self) -> Option<SocketAddr> {
        match self.host {
            Host::Ip(ip) => Some(SocketAddr::new(ip, self.port)),
            Host::Name(_) => None,
        }
    }
}

impl fmt::Display for HostPort {
    /// "host:port", IPv6 literals in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr() {
            Some(a) => a.fmt(f),
            None => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// An http(s) check's request, resolved from `url`, `host`, `port` and
/// `tls_server_name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    pub https: bool,
    /// Where the probe connects: `host`, else the URL's host, else the VIP
    /// address; `port`, else the URL's, else 80 or 443.
    pub connect: HostPort,
    /// The request URL: the scheme, the name (`tls_server_name`, else the
    /// URL's host, else the connect host; Host, SNI and certificate
    /// verification follow it), the port and the path.
    pub url: String,
    /// Where the path and query start in `url`.
    pub path_at: usize,
    /// The Host header sent unless `headers` has one: the URL's authority
    /// (with the port only if the URL had one); for a bare path, the
    /// connect host (and `port` when set).
    pub authority: String,
    /// `proxy`, read: the request goes through it instead of to `connect`.
    /// Boxed: most checks have none, and a proxy is ≈ 100 bytes.
    pub proxy: Option<Box<Proxy>>,
}

impl HttpTarget {
    /// The path and query of the request URL.
    pub fn path(&self) -> &str {
        self.url.get(self.path_at..).unwrap_or("/")
    }
}

/// A dns check's server and questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsTarget {
    /// `dns.resolver`, else the VIP address, with `dns.port`.
    pub resolver: HostPort,
    /// `dns.names`, read (never empty).
    pub names: Vec<DnsName>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::types::Prefix;
    use crate::config::run::ProbeSpec;
    use crate::config::schema::{Check, CheckType, HttpCheck};

    /// The probe of check `c` on a VIP with prefix `vip`, as the check's
    /// rules build it (whatever other rules say, such as a TLS option on
    /// an http:// URL); None when they leave nothing to build.
    fn target(c: &Check, vip: &Prefix) -> Option<ProbeSpec> {
        let mut errs = crate::config::Errors::default();
        crate::config::validate::check(vip, "c", c.clone(), &mut errs).map(|s| s.probe)
    }

    fn http_check(url: &str, f: impl FnOnce(&mut HttpCheck)) -> Check {
        let mut h = HttpCheck {
            url: url.into(),
            ..HttpCheck::default()
        };
        f(&mut h);
        Check {
            kind: Some(CheckType::Http),
            http: Some(Box::new(h)),
            ..Check::default()
        }
    }

    fn http_target(c: &Check, vip: &str) -> HttpTarget {
        match target(c, &vip.parse().unwrap()) {
            Some(ProbeSpec::Http { target, .. }) => *target,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn http_urls_hosts_and_authorities() {
        let t = http_target(&http_check("/healthz", |_| {}), "10.0.0.1/32");
        assert_eq!(
            (t.https, t.connect.to_string(), t.url.as_str(), t.path()),
            (
                false,
                "10.0.0.1:80".into(),
                "http://10.0.0.1:80/healthz",
                "/healthz"
            )
        );
        assert_eq!(t.authority, "10.0.0.1");
        let t = http_target(
            &http_check("https://web.example:8443/x?y=1", |h| {
                h.host = Some(" 2001:db8::1 ".into())
            }),
            "10.0.0.0/8",
        );
        assert_eq!(t.connect.to_string(), "[2001:db8::1]:8443");
        assert_eq!(t.url, "https://web.example:8443/x?y=1");
        assert_eq!(
            (t.path(), t.authority.as_str()),
            ("/x?y=1", "web.example:8443")
        );
        let t = http_target(
            &http_check("http://[::1]/", |h| {
                h.tls_server_name = Some("name.test".into())
            }),
            "10.0.0.0/8",
        );
        assert_eq!(t.connect.addr(), Some("[::1]:80".parse().unwrap()));
        assert_eq!(
            (t.url.as_str(), t.authority.as_str()),
            ("http://name.test:80/", "[::1]")
        );
        let t = http_target(&http_check("/", |h| h.port = Some(81)), "::1/128");
        assert_eq!(t.authority, "[::1]:81");
        // A bare path on a network prefix has no host: validation says so.
        assert_eq!(
            target(&http_check("/", |_| {}), &"10.0.0.0/8".parse().unwrap()),
            None
        );
    }

    /// Each type resolves to its own variant, carrying what its probe takes:
    /// dns its names read into labels, http its proxy read into parts.
    #[test]
    fn each_type_has_its_variant() {
        let vip: Prefix = "10.0.0.1/32".parse().unwrap();
        let resolve = |v: serde_json::Value| {
            let mut errs = crate::config::Errors::default();
            let c = <Check as crate::config::Field>::decode(&v, "check", &mut errs)
                .unwrap_or_else(|| panic!("{:?}", errs.0));
            target(&c, &vip)
        };
        let t = resolve(serde_json::json!({"type": "dns", "dns": {"names": [r"a\.b.test."]}}));
        let Some(ProbeSpec::Dns { target: d, .. }) = t else {
            panic!("{t:?}")
        };
        assert_eq!(d.resolver.to_string(), "10.0.0.1:53");
        let labels: Vec<&[u8]> = d.names[0].labels().collect();
        assert_eq!(labels, [&b"a.b"[..], b"test"]);
        assert_eq!(d.names[0].as_str(), r"a\.b.test.");
        let t = resolve(serde_json::json!({"type": "https", "http": {
            "url": "https://web.test/", "proxy": "http://u:p%40@[::1]:3128"}}));
        let Some(ProbeSpec::Http { target: h, .. }) = t else {
            panic!("{t:?}")
        };
        let p = h.proxy.as_deref().expect("a proxy");
        assert_eq!((p.https, p.at.to_string()), (false, "[::1]:3128".into()));
        let c = p.credentials.as_ref().expect("credentials");
        assert_eq!((c.user.as_str(), c.password.as_str()), ("u", "p@"));
        for (v, want) in [
            (
                serde_json::json!({"type": "tcp", "tcp": {"port": 1}}),
                "Tcp",
            ),
            (
                serde_json::json!({"type": "udp", "udp": {"port": 1}}),
                "Udp",
            ),
            (
                serde_json::json!({"type": "grpc", "grpc": {"port": 1}}),
                "Grpc",
            ),
            (serde_json::json!({"type": "ping"}), "Ping"),
            (
                serde_json::json!({"type": "exec", "exec": {"command": "/bin/true"}}),
                "Exec",
            ),
        ] {
            let t = format!("{:?}", resolve(v));
            assert!(t.starts_with(&format!("Some({want}")), "{t}");
        }
        // A name or a proxy validation refuses leaves no target.
        assert_eq!(
            resolve(serde_json::json!({"type": "dns", "dns": {"names": [r"bad\1"]}})),
            None
        );
        assert_eq!(
            resolve(serde_json::json!({"type": "http", "http": {
                "url": "http://web.test/", "proxy": "http://p:0"}})),
            None
        );
    }

    #[test]
    fn hosts_are_addresses_or_names() {
        assert_eq!(Host::parse("[::1]"), Host::Ip("::1".parse().unwrap()));
        assert_eq!(Host::parse(" db.local "), Host::Name("db.local".into()));
        let hp = HostPort {
            host: Host::Name("db.local".into()),
            port: 53,
        };
        assert_eq!((hp.to_string(), hp.addr()), ("db.local:53".into(), None));
    }
}
