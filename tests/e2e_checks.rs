//! The real daemon, one test per check type: a real target (python servers,
//! dnsmasq, grpcio, ping into a namespace, an exec'd command), a real BIRD,
//! and `pathosd run`. Target up → BIRD has the VIP with the announce
//! attributes; target gone → BIRD loses the route (fail_action withdraw) or
//! sees it pessimized (lower_priority: 1 + 6 prepends, 65001:666 added);
//! target back → announced again. Interval 300 ms, rise 2, fall 2.

mod support;

use serde_json::{json, Value};
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use support::daemon::{ip, is_announced, is_pessimized, policy, Setup};
use support::netns::sh;
use support::{free_tcp_port, free_udp_port, Server, TempDir};

/// A check with this file's short timers and `opts` as its type block.
fn check(kind: &str, opts: Value) -> Value {
    let block = if kind == "https" { "http" } else { kind };
    let mut c =
        json!({"type": kind, "interval": "300ms", "timeout": "250ms", "rise": 2, "fall": 2});
    c[block] = opts;
    c
}

/// Runs the scenario for test `n`: `kill` takes the target away, `revive`
/// brings it back. Returns the daemon's `/status` at the end.
fn scenario(
    n: u8,
    check: Value,
    fail_action: &str,
    mut kill: impl FnMut(),
    mut revive: impl FnMut(),
) -> Value {
    support::init_log();
    let prefix = format!("10.{}.0.1/32", 200 + n);
    let vips =
        json!([{"name": "svc", "prefix": prefix, "check": check, "policy": policy(fail_action)}]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();

    s.wait_route(&prefix, "announced", is_announced);
    assert_eq!(s.d.vip("svc")["state_name"], "announced");

    kill();
    if fail_action == "withdraw" {
        s.wait_gone(&prefix);
        assert_eq!(s.d.vip("svc")["state_name"], "withdrawn");
    } else {
        s.wait_route(&prefix, "pessimized", is_pessimized);
        let v = s.d.vip("svc");
        assert_eq!(v["state_name"], "pessimized", "{v}");
        assert_eq!(v["as_path_prepend"], 7, "{v}");
    }
    let v = s.d.vip("svc");
    assert_eq!(v["checks"][0]["last_check_success"], false, "{v}");

    revive();
    s.wait_route(&prefix, "announced again", is_announced);
    let v = s.d.vip("svc");
    assert_eq!(v["state_name"], "announced", "{v}");
    let failed = if fail_action == "withdraw" {
        "withdrawn"
    } else {
        "pessimized"
    };
    assert_eq!(v["transitions"]["announced"], 2, "{v}");
    assert_eq!(v["transitions"][failed], 1, "{v}");
    s.d.status()
}

/// The checks that ran, as `/status` counts them.
fn runs(status: &Value) -> u64 {
    let c = &status["vips"][0]["checks"][0];
    c["total_ok"].as_u64().unwrap() + c["total_fail"].as_u64().unwrap()
}

/// A python one-liner server on a fixed address and port (so it can come
/// back where it was), its output discarded; ready once `ready` holds.
fn python(code: &str, args: &[String], dir: Option<&TempDir>) -> Server {
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(code).args(args).stderr(Stdio::null());
    if let Some(d) = dir {
        cmd.current_dir(&d.0);
    }
    Server::spawn(&mut cmd, false)
}

fn wait_tcp(ip: Ipv4Addr, port: u16) {
    support::wait_tcp(&format!("{ip}:{port}"));
}

/// Waits (bounded) until `ip:port` refuses connections (the old server is gone).
fn wait_closed(ip: Ipv4Addr, port: u16) {
    let a = std::net::SocketAddr::from((ip, port));
    assert!(support::wait_for(std::time::Duration::from_secs(5), || {
        std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_millis(200)).is_err()
    }));
}

const HTTP: &str = "import http.server,sys\n\
h=http.server.SimpleHTTPRequestHandler\n\
h.log_message=lambda *a: None\n\
http.server.ThreadingHTTPServer((sys.argv[1],int(sys.argv[2])),h).serve_forever()";

