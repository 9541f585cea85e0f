//! The real `pathosd run` as a child process: the config is written to a
//! temp dir, the binary Cargo built for this test run is started on it, and
//! the test talks to it the way an operator does: HTTP on `api.listen`
//! (a tiny std::net client, no new dependency), signals through kill(1), and
//! its log (stderr, written to a file in the temp dir). Killed on drop.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::bird::{attr, Bird, BirdPeer};
use super::{poll, Addrs, TempDir, OUR_AS, PEER_AS, PORT};

pub const PATHOSD: &str = env!("CARGO_BIN_EXE_pathosd");

pub struct Pathosd {
    pub dir: TempDir,
    pub api: SocketAddr,
    child: Option<Child>,
}

/// An HTTP answer: status code and body.
#[derive(Debug)]
pub struct Reply {
    pub code: u16,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl Pathosd {
    /// Writes `cfg` and starts `pathosd run --config` on it; `api` must be
    /// the config's `api.listen`. Waits (bounded) for `/healthz`.
    pub fn start(cfg: &Value, api: SocketAddr) -> Pathosd {
        Pathosd::start_in(cfg, api, None)
    }

    /// As [`Pathosd::start`], inside network namespace `netns` when given
    /// (`ip netns exec` execs the binary, so the child's pid is pathosd's).
    pub fn start_in(cfg: &Value, api: SocketAddr, netns: Option<&str>) -> Pathosd {
        Pathosd::start_with(cfg, api, netns, &[])
    }

    /// As [`Pathosd::start_in`], with `env` added to the daemon's
    /// environment (what an init script gives it through procd).
    pub fn start_with(
        cfg: &Value,
        api: SocketAddr,
        netns: Option<&str>,
        env: &[(&str, &str)],
    ) -> Pathosd {
        let dir = TempDir::new("e2e-pathosd");
        let mut d = Pathosd {
            dir,
            api,
            child: None,
        };
        d.write_config(cfg);
        let log = std::fs::File::create(d.log_path()).unwrap();
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, PATHOSD]);
                c
            }
            None => Command::new(PATHOSD),
        };
        cmd.envs(env.iter().copied())
            .arg("run")
            .arg("--config")
            .arg(d.config_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        d.child = Some(cmd.spawn().unwrap_or_else(|e| panic!("spawn pathosd: {e}")));
        // In a namespace the API is out of the test's reach: the start-up
        // log line is the sign of life there.
        let up = poll(Duration::from_secs(10), || {
            if let Some(st) = d.try_exit() {
                panic!("pathosd exited at start ({st}):\n{}", d.log());
            }
            let log = d.log();
            if log.contains("api: cannot listen") {
                panic!("pathosd could not open its API (address taken?):\n{log}");
            }
            match netns {
                Some(_) => d.log().contains(" started: ").then_some(()),
                None => d.get("/healthz").filter(|r| r.code == 200).map(|_| ()),
            }
        });
        assert!(up.is_some(), "pathosd did not come up:\n{}", d.log());
        d
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path("pathosd.json")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path("pathosd.log")
    }

    /// Replaces the config file (for a reload).
    pub fn write_config(&self, cfg: &Value) {
        std::fs::write(
            self.config_path(),
            serde_json::to_string_pretty(cfg).unwrap(),
        )
        .unwrap();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// Sends `sig` ("TERM", "HUP", ...) with kill(1).
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(st.success(), "kill -{sig} {}", self.pid());
    }

    /// The exit status, if the daemon has exited.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits (bounded) for the daemon to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Some(st) = self.try_exit() {
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// One HTTP/1.1 request (Connection: close), bounded to 5 s.
    pub fn request(&self, method: &str, path: &str) -> Option<Reply> {
        http(self.api, method, path)
    }

    pub fn get(&self, path: &str) -> Option<Reply> {
        self.request("GET", path)
    }

    /// `/status` as JSON.
    pub fn status(&self) -> Value {
        let r = self
            .get("/status")
            .unwrap_or_else(|| panic!("/status did not answer:\n{}", self.log()));
        assert_eq!(r.code, 200, "{}", r.body);
        r.json()
    }

    /// One VIP of `/status`.
    pub fn vip(&self, name: &str) -> Value {
        let s = self.status();
        s["vips"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no VIP {name} in {s}"))
    }

    /// The first peer of `/status`.
    pub fn peer(&self) -> Value {
        self.status()["peers"][0].clone()
    }

    /// Waits (bounded) until VIP `name` is in `state` ("announced", ...).
    pub fn wait_vip_state(&self, name: &str, state: &str, limit: Duration) {
        let ok = poll(limit, || {
            (self.vip(name)["state_name"] == state).then_some(())
        });
        assert!(
            ok.is_some(),
            "VIP {name} never became {state}: {}\n{}",
            self.vip(name),
            self.log()
        );
    }
}

