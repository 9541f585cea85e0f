//! Rise/fall hysteresis of one check: a pure counter machine, exactly the
//! seed's state diagram.
//!
//! ```text
//! [*] --> Unhealthy
//! Unhealthy --> Unhealthy: failure (ok = 0)
//! Unhealthy --> Unhealthy: success, ok < rise
//! Unhealthy --> Healthy:   success, ok >= rise
//! Healthy   --> Healthy:   success (fail = 0)
//! Healthy   --> Healthy:   failure, fail < fall
//! Healthy   --> Unhealthy: failure, fail >= fall
//! ```
//!
//! Only the two crossing edges return a [`Transition`]; every other step is a
//! counter update.

/// A crossing of the rise or fall threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// "rise threshold reached"
    BecameHealthy,
    /// "fall threshold reached"
    BecameUnhealthy,
}

impl Transition {
    pub fn reason(self) -> &'static str {
        match self {
            Transition::BecameHealthy => "rise threshold reached",
            Transition::BecameUnhealthy => "fall threshold reached",
        }
    }
}

/// Counters and health of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hysteresis {
    rise: u32,
    fall: u32,
    healthy: bool,
    consecutive_ok: u32,
    consecutive_fail: u32,
    reported: bool,
}

impl Hysteresis {
    /// A check starts Unhealthy: one that never reported counts as unhealthy.
    /// rise and fall below 1 are treated as 1 (validation rejects them).
    pub fn new(rise: u32, fall: u32) -> Hysteresis {
        Hysteresis {
            rise: rise.max(1),
            fall: fall.max(1),
            healthy: false,
            consecutive_ok: 0,
            consecutive_fail: 0,
            reported: false,
        }
    }

    pub fn healthy(&self) -> bool {
        self.healthy
    }

    pub fn rise(&self) -> u32 {
        self.rise
    }

    pub fn fall(&self) -> u32 {
        self.fall
    }

    /// Whether at least one result was observed.
    pub(crate) fn reported(&self) -> bool {
        self.reported
    }

    pub fn consecutive_ok(&self) -> u32 {
        self.consecutive_ok
    }

    pub fn consecutive_fail(&self) -> u32 {
        self.consecutive_fail
    }

    /// Whether rise or fall is counting: the last result went against the
    /// health and the threshold has not decided yet (a healthy check with
    /// failures below fall, an unhealthy one with successes below rise).
    /// A check that probes at a `fast_interval` does so while this holds.
    pub fn deciding(&self) -> bool {
        if self.healthy {
            self.consecutive_fail > 0
        } else {
            self.consecutive_ok > 0
        }
    }

    /// A reload changed rise or fall: health is kept (a healthy check stays
    /// healthy), the counters clamp to the new thresholds, and the next
    /// result decides with them (e.g. an unhealthy check with 2 successes
    /// whose rise became 2 turns healthy on its next success).
    pub(crate) fn retune(&mut self, rise: u32, fall: u32) {
        self.rise = rise.max(1);
        self.fall = fall.max(1);
        self.consecutive_ok = self.consecutive_ok.min(self.rise);
        self.consecutive_fail = self.consecutive_fail.min(self.fall);
    }

    /// Something the check depends on went away (a procd service stopped,
    /// a netifd interface went down): the check is unhealthy at once, as
    /// if `fall` failures had come, and needs `rise` successes to recover.
    pub(crate) fn fail_now(&mut self) -> Option<Transition> {
        self.reported = true;
        self.consecutive_ok = 0;
        self.consecutive_fail = self.fall;
        if self.healthy {
            self.healthy = false;
            return Some(Transition::BecameUnhealthy);
        }
        None
    }

