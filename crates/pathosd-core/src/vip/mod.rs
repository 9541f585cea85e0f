//! The VIP state machine: withdrawn / announced / pessimized, as in the seed's
//! diagram, plus the two-phase drain (`drain_then_withdraw`), `recovery_hold`,
//! `always` VIPs and a drain that waits for the traffic
//! (`drain_until_flows_below`: the count of the VIP's flows is an input). Pure: health, drain and time come in as inputs, a
//! transition and the route intent come out. The caller sends the BGP update
//! for a transition in the same call that produced it (no VIP-level timer
//! other than the deadlines this machine names).

pub mod damping;
pub mod flows;

use crate::bgp::types::{RouteIntent, GRACEFUL_SHUTDOWN};
use crate::config::{FailAction, VipSpec as Vip};
use crate::intern::Interner;
use damping::DampingPolicy;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Route state of a VIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VipState {
    Withdrawn,
    Announced,
    Pessimized,
}

impl VipState {
    pub fn as_str(self) -> &'static str {
        match self {
            VipState::Withdrawn => "withdrawn",
            VipState::Announced => "announced",
            VipState::Pessimized => "pessimized",
        }
    }
}

/// A state change and why it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub from: VipState,
    pub to: VipState,
    pub reason: String,
}

/// The policy parts of a VIP's config that the machine needs. Machines hold
/// it as an `Arc` shared by every VIP with the same policy
/// ([`SharedIntents::share_policy`]): 56 bytes inline were a quarter of each
/// of 10,000 `always` VIPs' slots.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VipPolicy {
    pub always: bool,
    pub fail_action: FailAction,
    pub drain_time: Duration,
    /// `drain_until_flows_below`: a drain withdraws once fewer flows than
    /// this remain (or at drain_time); 0: off.
    pub flows_below: u32,
    pub recovery_hold: Duration,
    /// Shared ([`SharedIntents`]): nearly every VIP has the same two, and
    /// two inline `RouteIntent`s were 112 of a VIP slot's bytes (at
    /// 10,000 `always` VIPs).
    pub healthy_intent: Arc<RouteIntent>,
    pub pessimized_intent: Arc<RouteIntent>,
    /// `damping`, when enabled.
    pub damping: Option<DampingPolicy>,
}

/// One `Arc` per distinct route intent among the VIPs' policies, and one
/// per distinct policy.
#[derive(Debug, Clone, Default)]
pub struct SharedIntents {
    intents: Interner<RouteIntent>,
    policies: Interner<VipPolicy>,
}

impl SharedIntents {
    pub fn share(&mut self, i: RouteIntent) -> Arc<RouteIntent> {
        self.intents.share(i)
    }

    /// The one `Arc` of policy `p`.
    pub fn share_policy(&mut self, p: VipPolicy) -> Arc<VipPolicy> {
        self.policies.share(p)
    }

    /// Forgets the policies no machine holds and then the intents no policy
    /// holds any more (after a reload).
    pub fn prune(&mut self) {
        self.policies.prune();
        self.intents.prune();
    }
}

impl VipPolicy {
    /// The VIP's policy, shared with every other VIP that has the same.
    /// `graceful_shutdown`: `bgp.graceful_shutdown`.
    pub(crate) fn shared(
        vip: &Vip,
        graceful_shutdown: bool,
        intents: &mut SharedIntents,
    ) -> Arc<VipPolicy> {
        let p = VipPolicy::from_config(vip, graceful_shutdown, intents);
        intents.share_policy(p)
    }

