//! A large file is checked by a child `pathosd validate` before the daemon
//! reads it on a reload. The daemon's heap then never holds a file it
//! refuses: decoding a 4 MiB file takes 5 to 12 MB at its peak, and musl's
//! allocator, OpenWrt's, keeps part of what the decoding freed (a refused
//! reload left a daemon 2 to 4.5 MB larger each time). The child takes
//! that peak and gives it all back when it exits. A valid file is then
//! read by the daemon as any other.

use pathosd_core::config::load::Format;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Files from this size on are checked in a child first: below it the
/// daemon's own load costs little (a few hundred VIPs), and a reload
/// spawns nothing.
pub(super) const CHILD_CHECK_BYTES: u64 = 256 * 1024;

/// How long the child may take: the largest file (4 MiB) takes about a
/// second on a router's CPU.
const CHILD_CHECK_LIMIT: Duration = Duration::from_secs(30);

/// The most of the child's errors kept: the loader stops at 10,000 errors,
/// each a line.
const CHILD_OUTPUT_MAX: usize = 4 << 20;

/// The errors of the file at `path` when a child `pathosd validate` refuses
/// it; None when the file is small, passes, or the child could not say
/// (it could not start, was killed, or took too long): the daemon's own
/// load then decides, as for any file.
pub(super) fn refused(path: &Path, format: Option<Format>) -> Option<Vec<String>> {
    let size = std::fs::metadata(path).ok()?.len();
    if size < CHILD_CHECK_BYTES {
        return None;
    }
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("validate").arg("--config").arg(path);
    if let Some(f) = format {
        cmd.arg("--format").arg(match f {
            Format::Json => "json",
            Format::Uci => "uci",
        });
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            log::warn!("reload: cannot check the file in a child ({e}); checking it here");
            return None;
        }
    };
    let out = child
        .stderr
        .take()
        .map(|err| read_bounded(err, Instant::now() + CHILD_CHECK_LIMIT));
    let Some(Ok(text)) = out else {
        // Out of time (or its output unreadable): it is stopped, and the
        // daemon checks the file itself.
        let _ = child.kill();
        let _ = child.wait();
        log::warn!("reload: the child check of the file did not finish; checking it here");
        return None;
    };
    let status = child.wait().ok()?;
    if status.code() != Some(crate::cli::EXIT_INVALID) {
        return None;
    }
    // Its first line is the count ("pathosd: FILE: invalid configuration
    // (N errors):"), then an error a line, as the daemon's own load says
    // them.
    let errs: Vec<String> = text
        .lines()
        .skip_while(|l| l.starts_with("pathosd: "))
        .map(str::to_string)
        .collect();
    (!errs.is_empty()).then_some(errs)
}

/// The child's standard error to its end, by `deadline`, at most
/// [`CHILD_OUTPUT_MAX`] bytes of it kept.
fn read_bounded(mut err: std::process::ChildStderr, deadline: Instant) -> Result<String, ()> {
    let mut text = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !crate::sys::wait_readable(&err, left).unwrap_or(false) {
            return Err(());
        }
        match err.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = CHILD_OUTPUT_MAX.saturating_sub(text.len());
                text.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(String::from_utf8_lossy(&text).into_owned())
}
