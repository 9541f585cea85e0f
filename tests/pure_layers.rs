//! The layering rule of docs/architecture.md, checked instead of reviewed:
//! a pure layer does not log or print. It returns what happened (an error,
//! a warning, a skipped route, an output) and the driver that called it logs
//! it, with the context only the driver has (the peer, the request).
//!
//! Scans the source of every module the architecture table calls pure for
//! `log::` (a call, a `use`, a path) and the std print macros, and fails
//! naming each file and line.

use std::fs;
use std::path::Path;

/// The pure modules (docs/architecture.md, "Modules"): files, or folders
/// whose every .rs file is pure. Crate pathosd-core holds only pure modules.
const PURE: &[&str] = &[
    "crates/pathosd-core/src",
    // Named too (it is inside the folder above): the HTTP routing returns
    // the line to log instead of logging, and must stay so.
    "crates/pathosd-core/src/api/router.rs",
    // And BFD: its state machine takes `now` and a seed, and the driver
    // that will own its sockets and timers must not move into it.
    "crates/pathosd-core/src/bfd",
    "src/ubus/blob.rs",
    "src/ubus/msg",
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

#[path = "support/source_tree.rs"]
mod source_tree;
use source_tree::rust_files;

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
    files.sort();
    files.dedup();
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

/// What the core must not call outside its tests: the clock and I/O. A
/// pure layer takes `now` from its caller (the engine's `handle(input,
/// now)`, the renderers' snapshot time), so its tests can pick the time
/// and a run is repeatable; and it takes text, not a file, and a lookup
/// function, not the environment (the loader: `pathosd::config_file` reads
/// the file and the environment). No file system, environment, sockets or
/// processes (docs/architecture.md, "Pure layers").
const CLOCK_READS: &[&str] = &[
    "Instant::now",
    "SystemTime::now",
    "std::fs",
    "std::env",
    "std::process",
    "std::io::stdin",
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "UnixStream",
    "UnixListener",
];

/// The shipped part of a core file: a `tests.rs` file is test code only,
/// and the `#[cfg(test)] mod ... {` block (at the end of a file by the
/// project's convention) is cut off. A `#[cfg(test)]` on a single item
/// elsewhere does not cut: the lines after it are still scanned.
fn shipped_part<'a>(file: &Path, text: &'a str) -> &'a str {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        return "";
    }
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let next = lines.peek().map_or("", |l| l.trim());
            if next.starts_with("mod ") && next.ends_with('{') {
                return &text[..offset];
            }
        }
        offset += line.len();
    }
    text
}

/// `file:line: text` for each clock read in the shipped part of `text`.
fn clock_reads(file: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if CLOCK_READS.iter().any(|f| code.contains(f)) {
            out.push(format!("{file}:{}: {}", i + 1, line.trim()));
        }
    }
    out
}

#[test]
fn core_does_not_read_the_clock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates/pathosd-core/src"), &mut files);
    assert!(files.len() >= 25, "only {} files scanned", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        bad.extend(clock_reads(&name, shipped_part(f, &text)));
    }
    assert!(
        bad.is_empty(),
        "pathosd-core reads the clock or does I/O; take `now`, text or a lookup from the caller:\n{}",
        bad.join("\n")
    );
}

/// Test modules may read the clock, an item marked `#[cfg(test)]` alone
/// does not hide the code after it, and a read in shipped code is found.
#[test]
fn clock_scanner_skips_only_test_modules() {
    let text = "fn a() { let t = Instant::now(); }\n#[cfg(test)]\nfn helper() {}\nfn b() { SystemTime::now(); }\nfn d() { std::fs::read(\"x\"); }\n#[cfg(test)]\nmod tests {\n    fn c() { Instant::now(); std::env::var(\"X\"); }\n}\n";
    let part = shipped_part(Path::new("x.rs"), text);
    assert_eq!(
        clock_reads("x.rs", part),
        vec![
            "x.rs:1: fn a() { let t = Instant::now(); }",
            "x.rs:4: fn b() { SystemTime::now(); }",
            "x.rs:5: fn d() { std::fs::read(\"x\"); }",
        ]
    );
    assert_eq!(shipped_part(Path::new("src/vip/tests.rs"), text), "");
}

/// What pathosd-core may depend on: data and parsing crates only. A new
/// dependency must be added here on purpose (and be no runtime, socket,
/// libc, HTTP, TLS or log crate), so a driver crate cannot slip in unnoticed.
const CORE_DEPENDENCIES: &[&str] = &["serde", "serde_json", "nom", "regex-lite"];

/// The non-dev dependencies named in a Cargo.toml (dev-dependencies never
/// reach the binary): `name = ...` lines under `[dependencies]` or
/// `[target.'...'.dependencies]`, and `[dependencies.name]` tables.
fn manifest_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            let header = line.trim_matches(['[', ']']);
            let table = header
                .split_once("dependencies.")
                .filter(|(pre, _)| pre.is_empty() || pre.ends_with('.'))
                .filter(|(pre, _)| !pre.contains("dev-"));
            if let Some((_, name)) = table {
                out.push(name.trim_matches(['"', '\'']).to_string());
                in_deps = false;
            } else {
                in_deps = header.ends_with("dependencies") && !header.contains("dev-");
            }
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("");
            out.push(name.trim_matches('"').to_string());
        }
    }
    out
}

/// The compiler keeps pathosd-core pure only while its manifest lists no
/// driver crate and its root forbids `unsafe`: check both, so that adding
/// smol or a socket crate there is a test failure, not a review finding.
#[test]
fn core_crate_has_no_driver_dependency_and_no_unsafe() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/pathosd-core");
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("core Cargo.toml");
    let deps = manifest_dependencies(&manifest);
    // The parser must see the crates it knows are there, or it checks nothing.
    assert!(
        deps.iter().any(|d| d == "serde"),
        "no dependency read: {deps:?}"
    );
    let bad: Vec<&String> = deps
        .iter()
        .filter(|d| !CORE_DEPENDENCIES.contains(&d.as_str()))
        .collect();
    assert!(
        bad.is_empty(),
        "pathosd-core depends on crates outside its pure list {CORE_DEPENDENCIES:?}: {bad:?}"
    );
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("core lib.rs");
    assert!(
        lib.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]"),
        "crates/pathosd-core/src/lib.rs must keep #![forbid(unsafe_code)]"
    );
}

/// Every way a manifest names a dependency is read; dev-dependencies are not.
#[test]
fn manifest_reader_finds_each_form() {
    let m = "[package]\nname = \"x\"\n[dependencies]\nserde = \"1\"\n# smol = \"2\"\nnom.workspace = true\n\
             [target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n[dependencies.smol]\nversion = \"2\"\n\
             [dev-dependencies]\nproptest = \"1\"\n[dev-dependencies.tokio]\nversion = \"1\"\n";
    assert_eq!(
        manifest_dependencies(m),
        vec!["serde", "nom", "libc", "smol"]
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
