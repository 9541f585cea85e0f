//! Environment placeholders, as pathosd defines them: `%{VAR}` is replaced by
//! the variable's value and `%%{VAR}` is kept as the literal `%{VAR}`. The
//! expansion runs on the raw file text before parsing, so a placeholder in a
//! comment must resolve too, and values are inserted verbatim (no quoting).

use super::field::ConfigError;

/// Expands every placeholder in `raw`. `lookup` returns a variable's value;
/// a variable set to the empty string is allowed. When any is missing, one
/// error names all of them, sorted and deduplicated.
pub fn expand(raw: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(raw.len());
    let mut missing: Vec<String> = Vec::new();
    let mut rest = raw;
    while let Some(i) = rest.find('%') {
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
        return Ok(out);
    }
    missing.sort();
    missing.dedup();
    Err(ConfigError {
        path: String::new(),
        message: format!(
            "expanding environment placeholders: missing environment variables for placeholders: {}",
            missing.join(", ")
        ),
    })
}

/// Matches `%{NAME}` at the start of `s`, NAME being `[A-Za-z_][A-Za-z0-9_]*`.
fn placeholder(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix("%{")?;
    let end = body.find('}')?;
    let name = &body[..end];
    super::policy_expr::is_identifier(name).then(|| (name, &body[end + 1..]))
}

/// Looks variables up in the process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
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

    #[test]
    fn expands_and_escapes() {
        let x = |s: &str| expand(s, &env).unwrap();
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
        let e = expand("%{ZED} %{IP} %{ALPHA} # %{ZED}", &env).unwrap_err();
        assert_eq!(e.path, "");
        assert_eq!(
            e.message,
            "expanding environment placeholders: missing environment variables for placeholders: ALPHA, ZED"
        );
    }
}
