//! Durations as the config spells them: Go-style strings such as "500ms",
//! "2s", "1m30s" or "1.5s". Integers are not accepted: "5" could be seconds or
//! milliseconds, and a router config must not be ambiguous.

use super::field::{show, Errors, Field};
use serde_json::{json, Value};
use std::fmt;
use std::time::Duration;

/// A config duration. `Dur::ZERO` means "disabled" where a field says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub const ZERO: Dur = Dur(Duration::ZERO);

    pub const fn ms(ms: u64) -> Dur {
        Dur(Duration::from_millis(ms))
    }

    pub const fn secs(s: u64) -> Dur {
        Dur(Duration::from_secs(s))
    }

    pub fn get(self) -> Duration {
        self.0
    }

    pub(crate) fn is_zero(self) -> bool {
        self.0.is_zero()
    }
}

/// Parses "1h2m3.5s", "250ms", "10us", "0". Returns None for anything else,
/// including values too large to represent.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s == "0" {
        return Some(Duration::ZERO);
    }
    if s.is_empty() {
        return None;
    }
    let mut rest = s;
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let (num, tail) = rest.split_at(num_end);
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let (int, frac) = match num.split_once('.') {
            Some((i, f)) => (i, f),
            None => (num, ""),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        // "1.2.3s": only the first 18 fraction digits are read below, so a
        // second '.' further on must be refused here.
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut ns = int.checked_mul(scale)?;
        // Fractions beyond nanosecond precision are dropped, as Go does.
        let mut div = scale;
        for d in frac.chars().take(18) {
            let d = u128::from(d.to_digit(10)?);
            div /= 10;
            ns = ns.checked_add(d.checked_mul(div)?)?;
        }
        total_ns = total_ns.checked_add(ns)?;
        rest = tail;
    }
    let secs = u64::try_from(total_ns / 1_000_000_000).ok()?;
    let nanos = u32::try_from(total_ns % 1_000_000_000).ok()?;
    Some(Duration::new(secs, nanos))
}

impl fmt::Display for Dur {
    /// Prints the shortest exact Go-style form: "1m30s", "500ms", "1.5s".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.is_zero() {
            return f.write_str("0s");
        }
        let ns = d.as_nanos();
        if ns % 1_000_000_000 != 0 && d.as_secs() == 0 {
            return if ns % 1_000_000 == 0 {
                write!(f, "{}ms", ns / 1_000_000)
            } else if ns % 1_000 == 0 {
                write!(f, "{}us", ns / 1_000)
            } else {
                write!(f, "{ns}ns")
            };
        }
        let secs = d.as_secs();
        let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
        let mut out = String::new();
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if m > 0 {
            out.push_str(&format!("{m}m"));
        }
        let sub = d.subsec_nanos();
        if sub != 0 {
            let frac = format!("{sub:09}");
            out.push_str(&format!("{s}.{}s", frac.trim_end_matches('0')));
        } else if s > 0 {
            out.push_str(&format!("{s}s"));
        }
        f.write_str(&out)
    }
}

impl Field for Dur {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v.as_str().and_then(parse_duration) {
            Some(d) => Some(Dur(d)),
            None => {
                errs.push_fmt(
                    path,
                    format_args!(
                        "{} is not a duration such as \"500ms\", \"2s\" or \"1m30s\"",
                        show(v)
                    ),
                );
                None
            }
        }
    }
    fn encode(&self) -> Value {
        json!(self.to_string())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string", "pattern": "^(0|([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+)$"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        for bad in [
            "",
            "5",
            "s",
            "1x",
            "1.2.3s",
            "-1s",
            ".s",
            "99999999999999999999999h",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn displays_round_trip() {
        for s in [
            "500ms", "2s", "1m30s", "1.5s", "1h", "0s", "250us", "1h0m1s",
        ] {
            let d = Dur(parse_duration(s).unwrap());
            assert_eq!(parse_duration(&d.to_string()).map(Dur), Some(d), "{s}");
        }
        assert_eq!(Dur::secs(90).to_string(), "1m30s");
        assert_eq!(Dur::ms(100).to_string(), "100ms");
    }

    #[test]
    fn long_inputs_are_linear_and_exact() {
        // 3 MB of "1ns": a million terms, one pass.
        let many = "1ns".repeat(1_000_000);
        assert_eq!(parse_duration(&many), Some(Duration::from_millis(1)));
        // Too large for u128 nanoseconds or for Duration: None, no overflow.
        assert_eq!(parse_duration(&("9".repeat(1_000_000) + "s")), None);
        assert_eq!(parse_duration(&"9000000000000h".repeat(1_000)), None);
        // A second '.' beyond the 18 digits read is still an error.
        assert_eq!(parse_duration("1.111111111111111111.1s"), None);
        assert_eq!(parse_duration("1.2.3s"), None);
        assert_eq!(
            parse_duration("1.000000000000000000001s"),
            Some(Duration::from_secs(1))
        );
    }
}
