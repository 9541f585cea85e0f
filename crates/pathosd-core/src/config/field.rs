//! A small typed decoder over `serde_json::Value` that, unlike serde's derive,
//! keeps going after the first mistake: every unknown key, wrong type and bad
//! value is collected with its field path (`vips[2].checks[1].timeout`). The
//! same declarations also produce the v1 JSON (for `pathosd convert`) and the
//! JSON Schema, so the schema can never drift from the types.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::ops::Bound;

/// One config problem: where, and what is wrong (the message names the bad value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Most errors listed for one file; the rest are counted. A generated file
/// with a systematic mistake must not write a hundred thousand lines to the
/// terminal or, on reload, to the router's log.
pub const MAX_ERRORS: usize = 100;

/// Errors recorded before checking stops. Past MAX_ERRORS an error costs
/// only its path (kept for the one-error-per-path rule and for the rules
/// that stay quiet where their input already failed), so the paths of a
/// file with a mistake in every line would otherwise grow with the file:
/// 300,000 of them took tens of MB. What a file with more errors than this
/// holds is of no use to anyone reading the list.
pub const MAX_RECORDED: usize = 10_000;

/// Most list items (communities, headers, arguments, DNS names, …) decoded
/// from one file, all lists together. A decoded item can take more memory
/// than its text (an empty string is 24 bytes, a header 90), so this bounds
/// what a file within the 4 MiB limit can make the loader hold.
pub const MAX_LIST_ITEMS: usize = 65_536;

/// Collects errors. A second error at a path that already has one is dropped:
/// a value that failed to decode must not also be reported as "required".
///
/// The first [`MAX_ERRORS`] are kept whole (the `.0` list); the rest are
/// counted up to [`MAX_RECORDED`], when checking stops ([`Errors::stopped`]),
/// and [`Errors::into_vec`] adds one line saying how many there were. The
/// memory of any number of mistakes is bounded.
///
/// The paths of the errors are indexed, so that a file with a huge number
/// of mistakes is checked in n log n, not n² (a linear search per error
/// took minutes). The index is a map of path to nothing (an empty
/// `String`, which allocates nothing) of the type the configuration's
/// `headers` and `metadata` already have, not a `BTreeSet<String>`: the
/// B-tree's code is then compiled once for both (≈ 4 KB of mips code).
#[derive(Debug, Default, Clone)]
pub struct Errors(pub Vec<ConfigError>, Recorded);

/// What [`Errors`] keeps besides the listed errors.
#[derive(Debug, Default, Clone)]
pub struct Recorded {
    paths: BTreeMap<String, String>,
    /// Errors recorded, listed or not (at most MAX_RECORDED).
    count: usize,
    /// Which listed errors already name their place as written (UCI's own
    /// errors); the loader of a UCI file translates the others' v1 paths.
    as_written: Vec<bool>,
    /// List items decoded so far (see MAX_LIST_ITEMS).
    list_items: usize,
}

