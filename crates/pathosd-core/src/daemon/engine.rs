//! The daemon's pure core: check reports → checks policy → VIP state → route
//! intents. It owns no socket and reads no clock: `now` comes in with every
//! input and deadlines go out through `next_deadline`, so a whole run can be
//! replayed from a list of events.

use super::reload::{ReloadPlan, VipChange};
use crate::bgp::types::{Prefix, RouteIntent};
use crate::check::policy::Combiner;
use crate::check::{CheckResult, Report};
use crate::config::policy_expr::Expr;
use crate::config::Vip;
use crate::vip::{VipMachine, VipPolicy, VipState};
use std::time::{Duration, Instant};

/// What the engine is told.
#[derive(Debug, Clone)]
pub enum Input {
    /// A probe finished and went through its check's hysteresis.
    Report(Report),
    /// The lower_priority_file of a VIP was polled.
    DrainFile { vip: String, present: bool },
    /// Drain switched at runtime (HTTP API or ubus).
    DrainApi { vip: String, enable: bool },
    /// Time passed (deadlines, the initial-evaluation bound).
    Tick,
}

/// What the engine asks the shell to do or to tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Announce with these attributes (Some) or withdraw (None), to every peer.
    Route {
        prefix: Prefix,
        intent: Option<RouteIntent>,
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
    /// Every VIP has had its first evaluation: End-of-RIB may go out.
    InitialDone,
}

/// Everything /status shows about one check.
#[derive(Debug, Clone, Default)]
pub struct CheckStatus {
    pub name: String,
    pub healthy: bool,
    pub consecutive_ok: u32,
    pub consecutive_fail: u32,
    /// Results seen since start.
    pub runs: u32,
    pub last: Option<CheckResult>,
    pub last_time: Option<Instant>,
    pub last_transition: Option<(Instant, String)>,
    pub total_ok: u32,
    pub total_fail: u32,
    pub timeouts: u32,
    /// Upper bounds (seconds) of the duration histogram, from the check timeout.
    pub bucket_bounds: Vec<f64>,
    /// Cumulative counts per bound.
    pub buckets: Vec<u64>,
    pub duration_sum: f64,
}

/// Histogram bounds for a check: ten linear steps up to its timeout, then the
/// timeout plus 50ms (late results), so the buckets fit the check's scale.
pub(crate) fn duration_buckets(timeout: Duration) -> Vec<f64> {
    let t = timeout.as_secs_f64().max(0.001);
    let mut b: Vec<f64> = (1..=10)
        .map(|i| (t * f64::from(i) / 10.0 * 1e6).round() / 1e6)
        .collect();
    b.push(((t + 0.05) * 1e6).round() / 1e6);
    b.dedup();
    b
}

/// One VIP inside the engine.
#[derive(Debug, Clone)]
pub struct VipSlot {
    /// The VIP's config, for status and for reload's "unchanged?" test.
    pub config: Vip,
    pub name: String,
    pub prefix: Prefix,
    pub machine: VipMachine,
    pub combiner: Combiner,
    pub checks: Vec<CheckStatus>,
    rise: Vec<u32>,
    pub initial_done: bool,
    /// Transitions into each state since start (withdrawn, announced, pessimized).
    pub transitions: [u32; 3],
}

impl VipSlot {
    /// Takes the config of a VIP whose check identity did not change: the
    /// same checks, by name and order, keep their counters and their
    /// duration histogram (its bounds stay those of the timeout the VIP
    /// started with, so the series stay consistent for Prometheus); rise
    /// follows the new config.
    fn retune(&mut self, v: &Vip) {
        self.rise = v.check_list().iter().map(|c| c.rise.max(1)).collect();
        self.config = v.clone();
    }

    fn check_mut(&mut self, name: &str) -> Option<(usize, &mut CheckStatus)> {
        self.checks
            .iter_mut()
            .enumerate()
            .find(|(_, c)| c.name == name)
    }
}

/// The pure core.
#[derive(Debug, Clone)]
pub struct Engine {
    vips: Vec<VipSlot>,
    /// EoR goes out at the latest then, even if a probe hangs.
    initial_deadline: Instant,
    initial_done: bool,
}

/// Longest time a VIP needs for its first decision: its slowest check's
/// rise × interval plus one timeout.
pub(crate) fn first_evaluation_bound(vip: &Vip) -> Duration {
    vip.check_list()
        .iter()
        .map(|c| {
            c.interval
                .get()
                .saturating_mul(c.rise.max(1))
                .saturating_add(c.timeout.get())
        })
        .max()
        .unwrap_or(Duration::ZERO)
}

fn new_slot(v: &Vip, expr: &Expr, now: Instant) -> Option<VipSlot> {
    let prefix = v.prefix?;
    let names: Vec<String> = v.check_list().iter().map(|c| c.effective_name()).collect();
    Some(VipSlot {
        config: v.clone(),
        name: v.name.clone(),
        prefix,
        initial_done: v.always || names.is_empty(),
        checks: v
            .check_list()
            .iter()
            .map(|c| {
                let bounds = duration_buckets(c.timeout.get());
                CheckStatus {
                    name: c.effective_name(),
                    buckets: vec![0; bounds.len()],
                    bucket_bounds: bounds,
                    ..CheckStatus::default()
                }
            })
            .collect(),
        transitions: [0; 3],
        rise: v.check_list().iter().map(|c| c.rise.max(1)).collect(),
        combiner: Combiner::new(expr.clone(), names),
        machine: VipMachine::new(VipPolicy::from_config(v), now),
    })
}

