//! The real daemon's life cycle against a real BIRD: VIPs start withdrawn,
//! `always` VIPs at once, End-of-RIB after the first evaluation, the drain
//! file and the runtime drain, the check trigger, SIGTERM with and without
//! shutdown_drain, SIGHUP reloads (unchanged, invalid, one VIP changed) and
//! /metrics through promtool. Checks are exec'd commands (`test -e FLAG`),
//! so a test controls health by creating and removing a file.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use support::bird::attr;
use support::daemon::{as_path, http_with, is_announced, is_pessimized, policy, Setup};
use support::{poll, promtool_check, TempDir};

/// An exec check healthy while `flag` exists.
fn flag_check(flag: &Path, interval_ms: u64, rise: u32, fall: u32) -> Value {
    json!({
        "type": "exec",
        "interval": format!("{interval_ms}ms"),
        "timeout": format!("{}ms", interval_ms * 3 / 4),
        "rise": rise,
        "fall": fall,
        "exec": {"command": "/usr/bin/test", "args": ["-e", flag.display().to_string()]}
    })
}

fn prefix(n: u8, i: u8) -> String {
    format!("10.{}.{i}.1/32", 200 + n)
}

/// Index of the first log line containing `needle`.
fn line_of(log: &str, needle: &str) -> Option<usize> {
    log.lines().position(|l| l.contains(needle))
}

#[test]
fn vips_start_withdrawn_always_is_immediate_and_end_of_rib_waits_for_the_first_evaluation() {
    let n = 8;
    let dir = TempDir::new("e2e-start");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let (always, slow, dead) = (prefix(n, 1), prefix(n, 2), prefix(n, 3));
    let vips = json!([
        {"name": "always", "prefix": always, "always": true,
         "policy": {"announce": {"communities": ["65001:1"]}}},
        {"name": "slow", "prefix": slow, "check": flag_check(&up, 500, 4, 1),
         "policy": {"announce": {"communities": ["65001:2"]}}},
        {"name": "dead", "prefix": dead, "check": flag_check(&dir.path("missing"), 500, 1, 1),
         "policy": {"fail_action": "withdraw"}}
    ]);
    let s = Setup::start(n, vips, |_| {});

    // Until `slow` has had its 4 results (about 1.5 s), it is withdrawn and
    // End-of-RIB is held back: pathosd sent BIRD one UPDATE, `always`.
    let mut seen_before_rise = 0;
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < end, "slow never announced:\n{}", s.d.log());
        let bird_slow = s.bird.route(&slow);
        let st = s.d.status();
        let v = &st["vips"][1];
        let peer = &st["peers"][0];
        if v["state_name"] == "announced" {
            break;
        }
        assert!(bird_slow.is_none(), "BIRD has {slow} before rise: {v}");
        assert!(v["consecutive_ok"].as_u64().unwrap() < 4, "{v}");
        if peer["session_state"] == "established" {
            let updates = peer["messages_sent"]["update"].as_u64().unwrap();
            assert!(
                updates <= 1,
                "End-of-RIB before the first evaluation? {peer}"
            );
            if updates == 1 {
                seen_before_rise += 1;
                let b = s.bird.route(&always);
                assert!(b.is_some(), "always VIP not at BIRD: {peer}");
            }
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(
        seen_before_rise > 0,
        "the session came up too late to observe the start:\n{}",
        s.d.log()
    );
    let b = s.wait_route(&always, "always", |_| true);
    assert_eq!(attr(&b, "community").as_deref(), Some("(65001,1)"), "{b}");
    let b = s.wait_route(&slow, "after rise", |_| true);
    assert_eq!(attr(&b, "community").as_deref(), Some("(65001,2)"), "{b}");
    // `slow`'s route, then End-of-RIB (one per family BIRD negotiated).
    let updates = s.updates_sent();
    assert!(updates >= 3, "{}", s.d.peer());
    assert!(s.bird.route(&dead).is_none());
    assert_eq!(s.d.vip("dead")["state_name"], "withdrawn");

    let log = s.d.log();
    let rise = line_of(&log, &format!("vip slow {slow}: withdrawn -> announced"));
    let eor = line_of(&log, "initial evaluation done");
    assert!(
        rise.is_some() && eor.is_some() && rise < eor,
        "log order: rise {rise:?}, End-of-RIB {eor:?}\n{log}"
    );
    assert_eq!(log.matches("initial evaluation done").count(), 1, "{log}");
    assert!(
        line_of(
            &log,
            &format!("vip always {always}: withdrawn -> announced")
        ) < rise,
        "{log}"
    );
}

#[test]
fn drain_file_pessimizes_within_one_interval() {
    let n = 9;
    let dir = TempDir::new("e2e-drainfile");
    let up = dir.path("up");
    let drain = dir.path("drain");
    std::fs::write(&up, "").unwrap();
    let p = prefix(n, 1);
    let mut pol = policy("withdraw");
    pol["lower_priority_file"] = json!(drain.display().to_string());
    let vips =
        json!([{"name": "web", "prefix": p, "check": flag_check(&up, 300, 1, 2), "policy": pol}]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);

    std::fs::write(&drain, "").unwrap();
    let t0 = Instant::now();
    let seen = poll(Duration::from_secs(3), || {
        (s.d.vip("web")["state_name"] == "pessimized").then(Instant::now)
    })
    .expect("never pessimized");
    // One check interval (300 ms) plus scheduling slack.
    let took = seen - t0;
    assert!(
        took < Duration::from_millis(650),
        "pessimized after {took:?}"
    );
    let v = s.d.vip("web");
    assert_eq!(v["drain_file"], true, "{v}");
    assert_eq!(v["drain"], true, "{v}");
    let b = s.wait_route(&p, "pessimized", is_pessimized);
    let at_bird = t0.elapsed();
    assert!(
        at_bird < Duration::from_millis(1200),
        "pessimized at BIRD after {at_bird:?}"
    );
    assert_eq!(attr(&b, "as_path"), Some(as_path(8)), "1 + 6 prepends: {b}");

    std::fs::remove_file(&drain).unwrap();
    s.wait_route(&p, "announced again", is_announced);
    assert_eq!(s.d.vip("web")["drain_file"], false);
}

#[test]
fn check_trigger_and_runtime_drain_through_the_api() {
    let n = 10;
    let dir = TempDir::new("e2e-api");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let p = prefix(n, 1);
    // A long interval: only the triggers below run the check in time.
    let vips = json!([{"name": "web", "prefix": p, "check": flag_check(&up, 20_000, 1, 1),
                       "policy": policy("lower_priority")}]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);

    let trigger = || {
        let r = s.d.request("POST", "/api/v1/vips/web/check").unwrap();
        assert_eq!(r.code, 200, "{}", r.body);
        r.json()
    };
    let r = trigger();
    assert_eq!(r["vip"], "web", "{r}");
    assert_eq!(r["results"]["exec"]["success"], true, "{r}");
    assert_eq!(r["result"]["success"], true, "{r}");
    assert_eq!(r["state"], "announced", "{r}");

    // fall 1: one failing trigger pessimizes at once.
    std::fs::remove_file(&up).unwrap();
    let r = trigger();
    assert_eq!(r["results"]["exec"]["success"], false, "{r}");
    assert_eq!(r["results"]["exec"]["details"]["exit_code"], 1, "{r}");
    assert_eq!(r["state"], "pessimized", "{r}");
    s.wait_route(&p, "pessimized by the trigger", is_pessimized);
    std::fs::write(&up, "").unwrap();
    assert_eq!(trigger()["state"], "announced");
    s.wait_route(&p, "announced by the trigger", is_announced);

    let r = s.d.request("POST", "/api/v1/vips/web/drain").unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"vip": "web", "drain": true, "state": "pessimized"})
    );
    s.wait_route(&p, "drained", is_pessimized);
    let v = s.d.vip("web");
    assert_eq!(
        (v["drain_api"].clone(), v["drain_file"].clone()),
        (json!(true), json!(false))
    );

    let r = s.d.request("DELETE", "/api/v1/vips/web/drain").unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"vip": "web", "drain": false, "state": "announced"})
    );
    s.wait_route(&p, "undrained", is_announced);

    let r = s.d.request("POST", "/api/v1/vips/nope/drain").unwrap();
    assert_eq!(r.code, 404, "{}", r.body);
    let r =
        s.d.request("POST", "/api/v1/vips/web/check?check=nope")
            .unwrap();
    assert_eq!(r.code, 404, "{}", r.body);
}

