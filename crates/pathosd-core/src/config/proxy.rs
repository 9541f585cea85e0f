//! `http.proxy`, read at validation into what the probes connect with: the
//! scheme, the proxy's host (an address, or a name looked up at each probe)
//! and port, and the credentials. The plain http client sends them itself;
//! ureq (https, or an https:// proxy) is built from the same parts, so no
//! probe parses the URL.
//!
//! The form is `http[s]://[user[:password]@]host[:port][/...]` (RFC 9110
//! §4.2; a path or query after the authority is ignored, as ureq ignores
//! it). The accepted characters are those of RFC 3986 §3.2: a host is an IP
//! literal (an IPv6 one in brackets) or a name of letters, digits and
//! `-._~`; user and password are percent-encoded (§3.2.1), `@` and `:`
//! aside as ureq reads them (the last `@` ends the userinfo, its first `:`
//! ends the user).

use super::target::{Host, HostPort};
use std::fmt;
use std::net::Ipv6Addr;

/// A proxy URL, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// `https://`: the connection to the proxy is itself TLS.
    pub https: bool,
    /// The proxy's host and port (80, or 443 for `https://`, when the URL
    /// gives none).
    pub at: HostPort,
    /// The URL's user and password, decoded, when it has userinfo.
    pub credentials: Option<Credentials>,
}

/// A proxy URL's user and password, percent-decoded (RFC 3986 §3.2.1); an
/// absent password is empty, as RFC 7617 §2 sends "user:".
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

/// The password stays out of debug output.
impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The token of `Proxy-Authorization: Basic` (RFC 7617 §2): base64 of
    /// "user:password".
    pub fn basic(&self) -> String {
        base64(format!("{}:{}", self.user, self.password).as_bytes())
    }
}

impl Proxy {
    /// The proxy as a URL again, in one canonical form:
    /// `scheme://[user:password@]host:port`, the user and password
    /// percent-encoded but for RFC 3986's unreserved characters (§2.3), an
    /// IPv6 host in brackets. ureq's proxy is made from it: it reads back
    /// the parts this was made from (tests in `check::probe::http::https`).
    pub fn url(&self) -> String {
        let mut u = String::from(if self.https { "https://" } else { "http://" });
        if let Some(c) = &self.credentials {
            percent_encode(&c.user, &mut u);
            u.push(':');
            percent_encode(&c.password, &mut u);
            u.push('@');
        }
        u.push_str(&self.at.host.for_url());
        u.push(':');
        u.push_str(&self.at.port.to_string());
        u
    }
}

/// Appends `s` to `out` with every octet but RFC 3986 §2.3's unreserved
/// ones as `%XX`.
fn percent_encode(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
}

/// RFC 3986 §3.2.1's userinfo characters (unreserved, sub-delims, ":" and
/// "%" of pct-encoded), and "@", which ureq takes into the userinfo too.
fn userinfo_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:%@".contains(&b)
}

/// A host name's characters: RFC 3986 §3.2.2's unreserved ones.
fn name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~".contains(&b)
}

