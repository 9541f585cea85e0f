//! One thread runs the daemon: `pathosd run` with a BGP session
//! to BIRD, the HTTP API and tcp, plain http and exec checks every 200 ms
//! has no thread but its main one, which runs every task, and async-io's
//! reactor thread (which only polls I/O while the main thread does not).
//! Before, smol's global executor ran the sessions and check loops on a
//! thread of its own ("smol-0") and every http probe ran on a
//! "blocking-N" thread of smol::unblock.
//!
//! The threads allowed are the ones docs/architecture.md names (its
//! paragraph "Thread names:"): a thread the docs do not list fails the
//! test, whatever its name. A check whose host is a name is among the
//! checks, so its lookups run where the docs say (the bounded pool's
//! `pathosd-block`), not on a thread of smol's `blocking` crate
//! (`blocking-N`, before).

mod support;

use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::daemon::{ip, Setup};

/// name -> count of the threads of `pid`, from /proc.
fn threads(pid: u32) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let dir = format!("/proc/{pid}/task");
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let comm = e.unwrap().path().join("comm");
        // A thread that ended between read_dir and here has no comm.
        if let Ok(name) = std::fs::read_to_string(&comm) {
            *out.entry(name.trim().to_string()).or_insert(0) += 1;
        }
    }
    out
}

/// The thread names docs/architecture.md lists: the backticked words of
/// its paragraph that starts with "Thread names:" (paths, which hold a
/// `/`, left out).
fn documented_threads() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/architecture.md");
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let para = doc
        .split("\n\n")
        .find(|p| p.trim_start().starts_with("Thread names:"))
        .unwrap_or_else(|| panic!("{path} has no paragraph \"Thread names:\""));
    let names: Vec<String> = para
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.contains('/'))
        .map(str::to_string)
        .collect();
    assert!(
        names.iter().any(|n| n == "pathosd"),
        "{path}: the main thread is not among {names:?}"
    );
    names
}

#[test]
fn one_thread_runs_sessions_checks_and_api() {
    support::init_log();
    let n = 31;
    let allowed = documented_threads();
    let http = support::py_server(&["http", &ip(n, 3).to_string()]);
    let tcp = std::net::TcpListener::bind((ip(n, 4), 0)).unwrap();
    // A host that is a name: `localhost` is the one name every machine
    // resolves without a DNS server (/etc/hosts), and it is 127.0.0.1 (or
    // ::1), not this test's own block; the port is this test's (bound
    // with port 0), on both, whichever the lookup returns first.
    let named = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let named_port = named.local_addr().unwrap().port();
    let _named6 = std::net::TcpListener::bind(("::1", named_port)).ok();
    let check = |kind: &str, opts: serde_json::Value| {
        let mut c = json!({"type": kind, "interval": "200ms", "timeout": "150ms"});
        c[kind] = opts;
        c
    };
    let vips = json!([
        {"name": "web", "prefix": "10.231.0.1/32", "check": check("http", json!({
            "url": format!("http://{}:{}/text", ip(n, 3), http.port()),
            "response_text": "hello pathosd"}))},
        {"name": "db", "prefix": "10.231.0.2/32", "check": check("tcp", json!({
            "host": ip(n, 4).to_string(), "port": tcp.local_addr().unwrap().port()}))},
        {"name": "job", "prefix": "10.231.0.3/32", "check": check("exec", json!({
            "command": "/bin/true"}))},
        {"name": "named", "prefix": "10.231.0.4/32", "check": check("tcp", json!({
            "host": "localhost", "port": named_port}))}
    ]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    for v in ["web", "db", "job", "named"] {
        s.d.wait_vip_state(v, "announced", Duration::from_secs(10));
    }
    // Sample for a second: five rounds of probes, API requests between.
    let end = Instant::now() + Duration::from_secs(1);
    let mut seen = BTreeMap::new();
    while Instant::now() < end {
        for (name, count) in threads(s.d.pid()) {
            let c = seen.entry(name).or_insert(0);
            *c = count.max(*c);
        }
        assert_eq!(s.d.vip("web")["checks"][0]["last_check_success"], true);
        std::thread::sleep(Duration::from_millis(50));
    }
    let main = seen.get("pathosd").copied();
    assert_eq!(main, Some(1), "threads: {seen:?}");
    let undocumented: Vec<&String> = seen.keys().filter(|k| !allowed.contains(k)).collect();
    assert!(
        undocumented.is_empty(),
        "threads docs/architecture.md does not list ({allowed:?}): {undocumented:?} in {seen:?}\n{}",
        s.d.log()
    );
    // The lookups ran on the bounded pool, within its size.
    let pool = seen.get("pathosd-block").copied().unwrap_or(0);
    assert!(
        (1..=pathosd::pool::WORKERS).contains(&pool),
        "{pool} pool threads for the named host's lookups: {seen:?}"
    );
    // The probes really ran (and passed) all along.
    for v in ["web", "named"] {
        let v = s.d.vip(v);
        assert!(v["checks"][0]["total_ok"].as_u64().unwrap_or(0) >= 5, "{v}");
    }
    // The main thread's stack holds each task's poll, and all it ever
    // touched stays resident: the owner's future and the stop's are on
    // the heap and polled through a pointer, the exporter's start builds
    // nothing large (here, with the export off, it only returns), so the
    // stack stays small. This debug build: 200 KiB; 296 with the owner's
    // future in `block_on`'s frame, the stop polled inline and the
    // exporter's start building its 84 KB task on the stack; 2.5 MB with
    // the stop's future inline.
    let stack = support::vm_kib(s.d.pid(), "VmStk");
    assert!(stack <= 256, "main thread's stack: {stack} KiB");
}

/// The voluntary context switches of `pid`'s thread named `name` (the
/// times it went to sleep), from /proc.
fn sleeps_of(pid: u32, name: &str) -> u64 {
    let dir = format!("/proc/{pid}/task");
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let task = e.unwrap().path();
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let status = std::fs::read_to_string(task.join("status")).unwrap();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .unwrap_or_else(|| panic!("no voluntary_ctxt_switches in {status}"));
        return line.trim().parse().unwrap();
    }
    panic!("pathosd {pid} has no thread {name:?}: {:?}", threads(pid));
}

