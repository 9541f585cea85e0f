//! Loading pipeline, as pathosd's: read the file, expand `%{VAR}` placeholders
//! on the raw text, parse (JSON, or UCI mapped to the same v1 value), decode,
//! then validate. Every problem found along the way is returned together.

use super::env;
use super::field::{ConfigError, Errors, Field};
use super::schema::Config;
use super::uci;
use super::uci_map;
use super::validate::validate;
use std::path::Path;
use std::str::FromStr;

/// The two input syntaxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Uci,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "json" => Ok(Format::Json),
            "uci" => Ok(Format::Uci),
            other => Err(format!("unknown format {other:?} (json or uci)")),
        }
    }
}

/// Tells the formats apart by content, not by file name: `/etc/config/pathosd`
/// has no extension. A JSON config is an object, so its first character
/// (after whitespace and `#` comment lines) is `{`; no UCI statement starts so.
pub fn detect(text: &str) -> Format {
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        rest = rest.trim_start();
        if rest.starts_with('#') {
            rest = rest.split_once('\n').map_or("", |(_, r)| r);
            continue;
        }
        break;
    }
    if rest.starts_with('{') {
        Format::Json
    } else {
        Format::Uci
    }
}

/// Reads, expands, parses, decodes and validates `path`. With `format` None
/// the syntax is detected from the content.
pub fn load_config(path: &Path, format: Option<Format>) -> Result<Config, Vec<ConfigError>> {
    let raw = std::fs::read_to_string(path).map_err(|e| {
        vec![ConfigError {
            path: String::new(),
            message: format!("reading {}: {e}", path.display()),
        }]
    })?;
    load_str(&raw, format, &env::process_env)
}

/// `load_config` on text, with the environment given (for tests and fuzzing).
pub fn load_str(
    raw: &str,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, Vec<ConfigError>> {
    let text = env::expand(raw, lookup).map_err(|e| vec![e])?;
    match format.unwrap_or_else(|| detect(&text)) {
        Format::Json => {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                vec![ConfigError {
                    path: String::new(),
                    message: format!("invalid JSON: {e}"),
                }]
            })?;
            let mut errs = Errors::default();
            let cfg = Config::decode(&value, "", &mut errs);
            finish(cfg, errs)
        }
        Format::Uci => {
            let file = uci::parse(&text).map_err(|e| vec![e.into()])?;
            let mapped = uci_map::map(&file);
            let mut errs = Errors::default();
            let cfg = Config::decode(&mapped.value, "", &mut errs);
            match finish(cfg, errs) {
                Ok(c) if mapped.errors.is_empty() => Ok(c),
                Ok(_) => Err(mapped.errors),
                Err(v1) => {
                    // Report UCI input in UCI words: section and option.
                    let mut all = mapped.errors.clone();
                    all.extend(v1.into_iter().map(|e| mapped.locate(e)));
                    Err(all)
                }
            }
        }
    }
}

fn finish(cfg: Option<Config>, mut errs: Errors) -> Result<Config, Vec<ConfigError>> {
    if let Some(c) = &cfg {
        validate(c, &mut errs);
    }
    match cfg {
        Some(c) if errs.is_empty() => Ok(c),
        _ => Err(errs.0),
    }
}

/// The v1 JSON of a config, as `pathosd convert` prints it.
pub fn to_json(c: &Config) -> String {
    let mut s = serde_json::to_string_pretty(&c.encode()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert_eq!(detect("  \n{\"schema\":\"v1\"}"), Format::Json);
        assert_eq!(detect("# comment\n# more\n  {"), Format::Json);
        assert_eq!(detect("\u{feff}{}"), Format::Json);
        assert_eq!(detect("package pathosd\n"), Format::Uci);
        assert_eq!(detect("# {\nconfig vip 'x'"), Format::Uci);
        assert_eq!(detect(""), Format::Uci);
    }

    #[test]
    fn json_syntax_errors_say_where() {
        let e = load_str("{\n \"schema\": }", None, &|_| None).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].to_string(),
            "invalid JSON: expected value at line 2 column 12"
        );
    }

    #[test]
    fn missing_variables_stop_before_parsing() {
        let e = load_str("{\"x\": \"%{B}%{A}\"}", None, &|_| None).unwrap_err();
        assert_eq!(
            e[0].message,
            "expanding environment placeholders: missing environment variables for placeholders: A, B"
        );
    }
}
