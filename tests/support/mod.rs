//! Helpers shared by the integration tests: per-test loopback addresses,
//! real servers and peers (BIRD, FRR, GoBGP, python servers) started as child
//! processes, configs decoded as the daemon decodes them, bounded polling.
#![allow(dead_code)]

pub mod bird;
pub mod daemon;
pub mod frr;
pub mod gobgp;
pub mod logd;
pub mod netns;
pub mod procd;
pub mod ubus;
pub mod ubus_broker;

use pathosd::bgp::types::Prefix;
use pathosd::check::{CheckResult, Probe};
use pathosd::config::{Check, CheckSpec, Config, Dur, Errors, Field, Neighbor};
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback address private to one test in one process:
/// 127.(64 + pid % 64).(pid / 64 % 256).`n`.
pub fn test_ip(n: u8) -> Ipv4Addr {
    let pid = std::process::id();
    Ipv4Addr::new(127, 64 + (pid % 64) as u8, (pid / 64 % 256) as u8, n)
}

/// A TCP port nothing listens on yet at `ip` (the OS picks it; the test's
/// address is its own, so nobody else takes it afterwards).
pub fn free_tcp_port<A>(ip: A) -> u16
where
    (A, u16): std::net::ToSocketAddrs,
{
    std::net::TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A UDP port nothing is bound to yet at `ip`, as [`free_tcp_port`].
pub fn free_udp_port<A>(ip: A) -> u16
where
    (A, u16): std::net::ToSocketAddrs,
{
    std::net::UdpSocket::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fresh temporary directory for one test, removed when dropped.
pub fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(tag)
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
/// Without an explicit interval the tests' timeouts would exceed the 1s
/// default, which the probe rejects; 10s is long enough for all of them.
pub fn check(mut v: serde_json::Value) -> Check {
    if v.get("interval").is_none() {
        v["interval"] = serde_json::json!("10s");
    }
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
    let p = build_probe(check(v), vip).unwrap_or_else(|e| panic!("build: {e}"));
    smol::block_on(p.run())
}

/// `c` as the daemon runs it on a VIP with prefix `vip`, through the run
/// config's own constructor; panics for a check validation would reject.
pub fn resolved(c: Check, vip: &str) -> CheckSpec {
    let shown = format!("{c:?}");
    pathosd::config::run::check_spec(c, &prefix(vip))
        .unwrap_or_else(|e| panic!("{shown} on {vip}: {e}"))
}

/// The probe of check `c` on a VIP with prefix `vip`, built as the daemon
/// builds it.
pub fn build_probe(c: Check, vip: &str) -> Result<Probe, String> {
    Probe::new(&resolved(c, vip))
}

/// The validation errors ("path: message") of a config whose one VIP has
/// prefix `vip` and the one check `v`.
pub fn check_errors(v: serde_json::Value, vip: &str) -> Vec<String> {
    let cfg = serde_json::json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": "10.0.0.1", "local_address": "127.0.0.1"},
        "bgp": {"neighbors": [{"name": "bird", "address": "127.0.0.2", "peer_asn": 65000}]},
        "vips": [{"name": "web", "prefix": vip, "check": v}]
    });
    match pathosd::config::load_str(&cfg.to_string(), None, &|_| None) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

/// Certificates made by openssl for one test: a CA, a server certificate
/// for `web.pathosd.test`, the test's IP and ::1, and a client certificate.
pub struct Pki {
    pub ca: String,
    pub cert: String,
    pub key: String,
    pub client_cert: String,
    pub client_key: String,
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn pki(dir: &std::path::Path, ip: &str) -> Pki {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509"];
    a.extend(ec);
    a.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=pathosd test CA",
    ]);
    openssl(dir, &a);
    for (name, cn, ext) in [
        (
            "srv",
            "web.pathosd.test",
            format!(
                "subjectAltName=DNS:web.pathosd.test,IP:{ip},IP:::1\nextendedKeyUsage=serverAuth\n"
            ),
        ),
        (
            "cli",
            "pathosd client",
            "extendedKeyUsage=clientAuth\n".to_string(),
        ),
    ] {
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        let subj = format!("/CN={cn}");
        let (key, csr, pem, extf) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
            format!("{name}.ext"),
        );
        let mut a = vec!["req"];
        a.extend(ec);
        a.extend(["-keyout", &key, "-out", &csr, "-subj", &subj]);
        openssl(dir, &a);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                "2",
                "-extfile",
                &extf,
            ],
        );
    }
    let p = |f: &str| dir.join(f).display().to_string();
    Pki {
        ca: p("ca.pem"),
        cert: p("srv.pem"),
        key: p("srv.key"),
        client_cert: p("cli.pem"),
        client_key: p("cli.key"),
    }
}

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
/// local address `ours`, listening on ours:1179, short timers. The speaker
/// runs it through [`run_config`], as the daemon's config is made.
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
    // Validation asks for a VIP; the speaker's routes are the tests' own.
    cfg.vips = vec![pathosd::config::Vip {
        name: "unused".into(),
        prefix: prefix("10.255.255.1/32").into(),
        always: true,
        ..pathosd::config::Vip::default()
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

/// `cfg` through the run config's constructor (it validates), as the
/// daemon's config is made; panics with the errors of an invalid one.
pub fn run_config(cfg: &Config) -> pathosd::config::RunConfig {
    pathosd::config::RunConfig::new(cfg.clone())
        .unwrap_or_else(|e| panic!("invalid test config: {e:?}"))
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

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
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

/// `promtool check metrics` must accept the text and print nothing (no lint
/// findings either).
pub fn promtool_check(text: &str) {
    use std::io::Write;
    let mut p = Command::new("/usr/bin/promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus)");
    p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    let msg = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool: {msg}\n{text}");
    assert!(msg.trim().is_empty(), "promtool findings: {msg}");
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

/// Runs `f` on this test process's daemon thread: a thread that runs
/// pathosd's one-thread runtime (`pathosd::rt::block_on`) as `pathosd run`'s
/// main thread does, so the tasks `f` spawns (BGP sessions, their accept
/// loop, a reconfigure's restarts) run there, concurrently with the test.
/// Returns what `f` returns; panics if the thread does not answer in 10 s.
pub fn on_rt<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    type Job = Box<dyn FnOnce() + Send>;
    static RT: std::sync::OnceLock<smol::channel::Sender<Job>> = std::sync::OnceLock::new();
    let jobs = RT.get_or_init(|| {
        let (tx, rx) = smol::channel::unbounded::<Job>();
        std::thread::Builder::new()
            .name("daemon".into())
            .spawn(move || {
                pathosd::rt::block_on(async move {
                    while let Ok(job) = rx.recv().await {
                        job();
                    }
                })
            })
            .expect("start the daemon thread");
        tx
    });
    let (tx, rx) = std::sync::mpsc::channel();
    jobs.send_blocking(Box::new(move || {
        let _ = tx.send(f());
    }))
    .expect("the daemon thread is running");
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the daemon thread answered")
}

thread_local! {
    /// The values [`OnRt`] keeps on the daemon thread, by id.
    static ON_RT: std::cell::RefCell<std::collections::HashMap<u64, Box<dyn std::any::Any>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// A value that lives on the daemon thread of [`on_rt`] (one that is not
/// `Send`, like the BGP speaker's handle, whose state only that thread
/// touches); the test thread reaches it through [`OnRt::with`].
pub struct OnRt<T: 'static> {
    id: u64,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<T: 'static> OnRt<T> {
    /// Makes the value with `f` on the daemon thread.
    pub fn new(f: impl FnOnce() -> T + Send + 'static) -> Self {
        match Self::try_new(move || Ok::<T, ()>(f())) {
            Ok(v) => v,
            Err(()) => unreachable!(),
        }
    }

    /// Makes the value with `f` on the daemon thread, or returns its error.
    pub fn try_new<E: Send + 'static>(
        f: impl FnOnce() -> Result<T, E> + Send + 'static,
    ) -> Result<Self, E> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        on_rt(move || {
            let v: Box<dyn std::any::Any> = Box::new(f()?);
            ON_RT.with(|m| m.borrow_mut().insert(id, v));
            Ok(())
        })?;
        Ok(OnRt {
            id,
            _t: std::marker::PhantomData,
        })
    }

    /// Runs `f` on the value, on the daemon thread.
    pub fn with<R: Send + 'static>(&self, f: impl FnOnce(&mut T) -> R + Send + 'static) -> R {
        let id = self.id;
        on_rt(move || {
            // Taken out for the call, so `f` may spawn or reach other values.
            let mut v = ON_RT
                .with(|m| m.borrow_mut().remove(&id))
                .expect("the value lives");
            let r = f(v.downcast_mut::<T>().expect("the value's type"));
            ON_RT.with(|m| m.borrow_mut().insert(id, v));
            r
        })
    }

    /// Runs the future `f` makes of the value as a task on the daemon
    /// thread and waits (at most `limit`) for it to end.
    pub fn run<R: Send + 'static, F: std::future::Future<Output = (T, R)> + 'static>(
        &self,
        limit: Duration,
        f: impl FnOnce(T) -> F + Send + 'static,
    ) -> R {
        let id = self.id;
        let (tx, rx) = std::sync::mpsc::channel();
        on_rt(move || {
            let v = ON_RT
                .with(|m| m.borrow_mut().remove(&id))
                .expect("the value lives");
            let v = *v.downcast::<T>().expect("the value's type");
            pathosd::rt::spawn(async move {
                let (v, r) = f(v).await;
                ON_RT.with(|m| m.borrow_mut().insert(id, Box::new(v)));
                let _ = tx.send(r);
            })
            .detach();
        });
        rx.recv_timeout(limit).expect("the task ended in time")
    }
}

