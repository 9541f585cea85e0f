//! The values the rules read out of strings, shared by the checks and the
//! `otel` block: gRPC status names, http(s) URLs, hex bytes, and the rule
//! of a header field.

use super::super::field::{Errors, Quote};

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

/// `s` as bytes: an even number of hex digits (either case), nothing else;
/// None for anything else.
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
