//! Every HTTP endpoint through the real server and routes, with the daemon's
//! state answering `Control` messages as its owner task does (the
//! fixture's owner: its sessions and pool are the test's); plus the
//! robustness cases (slow clients, oversized headers, bad methods, unknown
//! paths, concurrent triggers, a stuck owner). Each test has its own 127.x
//! address; every wait is bounded.

#[path = "api_fixture.rs"]
mod fixture;
mod support;

use support::promtool_check;

use fixture::*;
use pathosd::api::control::{ApiError, Control, ControlHandle};
use pathosd::api::routes::Options;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Sends raw bytes, reads until the server closes (Connection: close).
fn raw(addr: SocketAddr, bytes: &[u8]) -> Reply {
    let mut s = connect(addr);
    s.write_all(bytes).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Reply {
        status: head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0),
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// A request as a non-browser client sends it: `Host` names the server, and
/// changes (POST, DELETE) carry `Content-Type: application/json`, as
/// `api::access` requires.
fn req(addr: SocketAddr, method: &str, target: &str) -> Reply {
    let json = if matches!(method, "GET" | "HEAD") {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    req_with(addr, method, target, &format!("Host: {addr}\r\n{json}"))
}

/// A request with exactly the header lines `headers` (each ending in CRLF).
fn req_with(addr: SocketAddr, method: &str, target: &str, headers: &str) -> Reply {
    raw(
        addr,
        format!("{method} {target} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n").as_bytes(),
    )
}

fn setup(n: u8) -> (Owner, SocketAddr) {
    let owner = start_owner(Duration::from_millis(1));
    let addr = start_http(test_ip(n), owner.ctl.clone(), limits(2000));
    (owner, addr)
}

#[test]
fn healthz_and_readyz() {
    let (owner, addr) = setup(1);
    let r = req(addr, "GET", "/healthz");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type").unwrap(), "application/json");
    assert_eq!(r.json(), serde_json::json!({"status": "ok"}));

    // frr (required) is Established, bird is not required.
    let r = req(addr, "GET", "/readyz");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "ready");
    assert_eq!(v["peers"].as_array().unwrap().len(), 2);
    assert!(v.get("unready").is_none());

    owner.driver(|d| d.peers[1].required = true);
    let r = req(addr, "GET", "/readyz");
    assert_eq!(r.status, 503);
    let v = r.json();
    assert_eq!(v["status"], "not_ready");
    assert_eq!(v["unready"], serde_json::json!(["bird"]));
    assert_eq!(v["peers"][1]["session_state"], "active");

    // No peers at all counts as ready.
    owner.driver(|d| d.peers.clear());
    let r = req(addr, "GET", "/readyz");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["peers"], serde_json::json!([]));
}

