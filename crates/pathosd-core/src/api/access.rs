//! Who may change the daemon's state over HTTP (drain, check trigger).
//!
//! The API is plain HTTP, often bound to a LAN address for scraping, and any
//! browser on that LAN can be made to send requests to it: a page on
//! `http://evil.example` can POST cross-site (CSRF), or have its own name
//! resolve to the router (DNS rebinding) so that its requests even count as
//! same-origin in the browser. [`check`] is the pure rule set that mutating
//! requests must pass; read endpoints are not subject to it.
//!
//! 1. `Host` names this end of the connection: the IP literal the client
//!    connected to (or `localhost` on a loopback address) and its port. A
//!    rebinding attacker's page can only send its own host name.
//! 2. `Origin`, when present, is that same address over `http`; a foreign or
//!    `null` Origin is refused. `Sec-Fetch-Site`, when present, must be
//!    `same-origin` or `none`.
//! 3. The request is not one a browser sends cross-origin without a CORS
//!    preflight (which this server never grants): `Content-Type:
//!    application/json`, an `X-Requested-With` header, or `Authorization`.
//! 4. With `api.token` set, `Authorization: Bearer <token>` (RFC 6750 §2.1).

use std::net::{IpAddr, SocketAddr};

/// A refused request: the status, the message, and for 401 the
/// `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub status: u16,
    pub message: String,
    pub challenge: Option<&'static str>,
}

impl Denied {
    fn new(status: u16, message: impl Into<String>) -> Denied {
        Denied {
            status,
            message: message.into(),
            challenge: None,
        }
    }
}

fn values<'a>(headers: &'a [(String, String)], name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// `v` quoted and escaped, cut to 64 characters: client-supplied values go
/// into answers and log lines.
pub fn quoted(v: &str) -> String {
    super::Quoted(v).to_string()
}

/// Splits an RFC 3986 authority `host[:port]` (no userinfo) into the host
/// (brackets removed from an IPv6 literal) and the port, 80 when absent or
/// empty (the default port of `http`).
pub(crate) fn split_authority(a: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        match after {
            "" => (h, ""),
            p => (h, p.strip_prefix(':')?),
        }
    } else {
        match a.split_once(':') {
            Some((h, p)) if !p.contains(':') => (h, p),
            Some(_) => return None,
            None => (a, ""),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        "" => 80,
        p if p.bytes().all(|c| c.is_ascii_digit()) => p.parse().ok()?,
        _ => return None,
    };
    Some((host, port))
}

/// Whether authority `a` names `local`: its IP literal (IPv4-mapped IPv6
/// addresses compare as IPv4), or `localhost` when `local` is a loopback
/// address, with its port.
pub(crate) fn names_local(a: &str, local: SocketAddr) -> bool {
    let Some((host, port)) = split_authority(a) else {
        return false;
    };
    if port != local.port() {
        return false;
    }
    let ip = local.ip().to_canonical();
    match host.parse::<IpAddr>() {
        Ok(h) => h.to_canonical() == ip,
        Err(_) => host.eq_ignore_ascii_case("localhost") && ip.is_loopback(),
    }
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell how much of a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(!x);
    }
    diff == 0
}

/// The warning logged at start when the API listens on `local` beyond
/// loopback (a LAN address, or every address) and `api.token` is unset:
/// browsers are kept out by the rules above, but any host that reaches the
/// port can still drain VIPs.
pub fn exposure_warning(local: SocketAddr, token_set: bool) -> Option<String> {
    if token_set || local.ip().to_canonical().is_loopback() {
        return None;
    }
    Some(format!(
        "api: {local} is reachable beyond loopback and api.token (UCI api_token) is not set: any host that reaches it can drain VIPs and trigger checks"
    ))
}

/// The challenge of RFC 6750 §3.
const CHALLENGE: &str = "Bearer realm=\"pathosd\"";
const CHALLENGE_INVALID: &str = "Bearer realm=\"pathosd\", error=\"invalid_token\"";

