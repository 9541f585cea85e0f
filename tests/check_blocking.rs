//! The bounded pool of probes that can only block (https through ureq,
//! gRPC): more such probes at once than it has workers and
//! queue places fail at once with a detail that says so, never wait
//! without bound, and the pool never starts more than its threads.

mod support;

use pathosd::check::probe::blocking::{pool, QUEUE, WORKERS};
use serde_json::json;
use std::time::{Duration, Instant};
use support::*;

/// Threads of this process named `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == name)
        .count()
}

#[test]
fn a_full_pool_fails_the_probe_at_once() {
    let ip = test_ip(90);
    // Accepts connections (the kernel's backlog) and never answers the TLS
    // ClientHello: each https probe holds a worker until its timeout.
    let silent = std::net::TcpListener::bind((ip, 0)).unwrap();
    let port = silent.local_addr().unwrap().port();
    let n = WORKERS + QUEUE + 4;
    let probes: Vec<_> = (0..n)
        .map(|_| {
            let c = check(
                json!({"type": "https", "timeout": "1s", "interval": "5s", "http": {
                "url": format!("https://{ip}:{port}/"), "tls_insecure": true}}),
            );
            build_probe(c.clone(), &format!("{ip}/32")).unwrap()
        })
        .collect();
    let t0 = Instant::now();
    let results = pathosd::rt::block_on(async {
        let tasks: Vec<_> = probes
            .into_iter()
            .map(|p| {
                pathosd::rt::spawn(async move {
                    let r = p.run().await;
                    (r, t0.elapsed())
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await);
        }
        out
    });
    let full = format!(
        "not run: the blocking probe pool is full ({WORKERS} workers busy, {QUEUE} probes queued)"
    );
    let refused: Vec<_> = results
        .iter()
        .filter(|(r, _)| r.detail.contains(&full))
        .collect();
    // At least the probes beyond workers + queue; a few more while the
    // workers were still starting and had not taken their first job.
    assert!(
        refused.len() >= n - WORKERS - QUEUE && refused.len() <= n - QUEUE,
        "{} refused: {results:?}",
        refused.len()
    );
    for (r, at) in &refused {
        assert!(!r.ok);
        assert!(!r.timed_out, "{r:?}");
        assert!(
            *at < Duration::from_millis(500),
            "refused only after {at:?}"
        );
        assert!(
            r.detail.starts_with(&format!("GET https://{ip}:{port}/: ")),
            "{}",
            r.detail
        );
    }
    // The others ran (or waited) and ended at their timeout, not later.
    for (r, at) in results.iter().filter(|(r, _)| !r.detail.contains(&full)) {
        assert!(!r.ok, "{r:?}");
        assert!(r.timed_out || r.detail.contains("timed out"), "{r:?}");
        assert!(*at < Duration::from_secs(3), "ended after {at:?}: {r:?}");
    }
    assert_eq!(pool().started(), WORKERS);
    assert_eq!(threads_named("pathosd-block"), WORKERS);
    drop(silent);
}