impl Errors {
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let mut message = Some(message);
        self.record(
            path.into(),
            &mut || message.take().map(Into::into).unwrap_or_default(),
            false,
        );
    }

    /// `push` of a formatted message, formatted here: the caller passes
    /// the arguments, not a `String` it made and must drop (a free and an
    /// unwind cleanup at each of validation's error sites). Past the listed
    /// errors the message is not formatted at all.
    pub fn push_fmt(&mut self, path: impl Into<String>, message: std::fmt::Arguments<'_>) {
        self.record(path.into(), &mut || message.to_string(), false);
    }

    /// An error whose path already names the place as the file writes it
    /// (a UCI section, option and line), which is not translated again.
    /// Both are formatted only if the error is recorded.
    pub(crate) fn push_as_written(
        &mut self,
        path: std::fmt::Arguments<'_>,
        message: std::fmt::Arguments<'_>,
    ) {
        if !self.stopped() {
            self.record(path.to_string(), &mut || message.to_string(), true);
        }
    }

    /// Records one error; `message` is made only for a listed one.
    #[inline(never)]
    fn record(&mut self, path: String, message: &mut dyn FnMut() -> String, as_written: bool) {
        let r = &mut self.1;
        if r.count >= MAX_RECORDED {
            return;
        }
        // `insert`, not `entry`: the map's `insert` is already compiled
        // for the headers; a path seen before gets its "" replaced by "".
        if !path.is_empty() && r.paths.insert(path.clone(), String::new()).is_some() {
            return;
        }
        r.count += 1;
        if self.0.len() < MAX_ERRORS {
            self.0.push(ConfigError {
                path,
                message: message(),
            });
            r.as_written.push(as_written);
        }
    }

    pub fn has(&self, path: &str) -> bool {
        if path.is_empty() {
            return self.0.iter().any(|e| e.path.is_empty());
        }
        self.1.paths.contains_key(path)
    }

    /// Whether there is an error at `path` or anywhere below it.
    pub(crate) fn has_under(&self, path: &str) -> bool {
        if path.is_empty() {
            return self
                .0
                .iter()
                .any(|e| e.path.is_empty() || e.path.starts_with(['.', '[']));
        }
        // The paths starting with `path` are contiguous in the ordered set;
        // among them, only `path` itself and `path.…` / `path[…` count.
        self.1
            .paths
            .range::<str, _>((Bound::Included(path), Bound::Unbounded))
            .map(|(p, _)| p)
            .take_while(|p| p.starts_with(path))
            .any(|p| {
                let r = &p[path.len()..];
                r.is_empty() || r.starts_with('.') || r.starts_with('[')
            })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether so many errors were recorded that checking stops: later
    /// errors are not recorded, and the loaders skip the rest of the work.
    pub fn stopped(&self) -> bool {
        self.1.count >= MAX_RECORDED
    }

    /// Counts `n` more decoded list items; false (and an error at `path`,
    /// once) when that passes MAX_LIST_ITEMS: the list is then not decoded.
    pub(crate) fn take_list_items(&mut self, n: usize, path: &str) -> bool {
        let before = self.1.list_items;
        self.1.list_items = before.saturating_add(n);
        if self.1.list_items <= MAX_LIST_ITEMS {
            return true;
        }
        if before <= MAX_LIST_ITEMS {
            self.push_fmt(
                path,
                format_args!(
                    "the lists hold more than the limit of {MAX_LIST_ITEMS} items in all (communities, headers, arguments, …)"
                ),
            );
        }
        false
    }

    /// Adds the errors of `other` after these, as if they had been pushed
    /// here in order: the listed ones again (one per path), the others
    /// counted with their paths.
    pub(crate) fn absorb(&mut self, other: Errors) {
        let Errors(list, r) = other;
        let listed = list.len();
        let listed_with_path = list.iter().filter(|e| !e.path.is_empty()).count();
        for (e, written) in list
            .into_iter()
            .zip(r.as_written.iter().chain(std::iter::repeat(&false)))
        {
            let mut message = Some(e.message);
            self.record(e.path, &mut || message.take().unwrap_or_default(), *written);
        }
        let unlisted = r.count - listed;
        let unlisted_with_path = r.paths.len().saturating_sub(listed_with_path);
        for (p, _) in r.paths {
            if self.1.count >= MAX_RECORDED {
                break;
            }
            // `insert`, as in `record`: the map's other calls are compiled
            // for the headers already.
            if self.1.paths.insert(p, String::new()).is_none() {
                self.1.count += 1;
            }
        }
        let without_path = unlisted.saturating_sub(unlisted_with_path);
        self.1.count = (self.1.count + without_path).min(MAX_RECORDED);
        self.1.list_items = self.1.list_items.saturating_add(r.list_items);
    }

    /// The listed errors, each translated by `locate` unless it already
    /// names its place as written, then one line saying how many more
    /// there were, if any.
    pub fn into_vec_located(self, locate: &dyn Fn(ConfigError) -> ConfigError) -> Vec<ConfigError> {
        let Errors(list, r) = self;
        let listed = list.len();
        let mut out: Vec<ConfigError> = list
            .into_iter()
            .zip(r.as_written.iter().chain(std::iter::repeat(&false)))
            .map(|(e, &written)| if written { e } else { locate(e) })
            .collect();
        let more = r.count - listed;
        if more > 0 {
            let message = if r.count >= MAX_RECORDED {
                format!("… and at least {more} more errors (only the first {MAX_ERRORS} are listed; checking stopped after {MAX_RECORDED})")
            } else {
                format!("… and {more} more errors (only the first {MAX_ERRORS} are listed)")
            };
            out.push(ConfigError {
                path: String::new(),
                message,
            });
        }
        out
    }

    /// [`Errors::into_vec_located`] for errors that need no translation.
    pub fn into_vec(self) -> Vec<ConfigError> {
        self.into_vec_located(&|e| e)
    }
}

