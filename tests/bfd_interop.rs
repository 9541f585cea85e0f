//! BFD beside the BGP session, against a real BIRD 2 (`protocol bfd`,
//! `bfd on` in the BGP protocol, multihop as on a router's loopback) and
//! against a test socket that sends what a peer must not:
//!
//! * the session comes Up at both ends and shows in /status and /metrics;
//! * pathosd stalled (SIGSTOP): BIRD's BFD declares it down within its
//!   Detection Time and BIRD drops its routes, long before the hold time;
//! * BIRD stalled: pathosd's BFD declares it down and ends the BGP session
//!   with Cease / BFD Down (RFC 9384), counted; both come back after;
//! * a packet with the wrong TTL (RFC 5881 §5), from the wrong source, with
//!   a wrong discriminator or malformed is dropped and counted, never
//!   trusted.
//!
//!
//! And against FRR's bfdd (multihop, its minimum TTL 254): Up at both ends,
//! each side's stall seen by the other.
//!
//! BIRD's and bfdd's BFD bind the wildcard address on ports 3784 and 4784,
//! so two of them on one host would take each other's packets: the tests
//! that run one hold [`WILDCARD`].
// Scenarios against real peers and whole configurations read as one
// script, top to bottom: the workspace's function-length lint is for
// shipped code.
#![allow(clippy::too_many_lines)]

mod support;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use pathosd::bfd::wire::{Diag, Packet, State};
use serde_json::{json, Value};
use support::bird::{Bird, BirdPeer};
use support::daemon::{config, Pathosd, API_PORT};
use support::{poll, Addrs};

const BFD_MS: u32 = 100;

/// Held by each test that runs a BFD speaker bound to the wildcard address.
static WILDCARD: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn bfd_block(multihop: Option<bool>) -> Value {
    let mut b = json!({
        "enabled": true,
        "desired_minimum_tx_interval": format!("{BFD_MS}ms"),
        "required_minimum_receive": format!("{BFD_MS}ms"),
        "detection_multiplier": 3
    });
    if let Some(m) = multihop {
        b["multihop"] = json!(m);
    }
    b
}

fn bird_bfd_state(bird: &Bird) -> Option<String> {
    let out = bird.birdc(&["show", "bfd", "sessions"])?;
    let line = out
        .lines()
        .find(|l| l.starts_with(&bird.peer.neighbor.to_string()))?;
    line.split_whitespace().nth(2).map(str::to_string)
}

fn our_bfd(d: &Pathosd) -> Value {
    d.peer()["bfd"].clone()
}