#[test]
fn status_document() {
    let (_owner, addr) = setup(2);
    let r = req(addr, "GET", "/status");
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["router_id"], "10.0.0.1");
    assert_eq!(v["asn"], 65001);
    assert_eq!(v["version"], "0.1.0-test");
    assert_eq!(
        v["start_time"],
        pathosd::logging::utc_timestamp(at(1_790_000_000))
    );
    // The owner's clock runs on from an hour after the start.
    let up = v["uptime_seconds"].as_u64().unwrap();
    assert!((3600..3660).contains(&up), "{up}");

    status_peers(&v);

    let names: Vec<&str> = v["vips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "db", "<b>evil</b>&\"x'"], "config order");
    let web = &v["vips"][0];
    assert_eq!(web["prefix"], "10.10.1.1/32");
    assert_eq!(web["state"], 1);
    assert_eq!(web["state_name"], "announced");
    assert_eq!(web["health"], 1);
    assert_eq!(web["health_name"], "healthy");
    assert_eq!(web["consecutive_ok"], 3);
    assert_eq!(web["consecutive_fail"], 0);
    assert_eq!(web["check_type"], "http");
    assert_eq!(web["as_path_prepend_base"], 3);
    assert_eq!(web["communities"], serde_json::json!(["65001:100"]));
    assert_eq!(web["large_communities"], serde_json::json!(["65001:1:2"]));
    assert_eq!(web["local_address_assigned"], true);
    assert_eq!(web["last_transition_reason"], "web: rise threshold reached");
    assert_eq!(web["transitions"]["announced"], 2);
    assert_eq!(web["checks_policy"], "all");
    let c = &web["checks"][0];
    assert_eq!(c["name"], "web");
    assert_eq!(c["type"], "http");
    assert_eq!(c["last_check_success"], true);
    assert_eq!(c["last_check_detail"], "HTTP 200 OK");
    assert_eq!(c["last_check_duration_ms"], 12.345);
    assert_eq!(c["details"]["status_code"], 200);
    assert_eq!(web["checks"][1]["details"]["answers"][1], "192.0.2.2");
    let db = &v["vips"][1];
    assert_eq!(db["state"], 0);
    assert_eq!(db["health"], 2);
    assert_eq!(db["consecutive_fail"], 4);
    assert_eq!(db["checks"][0]["timed_out"], true);
    assert_eq!(db["local_address_assigned"], Value::Null);
    let evil = &v["vips"][2];
    assert_eq!(evil["state"], 2);
    assert_eq!(evil["as_path_prepend"], 2);
    assert_eq!(evil["drain"], true);
    assert_eq!(evil["drain_file"], true);
    // Pessimized when its drain file appeared, 40 s after the start.
    assert_eq!(
        evil["last_transition_time"],
        pathosd::logging::utc_timestamp(at(START + 40))
    );
    assert_eq!(
        evil["last_transition_reason"],
        "lower_priority_file created"
    );

    // The last reload attempt, rejected: LuCI shows it until one applies.
    assert_eq!(
        v["last_reload"],
        serde_json::json!({
            "time": pathosd::logging::utc_timestamp(at(1_790_003_000)),
            "result": "rejected",
            "errors": [
                "vip 'web' option prefix (line 3): \"10.10.1.1/33\" is not a prefix",
                "config check (line 9) option timeout: 2s must be less than interval 1s"
            ],
            "needs_restart": []
        })
    );

    // The blocking probe pool's load, one small object.
    assert_eq!(
        v["blocking_pool"],
        serde_json::json!({
            "workers": 2, "workers_max": 4, "running": 2, "queued": 1, "queue_max": 32,
            "run": 40, "refused": 3, "expired": 1, "queue_wait_ms": 1250.0
        })
    );

    // Stable order: two renderings are byte-identical.
    assert_eq!(req(addr, "GET", "/status").body, r.body);
}

/// The fixture's peers in `/status`.
fn status_peers(v: &Value) {
    let frr = &v["peers"][0];
    assert_eq!(frr["name"], "frr");
    assert_eq!(frr["address"], "127.0.0.2");
    assert_eq!(frr["peer_asn"], 65000);
    assert_eq!(frr["session_state"], "established");
    assert_eq!(frr["required"], true);
    assert_eq!(frr["uptime_seconds"], 120);
    assert_eq!(frr["messages_received"]["keepalive"], 40);
    assert_eq!(frr["messages_sent"]["total"], 45);
    assert_eq!(frr["advertised"], 1);
    let bird = &v["peers"][1];
    assert_eq!(bird["uptime_seconds"], Value::Null);
    assert_eq!(bird["last_error"], "connect: connection refused");
    assert_eq!(bird["notification_received"], "6/2 Administrative Shutdown");
    assert_eq!(bird["flaps"], 2);
}

#[test]
fn one_vip_by_name() {
    let (_owner, addr) = setup(3);
    let r = req(addr, "GET", "/api/v1/vips/db");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["state_name"], "withdrawn");
    let enc = pathosd::api::page::pct("<b>evil</b>&\"x'");
    let r = req(addr, "GET", &format!("/api/v1/vips/{enc}"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["prefix"], "2001:db8::1/128");
    let r = req(addr, "GET", "/api/v1/vips/nope");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "VIP not found: nope");
    assert_eq!(req(addr, "GET", "/api/v1/vips/%zz").status, 400);
}

#[test]
fn head_serves_get_routes_without_body() {
    let (_owner, addr) = setup(4);
    for p in ["/", "/healthz", "/readyz", "/status", "/metrics"] {
        let r = req(addr, "HEAD", p);
        assert_eq!(r.status, 200, "{p}");
        assert!(r.body.is_empty(), "{p}");
    }
    // Content-Length is what GET would send.
    let get = req(addr, "GET", "/healthz");
    let head = req(addr, "HEAD", "/healthz");
    assert_eq!(
        head.header("Content-Length").unwrap(),
        get.body.len().to_string()
    );
}