/// Joins a parent path and a key: `join("vips[0]", "name")` is `vips[0].name`.
pub fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// Longest part of a value an error message quotes, in bytes: a 5 MB value
/// must not become a 5 MB log line.
pub(crate) const QUOTE_MAX: usize = 64;

/// Quotes a value for an error message as `{:?}` does, but at most its first
/// QUOTE_MAX bytes (cut at a character boundary), followed by
/// `… (N bytes)` when it was longer.
pub fn quote(s: &str) -> String {
    Quote(s).to_string()
}

/// `quote` as a `Display`, for a message that quotes a value: the quoted
/// text is written into the message, not made as a `String` first and
/// dropped (a call, a free and an unwind cleanup less at each of the many
/// error sites of validation).
pub struct Quote<'a>(pub &'a str);

impl std::fmt::Display for Quote<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        if s.len() <= QUOTE_MAX {
            write!(f, "{s:?}")
        } else {
            write!(f, "{:?}… ({} bytes)", prefix(s), s.len())
        }
    }
}

/// The first QUOTE_MAX bytes of `s` or fewer, ending at a char boundary.
fn prefix(s: &str) -> &str {
    let mut end = QUOTE_MAX.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Shows a JSON value as the user wrote it, for error messages (shortened
/// like `quote`).
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        other => {
            let text = other.to_string();
            if text.len() <= QUOTE_MAX {
                text
            } else {
                format!("{}… ({} bytes)", prefix(&text), text.len())
            }
        }
    }
}

/// A type that can appear in the config.
pub trait Field: Sized {
    /// A field of this type must be given: it has no default, only a
    /// placeholder that a config with the field missing (and so an error)
    /// holds.
    const REQUIRED: bool = false;
    /// Decodes `v`; on failure records an error at `path` and returns None.
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self>;
    fn encode(&self) -> Value;
    /// The JSON Schema of the type (without description or default).
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value;
}

fn type_error<T>(v: &Value, path: &str, errs: &mut Errors, want: &str) -> Option<T> {
    errs.push_fmt(path, format_args!("{} is not {want}", show(v)));
    None
}

/// An integer in `min..=max`, or an error naming the range: the body of
/// every integer type's decode, compiled once.
#[inline(never)]
fn int_in(v: &Value, path: &str, errs: &mut Errors, min: i64, max: i64) -> Option<i64> {
    // UCI has no numbers: a string of digits is accepted for integers.
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    match n.filter(|n| (min..=max).contains(n)) {
        Some(x) => Some(x),
        None => type_error(v, path, errs, &format!("an integer in {min}..={max}")),
    }
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
                int_in(v, path, errs, i64::from(<$t>::MIN), i64::from(<$t>::MAX))
                    .and_then(|n| <$t>::try_from(n).ok())
            }
            fn encode(&self) -> Value {
                json!(*self)
            }
            #[cfg(any(test, feature = "json-schema"))]
            fn schema() -> Value {
                json!({"type": "integer", "minimum": <$t>::MIN, "maximum": <$t>::MAX})
            }
        }
    )*};
}
int_field!(u8, u16, u32, i32);