/// Polls BIRD every few ms after SIGTERM: when the route went, when the
/// session left Established.
fn watch_shutdown(
    s: &Setup,
    p: &str,
    limit: Duration,
) -> (Instant, Option<Duration>, Option<Duration>) {
    let t0 = Instant::now();
    s.d.signal("TERM");
    let (mut gone, mut down) = (None, None);
    while t0.elapsed() < limit && (gone.is_none() || down.is_none()) {
        let state = s.bird.bgp_state();
        let route = s.bird.route(p);
        let t = t0.elapsed();
        if down.is_none() && state.as_deref() != Some("Established") {
            down = Some(t);
        }
        if gone.is_none() && route.is_none() {
            gone = Some(t);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (t0, gone, down)
}

#[test]
fn sigterm_withdraws_then_ceases_after_shutdown_drain() {
    let n = 11;
    let p = prefix(n, 1);
    let vips = json!([{"name": "always", "prefix": p, "always": true}]);
    let mut s = Setup::start(n, vips, |c| c["bgp"]["shutdown_drain"] = json!("2s"));
    s.wait_established();
    s.wait_route(&p, "announced", |_| true);

    let (_, gone, down) = watch_shutdown(&s, &p, Duration::from_secs(6));
    let gone = gone.expect("route never withdrawn");
    let down = down.expect("session never closed");
    assert!(
        gone < Duration::from_millis(700),
        "withdrawn after {gone:?}"
    );
    // The withdraw precedes the NOTIFICATION by shutdown_drain (2 s).
    let gap = down.saturating_sub(gone);
    assert!(
        gap >= Duration::from_millis(1800) && gap < Duration::from_millis(2800),
        "withdraw at {gone:?}, session down at {down:?}"
    );
    let st =
        s.d.wait_exit(Duration::from_secs(3))
            .expect("pathosd did not exit");
    assert!(st.success(), "{st}\n{}", s.d.log());
    let proto = s
        .bird
        .birdc(&["show", "protocols", "all", "pathosd"])
        .unwrap();
    assert!(
        proto.contains("Administrative shutdown"),
        "BIRD did not get a Cease/Administrative Shutdown:\n{proto}"
    );
}

#[test]
fn sigterm_without_drain_removes_the_route_and_exits() {
    let n = 12;
    let p = prefix(n, 1);
    let vips = json!([{"name": "always", "prefix": p, "always": true}]);
    let mut s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&p, "announced", |_| true);
    // The session negotiated Graceful Restart (pathosd's default, BIRD's
    // `aware` default): the Cease must still take the route at once.
    let proto = s
        .bird
        .birdc(&["show", "protocols", "all", "pathosd"])
        .unwrap();
    let caps = &proto[proto.find("Neighbor capabilities").unwrap_or(0)..];
    assert!(caps.contains("Graceful restart"), "{proto}");
    // BIRD logs the messages it gets from here on.
    s.bird.birdc(&["debug", "pathosd", "{ packets }"]).unwrap();
    let (t0, gone, down) = watch_shutdown(&s, &p, Duration::from_secs(4));
    assert!(gone.expect("route never removed") < Duration::from_secs(1));
    assert!(down.expect("session never closed") < Duration::from_secs(1));
    // With no shutdown_drain the Cease alone ends the session and takes
    // the route (RFC 4271 §8.2.2): no withdrawing UPDATE before it.
    // (BIRD's `debug { packets }` logs "Got UPDATE", not a NOTIFICATION:
    // that is its "Received: ...".)
    let log = s.bird.log();
    assert!(
        log.contains("Received: Administrative shutdown"),
        "BIRD got no Cease:\n{log}"
    );
    assert!(
        !log.contains("Got UPDATE"),
        "BIRD got an UPDATE before the Cease:\n{log}"
    );
    let st =
        s.d.wait_exit(Duration::from_secs(2))
            .expect("pathosd did not exit");
    assert!(st.success(), "{st}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(s.d.log().contains("stopped"), "{}", s.d.log());
}

/// Sends SIGHUP and waits for the log line (`needle`) that says how it went.
fn reload(s: &Setup, needle: &str) {
    let before = s.d.log().matches(needle).count();
    s.d.signal("HUP");
    let ok = poll(Duration::from_secs(5), || {
        (s.d.log().matches(needle).count() > before).then_some(())
    });
    assert!(ok.is_some(), "no {needle:?} after SIGHUP:\n{}", s.d.log());
}

/// Waits until pathosd has sent `k` more KEEPALIVEs (1 s apart with hold
/// time 3 s): anything a reload would send has gone out by then.
fn wait_keepalives(s: &Setup, k: u64) {
    let ka = || s.d.peer()["messages_sent"]["keepalive"].as_u64().unwrap();
    let start = ka();
    assert!(poll(Duration::from_secs(k * 2 + 3), || (ka() >= start + k)
        .then_some(()))
    .is_some());
}

fn two_vips(n: u8, dir: &TempDir) -> Value {
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    json!([
        {"name": "a", "prefix": prefix(n, 1), "check": flag_check(&up, 300, 1, 2), "policy": policy("withdraw")},
        {"name": "b", "prefix": prefix(n, 2), "check": flag_check(&up, 300, 1, 2), "policy": policy("withdraw")}
    ])
}

#[test]
fn reload_with_unchanged_vips_sends_no_update() {
    let n = 13;
    let dir = TempDir::new("e2e-reload-same");
    let mut s = Setup::start(n, two_vips(n, &dir), |_| {});
    s.wait_established();
    s.wait_route(&prefix(n, 1), "a", is_announced);
    s.wait_route(&prefix(n, 2), "b", is_announced);
    let (updates, bird, vips) = (
        s.updates_sent(),
        s.bird_import_updates(),
        s.d.status()["vips"].clone(),
    );

    // Same VIPs, other API timeouts, an API token, another log level and
    // log format.
    let mut cfg = s.cfg.clone();
    cfg["api"]["idle_timeout"] = json!("100s");
    cfg["api"]["token"] = json!("0123456789abcdef0123");
    cfg["logging"]["level"] = json!("info");
    cfg["logging"]["timestamps"] = json!(false);
    s.d.write_config(&cfg);
    reload(&s, "reload: applied");
    wait_keepalives(&s, 2);

    assert_eq!(s.updates_sent(), updates, "{}", s.d.peer());
    assert_eq!(s.bird_import_updates(), bird);
    let after = s.d.status()["vips"].clone();
    for i in 0..2 {
        assert_eq!(after[i]["transitions"], vips[i]["transitions"]);
        assert_eq!(
            after[i]["last_transition_time"],
            vips[i]["last_transition_time"]
        );
        assert_eq!(after[i]["state_name"], "announced");
    }
    assert_eq!(s.d.peer()["flaps"], 0);
    // The log format waits for a restart and says so; the level is live:
    // the debug lines of the checks stop.
    let last = s.d.status()["last_reload"].clone();
    assert_eq!(
        last["needs_restart"],
        json!(["logging.timestamps"]),
        "{last}"
    );
    let log = s.d.log();
    assert!(
        log.contains("reload: logging.timestamps changed: applies after a restart"),
        "{log}"
    );
    assert!(log.contains("reload: api.token changed: applied"), "{log}");
    assert!(
        log.contains("reload: logging.level changed: applied"),
        "{log}"
    );
    let seen = log.len();
    wait_keepalives(&s, 2);
    let tail = s.d.log()[seen..].to_string();
    assert!(!tail.contains("check passed"), "{tail}");
    // The API serves with the new token at once: a change without it (or
    // with another) is refused, with it the request gets through (to a 404
    // for a VIP that does not exist, so nothing changes). Reads stay open.
    let api = s.d.api;
    let path = "/api/v1/vips/nosuch/drain";
    let code = |h: &str| http_with(api, "POST", path, h).map(|r| r.code);
    assert_eq!(code(""), Some(401));
    assert_eq!(
        code("Authorization: Bearer 0123456789abcdef0124\r\n"),
        Some(401)
    );
    assert_eq!(
        code("Authorization: Bearer 0123456789abcdef0123\r\n"),
        Some(404)
    );
    assert_eq!(s.d.get("/status").map(|r| r.code), Some(200));
    reload_globals_and_neighbors(&mut s, n, cfg);
}

/// Every setting is applied live or reported as needing a restart: the
/// classes of docs/config.md's Reload table that the first
/// reload above does not cover, in one more reload of the same daemon:
/// `api.listen` moves the HTTP server (the old address stops answering), a
/// neighbor's `required` alone and an added neighbor leave the BIRD session
/// alone (no flap, no UPDATE), `api.ubus_socket` is reported as needing a
/// restart, and a new `bgp.shutdown_drain` is what the next SIGTERM waits.
fn reload_globals_and_neighbors(s: &mut Setup, n: u8, mut cfg: Value) {
    let (updates, bird) = (s.updates_sent(), s.bird_import_updates());
    let old_api = s.d.api;
    let new_api = std::net::SocketAddr::from((support::daemon::ip(n, 9), old_api.port()));
    cfg["api"]["listen"] = json!(new_api.to_string());
    cfg["api"]["ubus_socket"] = json!("/nonexistent/ubus.sock");
    cfg["bgp"]["shutdown_drain"] = json!("1s");
    cfg["bgp"]["neighbors"][0]["required"] = json!(false);
    let spare = json!({
        "name": "spare",
        "address": support::daemon::ip(n, 8).to_string(),
        "peer_asn": cfg["bgp"]["neighbors"][0]["peer_asn"].clone(),
        "passive": true,
        "required": false
    });
    cfg["bgp"]["neighbors"]
        .as_array_mut()
        .expect("neighbors")
        .push(spare);
    s.d.write_config(&cfg);
    reload(s, "reload: applied");
    let log = s.d.log();
    for line in [
        "reload: api.listen changed: applied",
        "reload: bgp.shutdown_drain changed: applied",
        "reload: neighbors with a new `required`: bird",
        "reload: neighbors added: spare",
        "reload: api.ubus_socket changed: applies after a restart",
    ] {
        assert!(log.contains(line), "no {line:?}:\n{log}");
    }
    // The new address is bound before the old server stops: it answers at
    // once, and the old one no longer does.
    s.d.api = new_api;
    assert_eq!(s.d.get("/healthz").map(|r| r.code), Some(200), "{log}");
    let closed = poll(Duration::from_secs(3), || {
        support::daemon::http(old_api, "GET", "/healthz")
            .is_none()
            .then_some(())
    });
    assert!(closed.is_some(), "the old API address still answers");
    let st = s.d.status();
    assert_eq!(
        st["last_reload"]["needs_restart"],
        json!(["api.ubus_socket"]),
        "{st}"
    );
    let peers = st["peers"].as_array().expect("peers");
    assert_eq!(peers.len(), 2, "{st}");
    assert_eq!(
        (&peers[0]["name"], &peers[0]["required"]),
        (&json!("bird"), &json!(false))
    );
    assert_eq!(peers[1]["name"], "spare", "{st}");
    // The BIRD session was not restarted and nothing was re-sent.
    wait_keepalives(s, 2);
    assert_eq!(s.d.peer()["flaps"], 0, "{}", s.d.log());
    assert_eq!(s.updates_sent(), updates);
    assert_eq!(s.bird_import_updates(), bird);
    // shutdown_drain (0 at start, 1 s since the reload): the route goes at
    // once, the session about 1 s later.
    let (_, gone, down) = watch_shutdown(s, &prefix(n, 1), Duration::from_secs(5));
    let gone = gone.expect("route never withdrawn");
    let down = down.expect("session never closed");
    let gap = down.saturating_sub(gone);
    assert!(
        gap >= Duration::from_millis(800) && gap < Duration::from_millis(1800),
        "withdraw at {gone:?}, session down at {down:?}: the reloaded shutdown_drain (1 s) not applied"
    );
    let st =
        s.d.wait_exit(Duration::from_secs(3))
            .expect("pathosd did not exit");
    assert!(st.success(), "{st}\n{}", s.d.log());
}

#[test]
fn sighup_with_an_invalid_config_keeps_the_old_one() {
    let n = 14;
    let dir = TempDir::new("e2e-reload-bad");
    let s = Setup::start(n, two_vips(n, &dir), |_| {});
    s.wait_established();
    s.wait_route(&prefix(n, 1), "a", is_announced);
    s.wait_route(&prefix(n, 2), "b", is_announced);
    let (updates, bird) = (s.updates_sent(), s.bird_import_updates());
    // No reload yet: nothing to report.
    assert_eq!(s.d.status()["last_reload"], Value::Null);

    std::fs::write(s.d.config_path(), "{\"schema\": \"v1\",").unwrap();
    reload(&s, "reload: invalid JSON");
    // Valid JSON, invalid config: every error is logged.
    let mut cfg = s.cfg.clone();
    cfg["vips"][1]["check"]["timeout"] = json!("5s");
    cfg["vips"][0]["prefix"] = json!("not-a-prefix");
    s.d.write_config(&cfg);
    reload(&s, "vips[1].check.timeout");
    let log = s.d.log();
    assert!(log.contains("reload: vips[0].prefix"), "{log}");
    assert!(!log.contains("reload: applied"), "{log}");
    // ...and /status (and so ubus status, LuCI) says the reload was refused,
    // with the same errors, so a rejected Save & Apply does not look applied.
    let last = s.d.status()["last_reload"].clone();
    assert_eq!(last["result"], "rejected", "{last}");
    let errors: Vec<&str> = last["errors"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        errors.iter().any(|e| e.starts_with("vips[0].prefix"))
            && errors
                .iter()
                .any(|e| e.starts_with("vips[1].check.timeout")),
        "{last}"
    );
    errors
        .iter()
        .for_each(|e| assert!(log.contains(&format!("reload: {e}")), "{e}"));
    let rejected_at = last["time"].as_str().unwrap_or_default().to_string();
    assert!(rejected_at.ends_with('Z'), "{last}");

    wait_keepalives(&s, 1);
    assert_eq!(s.d.get("/healthz").unwrap().code, 200);
    assert_eq!(s.updates_sent(), updates);
    assert_eq!(s.bird_import_updates(), bird);
    assert!(s
        .bird
        .route(&prefix(n, 1))
        .is_some_and(|b| is_announced(&b)));
    assert!(s
        .bird
        .route(&prefix(n, 2))
        .is_some_and(|b| is_announced(&b)));
    // A valid file again: applied, no errors; the rejection is history.
    s.d.write_config(&s.cfg);
    reload(&s, "reload: applied");
    let last = s.d.status()["last_reload"].clone();
    assert_eq!(last["result"], "applied", "{last}");
    assert_eq!(last["errors"], json!([]), "{last}");
    assert!(
        last["time"].as_str().unwrap_or_default() >= rejected_at.as_str(),
        "{last}"
    );
    // The old config's checks still run and still decide.
    std::fs::remove_file(dir.path("up")).unwrap();
    s.wait_gone(&prefix(n, 1));
    s.wait_gone(&prefix(n, 2));
}

/// A response_jq nested 7,300 deep or a 50,000-term checks_policy
/// overflowed the stack while the reloaded file was checked, so SIGHUP
/// killed the daemon and its routes with it. Now each is a reload error:
/// the daemon stays up, BIRD keeps both routes, the old checks still decide.
#[test]
fn sighup_with_a_too_deep_or_too_long_expression_keeps_running() {
    let n = 29;
    let dir = TempDir::new("e2e-reload-deep");
    let mut s = Setup::start(n, two_vips(n, &dir), |_| {});
    s.wait_established();
    s.wait_route(&prefix(n, 1), "a", is_announced);
    s.wait_route(&prefix(n, 2), "b", is_announced);
    let (pid, updates, bird) = (s.d.pid(), s.updates_sent(), s.bird_import_updates());

    let mut cfg = s.cfg.clone();
    let deep = "(".repeat(7_300) + ".ok" + &")".repeat(7_300);
    cfg["vips"][0]["check"] = json!({
        "type": "http",
        "http": {"url": "http://127.0.0.1/health", "response_jq": deep}
    });
    s.d.write_config(&cfg);
    reload(&s, "reload: vips[0].check.http.response_jq: ");
    let mut cfg = s.cfg.clone();
    let mut long = "exec".to_string();
    long.push_str(&" && exec".repeat(49_999));
    cfg["vips"][1]["checks_policy"] = json!(long);
    s.d.write_config(&cfg);
    reload(&s, "reload: vips[1].checks_policy: column 1 of ");

    let log = s.d.log();
    assert!(
        log.contains("(14603 bytes): response_jq: longer than 4096 bytes (14603 bytes)"),
        "{log}"
    );
    assert!(
        log.contains("(399996 bytes): longer than 4096 bytes (399996 bytes)"),
        "{log}"
    );
    assert!(!log.contains("reload: applied"), "{log}");
    // Short lines: the values are quoted by a prefix only.
    assert!(log.lines().all(|l| l.len() < 1000), "{log}");

    wait_keepalives(&s, 1);
    assert!(s.d.try_exit().is_none(), "{}", s.d.log());
    assert_eq!(s.d.pid(), pid);
    assert_eq!(s.d.get("/healthz").unwrap().code, 200);
    assert_eq!(s.updates_sent(), updates);
    assert_eq!(s.bird_import_updates(), bird);
    for i in 1..=2 {
        assert!(s
            .bird
            .route(&prefix(n, i))
            .is_some_and(|b| is_announced(&b)));
    }
    // Still the old config's checks: removing the flag withdraws both.
    std::fs::remove_file(dir.path("up")).unwrap();
    s.wait_gone(&prefix(n, 1));
    s.wait_gone(&prefix(n, 2));
}

#[test]
fn sighup_with_one_vip_changed_restarts_only_that_vip() {
    let n = 15;
    let dir = TempDir::new("e2e-reload-one");
    let s = Setup::start(n, two_vips(n, &dir), |_| {});
    s.wait_established();
    let (pa, pb) = (prefix(n, 1), prefix(n, 2));
    s.wait_route(&pa, "a", is_announced);
    s.wait_route(&pb, "b", is_announced);
    let updates = s.updates_sent();
    let a_before = s.d.vip("a");

    // b's check runs another command (a check identity change) with rise
    // 4: it restarts withdrawn and comes back after 4 results.
    let mut cfg = s.cfg.clone();
    cfg["vips"][1]["check"]["rise"] = json!(4);
    cfg["vips"][1]["check"]["exec"]["args"][0] = json!("-f");
    s.d.write_config(&cfg);
    reload(&s, "reload: applied");
    let (mut b_gone, mut b_back) = (false, false);
    let end = Instant::now() + Duration::from_secs(8);
    while !b_back {
        assert!(Instant::now() < end, "b never came back:\n{}", s.d.log());
        let a = s.bird.route(&pa);
        assert!(a.as_deref().is_some_and(is_announced), "a moved: {a:?}");
        match s.bird.route(&pb) {
            None => b_gone = true,
            Some(_) if b_gone => b_back = true,
            Some(_) => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // One withdraw and one announcement of b; nothing for a.
    assert_eq!(s.updates_sent(), updates + 2, "{}", s.d.peer());
    let a = s.d.vip("a");
    assert_eq!(a["transitions"], a_before["transitions"]);
    assert_eq!(a["last_transition_time"], a_before["last_transition_time"]);
    let b = s.d.vip("b");
    assert_eq!(
        b["last_transition_reason"], "exec: rise threshold reached",
        "{b}"
    );
    let log = s.d.log();
    assert!(
        log.contains(&format!(
            "vip b {pb}: announced -> withdrawn (config changed)"
        )),
        "{log}"
    );
    let reload_line = line_of(&log, "reload: applied").unwrap();
    assert!(
        !log.lines().skip(reload_line).any(|l| l.contains("vip a ")),
        "{log}"
    );
}

#[test]
fn metrics_of_the_running_daemon_pass_promtool() {
    let n = 16;
    let dir = TempDir::new("e2e-metrics");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let p = prefix(n, 1);
    let mut check = flag_check(&up, 300, 1, 2);
    check["detailed_metrics"] = json!(true);
    let vips = json!([{"name": "web", "prefix": p, "check": check, "policy": policy("withdraw")},
                      {"name": "always", "prefix": prefix(n, 2), "always": true}]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);
    let r = s.d.get("/metrics").unwrap();
    assert_eq!(r.code, 200);
    let t = &r.body;
    for want in [
        format!("pathosd_vip_state{{vip=\"web\",nlri=\"{p}\"}} 1"),
        "bgp_peer_up{peer=\"bird\"} 1".to_string(),
        "bgp_routes_advertised{peer=\"bird\"} 2".to_string(),
        format!(
            "pathosd_check_exec_exit_code{{vip=\"web\",nlri=\"{p}\",check=\"exec\",type=\"exec\"}} 0"
        ),
        // exec checks are async (smol::process): the blocking pool is idle.
        "\npathosd_blocking_pool_workers 0\n".to_string(),
        "\npathosd_blocking_pool_jobs_total{result=\"run\"} 0\n".to_string(),
    ] {
        assert!(t.contains(&want), "no {want:?} in\n{t}");
    }
    promtool_check(t);
}

#[test]
fn bird_restart_gets_every_route_again_and_a_killed_pathosd_leaves_none() {
    let n = 18;
    let dir = TempDir::new("e2e-restart");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let (pa, pb) = (prefix(n, 1), prefix(n, 2));
    let vips = json!([
        {"name": "always", "prefix": pa, "always": true, "policy": policy("withdraw")},
        {"name": "web", "prefix": pb, "check": flag_check(&up, 300, 1, 2), "policy": policy("withdraw")}
    ]);
    let mut s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&pa, "always", is_announced);
    s.wait_route(&pb, "web", is_announced);
    let r = s.d.get("/readyz").unwrap();
    assert_eq!(r.code, 200, "{}", r.body);

    // A new BIRD knows nothing: pathosd sends both routes on the new session.
    s.bird.restart();
    s.wait_established();
    s.wait_route(&pa, "always after the BIRD restart", is_announced);
    s.wait_route(&pb, "web after the BIRD restart", is_announced);
    assert_eq!(s.d.peer()["flaps"], 1, "{}", s.d.peer());

    // Graceful restart is advertised with Restart Time 0: a crashed pathosd
    // leaves no stale route at BIRD.
    s.d.signal("KILL");
    assert!(s.d.wait_exit(Duration::from_secs(2)).is_some());
    let t0 = Instant::now();
    s.wait_gone(&pa);
    s.wait_gone(&pb);
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "routes kept {:?} after pathosd died",
        t0.elapsed()
    );
}

/// pathosd frozen (SIGSTOP: the kernel keeps the socket, nothing is sent):
/// its KEEPALIVEs are what keep the session, so BIRD's HoldTimer (3 s)
/// expires and the route goes (RFC 4271 §8.2.2, HoldTimer_Expires in
/// Established). Thawed, pathosd finds the session gone and brings it and
/// the route back. The real daemon, no test hook in the library.
#[test]
fn frozen_pathosd_lets_birds_hold_timer_expire_and_recovers() {
    let n = 28;
    let pa = prefix(n, 1);
    let vips = json!([
        {"name": "always", "prefix": pa, "always": true, "policy": policy("withdraw")}
    ]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&pa, "always", is_announced);
    s.d.signal("STOP");
    let t0 = Instant::now();
    s.wait_gone(&pa);
    let log = poll(Duration::from_secs(3), || {
        let l = s.bird.log();
        l.contains("Hold timer expired").then_some(l)
    });
    // Resume first so a failure leaves no stopped process behind for long.
    s.d.signal("CONT");
    assert!(log.is_some(), "BIRD's log: {}", s.bird.log());
    assert!(
        t0.elapsed() < Duration::from_secs(8),
        "route kept {:?} while pathosd was silent",
        t0.elapsed()
    );
    s.wait_established();
    s.wait_route(&pa, "always after the thaw", is_announced);
}

/// After a stall, back at once: BIRD with the router recipe's `error wait
/// time 0, 0` drops the frozen pathosd's session on its HoldTimer; on
/// SIGCONT pathosd finds its own KEEPALIVE long overdue, takes the
/// session's end for its own stall (not the peer's error, so no
/// error_wait_min back-off, though the session is young) and redials at
/// once. Before, the route came back 0.75-1.05 s after SIGCONT.
#[test]
fn thawed_pathosd_redials_at_once_and_its_route_is_back_within_400ms() {
    let n = 5;
    let a = support::daemon::addrs(n);
    let mut peer = support::bird::BirdPeer::new(a.peer, a.ours);
    peer.error_wait = (0, 0);
    let bird = support::bird::Bird::start(peer);
    let pa = prefix(n, 1);
    let vips = json!([
        {"name": "always", "prefix": pa, "always": true, "policy": policy("withdraw")}
    ]);
    let cfg = support::daemon::config(a, vips);
    let api = std::net::SocketAddr::from((a.ours, support::daemon::API_PORT));
    let d = support::daemon::Pathosd::start(&cfg, api);
    let s = Setup { a, cfg, d, bird };
    s.wait_established();
    s.wait_route(&pa, "always", is_announced);
    s.d.signal("STOP");
    let dropped = poll(Duration::from_secs(8), || {
        s.bird.log().contains("Hold timer expired").then_some(())
    });
    if dropped.is_none() {
        s.d.signal("CONT");
        panic!("BIRD kept the frozen session: {}", s.bird.log());
    }
    s.wait_gone(&pa);
    s.d.signal("CONT");
    let t0 = Instant::now();
    // BIRD tells no one when a route comes: asked every 5 ms (a birdc
    // call takes a few more), for at most 5 s.
    let mut back = None;
    while t0.elapsed() < Duration::from_secs(5) {
        if s.bird.route(&pa).is_some_and(|b| is_announced(&b)) {
            back = Some(t0.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let back = back.unwrap_or_else(|| panic!("route not back 5 s after SIGCONT:\n{}", s.d.log()));
    eprintln!("route back {back:?} after SIGCONT");
    assert!(
        back < Duration::from_millis(400),
        "route back {back:?} after SIGCONT:\n{}",
        s.d.log()
    );
    assert!(
        s.d.log()
            .contains("so this daemon had stood still: redialling at once"),
        "{}",
        s.d.log()
    );
}

#[test]
fn drain_then_withdraw_and_recovery_hold() {
    let n = 19;
    let dir = TempDir::new("e2e-policy");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let (pd, pr) = (prefix(n, 1), prefix(n, 2));
    let mut drain = policy("drain_then_withdraw");
    drain["drain_time"] = json!("1s");
    let mut hold = policy("withdraw");
    hold["recovery_hold"] = json!("1500ms");
    let vips = json!([
        {"name": "drain", "prefix": pd, "check": flag_check(&up, 200, 1, 1), "policy": drain},
        {"name": "hold", "prefix": pr, "check": flag_check(&up, 200, 1, 1), "policy": hold}
    ]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&pd, "drain announced", is_announced);
    s.wait_route(&pr, "hold announced", is_announced);

    std::fs::remove_file(&up).unwrap();
    s.wait_route(&pd, "pessimized for drain_time", is_pessimized);
    let t1 = Instant::now();
    s.wait_gone(&pd);
    let drained = t1.elapsed();
    assert!(
        drained >= Duration::from_millis(700) && drained < Duration::from_millis(2500),
        "withdrawn {drained:?} after the pessimization (drain_time 1 s)"
    );
    s.wait_gone(&pr);

    // Healthy again: drain_then_withdraw announces at once, recovery_hold
    // only after 1.5 s of health.
    std::fs::write(&up, "").unwrap();
    let t2 = Instant::now();
    s.wait_route(&pd, "drain back", is_announced);
    let back = t2.elapsed();
    s.wait_route(&pr, "hold back", is_announced);
    let held = t2.elapsed();
    assert!(
        back < Duration::from_millis(1000),
        "drain back after {back:?}"
    );
    assert!(
        held >= Duration::from_millis(1400) && held < Duration::from_millis(3500),
        "recovery_hold 1.5 s, announced after {held:?}"
    );
}

#[test]
fn sighup_adds_and_removes_vips() {
    let n = 20;
    let dir = TempDir::new("e2e-reload-addrm");
    let s = Setup::start(n, two_vips(n, &dir), |_| {});
    s.wait_established();
    let (pa, pb, pc) = (prefix(n, 1), prefix(n, 2), prefix(n, 3));
    s.wait_route(&pa, "a", is_announced);
    s.wait_route(&pb, "b", is_announced);
    let a_before = s.d.vip("a");

    let mut cfg = s.cfg.clone();
    let mut c = cfg["vips"][1].clone();
    c["name"] = json!("c");
    c["prefix"] = json!(pc);
    cfg["vips"] = json!([cfg["vips"][0].clone(), c]);
    s.d.write_config(&cfg);
    reload(&s, "reload: applied");
    s.wait_gone(&pb);
    s.wait_route(&pc, "c", is_announced);
    assert!(s.bird.route(&pa).is_some_and(|b| is_announced(&b)));
    let a = s.d.vip("a");
    assert_eq!(a["transitions"], a_before["transitions"]);
    let names: Vec<Value> = s.d.status()["vips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].clone())
        .collect();
    assert_eq!(names, [json!("a"), json!("c")]);
    assert!(
        s.d.log().contains(&format!(
            "vip b {pb}: announced -> withdrawn (removed from config)"
        )),
        "{}",
        s.d.log()
    );
    let r = s.d.get("/api/v1/vips/b").unwrap();
    assert_eq!(r.code, 404, "{}", r.body);

    // c moves to another prefix: the old one is withdrawn (and logged as
    // such), the new one announced.
    let pd = prefix(n, 4);
    cfg["vips"][1]["prefix"] = json!(pd);
    s.d.write_config(&cfg);
    reload(&s, "reload: applied");
    s.wait_gone(&pc);
    s.wait_route(&pd, "c at its new prefix", is_announced);
    assert!(
        s.d.log().contains(&format!(
            "vip c {pc}: announced -> withdrawn (config changed)"
        )),
        "{}",
        s.d.log()
    );

    // The route changes one engine step decides (here a reload)
    // leave in as few UPDATEs as the attributes allow: 100 `always` VIPs
    // with the same attributes added by one reload reach BIRD in one
    // UPDATE, and their removal is one UPDATE of withdrawals.
    let many: Vec<Value> = (1..=100u8)
        .map(|k| json!({"name": format!("m{k}"), "prefix": format!("10.{}.250.{k}/32", 200 + n), "always": true}))
        .collect();
    let count = |want: u32| {
        let ok = poll(Duration::from_secs(10), || {
            (s.bird.route_count("master4") == Some(want)).then_some(())
        });
        assert!(
            ok.is_some(),
            "BIRD has {:?} routes, not {want}:\n{}",
            s.bird.route_count("master4"),
            s.d.log()
        );
    };
    count(2);
    let before = s.updates_sent();
    let mut more = cfg.clone();
    more["vips"].as_array_mut().expect("vips").extend(many);
    s.d.write_config(&more);
    reload(&s, "reload: applied");
    count(102);
    wait_keepalives(&s, 1);
    assert_eq!(s.updates_sent(), before + 1, "{}", s.d.peer());
    s.d.write_config(&cfg);
    reload(&s, "reload: applied");
    count(2);
    wait_keepalives(&s, 1);
    assert_eq!(s.updates_sent(), before + 2, "{}", s.d.peer());
}

#[test]
fn second_sigterm_during_shutdown_drain_exits_at_once() {
    let n = 21;
    let p = prefix(n, 1);
    let vips = json!([{"name": "always", "prefix": p, "always": true}]);
    let mut s = Setup::start(n, vips, |c| c["bgp"]["shutdown_drain"] = json!("4s"));
    s.wait_established();
    s.wait_route(&p, "announced", |_| true);
    s.d.signal("TERM");
    s.wait_gone(&p);
    assert!(s.d.try_exit().is_none(), "exited before shutdown_drain");
    let t0 = Instant::now();
    s.d.signal("TERM");
    let st =
        s.d.wait_exit(Duration::from_secs(2))
            .expect("second SIGTERM ignored");
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert!(st.success(), "{st}");
}

#[test]
fn ipv6_vips_over_the_ipv4_session() {
    let n = 22;
    let dir = TempDir::new("e2e-v6");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let (p6, c6) = ("2001:db8:22:1::1/128", "2001:db8:22:2::/64");
    let vips = json!([
        {"name": "v6", "prefix": p6, "always": true, "policy": policy("withdraw")},
        {"name": "net6", "prefix": c6, "check": flag_check(&up, 300, 1, 1), "policy": policy("lower_priority")}
    ]);
    let s = Setup::start(n, vips, |c| {
        c["router"]["local_address_ipv6"] = json!("2001:db8:22::1")
    });
    s.wait_established();
    let b = s.wait_route(p6, "v6", is_announced);
    assert_eq!(
        attr(&b, "next_hop").as_deref(),
        Some("2001:db8:22::1"),
        "{b}"
    );
    s.wait_route(c6, "net6", is_announced);
    std::fs::remove_file(&up).unwrap();
    s.wait_route(c6, "net6 pessimized", is_pessimized);
    assert_eq!(s.bird.route_count("master6"), Some(2));
}

/// Which of `prefixes` BIRD has, in one `show route` of both tables (one
/// CLI command: BIRD answers it between two BGP reads, never inside one).
fn bird_has(s: &Setup, prefixes: &[&str]) -> Vec<bool> {
    let out = s
        .bird
        .birdc(&["show", "route", "table", "master4", "table", "master6"])
        .unwrap_or_default();
    let lines: Vec<&str> = out.lines().collect();
    prefixes
        .iter()
        .map(|p| lines.iter().any(|l| l.starts_with(p)))
        .collect()
}

/// The time BIRD took route `prefix` in (`timeformat route iso long ms`:
/// "2026-12-04 20:55:00.123"), as milliseconds of the day.
fn bird_route_ms(s: &Setup, prefix: &str) -> u64 {
    let block = s.bird.route(prefix).unwrap_or_default();
    let line = block.lines().find(|l| l.starts_with(prefix)).unwrap_or("");
    let time = line
        .split_once("[pathosd ")
        .and_then(|(_, r)| r.split_once(']'))
        .and_then(|(t, _)| t.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("no time in {line:?}"));
    let (hms, ms) = time.split_once('.').expect("milliseconds");
    let p: Vec<u64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    ((p[0] * 60 + p[1]) * 60 + p[2]) * 1000 + ms.parse::<u64>().unwrap()
}

/// Polls BIRD until it has all of `prefixes` (`want`) or none of them,
/// asserting that no answer on the way had some and not others.
fn wait_together(s: &Setup, prefixes: &[&str], want: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let has = bird_has(s, prefixes);
        assert!(
            has.iter().all(|h| *h == has[0]),
            "BIRD had {has:?} of {prefixes:?}: the prefixes of one VIP moved apart\n{}",
            s.d.log()
        );
        if has[0] == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "BIRD never had {prefixes:?} {}\n{}",
            if want { "announced" } else { "withdrawn" },
            s.d.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A VIP with an IPv4 and an IPv6 prefix and one check: BIRD has both or
/// neither at every moment, they come in the same millisecond or so (one
/// step of pathosd, far less than the check's 300 ms interval), they go
/// together, and they come back together.
#[test]
fn a_vips_ipv4_and_ipv6_prefixes_come_and_go_together() {
    let n = 26;
    let dir = TempDir::new("e2e-dual");
    let up = dir.path("up");
    let p4 = prefix(n, 1);
    let p6 = "2001:db8:26::1/128";
    let both = [p4.as_str(), p6];
    let vips = json!([{
        "name": "dual", "prefix": both, "check": flag_check(&up, 300, 1, 1),
        "policy": policy("withdraw")
    }]);
    let s = Setup::start(n, vips, |c| {
        c["router"]["local_address_ipv6"] = json!("2001:db8:26::ff")
    });
    s.wait_established();
    for round in 0..2 {
        std::fs::write(&up, "").unwrap();
        wait_together(&s, &both, true);
        let b4 = s.wait_route(&p4, "announced", is_announced);
        let b6 = s.wait_route(p6, "announced", is_announced);
        assert_eq!(attr(&b6, "next_hop").as_deref(), Some("2001:db8:26::ff"));
        let (t4, t6) = (bird_route_ms(&s, &p4), bird_route_ms(&s, p6));
        assert!(
            t4.abs_diff(t6) < 100,
            "round {round}: {p4} at {t4} ms, {p6} at {t6} ms\n{b4}\n{b6}"
        );
        let v = s.d.vip("dual");
        assert_eq!(v["prefix"], json!(p4), "{v}");
        assert_eq!(v["prefixes"], json!(both), "{v}");
        assert_eq!(v["transitions"]["announced"], round + 1, "{v}");
        std::fs::remove_file(&up).unwrap();
        wait_together(&s, &both, false);
        assert_eq!(s.d.vip("dual")["state_name"], "withdrawn");
    }
}

/// The "Since" column BIRD shows for the session (milliseconds).
fn bird_since(s: &Setup) -> String {
    let out = s
        .bird
        .birdc(&["show", "protocols", "pathosd"])
        .unwrap_or_default();
    out.lines()
        .find(|l| l.starts_with("pathosd"))
        .and_then(|l| l.split_whitespace().nth(4))
        .unwrap_or_default()
        .to_string()
}

/// A changed neighbor restarts its session: Cease first, then a new
/// session, so BIRD has the routes back within its own reconnect delays
/// (error wait 1 s, connect retry 1 s) instead of after a HoldTimer.
#[test]
fn neighbor_change_restarts_the_session_and_routes_come_back() {
    let n = 23;
    let dir = TempDir::new("e2e-reload-nb");
    let s = Setup::start(n, two_vips(n, &dir), |_| {});
    s.wait_established();
    let (pa, pb) = (prefix(n, 1), prefix(n, 2));
    s.wait_route(&pa, "a", is_announced);
    s.wait_route(&pb, "b", is_announced);
    let vips = s.d.status()["vips"].clone();

    let since = bird_since(&s);
    let mut cfg = s.cfg.clone();
    cfg["bgp"]["neighbors"][0]["hold_time"] = json!("6s");
    s.d.write_config(&cfg);
    let t0 = Instant::now();
    reload(&s, "reload: applied");
    // A new session (BIRD's "Since" moves), after our Cease.
    let restarted = poll(Duration::from_secs(5), || {
        (bird_since(&s) != since && s.bird.established()).then_some(())
    });
    assert!(
        restarted.is_some(),
        "the session was not restarted:\n{}",
        s.d.log()
    );
    let log = s.d.log();
    let cease = line_of(
        &log,
        "sending NOTIFICATION Cease / Administrative Shutdown: \"configuration changed\"",
    );
    let start = line_of(&log, "(re)starting with the new configuration");
    assert!(cease.is_some() && cease < start, "{log}");
    let back = poll(Duration::from_secs(10), || {
        (s.bird.route(&pa).is_some_and(|b| is_announced(&b))
            && s.bird.route(&pb).is_some_and(|b| is_announced(&b)))
        .then(|| t0.elapsed())
    });
    let back = back.unwrap_or_else(|| panic!("routes never came back:\n{}", s.d.log()));
    assert!(
        back < Duration::from_millis(2900),
        "routes back only after {back:?} (the hold time is 3 s):\n{}",
        s.d.log()
    );
    // The VIPs themselves did not change.
    let after = s.d.status()["vips"].clone();
    for i in 0..2 {
        assert_eq!(after[i]["transitions"], vips[i]["transitions"]);
    }
}

#[test]
fn a_passive_bird_started_later_gets_the_routes() {
    let n = 24;
    let a = support::daemon::addrs(n);
    let cfg = support::daemon::config(
        a,
        json!([{"name": "always", "prefix": prefix(n, 1), "always": true, "policy": policy("withdraw")}]),
    );
    let d = support::daemon::Pathosd::start(&cfg, std::net::SocketAddr::from((a.ours, 59179)));
    // pathosd has tried and failed to connect before BIRD exists.
    let tried = poll(Duration::from_secs(5), || {
        (!d.peer()["last_error"].is_null()).then_some(())
    });
    assert!(tried.is_some(), "{}", d.peer());
    let mut peer = support::bird::BirdPeer::new(a.peer, a.ours);
    peer.passive = true;
    let bird = support::bird::Bird::start(peer);
    let got = poll(Duration::from_secs(10), || bird.route(&prefix(n, 1)));
    let b = got.unwrap_or_else(|| panic!("{:?}\n{}", bird.bgp_state(), d.log()));
    assert!(is_announced(&b), "{b}");
}

/// require_local_address: a VIP whose address is on no interface stays
/// withdrawn however healthy its service, and /status and /metrics say why;
/// one whose address is on `lo` is announced and reported assigned.
#[test]
fn local_address_guard_keeps_a_vip_withdrawn_and_says_why() {
    let n = 25;
    let missing = prefix(n, 1);
    let vips = json!([
        {"name": "missing", "prefix": missing, "require_local_address": true,
         "check": {"type": "exec", "interval": "200ms", "timeout": "150ms", "rise": 1, "fall": 5,
                   "exec": {"command": "/bin/true"}}},
        {"name": "onlo", "prefix": "127.0.0.1/32", "require_local_address": true,
         "local_interface": "lo",
         "check": {"type": "exec", "interval": "200ms", "timeout": "150ms", "rise": 1, "fall": 1,
                   "exec": {"command": "/bin/true"}}}
    ]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.d.wait_vip_state("onlo", "announced", Duration::from_secs(5));
    let onlo = s.d.vip("onlo");
    assert_eq!(onlo["local_address_assigned"], json!(true), "{onlo}");

    // Several check rounds later (counters saturate at fall, 5) the guarded
    // VIP is still withdrawn.
    let m = poll(Duration::from_secs(5), || {
        let v = s.d.vip("missing");
        (v["checks"][0]["consecutive_fail"].as_u64().unwrap_or(0) >= 3).then_some(v)
    })
    .expect("the guarded check never failed three times");
    assert_eq!(m["state_name"], json!("withdrawn"), "{m}");
    assert_eq!(m["local_address_assigned"], json!(false), "{m}");
    assert_eq!(
        m["checks"][0]["last_check_detail"],
        json!(format!(
            "VIP address {} is not configured on a local interface",
            missing.trim_end_matches("/32")
        )),
        "{m}"
    );
    assert!(s.bird.route(&missing).is_none());
    let metrics = s.d.get("/metrics").unwrap().body;
    assert!(
        metrics.contains(&format!(
            "pathosd_vip_local_address_assigned{{vip=\"missing\",nlri=\"{missing}\"}} 0"
        )),
        "{metrics}"
    );
    assert!(metrics
        .contains("pathosd_vip_local_address_assigned{vip=\"onlo\",nlri=\"127.0.0.1/32\"} 1"));
}

/// Polls BIRD's route for `prefix` for `window` after the reload whose log
/// line is `needle` (SIGHUP sent here), asserting at every poll that the
/// route is there; returns the last route block seen once `done` holds for
/// it and the window has passed.
fn hup_never_withdrawn(
    s: &Setup,
    prefix: &str,
    window: Duration,
    done: impl Fn(&str) -> bool,
) -> String {
    let before = s.d.log().matches("reload: applied").count();
    s.d.signal("HUP");
    let start = Instant::now();
    let mut applied_at: Option<Instant> = None;
    let mut polls = 0u32;
    let last = loop {
        let route = s.bird.route(prefix);
        let Some(r) = route else {
            panic!(
                "{prefix} withdrawn {:?} after SIGHUP (poll {polls}):\n{}",
                start.elapsed(),
                s.d.log()
            );
        };
        polls += 1;
        if applied_at.is_none() && s.d.log().matches("reload: applied").count() > before {
            applied_at = Some(Instant::now());
        }
        if done(&r) && applied_at.is_some_and(|t| t.elapsed() >= window) {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "reload not applied or route never as expected: {r}\n{}",
            s.d.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(polls > 20, "too few polls of BIRD ({polls}) to see a gap");
    last
}

/// A reload that changes only a VIP's check timing (interval,
/// timeout, rise, fall) or its route attributes (communities, prepends)
/// keeps the VIP's state: BIRD never loses the route (the old code
/// withdrew it until the restarted checks reached rise again), and new
/// attributes reach BIRD as a re-announcement. The checks still run with
/// the new settings afterwards.
#[test]
fn sighup_with_new_timing_or_attributes_never_withdraws_a_healthy_vip() {
    let n = 27;
    let dir = TempDir::new("e2e-reload-keep");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let p = prefix(n, 1);
    let vips = json!([
        {"name": "web", "prefix": p, "check": flag_check(&up, 400, 3, 2), "policy": policy("withdraw")}
    ]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);
    let before = s.d.vip("web");

    // Timing only: restarted checks would need 3 results (~1 s) to rise.
    let mut cfg = s.cfg.clone();
    let chk = &mut cfg["vips"][0]["check"];
    chk["interval"] = json!("300ms");
    chk["timeout"] = json!("200ms");
    chk["rise"] = json!(4);
    chk["fall"] = json!(1);
    s.d.write_config(&cfg);
    let r = hup_never_withdrawn(&s, &p, Duration::from_millis(2500), is_announced);
    assert!(is_announced(&r), "{r}");
    let log = s.d.log();
    assert!(log.contains("reload: VIPs kept, new timing: web"), "{log}");
    let web = s.d.vip("web");
    assert_eq!(web["transitions"], before["transitions"], "{web}");
    assert_eq!(web["last_transition_time"], before["last_transition_time"]);
    assert_eq!(web["state_name"], "announced");

    // Attributes: new communities and prepends, re-announced in place.
    let runs = |v: &Value| v["checks"][0]["total_ok"].as_u64().unwrap();
    let runs_before = runs(&s.d.vip("web"));
    cfg["vips"][0]["policy"]["announce"]["communities"] = json!(["65001:200", "65001:201"]);
    cfg["vips"][0]["policy"]["announce"]["as_path_prepend"] = json!(3);
    s.d.write_config(&cfg);
    let r = hup_never_withdrawn(&s, &p, Duration::from_millis(1000), |r| {
        attr(r, "community").as_deref() == Some("(65001,200) (65001,201)")
    });
    assert_eq!(
        attr(&r, "as_path").as_deref(),
        Some(as_path(4).as_str()),
        "{r}"
    );
    let log = s.d.log();
    assert!(
        log.contains("reload: VIPs kept, new policy or attributes: web"),
        "{log}"
    );
    let web = s.d.vip("web");
    assert_eq!(web["transitions"], before["transitions"], "{web}");
    assert_eq!(web["communities"], json!(["65001:200", "65001:201"]));
    assert!(runs(&web) > runs_before, "{web}");

    // The checks kept running with the new fall (1): one failure withdraws.
    std::fs::remove_file(&up).unwrap();
    s.wait_gone(&p);
    let web = s.d.vip("web");
    assert_eq!(
        web["last_transition_reason"], "exec: fall threshold reached",
        "{web}"
    );
}

/// `bgp.graceful_shutdown` against BIRD: a drained VIP's route carries
/// GRACEFUL_SHUTDOWN (65535:0, RFC 8326) next to its own communities, an
/// announced one does not; at SIGTERM with shutdown_drain every route is
/// first re-announced with it, in place, and only after the drain
/// withdrawn, then the Cease.
#[test]
fn graceful_shutdown_community_on_pessimized_routes_and_before_the_stop() {
    let n = 3;
    let (web, always) = (prefix(n, 1), prefix(n, 2));
    let vips = json!([
        {"name": "web", "prefix": web, "always": true, "policy": policy("lower_priority")},
        {"name": "always", "prefix": always, "always": true,
         "policy": {"announce": {"communities": ["65001:7"]}}}
    ]);
    let mut s = Setup::start(n, vips, |c| {
        c["bgp"]["graceful_shutdown"] = json!(true);
        c["bgp"]["shutdown_drain"] = json!("2s");
    });
    s.wait_established();
    s.wait_route(&web, "announced", is_announced);
    let communities = |b: &str| attr(b, "community").unwrap_or_default();
    let has_gshut = |b: &str| communities(b).contains("(65535,0)");

    let r = s.d.request("POST", "/api/v1/vips/web/drain").unwrap();
    assert_eq!(r.code, 200, "{}", r.body);
    let b = s.wait_route(&web, "drained, with GRACEFUL_SHUTDOWN", has_gshut);
    assert_eq!(attr(&b, "as_path"), Some(as_path(8)), "{b}");
    assert_eq!(
        communities(&b),
        "(65001,100) (65001,666) (65535,0)",
        "pessimized communities plus GRACEFUL_SHUTDOWN: {b}"
    );
    let b = s.bird.route(&always).expect("always VIP at BIRD");
    assert_eq!(communities(&b), "(65001,7)", "announced: {b}");

    let t0 = Instant::now();
    s.d.signal("TERM");
    // Both routes tagged while still there, then both gone, then the session.
    let (mut tagged, mut gone, mut down) = ([None; 2], [None; 2], None);
    while t0.elapsed() < Duration::from_secs(6) && (gone.contains(&None) || down.is_none()) {
        for (k, p) in [&web, &always].into_iter().enumerate() {
            match s.bird.route(p) {
                Some(b) if has_gshut(&b) && tagged[k].is_none() => tagged[k] = Some(t0.elapsed()),
                Some(_) => {}
                None if gone[k].is_none() => gone[k] = Some(t0.elapsed()),
                None => {}
            }
        }
        if down.is_none() && s.bird.bgp_state().as_deref() != Some("Established") {
            down = Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let log = s.d.log();
    for k in 0..2 {
        let (t, g) = (tagged[k], gone[k]);
        let t = t.unwrap_or_else(|| panic!("route {k} never tagged: gone {g:?}\n{log}"));
        let g = g.unwrap_or_else(|| panic!("route {k} never withdrawn\n{log}"));
        assert!(t < Duration::from_millis(700), "route {k} tagged at {t:?}");
        // Withdrawn after the drain (2 s) from the tagging, not before.
        assert!(
            g >= t + Duration::from_millis(1800) && g < Duration::from_millis(3500),
            "route {k} tagged at {t:?}, withdrawn at {g:?}\n{log}"
        );
    }
    // The session lives through the drain; the withdrawals and the Cease
    // follow each other within milliseconds, closer than birdc can poll.
    let down = down.expect("session never closed");
    assert!(
        down >= Duration::from_millis(1800),
        "session down at {down:?}, during the drain"
    );
    let st =
        s.d.wait_exit(Duration::from_secs(3))
            .expect("pathosd did not exit");
    assert!(st.success(), "{st}\n{}", s.d.log());
    assert!(
        s.d.log()
            .contains("every route tagged GRACEFUL_SHUTDOWN (65535:0)"),
        "{}",
        s.d.log()
    );
    let proto = s
        .bird
        .birdc(&["show", "protocols", "all", "pathosd"])
        .unwrap();
    assert!(
        proto.contains("Administrative shutdown"),
        "BIRD did not get a Cease/Administrative Shutdown:\n{proto}"
    );
}
