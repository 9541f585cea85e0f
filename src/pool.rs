//! The bounded pool for work that can only block: ureq (https checks and
//! checks through an https:// proxy, and the OTLP export to https://), the
//! gRPC client (grpc checks and the OTLP export to grpc://,
//! [`crate::net::grpc`]), the lookups of hosts that are names
//! (getaddrinfo, [`crate::net::lookup`]) and the owner's read of the
//! router's flows. Plain `http://` checks, direct or through an http://
//! proxy, do not come here (they are async, see [`crate::net::http1`]), nor
//! do exec checks (smol::process).
//!
//! At most [`WORKERS`] threads, started one at a time as the work needs
//! them and then kept (a 1 s https check does not pay a thread spawn per
//! probe, as it did with `smol::unblock`, whose threads exit after a second
//! idle), and at most [`QUEUE`] jobs waiting for one. A job that finds the
//! queue full is not run: its probe fails at once and says why, instead of
//! waiting behind work it cannot overtake. A job whose probe gave up (the
//! check timeout) before a worker took it is dropped unrun.
//!
//! The pool counts its load (jobs run, refused, dropped, the time they
//! waited) under the lock its threads already share for the worker counts,
//! and the owner copies it into each snapshot ([`stats`]) for `/metrics`
//! and `/status`: plain integers under the lock, as 32-bit MIPS has no
//! AtomicU64.

use crate::api::model::{PoolView, POOL_WAIT_BOUNDS};
use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Worker threads of the daemon's pool: enough for a few slow https checks
/// at once; a router with many of them sees "busy" failures (and the count
/// in the detail) rather than an unbounded number of threads.
pub const WORKERS: usize = 4;
/// Jobs that may wait for a worker.
pub const QUEUE: usize = 32;

/// The work of a job; it calls its argument just before it runs the
/// probe's function (not when the probe already gave up), so the pool counts
/// a run before the result can reach the probe.
type Work = Box<dyn FnOnce(&dyn Fn()) + Send>;

/// A job in the queue and when it was queued.
struct Job {
    queued: Instant,
    work: Work,
}

/// What the pool knows of its workers and queue, and its load since start.
#[derive(Debug, Default)]
struct Counts {
    started: usize,
    idle: usize,
    /// Jobs sent and not yet taken by a worker.
    waiting: usize,
    run: u64,
    refused: u64,
    expired: u64,
    /// Cumulative, one per [`POOL_WAIT_BOUNDS`].
    wait_buckets: [u64; POOL_WAIT_BOUNDS.len()],
    wait_sum: f64,
    wait_count: u64,
}

impl Counts {
    /// A job left the queue after `secs` seconds.
    fn waited(&mut self, secs: f64) {
        for (b, le) in self.wait_buckets.iter_mut().zip(POOL_WAIT_BOUNDS) {
            if secs <= le {
                *b = b.saturating_add(1);
            }
        }
        self.wait_sum += secs;
        self.wait_count = self.wait_count.saturating_add(1);
    }
}

/// A job's result, boxed: one channel type for every result type, so the
/// channel's code is in the binary once (≈ 1.6 KB on mips a copy).
type Done = Box<dyn std::any::Any + Send>;

/// The job that runs `f` on a worker and sends its result to `done`: one
/// piece for each [`Pool::run`]. A panic in `f` sends
/// nothing, so the waiting side sees the channel closed.
fn work<R: Send + 'static>(
    done: smol::channel::Sender<Done>,
    f: impl FnOnce() -> R + Send + 'static,
) -> Work {
    Box::new(move |begin: &dyn Fn()| {
        // The probe timed out while this waited: nobody wants the result.
        if done.is_closed() {
            return;
        }
        begin();
        if let Ok(r) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
            let _ = done.try_send(Box::new(r));
        }
    })
}

/// A fixed-size pool of threads with a bounded queue.
pub struct Pool {
    tx: SyncSender<Job>,
    rx: Arc<Mutex<Receiver<Job>>>,
    counts: Arc<Mutex<Counts>>,
    workers: usize,
    queue: usize,
}