#[test]
fn wrong_method_is_405_with_allow_and_unknown_path_404() {
    let (_owner, addr) = setup(5);
    for (m, p, allow) in [
        ("POST", "/status", "GET, HEAD"),
        ("PUT", "/metrics", "GET, HEAD"),
        ("DELETE", "/", "GET, HEAD"),
        ("POST", "/healthz", "GET, HEAD"),
        ("GET", "/api/v1/vips/web/check", "POST"),
        ("DELETE", "/api/v1/vips/web/check", "POST"),
        ("GET", "/api/v1/vips/web/drain", "POST, DELETE"),
        ("PATCH", "/api/v1/vips/web", "GET, HEAD"),
        ("FOO", "/readyz", "GET, HEAD"),
    ] {
        let r = req(addr, m, p);
        assert_eq!(r.status, 405, "{m} {p}");
        assert_eq!(r.header("Allow").as_deref(), Some(allow), "{m} {p}");
        assert!(r.json()["error"].is_string());
    }
    for p in [
        "/nope",
        "/status/",
        "/api/v1/vips",
        "/api/v1/vips/",
        "/api/v1/vips/web/bogus",
        "/api/v1/vips/web/check/x",
        "/api/v2/vips/web/check",
    ] {
        let r = req(addr, "GET", p);
        assert_eq!(r.status, 404, "{p}");
        assert_eq!(r.header("Content-Type").unwrap(), "application/json");
        assert_eq!(r.json()["error"], "not found");
    }
}

#[test]
fn trigger_runs_every_check_or_one() {
    let (owner, addr) = setup(6);
    let r = req(addr, "POST", "/api/v1/vips/web/check");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["vip"], "web");
    assert_eq!(v["state"], "announced");
    assert_eq!(v["result"]["success"], true);
    assert_eq!(
        v["result"]["detail"],
        "web: HTTP 200 OK; dns: DNS OK: web.example.com.; ping: ping 192.0.2.9: 3/3 replies"
    );
    assert_eq!(v["result"]["details"]["web"]["status_code"], 200);
    let results = v["results"].as_object().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results["web"]["success"], true);
    assert_eq!(results["web"]["timed_out"], false);
    assert!(results["web"]["duration_ms"].as_f64().unwrap() >= 1.0);
    assert_eq!(results["ping"]["details"]["rtt_max_ms"], 1.25);

    // One check: the others count as failed in the combination.
    let r = req(addr, "POST", "/api/v1/vips/web/check?check=web");
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["results"].as_object().unwrap().len(), 1);
    assert_eq!(v["results"]["web"]["success"], true);
    assert_eq!(v["result"]["success"], false);
    assert_eq!(v["result"]["detail"], "HTTP 200 OK; checks_policy fails");
    assert_eq!(v["result"]["details"]["status_code"], 200);

    // A single-check VIP: `result` is that check's result (Go pathosd's shape).
    let r = req(addr, "POST", "/api/v1/vips/db/check");
    let v = r.json();
    assert_eq!(v["result"]["success"], false);
    assert_eq!(v["result"]["timed_out"], true);
    assert_eq!(v["state"], "withdrawn");

    let r = req(addr, "POST", "/api/v1/vips/nope/check");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "VIP not found: nope");
    let r = req(addr, "POST", "/api/v1/vips/web/check?check=nope");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "check not found: nope");
    assert_eq!(
        req(addr, "POST", "/api/v1/vips/web/check?check=").status,
        400
    );
    // Runs of web, web's `web` and db; the rest were answered without one.
    assert_eq!(owner.log.runs.load(Ordering::SeqCst), 3);
}

