//! The client-traffic fabric: client traffic through an upstream router with
//! ECMP over two edge routers, each with its own BIRD, announcer (pathosd,
//! or ExaBGP + its healthcheck for benches/fabric.sh) and an HTTP backend on
//! the anycast VIP. Four network namespaces the test creates, addresses only
//! inside them:
//!
//! ```text
//!                                          ┌ 10.251.x.6 ns e1: BIRD 127.0.0.1 ── pathosd 127.0.0.2, backend on VIP
//!  ns c 10.251.x.1 ── 10.251.x.2 ns u ─────┤
//!  (client)              (BIRD, ECMP)      └ 10.251.x.10 ns e2: BIRD 127.0.0.1 ── pathosd 127.0.0.2, backend on VIP
//! ```
//!
//! Each edge is the router recipe (examples/openwrt-bird.conf): pathosd
//! talks to the edge's BIRD over loopback (hold 9, keepalive 3, graceful
//! restart off, error wait time 0,0), the VIP 10.250.x.1/32 is a local
//! address of the edge (on lo), and the edge's BIRD exports pathosd's route
//! to the upstream BIRD over eBGP. The upstream BIRD installs both paths as
//! one multipath route (kernel protocol, `merge paths on`) and the kernel
//! hashes on layer 4 (`fib_multipath_hash_policy=1`), so new connections
//! spread over both edges.
//!
//! The client is this test binary again (`fabric_client`, run in ns c): one
//! new TCP connection per request at 100 requests a second, bounded
//! connect and read timeouts, each result (when it was due, which edge
//! answered or why it failed) a line in a file the test reads. No
//! connection is reused, so no failure hides behind one. The backends are
//! this binary too (`fabric_backend`): an HTTP answer naming the edge.
//!
//! One fabric, then the scenarios in a row, each counting the failed
//! requests due between its start and its end (the routes settled) and
//! their window (last failure − first failure): steady, backend crash,
//! drain and undrain through the API, ubus (the in-tree broker, which
//! pathosd reaches through a unix socket from its namespace) and the drain
//! file, SIGTERM and a restart, the init script's stop and start, an opkg
//! upgrade and an apk upgrade with its restart (pathosd under a stand-in
//! of procd modelled on its instance code, tests/support/procd.rs, from
//! the restart on), a reload with a new check interval, and a
//! stalled pathosd whose backend dies (measured; without BFD only BIRD's
//! hold timer ends the session). Missing tools (`ip`, `bird`, `birdc`,
//! `curl`) fail the test.

mod support;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::daemon::Pathosd;
use support::netns::{sh, NsBird};
use support::procd::Procd;
use support::ubus::Caller;
use support::ubus_broker::{Broker, BrokerConfig};
use support::{poll, run, Daemon, TempDir};

/// Requests a second, one new connection each.
const RATE: u64 = 100;
/// The client's bounds on one request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const READ_TIMEOUT: Duration = Duration::from_secs(1);
/// The client exits on its own after this long, should the test not stop it.
const CLIENT_MAX: Duration = Duration::from_secs(400);
/// The VIP's check: http every second, rise 2, fall 3, withdraw on failure.
const INTERVAL_S: f64 = 1.0;
const FALL: u32 = 3;
const RISE: u32 = 2;
/// pathosd's and BIRD's hold time on the loopback session.
const HOLD_S: f64 = 9.0;
/// How long a route change may take to show at the upstream router.
const CONVERGE: Duration = Duration::from_secs(20);
const EDGES: [&str; 2] = ["e1", "e2"];

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Which announcer each edge runs.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Announcer {
    Pathosd,
    Exabgp,
}

/// How the fabric is built.
#[derive(Clone, Copy)]
pub struct Opts {
    pub announcer: Announcer,
    /// BFD on the loopback session: the edge BIRD runs `protocol bfd` with
    /// a multihop block and `bfd on` for pathosd; pathosd's neighbor gets a
    /// `bfd` block (100 ms, multiplier 3).
    pub bfd: bool,
}

/// The namespaces, veth pairs and daemons; everything stopped and deleted
/// on drop (also after a panic). Field order is drop order: processes go
/// before their namespaces.
struct Fabric {
    opts: Opts,
    client: Option<Daemon>,
    edges: Vec<Edge>,
    upstream: NsBird,
    dir: TempDir,
    net: Net,
}

struct Net {
    pid: u32,
    /// 10.251.`x`.0/28 for the links, 10.250.`x`.1 the VIP.
    x: u8,
    ns: Vec<String>,
    links: Vec<String>,
}

impl Net {
    fn name(&self, role: &str) -> String {
        format!("pd-fab-{role}-{}", self.pid)
    }

    fn addr(&self, host: u8) -> String {
        format!("10.251.{}.{host}", self.x)
    }

    fn vip(&self) -> String {
        format!("10.250.{}.1", self.x)
    }

    fn exec(&self, role: &str, args: &[&str]) {
        let ns = self.name(role);
        let mut a = vec!["ip", "netns", "exec", &ns];
        a.extend_from_slice(args);
        sh(&a);
    }

    /// A veth pair between `a` and `b` with /30 addresses `ha` and `hb`.
    fn link(&mut self, a: &str, ha: u8, b: &str, hb: u8) {
        let tag = self.pid % 1_000_000;
        let (la, lb) = (format!("pf{a}{b}{tag}"), format!("pf{b}{a}{tag}"));
        self.links.push(la.clone());
        self.links.push(lb.clone());
        sh(&[
            "ip", "link", "add", &la, "type", "veth", "peer", "name", &lb,
        ]);
        for (role, l, h) in [(a, &la, ha), (b, &lb, hb)] {
            sh(&["ip", "link", "set", l, "netns", &self.name(role)]);
            let addr = format!("{}/30", self.addr(h));
            self.exec(role, &["ip", "addr", "add", &addr, "dev", l]);
            self.exec(role, &["ip", "link", "set", l, "up"]);
        }
    }