impl Field for f64 {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        let n = match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match n.filter(|x| x.is_finite()) {
            Some(x) => Some(x),
            None => type_error(v, path, errs, "a number"),
        }
    }
    fn encode(&self) -> Value {
        json!(*self)
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "number"})
    }
}

impl Field for bool {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(*b),
            // UCI spells booleans as strings; accept what libuci's users write.
            Value::String(s) => match s.as_str() {
                "1" | "true" | "yes" | "on" | "enabled" => Some(true),
                "0" | "false" | "no" | "off" | "disabled" => Some(false),
                _ => type_error(v, path, errs, "a boolean"),
            },
            _ => type_error(v, path, errs, "a boolean"),
        }
    }
    fn encode(&self) -> Value {
        json!(*self)
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "boolean"})
    }
}

impl Field for String {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::String(s) => Some(s.clone()),
            _ => type_error(v, path, errs, "a string"),
        }
    }
    fn encode(&self) -> Value {
        json!(self)
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string"})
    }
}

/// A shared string (a VIP's name, which the engine's slot shares): the
/// JSON and the schema are a string's.
impl Field for std::sync::Arc<str> {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::String(s) => Some(std::sync::Arc::from(s.as_str())),
            _ => type_error(v, path, errs, "a string"),
        }
    }
    fn encode(&self) -> Value {
        json!(&**self)
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string"})
    }
}

impl Field for IpAddr {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::String(s) => match s.parse() {
                Ok(ip) => Some(ip),
                Err(_) => type_error(v, path, errs, "an IP address"),
            },
            _ => type_error(v, path, errs, "an IP address"),
        }
    }
    fn encode(&self) -> Value {
        json!(self.to_string())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]})
    }
}

/// A VIP's prefix, the one prefix in the config, is required: the decoded
/// `Vip` holds a `Prefix`, not an `Option`, so nothing downstream has to
/// handle a VIP without one.
impl Field for crate::bgp::types::Prefix {
    const REQUIRED: bool = true;
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::Null => {
                errs.push(path, "required");
                None
            }
            Value::String(s) if s.contains('/') => match s.parse::<Self>() {
                // A VIP written with host bits (10.10.1.5/24) is almost always
                // a typo for one of two things, and announcing the network
                // while the file shows the address would hide which: ask.
                Ok(p) => match s.split('/').next().and_then(|a| a.parse::<IpAddr>().ok()) {
                    Some(written) if written != p.addr() => {
                        errs.push_fmt(
                            path,
                            format_args!(
                                "{} has host bits set: write {} for the address or {p} for the network",
                                show(v),
                                Self::host(written)
                            ),
                        );
                        None
                    }
                    _ => Some(p),
                },
                Err(e) => type_error(v, path, errs, &format!("a valid prefix ({e})")),
            },
            _ => type_error(v, path, errs, "a prefix such as 192.0.2.1/32"),
        }
    }
    fn encode(&self) -> Value {
        json!(self.to_string())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "string", "pattern": "^[0-9A-Fa-f:.]+/[0-9]{1,3}$"})
    }
}

impl<T: Field> Field for Option<T> {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        if v.is_null() {
            return Some(None);
        }
        T::decode(v, path, errs).map(Some)
    }
    fn encode(&self) -> Value {
        match self {
            Some(x) => x.encode(),
            None => Value::Null,
        }
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        T::schema()
    }
}

/// A boxed value is the value: the JSON and the schema do not change. Large
/// optional blocks (a check's per-type options) are boxed so a VIP or check
/// that does not use them costs one pointer, not the block (10,000 `always`
/// VIPs each carried 920 bytes of unused `Check`).
impl<T: Field> Field for Box<T> {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        T::decode(v, path, errs).map(Box::new)
    }
    fn encode(&self) -> Value {
        (**self).encode()
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        T::schema()
    }
}

