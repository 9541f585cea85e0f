//! The dns check's query names (`dns.names`), read at validation from the
//! presentation format of RFC 1035 §5.1 into the labels the query carries,
//! so the probe builds its question from labels and never parses a name.
//!
//! The rules are the ones simple-dns 0.13's `Name::new` applies (the probe's
//! DNS codec; this crate does not depend on it): validation accepts exactly
//! the names it accepts, with the same labels, and says why it refuses one.
//! `src/check/probe/dns.rs` checks the two agree on random names.
//!
//! - An unescaped `.` ends a label; empty labels (`a..b`, a trailing dot)
//!   are skipped, so a name of dots only is the root.
//! - `\DDD` (three decimal digits, at most 255) is that octet, `\X` for any
//!   other X is X itself (`\.` is a dot inside a label); a lone `\` at the
//!   end of the name is an error (RFC 1035 §5.1).
//! - A label is at most 63 octets once unescaped, and the name at most 255
//!   octets in the wire format (RFC 1035 §2.3.4, repeated by RFC 2181 §11).
//!   Label contents are not checked: any octet is allowed on the wire
//!   (RFC 2181 §11: "any binary string whatever can be used as the label").

use super::field::quote;
use std::fmt;

/// RFC 1035 §2.3.4: "labels 63 octets or less".
pub const MAX_LABEL: usize = 63;
/// RFC 1035 §2.3.4: "names 255 octets or less", counted in the wire format
/// (each label's length octet and the root's zero octet included).
pub const MAX_NAME: usize = 255;

/// A query name that validation accepted.
#[derive(Clone, PartialEq, Eq)]
pub struct DnsName {
    /// As configured (the probe's messages name it so).
    text: String,
    /// The labels in the wire format: each its length octet (1..=63) and its
    /// octets, without the root's zero octet.
    wire: Vec<u8>,
}

impl fmt::Debug for DnsName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

impl DnsName {
    /// Reads `text` (see the module doc); the error says what is wrong with
    /// it, for validation to put after the option's path and value.
    pub fn parse(text: &str) -> Result<DnsName, String> {
        let b = text.as_bytes();
        let mut wire = Vec::with_capacity(b.len() + 1);
        for raw in (RawLabels { b, at: 0 }) {
            let len_at = wire.len();
            wire.push(0);
            unescape(raw, &mut wire)?;
            let n = wire.len() - len_at - 1;
            match u8::try_from(n) {
                Ok(n) if usize::from(n) <= MAX_LABEL => wire[len_at] = n,
                _ => {
                    return Err(format!(
                        "label {} is {n} octets, more than {MAX_LABEL} (RFC 1035 §2.3.4)",
                        quote(&String::from_utf8_lossy(raw))
                    ))
                }
            }
        }
        // The root's zero octet ends every name on the wire.
        let wire_len = wire.len() + 1;
        if wire_len > MAX_NAME {
            return Err(format!(
                "the name is {wire_len} octets in the wire format, more than {MAX_NAME} (RFC 1035 §2.3.4)"
            ));
        }
        Ok(DnsName {
            text: text.to_string(),
            wire,
        })
    }

    /// The name as configured.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The labels in the wire format (each its length octet and its
    /// octets), without the root's zero octet.
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// The labels, unescaped, in order (none for the root).
    pub fn labels(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut rest = &self.wire[..];
        std::iter::from_fn(move || {
            let (&n, tail) = rest.split_first()?;
            let (label, after) = tail.split_at_checked(usize::from(n))?;
            rest = after;
            Some(label)
        })
    }
}

impl fmt::Display for DnsName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The labels of a name as written, escapes kept: split at each `.` that
/// no `\` quotes, empty ones skipped. A `\` that ends the text ends the
/// last label as it is (its unescaping then fails).
struct RawLabels<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Iterator for RawLabels<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let mut i = self.at;
        // Each step moves i forward: at most b.len() steps in all.
        while i < self.b.len() {
            match self.b[i] {
                b'\\' if i + 1 == self.b.len() => break,
                b'\\' => i += 2,
                b'.' => {
                    let start = std::mem::replace(&mut self.at, i + 1);
                    i += 1;
                    if i - 1 > start {
                        return Some(&self.b[start..i - 1]);
                    }
                }
                _ => i += 1,
            }
        }
        if self.at < self.b.len() {
            let start = std::mem::replace(&mut self.at, self.b.len());
            return Some(&self.b[start..]);
        }
        None
    }
}

