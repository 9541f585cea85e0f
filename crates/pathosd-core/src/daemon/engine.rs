//! The daemon's pure core: probe results → each check's rise/fall
//! hysteresis → checks policy → VIP state → route intents. It owns no socket
//! and reads no clock: `now` comes in with every input and deadlines go out
//! through `next_deadline`, so a whole run can be replayed from a list of
//! events.
//!
//! The check loops only run probes: they send the raw [`CheckRun`], tagged
//! with the [`CheckId`] the engine gave the check, and every counter lives
//! here, owned by the owner task, with no lock around it.

use crate::bgp::types::{Prefix, RouteIntent};
use crate::check::CheckResult;
use crate::config::NeedKind;
use crate::config::VipSpec as Vip;
use crate::vip::damping::Penalty;
use crate::vip::{SharedIntents, VipState};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod reloading;
mod slot;
use slot::Pending;
pub use slot::{duration_buckets, CheckStatus, Checks, LastResult, VipSlot};

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
    /// A procd service stopped or started, a netifd interface went down or
    /// up (`up`): the VIPs that name it (`services`, `interfaces`) fail at
    /// once, or may recover through their checks again.
    Need {
        kind: NeedKind,
        name: String,
        up: bool,
    },
}

/// What the engine asks the shell to do or to tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Announce with these attributes (Some) or withdraw (None), to every
    /// peer. A VIP with several prefixes has one per prefix, in the same
    /// step, right after its `VipTransition`.
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
    /// The damping penalty of each VIP with `damping` that flapped
    /// recently, by name; forgotten once low (`Penalty::forgotten`). Here
    /// for the reason `drains` is.
    damping: Vec<(Arc<str>, Penalty)>,
    /// The services and interfaces VIPs name that were last reported down:
    /// a VIP naming one stays unhealthy, whatever its checks say. Empty
    /// unless such an event came.
    needs_down: Vec<(NeedKind, String)>,
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
            damping: Vec::new(),
            needs_down: Vec::new(),
        };
        e.reindex();
        e.check_initial(now, &mut out);
        (e, out)
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
        (self.vips.iter())
            .filter_map(|s| Some((s, s.machine.intent()?)))
            .flat_map(|(s, intent)| {
                (std::iter::once(&s.prefix).chain(s.more_prefixes())).map(move |p| (*p, intent))
            })
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
        let reuse = self.damping.iter().filter_map(|(_, p)| p.reuse_at());
        for at in self.drain_deadlines().map(|(_, at)| at).chain(reuse) {
            d = Some(d.map_or(at, |x| x.min(at)));
        }
        d
    }

    /// The damping penalty of `vip`, while it has one.
    pub fn damping(&self, vip: &str) -> Option<&Penalty> {
        self.damping
            .iter()
            .find(|(n, _)| &**n == vip)
            .map(|(_, p)| p)
    }

    /// VIP `i` lost its health at `now`: a flap, if it has damping. True
    /// when the flap makes damping suppress it.
    fn flap(&mut self, i: usize, now: Instant) -> bool {
        let Some(pol) = self.vips[i].machine.policy().damping else {
            return false;
        };
        let name = &self.vips[i].name;
        let pos = match self.damping.iter().position(|(n, _)| n == name) {
            Some(p) => p,
            None => {
                self.damping.push((name.clone(), Penalty::new(now)));
                self.damping.len() - 1
            }
        };
        let begins = self.damping[pos].1.flap(now, &pol);
        begins && !self.vips[i].machine.damped()
    }

    /// Walks the penalties (at each `Tick` and after a reload): forgets
    /// those of VIPs gone or without damping now, and those low enough;
    /// applies the VIP's damping parameters (a reload may have changed
    /// them); lets the damped VIPs whose release time has come go, and
    /// keeps the others damped (a VIP restarted by a reload keeps the
    /// penalty of its name, as a router keeps a prefix's).
    fn walk_damping(&mut self, now: Instant, out: &mut Vec<Output>) {
        for (name, mut p) in std::mem::take(&mut self.damping) {
            let Some(i) = self.index(&name) else {
                continue;
            };
            let Some(pol) = self.vips[i].machine.policy().damping else {
                continue;
            };
            p.retune(&pol);
            if p.release(now) {
                let t = self.vips[i].machine.undamp(now);
                self.emit(i, t, out);
            } else if p.reuse_at().is_some() {
                self.vips[i].machine.mark_damped();
            }
            if !p.forgotten(now, &pol) {
                self.damping.push((name, p));
            }
        }
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
            Input::Need { kind, name, up } => self.on_need(kind, name, up, now, &mut out),
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
                self.walk_damping(now, &mut out);
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
        let slow = c.degradation.as_mut().and_then(|d| {
            d.observe(r.ok, r.duration, now, &c.hysteresis)
                .map(|on| (on, d.latency(), r.duration))
        });
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
                let mut reason =
                    format!("{}: {}", c.name, crossed.unwrap_or("policy reevaluation"));
                let lost = !h && self.vips[i].machine.healthy();
                if lost && self.flap(i, now) {
                    self.vips[i].machine.mark_damped();
                    reason.push_str(", damped");
                }
                // A VIP whose service or interface is down stays unhealthy
                // (fail closed); its checks' health is kept for when it
                // comes back.
                let h = h && self.need_down(i).is_none();
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
        if let Some(change) = slow {
            self.degraded_step(i, k as usize, change, now, out);
        }
    }

    /// The first of VIP `i`'s services and interfaces that is down, if any.
    fn need_down(&self, i: usize) -> Option<&(NeedKind, String)> {
        if self.needs_down.is_empty() {
            return None;
        }
        let needs = &self.vips.get(i)?.full_config()?.needs;
        self.needs_down.iter().find(|(k, n)| needs.names(*k, n))
    }

    /// The VIPs that name service or interface `name`, by index.
    pub fn naming(&self, kind: NeedKind, name: &str) -> Vec<usize> {
        self.vips
            .iter()
            .enumerate()
            .filter(|(_, s)| s.full_config().is_some_and(|v| v.needs.names(kind, name)))
            .map(|(i, _)| i)
            .collect()
    }

    /// A service or interface went down or came up. Down: each VIP naming
    /// it turns unhealthy at once, as a failed health verdict (so its
    /// fail_action applies: withdraw, or announce pessimized with
    /// lower_priority), and its checks count as failed, so they need
    /// `rise` passes to recover. Up: the VIPs naming it that have no other
    /// need down take their checks' combined health again (the driver
    /// probes them at once).
    fn on_need(
        &mut self,
        kind: NeedKind,
        name: String,
        up: bool,
        now: Instant,
        out: &mut Vec<Output>,
    ) {
        let vips = self.naming(kind, &name);
        let known = self
            .needs_down
            .iter()
            .position(|(k, n)| *k == kind && *n == name);
        match (up, known) {
            (true, Some(pos)) => {
                self.needs_down.swap_remove(pos);
            }
            (false, None) if !vips.is_empty() => self.needs_down.push((kind, name.clone())),
            _ => {}
        }
        let what = format!(
            "{} {name} {}",
            kind.as_str(),
            match (kind, up) {
                (NeedKind::Service, true) => "started",
                (NeedKind::Service, false) => "stopped",
                (NeedKind::Interface, true) => "up",
                (NeedKind::Interface, false) => "down",
            }
        );
        for i in vips {
            if up {
                if self.need_down(i).is_some() {
                    continue;
                }
                let h = self.vips[i]
                    .full
                    .as_ref()
                    .and_then(|f| f.combiner.as_ref())
                    .is_some_and(|c| c.healthy());
                let t = self.vips[i].machine.set_health(h, now, &what);
                self.emit(i, t, out);
                continue;
            }
            let slot = &mut self.vips[i];
            for c in slot.checks.iter_mut() {
                if let Some(tr) = c.hysteresis.fail_now() {
                    c.last_transition = Some((now, tr.reason()));
                }
                if let Some(m) = slot.full.as_mut().and_then(|f| f.combiner.as_mut()) {
                    m.update(&c.name, false);
                }
            }
            let t = self.vips[i].machine.set_health(false, now, &what);
            self.emit(i, t, out);
        }
    }

    /// Check `k` of VIP `i` became degraded or no longer is (`on`), its
    /// probe having taken `took` against `limit`: the VIP takes it.
    fn degraded_step(
        &mut self,
        i: usize,
        k: usize,
        (on, limit, took): (bool, Duration, Duration),
        now: Instant,
        out: &mut Vec<Output>,
    ) {
        let slot = &self.vips[i];
        let degraded = slot.degraded();
        let check = slot.checks.get(k).map_or("", |c| c.name.as_str());
        let reason = if on {
            format!(
                "{check}: degraded: {} ms above degraded_latency {} ms",
                took.as_millis(),
                limit.as_millis()
            )
        } else {
            format!(
                "{check}: no longer degraded: {} ms within degraded_latency {} ms",
                took.as_millis(),
                limit.as_millis()
            )
        };
        let t = self.vips[i].machine.set_degraded(degraded, now, &reason);
        self.emit(i, t, out);
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
        slot.routes_out(out);
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