impl<T: 'static> Drop for OnRt<T> {
    fn drop(&mut self) {
        let id = self.id;
        // Dropped where it lives (its tasks are that thread's).
        on_rt(move || {
            let v = ON_RT.with(|m| m.borrow_mut().remove(&id));
            drop(v);
        });
    }
}

/// The BGP speaker's handle on the daemon thread, with the calls the tests
/// make.
pub struct TestSpeaker(pub OnRt<pathosd::bgp::driver::SpeakerHandle>);

impl TestSpeaker {
    /// `Speaker::start` on the daemon thread, with `cfg` made a run config
    /// as the daemon's is.
    pub fn start(
        cfg: &Config,
        events: pathosd::chan::Tx<pathosd::bgp::speaker::PeerEvent>,
    ) -> std::io::Result<TestSpeaker> {
        let cfg = run_config(cfg);
        OnRt::try_new(move || pathosd::bgp::driver::Speaker::start(&cfg, events)).map(TestSpeaker)
    }

    pub fn peers(&self) -> Vec<pathosd::bgp::driver::PeerStatus> {
        self.0.with(|s| s.peers())
    }

    pub fn mark_initial_done(&self) {
        self.0.with(|s| s.mark_initial_done())
    }

    /// Every route peer `peer` has from us (its Adj-RIB-Out), in prefix order.
    pub fn routes(&self, peer: usize) -> Vec<(Prefix, pathosd::bgp::types::PathAttrs)> {
        self.0.with(move |s| {
            let mut out = Vec::new();
            s.routes(peer, None, usize::MAX, &mut out);
            out
        })
    }

