//! Bookkeeping of ad-hoc check triggers (HTTP `POST …/check`, ubus `check`),
//! owned by the owner task. Pure: no clock (callers pass `now`), no tasks.
//!
//! * At most one trigger run per VIP is in flight. A caller asking for the same
//!   checks while one runs joins it and gets its result (coalescing); asking
//!   for other checks of that VIP meanwhile is refused as busy.
//! * Each VIP has a token bucket: [`BURST`] runs at once, then one more every
//!   [`REFILL`]. A trigger that would start a run with no token left is
//!   refused with the time until the next token. Joining a running trigger
//!   costs no token.
//! * Runs are tracked by id, so a finished run answers exactly its own
//!   callers, and a caller that gave up holds nothing here: its reply channel
//!   is simply closed when the run's answer is sent.
//! * A run asks each selected check's loop for one ad-hoc run tagged with
//!   the run's id; it is complete when the engine has seen a tagged result
//!   of every one of them ([`Triggers::record`]).

use super::engine::CheckId;
use crate::check::CheckResult;
use std::time::{Duration, Instant};

/// Trigger runs a VIP may start back to back.
pub const BURST: u32 = 5;
/// One more run per VIP is allowed after each such period.
pub const REFILL: Duration = Duration::from_secs(1);
/// Callers that may wait on one run; more are refused as busy.
pub(crate) const MAX_WAITERS: usize = 64;

/// What to do with a trigger request.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit {
    /// Start run `id`; the caller waits for it.
    Start(u64),
    /// The caller was added to the run already in flight.
    Joined,
    /// Refused; try again after this long.
    Busy { retry_after: Duration, why: Refusal },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The token bucket of the VIP is empty.
    RateLimited,
    /// Another selection of checks runs now, or too many callers wait on it.
    Running,
}

struct Run<R> {
    id: u64,
    check: Option<String>,
    waiters: Vec<R>,
    /// Checks asked to run that have not reported yet.
    pending: Vec<CheckId>,
    /// (index of the check in its VIP, its name, its result), as reported.
    results: Vec<(usize, String, CheckResult)>,
}

/// A finished run: the callers to answer and the results, in the VIP's
/// check order.
#[derive(Debug, PartialEq)]
pub struct Done<R> {
    pub waiters: Vec<R>,
    pub results: Vec<(String, CheckResult)>,
}

impl<R> Run<R> {
    fn done(self) -> Done<R> {
        let mut results = self.results;
        results.sort_by_key(|(k, _, _)| *k);
        Done {
            waiters: self.waiters,
            results: results.into_iter().map(|(_, n, r)| (n, r)).collect(),
        }
    }
}

struct Bucket<R> {
    tokens: u32,
    /// When `tokens` was last brought up to date.
    refilled: Instant,
    running: Option<Run<R>>,
}

/// Triggers of every VIP; `R` is the caller's reply channel.
pub struct Triggers<R> {
    /// By VIP name, sorted by it: a sorted `Vec` instead of a `BTreeMap`,
    /// whose node code (insert, remove, rebalancing, iteration: ≈ 8 KB on
    /// mips) would be compiled for this one key and value type.
    /// A bucket is boxed, so that adding a VIP's moves only (name, pointer)
    /// pairs: one entry per VIP ever triggered (until a reload prunes it).
    vips: Vec<(String, Box<Bucket<R>>)>,
    next_id: u64,
}

impl<R> Default for Triggers<R> {
    fn default() -> Self {
        Triggers {
            vips: Vec::new(),
            next_id: 0,
        }
    }
}

impl<R> Bucket<R> {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled);
        let earned = elapsed.as_millis() / REFILL.as_millis().max(1);
        let earned = u32::try_from(earned).unwrap_or(u32::MAX);
        if earned == 0 {
            return;
        }
        self.tokens = self.tokens.saturating_add(earned).min(BURST);
        // A full bucket restarts its period now; otherwise keep the remainder.
        self.refilled = if self.tokens == BURST {
            now
        } else {
            self.refilled + REFILL * earned
        };
    }
}

impl<R> Triggers<R> {
    /// Where `vip`'s entry is (Ok) or would go (Err), by binary search.
    fn find(&self, vip: &str) -> Result<usize, usize> {
        self.vips.binary_search_by(|(n, _)| n.as_str().cmp(vip))
    }

    fn bucket(&self, vip: &str) -> Option<&Bucket<R>> {
        self.find(vip).ok().map(|i| &*self.vips[i].1)
    }

    fn bucket_mut(&mut self, vip: &str) -> Option<&mut Bucket<R>> {
        let i = self.find(vip).ok()?;
        Some(&mut self.vips[i].1)
    }

