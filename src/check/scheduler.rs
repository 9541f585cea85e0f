//! When each check runs, and the smol driver that runs it.
//!
//! The timing logic is pure ([`Schedule`], fed `now` as an offset from the
//! loop's start) so it is replayed with a fake clock. The driver
//! ([`run_check_loop`], [`VipChecks::trigger`]) is a thin loop around it.
//!
//! Like pathosd, a check runs at a fixed rate measured from its start (the
//! Go ticker), not "interval after completion"; ticks missed while a probe
//! overran are dropped, never bunched. Unlike pathosd, each check is offset
//! by a small deterministic splay so a hundred checks do not fire in the same
//! tick.

use super::hysteresis::Hysteresis;
use super::probe::Probe;
use super::result::CheckResult;
use crate::bgp::types::Prefix;
use crate::config::{Check, Vip};
use smol::channel::Sender;
use smol::lock::Mutex;
use std::sync::Arc;
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

pub use pathosd_core::check::Report;

/// One check of a VIP: its probe and its hysteresis.
#[derive(Debug)]
pub struct CheckRunner {
    vip: String,
    name: String,
    interval: Duration,
    probe: Probe,
    /// require_local_address: checked before every probe.
    guard: Option<super::guard::LocalAddressGuard>,
    /// Shared with the runner a reload builds for the same check with new
    /// timing, so the check's health and counters survive the reload.
    state: Arc<CheckState>,
}

/// The hysteresis of one check, kept across reloads that change only its
/// timing.
#[derive(Debug)]
struct CheckState {
    // Held for the whole probe + update, so scheduled and ad-hoc runs of the
    // same check never overlap and feed the counters in order.
    hysteresis: Mutex<Hysteresis>,
    /// New (rise, fall) from a reload, applied before the next result: the
    /// owner cannot wait for a probe in flight to release the lock.
    retune: std::sync::Mutex<Option<(u32, u32)>>,
}

impl CheckRunner {
    pub fn new(vip: &str, check: &Check, prefix: &Prefix) -> Result<CheckRunner, String> {
        Ok(CheckRunner {
            vip: vip.to_string(),
            name: check.effective_name(),
            interval: check.interval.get(),
            probe: Probe::new(check, prefix)?,
            guard: None,
            state: Arc::new(CheckState {
                hysteresis: Mutex::new(Hysteresis::new(check.rise, check.fall)),
                retune: std::sync::Mutex::new(None),
            }),
        })
    }

    /// Makes every run fail while the VIP address is not local.
    pub(crate) fn with_guard(
        mut self,
        guard: Option<super::guard::LocalAddressGuard>,
    ) -> CheckRunner {
        self.guard = guard;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Runs the probe once and feeds the result through the hysteresis.
    pub async fn run_once(&self, adhoc: bool) -> Report {
        let mut h = self.state.hysteresis.lock().await;
        let retune = self
            .state
            .retune
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((rise, fall)) = retune {
            h.retune(rise, fall);
        }
        let result = match self.guard.as_ref().map(|g| g.check()) {
            Some(Err(detail)) => {
                if h.healthy() || !h.reported() {
                    log::warn!("vip {} check {}: {detail}", self.vip, self.name);
                }
                CheckResult::fail(detail).with("local_address_assigned", false)
            }
            Some(Ok(())) => self.probe.run().await.with("local_address_assigned", true),
            None => self.probe.run().await,
        };
        let transition = h.observe(result.ok);
        if result.ok {
            log::debug!(
                "check passed: vip={} check={} duration={:?} detail={}",
                self.vip,
                self.name,
                result.duration,
                result.detail
            );
        } else {
            log::debug!(
                "check failed: vip={} check={} duration={:?} detail={}",
                self.vip,
                self.name,
                result.duration,
                result.detail
            );
        }
        Report {
            vip: self.vip.clone(),
            check: self.name.clone(),
            healthy: h.healthy(),
            consecutive_ok: h.consecutive_ok(),
            consecutive_fail: h.consecutive_fail(),
            transition,
            adhoc,
            result,
        }
    }
}

/// Runs one check forever: the first probe at startup, then every interval
/// (offset by the splay). Ends when the receiver of `tx` is dropped.
pub(crate) async fn run_check_loop(runner: Arc<CheckRunner>, tx: Sender<Report>) {
    let start = Instant::now();
    let mut sched = Schedule::new(&format!("{}/{}", runner.vip, runner.name), runner.interval);
    let mut due = sched.due();
    loop {
        async_io::Timer::at(start + due).await;
        let report = runner.run_once(false).await;
        if tx.send(report).await.is_err() {
            return;
        }
        due = sched.advance(start.elapsed());
    }
}

/// All checks of one VIP.
#[derive(Debug)]
pub struct VipChecks {
    pub vip: String,
    pub checks: Vec<Arc<CheckRunner>>,
    trigger: Mutex<()>,
}

impl VipChecks {
    /// Builds every probe of `vip`; an `always` VIP has none. Errors name
    /// the check.
    pub fn new(vip: &Vip) -> Result<VipChecks, String> {
        VipChecks::build(vip, None)
    }

    /// The checks of `vip` after a reload that changed only their timing
    /// (interval, timeout, rise, fall): new probes and loops, but each check
    /// keeps the health and counters of its namesake in `old`, clamped to
    /// the new rise and fall ([`Hysteresis::retune`]).
    pub fn retimed(vip: &Vip, old: &VipChecks) -> Result<VipChecks, String> {
        VipChecks::build(vip, Some(old))
    }

    fn build(vip: &Vip, old: Option<&VipChecks>) -> Result<VipChecks, String> {
        let prefix = vip
            .prefix
            .ok_or_else(|| format!("vip {}: prefix missing", vip.name))?;
        let mut checks = Vec::new();
        if !vip.always {
            for c in vip.check_list() {
                let mut r = CheckRunner::new(&vip.name, c, &prefix)
                    .map_err(|e| format!("vip {} check {}: {e}", vip.name, c.effective_name()))?
                    .with_guard(super::guard::LocalAddressGuard::from_vip(vip));
                let kept = old.and_then(|o| o.checks.iter().find(|k| k.name == r.name));
                if let Some(k) = kept {
                    *k.state.retune.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((c.rise, c.fall));
                    r.state = k.state.clone();
                }
                checks.push(Arc::new(r));
            }
        }
        Ok(VipChecks {
            vip: vip.name.clone(),
            checks,
            trigger: Mutex::new(()),
        })
    }

    /// The check names, in config order (for [`super::policy::Combiner`]).
    pub fn names(&self) -> Vec<String> {
        self.checks.iter().map(|c| c.name.clone()).collect()
    }

    /// One loop future per check; spawn each on the daemon's executor.
    pub fn loops(&self, tx: &Sender<Report>) -> Vec<impl std::future::Future<Output = ()>> {
        self.checks
            .iter()
            .map(|c| run_check_loop(c.clone(), tx.clone()))
            .collect()
    }

    /// Ad-hoc trigger: runs every check of the VIP now, one after another,
    /// through the same hysteresis, and sends each report on `tx` as the
    /// loops do. Triggers of one VIP are serialized.
    pub async fn trigger(&self, tx: &Sender<Report>) -> Vec<Report> {
        let _serial = self.trigger.lock().await;
        let mut out = Vec::new();
        for c in &self.checks {
            let r = c.run_once(true).await;
            // A closed channel means the daemon is stopping; the caller still
            // gets the reports.
            let _ = tx.send(r.clone()).await;
            out.push(r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

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