impl Proxy {
    /// Reads `p`; the error says what is wrong, for validation to put after
    /// the option's path and value.
    pub fn parse(p: &str) -> Result<Proxy, String> {
        let (https, rest) = match (p.strip_prefix("http://"), p.strip_prefix("https://")) {
            (Some(r), _) => (false, r),
            (_, Some(r)) => (true, r),
            _ => return Err("the scheme is not http:// or https://".into()),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if let Some(c) = userinfo.and_then(|u| {
            u.chars()
                .find(|c| !c.is_ascii() || !userinfo_char(*c as u8))
        }) {
            return Err(format!(
                "the user or password has {c:?}, which must be percent-encoded (RFC 3986 §3.2.1)"
            ));
        }
        let (host, port) = match hostport.strip_prefix('[') {
            Some(v6) => {
                let Some((h, after)) = v6.split_once(']') else {
                    return Err("the IPv6 address has no closing ]".into());
                };
                let ip: Ipv6Addr = h
                    .parse()
                    .map_err(|_| format!("[{h}] is not an IPv6 address"))?;
                let port = match after {
                    "" => None,
                    a => match a.strip_prefix(':') {
                        Some(port) => Some(port),
                        None => return Err(format!("{a:?} follows the IPv6 address")),
                    },
                };
                (Host::Ip(ip.into()), port)
            }
            None => {
                let (h, port) = match hostport.rsplit_once(':') {
                    Some((h, port)) => (h, Some(port)),
                    None => (hostport, None),
                };
                if h.is_empty() {
                    return Err("no host".into());
                }
                if let Some(c) = h.chars().find(|c| !c.is_ascii() || !name_char(*c as u8)) {
                    return Err(format!(
                        "the host {h:?} has {c:?}: not an address or a host name (an IPv6 address goes in [ ])"
                    ));
                }
                (Host::parse(h), port)
            }
        };
        let port = match port {
            None | Some("") => {
                if https {
                    443
                } else {
                    80
                }
            }
            Some(s) => match s.parse::<u16>() {
                Ok(n) if n != 0 => n,
                _ => return Err(format!("the port {s:?} is not in 1..65535")),
            },
        };
        let credentials = match userinfo {
            None => None,
            Some(u) => {
                let (user, password) = u.split_once(':').unwrap_or((u, ""));
                let decode = |s: &str| {
                    percent_decode(s).ok_or_else(|| {
                        "the user or password is not UTF-8 once percent-decoded".to_string()
                    })
                };
                Some(Credentials {
                    user: decode(user)?,
                    password: decode(password)?,
                })
            }
        };
        Ok(Proxy {
            https,
            at: HostPort { host, port },
            credentials,
        })
    }
}

/// `%XX` escapes decoded once (a `%` not followed by two hex digits stays
/// as it is, as ureq leaves it); None when the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16));
        match (b[i], hex(b.get(i + 1)), hex(b.get(i + 2))) {
            (b'%', Some(h), Some(l)) => {
                // Two hex digits: at most 255.
                out.push(u8::try_from(h * 16 + l).ok()?);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Base64 with padding (RFC 4648 §4), for Basic credentials.
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, x)| n | (u32::from(*x) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648 §10's test vectors, and RFC 7617 §2's example credentials.
    #[test]
    fn base64_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
            ("Aladdin:open sesame", "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc, "{raw:?}");
        }
    }

    #[test]
    fn proxy_urls() {
        let at = |p: &str| {
            Proxy::parse(p).map(|h| (h.https, h.at.to_string(), h.credentials.map(|c| c.basic())))
        };
        assert_eq!(
            at("http://p.example:3128"),
            Ok((false, "p.example:3128".into(), None))
        );
        assert_eq!(
            at("http://p.example/"),
            Ok((false, "p.example:80".into(), None))
        );
        assert_eq!(
            at("https://p.example"),
            Ok((true, "p.example:443".into(), None))
        );
        assert_eq!(
            at("http://[::1]:8080"),
            Ok((false, "[::1]:8080".into(), None))
        );
        assert_eq!(at("http://p:"), Ok((false, "p:80".into(), None)));
        assert_eq!(
            at("http://10.0.0.1:3128/x?y"),
            Ok((false, "10.0.0.1:3128".into(), None))
        );
        assert_eq!(
            Proxy::parse("http://10.0.0.1:1").map(|p| p.at.host),
            Ok(Host::Ip("10.0.0.1".parse().unwrap()))
        );
        // Userinfo percent-decoded once ("%2540" is a literal "%40").
        let basic = |s: &str| Some(base64(s.as_bytes()));
        assert_eq!(
            at("http://Aladdin:open%20sesame@p:1").map(|a| a.2),
            Ok(basic("Aladdin:open sesame"))
        );
        assert_eq!(
            at("http://u:p%2540%3a@p:1").map(|a| a.2),
            Ok(basic("u:p%40:"))
        );
        assert_eq!(at("http://u@p:1").map(|a| a.2), Ok(basic("u:")));
        assert_eq!(at("http://u@x:y@p:1").map(|a| a.2), Ok(basic("u@x:y")));
        for (bad, why) in [
            ("socks5://p:1", "the scheme is not http:// or https://"),
            ("http://", "no host"),
            ("http://u:p@", "no host"),
            ("http://:3128", "no host"),
            ("http://p:99999", "the port \"99999\" is not in 1..65535"),
            ("http://p:0", "the port \"0\" is not in 1..65535"),
            ("http://p:x", "the port \"x\" is not in 1..65535"),
            ("http://[::1", "the IPv6 address has no closing ]"),
            ("http://[::1]x", "\"x\" follows the IPv6 address"),
            ("http://[10.0.0.1]:1", "[10.0.0.1] is not an IPv6 address"),
            (
                "http://a:b:c",
                "the host \"a:b\" has ':': not an address or a host name (an IPv6 address goes in [ ])",
            ),
            (
                "http://p q:1",
                "the host \"p q\" has ' ': not an address or a host name (an IPv6 address goes in [ ])",
            ),
            (
                "http://u:p w@p:1",
                "the user or password has ' ', which must be percent-encoded (RFC 3986 §3.2.1)",
            ),
            ("http://u:%ff@p:1", "the user or password is not UTF-8 once percent-decoded"),
        ] {
            assert_eq!(Proxy::parse(bad), Err(why.to_string()), "{bad}");
        }
    }

    /// The canonical URL reads back as the same proxy.
    #[test]
    fn the_url_again() {
        for (p, url) in [
            ("http://p.example:3128/x", "http://p.example:3128"),
            ("https://[::1]", "https://[::1]:443"),
            ("http://u@10.0.0.1", "http://u:@10.0.0.1:80"),
            (
                "http://a%20b:p%40%3A%25zz%C3%A9@p:1",
                "http://a%20b:p%40%3A%25zz%C3%A9@p:1",
            ),
        ] {
            let read = Proxy::parse(p).unwrap();
            assert_eq!(read.url(), url, "{p}");
            assert_eq!(Proxy::parse(&read.url()), Ok(read), "{p}");
        }
    }

    #[test]
    fn the_password_is_not_in_debug_output() {
        let p = Proxy::parse("http://probe:s3cret@p:1").unwrap();
        let d = format!("{p:?}");
        assert!(d.contains("probe") && !d.contains("s3cret"), "{d}");
    }
}