    /// A trigger of `vip` (which the caller found to exist and to have
    /// checks) for `check` (None: all its checks), which are `checks`.
    pub fn admit(
        &mut self,
        vip: &str,
        check: Option<&str>,
        checks: &[CheckId],
        reply: R,
        now: Instant,
    ) -> Admit {
        let i = match self.find(vip) {
            Ok(i) => i,
            Err(i) => {
                let b = Bucket {
                    tokens: BURST,
                    refilled: now,
                    running: None,
                };
                self.vips.insert(i, (vip.to_string(), Box::new(b)));
                i
            }
        };
        let b = &mut self.vips[i].1;
        if let Some(run) = &mut b.running {
            if run.check.as_deref() == check && run.waiters.len() < MAX_WAITERS {
                run.waiters.push(reply);
                return Admit::Joined;
            }
            return Admit::Busy {
                retry_after: REFILL,
                why: Refusal::Running,
            };
        }
        b.refill(now);
        if b.tokens == 0 {
            let next = (b.refilled + REFILL).saturating_duration_since(now);
            return Admit::Busy {
                retry_after: next.max(Duration::from_millis(1)),
                why: Refusal::RateLimited,
            };
        }
        b.tokens -= 1;
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        b.running = Some(Run {
            id,
            check: check.map(str::to_string),
            waiters: vec![reply],
            pending: checks.to_vec(),
            results: Vec::new(),
        });
        Admit::Start(id)
    }

    /// The engine has seen `result` of `check` (the `index`-th check of
    /// `vip`, named `name`), tagged with run `id`. Returns the run once every
    /// check it asked for has reported; None while some are missing, and for
    /// a stale id or a check the run did not ask for (or already has).
    pub fn record(
        &mut self,
        vip: &str,
        id: u64,
        check: CheckId,
        (index, name): (usize, &str),
        result: CheckResult,
    ) -> Option<Done<R>> {
        let b = self.bucket_mut(vip)?;
        let run = b.running.as_mut().filter(|r| r.id == id)?;
        let pos = run.pending.iter().position(|c| *c == check)?;
        run.pending.swap_remove(pos);
        run.results.push((index, name.to_string(), result));
        if !run.pending.is_empty() {
            return None;
        }
        b.running.take().map(Run::done)
    }

    /// The run of `vip` in flight, if any: its id and the checks that have
    /// not reported yet (to ask again when a reload replaced their loops).
    pub fn pending(&self, vip: &str) -> Option<(u64, &[CheckId])> {
        let run = self.bucket(vip)?.running.as_ref()?;
        Some((run.id, &run.pending))
    }

    /// Ends the run of `vip` in flight with the results it has (a reload
    /// removed the VIP or restarted its checks, so the others never come).
    pub fn abandon(&mut self, vip: &str) -> Option<Done<R>> {
        self.bucket_mut(vip)?.running.take().map(Run::done)
    }

