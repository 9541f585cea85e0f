//! The committed JSON Schema must equal the one generated from the types.

use pathosd::config::json_schema::{json_schema_text, SCHEMA_PATH};
use std::path::Path;

#[test]
fn committed_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_PATH);
    let want = json_schema_text();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{SCHEMA_PATH} is stale; regenerate it with:\n  UPDATE_SCHEMA=1 cargo test --test config_schema"
    );
}

#[test]
fn schema_describes_every_field_with_its_default() {
    let s: serde_json::Value = serde_json::from_str(&json_schema_text()).unwrap();
    assert_eq!(s["properties"]["schema"]["const"], "v1");
    let check = &s["properties"]["vips"]["items"]["properties"]["check"];
    assert_eq!(check["properties"]["interval"]["default"], "1s");
    assert_eq!(check["properties"]["timeout"]["default"], "100ms");
    assert_eq!(check["properties"]["rise"]["default"], 1);
    assert_eq!(check["properties"]["fall"]["default"], 3);
    assert_eq!(check["additionalProperties"], false);
    assert!(check["properties"]["type"]["description"].is_string());
}