    pub(crate) fn from_config(
        vip: &Vip,
        graceful_shutdown: bool,
        intents: &mut SharedIntents,
    ) -> VipPolicy {
        let p = &vip.policy;
        let healthy_intent = RouteIntent {
            as_path_prepend: p.announce.as_path_prepend,
            communities: p.announce.communities.clone(),
            large_communities: p.announce.large_communities.clone(),
            med: p.announce.med,
            local_pref: p.announce.local_pref,
        };
        // Prepends add up so a degraded primary still ranks below a healthy
        // standby and the standby order never inverts (seed: standby ordering).
        let mut communities = p.announce.communities.clone();
        for c in &p.lower_priority.communities {
            if !communities.contains(c) {
                communities.push(*c);
            }
        }
        // A pessimized route is one the service wants traffic moved away
        // from: RFC 8326's GRACEFUL_SHUTDOWN asks the peers that honour it
        // to lower its preference at once, not only to weigh the prepends.
        if graceful_shutdown && !communities.contains(&GRACEFUL_SHUTDOWN) {
            communities.push(GRACEFUL_SHUTDOWN);
        }
        let mut large = p.announce.large_communities.clone();
        for c in &p.lower_priority.large_communities {
            if !large.contains(c) {
                large.push(*c);
            }
        }
        let pessimized_intent = RouteIntent {
            as_path_prepend: p
                .announce
                .as_path_prepend
                .saturating_add(p.lower_priority.as_path_prepend),
            communities,
            large_communities: large,
            med: p.lower_priority.med.or(p.announce.med),
            local_pref: p.lower_priority.local_pref.unwrap_or(p.announce.local_pref),
        };
        VipPolicy {
            always: vip.always,
            fail_action: p.fail_action,
            drain_time: p.drain_time.get(),
            flows_below: p.drain_until_flows_below,
            recovery_hold: p.recovery_hold.get(),
            healthy_intent: intents.share(healthy_intent),
            pessimized_intent: intents.share(pessimized_intent),
            damping: p.damping.enabled.then(|| {
                let d = &p.damping;
                DampingPolicy::new(d.half_life.get(), d.suppress, d.reuse, d.max_suppress.get())
            }),
        }
    }
}

/// One VIP's state machine.
#[derive(Debug, Clone)]
pub struct VipMachine {
    policy: Arc<VipPolicy>,
    state: VipState,
    /// HEALTHY, DRAIN_FILE, DRAIN_API and WITHDRAWN_AFTER_ANNOUNCE: one byte,
    /// not four `bool`s, which with a 24-byte reason made the machine 80
    /// bytes instead of 64 in each of 10,000 slots.
    flags: u8,
    /// When `healthy` last changed: the time the VIP became healthy while
    /// it is (recovery_hold), or unhealthy while it is not (two-phase
    /// drain); None while unhealthy since start. One field, not one per
    /// side: only the current side's time is ever read, and 16 bytes a
    /// slot were 160 KB at 10,000 `always` VIPs.
    health_since: Option<Instant>,
    flaps: u32,
    /// Its reason is borrowed when fixed ("always announced", ...): a
    /// `String` per VIP was 10,000 small allocations at 10,000 `always`
    /// VIPs.
    last_transition: Option<(Instant, Reason)>,
}

/// The combined health is good.
const HEALTHY: u8 = 1;
/// The lower_priority_file exists.
const DRAIN_FILE: u8 = 2;
/// Drain was switched on through the API or ubus.
const DRAIN_API: u8 = 4;
/// Set once the VIP was announced and later withdrawn: recovery_hold
/// applies to re-announcements, not to the first one after start.
const WITHDRAWN_AFTER_ANNOUNCE: u8 = 8;
/// The last flow count read during this drain was below the policy's
/// `flows_below`. Cleared when a drain begins, so that only a count read
/// during it can end it.
const FLOWS_LOW: u8 = 16;
/// drain_time has passed since the drain (file or API) began: the engine
/// keeps that time (`Engine::drains`), not each machine (16 bytes more
/// in each of 10,000 slots for a field that nearly every VIP leaves
/// empty).
const DRAIN_EXPIRED: u8 = 32;
/// Some check with graded health says the VIP is degraded: announced,
/// but pessimized, while it is healthy.
const DEGRADED: u8 = 64;
/// Damping suppresses the VIP: the engine keeps its penalty
/// (`Engine::damping`) and sets and clears this.
const DAMPED: u8 = 128;

/// Why a VIP last changed state: fixed text, borrowed, or a check's own
/// words, owned. A thin pointer each, hence `&&str` and `Box<Box<str>>`:
/// 16 bytes with the tag where a `Cow<'static, str>` was 24, 80 KB less
/// memory at 10,000 VIPs.
#[derive(Debug, Clone)]
enum Reason {
    Fixed(&'static &'static str),
    Owned(Box<Box<str>>),
}

impl Reason {
    fn as_str(&self) -> &str {
        match self {
            Reason::Fixed(s) => s,
            Reason::Owned(s) => s,
        }
    }
}

impl VipMachine {
    /// VIPs start withdrawn (fail closed); an `always` VIP is announced at once.
    pub fn new(policy: impl Into<Arc<VipPolicy>>, now: Instant) -> VipMachine {
        let mut m = VipMachine {
            policy: policy.into(),
            state: VipState::Withdrawn,
            flags: 0,
            health_since: None,
            flaps: 0,
            last_transition: None,
        };
        if m.policy.always {
            m.set_flag(HEALTHY, true);
            m.health_since = Some(now);
            let _ = m.evaluate(now, Reason::Fixed(&"always announced"));
        }
        m
    }

