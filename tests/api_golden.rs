//! The JSON renderings of the API and ubus (`api::status`) pinned byte for
//! byte: the fixture snapshot rendered as `/status` (also ubus `status`,
//! and each VIP's object is what the one-VIP route and ubus `vip` answer)
//! must equal tests/vectors/api/status.json, which was rendered by the
//! renderers before they were reshaped for size (issue 12). A change to a
//! rendering must show up here as a diff, never pass silently.

#[path = "api_fixture.rs"]
mod fixture;

use pathosd::api::status::status_json;
use std::path::PathBuf;

#[test]
fn status_rendering_is_byte_identical_to_the_pinned_one() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/api/status.json");
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let got = serde_json::to_string_pretty(&status_json(&fixture::snapshot())).unwrap() + "\n";
    assert_eq!(got, want, "status_json differs from {}", path.display());
}
