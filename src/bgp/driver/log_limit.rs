//! A rate limit for a log line that anyone who can reach the listener can
//! cause: one per connection from an address that is no configured neighbor.
//! logd keeps 16 KiB, so 500 such connections must not push every other line
//! out. Pure: the caller passes the time.
//!
//! The first `burst` events are logged one by one. After that, events are
//! only counted, and once per `interval` (counted from the first event) the
//! count is handed back for one summary line. An interval without events
//! re-arms the burst.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub(crate) struct LogLimit {
    burst: u32,
    interval: Duration,
    /// Events that may still be logged one by one.
    allowance: u32,
    /// Events held back since the last summary.
    suppressed: u32,
    /// End of the current interval (None: no event since the burst re-armed).
    window_end: Option<Instant>,
}

impl LogLimit {
    pub fn new(burst: u32, interval: Duration) -> LogLimit {
        LogLimit {
            burst,
            interval,
            allowance: burst,
            suppressed: 0,
            window_end: None,
        }
    }

    /// Ends the interval if it is over at `now`: returns how many events
    /// were held back in it, if any, for the summary line. Call it before
    /// [`LogLimit::event`] and when [`LogLimit::next_summary`] is due.
    pub fn summary(&mut self, now: Instant) -> Option<u32> {
        match self.window_end {
            Some(end) if now >= end => {}
            _ => return None,
        }
        let held = std::mem::take(&mut self.suppressed);
        if held == 0 {
            // A quiet interval: single lines again.
            self.allowance = self.burst;
            self.window_end = None;
            None
        } else {
            // Still busy: the next interval only counts, and says so at its end.
            self.window_end = now.checked_add(self.interval);
            Some(held)
        }
    }

    /// One event at `now`: true when it is to be logged on its own line,
    /// false when it is only counted.
    pub fn event(&mut self, now: Instant) -> bool {
        if self.window_end.is_none() {
            self.window_end = now.checked_add(self.interval);
        }
        if self.allowance > 0 {
            self.allowance -= 1;
            true
        } else {
            self.suppressed = self.suppressed.saturating_add(1);
            false
        }
    }

    /// When [`LogLimit::summary`] will have a count to report.
    pub(crate) fn next_summary(&self) -> Option<Instant> {
        self.window_end.filter(|_| self.suppressed > 0)
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_one_summary_per_interval_then_rearmed() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut l = LogLimit::new(3, Duration::from_secs(60));
        // 500 events in the first second: 3 logged, 497 counted.
        let mut logged = 0;
        for i in 0..500 {
            assert_eq!(l.summary(at(i)), None);
            if l.event(at(i)) {
                logged += 1;
            }
        }
        assert_eq!(logged, 3);
        assert_eq!(l.next_summary(), Some(at(60_000)));
        assert_eq!(l.summary(at(59_999)), None);
        assert_eq!(l.summary(at(60_000)), Some(497));
        // Still busy: the next interval counts only, one summary at its end.
        assert_eq!(l.next_summary(), None);
        for i in 0..10 {
            assert!(!l.event(at(61_000 + i)));
        }
        assert_eq!(l.next_summary(), Some(at(120_000)));
        assert_eq!(l.summary(at(120_000)), Some(10));
        // A quiet interval re-arms single lines.
        assert_eq!(l.next_summary(), None);
        assert_eq!(l.summary(at(180_000)), None);
        assert!(l.event(at(180_001)));
        assert!(l.event(at(180_002)));
        assert!(l.event(at(180_003)));
        assert!(!l.event(at(180_004)));
        assert_eq!(l.summary(at(240_001)), Some(1));
    }

    #[test]
    fn a_few_events_are_all_logged_and_need_no_summary() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(5, Duration::from_secs(60));
        for i in 0..5 {
            assert!(l.event(t0 + Duration::from_secs(i)));
        }
        assert_eq!(l.next_summary(), None);
        assert_eq!(l.summary(t0 + Duration::from_secs(61)), None);
        // The burst is available again after the quiet interval.
        assert!(l.event(t0 + Duration::from_secs(62)));
    }
}
