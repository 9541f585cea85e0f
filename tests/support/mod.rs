//! Helpers shared by the check integration tests: per-test loopback
//! addresses, real servers started as child processes, and check configs
//! decoded from JSON exactly as the daemon decodes them.
#![allow(dead_code)]

use pathosd::bgp::types::Prefix;
use pathosd::check::{CheckResult, Probe};
use pathosd::config::{Check, Errors, Field};
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback address private to one test in one process:
/// 127.(64 + pid % 64).(pid / 64 % 256).`n`.
pub fn test_ip(n: u8) -> Ipv4Addr {
    let pid = std::process::id();
    Ipv4Addr::new(127, 64 + (pid % 64) as u8, (pid / 64 % 256) as u8, n)
}

/// A fresh temporary directory for one test.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pathosd-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A child process killed (and reaped) when dropped.
pub struct Server {
    pub child: Child,
    /// The first line the server printed (e.g. its port), if it was asked to.
    pub line: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Spawns `cmd` and, when `wait_line` is set, waits (bounded) for its
    /// first line of stdout.
    pub fn spawn(cmd: &mut Command, wait_line: bool) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(if wait_line {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        let mut line = String::new();
        if wait_line {
            let out = child.stdout.take().unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut l = String::new();
                let mut r = BufReader::new(out);
                let _ = r.read_line(&mut l);
                let _ = tx.send(l);
                // Keep draining so the server never blocks on a full pipe.
                let _ = std::io::copy(&mut r, &mut std::io::sink());
            });
            line = rx
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("{cmd:?} printed nothing"));
            line = line.trim().to_string();
        }
        Server { child, line }
    }

    /// The port a support script printed as "PORT n".
    pub fn port(&self) -> u16 {
        self.line
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {:?}", self.line))
    }
}

/// Runs tests/support/servers.py with `args`; it prints "PORT n" when ready.
pub fn py_server(args: &[&str]) -> Server {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/servers.py");
    Server::spawn(Command::new("python3").arg(script).args(args), true)
}

/// Polls `f` until it returns true, for at most `limit`.
pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Waits until something accepts TCP connections on `addr`.
pub fn wait_tcp(addr: &str) {
    let a: std::net::SocketAddr = addr.parse().unwrap();
    assert!(
        wait_for(Duration::from_secs(20), || {
            std::net::TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok()
        }),
        "nothing listens on {addr}"
    );
}

/// Decodes a check from JSON as the config loader does.
pub fn check(v: serde_json::Value) -> Check {
    let mut errs = Errors::default();
    let c = Check::decode(&v, "check", &mut errs);
    assert!(errs.is_empty(), "{:?}", errs.0);
    c.unwrap()
}

pub fn prefix(s: &str) -> Prefix {
    s.parse().unwrap()
}

/// Builds the probe for a VIP prefix and runs it once.
pub fn probe(v: serde_json::Value, vip: &str) -> CheckResult {
    let p = Probe::new(&check(v), &prefix(vip)).unwrap_or_else(|e| panic!("build: {e}"));
    smol::block_on(p.run())
}
