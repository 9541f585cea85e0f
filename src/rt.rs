//! The daemon's runtime: one thread, one local executor.
//!
//! Every daemon task (the owner, the BGP sessions, the check loops, the
//! HTTP API and ubus) is spawned with [`spawn`] onto the executor of the
//! thread that runs [`block_on`] — in `pathosd run`, the main thread. So no
//! task needs `Send`, state one task owns needs no lock, and nothing crosses
//! a thread on the way from a probe to a BGP UPDATE. The I/O reactor is
//! async-io's: its thread waits in epoll and wakes this one (see
//! [`block_on`] for why not this thread itself).
//!
//! Work that can only block (ureq for https, the gRPC client, name
//! lookups) goes to the small fixed pool in
//! [`crate::pool`], never onto this thread.
//!
//! # One timer API
//!
//! A task on the daemon's thread waits only through this module: [`sleep`],
//! [`sleep_until`], [`sleep_around`] (a check's tick) and [`sleep_window`]
//! (a BGP KEEPALIVE), never `smol::Timer` or `async_io::Timer`. Why: a wait
//! here is an entry in this thread's own list ([`Timers`]) and the thread's
//! park ends at the earliest of them, with slack, so waits that end close
//! together (a tick, a KEEPALIVE, a probe's timeout) cost one wake-up of
//! this thread and none of async-io's. An async-io timer is a timerfd on
//! the reactor: each expiry wakes async-io's thread, which then wakes this
//! one, and it joins no other wait.
//!
//! Off the daemon's thread (outside [`block_on`]: a test's own
//! `smol::block_on`) the same calls fall back to an async-io timer of their
//! own, so code that tests also drive calls them anywhere. The blocking
//! pool's threads run no futures: they wait on their job channel, never on
//! a timer. Tests may use `async_io::Timer` where they run off the daemon's
//! thread, or want a reactor wake-up on purpose. `tests/lock_sites.rs`
//! fails on a new `smol::Timer` or `async_io::Timer` in the daemon's code
//! outside this file.

use smol::{LocalExecutor, Task};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

thread_local! {
    static EXECUTOR: LocalExecutor<'static> = const { LocalExecutor::new() };
    /// Whether [`block_on`] runs on this thread right now.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Spawns `fut` on this thread's executor; it runs while [`block_on`] runs
/// here. Dropping the returned task cancels it; `.detach()` lets it run on.
///
/// Spawning on a thread that does not run [`block_on`] is a bug (the task
/// would never run); debug builds, which every test runs, panic on it.
pub fn spawn<T: 'static>(fut: impl Future<Output = T> + 'static) -> Task<T> {
    debug_assert!(
        RUNNING.with(Cell::get),
        "rt::spawn on a thread that does not run rt::block_on: the task would never run"
    );
    // Boxed to one future type per output type before it reaches the
    // executor: async-task and async-executor then instantiate their task
    // machinery (RawTask's run/wake/schedule/drop, the spawn wrapper) once
    // per `T`, not once per spawned future type (15 of them, ≈ 1.9 KB each
    // on mips). The cost is one allocation per spawn, which happens at
    // start, on reload, per session close and per API connection or ubus
    // call, never per probe.
    spawn_boxed(Box::pin(fut))
}

fn spawn_boxed<T: 'static>(fut: Pin<Box<dyn Future<Output = T>>>) -> Task<T> {
    EXECUTOR.with(|ex| ex.spawn(fut))
}

