//! The real daemon on the in-tree ubus broker (api.ubus_socket pointing at
//! it): `ubus call pathosd status` answers from the running daemon, a VIP
//! transition arrives as a `pathosd.vip` event at a listener, SIGTERM's
//! withdrawals and session stops arrive as events before the object goes
//! (also on a slow broker, with calls in flight, which are answered), and
//! triggers are coalesced and rate-limited without holding up `status`.
//! The caller and listener are built from pathosd's own ubus codec.
// Scenarios against real peers and whole configurations read as one
// script, top to bottom: the workspace's function-length lint is for
// shipped code.
#![allow(clippy::too_many_lines)]

mod support;

use pathosd::logging::utc_timestamp;
use serde_json::{json, Value};
use smol::Timer;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};
use support::daemon::{addrs, config, is_announced, policy, Pathosd, Setup, API_PORT};
use support::ubus::{Caller, STEP};
use support::ubus_broker::{Broker, BrokerConfig};
use support::TempDir;

/// Removes the event's `time` and checks it is an RFC 3339 UTC time of the
/// last minute, as /status writes times.
fn take_time(ev: &mut Value) -> String {
    let t = ev
        .as_object_mut()
        .and_then(|o| o.remove("time"))
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("event without time: {ev}"));
    let now = SystemTime::now();
    let (lo, hi) = (
        utc_timestamp(now - Duration::from_secs(60)),
        utc_timestamp(now + Duration::from_secs(1)),
    );
    // One fixed-width format: the strings order like the times.
    assert!(lo <= t && t <= hi, "time {t} not within [{lo}, {hi}]");
    t
}