/// The daemon thread waits for its own timers, for idle CPU: a
/// check's tick is the main thread's park ending at its deadline, not a
/// timer on async-io's reactor that async-io's thread sees expire and hands
/// over. A loopback tcp probe never touches the reactor either, so with
/// checks every 100 ms async-io's thread wakes only for the BGP session's
/// messages (BIRD's KEEPALIVEs, about one a second at hold time 3 s), far
/// fewer times than there are ticks. Before (a timerfd on epoll for the
/// shared timer), every tick was one more wake-up of async-io's thread:
/// 30 ticks in 3 s gave ≥ 30.
#[test]
fn timer_wake_ups_stay_on_the_main_thread() {
    support::init_log();
    let n = 7;
    let tcp = std::net::TcpListener::bind((ip(n, 4), 0)).unwrap();
    let vips = json!([
        {"name": "db", "prefix": "10.207.0.1/32", "check": {
            "type": "tcp", "interval": "100ms", "timeout": "50ms",
            "tcp": {"host": ip(n, 4).to_string(), "port": tcp.local_addr().unwrap().port()}}}
    ]);
    let s = Setup::start(n, vips, |_| {});
    s.wait_established();
    s.d.wait_vip_state("db", "announced", Duration::from_secs(10));
    let pid = s.d.pid();
    let ok_before = s.d.vip("db")["checks"][0]["total_ok"].as_u64().unwrap_or(0);
    let main_before = sleeps_of(pid, "pathosd");
    let reactor_before = sleeps_of(pid, "async-io");
    // A measuring window, not a wait for an event: nothing may talk to
    // the daemon during it (an API request is a socket wake-up).
    std::thread::sleep(Duration::from_secs(3));
    let reactor = sleeps_of(pid, "async-io") - reactor_before;
    let main = sleeps_of(pid, "pathosd") - main_before;
    let ticks = s.d.vip("db")["checks"][0]["total_ok"].as_u64().unwrap_or(0) - ok_before;
    eprintln!("3 s: {ticks} probes, main thread slept {main} times, async-io's {reactor}");
    // The ticks happened (each one a wake-up of the main thread) ...
    assert!(ticks >= 20, "only {ticks} probes in 3 s\n{}", s.d.log());
    assert!(
        main >= ticks / 2,
        "main thread slept {main} times for {ticks} probes"
    );
    // ... without async-io's thread: it woke for the session only.
    assert!(
        reactor * 2 < ticks,
        "async-io's thread woke {reactor} times for {ticks} ticks (main thread {main})"
    );
}
