//! What the engine keeps per VIP and per check: the slot (the VIP's
//! config, state machine and checks) and each check's status, which
//! /status shows; and how a VIP's config becomes its slot (`Pending`,
//! `new_slot`), at the start and at a reload.

use super::CheckId;
use crate::bgp::types::Prefix;
use crate::check::hysteresis::Hysteresis;
use crate::check::policy::Combiner;
use crate::check::CheckResult;
use crate::check::Degradation;
use crate::config::VipSpec as Vip;
use crate::vip::{SharedIntents, VipMachine, VipPolicy};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One check inside the engine: its hysteresis and everything /status shows.
#[derive(Debug, Clone)]
pub struct CheckStatus {
    pub id: CheckId,
    pub name: String,
    /// Rise/fall counters and health; only the engine feeds it.
    pub hysteresis: Hysteresis,
    /// Graded health, for a check with `degraded_latency` (boxed: most
    /// checks have none, and each of them costs a pointer only).
    pub degradation: Option<Box<Degradation>>,
    /// Results seen since start.
    pub runs: u32,
    pub last: Option<LastResult>,
    pub last_time: Option<Instant>,
    /// When it last crossed rise or fall, and which (a `Transition::reason`).
    pub last_transition: Option<(Instant, &'static str)>,
    pub total_ok: u32,
    pub total_fail: u32,
    pub timeouts: u32,
    /// The timeout the duration histogram's bounds come from
    /// ([`duration_buckets`]); computed when needed, not stored per check.
    pub bucket_timeout: Duration,
    /// Cumulative counts per bound.
    pub buckets: [u64; BUCKETS],
    pub duration_sum: f64,
}

/// The last result of a check as the engine keeps it until the next: a
/// [`CheckResult`] whose type-specific details are a boxed slice instead of
/// a map (a BTreeMap's first node costs ≈ 0.6 KiB, and a check has one to
/// three details; per-VIP memory). /status gets a `CheckResult`
/// back ([`LastResult::to_result`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LastResult {
    pub ok: bool,
    pub detail: String,
    pub duration: Duration,
    pub timed_out: bool,
    /// In key order, as the map had them.
    pub details: Box<[(String, serde_json::Value)]>,
}

impl From<CheckResult> for LastResult {
    fn from(r: CheckResult) -> LastResult {
        LastResult {
            ok: r.ok,
            detail: r.detail,
            duration: r.duration,
            timed_out: r.timed_out,
            details: r.details.into_iter().collect(),
        }
    }
}

impl LastResult {
    /// The detail `key`, if the probe set it.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.details.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn to_result(&self) -> CheckResult {
        CheckResult {
            ok: self.ok,
            detail: self.detail.clone(),
            duration: self.duration,
            timed_out: self.timed_out,
            details: self.details.iter().cloned().collect(),
        }
    }
}

/// Bounds of a check's duration histogram.
pub(crate) const BUCKETS: usize = 11;

/// Histogram bounds for a check: ten linear steps up to its timeout, then the
/// timeout plus 50ms (late results), so the buckets fit the check's scale.
/// They are distinct: the timeout is at least 1 ms, so the steps are at
/// least 100 µs apart, and the values are rounded to the µs.
pub fn duration_buckets(timeout: Duration) -> [f64; BUCKETS] {
    let t = timeout.as_secs_f64().max(0.001);
    let mut b = [0.0; BUCKETS];
    for (i, x) in (1u32..).zip(b.iter_mut().take(10)) {
        *x = (t * f64::from(i) / 10.0 * 1e6).round() / 1e6;
    }
    b[10] = ((t + 0.05) * 1e6).round() / 1e6;
    b
}

/// A slot's checks: one pointer, and none at all for a VIP without checks.
/// A boxed slice (16 bytes) was 8 more than this in each of 10,000 slots of
/// `always` VIPs, which have no checks; the slice is exactly
/// sized, as the boxed slice was. Reads and writes as a slice.
#[derive(Debug, Clone, Default)]
pub struct Checks(Option<Box<Box<[CheckStatus]>>>);

impl From<Vec<CheckStatus>> for Checks {
    fn from(v: Vec<CheckStatus>) -> Checks {
        if v.is_empty() {
            Checks(None)
        } else {
            Checks(Some(Box::new(v.into_boxed_slice())))
        }
    }
}

impl std::ops::Deref for Checks {
    type Target = [CheckStatus];
    fn deref(&self) -> &[CheckStatus] {
        self.0.as_deref().map_or(&[], |b| &b[..])
    }
}

impl std::ops::DerefMut for Checks {
    fn deref_mut(&mut self) -> &mut [CheckStatus] {
        self.0.as_deref_mut().map_or(&mut [], |b| &mut b[..])
    }
}

