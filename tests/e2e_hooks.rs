//! The real daemon's hotplug.d hooks: real scripts under a temporary hooks
//! directory, a real BIRD, `pathosd run`. The scripts run in file-name
//! order with the event in their environment and a sequence number, as
//! hotplug-call runs them (a link to a script runs, a failing script does
//! not stop the next, dot files and directories do not run); one that
//! outlives `hooks.timeout` is killed with its children; a full queue drops
//! events and /metrics, /status and `ubus call pathosd status` count them.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use support::daemon::Setup;
use support::ubus::{Caller, STEP};
use support::ubus_broker::{Broker, BrokerConfig};
use support::{poll, TempDir};

fn flag_check(flag: &Path) -> Value {
    json!({
        "type": "exec",
        "interval": "100ms",
        "timeout": "80ms",
        "rise": 1,
        "fall": 1,
        "exec": {"command": "/usr/bin/test", "args": ["-e", flag.display().to_string()]}
    })
}

fn script(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), format!("#!/bin/sh\n{body}\n")).unwrap();
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{}", pid.trim())).exists()
}

#[test]
fn hooks_run_in_order_with_the_event_and_are_killed_on_timeout() {
    support::init_log();
    let tmp = TempDir::new("e2e-hooks");
    let hooks = tmp.path("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let log = tmp.path("log");
    let pids = tmp.path("pids");
    // Written out of order: the runner sorts them as hotplug-call does.
    script(
        &hooks,
        "20-second",
        &format!("echo \"second $SEQ\" >> {}", log.display()),
    );
    script(
        &hooks,
        "10-first",
        &format!(
            "echo \"first $SEQ $ACTION $VIP $PREFIX $STATE $REASON\" >> {}",
            log.display()
        ),
    );
    // hotplug-call goes on after a failing script and runs a link to one;
    // it runs no dot file and no directory.
    // It also sends a hook's output nowhere: never into the daemon's log.
    script(
        &hooks,
        "12-fails",
        "echo hook-stdout-mark; echo hook-stderr-mark >&2; exit 3",
    );
    let linked = tmp.path("linked.sh");
    std::fs::write(
        &linked,
        format!("echo \"linked $SEQ $0\" >> {}\n", log.display()),
    )
    .unwrap();
    std::os::unix::fs::symlink(&linked, hooks.join("15-link")).unwrap();
    script(
        &hooks,
        ".hidden",
        &format!("echo hidden >> {}", log.display()),
    );
    std::fs::create_dir_all(hooks.join("17-dir")).unwrap();
    // A child that would sleep on after its script: the whole group dies.
    script(
        &hooks,
        "30-slow",
        &format!("sleep 60 & echo \"$$ $!\" >> {}\nwait", pids.display()),
    );
    let up = tmp.path("up");
    std::fs::write(&up, "").unwrap();
    let prefix = "10.221.0.1/32";
    // Two prefixes: PREFIX names both, the transition's first.
    let both = format!("{prefix} 10.221.0.2/32");
    let vips = json!([{"name": "svc", "prefix": [prefix, "10.221.0.2/32"], "check": flag_check(&up), "policy": {"fail_action": "withdraw"}}]);
    let s = Setup::start(1, vips, |c| {
        c["hooks"] = json!({"dir": hooks.display().to_string(), "timeout": "300ms"});
    });
    s.wait_established();
    s.wait_route(prefix, "announced", |_| true);
    std::fs::remove_file(&up).unwrap();
    s.wait_gone(prefix);

    // Both events ran every script: the slow one's kill lets the next in.
    let got = poll(Duration::from_secs(5), || {
        let l = lines(&log);
        (l.len() >= 6).then_some(l)
    })
    .unwrap_or_else(|| panic!("hooks did not run: {:?}\n{}", lines(&log), s.d.log()));
    let link = hooks.join("15-link");
    assert_eq!(got.len(), 6, "{got:?}");
    assert!(
        got[0].starts_with(&format!("first 1 announce svc {both} announced ")),
        "{got:?}"
    );
    assert_eq!(got[1], format!("linked 1 {}", link.display()), "{got:?}");
    assert_eq!(got[2], "second 1", "{got:?}");
    assert!(
        got[3].starts_with(&format!("first 2 withdraw svc {both} withdrawn ")),
        "{got:?}"
    );
    assert_eq!(got[4], format!("linked 2 {}", link.display()), "{got:?}");
    assert_eq!(got[5], "second 2", "{got:?}");

    // The slow script and its sleep, of both events, are gone.
    let ran = poll(Duration::from_secs(5), || {
        let l = lines(&pids);
        (l.len() >= 2).then_some(l)
    })
    .unwrap_or_else(|| panic!("slow hook did not run twice: {}", s.d.log()));
    for l in &ran {
        for pid in l.split_whitespace() {
            let gone = poll(Duration::from_secs(3), || (!alive(pid)).then_some(()));
            assert!(gone.is_some(), "hook process {pid} still runs");
        }
    }
    assert!(s.d.log().contains("killed after"), "{}", s.d.log());
    assert!(!s.d.log().contains("hook-std"), "{}", s.d.log());
}

#[test]
fn a_full_queue_drops_and_counts() {
    support::init_log();
    let tmp = TempDir::new("e2e-hooks-q");
    let hooks = tmp.path("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let started = tmp.path("started");
    script(
        &hooks,
        "10-block",
        &format!("echo $SEQ >> {}\nsleep 60", started.display()),
    );
    let up = tmp.path("up");
    std::fs::write(&up, "").unwrap();
    let prefix = "10.222.0.1/32";
    let vips = json!([{"name": "svc", "prefix": prefix, "check": flag_check(&up), "policy": {"fail_action": "withdraw"}}]);
    let sock = tmp.sock();
    let _broker = Broker::start(&sock, BrokerConfig::default()).unwrap();
    let s = Setup::start(2, vips, |c| {
        c["hooks"] = json!({"dir": hooks.display().to_string(), "timeout": "60s", "queue": 1});
        c["api"]["ubus_socket"] = json!(sock.display().to_string());
    });
    s.wait_established();
    s.wait_route(prefix, "announced", |_| true);
    // Event 1 blocks the runner; event 2 waits in the queue; 3 is dropped.
    std::fs::remove_file(&up).unwrap();
    s.wait_gone(prefix);
    std::fs::write(&up, "").unwrap();
    s.wait_route(prefix, "announced again", |_| true);
    assert_eq!(lines(&started), ["1"]);
    let metrics = s.d.get("/metrics").unwrap().body;
    let drops = metrics
        .lines()
        .find_map(|l| l.strip_prefix("pathosd_hook_events_dropped_total "))
        .unwrap_or_else(|| panic!("no drop counter: {metrics}"));
    assert_eq!(drops, "1", "{metrics}");
    assert_eq!(s.d.status()["hook_events_dropped"], 1);
    // ubus status is the same document, through the broker.
    let status = smol::block_on(async {
        let mut caller = Caller::connect(&sock).await;
        let end = Instant::now() + STEP;
        loop {
            match caller.call("pathosd", "status", json!({"limit": 0})).await {
                Ok(Some(v)) => break v,
                // Not registered yet.
                Err(4) if Instant::now() < end => {
                    smol::Timer::after(Duration::from_millis(50)).await;
                }
                r => panic!("ubus status: {r:?}\n{}", s.d.log()),
            }
        }
    });
    assert_eq!(status["hook_events_dropped"], 1, "{status}");
}
