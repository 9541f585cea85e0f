//! ping probes inside a network namespace the test creates: loopback
//! answers until the namespace's icmp echo_ignore_all sysctls make it drop
//! every request (loss), and the namespace's own net.ipv4.ping_group_range
//! decides whether ICMP datagram sockets work.
//!
//! `ping_in_namespace` sets the namespace up and re-runs this test binary
//! inside it (`ip netns exec`) for the `inner_*` tests, which are ignored
//! in normal runs and refuse to run outside the namespace.

mod support;

use serde_json::json;
use std::process::Command;
use support::netns::{ip, run_ignored_in, Netns};
use support::*;

const GUARD: &str = "PATHOSD_PING_NETNS";

fn in_ns(ns: &str, args: &[&str]) {
    let mut a = vec!["netns", "exec", ns];
    a.extend_from_slice(args);
    ip(&a);
}

fn run_inner(ns: &str, test: &str, ping_group_range: &str) {
    in_ns(
        ns,
        &[
            "sysctl",
            "-qw",
            &format!("net.ipv4.ping_group_range={ping_group_range}"),
        ],
    );
    run_ignored_in(ns, test, GUARD);
}

#[test]
fn ping_in_namespace() {
    let ns = Netns(format!("pathosd-ping-{}", std::process::id()));
    ip(&["netns", "add", &ns.0]);
    in_ns(&ns.0, &["ip", "link", "set", "lo", "up"]);
    run_inner(&ns.0, "inner_ping_allowed", "0 2147483647");
    run_inner(&ns.0, "inner_ping_denied", "1 0");
}

fn guard() {
    assert!(
        std::env::var(GUARD).is_ok(),
        "runs only inside ping_in_namespace's namespace"
    );
}

fn ping(opts: serde_json::Value, timeout: &str) -> pathosd::check::CheckResult {
    probe(
        json!({"type": "ping", "timeout": timeout, "interval": "5s", "ping": opts}),
        "10.0.0.0/8",
    )
}

#[test]
#[ignore = "run by ping_in_namespace"]
fn inner_ping_allowed() {
    guard();
    for privileged in [false, true] {
        for dst in ["127.0.0.1", "::1", "127.0.0.2"] {
            let r = ping(
                json!({"dst_ip": dst, "count": 3, "interval": "20ms", "privileged": privileged}),
                "1s",
            );
            assert!(r.ok, "{dst} privileged={privileged}: {r:?}");
            assert_eq!(r.detail, format!("ping {dst}: 3/3 replies"));
            assert_eq!(r.details["received"], json!(3));
            let min = r.details["rtt_min_ms"].as_f64().unwrap();
            let avg = r.details["rtt_avg_ms"].as_f64().unwrap();
            let max = r.details["rtt_max_ms"].as_f64().unwrap();
            assert!(min <= avg && avg <= max && max < 1000.0, "{r:?}");
        }
    }
    // A VIP host prefix is the default destination; src_ip is honoured.
    let r = probe(
        json!({"type": "ping", "timeout": "1s", "ping": {"src_ip": "127.0.0.1"}}),
        "127.0.0.3/32",
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, "ping 127.0.0.3: 1/1 replies");
    let r = ping(json!({"dst_ip": "::1", "src_ip": "::1"}), "1s");
    assert!(r.ok, "{r:?}");
    // The namespace now ignores every echo request: total loss, reported
    // within the one deadline of the run.
    echo_ignore_all("1");
    for privileged in [false, true] {
        for dst in ["127.0.0.1", "::1"] {
            let r = ping(
                json!({"dst_ip": dst, "count": 3, "interval": "50ms", "privileged": privileged, "max_loss_ratio": 0.5}),
                "400ms",
            );
            assert!(!r.ok, "{r:?}");
            assert_eq!(r.detail, format!("ping {dst}: loss 3/3 > 0.5"));
            assert!(!r.timed_out);
            assert!(
                r.duration < std::time::Duration::from_millis(450),
                "{:?}",
                r.duration
            );
        }
    }
    echo_ignore_all("0");
}

fn echo_ignore_all(v: &str) {
    for key in [
        "net.ipv4.icmp_echo_ignore_all",
        "net.ipv6.icmp.echo_ignore_all",
    ] {
        let st = Command::new("sysctl")
            .args(["-qw", &format!("{key}={v}")])
            .status()
            .unwrap();
        assert!(st.success());
    }
}

#[test]
#[ignore = "run by ping_in_namespace"]
fn inner_ping_denied() {
    guard();
    // ping_group_range "1 0" admits no group: datagram sockets are refused.
    let r = ping(json!({"dst_ip": "127.0.0.1"}), "1s");
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        "ping 127.0.0.1: datagram socket: permission denied (is the group in net.ipv4.ping_group_range?)"
    );
    // Raw sockets only need CAP_NET_RAW, which the test (root) has.
    let r = ping(json!({"dst_ip": "127.0.0.1", "privileged": true}), "1s");
    assert!(r.ok, "{r:?}");
}
