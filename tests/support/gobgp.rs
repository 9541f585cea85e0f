//! A real gobgpd (Debian's `gobgpd` package) on loopback, with its gRPC API
//! on the test's own address; queried with the `gobgp` CLI.

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use super::{poll, run, Daemon, TempDir, OUR_AS, PEER_AS, PORT};

/// gRPC API port (on the test's own address).
const API_PORT: u16 = 50051;

pub struct Gobgp {
    pub dir: TempDir,
    _daemon: Daemon,
    pub local: Ipv4Addr,
    pub neighbor: Ipv4Addr,
}

impl Gobgp {
    pub fn start(local: Ipv4Addr, neighbor: Ipv4Addr) -> Gobgp {
        let dir = TempDir::new("gobgp");
        let conf = format!(
            "[global.config]\n\
             \x20 as = {PEER_AS}\n\
             \x20 router-id = \"{local}\"\n\
             \x20 port = {PORT}\n\
             \x20 local-address-list = [\"{local}\"]\n\
             [[neighbors]]\n\
             \x20 [neighbors.config]\n\
             \x20   neighbor-address = \"{neighbor}\"\n\
             \x20   peer-as = {OUR_AS}\n\
             \x20 [neighbors.transport.config]\n\
             \x20   local-address = \"{local}\"\n\
             \x20   remote-port = {PORT}\n\
             \x20 [neighbors.ebgp-multihop.config]\n\
             \x20   enabled = true\n\
             \x20   multihop-ttl = 255\n\
             \x20 [neighbors.timers.config]\n\
             \x20   connect-retry = 1\n\
             \x20   hold-time = 3\n\
             \x20   keepalive-interval = 1\n"
        );
        let conf_path = dir.path("gobgpd.toml");
        std::fs::write(&conf_path, conf).unwrap();
        let log = std::fs::File::create(dir.path("gobgpd.log")).unwrap();
        let child = Command::new("gobgpd")
            .arg("-f")
            .arg(&conf_path)
            .arg("--api-hosts")
            .arg(format!("{local}:{API_PORT}"))
            .arg("--pprof-disable")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("gobgpd (Debian package gobgpd) must be installed");
        let g = Gobgp {
            dir,
            _daemon: Daemon(child),
            local,
            neighbor,
        };
        let up = poll(Duration::from_secs(5), || g.cli(&["neighbor"]));
        assert!(up.is_some(), "gobgpd did not come up");
        g
    }

    pub fn cli(&self, args: &[&str]) -> Option<String> {
        run(
            Command::new("gobgp")
                .args(["-u", &self.local.to_string(), "-p", &API_PORT.to_string()])
                .args(args),
            Duration::from_secs(3),
        )
    }

    /// The session state column of `gobgp neighbor` ("Establ", "Active", ...).
    pub fn bgp_state(&self) -> Option<String> {
        let out = self.cli(&["neighbor"])?;
        let me = self.neighbor.to_string();
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(me.as_str()))
            .and_then(|l| l.split_whitespace().nth(3))
            .map(str::to_string)
    }

    /// The global RIB entry for `prefix`, as JSON.
    pub fn route(&self, prefix: &str) -> Option<serde_json::Value> {
        let v: serde_json::Value =
            serde_json::from_str(&self.cli(&["global", "rib", "-j"])?).ok()?;
        let r = v[prefix].clone();
        (!r.is_null()).then_some(r)
    }
}