/// Checks a mutating request's `headers`, received on a connection to
/// `local`, against the rules above; `token` is `api.token`.
pub fn check(
    headers: &[(String, String)],
    local: SocketAddr,
    token: Option<&str>,
) -> Result<(), Denied> {
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without
    // a Host header or with more than one.
    let mut hosts = values(headers, "host");
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => h,
        (None, _) => return Err(Denied::new(400, "missing Host header")),
        (Some(_), Some(_)) => return Err(Denied::new(400, "more than one Host header")),
    };
    if !names_local(host, local) {
        return Err(Denied::new(
            403,
            format!(
                "Host {} is not this API's address {local}: changes are accepted only for the address itself (DNS rebinding protection)",
                quoted(host)
            ),
        ));
    }
    let mut origins = values(headers, "origin");
    match (origins.next(), origins.next()) {
        (None, _) => {}
        (Some(o), None) => {
            let same = o
                .strip_prefix("http://")
                .is_some_and(|a| names_local(a, local));
            if !same {
                return Err(Denied::new(
                    403,
                    format!("cross-origin request from Origin {} refused", quoted(o)),
                ));
            }
        }
        (Some(_), Some(_)) => return Err(Denied::new(403, "more than one Origin header")),
    }
    if let Some(site) = values(headers, "sec-fetch-site").next() {
        if !site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none") {
            return Err(Denied::new(
                403,
                format!(
                    "cross-site request (Sec-Fetch-Site: {}) refused",
                    quoted(site)
                ),
            ));
        }
    }
    let json = values(headers, "content-type").any(|v| {
        v.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
    });
    let custom = values(headers, "x-requested-with").next().is_some();
    let auth = values(headers, "authorization").next();
    if !json && !custom && auth.is_none() {
        return Err(Denied::new(
            403,
            "changes need Content-Type: application/json or an X-Requested-With header (a request a browser cannot send cross-site)",
        ));
    }
    if let Some(want) = token {
        // RFC 9110 §11.1: the auth-scheme is case-insensitive.
        let given = auth.and_then(|a| {
            let (scheme, cred) = a.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(cred.trim())
        });
        match given {
            None => {
                return Err(Denied {
                    challenge: Some(CHALLENGE),
                    ..Denied::new(401, "this API needs Authorization: Bearer <api.token>")
                })
            }
            Some(g) if !same_secret(g.as_bytes(), want.as_bytes()) => {
                return Err(Denied {
                    challenge: Some(CHALLENGE_INVALID),
                    ..Denied::new(401, "wrong API token")
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn local() -> SocketAddr {
        "127.0.0.1:59179".parse().unwrap()
    }

    fn status(pairs: &[(&str, &str)], token: Option<&str>) -> u16 {
        match check(&h(pairs), local(), token) {
            Ok(()) => 200,
            Err(d) => d.status,
        }
    }

    const JSON: (&str, &str) = ("Content-Type", "application/json");

    #[test]
    fn authorities() {
        assert_eq!(split_authority("a:1"), Some(("a", 1)));
        assert_eq!(split_authority("a"), Some(("a", 80)));
        assert_eq!(split_authority("a:"), Some(("a", 80)));
        assert_eq!(split_authority("[::1]:59179"), Some(("::1", 59179)));
        assert_eq!(split_authority("[::1]"), Some(("::1", 80)));
        for bad in [
            "", ":80", "::1", "[::1", "[::1]x", "a:+1", "a:99999", "a:1:2",
        ] {
            assert_eq!(split_authority(bad), None, "{bad}");
        }
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert!(names_local("[::1]:8080", v6));
        assert!(names_local("LocalHost:8080", v6));
        assert!(!names_local("[::1]:80", v6));
        let mapped: SocketAddr = "[::ffff:192.168.1.1]:59179".parse().unwrap();
        assert!(names_local("192.168.1.1:59179", mapped));
        assert!(!names_local("localhost:59179", mapped), "not loopback");
    }

    #[test]
    fn host_must_name_this_end() {
        assert_eq!(status(&[("Host", "127.0.0.1:59179"), JSON], None), 200);
        assert_eq!(status(&[("host", "localhost:59179"), JSON], None), 200);
        assert_eq!(status(&[JSON], None), 400);
        assert_eq!(
            status(
                &[
                    ("Host", "127.0.0.1:59179"),
                    ("Host", "127.0.0.1:59179"),
                    JSON
                ],
                None
            ),
            400
        );
        for foreign in [
            "evil.example:59179",
            "evil.example",
            "127.0.0.2:59179",
            "127.0.0.1:80",
            "127.0.0.1",
            "127.0.0.1.nip.io:59179",
            "",
        ] {
            assert_eq!(status(&[("Host", foreign), JSON], None), 403, "{foreign}");
        }
    }

    #[test]
    fn foreign_origin_is_refused() {
        let host = ("Host", "127.0.0.1:59179");
        assert_eq!(
            status(&[host, ("Origin", "http://127.0.0.1:59179"), JSON], None),
            200
        );
        assert_eq!(
            status(&[host, ("Origin", "http://localhost:59179"), JSON], None),
            200
        );
        for o in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:59179",
            "http://127.0.0.1:8080",
            "http://127.0.0.1",
            "127.0.0.1:59179",
        ] {
            let d = check(&h(&[host, ("Origin", o), JSON]), local(), None).unwrap_err();
            assert_eq!(d.status, 403, "{o}");
            assert!(d.message.contains(o), "{}", d.message);
        }
        let two = [
            host,
            ("Origin", "http://127.0.0.1:59179"),
            ("Origin", "http://evil.example"),
            JSON,
        ];
        assert_eq!(status(&two, None), 403);
        for site in ["same-origin", "none"] {
            assert_eq!(status(&[host, ("Sec-Fetch-Site", site), JSON], None), 200);
        }
        for site in ["cross-site", "same-site"] {
            assert_eq!(status(&[host, ("Sec-Fetch-Site", site), JSON], None), 403);
        }
    }

    #[test]
    fn simple_requests_are_refused() {
        let host = ("Host", "127.0.0.1:59179");
        assert_eq!(status(&[host], None), 403);
        for ct in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
            "application/jsonx",
        ] {
            assert_eq!(status(&[host, ("Content-Type", ct)], None), 403, "{ct}");
        }
        assert_eq!(
            status(
                &[host, ("Content-Type", "Application/JSON; charset=utf-8")],
                None
            ),
            200
        );
        assert_eq!(status(&[host, ("X-Requested-With", "curl")], None), 200);
        assert_eq!(status(&[host, ("Authorization", "Bearer x")], None), 200);
    }

    #[test]
    fn token_is_required_when_set() {
        let host = ("Host", "127.0.0.1:59179");
        let tok = Some("s3cret-token-0123456789");
        let d = check(&h(&[host, JSON]), local(), tok).unwrap_err();
        assert_eq!((d.status, d.challenge), (401, Some(CHALLENGE)));
        for wrong in [
            "Bearer s3cret-token-012345678",
            "Bearer s3cret-token-01234567890",
            "Bearer S3CRET-TOKEN-0123456789",
            "Basic s3cret-token-0123456789",
            "Bearer",
            "",
        ] {
            let d = check(&h(&[host, ("Authorization", wrong)]), local(), tok).unwrap_err();
            assert_eq!(d.status, 401, "{wrong}");
        }
        assert_eq!(
            status(
                &[host, ("Authorization", "bearer s3cret-token-0123456789")],
                tok
            ),
            200
        );
        // The token does not lift the other rules.
        let evil = [
            ("Host", "evil.example:59179"),
            ("Authorization", "Bearer s3cret-token-0123456789"),
        ];
        assert_eq!(status(&evil, tok), 403);
    }

    #[test]
    fn warns_only_beyond_loopback_without_token() {
        for l in [
            "127.0.0.1:59179",
            "127.1.2.3:1",
            "[::1]:59179",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert_eq!(exposure_warning(l.parse().unwrap(), false), None, "{l}");
        }
        for l in [
            "0.0.0.0:59179",
            "192.168.1.1:59179",
            "[::]:59179",
            "[fd00::1]:1",
        ] {
            let w = exposure_warning(l.parse().unwrap(), false).expect(l);
            assert!(w.contains("api.token") && w.contains(l), "{w}");
            assert_eq!(exposure_warning(l.parse().unwrap(), true), None, "{l}");
        }
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"ab"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"", b"a"));
        assert!(same_secret(b"", b""));
    }
}
