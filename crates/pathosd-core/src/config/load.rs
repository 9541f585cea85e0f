//! Loading pipeline, as pathosd's: read the file, expand `%{VAR}` placeholders
//! on the raw text, parse (JSON, or UCI mapped to the same v1 value), decode,
//! then validate. Every problem found along the way is returned together.

use super::env;
use super::field::{quote, ConfigError, Errors, Field};
use super::run::RunConfig;
use super::schema::{Config, Vip};
use super::uci;
use super::uci_map;
use super::validate::{counts_exceeded, validate, Counts};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::Cell;
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

/// Most values (objects, lists and scalars, at any depth) one VIP of a
/// JSON file, or all the rest of the file together, may hold: while a
/// file is read, the JSON value of one VIP (or of the rest) is all the
/// loader holds as a value tree. A VIP of 64 checks with ten options each
/// has about 1,400.
pub(crate) const MAX_UNIT_VALUES: usize = super::uci_map::MAX_UNIT_VALUES;

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
    let mut written = None;
    load_all(Cow::Borrowed(raw), format, lookup, Some(&mut written))?;
    // A load that passed validated a decoded config, kept here.
    written.ok_or_else(|| {
        vec![ConfigError {
            path: String::new(),
            message: "internal error: the config passed but was not kept".to_string(),
        }]
    })
}

/// `load_str` on text the loader may own: owned text is freed as soon as
/// nothing needs it any more (see [`load_all`]).
fn load_text(
    raw: Cow<'_, str>,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, Vec<ConfigError>> {
    load_all(raw, format, lookup, None)
}

/// Expands, parses, decodes and validates `raw`. Text owned here (the
/// file read by `load_config`, or its expansion) is freed as soon as it is
/// not needed: the file's text once expanded into a copy, the JSON text
/// once the config is decoded, before validation. The decoded config
/// borrows nothing of it, and JSON errors carry v1 paths, not text. UCI
/// keeps its text until the end: an error is located by reading its
/// sections again. With `keep`, a copy of the decoded config is left there
/// (what `pathosd convert` prints).
fn load_all(
    raw: Cow<'_, str>,
    format: Option<Format>,
    lookup: &dyn Fn(&str) -> Option<String>,
    keep: Option<&mut Option<Config>>,
) -> Result<RunConfig, Vec<ConfigError>> {
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
            finish(cfg, errs, &|e| e, keep)
        }
        Format::Uci => load_uci(&text, true, keep),
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

/// Loads UCI text, a section at a time: the text is indexed (every
/// statement checked), then the pathosd and neighbor sections are mapped to
/// their v1 value and decoded, then each VIP with its checks, its value
/// freed once decoded; then everything is validated. Errors are reported
/// in UCI words (section, option and, with `lines`, line): UCI's own as
/// they are found, the decoder's and validator's v1 paths translated by
/// reading their sections again.
fn load_uci(
    text: &str,
    lines: bool,
    keep: Option<&mut Option<Config>>,
) -> Result<RunConfig, Vec<ConfigError>> {
    let mut errs = Errors::default();
    let src = uci_map::Source::index(text, lines, &mut errs).map_err(|e| {
        let mut e = ConfigError::from(e);
        if !lines {
            e.path.clear();
        }
        vec![e]
    })?;
    if src.over_limit {
        return Err(errs.into_vec());
    }
    let plan = uci_map::plan(&src, &mut errs);
    let locator = uci_map::Locator {
        src: &src,
        plan: &plan,
    };
    if plan.over_limit {
        return Err(errs.into_vec());
    }
    let mut cfg = uci_map::rest_value(&src, &plan, &mut errs)
        .and_then(|rest| Config::decode(&rest, "", &mut errs));
    // The plan counted the VIPs, within the limit (checked above).
    let mut s = Streamed::with_capacity(plan.vip_count());
    for k in 0..plan.vip_count() {
        if errs.stopped() {
            s.ok = false;
            break;
        }
        match uci_map::vip_value(&src, &plan, k, &mut errs) {
            Some(v) => s.decode(k, &v, &mut errs),
            None => s.fail(),
        }
    }
    if let (Some(c), true) = (&mut cfg, s.ok) {
        s.vips.shrink_to_fit();
        c.vips = s.vips;
    }
    finish(cfg, errs, &|e| locator.locate(e), keep)
}