impl Engine {
    /// Builds the engine for `vips`, each with its parsed checks_policy.
    /// Returns the outputs of the start itself (`always` VIPs announce).
    pub fn new(vips: &[(Vip, Expr)], now: Instant) -> (Engine, Vec<Output>) {
        let mut out = Vec::new();
        let mut slots = Vec::new();
        let mut bound = Duration::ZERO;
        for (v, expr) in vips {
            let Some(slot) = new_slot(v, expr, now) else {
                continue;
            };
            if let Some(intent) = slot.machine.intent() {
                out.push(Output::Route {
                    prefix: slot.prefix,
                    intent: Some(intent.clone()),
                });
            }
            bound = bound.max(first_evaluation_bound(v));
            slots.push(slot);
        }
        // One second of slack so the last probe's report can arrive.
        let deadline = now
            .checked_add(bound.saturating_add(Duration::from_secs(1)))
            .unwrap_or(now);
        let mut e = Engine {
            vips: slots,
            initial_deadline: deadline,
            initial_done: false,
        };
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
    pub fn reload(&mut self, vips: &[(Vip, Expr)], plan: &ReloadPlan, now: Instant) -> Vec<Output> {
        let mut withdraws = Vec::new();
        let mut announces = Vec::new();
        let mut old = std::mem::take(&mut self.vips);
        let retire = |s: VipSlot, reason: &str, out: &mut Vec<Output>| {
            if s.machine.state() != VipState::Withdrawn {
                out.push(Output::VipTransition {
                    vip: s.name.clone(),
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
        for (v, expr) in vips {
            let pos = old.iter().position(|s| s.name == v.name);
            match (plan.vip(&v.name), pos) {
                (VipChange::Unchanged, Some(pos)) => {
                    self.vips.push(old.remove(pos));
                    continue;
                }
                (VipChange::Kept { .. }, Some(pos)) => {
                    let mut slot = old.remove(pos);
                    let i = self.vips.len();
                    let before = slot.machine.intent().cloned();
                    slot.retune(v);
                    let t = slot.machine.set_policy(VipPolicy::from_config(v), now);
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
                (_, Some(pos)) => retire(old.remove(pos), "config changed", &mut withdraws),
                (_, None) => {}
            }
            let Some(mut slot) = new_slot(v, expr, now) else {
                continue;
            };
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
        for s in old {
            retire(s, "removed from config", &mut withdraws);
        }
        withdraws.extend(announces);
        withdraws
    }

    pub fn vips(&self) -> &[VipSlot] {
        &self.vips
    }

    pub fn vip(&self, name: &str) -> Option<&VipSlot> {
        self.vips.iter().find(|v| v.name == name)
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
        d
    }

    pub fn handle(&mut self, input: Input, now: Instant) -> Vec<Output> {
        let mut out = Vec::new();
        match input {
            Input::Report(r) => self.on_report(r, now, &mut out),
            Input::DrainFile { vip, present } => {
                if let Some(i) = self.index(&vip) {
                    let t = self.vips[i].machine.set_drain_file(present, now);
                    self.emit(i, t, &mut out);
                }
            }
            Input::DrainApi { vip, enable } => {
                if let Some(i) = self.index(&vip) {
                    let t = self.vips[i].machine.set_drain_api(enable, now);
                    self.emit(i, t, &mut out);
                }
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
            }
        }
        self.check_initial(now, &mut out);
        out
    }

    fn index(&self, vip: &str) -> Option<usize> {
        self.vips.iter().position(|v| v.name == vip)
    }

    fn on_report(&mut self, r: Report, now: Instant, out: &mut Vec<Output>) {
        let Some(i) = self.index(&r.vip) else { return };
        let slot = &mut self.vips[i];
        let Some((_, c)) = slot.check_mut(&r.check) else {
            return;
        };
        c.healthy = r.healthy;
        c.consecutive_ok = r.consecutive_ok;
        c.consecutive_fail = r.consecutive_fail;
        c.runs = c.runs.saturating_add(1);
        c.last_time = Some(now);
        if r.result.ok {
            c.total_ok = c.total_ok.saturating_add(1);
        } else {
            c.total_fail = c.total_fail.saturating_add(1);
        }
        if r.result.timed_out {
            c.timeouts = c.timeouts.saturating_add(1);
        }
        let secs = r.result.duration.as_secs_f64();
        c.duration_sum += secs;
        for (b, n) in c.bucket_bounds.iter().zip(c.buckets.iter_mut()) {
            if secs <= *b {
                *n = n.saturating_add(1);
            }
        }
        let crossed = r.transition.map(|t| t.reason());
        if let Some(reason) = crossed {
            c.last_transition = Some((now, reason.to_string()));
        }
        c.last = Some(r.result);
        let changed = slot.combiner.update(&r.check, r.healthy);
        match (changed, crossed) {
            (Some(h), _) => {
                let reason = format!("{}: {}", r.check, crossed.unwrap_or("policy reevaluation"));
                let t = self.vips[i].machine.set_health(h, now, &reason);
                self.emit(i, t, out);
            }
            (None, Some(reason)) => {
                // The owner logs it: the engine is a pure layer and does not log.
                out.push(Output::CheckTransitionOnly {
                    vip: r.vip.clone(),
                    check: r.check.clone(),
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
            vip: slot.name.clone(),
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
                let all_ran = v
                    .checks
                    .iter()
                    .zip(&v.rise)
                    .all(|(c, rise)| c.runs >= *rise);
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
