//! The daemon's pure core: probe results → each check's rise/fall
//! hysteresis → checks policy → VIP state → route intents. It owns no socket
//! and reads no clock: `now` comes in with every input and deadlines go out
//! through `next_deadline`, so a whole run can be replayed from a list of
//! events.
//!
//! The check loops only run probes: they send the raw [`CheckRun`], tagged
//! with the [`CheckId`] the engine gave the check, and every counter lives
//! here, owned by the owner task, with no lock around it.

use super::reload::{ReloadPlan, VipChange};
use crate::bgp::types::{Prefix, RouteIntent};
use crate::check::hysteresis::Hysteresis;
use crate::check::policy::Combiner;
use crate::check::CheckResult;
use crate::config::VipSpec as Vip;
use crate::vip::{SharedIntents, VipMachine, VipPolicy, VipState};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod slot;
pub(crate) use slot::BUCKETS;
pub use slot::{duration_buckets, CheckStatus, Checks, LastResult, VipSlot};
use slot::{is_plain, plain, Full};

/// Which check a probe result is for: a small number the engine gives each
/// check when its VIP's slot is made, kept while the slot lives (a reload
/// that keeps the VIP's check identity keeps it, and the new loops carry it),
/// never given to another check. Results of a check that is gone are
/// ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CheckId(pub u32);

/// One probe run as a check loop reports it: the raw result, before
/// hysteresis.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRun {
    pub check: CheckId,
    pub result: CheckResult,
    /// The ad-hoc trigger run (`daemon::triggers` id) that asked for this
    /// run; None for a scheduled one.
    pub trigger: Option<u64>,
}

/// What the engine is told.
#[derive(Debug, Clone)]
pub enum Input {
    /// A probe finished: the engine feeds it through the check's hysteresis.
    Result(CheckRun),
    /// The lower_priority_file of a VIP was polled.
    DrainFile { vip: String, present: bool },
    /// Drain switched at runtime (HTTP API or ubus).
    DrainApi { vip: String, enable: bool },
    /// Time passed (deadlines, the initial-evaluation bound).
    Tick,
    /// The active flows of the VIPs that wait for them
    /// ([`Engine::flow_waits`]), by VIP name, as the driver counted them.
    Flows(Vec<(String, u32)>),
}

/// What the engine asks the shell to do or to tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Announce with these attributes (Some) or withdraw (None), to every peer.
    Route {
        prefix: Prefix,
        intent: Option<Arc<RouteIntent>>,
    },
    /// A VIP changed state (one log line, a ubus event, metrics).
    VipTransition {
        vip: String,
        /// The VIP's prefix as it was: a removed VIP has no slot left to
        /// look it up in, a changed one may have a new prefix.
        prefix: Prefix,
        from: VipState,
        to: VipState,
        reason: String,
    },
    /// A check crossed rise or fall without changing the VIP's health.
    CheckTransitionOnly {
        vip: String,
        check: String,
        reason: String,
    },
    /// A VIP with `require_local_address` failed a check because its
    /// address is not local, while the check was healthy or had not reported
    /// yet (one warning per loss, not one per probe).
    LocalAddressMissing {
        vip: String,
        check: String,
        detail: String,
    },
    /// Every VIP has had its first evaluation: End-of-RIB may go out.
    InitialDone,
}

/// The pure core.
#[derive(Debug, Clone)]
pub struct Engine {
    vips: Vec<VipSlot>,
    /// Indexes into `vips`, sorted by VIP name (lookups by name).
    by_name: Vec<u32>,
    /// (check, VIP index, check index), sorted by check (lookups of results).
    by_check: Vec<(CheckId, u32, u32)>,
    /// The next CheckId to give.
    next_check: u32,
    /// The route intents of the VIPs' policies, one `Arc` each.
    intents: SharedIntents,
    /// `bgp.graceful_shutdown`: pessimized routes carry GRACEFUL_SHUTDOWN.
    graceful_shutdown: bool,
    /// EoR goes out at the latest then, even if a probe hangs.
    initial_deadline: Instant,
    initial_done: bool,
    /// The last flow count of each VIP that waits for its flows, for
    /// /status and /metrics; empty when none does (the usual case).
    flows: Vec<(Arc<str>, u32)>,
    /// When each drain (file or API) that withdraws began
    /// (`drain_until_flows_below`): its drain_time runs from then. Here,
    /// not in each VIP's machine, which would grow every slot by 16 bytes
    /// for what few VIPs ever have.
    drains: Vec<(Arc<str>, Instant)>,
}

