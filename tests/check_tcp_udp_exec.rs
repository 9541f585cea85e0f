//! tcp, udp and exec probes against real servers started by each test.

mod support;

use serde_json::json;
use std::time::Duration;
use support::*;

#[test]
fn tcp_connect_accepted_and_host_defaults_to_vip() {
    let ip = test_ip(1).to_string();
    let srv = py_server(&["tcp-banner", &ip, "HELLO pathosd\n"]);
    let r = probe(
        json!({"type": "tcp", "timeout": "1s", "interval": "2s", "tcp": {"port": srv.port()}}),
        &format!("{ip}/32"),
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.detail,
        format!("connect {ip}:{}: connection accepted", srv.port())
    );
    assert!(!r.timed_out);
}

/// A connect-only tcp check ends its connection with a reset (RST), not a
/// FIN: the backend reads "connection reset" where it read end of stream
/// before, and the prober's socket is gone at once: no TIME_WAIT (60 s per
/// probe run) on the router, even after the backend closes its side too.
#[test]
fn tcp_connect_only_ends_with_reset_and_leaves_no_time_wait() {
    use std::io::Read;
    let ip = test_ip(8);
    let l = std::net::TcpListener::bind((ip, 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    let r = probe(
        json!({"type": "tcp", "timeout": "1s", "tcp": {"host": ip.to_string(), "port": port}}),
        "10.0.0.0/8",
    );
    assert!(r.ok, "{r:?}");
    let (mut accepted, prober) = l.accept().unwrap();
    accepted
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let got = accepted.read(&mut [0u8; 8]);
    assert!(
        matches!(&got, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
        "the backend read {got:?}, not a reset"
    );
    // A FIN-closed prober socket would now go from FIN_WAIT2 to TIME_WAIT.
    drop(accepted);
    let hex = |a: std::net::SocketAddr| match a {
        std::net::SocketAddr::V4(a) => {
            format!(
                "{:08X}:{:04X}",
                u32::from_ne_bytes(a.ip().octets()),
                a.port()
            )
        }
        std::net::SocketAddr::V6(_) => panic!("IPv4 only here"),
    };
    let (local, remote) = (hex(prober), hex(std::net::SocketAddr::from((ip, port))));
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let left: Vec<&str> = table
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1) == Some(&local.as_str()) && f.get(2) == Some(&remote.as_str())
        })
        .collect();
    // st 06 is TIME_WAIT; the prober's socket must not be there at all.
    assert!(left.is_empty(), "the prober's socket is left: {left:?}");
}

/// A host that is a name is looked up at each probe, on the daemon's
/// bounded pool (a job it counts), and the probe goes to its address.
/// `localhost` is the one name every machine resolves without a DNS
/// server: 127.0.0.1 (or ::1), not this file's block, so the ports are
/// this test's own (bound with port 0, on both, whichever comes first).
#[test]
fn tcp_and_udp_to_a_host_that_is_a_name() {
    use pathosd::pool as blocking;
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let _tcp6 = std::net::TcpListener::bind(("::1", tcp_port)).ok();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let _udp6 = std::net::UdpSocket::bind(("::1", udp_port)).ok();
    let before = blocking::stats().run;
    let r = probe(
        json!({"type": "tcp", "timeout": "1s", "tcp": {"host": "localhost", "port": tcp_port}}),
        "10.0.0.0/8",
    );
    assert!(r.ok, "{r:?}");
    let loopback = |r: &pathosd::check::CheckResult| {
        let a: std::net::SocketAddr = r.details["address"].as_str().unwrap().parse().unwrap();
        a.ip().is_loopback()
    };
    assert!(loopback(&r), "{r:?}");
    assert!(r.detail.ends_with(": connection accepted"), "{r:?}");
    let r = probe(
        json!({"type": "udp", "timeout": "1s", "udp": {"host": "localhost", "port": udp_port}}),
        "10.0.0.0/8",
    );
    assert!(r.ok, "{r:?}");
    assert!(loopback(&r), "{r:?}");
    assert!(
        blocking::stats().run >= before + 2,
        "not looked up on the pool"
    );
}