#[test]
fn http_check_withdraws_and_returns() {
    let t = ip(0, 3);
    let port = free_tcp_port(t);
    let dir = TempDir::new("e2e-http");
    std::fs::write(dir.path("health"), "ok").unwrap();
    let args = [t.to_string(), port.to_string()];
    let start = || {
        let s = python(HTTP, &args, Some(&dir));
        wait_tcp(t, port);
        s
    };
    let srv = std::cell::RefCell::new(Some(start()));
    let status = scenario(
        0,
        check(
            "http",
            json!({"url": format!("http://{t}:{port}/health"), "response_text": "ok"}),
        ),
        "withdraw",
        || {
            *srv.borrow_mut() = None;
            wait_closed(t, port);
        },
        || *srv.borrow_mut() = Some(start()),
    );
    drop(srv);
    // Plain http:// is async on the main thread: the blocking pool never
    // started a thread nor ran a job.
    let p = &status["blocking_pool"];
    assert_eq!((&p["workers"], &p["run"]), (&json!(0), &json!(0)), "{p}");
    assert!(runs(&status) > 0);
}

const HTTPS: &str = "import http.server,ssl,sys\n\
h=http.server.SimpleHTTPRequestHandler\n\
h.log_message=lambda *a: None\n\
s=http.server.ThreadingHTTPServer((sys.argv[1],int(sys.argv[2])),h)\n\
c=ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
c.load_cert_chain(sys.argv[3],sys.argv[4])\n\
s.socket=c.wrap_socket(s.socket,server_side=True)\n\
s.serve_forever()";

#[test]
fn https_check_pessimizes_and_returns() {
    let t = ip(1, 3);
    let port = free_tcp_port(t);
    let dir = TempDir::new("e2e-https");
    let pki = support::pki(&dir, &t.to_string());
    std::fs::write(dir.path("health"), "ok").unwrap();
    let args = [
        t.to_string(),
        port.to_string(),
        pki.cert.clone(),
        pki.key.clone(),
    ];
    let start = || {
        let s = python(HTTPS, &args, Some(&dir));
        wait_tcp(t, port);
        s
    };
    let srv = std::cell::RefCell::new(Some(start()));
    let status = scenario(
        1,
        check(
            "https",
            json!({"url": format!("https://{t}:{port}/health"), "tls_ca_cert": pki.ca}),
        ),
        "lower_priority",
        || {
            *srv.borrow_mut() = None;
            wait_closed(t, port);
        },
        || *srv.borrow_mut() = Some(start()),
    );
    drop(srv);
    // Each https probe ran on the blocking pool, which the daemon's status
    // shows: one check every 300 ms needs one worker at a time (more only
    // if a probe outlived the next one's start), and nothing was refused.
    let p = &status["blocking_pool"];
    let workers = p["workers"].as_u64().unwrap();
    assert!((1..=4).contains(&workers), "{p}");
    assert_eq!(p["workers_max"], 4, "{p}");
    assert_eq!(p["refused"], 0, "{p}");
    // One snapshot: each probe result /status counted came from a job the
    // pool began (run), dropped unrun (expired) or still holds (queued,
    // its probe timed out before a worker took it).
    let ran = ["run", "expired", "queued"]
        .iter()
        .map(|k| p[k].as_u64().unwrap())
        .sum::<u64>();
    assert!(ran >= runs(&status), "{p} vs {} runs", runs(&status));
}

#[test]
fn dns_check_withdraws_and_returns() {
    let t = ip(2, 3);
    let port = free_tcp_port(t);
    let dir = TempDir::new("e2e-dns");
    let start = || {
        let s = Server::spawn(
            Command::new("/usr/sbin/dnsmasq")
                .args(["-k", "--conf-file=/dev/null", "--bind-interfaces"])
                .args(["--no-resolv", "--no-hosts", "--user=root"])
                .arg("--log-facility=/dev/null")
                .arg(format!("--listen-address={t}"))
                .arg(format!("--port={port}"))
                .arg(format!("--pid-file={}", dir.path("dnsmasq.pid").display()))
                .arg("--host-record=web.pathosd.test,10.1.2.3"),
            false,
        );
        wait_tcp(t, port);
        s
    };
    let srv = std::cell::RefCell::new(Some(start()));
    scenario(
        2,
        check(
            "dns",
            json!({"names": ["web.pathosd.test"], "resolver": t.to_string(), "port": port,
                   "expected_answers": ["10.1.2.3"]}),
        ),
        "withdraw",
        || {
            *srv.borrow_mut() = None;
            wait_closed(t, port);
        },
        || *srv.borrow_mut() = Some(start()),
    );
    drop(srv);
}

