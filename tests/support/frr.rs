//! A real FRR bgpd on loopback, run directly without zebra (`-Z`): its own
//! config, pid file and vty socket directory in a temp dir; queried with
//! `vtysh --vty_socket DIR -d bgpd`.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{poll, run, Daemon, TempDir, OUR_AS, PEER_AS, PORT};

pub struct Frr {
    pub dir: TempDir,
    _daemon: Daemon,
    pub neighbor: Ipv4Addr,
}

impl Frr {
    /// bgpd on `local`:1179 peering with pathosd at `neighbor`. FRR needs
    /// `no bgp ebgp-requires-policy` (RFC 8212 default) to accept routes
    /// without a policy, and `ebgp-multihop` on loopback.
    pub fn start(local: Ipv4Addr, neighbor: Ipv4Addr) -> Frr {
        Frr::start_with_password(local, neighbor, None)
    }

    /// As [`Frr::start`], with `neighbor X password KEY` (TCP MD5).
    pub fn start_with_password(local: Ipv4Addr, neighbor: Ipv4Addr, key: Option<&str>) -> Frr {
        let dir = TempDir::new("frr");
        let password = key
            .map(|k| format!(" neighbor {neighbor} password {k}\n"))
            .unwrap_or_default();
        let conf = format!(
            "frr defaults traditional\n\
             hostname pathosd-test\n\
             router bgp {PEER_AS}\n\
             \x20bgp router-id {local}\n\
             \x20no bgp ebgp-requires-policy\n\
             \x20no bgp default ipv4-unicast\n\
             \x20neighbor {neighbor} remote-as {OUR_AS}\n\
             \x20neighbor {neighbor} port {PORT}\n\
             \x20neighbor {neighbor} update-source {local}\n\
             \x20neighbor {neighbor} ebgp-multihop 255\n\
             \x20neighbor {neighbor} timers 1 3\n\
             \x20neighbor {neighbor} timers connect 1\n\
             {password}\
             \x20address-family ipv4 unicast\n\
             \x20 neighbor {neighbor} activate\n\
             \x20exit-address-family\n"
        );
        let conf_path = dir.path("bgpd.conf");
        std::fs::write(&conf_path, conf).unwrap();
        std::fs::create_dir_all(dir.path("vty")).unwrap();
        let log = std::fs::File::create(dir.path("bgpd.log")).unwrap();
        let child = Command::new("/usr/lib/frr/bgpd")
            .arg("-f")
            .arg(&conf_path)
            .arg("-i")
            .arg(dir.path("bgpd.pid"))
            .arg("-z")
            .arg(dir.path("zserv"))
            .arg("--vty_socket")
            .arg(dir.path("vty"))
            .args(["-Z", "-S", "-n", "-P", "0", "-p", &PORT.to_string()])
            .arg("-l")
            .arg(local.to_string())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("FRR bgpd (Debian package frr) must be installed");
        let frr = Frr {
            dir,
            _daemon: Daemon(child),
            neighbor,
        };
        let up = poll(Duration::from_secs(5), || {
            frr.vtysh("show bgp summary json")
        });
        assert!(up.is_some(), "bgpd did not come up");
        frr
    }

    pub fn vtysh(&self, cmd: &str) -> Option<String> {
        run(
            Command::new("vtysh")
                .arg("--vty_socket")
                .arg(self.dir.path("vty"))
                .args(["-d", "bgpd", "-c", cmd]),
            Duration::from_secs(3),
        )
    }

    pub fn json(&self, cmd: &str) -> Option<serde_json::Value> {
        serde_json::from_str(&self.vtysh(cmd)?).ok()
    }

    pub fn bgp_state(&self) -> Option<String> {
        let v = self.json(&format!("show bgp neighbors {} json", self.neighbor))?;
        v[self.neighbor.to_string()]["bgpState"]
            .as_str()
            .map(str::to_string)
    }

    /// The paths FRR holds for `prefix` in IPv4 unicast.
    pub fn route(&self, prefix: &str) -> Option<serde_json::Value> {
        let v = self.json("show bgp ipv4 unicast json")?;
        let r = v["routes"][prefix].clone();
        (!r.is_null()).then_some(r)
    }
}
