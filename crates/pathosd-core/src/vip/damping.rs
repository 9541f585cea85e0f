//! Route flap damping of a VIP's own announcements, after RFC 2439's
//! algorithm: a figure of merit (the penalty) grows by a fixed amount with
//! each flap and decays exponentially with a half-life; above the cutoff
//! (suppress) the VIP is damped, and it is released once the penalty has
//! decayed below the reuse threshold. The penalty never exceeds a ceiling,
//! reuse × 2^(max_suppress / half_life), so that the maximum hold-down
//! time bounds the suppression after the last flap. Pure: times come in.
//!
//! Integer arithmetic only: 2^-x within one half-life is a table of eight
//! steps with linear interpolation (at most 0.1 % off), so no libm
//! function lands in the router's binary.

use std::time::{Duration, Instant};

/// What one flap adds to the penalty: the unit suppress and reuse are
/// given in, as in the routers' own damping (a withdrawal counts 1000).
pub const FLAP_PENALTY: u32 = 1000;

/// A VIP's damping parameters, from its `policy.damping`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DampingPolicy {
    /// In ms (validation keeps it within [`MAX_HALF_LIFE`]).
    pub half_life: u32,
    pub suppress: u32,
    pub reuse: u32,
    /// The most the penalty can be: it decays below `reuse` within
    /// max_suppress.
    pub ceiling: u32,
}

/// The longest half-life and max_suppress validation takes: the routers'
/// own ranges (45 minutes and 12 hours), and times in ms fit a u32, so
/// the arithmetic below is 32-bit where a router's CPU is.
pub const MAX_HALF_LIFE: Duration = Duration::from_secs(45 * 60);
pub const MAX_SUPPRESS: Duration = Duration::from_secs(12 * 3600);

impl DampingPolicy {
    pub fn new(
        half_life: Duration,
        suppress: u32,
        reuse: u32,
        max_suppress: Duration,
    ) -> DampingPolicy {
        let h = millis(half_life.min(MAX_HALF_LIFE)).max(1);
        DampingPolicy {
            half_life: h,
            suppress,
            reuse,
            ceiling: ceiling(reuse, max_suppress, h),
        }
    }
}

/// 2^(-i/8) in 65536ths, i = 0..=8.
const STEPS: [u32; 9] = [
    65536, 60097, 55109, 50535, 46341, 42495, 38968, 35734, 32768,
];

/// `d` in ms, at most about 46 days (u32).
fn millis(d: Duration) -> u32 {
    let s = u32::try_from(d.as_secs().min(4_000_000)).unwrap_or(4_000_000);
    s * 1000 + d.subsec_millis()
}

/// 2^(-r/h) in 65536ths, for r < h.
fn fraction(r: u32, h: u32) -> u32 {
    let x = r * 8;
    let i = usize::try_from(x / h).map_or(7, |i| i.min(7));
    let (a, b) = (STEPS[i], STEPS[i + 1]);
    // Both scaled to 16 bits: (a - b) is below 2^13, so the product
    // stays within 32 bits.
    let s = (32 - h.leading_zeros()).saturating_sub(16);
    a - (a - b) * ((x % h) >> s) / ((h >> s).max(1))
}