    /// Feeds one probe result. Counters saturate at rise / fall (as pathosd
    /// does), so a long healthy run cannot overflow on 32-bit targets.
    pub fn observe(&mut self, ok: bool) -> Option<Transition> {
        self.reported = true;
        if ok {
            self.consecutive_fail = 0;
            self.consecutive_ok = self.consecutive_ok.saturating_add(1).min(self.rise);
            if !self.healthy && self.consecutive_ok >= self.rise {
                self.healthy = true;
                return Some(Transition::BecameHealthy);
            }
        } else {
            self.consecutive_ok = 0;
            self.consecutive_fail = self.consecutive_fail.saturating_add(1).min(self.fall);
            if self.healthy && self.consecutive_fail >= self.fall {
                self.healthy = false;
                return Some(Transition::BecameUnhealthy);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::Transition::*;
    use super::*;

    #[test]
    fn retune_keeps_health_and_clamps_the_counters() {
        let mut h = Hysteresis::new(3, 3);
        for _ in 0..3 {
            h.observe(true);
        }
        assert!(h.healthy());
        // Stricter rise: a healthy check stays healthy.
        h.retune(5, 1);
        assert!(h.healthy());
        assert_eq!(h.consecutive_ok(), 3);
        // Fall 1 now: the next failure makes it unhealthy.
        assert_eq!(h.observe(false), Some(BecameUnhealthy));
        // Unhealthy with 2 successes under rise 5; rise becomes 2: the
        // counter stays, the next success crosses.
        h.observe(true);
        h.observe(true);
        assert!(!h.healthy());
        h.retune(2, 1);
        assert_eq!(h.consecutive_ok(), 2);
        assert_eq!(h.observe(true), Some(BecameHealthy));
        // Lower thresholds clamp the counters.
        h.retune(1, 1);
        assert_eq!(h.consecutive_ok(), 1);
    }

    /// Replays a result string ('+' ok, '-' fail) and renders each step as
    /// health, counters and the transition, if any.
    fn replay(rise: u32, fall: u32, seq: &str) -> Vec<String> {
        let mut h = Hysteresis::new(rise, fall);
        seq.chars()
            .map(|c| {
                let t = h.observe(c == '+');
                format!(
                    "{}{}/{}{}",
                    if h.healthy() { 'H' } else { 'U' },
                    h.consecutive_ok(),
                    h.consecutive_fail(),
                    match t {
                        Some(BecameHealthy) => " rise",
                        Some(BecameUnhealthy) => " fall",
                        None => "",
                    }
                )
            })
            .collect()
    }

    /// Deciding from the first result against the health until the
    /// threshold crosses; a result back to the health ends it too.
    #[test]
    fn deciding_between_the_first_result_and_the_crossing() {
        let mut h = Hysteresis::new(2, 3);
        assert!(!h.deciding());
        let steps: Vec<bool> = [true, true, false, false, true, false, false, false, false]
            .iter()
            .map(|&ok| {
                h.observe(ok);
                h.deciding()
            })
            .collect();
        assert_eq!(
            steps,
            [true, false, true, true, false, true, true, false, false]
        );
        // rise 1 / fall 1: every result decides at once.
        let mut h = Hysteresis::new(1, 1);
        for ok in [true, false, false, true] {
            h.observe(ok);
            assert!(!h.deciding());
        }
    }

    #[test]
    fn starts_unhealthy_and_unreported() {
        let h = Hysteresis::new(3, 3);
        assert!(!h.healthy());
        assert!(!h.reported());
    }

    #[test]
    fn rise_three_fall_two() {
        assert_eq!(
            replay(3, 2, "++-+++--+-"),
            [
                "U1/0",
                "U2/0",
                "U0/1",
                "U1/0",
                "U2/0",
                "H3/0 rise",
                "H0/1",
                "U0/2 fall",
                "U1/0",
                "U0/1"
            ]
        );
    }

    #[test]
    fn never_healthy_never_transitions() {
        assert!(replay(1, 3, "------").iter().all(|s| !s.contains(' ')));
        assert_eq!(replay(1, 3, "---").last().unwrap(), "U0/3");
    }

    #[test]
    fn rise_one_fall_one_flips_every_change() {
        assert_eq!(
            replay(1, 1, "+-+-"),
            ["H1/0 rise", "U0/1 fall", "H1/0 rise", "U0/1 fall"]
        );
    }

    #[test]
    fn counters_saturate() {
        let mut h = Hysteresis::new(2, 2);
        for _ in 0..10_000 {
            h.observe(true);
        }
        assert_eq!(h.consecutive_ok(), 2);
        assert_eq!(h.observe(false), None);
        assert_eq!(h.observe(false), Some(BecameUnhealthy));
        for _ in 0..10_000 {
            assert_eq!(h.observe(false), None);
        }
        assert_eq!(h.consecutive_fail(), 2);
    }

    proptest::proptest! {
        /// Exactly the crossings are reported: health after each step equals
        /// health before, flipped iff a transition was returned, and the
        /// counters never exceed rise/fall.
        #[test]
        fn only_crossings_emit(rise in 1u32..5, fall in 1u32..5, seq in proptest::collection::vec(proptest::bool::ANY, 0..60)) {
            let mut h = Hysteresis::new(rise, fall);
            for ok in seq {
                let before = h.healthy();
                let t = h.observe(ok);
                proptest::prop_assert_eq!(t.is_some(), before != h.healthy());
                proptest::prop_assert!(h.consecutive_ok() <= rise && h.consecutive_fail() <= fall);
                proptest::prop_assert!(h.consecutive_ok() == 0 || h.consecutive_fail() == 0);
                if let Some(t) = t {
                    proptest::prop_assert_eq!(t == BecameHealthy, ok);
                }
            }
        }
    }
}
