//! The renderings of the API pinned byte for byte: the fixture snapshot
//! rendered as `/status` (also ubus `status`, and each VIP's object is what
//! the one-VIP route and ubus `vip` answer) must equal
//! tests/vectors/api/status.json, which was rendered by the renderers before
//! they were reshaped for size; `/metrics`, the HTML page, pages of
//! `/status` and the OTLP metrics request likewise equal the files next to
//! it, and a snapshot of 1,200 VIPs of every kind renders to the pinned
//! lengths and hashes. A change to a rendering must show up here as a diff,
//! never pass silently. `PATHOSD_BLESS=1` writes the files anew (only for a
//! change meant to show).

#[path = "api_fixture.rs"]
mod fixture;

use pathosd::api::model::{Scope, Snapshot};
use pathosd::api::status::{status_json, StatusQuery};
use pathosd::api::stream::{self, What};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

fn vector(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/api")
        .join(name)
}

/// `got` equals the pinned file `name` (or becomes it, blessing).
fn pinned(name: &str, got: &[u8]) {
    let path = vector(name);
    if std::env::var_os("PATHOSD_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    if got != want.as_slice() {
        let (g, w) = (String::from_utf8_lossy(got), String::from_utf8_lossy(&want));
        let line = g.lines().zip(w.lines()).position(|(a, b)| a != b);
        panic!(
            "the rendering differs from {} ({} bytes, pinned {}), first at line {line:?}",
            path.display(),
            got.len(),
            want.len()
        );
    }
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap();
    b.push(b'\n');
    b
}

/// `what` streamed from `s` in pieces of `budget` bytes.
fn streamed(what: What, budget: usize, s: &Snapshot) -> Vec<u8> {
    stream::render(what, budget, &mut s.clone()).unwrap()
}

/// `what` streamed whole, in pieces of one VIP and in the daemon's
/// pieces: the same bytes each time.
fn both(what: What, s: &Snapshot) -> Vec<u8> {
    let whole = streamed(what.clone(), usize::MAX, s);
    assert!(
        streamed(what.clone(), 1, s) == whole,
        "{what:?} in pieces of one VIP differs from it whole"
    );
    assert!(
        streamed(what.clone(), stream::PIECE, s) == whole,
        "{what:?} in the daemon's pieces differs from it whole"
    );
    whole
}

fn query(args: &[(&str, &str)]) -> StatusQuery {
    let mut q = StatusQuery::default();
    for (k, v) in args {
        q.set(k, &Value::String(v.to_string())).unwrap();
    }
    q
}

/// The pages pinned: the first 100, a filtered compact one, one past the end.
fn queries() -> Vec<(&'static str, StatusQuery)> {
    vec![
        ("first", query(&[])),
        (
            "filtered",
            query(&[
                ("state", "announced"),
                ("compact", "1"),
                ("offset", "7"),
                ("limit", "40"),
            ]),
        ),
        ("search", query(&[("search", "V1"), ("health", "healthy")])),
        ("past-the-end", query(&[("offset", "5000")])),
    ]
}

#[test]
fn status_rendering_is_byte_identical_to_the_pinned_one() {
    let got = pretty(&status_json(&fixture::snapshot()));
    pinned("status.json", &got);
    pinned(
        "status.json",
        &both(What::Status(None), &fixture::snapshot()),
    );
}

#[test]
fn metrics_page_and_status_pages_are_byte_identical_to_the_pinned_ones() {
    let s = fixture::snapshot();
    pinned("metrics.txt", &both(What::Metrics, &s));
    pinned("page.html", &both(What::Page, &s));
    let q = query(&[("search", "B"), ("limit", "1")]);
    let page = s.clone().scoped(&Scope::Page(q.clone()));
    pinned(
        "status-page.json",
        &pretty(&pathosd::api::status::status_page_json(&page, &mut |_| {
            true
        })),
    );
    pinned("status-page.json", &both(What::Status(Some(q)), &s));
    let now = UNIX_EPOCH + Duration::from_secs(1_790_003_600);
    let one = stream::otlp_requests(&mut s.clone(), now, "edge-1", usize::MAX).unwrap();
    assert_eq!(one.len(), 1);
    pinned("metrics.otlp", &one[0]);
}

/// (length, FNV-1a) of each rendering of 1,200 VIPs, as the renderers
/// before streaming wrote them; streamed in pieces of any size.
#[test]
fn a_large_snapshot_renders_as_pinned() {
    let s = fixture::large_snapshot(1200);
    let mut got = Vec::new();
    let mut put =
        |what: &str, b: &[u8]| got.push(format!("{what} {} {:016x}", b.len(), fixture::fnv(b)));
    put("status", &both(What::Status(None), &s));
    put("metrics", &both(What::Metrics, &s));
    put("page", &both(What::Page, &s));
    for (name, q) in queries() {
        put(
            &format!("status-page-{name}"),
            &both(What::Status(Some(q)), &s),
        );
    }
    let got = got.join("\n") + "\n";
    pinned("large.txt", got.as_bytes());
}
