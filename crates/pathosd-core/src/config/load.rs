//! Loading pipeline, as pathosd's: read the file, expand `%{VAR}` placeholders
//! on the raw text, parse (JSON, or UCI mapped to the same v1 value), decode,
//! then validate. Every problem found along the way is returned together.

use super::env;
use super::field::{quote, ConfigError, Errors, Field};
use super::run::{build, RunConfig};
use super::schema::{Config, Vip};
use super::uci;
use super::uci_map;
use super::validate::{counts_exceeded, validate, Counts};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
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
pub const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// The limit, as the error names it.
pub fn too_large() -> String {
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

/// Expands, parses, decodes and validates a configuration's text (JSON or
/// UCI, detected unless `format` says) with `lookup` for `%{VAR}`
/// placeholders, and builds the run config. The caller reads the file
/// (`pathosd::config_file`): this crate does no I/O.
pub fn load_str(
    raw: &str,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, Vec<ConfigError>> {
    load_text(Cow::Borrowed(raw), format, lookup)
}

/// [`load_str`] on text it owns: the text is freed as soon as it is
/// decoded, before validation (0.68 MB at 10,000 VIPs, the start's peak).
pub fn load_string(
    raw: String,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, Vec<ConfigError>> {
    load_text(Cow::Owned(raw), format, lookup)
}

/// The decoded config of `raw` once every rule passed, as the file says it
/// (`pathosd convert` prints it), not the run config.
pub fn check_str(
    raw: &str,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, Vec<ConfigError>> {
    load_all(Cow::Borrowed(raw), format, lookup).map_err(cap_errors)
}

/// `load_str` on text the loader may own: owned text is freed as soon as
/// nothing needs it any more (see [`load_all`]).
fn load_text(
    raw: Cow<'_, str>,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, Vec<ConfigError>> {
    load_all(raw, format, lookup)
        .and_then(|c| build(c).map_err(|e| vec![e]))
        .map_err(cap_errors)
}

/// At most MAX_ERRORS errors, then one line saying how many more there were.
fn cap_errors(mut errs: Vec<ConfigError>) -> Vec<ConfigError> {
    if errs.len() > MAX_ERRORS {
        let more = errs.len() - MAX_ERRORS;
        errs.truncate(MAX_ERRORS);
        errs.push(ConfigError {
            path: String::new(),
            message: format!("… and {more} more errors (only the first {MAX_ERRORS} are listed)"),
        });
    }
    errs
}

/// Expands, parses, decodes and validates `raw`. Text owned here (the
/// file read by `load_config`, or its expansion) is freed as soon as it is
/// not needed: the file's text once expanded into a copy, the JSON text
/// once the config is decoded, before validation. The decoded config
/// borrows nothing of it, and JSON errors carry v1 paths, not text. UCI
/// keeps its text until the end: an error is located by parsing it again.
fn load_all(
    raw: Cow<'_, str>,
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
    let raw = strip_bom(raw);
    if is_blank(&raw) {
        return Err(one(
            "the config is empty (nothing but whitespace and comments)".to_string(),
        ));
    }
    // The expansion is a copy only when there is a placeholder; the file's
    // text is then freed here, not kept beside its copy while it is parsed.
    let expanded = env::expand(&raw, lookup, MAX_FILE_BYTES)
        .map(|t| match t {
            Cow::Owned(copy) => Some(copy),
            Cow::Borrowed(_) => None,
        })
        .map_err(|e| vec![e])?;
    let text = match expanded {
        Some(copy) => {
            // Explicitly: a variable moved in one arm only is otherwise
            // dropped at the end of the function.
            drop(raw);
            Cow::Owned(copy)
        }
        None => raw,
    };
    match format.unwrap_or_else(|| detect(&text)) {
        Format::Json => {
            let decoded = decode_json(&text);
            drop(text);
            let (cfg, errs) = decoded?;
            finish(cfg, errs)
        }
        Format::Uci => load_uci(&text),
    }
}

/// `raw` without a leading UTF-8 byte order mark; owned text loses it in
/// place (no copy of the file).
fn strip_bom(raw: Cow<'_, str>) -> Cow<'_, str> {
    const BOM: char = '\u{feff}';
    match raw {
        Cow::Borrowed(t) => Cow::Borrowed(t.strip_prefix(BOM).unwrap_or(t)),
        Cow::Owned(mut t) => {
            if t.starts_with(BOM) {
                t.replace_range(..BOM.len_utf8(), "");
            }
            Cow::Owned(t)
        }
    }
}

/// Loads UCI text: parsed, mapped to the v1 value, decoded (the VIPs one at
/// a time) and validated; errors are reported in UCI words (section, option
/// and line).
fn load_uci(text: &str) -> Result<Config, Vec<ConfigError>> {
    let file = uci::parse(text).map_err(|e| vec![e.into()])?;
    load_uci_file(file, &|| uci::parse(text).map(|f| uci_map::map(&f)).ok())
}

/// UCI sections handed over as values (rpcd's `uci get`, LuCI's staged
/// configuration) loaded and validated exactly as the file would be: the
/// ubus `validate` method, so the page and a reload can never disagree.
/// Errors name sections and options, without lines.
pub fn load_uci_values(
    values: &Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, Vec<ConfigError>> {
    let expand = |t: &str| env::expand(t, lookup, MAX_FILE_BYTES).map(Cow::into_owned);
    let file = uci::from_values(values, &expand).map_err(|e| vec![e])?;
    let copy = file.clone();
    load_uci_file(file, &|| Some(uci_map::map(&copy)))
        .and_then(|c| build(c).map_err(|e| vec![e]))
        .map_err(cap_errors)
}

/// A parsed UCI file mapped, decoded and validated. `located` maps it again
/// with the UCI place of every v1 path, needed only to report errors.
fn load_uci_file(
    file: uci::UciFile,
    located: &dyn Fn() -> Option<uci_map::Mapped>,
) -> Result<Config, Vec<ConfigError>> {
    // Mapped without places (and the parsed file freed before decoding);
    // mapped again with them when there are errors.
    let mut mapped = uci_map::map_untracked(&file);
    drop(file);
    let mut errs = Errors::default();
    if counts_exceeded(&mapped.value, &mut errs) {
        let tracked = located();
        return Err(errs
            .0
            .into_iter()
            .map(|e| match &tracked {
                Some(t) => t.locate(e),
                None => e,
            })
            .collect());
    }
    let cfg = decode_taking_vips(&mut mapped.value, &mut errs);
    let mapping_errors = std::mem::take(&mut mapped.errors);
    drop(mapped);
    match finish(cfg, errs) {
        Ok(c) if mapping_errors.is_empty() => Ok(c),
        Ok(_) => Err(mapping_errors),
        Err(v1) => {
            let tracked = located();
            // Report UCI input in UCI words: section and option.
            let mut all = mapping_errors;
            // Only the errors that will be listed are translated: each
            // translation searches every UCI location, and a file of 10,000
            // bad sections took seconds per thousand.
            let room = MAX_ERRORS.saturating_sub(all.len());
            all.extend(v1.into_iter().enumerate().map(|(i, e)| match &tracked {
                Some(t) if i < room => t.locate(e),
                _ => e,
            }));
            Err(all)
        }
    }
}

/// Decodes JSON text, not yet validated: the config (None if it failed to
/// decode) and the errors so far. The `vips` list, nearly all of a large
/// config, is decoded one VIP at a time while the text is read: each VIP's
/// JSON value is dropped as soon as its `Vip` is decoded. Holding the whole
/// file as a `serde_json::Value` tree took 6.3 MB for 10,000 `always` VIPs
/// on top of the decoded config (at f3a56cb; `git show
/// 792d6be:docs/performance.md`). Nothing returned
/// borrows `text`, so the caller frees it before validation.
fn decode_json(text: &str) -> Result<(Option<Config>, Errors), Vec<ConfigError>> {
    let invalid = |e: serde_json::Error| {
        vec![ConfigError {
            path: String::new(),
            message: format!("invalid JSON: {e}"),
        }]
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed.deserialize(&mut de).map_err(invalid)?;
    de.end().map_err(invalid)?;
    let mut errs = Errors::default();
    let (value, streamed) = match top {
        Top::Object {
            mut rest,
            vips: Some(VipsIn::Streamed(s)),
        } => {
            let neighbors = rest
                .get("bgp")
                .and_then(|b| b.get("neighbors"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if s.counts.exceeded(neighbors, &mut errs) {
                return Err(errs.0);
            }
            // The rest decodes as before; `vips` is absent there, so the
            // VIPs' errors follow every other decode error, as they did.
            rest.remove("vips");
            (Value::Object(rest), Some(s))
        }
        Top::Object {
            mut rest,
            vips: Some(VipsIn::Other(v)),
        } => {
            rest.insert("vips".to_string(), v);
            (Value::Object(rest), None)
        }
        Top::Object { rest, vips: None } => (Value::Object(rest), None),
        Top::Other(v) => (v, None),
    };
    if streamed.is_none() && counts_exceeded(&value, &mut errs) {
        return Err(errs.0);
    }
    let cfg = match streamed {
        Some(s) => s.decode_with(&value, &mut errs),
        None => Config::decode(&value, "", &mut errs),
    };
    drop(value);
    Ok((cfg, errs))
}

/// Decodes a config value whose `vips` list is taken out and decoded one VIP
/// at a time, each VIP's value freed once decoded (the UCI loader's mapped
/// value: 5 MB for 10,000 VIPs, which would otherwise stay whole beside the
/// decoded list). Errors and result are those of `Config::decode`.
fn decode_taking_vips(value: &mut Value, errs: &mut Errors) -> Option<Config> {
    let list = match value.get_mut("vips") {
        Some(Value::Array(list)) => std::mem::take(list),
        _ => return Config::decode(value, "", errs),
    };
    if let Some(o) = value.as_object_mut() {
        o.remove("vips");
    }
    let mut s = Streamed {
        ok: true,
        ..Streamed::default()
    };
    for (i, v) in list.into_iter().enumerate() {
        s.decode(i, &v);
    }
    s.vips.shrink_to_fit();
    s.decode_with(value, errs)
}

/// The top-level JSON value: an object with `vips` streamed, or anything
/// else (which decoding then reports).
enum Top {
    Object {
        rest: serde_json::Map<String, Value>,
        vips: Option<VipsIn>,
    },
    Other(Value),
}

/// `vips` as read: a list decoded VIP by VIP, or another value kept whole
/// for the decoder to report ("is not a list").
enum VipsIn {
    Streamed(Streamed),
    Other(Value),
}

/// The decoded VIPs, their decode errors (paths `vips[i]…`) and counts.
#[derive(Default)]
struct Streamed {
    vips: Vec<Vip>,
    /// False once one VIP failed to decode.
    ok: bool,
    errs: Errors,
    counts: Counts,
}

impl Streamed {
    /// Decodes `vips[i]`. As `Vec<Vip>`'s decode, every VIP is decoded (for
    /// its errors) after one failed, but the list is then empty.
    fn decode(&mut self, i: usize, v: &Value) {
        match Vip::decode(v, &format!("vips[{i}]"), &mut self.errs) {
            Some(vip) if self.ok => self.vips.push(vip),
            Some(_) => {}
            None => {
                self.ok = false;
                self.vips = Vec::new();
            }
        }
    }

    /// Decodes the rest of the config (`rest` has no `vips`) and adds the
    /// VIPs: their errors follow every other decode error, as they did when
    /// the list was decoded in place (it is the last field).
    fn decode_with(self, rest: &Value, errs: &mut Errors) -> Option<Config> {
        let mut cfg = Config::decode(rest, "", errs);
        for e in self.errs.0 {
            errs.push(e.path, e.message);
        }
        if let (Some(c), true) = (&mut cfg, self.ok) {
            c.vips = self.vips;
        }
        cfg
    }
}

struct TopSeed;

impl<'de> DeserializeSeed<'de> for TopSeed {
    type Value = Top;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

/// Every non-object JSON value, read as `Strict` reads it.
macro_rules! forward_scalars {
    ($wrap:expr) => {
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
            StrictVisitor.visit_bool(b).map($wrap)
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            StrictVisitor.visit_i64(n).map($wrap)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            StrictVisitor.visit_u64(n).map($wrap)
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
            StrictVisitor.visit_f64(n).map($wrap)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            StrictVisitor.visit_str(s).map($wrap)
        }
        fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
            StrictVisitor.visit_string(s).map($wrap)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            StrictVisitor.visit_unit().map($wrap)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            StrictVisitor.visit_none().map($wrap)
        }
    };
}

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    forward_scalars!(Top::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        StrictVisitor.visit_seq(seq).map(Top::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut rest = serde_json::Map::new();
        let mut vips = None;
        while let Some(k) = map.next_key::<String>()? {
            if rest.contains_key(&k) || (k == "vips" && vips.is_some()) {
                return Err(de::Error::custom(format!("duplicate key {}", quote(&k))));
            }
            if k == "vips" {
                vips = Some(map.next_value_seed(VipsSeed)?);
            } else {
                let Strict(v) = map.next_value()?;
                rest.insert(k, v);
            }
        }
        Ok(Top::Object { rest, vips })
    }
}

struct VipsSeed;

impl<'de> DeserializeSeed<'de> for VipsSeed {
    type Value = VipsIn;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<VipsIn, D::Error> {
        d.deserialize_any(VipsVisitor)
    }
}

struct VipsVisitor;

impl<'de> Visitor<'de> for VipsVisitor {
    type Value = VipsIn;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    forward_scalars!(VipsIn::Other);
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<VipsIn, A::Error> {
        StrictVisitor.visit_map(map).map(VipsIn::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<VipsIn, A::Error> {
        let mut s = Streamed {
            ok: true,
            ..Streamed::default()
        };
        while let Some(Strict(v)) = seq.next_element()? {
            let i = s.counts.vips();
            // Past a limit the rest is only read (for JSON errors), not
            // decoded: the config is refused for its size anyway.
            if s.counts.add_vip(&v) {
                s.decode(i, &v);
            }
        }
        s.vips.shrink_to_fit();
        Ok(VipsIn::Streamed(s))
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

fn finish(mut cfg: Option<Config>, mut errs: Errors) -> Result<Config, Vec<ConfigError>> {
    if let Some(c) = &mut cfg {
        validate(c, &mut errs);
    }
    match cfg {
        Some(c) if errs.is_empty() => Ok(c),
        _ => Err(errs.0),
    }
}

/// The http and ping blocks are optional (every option has a default): a
/// check written without one is printed with the block's defaults, as
/// every other default is.
fn with_default_blocks(m: &mut serde_json::Map<String, Value>) {
    use super::schema::{HttpCheck, PingCheck};
    let Some(Value::Array(vips)) = m.get_mut("vips") else {
        return;
    };
    for v in vips.iter_mut() {
        if let Some(Value::Array(list)) = v.get_mut("checks") {
            list.iter_mut().for_each(fill_block);
        }
        if let Some(c) = v.get_mut("check") {
            fill_block(c);
        }
    }
    fn fill_block(c: &mut Value) {
        let Value::Object(o) = c else { return };
        let (block, default) = match o.get("type").and_then(Value::as_str) {
            Some("http" | "https") => ("http", HttpCheck::default().encode()),
            Some("ping") => ("ping", PingCheck::default().encode()),
            _ => return,
        };
        if o.get(block).is_none_or(Value::is_null) {
            o.insert(block.to_string(), default);
        }
    }
}

/// The v1 JSON of a config, as `pathosd convert` prints it: every field,
/// defaults included, top-level keys in the order of the docs. A literal `%{`
/// in a value (written `%%{` in the source) is escaped again, so loading the
/// output gives back the same config instead of expanding it.
pub fn to_json(c: &Config) -> String {
    const ORDER: [&str; 7] = ["schema", "router", "bgp", "api", "logging", "otel", "vips"];
    let Value::Object(mut m) = c.encode() else {
        return String::new();
    };
    with_default_blocks(&mut m);
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
    use serde_json::json;

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
        let c = check_str(src, None, &env).unwrap();
        let args = &c.vips[0]
            .check
            .as_ref()
            .unwrap()
            .exec
            .as_ref()
            .unwrap()
            .args;
        assert_eq!(args, &["%{X}", "%%{X}", "%{Z}"]);
        assert_eq!(check_str(&to_json(&c), None, &|_| None).unwrap(), c);
    }

    #[test]
    fn converted_output_starts_with_the_schema() {
        let c = check_str(
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

    /// The loader before streaming: the whole file as one value, then the
    /// count limits, decode and validation.
    fn whole_value(text: &str) -> Result<Config, Vec<ConfigError>> {
        let value = serde_json::from_str::<Strict>(text)
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

    #[test]
    fn streamed_vips_give_what_the_whole_value_gave() {
        let head = r#""schema": "v1", "router": {"asn": 1, "router_id": "10.0.0.1"},
            "bgp": {"neighbors": [{"name": "n", "address": "10.0.0.2", "peer_asn": 2}]}"#;
        let vip = |i: usize, extra: &str| {
            format!(
                r#"{{"name": "v{i}", "prefix": "10.0.{}.{}/32", "always": true{extra}}}"#,
                i / 256,
                i % 256
            )
        };
        let many = |n: usize| (0..n).map(|i| vip(i, "")).collect::<Vec<_>>().join(",");
        let cases = [
            format!("{{{head}, \"vips\": [{}]}}", many(3)),
            // Errors before, inside and after the VIPs, and a VIP after one
            // that failed to decode (its errors still count).
            format!(
                r#"{{"zz": 1, {head}, "vips": [{}, 7, {}, {}], "api": {{"listen": "x"}}}}"#,
                vip(0, r#", "colour": 1"#),
                vip(2, r#", "prefix": "10.0.0.300/32""#),
                vip(3, r#", "name": """#)
            ),
            format!(
                r#"{{"vips": [{}], {head}, "logging": {{"level": "loud"}}}}"#,
                vip(0, r#", "check": {"type": "tcp"}"#)
            ),
            format!(r#"{{{head}, "vips": {{"a": 1}}}}"#),
            format!(r#"{{{head}, "vips": "none"}}"#),
            format!(r#"{{{head}, "vips": []}}"#),
            format!(r#"{{{head}}}"#),
            "[1, 2]".to_string(),
            "\"v1\"".to_string(),
            format!(r#"{{{head}, "vips": [], "vips": []}}"#),
            format!(r#"{{{head}, "vips": [{}]}} x"#, many(1)),
            format!(r#"{{{head}, "vips": [{}, {{"a": 1, "a": 2}}]}}"#, many(1)),
            // The count limits: too many VIPs, checks on one VIP, checks in all.
            format!("{{{head}, \"vips\": [{}]}}", many(MAX_VIPS_TEST + 1)),
            format!(
                "{{{head}, \"vips\": [{}, {}]}}",
                vip(0, ""),
                vip(1, &format!(", \"checks\": [{}]", vec!["{}"; 65].join(",")))
            ),
            format!(
                "{{{head}, \"vips\": [{}]}}",
                (0..5001)
                    .map(|i| vip(i, ", \"checks\": [{}, {}]"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ];
        for text in &cases {
            let short = &text[..text.len().min(120)];
            match (
                check_str(text, Some(Format::Json), &|_| None),
                whole_value(text),
            ) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{short}"),
                (Err(a), Err(b)) => {
                    let b = cap_errors(b);
                    assert_eq!(a, b, "{short}");
                }
                (a, b) => panic!("{short}: {:?} vs {:?}", a.err(), b.err()),
            }
        }
        // The limits are what the last three cases hit.
        let first = |t: &String| load_str(t, None, &|_| None).unwrap_err()[0].to_string();
        assert_eq!(
            first(&cases[12]),
            "vips: 10001 VIPs, more than the limit of 10000"
        );
        assert_eq!(
            first(&cases[13]),
            "vips[1].checks: 65 checks, more than the limit of 64"
        );
        assert_eq!(
            first(&cases[14]),
            "vips: 10002 checks in all VIPs, more than the limit of 10000"
        );
    }

    /// The UCI loader before it took the VIPs out one by one.
    fn whole_uci(text: &str) -> Result<Config, Vec<ConfigError>> {
        let file = uci::parse(text).map_err(|e| vec![e.into()])?;
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
                let mut all = mapped.errors.clone();
                all.extend(v1.into_iter().map(|e| mapped.locate(e)));
                Err(all)
            }
        }
    }

    #[test]
    fn uci_vips_taken_one_by_one_give_what_the_whole_value_gave() {
        let main = "package pathosd\n\nconfig pathosd 'main'\n\toption asn '65001'\n\
                    \toption router_id '10.0.0.1'\n\nconfig neighbor 'n'\n\
                    \toption address '10.0.0.2'\n\toption peer_asn '65000'\n\n";
        let vip = |name: &str, prefix: &str| {
            format!("config vip '{name}'\n\toption prefix '{prefix}'\n\toption always '1'\n\n")
        };
        let cases = [
            format!(
                "{main}{}{}",
                vip("a", "10.0.0.9/32"),
                vip("b", "10.0.0.10/32")
            ),
            format!(
                "{}{}{}{}",
                main.replace("'65001'", "'x'"),
                vip("a", "10.0.0.300/32"),
                vip("b", "10.0.0.10/32"),
                vip("c", "10.0.0.10/32")
            ),
            format!("{main}config vip 'a'\n\toption always '1'\n\toption colour '1'\n\n"),
            main.to_string(),
        ];
        for text in &cases {
            let f = uci::parse(text).unwrap();
            let (tracked, untracked) = (uci_map::map(&f), uci_map::map_untracked(&f));
            assert_eq!(tracked.value, untracked.value);
            assert_eq!(tracked.errors, untracked.errors);
            match (
                check_str(text, Some(Format::Uci), &|_| None),
                whole_uci(text),
            ) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
                (a, b) => panic!("{text}: {:?} vs {:?}", a.err(), b.err()),
            }
        }
        assert_eq!(load_str(&cases[0], None, &|_| None).unwrap().vips.len(), 2);
        assert!(load_str(&cases[1], None, &|_| None).unwrap_err().len() >= 3);
    }

    /// rpcd's `uci get` values of a file: what LuCI stages and the ubus
    /// `validate` method is given.
    fn values_of(text: &str) -> Value {
        let f = uci::parse(text).unwrap();
        let mut m = serde_json::Map::new();
        for (i, s) in f.sections.iter().enumerate() {
            let mut o = serde_json::Map::new();
            let name = s.name.clone().unwrap_or_else(|| format!("cfg{i:06x}"));
            o.insert(".type".into(), s.kind.clone().into());
            o.insert(".name".into(), name.clone().into());
            o.insert(".anonymous".into(), s.name.is_none().into());
            o.insert(".index".into(), i.into());
            for opt in &s.options {
                let v = match &opt.value {
                    uci::UciValue::Single(v) => Value::from(v.clone()),
                    uci::UciValue::List(l) => {
                        l.iter().map(|(v, _)| Value::from(v.clone())).collect()
                    }
                };
                o.insert(opt.name.clone(), v);
            }
            m.insert(name, Value::Object(o));
        }
        Value::Object(m)
    }

    #[test]
    fn uci_values_load_as_the_file_does_and_errors_have_no_lines() {
        let text = "config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.0.0.1'\n\n\
                    config neighbor 'n'\n\toption address '10.0.0.2'\n\toption peer_asn '65000'\n\n\
                    config vip 'web'\n\toption prefix '10.0.0.9/32'\n\n\
                    config check\n\toption vip 'web'\n\toption type 'tcp'\n\toption port '%{PORT}'\n\
                    \tlist community '65001:1'\n\n\
                    config vip 'b'\n\toption prefix '10.0.0.10/32'\n\toption always '1'\n";
        let env = |k: &str| (k == "PORT").then(|| "8081".to_string());
        // `community` is no check option: the file and the values say so alike.
        let from_file = load_str(text, Some(Format::Uci), &env).unwrap_err();
        let from_values = load_uci_values(&values_of(text), &env).unwrap_err();
        assert_eq!(from_file.len(), 1);
        assert!(from_file[0]
            .path
            .starts_with("@check[0] option community (line "));
        assert_eq!(from_values[0].path, "@check[0] option community");
        assert_eq!(from_values[0].message, from_file[0].message);

        let ok = text.replace("\tlist community '65001:1'\n", "");
        let a = load_str(&ok, Some(Format::Uci), &env).unwrap();
        let b = load_uci_values(&values_of(&ok), &env).unwrap();
        assert_eq!(a, b);
        assert_eq!(&*b.vips[0].name, "web");

        // The daemon's own rules, named by section and option.
        let bad = ok.replace("10.0.0.9/32", "10.10.1.5/24");
        assert_eq!(
            load_uci_values(&values_of(&bad), &env).unwrap_err()[0].to_string(),
            "vip 'web' option prefix: \"10.10.1.5/24\" has host bits set: \
             write 10.10.1.5/32 for the address or 10.10.1.0/24 for the network"
        );
        // Order comes from .index, not from the object's key order.
        let v = values_of(&ok);
        let mut reversed = serde_json::Map::new();
        for (k, s) in v.as_object().unwrap().iter().rev() {
            reversed.insert(k.clone(), s.clone());
        }
        assert_eq!(load_uci_values(&Value::Object(reversed), &env).unwrap(), b);
        // Not sections: one error saying what was expected.
        for junk in [
            json!([]),
            json!({"x": 1}),
            json!({"x": {".name": "x"}}),
            json!({"x": {".type": "vip", "prefix": 5}}),
        ] {
            let e = load_uci_values(&junk, &env).unwrap_err();
            assert_eq!(e.len(), 1, "{junk}: {e:?}");
        }
        assert!(
            load_uci_values(&json!({"m": {".type": "pathosd", "asn": "%{NOPE}"}}), &env)
                .unwrap_err()[0]
                .message
                .contains("NOPE")
        );
    }

    const MAX_VIPS_TEST: usize = super::super::validate::MAX_VIPS;

    #[test]
    fn missing_variables_stop_before_parsing() {
        let e = load_str("{\"x\": \"%{B}%{A}\"}", None, &|_| None).unwrap_err();
        assert_eq!(
            e[0].message,
            "expanding environment placeholders: missing environment variables for placeholders: A, B"
        );
    }
}