#[test]
fn bfd_with_bird_stalls_on_either_side() {
    let _one = WILDCARD.lock().unwrap_or_else(|e| e.into_inner());
    let a = Addrs::new(44);
    let mut peer = BirdPeer::new(a.peer, a.ours);
    peer.bfd_ms = Some(BFD_MS);
    // Hold time 9 s as the router recipe: without BFD a stall would keep
    // the routes 6 s or more.
    peer.hold_time = 9;
    peer.error_wait = (0, 0);
    let bird = Bird::start(peer);
    let prefix = format!("10.44.{}.1/32", a.ours.octets()[2]);
    let mut cfg = config(
        a,
        json!([{"name": "always", "prefix": prefix, "always": true}]),
    );
    cfg["bgp"]["hold_time"] = json!("9s");
    cfg["bgp"]["shutdown_drain"] = json!("1s");
    cfg["bgp"]["neighbors"][0]["bfd"] = bfd_block(None);
    let mut d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));

    let up = poll(Duration::from_secs(10), || {
        (bird.established()
            && bird.route(&prefix).is_some()
            && bird_bfd_state(&bird).as_deref() == Some("Up")
            && our_bfd(&d)["state"] == "up")
            .then_some(())
    });
    assert!(
        up.is_some(),
        "not up: BIRD bfd {:?}, ours {}\n{}\n{}",
        bird_bfd_state(&bird),
        our_bfd(&d),
        bird.log(),
        d.log()
    );
    let b = our_bfd(&d);
    assert_eq!(b["multihop"], true, "{b}");
    assert_eq!(b["remote_state"], "up", "{b}");
    assert_ne!(b["remote_discriminator"], 0, "{b}");
    let metrics = d.get("/metrics").unwrap().body;
    assert!(
        metrics.contains("pathosd_bfd_session_state{peer=\"bird\",bfd_state=\"up\"} 1"),
        "{metrics}"
    );

    // pathosd stalled: BIRD's BFD (100 ms × 3) takes the session down and
    // the route with it, within a second even on a loaded machine (the
    // figure is benches/bfd-stall.sh's); the hold time is 9 s.
    d.signal("STOP");
    let t0 = Instant::now();
    let gone = poll(Duration::from_secs(5), || {
        bird.route(&prefix).is_none().then(|| t0.elapsed())
    });
    let why = bird.birdc(&["show", "protocols", "all", "pathosd"]);
    d.signal("CONT");
    let gone = gone.unwrap_or_else(|| panic!("route kept at BIRD\n{}", bird.log()));
    assert!(gone < Duration::from_secs(1), "route gone after {gone:?}");
    let why = why.unwrap_or_default();
    assert!(why.contains("BFD session down"), "{why}");
    let back = poll(Duration::from_secs(10), || {
        (bird.route(&prefix).is_some() && our_bfd(&d)["state"] == "up").then_some(())
    });
    assert!(back.is_some(), "not back\n{}\n{}", bird.log(), d.log());

    // BIRD stalled: pathosd's BFD says Down after 300 ms and its BGP
    // session ends with Cease / BFD Down; BIRD resumed, both come back.
    // Downs so far: pathosd's resume counts one (BIRD's BFD said Down, its
    // BGP session had ended already), and BIRD renewing its session while
    // its BGP restarts may count another.
    let before = our_bfd(&d)["downs"].as_u64().unwrap();
    bird.signal("STOP");
    let down = poll(Duration::from_secs(5), || {
        let p = d.peer();
        (p["session_state"] != "established").then_some(p)
    });
    bird.signal("CONT");
    let p = down.unwrap_or_else(|| panic!("BGP session stayed up\n{}", d.log()));
    assert_eq!(p["notification_sent"], "Cease / BFD Down", "{p}");
    assert!(p["bfd"]["downs"].as_u64().unwrap() > before, "{p}");
    assert!(
        d.log()
            .contains("bfd bird: session up -> down (control detection time expired (1))"),
        "{}",
        d.log()
    );
    let back = poll(Duration::from_secs(10), || {
        (bird.established() && bird.route(&prefix).is_some() && our_bfd(&d)["state"] == "up")
            .then_some(())
    });
    assert!(back.is_some(), "not back\n{}\n{}", bird.log(), d.log());
    let metrics = d.get("/metrics").unwrap().body;
    let downs = format!(
        "pathosd_bfd_session_downs_total{{peer=\"bird\"}} {}",
        our_bfd(&d)["downs"]
    );
    assert!(metrics.contains(&downs), "{downs}\n{metrics}");

    // A reload with new BFD intervals: a Poll Sequence tells BIRD (its
    // Timeout, the detection time, becomes 3 x 150 ms), the BFD and BGP
    // sessions stay up.
    let bgp_since = |b: &Bird| {
        b.birdc(&["show", "protocols", "pathosd"]).and_then(|o| {
            o.lines()
                .find(|l| l.starts_with("pathosd"))
                .map(str::to_string)
        })
    };
    let since = bgp_since(&bird);
    let downs_before = our_bfd(&d)["downs"].clone();
    cfg["bgp"]["neighbors"][0]["bfd"]["desired_minimum_tx_interval"] = json!("150ms");
    d.write_config(&cfg);
    d.signal("HUP");
    let slower = poll(Duration::from_secs(5), || {
        let out = bird.birdc(&["show", "bfd", "sessions"])?;
        out.lines()
            .any(|l| {
                l.starts_with(&a.ours.to_string()) && l.contains(" Up ") && l.ends_with("0.450")
            })
            .then_some(())
    });
    assert!(
        slower.is_some(),
        "{:?}\n{}",
        bird.birdc(&["show", "bfd", "sessions"]),
        d.log()
    );
    assert_eq!(bgp_since(&bird), since, "the BGP session restarted");
    assert_eq!(our_bfd(&d)["downs"], downs_before);

    // The stop's drain (1 s here) keeps BFD going: BIRD sees the Cease,
    // not a BFD session gone quiet that would end the session first.
    d.signal("TERM");
    let exit = d.wait_exit(Duration::from_secs(5));
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}\n{}", d.log());
    let why = bird
        .birdc(&["show", "protocols", "all", "pathosd"])
        .unwrap_or_default();
    assert!(why.contains("Administrative shutdown"), "{why}");
    assert!(!why.contains("BFD session down"), "{why}");
}