    pub fn state(&self) -> VipState {
        self.state
    }

    fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    pub fn healthy(&self) -> bool {
        self.flag(HEALTHY)
    }

    pub(crate) fn draining(&self) -> bool {
        self.flag(DRAIN_FILE | DRAIN_API)
    }

    pub fn drain_file(&self) -> bool {
        self.flag(DRAIN_FILE)
    }

    pub fn drain_api(&self) -> bool {
        self.flag(DRAIN_API)
    }

    /// Damping suppresses the VIP now.
    pub fn damped(&self) -> bool {
        self.flag(DAMPED) && self.policy.damping.is_some()
    }

    /// Damping suppresses the VIP from now on; the caller evaluates it
    /// next, in the same call ([`Self::set_health`] with the flap that
    /// did it), so that it changes state once.
    pub(crate) fn mark_damped(&mut self) {
        self.set_flag(DAMPED, true);
    }

    /// Damping lets the VIP go: its penalty decayed below reuse.
    pub(crate) fn undamp(&mut self, now: Instant) -> Option<Transition> {
        if !self.flag(DAMPED) {
            return None;
        }
        self.set_flag(DAMPED, false);
        self.evaluate(now, Reason::Fixed(&"damping penalty below reuse"))
    }

    /// Times the VIP left `announced` (pessimized or withdrawn) since start.
    pub fn flaps(&self) -> u32 {
        self.flaps
    }

    /// When the VIP last changed state, and why.
    pub fn last_transition(&self) -> Option<(&Instant, &str)> {
        self.last_transition.as_ref().map(|(t, r)| (t, r.as_str()))
    }

    /// Whether the last transition's reason is fixed text, borrowed (no
    /// `String` per VIP).
    #[cfg(test)]
    pub(crate) fn last_reason_is_fixed(&self) -> bool {
        matches!(self.last_transition, Some((_, Reason::Fixed(_))))
    }

    pub fn policy(&self) -> &VipPolicy {
        &self.policy
    }

    /// What the route should carry now; None while withdrawn. The policy's
    /// shared `Arc`: the engine's outputs, the speaker's table and every
    /// VIP with the same attributes hold this one value.
    pub fn intent(&self) -> Option<&Arc<RouteIntent>> {
        match self.state {
            VipState::Withdrawn => None,
            VipState::Announced => Some(&self.policy.healthy_intent),
            VipState::Pessimized => Some(&self.policy.pessimized_intent),
        }
    }

    /// The combined health (after checks_policy) changed or was re-reported.
    pub(crate) fn set_health(
        &mut self,
        healthy: bool,
        now: Instant,
        reason: &str,
    ) -> Option<Transition> {
        if self.policy.always {
            return None;
        }
        if healthy != self.healthy() {
            self.set_flag(HEALTHY, healthy);
            self.health_since = Some(now);
            if !healthy {
                // drain_then_withdraw begins: it waits for a count of its own.
                self.set_flag(FLOWS_LOW, false);
            }
        }
        self.evaluate(now, Reason::Owned(Box::new(Box::from(reason))))
    }

    /// Graded health changed: a degraded healthy VIP is pessimized, in
    /// place; its failure still takes the fail_action.
    pub(crate) fn set_degraded(
        &mut self,
        degraded: bool,
        now: Instant,
        reason: &str,
    ) -> Option<Transition> {
        if self.policy.always || degraded == self.flag(DEGRADED) {
            return None;
        }
        self.set_flag(DEGRADED, degraded);
        self.evaluate(now, Reason::Owned(Box::new(Box::from(reason))))
    }

    /// Graded health as a reload left it; the policy's evaluation that
    /// follows applies it.
    pub(crate) fn mark_degraded(&mut self, degraded: bool) {
        self.set_flag(DEGRADED, degraded);
    }

    pub fn degraded(&self) -> bool {
        self.flag(DEGRADED)
    }

    /// The lower_priority_file appeared or disappeared.
    pub(crate) fn set_drain_file(&mut self, present: bool, now: Instant) -> Option<Transition> {
        if present == self.drain_file() {
            return None;
        }
        let was = self.draining();
        self.set_flag(DRAIN_FILE, present);
        self.drain_changed(was);
        let reason = if present {
            &"lower_priority_file created"
        } else {
            &"lower_priority_file removed"
        };
        self.evaluate(now, Reason::Fixed(reason))
    }