#[test]
fn ubus_status_from_the_real_daemon_and_vip_events() {
    let n = 17;
    let dir = TempDir::new("e2e-ubus");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let p = format!("10.{}.0.1/32", 200 + n);
    let check = json!({"type": "exec", "interval": "300ms", "timeout": "200ms", "rise": 1, "fall": 2,
                       "exec": {"command": "/usr/bin/test", "args": ["-e", up.display().to_string()]}});
    let vips = json!([{"name": "web", "prefix": p, "check": check, "policy": policy("withdraw")}]);
    let mut s = Setup::start(n, vips, |c| {
        c["api"]["ubus_socket"] = json!(sock.display().to_string())
    });
    s.wait_established();
    s.wait_route(&p, "announced", is_announced);

    smol::block_on(async {
        let mut listener = Caller::connect(&sock).await;
        listener.listen("pathosd.*").await;
        let mut caller = Caller::connect(&sock).await;

        // The daemon registers `pathosd` after its start; wait for it.
        let end = Instant::now() + STEP;
        let status = loop {
            match caller.call("pathosd", "status", json!({})).await {
                Ok(Some(v)) => break v,
                Err(4) if Instant::now() < end => Timer::after(Duration::from_millis(50)).await,
                r => panic!("status: {r:?}\n{}", s.d.log()),
            };
        };
        assert_eq!(status["asn"], 65001, "{status}");
        assert_eq!(status["router_id"], s.a.ours.to_string(), "{status}");
        assert_eq!(status["vips"][0]["name"], "web", "{status}");
        assert_eq!(status["vips"][0]["state_name"], "announced", "{status}");
        assert_eq!(status["peers"][0]["name"], "bird", "{status}");
        assert_eq!(
            status["peers"][0]["session_state"], "established",
            "{status}"
        );

        let vip = caller
            .call("pathosd", "vip", json!({"name": "web"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(vip["prefix"], p.as_str(), "{vip}");

        // The target goes: fall 2, then a pathosd.vip event.
        std::fs::remove_file(&up).unwrap();
        let (id, mut ev) = loop {
            let (id, ev) = listener.next_event().await;
            if id == "pathosd.vip" {
                break (id, ev);
            }
        };
        assert_eq!(id, "pathosd.vip");
        take_time(&mut ev);
        assert_eq!(
            ev,
            json!({"vip": "web", "prefix": p, "from": "announced", "to": "withdrawn",
                   "reason": "exec: fall threshold reached"})
        );

        // A runtime drain through ubus answers from the daemon too.
        std::fs::write(&up, "").unwrap();
        let (_, ev) = loop {
            let e = listener.next_event().await;
            if e.0 == "pathosd.vip" {
                break e;
            }
        };
        assert_eq!(ev["to"], "announced", "{ev}");
        let r = caller
            .call("pathosd", "drain", json!({"vip": "web", "enable": true}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            json!({"vip": "web", "drain": true, "state": "pessimized"})
        );
        let (_, mut ev) = listener.next_event().await;
        take_time(&mut ev);
        assert_eq!(ev["to"], "pessimized", "{ev}");
        assert_eq!(ev["reason"], "drain enabled via API", "{ev}");
        s.wait_route(&p, "drained via ubus", support::daemon::is_pessimized);

        // SIGTERM: the withdrawal and the session stop are events too, sent
        // before the object is removed (the daemon exits right after).
        s.d.signal("TERM");
        let (mut vip_ev, mut peer_ev) = (None, None);
        while vip_ev.is_none() || peer_ev.is_none() {
            let (id, mut ev) = listener.next_event().await;
            take_time(&mut ev);
            match id.as_str() {
                "pathosd.vip" => vip_ev = Some(ev),
                "pathosd.peer" if ev["to"] == "idle" => peer_ev = Some(ev),
                _ => {}
            }
        }
        assert_eq!(
            vip_ev.unwrap(),
            json!({"vip": "web", "prefix": p, "from": "pessimized", "to": "withdrawn",
                   "reason": "pathosd shutting down"})
        );
        let peer_ev = peer_ev.unwrap();
        assert_eq!(peer_ev["peer"], "bird", "{peer_ev}");
        assert_eq!(peer_ev["from"], "established", "{peer_ev}");
    });
    let st = s.d.wait_exit(Duration::from_secs(10));
    assert!(st.is_some_and(|st| st.success()), "{st:?}\n{}", s.d.log());
    // No VIP names a service or an interface: no watch of procd or netifd.
    assert!(!s.d.log().contains("ubus: watching"), "{}", s.d.log());
}

/// Lines written to the exec check's run log so far.
fn runs(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |t| t.lines().count())
}

/// An exec check that appends a line to `file` on each run, then `extra`.
fn counting_check(file: &Path, extra: &str) -> Value {
    json!({"type": "exec", "interval": "60s", "timeout": "3s", "rise": 1, "fall": 1,
           "exec": {"command": "/bin/sh",
                    "args": ["-c", format!("echo run >> '{}'{extra}", file.display())]}})
}

/// The ubus client and method server against the real daemon, without BGP (the neighbor has
/// no one listening): the time in events queued while ubusd was away, a flood
/// of slow `check` calls next to `status`, the per-VIP trigger rate limit,
/// what caller-supplied names do to the log, and `check` on an `always` VIP.
#[test]
fn triggers_logs_and_event_times_against_the_real_daemon() {
    let n = 30;
    let dir = TempDir::new("e2e-ubus-triggers");
    let sock = dir.sock();
    let (slow_runs, fast_runs) = (dir.path("slow-runs"), dir.path("fast-runs"));
    let prefix = |i: u8| format!("10.{}.{i}.1/32", 200 + n);
    let vips = json!([
        {"name": "slow", "prefix": prefix(1), "check": counting_check(&slow_runs, "; sleep 0.9"),
         "policy": policy("withdraw")},
        {"name": "fast", "prefix": prefix(2), "check": counting_check(&fast_runs, ""),
         "policy": policy("withdraw")},
        {"name": "steady", "prefix": prefix(3), "always": true, "policy": policy("withdraw")}
    ]);
    let a = addrs(n);
    let mut cfg = config(a, vips);
    cfg["api"]["ubus_socket"] = json!(sock.display().to_string());
    let d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));

    // 10.3: the start-up transition is queued while there is no ubusd; it
    // arrives later with the time of the change, the one /status shows.
    d.wait_vip_state("fast", "announced", Duration::from_secs(10));
    let changed = d.vip("fast")["last_transition_time"]
        .as_str()
        .unwrap()
        .to_string();
    let later = support::poll(Duration::from_secs(5), || {
        (utc_timestamp(SystemTime::now() - Duration::from_secs(2)) > changed).then_some(())
    });
    assert!(later.is_some());
    let broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let ev = support::poll(Duration::from_secs(15), || {
        broker
            .sent_events()
            .into_iter()
            .find(|(id, ev)| id == "pathosd.vip" && ev["vip"] == "fast")
            .map(|(_, ev)| ev)
    })
    .unwrap_or_else(|| panic!("no event for fast\n{}", d.log()));
    assert_eq!(ev["to"], "announced", "{ev}");
    assert_eq!(ev["time"], changed.as_str(), "{ev}");

    smol::block_on(async {
        let mut caller = Caller::connect(&sock).await;
        let end = Instant::now() + STEP;
        while caller.lookup("pathosd").await.is_err() {
            assert!(
                Instant::now() < end,
                "pathosd never registered\n{}",
                d.log()
            );
            Timer::after(Duration::from_millis(50)).await;
        }

        // 10.1: 25 concurrent `check` calls of a 0.9 s check; `status` answers
        // within 100 ms every time meanwhile.
        let before = runs(&slow_runs);
        let mut callers = Vec::new();
        for _ in 0..25 {
            callers.push(Caller::connect(&sock).await);
        }
        let calls: Vec<_> = callers
            .into_iter()
            .map(|mut c| {
                smol::spawn(async move { c.call("pathosd", "check", json!({"vip": "slow"})).await })
            })
            .collect();
        let mut slowest = Duration::ZERO;
        for i in 0..10 {
            let t = Instant::now();
            let v = caller.call("pathosd", "status", json!({})).await;
            assert!(matches!(v, Ok(Some(_))), "status {i}: {v:?}\n{}", d.log());
            slowest = slowest.max(t.elapsed());
        }
        assert!(
            slowest < Duration::from_millis(100),
            "status took {slowest:?}"
        );
        let (mut answered, mut busy) = (0, 0);
        for c in calls {
            match c.await {
                Ok(Some(v)) => {
                    assert_eq!(v["vip"], "slow", "{v}");
                    answered += 1;
                }
                Err(9) => busy += 1,
                r => panic!("check: {r:?}"),
            }
        }
        assert!(answered >= 1 && answered + busy == 25, "{answered} {busy}");
        // The callers that got through share one run (two if one came late).
        let flood_runs = runs(&slow_runs) - before;
        assert!((1..=2).contains(&flood_runs), "{flood_runs} runs");

        // 500 triggers as fast as they are answered run the check at
        // most BURST times plus one per second elapsed.
        let before = runs(&fast_runs);
        let t0 = Instant::now();
        let (mut ran, mut limited) = (0u32, 0u32);
        for _ in 0..500 {
            match caller
                .call("pathosd", "check", json!({"vip": "fast"}))
                .await
            {
                Ok(Some(_)) => ran += 1,
                Err(9) => limited += 1,
                r => panic!("check: {r:?}"),
            }
        }
        let elapsed = t0.elapsed();
        let fast = runs(&fast_runs) - before;
        let bound = pathosd::daemon::triggers::BURST as usize + elapsed.as_secs() as usize + 1;
        eprintln!("500 triggers in {elapsed:?}: {fast} runs; slowest status {slowest:?}");
        assert!(fast >= 1 && fast <= bound, "{fast} runs in {elapsed:?}");
        assert_eq!(ran as usize, fast);
        assert_eq!(ran + limited, 500);
        // HTTP triggers share the limit: 429 with Retry-After.
        let r = d.request("POST", "/api/v1/vips/fast/check").unwrap();
        if r.code != 200 {
            assert_eq!(r.code, 429, "{}", r.body);
            assert!(
                r.body.contains("too many triggers for VIP fast"),
                "{}",
                r.body
            );
        }

        // Logs: caller-supplied names are logged only once found,
        // and cut short.
        let huge = "x".repeat(900_000);
        let r = caller
            .call("pathosd", "drain", json!({"vip": huge, "enable": true}))
            .await;
        assert_eq!(r, Err(4));
        let r = caller.call("pathosd", "check", json!({"vip": huge})).await;
        assert_eq!(r, Err(4));
        let r = caller
            .call("pathosd", "check", json!({"vip": "steady", "check": huge}))
            .await;
        assert_eq!(r, Err(4));
        let r = d
            .request("POST", "/api/v1/vips/..%2F..%2Fetc%2Fpasswd/drain")
            .unwrap();
        assert_eq!(r.code, 404, "{}", r.body);
        let r = caller
            .call("pathosd", "drain", json!({"vip": "fast", "enable": true}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r["state"], "pessimized", "{r}");

        // `check` on an `always` VIP: it is there, with no checks to run,
        // and says so (not "Not found"), over ubus and HTTP alike.
        let none = json!({
            "vip": "steady",
            "result": {
                "success": true,
                "detail": "VIP steady has no checks to run: it is always announced",
                "duration_ms": 0.0,
                "timed_out": false,
                "details": {}
            },
            "results": {},
            "state": "announced"
        });
        let r = caller
            .call("pathosd", "check", json!({"vip": "steady"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r, none);
        let r = d.request("POST", "/api/v1/vips/steady/check").unwrap();
        assert_eq!(r.code, 200, "{}", r.body);
        assert_eq!(r.json(), none);
        // A check of it by name: it has none of that name.
        let r = caller
            .call("pathosd", "check", json!({"vip": "steady", "check": "web"}))
            .await;
        assert_eq!(r, Err(4));
    });
    let log = d.log();
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest < 400,
        "a log line of {longest} bytes: {}",
        log.lines()
            .find(|l| l.len() == longest)
            .unwrap_or("")
            .get(..400)
            .unwrap_or("")
    );
    // The refused triggers of the flood and of the 500 are not one line each.
    let info = log
        .lines()
        .filter(|l| !l.contains(" DEBUG ") && (l.contains("trigger") || l.contains("refus")))
        .count();
    assert!(info < 40, "{info} trigger lines at info level or above");
    let drains: Vec<&str> = log.lines().filter(|l| l.contains("drain on")).collect();
    assert_eq!(drains.len(), 1, "{drains:?}");
    assert!(drains[0].contains("VIP \"fast\": pessimized"), "{drains:?}");
}

/// `ubus call pathosd reload` answers with the reload's outcome, the init
/// script's only way to learn it. A valid file that moves `api.listen` to
/// an address another socket holds is applied but for the API, which stays
/// on its old address with its old settings: the answer, `last_reload`
/// (/status) and the log say "partially_applied" and why. Every later
/// reload, by ubus or SIGHUP, tries the address again; once it is free the
/// reload is applied and the API moves. Without BGP (nobody listens on the
/// neighbor's address).
#[test]
fn a_reload_whose_api_address_is_taken_is_partly_applied_and_says_so() {
    let dir = TempDir::new("e2e-ubus-api-taken");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let a = support::Addrs {
        ours: support::test_ip(1),
        peer: support::test_ip(2),
    };
    let vips = json!([{"name": "one", "prefix": "10.251.0.1/32", "always": true}]);
    let mut cfg = config(a, vips);
    cfg["api"]["ubus_socket"] = json!(sock.display().to_string());
    let old_api = SocketAddr::from((a.ours, API_PORT));
    let mut d = Pathosd::start(&cfg, old_api);

    // Another program holds the address the new file moves the API to.
    let taken = std::net::TcpListener::bind((a.ours, 0)).unwrap();
    let new_api = taken.local_addr().unwrap();
    cfg["api"]["listen"] = json!(new_api.to_string());
    cfg["api"]["token"] = json!("0123456789abcdef0123");
    cfg["vips"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "two", "prefix": "10.251.0.2/32", "always": true}));
    d.write_config(&cfg);
    let stays = format!("the API stays on http://{old_api} with its old settings");
    let not_applied = |v: &Value| {
        assert_eq!(v["result"], "partially_applied", "{v}");
        let errors = v["errors"].as_array().cloned().unwrap_or_default();
        assert_eq!(errors.len(), 1, "{v}");
        let e = errors[0].as_str().unwrap_or_default();
        assert!(
            e.starts_with(&format!("api.listen {new_api}: cannot listen (")) && e.ends_with(&stays),
            "{v}"
        );
    };

    let reload = |expect_applied: bool| {
        smol::block_on(async {
            let mut caller = Caller::connect(&sock).await;
            let end = Instant::now() + STEP;
            loop {
                match caller.call("pathosd", "reload", json!({})).await {
                    Ok(Some(v)) => {
                        assert_eq!(v["reloaded"], true, "{v}");
                        if expect_applied {
                            assert_eq!(v["result"], "applied", "{v}");
                            assert_eq!(v["errors"], json!([]), "{v}");
                        }
                        break v;
                    }
                    Err(4) if Instant::now() < end => {
                        Timer::after(Duration::from_millis(50)).await;
                    }
                    r => panic!("reload: {r:?}\n{}", d.log()),
                }
            }
        })
    };
    let v = reload(false);
    not_applied(&v);
    // The rest of the file is applied; the old API answers, without the
    // new token (its old settings), and says the same.
    let st = d.status();
    not_applied(&st["last_reload"]);
    assert_eq!(st["last_reload"]["time"], v["time"], "{st}");
    assert_eq!(st["vips"][1]["name"], "two", "{st}");
    assert_eq!(
        support::daemon::http(old_api, "POST", "/api/v1/vips/nosuch/drain").map(|r| r.code),
        Some(404)
    );
    let log = d.log();
    assert!(log.contains("reload: VIPs added: two"), "{log}");
    assert!(
        log.contains("reload: partially applied") && !log.contains("reload: applied"),
        "{log}"
    );

    // SIGHUP with the same file: tried again, still taken, said again.
    let count = |log: &str| log.matches("reload: partially applied").count();
    let before = count(&d.log());
    d.signal("HUP");
    let again = support::poll(Duration::from_secs(5), || {
        (count(&d.log()) > before).then_some(())
    });
    assert!(again.is_some(), "{}", d.log());
    not_applied(&d.status()["last_reload"]);

    // Freed: the same file is applied, the API moves with its new token.
    drop(taken);
    reload(true);
    d.api = new_api;
    assert_eq!(d.get("/healthz").map(|r| r.code), Some(200));
    assert_eq!(
        support::daemon::http(new_api, "POST", "/api/v1/vips/nosuch/drain").map(|r| r.code),
        Some(401)
    );
    let closed = support::poll(Duration::from_secs(3), || {
        support::daemon::http(old_api, "GET", "/healthz")
            .is_none()
            .then_some(())
    });
    assert!(closed.is_some(), "the old API address still answers");
    assert_eq!(d.status()["last_reload"]["result"], "applied");
    d.signal("TERM");
    let st = d.wait_exit(Duration::from_secs(10));
    assert!(st.is_some_and(|st| st.success()), "{st:?}\n{}", d.log());
}

/// SIGTERM just after a burst of `check` calls on a slow check, with
/// `pathosd.vip` listened to, on a broker slow to come to the daemon's socket
/// (as a busy ubusd on a router's one CPU is): both withdrawals reach the
/// listener before the object goes, and every call still in flight gets an
/// answer instead of waiting out its timeout.
#[test]
fn sigterm_after_a_burst_of_calls_sends_every_withdrawal() {
    let n = 6;
    let dir = TempDir::new("e2e-ubus-stop");
    let sock = dir.sock();
    let broker = Broker::start(
        &sock,
        BrokerConfig {
            latency: Duration::from_millis(50),
            ..BrokerConfig::default()
        },
    )
    .unwrap();
    // The first run passes at once (the VIP comes up); a later one says it
    // started, then takes 3 s: the burst's run is going at the SIGTERM.
    let (ran, started) = (dir.path("ran"), dir.path("started"));
    let script = format!(
        "if [ -e '{r}' ]; then : > '{s}'; sleep 3; fi; : > '{r}'",
        r = ran.display(),
        s = started.display()
    );
    let check = json!({"type": "exec", "interval": "60s", "timeout": "5s", "rise": 1, "fall": 1,
                       "exec": {"command": "/bin/sh", "args": ["-c", script]}});
    let prefix = |i: u8| format!("10.{}.{i}.1/32", 200 + n);
    let vips = json!([
        {"name": "slow", "prefix": prefix(1), "check": check, "policy": policy("withdraw")},
        {"name": "steady", "prefix": prefix(2), "always": true, "policy": policy("withdraw")}
    ]);
    let a = addrs(n);
    let mut cfg = config(a, vips);
    cfg["api"]["ubus_socket"] = json!(sock.display().to_string());
    let mut d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
    d.wait_vip_state("slow", "announced", Duration::from_secs(10));

    smol::block_on(async {
        let mut listener = Caller::connect(broker.path()).await;
        listener.listen("pathosd.vip").await;
        let end = Instant::now() + STEP;
        while listener.lookup("pathosd").await.is_err() {
            assert!(
                Instant::now() < end,
                "pathosd never registered\n{}",
                d.log()
            );
            Timer::after(Duration::from_millis(50)).await;
        }
        let mut callers = Vec::new();
        for _ in 0..12 {
            callers.push(Caller::connect(broker.path()).await);
        }
        let calls: Vec<_> = callers
            .into_iter()
            .map(|mut c| {
                smol::spawn(async move { c.call("pathosd", "check", json!({"vip": "slow"})).await })
            })
            .collect();
        let going = support::poll(STEP, || started.exists().then_some(()));
        assert!(
            going.is_some(),
            "the triggered run did not start\n{}",
            d.log()
        );

        d.signal("TERM");
        let mut withdrawn = Vec::new();
        while withdrawn.len() < 2 {
            let (id, mut ev) = listener.next_event().await;
            assert_eq!(id, "pathosd.vip");
            take_time(&mut ev);
            assert_eq!(ev["to"], "withdrawn", "{ev}");
            assert_eq!(ev["reason"], "pathosd shutting down", "{ev}");
            withdrawn.push(ev["vip"].as_str().unwrap_or_default().to_string());
        }
        withdrawn.sort();
        assert_eq!(withdrawn, ["slow", "steady"]);
        // Each call is answered within the callers' bound on a wait: 9 when
        // the stop cut it short (or it was refused as too many), 4 when it
        // reached the broker after the object went.
        let mut cut = 0;
        for c in calls {
            match c.await {
                Err(9) => cut += 1,
                Err(4) => {}
                r => panic!("check: {r:?}\n{}", d.log()),
            }
        }
        assert!(cut >= 1, "{}", d.log());
    });
    let st = d.wait_exit(Duration::from_secs(10));
    assert!(st.is_some_and(|st| st.success()), "{st:?}\n{}", d.log());
    assert!(
        d.log().contains("calls in flight answered 9"),
        "{}",
        d.log()
    );
}

/// A reload asked of a daemon that is stopping (its shutdown_drain under
/// way: what an opkg upgrade's start meets, right after the old package's
/// stop) is not taken and says so with UNKNOWN_ERROR, as every request
/// then; INVALID_ARGUMENT would have the init script report a rejected
/// file.
#[test]
fn a_reload_while_stopping_is_not_a_rejected_file() {
    let dir = TempDir::new("e2e-ubus-stopping");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let a = support::Addrs {
        ours: support::test_ip(7),
        peer: support::test_ip(8),
    };
    let vips = json!([{"name": "one", "prefix": "10.252.0.1/32", "always": true}]);
    let mut cfg = config(a, vips);
    cfg["api"]["ubus_socket"] = json!(sock.display().to_string());
    cfg["bgp"]["shutdown_drain"] = json!("3s");
    let mut d = Pathosd::start(&cfg, SocketAddr::from((a.ours, API_PORT)));
    let answer = smol::block_on(async {
        let mut caller = Caller::connect(&sock).await;
        // Registered: status answers.
        let end = Instant::now() + STEP;
        while caller.call("pathosd", "status", json!({})).await.is_err() {
            assert!(Instant::now() < end, "no pathosd object:\n{}", d.log());
            Timer::after(Duration::from_millis(50)).await;
        }
        d.signal("TERM");
        let end = Instant::now() + STEP;
        while !d.log().contains("shutting down") {
            assert!(Instant::now() < end, "no stop:\n{}", d.log());
            Timer::after(Duration::from_millis(20)).await;
        }
        caller.call("pathosd", "reload", json!({})).await
    });
    // UNKNOWN_ERROR (9), not INVALID_ARGUMENT (2).
    assert_eq!(answer, Err(9), "{}", d.log());
    let st = d.wait_exit(Duration::from_secs(10));
    assert!(st.is_some_and(|s| s.success()), "{st:?}\n{}", d.log());
    assert!(!d.log().contains("reload failed"), "{}", d.log());
}
