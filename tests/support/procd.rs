//! procd's side of the shipped init script, for the tests that must see
//! what a router owner's `/etc/init.d/pathosd stop`, `start`, `restart` and
//! a package upgrade do to a running pathosd: one service with one
//! instance, modelled on procd's service/instance.c (read from
//! openwrt/procd and checked there on the real procd, docs/testing.md):
//!
//! * `service set` (start): no instance runs → it starts; an instance that
//!   is stopping (SIGTERM sent, not yet exited) is marked to start again
//!   when it exits (instance_start: `proc.pending && halt` → `restart`);
//!   an instance that runs with the same command is left alone
//!   (instance_update: no config change, no restart) — why an apk upgrade
//!   needs a restart;
//! * `service delete` (stop): SIGTERM, and SIGKILL once `term_timeout`
//!   seconds pass without an exit (instance_stop, instance_timeout); the
//!   call returns at once;
//! * an instance's exit is seen by a thread that waits on it
//!   (instance_exit): a stopping instance marked to start again starts at
//!   once, with the command as it is on disk then.
//!
//! `term_timeout` is read from the shipped init script. The instance's
//! stdout and stderr go, appended across instances, to one log file (procd
//! sends them to logd). Every process this starts is ended on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The init script the package installs as /etc/init.d/pathosd.
const INIT_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/files/pathosd.init");

/// `procd_set_param term_timeout N` in the shipped init script (procd's
/// default, 5, without it).
pub fn term_timeout() -> Duration {
    let script =
        std::fs::read_to_string(INIT_SCRIPT).unwrap_or_else(|e| panic!("{INIT_SCRIPT}: {e}"));
    let secs = script
        .lines()
        .filter_map(|l| l.trim().strip_prefix("procd_set_param term_timeout "))
        .find_map(|v| v.trim().parse().ok())
        .unwrap_or(5);
    Duration::from_secs(secs)
}

#[derive(Default)]
struct Instance {
    pid: Option<u32>,
    /// SIGTERM sent (procd's `halt`).
    halt: bool,
    /// Start again when the stopping instance exits.
    restart: bool,
    /// When SIGKILL is due, while halting.
    kill_at: Option<Instant>,
    /// Every exit, in order.
    exits: Vec<ExitStatus>,
    starts: usize,
}

struct Shared {
    inst: Mutex<Instance>,
    changed: Condvar,
    /// The command (argv) as procd has it; argv[0] is read from disk at
    /// each start.
    argv: Vec<String>,
    log: PathBuf,
}

/// One procd service with one instance.
pub struct Procd {
    shared: Arc<Shared>,
    term_timeout: Duration,
}

impl Procd {
    /// A service whose instance runs `argv` (not started yet).
    pub fn new(argv: &[&str], log: &Path) -> Procd {
        Procd {
            shared: Arc::new(Shared {
                inst: Mutex::new(Instance::default()),
                changed: Condvar::new(),
                argv: argv.iter().map(|s| s.to_string()).collect(),
                log: log.to_path_buf(),
            }),
            term_timeout: term_timeout(),
        }
    }

    /// `ubus call service set` (what the init script's start sends).
    pub fn set(&self) {
        let mut i = self.shared.inst.lock().unwrap();
        match (i.pid, i.halt) {
            (None, _) => start(&self.shared, &mut i),
            (Some(_), true) => i.restart = true,
            (Some(_), false) => {}
        }
    }

    /// `ubus call service delete` (the init script's stop): SIGTERM now,
    /// SIGKILL after term_timeout; returns at once.
    pub fn delete(&self) {
        let mut i = self.shared.inst.lock().unwrap();
        let Some(pid) = i.pid else { return };
        i.halt = true;
        i.restart = false;
        let at = Instant::now() + self.term_timeout;
        i.kill_at = Some(at);
        drop(i);
        kill(pid, "TERM");
        let shared = Arc::clone(&self.shared);
        // instance_timeout: the SIGKILL of a halting instance that has not
        // exited by then (the same instance: no new start in between).
        std::thread::spawn(move || {
            let mut i = shared.inst.lock().unwrap();
            loop {
                if i.pid != Some(pid) || i.kill_at != Some(at) {
                    return;
                }
                let now = Instant::now();
                if now >= at {
                    kill(pid, "KILL");
                    return;
                }
                i = shared.changed.wait_timeout(i, at - now).unwrap().0;
            }
        });
    }

    pub fn pid(&self) -> Option<u32> {
        self.shared.inst.lock().unwrap().pid
    }

    /// How many instances were started so far.
    pub fn starts(&self) -> usize {
        self.shared.inst.lock().unwrap().starts
    }

    /// The exit statuses seen so far.
    pub fn exits(&self) -> Vec<ExitStatus> {
        self.shared.inst.lock().unwrap().exits.clone()
    }

    /// Waits (bounded) until `f` holds of the instance's state.
    pub fn wait(&self, limit: Duration, f: impl Fn(Option<u32>, usize) -> bool) -> bool {
        let end = Instant::now() + limit;
        let mut i = self.shared.inst.lock().unwrap();
        loop {
            if f(i.pid, i.starts) {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            i = self.shared.changed.wait_timeout(i, end - now).unwrap().0;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.shared.log).unwrap_or_default()
    }
}

/// Starts the instance (instance_start) and a thread that waits for its
/// exit (instance_exit).
fn start(shared: &Arc<Shared>, i: &mut Instance) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&shared.log)
        .unwrap_or_else(|e| panic!("{}: {e}", shared.log.display()));
    let child: Child = Command::new(&shared.argv[0])
        .args(&shared.argv[1..])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("procd stand-in: cannot start {:?}: {e}", shared.argv));
    i.pid = Some(child.id());
    i.halt = false;
    i.restart = false;
    i.kill_at = None;
    i.starts += 1;
    shared.changed.notify_all();
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let mut child = child;
        let status = child.wait();
        let mut i = shared.inst.lock().unwrap();
        if let Ok(st) = status {
            i.exits.push(st);
        }
        let again = i.halt && i.restart;
        i.pid = None;
        i.halt = false;
        i.kill_at = None;
        if again {
            start(&shared, &mut i);
        }
        shared.changed.notify_all();
    });
}

fn kill(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

impl Drop for Procd {
    /// The service deleted and its instance gone (SIGKILL if it does not
    /// end on SIGTERM within term_timeout), bounded.
    fn drop(&mut self) {
        let pid = {
            let mut i = self.shared.inst.lock().unwrap();
            i.restart = false;
            i.halt = true;
            i.pid
        };
        if let Some(pid) = pid {
            kill(pid, "CONT");
            kill(pid, "KILL");
            let _ = self.wait(Duration::from_secs(5), |p, _| p.is_none());
        }
    }
}
