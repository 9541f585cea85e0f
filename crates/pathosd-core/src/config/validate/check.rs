//! The rules of a VIP's checks: each check type's options, and the
//! helpers resolution shares with them (gRPC status names, URLs, hex).

use super::*;

/// gRPC status codes by their canonical names (grpc/doc/statuscodes.md).
pub(crate) const GRPC_CODES: &[(&str, u32)] = &[
    ("OK", 0),
    ("CANCELLED", 1),
    ("UNKNOWN", 2),
    ("INVALID_ARGUMENT", 3),
    ("DEADLINE_EXCEEDED", 4),
    ("NOT_FOUND", 5),
    ("ALREADY_EXISTS", 6),
    ("PERMISSION_DENIED", 7),
    ("RESOURCE_EXHAUSTED", 8),
    ("FAILED_PRECONDITION", 9),
    ("ABORTED", 10),
    ("OUT_OF_RANGE", 11),
    ("UNIMPLEMENTED", 12),
    ("INTERNAL", 13),
    ("UNAVAILABLE", 14),
    ("DATA_LOSS", 15),
    ("UNAUTHENTICATED", 16),
];

/// Resolves an ok_codes entry as pathosd does: case-insensitive, PascalCase or
/// SCREAMING_SNAKE (underscores ignored); Go's spelling "Canceled" is accepted.
pub(crate) fn grpc_code(name: &str) -> Option<u32> {
    let norm: String = name
        .chars()
        .filter(|c| *c != '_')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if norm == "CANCELED" {
        return Some(1);
    }
    GRPC_CODES
        .iter()
        .find(|(n, _)| n.replace('_', "") == norm)
        .map(|(_, c)| *c)
}

/// The parts of an absolute http(s) URL that the checks need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlParts {
    pub https: bool,
    /// Host without brackets (an IPv6 literal is bare).
    pub host: String,
    pub port: Option<u16>,
    /// Path and query, "/" when empty.
    pub path: String,
}

/// Splits `http://host[:port][/path]` or `https://...`; None for anything else
/// (user info is not supported: it would leak into logs).
pub(crate) fn split_url(url: &str) -> Option<UrlParts> {
    let (https, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        return None;
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        h.parse::<std::net::Ipv6Addr>().ok()?;
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace()) {
        return None;
    }
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p != 0)?),
        None => None,
    };
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    Some(UrlParts {
        https,
        host: host.to_string(),
        port,
        path,
    })
}

/// Whether `s` is a non-empty hex string of whole bytes.
/// `s` as bytes: an even number of hex digits (either case), nothing else.
/// Validation rejects what this refuses; resolution decodes with it.
pub(crate) fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || s.len() % 2 != 0 {
        return None;
    }
    s.as_bytes()
        .chunks(2)
        .map(|p| {
            let digit = |b: u8| char::from(b).to_digit(16);
            u8::try_from(digit(*p.first()?)? * 16 + digit(*p.get(1)?)?).ok()
        })
        .collect()
}