/// A control packet as a peer in `state` sends it.
fn packet(state: State, my: u32, your: u32) -> [u8; 24] {
    Packet {
        diag: Diag::NONE,
        state,
        poll: false,
        final_: false,
        control_plane_independent: false,
        demand: false,
        detect_mult: 3,
        my_discriminator: my,
        your_discriminator: your,
        desired_min_tx: 1_000_000,
        required_min_rx: 1_000_000,
        required_min_echo_rx: 0,
    }
    .encode()
}

/// A UDP socket on `ip` with a source port of RFC 5881 §4's range, sending
/// with `ttl`.
fn sender(ip: Ipv4Addr, ttl: u32) -> UdpSocket {
    let s = (49152..=65535)
        .find_map(|p| UdpSocket::bind((ip, p)).ok())
        .unwrap();
    s.set_ttl(ttl).unwrap();
    s
}

/// A single-hop session with a peer that is this test: what it must drop.
#[test]
fn wrong_ttl_source_discriminator_and_garbage_are_dropped_and_counted() {
    let a = Addrs::new(45);
    let fake = Ipv4Addr::new(127, 45, a.ours.octets()[2], 3);
    let stranger = Ipv4Addr::new(127, 45, a.ours.octets()[2], 9);
    let mut cfg = config(
        a,
        json!([{"name": "v", "prefix": "10.45.0.1/32", "always": true}]),
    );
    cfg["bgp"]["neighbors"][0]["address"] = json!(fake.to_string());
    cfg["bgp"]["neighbors"][0]["passive"] = json!(true);
    cfg["bgp"]["neighbors"][0]["bfd"] = bfd_block(Some(false));
    let d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
    let to = SocketAddr::from((a.ours, 3784));
    // The session exists once its discriminator shows.
    let ours = poll(Duration::from_secs(5), || {
        our_bfd(&d)["local_discriminator"].as_u64()
    })
    .unwrap_or_else(|| panic!("no BFD session\n{}", d.log())) as u32;
    let dropped = |reason: &str| our_bfd(&d)["dropped"][reason].as_u64().unwrap_or(0);
    let unmatched = || {
        let m = d.get("/metrics").unwrap().body;
        m.lines()
            .find_map(|l| l.strip_prefix("pathosd_bfd_unmatched_packets_total "))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let wait = |what: &str, f: &dyn Fn() -> bool| {
        assert!(
            poll(Duration::from_secs(5), || f().then_some(())).is_some(),
            "{what}: {}\n{}",
            our_bfd(&d),
            d.log()
        );
    };

    // From the peer's address with TTL 64: RFC 5881 §5 says discard.
    sender(fake, 64)
        .send_to(&packet(State::Down, 77, 0), to)
        .unwrap();
    wait("wrong_ttl", &|| dropped("wrong_ttl") == 1);
    assert_eq!(
        our_bfd(&d)["remote_discriminator"],
        0,
        "untrusted packet used"
    );

    // Our discriminator from another address: the session is found, the
    // source is wrong.
    sender(stranger, 255)
        .send_to(&packet(State::Down, 77, ours), to)
        .unwrap();
    wait("wrong_source", &|| dropped("wrong_source") == 1);

    // A discriminator that is no session's, and a stranger without one.
    sender(fake, 255)
        .send_to(&packet(State::Down, 77, ours.wrapping_add(1)), to)
        .unwrap();
    sender(stranger, 255)
        .send_to(&packet(State::Down, 77, 0), to)
        .unwrap();
    wait("unmatched", &|| unmatched() == 2);

    // Garbage from the peer's address: too short, and version 2.
    let s = sender(fake, 255);
    s.send_to(&[0x20, 0x40, 3], to).unwrap();
    let mut v2 = packet(State::Down, 77, 0);
    v2[0] = 0x40;
    s.send_to(&v2, to).unwrap();
    wait("malformed", &|| {
        dropped("short") == 1 && dropped("version") == 1
    });
    assert_eq!(our_bfd(&d)["state"], "down");

    // And the one packet that is right moves the session: Down → Init.
    s.send_to(&packet(State::Down, 77, 0), to).unwrap();
    wait("init", &|| our_bfd(&d)["state"] == "init");
    assert_eq!(our_bfd(&d)["remote_discriminator"], 77);
    let m = d.get("/metrics").unwrap().body;
    assert!(
        m.contains("pathosd_bfd_dropped_packets_total{peer=\"bird\",reason=\"wrong_ttl\"} 1"),
        "{m}"
    );

    // A flood of datagrams on the BFD port does not hold up the rest of
    // the daemon: requests are answered while it lasts.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        let s = sender(stranger, 255);
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(10);
            let mut sent = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < end {
                let _ = s.send_to(&[0u8; 24], to);
                sent += 1;
            }
            sent
        })
    };
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let t = Instant::now();
        let r = d.get("/status");
        slowest = slowest.max(t.elapsed());
        assert!(r.is_some(), "no answer during the flood\n{}", d.log());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = flood.join().unwrap();
    assert!(
        slowest < Duration::from_secs(2),
        "slowest answer {slowest:?} ({sent} datagrams)"
    );
    assert!(unmatched() > 2, "the flood was not seen");
}