/// Decodes each item of a list at its path (`path[i]`) with `item`, which
/// keeps what decoded and says whether it did; false when `v` is not a list
/// or an item failed. The walk of every `Vec<T>`, compiled once.
#[inline(never)]
fn decode_list(
    v: &Value,
    path: &str,
    errs: &mut Errors,
    item: &mut dyn FnMut(&Value, &str, &mut Errors) -> bool,
) -> bool {
    let Value::Array(items) = v else {
        return type_error::<()>(v, path, errs, "a list").is_some();
    };
    let mut ok = true;
    for (i, x) in items.iter().enumerate() {
        ok &= item(x, &format!("{path}[{i}]"), errs);
    }
    ok
}

/// Takes the items of list or map `v` that are not objects (communities,
/// headers, arguments: not checks or neighbors, which have limits of their
/// own) from the file's MAX_LIST_ITEMS; false once they pass it.
#[inline(never)]
fn list_items(v: &Value, path: &str, errs: &mut Errors) -> bool {
    let n = match v {
        Value::Array(items) => items.iter().filter(|x| !x.is_object()).count(),
        Value::Object(m) => m.values().filter(|x| !x.is_object()).count(),
        _ => 0,
    };
    errs.take_list_items(n, path)
}

impl<T: Field> Field for Vec<T> {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        if !list_items(v, path, errs) {
            return None;
        }
        // At its exact size: a list of 10,000 VIPs must not hold 16,384.
        let mut out = Vec::with_capacity(v.as_array().map_or(0, Vec::len));
        let ok = decode_list(v, path, errs, &mut |item, p, errs| {
            T::decode(item, p, errs).map(|x| out.push(x)).is_some()
        });
        ok.then_some(out)
    }
    fn encode(&self) -> Value {
        Value::Array(self.iter().map(Field::encode).collect())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "array", "items": T::schema()})
    }
}

impl<T: Field> Field for BTreeMap<String, T> {
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        match v {
            Value::Object(_) if !list_items(v, path, errs) => None,
            Value::Object(m) => {
                let mut out = BTreeMap::new();
                let mut ok = true;
                for (k, item) in m {
                    match T::decode(item, &join(path, k), errs) {
                        Some(x) => {
                            out.insert(k.clone(), x);
                        }
                        None => ok = false,
                    }
                }
                ok.then_some(out)
            }
            _ => type_error(v, path, errs, "an object"),
        }
    }
    fn encode(&self) -> Value {
        Value::Object(self.iter().map(|(k, v)| (k.clone(), v.encode())).collect())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": T::schema()})
    }
}

/// Decodes the members of an object, reporting every key that is not one of
/// `known` (the Go pathosd ignores them; on a router a typo must not be silent).
pub fn object<'a>(
    v: &'a Value,
    path: &str,
    known: &[&str],
    errs: &mut Errors,
) -> Option<&'a Map<String, Value>> {
    match v {
        Value::Object(m) => {
            for k in m.keys() {
                if !known.contains(&k.as_str()) {
                    if k.len() > QUOTE_MAX {
                        // The key is part of the path: keep the path short.
                        errs.push_fmt(path, format_args!("unknown field {}", Quote(k)));
                    } else {
                        errs.push(join(path, k), "unknown field");
                    }
                }
            }
            Some(m)
        }
        _ => {
            errs.push_fmt(path, format_args!("{} is not an object", show(v)));
            None
        }
    }
}

/// Decodes a config struct's members: every key not in `keys` is an error
/// (`object`), then each field present is decoded by `store` (its index in
/// `keys`) at its own path, and a missing field that is `required` is an
/// error there. One routine for every struct declared by `config_struct!`,
/// which gives only the tables and the per-field store: the walk is not
/// compiled once per struct (flash). False when `v` is
/// not an object.
#[inline(never)]
pub fn decode_struct(
    v: &Value,
    path: &str,
    keys: &[&str],
    required: &[bool],
    errs: &mut Errors,
    store: &mut dyn FnMut(usize, &Value, &str, &mut Errors),
) -> bool {
    let Some(m) = object(v, path, keys, errs) else {
        return false;
    };
    for (i, key) in keys.iter().enumerate() {
        let p = join(path, key);
        match m.get(*key) {
            Some(x) => store(i, x, &p, errs),
            None if required.get(i).copied().unwrap_or(false) => errs.push(p, "required"),
            None => {}
        }
    }
    true
}

