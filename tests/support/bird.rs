//! A real BIRD 2 on loopback: writes bird.conf into a temp dir, runs
//! `bird -f` as a child (killed on drop) and queries it with birdc.

use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{poll, run, Daemon, TempDir, OUR_AS, PEER_AS, PORT};

/// BIRD's side of the session with pathosd.
#[derive(Debug, Clone)]
pub struct BirdPeer {
    /// BIRD's own address (`local`, strict bind).
    pub local: IpAddr,
    pub local_port: u16,
    /// pathosd's address.
    pub neighbor: IpAddr,
    pub neighbor_port: u16,
    pub router_id: Ipv4Addr,
    pub password: Option<String>,
    /// BIRD only waits for pathosd to connect.
    pub passive: bool,
    pub hold_time: u16,
    /// GTSM (`ttl security on`).
    pub ttl_security: bool,
    /// BIRD's `error wait time MIN,MAX` in seconds.
    pub error_wait: (u32, u32),
    /// BFD with pathosd (`bfd on`, and a `protocol bfd` whose multihop
    /// sessions run at this interval in ms, multiplier 3).
    pub bfd_ms: Option<u32>,
    /// BIRD in pathosd's AS (iBGP) instead of its own.
    pub ibgp: bool,
    /// RFC 9234: BIRD's `local role` (provider, rs_server, rs_client,
    /// customer, peer) and `require roles`.
    pub role: Option<&'static str>,
    pub require_roles: bool,
    /// RFC 8950 on the IPv4 channel (`extended next hop on`).
    pub extended_next_hop: bool,
}

impl BirdPeer {
    pub fn new(local: Ipv4Addr, neighbor: Ipv4Addr) -> BirdPeer {
        BirdPeer {
            local: local.into(),
            local_port: PORT,
            neighbor: neighbor.into(),
            neighbor_port: PORT,
            router_id: local,
            password: None,
            passive: false,
            hold_time: 3,
            ttl_security: false,
            error_wait: (1, 2),
            bfd_ms: None,
            ibgp: false,
            role: None,
            require_roles: false,
            extended_next_hop: false,
        }
    }

    /// The config. BIRD quirks on loopback: a peer on lo needs `multihop`
    /// (it is no directly connected neighbor); `strict bind` binds the
    /// listener to `local` only so parallel BIRDs can share port 1179;
    /// `error wait time 1,2` (by default) and `connect retry time 1` make
    /// reconnects quick; 127/8 next hops are "unreachable" but the routes are imported;
    /// a route's time is shown to the millisecond (`timeformat route`), for
    /// the tests that compare when routes came.
    pub fn conf(&self) -> String {
        let mut extra = String::new();
        if let Some(p) = &self.password {
            extra.push_str(&format!("  password \"{p}\";\n"));
        }
        if self.ttl_security {
            extra.push_str("  ttl security on;\n");
        }
        if self.passive {
            extra.push_str("  passive on;\n");
        }
        if let Some(r) = self.role {
            extra.push_str(&format!("  local role {r};\n"));
        }
        if self.require_roles {
            extra.push_str("  require roles on;\n");
        }
        let mut bfd = String::new();
        if let Some(ms) = self.bfd_ms {
            extra.push_str("  bfd on;\n");
            bfd = format!(
                "protocol bfd {{\n\
                 \x20 multihop {{ min rx interval {ms} ms; min tx interval {ms} ms; multiplier 3; }};\n\
                 }}\n"
            );
        }
        format!(
            "log stderr all;\n\
             timeformat route iso long ms;\n\
             router id {rid};\n\
             protocol device {{ }}\n\
             protocol bgp pathosd {{\n\
             \x20 local {local} port {lport} as {local_as};\n\
             \x20 neighbor {nb} port {nport} as {OUR_AS};\n\
             \x20 multihop;\n\
             \x20 strict bind on;\n\
             \x20 hold time {hold};\n\
             \x20 connect retry time 1;\n\
             \x20 connect delay time 1;\n\
             \x20 error wait time {ew_min},{ew_max};\n\
             {extra}\
             \x20 ipv4 {{ import all; export none;{enh} }};\n\
             \x20 ipv6 {{ import all; export none; }};\n\
             }}\n\
             {bfd}",
            rid = self.router_id,
            local = self.local,
            lport = self.local_port,
            nb = self.neighbor,
            nport = self.neighbor_port,
            hold = self.hold_time,
            ew_min = self.error_wait.0,
            ew_max = self.error_wait.1,
            local_as = if self.ibgp { OUR_AS } else { PEER_AS },
            enh = if self.extended_next_hop {
                " extended next hop on;"
            } else {
                ""
            },
        )
    }
}