impl Pool {
    /// A pool of at most `workers` threads (at least 1) and `queue` waiting
    /// jobs. No thread starts before the first job.
    pub fn new(workers: usize, queue: usize) -> Pool {
        let (tx, rx) = sync_channel(queue);
        Pool {
            tx,
            rx: Arc::new(Mutex::new(rx)),
            counts: Arc::new(Mutex::new(Counts::default())),
            workers: workers.max(1),
            queue,
        }
    }

    /// Runs `f` on a worker and awaits its result. Err (with the detail a
    /// probe shows) when the queue is full, no worker can be started, or
    /// `f` panicked. Used for the name lookups (`net::lookup`), the gRPC
    /// client and, with `tls`, ureq's requests. The result comes back
    /// boxed ([`Done`]) and is unboxed here: a `T`, as `work` boxed it.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let (done, result) = smol::channel::bounded::<Done>(1);
        self.submit(work(done, f))?;
        match result.recv().await.map(|r| r.downcast::<T>()) {
            Ok(Ok(r)) => Ok(*r),
            _ => Err("the probe panicked on the blocking pool".to_string()),
        }
    }

    /// Queues `job`, starting a worker if none is idle: the part of
    /// [`Pool::run`] that does not depend on its types, so it exists once
    /// in the binary rather than once per result type (≈ 4 KB a copy on
    /// mips, its size there; two result types without `tls`, three with).
    fn submit(&self, work: Work) -> Result<(), String> {
        self.grow()?;
        // Counted before the send: a worker may take the job at once, and
        // must not find it uncounted (the count would stay one too high).
        lock(&self.counts).waiting += 1;
        let job = Job {
            queued: Instant::now(),
            work,
        };
        let sent = self.tx.try_send(job);
        if sent.is_err() {
            let mut c = lock(&self.counts);
            c.waiting = c.waiting.saturating_sub(1);
            if matches!(sent, Err(TrySendError::Full(_))) {
                c.refused = c.refused.saturating_add(1);
            }
        }
        match sent {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(format!(
                "not run: the blocking probe pool is full ({} workers busy, {} probes queued)",
                self.workers, self.queue
            )),
            Err(TrySendError::Disconnected(_)) => {
                Err("not run: the blocking probe pool has stopped".into())
            }
        }
    }

    /// The pool's load now and its counters since it was made.
    pub fn stats(&self) -> PoolView {
        let c = lock(&self.counts);
        let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        PoolView {
            workers: n(c.started),
            workers_max: n(self.workers),
            running: n(c.started.saturating_sub(c.idle)),
            queued: n(c.waiting),
            queue_max: n(self.queue),
            run: c.run,
            refused: c.refused,
            expired: c.expired,
            wait_buckets: c.wait_buckets,
            wait_sum: c.wait_sum,
            wait_count: c.wait_count,
        }
    }

    /// Starts one more worker when every idle one already has a job
    /// waiting for it and the pool is not at its size. Fails only when no
    /// worker runs and none can be started.
    fn grow(&self) -> Result<(), String> {
        let mut c = lock(&self.counts);
        if c.idle > c.waiting || c.started >= self.workers {
            return Ok(());
        }
        let (rx, counts) = (self.rx.clone(), self.counts.clone());
        let spawned = std::thread::Builder::new()
            .name("pathosd-block".into())
            .spawn(move || worker(&rx, &counts));
        match spawned {
            Ok(_) => {
                c.started += 1;
                c.idle += 1;
                Ok(())
            }
            Err(e) if c.started == 0 => Err(format!(
                "not run: cannot start a blocking probe worker: {}",
                crate::net::io_msg(&e)
            )),
            // The running workers will take it.
            Err(_) => Ok(()),
        }
    }
}

