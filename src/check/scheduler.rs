//! When each check runs, and the smol driver that runs it.
//!
//! The timing logic is pure ([`Schedule`], fed `now` as an offset from the
//! loop's start) so it is replayed with a fake clock. The driver
//! ([`run_check_loop`]) is a thin loop around it: it runs the probe and
//! sends the raw result to the owner; hysteresis, checks policy and
//! triggers' bookkeeping are the engine's and the owner's.
//!
//! Like pathosd, a check runs at a fixed rate measured from its start (the
//! Go ticker), not "interval after completion"; ticks missed while a probe
//! overran are dropped, never bunched. Unlike pathosd, each check is offset
//! by a small deterministic splay so a hundred checks do not fire in the same
//! tick.

use super::hysteresis::Hysteresis;
use super::probe::Probe;
use super::result::CheckResult;
use crate::chan::Tx;
use crate::config::{CheckSpec, VipSpec};
use crate::daemon::engine::{CheckId, CheckRun};
use smol::future::FutureExt;
use std::cell::Cell;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Upper bound of the splay window; a longer delay would only slow startup.
const MAX_SPLAY: Duration = Duration::from_secs(1);

/// A deterministic delay in [0, min(interval / 2, 1s)) derived from `key`
/// (FNV-1a), at millisecond granularity.
pub fn splay(key: &str, interval: Duration) -> Duration {
    let window = (interval / 2).min(MAX_SPLAY);
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    if window_ms == 0 {
        return Duration::ZERO;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Duration::from_millis(h % window_ms)
}

/// Fixed-rate timing of one check: the first run is due at once (a VIP
/// whose service is up must not wait up to a second of splay to be
/// announced), the following ones at `splay + k * interval` for k = 1, 2...
/// The splay only spreads the steady state.
///
/// With a `fast_interval` ([`Schedule::with_fast`]), a result that sets
/// rise or fall counting (the first failure of a healthy check, the first
/// success of an unhealthy one) makes the next run due one fast interval
/// after the run's time, and so on at that rate until the threshold
/// decides (or a result goes back to the health); then the runs are back
/// on the grid, at its first tick that is not in the past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    interval: Duration,
    splay: Duration,
    next: u64,
    /// Only for a check with a fast_interval shorter than its interval: a
    /// check without one pays a pointer.
    fast: Option<Box<Fast>>,
}

/// What the fast runs of a check need.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fast {
    interval: Duration,
    /// The check's rise / fall counters, fed the same results as the
    /// engine's (every result of a check comes from its one loop), so the
    /// loop knows when they are counting without asking the owner.
    counters: Hysteresis,
    /// When the next fast run is due; None: the runs are on the grid.
    due: Option<Duration>,
}

impl Schedule {
    pub fn new(key: &str, interval: Duration) -> Schedule {
        Schedule {
            interval: interval.max(Duration::from_millis(1)),
            splay: splay(key, interval),
            next: 0,
            fast: None,
        }
    }

    /// Runs at `fast` while the counters of rise / fall (those of a check
    /// that has not reported yet) are counting. A `fast` not shorter than
    /// the interval changes nothing.
    pub fn with_fast(mut self, fast: Duration, rise: u32, fall: u32) -> Schedule {
        if fast < self.interval {
            self.fast = Some(Box::new(Fast {
                interval: fast.max(Duration::from_millis(1)),
                counters: Hysteresis::new(rise, fall),
                due: None,
            }));
        }
        self
    }

    /// The check's counters as they are (the engine's, which a reload keeps
    /// while the loop is new): the loop's copy starts from them.
    pub fn seed(&mut self, counters: &Hysteresis) {
        if let Some(f) = self.fast.as_mut() {
            f.counters = counters.clone();
        }
    }

    /// The time between runs now: the fast interval while fast runs are
    /// due, else the interval.
    pub fn period(&self) -> Duration {
        match self.fast.as_deref() {
            Some(Fast {
                interval,
                due: Some(_),
                ..
            }) => *interval,
            _ => self.interval,
        }
    }

    /// When the next run is due, as an offset from the loop's start.
    pub fn due(&self) -> Duration {
        if let Some(d) = self.fast.as_ref().and_then(|f| f.due) {
            return d;
        }
        self.grid_due()
    }