pub(super) fn check(v: &Vip, cp: &str, c: &Check, errs: &mut Errors) {
    let interval_p = join(cp, "interval");
    let timeout_p = join(cp, "timeout");
    if c.interval.is_zero() {
        errs.push(&interval_p, "0s must be greater than 0");
    }
    if c.timeout.is_zero() {
        errs.push(&timeout_p, "0s must be greater than 0");
    } else if c.timeout >= c.interval && !errs.has(&interval_p) && !errs.has(&timeout_p) {
        errs.push_fmt(
            &timeout_p,
            format_args!("{} must be less than interval {}", c.timeout, c.interval),
        );
    }
    for (key, n) in [("rise", c.rise), ("fall", c.fall)] {
        if n == 0 {
            errs.push(join(cp, key), "0 must be at least 1");
        }
    }
    let Some(kind) = c.kind else {
        if !errs.has(&join(cp, "type")) {
            errs.push_fmt(
                join(cp, "type"),
                format_args!("required (one of {})", CheckType::ALL.join(", ")),
            );
        }
        return;
    };
    // A block for another type is almost always a copy-paste slip: the
    // probe would silently ignore it.
    let blocks: [(&str, bool, bool); 7] = [
        (
            "http",
            c.http.is_some(),
            matches!(kind, CheckType::Http | CheckType::Https),
        ),
        ("dns", c.dns.is_some(), kind == CheckType::Dns),
        ("ping", c.ping.is_some(), kind == CheckType::Ping),
        ("tcp", c.tcp.is_some(), kind == CheckType::Tcp),
        ("udp", c.udp.is_some(), kind == CheckType::Udp),
        ("grpc", c.grpc.is_some(), kind == CheckType::Grpc),
        ("exec", c.exec.is_some(), kind == CheckType::Exec),
    ];
    for (key, present, applies) in blocks {
        if present && !applies {
            errs.push_fmt(
                join(cp, key),
                format_args!("a {key} block does not apply to a {kind} check"),
            );
        }
    }
    // A prefix that is missing or failed to decode holds a placeholder
    // host prefix (0.0.0.0/32): the host rules then stay quiet.
    let host_prefix = Some((v.prefix.is_host(), v.prefix));
    let need_host = |path: String, errs: &mut Errors| {
        if let Some((false, px)) = host_prefix {
            errs.push_fmt(
                path,
                format_args!("required because prefix {px} is not a single address (/32 or /128)"),
            );
        }
    };
    let not_empty = |path: String, s: &Option<String>, errs: &mut Errors| {
        if s.as_deref() == Some("") {
            errs.push(path, "must not be empty");
        }
    };
    match kind {
        CheckType::Http | CheckType::Https => {
            let d = HttpCheck::default();
            let h = c.http.as_deref().unwrap_or(&d);
            if kind == CheckType::Https && !crate::TLS {
                errs.push_fmt(join(cp, "type"), format_args!("https {}", crate::NEEDS_TLS));
            }
            http(h, kind, &join(cp, "http"), &need_host, errs);
            not_empty(join(cp, "http.host"), &h.host, errs);
        }
        CheckType::Dns => {
            let p = join(cp, "dns");
            let d = DnsCheck::default();
            let dns = c.dns.as_deref().unwrap_or(&d);
            if dns.names.is_empty() {
                errs.push(join(&p, "names"), "at least one name is required");
            }
            for (k, n) in dns.names.iter().enumerate() {
                if n.trim().is_empty() {
                    errs.push(format!("{p}.names[{k}]"), "must not be empty");
                } else if let Err(why) = DnsName::parse(n) {
                    // The query is built from the labels read here: a name
                    // the probe could not send is refused now.
                    errs.push(
                        format!("{p}.names[{k}]"),
                        format!("{} is not a DNS name: {why}", Quote(n)),
                    );
                }
            }
            match &dns.resolver {
                None => need_host(join(&p, "resolver"), errs),
                Some(r) if r.is_empty() => errs.push(join(&p, "resolver"), "must not be empty"),
                Some(_) => {}
            }
            if dns.port == 0 {
                errs.push(join(&p, "port"), "0 is not a port (1..65535)");
            }
        }
        CheckType::Ping => {
            let p = join(cp, "ping");
            let d = PingCheck::default();
            let ping = c.ping.as_deref().unwrap_or(&d);
            if !(1..=60).contains(&ping.count) {
                errs.push_fmt(
                    join(&p, "count"),
                    format_args!("{} is not in 1..60", ping.count),
                );
            }
            if !(0.0..1.0).contains(&ping.max_loss_ratio) {
                errs.push_fmt(
                    join(&p, "max_loss_ratio"),
                    format_args!("{} is not in [0, 1)", ping.max_loss_ratio),
                );
            }
            if ping.count > 1 && ping.interval.is_zero() {
                errs.push(join(&p, "interval"), "0s must be greater than 0");
            } else if (1..=60).contains(&ping.count) && !errs.has(&timeout_p) {
                // All echo requests must be sent before the check times out,
                // or the last ones are lost by construction.
                let gaps = ping.interval.get().saturating_mul(ping.count - 1);
                if Dur(gaps) >= c.timeout {
                    errs.push_fmt(
                        join(&p, "interval"),
                        format_args!(
                            "(count - 1) x interval = {} must be less than the check timeout {}",
                            Dur(gaps),
                            c.timeout
                        ),
                    );
                }
            }
            match ping.dst_ip {
                None => need_host(join(&p, "dst_ip"), errs),
                Some(dst) => {
                    if let Some(src) = ping.src_ip {
                        if src.is_ipv4() != dst.is_ipv4() {
                            errs.push_fmt(
                                join(&p, "src_ip"),
                                format_args!(
                                    "{src} and dst_ip {dst} are of different address families"
                                ),
                            );
                        }
                    }
                }
            }
        }
        CheckType::Tcp => {
            let p = join(cp, "tcp");
            let d = TcpCheck::default();
            let t = c.tcp.as_deref().unwrap_or(&d);
            port_required(&join(&p, "port"), t.port, errs);
            match &t.host {
                None => need_host(join(&p, "host"), errs),
                h => not_empty(join(&p, "host"), h, errs),
            }
        }
        CheckType::Udp => {
            let p = join(cp, "udp");
            let d = UdpCheck::default();
            let u = c.udp.as_deref().unwrap_or(&d);
            port_required(&join(&p, "port"), u.port, errs);
            match &u.host {
                None => need_host(join(&p, "host"), errs),
                h => not_empty(join(&p, "host"), h, errs),
            }
            if let Some(hex) = &u.payload_hex {
                if u.payload.is_some() {
                    errs.push(join(&p, "payload_hex"), "cannot be combined with payload");
                } else if hex_bytes(hex).is_none() {
                    errs.push_fmt(
                        join(&p, "payload_hex"),
                        format_args!(
                            "{} is not hex (an even number of 0-9a-f digits)",
                            Quote(hex)
                        ),
                    );
                }
            }
        }
        CheckType::Grpc => {
            let p = join(cp, "grpc");
            let d = GrpcCheck::default();
            let g = c.grpc.as_deref().unwrap_or(&d);
            port_required(&join(&p, "port"), g.port, errs);
            match &g.host {
                None => need_host(join(&p, "host"), errs),
                h => not_empty(join(&p, "host"), h, errs),
            }
            if g.tls && !crate::TLS {
                errs.push_fmt(join(&p, "tls"), format_args!("true {}", crate::NEEDS_TLS));
            }
            if !g.tls {
                for (key, set) in [
                    ("tls_insecure", g.tls_insecure),
                    ("tls_ca_cert", g.tls_ca_cert.is_some()),
                    ("tls_server_name", g.tls_server_name.is_some()),
                ] {
                    if set {
                        errs.push(join(&p, key), "has no effect unless tls is true");
                    }
                }
            } else if g.tls_insecure && g.tls_ca_cert.is_some() {
                errs.push(
                    join(&p, "tls_insecure"),
                    "cannot be combined with tls_ca_cert",
                );
            }
            if let Some(m) = &g.method {
                let m = m.strip_prefix('/').unwrap_or(m);
                let ok = match m.split_once('/') {
                    Some((svc, meth)) => {
                        !svc.is_empty()
                            && !meth.is_empty()
                            && !meth.contains('/')
                            && !m.chars().any(|c| c.is_whitespace())
                    }
                    None => false,
                };
                if !ok {
                    errs.push_fmt(
                        join(&p, "method"),
                        format_args!(
                            "{} is not a method such as /pkg.Service/Method",
                            Quote(g.method.as_deref().unwrap_or_default())
                        ),
                    );
                }
            }
            if g.ok_codes.is_empty() {
                errs.push(join(&p, "ok_codes"), "at least one code is required");
            }
            for (k, code) in g.ok_codes.iter().enumerate() {
                if grpc_code(code).is_none() {
                    errs.push_fmt(
                        format!("{p}.ok_codes[{k}]"),
                        format_args!(
                            "{} is not a gRPC status code such as OK or NOT_FOUND",
                            Quote(code)
                        ),
                    );
                }
            }
            for (k, val) in &g.metadata {
                header(&join(&join(&p, "metadata"), k), k, val, errs);
            }
        }
        CheckType::Exec => {
            let p = join(cp, "exec");
            let d = ExecCheck::default();
            let e = c.exec.as_deref().unwrap_or(&d);
            if e.command.trim().is_empty() {
                errs.push(join(&p, "command"), "required");
            }
        }
    }
}