    fn new() -> Net {
        let pid = std::process::id();
        let mut net = Net {
            pid,
            x: (pid % 250) as u8,
            ns: Vec::new(),
            links: Vec::new(),
        };
        for role in ["c", "u", "e1", "e2"] {
            let ns = net.name(role);
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
            sh(&["ip", "netns", "add", &ns]);
            net.ns.push(ns);
            net.exec(role, &["ip", "link", "set", "lo", "up"]);
        }
        net.link("c", 1, "u", 2);
        net.link("u", 5, "e1", 6);
        net.link("u", 9, "e2", 10);
        let (via_u, via_e) = (net.addr(2), [net.addr(5), net.addr(9)]);
        net.exec("c", &["ip", "route", "add", "default", "via", &via_u]);
        // L4 hashing: each new connection (a new source port) is hashed
        // on its own, so both edges see traffic.
        net.exec(
            "u",
            &[
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
                "net.ipv4.fib_multipath_hash_policy=1",
            ],
        );
        let vip = format!("{}/32", net.vip());
        for (e, via) in EDGES.iter().zip(&via_e) {
            net.exec(e, &["ip", "route", "add", "default", "via", via]);
            net.exec(e, &["ip", "addr", "add", &vip, "dev", "lo"]);
        }
        net
    }

    /// The upstream router's kernel route to the VIP: its next hops,
    /// sorted (`via A` once, or one `nexthop via A` per path).
    fn next_hops(&self) -> Vec<String> {
        let out = run(
            Command::new("ip").args([
                "netns",
                "exec",
                &self.name("u"),
                "ip",
                "-4",
                "route",
                "show",
                &format!("{}/32", self.vip()),
            ]),
            Duration::from_secs(3),
        )
        .unwrap_or_default();
        let words: Vec<&str> = out.split_whitespace().collect();
        let mut hops: Vec<String> = words
            .windows(2)
            .filter(|w| w[0] == "via")
            .map(|w| w[1].to_string())
            .collect();
        hops.sort();
        hops
    }