/// `p` after `dt` of decay with half-life `h` ms (at least 1).
pub fn decay(p: u32, dt: Duration, h: u32) -> u32 {
    let t = millis(dt);
    let k = t / h;
    if k >= 32 {
        return 0;
    }
    let v = (u64::from(p) * u64::from(fraction(t % h, h))) >> 16 >> k;
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The largest penalty that decays below `reuse` within `max_suppress`
/// (a search over the decay itself, as [`Penalty::release_time`]); `reuse`
/// when max_suppress is 0. `h`: the half-life in ms, at least 1.
pub fn ceiling(reuse: u32, max_suppress: Duration, h: u32) -> u32 {
    let (mut lo, mut hi) = (reuse, u32::MAX);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if decay(mid, max_suppress, h) < reuse {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// One VIP's figure of merit: its value as of `at`, and while the VIP is
/// damped, when it is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Penalty {
    value: u32,
    at: Instant,
    reuse_at: Option<Instant>,
}

impl Penalty {
    pub fn new(now: Instant) -> Penalty {
        Penalty {
            value: 0,
            at: now,
            reuse_at: None,
        }
    }

    /// The penalty at `now`.
    pub fn value(&self, now: Instant, pol: &DampingPolicy) -> u32 {
        decay(
            self.value,
            now.saturating_duration_since(self.at),
            pol.half_life,
        )
    }

    /// The penalty as of the last flap, and when that was.
    pub fn last(&self) -> (u32, Instant) {
        (self.value, self.at)
    }

    /// While damped: when the penalty falls below reuse.
    pub fn reuse_at(&self) -> Option<Instant> {
        self.reuse_at
    }

    /// A flap at `now`; the penalty grows while the VIP is damped too,
    /// as a router's does while it suppresses a route, so a VIP that keeps
    /// flapping stays damped. True when the VIP becomes damped by it: the
    /// penalty exceeds suppress.
    pub fn flap(&mut self, now: Instant, pol: &DampingPolicy) -> bool {
        let v = self
            .value(now, pol)
            .saturating_add(FLAP_PENALTY)
            .min(pol.ceiling);
        self.value = v;
        self.at = now;
        let was = self.reuse_at.is_some();
        if was || v > pol.suppress {
            self.reuse_at = Some(self.release_time(pol));
        }
        !was && self.reuse_at.is_some()
    }

    /// The damping parameters changed (a reload): the penalty is kept
    /// (capped at the new ceiling) and the release time follows the new
    /// half-life and reuse; a VIP not damped stays so until its next flap.
    pub fn retune(&mut self, pol: &DampingPolicy) {
        // Not re-based on `now`: with the same parameters (a reload that
        // changed something else) nothing moves.
        self.value = self.value.min(pol.ceiling);
        if self.reuse_at.is_some() {
            self.reuse_at = Some(self.release_time(pol));
        }
    }

    /// Lets the VIP go if its release time has come; true if it did.
    pub fn release(&mut self, now: Instant) -> bool {
        if self.reuse_at.is_some_and(|t| t <= now) {
            self.reuse_at = None;
            return true;
        }
        false
    }

    /// Not damped and below half of reuse: nothing left to remember (the
    /// routers' damping forgets a history once its penalty is that low).
    pub fn forgotten(&self, now: Instant, pol: &DampingPolicy) -> bool {
        self.reuse_at.is_none() && self.value(now, pol) < pol.reuse / 2
    }

    /// The first time at which the penalty is below reuse: a search over
    /// the decay itself, so that the release time and the value agree.
    fn release_time(&self, pol: &DampingPolicy) -> Instant {
        let (mut lo, mut hi) = (0u32, pol.half_life.saturating_mul(32));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if decay(self.value, Duration::from_millis(mid.into()), pol.half_life) < pol.reuse {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.at
            .checked_add(Duration::from_millis(lo.into()))
            .unwrap_or(self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pol() -> DampingPolicy {
        DampingPolicy::new(
            Duration::from_secs(300),
            2000,
            750,
            Duration::from_secs(1200),
        )
    }

    #[test]
    fn decay_halves_each_half_life_and_follows_the_curve() {
        let h = 300_000;
        let hd = Duration::from_secs(300);
        assert_eq!(decay(1000, Duration::ZERO, h), 1000);
        assert_eq!(decay(1000, hd, h), 500);
        assert_eq!(decay(1000, hd * 2, h), 250);
        // 2^-0.5 = 0.7071
        assert_eq!(decay(10_000, hd / 2, h), 7071);
        // 2^-(1/3) = 0.7937, interpolated
        let v = decay(10_000, hd / 3, h);
        assert!((7930..=7945).contains(&v), "{v}");
        assert_eq!(decay(u32::MAX, hd * 40, h), 0);
        // The longest half-life, interpolated in 16 bits.
        let v = decay(10_000, MAX_HALF_LIFE / 3, millis(MAX_HALF_LIFE));
        assert!((7930..=7945).contains(&v), "{v}");
        // Never rises with time.
        let mut last = u32::MAX;
        for s in 0..3000 {
            let v = decay(12_000, Duration::from_millis(s * 997), h);
            assert!(v <= last, "{s}: {v} > {last}");
            last = v;
        }
    }

    #[test]
    fn the_ceiling_bounds_the_suppression_to_max_suppress() {
        let p = pol();
        // Below 750 × 2^(1200/300) = 12,000
        assert_eq!(p.ceiling, 11_999);
        let t0 = Instant::now();
        let mut pen = Penalty::new(t0);
        // Two quick flaps do not damp (a restart is one); the third does.
        assert!(!pen.flap(t0, &p));
        assert!(!pen.flap(t0 + Duration::from_secs(4), &p));
        assert!(pen.flap(t0 + Duration::from_secs(8), &p));
        // A VIP that keeps flapping reaches the ceiling and is released
        // max_suppress after its last flap at the latest.
        let mut t = t0 + Duration::from_secs(8);
        for _ in 0..100 {
            t += Duration::from_secs(4);
            assert!(!pen.flap(t, &p));
        }
        assert_eq!(pen.last().0, 11_999);
        let at = pen.reuse_at().unwrap();
        let held = at - t;
        assert!(
            held <= Duration::from_secs(1200) && held >= Duration::from_secs(1190),
            "{held:?}"
        );
        assert!(!pen.release(at - Duration::from_millis(1)));
        assert!(pen.value(at - Duration::from_millis(1), &p) >= 750);
        assert!(pen.value(at, &p) < 750);
        assert!(pen.release(at));
        assert!(pen.reuse_at().is_none());
    }

    #[test]
    fn a_ceiling_beyond_u32_saturates() {
        let h = 1000;
        assert_eq!(ceiling(750, Duration::from_secs(40), h), u32::MAX);
        assert_eq!(ceiling(750, Duration::from_secs(30), h), u32::MAX);
        assert_eq!(ceiling(1, Duration::from_secs(31), h), (1 << 31) - 1);
        assert_eq!(ceiling(750, Duration::ZERO, h), 750);
    }
}