/// FRR's bfdd alone (no zebra), with a multihop peer: pathosd's session
/// comes Up with it, and each side sees the other's stall.
#[test]
fn bfd_with_frr_bfdd() {
    use std::os::unix::fs::PermissionsExt;
    let _one = WILDCARD.lock().unwrap_or_else(|e| e.into_inner());
    let a = Addrs::new(46);
    let dir = support::TempDir::new("bfdd");
    // bfdd drops to user frr: its files must be writable for it.
    std::fs::create_dir_all(dir.path("vty")).unwrap();
    for p in [dir.path(""), dir.path("vty")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let conf = format!(
        "bfd\n peer {ours} multihop local-address {peer}\n  receive-interval {BFD_MS}\n  transmit-interval {BFD_MS}\n  detect-multiplier 3\n !\n!\n",
        ours = a.ours,
        peer = a.peer
    );
    std::fs::write(dir.path("bfdd.conf"), conf).unwrap();
    let log = std::fs::File::create(dir.path("bfdd.log")).unwrap();
    let child = std::process::Command::new("/usr/lib/frr/bfdd")
        .arg("-f")
        .arg(dir.path("bfdd.conf"))
        .arg("-i")
        .arg(dir.path("bfdd.pid"))
        .arg("-z")
        .arg(dir.path("zserv"))
        .arg("--vty_socket")
        .arg(dir.path("vty"))
        .arg("--bfdctl")
        .arg(dir.path("bfdctl"))
        .args(["-P", "0", "--log", "stdout"])
        .stdout(log)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("FRR bfdd (Debian package frr) must be installed");
    let bfdd = support::Daemon(child);
    let vtysh = |cmd: &str| {
        support::run(
            std::process::Command::new("vtysh")
                .arg("--vty_socket")
                .arg(dir.path("vty"))
                .args(["-d", "bfdd", "-c", cmd]),
            Duration::from_secs(3),
        )
    };
    let frr_state = || {
        let v: Value = serde_json::from_str(&vtysh("show bfd peers json")?).ok()?;
        v.as_array()?
            .iter()
            .find(|p| p["peer"] == a.ours.to_string())?["status"]
            .as_str()
            .map(str::to_string)
    };
    let mut cfg = config(
        a,
        json!([{"name": "v", "prefix": "10.46.0.1/32", "always": true}]),
    );
    cfg["bgp"]["neighbors"][0]["passive"] = json!(true);
    cfg["bgp"]["neighbors"][0]["name"] = json!("frr");
    cfg["bgp"]["neighbors"][0]["bfd"] = bfd_block(None);
    let d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
    let log = || std::fs::read_to_string(dir.path("bfdd.log")).unwrap_or_default();

    let up = poll(Duration::from_secs(10), || {
        (frr_state().as_deref() == Some("up") && our_bfd(&d)["state"] == "up").then_some(())
    });
    assert!(
        up.is_some(),
        "not up: FRR {:?}, ours {}\n{}\n{}",
        frr_state(),
        our_bfd(&d),
        log(),
        d.log()
    );

    // pathosd stalled: bfdd's detection expires.
    d.signal("STOP");
    let down = poll(Duration::from_secs(5), || {
        (frr_state().as_deref() == Some("down")).then_some(())
    });
    d.signal("CONT");
    assert!(down.is_some(), "bfdd never saw pathosd stop\n{}", log());
    let back = poll(Duration::from_secs(10), || {
        (frr_state().as_deref() == Some("up") && our_bfd(&d)["state"] == "up").then_some(())
    });
    assert!(back.is_some(), "not back\n{}\n{}", log(), d.log());

    // bfdd stalled: ours expires, with its diagnostic.
    let pid = bfdd.0.id().to_string();
    let kill = |sig: &str| {
        let st = std::process::Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(&pid)
            .status();
        assert!(st.is_ok_and(|s| s.success()), "kill -{sig} {pid}");
    };
    kill("STOP");
    let ours = poll(Duration::from_secs(5), || {
        let b = our_bfd(&d);
        (b["state"] == "down").then_some(b)
    });
    kill("CONT");
    let b = ours.unwrap_or_else(|| panic!("pathosd never saw bfdd stop\n{}", d.log()));
    assert_eq!(b["diagnostic"], "control detection time expired", "{b}");
    let back = poll(Duration::from_secs(10), || {
        (frr_state().as_deref() == Some("up") && our_bfd(&d)["state"] == "up").then_some(())
    });
    assert!(back.is_some(), "not back\n{}\n{}", log(), d.log());
}

/// RFC 5881 single hop, as with a BIRD on the other end of a link: pathosd
/// and BIRD in two network namespaces this test makes, joined by a veth
/// pair (10.251.x.0/30), BIRD's neighbor directly connected (no
/// `multihop`), its BFD on the interface (TTL 255 both ways).
#[test]
fn single_hop_bfd_with_bird_over_a_link() {
    use support::netns::{sh, Netns, NsBird};
    let pid = std::process::id();
    let x = (pid % 250) as u8;
    let (na, nb) = (
        Netns(format!("pd-bfd-a-{pid}")),
        Netns(format!("pd-bfd-b-{pid}")),
    );
    for ns in [&na.0, &nb.0] {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", ns])
            .status();
        sh(&["ip", "netns", "add", ns]);
        sh(&["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
    }
    let (la, lb) = (
        format!("pdbfa{}", pid % 100_000),
        format!("pdbfb{}", pid % 100_000),
    );
    sh(&[
        "ip", "link", "add", &la, "type", "veth", "peer", "name", &lb,
    ]);
    sh(&["ip", "link", "set", &la, "netns", &na.0]);
    sh(&["ip", "link", "set", &lb, "netns", &nb.0]);
    let (ours, theirs) = (format!("10.251.{x}.1"), format!("10.251.{x}.2"));
    for (ns, link, addr) in [(&na.0, &la, &ours), (&nb.0, &lb, &theirs)] {
        sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "ip",
            "addr",
            "add",
            &format!("{addr}/30"),
            "dev",
            link,
        ]);
        sh(&["ip", "netns", "exec", ns, "ip", "link", "set", link, "up"]);
    }
    let conf = format!(
        "log stderr all;\nrouter id {theirs};\nprotocol device {{ }}\n\
         protocol bfd {{ interface \"*\" {{ min rx interval {BFD_MS} ms; min tx interval {BFD_MS} ms; multiplier 3; }}; }}\n\
         protocol bgp pathosd {{\n  local {theirs} as 65000;\n  neighbor {ours} as 65001;\n  bfd on;\n  hold time 9;\n  error wait time 0,0;\n  ipv4 {{ import all; export none; }};\n}}\n"
    );
    let bird = NsBird::start(&nb.0, &conf, "bfd-single-hop");
    let birdc = |args: &[&str]| bird.birdc(args);
    let prefix = format!("10.251.{x}.100/32");
    let cfg = json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": ours, "local_address": ours},
        "bgp": {"listen_port": -1, "hold_time": "9s", "neighbors": [{
            "name": "bird", "address": theirs, "peer_asn": 65000, "bfd": bfd_block(None)
        }]},
        "api": {"listen": format!("{ours}:{API_PORT}"), "ubus_socket": ""},
        "logging": {"level": "debug", "syslog": false, "timestamps": true},
        "vips": [{"name": "v", "prefix": prefix, "always": true}]
    });
    let d = Pathosd::start_in(&cfg, SocketAddr::from(([127, 0, 0, 1], 9)), Some(&na.0));
    let status = || -> Value {
        support::run(
            std::process::Command::new("ip").args([
                "netns",
                "exec",
                &na.0,
                "curl",
                "-sf",
                "--max-time",
                "2",
                &format!("http://{ours}:{API_PORT}/status"),
            ]),
            Duration::from_secs(3),
        )
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
    };
    let route = || birdc(&["show", "route", &prefix]).is_some_and(|o| o.contains(&prefix));
    let bird_bfd = || {
        birdc(&["show", "bfd", "sessions"])
            .and_then(|o| o.lines().find(|l| l.starts_with(&ours)).map(str::to_string))
    };
    let up = poll(Duration::from_secs(15), || {
        (route()
            && bird_bfd().is_some_and(|l| l.contains(" Up "))
            && status()["peers"][0]["bfd"]["state"] == "up")
            .then_some(())
    });
    let bird_log = || bird.log();
    assert!(
        up.is_some(),
        "not up: {:?} {}\n{}\n{}",
        bird_bfd(),
        status()["peers"][0],
        bird_log(),
        d.log()
    );
    // Single hop at both ends: BIRD names the interface, ours says so.
    assert!(
        bird_bfd().is_some_and(|l| l.contains(&lb)),
        "{:?}",
        bird_bfd()
    );
    assert_eq!(status()["peers"][0]["bfd"]["multihop"], false);

    d.signal("STOP");
    let t0 = Instant::now();
    let gone = poll(Duration::from_secs(5), || (!route()).then(|| t0.elapsed()));
    d.signal("CONT");
    let gone = gone.unwrap_or_else(|| panic!("route kept\n{}", bird_log()));
    assert!(gone < Duration::from_secs(1), "route gone after {gone:?}");
    let back = poll(Duration::from_secs(10), || {
        (route() && status()["peers"][0]["bfd"]["state"] == "up").then_some(())
    });
    assert!(back.is_some(), "not back\n{}\n{}", bird_log(), d.log());
}