pub(super) fn port_required(path: &str, port: u16, errs: &mut Errors) {
    if port == 0 {
        errs.push(path, "required (1..65535)");
    }
}

/// RFC 9110 §5.1 field names are tokens; values must not smuggle a line break.
pub(crate) fn header(path: &str, name: &str, value: &str, errs: &mut Errors) {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(tchar) {
        errs.push_fmt(
            path,
            format_args!("{} is not a valid header name", Quote(name)),
        );
    } else if value.chars().any(|c| matches!(c, '\r' | '\n' | '\0')) {
        errs.push(path, "value contains a line break or NUL");
    }
}

pub(super) fn http(
    h: &HttpCheck,
    kind: CheckType,
    p: &str,
    need_host: &dyn Fn(String, &mut Errors),
    errs: &mut Errors,
) {
    let url_p = join(p, "url");
    let mut tls = kind == CheckType::Https;
    let mut full: Option<UrlParts> = None;
    if h.url.starts_with('/') {
        if h.host.is_none() {
            need_host(join(p, "host"), errs);
        }
    } else {
        match split_url(&h.url) {
            None => errs.push_fmt(
                &url_p,
                format_args!(
                    "{} must be a path such as /healthz or an http:// or https:// URL",
                    Quote(&h.url)
                ),
            ),
            Some(u) => {
                if kind == CheckType::Https && !u.https {
                    errs.push_fmt(
                        &url_p,
                        format_args!("{} is http:// but the check type is https", Quote(&h.url)),
                    );
                }
                if u.https && kind == CheckType::Http && !crate::TLS {
                    errs.push_fmt(&url_p, format_args!("{:?} {}", h.url, crate::NEEDS_TLS));
                }
                tls |= u.https;
                full = Some(u);
            }
        }
    }
    if h.url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        errs.push_fmt(
            &url_p,
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
    if let Some(proxy) = &h.proxy {
        let pp = join(p, "proxy");
        if !(proxy.starts_with("http://") || proxy.starts_with("https://")) {
            errs.push_fmt(
                &pp,
                format_args!("{} is not an http:// or https:// proxy URL", Quote(proxy)),
            );
        } else if let Err(why) = Proxy::parse(proxy) {
            // The probes connect with the parts read here.
            errs.push(
                &pp,
                format!("{} is not a usable proxy URL: {why}", Quote(proxy)),
            );
        } else if full
            .as_ref()
            .is_none_or(|u| u.host.parse::<IpAddr>().is_ok())
        {
            errs.push(
                &pp,
                "needs url to be a full URL with a host name (the proxy connects by name)",
            );
        } else if proxy.starts_with("https://") && !crate::TLS {
            // The connection to an https:// proxy is itself TLS.
            errs.push_fmt(&pp, format_args!("{proxy:?} {}", crate::NEEDS_TLS));
        }
    }
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
    for (k, val) in &h.headers {
        header(&join(&join(p, "headers"), k), k, val, errs);
    }
}
