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
