//! The rules of an http(s) check's options, and the request they resolve
//! to: where the probe connects, the URL, the Host header and the proxy,
//! each read once from `url`, `host`, `port`, `tls_server_name` and
//! `proxy`.

use super::super::field::{join, Errors, Quote};
use super::super::proxy::Proxy;
use super::super::schema::{CheckType, HttpCheck, HttpMethod};
use super::super::target::{Host, HostPort, HttpTarget};
use super::check::need_host;
use super::values::{header, split_url, UrlParts};
use crate::bgp::types::Prefix;
use std::net::IpAddr;

/// The http block `h` at `p` of a check of type `kind` on a VIP with
/// prefix `vip`: its request, or None when a rule it breaks leaves none.
pub(super) fn http(
    h: &HttpCheck,
    kind: CheckType,
    vip: &Prefix,
    p: &str,
    errs: &mut Errors,
) -> Option<HttpTarget> {
    let bare = h.url.starts_with('/');
    let full = if bare {
        if h.host.is_none() && !vip.is_host() {
            need_host(join(p, "host"), vip, errs);
        }
        None
    } else {
        url(h, kind, p, errs)
    };
    if h.url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        errs.push_fmt(
            join(p, "url"),
            format_args!("{} contains whitespace", Quote(&h.url)),
        );
    }
    if h.port == Some(0) {
        errs.push(join(p, "port"), "0 is not a port (1..65535)");
    }
    if h.response_codes.is_empty() {
        errs.push(join(p, "response_codes"), "at least one code is required");
    }
    // response_regex and response_jq are compiled by the decoder
    // (`BodyRegex`, `BodyJq`), which reports a pattern that does not compile.
    if h.method == HttpMethod::Head {
        for (key, set) in [
            ("response_text", h.response_text.is_some()),
            ("response_regex", h.response_regex.is_some()),
            ("response_jq", h.response_jq.is_some()),
        ] {
            if set {
                errs.push(
                    join(p, key),
                    "cannot be checked: a HEAD response has no body",
                );
            }
        }
    }
    let proxy = h.proxy.as_ref().map(|x| proxy(x, full.as_ref(), p, errs));
    let tls = kind == CheckType::Https || full.as_ref().is_some_and(|u| u.https);
    tls_options(h, tls, p, errs);
    for (k, val) in &h.headers {
        header(&join(&join(p, "headers"), k), k, val, errs);
    }
    if h.host.as_deref() == Some("") {
        errs.push(join(p, "host"), "must not be empty");
    }
    if !bare && full.is_none() {
        return None;
    }
    let proxy = match proxy {
        Some(read) => Some(Box::new(read?)),
        None => None,
    };
    let target = request(h, kind == CheckType::Https, full, vip, proxy);
    if target.is_none() && h.host.as_deref() != Some("") {
        // A host of nothing but spaces on a network prefix.
        need_host(join(p, "host"), vip, errs);
    }
    target
}

/// A `url` that is not a bare path: its parts, or None with its error.
fn url(h: &HttpCheck, kind: CheckType, p: &str, errs: &mut Errors) -> Option<UrlParts> {
    let url_p = join(p, "url");
    let Some(u) = split_url(&h.url) else {
        errs.push_fmt(
            &url_p,
            format_args!(
                "{} must be a path such as /healthz or an http:// or https:// URL",
                Quote(&h.url)
            ),
        );
        return None;
    };
    if kind == CheckType::Https && !u.https {
        errs.push_fmt(
            &url_p,
            format_args!("{} is http:// but the check type is https", Quote(&h.url)),
        );
    }
    if u.https && kind == CheckType::Http && !crate::TLS {
        errs.push_fmt(&url_p, format_args!("{:?} {}", h.url, crate::NEEDS_TLS));
    }
    Some(u)
}