    /// VIPs with a run in flight, by name.
    pub fn running(&self) -> Vec<String> {
        self.vips
            .iter()
            .filter(|(_, b)| b.running.is_some())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Drops idle entries of VIPs that no longer exist (after a reload).
    pub fn retain(&mut self, exists: impl Fn(&str) -> bool) {
        self.vips
            .retain(|(name, b)| b.running.is_some() || exists(name));
    }

    /// VIPs with an entry (for tests of the pruning).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.vips.len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.vips.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: CheckId = CheckId(7);
    const B: CheckId = CheckId(9);

    fn ok() -> CheckResult {
        CheckResult::pass("ok")
    }

    /// Finishes run `id` of `vip` (one check, A): the callers answered.
    fn finish<R>(t: &mut Triggers<R>, vip: &str, id: u64) -> Vec<R> {
        t.record(vip, id, A, (0, "a"), ok())
            .map_or_else(Vec::new, |d| d.waiters)
    }

    #[test]
    fn concurrent_callers_join_the_running_trigger() {
        let t0 = Instant::now();
        let mut t = Triggers::default();
        assert_eq!(t.admit("web", None, &[A], 1, t0), Admit::Start(1));
        for i in 2..=10 {
            assert_eq!(t.admit("web", None, &[A], i, t0), Admit::Joined);
        }
        // Another selection of checks of the same VIP waits for its turn.
        assert!(matches!(
            t.admit("web", Some("dns"), &[A], 99, t0),
            Admit::Busy {
                why: Refusal::Running,
                ..
            }
        ));
        // Other VIPs are independent.
        assert_eq!(t.admit("db", None, &[A], 50, t0), Admit::Start(2));
        assert_eq!(finish(&mut t, "web", 7), Vec::<i32>::new(), "stale id");
        assert_eq!(finish(&mut t, "web", 1), (1..=10).collect::<Vec<_>>());
        assert_eq!(finish(&mut t, "web", 1), Vec::<i32>::new(), "answered once");
        assert_eq!(finish(&mut t, "db", 2), vec![50]);
    }

    /// A run is done when every check it asked for has reported, whatever
    /// the order; its results come in the VIP's check order; results of
    /// other checks, other runs or twice the same check do not count.
    #[test]
    fn a_run_completes_when_each_of_its_checks_reported() {
        let t0 = Instant::now();
        let mut t = Triggers::default();
        assert_eq!(t.admit("web", None, &[A, B], 1, t0), Admit::Start(1));
        assert_eq!(t.pending("web"), Some((1, &[A, B][..])));
        assert_eq!(t.record("web", 1, B, (1, "b"), ok()), None);
        assert_eq!(t.record("web", 1, B, (1, "b"), ok()), None, "twice");
        assert_eq!(t.record("web", 2, A, (0, "a"), ok()), None, "other run");
        assert_eq!(t.record("web", 1, CheckId(3), (0, "x"), ok()), None);
        assert_eq!(t.pending("web"), Some((1, &[A][..])));
        let fail = CheckResult::fail("refused");
        let done = t.record("web", 1, A, (0, "a"), fail.clone()).unwrap();
        assert_eq!(done.waiters, [1]);
        assert_eq!(
            done.results,
            [("a".to_string(), fail), ("b".to_string(), ok())]
        );
        assert_eq!(t.pending("web"), None);
        assert!(t.running().is_empty());
    }

    #[test]
    fn an_abandoned_run_answers_with_what_it_has() {
        let t0 = Instant::now();
        let mut t = Triggers::default();
        assert_eq!(t.admit("web", None, &[A, B], 1, t0), Admit::Start(1));
        assert_eq!(t.record("web", 1, A, (0, "a"), ok()), None);
        assert_eq!(t.running(), ["web"]);
        let done = t.abandon("web").unwrap();
        assert_eq!(done.waiters, [1]);
        assert_eq!(done.results, [("a".to_string(), ok())]);
        assert_eq!(t.record("web", 1, B, (1, "b"), ok()), None, "gone");
        assert!(t.abandon("web").is_none());
    }

    #[test]
    fn waiters_per_run_are_bounded() {
        let t0 = Instant::now();
        let mut t = Triggers::default();
        assert_eq!(t.admit("web", None, &[A], 0, t0), Admit::Start(1));
        for i in 1..MAX_WAITERS {
            assert_eq!(t.admit("web", None, &[A], i, t0), Admit::Joined);
        }
        assert!(matches!(
            t.admit("web", None, &[A], MAX_WAITERS, t0),
            Admit::Busy { .. }
        ));
        assert_eq!(finish(&mut t, "web", 1).len(), MAX_WAITERS);
    }

    #[test]
    fn token_bucket_per_vip() {
        let t0 = Instant::now();
        let mut t = Triggers::default();
        let run =
            |t: &mut Triggers<u32>, vip: &str, now: Instant| match t.admit(vip, None, &[A], 0, now)
            {
                Admit::Start(id) => {
                    finish(t, vip, id);
                    Ok(())
                }
                Admit::Busy { retry_after, why } => {
                    assert_eq!(why, Refusal::RateLimited);
                    Err(retry_after)
                }
                Admit::Joined => panic!("nothing runs"),
            };
        for _ in 0..BURST {
            assert_eq!(run(&mut t, "web", t0), Ok(()));
        }
        // 500 back-to-back triggers within 0.9 s start no further run.
        for i in 0..500u32 {
            let now = t0 + Duration::from_micros(u64::from(i) * 1800);
            let r = run(&mut t, "web", now);
            assert_eq!(r, Err(REFILL - (now - t0)), "trigger {i}");
        }
        // Other VIPs have their own bucket.
        assert_eq!(run(&mut t, "db", t0), Ok(()));
        // One more per REFILL, and the bucket fills back up to BURST.
        assert_eq!(run(&mut t, "web", t0 + REFILL), Ok(()));
        assert!(run(&mut t, "web", t0 + REFILL).is_err());
        let later = t0 + REFILL * 100;
        for _ in 0..BURST {
            assert_eq!(run(&mut t, "web", later), Ok(()));
        }
        assert!(run(&mut t, "web", later).is_err());
        // A partial period is kept: 2.5 periods earn 2 runs, the next comes 0.5 later.
        let t1 = later + REFILL * 5 / 2;
        assert_eq!(run(&mut t, "web", t1), Ok(()));
        assert_eq!(run(&mut t, "web", t1), Ok(()));
        assert_eq!(run(&mut t, "web", t1), Err(REFILL / 2));
    }

    #[test]
    fn idle_entries_of_removed_vips_are_dropped() {
        let t0 = Instant::now();
        let mut t = Triggers::default();
        assert_eq!(t.admit("gone", None, &[A], 0, t0), Admit::Start(1));
        assert_eq!(t.admit("idle", None, &[A], 0, t0), Admit::Start(2));
        finish(&mut t, "idle", 2);
        t.retain(|_| false);
        // The running one stays until it answers its caller.
        assert_eq!(t.len(), 1);
        assert_eq!(finish(&mut t, "gone", 1), vec![0]);
        t.retain(|_| false);
        assert!(t.is_empty());
    }
}