/// Decodes one field's value into its slot; a value that fails keeps the
/// default (the error is recorded at `path`). Compiled once per field type,
/// not once per field.
pub fn store<T: Field>(slot: &mut T, v: &Value, path: &str, errs: &mut Errors) {
    if let Some(d) = T::decode(v, path, errs) {
        *slot = d;
    }
}

/// Encodes a config struct: each field's JSON (`get` by its index in
/// `keys`) under its key, the unset ones (null) left out. One routine for
/// every struct, like `decode_struct`.
#[inline(never)]
pub fn encode_struct(keys: &[&str], get: &dyn Fn(usize) -> Value) -> Value {
    let mut m = Map::new();
    for (i, key) in keys.iter().enumerate() {
        let v = get(i);
        if !v.is_null() {
            m.insert((*key).to_string(), v);
        }
    }
    Value::Object(m)
}

/// Decodes a config enum: the index in `all` of the string `v` is, or an
/// error naming every spelling. One routine for every `config_enum!`.
#[inline(never)]
pub fn decode_enum(v: &Value, path: &str, all: &[&str], errs: &mut Errors) -> Option<usize> {
    let i = v.as_str().and_then(|s| all.iter().position(|t| *t == s));
    if i.is_none() {
        errs.push_fmt(
            path,
            format_args!("{} is not one of {}", show(v), all.join(", ")),
        );
    }
    i
}

/// The JSON key of a field: its name, or the literal given where the name is
/// a Rust keyword (`kind ("type")`).
#[doc(hidden)]
#[macro_export]
macro_rules! __config_key {
    ($f:ident) => {
        stringify!($f)
    };
    ($f:ident $k:literal) => {
        $k
    };
}

