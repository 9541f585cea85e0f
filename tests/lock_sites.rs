//! The one-thread rule of docs/architecture.md ("One thread", "Locks that
//! remain"), checked instead of reviewed: every daemon task runs on the main
//! thread's executor (`src/rt.rs`), so state that tasks share is plain
//! ownership, or an `Rc<RefCell<..>>` / `Cell` never borrowed across an
//! await. A lock or an atomic belongs only where another thread truly
//! reaches the value; each such file is listed below with that thread.
//!
//! Scans every .rs file of the daemon and of pathosd-core for lock and
//! atomic types and fails naming each file and line outside the list (and
//! each listed file that no longer has one, so the list stays true).

use std::fs;
use std::path::Path;

/// Files that may hold a lock or an atomic, and the thread that crosses.
/// Keep docs/architecture.md ("Locks that remain") in step.
const ALLOWED: &[(&str, &str)] = &[
    (
        "src/logging.rs",
        "the `log` backend is a global that the blocking pool's threads log through too (the sink Mutex, the reloaded level)",
    ),
    (
        "src/sys.rs",
        "the signal handler reads the self-pipe's fd (an atomic is what async-signal context allows)",
    ),
    (
        "src/check/probe/blocking.rs",
        "the bounded pool: its worker threads take jobs from the shared queue and count what they run",
    ),
];

/// Lock and atomic types (`PathAttr::AtomicAggregate` is BGP's, not one).
const LOCKS: &[&str] = &[
    "Mutex",
    "RwLock",
    "Condvar",
    "OnceLock",
    "LazyLock",
    "sync::atomic",
    "AtomicBool",
    "AtomicU8",
    "AtomicU16",
    "AtomicU32",
    "AtomicU64",
    "AtomicUsize",
    "AtomicI8",
    "AtomicI16",
    "AtomicI32",
    "AtomicI64",
    "AtomicIsize",
    "AtomicPtr",
];

const ROOTS: &[&str] = &["src", "crates/pathosd-core/src"];

#[path = "support/source_tree.rs"]
mod source_tree;
use source_tree::rust_files;

/// `file:line: text` for each lock or atomic in the code of `text` (the
/// comment part of a line is not code), up to its unit tests (a
/// `#[cfg(test)]` followed by `mod tests`): the tests run on threads of
/// their own and are not in the binary.
fn sites(file: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("mod tests"))
        {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        if LOCKS.iter().any(|l| code.contains(l)) {
            out.push(format!("{file}:{}: {}", i + 1, line.trim()));
        }
    }
    out
}

#[test]
fn locks_only_where_a_thread_crosses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for r in ROOTS {
        rust_files(&root.join(r), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut unexpected = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .expect("under the crate")
            .to_string_lossy()
            .into_owned();
        // A module's unit tests in a file of their own (`mod tests;`).
        if rel.ends_with("/tests.rs") {
            continue;
        }
        let text = fs::read_to_string(f).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let found = sites(&rel, &text);
        if found.is_empty() {
            continue;
        }
        match ALLOWED.iter().position(|(a, _)| *a == rel) {
            Some(i) => used[i] = true,
            None => unexpected.extend(found),
        }
    }
    assert!(
        unexpected.is_empty(),
        "a lock or atomic outside the files another thread reaches (tasks on the daemon's \
         thread share state as Rc<RefCell>/Cell or by ownership; if a thread truly crosses \
         here, add the file to ALLOWED with that thread, and to docs/architecture.md):\n{}",
        unexpected.join("\n")
    );
    let stale: Vec<&str> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|((f, _), _)| *f)
        .collect();
    assert!(
        stale.is_empty(),
        "listed as holding a lock, but none is left (drop them from ALLOWED and docs/architecture.md): {stale:?}"
    );
}

#[test]
fn scanner_finds_locks_and_skips_comments_and_bgp_names() {
    let text = "use std::sync::Mutex;\n// a Mutex in a comment\nlet a = AtomicU32::new(0); // x\nPathAttr::AtomicAggregate => {}\nlet c: RefCell<u8>;\n#[cfg(test)]\nmod tests {\n    static M: Mutex<u8> = Mutex::new(0);\n}\n";
    assert_eq!(
        sites("x.rs", text),
        vec![
            "x.rs:1: use std::sync::Mutex;",
            "x.rs:3: let a = AtomicU32::new(0); // x",
        ]
    );
}
