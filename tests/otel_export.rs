//! OTLP metric export, end to end: the real daemon exports to a receiver
//! that decodes each request with the official protobuf definitions
//! (tests/support/otlp_receiver.py, PyPI opentelemetry-proto), and the
//! metrics it got are compared with /metrics. Then the collector's bad
//! days: down then back, 503 with Retry-After, never answering, garbage;
//! through all of them the API answers at once.

mod support;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};
use support::daemon::Pathosd;

/// The receiver: its decoded requests arrive on `lines`; killed (by its
/// PID, as a `Child`) when dropped.
struct Receiver_ {
    child: Child,
    lines: Receiver<String>,
}

impl Drop for Receiver_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver_ {
    fn start(ip: Ipv4Addr, port: u16, mode: &str) -> Receiver_ {
        Receiver_::start_with(ip, port, mode, &[])
    }

    /// `tls`: the server's certificate and key files, for https.
    fn start_with(ip: Ipv4Addr, port: u16, mode: &str, tls: &[&str]) -> Receiver_ {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/otlp_receiver.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .arg(ip.to_string())
            .arg(port.to_string())
            .arg(mode)
            .args(tls)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            // Ends when the receiver's stdout closes (it was killed).
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut r = Receiver_ { child, lines };
        // A missing opentelemetry module ends the script before this line:
        // the test fails here, it is not skipped.
        let first = r.next(Duration::from_secs(20));
        assert_eq!(
            first.as_deref(),
            Some("listening"),
            "the receiver did not start (is opentelemetry-proto installed? scripts/install-test-deps.sh)"
        );
        r
    }

    fn next(&mut self, limit: Duration) -> Option<String> {
        self.lines.recv_timeout(limit).ok()
    }

    /// The next decoded request.
    fn request(&mut self, limit: Duration) -> Value {
        let l = self
            .next(limit)
            .unwrap_or_else(|| panic!("no OTLP request within {limit:?}"));
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"))
    }
}

fn start(n: u8, collector: SocketAddr, interval: &str) -> Pathosd {
    let (d, _) = start_cfg(n, collector, interval);
    d
}

/// The daemon and its config, to edit for a reload.
fn start_cfg(n: u8, collector: SocketAddr, interval: &str) -> (Pathosd, Value) {
    start_url(n, &format!("http://{collector}"), interval, false)
}

fn start_url(n: u8, url: &str, interval: &str, insecure: bool) -> (Pathosd, Value) {
    let otel = json!({"endpoint": url, "insecure": insecure, "service_name": "edge-1",
                 "headers": {"X-Api-Key": "k1"},
                 "metrics": {"interval": interval},
                 // The metric tests count requests: the other signals,
                 // tested below, would add theirs.
                 "traces": {"enabled": false}, "logs": {"enabled": false}});
    let (cfg, api) = otel_config(
        n,
        otel,
        json!([{"name": "web", "prefix": "10.9.9.1/32", "always": true}]),
    );
    (Pathosd::start(&cfg, api), cfg)
}

/// /metrics as family name → TYPE, and the samples by line.
fn scrape(d: &Pathosd) -> (BTreeMap<String, String>, Vec<String>) {
    let body = d.get("/metrics").expect("/metrics").body;
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    for l in body.lines() {
        if let Some(t) = l.strip_prefix("# TYPE ") {
            let (n, k) = t.split_once(' ').expect("TYPE line");
            types.insert(n.to_string(), k.to_string());
        } else if !l.starts_with('#') {
            samples.push(l.to_string());
        }
    }
    (types, samples)
}

/// The value of the sample `line_start` (name and labels) in /metrics.
fn metric(d: &Pathosd, line_start: &str) -> Option<f64> {
    let (_, samples) = scrape(d);
    samples
        .iter()
        .find_map(|l| l.strip_prefix(line_start)?.trim().parse().ok())
}

