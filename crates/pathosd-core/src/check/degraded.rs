//! Graded health of one check: whether its passing probes have become too
//! slow. A check that passes but is slow keeps the VIP announced, yet
//! pessimized (one UPDATE, the lower_priority step), before a failure
//! withdraws it. It follows the check's own rise and fall, and changes at
//! most once per hold-down period, so that a backend hovering at the
//! threshold moves the route at most that often.

use super::Hysteresis;
use crate::config::run::Degraded;
use std::time::{Duration, Instant};

/// The slow / fast counters of one check with graded health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Degradation {
    limits: Degraded,
    slow_run: u32,
    fast_run: u32,
    degraded: bool,
    /// When `degraded` last changed.
    changed: Option<Instant>,
}

impl Degradation {
    /// Not degraded until `fall` slow passes in a row say so.
    pub fn new(limits: Degraded) -> Degradation {
        Degradation {
            limits,
            slow_run: 0,
            fast_run: 0,
            degraded: false,
            changed: None,
        }
    }

    pub fn degraded(&self) -> bool {
        self.degraded
    }

    pub fn latency(&self) -> Duration {
        self.limits.latency
    }

    /// A reload's new limits; the state is kept.
    pub fn retune(&mut self, limits: Degraded) {
        self.limits = limits;
    }

    /// Feeds one probe result, counted against the rise and fall of the
    /// check's own `health`; Some(degraded) when it changed. A failed probe
    /// counts neither way: failure is the check's health.
    pub fn observe(
        &mut self,
        ok: bool,
        took: Duration,
        now: Instant,
        health: &Hysteresis,
    ) -> Option<bool> {
        let (rise, fall) = (health.rise(), health.fall());
        if !ok {
            return None;
        }
        let held = self
            .changed
            .is_none_or(|t| now.saturating_duration_since(t) >= self.limits.hold_down);
        if took > self.limits.latency {
            self.fast_run = 0;
            self.slow_run = self.slow_run.saturating_add(1).min(fall);
            if !self.degraded && self.slow_run >= fall && held {
                return Some(self.flip(now));
            }
        } else {
            self.slow_run = 0;
            self.fast_run = self.fast_run.saturating_add(1).min(rise);
            if self.degraded && self.fast_run >= rise && held {
                return Some(self.flip(now));
            }
        }
        None
    }

    fn flip(&mut self, now: Instant) -> bool {
        self.degraded = !self.degraded;
        self.changed = Some(now);
        self.degraded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn fall_slow_passes_degrade_rise_fast_ones_recover_and_failures_count_neither_way() {
        let t0 = Instant::now();
        let limits = Degraded {
            latency: ms(200),
            hold_down: Duration::ZERO,
        };
        let mut d = Degradation::new(limits);
        let h = Hysteresis::new(2, 3);
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(d.observe(true, ms(300), at(1), &h), None);
        assert_eq!(d.observe(true, ms(300), at(2), &h), None);
        assert_eq!(d.observe(false, ms(900), at(3), &h), None, "a failure");
        assert_eq!(d.observe(true, ms(300), at(4), &h), Some(true));
        assert!(d.degraded());
        assert_eq!(
            d.observe(true, ms(200), at(5), &h),
            None,
            "at the limit is fast"
        );
        assert_eq!(d.observe(true, ms(50), at(6), &h), Some(false));
    }

    #[test]
    fn a_backend_hovering_at_the_limit_changes_at_most_once_per_hold_down() {
        let t0 = Instant::now();
        let limits = Degraded {
            latency: ms(200),
            hold_down: Duration::from_secs(60),
        };
        let mut d = Degradation::new(limits);
        let h = Hysteresis::new(1, 1);
        let mut changes = Vec::new();
        // Slow and fast in turn, every second, for ten minutes.
        for s in 0..600u64 {
            let took = if s % 2 == 0 { ms(250) } else { ms(150) };
            if let Some(v) = d.observe(true, took, t0 + Duration::from_secs(s), &h) {
                changes.push((s, v));
            }
        }
        assert_eq!(changes.first(), Some(&(0, true)));
        assert!(
            changes.windows(2).all(|w| w[1].0 - w[0].0 >= 60),
            "{changes:?}"
        );
        assert_eq!(changes.len(), 10, "{changes:?}");
    }
}
