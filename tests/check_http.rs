//! http / https probes against python3 http.server (plain, TLS, mutual TLS).
//! Through a forward proxy (squid): tests/check_http_proxy.rs.

mod support;

use serde_json::{json, Value};
use std::time::Duration;
use support::*;

fn http(ip: &str, opts: Value) -> pathosd::check::CheckResult {
    probe(
        json!({"type": "http", "timeout": "1500ms", "interval": "5s", "http": opts}),
        &format!("{ip}/32"),
    )
}

#[test]
fn status_codes_methods_and_no_redirects() {
    let ip = test_ip(20).to_string();
    let srv = py_server(&["http", &ip]);
    let port = srv.port();
    let r = http(&ip, json!({"url": "/status/200", "port": port}));
    assert!(r.ok, "{r:?}");
    assert_eq!(r.detail, "HTTP 200 OK");
    assert_eq!(r.details["status_code"], json!(200));
    let r = http(
        &ip,
        json!({"url": "/status/503", "port": port, "response_codes": ["200-299"]}),
    );
    assert!(!r.ok);
    assert_eq!(r.detail, "status 503 not in [200-299]");
    let r = http(
        &ip,
        json!({"url": "/status/204", "port": port, "response_codes": [200, "202-204"]}),
    );
    assert!(r.ok, "{r:?}");
    // A redirect is never followed: 302 passes only when listed.
    let r = http(&ip, json!({"url": "/redirect", "port": port}));
    assert_eq!(r.detail, "status 302 not in [200]");
    let r = http(
        &ip,
        json!({"url": "/redirect", "port": port, "response_codes": [302]}),
    );
    assert!(r.ok, "{r:?}");
    let r = http(&ip, json!({"url": "/text", "port": port, "method": "HEAD"}));
    assert!(r.ok, "{r:?}");
    let r = http(
        &ip,
        json!({"url": "/anything", "port": port, "method": "POST", "response_codes": [201]}),
    );
    assert!(r.ok, "{r:?}");
}

#[test]
fn body_text_regex_and_jq() {
    let ip = test_ip(21).to_string();
    let srv = py_server(&["http", &ip]);
    let url = format!("http://{ip}:{}", srv.port());
    let t = |extra: Value| {
        let mut o = extra;
        o["url"] = json!(format!("{url}{}", o["url"].as_str().unwrap()));
        http(&ip, o)
    };
    assert!(t(json!({"url": "/text", "response_text": "hello pathosd"})).ok);
    assert_eq!(
        t(json!({"url": "/text", "response_text": "goodbye"})).detail,
        "body does not contain \"goodbye\""
    );
    assert!(t(json!({"url": "/text", "response_regex": "version [0-9]+"})).ok);
    assert_eq!(
        t(json!({"url": "/text", "response_regex": "^version 4[^2]"})).detail,
        "body does not match /^version 4[^2]/"
    );
    assert!(t(json!({"url": "/json", "response_jq": ".status == \"ok\" and .count >= 3"})).ok);
    assert!(t(json!({"url": "/json", "response_jq": ".items[0].name == \"a\""})).ok);
    assert!(t(json!({"url": "/json", "response_jq": ".ready"})).ok);
    assert_eq!(
        t(json!({"url": "/json", "response_jq": ".count > 3"})).detail,
        "jq expression is not true: false"
    );
    assert_eq!(
        t(json!({"url": "/notjson", "response_jq": ".ready"})).detail,
        "response is not valid JSON"
    );
    // Text, regex and jq all apply.
    let r = t(
        json!({"url": "/json", "response_text": "ready", "response_regex": "count", "response_jq": ".missing"}),
    );
    assert_eq!(r.detail, "jq expression is not true: null");
}