impl Drop for Pathosd {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A minimal HTTP/1.1 client: Connection: close, a chunked body decoded
/// (pathosd streams its large answers), every step bounded.
pub fn http(addr: SocketAddr, method: &str, path: &str) -> Option<Reply> {
    http_with(addr, method, path, "")
}

/// [`http`] with more header lines (each ending in CRLF).
pub fn http_with(addr: SocketAddr, method: &str, path: &str, headers: &str) -> Option<Reply> {
    let t = Duration::from_secs(5);
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(t)).ok()?;
    s.set_write_timeout(Some(t)).ok()?;
    // Changes must be requests a browser cannot send cross-site (api::access).
    let json = if matches!(method, "GET" | "HEAD") {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{json}{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.take(64 << 20).read_to_end(&mut raw).ok()?;
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut body = raw.split_off(end + 4);
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    if head
        .to_ascii_lowercase()
        .contains("\r\ntransfer-encoding: chunked")
    {
        body = super::dechunk(&body)?;
    }
    Some(Reply {
        code,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}

/// The addresses of end-to-end test `n` (0..32): pathosd on `.1`, BIRD on
/// `.2`, targets from `.3`, in 127.(224 + n).(pid % 200).0/24 — a block no
/// other test binary uses, so parallel tests never share an address.
pub fn addrs(n: u8) -> Addrs {
    assert!(n < 32);
    Addrs {
        ours: ip(n, 1),
        peer: ip(n, 2),
    }
}

/// Host `host` of test `n`'s /24 (see [`addrs`]).
pub fn ip(n: u8, host: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 224 + n, (std::process::id() % 200) as u8, host)
}

pub const API_PORT: u16 = 59179;

/// A pathosd config for BIRD at `a.peer`: AS 65001 → 65000 on port 1179,
/// hold time 3 s, the API on `a.ours:59179`, no ubus, debug log to stderr
/// with timestamps.
pub fn config(a: Addrs, vips: Value) -> Value {
    json!({
        "schema": "v1",
        "router": {"asn": OUR_AS, "router_id": a.ours.to_string(), "local_address": a.ours.to_string()},
        "bgp": {
            "listen_port": PORT,
            "hold_time": "3s",
            "neighbors": [{
                "name": "bird",
                "address": a.peer.to_string(),
                "port": PORT,
                "peer_asn": PEER_AS,
                "enable_multihop": true
            }]
        },
        "api": {"listen": format!("{}:{API_PORT}", a.ours), "ubus_socket": ""},
        "logging": {"level": "debug", "syslog": false, "timestamps": true},
        "vips": vips
    })
}

/// The usual policy of these tests: one prepend and 65001:100 (+ a large
/// community) while healthy; on failure `fail_action`, pessimized adding the
/// default 6 prepends and 65001:666.
pub fn policy(fail_action: &str) -> Value {
    json!({
        "fail_action": fail_action,
        "announce": {"as_path_prepend": 1, "communities": ["65001:100"], "large_communities": ["65001:1:100"]},
        "lower_priority": {"communities": ["65001:666"]}
    })
}

/// `count` copies of our AS, as BIRD prints an AS path.
pub fn as_path(count: usize) -> String {
    vec![OUR_AS.to_string(); count].join(" ")
}

/// BIRD's route block shows [`policy`]'s healthy attributes.
pub fn is_announced(block: &str) -> bool {
    attr(block, "as_path").as_deref() == Some(as_path(2).as_str())
        && attr(block, "community").as_deref() == Some("(65001,100)")
        && attr(block, "large_community").as_deref() == Some("(65001, 1, 100)")
}

/// BIRD's route block shows [`policy`]'s pessimized attributes: 1 + 6
/// prepends, 65001:666 added.
pub fn is_pessimized(block: &str) -> bool {
    attr(block, "as_path").as_deref() == Some(as_path(8).as_str())
        && attr(block, "community").as_deref() == Some("(65001,100) (65001,666)")
        && attr(block, "large_community").as_deref() == Some("(65001, 1, 100)")
}

/// BIRD and the real pathosd of one test.
pub struct Setup {
    pub a: Addrs,
    pub cfg: Value,
    pub d: Pathosd,
    pub bird: Bird,
}

impl Setup {
    /// Starts BIRD, then pathosd with [`config`]`(addrs(n), vips)` changed
    /// by `edit`.
    pub fn start(n: u8, vips: Value, edit: impl FnOnce(&mut Value)) -> Setup {
        let a = addrs(n);
        let bird = Bird::start(BirdPeer::new(a.peer, a.ours));
        let mut cfg = config(a, vips);
        edit(&mut cfg);
        let d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
        Setup { a, cfg, d, bird }
    }

    pub fn wait_established(&self) {
        let ok = poll(Duration::from_secs(8), || {
            self.bird.established().then_some(())
        });
        assert!(
            ok.is_some(),
            "BIRD not Established: {:?}\n{}\n{}",
            self.bird.bgp_state(),
            self.bird.log(),
            self.d.log()
        );
    }

    /// Waits (bounded) until BIRD's route for `prefix` satisfies `pred`.
    pub fn wait_route(&self, prefix: &str, what: &str, pred: impl Fn(&str) -> bool) -> String {
        poll(Duration::from_secs(10), || {
            self.bird.route(prefix).filter(|b| pred(b))
        })
        .unwrap_or_else(|| {
            panic!(
                "BIRD never showed {prefix} {what}: {:?}\npathosd: {}\n{}",
                self.bird.route(prefix),
                self.d.get("/status").map(|r| r.body).unwrap_or_default(),
                self.d.log()
            )
        })
    }

    /// Waits (bounded) until BIRD has no route for `prefix`.
    pub fn wait_gone(&self, prefix: &str) {
        let gone = poll(Duration::from_secs(10), || {
            self.bird.route(prefix).is_none().then_some(())
        });
        assert!(
            gone.is_some(),
            "{prefix} still in BIRD: {:?}\n{}",
            self.bird.route(prefix),
            self.d.log()
        );
    }

    /// UPDATE messages pathosd has sent to BIRD (from its /status).
    pub fn updates_sent(&self) -> u64 {
        self.d.peer()["messages_sent"]["update"].as_u64().unwrap()
    }

    /// BIRD's import counters for the session: "Import updates:" row
    /// (received, rejected, filtered, ignored, accepted).
    pub fn bird_import_updates(&self) -> Vec<u64> {
        let out = self
            .bird
            .birdc(&["show", "protocols", "all", "pathosd"])
            .unwrap_or_default();
        out.lines()
            .find_map(|l| l.trim().strip_prefix("Import updates:"))
            .map(|r| {
                r.split_whitespace()
                    .filter_map(|n| n.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}