/// `proxy` read into its parts; None with its error.
fn proxy(proxy: &str, full: Option<&UrlParts>, p: &str, errs: &mut Errors) -> Option<Proxy> {
    let pp = join(p, "proxy");
    if !(proxy.starts_with("http://") || proxy.starts_with("https://")) {
        errs.push_fmt(
            &pp,
            format_args!("{} is not an http:// or https:// proxy URL", Quote(proxy)),
        );
        return None;
    }
    // The probes connect with the parts read here.
    let read = Proxy::parse(proxy)
        .map_err(|why| {
            errs.push(
                &pp,
                format!("{} is not a usable proxy URL: {why}", Quote(proxy)),
            );
        })
        .ok()?;
    if full.is_none_or(|u| u.host.parse::<IpAddr>().is_ok()) {
        errs.push(
            &pp,
            "needs url to be a full URL with a host name (the proxy connects by name)",
        );
    } else if proxy.starts_with("https://") && !crate::TLS {
        // The connection to an https:// proxy is itself TLS.
        errs.push_fmt(&pp, format_args!("{proxy:?} {}", crate::NEEDS_TLS));
    }
    Some(read)
}

/// The TLS options: not both ways of trusting the server, a client
/// certificate with its key, and none of them without TLS.
fn tls_options(h: &HttpCheck, tls: bool, p: &str, errs: &mut Errors) {
    if h.tls_insecure && h.tls_ca_cert.is_some() {
        errs.push(
            join(p, "tls_insecure"),
            "cannot be combined with tls_ca_cert",
        );
    }
    match (&h.tls_client_cert, &h.tls_client_key) {
        (Some(_), None) => errs.push(join(p, "tls_client_key"), "required with tls_client_cert"),
        (None, Some(_)) => errs.push(join(p, "tls_client_cert"), "required with tls_client_key"),
        _ => {}
    }
    if !tls {
        for (key, set) in [
            ("tls_insecure", h.tls_insecure),
            ("tls_ca_cert", h.tls_ca_cert.is_some()),
            ("tls_server_name", h.tls_server_name.is_some()),
            ("tls_client_cert", h.tls_client_cert.is_some()),
            ("tls_client_key", h.tls_client_key.is_some()),
        ] {
            if set {
                errs.push(
                    join(p, key),
                    "has no effect without TLS (type https or an https:// url)",
                );
            }
        }
    }
}

/// The request of an http block: `full` is its URL's parts (None for a
/// bare path); None when there is no host to connect to.
fn request(
    c: &HttpCheck,
    https_type: bool,
    full: Option<UrlParts>,
    vip: &Prefix,
    proxy: Option<Box<Proxy>>,
) -> Option<HttpTarget> {
    let (https, url_host, url_port, path) = match full {
        Some(u) => (u.https, Some(Host::parse(&u.host)), u.port, u.path),
        None => (https_type, None, None, c.url.clone()),
    };
    let connect_host = match (&c.host, &url_host) {
        (Some(h), _) if !h.trim().is_empty() => Host::parse(h),
        (_, Some(h)) => h.clone(),
        _ if vip.is_host() => Host::Ip(vip.addr()),
        _ => return None,
    };
    let port = c.port.or(url_port).unwrap_or(if https { 443 } else { 80 });
    let connect = HostPort {
        host: connect_host,
        port,
    };
    let name = match (&c.tls_server_name, &url_host) {
        (Some(n), _) if !n.is_empty() => Host::parse(n).for_url(),
        (_, Some(h)) => h.for_url(),
        _ => connect.host.for_url(),
    };
    let head = format!("{}://{name}:{port}", if https { "https" } else { "http" });
    let path_at = head.len();
    let authority = match (&url_host, url_port) {
        (Some(h), Some(p)) => format!("{}:{p}", h.for_url()),
        (Some(h), None) => h.for_url(),
        (None, _) if c.port.is_some() => connect.to_string(),
        (None, _) => connect.host.for_url(),
    };
    Some(HttpTarget {
        https,
        connect,
        url: head + &path,
        path_at,
        authority,
        proxy,
    })
}