/// A bad regex or jq expression is an error of the config itself: the
/// check holds them compiled, so no probe can fail to build on them.
#[test]
fn bad_regex_and_jq_are_config_errors() {
    use pathosd::config::{Check, Errors, Field};
    let decode = |o: Value| {
        let mut errs = Errors::default();
        let c = Check::decode(&json!({"type": "http", "http": o}), "check", &mut errs);
        assert!(c.is_some());
        errs.0.iter().map(|e| e.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(
        decode(json!({"response_regex": "("})),
        ["check.http.response_regex: \"(\" does not compile: found open group without closing ')'"]
    );
    let e = decode(json!({"response_jq": "ready"}));
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("check.http.response_jq: \"ready\": response_jq: expected a path"),
        "{e:?}"
    );
}

#[test]
fn inconsistent_tls_options_are_config_errors() {
    // Validation's rule (the probe is only ever built from a validated
    // check, so it does not check again).
    assert_eq!(
        check_errors(
            json!({"type": "https", "http": {"tls_insecure": true, "tls_ca_cert": "/x"}}),
            "10.0.0.1/32"
        ),
        ["vips[0].check.http.tls_insecure: cannot be combined with tls_ca_cert"]
    );
}

#[test]
fn refused_and_timeout() {
    let ip = test_ip(22).to_string();
    let port = free_tcp_port(ip.as_str());
    let r = http(&ip, json!({"url": "/", "port": port}));
    assert!(!r.ok);
    assert_eq!(r.detail, format!("connect {ip}:{port}: connection refused"));

    let srv = py_server(&["http", &ip]);
    let r = probe(
        json!({"type": "http", "timeout": "300ms", "http": {"url": "/slow", "port": srv.port()}}),
        &format!("{ip}/32"),
    );
    assert!(!r.ok);
    assert!(r.timed_out || r.detail.contains("timed out"), "{r:?}");
    assert!(r.duration < Duration::from_millis(1000), "{:?}", r.duration);
}

#[test]
fn host_header_from_url_connects_to_host() {
    let ip = test_ip(23).to_string();
    let srv = py_server(&["http", &ip]);
    let port = srv.port();
    // The name does not resolve: the connection goes to `host`.
    let r = http(
        &ip,
        json!({"url": format!("http://web.pathosd.test:{port}/host"), "host": ip,
               "response_text": format!("host=web.pathosd.test:{port}")}),
    );
    assert!(r.ok, "{r:?}");
    let r = http(
        &ip,
        json!({"url": "/host", "port": port, "headers": {"Host": "custom.example"},
               "response_text": "host=custom.example"}),
    );
    assert!(r.ok, "{r:?}");
    let r = http(
        &ip,
        json!({"url": "/headers", "port": port, "headers": {"X-Probe": "1"},
               "response_jq": ".\"x-probe\" == \"1\" and .\"user-agent\" == \"pathosd-check/1.0\" and .accept == \"application/json\""}),
    );
    assert!(r.ok, "{r:?}");
}

#[test]
fn keep_alive_reuses_the_connection_and_default_does_not() {
    let ip = test_ip(28).to_string();
    for keep_alive in [true, false] {
        // A fresh server per case: /seen counts its client connections.
        let srv = py_server(&["http", &ip]);
        let c = check(json!({"type": "http", "timeout": "1500ms", "http": {
            "url": "/seen", "port": srv.port(), "keep_alive": keep_alive, "response_regex": "^conns=1$"}}));
        let p = build_probe(c.clone(), &format!("{ip}/32")).unwrap();
        let runs: Vec<bool> = (0..3).map(|_| smol::block_on(p.run()).ok).collect();
        if keep_alive {
            assert_eq!(runs, [true, true, true]);
        } else {
            assert_eq!(runs, [true, false, false]);
        }
    }
}

#[test]
fn ipv6_literal_url() {
    let srv = py_server(&["http", "::1"]);
    let r = probe(
        json!({"type": "http", "timeout": "1500ms", "http": {"url": format!("http://[::1]:{}/text", srv.port()), "response_text": "hello"}}),
        "10.0.0.0/8",
    );
    assert!(r.ok, "{r:?}");
    // A /128 VIP with a bare path connects to the VIP address.
    let r = probe(
        json!({"type": "http", "timeout": "1500ms", "http": {"url": "/text", "port": srv.port()}}),
        "::1/128",
    );
    assert!(r.ok, "{r:?}");
}

#[test]
fn https_verification_custom_ca_server_name_insecure() {
    let ip = test_ip(24).to_string();
    let dir = temp_dir("https");
    let pki = pki(&dir, &ip);
    let srv = py_server(&["http", &ip, "--tls", &pki.cert, &pki.key]);
    let port = srv.port();
    let name_url = format!("https://web.pathosd.test:{port}/text");
    let https = |o: Value| {
        probe(
            json!({"type": "https", "timeout": "2s", "interval": "5s", "http": o}),
            &format!("{ip}/32"),
        )
    };
    // Verified against the test CA by name, connecting to the VIP address.
    let r = https(
        json!({"url": name_url, "host": ip, "tls_ca_cert": pki.ca, "response_text": "hello"}),
    );
    assert!(r.ok, "{r:?}");
    // By IP (the certificate has an IP SAN), bare path on an https check.
    let r = https(json!({"url": "/text", "port": port, "tls_ca_cert": pki.ca}));
    assert!(r.ok, "{r:?}");
    // The system store does not know the test CA.
    let r = https(json!({"url": name_url, "host": ip}));
    assert!(!r.ok);
    assert!(r.detail.contains("UnknownIssuer"), "{}", r.detail);
    // A server name the certificate does not cover.
    let r = https(
        json!({"url": name_url, "host": ip, "tls_ca_cert": pki.ca, "tls_server_name": "other.pathosd.test"}),
    );
    assert!(!r.ok);
    assert!(
        r.detail
            .contains("certificate not valid for name \"other.pathosd.test\""),
        "{}",
        r.detail
    );
    let r = https(
        json!({"url": "/text", "port": port, "tls_server_name": "web.pathosd.test", "tls_ca_cert": pki.ca}),
    );
    assert!(r.ok, "{r:?}");
    let r = https(json!({"url": name_url, "host": ip, "tls_insecure": true}));
    assert!(r.ok, "{r:?}");
    // keep_alive reuses one agent across probes.
    let c = check(
        json!({"type": "https", "timeout": "2s", "http": {"url": name_url, "host": ip, "tls_ca_cert": pki.ca, "keep_alive": true}}),
    );
    let p = build_probe(c.clone(), &format!("{ip}/32")).unwrap();
    for _ in 0..3 {
        let r = smol::block_on(p.run());
        assert!(r.ok, "{r:?}");
    }
    let e = build_probe(
        check(
            json!({"type": "https", "http": {"url": name_url, "tls_ca_cert": "/nonexistent.pem"}}),
        ),
        "10.0.0.0/8",
    )
    .unwrap_err();
    assert_eq!(
        e,
        "reading tls_ca_cert /nonexistent.pem: no such file or directory"
    );
}

#[test]
fn mutual_tls_client_certificate() {
    let ip = test_ip(25).to_string();
    let dir = temp_dir("mtls");
    let pki = pki(&dir, &ip);
    let srv = py_server(&[
        "http",
        &ip,
        "--tls",
        &pki.cert,
        &pki.key,
        "--client-ca",
        &pki.ca,
    ]);
    let base = json!({"url": format!("https://web.pathosd.test:{}/text", srv.port()), "host": ip, "tls_ca_cert": pki.ca});
    let https = |o: Value| {
        probe(
            json!({"type": "https", "timeout": "2s", "http": o}),
            "10.0.0.0/8",
        )
    };
    let r = https(base.clone());
    assert!(!r.ok, "{r:?}");
    let mut with = base.clone();
    with["tls_client_cert"] = json!(pki.client_cert);
    with["tls_client_key"] = json!(pki.client_key);
    let r = https(with);
    assert!(r.ok, "{r:?}");
}

/// How [`Backend`] treats a connection.
#[derive(Clone, Copy)]
struct Mode {
    /// Requests served on one connection before the server closes it
    /// without a word (a backend's keep-alive limit or idle timeout).
    per_conn: usize,
    /// Every response says `Connection: close`, but the server leaves the
    /// connection open (a client that reuses it would be heard).
    say_close: bool,
    status: u16,
    /// After `per_conn` requests, read the next one and close without an
    /// answer (the server closing as the request arrives).
    read_then_close: bool,
}

const SERVE: Mode = Mode {
    per_conn: 1000,
    say_close: false,
    status: 200,
    read_then_close: false,
};

/// A small HTTP/1.1 server on real sockets that counts its accepted
/// connections and the requests on each. Every thread it starts ends when
/// it is stopped (bounded reads, a bounded number of requests).
struct Backend {
    port: u16,
    accepts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Requests per accepted connection, in accept order.
    requests: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    /// Connections the server closed after `per_conn` requests.
    closed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    ip: String,
}

impl Backend {
    fn start(ip: &str, port: u16, mode: Mode) -> Backend {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        use std::sync::{Arc, Mutex};
        let listener = bind_again(ip, port);
        let port = listener.local_addr().unwrap().port();
        let accepts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (a, r, c, s, cl) = (
            accepts.clone(),
            requests.clone(),
            conns.clone(),
            stop.clone(),
            closed.clone(),
        );
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming().take(1000) {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut conn) = conn else { continue };
                let n = a.fetch_add(1, Ordering::SeqCst);
                r.lock().unwrap().push(0);
                c.lock().unwrap().push(conn.try_clone().unwrap());
                let r = r.clone();
                let cl = cl.clone();
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    for served in 1..=mode.per_conn.min(1000) {
                        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                            match conn.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(k) => buf.extend_from_slice(&chunk[..k]),
                            }
                        }
                        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                        // RFC 9110 §9.3.2: no body in a response to HEAD.
                        let body = if buf.starts_with(b"HEAD ") { "" } else { "ok" };
                        buf.drain(..end);
                        r.lock().unwrap()[n] = served;
                        let close = if mode.say_close {
                            "Connection: close\r\n"
                        } else {
                            ""
                        };
                        let resp = format!(
                            "HTTP/1.1 {} X\r\nContent-Length: 2\r\n{close}\r\n{body}",
                            mode.status
                        );
                        if conn.write_all(resp.as_bytes()).is_err() {
                            return;
                        }
                    }
                    // per_conn served: close without a word (the clone in
                    // `conns` keeps the socket open past this thread), unless
                    // it said close itself and must stay open.
                    if mode.say_close {
                        let _ = conn.read(&mut chunk);
                    } else {
                        if mode.read_then_close {
                            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                                match conn.read(&mut chunk) {
                                    Ok(0) | Err(_) => return,
                                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                                }
                            }
                            r.lock().unwrap()[n] += 1;
                        }
                        let _ = conn.shutdown(std::net::Shutdown::Both);
                        cl.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        Backend {
            port,
            accepts,
            requests,
            conns,
            closed,
            stop,
            thread: Some(thread),
            ip: ip.to_string(),
        }
    }

    fn accepts(&self) -> usize {
        self.accepts.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn closed(&self) -> usize {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<usize> {
        self.requests.lock().unwrap().clone()
    }

    /// Stops listening and closes every connection (a backend restart).
    fn stop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = std::net::TcpStream::connect((self.ip.as_str(), self.port));
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Binds `ip:port`. A backend restarted on its fixed port (a restart test)
/// may find the port still held for a moment by a socket of its previous
/// run that the kernel is still closing (seen once in CI as AddrInUse,
/// though std binds with SO_REUSEADDR); a restarted server process retries
/// the same way. Bounded: 100 tries, 2 s.
fn bind_again(ip: &str, port: u16) -> std::net::TcpListener {
    let mut last = None;
    for _ in 0..100 {
        match std::net::TcpListener::bind((ip, port)) {
            Ok(l) => return l,
            Err(e) if port != 0 && e.kind() == std::io::ErrorKind::AddrInUse => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("bind {ip}:{port}: {e}"),
        }
    }
    panic!("bind {ip}:{port}: still in use after 2 s: {last:?}");
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop();
    }
}

fn keep_alive_probe(ip: &str, port: u16) -> pathosd::check::Probe {
    keep_alive_probe_with(ip, port, "GET")
}

fn keep_alive_probe_with(ip: &str, port: u16, method: &str) -> pathosd::check::Probe {
    let c = check(json!({"type": "http", "timeout": "1500ms", "http": {
        "url": "/", "port": port, "keep_alive": true, "method": method}}));
    build_probe(c, &format!("{ip}/32")).unwrap()
}

/// keep_alive: a backend that closes a kept connection (after each
/// response, or after 3 requests) never fails a probe: the request is sent
/// again, once, on a fresh connection (RFC 9112 §9.3.1: nothing came back,
/// so it was not processed). Accepts are counted on the server.
#[test]
fn keep_alive_retries_a_connection_the_backend_closed() {
    let ip = test_ip(29).to_string();
    for (per_conn, probes, accepts) in [(1, 5, 5), (3, 6, 2), (1000, 6, 1)] {
        let srv = Backend::start(&ip, 0, Mode { per_conn, ..SERVE });
        let p = keep_alive_probe(&ip, srv.port);
        for i in 0..probes {
            let r = smol::block_on(p.run());
            assert!(r.ok, "per_conn {per_conn}, probe {i}: {r:?}");
        }
        assert_eq!(srv.accepts(), accepts, "per_conn {per_conn}");
        assert!(
            srv.requests().iter().all(|n| *n <= per_conn),
            "{:?}",
            srv.requests()
        );
    }
}

/// keep_alive: a response that says `Connection: close` ends the
/// connection's use even when the server leaves it open (RFC 9112 §9.6):
/// one connection per probe, one request on each.
#[test]
fn keep_alive_does_not_reuse_after_connection_close() {
    let ip = test_ip(30).to_string();
    let srv = Backend::start(
        &ip,
        0,
        Mode {
            say_close: true,
            ..SERVE
        },
    );
    let p = keep_alive_probe(&ip, srv.port);
    for i in 0..3 {
        let r = smol::block_on(p.run());
        assert!(r.ok, "probe {i}: {r:?}");
    }
    assert_eq!(srv.accepts(), 3);
    assert_eq!(srv.requests(), [1, 1, 1]);
}

/// keep_alive: after a backend restart the kept connection is stale (the
/// old process closed it); the probe passes on a fresh connection to the
/// new one. A backend that is down fails the probe (no retry beyond one).
#[test]
fn keep_alive_survives_a_backend_restart() {
    let ip = test_ip(31).to_string();
    let mode = SERVE;
    let mut old = Backend::start(&ip, 0, mode);
    let port = old.port;
    let p = keep_alive_probe(&ip, port);
    for _ in 0..2 {
        let r = smol::block_on(p.run());
        assert!(r.ok, "{r:?}");
    }
    assert_eq!((old.accepts(), old.requests()), (1, vec![2]));
    old.stop();
    let r = smol::block_on(p.run());
    assert!(!r.ok, "{r:?}");
    assert_eq!(r.detail, format!("connect {ip}:{port}: connection refused"));
    // Up again: the failed probe kept nothing, this one connects afresh
    // and keeps its connection, which the next restart makes stale.
    let new = Backend::start(&ip, port, mode);
    let r = smol::block_on(p.run());
    assert!(r.ok, "{r:?}");
    drop(new);
    let new = Backend::start(&ip, port, mode);
    let r = smol::block_on(p.run());
    assert!(r.ok, "stale after restart: {r:?}");
    assert_eq!(new.accepts(), 1);
}

/// keep_alive: a failed probe (here a bad status on a kept connection)
/// drops the connection, so the next probe tests a fresh one; a passing
/// probe keeps it.
#[test]
fn keep_alive_drops_the_connection_after_a_failed_probe() {
    let ip = test_ip(32).to_string();
    let srv = Backend::start(
        &ip,
        0,
        Mode {
            status: 503,
            ..SERVE
        },
    );
    let p = keep_alive_probe(&ip, srv.port);
    for _ in 0..3 {
        let r = smol::block_on(p.run());
        assert_eq!(r.detail, "status 503 not in [200]");
    }
    assert_eq!(srv.accepts(), 3);
    assert_eq!(srv.requests(), [1, 1, 1]);
}

/// keep_alive: a server that closes the kept connection as a request
/// arrives (it read it, it answers nothing). A GET or HEAD is sent again on
/// a fresh connection and passes; a POST is not (RFC 9112 §9.3.1: not
/// retried automatically, it may have been processed) and fails. A
/// connection the server closed while idle is never written to, whatever
/// the method: the POST probes pass against a backend that closes after
/// every response.
#[test]
fn keep_alive_retries_only_what_cannot_have_been_processed() {
    let ip = test_ip(33).to_string();
    for method in ["GET", "HEAD", "POST"] {
        let srv = Backend::start(
            &ip,
            0,
            Mode {
                per_conn: 1,
                read_then_close: true,
                ..SERVE
            },
        );
        let p = keep_alive_probe_with(&ip, srv.port, method);
        let r = smol::block_on(p.run());
        assert!(r.ok, "{method} first: {r:?}");
        let r = smol::block_on(p.run());
        if method == "POST" {
            assert!(!r.ok, "{method}: {r:?}");
            // The request reached the server once, on the kept connection.
            assert_eq!(srv.requests(), [2], "{method}");
        } else {
            assert!(r.ok, "{method} retried: {r:?}");
            assert_eq!(srv.requests(), [2, 1], "{method}");
        }
    }
    // Closed while idle: seen before the request is written.
    let srv = Backend::start(
        &ip,
        0,
        Mode {
            per_conn: 1,
            ..SERVE
        },
    );
    let p = keep_alive_probe_with(&ip, srv.port, "POST");
    for i in 0..4 {
        // The server's close must have arrived before the next probe looks.
        assert!(wait_for(Duration::from_secs(5), || srv.closed() == i));
        let r = smol::block_on(p.run());
        assert!(r.ok, "POST {i}: {r:?}");
    }
    assert_eq!(srv.requests(), [1, 1, 1, 1]);
}
