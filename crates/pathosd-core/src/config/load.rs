//! Loading pipeline, as pathosd's: read the file, expand `%{VAR}` placeholders
//! on the raw text, parse (JSON, or UCI mapped to the same v1 value), decode,
//! then validate. Every problem found along the way is returned together.

use super::env;
use super::field::{quote, ConfigError, Errors, Field};
use super::schema::Config;
use super::uci;
use super::uci_map;
use super::validate::{counts_exceeded, validate};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
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
            other => Err(format!("unknown format {} (json or uci)", quote(other))),
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

/// Largest config file read, in bytes, before and after `%{VAR}` expansion.
/// A real router config is a few KiB (10,000 VIPs, the most allowed, take
/// about 0.9 MiB of indented JSON); the cap keeps a wrong path such as /dev/zero or a
/// runaway file from eating a 64 MiB router's memory.
pub(crate) const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Reads, expands, parses, decodes and validates `path`. With `format` None
/// the syntax is detected from the content.
pub fn load_config(path: &Path, format: Option<Format>) -> Result<Config, Vec<ConfigError>> {
    let raw = read_bounded(path).map_err(|message| {
        vec![ConfigError {
            path: String::new(),
            message: format!("reading {}: {message}", path.display()),
        }]
    })?;
    load_str(&raw, format, &env::process_env)
}

/// Reads at most MAX_FILE_BYTES + 1 bytes: one more tells a file that is too
/// large, so a endless one (/dev/zero, a FIFO) fails at once instead of
/// reading until memory runs out.
fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let limit = u64::try_from(MAX_FILE_BYTES).unwrap_or(u64::MAX);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(buf).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

fn too_large() -> String {
    format!("larger than the limit of {MAX_FILE_BYTES} bytes (4 MiB)")
}

/// Whether a file has nothing but whitespace and `#` comment lines.
fn is_blank(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l.starts_with('#'))
}

/// Most errors reported for one file; the rest are counted. A generated file
/// with a systematic mistake must not write a hundred thousand lines to the
/// terminal or, on reload, to the router's log.
pub(crate) const MAX_ERRORS: usize = 100;

