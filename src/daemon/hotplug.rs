//! The hook runner: the owner queues each VIP transition (`Hooks::queue`,
//! from its one `report` path) on a bounded channel and goes on; this
//! task runs the hooks directory's scripts for each event, one at a time
//! and in file-name order. A script runs in its own process group, killed
//! whole when it outlives the timeout. A full queue drops the event and
//! counts it: the owner never waits for a hook.
//!
//! What OpenWrt does with `/etc/hotplug.d/<subsystem>` (base-files'
//! `/sbin/hotplug-call`, and procd's `hotplug.<subsystem>` ubus objects in
//! hotplug-dispatch.c), and what this runner does alike:
//! - hotplug-call loops over `$(ls /etc/hotplug.d/$1/*)` and runs
//!   `( [ -f $script ] && . $script )`; procd globs `<dir>/*` and runs
//!   `/bin/sh -c ". /lib/functions.sh; . <script>"` for each in turn. Both:
//!   dot files skipped, names in bytewise order (no locale on OpenWrt),
//!   only regular files or links to them, no execute bit needed, the
//!   script sourced by a shell that has `/lib/functions.sh` loaded
//!   (`config_load`, `config_get` … work without sourcing it), its exit
//!   status ignored and the next script run. Here: the same order and
//!   filter, and `/bin/sh -c 'export ACTION=…; . /lib/functions.sh; .
//!   "$0"' <script>` (`HookEvent::script`), the functions left out where
//!   the file is missing (a host that is not OpenWrt, the tests).
//! - The environment: the caller's variables added to the parent's (procd
//!   passes its own, with PATH; hotplug-call sets PATH, USER and LOGNAME
//!   and HOTPLUG_TYPE). Here: the daemon's (procd's, for a service) plus
//!   the event's variables, exported by that shell (std's per-child
//!   environment table would cost flash for nothing more); stdin, stdout
//!   and stderr are /dev/null, as in procd.
//! - Neither has a timeout, and procd runs the scripts of different events
//!   at the same time. Here the events are strictly one after another (a
//!   hook sees the transitions in SEQ order) and `hooks.timeout` kills a
//!   script with its process group, so one stuck script cannot hold every
//!   later event; docs/openwrt.md says so to the router's owner.

use crate::chan::{Rx, Tx};
use crate::daemon::hooks::{order, HookEvent, HookSeq};
use crate::vip::VipState;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The owner's end: numbers the events and queues them.
pub(crate) struct Hooks {
    tx: Tx<Box<HookEvent>>,
    seq: HookSeq,
    _runner: smol::Task<()>,
}

impl Hooks {
    /// The runner for `dir`; None when `dir` is empty (hooks off).
    pub(crate) fn start(dir: &Path, timeout: Duration, queue: usize) -> Option<Hooks> {
        if dir.as_os_str().is_empty() {
            return None;
        }
        let (tx, rx) = crate::chan::bounded(queue.max(1));
        let runner = crate::rt::spawn(run(rx, dir.to_path_buf(), timeout));
        Some(Hooks {
            tx,
            seq: HookSeq::default(),
            _runner: runner,
        })
    }

    /// Queues one transition's event, or drops and counts it when the
    /// queue is full.
    pub(crate) fn queue(
        &mut self,
        vip: &str,
        prefix: &str,
        from: VipState,
        to: VipState,
        reason: &str,
    ) {
        let ev = HookEvent {
            seq: self.seq.take(),
            vip: vip.to_string(),
            prefix: prefix.to_string(),
            from,
            to,
            reason: reason.to_string(),
        };
        if self.tx.try_send(Box::new(ev)).is_err() {
            self.seq.dropped();
            log::warn!("hooks: queue full, event of vip {vip} dropped");
        }
    }

    /// Events dropped because the queue was full.
    pub(crate) fn drops(&self) -> u64 {
        self.seq.drops()
    }
}

async fn run(rx: Rx<Box<HookEvent>>, dir: PathBuf, timeout: Duration) {
    while let Ok(ev) = rx.recv().await {
        // The owner queued the event in the same turn that woke the BGP
        // sessions with the route change, and this task was woken first:
        // one yield puts it behind them on the daemon's one thread, so the
        // UPDATE is written before a shell is forked (a hook that starts at
        // once would otherwise add its fork and exec, about 1 ms, to the
        // withdraw; benches/hook-latency.sh).
        smol::future::yield_now().await;
        // Read again for each event: a package installed or removed
        // since takes effect at once, as with hotplug.
        let names = match std::fs::read_dir(&dir) {
            Ok(d) => d
                .filter_map(|e| e.ok())
                // metadata, not file_type: a link to a script runs, as
                // hotplug-call's `[ -f ]` and procd's glob let it.
                .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .collect(),
            // No directory: no hooks, and nothing to say about it.
            Err(_) => Vec::new(),
        };
        for name in order(names) {
            run_one(&dir.join(&name), &ev, timeout).await;
        }
    }
}

async fn run_one(script: &Path, ev: &HookEvent, timeout: Duration) {
    // The event's exports, OpenWrt's shell functions, then the hook
    // sourced as hotplug-call and procd do; `$0` is the hook, as with `sh
    // hook`. pgid = pid: the timeout kills the hook and its children.
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(ev.script()).arg(script).process_group(0);
    // As hotplug-call's, a hook's output goes nowhere. Set on smol's
    // Command: converting a std Command forgets its stdio, and spawn would
    // then give the hook the daemon's own stdout and stderr.
    let mut cmd = smol::process::Command::from(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            log::warn!("hooks: {}: {}", script.display(), crate::net::io_msg(&e));
            return;
        }
    };
    let mut guard = crate::sys::GroupGuard {
        pgid: child.id(),
        armed: true,
    };
    let status = smol::future::or(async { Some(child.status().await) }, async {
        crate::rt::sleep(timeout).await;
        None
    })
    .await;
    let Some(status) = status else {
        log::warn!(
            "hooks: {} seq {}: killed after {:?}",
            script.display(),
            ev.seq,
            timeout
        );
        drop(guard);
        // SIGKILL went to the group: the reap is bounded.
        let _ = child.status().await;
        return;
    };
    guard.armed = false;
    match status {
        Ok(s) if s.success() => {}
        // The code alone (a signal: None): ExitStatus's Display costs flash.
        Ok(s) => log::info!(
            "hooks: {} seq {}: exit {:?}",
            script.display(),
            ev.seq,
            s.code()
        ),
        Err(e) => log::warn!("hooks: {}: {}", script.display(), crate::net::io_msg(&e)),
    }
}
