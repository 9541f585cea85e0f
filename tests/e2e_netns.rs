//! Two pathosd instances announce one VIP to one BIRD, each in its own
//! network namespace the test creates, joined to BIRD's namespace by veth
//! pairs (10.252.x.0/30 and 10.252.x.4/30, addresses inside the namespaces
//! only):
//!
//! ```text
//!  ns a (primary 10.252.x.1) ── veth ── 10.252.x.2 ┐
//!                                                   ns b: BIRD + kernel protocol
//!  ns s (standby 10.252.x.5) ── veth ── 10.252.x.6 ┘
//! ```
//!
//! BIRD's `merge paths` is a kernel protocol option: merged (ECMP) routes
//! exist only in what BIRD exports to the kernel, so the test runs BIRD's
//! kernel protocol inside ns b and reads `ip route` there: with merge paths
//! on and equal AS paths, one route with two next hops. With merge paths
//! off, BIRD picks one; the standby has the lower router id, so it wins the
//! tie until its `announce.as_path_prepend` of 4 makes BIRD prefer the
//! primary. A failing check on the primary moves the route to the standby.

mod support;

use serde_json::{json, Value};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::daemon::Pathosd;
use support::netns::{sh, NsBird};
use support::{poll, run, TempDir};

/// The namespaces and veth pairs of one test, deleted on drop (also after a
/// panic). Deleting a namespace deletes the veth ends inside it.
struct Net {
    ns: Vec<String>,
    links: Vec<String>,
    /// 10.252.`x`.0/29.
    x: u8,
}

impl Net {
    fn new() -> Net {
        let pid = std::process::id();
        let mut net = Net {
            ns: Vec::new(),
            links: Vec::new(),
            x: (pid % 250) as u8,
        };
        for role in ["a", "s", "b"] {
            let ns = format!("pd-e2e-{role}-{pid}");
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
            sh(&["ip", "netns", "add", &ns]);
            net.ns.push(ns);
            net.exec(role, &["ip", "link", "set", "lo", "up"]);
        }
        // (namespace, its address, BIRD's address) per speaker.
        for (role, ours, bird) in [("a", 1, 2), ("s", 5, 6)] {
            let here = format!("pd{role}{}", pid % 1_000_000);
            let there = format!("pb{role}{}", pid % 1_000_000);
            net.links.push(here.clone());
            net.links.push(there.clone());
            sh(&[
                "ip", "link", "add", &here, "type", "veth", "peer", "name", &there,
            ]);
            sh(&["ip", "link", "set", &here, "netns", net.name(role)]);
            sh(&["ip", "link", "set", &there, "netns", net.name("b")]);
            let a = format!("{}/30", net.addr(ours));
            let b = format!("{}/30", net.addr(bird));
            net.exec(role, &["ip", "addr", "add", &a, "dev", &here]);
            net.exec(role, &["ip", "link", "set", &here, "up"]);
            net.exec("b", &["ip", "addr", "add", &b, "dev", &there]);
            net.exec("b", &["ip", "link", "set", &there, "up"]);
        }
        net
    }

    fn name(&self, role: &str) -> &str {
        let i = ["a", "s", "b"].iter().position(|r| *r == role).unwrap();
        &self.ns[i]
    }

    fn addr(&self, host: u8) -> String {
        format!("10.252.{}.{host}", self.x)
    }

    fn exec(&self, role: &str, args: &[&str]) {
        let mut a = vec!["ip", "netns", "exec", self.name(role)];
        a.extend_from_slice(args);
        sh(&a);
    }

    /// `ip -4 route show PREFIX` in BIRD's namespace.
    fn kernel_route(&self, prefix: &str) -> String {
        run(
            Command::new("ip").args([
                "netns",
                "exec",
                self.name("b"),
                "ip",
                "-4",
                "route",
                "show",
                prefix,
            ]),
            Duration::from_secs(3),
        )
        .unwrap_or_default()
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

fn bird_conf(net: &Net, merge: bool) -> String {
    let mut c = format!(
        "log stderr all;\n\
         router id {rid};\n\
         protocol device {{ scan time 1; }}\n\
         protocol kernel {{\n\
         \x20 ipv4 {{ import none; export all; }};\n\
         \x20 merge paths {merge};\n\
         \x20 learn off;\n\
         \x20 persist off;\n\
         }}\n",
        rid = net.addr(2),
        merge = if merge { "on" } else { "off" },
    );
    for (name, ours, bird) in [("pd_primary", 1, 2), ("pd_standby", 5, 6)] {
        c.push_str(&format!(
            "protocol bgp {name} {{\n\
             \x20 local {local} as 65000;\n\
             \x20 neighbor {nb} as 65001;\n\
             \x20 hold time 3;\n\
             \x20 connect retry time 1;\n\
             \x20 connect delay time 1;\n\
             \x20 error wait time 1,2;\n\
             \x20 ipv4 {{ import all; export none; }};\n\
             }}\n",
            local = net.addr(bird),
            nb = net.addr(ours),
        ));
    }
    c
}

/// BIRD in namespace b with one session per speaker and the kernel protocol.
fn start_bird(net: &Net) -> NsBird {
    NsBird::start(net.name("b"), &bird_conf(net, true), "e2e-nsbird")
}

/// A speaker in namespace `role` announcing `vip` while `flag` exists.
fn speaker_config(
    net: &Net,
    ours: u8,
    router_id: &str,
    vip: &str,
    flag: &str,
    prepend: u8,
) -> Value {
    json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": router_id, "local_address": net.addr(ours)},
        "bgp": {
            "hold_time": "3s",
            "neighbors": [{"name": "bird", "address": net.addr(ours + 1), "peer_asn": 65000}]
        },
        "api": {"listen": "", "ubus_socket": ""},
        "logging": {"level": "debug", "syslog": false, "timestamps": true},
        "vips": [{
            "name": "vip",
            "prefix": vip,
            "check": {"type": "exec", "interval": "300ms", "timeout": "200ms", "rise": 1, "fall": 1,
                      "exec": {"command": "/usr/bin/test", "args": ["-e", flag]}},
            "policy": {"fail_action": "withdraw", "announce": {"as_path_prepend": prepend}}
        }]
    })
}