#[test]
fn drain_and_undrain() {
    let (owner, addr) = setup(7);
    let r = req(addr, "POST", "/api/v1/vips/web/drain");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        serde_json::json!({"vip": "web", "drain": true, "state": "pessimized"})
    );
    assert!(owner.drain_api("web"));
    let s = req(addr, "GET", "/status").json();
    assert_eq!(s["vips"][0]["drain_api"], true);
    assert_eq!(s["vips"][0]["state_name"], "pessimized");
    let r = req(addr, "DELETE", "/api/v1/vips/web/drain");
    assert_eq!(
        r.json(),
        serde_json::json!({"vip": "web", "drain": false, "state": "announced"})
    );
    let r = req(addr, "DELETE", "/api/v1/vips/nope/drain");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"], "VIP not found: nope");
}

#[test]
fn metrics_pass_promtool() {
    let (_owner, addr) = setup(8);
    let r = req(addr, "GET", "/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type").unwrap(),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let t = &r.body;
    for line in [
        "pathosd_build_info{version=\"0.1.0-test\"} 1",
        "pathosd_vip_state{vip=\"web\",nlri=\"10.10.1.1/32\"} 1",
        "pathosd_route_state{nlri=\"10.10.1.1/32\",peer=\"frr\",peer_ip=\"127.0.0.2\",peer_asn=\"65000\",as_path=\"65001 65001\",communities=\"65001:200,65001:666\",local_preference=\"\",med=\"\",family=\"ipv4-unicast\"} 1",
        "pathosd_vip_state{vip=\"db\",nlri=\"10.10.2.1/32\"} 0",
        "pathosd_vip_state{vip=\"<b>evil</b>&\\\"x'\",nlri=\"2001:db8::1/128\"} 2",
        "pathosd_vip_transitions_total{vip=\"web\",nlri=\"10.10.1.1/32\",to=\"announced\"} 2",
        "pathosd_vip_last_transition_timestamp_seconds{vip=\"web\",nlri=\"10.10.1.1/32\"} 1790000060",
        "pathosd_vip_priority_status{vip=\"<b>evil</b>&\\\"x'\",nlri=\"2001:db8::1/128\"} 2",
        "pathosd_vip_flaps_total{vip=\"web\",nlri=\"10.10.1.1/32\"} 1",
        "pathosd_vip_local_address_assigned{vip=\"web\",nlri=\"10.10.1.1/32\"} 1",
        "pathosd_check_total{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"web\",type=\"http\",result=\"success\"} 10",
        "pathosd_check_total{vip=\"db\",nlri=\"10.10.2.1/32\",check=\"tcp\",type=\"tcp\",result=\"fail\"} 4",
        "pathosd_check_duration_seconds_bucket{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"web\",type=\"http\",le=\"0.2\"} 8",
        "pathosd_check_duration_seconds_bucket{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"web\",type=\"http\",le=\"+Inf\"} 12",
        "pathosd_check_duration_seconds_count{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"web\",type=\"http\"} 12",
        "pathosd_check_last_result{vip=\"db\",nlri=\"10.10.2.1/32\",check=\"tcp\",type=\"tcp\"} 0",
        "pathosd_check_timeout_exceeded_total{vip=\"db\",nlri=\"10.10.2.1/32\",check=\"tcp\",type=\"tcp\"} 1",
        "pathosd_check_healthy{vip=\"db\",nlri=\"10.10.2.1/32\",check=\"tcp\",type=\"tcp\"} 0",
        "pathosd_check_http_status_code{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"web\",type=\"http\"} 200",
        "pathosd_check_ping_rtt_seconds{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"ping\",type=\"ping\",stat=\"max\"} 0.00125",
        "pathosd_check_ping_loss_ratio{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"ping\",type=\"ping\"} 0",
        "pathosd_check_dns_answers{vip=\"web\",nlri=\"10.10.1.1/32\",check=\"dns\",type=\"dns\"} 2",
        "pathosd_check_exec_exit_code{vip=\"<b>evil</b>&\\\"x'\",nlri=\"2001:db8::1/128\",check=\"exec\",type=\"exec\"} 0",
        "bgp_peer_state{peer=\"frr\",session_state=\"established\"} 1",
        "bgp_peer_state{peer=\"frr\",session_state=\"idle\"} 0",
        "bgp_peer_state{peer=\"bird\",session_state=\"active\"} 1",
        "bgp_peer_up{peer=\"bird\"} 0",
        "bgp_peer_uptime_seconds{peer=\"frr\"} 120",
        "bgp_peer_flaps_total{peer=\"bird\"} 2",
        "bgp_received_messages_total{peer=\"frr\",type=\"keepalive\"} 40",
        "bgp_sent_messages_total{peer=\"frr\",type=\"update\"} 3",
        "bgp_routes_advertised{peer=\"frr\"} 1",
        "bgp_peer_info{peer=\"frr\",address=\"127.0.0.2\",peer_asn=\"65000\",required=\"true\"} 1",
        "pathosd_blocking_pool_workers 2",
        "pathosd_blocking_pool_workers_max 4",
        "pathosd_blocking_pool_jobs_running 2",
        "pathosd_blocking_pool_jobs_queued 1",
        "pathosd_blocking_pool_jobs_queued_max 32",
        "pathosd_blocking_pool_jobs_total{result=\"run\"} 40",
        "pathosd_blocking_pool_jobs_total{result=\"refused\"} 3",
        "pathosd_blocking_pool_jobs_total{result=\"expired\"} 1",
        "pathosd_blocking_pool_queue_wait_seconds_bucket{le=\"0.001\"} 6",
        "pathosd_blocking_pool_queue_wait_seconds_bucket{le=\"5\"} 41",
        "pathosd_blocking_pool_queue_wait_seconds_bucket{le=\"+Inf\"} 41",
        "pathosd_blocking_pool_queue_wait_seconds_sum 1.25",
        "pathosd_blocking_pool_queue_wait_seconds_count 41",
        "# TYPE pathosd_blocking_pool_jobs_total counter",
        "# TYPE pathosd_blocking_pool_jobs_queued gauge",
        "# TYPE pathosd_blocking_pool_queue_wait_seconds histogram",
    ] {
        assert!(t.lines().any(|l| l == line), "missing {line}\n{t}");
    }
    // detailed_metrics is off for db's tcp check and there are no tcp details:
    // no detail family may name it.
    assert!(!t.contains("pathosd_check_http_status_code{vip=\"db\""));
    // Every sample line belongs to a family announced with HELP and TYPE.
    for l in t.lines().filter(|l| !l.starts_with('#')) {
        let name = l.split(['{', ' ']).next().unwrap();
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|b| t.contains(&format!("# TYPE {b} histogram")))
            .unwrap_or(name);
        assert!(t.contains(&format!("# HELP {base} ")), "{base}");
    }
    promtool_check(t);
}