/// Runs `fut` and every task [`spawn`]ed on this thread until `fut` ends.
pub fn block_on<T>(fut: impl Future<Output = T>) -> T {
    /// Restores the flag however `block_on` ends (a panic included).
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUNNING.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(RUNNING.with(|r| r.replace(true)));
    // The thread parks between tasks and async-io's own thread ("async-io")
    // polls epoll and wakes it (through the waker below) when a socket is
    // ready: measured, that costs less than async_io::block_on, under which
    // this thread and async-io's thread take the reactor from each other on
    // every event (the helper thread backs off through ten short sleeps
    // after each, then waits for the reactor lock): 1 tcp check at 1 s,
    // 35 -> 20 ms CPU per 60 s; 100, 778 -> 719. No daemon task runs on the
    // async-io thread; it only polls and wakes. It polls without pause only
    // while no thread of the process runs async_io::block_on
    // (smol::block_on): the daemon runs none.
    //
    // Timers are this thread's own: it parks with the earliest time a wait
    // of [`Timers`] may end as the park's timeout, so a wake-up for a timer
    // (a check's tick, a KEEPALIVE) is one futex wait ending on this
    // thread, not a timer on the reactor that async-io's thread sees
    // expire and hands over (before: a timerfd on epoll, 1 HTTP check at
    // 1 s, four wake-ups a second of which two were timers, each one
    // also async-io's thread leaving epoll, its eventfd, timerfd and
    // `epoll_ctl` upkeep and a futex wake. Measured there: async-io's
    // thread 3.9 -> 2.2 sleeps a second, the process's syscalls 81 -> 51 a
    // second; "The daemon thread waits for its own timers" in the history
    // of docs/performance.md).
    EXECUTOR.with(|ex| {
        let mut executor = std::pin::pin!(ex.run(fut));
        let parker = parking::Parker::new();
        let waker = Waker::from(parker.unparker());
        let mut cx = Context::from_waker(&waker);
        loop {
            wake_due();
            if let Poll::Ready(v) = executor.as_mut().poll(&mut cx) {
                return v;
            }
            // A wake-up (a socket, another thread's message, a task that
            // woke itself) that came while the executor ran is kept by the
            // parker: the park then returns at once, nothing is lost.
            match next_wake() {
                Some(at) => {
                    parker.park_deadline(at);
                }
                None => parker.park(),
            }
        }
    })
}

/// When the thread must be awake next for [`Timers`], if any wait is
/// pending: the earliest `latest` of the waits, or earlier where a joining
/// wait meets another one ([`Timers::park_deadline`]).
fn next_wake() -> Option<Instant> {
    TIMERS.with(|t| t.borrow().park_deadline())
}