    /// The upstream's next hop towards edge `i`.
    fn edge_hop(&self, i: usize) -> String {
        self.addr([6, 10][i])
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        // Ends still in the root namespace when setup failed half way.
        for l in &self.links {
            let _ = Command::new("ip")
                .args(["link", "del", l])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The upstream router: one eBGP session per edge, ECMP into the kernel.
fn upstream_conf(net: &Net) -> String {
    let mut c = format!(
        "log stderr all;\n\
         router id {rid};\n\
         protocol device {{ scan time 1; }}\n\
         protocol kernel {{\n\
         \x20 ipv4 {{ import none; export all; }};\n\
         \x20 merge paths on;\n\
         \x20 learn off;\n\
         \x20 persist off;\n\
         }}\n",
        rid = net.addr(2),
    );
    for (i, (ours, edge)) in [(5, 6), (9, 10)].into_iter().enumerate() {
        c.push_str(&format!(
            "protocol bgp {name} {{\n\
             \x20 local {local} as 64512;\n\
             \x20 neighbor {nb} as 65000;\n\
             \x20 ipv4 {{ import all; export none; }};\n\
             }}\n",
            name = EDGES[i],
            local = net.addr(ours),
            nb = net.addr(edge),
        ));
    }
    c
}

/// An edge router's BIRD: the recipe's block for the announcer on
/// loopback (examples/openwrt-bird.conf, logging to stderr), and the
/// session to the upstream exporting the announcer's route. That session
/// binds strictly too: BIRD's wildcard listener on port 179 would take the
/// port from the recipe's strict 127.0.0.1 one.
fn edge_conf(net: &Net, i: usize, bfd: bool) -> String {
    let ours = net.addr([6, 10][i]);
    let up = net.addr([5, 9][i]);
    let vip = net.vip();
    let (bfd_proto, bfd_on) = if bfd {
        (
            "protocol bfd {\n\
             \x20 multihop { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; };\n\
             }\n",
            "\x20 bfd on;\n",
        )
    } else {
        ("", "")
    };
    format!(
        "log stderr all;\n\
         router id {ours};\n\
         protocol device {{ }}\n\
         define PATHOSD_VIPS = [ {vip}/32 ];\n\
         protocol kernel {{\n\
         \x20 ipv4 {{ export where proto != \"pathosd\"; }};\n\
         }}\n\
         {bfd_proto}\
         protocol bgp pathosd {{\n\
         \x20 local 127.0.0.1 as 65000;\n\
         \x20 neighbor 127.0.0.2 as 65001;\n\
         \x20 strict bind on;\n\
         \x20 passive on;\n\
         \x20 multihop;\n\
         \x20 hold time 9;\n\
         \x20 keepalive time 3;\n\
         \x20 graceful restart off;\n\
         \x20 error wait time 0, 0;\n\
         {bfd_on}\
         \x20 ipv4 {{\n\
         \x20   import filter {{\n\
         \x20     if net ~ PATHOSD_VIPS then {{\n\
         \x20       bgp_next_hop = net.ip;\n\
         \x20       preference = 250;\n\
         \x20       accept;\n\
         \x20     }}\n\
         \x20     reject;\n\
         \x20   }};\n\
         \x20   export none;\n\
         \x20 }};\n\
         }}\n\
         protocol bgp upstream {{\n\
         \x20 local {ours} as 65000;\n\
         \x20 neighbor {up} as 64512;\n\
         \x20 strict bind on;\n\
         \x20 ipv4 {{ import none; export where proto = \"pathosd\"; }};\n\
         }}\n"
    )
}

const API: &str = "127.0.0.2:9180";

/// pathosd on an edge: the recipe's session (hold 9 s, no graceful
/// restart, no listener), one HTTP-checked VIP that is withdrawn on
/// failure and drained by `drain_file`, the API on loopback and ubus on
/// the edge's broker.
fn pathosd_config(net: &Net, i: usize, drain_file: &Path, ubus: &Path, bfd: bool) -> Value {
    let mut nb =
        json!({"name": "bird", "address": "127.0.0.1", "peer_asn": 65000, "enable_multihop": true});
    if bfd {
        nb["bfd"] = json!({"enabled": true, "desired_minimum_tx_interval": "100ms",
                           "required_minimum_receive": "100ms", "detection_multiplier": 3});
    }
    json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": net.addr([6, 10][i]), "local_address": "127.0.0.2"},
        "bgp": {"listen_port": -1, "hold_time": "9s", "graceful_restart": false, "neighbors": [nb]},
        "api": {"listen": API, "ubus_socket": ubus.display().to_string()},
        "logging": {"level": "info", "syslog": false, "timestamps": true},
        "vips": [{
            "name": "web",
            "prefix": format!("{}/32", net.vip()),
            "check": {"type": "http", "interval": "1s", "timeout": "500ms", "rise": RISE, "fall": FALL,
                      "http": {"url": "/", "port": 80}},
            "policy": {"fail_action": "withdraw", "lower_priority_file": drain_file.display().to_string()}
        }]
    })
}

/// ExaBGP on an edge, as benches/compare.sh runs it: Debian's healthcheck
/// (curl against the backend, interval 1 s, rise 2, fall 3, withdraw on
/// down) for the VIP, the same loopback session.
fn exabgp_config(net: &Net, i: usize) -> String {
    let vip = net.vip();
    format!(
        "process hc {{\n\
         \x20 run /usr/bin/python3 -m exabgp healthcheck --no-syslog --interval 1 --fast-interval 1 --rise {RISE} --fall {FALL} --timeout 1 --withdraw-on-down --no-ip-setup --ip {vip}/32 --cmd \"curl -sf -o /dev/null --max-time 1 http://{vip}/\";\n\
         \x20 encoder text;\n\
         }}\n\
         neighbor 127.0.0.1 {{\n\
         \x20 router-id {rid};\n\
         \x20 local-address 127.0.0.2;\n\
         \x20 local-as 65001;\n\
         \x20 peer-as 65000;\n\
         \x20 hold-time 9;\n\
         \x20 api {{ processes [ hc ]; }}\n\
         }}\n",
        rid = net.addr([6, 10][i]),
    )
}

/// ExaBGP and its healthcheck child, stopped by PID on drop.
struct Exabgp {
    child: std::process::Child,
}

impl Exabgp {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// ExaBGP's children (the healthcheck), read before it goes.
    fn children(&self) -> Vec<u32> {
        let p = self.pid();
        std::fs::read_to_string(format!("/proc/{p}/task/{p}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect()
    }

    fn stop(&mut self) {
        let kids = self.children();
        signal(self.pid(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
        for k in kids {
            signal(k, "CONT");
            signal(k, "KILL");
        }
    }
}

impl Drop for Exabgp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// kill(1) with `sig`; a process already gone is no error here.
fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

enum Speaker {
    Pathosd(Pathosd),
    Exabgp(Exabgp),
    /// pathosd as the init script runs it: an instance of the procd
    /// stand-in, its binary the package's file in the edge's root.
    Procd(Procd),
}

impl Speaker {
    fn pid(&self) -> u32 {
        match self {
            Speaker::Pathosd(p) => p.pid(),
            Speaker::Exabgp(e) => e.pid(),
            Speaker::Procd(p) => p.pid().unwrap_or(0),
        }
    }

    fn log(&self) -> String {
        match self {
            Speaker::Pathosd(p) => p.log(),
            Speaker::Exabgp(_) => String::new(),
            Speaker::Procd(p) => p.log(),
        }
    }
}

struct Edge {
    i: usize,
    ns: String,
    speaker: Option<Speaker>,
    backend: Option<Daemon>,
    bird: NsBird,
    /// Held for pathosd's ubus object; stopped on drop.
    _broker: Broker,
    dir: TempDir,
    cfg: Value,
}

impl Edge {
    fn drain_file(&self) -> PathBuf {
        self.dir.path("drain")
    }

    fn ubus(&self) -> PathBuf {
        self.dir.sock()
    }

    fn start_backend(&mut self, vip: &str) {
        let ready = self.dir.path("backend-ready");
        let _ = std::fs::remove_file(&ready);
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", "fabric_backend", "--ignored", "--nocapture"])
            .env("FABRIC_BACKEND", EDGES[self.i])
            .env("FABRIC_BIND", format!("{vip}:80"))
            .env("FABRIC_READY", &ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.backend = Some(Daemon(child));
        let ok = poll(Duration::from_secs(10), || ready.exists().then_some(()));
        assert!(ok.is_some(), "backend in {} did not come up", self.ns);
    }

    fn kill_backend(&mut self) {
        self.backend = None;
    }

    fn start_speaker(&mut self, net: &Net, announcer: Announcer) {
        self.speaker = Some(match announcer {
            Announcer::Pathosd => {
                let none: SocketAddr = API.parse().unwrap();
                Speaker::Pathosd(Pathosd::start_in(&self.cfg, none, Some(&self.ns)))
            }
            Announcer::Exabgp => {
                let conf = self.dir.path("exabgp.conf");
                std::fs::write(&conf, exabgp_config(net, self.i)).unwrap();
                let log = std::fs::File::create(self.dir.path("exabgp.log")).unwrap();
                let child = Command::new("ip")
                    .args(["netns", "exec", &self.ns, "/usr/sbin/exabgp"])
                    .arg(&conf)
                    .envs([
                        ("exabgp_daemon_user", "root"),
                        ("exabgp_daemon_drop", "false"),
                        ("exabgp_api_cli", "false"),
                        ("exabgp_log_level", "WARNING"),
                        ("exabgp_tcp_bind", ""),
                    ])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .unwrap_or_else(|e| panic!("exabgp (Debian package exabgp): {e}"));
                Speaker::Exabgp(Exabgp { child })
            }
        });
    }

    fn speaker_signal(&self, sig: &str) {
        let pid = self.speaker.as_ref().map_or(0, Speaker::pid);
        assert!(pid != 0, "no announcer on {}", self.ns);
        signal(pid, sig);
    }

    /// SIGTERM, and the announcer's exit awaited (bounded).
    fn terminate_speaker(&mut self) {
        match self.speaker.take() {
            Some(Speaker::Pathosd(mut p)) => {
                p.signal("TERM");
                let st = p.wait_exit(Duration::from_secs(10));
                assert!(st.is_some(), "pathosd did not exit:\n{}", p.log());
            }
            Some(Speaker::Exabgp(mut e)) => {
                let kids = e.children();
                signal(e.pid(), "TERM");
                let end = Instant::now() + Duration::from_secs(10);
                while Instant::now() < end {
                    if let Ok(Some(_)) = e.child.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                e.stop();
                for k in kids {
                    signal(k, "KILL");
                }
            }
            Some(Speaker::Procd(p)) => drop(p),
            None => {}
        }
    }

    /// The package's binary in the edge's root, as opkg and apk install a
    /// file: the new one written beside it, then renamed over it (a running
    /// instance keeps the old file's inode).
    fn install_binary(&self) -> PathBuf {
        let bin = self.dir.path("pathosd");
        let new = self.dir.path("pathosd.new");
        std::fs::copy(support::daemon::PATHOSD, &new).unwrap();
        std::fs::rename(&new, &bin).unwrap();
        bin
    }

    /// The edge's pathosd under the procd stand-in, its config the edge's
    /// and its binary installed in the edge's root; not started.
    fn procd_service(&mut self) {
        let bin = self.install_binary();
        let conf = self.dir.path("pathosd.json");
        std::fs::write(&conf, serde_json::to_string_pretty(&self.cfg).unwrap()).unwrap();
        let bin = bin.display().to_string();
        let conf = conf.display().to_string();
        let argv = [
            "ip", "netns", "exec", &self.ns, &bin, "run", "--config", &conf,
        ];
        self.speaker = Some(Speaker::Procd(Procd::new(
            &argv,
            &self.dir.path("procd.log"),
        )));
    }

    fn procd(&self) -> &Procd {
        match &self.speaker {
            Some(Speaker::Procd(p)) => p,
            _ => panic!("{}: pathosd is not under procd", self.ns),
        }
    }

    /// `curl` inside the edge's namespace against pathosd's API.
    fn api(&self, method: &str, path: &str) -> String {
        run(
            Command::new("ip")
                .args(["netns", "exec", &self.ns, "curl", "-sf", "-m", "5", "-X"])
                .arg(method)
                .args(["-H", "Content-Type: application/json"])
                .arg(format!("http://{API}{path}")),
            Duration::from_secs(6),
        )
        .unwrap_or_else(|| panic!("curl -X {method} {path} in {} failed", self.ns))
    }

    fn ubus_drain(&self, enable: bool) -> Value {
        let sock = self.ubus();
        smol::block_on(async move {
            let mut c = Caller::connect(&sock).await;
            c.call("pathosd", "drain", json!({"vip": "web", "enable": enable}))
                .await
                .unwrap_or_else(|st| panic!("ubus call pathosd drain: status {st}"))
                .unwrap_or_default()
        })
    }
}

/// One result line of the client: when the request was due (unix ms),
/// and the edge that answered or None for a failure.
#[derive(Debug)]
struct Sample {
    due: u64,
    index: u64,
    edge: Option<String>,
    why: String,
}

/// A scenario's outcome.
#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    pub requests: usize,
    pub failures: usize,
    /// Last failure − first failure, seconds.
    pub window: f64,
    pub per_edge: BTreeMap<String, usize>,
    pub first_errors: Vec<String>,
}

impl Fabric {
    fn start(opts: Opts) -> Fabric {
        for tool in ["ip", "bird", "birdc", "curl", "sysctl"] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(found, "{tool} is needed (scripts/install-test-deps.sh)");
        }
        let net = Net::new();
        let dir = TempDir::new("e2e-fabric");
        let upstream = NsBird::start(&net.name("u"), &upstream_conf(&net), "fabric-up");
        let mut edges = Vec::new();
        for (i, e) in EDGES.iter().enumerate() {
            let ns = net.name(e);
            let bird = NsBird::start(&ns, &edge_conf(&net, i, opts.bfd), "fabric-edge");
            let edir = TempDir::new("fabric-edge");
            let broker = Broker::start(&edir.sock(), BrokerConfig::default()).unwrap();
            let mut edge = Edge {
                i,
                ns,
                speaker: None,
                backend: None,
                bird,
                _broker: broker,
                cfg: Value::Null,
                dir: edir,
            };
            edge.cfg = pathosd_config(&net, i, &edge.drain_file(), &edge.ubus(), opts.bfd);
            edge.start_backend(&net.vip());
            edge.start_speaker(&net, opts.announcer);
            edges.push(edge);
        }
        let f = Fabric {
            opts,
            client: None,
            edges,
            upstream,
            dir,
            net,
        };
        f.wait_hops(&[0, 1], "fabric up: ECMP over both edges");
        f
    }

    fn diag(&self, what: &str) -> String {
        let mut s = format!(
            "{what}\nupstream next hops: {:?}\nupstream BIRD: {:?}\nupstream log:\n{}\n",
            self.net.next_hops(),
            self.upstream.birdc(&["show", "route", "all"]),
            self.upstream.log()
        );
        for e in &self.edges {
            s.push_str(&format!(
                "--- {}: BIRD {:?}\nBIRD log:\n{}\nannouncer log:\n{}\n",
                e.ns,
                e.bird.birdc(&["show", "protocols", "all", "pathosd"]),
                e.bird.log(),
                e.speaker.as_ref().map(Speaker::log).unwrap_or_default()
            ));
            if self.opts.announcer == Announcer::Exabgp {
                s.push_str(&std::fs::read_to_string(e.dir.path("exabgp.log")).unwrap_or_default());
            }
        }
        s
    }

    /// Waits (bounded) until the upstream's route goes to exactly `edges`.
    fn wait_hops(&self, edges: &[usize], what: &str) {
        let mut want: Vec<String> = edges.iter().map(|&i| self.net.edge_hop(i)).collect();
        want.sort();
        let ok = poll(CONVERGE, || (self.net.next_hops() == want).then_some(()));
        assert!(ok.is_some(), "{}", self.diag(what));
    }

    fn results(&self) -> PathBuf {
        self.dir.path("client.out")
    }

    fn start_client(&mut self) {
        let out = self.results();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.net.name("c")])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", "fabric_client", "--ignored", "--nocapture"])
            .env("FABRIC_CLIENT", format!("{}:80", self.net.vip()))
            .env("FABRIC_OUT", &out)
            .env("FABRIC_STOP", self.dir.path("client.stop"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.client = Some(Daemon(child));
        let ok = poll(Duration::from_secs(10), || {
            (self.samples().len() >= RATE as usize).then_some(())
        });
        assert!(ok.is_some(), "the client did not run");
    }

    fn stop_client(&mut self) {
        let _ = std::fs::write(self.dir.path("client.stop"), "");
        if let Some(mut c) = self.client.take() {
            let end = Instant::now() + Duration::from_secs(5);
            while Instant::now() < end && c.0.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The client's results so far: (its start, the samples).
    fn samples(&self) -> Vec<Sample> {
        let text = std::fs::read_to_string(self.results()).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut w = l.splitn(4, ' ');
                let index = w.next()?.parse().ok()?;
                let due = w.next()?.parse().ok()?;
                let kind = w.next()?;
                let rest = w.next().unwrap_or("").to_string();
                Some(match kind {
                    "ok" => Sample {
                        due,
                        index,
                        edge: Some(rest),
                        why: String::new(),
                    },
                    _ => Sample {
                        due,
                        index,
                        edge: None,
                        why: rest,
                    },
                })
            })
            .collect()
    }

    /// The requests due in [from, to] (unix ms), once every request due
    /// before `to` has its result (bounded by the client's timeouts).
    fn outcome(&self, name: &str, from: u64, to: u64) -> Outcome {
        let bound = CONNECT_TIMEOUT + READ_TIMEOUT + Duration::from_secs(3);
        let done = poll(bound, || {
            let s = self.samples();
            let first = s.iter().map(|x| (x.index, x.due)).min()?;
            // Requests are due every 1000 / RATE ms from the first one.
            let due_before = (to.saturating_sub(first.1) * RATE / 1000) + 1;
            let have = s.iter().filter(|x| x.index < due_before).count() as u64;
            (have >= due_before).then_some(s)
        })
        .unwrap_or_else(|| panic!("{}", self.diag("client results missing")));
        let inside: Vec<&Sample> = done
            .iter()
            .filter(|x| x.due >= from && x.due <= to)
            .collect();
        let mut fails: Vec<&&Sample> = inside.iter().filter(|x| x.edge.is_none()).collect();
        fails.sort_by_key(|x| x.due);
        let window = match (fails.first(), fails.last()) {
            (Some(a), Some(b)) => (b.due - a.due) as f64 / 1000.0,
            _ => 0.0,
        };
        let mut per_edge = BTreeMap::new();
        for x in &inside {
            if let Some(e) = &x.edge {
                *per_edge.entry(e.clone()).or_insert(0) += 1;
            }
        }
        let o = Outcome {
            name: name.to_string(),
            requests: inside.len(),
            failures: fails.len(),
            window,
            per_edge,
            first_errors: fails
                .iter()
                .take(3)
                .map(|x| format!("{} {}", x.due, x.why))
                .collect(),
        };
        // Enough traffic to have measured something: at least half the rate.
        let expected = (to - from) * RATE / 1000;
        assert!(
            o.requests as u64 * 2 >= expected,
            "{name}: only {} requests in {} ms",
            o.requests,
            to - from
        );
        eprintln!(
            "FABRIC {:?} {name}: {} requests, {} failed, window {:.3} s, per edge {:?}, first failures {:?}",
            self.opts.announcer, o.requests, o.failures, o.window, o.per_edge, o.first_errors
        );
        o
    }

    /// Traffic for `d` with no change: the requests due then.
    fn steady(&self, d: Duration) -> Outcome {
        let from = now_ms();
        let ok = poll(d + Duration::from_secs(5), || {
            (now_ms() >= from + d.as_millis() as u64).then_some(())
        });
        assert!(ok.is_some());
        self.outcome("steady", from, now_ms())
    }

    /// The backend of edge 0 dies: its route must go, the failures end.
    /// Then it comes back and the route returns.
    fn backend_crash(&mut self) -> Outcome {
        let from = now_ms();
        self.edges[0].kill_backend();
        self.wait_hops(&[1], "backend crash: route to e1 not withdrawn");
        let o = self.outcome("backend crash", from, now_ms() + 500);
        let vip = self.net.vip();
        let from = now_ms();
        self.edges[0].start_backend(&vip);
        self.wait_hops(&[0, 1], "backend back: route to e1 not back");
        self.outcome("backend back", from, now_ms());
        o
    }

    /// Drain, then undrain, edge `i` with `how`; the outcome of each.
    fn drain(&self, i: usize, how: &str) -> (Outcome, Outcome) {
        let other = 1 - i;
        let e = &self.edges[i];
        let from = now_ms();
        match how {
            "API" => {
                let r: Value =
                    serde_json::from_str(&e.api("POST", "/api/v1/vips/web/drain")).unwrap();
                assert_eq!(r["drain"], true, "{r}");
            }
            "ubus" => {
                let r = e.ubus_drain(true);
                assert_eq!(r["drain"], true, "{r}");
            }
            _ => std::fs::write(e.drain_file(), "").unwrap(),
        }
        self.wait_hops(&[other], &format!("drain via {how}: e{} still used", i + 1));
        let drained = self.outcome(&format!("drain via {how}"), from, now_ms() + 500);
        let from = now_ms();
        match how {
            "API" => {
                let r: Value =
                    serde_json::from_str(&e.api("DELETE", "/api/v1/vips/web/drain")).unwrap();
                assert_eq!(r["drain"], false, "{r}");
            }
            "ubus" => {
                let r = e.ubus_drain(false);
                assert_eq!(r["drain"], false, "{r}");
            }
            _ => std::fs::remove_file(e.drain_file()).unwrap(),
        }
        self.wait_hops(&[0, 1], &format!("undrain via {how}: not both edges"));
        let undrained = self.outcome(&format!("undrain via {how}"), from, now_ms() + 500);
        (drained, undrained)
    }

    /// SIGTERM to edge 0's announcer, its route gone, then a new one
    /// (pathosd: `/etc/init.d/pathosd start`, under procd from then on).
    fn sigterm_restart(&mut self) -> Outcome {
        let from = now_ms();
        self.edges[0].terminate_speaker();
        self.wait_hops(&[1], "SIGTERM: route to e1 still there");
        let announcer = self.opts.announcer;
        let Fabric { edges, net, .. } = self;
        if announcer == Announcer::Pathosd {
            edges[0].procd_service();
            edges[0].procd().set();
        } else {
            edges[0].start_speaker(net, announcer);
        }
        self.wait_hops(&[0, 1], "restart: route to e1 not back");
        self.outcome("SIGTERM + restart", from, now_ms() + 500)
    }

    /// The init script's stop on edge 0 (procd: SIGTERM, SIGKILL after
    /// term_timeout), the route gone, then its start.
    fn procd_stop_start(&mut self) -> Outcome {
        let from = now_ms();
        let p = self.edges[0].procd();
        let before = p.exits().len();
        p.delete();
        self.wait_hops(&[1], "procd stop: route to e1 still there");
        assert!(
            p.wait(Duration::from_secs(10), |pid, _| pid.is_none()),
            "procd stop: pathosd did not exit:\n{}",
            p.log()
        );
        self.assert_clean_exit(before);
        self.edges[0].procd().set();
        self.wait_hops(&[0, 1], "procd start: route to e1 not back");
        self.outcome("procd stop + start", from, now_ms() + 500)
    }

    /// An opkg upgrade on edge 0: the old package's prerm runs the init
    /// script's stop, the files are replaced, the new package's postinst
    /// runs its start at once, while the old pathosd is still ending:
    /// procd starts the new one when the old has exited.
    fn opkg_upgrade(&mut self) -> Outcome {
        let from = now_ms();
        let e = &self.edges[0];
        let (starts, before) = (e.procd().starts(), e.procd().exits().len());
        e.procd().delete();
        e.install_binary();
        e.procd().set();
        assert!(
            e.procd()
                .wait(Duration::from_secs(15), |pid, n| pid.is_some()
                    && n == starts + 1),
            "opkg upgrade: no new pathosd:\n{}",
            e.procd().log()
        );
        self.assert_clean_exit(before);
        self.wait_hops(&[0, 1], "opkg upgrade: route to e1 not back");
        self.outcome("opkg upgrade", from, now_ms() + 500)
    }

    /// An apk upgrade on edge 0: apk replaces the files and runs only the
    /// new package's post-upgrade, whose start leaves the running instance
    /// (same command: the old binary runs on); then, as docs/openwrt.md
    /// says, `/etc/init.d/pathosd restart`: stop, wait (at most 6 s) until
    /// procd has no instance, start.
    fn apk_upgrade_restart(&mut self) -> Outcome {
        let from = now_ms();
        let e = &self.edges[0];
        let (pid, before) = (e.procd().pid(), e.procd().exits().len());
        e.install_binary();
        e.procd().set();
        assert_eq!(
            e.procd().pid(),
            pid,
            "apk post-upgrade's start restarted pathosd"
        );
        e.procd().delete();
        assert!(
            e.procd().wait(Duration::from_secs(6), |p, _| p.is_none()),
            "restart: pathosd still ending after 6 s:\n{}",
            e.procd().log()
        );
        self.assert_clean_exit(before);
        e.procd().set();
        self.wait_hops(&[0, 1], "apk upgrade + restart: route to e1 not back");
        self.outcome("apk upgrade + restart", from, now_ms() + 500)
    }

    /// The instance that ended after `before` exits ended on its SIGTERM
    /// (exit 0), not procd's SIGKILL.
    fn assert_clean_exit(&self, before: usize) {
        let p = self.edges[0].procd();
        let exits = p.exits();
        assert!(
            exits.len() > before && exits[before].success(),
            "pathosd did not end on SIGTERM within term_timeout: {exits:?}\n{}",
            p.log()
        );
    }

    /// A reload of edge 1's pathosd with a new check interval (SIGHUP).
    fn reload(&mut self) -> Outcome {
        let from = now_ms();
        let e = &mut self.edges[1];
        e.cfg["vips"][0]["check"]["interval"] = json!("700ms");
        let Some(Speaker::Pathosd(p)) = &e.speaker else {
            panic!("reload is a pathosd scenario")
        };
        p.write_config(&e.cfg);
        let before = p.log().matches("reload: applied").count();
        p.signal("HUP");
        let ok = poll(Duration::from_secs(10), || {
            (p.log().matches("reload: applied").count() > before).then_some(())
        });
        assert!(ok.is_some(), "reload not applied:\n{}", p.log());
        // The new interval at work: a few probes after the reload with the
        // route where it was.
        let until = now_ms() + 3000;
        let ok = poll(Duration::from_secs(8), || {
            (now_ms() >= until && self.net.next_hops().len() == 2).then_some(())
        });
        assert!(ok.is_some(), "{}", self.diag("reload: route moved"));
        self.outcome("reload (SIGHUP, new interval)", from, now_ms())
    }

    /// Edge 0's announcer frozen (SIGSTOP) and its backend killed: only
    /// BIRD's hold timer (or BFD) ends the session. Then SIGCONT, the
    /// backend back, the route back.
    fn stall(&mut self) -> Outcome {
        let from = now_ms();
        self.edges[0].speaker_signal("STOP");
        self.edges[0].kill_backend();
        self.wait_hops(&[1], "stall: route to e1 not withdrawn");
        let name = if self.opts.bfd {
            "stall with BFD"
        } else {
            "stall without BFD"
        };
        let o = self.outcome(name, from, now_ms() + 500);
        self.edges[0].speaker_signal("CONT");
        let vip = self.net.vip();
        self.edges[0].start_backend(&vip);
        self.wait_hops(&[0, 1], "after the stall: route to e1 not back");
        o
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.path("client.stop"), "");
    }
}

/// No request failed because of the announcer in a scenario where the
/// upstream's ECMP set changed `changes` times: no connection refused or
/// unanswered (a route to an edge that cannot answer), and at most one
/// reset per change. A reset is a connection set up just before the
/// change and hashed to the other edge with the set (Linux's
/// hash-threshold multipath moves flows of the edge that stays too),
/// which answers its next segment with a reset: the router's doing,
/// whatever announces. It needs a request in flight at the instant of the
/// change and is rare (none in most runs).
fn only_rehash(o: &Outcome, changes: usize) -> bool {
    o.failures <= changes && o.first_errors.iter().all(|e| !e.contains("connect:"))
}

/// The scenarios, in a row on one fabric; with `check` the bounds are
/// asserted (pathosd in CI), without (benches/fabric.sh) only reported.
fn scenarios(opts: Opts, check: bool) -> Vec<Outcome> {
    let mut f = Fabric::start(opts);
    f.start_client();
    let pd = opts.announcer == Announcer::Pathosd;
    let mut out = Vec::new();
    let steady = f.steady(Duration::from_secs(5));
    if check {
        assert_eq!(steady.failures, 0, "steady: {steady:?}");
        assert!(
            steady.per_edge.len() == 2 && steady.per_edge.values().all(|&n| n > 0),
            "steady: not both edges used: {steady:?}"
        );
    }
    out.push(steady);
    let crash = f.backend_crash();
    if check {
        let bound = FALL as f64 * INTERVAL_S + 1.0;
        assert!(
            crash.window <= bound,
            "backend crash: window {:.3} s > {bound} s: {crash:?}",
            crash.window
        );
    }
    out.push(crash);
    if pd {
        for (i, how) in [(0, "API"), (1, "ubus"), (0, "drain file")] {
            let (d, u) = f.drain(i, how);
            if check {
                // The route moves (one change each), every new connection
                // is answered.
                for o in [&d, &u] {
                    assert!(only_rehash(o, 1), "{o:?}");
                }
            }
            out.push(d);
            out.push(u);
        }
    }
    let term = f.sigterm_restart();
    if check {
        assert!(only_rehash(&term, 2), "{term:?}");
    }
    out.push(term);
    if pd {
        for o in [
            f.procd_stop_start(),
            f.opkg_upgrade(),
            f.apk_upgrade_restart(),
        ] {
            if check {
                assert!(only_rehash(&o, 2), "{o:?}");
            }
            out.push(o);
        }
    }
    if pd {
        let reload = f.reload();
        if check {
            assert_eq!(reload.failures, 0, "{reload:?}");
        }
        out.push(reload);
    }
    let stall = f.stall();
    if check {
        // Measured, bounded only by what ends the session: BFD's 300 ms
        // detection, or without BFD the hold time (plus the way to the
        // upstream's kernel on a loaded machine).
        let bound = if opts.bfd { 1.0 } else { HOLD_S + 2.0 };
        assert!(stall.window <= bound, "{stall:?}");
    }
    out.push(stall);
    f.stop_client();
    out
}

#[test]
fn fabric_pathosd() {
    support::init_log();
    let t0 = Instant::now();
    // The router recipe as documented: BFD on the loopback session.
    let out = scenarios(
        Opts {
            announcer: Announcer::Pathosd,
            bfd: true,
        },
        true,
    );
    eprintln!("fabric: {} scenarios in {:?}", out.len(), t0.elapsed());
}

/// benches/fabric.sh: the scenarios for the announcer in FABRIC_ANNOUNCER
/// (pathosd or exabgp; FABRIC_BFD=1 runs pathosd's session with BFD),
/// bounds reported, not asserted; one
/// `FABRIC-ROW announcer|scenario|requests|failures|window` line each.
#[test]
#[ignore = "run by benches/fabric.sh"]
fn fabric_bench() {
    let announcer = match std::env::var("FABRIC_ANNOUNCER").as_deref() {
        Ok("pathosd") => Announcer::Pathosd,
        Ok("exabgp") => Announcer::Exabgp,
        other => panic!("FABRIC_ANNOUNCER must be pathosd or exabgp, not {other:?}"),
    };
    let bfd =
        announcer == Announcer::Pathosd && std::env::var("FABRIC_BFD").is_ok_and(|v| v == "1");
    let out = scenarios(Opts { announcer, bfd }, false);
    for o in out {
        println!(
            "FABRIC-ROW {:?}|{}|{}|{}|{:.3}",
            announcer, o.name, o.requests, o.failures, o.window
        );
    }
}

/// The client, run in ns c by the fabric: a request every 1000 / RATE ms,
/// each on a new connection in its own thread, each result appended to
/// FABRIC_OUT as `INDEX DUE ok EDGE` or `INDEX DUE fail WHY`.
#[test]
#[ignore = "run by the fabric in its client namespace"]
fn fabric_client() {
    let target: SocketAddr = std::env::var("FABRIC_CLIENT")
        .expect("runs only as the fabric's client")
        .parse()
        .unwrap();
    let out = std::env::var("FABRIC_OUT").unwrap();
    let stop = PathBuf::from(std::env::var("FABRIC_STOP").unwrap());
    let file = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out)
            .unwrap(),
    ));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let start = now_ms();
    let period = 1000 / RATE;
    let mut i: u64 = 0;
    while !stop.exists() && Duration::from_millis(now_ms() - start) < CLIENT_MAX {
        let due = start + i * period;
        let now = now_ms();
        if due > now {
            std::thread::sleep(Duration::from_millis(due - now));
        }
        let (file, in_flight) = (file.clone(), in_flight.clone());
        let record = move |line: String| {
            if let Ok(mut f) = file.lock() {
                let _ = f.write_all(line.as_bytes());
            }
        };
        // At most a few seconds of requests in flight: more means the
        // client, not the fabric, is failing; each counts as a failure.
        if in_flight.load(Ordering::Relaxed) >= 4 * RATE as usize {
            record(format!("{i} {due} fail client overloaded\n"));
        } else {
            in_flight.fetch_add(1, Ordering::Relaxed);
            std::thread::spawn(move || {
                let line = match request(target) {
                    Ok(edge) => format!("{i} {due} ok {edge}\n"),
                    Err(why) => format!("{i} {due} fail {why}\n"),
                };
                record(line);
                in_flight.fetch_sub(1, Ordering::Relaxed);
            });
        }
        i += 1;
    }
}

/// One request on a new connection: the edge named in the answer.
fn request(target: SocketAddr) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&target, CONNECT_TIMEOUT)
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(READ_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(READ_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET / HTTP/1.0\r\nHost: vip\r\n\r\n")
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.take(4096)
        .read_to_end(&mut buf)
        .map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&buf);
    let body = text
        .strip_prefix("HTTP/1.0 200 OK\r\n")
        .and_then(|t| t.split("\r\n\r\n").nth(1))
        .ok_or_else(|| format!("answer: {text:?}"))?;
    Ok(body.trim().to_string())
}

/// An edge's HTTP backend, run in the edge's namespace by the fabric: any
/// request gets 200 and the edge's name, then the connection closes.
#[test]
#[ignore = "run by the fabric in an edge namespace"]
fn fabric_backend() {
    let name = std::env::var("FABRIC_BACKEND").expect("runs only as a fabric backend");
    let bind = std::env::var("FABRIC_BIND").unwrap();
    let l = TcpListener::bind(&bind).unwrap_or_else(|e| panic!("bind {bind}: {e}"));
    std::fs::write(std::env::var("FABRIC_READY").unwrap(), "").unwrap();
    for c in l.incoming() {
        let Ok(c) = c else { continue };
        let name = name.clone();
        std::thread::spawn(move || {
            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = c.set_write_timeout(Some(Duration::from_secs(2)));
            let mut r = BufReader::new(&c);
            let mut line = String::new();
            // The request head, up to its blank line.
            while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                if line == "\r\n" || line == "\n" {
                    break;
                }
                line.clear();
            }
            let body = format!("{name}\n");
            let _ = (&c).write_all(
                format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        });
    }
}
