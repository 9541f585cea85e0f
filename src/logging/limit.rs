//! Rate limits for log lines that anyone can provoke at will: a connection
//! to the BGP port from an address that is no configured neighbor, a refused
//! API request, a full API connection table. logd keeps 16 KiB, so 500 such
//! lines must not push every other line out.
//!
//! A [`LogLimit`] lets the first `burst` events of a window be logged one by
//! one and counts the rest; once the window is over, the count is handed
//! back for the caller to report, in one of two ways:
//!
//! * [`LogLimit::allow`] (the API's limiters, one line per window): the
//!   first line after the window carries the count ("(N more like it not
//!   logged)"), and a new window starts with it.
//! * [`LogLimit::event`] and [`LogLimit::summary`] (the BGP listener's: 5
//!   single lines, then one summary line a minute): the count is a line of
//!   its own at the window's end, which the caller wakes for
//!   ([`LogLimit::next_summary`]); while the events go on the next window
//!   only counts, and a window without events re-arms the single lines.
//!
//! The limiters live on the daemon's one thread (the API's are
//! thread-local statics), so the state is a `Cell`, read and written at
//! once and never across an await, not a lock.

use std::cell::Cell;
use std::time::{Duration, Instant};

pub(crate) struct LogLimit {
    burst: u32,
    /// The window's length for [`LogLimit::summary`] (`allow` is given its
    /// own at each call).
    interval: Duration,
    state: Cell<Window>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    /// When the window began (None: no event since the single lines were
    /// re-armed).
    start: Option<Instant>,
    /// Events that may still be logged one by one.
    allowance: u32,
    /// Events counted but not logged since the last report.
    held: u64,
}

/// What starts after a window with events held back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AfterBusy {
    /// Single lines again (the report rides on the first of them).
    Rearm,
    /// Another window that only counts.
    Count,
}

impl LogLimit {
    /// One line per window, the window's length given to each
    /// [`LogLimit::allow`].
    pub const fn new() -> LogLimit {
        LogLimit::summarized(1, Duration::ZERO)
    }

    /// `burst` single lines, then one summary per `interval` while the
    /// events go on.
    pub const fn summarized(burst: u32, interval: Duration) -> LogLimit {
        LogLimit {
            burst,
            interval,
            state: Cell::new(Window {
                start: None,
                allowance: burst,
                held: 0,
            }),
        }
    }

    /// `Some(held)` when a line may be logged now (`held` lines were left
    /// out since the last one), `None` when this one is left out. Windows
    /// are `every` long.
    pub fn allow(&self, every: Duration) -> Option<u64> {
        let now = Instant::now();
        let held = self.end_window(now, every, AfterBusy::Rearm).unwrap_or(0);
        self.event(now).then_some(held)
    }

    /// Ends the window if it is over at `now`: returns how many events were
    /// held back in it, if any, for the summary line. Call it before
    /// [`LogLimit::event`] and when [`LogLimit::next_summary`] is due.
    pub fn summary(&self, now: Instant) -> Option<u64> {
        self.end_window(now, self.interval, AfterBusy::Count)
    }

    /// One event at `now`: true when it is to be logged on its own line,
    /// false when it is only counted.
    pub fn event(&self, now: Instant) -> bool {
        let mut w = self.state.get();
        w.start.get_or_insert(now);
        let single = w.allowance > 0;
        if single {
            w.allowance -= 1;
        } else {
            w.held = w.held.saturating_add(1);
        }
        self.state.set(w);
        single
    }

    /// When [`LogLimit::summary`] will have a count to report.
    pub fn next_summary(&self) -> Option<Instant> {
        let w = self.state.get();
        w.start
            .filter(|_| w.held > 0)
            .and_then(|t| t.checked_add(self.interval))
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    fn end_window(&self, now: Instant, length: Duration, after: AfterBusy) -> Option<u64> {
        let mut w = self.state.get();
        let over = w
            .start
            .is_some_and(|t| now.saturating_duration_since(t) >= length);
        if !over {
            return None;
        }
        let held = std::mem::take(&mut w.held);
        if held == 0 || after == AfterBusy::Rearm {
            w.allowance = self.burst;
            w.start = None;
        } else {
            w.start = Some(now);
        }
        self.state.set(w);
        (held > 0).then_some(held)
    }
}

impl Default for LogLimit {
    fn default() -> LogLimit {
        LogLimit::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_one_summary_per_interval_then_rearmed() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let l = LogLimit::summarized(3, Duration::from_secs(60));
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
        let l = LogLimit::summarized(5, Duration::from_secs(60));
        for i in 0..5 {
            assert!(l.event(t0 + Duration::from_secs(i)));
        }
        assert_eq!(l.next_summary(), None);
        assert_eq!(l.summary(t0 + Duration::from_secs(61)), None);
        // The burst is available again after the quiet interval.
        assert!(l.event(t0 + Duration::from_secs(62)));
    }
}
