//! Environment placeholders, as pathosd defines them: `%{VAR}` is replaced by
//! the variable's value and `%%{VAR}` is kept as the literal `%{VAR}`. The
//! expansion runs on the raw file text before parsing, so a placeholder in a
//! comment must resolve too, and values are inserted verbatim (no quoting).

use super::field::{ConfigError, QUOTE_MAX};
use std::borrow::Cow;

/// Most missing variable names one error lists (a file of a million
/// distinct placeholders must not make a megabyte error line).
pub(crate) const MAX_MISSING_LISTED: usize = 10;

/// Expands every placeholder in `raw`. `lookup` returns a variable's value;
/// a variable set to the empty string is allowed. When any is missing, one
/// error names them, sorted and deduplicated (the first
/// MAX_MISSING_LISTED, and how many more). The result may not grow beyond
/// `max_len` bytes: each variable can hold up to 128 KiB, so a few thousand
/// placeholders could otherwise expand a small file to gigabytes.
pub fn expand<'a>(
    raw: &'a str,
    lookup: &dyn Fn(&str) -> Option<String>,
    max_len: usize,
) -> Result<Cow<'a, str>, ConfigError> {
    // Without a placeholder (nor a `%%{`, which holds one) the text is its
    // own expansion: no copy of the file (0.7 MB at 10,000 VIPs, alive
    // beside the text while it is parsed).
    if !raw.contains("%{") && raw.len() <= max_len {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len().min(max_len));
    let mut missing: Vec<String> = Vec::new();
    let mut rest = raw;
    let too_long = || {
        ConfigError {
        path: String::new(),
        message: format!(
            "expanding environment placeholders: the expanded config is larger than the limit of {max_len} bytes"
        ),
    }
    };
    while let Some(i) = rest.find('%') {
        if out.len() > max_len {
            return Err(too_long());
        }
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("%%{") {
            out.push_str("%{");
            rest = after;
            continue;
        }
        if let Some((name, after)) = placeholder(tail) {
            match lookup(name) {
                Some(v) => out.push_str(&v),
                None => missing.push(name.to_string()),
            }
            rest = after;
            continue;
        }
        out.push('%');
        rest = &tail[1..];
    }
    out.push_str(rest);
    if missing.is_empty() {
        return if out.len() > max_len {
            Err(too_long())
        } else {
            Ok(Cow::Owned(out))
        };
    }
    missing.sort();
    missing.dedup();
    let more = missing.len().saturating_sub(MAX_MISSING_LISTED);
    missing.truncate(MAX_MISSING_LISTED);
    let names: Vec<String> = missing.iter().map(|n| shorten_name(n)).collect();
    let mut list = names.join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    Err(ConfigError {
        path: String::new(),
        message: format!(
            "expanding environment placeholders: missing environment variables for placeholders: {list}"
        ),
    })
}

/// A variable name as an error shows it: at most QUOTE_MAX bytes (names are
/// ASCII identifiers, so any byte is a char boundary).
fn shorten_name(n: &str) -> String {
    if n.len() <= QUOTE_MAX {
        n.to_string()
    } else {
        format!("{}… ({} bytes)", &n[..QUOTE_MAX], n.len())
    }
}

/// Matches `%{NAME}` at the start of `s`, NAME being `[A-Za-z_][A-Za-z0-9_]*`.
/// Scans only the identifier characters after `%{`, never the rest of the
/// file: searching for the closing `}` from every `%{` made a file of many
/// unclosed `%{` quadratic.
fn placeholder(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix("%{")?;
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    let name = &body[..end];
    let after = body[end..].strip_prefix('}')?;
    super::policy_expr::is_identifier(name).then_some((name, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "IP" => Some("10.0.0.1".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    /// A text without a placeholder is not copied; one with a placeholder
    /// or an escaped one is, and the size limit holds either way.
    #[test]
    fn a_text_without_placeholders_is_borrowed() {
        for s in ["a % b {x} 100%", "", "%", "{%}"] {
            assert!(
                matches!(expand(s, &env, 1 << 20), Ok(Cow::Borrowed(t)) if t == s),
                "{s}"
            );
        }
        assert!(matches!(expand("%{IP}", &env, 1 << 20), Ok(Cow::Owned(t)) if t == "10.0.0.1"));
        assert!(matches!(expand("%%{IP}", &env, 1 << 20), Ok(Cow::Owned(t)) if t == "%{IP}"));
        assert!(expand("abcdef", &env, 5).is_err());
    }

    #[test]
    fn expands_and_escapes() {
        let x = |s: &str| expand(s, &env, 1 << 20).unwrap().into_owned();
        assert_eq!(x("a %{IP} b"), "a 10.0.0.1 b");
        assert_eq!(x("%{IP}%{IP}"), "10.0.0.110.0.0.1");
        assert_eq!(x("[%{EMPTY}]"), "[]");
        assert_eq!(x("%%{IP}"), "%{IP}");
        assert_eq!(x("%%{NOPE}"), "%{NOPE}");
        assert_eq!(x("%%%{IP}"), "%%{IP}");
        assert_eq!(
            x("100% sure %{ not-a-var } %{1X} %"),
            "100% sure %{ not-a-var } %{1X} %"
        );
        assert_eq!(x("é%{IP}é"), "é10.0.0.1é");
    }

    #[test]
    fn lists_every_missing_variable_once_sorted() {
        let e = expand("%{ZED} %{IP} %{ALPHA} # %{ZED}", &env, 1 << 20).unwrap_err();
        assert_eq!(e.path, "");
        assert_eq!(
            e.message,
            "expanding environment placeholders: missing environment variables for placeholders: ALPHA, ZED"
        );
    }

    #[test]
    fn expansion_is_bounded() {
        let big = |_: &str| Some("x".repeat(1000));
        // At the limit: 4 placeholders of 1000 bytes and 96 more bytes.
        let src = "%{A}".repeat(4) + &"y".repeat(96);
        assert_eq!(expand(&src, &big, 4096).unwrap().len(), 4096);
        let e = expand(&(src + "y"), &big, 4096).unwrap_err();
        assert_eq!(
            e.message,
            "expanding environment placeholders: the expanded config is larger than the limit of 4096 bytes"
        );
        // A small file cannot grow without bound: stopped early.
        let e = expand(&"%{A}".repeat(1_000_000), &big, 4096).unwrap_err();
        assert!(e.message.contains("larger than the limit"));
    }

    #[test]
    fn missing_list_is_bounded() {
        let src: String = (0..12).map(|i| format!("%{{V{i:02}}}")).collect();
        let e = expand(&src, &env, 1 << 20).unwrap_err();
        assert_eq!(
            e.message,
            "expanding environment placeholders: missing environment variables for placeholders: \
             V00, V01, V02, V03, V04, V05, V06, V07, V08, V09 and 2 more"
        );
        let long = "N".repeat(100);
        let e = expand(&format!("%{{{long}}}"), &env, 1 << 20).unwrap_err();
        assert!(
            e.message
                .ends_with(&format!("{}… (100 bytes)", &long[..64])),
            "{}",
            e.message
        );
    }

    #[test]
    fn unclosed_placeholders_stay_linear() {
        // 4 MiB of "%{" used to take minutes (a scan to the end per "%{").
        let src = "%{".repeat(2 << 20);
        let t = std::time::Instant::now();
        assert_eq!(expand(&src, &env, 8 << 20).unwrap(), src);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
        let src = "%{a".repeat(1 << 20);
        assert_eq!(expand(&src, &env, 8 << 20).unwrap(), src);
    }
}