/// UCI sections handed over as values (rpcd's `uci get`, LuCI's staged
/// configuration) loaded and validated exactly as the file would be: the
/// ubus `validate` method, so the page and a reload can never disagree.
/// They are written as the file `uci commit` would write and read as one.
/// Errors name sections and options, without lines.
pub fn load_uci_values(
    values: &Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<RunConfig, Vec<ConfigError>> {
    let expand = |t: &str| env::expand(t, lookup, MAX_FILE_BYTES).map(Cow::into_owned);
    let file = uci::from_values(values, &expand).map_err(|e| vec![e])?;
    let text = uci::export(&file);
    drop(file);
    load_uci(&text, false, None)
}

/// Decodes JSON text, not yet validated: the config (None if it failed to
/// decode) and the errors so far. The `vips` list, nearly all of a large
/// config, is decoded one VIP at a time while the text is read: each VIP's
/// JSON value is dropped as soon as its `Vip` is decoded. Holding the whole
/// file as a `serde_json::Value` tree took 6.3 MB for 10,000 `always` VIPs
/// on top of the decoded config (measured; the figure is in the history
/// of docs/performance.md). No value tree is larger than
/// MAX_UNIT_VALUES. Nothing returned borrows `text`, so the caller frees it
/// before validation.
fn decode_json(text: &str) -> Result<(Option<Config>, Errors), Vec<ConfigError>> {
    let budget = Budget::new();
    let invalid = |e: serde_json::Error| {
        let message = if budget.hit.get() {
            // Not bad JSON: too much of it in one place.
            e.to_string()
        } else {
            format!("invalid JSON: {e}")
        };
        vec![ConfigError {
            path: String::new(),
            message,
        }]
    };
    // from_slice, as every JSON reader here: one copy of serde_json's
    // parser on flash (its &str reader is a second, ~12 KB); the text is
    // UTF-8 already, so its check never fails.
    let mut de = serde_json::Deserializer::from_slice(text.as_bytes());
    let top = TopSeed(&budget).deserialize(&mut de).map_err(invalid)?;
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
                return Err(errs.into_vec());
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
        return Err(errs.into_vec());
    }
    let cfg = match streamed {
        Some(s) => s.decode_with(&value, &mut errs),
        None => Config::decode(&value, "", &mut errs),
    };
    drop(value);
    Ok((cfg, errs))
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
struct Streamed {
    vips: Vec<Vip>,
    /// False once one VIP failed to decode.
    ok: bool,
    errs: Errors,
    counts: Counts,
}

impl Streamed {
    fn new() -> Streamed {
        Streamed::with_capacity(0)
    }

    /// Room for `n` VIPs from the start: the list is never grown by
    /// doubling and shrunk again, which holds both blocks at once at the
    /// load's peak.
    fn with_capacity(n: usize) -> Streamed {
        Streamed {
            vips: Vec::with_capacity(n),
            ok: true,
            errs: Errors::default(),
            counts: Counts::default(),
        }
    }

    /// Decodes `vips[i]` with its errors in `errs`. As `Vec<Vip>`'s decode,
    /// every VIP is decoded (for its errors) after one failed, but the list
    /// is then empty.
    fn decode(&mut self, i: usize, v: &Value, errs: &mut Errors) {
        match Vip::decode(v, &format!("vips[{i}]"), errs) {
            Some(vip) if self.ok => self.vips.push(vip),
            Some(_) => {}
            None => self.fail(),
        }
    }

    /// A VIP that could not be read: no list of VIPs then.
    fn fail(&mut self) {
        self.ok = false;
        self.vips = Vec::new();
    }

    /// Decodes the rest of the config (`rest` has no `vips`) and adds the
    /// VIPs: their errors follow every other decode error, as they did when
    /// the list was decoded in place (it is the last field).
    fn decode_with(self, rest: &Value, errs: &mut Errors) -> Option<Config> {
        let mut cfg = Config::decode(rest, "", errs);
        errs.absorb(self.errs);
        if let (Some(c), true) = (&mut cfg, self.ok) {
            c.vips = self.vips;
        }
        cfg
    }
}

/// The values a JSON value tree may still take, counted while it is read:
/// MAX_UNIT_VALUES for each VIP and for the rest of the file.
struct Budget {
    left: Cell<usize>,
    /// The VIP being read, or None for the rest of the file.
    vip: Cell<Option<usize>>,
    /// Whether reading stopped because a budget ran out.
    hit: Cell<bool>,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            left: Cell::new(MAX_UNIT_VALUES),
            vip: Cell::new(None),
            hit: Cell::new(false),
        }
    }

    /// Takes one value; an error once the budget has run out.
    fn take<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(n) => {
                self.left.set(n);
                Ok(())
            }
            None => {
                self.hit.set(true);
                Err(E::custom(match self.vip.get() {
                    Some(i) => format!(
                        "vips[{i}] holds more than the limit of {MAX_UNIT_VALUES} values"
                    ),
                    None => format!(
                        "the config outside vips holds more than the limit of {MAX_UNIT_VALUES} values"
                    ),
                }))
            }
        }
    }
}