/// The next hops of a kernel route: `via A` once, or one `nexthop via A`
/// line per path of a multipath route.
fn next_hops(route: &str) -> Vec<String> {
    let words: Vec<&str> = route.split_whitespace().collect();
    let mut hops: Vec<String> = words
        .windows(2)
        .filter(|w| w[0] == "via")
        .map(|w| w[1].to_string())
        .collect();
    hops.sort();
    hops
}

#[test]
fn two_speakers_one_vip_merge_paths_and_standby_ordering() {
    support::init_log();
    let net = Net::new();
    let dir = TempDir::new("e2e-netns");
    let bird = start_bird(&net);
    let vip = format!("10.253.{}.1/32", net.x);
    let (flag_a, flag_s) = (dir.path("a-up"), dir.path("s-up"));
    std::fs::write(&flag_a, "").unwrap();
    std::fs::write(&flag_s, "").unwrap();
    let (fa, fs) = (flag_a.display().to_string(), flag_s.display().to_string());
    // The standby's router id is the lower one: it wins BIRD's tie-break.
    let primary_cfg = speaker_config(&net, 1, "10.0.0.2", &vip, &fa, 0);
    let mut standby_cfg = speaker_config(&net, 5, "10.0.0.1", &vip, &fs, 0);
    let no_api: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let primary = Pathosd::start_in(&primary_cfg, no_api, Some(net.name("a")));
    let standby = Pathosd::start_in(&standby_cfg, no_api, Some(net.name("s")));
    let (via_a, via_s) = (net.addr(1), net.addr(5));

    let diag = |what: &str| {
        format!(
            "{what}\nkernel: {}\nbird: {:?}\nbird log:\n{}\nprimary:\n{}\nstandby:\n{}",
            net.kernel_route(&vip),
            bird.birdc(&["show", "route", &vip, "all"]),
            bird.log(),
            primary.log(),
            standby.log()
        )
    };
    let wait_hops = |want: &[&String], what: &str| {
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        let ok = poll(Duration::from_secs(10), || {
            (next_hops(&net.kernel_route(&vip)) == want).then_some(())
        });
        assert!(ok.is_some(), "{}", diag(what));
    };
    let both = poll(Duration::from_secs(10), || {
        (bird.established("pd_primary") && bird.established("pd_standby")).then_some(())
    });
    assert!(both.is_some(), "{}", diag("sessions not Established"));

    // Merge paths on, equal AS paths: one kernel route, two next hops.
    wait_hops(&[&via_a, &via_s], "no ECMP route with both next hops");
    let route = net.kernel_route(&vip);
    assert_eq!(route.matches("nexthop via").count(), 2, "{route}");
    let all = bird.birdc(&["show", "route", &vip, "all"]).unwrap();
    assert_eq!(all.matches("BGP.as_path: 65001\n").count(), 2, "{all}");

    // Merge paths off: one next hop, the tie-break winner (the standby).
    bird.configure(&bird_conf(&net, false));
    wait_hops(&[&via_s], "merge paths off: not the standby alone");

    // The standby's prepends make BIRD prefer the primary.
    standby_cfg["vips"][0]["policy"]["announce"]["as_path_prepend"] = json!(4);
    standby.write_config(&standby_cfg);
    standby.signal("HUP");
    wait_hops(&[&via_a], "prepend 4 on the standby: not the primary alone");
    let ok = poll(Duration::from_secs(10), || {
        bird.birdc(&["show", "route", &vip, "all"])
            .filter(|o| o.contains("BGP.as_path: 65001 65001 65001 65001 65001\n"))
    });
    assert!(
        ok.is_some(),
        "{}",
        diag("standby route with 4 prepends not at BIRD")
    );
    let best = bird.best(&vip).unwrap();
    assert!(best.contains("[pd_primary "), "{best}");
    assert!(best.contains("BGP.as_path: 65001\n"), "{best}");

    // The primary's check fails: the route moves to the standby, and back.
    std::fs::remove_file(&flag_a).unwrap();
    wait_hops(&[&via_s], "primary down: not the standby");
    std::fs::write(&flag_a, "").unwrap();
    wait_hops(&[&via_a], "primary back: not the primary");

    // Merge paths on again: unequal AS paths are not merged.
    bird.configure(&bird_conf(&net, true));
    let ok = poll(Duration::from_secs(10), || {
        bird.birdc(&["show", "protocols", "all", "kernel1"])
            .filter(|o| o.contains("Routes:         0 imported, 1 exported"))
    });
    assert!(
        ok.is_some(),
        "{}",
        diag("kernel protocol did not export the route again")
    );
    assert_eq!(next_hops(&net.kernel_route(&vip)), vec![via_a.clone()]);
}
