//! The config as written, for `pathosd convert`: its v1 JSON, every
//! default spelled out.

use super::field::Field;
use super::schema::Config;
use serde_json::Value;

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
    const ORDER: [&str; 8] = [
        "schema", "router", "bgp", "api", "logging", "otel", "hooks", "vips",
    ];
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
        let val = format!("{:#}", m[k.as_str()]);
        out.push_str(&format!("  {key}: {}", val.replace('\n', "\n  ")));
        out.push_str(if i + 1 < keys.len() { ",\n" } else { "\n" });
    }
    out.push_str("}\n");
    out.replace("%{", "%%{")
}