/// `load_config` on text, with the environment given (for tests and fuzzing).
pub fn load_str(
    raw: &str,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, Vec<ConfigError>> {
    load_all(raw, format, lookup).map_err(|mut errs| {
        if errs.len() > MAX_ERRORS {
            let more = errs.len() - MAX_ERRORS;
            errs.truncate(MAX_ERRORS);
            errs.push(ConfigError {
                path: String::new(),
                message: format!(
                    "… and {more} more errors (only the first {MAX_ERRORS} are listed)"
                ),
            });
        }
        errs
    })
}

fn load_all(
    raw: &str,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, Vec<ConfigError>> {
    let one = |message: String| {
        vec![ConfigError {
            path: String::new(),
            message,
        }]
    };
    if raw.len() > MAX_FILE_BYTES {
        return Err(one(format!("the config is {}", too_large())));
    }
    // A UTF-8 byte order mark, as some editors write, is not part of the
    // config (serde_json would call it an unexpected value at column 1).
    let raw = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    if is_blank(raw) {
        return Err(one(
            "the config is empty (nothing but whitespace and comments)".to_string(),
        ));
    }
    let text = env::expand(raw, lookup, MAX_FILE_BYTES).map_err(|e| vec![e])?;
    match format.unwrap_or_else(|| detect(&text)) {
        Format::Json => {
            let value = serde_json::from_str::<Strict>(&text)
                .map_err(|e| {
                    vec![ConfigError {
                        path: String::new(),
                        message: format!("invalid JSON: {e}"),
                    }]
                })?
                .0;
            let mut errs = Errors::default();
            if counts_exceeded(&value, &mut errs) {
                return Err(errs.0);
            }
            let cfg = Config::decode(&value, "", &mut errs);
            finish(cfg, errs)
        }
        Format::Uci => {
            let file = uci::parse(&text).map_err(|e| vec![e.into()])?;
            let mapped = uci_map::map(&file);
            let mut errs = Errors::default();
            if counts_exceeded(&mapped.value, &mut errs) {
                return Err(errs.0.into_iter().map(|e| mapped.locate(e)).collect());
            }
            let cfg = Config::decode(&mapped.value, "", &mut errs);
            match finish(cfg, errs) {
                Ok(c) if mapped.errors.is_empty() => Ok(c),
                Ok(_) => Err(mapped.errors),
                Err(v1) => {
                    // Report UCI input in UCI words: section and option.
                    let mut all = mapped.errors.clone();
                    // Only the errors that will be listed are translated:
                    // each translation searches every UCI location, and a
                    // file of 10,000 bad sections took seconds per thousand.
                    let room = MAX_ERRORS.saturating_sub(all.len());
                    all.extend(v1.into_iter().enumerate().map(|(i, e)| {
                        if i < room {
                            mapped.locate(e)
                        } else {
                            e
                        }
                    }));
                    Err(all)
                }
            }
        }
    }
}

/// A JSON value read with one rule serde_json's `Value` lacks: a key given
/// twice in one object is an error (serde_json keeps the last silently, and a
/// pasted block that shadows another is as silent a mistake as a typo).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!("duplicate key {}", quote(&k))));
            }
            let Strict(v) = map.next_value()?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
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

/// The v1 JSON of a config, as `pathosd convert` prints it: every field,
/// defaults included, top-level keys in the order of the docs. A literal `%{`
/// in a value (written `%%{` in the source) is escaped again, so loading the
/// output gives back the same config instead of expanding it.
pub fn to_json(c: &Config) -> String {
    const ORDER: [&str; 6] = ["schema", "router", "bgp", "api", "logging", "vips"];
    let Value::Object(m) = c.encode() else {
        return String::new();
    };
    let keys: Vec<&String> = ORDER
        .iter()
        .filter_map(|k| m.get_key_value(*k).map(|(k, _)| k))
        .chain(m.keys().filter(|k| !ORDER.contains(&k.as_str())))
        .collect();
    let mut out = String::from("{\n");
    for (i, k) in keys.iter().enumerate() {
        let key = serde_json::to_string(k).unwrap_or_default();
        let val = serde_json::to_string_pretty(&m[k.as_str()]).unwrap_or_default();
        out.push_str(&format!("  {key}: {}", val.replace('\n', "\n  ")));
        out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
    }
    out.push_str("}\n");
    out.replace("%{", "%%{")
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
    fn converted_output_keeps_literal_placeholders() {
        let src = r#"{"schema": "v1", "router": {"asn": 1, "router_id": "10.0.0.1"},
            "bgp": {"neighbors": [{"name": "n", "address": "10.0.0.2", "peer_asn": 2}]},
            "vips": [{"name": "v", "prefix": "10.0.0.9/32", "check": {"type": "exec",
                      "exec": {"command": "/bin/echo", "args": ["%%{X}", "%%%{X}", "%{Y}"]}}}]}"#;
        let env = |n: &str| (n == "Y").then(|| "%{Z}".to_string());
        let c = load_str(src, None, &env).unwrap();
        let args = &c.vips[0]
            .check
            .as_ref()
            .unwrap()
            .exec
            .as_ref()
            .unwrap()
            .args;
        assert_eq!(args, &["%{X}", "%%{X}", "%{Z}"]);
        assert_eq!(load_str(&to_json(&c), None, &|_| None).unwrap(), c);
    }

    #[test]
    fn converted_output_starts_with_the_schema() {
        let c = load_str(
            r#"{"schema": "v1", "router": {"asn": 1, "router_id": "10.0.0.1"},
                "bgp": {"neighbors": [{"name": "n", "address": "10.0.0.2", "peer_asn": 2}]},
                "vips": [{"name": "v", "prefix": "10.0.0.9/32", "always": true}]}"#,
            None,
            &|_| None,
        )
        .unwrap();
        let out = to_json(&c);
        assert!(
            out.starts_with("{\n  \"schema\": \"v1\",\n  \"router\": {\n    \"asn\": 1,"),
            "{out}"
        );
        assert!(out.ends_with("\n  ]\n}\n"), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, c.encode());
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let e = load_str(
            "{\"schema\": \"v1\",\n \"router\": {\"asn\": 1, \"asn\": 2}}",
            None,
            &|_| None,
        )
        .unwrap_err();
        assert_eq!(
            e[0].to_string(),
            "invalid JSON: duplicate key \"asn\" at line 2 column 27"
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
