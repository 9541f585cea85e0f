//! A small typed decoder over `serde_json::Value` that, unlike serde's derive,
//! keeps going after the first mistake: every unknown key, wrong type and bad
//! value is collected with its field path (`vips[2].checks[1].timeout`). The
//! same declarations also produce the v1 JSON (for `pathosd convert`) and the
//! JSON Schema, so the schema can never drift from the types.

use crate::bgp::types::Prefix;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::net::IpAddr;

mod errors;

pub(crate) use errors::QUOTE_MAX;
pub use errors::{
    join, quote, show, ConfigError, Errors, Quote, MAX_ERRORS, MAX_LIST_ITEMS, MAX_RECORDED,
};

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

/// The most prefixes one VIP takes: they share one check set, and each
/// is a route every peer carries.
pub const MAX_PREFIXES_PER_VIP: usize = 16;

/// A VIP's `prefix`: one prefix (a string) or several (a list of them, an
/// IPv4 and an IPv6 one for instance), announced and withdrawn together.
/// Required, as the one prefix is.
impl Field for super::schema::Prefixes {
    const REQUIRED: bool = true;
    fn decode(v: &Value, path: &str, errs: &mut Errors) -> Option<Self> {
        // One prefix is a list of one at the field's own path: one call of
        // Prefix::decode in the binary, inlined, for both forms.
        let (items, one) = match v {
            Value::Array(items) => (&items[..], false),
            _ => (std::slice::from_ref(v), true),
        };
        if items.is_empty() {
            errs.push(path, "an empty list: give at least one prefix");
            return None;
        }
        if items.len() > MAX_PREFIXES_PER_VIP {
            errs.push_fmt(
                path,
                format_args!(
                    "{} prefixes, more than the limit of {MAX_PREFIXES_PER_VIP}",
                    items.len()
                ),
            );
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let p = if one {
                path.to_string()
            } else {
                format!("{path}[{i}]")
            };
            match Prefix::decode(item, &p, errs) {
                Some(x) => out.push(x),
                None => ok = false,
            }
        }
        let mut out = out.into_iter();
        match (ok, out.next()) {
            (true, Some(first)) => Some(Self {
                first,
                more: out.collect(),
            }),
            _ => None,
        }
    }
    fn encode(&self) -> Value {
        if self.more.is_empty() {
            return self.first.encode();
        }
        Value::Array(self.iter().map(|p| p.encode()).collect())
    }
    #[cfg(any(test, feature = "json-schema"))]
    fn schema() -> Value {
        json!({"anyOf": [
            Prefix::schema(),
            {"type": "array", "items": Prefix::schema(), "minItems": 1, "maxItems": MAX_PREFIXES_PER_VIP},
        ]})
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
/// It holds the file as written: what validation reads out of it goes into
/// the run types (`config::run`).
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
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
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