/// Appends `raw`'s octets to `out` with its escapes read (RFC 1035 §5.1):
/// `\DDD` is one octet of that decimal value, `\X` is X.
fn unescape(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "label {} {why} (RFC 1035 §5.1)",
            quote(&String::from_utf8_lossy(raw))
        ))
    };
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'\\' => match raw.get(i + 1) {
                None => return bad("ends in a lone \\"),
                Some(d) if d.is_ascii_digit() => {
                    let ddd = match raw.get(i + 1..i + 4) {
                        Some(ddd) if ddd.iter().all(u8::is_ascii_digit) => ddd,
                        _ => return bad("has a \\ and a digit that are not \\DDD, three digits"),
                    };
                    let v = ddd.iter().fold(0u16, |v, d| v * 10 + u16::from(d - b'0'));
                    match u8::try_from(v) {
                        Ok(o) => out.push(o),
                        Err(_) => return bad("has an escape \\DDD above 255"),
                    }
                    i += 4;
                }
                Some(&c) => {
                    out.push(c);
                    i += 2;
                }
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(s: &str) -> Result<Vec<Vec<u8>>, String> {
        DnsName::parse(s).map(|n| n.labels().map(<[u8]>::to_vec).collect())
    }

    #[test]
    fn labels_and_escapes() {
        let l = |v: &[&[u8]]| Ok(v.iter().map(|x| x.to_vec()).collect::<Vec<_>>());
        assert_eq!(labels("www.Example.org."), l(&[b"www", b"Example", b"org"]));
        assert_eq!(labels("a..b"), l(&[b"a", b"b"]));
        assert_eq!(labels("."), l(&[]));
        assert_eq!(labels(""), l(&[]));
        assert_eq!(labels(r"My\.Device.local"), l(&[b"My.Device", b"local"]));
        assert_eq!(labels(r"a\\.b"), l(&[b"a\\", b"b"]));
        assert_eq!(labels(r"a\046b\000"), l(&[b"a.b\0"]));
        assert_eq!(labels(r"a\."), l(&[b"a."]));
        assert_eq!(labels("é.test"), l(&["é".as_bytes(), b"test"]));
    }

    #[test]
    fn limits_of_rfc_1035() {
        let l63 = "a".repeat(63);
        assert!(DnsName::parse(&l63).is_ok());
        assert_eq!(
            DnsName::parse(&format!("{l63}a.b")).unwrap_err(),
            format!(
                "label {} is 64 octets, more than 63 (RFC 1035 §2.3.4)",
                quote(&format!("{l63}a"))
            )
        );
        // An escape counts as its one octet.
        assert!(DnsName::parse(&r"\097".repeat(63)).is_ok());
        // 4 labels of 63 are 4 x 64 + 1 = 257 octets; 3 of 63 and one of
        // 61 are 255.
        let name = |last: usize| format!("{l63}.{l63}.{l63}.{}", "b".repeat(last));
        assert!(DnsName::parse(&name(61)).is_ok());
        assert_eq!(
            DnsName::parse(&name(62)).unwrap_err(),
            "the name is 256 octets in the wire format, more than 255 (RFC 1035 §2.3.4)"
        );
    }

    #[test]
    fn bad_escapes() {
        for (s, why) in [
            (r"a\", r#"label "a\\" ends in a lone \"#),
            (
                r"a\1.b",
                r#"label "a\\1" has a \ and a digit that are not \DDD, three digits"#,
            ),
            (
                r"a\12",
                r#"label "a\\12" has a \ and a digit that are not \DDD, three digits"#,
            ),
            (
                r"a\1x2",
                r#"label "a\\1x2" has a \ and a digit that are not \DDD, three digits"#,
            ),
            (r"\256", r#"label "\\256" has an escape \DDD above 255"#),
        ] {
            assert_eq!(
                DnsName::parse(s).unwrap_err(),
                format!("{why} (RFC 1035 §5.1)"),
                "{s}"
            );
        }
    }
}