#[test]
fn metrics_of_an_empty_daemon_pass_promtool() {
    let mut cfg = config();
    cfg.vips.clear();
    let owner = start_owner_with(cfg, Duration::from_millis(1), |_| {});
    owner.driver(|d| {
        d.peers.clear();
        // As the daemon's before any blocking probe ran.
        d.blocking_pool = pathosd::api::model::PoolView {
            workers_max: 4,
            queue_max: 32,
            ..Default::default()
        };
    });
    let addr = start_http(test_ip(9), owner.ctl.clone(), limits(2000));
    let r = req(addr, "GET", "/metrics");
    assert_eq!(r.status, 200);
    assert!(!r.body.contains("pathosd_vip_local_address_assigned"));
    assert!(!r.body.contains("pathosd_check_http_status_code"));
    // The pool's families are there before its first job, at zero.
    for line in [
        "pathosd_blocking_pool_workers 0",
        "pathosd_blocking_pool_jobs_total{result=\"run\"} 0",
        "pathosd_blocking_pool_queue_wait_seconds_count 0",
    ] {
        assert!(
            r.body.lines().any(|l| l == line),
            "missing {line}\n{}",
            r.body
        );
    }
    promtool_check(&r.body);
}

#[test]
fn page_is_self_contained_and_escaped() {
    let (_owner, addr) = setup(10);
    let r = req(addr, "GET", "/");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type").unwrap(),
        "text/html; charset=utf-8"
    );
    let b = &r.body;
    assert!(b.len() < 8 * 1024, "page is {} bytes", b.len());
    assert!(b.contains("<td>web</td>"));
    assert!(b.contains("&lt;b&gt;evil&lt;/b&gt;&amp;&quot;x&#39;"));
    assert!(!b.contains("<b>evil"));
    assert!(!b.contains("<script>alert"));
    assert!(b.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(b.contains("action=\"/api/v1/vips/%3Cb%3Eevil%3C%2Fb%3E%26%22x%27/check\""));
    // No external assets.
    for bad in ["src=\"http", "href=\"http", "<link", "@import", "src=\"/"] {
        assert!(!b.contains(bad), "{bad}");
    }
}