    /// Drain switched at runtime through the API or ubus.
    pub(crate) fn set_drain_api(&mut self, enable: bool, now: Instant) -> Option<Transition> {
        if enable == self.drain_api() {
            return None;
        }
        let was = self.draining();
        self.set_flag(DRAIN_API, enable);
        self.drain_changed(was);
        let reason = if enable {
            &"drain enabled via API"
        } else {
            &"drain disabled via API"
        };
        self.evaluate(now, Reason::Fixed(reason))
    }

    /// A drain that begins waits for a count and a drain_time of its own;
    /// a drain by the other source while one runs changes neither.
    fn drain_changed(&mut self, was: bool) {
        if was != self.draining() {
            self.set_flag(FLOWS_LOW | DRAIN_EXPIRED, false);
        }
    }

    /// drain_time has passed since the drain (file or API) began: a drain
    /// that waits for the flows withdraws now. The engine keeps when each
    /// drain began and calls this at its deadline.
    pub(crate) fn drain_expired(&mut self, now: Instant) -> Option<Transition> {
        if !self.draining() || self.flag(DRAIN_EXPIRED) {
            return None;
        }
        self.set_flag(DRAIN_EXPIRED, true);
        self.evaluate(now, Reason::Fixed(&"drain_time elapsed"))
    }

    /// The VIP's active flows were counted: `count` below the policy's
    /// `flows_below` lets a drain that waits for them withdraw now.
    pub(crate) fn set_flows(&mut self, count: u32, now: Instant) -> Option<Transition> {
        let low = count < self.policy.flows_below;
        if low == self.flag(FLOWS_LOW) {
            return None;
        }
        self.set_flag(FLOWS_LOW, low);
        self.evaluate(
            now,
            Reason::Fixed(&"active flows below drain_until_flows_below"),
        )
    }

    /// Whether the VIP is pessimized in a drain that withdraws once its
    /// flows fall below `flows_below`: only then are its flows counted.
    pub fn waits_for_flows(&self) -> bool {
        self.state == VipState::Pessimized
            && self.policy.flows_below > 0
            && (self.draining()
                || (!self.healthy() && self.policy.fail_action == FailAction::DrainThenWithdraw))
    }

    /// Whether the drain's drain_time, which the engine keeps, still has
    /// to be told ([`Self::drain_expired`]).
    pub(crate) fn drain_time_pending(&self) -> bool {
        self.state == VipState::Pessimized && self.drain_withdraws() && !self.flag(DRAIN_EXPIRED)
    }

    /// A drain (file or API) with `flows_below` set withdraws; without it
    /// the VIP stays pessimized while drained.
    pub(crate) fn drain_withdraws(&self) -> bool {
        self.draining() && self.policy.flows_below > 0
    }

    /// A reload changed the VIP's policy (its identity did not change): the
    /// state, health, drain and timers are kept, and the new policy decides
    /// from here on (e.g. a pessimized VIP whose fail_action became
    /// `withdraw` is withdrawn now). The caller re-sends the route if
    /// [`VipMachine::intent`] changed without a transition.
    pub(crate) fn set_policy(
        &mut self,
        policy: impl Into<Arc<VipPolicy>>,
        now: Instant,
    ) -> Option<Transition> {
        self.policy = policy.into();
        if self.policy.damping.is_none() {
            self.set_flag(DAMPED, false);
        }
        self.evaluate(now, Reason::Fixed(&"policy changed by reload"))
    }

    /// The daemon stops: the VIP is withdrawn whatever its health and
    /// drain, counted as every other change is.
    pub(crate) fn stop(
        &mut self,
        now: Instant,
        reason: &'static &'static str,
    ) -> Option<Transition> {
        self.enter(VipState::Withdrawn, now, Reason::Fixed(reason))
    }

    /// Time passed: fires drain_time and recovery_hold deadlines.
    pub(crate) fn tick(&mut self, now: Instant) -> Option<Transition> {
        let reason = match self.state {
            VipState::Withdrawn => &"recovery_hold elapsed",
            _ => &"drain_time elapsed",
        };
        self.evaluate(now, Reason::Fixed(reason))
    }

