//! The layering rule of docs/architecture.md, checked instead of reviewed:
//! a pure layer does not log or print. It returns what happened (an error,
//! a warning, a skipped route, an output) and the driver that called it logs
//! it, with the context only the driver has (the peer, the request).
//!
//! Scans the source of every module the architecture table calls pure for
//! `log::` (a call, a `use`, a path) and the std print macros, and fails
//! naming each file and line.

use std::fs;
use std::path::{Path, PathBuf};

/// The pure modules (docs/architecture.md, "Modules"): files, or folders
/// whose every .rs file is pure.
const PURE: &[&str] = &[
    "src/config",
    "src/bgp/types.rs",
    "src/bgp/wire",
    "src/bgp/fsm.rs",
    "src/bgp/rib_out.rs",
    "src/bgp/session.rs",
    "src/vip",
    "src/check/hysteresis.rs",
    "src/check/policy.rs",
    "src/check/jsonmatch.rs",
    "src/check/result.rs",
    "src/daemon/engine.rs",
    "src/daemon/engine",
    "src/daemon/triggers.rs",
    "src/daemon/reload.rs",
    "src/api/access.rs",
    "src/api/status.rs",
    "src/api/metrics.rs",
    "src/api/page.rs",
    "src/ubus/blob.rs",
    "src/ubus/msg.rs",
];

/// What a pure layer must not contain outside comments.
const FORBIDDEN: &[&str] = &[
    "log::",
    "println!",
    "eprintln!",
    "print!",
    "eprint!",
    "dbg!",
];

fn rust_files(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .map(|e| e.expect("read_dir entry").path())
            .collect();
        entries.sort();
        // The source tree is two or three folders deep: the recursion is
        // bounded by it, not by input.
        for e in entries {
            rust_files(&e, out);
        }
    } else if p.extension().is_some_and(|x| x == "rs") {
        out.push(p.to_path_buf());
    }
}

/// `file:line: text` for each forbidden use in `text`; comment lines and
/// the comment part of a line are not code.
fn offences(file: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if FORBIDDEN.iter().any(|f| code.contains(f)) {
            out.push(format!("{file}:{}: {}", i + 1, line.trim()));
        }
    }
    out
}

#[test]
fn pure_layers_do_not_log() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for p in PURE {
        let path = root.join(p);
        // A renamed module must not make this test pass by scanning nothing.
        assert!(
            path.exists(),
            "{p} is gone: update PURE (and docs/architecture.md)"
        );
        rust_files(&path, &mut files);
    }
    assert!(files.len() >= 25, "only {} files scanned", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        bad.extend(offences(&name, &text));
    }
    assert!(
        bad.is_empty(),
        "pure layers log or print; return the outcome and let the driver log it:\n{}",
        bad.join("\n")
    );
}

/// The scanner itself finds what it must and skips comments.
#[test]
fn scanner_finds_calls_and_skips_comments() {
    let text = "fn f() {\n    // log::warn! in a comment is fine\n    log::warn!(\"x\"); // here\n    use log::info;\n    eprintln!(\"y\");\n}\n";
    assert_eq!(
        offences("x.rs", text),
        vec![
            "x.rs:3: log::warn!(\"x\"); // here",
            "x.rs:4: use log::info;",
            "x.rs:5: eprintln!(\"y\");",
        ]
    );
}