    fn grid_due(&self) -> Duration {
        if self.next == 0 {
            return Duration::ZERO;
        }
        let k = u32::try_from(self.next).unwrap_or(u32::MAX);
        self.splay.saturating_add(self.interval.saturating_mul(k))
    }

    /// Marks the due run as done, finishing at `now` with result `ok`, and
    /// returns when the following run is due: a fast run while rise / fall
    /// counts, else the first tick after the one just run that is not
    /// already in the past, so runs never overlap and an overrun skips
    /// ticks instead of firing them back to back.
    pub fn advance(&mut self, now: Duration, ok: bool) -> Duration {
        let base = self.due();
        let on_grid = self.fast.as_ref().is_none_or(|f| f.due.is_none());
        if on_grid {
            self.next = self.next.saturating_add(1);
        }
        if let Some(f) = self.fast.as_mut() {
            f.counters.observe(ok);
            f.due = f.counters.deciding().then(|| {
                // The fast grid from this run's time; a tick already past
                // (a run late by its slack) is skipped, as on the grid.
                let step = f.interval.as_nanos();
                let behind = now.saturating_sub(base).as_nanos();
                let k = behind.div_ceil(step).max(1);
                base.saturating_add(
                    f.interval
                        .saturating_mul(u32::try_from(k).unwrap_or(u32::MAX)),
                )
            });
        }
        self.catch_up(now);
        self.due()
    }

    /// An ad-hoc run (a trigger) ended at `now` with result `ok`: the grid
    /// stays as it was (a tick that passed meanwhile runs next), but the
    /// result counts as any other: fast runs start one fast interval after
    /// it if it set rise / fall counting, and end if it decided.
    pub fn ad_hoc(&mut self, now: Duration, ok: bool) -> Duration {
        if let Some(f) = self.fast.as_mut() {
            f.counters.observe(ok);
            if !f.counters.deciding() {
                if f.due.take().is_some() {
                    // The ticks that passed while fast runs were due
                    // were covered by them.
                    self.catch_up(now);
                }
            } else if f.due.is_none() {
                f.due = Some(now.saturating_add(f.interval));
            }
        }
        self.due()
    }

    /// Moves the grid to its first tick not before `now` if it is behind.
    fn catch_up(&mut self, now: Duration) {
        if now > self.grid_due() {
            let behind = now.saturating_sub(self.splay).as_nanos() / self.interval.as_nanos();
            let k = u64::try_from(behind).unwrap_or(u64::MAX);
            self.next = k;
            // The tick exactly at `now` still counts as not in the past.
            if self.grid_due() < now {
                self.next = k.saturating_add(1);
            }
        }
    }
}

/// One check of a VIP as its loop runs it: the probe, the local address
/// guard and the schedule. It holds no health: the loop sends each raw
/// result to the owner, whose engine applies the check's hysteresis.
#[derive(Debug)]
pub struct CheckLoop {
    id: CheckId,
    probe: Probe,
    /// require_local_address: checked before every probe.
    guard: Option<super::guard::LocalAddressGuard>,
    schedule: Schedule,
}

impl CheckLoop {
    /// The loop of `check` of `vip`, tagged with the engine's `id` for it.
    /// Errors name the VIP and the check.
    pub fn new(id: CheckId, vip: &VipSpec, check: &CheckSpec) -> Result<CheckLoop, String> {
        let err = |e: String| format!("vip {} check {}: {e}", vip.name, check.name);
        Ok(CheckLoop {
            id,
            probe: Probe::new(check).map_err(err)?,
            guard: super::guard::LocalAddressGuard::from_vip(vip),
            schedule: Schedule::new(&format!("{}/{}", vip.name, check.name), check.interval)
                .with_fast(check.fast_interval, check.rise, check.fall),
        })
    }

    pub fn id(&self) -> CheckId {
        self.id
    }

    pub fn interval(&self) -> Duration {
        self.schedule.interval
    }

    /// The check's rise / fall counters as the engine holds them (a reload
    /// that restarts the loop keeps them): fast runs go on from there.
    pub fn seed(&mut self, counters: &Hysteresis) {
        self.schedule.seed(counters);
    }

