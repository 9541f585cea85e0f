//! The engine's side of a reload: the plan ([`crate::daemon::reload`])
//! applied to the slots, and `bgp.graceful_shutdown` taken in place.

use super::slot::{Pending, VipSlot};
use super::{Engine, Output};
use crate::config::VipSpec as Vip;
use crate::daemon::reload::{ReloadPlan, VipChange};
use crate::vip::{VipPolicy, VipState};
use std::time::Instant;

/// What a reload emits, in two lists: the withdrawals go out first.
#[derive(Default)]
struct Emitted {
    withdraws: Vec<Output>,
    announces: Vec<Output>,
}

/// A slot that leaves the engine (its VIP removed or restarted): withdrawn
/// with `reason` if it was not.
fn retire(s: VipSlot, reason: &str, out: &mut Vec<Output>) {
    if s.machine.state() != VipState::Withdrawn {
        out.push(Output::VipTransition {
            vip: s.name.to_string(),
            prefix: s.prefix,
            from: s.machine.state(),
            to: VipState::Withdrawn,
            reason: reason.to_string(),
        });
        s.routes_with(None, out);
    }
}

impl Engine {
    /// Applies a new VIP list as `plan` (see [`crate::daemon::reload`]) decided.
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
        let mut out = Emitted::default();
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
        self.vips.reserve_exact(vips.len());
        for (k, (p, pos)) in vips.into_iter().zip(found).enumerate() {
            let name = p.name().clone();
            // A second VIP of the same name (validation rejects it) finds
            // its slot taken: a new slot, as before.
            let taken = old.get_mut(pos as usize).and_then(Option::take);
            match (plan.vip_at(k, &name), taken) {
                (VipChange::Unchanged, Some(mut slot)) => {
                    // Share the new config's name (the old one goes with it)
                    // and keep the new config, equal to the old.
                    slot.name = name;
                    slot.set_config(p.into_config());
                    self.vips.push(slot);
                    continue;
                }
                (VipChange::Kept { .. }, Some(mut slot)) => {
                    slot.name = name;
                    slot.set_config(p.into_config());
                    self.keep(slot, now, &mut out);
                    continue;
                }
                (_, Some(slot)) => retire(slot, "config changed", &mut out.withdraws),
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
            if slot.machine.intent().is_some() {
                slot.routes_out(&mut out.announces);
            }
            self.vips.push(slot);
        }
        for s in old.into_iter().flatten() {
            retire(s, "removed from config", &mut out.withdraws);
        }
        self.intents.prune();
        self.reindex();
        self.forget_flows();
        self.sync_drains(now);
        self.walk_damping(now, &mut out.announces);
        out.withdraws.extend(out.announces);
        out.withdraws
    }

    /// A kept VIP's slot, with its new config, back in the engine: it takes
    /// the new policy and timing, keeping its state and check health.
    fn keep(&mut self, mut slot: VipSlot, now: Instant, out: &mut Emitted) {
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
        // The drain file is polled from the new config only: one no longer
        // configured no longer drains.
        let t = match t {
            None if v.policy.lower_priority_file.is_none() => {
                slot.machine.set_drain_file(false, now)
            }
            t => t,
        };
        self.vips.push(slot);
        if t.is_some() {
            let mut emitted = Vec::new();
            self.emit(i, t, &mut emitted);
            // A withdraw goes with the others, first.
            if self.vips[i].machine.state() == VipState::Withdrawn {
                out.withdraws.extend(emitted);
            } else {
                out.announces.extend(emitted);
            }
        } else if self.vips[i].machine.intent() != before.as_ref() {
            // Same state, new attributes: re-announce in place (an implicit
            // withdraw of the old path, RFC 4271 §3.1).
            self.vips[i].routes_out(&mut out.announces);
        }
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
                self.vips[i].routes_out(&mut out);
            }
        }
        self.intents.prune();
        out
    }

    /// The VIP part of reload's plan ([`crate::daemon::reload::plan`]): the slots'
    /// configs are the old side. Every VIP of `new` in its order, then the
    /// removed ones in the engine's order.
    pub fn diff(&self, new: &[Vip]) -> Vec<(String, VipChange)> {
        crate::daemon::reload::walk_vips(
            &|name| self.vip(name).map(VipSlot::config),
            &mut self.vips.iter().map(|s| &*s.name),
            new,
        )
    }
}