/// The API answers at once, whatever the collector does.
fn api_is_prompt(d: &Pathosd) {
    let t = Instant::now();
    assert_eq!(d.get("/healthz").map(|r| r.code), Some(200));
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[test]
fn every_family_of_metrics_arrives_with_its_values() {
    let ip = support::test_ip(10);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    let d = start(11, SocketAddr::from((ip, port)), "1s");
    let req = rx.request(Duration::from_secs(15));
    assert_eq!(req["path"], "/v1/metrics");
    assert_eq!(req["content_type"], "application/x-protobuf");
    assert_eq!(req["headers"]["x-api-key"], "k1");
    assert_eq!(req["resource"]["service.name"], "edge-1");
    assert_eq!(
        req["resource"]["service.instance.id"],
        support::test_ip(11).to_string()
    );
    let (types, samples) = scrape(&d);
    let got: BTreeMap<String, &Value> = req["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| (m["name"].as_str().unwrap_or_default().to_string(), m))
        .collect();
    // The same families, each of its kind.
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        types.keys().collect::<Vec<_>>()
    );
    for (name, kind) in &types {
        let m = got[name];
        match kind.as_str() {
            "gauge" => assert_eq!(m["kind"], "gauge", "{name}"),
            "counter" => {
                assert_eq!(m["kind"], "sum", "{name}");
                assert_eq!(m["monotonic"], true, "{name}");
                assert_eq!(m["temporality"], 2, "{name}: cumulative");
            }
            "histogram" => {
                assert_eq!(m["kind"], "histogram", "{name}");
                assert_eq!(m["temporality"], 2, "{name}: cumulative");
            }
            k => panic!("{name}: kind {k}"),
        }
    }
    // Values that do not move between the export and the scrape.
    let point = |name: &str| got[name]["points"][0].clone();
    assert_eq!(point("pathosd_build_info")["value"], 1.0);
    assert_eq!(
        point("pathosd_build_info")["attrs"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    let start: f64 = samples
        .iter()
        .find_map(|l| l.strip_prefix("pathosd_start_time_seconds ")?.parse().ok())
        .expect("start time");
    let exported = point("pathosd_start_time_seconds")["value"]
        .as_f64()
        .expect("number");
    assert!((exported - start).abs() < 1e-3, "{exported} vs {start}");
    let vip = got["pathosd_vip_state"]["points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| p["attrs"]["vip"] == "web")
        .cloned()
        .expect("web");
    assert_eq!(vip["attrs"]["nlri"], "10.9.9.1/32");
    assert_eq!(
        vip["value"].as_f64(),
        metric(&d, "pathosd_vip_state{vip=\"web\",nlri=\"10.9.9.1/32\"}")
    );
    // A histogram's buckets: one more count than bounds, summing to count.
    let h = point("pathosd_blocking_pool_queue_wait_seconds");
    let counts: Vec<u64> = serde_json::from_value(h["counts"].clone()).expect("counts");
    let bounds = h["bounds"].as_array().expect("bounds");
    assert_eq!(counts.len(), bounds.len() + 1);
    assert_eq!(
        Some(counts.iter().sum::<u64>()),
        h["count"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .or(h["count"].as_u64())
    );
    // The next export comes an interval later; the exporter counted the
    // first as accepted before it sent the second.
    let next = rx.request(Duration::from_secs(5));
    let gap = next["t"].as_f64().unwrap_or(0.0) - req["t"].as_f64().unwrap_or(0.0);
    assert!((0.5..5.0).contains(&gap), "{gap}");
    assert!(metric(&d, "pathosd_otel_export_requests_total{result=\"ok\"}").unwrap_or(0.0) >= 1.0);
}

/// A collector down for 35 s, exported to every second: the queue keeps 8
/// requests and drops the oldest (counted), so memory stays bounded; the
/// API answers at once throughout, and /status shows what the exporter is
/// doing (the queue, the failure, the next try a few seconds away). When
/// the collector is back, the first export arrives within 10 s: the
/// back-off stops growing at 5 s. (It doubled up to two minutes: the tries
/// 1, 3, 7, 15, 31 and 63 s after the first failure left 28 s between
/// this return and the next try, and after the soak's 90 s outage, 41 s.)
/// Then the queue empties.
#[test]
fn a_collector_down_then_back_gets_the_queued_metrics_within_seconds() {
    const DOWN: Duration = Duration::from_secs(35);
    const RESUME: Duration = Duration::from_secs(10);
    let ip = support::test_ip(20);
    let port = support::free_tcp_port(ip);
    let d = start(21, SocketAddr::from((ip, port)), "1s");
    let failed = "pathosd_otel_export_requests_total{result=\"failed\"}";
    assert!(
        support::poll(Duration::from_secs(10), || (metric(&d, failed)? >= 1.0)
            .then_some(()))
        .is_some(),
        "no failed export counted"
    );
    let first_failure = Instant::now();
    let rss_first_failure = support::vm_kib(d.pid(), "VmRSS");
    api_is_prompt(&d);
    // The outage is the case itself, not a wait for an event.
    std::thread::sleep(DOWN.saturating_sub(first_failure.elapsed()));
    api_is_prompt(&d);
    let queued = metric(&d, "pathosd_otel_export_queued").expect("queued");
    assert!(queued <= 8.0, "{queued} requests queued");
    // About 35 exports were made: all but the 8 kept were dropped.
    let dropped = metric(&d, "pathosd_otel_export_dropped_total").expect("dropped");
    assert!(dropped >= 20.0, "{dropped} dropped");
    // Eight 7 KB requests: the memory of the outage is the queue's.
    let grown = support::vm_kib(d.pid(), "VmRSS").saturating_sub(rss_first_failure);
    assert!(
        grown < 2048,
        "RSS grew by {grown} KiB while the collector was down"
    );
    // Where the rest of the daemon's state is: /status (and ubus status,
    // the same document).
    let status: Value =
        serde_json::from_str(&d.get("/status").expect("/status").body).expect("/status is JSON");
    let o = &status["otel"];
    let m = &o["metrics"];
    assert_eq!(
        m["endpoint"],
        format!("http://{ip}:{port}/v1/metrics"),
        "{o:#}"
    );
    assert!(
        m["last_error"].as_str().is_some_and(|e| !e.is_empty()),
        "{o:#}"
    );
    assert!(
        (1..=8).contains(&m["queued"].as_u64().unwrap_or(0)),
        "{o:#}"
    );
    assert!(o["dropped"].as_u64() >= Some(20), "{o:#}");
    assert!(o["failed"].as_u64() >= Some(5), "{o:#}");
    assert!(o["traces"].is_null() && o["logs"].is_null(), "{o:#}");
    // Between two tries the next one is a few seconds away (null while a
    // try is under way).
    let next = support::poll(Duration::from_secs(6), || {
        let s: Value = serde_json::from_str(&d.get("/status")?.body).ok()?;
        s["otel"]["metrics"]["next_try_in_ms"].as_u64()
    })
    .unwrap_or_else(|| panic!("no next try in /status: {o:#}"));
    assert!(next <= 5000, "next try in {next} ms");
    let mut rx = Receiver_::start(ip, port, "ok");
    let back = Instant::now();
    let req = rx.request(RESUME);
    assert_eq!(req["resource"]["service.name"], "edge-1");
    assert_eq!(req["status"], 200);
    let first = back.elapsed();
    assert!(first <= RESUME, "first export {first:?} after the return");
    // What was queued follows at once, not at the export interval: the
    // queue empties (the export made each second is then sent in turn).
    assert!(
        support::poll(Duration::from_secs(10), || (metric(
            &d,
            "pathosd_otel_export_queued"
        )? <= 1.0)
            .then_some(()))
        .is_some(),
        "the queue did not empty after the collector came back"
    );
    let mut delivered = 1;
    while rx.next(Duration::from_millis(1)).is_some() && delivered < 100 {
        delivered += 1;
    }
    assert!(
        delivered >= 8,
        "{delivered} requests within {:?} of the first after the return",
        back.elapsed() - first
    );
    // Logged once the daemon has read the answer the receiver printed after.
    assert!(
        support::wait_for(Duration::from_secs(5), || d
            .log()
            .contains("accepts exports again")),
        "{}",
        d.log()
    );
    let status: Value =
        serde_json::from_str(&d.get("/status").expect("/status").body).expect("/status is JSON");
    assert!(
        status["otel"]["metrics"]["last_error"].is_null(),
        "{:#}",
        status["otel"]
    );
    assert!(status["otel"]["exported"].as_u64() >= Some(8));
}

#[test]
fn a_503_with_retry_after_is_retried_after_it() {
    let ip = support::test_ip(30);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "503");
    let d = start(31, SocketAddr::from((ip, port)), "1s");
    let first = rx.request(Duration::from_secs(15));
    assert_eq!(first["status"], 503);
    let retry = rx.request(Duration::from_secs(10));
    assert_eq!(retry["status"], 200);
    let gap = retry["t"].as_f64().unwrap_or(0.0) - first["t"].as_f64().unwrap_or(0.0);
    assert!(gap >= 1.9, "retried after {gap}s, before Retry-After: 2");
    assert!(metric(&d, "pathosd_otel_export_requests_total{result=\"failed\"}") >= Some(1.0));
    api_is_prompt(&d);
}

#[test]
fn a_collector_that_never_answers_costs_nothing_but_a_counted_failure() {
    let ip = support::test_ip(40);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "hang");
    let d = start(41, SocketAddr::from((ip, port)), "1s");
    // The request arrives but is never answered; meanwhile the daemon
    // answers at once.
    assert_eq!(rx.request(Duration::from_secs(15))["status"], "hang");
    api_is_prompt(&d);
    // The attempt gives up after 10s and is counted; the exports made
    // meanwhile (one a second) overflowed the queue of 8, oldest first.
    let failed = "pathosd_otel_export_requests_total{result=\"failed\"}";
    assert!(
        support::poll(Duration::from_secs(20), || (metric(&d, failed)? >= 1.0)
            .then_some(()))
        .is_some(),
        "{}",
        d.log()
    );
    assert!(metric(&d, "pathosd_otel_export_dropped_total") >= Some(1.0));
    assert!(metric(&d, "pathosd_otel_export_queued") <= Some(8.0));
    api_is_prompt(&d);
}

#[test]
fn a_collector_that_answers_garbage_is_a_counted_failure() {
    let ip = support::test_ip(50);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "garbage");
    let d = start(51, SocketAddr::from((ip, port)), "1s");
    // The receiver decoded what it got, and answered garbage.
    let req = rx.request(Duration::from_secs(15));
    assert_eq!(req["status"], "garbage");
    let failed = "pathosd_otel_export_requests_total{result=\"failed\"}";
    assert!(
        support::poll(Duration::from_secs(10), || (metric(&d, failed)? >= 1.0)
            .then_some(()))
        .is_some(),
        "{}",
        d.log()
    );
    api_is_prompt(&d);
}

/// The value of `name`'s point whose attributes include `vip` = `vip`.
fn vip_point(req: &Value, name: &str, vip: &str) -> Option<f64> {
    req["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)?["points"]
        .as_array()?
        .iter()
        .find(|p| p["attrs"]["vip"] == vip)?["value"]
        .as_f64()
}

#[test]
fn shutdown_sends_the_last_metrics_after_the_withdrawals() {
    let ip = support::test_ip(60);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    // An interval that never comes: the one request is the shutdown's.
    let mut d = start(61, SocketAddr::from((ip, port)), "1h");
    assert_eq!(
        metric(&d, "pathosd_vip_state{vip=\"web\",nlri=\"10.9.9.1/32\"}"),
        Some(1.0),
        "announced"
    );
    d.signal("TERM");
    let last = rx.request(Duration::from_secs(5));
    // The stop's withdrawal is in the state the last export reads.
    assert_eq!(
        vip_point(&last, "pathosd_vip_state", "web"),
        Some(0.0),
        "withdrawn"
    );
    let st = d.wait_exit(Duration::from_secs(5)).expect("exit");
    assert_eq!(st.code(), Some(0));
    // Sent after the withdrawals and the sessions' stop, not before.
    let log = d.log();
    let at = |what: &str| log.find(what).unwrap_or_else(|| panic!("{what}: {log}"));
    assert!(at("-> withdrawn (pathosd shutting down)") < at("otel: last metrics sent"));
    assert!(at("otel: last metrics sent") < at("stopped"));
}

#[test]
fn shutdown_does_not_wait_for_a_collector_that_never_answers() {
    let ip = support::test_ip(70);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "hang");
    let mut d = start(71, SocketAddr::from((ip, port)), "1h");
    d.signal("TERM");
    assert_eq!(rx.request(Duration::from_secs(5))["status"], "hang");
    // The last export waits at most 1s.
    let st = d.wait_exit(Duration::from_secs(4)).expect("exit in time");
    assert_eq!(st.code(), Some(0));
    assert!(
        d.log().contains("otel: last metrics not sent"),
        "{}",
        d.log()
    );
}

#[test]
fn reload_restarts_the_exporter_and_a_bad_otel_block_keeps_it() {
    let ip = support::test_ip(80);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    let (d, mut cfg) = start_cfg(81, SocketAddr::from((ip, port)), "1s");
    assert_eq!(
        rx.request(Duration::from_secs(15))["resource"]["service.name"],
        "edge-1"
    );
    cfg["otel"]["service_name"] = json!("edge-2");
    d.write_config(&cfg);
    d.signal("HUP");
    // Bounded: at one export a second, the new name comes within a few.
    let renamed =
        (0..10).any(|_| rx.request(Duration::from_secs(5))["resource"]["service.name"] == "edge-2");
    assert!(renamed, "{}", d.log());
    assert!(d.log().contains("otel changed: applied"), "{}", d.log());
    cfg["otel"]["endpoint"] = json!("ftp://127.0.0.1:1");
    d.write_config(&cfg);
    d.signal("HUP");
    assert!(
        support::wait_for(Duration::from_secs(5), || d
            .log()
            .contains("unsupported scheme \"ftp\"")),
        "{}",
        d.log()
    );
    // The running exporter goes on with the old settings.
    let after = rx.request(Duration::from_secs(5));
    assert_eq!(after["resource"]["service.name"], "edge-2");
}

/// https:// goes through ureq on the blocking pool: with `insecure` the
/// test CA's certificate is taken; without, it is refused (the CA is not in
/// the system store) and counted as a failure.
#[cfg(feature = "tls")]
#[test]
fn https_export_verifies_the_collector_unless_insecure() {
    let ip = support::test_ip(90);
    let port = support::free_tcp_port(ip);
    let dir = support::temp_dir("otel-tls");
    let pki = support::pki(&dir.path(""), &ip.to_string());
    let mut rx = Receiver_::start_with(ip, port, "ok", &[&pki.cert, &pki.key]);
    let url = format!("https://{ip}:{port}");
    let (d, _) = start_url(91, &url, "1s", true);
    let req = rx.request(Duration::from_secs(15));
    assert_eq!(req["path"], "/v1/metrics");
    assert_eq!(req["resource"]["service.name"], "edge-1");
    drop(d);
    let (d, _) = start_url(92, &url, "1s", false);
    let failed = "pathosd_otel_export_requests_total{result=\"failed\"}";
    assert!(
        support::poll(Duration::from_secs(10), || (metric(&d, failed)? >= 1.0)
            .then_some(()))
        .is_some(),
        "{}",
        d.log()
    );
    assert!(d.log().contains("otel: export to"), "{}", d.log());
}

/// The spans of the next requests, until `done` holds for what came so far
/// or `limit` passes; every request is a traces request of `edge-1`.
fn spans_until(
    rx: &mut Receiver_,
    d: &Pathosd,
    limit: Duration,
    mut done: impl FnMut(&[Value]) -> bool,
) -> Vec<Value> {
    let spans_of = |reqs: &[Value]| -> Vec<Value> {
        reqs.iter()
            .flat_map(|r| r["spans"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let reqs = requests_until(rx, d, limit, |reqs| done(&spans_of(reqs)));
    for req in &reqs {
        assert_eq!(req["path"], "/v1/traces");
        assert_eq!(req["resource"]["service.name"], "edge-1");
    }
    spans_of(&reqs)
}

fn has(spans: &[Value], name: &str, key: &str, value: Value) -> bool {
    spans
        .iter()
        .any(|s| s["name"] == name && s["attrs"][key] == value)
}

#[test]
fn traces_have_a_span_per_check_result_and_per_route_change() {
    let ip = support::test_ip(100);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    let backend = support::test_ip(103);
    let listener = std::net::TcpListener::bind((backend, 0)).expect("bind");
    let backend_port = listener.local_addr().expect("addr").port();
    let ours = support::test_ip(101);
    let api = SocketAddr::from((ours, support::free_tcp_port(ours)));
    let cfg = json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": ours.to_string(), "local_address": ours.to_string()},
        "bgp": {"listen_port": -1, "neighbors": [{
            "name": "nobody", "address": support::test_ip(102).to_string(),
            "peer_asn": 65000, "port": support::free_tcp_port(support::test_ip(102))}]},
        "api": {"listen": api.to_string(), "ubus_socket": ""},
        "logging": {"level": "debug", "syslog": false, "timestamps": true},
        "otel": {"endpoint": format!("http://{ip}:{port}"), "service_name": "edge-1",
                 "metrics": {"enabled": false},
                 "traces": {"sample_ratio": 1}, "logs": {"enabled": false}},
        "vips": [{"name": "web", "prefix": "10.9.9.2/32",
                  "policy": {"fail_action": "drain_then_withdraw", "drain_time": "1s"},
                  "check": {"type": "tcp", "interval": "1s", "timeout": "500ms",
                            "rise": 1, "fall": 1,
                            "tcp": {"host": backend.to_string(), "port": backend_port}}}]
    });
    let d = Pathosd::start(&cfg, api);
    // A passing check, then the announcement it leads to.
    let spans = spans_until(&mut rx, &d, Duration::from_secs(20), |s| {
        has(s, "health_check", "check.success", json!(true))
            && has(s, "bgp.announce", "bgp.prefix", json!("10.9.9.2/32"))
    });
    let check = spans
        .iter()
        .find(|s| s["name"] == "health_check")
        .expect("health_check");
    assert_eq!(check["attrs"]["vip.name"], "web");
    assert_eq!(check["attrs"]["check.type"], "tcp");
    assert_eq!(check["attrs"]["check.timed_out"], false);
    assert!(check["attrs"]["check.detail"]
        .as_str()
        .is_some_and(|d| d.contains("connection accepted")));
    assert!(check["attrs"]["check.duration_ms"].is_u64());
    assert!(check["end"].as_u64() >= check["start"].as_u64());
    assert_eq!(check["trace_id"].as_str().map(str::len), Some(32));
    assert_eq!(check["span_id"].as_str().map(str::len), Some(16));
    let announce = spans
        .iter()
        .find(|s| s["name"] == "bgp.announce")
        .expect("bgp.announce");
    assert_eq!(announce["attrs"]["bgp.operation"], "announce");
    assert_eq!(announce["attrs"]["bgp.prepend"], 0);
    assert_ne!(announce["span_id"], check["span_id"]);
    // The backend goes: a failing check (status ERROR), then the VIP's
    // fail action: announced again, prepended, then withdrawn.
    drop(listener);
    let spans = spans_until(&mut rx, &d, Duration::from_secs(20), |s| {
        has(s, "health_check", "check.success", json!(false))
            && has(s, "bgp.pessimize", "bgp.prefix", json!("10.9.9.2/32"))
            && has(s, "bgp.withdraw", "bgp.prefix", json!("10.9.9.2/32"))
    });
    let failed = spans
        .iter()
        .find(|s| s["name"] == "health_check" && s["attrs"]["check.success"] == false)
        .expect("failed check");
    assert_eq!(failed["status"], 2, "STATUS_CODE_ERROR");
    let pessimize = spans
        .iter()
        .find(|s| s["name"] == "bgp.pessimize")
        .expect("bgp.pessimize");
    assert_eq!(pessimize["attrs"]["bgp.operation"], "pessimize");
    assert!(pessimize["attrs"]["bgp.prepend"].as_u64() > Some(0));
    assert!(has(
        &spans,
        "bgp.withdraw",
        "bgp.operation",
        json!("withdraw")
    ));
    api_is_prompt(&d);
}

/// 600 tcp-checked VIPs come up within a second of the start, a line
/// each, before the first drain (5 s after the start): every one of them
/// arrives, none is dropped (a buffer of 512 records dropped the oldest
/// hundred of them).
#[test]
fn log_records_at_or_above_otel_level_are_exported_and_none_below() {
    const VIPS: usize = 600;
    let ip = support::test_ip(110);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    let otel = json!({"endpoint": format!("http://{ip}:{port}"), "service_name": "edge-1",
                      "metrics": {"enabled": false}, "traces": {"enabled": false}});
    // The backend: accepts and closes, until the test ends.
    let backend = std::net::TcpListener::bind((support::test_ip(113), 0)).expect("bind");
    let backend_addr = backend.local_addr().expect("address");
    std::thread::spawn(move || {
        for c in backend.incoming() {
            drop(c);
        }
    });
    let vips: Vec<Value> = (0..VIPS)
        .map(|i| {
            json!({"name": format!("v{i}"), "prefix": format!("10.111.{}.{}/32", i / 256, i % 256),
                   "check": {"type": "tcp", "interval": "1s", "timeout": "900ms", "rise": 1,
                             "tcp": {"host": backend_addr.ip().to_string(),
                                     "port": backend_addr.port()}}})
        })
        .collect();
    let d = daemon_with(111, otel, Value::Array(vips));
    let announced = |records: &[Value]| {
        records
            .iter()
            .filter(|r| {
                r["body"]
                    .as_str()
                    .is_some_and(|b| b.starts_with("vip v") && b.contains("-> announced"))
            })
            .count()
    };
    let end = Instant::now() + Duration::from_secs(20);
    let mut records: Vec<Value> = Vec::new();
    while !records.iter().any(|r| {
        r["body"]
            .as_str()
            .is_some_and(|b| b.contains("sending End-of-RIB"))
    }) || announced(&records) < VIPS
    {
        let left = end.saturating_duration_since(Instant::now());
        let line = (!left.is_zero()).then(|| rx.next(left)).flatten();
        let Some(line) = line else {
            panic!(
                "no End-of-RIB line or not every VIP's ({} of {VIPS}): {} records, {:?} dropped",
                announced(&records),
                records.len(),
                metric(&d, "pathosd_otel_logs_dropped_total")
            );
        };
        let req: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(req["path"], "/v1/logs");
        assert_eq!(req["resource"]["service.name"], "edge-1");
        records.extend(req["records"].as_array().cloned().unwrap_or_default());
    }
    assert_eq!(announced(&records), VIPS);
    assert_eq!(
        metric(&d, "pathosd_otel_logs_dropped_total"),
        Some(0.0),
        "log records dropped"
    );
    let eor = records
        .iter()
        .find(|r| {
            r["body"]
                .as_str()
                .is_some_and(|b| b.contains("sending End-of-RIB"))
        })
        .expect("End-of-RIB");
    assert_eq!(eor["severity"], 9);
    assert_eq!(eor["severity_text"], "INFO");
    assert!(eor["time"].as_u64() > Some(0));
    // Debug lines were written to the console, none exported; nor the
    // exporter's own lines.
    assert!(d.log().contains("DEBUG"), "{}", d.log());
    for r in &records {
        assert!(r["severity"].as_u64() >= Some(9), "{r}");
        assert!(
            !r["body"].as_str().is_some_and(|b| b.starts_with("otel:")),
            "{r}"
        );
    }
    api_is_prompt(&d);
}

/// A tcp-checked VIP, checked every second against `backend`.
fn checked_vip(backend: SocketAddr) -> Value {
    json!([{"name": "web", "prefix": "10.9.9.4/32",
            "check": {"type": "tcp", "interval": "1s", "timeout": "500ms",
                      "rise": 1, "fall": 1,
                      "tcp": {"host": backend.ip().to_string(), "port": backend.port()}}}])
}

/// The daemon with `otel` and `vips` as given, logging at debug and
/// exporting log records from info up.
fn daemon_with(n: u8, otel: Value, vips: Value) -> Pathosd {
    let (cfg, api) = otel_config(n, otel, vips);
    Pathosd::start(&cfg, api)
}

/// The config of a daemon on test address `n` with `otel` and `vips` as
/// given, a neighbor that never answers, logging at debug and exporting log
/// records from info up; and its API address.
fn otel_config(n: u8, otel: Value, vips: Value) -> (Value, SocketAddr) {
    let ours = support::test_ip(n);
    let api = SocketAddr::from((ours, support::free_tcp_port(ours)));
    let cfg = json!({
        "schema": "v1",
        "router": {"asn": 65001, "router_id": ours.to_string(), "local_address": ours.to_string()},
        "bgp": {"listen_port": -1, "neighbors": [{
            "name": "nobody", "address": support::test_ip(n + 1).to_string(),
            "peer_asn": 65000, "port": support::free_tcp_port(support::test_ip(n + 1))}]},
        "api": {"listen": api.to_string(), "ubus_socket": ""},
        "logging": {"level": "debug", "otel_level": "info", "syslog": false, "timestamps": true},
        "otel": otel,
        "vips": vips
    });
    (cfg, api)
}

#[test]
fn a_collector_refusing_traces_does_not_hold_up_the_metrics() {
    let ip = support::test_ip(120);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "503traces");
    let listener = std::net::TcpListener::bind((support::test_ip(123), 0)).expect("bind");
    let backend = listener.local_addr().expect("addr");
    let otel = json!({"endpoint": format!("http://{ip}:{port}"), "service_name": "edge-1",
                      "metrics": {"interval": "1s"},
                      "traces": {"sample_ratio": 1}, "logs": {"enabled": false}});
    let d = daemon_with(121, otel, checked_vip(backend));
    // The first traces request is refused (503, retryable, forever) ...
    let end = Instant::now() + Duration::from_secs(20);
    let mut refused = None;
    while refused.is_none() {
        let left = end.saturating_duration_since(Instant::now());
        let req = rx.request(left.max(Duration::from_millis(1)));
        if req["path"] == "/v1/traces" {
            assert_eq!(req["status"], 503);
            refused = req["t"].as_f64();
        }
    }
    // ... and the metrics go on arriving, one a second, while the traces
    // are retried on their own back-off. (Behind the traces in one queue,
    // metrics would wait until eight of them pushed the traces out.)
    let (mut metrics, mut retried) = (0, false);
    let end = Instant::now() + Duration::from_secs(5);
    while metrics < 3 || !retried {
        let left = end.saturating_duration_since(Instant::now());
        let Some(line) = (!left.is_zero()).then(|| rx.next(left)).flatten() else {
            panic!(
                "{metrics} metrics requests, retried: {retried}\n{}",
                d.log()
            );
        };
        let req: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        match req["path"].as_str() {
            Some("/v1/metrics") => {
                assert_eq!(req["status"], 200);
                metrics += 1;
            }
            Some("/v1/traces") => retried = true,
            p => panic!("{p:?}"),
        }
    }
    assert!(d.log().contains("export to"), "{}", d.log());
    api_is_prompt(&d);
}

#[test]
fn shutdown_sends_the_stops_spans_and_log_records_too() {
    let ip = support::test_ip(130);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    // Every signal on, none due before the stop: metrics every hour, and
    // the stop comes before the first drain of spans and logs (5 s).
    let otel = json!({"endpoint": format!("http://{ip}:{port}"), "service_name": "edge-1",
                      "metrics": {"interval": "1h"}, "traces": {"sample_ratio": 0}});
    let vips = json!([{"name": "web", "prefix": "10.9.9.5/32", "always": true}]);
    let mut d = daemon_with(131, otel, vips);
    assert_eq!(
        metric(&d, "pathosd_vip_state{vip=\"web\",nlri=\"10.9.9.5/32\"}"),
        Some(1.0),
        "announced"
    );
    d.signal("TERM");
    let mut paths = Vec::new();
    let (mut spans, mut records) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let req = rx.request(Duration::from_secs(5));
        paths.push(req["path"].as_str().unwrap_or_default().to_string());
        spans.extend(req["spans"].as_array().cloned().unwrap_or_default());
        records.extend(req["records"].as_array().cloned().unwrap_or_default());
    }
    paths.sort();
    assert_eq!(paths, ["/v1/logs", "/v1/metrics", "/v1/traces"]);
    assert!(
        has(&spans, "bgp.withdraw", "bgp.prefix", json!("10.9.9.5/32")),
        "{spans:#?}"
    );
    let logged = |what: &str| {
        records
            .iter()
            .any(|r| r["body"].as_str().is_some_and(|b| b.contains(what)))
    };
    assert!(
        logged("shutting down: withdrawing every VIP"),
        "{records:#?}"
    );
    assert!(
        logged("vip web 10.9.9.5/32: announced -> withdrawn (pathosd shutting down)"),
        "{records:#?}"
    );
    assert_eq!(
        d.wait_exit(Duration::from_secs(5)).map(|s| s.code()),
        Some(Some(0))
    );
    // Sent by the stop's last export, not by a drain before it.
    let log = d.log();
    for what in ["metrics", "spans", "log records"] {
        assert!(
            log.contains(&format!("otel: last {what} sent")),
            "{what}: {log}"
        );
    }
}

/// The next decoded requests until `done` holds for what came so far (or
/// `limit` passes: a failure).
fn requests_until(
    rx: &mut Receiver_,
    d: &Pathosd,
    limit: Duration,
    mut done: impl FnMut(&[Value]) -> bool,
) -> Vec<Value> {
    let end = Instant::now() + limit;
    let mut got = Vec::new();
    while !done(&got) {
        let left = end.saturating_duration_since(Instant::now());
        let line = (!left.is_zero()).then(|| rx.next(left)).flatten();
        let Some(line) = line else {
            panic!("not in {limit:?}: {got:#?}\n{}", d.log());
        };
        got.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    got
}

const GRPC_METRICS: &str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
const GRPC_TRACES: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
const GRPC_LOGS: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// Over grpc:// every signal arrives at its service's Export, decoded by
/// grpcio with the official stubs, the configured header as metadata.
#[test]
fn grpc_export_carries_metrics_spans_and_logs() {
    let ip = support::test_ip(140);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "grpc");
    let listener = std::net::TcpListener::bind((support::test_ip(143), 0)).expect("bind");
    let backend = listener.local_addr().expect("addr");
    let otel = json!({"endpoint": format!("grpc://{ip}:{port}"), "service_name": "edge-1",
                      "headers": {"X-Api-Key": "k1"},
                      "metrics": {"interval": "1s"}, "traces": {"sample_ratio": 1}});
    let d = daemon_with(141, otel, checked_vip(backend));
    let got = requests_until(&mut rx, &d, Duration::from_secs(20), |g| {
        [GRPC_METRICS, GRPC_TRACES, GRPC_LOGS]
            .iter()
            .all(|p| g.iter().any(|r| r["path"] == *p))
    });
    for r in &got {
        assert_eq!(r["status"], "OK");
        assert_eq!(r["headers"]["x-api-key"], "k1");
        assert_eq!(
            r["headers"]["user-agent"],
            format!("pathosd/{}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(r["resource"]["service.name"], "edge-1");
    }
    let m = got
        .iter()
        .find(|r| r["path"] == GRPC_METRICS)
        .expect("metrics");
    let (types, _) = scrape(&d);
    let mut names: Vec<&str> = m["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, types.keys().map(String::as_str).collect::<Vec<_>>());
    let build = m["metrics"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["name"] == "pathosd_build_info"))
        .expect("build_info");
    assert_eq!(build["points"][0]["value"], 1.0);
    assert_eq!(
        build["points"][0]["attrs"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    let start = m["metrics"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["name"] == "pathosd_start_time_seconds"))
        .and_then(|m| m["points"][0]["value"].as_f64())
        .expect("start time");
    let scraped = metric(&d, "pathosd_start_time_seconds").expect("scraped start time");
    assert!((start - scraped).abs() < 1e-3, "{start} vs {scraped}");
    assert_eq!(
        vip_point(m, "pathosd_vip_state", "web"),
        metric(&d, "pathosd_vip_state{vip=\"web\",nlri=\"10.9.9.4/32\"}")
    );
    let spans: Vec<Value> = got
        .iter()
        .filter(|r| r["path"] == GRPC_TRACES)
        .flat_map(|r| r["spans"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(
        has(&spans, "health_check", "vip.name", json!("web")),
        "{spans:#?}"
    );
    let records: Vec<Value> = got
        .iter()
        .filter(|r| r["path"] == GRPC_LOGS)
        .flat_map(|r| r["records"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(
        records.iter().any(|r| r["body"]
            .as_str()
            .is_some_and(|b| b.contains("sending End-of-RIB"))),
        "{records:#?}"
    );
    api_is_prompt(&d);
}

/// A metrics request far above HTTP/2's initial 65,535-byte windows goes
/// out as the collector's WINDOW_UPDATEs allow, and arrives whole.
#[test]
fn a_large_metrics_request_arrives_whole_over_grpc() {
    let ip = support::test_ip(150);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "grpc");
    let vips: Vec<Value> = (0..600)
        .map(|i| json!({"name": format!("v{i}"), "prefix": format!("10.20.{}.{}/32", i / 250, i % 250), "always": true}))
        .collect();
    let otel = json!({"endpoint": format!("grpc://{ip}:{port}"), "service_name": "edge-1",
                      "metrics": {"interval": "1s"},
                      "traces": {"enabled": false}, "logs": {"enabled": false}});
    let d = daemon_with(151, otel, Value::Array(vips));
    let req = rx.request(Duration::from_secs(20));
    assert_eq!(req["path"], GRPC_METRICS);
    assert_eq!(req["status"], "OK");
    assert!(req["bytes"].as_u64() > Some(200_000), "{}", req["bytes"]);
    for i in [0, 299, 599] {
        let v = format!("v{i}");
        assert_eq!(vip_point(&req, "pathosd_vip_state", &v), Some(1.0), "{v}");
    }
    let states = req["metrics"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["name"] == "pathosd_vip_state"))
        .and_then(|m| m["points"].as_array())
        .map_or(0, Vec::len);
    assert_eq!(states, 600);
    api_is_prompt(&d);
}

/// The points' time stamps: the same in a retry of a request, later in
/// the next export.
fn stamp(req: &Value) -> Value {
    req["metrics"][0]["points"][0]["time"].clone()
}

#[test]
fn grpc_unavailable_is_retried_and_invalid_argument_is_dropped() {
    let ip = support::test_ip(160);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "grpc-unavailable");
    let (d, _) = start_url(161, &format!("grpc://{ip}:{port}"), "1s", false);
    let first = rx.request(Duration::from_secs(15));
    assert_eq!(first["status"], "UNAVAILABLE");
    // The retry (after the 1 s back-off) is the same request.
    let retry = rx.request(Duration::from_secs(10));
    assert_eq!(retry["status"], "OK");
    assert_eq!(stamp(&retry), stamp(&first));
    assert!(metric(&d, "pathosd_otel_export_requests_total{result=\"failed\"}") >= Some(1.0));
    assert!(d.log().contains("UNAVAILABLE (14)"), "{}", d.log());
    drop((d, rx));

    let ip = support::test_ip(170);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "grpc-invalid");
    let (d, _) = start_url(171, &format!("grpc://{ip}:{port}"), "1s", false);
    let first = rx.request(Duration::from_secs(15));
    assert_eq!(first["status"], "INVALID_ARGUMENT");
    // Dropped, not retried: the next request is the next export.
    let next = rx.request(Duration::from_secs(10));
    assert_ne!(stamp(&next), stamp(&first));
    assert!(
        support::wait_for(Duration::from_secs(5), || d
            .log()
            .contains("refused an export: gRPC INVALID_ARGUMENT (3)")),
        "{}",
        d.log()
    );
    assert!(metric(&d, "pathosd_otel_export_dropped_total") >= Some(1.0));
}

/// A gRPC collector that never answers any signal holds one worker of the
/// blocking pool at a time, not one per signal: the exporter's calls on the
/// pool take turns, and the checks keep the other workers.
#[test]
fn a_grpc_collector_that_never_answers_holds_one_pool_worker() {
    let ip = support::test_ip(200);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "grpc-hang");
    let listener = std::net::TcpListener::bind((support::test_ip(203), 0)).expect("bind");
    let otel = json!({"endpoint": format!("grpc://{ip}:{port}"),
                      "metrics": {"interval": "1s"}, "traces": {"sample_ratio": 1}});
    let d = daemon_with(201, otel, checked_vip(listener.local_addr().expect("addr")));
    assert_eq!(rx.request(Duration::from_secs(15))["status"], "hang");
    // Spans and log records are drained every 5 s: sample past the first
    // drain, while every signal has something to send.
    let end = Instant::now() + Duration::from_secs(8);
    let mut most = 0;
    while Instant::now() < end {
        let running = d.status()["blocking_pool"]["running"]
            .as_u64()
            .unwrap_or(99);
        most = most.max(running);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        most,
        1,
        "pool workers the exporter held at once\n{}",
        d.log()
    );
    // Only one call reached the collector: the others wait for its turn.
    assert!(rx.next(Duration::from_millis(100)).is_none());
    api_is_prompt(&d);
}

/// grpcs:// with the build's TLS: the receiver's test certificate is taken
/// with `insecure`.
#[cfg(feature = "tls")]
#[test]
fn grpcs_export_arrives_over_tls() {
    let ip = support::test_ip(180);
    let port = support::free_tcp_port(ip);
    let dir = support::temp_dir("otel-grpcs");
    let pki = support::pki(&dir.path(""), &ip.to_string());
    let mut rx = Receiver_::start_with(ip, port, "grpc", &[&pki.cert, &pki.key]);
    let (_d, _) = start_url(181, &format!("grpcs://{ip}:{port}"), "1s", true);
    let req = rx.request(Duration::from_secs(15));
    assert_eq!(req["path"], GRPC_METRICS);
    assert_eq!(req["status"], "OK");
    assert_eq!(req["resource"]["service.name"], "edge-1");
}

/// Every API request is a server span (not sampled: `sample_ratio` 0
/// here), named by its method and route template.
#[test]
fn api_requests_are_server_spans() {
    let ip = support::test_ip(190);
    let port = support::free_tcp_port(ip);
    let mut rx = Receiver_::start(ip, port, "ok");
    let otel = json!({"endpoint": format!("http://{ip}:{port}"), "service_name": "edge-1",
                      "metrics": {"enabled": false}, "logs": {"enabled": false},
                      "traces": {"sample_ratio": 0}});
    let vips = json!([{"name": "web", "prefix": "10.9.9.6/32", "always": true}]);
    let d = daemon_with(191, otel, vips);
    assert_eq!(d.get("/status").map(|r| r.code), Some(200));
    assert_eq!(d.get("/api/v1/vips/nope").map(|r| r.code), Some(404));
    let spans = spans_until(&mut rx, &d, Duration::from_secs(15), |s| {
        s.iter().any(|s| s["name"] == "GET /status")
            && s.iter().any(|s| s["name"] == "GET /api/v1/vips/{name}")
    });
    let status = spans
        .iter()
        .find(|s| s["name"] == "GET /status")
        .expect("GET /status");
    assert_eq!(status["kind"], 2, "SPAN_KIND_SERVER");
    assert_eq!(status["attrs"]["http.request.method"], "GET");
    assert_eq!(status["attrs"]["url.path"], "/status");
    assert_eq!(status["attrs"]["http.route"], "/status");
    assert_eq!(status["attrs"]["http.response.status_code"], 200);
    assert_eq!(status["status"], 0, "unset");
    assert!(status["end"].as_u64() >= status["start"].as_u64());
    let vip = spans
        .iter()
        .find(|s| s["name"] == "GET /api/v1/vips/{name}")
        .expect("the VIP's route");
    assert_eq!(vip["attrs"]["url.path"], "/api/v1/vips/nope");
    assert_eq!(vip["attrs"]["http.response.status_code"], 404);
    // The daemon's own spans stay INTERNAL; none is a health_check (0).
    assert!(spans
        .iter()
        .filter(|s| s["name"] == "bgp.announce")
        .all(|s| s["kind"] == 1));
    assert!(!spans.iter().any(|s| s["name"] == "health_check"));
}