/// Longest time a VIP needs for its first decision: its slowest check's
/// rise × interval plus one timeout.
pub(crate) fn first_evaluation_bound(vip: &Vip) -> Duration {
    vip.checks
        .iter()
        .map(|c| {
            c.interval
                .saturating_mul(c.rise.max(1))
                .saturating_add(c.timeout)
        })
        .max()
        .unwrap_or(Duration::ZERO)
}

/// The slot for `v`, without its config (the caller keeps it, see
/// [`VipSlot::set_config`]), and its combiner if it has checks.
fn new_slot(
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
enum Pending {
    Plain(Arc<str>, Prefix),
    Full(Box<Vip>),
}

impl Pending {
    /// Compacts `vips` (consumed: their buffer is freed on return).
    fn list(vips: Vec<Vip>) -> Vec<Pending> {
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

    fn name(&self) -> &Arc<str> {
        match self {
            Pending::Plain(name, _) => name,
            Pending::Full(v) => &v.name,
        }
    }

    /// What the slot keeps (see [`VipSlot::config`]).
    fn into_config(self) -> Option<Box<Vip>> {
        match self {
            Pending::Plain(..) => None,
            Pending::Full(v) => Some(v),
        }
    }

    /// The slot for this VIP, keeping its config.
    fn into_slot(
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

impl Engine {
    /// Builds the engine for `vips` (validated: each carries its compiled
    /// checks_policy, `Vip::checks_expr`). The engine keeps the configs from
    /// then on ([`VipSlot::config`]); the owner keeps none. Returns the
    /// outputs of the start itself: the routes of the VIPs announced at
    /// once (`always` ones), then `InitialDone` if every VIP is decided.
    pub fn new(vips: impl Into<Vec<Vip>>, now: Instant) -> (Engine, Vec<Output>) {
        let (e, rest) = Engine::start(vips, now);
        let mut out: Vec<Output> = e
            .routes()
            .map(|(prefix, intent)| Output::Route {
                prefix,
                intent: Some(intent.clone()),
            })
            .collect();
        out.extend(rest);
        (e, out)
    }

    /// [`Engine::new`] without the start's routes in the outputs: the
    /// caller reads them from [`Engine::routes`] (80 bytes an `Output`
    /// were 0.8 MB at 10,000 `always` VIPs, at the start's peak).
    pub fn start(vips: impl Into<Vec<Vip>>, now: Instant) -> (Engine, Vec<Output>) {
        Engine::start_with(vips, false, now)
    }

    /// [`Engine::start`] with `bgp.graceful_shutdown`: pessimized routes
    /// carry the GRACEFUL_SHUTDOWN community when it is on.
    pub fn start_with(
        vips: impl Into<Vec<Vip>>,
        graceful_shutdown: bool,
        now: Instant,
    ) -> (Engine, Vec<Output>) {
        let mut out = Vec::new();
        let pending = Pending::list(vips.into());
        // Exactly sized: grown by doubling, 10,000 slots would end in a
        // buffer for 16,384, with the old one alive during each copy (the
        // daemon's peak at start).
        let mut slots = Vec::with_capacity(pending.len());
        let mut bound = Duration::ZERO;
        let mut next_check = 0;
        let mut intents = SharedIntents::default();
        for p in pending {
            let slot = p.into_slot(&mut next_check, &mut intents, graceful_shutdown, now);
            // A plain VIP has no checks: nothing to wait for.
            if let Some(v) = slot.full_config() {
                bound = bound.max(first_evaluation_bound(v));
            }
            slots.push(slot);
        }
        // One second of slack so the last probe's report can arrive.
        let deadline = now
            .checked_add(bound.saturating_add(Duration::from_secs(1)))
            .unwrap_or(now);
        let mut e = Engine {
            vips: slots,
            by_name: Vec::new(),
            by_check: Vec::new(),
            next_check,
            intents,
            graceful_shutdown,
            initial_deadline: deadline,
            initial_done: false,
            flows: Vec::new(),
            drains: Vec::new(),
        };
        e.reindex();
        e.check_initial(now, &mut out);
        (e, out)
    }

    /// Applies a new VIP list as `plan` (see [`super::reload`]) decided.
    /// Unchanged VIPs keep their slot (state, counters: no UPDATE, no flap);
    /// kept ones keep state and check health and take the new policy and
    /// timing (a route whose attributes changed is re-announced); restarted
    /// ones restart withdrawn; removed ones are withdrawn. Withdrawals come
    /// first so a prefix that moves to another VIP is never withdrawn after
    /// its new announcement.
    pub fn reload(
        &mut self,
        vips: impl Into<Vec<Vip>>,
        plan: &ReloadPlan,
        now: Instant,
    ) -> Vec<Output> {
        let vips = Pending::list(vips.into());
        let mut withdraws = Vec::new();
        let mut announces = Vec::new();
        // Each new VIP's old slot, found through the name index (binary
        // search) while the slots are still in place: a linear search and
        // `Vec::remove` per kept VIP were O(n²) (at 10,000 VIPs, about
        // n²/2 slot moves of 176 bytes). 4 bytes a VIP.
        let found: Vec<u32> = vips
            .iter()
            .map(|p| {
                self.index(p.name())
                    .and_then(|i| u32::try_from(i).ok())
                    .unwrap_or(u32::MAX)
            })
            .collect();
        // Taken slots leave a `None`; the rest retire in the engine's order.
        let mut old: Vec<Option<VipSlot>> = std::mem::take(&mut self.vips)
            .into_iter()
            .map(Some)
            .collect();
        // Stale until `reindex` below: nothing may look a name up meanwhile.
        self.by_name.clear();
        self.by_check.clear();
        let retire = |s: VipSlot, reason: &str, out: &mut Vec<Output>| {
            if s.machine.state() != VipState::Withdrawn {
                out.push(Output::VipTransition {
                    vip: s.name.to_string(),
                    prefix: s.prefix,
                    from: s.machine.state(),
                    to: VipState::Withdrawn,
                    reason: reason.to_string(),
                });
                out.push(Output::Route {
                    prefix: s.prefix,
                    intent: None,
                });
            }
        };
        self.vips.reserve_exact(vips.len());
        for (k, (p, pos)) in vips.into_iter().zip(found).enumerate() {
            let name = p.name().clone();
            // A second VIP of the same name (validation rejects it) finds
            // its slot taken: a new slot, as before.
            let taken = old.get_mut(pos as usize).and_then(Option::take);
            match (plan.vip_at(k, &name), taken) {
                (VipChange::Unchanged, Some(slot)) => {
                    let mut slot = slot;
                    // Share the new config's name (the old one goes with it)
                    // and keep the new config, equal to the old.
                    slot.name = name;
                    slot.set_config(p.into_config());
                    self.vips.push(slot);
                    continue;
                }
                (VipChange::Kept { .. }, Some(slot)) => {
                    let mut slot = slot;
                    slot.name = name;
                    slot.set_config(p.into_config());
                    // A copy: the slot changes below while it is read.
                    let v = slot.config().into_owned();
                    let v = &v;
                    let i = self.vips.len();
                    let before = slot.machine.intent().cloned();
                    slot.retune(v);
                    let t = slot.machine.set_policy(
                        VipPolicy::shared(v, self.graceful_shutdown, &mut self.intents),
                        now,
                    );
                    // The drain file is polled from the new config only: one
                    // no longer configured no longer drains.
                    let t = match t {
                        None if v.policy.lower_priority_file.is_none() => {
                            slot.machine.set_drain_file(false, now)
                        }
                        t => t,
                    };
                    self.vips.push(slot);
                    if t.is_some() {
                        let mut out = Vec::new();
                        self.emit(i, t, &mut out);
                        // A withdraw goes with the others, first.
                        if self.vips[i].machine.state() == VipState::Withdrawn {
                            withdraws.extend(out);
                        } else {
                            announces.extend(out);
                        }
                    } else if self.vips[i].machine.intent() != before.as_ref() {
                        // Same state, new attributes: re-announce in place
                        // (an implicit withdraw of the old path, RFC 4271 §3.1).
                        announces.push(Output::Route {
                            prefix: self.vips[i].prefix,
                            intent: self.vips[i].machine.intent().cloned(),
                        });
                    }
                    continue;
                }
                (_, Some(slot)) => retire(slot, "config changed", &mut withdraws),
                (_, None) => {}
            }
            let mut slot = p.into_slot(
                &mut self.next_check,
                &mut self.intents,
                self.graceful_shutdown,
                now,
            );
            // End-of-RIB went out long ago; a new VIP does not hold it back.
            slot.initial_done = true;
            if let Some(intent) = slot.machine.intent() {
                announces.push(Output::Route {
                    prefix: slot.prefix,
                    intent: Some(intent.clone()),
                });
            }
            self.vips.push(slot);
        }
        for s in old.into_iter().flatten() {
            retire(s, "removed from config", &mut withdraws);
        }
        self.intents.prune();
        self.reindex();
        self.forget_flows();
        self.sync_drains(now);
        withdraws.extend(announces);
        withdraws
    }

    /// `bgp.graceful_shutdown` changed (a reload): every VIP takes its
    /// policy again with the new value, keeping its state, health and
    /// timers, and a pessimized route is re-announced in place with its
    /// new communities (no withdraw). Nothing when the value is the same.
    pub fn set_graceful_shutdown(&mut self, on: bool, now: Instant) -> Vec<Output> {
        let mut out = Vec::new();
        if on == self.graceful_shutdown {
            return out;
        }
        self.graceful_shutdown = on;
        for i in 0..self.vips.len() {
            let slot = &self.vips[i];
            let policy = VipPolicy::shared(&slot.config(), on, &mut self.intents);
            let before = slot.machine.intent().cloned();
            let t = self.vips[i].machine.set_policy(policy, now);
            if t.is_some() {
                self.emit(i, t, &mut out);
            } else if self.vips[i].machine.intent() != before.as_ref() {
                out.push(Output::Route {
                    prefix: self.vips[i].prefix,
                    intent: self.vips[i].machine.intent().cloned(),
                });
            }
        }
        self.intents.prune();
        out
    }

    /// The VIP part of reload's plan ([`super::reload::plan`]): the slots'
    /// configs are the old side. Every VIP of `new` in its order, then the
    /// removed ones in the engine's order.
    pub fn diff(&self, new: &[Vip]) -> Vec<(String, VipChange)> {
        super::reload::walk_vips(
            &|name| self.vip(name).map(VipSlot::config),
            &mut self.vips.iter().map(|s| &*s.name),
            new,
        )
    }

    /// Rebuilds the lookup tables after `vips` changed.
    fn reindex(&mut self) {
        let n = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        let mut by_name: Vec<u32> = (0..self.vips.len()).map(n).collect();
        by_name.sort_by(|a, b| {
            self.vips[*a as usize]
                .name
                .cmp(&self.vips[*b as usize].name)
        });
        self.by_name = by_name;
        self.by_check = self
            .vips
            .iter()
            .enumerate()
            .flat_map(|(i, v)| {
                v.checks
                    .iter()
                    .enumerate()
                    .map(move |(k, c)| (c.id, n(i), n(k)))
            })
            .collect();
        self.by_check.sort_unstable();
    }

    /// The VIP and the index of the check `id` in it.
    pub fn check(&self, id: CheckId) -> Option<(&VipSlot, usize)> {
        let pos = self
            .by_check
            .binary_search_by(|(c, _, _)| c.cmp(&id))
            .ok()?;
        let (_, i, k) = self.by_check[pos];
        Some((self.vips.get(i as usize)?, k as usize))
    }

    /// The announced VIPs' routes, in the engine's order.
    pub fn routes(&self) -> impl Iterator<Item = (Prefix, &Arc<RouteIntent>)> {
        self.vips
            .iter()
            .filter_map(|s| Some((s.prefix, s.machine.intent()?)))
    }

    /// The VIPs whose drain waits for their active flows to fall below
    /// `drain_until_flows_below`: the driver counts their flows while there
    /// are any.
    pub fn flow_waits(&self) -> impl Iterator<Item = &VipSlot> {
        self.vips.iter().filter(|s| s.machine.waits_for_flows())
    }

    /// The last flow count of `vip`, while it waits for its flows.
    pub fn flows(&self, vip: &str) -> Option<u32> {
        self.flows
            .iter()
            .find(|(n, _)| &**n == vip)
            .map(|(_, c)| *c)
    }

    pub fn vips(&self) -> &[VipSlot] {
        &self.vips
    }

    pub fn vip(&self, name: &str) -> Option<&VipSlot> {
        self.index(name).map(|i| &self.vips[i])
    }

    #[cfg(test)]
    pub(crate) fn initial_done(&self) -> bool {
        self.initial_done
    }

    /// The earliest time `Tick` must be fed.
    pub fn next_deadline(&self) -> Option<Instant> {
        let mut d = self
            .vips
            .iter()
            .filter_map(|v| v.machine.next_deadline())
            .min();
        if !self.initial_done {
            d = Some(d.map_or(self.initial_deadline, |x| x.min(self.initial_deadline)));
        }
        for at in self.drain_deadlines().map(|(_, at)| at) {
            d = Some(d.map_or(at, |x| x.min(at)));
        }
        d
    }

    /// The drain_time deadline of each drain that withdraws and still
    /// waits for it, with the VIP's index.
    fn drain_deadlines(&self) -> impl Iterator<Item = (usize, Instant)> + '_ {
        self.drains.iter().filter_map(|(n, since)| {
            let i = self.index(n)?;
            let m = &self.vips[i].machine;
            if !m.drain_time_pending() {
                return None;
            }
            Some((i, since.checked_add(m.policy().drain_time)?))
        })
    }

    /// Notes when VIP `i`'s drain that withdraws began, or forgets it once
    /// the drain ended.
    fn track_drain(&mut self, i: usize, now: Instant) {
        let on = self.vips[i].machine.drain_withdraws();
        let name = &self.vips[i].name;
        let pos = self.drains.iter().position(|(n, _)| n == name);
        match (on, pos) {
            (true, None) => self.drains.push((name.clone(), now)),
            (false, Some(p)) => {
                self.drains.swap_remove(p);
            }
            _ => {}
        }
    }

    /// After a reload: forgets the drains of VIPs gone or no longer
    /// withdrawing, and notes those that withdraw from now on (a policy
    /// that gained `drain_until_flows_below` while drained).
    fn sync_drains(&mut self, now: Instant) {
        let mut d = std::mem::take(&mut self.drains);
        d.retain(|(n, _)| {
            self.index(n)
                .is_some_and(|i| self.vips[i].machine.drain_withdraws())
        });
        self.drains = d;
        for i in 0..self.vips.len() {
            if self.vips[i].machine.drain_withdraws() {
                self.track_drain(i, now);
            }
        }
    }

    pub fn handle(&mut self, input: Input, now: Instant) -> Vec<Output> {
        let mut out = Vec::new();
        match input {
            Input::Result(r) => self.on_result(r, now, &mut out),
            Input::DrainFile { vip, present } => {
                if let Some(i) = self.index(&vip) {
                    let t = self.vips[i].machine.set_drain_file(present, now);
                    self.track_drain(i, now);
                    self.emit(i, t, &mut out);
                }
            }
            Input::DrainApi { vip, enable } => {
                if let Some(i) = self.index(&vip) {
                    let t = self.vips[i].machine.set_drain_api(enable, now);
                    self.track_drain(i, now);
                    self.emit(i, t, &mut out);
                }
            }
            Input::Flows(counts) => {
                let mut kept = Vec::new();
                for (vip, count) in counts {
                    if let Some(i) = self.index(&vip) {
                        let t = self.vips[i].machine.set_flows(count, now);
                        self.emit(i, t, &mut out);
                        kept.push((self.vips[i].name.clone(), count));
                    }
                }
                self.flows = kept;
            }
            Input::Tick => {
                for i in 0..self.vips.len() {
                    let due = self.vips[i]
                        .machine
                        .next_deadline()
                        .is_some_and(|d| d <= now);
                    if due {
                        let t = self.vips[i].machine.tick(now);
                        self.emit(i, t, &mut out);
                    }
                }
                let due: Vec<usize> = self
                    .drain_deadlines()
                    .filter(|(_, at)| *at <= now)
                    .map(|(i, _)| i)
                    .collect();
                for i in due {
                    let t = self.vips[i].machine.drain_expired(now);
                    self.emit(i, t, &mut out);
                }
            }
        }
        self.check_initial(now, &mut out);
        self.forget_flows();
        out
    }

    /// The daemon stops: every VIP that is not withdrawn is, with
    /// `reason`, each a transition and a withdrawal as any other (the
    /// speaker withdraws the routes itself, with its Cease).
    pub fn stop(&mut self, reason: &'static &'static str, now: Instant) -> Vec<Output> {
        let mut out = Vec::new();
        for i in 0..self.vips.len() {
            let t = self.vips[i].machine.stop(now, reason);
            self.emit(i, t, &mut out);
        }
        out
    }

    /// Forgets the counts of the VIPs that no longer wait for their flows.
    fn forget_flows(&mut self) {
        if self.flows.is_empty() {
            return;
        }
        let mut f = std::mem::take(&mut self.flows);
        f.retain(|(n, _)| {
            self.index(n)
                .is_some_and(|i| self.vips[i].machine.waits_for_flows())
        });
        self.flows = f;
    }

    fn index(&self, vip: &str) -> Option<usize> {
        let pos = self
            .by_name
            .binary_search_by(|i| (*self.vips[*i as usize].name).cmp(vip))
            .ok()?;
        Some(self.by_name[pos] as usize)
    }

    fn on_result(&mut self, run: CheckRun, now: Instant, out: &mut Vec<Output>) {
        let Some(pos) = self
            .by_check
            .binary_search_by(|(c, _, _)| c.cmp(&run.check))
            .ok()
        else {
            // A check that a reload removed or restarted: its last result
            // was still on the way.
            return;
        };
        let (_, i, k) = self.by_check[pos];
        let i = i as usize;
        let Some(slot) = self.vips.get_mut(i) else {
            return;
        };
        let Some(c) = slot.checks.get_mut(k as usize) else {
            return;
        };
        let r = run.result;
        // The guard's failure (check::guard) says so in its details.
        let guard_failed =
            r.details.get("local_address_assigned") == Some(&serde_json::Value::Bool(false));
        if guard_failed && (c.hysteresis.healthy() || !c.hysteresis.reported()) {
            out.push(Output::LocalAddressMissing {
                vip: slot.name.to_string(),
                check: c.name.clone(),
                detail: r.detail.clone(),
            });
        }
        let transition = c.hysteresis.observe(r.ok);
        let healthy = c.hysteresis.healthy();
        c.runs = c.runs.saturating_add(1);
        c.last_time = Some(now);
        if r.ok {
            c.total_ok = c.total_ok.saturating_add(1);
        } else {
            c.total_fail = c.total_fail.saturating_add(1);
        }
        if r.timed_out {
            c.timeouts = c.timeouts.saturating_add(1);
        }
        let secs = r.duration.as_secs_f64();
        c.duration_sum += secs;
        for (b, n) in duration_buckets(c.bucket_timeout)
            .iter()
            .zip(c.buckets.iter_mut())
        {
            if secs <= *b {
                *n = n.saturating_add(1);
            }
        }
        let crossed = transition.map(|t| t.reason());
        if let Some(reason) = crossed {
            c.last_transition = Some((now, reason));
        }
        c.last = Some(LastResult::from(r));
        // A slot with a check has its combiner.
        let changed = slot
            .full
            .as_mut()
            .and_then(|f| f.combiner.as_mut())
            .and_then(|m| m.update(&c.name, healthy));
        match (changed, crossed) {
            (Some(h), _) => {
                let reason = format!("{}: {}", c.name, crossed.unwrap_or("policy reevaluation"));
                let t = self.vips[i].machine.set_health(h, now, &reason);
                self.emit(i, t, out);
            }
            (None, Some(reason)) => {
                // The owner logs it: the engine is a pure layer and does not log.
                out.push(Output::CheckTransitionOnly {
                    vip: slot.name.to_string(),
                    check: c.name.clone(),
                    reason: reason.to_string(),
                });
            }
            (None, None) => {}
        }
    }

    fn emit(&mut self, i: usize, t: Option<crate::vip::Transition>, out: &mut Vec<Output>) {
        let Some(t) = t else { return };
        let slot = &mut self.vips[i];
        let k = match t.to {
            VipState::Withdrawn => 0,
            VipState::Announced => 1,
            VipState::Pessimized => 2,
        };
        slot.transitions[k] = slot.transitions[k].saturating_add(1);
        out.push(Output::VipTransition {
            vip: slot.name.to_string(),
            prefix: slot.prefix,
            from: t.from,
            to: t.to,
            reason: t.reason.clone(),
        });
        out.push(Output::Route {
            prefix: slot.prefix,
            intent: slot.machine.intent().cloned(),
        });
    }

    /// A VIP's first evaluation is done once it is announced or every check
    /// has had `rise` results (so it had its chance); the engine's is done
    /// when every VIP's is, or at the deadline.
    fn check_initial(&mut self, now: Instant, out: &mut Vec<Output>) {
        if self.initial_done {
            return;
        }
        for v in &mut self.vips {
            if !v.initial_done {
                let all_ran = v.checks.iter().all(|c| c.runs >= c.hysteresis.rise());
                v.initial_done = all_ran || v.machine.state() != VipState::Withdrawn;
            }
        }
        if now >= self.initial_deadline || self.vips.iter().all(|v| v.initial_done) {
            self.initial_done = true;
            out.push(Output::InitialDone);
        }
    }
}

#[cfg(test)]
mod tests;
