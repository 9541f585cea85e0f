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
//!
//! The timer rule of the same section and of `src/rt.rs` too: a task on
//! the daemon's thread waits only through `rt` (`rt::sleep`, `sleep_until`,
//! `sleep_around`, `sleep_window`), whose waits share the thread's
//! wake-ups, never through `smol::Timer` / `async_io::Timer`, a timerfd on
//! async-io's reactor that wakes async-io's thread at each expiry and joins
//! no other wait. An async-io timer outside `src/rt.rs` (its fallback off
//! the daemon's thread) fails, naming file and line, beyond the places
//! listed as not moved yet; so does a listed place that holds fewer.

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
        "src/pool.rs",
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

/// Files that still wait through an async-io timer on the daemon's
/// thread, and how many such lines each holds: none is left. The list
/// only shrinks (each moves to `rt::sleep` / `rt::sleep_until` like for
/// like), and an entry that no longer matches as many lines fails, so it
/// never allows what nothing needs.
const TIMERS_NOT_MOVED_YET: &[(&str, usize)] = &[];

/// How an async-io timer is written.
const TIMERS: &[&str] = &[
    "smol::Timer",
    "async_io::Timer",
    "Timer::after",
    "Timer::at",
    "Timer::interval",
    "Timer::never",
];

const ROOTS: &[&str] = &["src", "crates/pathosd-core/src"];

#[path = "support/source_tree.rs"]
mod source_tree;
use source_tree::rust_files;

/// `file:line: text` for each line whose code holds one of `needles` (the
/// comment part of a line is not code), up to the file's unit tests (a
/// `#[cfg(test)]` followed by `mod tests`): the tests run on threads of
/// their own and are not in the binary.
fn sites(file: &str, text: &str, needles: &[&str]) -> Vec<String> {
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
        if needles.iter().any(|l| code.contains(l)) {
            out.push(format!("{file}:{}: {}", i + 1, line.trim()));
        }
    }
    out
}

/// Each source file of the daemon and of pathosd-core, as its path in the
/// crate and its text, without the unit tests in files of their own
/// (`mod tests;` in `tests.rs`).
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for r in ROOTS {
        rust_files(&root.join(r), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(root)
                .expect("under the crate")
                .to_string_lossy()
                .into_owned();
            let text = fs::read_to_string(f).unwrap_or_else(|e| panic!("{rel}: {e}"));
            (rel, text)
        })
        .filter(|(rel, _)| !rel.ends_with("/tests.rs"))
        .collect()
}

#[test]
fn locks_only_where_a_thread_crosses() {
    let mut unexpected = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for (rel, text) in sources() {
        let found = sites(&rel, &text, LOCKS);
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

/// The timer lines beyond `allowed` (file, lines), and the entries of
/// `allowed` that match fewer lines than they allow (stale).
fn timer_sites(
    sources: &[(String, String)],
    allowed: &[(&str, usize)],
) -> (Vec<String>, Vec<String>) {
    let mut unexpected = Vec::new();
    let mut found_in = vec![0; allowed.len()];
    for (rel, text) in sources {
        // The runtime's own fallback off the daemon's thread.
        if rel == "src/rt.rs" {
            continue;
        }
        let found = sites(rel, text, TIMERS);
        match allowed.iter().position(|(a, _)| a == rel) {
            Some(i) if found.len() <= allowed[i].1 => found_in[i] = found.len(),
            _ => unexpected.extend(found),
        }
    }
    let stale = allowed
        .iter()
        .zip(found_in)
        .filter(|((_, n), found)| found < n)
        .map(|((f, n), found)| format!("{f}: {n} allowed, {found} found"))
        .collect();
    (unexpected, stale)
}

#[test]
fn the_daemon_thread_waits_through_rt_only() {
    let (unexpected, stale) = timer_sites(&sources(), TIMERS_NOT_MOVED_YET);
    assert!(
        unexpected.is_empty(),
        "an async-io timer on the daemon's thread (wait through crate::rt instead: \
         rt::sleep(d) for Timer::after(d), rt::sleep_until(t) for Timer::at(t); see src/rt.rs):\n{}",
        unexpected.join("\n")
    );
    assert!(
        stale.is_empty(),
        "TIMERS_NOT_MOVED_YET allows more timer lines than are left (lower or drop the entry):\n{}",
        stale.join("\n")
    );
}

#[test]
fn a_timer_allowance_that_matches_less_is_stale() {
    let files = vec![
        (
            "src/a.rs".to_string(),
            "smol::Timer::after(d).await;\n".to_string(),
        ),
        ("src/b.rs".to_string(), "rt::sleep(d).await;\n".to_string()),
    ];
    assert_eq!(timer_sites(&files, &[("src/a.rs", 1)]), (vec![], vec![]));
    assert_eq!(
        timer_sites(&files, &[("src/a.rs", 2), ("src/b.rs", 1)]),
        (
            vec![],
            vec![
                "src/a.rs: 2 allowed, 1 found".to_string(),
                "src/b.rs: 1 allowed, 0 found".to_string()
            ]
        )
    );
    assert_eq!(
        timer_sites(&files, &[]),
        (
            vec!["src/a.rs:1: smol::Timer::after(d).await;".to_string()],
            vec![]
        )
    );
}

#[test]
fn scanner_finds_locks_and_skips_comments_and_bgp_names() {
    let text = "use std::sync::Mutex;\n// a Mutex in a comment\nlet a = AtomicU32::new(0); // x\nPathAttr::AtomicAggregate => {}\nlet c: RefCell<u8>;\n#[cfg(test)]\nmod tests {\n    static M: Mutex<u8> = Mutex::new(0);\n}\n";
    assert_eq!(
        sites("x.rs", text, LOCKS),
        vec![
            "x.rs:1: use std::sync::Mutex;",
            "x.rs:3: let a = AtomicU32::new(0); // x",
        ]
    );
}

#[test]
fn scanner_finds_timers_and_skips_comments_and_tests() {
    let text = "use smol::Timer;\n// smol::Timer::after in a comment\nsmol::Timer::after(d).await; // x\nrt::sleep(d).await;\n#[cfg(test)]\nmod tests {\n    async_io::Timer::after(d).await;\n}\n";
    assert_eq!(
        sites("x.rs", text, TIMERS),
        vec![
            "x.rs:1: use smol::Timer;",
            "x.rs:3: smol::Timer::after(d).await; // x"
        ]
    );
}