    pub fn set_route(&self, prefix: Prefix, intent: Option<pathosd::bgp::types::RouteIntent>) {
        self.0.with(move |s| s.set_route(prefix, intent))
    }

    pub fn set_routes(&self, routes: Vec<(Prefix, Option<pathosd::bgp::types::RouteIntent>)>) {
        let routes = routes
            .into_iter()
            .map(|(p, i)| (p, i.map(std::sync::Arc::new)));
        self.0.with(move |s| s.set_routes(routes))
    }

    /// `reconfigure` with `cfg` as a run config and a plan that restarts
    /// the neighbors named in `restart` (its new sessions start on the
    /// daemon thread).
    pub fn reconfigure(&self, cfg: &Config, restart: &[&str]) {
        use pathosd::daemon::reload::NeighborChange;
        let cfg = run_config(cfg);
        let plan: Vec<(String, NeighborChange)> = restart
            .iter()
            .map(|n| (n.to_string(), NeighborChange::Restarted))
            .collect();
        self.0.with(move |s| s.reconfigure(&cfg, &plan))
    }

    /// Every route re-announced with GRACEFUL_SHUTDOWN.
    pub fn announce_graceful_shutdown(&self) {
        self.0.with(|s| s.announce_graceful_shutdown())
    }

    /// The graceful stop, waited for (bounded: `drain` plus 10 s).
    pub fn shutdown(&self, message: &str, drain: Duration) {
        let message = message.to_string();
        self.0
            .run(drain + Duration::from_secs(10), move |mut s| async move {
                s.shutdown(&message, drain).await;
                (s, ())
            })
    }
}

/// A chunked body (RFC 9112 §7.1) decoded; None unless it is whole: every
/// chunk complete and the last (empty) one there.
pub fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    // Bounded: each turn takes a size line off the body.
    loop {
        let line = b.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&b[..line]).ok()?.trim(), 16).ok()?;
        b = &b[line + 2..];
        if size == 0 {
            return b.starts_with(b"\r\n").then_some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size..)?.strip_prefix(b"\r\n")?;
    }
}

/// A `Vm…` line of /proc/PID/status (`VmRSS`, `VmStk`), in KiB.
pub fn vm_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    line.trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{field} of {pid}: {line}: {e}"))
}