/// The API passes triggers on without queueing them: one run per VIP,
/// coalescing and the rate limit are the owner's (`daemon::triggers`, tested
/// there and in e2e_ubus against the real daemon): the owner holds many of
/// them at once, joined to the run in flight.
#[test]
fn concurrent_triggers_reach_the_owner_without_queueing_in_the_api() {
    let owner = start_owner(Duration::from_millis(300));
    let addr = start_http(test_ip(11), owner.ctl.clone(), limits(10_000));
    let started = Instant::now();
    let threads: Vec<_> = (0..20)
        .map(|_| std::thread::spawn(move || req(addr, "POST", "/api/v1/vips/web/check")))
        .collect();
    for t in threads {
        let r = t.join().unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["vip"], "web");
    }
    assert_eq!(owner.log.triggers.load(Ordering::SeqCst), 20);
    assert!(owner.log.max_waiting.load(Ordering::SeqCst) > 1);
    // Queued one behind the other they would take 20 × 300 ms.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

/// The overlap detector of the test above is real: two triggers sent at
/// once wait in the owner together, on one run.
#[test]
fn the_owner_sees_overlap_when_triggers_bypass_the_gate() {
    let owner = start_owner(Duration::from_millis(50));
    let ctl = owner.ctl.clone();
    smol::block_on(async {
        let a = ctl.trigger("web", None, Duration::from_secs(10));
        let b = ctl.trigger("web", None, Duration::from_secs(10));
        let (x, y) = smol::future::zip(a, b).await;
        x.unwrap();
        y.unwrap();
    });
    assert_eq!(owner.log.max_waiting.load(Ordering::SeqCst), 2);
    assert_eq!(owner.log.runs.load(Ordering::SeqCst), 1);
}

/// A trigger the owner refuses as busy (rate limit, another selection
/// running) is 429 with Retry-After in whole seconds, rounded up.
#[test]
fn a_busy_trigger_is_429_with_retry_after() {
    let (tx, rx) = pathosd::chan::bounded(8);
    std::thread::spawn(move || {
        smol::block_on(async move {
            while let Ok(c) = rx.recv().await {
                if let Control::Trigger { reply, .. } = c {
                    let _ = reply.try_send(Err(ApiError::Busy {
                        message: "too many triggers for VIP web".into(),
                        retry_after: Duration::from_millis(1200),
                    }));
                }
            }
        })
    });
    let addr = start_http(test_ip(12), ControlHandle::new(tx), limits(2000));
    let r = req(addr, "POST", "/api/v1/vips/web/check");
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.header("Retry-After").as_deref(), Some("2"));
    assert_eq!(r.json()["error"], "too many triggers for VIP web");
}

