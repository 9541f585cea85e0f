//! Shared helpers of the BGP interoperability tests: runners for real BIRD,
//! FRR and GoBGP daemons on loopback, per-test addresses, pathosd configs
//! and bounded polling. Each test binary uses a subset.
#![allow(dead_code)]

pub mod bird;
pub mod frr;
pub mod gobgp;

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use pathosd::config::{Config, Dur, Neighbor};

/// The addresses of one test: pathosd on `.1`, the peer daemon on `.2`,
/// inside 127.`block`.(pid % 200).0/24 so parallel tests and parallel test
/// binaries never share an address.
#[derive(Debug, Clone, Copy)]
pub struct Addrs {
    pub ours: Ipv4Addr,
    pub peer: Ipv4Addr,
}

impl Addrs {
    pub fn new(block: u8) -> Addrs {
        let third = (std::process::id() % 200) as u8;
        Addrs {
            ours: Ipv4Addr::new(127, block, third, 1),
            peer: Ipv4Addr::new(127, block, third, 2),
        }
    }
}

/// BGP port every test daemon listens on (on its own address).
pub const PORT: u16 = 1179;
pub const OUR_AS: u32 = 65001;
pub const PEER_AS: u32 = 65000;

/// A pathosd config with one eBGP neighbor `peer` on loopback: router_id and
/// local address `ours`, listening on ours:1179, short timers.
pub fn config(a: Addrs) -> Config {
    let mut cfg = Config {
        schema: "v1".into(),
        ..Config::default()
    };
    cfg.router.asn = OUR_AS;
    cfg.router.router_id = Some(IpAddr::V4(a.ours));
    cfg.router.local_address = Some(IpAddr::V4(a.ours));
    cfg.bgp.listen_address = Some(IpAddr::V4(a.ours));
    cfg.bgp.listen_port = i32::from(PORT);
    cfg.bgp.hold_time = Dur::secs(3);
    cfg.bgp.neighbors = vec![Neighbor {
        name: "peer".into(),
        address: Some(IpAddr::V4(a.peer)),
        port: PORT,
        peer_asn: PEER_AS,
        enable_multihop: true,
        ..Neighbor::default()
    }];
    cfg
}

/// [`config`] for peers that reject a 127/8 NEXT_HOP as martian (FRR sends
/// UPDATE Message Error / Invalid NEXT_HOP Attribute, GoBGP treats the
/// UPDATE as withdraw): the session stays on loopback (the neighbor's
/// local_address), the next hop is router_id `next_hop` (TEST-NET-1).
pub fn config_with_next_hop(a: Addrs, next_hop: Ipv4Addr) -> Config {
    let mut cfg = config(a);
    cfg.router.router_id = Some(IpAddr::V4(next_hop));
    cfg.router.local_address = None;
    cfg.bgp.neighbors[0].local_address = Some(IpAddr::V4(a.ours));
    cfg
}

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("pathosd-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `f` every 50 ms until it returns `Some` or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a command with a bounded run time; stdout on success.
pub fn run(cmd: &mut Command, timeout: Duration) -> Option<String> {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let end = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                return status.success().then_some(out);
            }
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// A child daemon killed (and reaped) on drop.
pub struct Daemon(pub std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Logs to stderr when PATHOSD_TEST_LOG is set (debugging aid).
pub fn init_log() {
    struct L;
    impl log::Log for L {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, r: &log::Record) {
            eprintln!("{} {}", r.level(), r.args());
        }
        fn flush(&self) {}
    }
    if std::env::var_os("PATHOSD_TEST_LOG").is_some() {
        static LOGGER: L = L;
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(log::LevelFilter::Debug);
        }
    }
}
