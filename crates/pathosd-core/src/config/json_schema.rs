//! The JSON Schema of the v1 config, generated from the same declarations
//! that decode it (schema.rs), for editors. The committed copy lives at
//! schema/pathosd-config-v1.schema.json; tests/config_schema.rs fails when it
//! is stale (`UPDATE_SCHEMA=1 cargo test --test config_schema` rewrites it).

use super::field::Field;
use super::schema::Config;
use serde_json::{json, Value};

/// Where the committed schema lives, relative to the repository root.
pub const SCHEMA_PATH: &str = "schema/pathosd-config-v1.schema.json";

/// The complete schema document.
pub fn json_schema() -> Value {
    let mut s = Config::schema();
    if let Value::Object(o) = &mut s {
        o.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        o.insert("title".into(), json!("pathosd configuration, schema v1"));
        // What validation requires at the top level; the rest has defaults.
        o.insert(
            "required".into(),
            json!(["schema", "router", "bgp", "vips"]),
        );
        if let Some(Value::Object(p)) = o.get_mut("properties") {
            p.insert(
                "schema".into(),
                json!({"const": "v1", "description": "Schema version; must be \"v1\"."}),
            );
        }
    }
    s
}

/// The schema as committed: pretty JSON with a final newline.
pub fn json_schema_text() -> String {
    let mut s = format!("{:#}", json_schema());
    s.push('\n');
    s
}