fn worker(rx: &Mutex<Receiver<Job>>, counts: &Mutex<Counts>) {
    loop {
        // One idle worker waits on the channel, the others on the lock.
        let job = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let waited = job.queued.elapsed().as_secs_f64();
        {
            let mut c = lock(counts);
            c.idle = c.idle.saturating_sub(1);
            c.waiting = c.waiting.saturating_sub(1);
            c.waited(waited);
        }
        let ran = Cell::new(false);
        (job.work)(&|| {
            ran.set(true);
            let mut c = lock(counts);
            c.run = c.run.saturating_add(1);
        });
        let mut c = lock(counts);
        c.idle += 1;
        if !ran.get() {
            c.expired = c.expired.saturating_add(1);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Pool threads started so far (for tests and diagnostics).
impl Pool {
    pub fn started(&self) -> usize {
        lock(&self.counts).started
    }
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// The daemon's pool ([`WORKERS`] threads, [`QUEUE`] waiting jobs).
pub fn pool() -> &'static Pool {
    POOL.get_or_init(|| Pool::new(WORKERS, QUEUE))
}

/// The daemon's pool's [`Pool::stats`], without making the pool: a daemon
/// that never had a blocking probe shows its size and zeros.
pub fn stats() -> PoolView {
    POOL.get().map_or_else(
        || PoolView {
            workers_max: WORKERS as u32,
            queue_max: QUEUE as u32,
            ..PoolView::default()
        },
        Pool::stats,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::CheckResult;
    use std::time::Duration;

    /// Holds the pool's one worker until released.
    fn gate() -> (std::sync::mpsc::Sender<()>, impl FnOnce() -> u32 + Send) {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        (tx, move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
            1
        })
    }

    /// A full queue fails the job at once with a clear detail; the jobs
    /// already taken still finish; nothing hangs; the pool never starts
    /// more threads than its size.
    #[test]
    fn full_queue_fails_at_once() {
        let pool = Pool::new(1, 1);
        crate::rt::block_on(async {
            let (open1, running) = gate();
            let (open2, queued) = gate();
            let mut running = Box::pin(pool.run(running));
            assert!(smol::future::poll_once(&mut running).await.is_none());
            // Let the worker take the first job before the next is queued.
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while lock(&pool.counts).idle != 0 {
                assert!(
                    std::time::Instant::now() < until,
                    "the worker never took the job"
                );
                crate::rt::sleep(Duration::from_millis(1)).await;
            }
            let mut queued = Box::pin(pool.run(queued));
            assert!(smol::future::poll_once(&mut queued).await.is_none());
            let t = std::time::Instant::now();
            let full = pool.run(|| 3).await;
            assert!(t.elapsed() < Duration::from_secs(1));
            let e = full.unwrap_err();
            assert!(e.contains("blocking probe pool is full"), "{e}");
            assert!(e.contains("1 workers busy, 1 probes queued"), "{e}");
            open1.send(()).unwrap();
            open2.send(()).unwrap();
            assert_eq!(running.await, Ok(1));
            assert_eq!(queued.await, Ok(1));
            // Room again.
            assert_eq!(pool.run(|| 4).await, Ok(4));
        });
        assert_eq!(pool.started(), 1);
    }

    #[test]
    fn a_panic_fails_the_job_and_keeps_the_worker() {
        let pool = Pool::new(1, 4);
        crate::rt::block_on(async {
            let e = pool.run(|| -> u32 { panic!("boom") }).await.unwrap_err();
            assert!(e.contains("panicked"), "{e}");
            assert_eq!(pool.run(|| 5).await, Ok(5));
        });
    }

    /// A probe's result comes back whole, and a panic fails that probe
    /// alone.
    #[test]
    fn a_probe_result_comes_back_or_its_panic() {
        let pool = Pool::new(1, 4);
        crate::rt::block_on(async {
            let r = pool.run(|| CheckResult::fail("down")).await;
            assert_eq!(r, Ok(CheckResult::fail("down")));
            let e = pool
                .run(|| -> CheckResult { panic!("boom") })
                .await
                .unwrap_err();
            assert!(e.contains("panicked"), "{e}");
            assert_eq!(
                pool.run(|| CheckResult::pass("up")).await,
                Ok(CheckResult::pass("up"))
            );
        });
    }
}