/// One VIP inside the engine.
#[derive(Debug, Clone)]
pub struct VipSlot {
    /// The config's name, shared (not a copy per VIP).
    pub name: std::sync::Arc<str>,
    pub prefix: Prefix,
    pub machine: VipMachine,
    /// The checks' status, read as a slice (`Deref`).
    pub checks: Checks,
    pub initial_done: bool,
    /// Transitions into each state since start (withdrawn, announced, pessimized).
    pub transitions: [u32; 3],
    /// The VIP's config and combiner; None for a *plain* VIP, one that
    /// [`plain`] rebuilds from the slot's name and prefix (an `always` VIP
    /// with every other field at its default), which has neither.
    pub(super) full: Option<Box<Full>>,
}

/// What a slot keeps of a VIP that is not plain, behind one pointer: two
/// optional boxes were 8 bytes more in each of 10,000 `always` slots that
/// have neither.
#[derive(Debug, Clone)]
pub(super) struct Full {
    /// The VIP's config, the old side of reload's diff and what the owner
    /// reads (check loops, /status, triggers, drain files): the engine keeps
    /// the one copy once it is built. 152 bytes of `Vip` a VIP were 1.5 MB at
    /// 10,000 `always` VIPs, so a plain VIP keeps none.
    pub(super) config: Vip,
    /// The checks_policy over the checks' health; None for a VIP without
    /// checks, which has nothing to combine.
    pub(super) combiner: Option<Combiner>,
}

/// The config of a plain VIP: `always`, with `name` and `prefix` and every
/// other field (the compiled checks_policy too) at its default.
pub(super) fn plain(name: &Arc<str>, prefix: Prefix) -> Vip {
    Vip {
        name: name.clone(),
        prefix,
        always: true,
        ..Vip::default()
    }
}

/// Whether a slot keeps nothing of `v`: [`plain`] gives `v` back equal in
/// every field, so [`VipSlot::config`] is exactly what was loaded.
pub(super) fn is_plain(v: &Vip) -> bool {
    v.always && *v == plain(&v.name, v.prefix)
}

impl VipSlot {
    /// The VIP's prefixes beyond the first (`prefix`); they live in its
    /// config: a VIP with more than one prefix is never plain. Plain
    /// slices and loops at the callers, not an iterator chain each: the
    /// adapters' copies cost flash.
    pub fn more_prefixes(&self) -> &[Prefix] {
        self.full
            .as_deref()
            .map_or(&[][..], |f| &f.config.more_prefixes)
    }

    /// Whether `p` is one of the VIP's prefixes.
    pub fn has_prefix(&self, p: &Prefix) -> bool {
        self.prefix == *p || self.more_prefixes().contains(p)
    }

    /// A `Route` output for each of the VIP's prefixes, with `intent`
    /// (None: withdraw): its prefixes change together, in the one step.
    pub(super) fn routes_with(
        &self,
        intent: Option<&Arc<crate::bgp::types::RouteIntent>>,
        out: &mut Vec<super::Output>,
    ) {
        for prefix in std::iter::once(&self.prefix).chain(self.more_prefixes()) {
            out.push(super::Output::Route {
                prefix: *prefix,
                intent: intent.cloned(),
            });
        }
    }

    /// [`VipSlot::routes_with`] the VIP's intent now.
    pub(super) fn routes_out(&self, out: &mut Vec<super::Output>) {
        self.routes_with(self.machine.intent(), out);
    }

    /// The VIP's config as it was loaded (built anew for a plain VIP).
    pub fn config(&self) -> Cow<'_, Vip> {
        match &self.full {
            Some(f) => Cow::Borrowed(&f.config),
            None => Cow::Owned(plain(&self.name, self.prefix)),
        }
    }

    /// The checks_policy over the checks' health; None for a VIP without
    /// checks (`always`), which has nothing to combine.
    pub fn combiner(&self) -> Option<&Combiner> {
        self.full.as_ref().and_then(|f| f.combiner.as_ref())
    }

    /// Keeps `config` (None: the VIP is plain) and the slot's combiner, which
    /// a reload that keeps the slot keeps: the check identity is the same.
    /// A plain VIP has no checks, so it has no combiner either.
    pub(super) fn set_config(&mut self, config: Option<Box<Vip>>) {
        match (config, &mut self.full) {
            (Some(v), Some(f)) => f.config = *v,
            (Some(v), None) => {
                self.full = Some(Box::new(Full {
                    config: *v,
                    combiner: None,
                }))
            }
            (None, _) => self.full = None,
        }
    }

    /// The VIP's config when it is not plain; a plain VIP has no checks and
    /// no drain file, which is all most readers look for.
    pub fn full_config(&self) -> Option<&Vip> {
        self.full.as_deref().map(|f| &f.config)
    }

    /// Takes the timing of a VIP whose check identity did not change: the
    /// same checks, by name and order, keep their counters and their
    /// duration histogram (its bounds stay those of the timeout the VIP
    /// started with, so the series stay consistent for Prometheus) and their
    /// health; the counters clamp to the new rise and fall
    /// ([`Hysteresis::retune`]) and the next result decides with them.
    pub(super) fn retune(&mut self, v: &Vip) {
        for (c, cfg) in self.checks.iter_mut().zip(&v.checks) {
            c.hysteresis.retune(cfg.rise, cfg.fall);
            match (&mut c.degradation, cfg.degraded) {
                (Some(d), Some(limits)) => d.retune(limits),
                (d, limits) => {
                    *d = limits.map(|l| Box::new(Degradation::new(l)));
                }
            }
        }
        let degraded = self.degraded();
        self.machine.mark_degraded(degraded);
    }

    /// Some check with graded health says the VIP is degraded.
    pub(super) fn degraded(&self) -> bool {
        self.checks
            .iter()
            .any(|c| c.degradation.as_ref().is_some_and(|d| d.degraded()))
    }
}

