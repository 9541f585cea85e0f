//! The bounded pool of probes that can only block (https through ureq,
//! gRPC): more such probes at once than it has workers and
//! queue places fail at once with a detail that says so, never wait
//! without bound, and the pool never starts more than its threads. The
//! pool counts what it does (the load `/metrics` and `/status` show).

mod support;

use pathosd::api::model::{PoolView, POOL_WAIT_BOUNDS};
use pathosd::pool::{pool, stats, Pool, QUEUE, WORKERS};
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
    // This is the one test of this binary that uses the daemon's pool.
    let before = stats();
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
    // What /metrics and /status show: each probe refused counted once, the
    // pool at its size.
    let after = stats();
    assert_eq!(
        after.refused - before.refused,
        refused.len() as u64,
        "{after:?}"
    );
    assert_eq!(after.workers, WORKERS as u32);
    assert_eq!(after.workers_max, WORKERS as u32);
    assert_eq!(after.queue_max, QUEUE as u32);
    assert!(after.queued <= QUEUE as u32, "{after:?}");
    drop(silent);
}

/// A job that holds the pool's worker until released; `started` hears
/// when a worker took it.
fn held() -> (
    std::sync::mpsc::Sender<()>,
    smol::channel::Receiver<()>,
    impl FnOnce() -> u32 + Send,
) {
    let (open, wait) = std::sync::mpsc::channel::<()>();
    let (started_tx, started) = smol::channel::bounded(1);
    (open, started, move || {
        let _ = started_tx.try_send(());
        let _ = wait.recv_timeout(Duration::from_secs(10));
        1
    })
}

/// Awaits `rx` at most 5 s.
async fn heard(rx: &smol::channel::Receiver<()>) {
    let timeout = async {
        async_io::Timer::after(Duration::from_secs(5)).await;
        Err(smol::channel::RecvError)
    };
    smol::future::or(rx.recv(), timeout)
        .await
        .expect("the worker never took the job");
}

/// The counters a real pool keeps while it runs, queues, refuses and drops
/// jobs: each moves by exactly the jobs that did so.
#[test]
fn the_pool_counts_its_load() {
    let pool = Pool::new(1, 2);
    assert_eq!(
        pool.stats(),
        PoolView {
            workers_max: 1,
            queue_max: 2,
            ..PoolView::default()
        }
    );
    let t0 = Instant::now();
    pathosd::rt::block_on(async {
        // A job run: run +1, one worker started, one wait measured.
        assert_eq!(pool.run(|| 7).await, Ok(7));
        let s = pool.stats();
        assert_eq!((s.run, s.workers, s.wait_count), (1, 1, 1), "{s:?}");
        assert_eq!((s.refused, s.expired, s.queued), (0, 0, 0), "{s:?}");

        // The worker held: running 1 (and counted as run when it began).
        let (open, started, job) = held();
        let mut holding = Box::pin(pool.run(job));
        assert!(smol::future::poll_once(&mut holding).await.is_none());
        heard(&started).await;
        let s = pool.stats();
        assert_eq!((s.running, s.queued, s.run), (1, 0, 2), "{s:?}");

        // Two queued behind it: the queue is full.
        let mut queued = Box::pin(pool.run(|| 8));
        assert!(smol::future::poll_once(&mut queued).await.is_none());
        let mut abandoned = Box::pin(pool.run(|| 10));
        assert!(smol::future::poll_once(&mut abandoned).await.is_none());
        let queued_by = Instant::now();
        assert_eq!(pool.stats().queued, 2);

        // A full pool: refused +1, at once, nothing else moves.
        let e = pool.run(|| 9).await.unwrap_err();
        assert!(e.contains("blocking probe pool is full"), "{e}");
        let s = pool.stats();
        assert_eq!(
            (s.refused, s.run, s.queued, s.running),
            (1, 2, 2, 1),
            "{s:?}"
        );

        // The probe of `abandoned` gives up (its timeout): dropped unrun.
        drop(abandoned);
        // Let the queued jobs wait measurably before the worker is free.
        async_io::Timer::after(Duration::from_millis(20)).await;
        let released = Instant::now();
        open.send(()).unwrap();
        assert_eq!(holding.await, Ok(1));
        assert_eq!(queued.await, Ok(8));
        // One worker, in queue order: by the time a later job has run, the
        // abandoned one was taken, not run, and counted as expired.
        assert_eq!(pool.run(|| 11).await, Ok(11));
        let s = pool.stats();
        assert_eq!(
            (s.run, s.refused, s.expired, s.queued, s.workers),
            (4, 1, 1, 0, 1),
            "{s:?}"
        );
        // Taken from the queue: 7, held, 8, the abandoned one, 11.
        assert_eq!(s.wait_count, 5, "{s:?}");
        // 8 and the abandoned job waited at least from queued_by to
        // released; none longer than the test.
        let least = 2.0 * (released - queued_by).as_secs_f64();
        assert!(least >= 0.04, "{least}");
        assert!(s.wait_sum >= least, "{s:?}");
        assert!(s.wait_sum <= 5.0 * t0.elapsed().as_secs_f64(), "{s:?}");
        // Cumulative buckets; the two that waited ≥ 20 ms are above 10 ms.
        assert!(s.wait_buckets.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
        assert!(s.wait_buckets[POOL_WAIT_BOUNDS.len() - 1] <= s.wait_count);
        let ten_ms = POOL_WAIT_BOUNDS.iter().position(|b| *b == 0.01).unwrap();
        assert!(s.wait_buckets[ten_ms] <= 3, "{s:?}");

        // The worker goes idle once the last job has returned (after its
        // result was sent): bounded wait for the gauge.
        let until = Instant::now() + Duration::from_secs(5);
        while pool.stats().running != 0 {
            assert!(Instant::now() < until, "{:?}", pool.stats());
            async_io::Timer::after(Duration::from_millis(1)).await;
        }
    });
}

/// A job a worker takes the moment it is sent is never left counted as
/// queued: after many jobs, one at a time, nothing shows as waiting.
#[test]
fn jobs_taken_at_once_leave_no_queued_count() {
    let pool = Pool::new(1, 4);
    pathosd::rt::block_on(async {
        for i in 0..2000u32 {
            assert_eq!(pool.run(move || i).await, Ok(i));
        }
    });
    let s = pool.stats();
    assert_eq!((s.queued, s.run, s.wait_count), (0, 2000, 2000), "{s:?}");
}
