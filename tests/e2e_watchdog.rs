//! procd's instance watchdog, on the in-tree ubus broker with a stand-in
//! procd (the `service` object and its `watchdog` method, answering as
//! procd's service_handle_watchdog does): the real daemon, given
//! PATHOSD_PROCD_WATCHDOG as the init script gives it, pings at a sixth of
//! the time, from its owner loop, so the pings stop while the daemon is
//! stopped (SIGSTOP) and resume with it; a daemon without the variable
//! sends nothing and says nothing; a failing ping is logged once. The
//! client without an object (`api.ubus_socket` off) pings as well.

mod support;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pathosd::ubus::blob::{table_from_json, table_to_json, BlobMsgType};
use pathosd::ubus::msg::{FrameBuf, Message, MethodSig, MsgType, UbusStatus};
use serde_json::{json, Value};
use support::daemon::{config, Pathosd};
use support::ubus_broker::{Broker, BrokerConfig};
use support::{poll, test_ip, Addrs, TempDir};

type Calls = Arc<Mutex<Vec<(Instant, Value)>>>;

/// procd's `service` object, with the one method these tests need. It
/// knows service `pathosd` with the instances given; any other name is
/// answered NOT_FOUND, as procd does.
struct Procd {
    calls: Calls,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Procd {
    fn start(sock: &Path, instances: &[&str]) -> Procd {
        let mut s = UnixStream::connect(sock).unwrap();
        // Short reads, so that the thread sees `stop`.
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut fb = FrameBuf::new();
        let stop = Arc::new(AtomicBool::new(false));
        let hello = support::ubus::read_blocking(&mut s, &mut fb, &stop, "stand-in procd").unwrap();
        assert_eq!(hello.header.ty, MsgType::Hello);
        // procd's service_watchdog_policy.
        let sig = MethodSig::new(
            "watchdog",
            &[
                ("mode", BlobMsgType::Int32),
                ("name", BlobMsgType::String),
                ("timeout", BlobMsgType::Int32),
                ("instance", BlobMsgType::String),
            ],
        );
        s.write_all(&Message::add_object(1, "service", &[sig]).encode().unwrap())
            .unwrap();
        let mut objid = None;
        loop {
            let m = support::ubus::read_blocking(&mut s, &mut fb, &stop, "stand-in procd").unwrap();
            match m.header.ty {
                MsgType::Data => objid = m.objid(),
                MsgType::Status => break,
                _ => {}
            }
        }
        let objid = objid.expect("service registered");
        let calls = Calls::default();
        let (c, st) = (calls.clone(), stop.clone());
        let known: Vec<String> = instances.iter().map(|i| i.to_string()).collect();
        let thread = std::thread::spawn(move || {
            while let Some(m) = support::ubus::read_blocking(&mut s, &mut fb, &st, "stand-in procd")
            {
                if m.header.ty != MsgType::Invoke || m.method() != Some("watchdog") {
                    continue;
                }
                let args = m.data().map(table_to_json).unwrap_or(json!({}));
                c.lock().unwrap().push((Instant::now(), args.clone()));
                let (seq, peer) = (m.header.seq, m.header.peer);
                let found = args["name"] == "pathosd"
                    && known.iter().any(|i| args["instance"] == i.as_str());
                let status = if found {
                    let reply = json!({"name": args["name"], "instance": args["instance"],
                                       "mode": 1, "timeout": 3});
                    let d = Message::data_reply(seq, peer, objid, table_from_json(&reply).unwrap());
                    let _ = s.write_all(&d.encode().unwrap());
                    UbusStatus::Ok
                } else {
                    UbusStatus::NotFound
                };
                let st = Message::status_msg(seq, peer, status, Some(objid));
                let _ = s.write_all(&st.encode().unwrap());
            }
        });
        Procd {
            calls,
            stop,
            thread: Some(thread),
        }
    }

    fn calls(&self) -> Vec<(Instant, Value)> {
        self.calls.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

impl Drop for Procd {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A daemon with one `always` VIP on the broker at `sock` (or with ubus off), its
/// environment `env`; its BGP neighbor never answers, which does not matter
/// here.
fn daemon(n: u8, sock: Option<&Path>, env: &[(&str, &str)]) -> Pathosd {
    let a = Addrs {
        ours: test_ip(n),
        peer: test_ip(n + 1),
    };
    let vip = format!("10.{}.0.1/32", 200 + n);
    let mut cfg = config(a, json!([{"name": "web", "prefix": vip, "always": true}]));
    let api = std::net::SocketAddr::from((a.ours, support::free_tcp_port(a.ours)));
    cfg["api"]["listen"] = json!(api.to_string());
    if let Some(s) = sock {
        cfg["api"]["ubus_socket"] = json!(s.display().to_string());
    }
    Pathosd::start_with(&cfg, api, None, env)
}

/// Waits (bounded by `limit`) for the stand-in to have seen `n` pings.
fn wait_pings(p: &Procd, n: usize, limit: Duration, d: &Pathosd) {
    let seen = poll(limit, || (p.count() >= n).then_some(()));
    assert!(
        seen.is_some(),
        "{} pings of {n} within {limit:?}:\n{}",
        p.count(),
        d.log()
    );
}

/// With a watchdog time of 3 s the pings come every 500 ms, carry exactly
/// the service and the instance, stop while the daemon is stopped and
/// come back when it continues.
#[test]
fn pings_from_the_owner_loop_stop_when_it_stalls() {
    let dir = TempDir::new("e2e-watchdog");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let procd = Procd::start(&sock, &["instance1"]);
    let t0 = Instant::now();
    let d = daemon(
        1,
        Some(&sock),
        &[("PATHOSD_PROCD_WATCHDOG", "pathosd instance1 3")],
    );

    // The first ping as soon as the client is up, then one per 500 ms.
    wait_pings(&procd, 6, Duration::from_secs(10), &d);
    let calls = procd.calls();
    let first = calls[0].0 - t0;
    assert!(first < Duration::from_secs(2), "first ping after {first:?}");
    for (_, args) in &calls {
        // mode or timeout would make procd take the watchdog as the
        // daemon's own and ignore the init script's from then on.
        assert_eq!(*args, json!({"name": "pathosd", "instance": "instance1"}));
    }
    for w in calls[1..].windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(
            gap >= Duration::from_millis(400) && gap <= Duration::from_millis(900),
            "gap {gap:?} between pings, expected ~500 ms:\n{}",
            d.log()
        );
    }
    let log = d.log();
    assert_eq!(
        log.matches("procd watchdog on: pinging service pathosd instance instance1 every 500 ms; procd restarts pathosd after 3 s without a ping").count(),
        1,
        "{log}"
    );
    assert!(!log.contains("WARN"), "{log}");

    // Stopped: no ping for 2 s (four periods). A ping the client had
    // taken before the stop may still arrive within the first moment.
    d.signal("STOP");
    let stopped = Instant::now();
    let settle = stopped + Duration::from_millis(100);
    let during = poll(Duration::from_secs(2), || {
        procd
            .calls()
            .iter()
            .find(|(t, _)| *t > settle)
            .map(|(t, _)| *t - stopped)
    });
    d.signal("CONT");
    assert!(
        during.is_none(),
        "a ping {during:?} after SIGSTOP:\n{}",
        d.log()
    );

    // Running again: pings resume at once (the owner's timer is overdue).
    let resumed = Instant::now();
    let back = poll(Duration::from_secs(2), || {
        procd
            .calls()
            .iter()
            .find(|(t, _)| *t > resumed)
            .map(|(t, _)| *t - resumed)
    });
    assert!(back.is_some(), "no ping after SIGCONT:\n{}", d.log());
    assert!(back.unwrap() < Duration::from_millis(600), "{back:?}");
}

/// Not under procd's watchdog (no variable): nothing is sent, nothing is
/// logged about it, however long the daemon runs.
#[test]
fn no_variable_no_pings() {
    let dir = TempDir::new("e2e-watchdog-off");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let procd = Procd::start(&sock, &["instance1"]);
    let d = daemon(3, Some(&sock), &[]);
    // The daemon's object registered: its client is up, and has had the
    // time to ping.
    let up = poll(Duration::from_secs(5), || {
        d.log()
            .contains("ubus: registered object pathosd")
            .then_some(())
    });
    assert!(up.is_some(), "{}", d.log());
    let ping = poll(Duration::from_millis(1500), || {
        (procd.count() > 0).then_some(())
    });
    assert!(ping.is_none(), "pinged procd:\n{}", d.log());
    assert!(!d.log().contains("watchdog"), "{}", d.log());
}

/// An instance procd does not know (NOT_FOUND), and a bus without procd
/// (no `service`): the pings go on being tried, and the failure is logged
/// once, not once per ping.
#[test]
fn a_failing_ping_is_logged_once() {
    let dir = TempDir::new("e2e-watchdog-fail");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let procd = Procd::start(&sock, &["instance1"]);
    let d = daemon(
        5,
        Some(&sock),
        &[("PATHOSD_PROCD_WATCHDOG", "pathosd other 1")],
    );
    // Every ~167 ms: 6 tries in about a second.
    wait_pings(&procd, 6, Duration::from_secs(10), &d);
    let log = d.log();
    assert_eq!(
        log.matches("procd watchdog: `ubus call service watchdog` failed (")
            .count(),
        1,
        "{log}"
    );
    drop(procd);

    let dir2 = TempDir::new("e2e-watchdog-noprocd");
    let sock2 = dir2.sock();
    let _broker2 = Broker::start(&sock2, BrokerConfig::default()).unwrap();
    let d2 = daemon(
        7,
        Some(&sock2),
        &[("PATHOSD_PROCD_WATCHDOG", "pathosd instance1 1")],
    );
    let said = poll(Duration::from_secs(5), || {
        d2.log()
            .contains("procd watchdog: no object `service` on ubus")
            .then_some(())
    });
    assert!(said.is_some(), "{}", d2.log());
    // Tried again at every ping (about six a second), said once.
    let again = poll(Duration::from_millis(1200), || {
        (d2.log().matches("procd watchdog: ").count() > 1).then_some(())
    });
    assert!(again.is_none(), "{}", d2.log());
}

/// `api.ubus_socket` off: the client that only pings has no object and
/// still reaches procd.
#[test]
fn a_client_without_object_pings() {
    let dir = TempDir::new("e2e-watchdog-bare");
    let sock = dir.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let procd = Procd::start(&sock, &["instance1"]);
    let cfg = pathosd::ubus::UbusConfig {
        socket_path: sock.clone(),
        object: String::new(),
        methods: Vec::new(),
        ..pathosd::ubus::UbusConfig::default()
    };
    let (client, handle, _requests) = pathosd::ubus::UbusClient::new(cfg);
    pathosd::rt::block_on(async {
        let task = pathosd::rt::spawn(client.run());
        handle.ping_procd("pathosd", "instance1");
        let end = Instant::now() + Duration::from_secs(5);
        while procd.count() < 1 {
            assert!(Instant::now() < end, "no ping from a client without object");
            smol::Timer::after(Duration::from_millis(10)).await;
        }
        handle.ping_procd("pathosd", "instance1");
        while procd.count() < 2 {
            assert!(Instant::now() < end, "no second ping");
            smol::Timer::after(Duration::from_millis(10)).await;
        }
        assert_eq!(handle.status().objid, None);
        assert_eq!(handle.status().registrations, 0);
        handle.shutdown();
        drop(task);
    });
    assert_eq!(
        procd.calls()[1].1,
        json!({"name": "pathosd", "instance": "instance1"})
    );
}