/// Declares a config struct: its fields, each with one default and a doc
/// line, plus `Field` (decode collecting errors, encode, schema) and `Default`.
///
/// An optional `resolved { ... }` block declares fields that are not in the
/// file: the typed values validation derives from the fields (a compiled
/// policy, a neighbor's session settings), which the daemon runs on. They
/// are not decoded, encoded or in the schema; their default stands only
/// until `validate` fills them, and `load_config` / `load_str`, the only
/// way the daemon gets a config, always validate.
#[macro_export]
macro_rules! config_struct {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident {
            $(
                $(#[doc = $fdoc:literal])*
                $field:ident $(($key:literal))? : $ty:ty = $default:expr
            ),* $(,)?
        }
        $(
            resolved {
                $(
                    $(#[doc = $rdoc:literal])*
                    $rfield:ident : $rty:ty = $rdefault:expr
                ),* $(,)?
            }
        )?
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
            $($( $(#[doc = $rdoc])* pub $rfield: $rty, )*)?
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* $($( $rfield: $rdefault, )*)? }
            }
        }

        impl $crate::config::field::Field for $name {
            fn decode(
                v: &serde_json::Value,
                path: &str,
                errs: &mut $crate::config::field::Errors,
            ) -> Option<Self> {
                // The walk is one routine for every struct
                // (`decode_struct`); what is this struct's own is the
                // table of keys and, per field, the store into it.
                #[allow(non_camel_case_types)]
                enum Ix { $($field),* }
                let mut out = $name::default();
                let ok = $crate::config::field::decode_struct(
                    v,
                    path,
                    &[$($crate::__config_key!($field $($key)?)),*],
                    &[$(<$ty as $crate::config::field::Field>::REQUIRED),*],
                    errs,
                    &mut |i, x, p, errs| {
                        $(
                            if i == Ix::$field as usize {
                                $crate::config::field::store(&mut out.$field, x, p, errs);
                                return;
                            }
                        )*
                    },
                );
                ok.then_some(out)
            }

            fn encode(&self) -> serde_json::Value {
                #[allow(non_camel_case_types)]
                enum Ix { $($field),* }
                $crate::config::field::encode_struct(
                    &[$($crate::__config_key!($field $($key)?)),*],
                    &|i| {
                        $(
                            if i == Ix::$field as usize {
                                return $crate::config::field::Field::encode(&self.$field);
                            }
                        )*
                        serde_json::Value::Null
                    },
                )
            }

            #[cfg(any(test, feature = "json-schema"))]
            fn schema() -> serde_json::Value {
                let mut props = serde_json::Map::new();
                $(
                    let mut s = <$ty as $crate::config::field::Field>::schema();
                    if let serde_json::Value::Object(o) = &mut s {
                        let doc: Vec<&str> = vec![$($fdoc.trim()),*];
                        if !doc.is_empty() {
                            o.insert("description".into(), doc.join(" ").into());
                        }
                        let d = $crate::config::field::Field::encode(&{ let x: $ty = $default; x });
                        if !d.is_null() && !<$ty as $crate::config::field::Field>::REQUIRED {
                            o.insert("default".into(), d);
                        }
                    }
                    props.insert($crate::__config_key!($field $($key)?).to_string(), s);
                )*
                let doc: Vec<&str> = vec![$($sdoc.trim()),*];
                let mut required: Vec<&str> = Vec::new();
                $(
                    if <$ty as $crate::config::field::Field>::REQUIRED {
                        required.push($crate::__config_key!($field $($key)?));
                    }
                )*
                let mut s = serde_json::json!({
                    "type": "object",
                    "description": doc.join(" "),
                    "additionalProperties": false,
                    "properties": props,
                });
                if !required.is_empty() {
                    s["required"] = serde_json::json!(required);
                }
                s
            }
        }
    };
}

/// Declares a config enum spelled as lower-case strings.
#[macro_export]
macro_rules! config_enum {
    (
        $(#[doc = $sdoc:literal])*
        pub enum $name:ident { $( $variant:ident = $text:literal ),* $(,)? }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $( $variant, )* }

        impl $name {
            pub const ALL: &'static [&'static str] = &[$($text),*];

            pub fn as_str(&self) -> &'static str {
                match self { $( $name::$variant => $text, )* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::config::field::Field for $name {
            fn decode(
                v: &serde_json::Value,
                path: &str,
                errs: &mut $crate::config::field::Errors,
            ) -> Option<Self> {
                const VARIANTS: &[$name] = &[$($name::$variant),*];
                $crate::config::field::decode_enum(v, path, Self::ALL, errs)
                    .and_then(|i| VARIANTS.get(i).copied())
            }
            fn encode(&self) -> serde_json::Value {
                serde_json::Value::String(self.as_str().into())
            }
            #[cfg(any(test, feature = "json-schema"))]
            fn schema() -> serde_json::Value {
                serde_json::json!({"type": "string", "enum": Self::ALL})
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut_at_a_char_boundary() {
        let at = "a".repeat(QUOTE_MAX);
        assert_eq!(quote(&at), format!("{at:?}"));
        let past = "a".repeat(QUOTE_MAX + 1);
        assert_eq!(quote(&past), format!("{at:?}… (65 bytes)"));
        // 1 + 2k bytes: byte 64 is inside an "é", so 63 bytes are kept.
        let odd = format!("a{}", "é".repeat(40));
        assert_eq!(quote(&odd), format!("\"a{}\"… (81 bytes)", "é".repeat(31)));
        assert_eq!(show(&json!(past)), quote(&past));
        let arr = json!(vec![1; 100]);
        assert_eq!(show(&arr), format!("[{}1… (201 bytes)", "1,".repeat(31)));
    }

    /// A decoded list is held at its exact size (10,000 VIPs must not hold
    /// 16,384 slots), and an item that fails leaves no list but reports at
    /// its own path, after the items before it.
    #[test]
    fn lists_decode_at_their_size_and_report_each_item() {
        let mut e = Errors::default();
        let v: Vec<u16> = Field::decode(&json!([1, 2, 3, 4, 5]), "xs", &mut e).unwrap();
        assert_eq!((v.len(), v.capacity()), (5, 5));
        assert!(e.is_empty());
        let bad = <Vec<u16>>::decode(&json!([1, "x", 70000]), "xs", &mut e);
        assert!(bad.is_none());
        let got: Vec<String> = e.0.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "xs[1]: \"x\" is not an integer in 0..=65535",
                "xs[2]: 70000 is not an integer in 0..=65535",
            ]
        );
        let mut e = Errors::default();
        assert!(<Vec<u16>>::decode(&json!({"a": 1}), "xs", &mut e).is_none());
        assert_eq!(e.0[0].to_string(), "xs: {\"a\":1} is not a list");
    }

    /// The first MAX_ERRORS errors are kept whole; the rest are counted
    /// until MAX_RECORDED, when checking stops, and the list says so.
    #[test]
    fn errors_are_listed_counted_then_stopped() {
        let mut e = Errors::default();
        for i in 0..150 {
            e.push(format!("vips[{i}].prefix"), "bad");
        }
        e.push("vips[120].prefix", "again: not counted");
        assert!(e.has("vips[120].prefix") && !e.stopped());
        let v = e.into_vec();
        assert_eq!(v.len(), MAX_ERRORS + 1);
        assert_eq!(
            v[MAX_ERRORS].message,
            "… and 50 more errors (only the first 100 are listed)"
        );
        let mut e = Errors::default();
        for i in 0..MAX_RECORDED + 5 {
            e.push_fmt(format!("x{i}"), format_args!("bad {i}"));
        }
        assert!(e.stopped());
        assert!(!e.has(&format!("x{}", MAX_RECORDED + 1)));
        assert_eq!(
            e.into_vec()[MAX_ERRORS].message,
            "… and at least 9900 more errors (only the first 100 are listed; checking stopped after 10000)"
        );
        // Errors collected apart and absorbed count as if pushed in order.
        let (mut a, mut b) = (Errors::default(), Errors::default());
        for i in 0..60 {
            a.push(format!("a{i}"), "x");
            b.push(format!("b{i}"), "y");
        }
        b.push("a0", "same path as one of a's: dropped");
        b.push("", "no path");
        a.absorb(b);
        assert!(a.has("b59"));
        let v = a.into_vec();
        assert_eq!(v[MAX_ERRORS - 1].path, "b39");
        assert_eq!(
            v[MAX_ERRORS].message,
            "… and 21 more errors (only the first 100 are listed)"
        );
    }

    /// List items are counted over the whole file: past MAX_LIST_ITEMS a
    /// list is not decoded and one error says why.
    #[test]
    fn list_items_are_bounded_in_all() {
        let mut e = Errors::default();
        let half = json!(vec!["a"; MAX_LIST_ITEMS / 2]);
        for i in 0..2 {
            assert!(<Vec<String>>::decode(&half, &format!("l{i}"), &mut e).is_some());
        }
        assert!(e.is_empty());
        assert!(<Vec<String>>::decode(&json!(["a"]), "l2", &mut e).is_none());
        assert!(<BTreeMap<String, String>>::decode(&json!({"k": "v"}), "m", &mut e).is_none());
        assert_eq!(
            e.into_vec().iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!("l2: the lists hold more than the limit of {MAX_LIST_ITEMS} items in all (communities, headers, arguments, …)")]
        );
    }

    #[test]
    fn error_index() {
        let mut e = Errors::default();
        e.push("vips[1].checkA", "x");
        e.push("vips[10].name", "x");
        e.push("vips[2]", "x");
        e.push("vips[2]", "dropped: same path");
        e.push("", "a");
        e.push("", "b: empty paths are never merged");
        assert_eq!(e.0.len(), 5);
        assert!(e.has("vips[2]") && e.has("") && !e.has("vips[1]"));
        assert!(e.has_under("vips[2]"));
        assert!(e.has_under("vips[10]"));
        assert!(e.has_under("vips"));
        assert!(e.has_under("vips[1]"));
        assert!(!e.has_under("vips[1].check"));
        assert!(!e.has_under("vips[3]"));
        assert!(!e.has_under("vip"));
    }
}