/// A namespace with one veth pair: `inner` answers pings until its
/// icmp_echo_ignore_all is set. Deleted on drop (which also removes the pair).
struct PingTarget {
    ns: String,
    /// The root namespace's end of the pair.
    host: String,
    inner: Ipv4Addr,
}

impl PingTarget {
    fn new() -> PingTarget {
        let pid = std::process::id();
        let ns = format!("pd-e2e-ping-{pid}");
        let (host, peer) = (
            format!("pdp{}", pid % 100_000),
            format!("pdq{}", pid % 100_000),
        );
        let net = (pid % 250) as u8;
        let t = PingTarget {
            ns: ns.clone(),
            host: host.clone(),
            inner: Ipv4Addr::new(10, 251, net, 2),
        };
        let outer = format!("10.251.{net}.1/30");
        let inner = format!("{}/30", t.inner);
        // Leftovers of a killed earlier run with the same pid.
        quiet(&["ip", "netns", "del", &ns]);
        quiet(&["ip", "link", "del", &host]);
        sh(&["ip", "netns", "add", &ns]);
        sh(&[
            "ip", "link", "add", &host, "type", "veth", "peer", "name", &peer,
        ]);
        sh(&["ip", "link", "set", &peer, "netns", &ns]);
        sh(&["ip", "addr", "add", &outer, "dev", &host]);
        sh(&["ip", "link", "set", &host, "up"]);
        t.exec(&["ip", "addr", "add", &inner, "dev", &peer]);
        t.exec(&["ip", "link", "set", &peer, "up"]);
        t.exec(&["ip", "link", "set", "lo", "up"]);
        t
    }

    fn exec(&self, args: &[&str]) {
        let mut a = vec!["ip", "netns", "exec", &self.ns];
        a.extend_from_slice(args);
        sh(&a);
    }

    fn answer(&self, on: bool) {
        let v = format!("net.ipv4.icmp_echo_ignore_all={}", u8::from(!on));
        self.exec(&["sysctl", "-qw", &v]);
    }
}

impl Drop for PingTarget {
    fn drop(&mut self) {
        quiet(&["ip", "netns", "del", &self.ns]);
        // Gone with the namespace, unless setup failed before moving its peer.
        quiet(&["ip", "link", "del", &self.host]);
    }
}

/// Runs a clean-up command whose failure (nothing to clean) is expected.
fn quiet(args: &[&str]) {
    let _ = Command::new(args[0])
        .args(&args[1..])
        .stderr(Stdio::null())
        .status();
}

#[test]
fn ping_check_pessimizes_and_returns() {
    let t = PingTarget::new();
    scenario(
        3,
        check(
            "ping",
            json!({"dst_ip": t.inner.to_string(), "privileged": true}),
        ),
        "lower_priority",
        || t.answer(false),
        || t.answer(true),
    );
}

const TCP: &str = "import socket,sys\n\
s=socket.socket()\n\
s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
s.bind((sys.argv[1],int(sys.argv[2])))\n\
s.listen(64)\n\
while True: c,_=s.accept(); c.sendall(b'pathosd-ok\\n'); c.close()";

#[test]
fn tcp_check_withdraws_and_returns() {
    let t = ip(4, 3);
    let port = free_tcp_port(t);
    let args = [t.to_string(), port.to_string()];
    let start = || {
        let s = python(TCP, &args, None);
        wait_tcp(t, port);
        s
    };
    let srv = std::cell::RefCell::new(Some(start()));
    scenario(
        4,
        check(
            "tcp",
            json!({"host": t.to_string(), "port": port, "expect": "pathosd-ok"}),
        ),
        "withdraw",
        || {
            *srv.borrow_mut() = None;
            wait_closed(t, port);
        },
        || *srv.borrow_mut() = Some(start()),
    );
    drop(srv);
}