/// The slot for `v`, without its config (the caller keeps it, see
/// [`VipSlot::set_config`]), and its combiner if it has checks.
pub(super) fn new_slot(
    v: &Vip,
    next_check: &mut u32,
    intents: &mut SharedIntents,
    graceful_shutdown: bool,
    now: Instant,
) -> (VipSlot, Option<Combiner>) {
    let prefix = v.prefix;
    let names: Vec<String> = v.checks.iter().map(|c| c.name.clone()).collect();
    let mut id = || {
        let id = CheckId(*next_check);
        *next_check = next_check.wrapping_add(1);
        id
    };
    let combiner = (!names.is_empty()).then(|| Combiner::new(v.checks_expr.clone(), names));
    let slot = VipSlot {
        full: None,
        name: v.name.clone(),
        prefix,
        initial_done: v.always || v.checks.is_empty(),
        checks: v
            .checks
            .iter()
            .map(|c| CheckStatus {
                id: id(),
                name: c.name.clone(),
                hysteresis: Hysteresis::new(c.rise, c.fall),
                degradation: c.degraded.map(|l| Box::new(Degradation::new(l))),
                runs: 0,
                last: None,
                last_time: None,
                last_transition: None,
                total_ok: 0,
                total_fail: 0,
                timeouts: 0,
                bucket_timeout: c.timeout,
                buckets: [0; BUCKETS],
                duration_sum: 0.0,
            })
            .collect::<Vec<_>>()
            .into(),
        transitions: [0; 3],
        machine: VipMachine::new(VipPolicy::shared(v, graceful_shutdown, intents), now),
    };
    (slot, combiner)
}

/// A VIP on its way from the loaded list into a slot: the list's 152-byte
/// entries are freed before the slots are made, so the two never take
/// memory together (the start's peak).
pub(super) enum Pending {
    Plain(Arc<str>, Prefix),
    Full(Box<Vip>),
}

impl Pending {
    /// Compacts `vips` (consumed: their buffer is freed on return).
    pub(super) fn list(vips: Vec<Vip>) -> Vec<Pending> {
        let mut out = Vec::with_capacity(vips.len());
        for v in vips {
            out.push(if is_plain(&v) {
                Pending::Plain(v.name, v.prefix)
            } else {
                Pending::Full(Box::new(v))
            });
        }
        out
    }

    pub(super) fn name(&self) -> &Arc<str> {
        match self {
            Pending::Plain(name, _) => name,
            Pending::Full(v) => &v.name,
        }
    }

    /// What the slot keeps (see [`VipSlot::config`]).
    pub(super) fn into_config(self) -> Option<Box<Vip>> {
        match self {
            Pending::Plain(..) => None,
            Pending::Full(v) => Some(v),
        }
    }

    /// The slot for this VIP, keeping its config.
    pub(super) fn into_slot(
        self,
        next_check: &mut u32,
        intents: &mut SharedIntents,
        graceful_shutdown: bool,
        now: Instant,
    ) -> VipSlot {
        match self {
            // A plain VIP has no checks: no combiner.
            Pending::Plain(name, prefix) => {
                let v = plain(&name, prefix);
                new_slot(&v, next_check, intents, graceful_shutdown, now).0
            }
            Pending::Full(v) => {
                let (mut s, combiner) = new_slot(&v, next_check, intents, graceful_shutdown, now);
                s.full = Some(Box::new(Full {
                    config: *v,
                    combiner,
                }));
                s
            }
        }
    }
}
