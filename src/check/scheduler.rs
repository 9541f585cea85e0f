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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    interval: Duration,
    splay: Duration,
    next: u64,
}

impl Schedule {
    pub fn new(key: &str, interval: Duration) -> Schedule {
        Schedule {
            interval: interval.max(Duration::from_millis(1)),
            splay: splay(key, interval),
            next: 0,
        }
    }

    /// When the next run is due, as an offset from the loop's start.
    pub fn due(&self) -> Duration {
        if self.next == 0 {
            return Duration::ZERO;
        }
        let k = u32::try_from(self.next).unwrap_or(u32::MAX);
        self.splay.saturating_add(self.interval.saturating_mul(k))
    }

    /// Marks the due run as done, finishing at `now`, and returns when the
    /// following run is due: the first tick after the one just run that is
    /// not already in the past, so runs never overlap and an overrun skips
    /// ticks instead of firing them back to back.
    pub fn advance(&mut self, now: Duration) -> Duration {
        self.next = self.next.saturating_add(1);
        if now > self.due() {
            let behind = now.saturating_sub(self.splay).as_nanos() / self.interval.as_nanos();
            let k = u64::try_from(behind).unwrap_or(u64::MAX);
            self.next = k;
            // The tick exactly at `now` still counts as not in the past.
            if self.due() < now {
                self.next = k.saturating_add(1);
            }
        }
        self.due()
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
            schedule: Schedule::new(&format!("{}/{}", vip.name, check.name), check.interval),
        })
    }

    pub fn id(&self) -> CheckId {
        self.id
    }

    pub fn interval(&self) -> Duration {
        self.schedule.interval
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
                crate::rt::sleep_around(start + due, tick_slack(c.interval())).await;
                None
            };
            let trigger = trigger.or(tick).await;
            // Boxed while it runs: the sleeping loop does not carry its state.
            let result = Box::pin(c.run_once()).await;
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
            // An ad-hoc run leaves the schedule as it was; a scheduled tick that
            // passed meanwhile runs next.
            if trigger.is_none() {
                due = c.schedule.advance(start.elapsed());
            }
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

    /// Replays run completion times and records the due times.
    #[test]
    fn fixed_rate_replay() {
        let mut s = Schedule::new("k", MS(1000));
        let sp = splay("k", MS(1000));
        assert!(sp > MS(0) && sp < MS(500));
        // The first run is due at once, whatever the splay.
        assert_eq!(s.due(), MS(0));
        // Probe takes 100ms: the next is due on the splayed grid.
        assert_eq!(s.advance(sp + MS(100)), sp + MS(1000));
        // Fixed rate: a slow probe does not shift the grid.
        assert_eq!(s.advance(sp + MS(1900)), sp + MS(2000));
        // Finishing exactly on the tick: that tick is still run.
        assert_eq!(s.advance(sp + MS(3000)), sp + MS(3000));
        // Tick 3 is done by 3875; tick 4, run early (inside its slack, on
        // another wake-up of the thread) and done by 3875 too, is done: the
        // next is tick 5, not tick 4 again.
        assert_eq!(s.advance(sp + MS(3875)), sp + MS(4000));
        assert_eq!(s.advance(sp + MS(3875)), sp + MS(5000));
        s.next = 3;
        // Overrun by 2.5 intervals: missed ticks are dropped, not bunched.
        assert_eq!(s.advance(sp + MS(5500)), sp + MS(6000));
        assert_eq!(s.advance(sp + MS(6001)), sp + MS(7000));
    }

    #[test]
    fn runs_never_overlap() {
        // Whatever the completion times, the next due time is never before
        // the previous run finished.
        let mut s = Schedule::new("k2", MS(300));
        let mut now = s.due();
        for step in [10u64, 299, 300, 301, 1000, 5, 7777, 0] {
            now += MS(step);
            let due = s.advance(now);
            assert!(due >= now, "due {due:?} < now {now:?}");
            // At most one interval away, plus the splay after the
            // immediate first run.
            assert!(due < now + MS(300) + splay("k2", MS(300)) + MS(1));
            now = due;
        }
    }
}