const UDP: &str = "import socket,sys\n\
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
s.bind((sys.argv[1],int(sys.argv[2])))\n\
print('PORT',s.getsockname()[1],flush=True)\n\
while True: d,p=s.recvfrom(2048); s.sendto(b'pong:'+d,p)";

#[test]
fn udp_check_pessimizes_and_returns() {
    let t = ip(5, 3);
    let port = free_udp_port(t);
    let args = [t.to_string(), port.to_string()];
    let start = || {
        Server::spawn(
            Command::new("python3")
                .arg("-c")
                .arg(UDP)
                .args(&args)
                .stderr(Stdio::null()),
            true,
        )
    };
    let srv = std::cell::RefCell::new(Some(start()));
    scenario(
        5,
        check(
            "udp",
            json!({"host": t.to_string(), "port": port, "payload": "ping", "expect": "pong:ping"}),
        ),
        "lower_priority",
        || *srv.borrow_mut() = None,
        || *srv.borrow_mut() = Some(start()),
    );
    drop(srv);
}

/// grpc_server.py picks its own port, so the target "dies" by hanging
/// (SIGSTOP: the kernel still accepts, nothing answers) and comes back
/// with SIGCONT.
#[test]
fn grpc_check_withdraws_and_returns() {
    let t = ip(6, 3);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/grpc_server.py");
    let srv = Server::spawn(
        Command::new("python3")
            .arg(script)
            .arg(t.to_string())
            .env("GRPC_VERBOSITY", "NONE")
            .stderr(Stdio::null()),
        true,
    );
    let pid = srv.child.id().to_string();
    let sig = |s: &str| sh(&["kill", s, &pid]);
    scenario(
        6,
        check(
            "grpc",
            json!({"host": t.to_string(), "port": srv.port(), "service": "web"}),
        ),
        "withdraw",
        || sig("-STOP"),
        || sig("-CONT"),
    );
}

#[test]
fn exec_check_pessimizes_and_returns() {
    let dir = TempDir::new("e2e-exec");
    let flag = dir.path("up");
    std::fs::write(&flag, "").unwrap();
    scenario(
        7,
        check(
            "exec",
            json!({"command": "/usr/bin/test", "args": ["-e", flag.display().to_string()]}),
        ),
        "lower_priority",
        || std::fs::remove_file(&flag).unwrap(),
        || std::fs::write(&flag, "").unwrap(),
    );
}

/// An HTTP server that answers after the delay in ms written in its
/// directory's file `delay` (none: at once).
const SLOW_HTTP: &str = r#"import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        try:
            d = int(open('delay').read())
        except Exception:
            d = 0
        time.sleep(d / 1000)
        self.send_response(200)
        self.send_header('Content-Length', '2')
        self.end_headers()
        self.wfile.write(b'ok')
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"#;

