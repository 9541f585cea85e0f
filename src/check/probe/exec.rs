//! exec: run a program with arguments (no shell). Exit 0 passes; the first
//! line of output goes into the detail. The program runs in its own process
//! group, and the whole group is killed when the check times out, so a script
//! that started children does not leave them behind.

use crate::check::result::CheckResult;
use crate::config::ExecCheck;
use crate::net::io_msg;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Stdio;
use std::time::Instant;

#[derive(Debug)]
pub(crate) struct ExecProbe {
    command: String,
    args: Vec<String>,
}

impl ExecProbe {
    /// The program and its arguments as configured (no shell: nothing to
    /// parse; validation checked `command` is set).
    pub fn new(c: &ExecCheck) -> ExecProbe {
        ExecProbe {
            command: c.command.clone(),
            args: c.args.clone(),
        }
    }

    pub fn what(&self) -> String {
        format!("exec {}", self.command)
    }

    pub async fn run(&self, _deadline: Instant) -> CheckResult {
        let mut cmd = std::process::Command::new(&self.command);
        // pgid = pid: the timeout kills the script and its children.
        cmd.args(&self.args).process_group(0);
        let mut cmd = smol::process::Command::from(cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return CheckResult::fail(format!("exec {}: {}", self.command, io_msg(&e))),
        };
        let mut guard = crate::sys::GroupGuard {
            pgid: child.id(),
            armed: true,
        };
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let ((stdout, stderr), status) = smol::future::zip(
            smol::future::zip(head(stdout), head(stderr)),
            child.status(),
        )
        .await;
        guard.armed = false;
        let status = match status {
            Ok(s) => s,
            Err(e) => return CheckResult::fail(format!("exec {}: {}", self.command, io_msg(&e))),
        };
        let out = std::process::Output {
            status,
            stdout,
            stderr,
        };
        let line = first_line(&out.stdout)
            .or_else(|| first_line(&out.stderr))
            .unwrap_or_default();
        let status = match (out.status.code(), out.status.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "exit unknown".to_string(),
        };
        let detail = if line.is_empty() {
            status
        } else {
            format!("{status}: {line}")
        };
        let r = if out.status.success() {
            CheckResult::pass(detail)
        } else {
            CheckResult::fail(detail)
        };
        match out.status.code() {
            Some(c) => r.with("exit_code", c),
            None => r,
        }
    }
}

/// Keeps the first 4 KiB of a pipe and drains the rest, so a chatty script
/// neither blocks on a full pipe nor fills the router's memory.
async fn head(pipe: Option<impl smol::io::AsyncRead + Unpin>) -> Vec<u8> {
    use smol::io::AsyncReadExt;
    const KEEP: usize = 4096;
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = KEEP.saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&buf[..room]);
    }
    kept
}

fn first_line(b: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(b);
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(200).collect())
}
