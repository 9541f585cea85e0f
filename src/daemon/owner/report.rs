//! What the owner tells of each step, the stop's included: the log line
//! and ubus event of each change, the span of each route change, the
//! sessions' changes as ubus events.

use super::TriggerReply;
use crate::bgp::speaker::PeerEvent;
use crate::bgp::types::Prefix;
use crate::daemon::engine::Output;
use crate::daemon::state::State;
use std::time::SystemTime;

/// A step's decisions told: each VIP and check transition logged and,
/// for a VIP, sent as a ubus event and queued for the hooks; each route change a span. The
/// routes themselves are `Owner::apply`'s (or, at the stop, the
/// speaker's).
pub(super) fn report(
    state: &State<TriggerReply>,
    ubus: Option<&crate::ubus::UbusHandle>,
    mut hooks: Option<&mut crate::daemon::hotplug::Hooks>,
    outputs: &[Output],
) {
    for o in outputs {
        match o {
            Output::Route { .. } | Output::InitialDone => {}
            Output::VipTransition {
                vip,
                prefix,
                from,
                to,
                reason,
            } => {
                // Queued, never waited for: the routes go out below.
                if let Some(h) = hooks.as_deref_mut() {
                    h.queue(vip, &hook_prefixes(state, vip, prefix), *from, *to, reason);
                }
                let prefix = prefix.to_string();
                log::info!(
                    "vip {vip} {prefix}: {} -> {} ({reason})",
                    from.as_str(),
                    to.as_str()
                );
                if let Some(u) = ubus {
                    // The time /status shows as the VIP's last_transition_time.
                    let at = state
                        .engine()
                        .vip(vip)
                        .and_then(|v| v.machine.last_transition())
                        .map_or_else(SystemTime::now, |(t, _)| state.wall_time(*t));
                    u.send_event(
                        crate::ubus::EVENT_VIP,
                        crate::api::ubus_methods::vip_event(
                            vip,
                            &prefix,
                            from.as_str(),
                            to.as_str(),
                            reason,
                            at,
                        ),
                    );
                }
            }
            Output::CheckTransitionOnly { vip, check, reason } => {
                log::info!(
                    "vip {vip} check {check}: {reason} (check transition without VIP health change)"
                );
            }
            Output::LocalAddressMissing { vip, check, detail } => {
                log::warn!("vip {vip} check {check}: {detail}");
            }
        }
    }
    if crate::daemon::otel::tracing() {
        route_spans(state, outputs);
    }
}

/// A hook's PREFIX: every prefix of the VIP, space-separated, first the
/// one of the transition (the one the log line names). A VIP the step
/// removed has no slot left to read the others from, nor one whose first
/// prefix changed: then the transition's alone.
fn hook_prefixes(state: &State<TriggerReply>, vip: &str, first: &Prefix) -> String {
    let mut all = first.to_string();
    if let Some(slot) = state.engine().vip(vip) {
        if slot.prefix == *first {
            for p in slot.more_prefixes() {
                all.push(' ');
                all.push_str(&p.to_string());
            }
        }
    }
    all
}

/// A `bgp.announce`, `bgp.withdraw` or `bgp.pessimize` span per route
/// change of one engine step: a pessimize is an announce whose VIP moved
/// to pessimized in the same step (its prepend says how much); the VIP's
/// other prefixes are looked up in its slot.
fn route_spans(state: &State<TriggerReply>, outputs: &[Output]) {
    for o in outputs {
        let Output::Route { prefix, intent } = o else {
            continue;
        };
        let pessimized = outputs.iter().any(|t| match t {
            Output::VipTransition {
                vip, prefix: p, to, ..
            } if *to == pathosd_core::vip::VipState::Pessimized => {
                p == prefix || (state.engine().vip(vip)).is_some_and(|s| s.has_prefix(prefix))
            }
            _ => false,
        });
        let name = match intent {
            None => "bgp.withdraw",
            Some(_) if pessimized => "bgp.pessimize",
            Some(_) => "bgp.announce",
        };
        let prepend = intent.as_ref().map_or(0, |i| i.as_path_prepend);
        crate::daemon::otel::route(name, prefix, prepend);
    }
}

pub(super) fn send_peer_event(ubus: Option<&crate::ubus::UbusHandle>, p: &PeerEvent) {
    if let Some(u) = ubus {
        u.send_event(
            crate::ubus::EVENT_PEER,
            crate::api::ubus_methods::peer_event(
                &p.peer,
                p.address,
                p.from.as_str(),
                p.to.as_str(),
                p.reason.as_deref().unwrap_or(""),
                SystemTime::now(),
            ),
        );
    }
}