struct TopSeed<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Top;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_any(TopVisitor(self.0))
    }
}

struct TopVisitor<'b>(&'b Budget);

/// Every non-object JSON value, read as `Strict` reads it.
macro_rules! forward_scalars {
    ($wrap:expr) => {
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
            Strict(self.0).visit_bool(b).map($wrap)
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            Strict(self.0).visit_i64(n).map($wrap)
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            Strict(self.0).visit_u64(n).map($wrap)
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
            Strict(self.0).visit_f64(n).map($wrap)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            Strict(self.0).visit_str(s).map($wrap)
        }
        fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
            Strict(self.0).visit_string(s).map($wrap)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Strict(self.0).visit_unit().map($wrap)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Strict(self.0).visit_none().map($wrap)
        }
    };
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = Top;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    forward_scalars!(Top::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        Strict(self.0).visit_seq(seq).map(Top::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut rest = serde_json::Map::new();
        let mut vips = None;
        while let Some(k) = map.next_key::<String>()? {
            if rest.contains_key(&k) || (k == "vips" && vips.is_some()) {
                return Err(de::Error::custom(format!("duplicate key {}", quote(&k))));
            }
            if k == "vips" {
                vips = Some(map.next_value_seed(VipsSeed(self.0))?);
            } else {
                let v = map.next_value_seed(Strict(self.0))?;
                rest.insert(k, v);
            }
        }
        Ok(Top::Object { rest, vips })
    }
}

struct VipsSeed<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for VipsSeed<'_> {
    type Value = VipsIn;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<VipsIn, D::Error> {
        d.deserialize_any(VipsVisitor(self.0))
    }
}

struct VipsVisitor<'b>(&'b Budget);

impl<'de> Visitor<'de> for VipsVisitor<'_> {
    type Value = VipsIn;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    forward_scalars!(VipsIn::Other);
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<VipsIn, A::Error> {
        Strict(self.0).visit_map(map).map(VipsIn::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<VipsIn, A::Error> {
        let b = self.0;
        let mut s = Streamed::new();
        // Each VIP has a budget of its own; the rest's is kept for after.
        let rest_left = b.left.get();
        loop {
            let i = s.counts.vips();
            b.vip.set(Some(i));
            b.left.set(MAX_UNIT_VALUES);
            let Some(v) = seq.next_element_seed(Strict(b))? else {
                break;
            };
            // Past a limit the rest is only read (for JSON errors), not
            // decoded: the config is refused for its size anyway.
            if s.counts.add_vip(&v) && !s.errs.stopped() {
                let mut errs = std::mem::take(&mut s.errs);
                s.decode(i, &v, &mut errs);
                s.errs = errs;
            }
        }
        b.vip.set(None);
        b.left.set(rest_left);
        s.vips.shrink_to_fit();
        Ok(VipsIn::Streamed(s))
    }
}

/// Reads a JSON value with one rule serde_json's `Value` lacks: a key given
/// twice in one object is an error (serde_json keeps the last silently, and a
/// pasted block that shadows another is as silent a mistake as a typo). Each
/// value (object, list or scalar) is taken from the budget.
#[derive(Clone, Copy)]
struct Strict<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::from(n))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::from(n))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        self.0.take()?;
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::String(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.0.take()?;
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.take()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.take()?;
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!("duplicate key {}", quote(&k))));
            }
            let v = map.next_value_seed(self)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// Validates a decoded config into its run config; the errors of both