#[test]
fn tcp_refused() {
    let ip = test_ip(2).to_string();
    let port = free_tcp_port(ip.as_str());
    let r = probe(
        json!({"type": "tcp", "timeout": "1s", "tcp": {"host": ip, "port": port}}),
        "10.0.0.0/24",
    );
    assert!(!r.ok);
    assert_eq!(r.detail, format!("connect {ip}:{port}: connection refused"));
}

#[test]
fn tcp_send_and_expect_banner() {
    let ip = test_ip(3).to_string();
    let srv = py_server(&["tcp-banner", &ip, "220 ready\n"]);
    let c = |send: Option<&str>, expect: &str| {
        let mut t = json!({"host": ip, "port": srv.port(), "expect": expect});
        if let Some(s) = send {
            t["send"] = json!(s);
        }
        probe(
            json!({"type": "tcp", "timeout": "1500ms", "tcp": t}),
            "10.0.0.0/8",
        )
    };
    let r = c(None, "220 ready");
    assert!(r.ok, "{r:?}");
    assert_eq!(r.details["banner"], json!("220 ready"));
    let r = c(Some("PING"), "echo:PING");
    assert!(r.ok, "{r:?}");
    // The server closes after its echo: the full reply lacks the text.
    let r = c(Some("PING"), "PONG");
    assert!(!r.ok);
    assert!(
        r.detail
            .ends_with("reply \"220 ready\" does not contain \"PONG\""),
        "{}",
        r.detail
    );
}

#[test]
fn tcp_expect_honours_timeout() {
    let ip = test_ip(4).to_string();
    // Without `send` the server waits 2 s for data before closing.
    let srv = py_server(&["tcp-banner", &ip, "220 ready\n"]);
    let r = probe(
        json!({"type": "tcp", "timeout": "300ms", "tcp": {"host": ip, "port": srv.port(), "expect": "NOPE"}}),
        "10.0.0.0/8",
    );
    assert!(!r.ok);
    assert!(r.duration < Duration::from_millis(1000), "{:?}", r.duration);
    assert!(r.detail.contains("no \"NOPE\""), "{}", r.detail);
}

#[test]
fn tcp_ipv6_literal() {
    let srv = py_server(&["tcp-banner", "::1", "x"]);
    let r = probe(
        json!({"type": "tcp", "timeout": "1s", "tcp": {"port": srv.port()}}),
        "::1/128",
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.detail,
        format!("connect [::1]:{}: connection accepted", srv.port())
    );
}

#[test]
fn host_required_for_network_prefix() {
    // A config error (validation resolves the host the probe connects to).
    assert_eq!(
        check_errors(json!({"type": "tcp", "tcp": {"port": 80}}), "10.1.0.0/16"),
        ["vips[0].check.tcp.host: required because prefix 10.1.0.0/16 is not a single address (/32 or /128)"]
    );
}

#[test]
fn udp_reply_passes_and_expect_checks_it() {
    let ip = test_ip(5).to_string();
    let srv = py_server(&["udp-echo", &ip, "pong:"]);
    let port = srv.port();
    let r = probe(
        json!({"type": "udp", "timeout": "1s", "udp": {"port": port, "payload": "ping"}}),
        &format!("{ip}/32"),
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, format!("udp {ip}:{port}: received response"));
    assert_eq!(r.details["reply"], json!("pong:ping"));
    let r = probe(
        json!({"type": "udp", "timeout": "1s", "udp": {"host": ip, "port": port, "payload_hex": "6869", "expect": "pong:hi"}}),
        "10.0.0.0/8",
    );
    assert!(r.ok, "{r:?}");
    let r = probe(
        json!({"type": "udp", "timeout": "1s", "udp": {"host": ip, "port": port, "expect": "other"}}),
        "10.0.0.0/8",
    );
    assert!(!r.ok);
    assert!(
        r.detail.contains("does not contain \"other\""),
        "{}",
        r.detail
    );
}