#[test]
fn slow_client_does_not_stall_other_requests() {
    let owner = start_owner(Duration::from_millis(1));
    let addr = start_http(test_ip(13), owner.ctl.clone(), limits(3000));
    // A client that sends half a request line and then nothing.
    let mut slow = connect(addr);
    slow.write_all(b"GET /sta").unwrap();
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(req(addr, "GET", "/status").status, 200);
        assert_eq!(req(addr, "POST", "/api/v1/vips/web/check").status, 200);
    }
    // Served while the slow client still holds its connection.
    if started.elapsed() < Duration::from_millis(2500) {
        slow.set_nonblocking(true).unwrap();
        let mut b = [0u8; 16];
        let e = slow.read(&mut b).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
        slow.set_nonblocking(false).unwrap();
    }
    // Then read_header_timeout cuts it off.
    let mut buf = Vec::new();
    slow.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn hostile_requests_get_errors_not_hangs() {
    let (_owner, addr) = setup(14);
    // Oversized header block.
    let big = format!(
        "GET /status HTTP/1.1\r\nX-Junk: {}\r\n\r\n",
        "a".repeat(10 * 1024)
    );
    assert_eq!(raw(addr, big.as_bytes()).status, 431);
    // Too many headers.
    let mut many = String::from("GET /status HTTP/1.1\r\n");
    for i in 0..40 {
        many.push_str(&format!("X-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(raw(addr, many.as_bytes()).status, 431);
    // Garbage and a body bigger than allowed.
    assert_eq!(raw(addr, b"\x00\x01\x02 nonsense\r\n\r\n").status, 400);
    let r = raw(
        addr,
        b"POST /api/v1/vips/web/check HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
    );
    assert_eq!(r.status, 413);
    // Path traversal and odd targets are just unknown paths.
    assert_eq!(req(addr, "GET", "/../etc/passwd").status, 404);
    assert_eq!(
        req(addr, "GET", "/api/v1/vips/..%2F..%2Fstatus").status,
        404
    );
    // Still serving.
    assert_eq!(req(addr, "GET", "/healthz").status, 200);
}

#[test]
fn stuck_owner_is_answered_503_in_bounded_time() {
    let (tx, _rx) = pathosd::chan::bounded(1);
    let ctl = ControlHandle::new(tx);
    let addr = start_http_with(
        test_ip(15),
        ctl,
        limits(5000),
        Options {
            owner_timeout: Duration::from_millis(300),
            ..Options::default()
        },
    );
    let started = Instant::now();
    let r = req(addr, "GET", "/healthz");
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["status"], "unavailable");
    for (m, p) in [
        ("GET", "/status"),
        ("GET", "/metrics"),
        ("POST", "/api/v1/vips/web/check"),
    ] {
        let r = req(addr, m, p);
        assert_eq!(r.status, 503, "{m} {p}");
        assert!(r.json()["error"]
            .as_str()
            .unwrap()
            .contains("did not answer"));
    }
    assert!(started.elapsed() < Duration::from_secs(4));

    // A daemon that has stopped (receiver gone) is 503 at once.
    let (tx, rx) = pathosd::chan::bounded(1);
    drop(rx);
    let addr = start_http(test_ip(16), ControlHandle::new(tx), limits(5000));
    let r = req(addr, "GET", "/status");
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"], "daemon is stopping");
}

/// The case: a browser on the LAN made to POST to the API, across
/// sites (CSRF) or through a rebound DNS name. None of it may change state;
/// reads stay open to any Host and Origin.
#[test]
fn cross_site_and_rebinding_changes_are_refused() {
    let (owner, addr) = setup(17);
    let port = addr.port();
    let refused: Vec<(String, u16)> = vec![
        // A cross-site form post: foreign Origin and Host, simple request.
        (
            format!(
                "Host: evil.example:{port}\r\nOrigin: http://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            ),
            403,
        ),
        // The same with a JSON type (a browser preflights it; a script may
        // still try).
        (
            "Host: evil.example\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\n"
                .to_string(),
            403,
        ),
        // DNS rebinding: same-origin to the browser, but the Host is the
        // attacker's name.
        (
            format!(
                "Host: evil.example:{port}\r\nOrigin: http://evil.example:{port}\r\nX-Requested-With: x\r\n"
            ),
            403,
        ),
        // Our Host, a foreign Origin.
        (
            format!("Host: {addr}\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\n"),
            403,
        ),
        (
            format!("Host: {addr}\r\nSec-Fetch-Site: cross-site\r\nX-Requested-With: x\r\n"),
            403,
        ),
        // Our Host and Origin, but a simple request.
        (format!("Host: {addr}\r\nOrigin: http://{addr}\r\n"), 403),
        (format!("Host: {addr}\r\nContent-Type: text/plain\r\n"), 403),
        // No Host at all.
        ("Content-Type: application/json\r\n".to_string(), 400),
    ];
    for (headers, want) in &refused {
        for (m, p) in [
            ("POST", "/api/v1/vips/web/drain"),
            ("DELETE", "/api/v1/vips/web/drain"),
            ("POST", "/api/v1/vips/web/check"),
        ] {
            let r = req_with(addr, m, p, headers);
            assert_eq!(r.status, *want, "{m} {p} with {headers:?}: {}", r.body);
            assert!(r.json()["error"].is_string(), "{}", r.body);
        }
    }
    assert!(!owner.drain_api("web"));
    assert_eq!(owner.log.triggers.load(Ordering::SeqCst), 0);

    // The page's own fetch: same origin, X-Requested-With.
    let page = format!(
        "Host: {addr}\r\nOrigin: http://{addr}\r\nSec-Fetch-Site: same-origin\r\nX-Requested-With: pathosd\r\n"
    );
    let r = req_with(addr, "POST", "/api/v1/vips/web/drain", &page);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(owner.drain_api("web"));
    let r = req_with(
        addr,
        "POST",
        "/api/v1/vips/web/check",
        &format!("Host: localhost:{port}\r\nX-Requested-With: curl\r\n"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(owner.log.triggers.load(Ordering::SeqCst), 1);

    // Reads are open to anyone.
    let r = req_with(
        addr,
        "GET",
        "/status",
        "Host: evil.example\r\nOrigin: http://evil.example\r\n",
    );
    assert_eq!(r.status, 200);
}

#[test]
fn api_token_guards_changes_not_reads() {
    let owner = start_owner(Duration::from_millis(1));
    let token = "0123456789abcdef-token";
    let addr = start_http_with(
        test_ip(18),
        owner.ctl.clone(),
        limits(2000),
        Options {
            token: Some(token.into()),
            ..Options::default()
        },
    );
    let host = format!("Host: {addr}\r\n");
    let r = req(addr, "POST", "/api/v1/vips/web/drain");
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(
        r.header("WWW-Authenticate").as_deref(),
        Some("Bearer realm=\"pathosd\"")
    );
    for wrong in [
        "Bearer 0123456789abcdef-tokeN",
        "Basic 0123456789abcdef-token",
    ] {
        let r = req_with(
            addr,
            "DELETE",
            "/api/v1/vips/web/drain",
            &format!("{host}Authorization: {wrong}\r\n"),
        );
        assert_eq!(r.status, 401, "{wrong}");
    }
    assert!(!owner.drain_api("web"));
    // Authorization alone makes the request non-simple.
    let r = req_with(
        addr,
        "POST",
        "/api/v1/vips/web/drain",
        &format!("{host}Authorization: Bearer {token}\r\n"),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(owner.drain_api("web"));
    // A token does not lift the Host rule.
    let r = req_with(
        addr,
        "POST",
        "/api/v1/vips/web/check",
        &format!("Host: evil.example\r\nAuthorization: Bearer {token}\r\n"),
    );
    assert_eq!(r.status, 403);
    assert_eq!(owner.log.triggers.load(Ordering::SeqCst), 0);
    for p in ["/status", "/metrics", "/healthz", "/api/v1/vips/web"] {
        assert_eq!(req(addr, "GET", p).status, 200, "{p}");
    }
}

/// `/status` with a query is one page of the VIPs with their counts (the
/// same as ubus `status`); without one it stays the whole document.
#[test]
fn status_pages_and_filters() {
    let (_owner, addr) = setup(19);
    let r = req(addr, "GET", "/status?state=withdrawn&compact=1");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["vips_matched"], 1);
    assert_eq!(v["vips"][0]["name"], "db");
    assert!(v["vips"][0].get("checks").is_none());
    assert_eq!(v["vip_counts"]["total"], 3);
    assert_eq!(v["router_id"], "10.0.0.1");
    // Percent-encoded and '+' for a space, as a browser's form sends them.
    let v = req(addr, "GET", "/status?search=%3Cb%3Eevil&limit=5").json();
    assert_eq!(v["vips"][0]["prefix"], "2001:db8::1/128");
    let v = req(addr, "GET", "/status?search=no+such+vip").json();
    assert_eq!(v["vips"], Value::Array(Vec::new()));
    let v = req(addr, "GET", "/status?offset=0&limit=2").json();
    assert_eq!(v["vips"].as_array().unwrap().len(), 2);
    assert_eq!(v["next_offset"], 2);
    assert!(req(addr, "GET", "/status")
        .json()
        .get("vip_counts")
        .is_none());
    for bad in [
        "/status?limit=5000",
        "/status?state=up",
        "/status?colour=red",
        "/status?search=%zz",
    ] {
        let r = req(addr, "GET", bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    assert_eq!(
        req(addr, "GET", "/status?limit=x").json()["error"],
        "limit: expected a number from 0 to 1000"
    );
}
