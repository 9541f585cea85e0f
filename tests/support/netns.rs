//! Commands for the tests that build network namespaces (they run as root).

use std::process::Command;

/// Runs `args[0]` with the rest as arguments; it must succeed.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `ip args`; it must succeed.
pub fn ip(args: &[&str]) {
    let mut a = vec!["ip"];
    a.extend_from_slice(args);
    sh(&a);
}

/// A named network namespace, deleted on drop (also after a panic).
pub struct Netns(pub String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs this test binary's ignored test `test` alone inside `ns`, with the
/// environment variable `env` set to the namespace's name (the inner test
/// refuses to run without it); it must have run and passed.
pub fn run_ignored_in(ns: &str, test: &str, env: &str) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env, ns)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test} failed in {ns}:\n{text}");
    assert!(text.contains("1 passed"), "{test} did not run:\n{text}");
}