pub struct Bird {
    pub dir: TempDir,
    daemon: Option<Daemon>,
    pub peer: BirdPeer,
}

impl Bird {
    /// Starts BIRD and waits (bounded) until its control socket answers.
    pub fn start(peer: BirdPeer) -> Bird {
        let dir = TempDir::new("bird");
        let mut b = Bird {
            dir,
            daemon: None,
            peer,
        };
        b.launch();
        b
    }

    fn sock(&self) -> String {
        self.dir.path("bird.ctl").display().to_string()
    }

    fn launch(&mut self) {
        let conf = self.dir.path("bird.conf");
        std::fs::write(&conf, self.peer.conf()).unwrap();
        let log = std::fs::File::create(self.dir.path("bird.log")).unwrap();
        let child = Command::new("bird")
            .arg("-f")
            .arg("-c")
            .arg(&conf)
            .arg("-s")
            .arg(self.sock())
            .arg("-P")
            .arg(self.dir.path("bird.pid"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("bird (Debian package bird2) must be installed");
        self.daemon = Some(Daemon(child));
        let up = poll(Duration::from_secs(5), || self.birdc(&["show", "status"]));
        assert!(up.is_some(), "BIRD did not come up: {}", self.log());
    }

    /// Sends `sig` ("STOP", "CONT", ...) to this BIRD, by its PID.
    pub fn signal(&self, sig: &str) {
        let pid = self.daemon.as_ref().map(|d| d.0.id()).expect("BIRD runs");
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .expect("kill(1)");
        assert!(st.success(), "kill -{sig} {pid}");
    }

    /// Kills BIRD and starts it again with the same config.
    pub fn restart(&mut self) {
        self.daemon = None;
        let _ = std::fs::remove_file(self.sock());
        self.launch();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path("bird.log")).unwrap_or_default()
    }

    pub fn birdc(&self, args: &[&str]) -> Option<String> {
        run(
            Command::new("birdc").arg("-s").arg(self.sock()).args(args),
            Duration::from_secs(3),
        )
    }

    /// The BGP state BIRD shows for the pathosd session ("Established", ...).
    pub fn bgp_state(&self) -> Option<String> {
        let out = self.birdc(&["show", "protocols", "all", "pathosd"])?;
        out.lines()
            .find_map(|l| l.trim().strip_prefix("BGP state:"))
            .map(|s| s.trim().to_string())
    }

    pub fn established(&self) -> bool {
        self.bgp_state().as_deref() == Some("Established")
    }

    /// `show route <prefix> all`: the route's text block, if BIRD has it.
    pub fn route(&self, prefix: &str) -> Option<String> {
        let out = self.birdc(&["show", "route", prefix, "all"])?;
        out.lines().any(|l| l.starts_with(prefix)).then_some(out)
    }

    /// Number of routes in `table` (master4 / master6).
    pub fn route_count(&self, table: &str) -> Option<u32> {
        let out = self.birdc(&["show", "route", "table", table, "count"])?;
        // "10000 of 10000 routes for 10000 networks in table master4"
        out.lines()
            .find(|l| l.contains("routes for"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    }
}

/// The value of `BGP.<attr>:` in a `show route all` block.
pub fn attr(block: &str, name: &str) -> Option<String> {
    let key = format!("BGP.{name}:");
    block
        .lines()
        .find_map(|l| l.trim().strip_prefix(key.as_str()))
        .map(|v| v.trim().to_string())
}