/// Graded health on the real daemon and BIRD: a backend that answers but
/// slowly is pessimized in place (the lower_priority step), announced
/// again once fast, and withdrawn only when it fails.
#[test]
fn a_slow_http_backend_is_pessimized_before_its_failure_withdraws_it() {
    support::init_log();
    let t = ip(9, 3);
    let port = free_tcp_port(t);
    let dir = TempDir::new("e2e-slow");
    let srv = python(SLOW_HTTP, &[t.to_string(), port.to_string()], Some(&dir));
    wait_tcp(t, port);
    let prefix = "10.209.0.1/32";
    let mut c = check("http", json!({"url": format!("http://{t}:{port}/")}));
    c["degraded_latency"] = json!("100ms");
    c["degraded_hold_down"] = json!("1s");
    let vips = json!([{"name": "svc", "prefix": prefix, "check": c, "policy": policy("withdraw")}]);
    let s = Setup::start(9, vips, |_| {});
    s.wait_established();
    s.wait_route(prefix, "announced", is_announced);
    assert_eq!(s.d.vip("svc")["degraded"], false);

    std::fs::write(dir.path("delay"), "150").unwrap();
    s.wait_route(prefix, "pessimized while slow", is_pessimized);
    let v = s.d.vip("svc");
    assert_eq!(
        (
            &v["state_name"],
            &v["degraded"],
            &v["checks"][0]["degraded"]
        ),
        (&json!("pessimized"), &json!(true), &json!(true)),
        "{v}"
    );

    std::fs::write(dir.path("delay"), "0").unwrap();
    s.wait_route(prefix, "announced once fast", is_announced);

    std::fs::write(dir.path("delay"), "150").unwrap();
    s.wait_route(prefix, "pessimized again", is_pessimized);
    drop(srv);
    s.wait_gone(prefix);
    let v = s.d.vip("svc");
    assert_eq!(v["state_name"], "withdrawn", "{v}");
    // Every step was one change of state: never withdrawn before the last.
    assert_eq!(
        (
            &v["transitions"]["pessimized"],
            &v["transitions"]["withdrawn"]
        ),
        (&json!(2), &json!(1)),
        "{v}"
    );
}

/// fast_interval (ExaBGP's --fast-interval): an http check every 10 s
/// with a fast_interval of 1 s and fall 3. The backend dies: the first
/// failed probe comes at the next 10 s tick at the latest, the two after
/// it 1 s apart, and BIRD loses the route about 2 s after the first
/// failure (without fast_interval, 20 s: two more 10 s ticks). Then the
/// check is back at 10 s: no probe in the 3 s after the withdraw.
#[test]
fn fast_interval_withdraws_two_fast_intervals_after_the_first_failure() {
    use std::time::{Duration, Instant};
    support::init_log();
    let n = 8;
    let t = ip(n, 3);
    let port = free_tcp_port(t);
    let dir = TempDir::new("e2e-fast");
    std::fs::write(dir.path("health"), "ok").unwrap();
    let srv = python(HTTP, &[t.to_string(), port.to_string()], Some(&dir));
    wait_tcp(t, port);
    let prefix = format!("10.{}.0.1/32", 200 + n);
    let check = json!({"type": "http", "interval": "10s", "fast_interval": "1s",
                       "timeout": "500ms", "rise": 1, "fall": 3,
                       "http": {"url": format!("http://{t}:{port}/health")}});
    let vips =
        json!([{"name": "svc", "prefix": prefix, "check": check, "policy": policy("withdraw")}]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&prefix, "announced", is_announced);

    let fails = || s.d.vip("svc")["checks"][0]["total_fail"].as_u64().unwrap();
    drop(srv);
    wait_closed(t, port);
    let killed = Instant::now();
    // The first failure: at the next 10 s tick (+ its 125 ms slack).
    assert!(
        support::wait_for(Duration::from_secs(11), || fails() >= 1),
        "no failed probe within 11 s\n{}",
        s.d.log()
    );
    let first = Instant::now();
    let gone = support::poll(Duration::from_secs(5), || {
        s.bird.route(&prefix).is_none().then(Instant::now)
    })
    .unwrap_or_else(|| {
        panic!(
            "{prefix} still in BIRD 5 s after the first failure\n{}",
            s.d.log()
        )
    });
    let after_first = gone - first;
    eprintln!(
        "fast_interval: first failure {:?} after the kill, withdrawn at BIRD {after_first:?} after it",
        first - killed
    );
    // Two fast intervals (each tick within 125 ms), less the polls' lag.
    assert!(
        (Duration::from_millis(1_600)..Duration::from_millis(2_600)).contains(&after_first),
        "withdrawn {after_first:?} after the first failure\n{}",
        s.d.log()
    );
    let v = s.d.vip("svc");
    assert_eq!(v["state_name"], "withdrawn", "{v}");
    assert_eq!(v["checks"][0]["total_fail"], 3, "{v}");
    // Decided: back at 10 s, the next probe 8 s after the third failure.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(fails(), 3, "a probe within 3 s of the withdraw");
}