/// steps, each translated by `locate` (UCI names its places), or the run
/// config. With `keep`, a copy of the decoded config is left there.
fn finish(
    cfg: Option<Config>,
    mut errs: Errors,
    locate: &dyn Fn(ConfigError) -> ConfigError,
    keep: Option<&mut Option<Config>>,
) -> Result<RunConfig, Vec<ConfigError>> {
    let run = match cfg {
        Some(c) if !errs.stopped() => {
            if let Some(slot) = keep {
                // Through its JSON value, whose code `pathosd convert` has
                // anyway: a `Clone` of every schema type, for this one
                // copy, would add its code to the binary.
                *slot = Config::decode(&c.encode(), "", &mut Errors::default());
            }
            validate(c, &mut errs)
        }
        _ => None,
    };
    match run {
        Some(run) if errs.is_empty() => Ok(run),
        _ => Err(errs.into_vec_located(locate)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::convert::to_json;
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

    /// The loader before streaming: the whole file as one value (with no
    /// limit on its size), then the count limits, decode and validation.
    fn whole_value(text: &str) -> Result<RunConfig, Vec<ConfigError>> {
        let budget = Budget::new();
        budget.left.set(usize::MAX);
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Strict(&budget)
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v))
            .map_err(|e| {
                vec![ConfigError {
                    path: String::new(),
                    message: format!("invalid JSON: {e}"),
                }]
            })?;
        let mut errs = Errors::default();
        if counts_exceeded(&value, &mut errs) {
            return Err(errs.into_vec());
        }
        let cfg = Config::decode(&value, "", &mut errs);
        finish(cfg, errs, &|e| e, None)
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
                load_str(text, Some(Format::Json), &|_| None),
                whole_value(text),
            ) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{short}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{short}"),
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

    /// Errors about a UCI file say what the file writes (`option always
    /// '1'`), not the JSON it is mapped to (`always: true`); a default
    /// route is refused unless the VIP allows it, and an octet with a
    /// leading zero is named.
    #[test]
    fn uci_errors_are_in_uci_words() {
        let text = "package pathosd\n\nconfig pathosd 'main'\n\toption asn '65001'\n\
                    \toption router_id '10.0.0.1'\n\toption local_address_ipv6 '2001:db8::1'\n\n\
                    config neighbor 'n'\n\toption address '10.0.0.2'\n\toption peer_asn '65000'\n\
                    \toption multihop_ttl '5'\n\n\
                    config vip 'nocheck'\n\toption prefix '10.0.0.9/32'\n\n\
                    config vip 'both'\n\toption prefix '10.0.0.10/32'\n\toption always '1'\n\n\
                    config check\n\toption vip 'both'\n\toption type 'tcp'\n\toption port '80'\n\n\
                    config vip 'default'\n\toption prefix '0.0.0.0/0'\n\toption always '1'\n\n\
                    config vip 'default6'\n\toption prefix '::/0'\n\toption always '1'\n\
                    \toption allow_default_route '1'\n\n\
                    config vip 'octal'\n\toption prefix '010.10.1.1/32'\n\toption always '1'\n";
        let errs: Vec<String> = check_str(text, Some(Format::Uci), &|_| None)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "vip 'octal' option prefix (line 35): \"010.10.1.1/32\" is not a valid prefix (\"010.10.1.1\" has a leading zero in \"010\", which some tools read as octal: write 10.10.1.1)",
                "neighbor 'n' option multihop_ttl (line 11): 5 has no effect when option enable_multihop is '0'",
                "vip 'nocheck' (line 13): a check section with option vip naming this vip is required (or option always '1')",
                "@check[0] (line 20): not allowed with option always '1' (the VIP is announced without checks)",
                "vip 'default' option prefix (line 26): 0.0.0.0/0 is a default route: announced, it draws all of the peers' traffic to this router (set option allow_default_route '1' if that is meant)",
            ]
        );
        // JSON keeps its own words.
        let json = r#"{"schema": "v1", "router": {"asn": 65001, "router_id": "10.0.0.1"},
            "bgp": {"neighbors": [{"name": "n", "address": "10.0.0.2", "peer_asn": 65000}]},
            "vips": [{"name": "d", "prefix": "0.0.0.0/0", "always": true}]}"#;
        assert_eq!(
            check_str(json, Some(Format::Json), &|_| None).unwrap_err()[0].to_string(),
            "vips[0].prefix: 0.0.0.0/0 is a default route: announced, it draws all of the peers' traffic to this router (set allow_default_route: true if that is meant)"
        );
        let allowed = json.replace(
            r#""always": true"#,
            r#""always": true, "allow_default_route": true"#,
        );
        assert!(check_str(&allowed, Some(Format::Json), &|_| None).is_ok());
    }

    /// A UCI file loads as the same config written in JSON does, one VIP
    /// at a time, and its errors name sections, options and lines, also
    /// inside messages ("also …").
    #[test]
    fn uci_loads_as_json_and_names_its_places() {
        let main = "package pathosd\n\nconfig pathosd 'main'\n\toption asn '65001'\n\
                    \toption router_id '10.0.0.1'\n\nconfig neighbor 'n'\n\
                    \toption address '10.0.0.2'\n\toption peer_asn '65000'\n\n";
        let vip = |name: &str, prefix: &str| {
            format!("config vip '{name}'\n\toption prefix '{prefix}'\n\toption always '1'\n\n")
        };
        let ok = format!(
            "{main}{}{}config vip 'c'\n\toption prefix '10.0.0.11/32'\n\toption fail_action 'withdraw'\n\
             \tlist community '65001:1'\n\toption community '65001:2'\n\tlist community '65001:3'\n\n\
             config check\n\toption vip 'c'\n\toption type 'tcp'\n\toption port '80'\n\n\
             config check 'two'\n\toption vip 'c'\n\toption type 'http'\n\tlist header 'A: b'\n",
            vip("a", "10.0.0.9/32"),
            vip("b", "10.0.0.10/32")
        );
        let json = r#"{"schema": "v1", "router": {"asn": 65001, "router_id": "10.0.0.1"},
            "bgp": {"neighbors": [{"name": "n", "address": "10.0.0.2", "peer_asn": 65000}]},
            "vips": [{"name": "a", "prefix": "10.0.0.9/32", "always": true},
                     {"name": "b", "prefix": "10.0.0.10/32", "always": true},
                     {"name": "c", "prefix": "10.0.0.11/32", "policy": {"fail_action": "withdraw",
                      "announce": {"communities": ["65001:2", "65001:3"]}},
                      "checks": [{"type": "tcp", "tcp": {"port": 80}},
                                 {"name": "two", "type": "http", "http": {"headers": {"A": "b"}}}]}]}"#;
        assert_eq!(
            check_str(&ok, Some(Format::Uci), &|_| None).unwrap(),
            check_str(json, Some(Format::Json), &|_| None).unwrap()
        );
        let bad = format!(
            "{}{}{}{}config vip 'd'\n\toption always '1'\n\toption colour '1'\n",
            main.replace("'65001'", "'x'"),
            vip("a", "10.0.0.300/32"),
            vip("b", "10.0.0.10/32"),
            vip("c", "10.0.0.10/32")
        );
        let errs: Vec<String> = check_str(&bad, Some(Format::Uci), &|_| None)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "pathosd 'main' option asn (line 4): \"x\" is not an integer in 0..=4294967295",
                "vip 'a' option prefix (line 12): \"10.0.0.300/32\" is not a valid prefix (\"10.0.0.300\" is not an IP address)",
                "vip 'd' option colour (line 25): unknown option for a vip section",
                "vip 'd' (line 23) option prefix: required",
                "vip 'c' option prefix (line 20): duplicate prefix 10.0.0.10/32 (also vip 'b' option prefix (line 16))",
            ]
        );
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