#[test]
fn udp_port_unreachable_fails() {
    let ip = test_ip(6).to_string();
    let port = free_udp_port(ip.as_str());
    let r = probe(
        json!({"type": "udp", "timeout": "1s", "udp": {"host": ip, "port": port}}),
        "10.0.0.0/8",
    );
    assert!(!r.ok, "{r:?}");
    assert_eq!(
        r.detail,
        format!("udp {ip}:{port}: ICMP port unreachable (port closed)")
    );
}

#[test]
fn udp_silence_passes_unless_a_reply_is_expected() {
    let ip = test_ip(7).to_string();
    let srv = py_server(&["udp-silent", &ip]);
    let port = srv.port();
    let r = probe(
        json!({"type": "udp", "timeout": "300ms", "udp": {"host": ip, "port": port}}),
        "10.0.0.0/8",
    );
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.detail,
        format!("udp {ip}:{port}: no ICMP port-unreachable (port open)")
    );
    // Silence was decided by the probe, not cut off by the check timeout.
    assert!(!r.timed_out, "{r:?}");
    let r = probe(
        json!({"type": "udp", "timeout": "300ms", "udp": {"host": ip, "port": port, "expect": "x"}}),
        "10.0.0.0/8",
    );
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        format!("udp {ip}:{port}: no reply (expected \"x\")")
    );
}

#[test]
fn udp_ipv6() {
    let srv = py_server(&["udp-echo", "::1", "r"]);
    let r = probe(
        json!({"type": "udp", "timeout": "1s", "udp": {"port": srv.port()}}),
        "::1/128",
    );
    assert!(r.ok, "{r:?}");
    assert!(r.detail.starts_with("udp [::1]:"), "{}", r.detail);
}

fn exec(args: &[&str], timeout: &str) -> pathosd::check::CheckResult {
    probe(
        json!({"type": "exec", "timeout": timeout, "exec": {"command": "/bin/sh", "args": args}}),
        "10.0.0.0/8",
    )
}

#[test]
fn exec_exit_status_and_first_line() {
    let r = exec(&["-c", "echo; echo all good; echo more"], "2s");
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, "exit 0: all good");
    let r = exec(&["-c", "echo backend down >&2; exit 3"], "2s");
    assert!(!r.ok);
    assert_eq!(r.detail, "exit 3: backend down");
    assert_eq!(r.details["exit_code"], json!(3));
    // No shell: the arguments reach the program verbatim.
    let r = exec(&["-c", "echo \"$0|$1\"", "a b", "c;d"], "2s");
    assert_eq!(r.detail, "exit 0: a b|c;d");
    let r = probe(
        json!({"type": "exec", "timeout": "1s", "exec": {"command": "/nonexistent/check"}}),
        "10.0.0.0/8",
    );
    assert!(!r.ok);
    assert_eq!(
        r.detail,
        "exec /nonexistent/check: no such file or directory"
    );
}

#[test]
fn exec_chatty_output_is_drained_and_cut() {
    // 4 MiB without a newline, far beyond a pipe buffer.
    let r = exec(
        &["-c", "head -c 4194304 /dev/zero | tr '\\0' x; exit 0"],
        "5s",
    );
    assert!(r.ok, "{}", &r.detail[..60.min(r.detail.len())]);
    assert_eq!(r.detail, format!("exit 0: {}", "x".repeat(200)));
}

fn gone(pid: u32) -> bool {
    // Gone or a zombie (an orphan waits for init to reap it).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
    }
}

#[test]
fn exec_timeout_kills_the_process_group() {
    let dir = temp_dir("exec-timeout");
    let pids = dir.join("pids");
    let script = format!(
        "echo $$ > {p}.tmp; sleep 30 & echo $! >> {p}.tmp; mv {p}.tmp {p}; wait",
        p = pids.display()
    );
    let r = exec(&["-c", &script], "500ms");
    assert!(!r.ok);
    assert!(r.timed_out);
    assert_eq!(r.detail, "exec /bin/sh: timed out after 500ms");
    assert!(r.duration < Duration::from_millis(1500), "{:?}", r.duration);
    let text = std::fs::read_to_string(&pids).expect("script wrote its pids");
    let pids: Vec<u32> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(
            wait_for(Duration::from_secs(5), || gone(pid)),
            "pid {pid} survived the timeout"
        );
    }
}