    /// Runs the probe once (after the guard, if any).
    pub async fn run_once(&self) -> CheckResult {
        match self.guard.as_ref().map(|g| g.check()) {
            // The engine warns about it (Output::LocalAddressMissing).
            Some(Err(detail)) => CheckResult::fail(detail).with("local_address_assigned", false),
            Some(Ok(())) => self.probe_once().await.with("local_address_assigned", true),
            None => self.probe_once().await,
        }
    }

    /// The probe's future is boxed only while it runs (per probe kind, in
    /// [`Probe::run`]), so a sleeping loop does not carry it.
    async fn probe_once(&self) -> CheckResult {
        self.probe.run().await
    }
}

/// Where the owner leaves an ad-hoc run request for one check loop: one
/// request and the loop's waker. A channel would do, but it costs ≈ 0.8 KiB
/// per check (cache-padded); this is 32 bytes. The owner and the loop are
/// tasks on the daemon's one thread (`crate::rt`) and share it as an `Rc`:
/// `Cell`s, each value moved in or out at once, nothing borrowed across an
/// await.
#[derive(Default)]
pub struct TriggerSlot {
    id: Cell<Option<u64>>,
    waker: Cell<Option<Waker>>,
}

impl std::fmt::Debug for TriggerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = self.id.get();
        f.debug_struct("TriggerSlot").field("id", &id).finish()
    }
}

impl TriggerSlot {
    /// Asks the loop for one run tagged with trigger `id`. False if a request
    /// of another run is still waiting (at most one trigger run per VIP is
    /// in flight, see `daemon::triggers`, so that does not happen); asking
    /// again for the run that waits is granted (a reload asks the loops of
    /// a VIP whose timing changed again, and they may be the old ones).
    pub fn request(&self, id: u64) -> bool {
        if let Some(old) = self.id.replace(Some(id)) {
            self.id.set(Some(old));
            return old == id;
        }
        if let Some(w) = self.waker.take() {
            w.wake();
        }
        true
    }