/// Waits for `d` from now: [`sleep_until`], for the waits that count from
/// the moment they start (a back-off, a grace period).
pub async fn sleep(d: Duration) {
    // A duration too long for the clock waits for ever, as it would.
    match Instant::now().checked_add(d) {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits for `d` from now and ends then, not within the slack [`sleep`]
/// allows (up to [`MAX_SLACK`] late when nothing else wakes the thread):
/// for a wait whose length is itself the point, the shutdown drain an
/// operator configured, where a 2 s drain must not last 2.05 s.
pub async fn sleep_exact(d: Duration) {
    match Instant::now().checked_add(d) {
        Some(at) if is_running() => {
            Sleep {
                at,
                latest: at,
                key: None,
                join: false,
            }
            .await
        }
        Some(at) => {
            async_io::Timer::at(at).await;
        }
        None => std::future::pending().await,
    }
}

/// Waits until `at`. On the daemon's thread (inside [`block_on`]) every
/// such wait is an entry of [`Timers`], which the thread's park waits for
/// (no reactor timer); elsewhere it is an async-io timer of its own.
pub async fn sleep_until(at: Instant) {
    window(at, at, false).await
}

/// Waits until about `at`: on the daemon's thread, until the first time
/// the thread wakes up (for any task) at or after `at - slack`, and until
/// `at + slack` if nothing woke it before (instead of the default slack of
/// [`sleep_until`]). For waits whose owner accepts that much error either
/// way (a check's tick) so that they ride on wake-ups the thread has
/// anyway (another tick, a probe's reply, a BGP message) instead of waking
/// it alone. Elsewhere it ends at `at`.
pub async fn sleep_around(at: Instant, slack: Duration) {
    if is_running() {
        Sleep {
            at: at.checked_sub(slack).unwrap_or(at),
            latest: at.checked_add(slack).unwrap_or(at),
            key: None,
            join: false,
        }
        .await
    } else {
        async_io::Timer::at(at).await;
    }
}

/// Waits until some time in `earliest ..= latest`: on the daemon's thread,
/// the first time the thread wakes up (for any task) at or after
/// `earliest`, and at `latest` (plus the usual slack) if nothing woke it
/// before. For work that may happen early, so that it rides on a wake-up
/// the thread has anyway (a BGP KEEPALIVE inside its RFC 4271 §10 jitter
/// range). Elsewhere it ends at `earliest`.
///
/// Such a wait also *joins* another one: when another pending wait may
/// end inside this window (a check's tick, whose own window may already be
/// open at `earliest`), the thread wakes at the first instant both may end
/// ([`Timers::park_deadline`]), not at the later of their latest times.
/// Why: a KEEPALIVE restarts its timer from the time it is sent, so one
/// sent at the end of its window drifts later by the window's width every
/// round and leaves a check's fixed grid of ticks again after a few
/// rounds; sent at the first instant it meets the tick, it drifts by the
/// wake-up's latency only and keeps meeting it (measured: "KEEPALIVEs join
/// the tick" in the history of docs/performance.md).
pub async fn sleep_window(earliest: Instant, latest: Instant) {
    window(earliest, latest, true).await
}

/// [`sleep_window`], joining another wait or not.
async fn window(earliest: Instant, latest: Instant, join: bool) {
    let latest = latest.max(earliest);
    if is_running() {
        // Like the kernel's timer slack: a wait may end a little after its
        // deadline (at most 1/16 of its length and MAX_SLACK), so waits
        // that end close together end in one wake-up of the thread.
        let slack = latest
            .saturating_duration_since(Instant::now())
            .checked_div(16)
            .unwrap_or_default()
            .min(MAX_SLACK);
        Sleep {
            at: earliest,
            latest: latest + slack,
            key: None,
            join,
        }
        .await
    } else {
        async_io::Timer::at(earliest).await;
    }
}

/// The pending waits of this thread's tasks, in deadline order; [`block_on`]
/// parks until the earliest `latest` of them.
///
/// Why: every async-io timer that is set or dropped is an operation on the
/// reactor and a wake-up of its poller (an eventfd write, an epoll return,
/// a timerfd update). A probe sets two (its check's next tick and its
/// timeout, which almost never fires) and drops one unfired. Here a wait is
/// a map insert and remove on this thread, and the earliest one is the
/// timeout of the park the thread does anyway.
#[derive(Default)]
struct Timers {
    /// key (deadline, id), `other` the latest time it may wake, and the
    /// waiting task.
    queue: Deadlines,
    /// key (latest, id), `other` the deadline, of every wait (no waker):
    /// the thread parks until the first.
    latest: Deadlines,
    /// (id, deadline, latest) of the waits that join another
    /// ([`sleep_window`]): one per BGP session, so a `Vec` (a second map
    /// type cost its own code: ≈ 8 KB of x86_64 release, measured).
    joining: Vec<(u64, Instant, Instant)>,
    next_id: u64,
}

/// One wait in a [`Deadlines`].
struct Entry {
    key: (Instant, u64),
    other: Instant,
    waker: Option<Waker>,
}

/// Entries sorted by key, the earliest first.
///
/// Why not a `BTreeMap`: each B-tree instantiation is its own code (the
/// two of [`Timers`] cost 17 KB of the stripped mips build, measured); one type
/// for both sorted lists is one instantiation, a few hundred bytes. A
/// binary search finds a place in O(log n); an insert or remove moves the
/// entries of the shorter side (a `VecDeque`): a check's next tick is
/// queued near the end and the due wait is taken from the front, so the
/// common moves are short, and even 1,000 VIPs' waits are a few tens of KB
/// moved by `memmove`, less than a B-tree's node allocations.
#[derive(Default)]
struct Deadlines(VecDeque<Entry>);

impl Deadlines {
    /// Where `key` is (`Ok`) or would go (`Err`).
    fn find(&self, key: &(Instant, u64)) -> Result<usize, usize> {
        self.0.binary_search_by(|e| e.key.cmp(key))
    }

    /// Adds `e`, replacing the entry with its key if there is one.
    fn insert(&mut self, e: Entry) {
        match self.find(&e.key) {
            Ok(i) => {
                if let Some(old) = self.0.get_mut(i) {
                    *old = e;
                }
            }
            Err(i) => self.0.insert(i, e),
        }
    }

    fn remove(&mut self, key: &(Instant, u64)) -> Option<Entry> {
        let i = self.find(key).ok()?;
        self.0.remove(i)
    }

    fn get_mut(&mut self, key: &(Instant, u64)) -> Option<&mut Entry> {
        let i = self.find(key).ok()?;
        self.0.get_mut(i)
    }
}

/// How far before a joining wait's deadline another wait's window may
/// open and still be met: a check's tick window is at most twice the
/// scheduler's largest tick slack (125 ms) wide. A window opened earlier
/// is not looked at (the joining wait then ends as any other would).
const JOIN_LOOKBACK: Duration = Duration::from_millis(250);

/// The most waits looked at per joining wait and park, the earliest first:
/// bounded work however many waits there are (with 1,000 checks their
/// ticks wake the thread every few milliseconds anyway).
const JOIN_SCAN: usize = 16;

impl Timers {
    fn insert(&mut self, id: u64, at: Instant, latest: Instant, join: bool, waker: Waker) {
        self.queue.insert(Entry {
            key: (at, id),
            other: latest,
            waker: Some(waker),
        });
        self.latest.insert(Entry {
            key: (latest, id),
            other: at,
            waker: None,
        });
        if join {
            self.joining.push((id, at, latest));
        }
    }

    fn remove(&mut self, id: u64, at: Instant, latest: Instant) {
        self.queue.remove(&(at, id));
        self.latest.remove(&(latest, id));
        self.joining.retain(|j| j.0 != id);
    }

    /// Removes and returns one wait due at `now`, if any.
    fn pop_due(&mut self, now: Instant) -> Option<(u64, Waker)> {
        if self.queue.0.front()?.key.0 > now {
            return None;
        }
        let e = self.queue.0.pop_front()?;
        let id = e.key.1;
        self.latest.remove(&(e.other, id));
        self.joining.retain(|j| j.0 != id);
        // Every entry of `queue` has its waker (only `latest`'s have none).
        Some((id, e.waker?))
    }

    /// When the thread's park must end: the earliest `latest` of all
    /// waits, or, for a joining wait, the first instant inside its window
    /// at which another wait may end too, if that is earlier. At that
    /// instant both are due, so one wake-up runs both.
    fn park_deadline(&self) -> Option<Instant> {
        let mut d = self.latest.0.front()?.key.0;
        // Bounded: one joining wait per BGP session.
        for &(id, at, latest) in &self.joining {
            d = d.min(self.meet(id, at, latest));
        }
        Some(d)
    }

    /// The first instant in `at ..= latest` at which a wait other than
    /// `id` may end (one whose window is open at `at`: `at` itself), or
    /// `latest` when none may.
    fn meet(&self, id: u64, at: Instant, latest: Instant) -> Instant {
        let from = at.checked_sub(JOIN_LOOKBACK).unwrap_or(at);
        // In deadline order, so the first that qualifies is the earliest.
        // From the first wait on, not from a binary search for `from`
        // (32 bytes more on mips, measured, for no gain): the thread parks
        // until the earliest latest, so the waits before this one are few
        // unless many checks' ticks are, and then one of them wakes the
        // thread soon anyway.
        self.queue
            .0
            .iter()
            .take(JOIN_SCAN)
            .skip_while(|e| e.key.0 < from)
            .take_while(|e| e.key.0 <= latest)
            .find(|e| e.key.1 != id && e.other >= at)
            .map_or(latest, |e| e.key.0.max(at))
    }
}

thread_local! {
    static TIMERS: RefCell<Timers> = RefCell::new(Timers::default());
}

/// The most a wait of [`sleep_until`] ends after its deadline: well below
/// the shortest check interval and timeout one would configure.
const MAX_SLACK: Duration = Duration::from_millis(50);

/// One wait on [`Timers`]; dropping it removes it.
struct Sleep {
    at: Instant,
    latest: Instant,
    /// The wait's id once queued.
    key: Option<u64>,
    /// Whether the thread's park meets another wait for it
    /// ([`sleep_window`]).
    join: bool,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            self.remove();
            return Poll::Ready(());
        }
        let (at, latest) = (self.at, self.latest);
        let id = TIMERS.with(|t| {
            let mut t = t.borrow_mut();
            let id = match self.key {
                Some(id) => id,
                None => {
                    t.next_id = t.next_id.wrapping_add(1);
                    t.next_id
                }
            };
            match t.queue.get_mut(&(at, id)) {
                Some(Entry { waker: Some(w), .. }) if w.will_wake(cx.waker()) => {}
                Some(e) => e.waker = Some(cx.waker().clone()),
                None => t.insert(id, at, latest, self.join, cx.waker().clone()),
            }
            id
        });
        self.key = Some(id);
        Poll::Pending
    }
}

impl Sleep {
    fn remove(&mut self) {
        if let Some(id) = self.key.take() {
            // A thread-local being torn down has nothing left to remove from.
            let _ = TIMERS.try_with(|t| {
                t.borrow_mut().remove(id, self.at, self.latest);
            });
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Wakes the tasks whose waits are due.
fn wake_due() {
    TIMERS.with(|t| {
        let mut t = t.borrow_mut();
        let now = Instant::now();
        while let Some((_, waker)) = t.pop_due(now) {
            // Scheduling a task does not poll it: no re-entry here.
            waker.wake();
        }
    })
}

/// Whether the current thread runs [`block_on`] (for assertions).
pub fn is_running() -> bool {
    RUNNING.with(Cell::get)
}

#[cfg(test)]
mod tests;