    /// When `tick` must be called next, if some timed step is pending (the
    /// drain's own drain_time is the engine's, see [`Self::drain_expired`]).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        match self.state {
            // A drain that withdraws keeps the VIP withdrawn while it lasts:
            // no recovery_hold deadline (one in the past would be due for
            // ever).
            // Nor while damped: the engine's release time ends that.
            VipState::Withdrawn
                if self.flag(HEALTHY)
                    && self.flag(WITHDRAWN_AFTER_ANNOUNCE)
                    && !self.drain_withdraws()
                    && !self.damped() =>
            {
                self.health_since
                    .and_then(|t| t.checked_add(self.policy.recovery_hold))
            }
            VipState::Pessimized
                if !self.healthy() && self.policy.fail_action == FailAction::DrainThenWithdraw =>
            {
                self.health_since
                    .and_then(|t| t.checked_add(self.policy.drain_time))
            }
            _ => None,
        }
    }

    fn desired(&self, now: Instant) -> VipState {
        let d = self.desired_undamped(now);
        if d == VipState::Withdrawn || !self.damped() {
            return d;
        }
        // Damped: never announced in full while it lasts. A VIP whose
        // failure withdraws stays withdrawn; one whose failure only
        // lowers its priority (the owner wants the route kept, as a last
        // resort) stays pessimized: steady, so its peers get no UPDATE.
        if self.policy.fail_action == FailAction::LowerPriority && self.state != VipState::Withdrawn
        {
            VipState::Pessimized
        } else {
            VipState::Withdrawn
        }
    }

    /// What health and the drain ask for, damping aside.
    fn desired_undamped(&self, now: Instant) -> VipState {
        let base = self.desired_by_health(now);
        if base == VipState::Withdrawn || !self.drain_withdraws() {
            return base;
        }
        // A drain that withdraws: pessimized while flows remain, withdrawn
        // once they fall below the threshold or at drain_time, and never
        // announced again while the drain lasts.
        if self.state == VipState::Withdrawn || self.flag(FLOWS_LOW | DRAIN_EXPIRED) {
            VipState::Withdrawn
        } else {
            VipState::Pessimized
        }
    }

    /// What health, the drain and the fail_action ask for, without a drain's
    /// withdraw.
    fn desired_by_health(&self, now: Instant) -> VipState {
        let up = if self.draining() || self.flag(DEGRADED) {
            VipState::Pessimized
        } else {
            VipState::Announced
        };
        if self.healthy() {
            if self.state == VipState::Withdrawn && self.flag(WITHDRAWN_AFTER_ANNOUNCE) {
                // recovery_hold: re-announce only after a stable healthy period,
                // so an upstream flap damper never sees the VIP bounce.
                let held = self
                    .health_since
                    .map(|t| now.saturating_duration_since(t) >= self.policy.recovery_hold)
                    .unwrap_or(false);
                if !held {
                    return VipState::Withdrawn;
                }
            }
            return up;
        }
        // Unhealthy. A VIP that never became healthy is never announced,
        // whatever the fail_action (fail closed).
        if self.state == VipState::Withdrawn {
            return VipState::Withdrawn;
        }
        match self.policy.fail_action {
            FailAction::Withdraw => VipState::Withdrawn,
            FailAction::LowerPriority => VipState::Pessimized,
            FailAction::DrainThenWithdraw => {
                let expired = self
                    .health_since
                    .map(|t| now.saturating_duration_since(t) >= self.policy.drain_time)
                    .unwrap_or(true);
                let flows_low = self.policy.flows_below > 0 && self.flag(FLOWS_LOW);
                if expired || flows_low {
                    VipState::Withdrawn
                } else {
                    VipState::Pessimized
                }
            }
        }
    }

    fn evaluate(&mut self, now: Instant, reason: Reason) -> Option<Transition> {
        let to = self.desired(now);
        self.enter(to, now, reason)
    }

    /// Moves to `to`, if not there already.
    fn enter(&mut self, to: VipState, now: Instant, reason: Reason) -> Option<Transition> {
        if to == self.state {
            return None;
        }
        let from = self.state;
        // A flap is the service degrading: the VIP leaving full announcement.
        if from == VipState::Announced {
            self.flaps = self.flaps.saturating_add(1);
        }
        if to == VipState::Withdrawn {
            self.set_flag(WITHDRAWN_AFTER_ANNOUNCE, true);
        }
        self.state = to;
        let t = Transition {
            from,
            to,
            reason: reason.as_str().to_string(),
        };
        self.last_transition = Some((now, reason));
        Some(t)
    }
}

#[cfg(test)]
mod tests;