    /// The next request.
    async fn next(&self) -> u64 {
        std::future::poll_fn(|cx| match self.id.take() {
            Some(id) => Poll::Ready(id),
            None => {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
}

/// The checks of `vip` as loops, in config order, tagged with the engine's
/// ids of its checks (`ids[i]` for the i-th check); an `always` VIP has
/// none. Errors name the check.
pub fn build(vip: &VipSpec, ids: &[CheckId]) -> Result<Vec<CheckLoop>, String> {
    vip.checks
        .iter()
        .zip(ids)
        .map(|(c, id)| CheckLoop::new(*id, vip, c))
        .collect()
}

/// How far a check's tick may start from its time, early or late: 1/8 of
/// its interval, at most [`MAX_TICK_SLACK`]. The tick runs at the first
/// wake-up of the daemon's thread from its time minus the slack on (a
/// probe's reply, another tick, a BGP message), and at its time plus the
/// slack if nothing woke the thread before (`rt::sleep_around`). Why: each
/// wake-up of the daemon's thread costs more than a loopback probe, and
/// ticks that may end later share more wake-ups; with 100 tcp checks at
/// 1 s spread by the splay over 500 ms, about 5 wake-ups a second instead
/// of 10 (1/16, at most 50 ms, the runtime's default): 18 % less CPU,
/// measured. Early as well as late: one HTTP check next to a
/// BGP session at hold time 3 s, whose KEEPALIVEs wake the thread about
/// twice a second, shares about half of its ticks instead of a quarter
/// (measured: "The daemon thread waits for its own timers" in the history
/// of docs/performance.md).
/// The grid itself does not move: a tick run early is done, the next one
/// is due an interval after its time ([`Schedule::advance`]).
fn tick_slack(interval: Duration) -> Duration {
    (interval / 8).min(MAX_TICK_SLACK)
}

/// The most a tick starts late: well below any interval one would use.
const MAX_TICK_SLACK: Duration = Duration::from_millis(125);

/// Runs one check until the receiver of `tx` (an unbounded channel) is
/// dropped (or the task is):
/// the first probe at once, then every interval (offset by the splay), and
/// an ad-hoc run whenever a trigger id is left in `triggers`. Scheduled and
/// ad-hoc runs are one after the other in this one task, so they never
/// overlap and their results reach `tx` in the order they ran.
// Not an `async fn` on purpose (see the body).
#[allow(clippy::manual_async_fn)]
pub fn run_check_loop(
    mut c: CheckLoop,
    triggers: Rc<TriggerSlot>,
    tx: Tx<CheckRun>,
) -> impl std::future::Future<Output = ()> {
    // An `async fn` would hold its arguments twice (as passed, and moved
    // into its body); the block uses them in place (608 -> 392 bytes).
    async move {
        let start = Instant::now();
        let mut due = c.schedule.due();
        loop {
            let trigger = async { Some(triggers.next().await) };
            let tick = async {
                crate::rt::sleep_around(start + due, tick_slack(c.schedule.period())).await;
                None
            };
            let trigger = trigger.or(tick).await;
            // Boxed while it runs: the sleeping loop does not carry its state.
            let result = Box::pin(c.run_once()).await;
            let ok = result.ok;
            let run = CheckRun {
                check: c.id,
                result,
                trigger,
            };
            // The owner's channel is unbounded: a send only fails once it is
            // closed (the daemon is stopping). No send future in the loop's
            // state either.
            if tx.try_send(run).is_err() {
                return;
            }
            // An ad-hoc run leaves the grid as it was (a scheduled tick that
            // passed meanwhile runs next); its result may start or end fast
            // runs.
            due = match trigger {
                None => c.schedule.advance(start.elapsed(), ok),
                Some(_) => c.schedule.ad_hoc(start.elapsed(), ok),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn tick_slack_is_an_eighth_of_the_interval_at_most_125ms() {
        assert_eq!(tick_slack(MS(1000)), MS(125));
        assert_eq!(tick_slack(MS(400)), MS(50));
        assert_eq!(tick_slack(Duration::from_secs(60)), MS(125));
        assert_eq!(tick_slack(MS(1)), Duration::from_micros(125));
    }

    #[test]
    fn splay_is_deterministic_small_and_spread() {
        let i = Duration::from_secs(1);
        assert_eq!(splay("web/http", i), splay("web/http", i));
        let mut seen = std::collections::BTreeSet::new();
        for n in 0..100 {
            let s = splay(&format!("vip{n}/tcp"), i);
            assert!(s < MS(500));
            seen.insert(s);
        }
        // A hundred checks land on (almost) a hundred different ticks.
        assert!(seen.len() > 85, "{}", seen.len());
        assert!(splay("x", Duration::from_secs(60)) < Duration::from_secs(1));
        assert_eq!(splay("x", MS(1)), Duration::ZERO);
    }

    impl Schedule {
        /// A run that passed (on a check without fast runs, the result
        /// does not matter).
        fn advance_ok(&mut self, now: Duration) -> Duration {
            self.advance(now, true)
        }
    }

    /// Replays run completion times and records the due times.
    #[test]
    fn fixed_rate_replay() {
        let mut s = Schedule::new("k", MS(1000));
        let sp = splay("k", MS(1000));
        assert!(sp > MS(0) && sp < MS(500));
        // The first run is due at once, whatever the splay.
        assert_eq!(s.due(), MS(0));
        // Probe takes 100ms: the next is due on the splayed grid.
        assert_eq!(s.advance_ok(sp + MS(100)), sp + MS(1000));
        // Fixed rate: a slow probe does not shift the grid.
        assert_eq!(s.advance_ok(sp + MS(1900)), sp + MS(2000));
        // Finishing exactly on the tick: that tick is still run.
        assert_eq!(s.advance_ok(sp + MS(3000)), sp + MS(3000));
        // Tick 3 is done by 3875; tick 4, run early (inside its slack, on
        // another wake-up of the thread) and done by 3875 too, is done: the
        // next is tick 5, not tick 4 again.
        assert_eq!(s.advance_ok(sp + MS(3875)), sp + MS(4000));
        assert_eq!(s.advance_ok(sp + MS(3875)), sp + MS(5000));
        s.next = 3;
        // Overrun by 2.5 intervals: missed ticks are dropped, not bunched.
        assert_eq!(s.advance_ok(sp + MS(5500)), sp + MS(6000));
        assert_eq!(s.advance_ok(sp + MS(6001)), sp + MS(7000));
    }

    #[test]
    fn runs_never_overlap() {
        // Whatever the completion times, the next due time is never before
        // the previous run finished.
        let mut s = Schedule::new("k2", MS(300));
        let mut now = s.due();
        for step in [10u64, 299, 300, 301, 1000, 5, 7777, 0] {
            now += MS(step);
            let due = s.advance(now, true);
            assert!(due >= now, "due {due:?} < now {now:?}");
            // At most one interval away, plus the splay after the
            // immediate first run.
            assert!(due < now + MS(300) + splay("k2", MS(300)) + MS(1));
            now = due;
        }
    }

    /// A healthy check (rise 2, fall 3) at 10 s with a fast_interval of
    /// 1 s: the first failure brings the next run to 1 s after its time,
    /// the third one decides and the runs are back on the 10 s grid; a
    /// success back to the health ends the fast runs as well.
    #[test]
    fn fast_runs_while_rise_or_fall_counts() {
        let i = Duration::from_secs(10);
        let mut s = Schedule::new("f", i).with_fast(MS(1000), 2, 3);
        let sp = splay("f", i);
        // rise 2 from the start: the first success sets rise counting.
        assert_eq!(s.advance(MS(5), true), MS(1000));
        assert_eq!(s.period(), MS(1000));
        // The second one decides: back on the grid, its next tick.
        assert_eq!(s.advance(MS(1005), true), sp + i);
        assert_eq!(s.period(), i);
        assert_eq!(s.advance(sp + MS(10_005), true), sp + 2 * i);
        // The first failure: fast runs from the run's time.
        assert_eq!(s.advance(sp + MS(20_005), false), sp + MS(21_000));
        assert_eq!(s.advance(sp + MS(21_005), false), sp + MS(22_000));
        // Fall decides at the third: the grid's next tick.
        assert_eq!(s.advance(sp + MS(22_005), false), sp + 3 * i);
        // Unhealthy now; one success (rise 2) sets it counting, a failure
        // ends that: back to the grid.
        assert_eq!(s.advance(sp + MS(30_005), true), sp + MS(31_000));
        assert_eq!(s.advance(sp + MS(31_005), false), sp + 4 * i);
        // A fast run that ends late, past the next fast tick (its slack
        // and its timeout), skips that tick, as the grid does.
        let mut s = Schedule::new("f", i).with_fast(MS(1000), 3, 3);
        assert_eq!(s.advance(MS(5), true), MS(1000));
        assert_eq!(s.advance(MS(2_100), true), MS(3000));
        // A loop started by a reload takes the engine's counters: an
        // unhealthy check at 2 successes of rise 3 decides at its next.
        let mut s = Schedule::new("f", i).with_fast(MS(1000), 3, 3);
        let mut kept = Hysteresis::new(3, 3);
        kept.observe(true);
        kept.observe(true);
        s.seed(&kept);
        assert_eq!(s.advance(MS(5), true), sp + i);
    }

    /// An ad-hoc run's result counts: it starts fast runs one fast
    /// interval after it, and a deciding one ends them, the grid's ticks
    /// that passed meanwhile dropped.
    #[test]
    fn an_ad_hoc_result_starts_and_ends_fast_runs() {
        let i = Duration::from_secs(10);
        let mut s = Schedule::new("g", i).with_fast(MS(500), 1, 2);
        let sp = splay("g", i);
        assert_eq!(s.advance(MS(5), true), sp + i);
        // Healthy; a triggered failure: a fast run 500 ms later.
        assert_eq!(s.ad_hoc(MS(3_000), false), MS(3_500));
        // A triggered success before it: back on the grid.
        assert_eq!(s.ad_hoc(MS(3_200), true), sp + i);
        // Failing again, past the grid tick: fast runs, then fall decides
        // after the tick at sp + 10 s passed; the next is the one after.
        assert_eq!(s.ad_hoc(MS(9_900), false), MS(10_400));
        assert_eq!(s.advance(MS(10_405) + sp, false), sp + 2 * i);
        // No fast_interval, or one not shorter than interval: no fast runs.
        let mut s = Schedule::new("h", i).with_fast(i, 1, 3);
        assert!(s.fast.is_none());
        assert_eq!(s.advance(MS(5), false), splay("h", i) + i);
        assert_eq!(s.ad_hoc(MS(7), false), splay("h", i) + i);
    }
}
