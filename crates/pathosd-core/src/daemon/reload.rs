//! What a reload changes: one pure diff of the running config against the
//! new one, and one rule per setting. The engine (VIP state), the owner
//! (check loops, global settings, logging) and the speaker (sessions) all
//! apply this plan; none of them compares configs on its own.
//!
//! The rules (docs/config.md, "Reload"):
//!
//! * A VIP keeps its state (announced, pessimized, draining, counters) unless
//!   its *check identity* changed: `prefix`, `always`, `checks_policy`,
//!   `require_local_address`, `local_interface`, `services`, `interfaces`,
//!   the number, names, types or probe options of its checks. Then it restarts withdrawn, as at start.
//! * `policy` (attributes, fail_action, drain file, drain and hold times,
//!   damping: the VIP keeps its name's penalty, restarted too)
//!   and `detailed_metrics` apply to the running VIP: it re-announces with
//!   the new attributes if they differ.
//! * `interval`, `fast_interval`, `timeout`, `rise`, `fall` and graded
//!   health (`degraded_latency`, `degraded_hold_down`) apply to the running
//!   checks: their health, degraded state and counters are kept (counters clamp to
//!   the new rise / fall).
//! * A neighbor whose session settings changed (its own options, or the
//!   router and `bgp` settings its session is built from) restarts; only
//!   `required` changes without a restart.
//! * Global settings: `logging.level`, `bgp.shutdown_drain`,
//!   `bgp.graceful_shutdown` (pessimized routes re-announced in place), `otel`
//!   and the HTTP API's settings ([`ApiSetting`]: listen address, timeouts,
//!   token; the server is replaced) apply live ([`ReloadPlan::live`], each a
//!   [`LiveChange`]); the BGP listen
//!   address, the ubus socket and the log sink (`logging.syslog`,
//!   `logging.timestamps`) are listed in [`ReloadPlan::needs_restart`].

use crate::config::run::{ApiRun, CheckSpec, RunConfig, VipSpec};
use std::borrow::Cow;

/// What happens to one VIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VipChange {
    Unchanged,
    /// Same check identity: state and check health are kept.
    Kept {
        /// `policy` or `detailed_metrics` changed: the VIP takes the new
        /// policy and re-announces if its route's attributes changed.
        attributes: bool,
        /// `interval`, `fast_interval`, `timeout`, `rise`, `fall` or graded
        /// health of a check changed: the check loops restart with the new
        /// timing, keeping each check's health and counters.
        timing: bool,
    },
    /// The check identity changed (the field named): the VIP restarts
    /// withdrawn with new checks.
    Restarted(&'static str),
    Added,
    Removed,
}

/// What happens to one BGP neighbor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborChange {
    Unchanged,
    /// Only `required` changed: applied to the running session.
    Required,
    /// `bfd` changed (and perhaps `required`): the BFD session takes it,
    /// the BGP session goes on.
    Bfd,
    /// A session setting changed: Cease, then a new session.
    Restarted,
    Added,
    Removed,
}

/// A global setting that a reload changed and that applies at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveChange {
    /// `logging.level`: the log's level is set anew.
    LogLevel,
    /// `otel` (with `logging.otel_level`): the exporter is stopped and
    /// started again with the new settings.
    Otel,
    /// `bgp.shutdown_drain`: the next stop's drain.
    ShutdownDrain,
    /// `bgp.graceful_shutdown`: the engine re-derives every VIP's
    /// pessimized attributes.
    GracefulShutdown,
    /// A setting of the HTTP API server: the server is replaced.
    Api(ApiSetting),
}

impl LiveChange {
    /// The setting's path in the config, for the log.
    pub fn path(self) -> &'static str {
        match self {
            LiveChange::LogLevel => "logging.level",
            LiveChange::Otel => "otel",
            LiveChange::ShutdownDrain => "bgp.shutdown_drain",
            LiveChange::GracefulShutdown => "bgp.graceful_shutdown",
            LiveChange::Api(a) => a.path(),
        }
    }
}

/// The settings of the HTTP API server: a change to any replaces the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiSetting {
    Listen,
    ReadHeaderTimeout,
    ReadTimeout,
    WriteTimeout,
    IdleTimeout,
    Token,
}

impl ApiSetting {
    /// Every one, in the plan's order.
    pub const ALL: [ApiSetting; 6] = [
        ApiSetting::Listen,
        ApiSetting::ReadHeaderTimeout,
        ApiSetting::ReadTimeout,
        ApiSetting::WriteTimeout,
        ApiSetting::IdleTimeout,
        ApiSetting::Token,
    ];

    pub fn path(self) -> &'static str {
        match self {
            ApiSetting::Listen => "api.listen",
            ApiSetting::ReadHeaderTimeout => "api.read_header_timeout",
            ApiSetting::ReadTimeout => "api.read_timeout",
            ApiSetting::WriteTimeout => "api.write_timeout",
            ApiSetting::IdleTimeout => "api.idle_timeout",
            ApiSetting::Token => "api.token",
        }
    }

    fn changed(self, old: &ApiRun, new: &ApiRun) -> bool {
        match self {
            ApiSetting::Listen => old.listen != new.listen,
            ApiSetting::ReadHeaderTimeout => old.read_header_timeout != new.read_header_timeout,
            ApiSetting::ReadTimeout => old.read_timeout != new.read_timeout,
            ApiSetting::WriteTimeout => old.write_timeout != new.write_timeout,
            ApiSetting::IdleTimeout => old.idle_timeout != new.idle_timeout,
            ApiSetting::Token => old.token != new.token,
        }
    }
}

/// Everything a reload does, decided once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadPlan {
    /// Every VIP of the new config in its order, then the removed ones.
    pub vips: Vec<(String, VipChange)>,
    /// Every neighbor of the new config in its order, then the removed ones.
    pub neighbors: Vec<(String, NeighborChange)>,
    /// Global settings that changed and apply now.
    pub live: Vec<LiveChange>,
    /// Global settings that changed but apply only after a daemon restart.
    pub needs_restart: Vec<&'static str>,
}

impl ReloadPlan {
    /// The change of VIP `name` (Unchanged for an unknown one).
    pub fn vip(&self, name: &str) -> &VipChange {
        self.vips
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&VipChange::Unchanged, |(_, c)| c)
    }

    /// [`ReloadPlan::vip`] for the `i`-th VIP of the new config: the plan
    /// lists the new VIPs first, in the config's order
    /// ([`super::engine::Engine::diff`]), so its `i`-th entry is that VIP's
    /// and the lookup is O(1) (a search per VIP was O(n²) at 10,000 VIPs). A plan in another order falls back to the search.
    pub fn vip_at(&self, i: usize, name: &str) -> &VipChange {
        match self.vips.get(i) {
            Some((n, c)) if n == name => c,
            _ => self.vip(name),
        }
    }

    /// The change of neighbor `name` (Unchanged for an unknown one).
    pub fn neighbor(&self, name: &str) -> NeighborChange {
        self.neighbors
            .iter()
            .find(|(n, _)| n == name)
            .map_or(NeighborChange::Unchanged, |(_, c)| *c)
    }

    /// What the plan does, one line per class of VIP and neighbor that has
    /// members and per live setting ("VIPs added: web, dns"), for the log.
    /// The settings that wait for a restart are [`Self::needs_restart`].
    pub fn report(&self) -> Vec<String> {
        let vips = |f: &dyn Fn(&VipChange) -> Option<String>| -> Vec<String> {
            self.vips
                .iter()
                .filter_map(|(n, c)| f(c).map(|w| format!("{n}{w}")))
                .collect()
        };
        let is = |want: VipChange| move |c: &VipChange| (*c == want).then(String::new);
        let classes: [(&str, Vec<String>); 6] = [
            (
                "VIPs restarted withdrawn (check identity changed)",
                vips(&|c| match c {
                    VipChange::Restarted(what) => Some(format!(" ({what})")),
                    _ => None,
                }),
            ),
            (
                "VIPs kept, new timing",
                vips(&|c| matches!(c, VipChange::Kept { timing: true, .. }).then(String::new)),
            ),
            (
                "VIPs kept, new policy or attributes",
                vips(&|c| {
                    matches!(
                        c,
                        VipChange::Kept {
                            attributes: true,
                            ..
                        }
                    )
                    .then(String::new)
                }),
            ),
            ("VIPs added", vips(&is(VipChange::Added))),
            ("VIPs removed", vips(&is(VipChange::Removed))),
            ("VIPs unchanged", vips(&is(VipChange::Unchanged))),
        ];
        let mut out: Vec<String> = classes
            .into_iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(what, list)| report_line(what, &list))
            .collect();
        for (what, want) in [
            ("neighbors restarted", NeighborChange::Restarted),
            ("neighbors with a new `required`", NeighborChange::Required),
            ("neighbors with a new `bfd`", NeighborChange::Bfd),
            ("neighbors added", NeighborChange::Added),
            ("neighbors removed", NeighborChange::Removed),
        ] {
            let list: Vec<&str> = self
                .neighbors
                .iter()
                .filter(|(_, c)| *c == want)
                .map(|(n, _)| n.as_str())
                .collect();
            if !list.is_empty() {
                out.push(report_line(what, &list));
            }
        }
        out.extend(
            self.live
                .iter()
                .map(|c| format!("{} changed: applied", c.path())),
        );
        out
    }

    /// Whether the plan changes `c` live.
    pub fn changes(&self, c: LiveChange) -> bool {
        self.live.contains(&c)
    }

    /// Whether the plan changes a setting of the HTTP API server.
    pub fn changes_api(&self) -> bool {
        self.live.iter().any(|c| matches!(c, LiveChange::Api(_)))
    }

    /// Whether the plan changes nothing at all.
    pub fn is_empty(&self) -> bool {
        self.vips.iter().all(|(_, c)| *c == VipChange::Unchanged)
            && self
                .neighbors
                .iter()
                .all(|(_, c)| *c == NeighborChange::Unchanged)
            && self.live.is_empty()
            && self.needs_restart.is_empty()
    }
}

/// Most bytes of one line of [`ReloadPlan::report`]. logd keeps at most
/// 1 KiB of a syslog line, its header ("<30>pathosd[PID]: ", a timestamp)
/// and the owner's "reload: " included, and cuts the rest wherever it
/// falls, mid-name.
pub const REPORT_LINE_MAX: usize = 900;

/// "WHAT: a, b, c": as many names as fit in [`REPORT_LINE_MAX`], whole,
/// then how many more there are.
fn report_line<S: AsRef<str>>(what: &str, names: &[S]) -> String {
    let mut line = format!("{what}: ");
    for (i, n) in names.iter().enumerate() {
        let n = n.as_ref();
        let left = names.len() - i;
        // Room for this name and, if more follow, the count of the rest.
        let tail = if left > 1 {
            format!(", … and {} more", left - 1).len()
        } else {
            0
        };
        let sep = if i == 0 { 0 } else { 2 };
        if line.len() + sep + n.len() + tail > REPORT_LINE_MAX {
            if i == 0 {
                line.push_str(&format!("… {left} in all"));
            } else {
                line.push_str(&format!(", … and {left} more"));
            }
            return line;
        }
        if i > 0 {
            line.push_str(", ");
        }
        line.push_str(n);
    }
    line
}

/// The one diff of a reload: `old` and `new` with their VIPs.
pub fn diff(old: &RunConfig, new: &RunConfig) -> ReloadPlan {
    let mut sorted: Vec<&VipSpec> = old.vips.iter().collect();
    sorted.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    let lookup = |name: &str| {
        sorted
            .binary_search_by(|v| (*v.name).cmp(name))
            .ok()
            .map(|i| Cow::Borrowed(sorted[i]))
    };
    let vips = walk_vips(&lookup, &mut old.vips.iter().map(|v| &*v.name), &new.vips);
    plan(old, new, vips)
}

/// The plan with the VIP part already made by [`walk_vips`]: the daemon's
/// running config keeps no VIPs (the engine does, and walks them with
/// [`walk_vips`] in [`super::engine::Engine::diff`]), so the owner plans
/// the rest here.
pub fn plan(old: &RunConfig, new: &RunConfig, vips: Vec<(String, VipChange)>) -> ReloadPlan {
    let mut plan = ReloadPlan {
        vips,
        ..ReloadPlan::default()
    };
    for n in &new.neighbors {
        let c = match old.neighbor(n.name()) {
            None => NeighborChange::Added,
            Some(o) if o.settings != n.settings => NeighborChange::Restarted,
            Some(o) if o.bfd != n.bfd => NeighborChange::Bfd,
            Some(o) if o.required != n.required => NeighborChange::Required,
            Some(_) => NeighborChange::Unchanged,
        };
        plan.neighbors.push((n.name().to_string(), c));
    }
    for o in &old.neighbors {
        if new.neighbor(o.name()).is_none() {
            plan.neighbors
                .push((o.name().to_string(), NeighborChange::Removed));
        }
    }
    let (oa, na) = (&old.api, &new.api);
    let (ol, nl) = (&old.logging, &new.logging);
    let restart: [(&'static str, bool); 5] = [
        ("bgp.listen_address", old.listen != new.listen),
        ("api.ubus_socket", oa.ubus_socket != na.ubus_socket),
        ("logging.syslog", ol.syslog != nl.syslog),
        ("logging.timestamps", ol.timestamps != nl.timestamps),
        // The runner's queue and directory are fixed at its start.
        ("hooks", old.hooks != new.hooks),
    ];
    plan.needs_restart = restart
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(k, _)| k)
        .collect();
    let live: [(LiveChange, bool); 4] = [
        (LiveChange::LogLevel, ol.level != nl.level),
        // The exporter is stopped and started again with the new settings
        // (logging.otel_level rides in them); a collector keeps no state of
        // ours that a restart would lose, the counters being cumulative.
        (LiveChange::Otel, old.otel != new.otel),
        (
            LiveChange::ShutdownDrain,
            old.shutdown_drain != new.shutdown_drain,
        ),
        // The engine re-derives every VIP's pessimized attributes; a
        // pessimized route is re-announced in place (State::reload).
        (
            LiveChange::GracefulShutdown,
            old.graceful_shutdown != new.graceful_shutdown,
        ),
    ];
    plan.live = live
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(c, _)| c)
        // The HTTP server is replaced with the new settings.
        .chain(
            ApiSetting::ALL
                .into_iter()
                .filter(|a| a.changed(oa, na))
                .map(LiveChange::Api),
        )
        .collect();
    plan
}

/// The one walk over the VIPs of a reload: every VIP of `new` in its order
/// with what happens to it, then the removed ones. `old` finds a running
/// VIP's config by name; `old_names` lists the running VIPs.
pub fn walk_vips<'a>(
    old: &dyn Fn(&str) -> Option<Cow<'a, VipSpec>>,
    old_names: &mut dyn Iterator<Item = &str>,
    new: &[VipSpec],
) -> Vec<(String, VipChange)> {
    let mut out = Vec::with_capacity(new.len());
    for v in new {
        let c = match old(&v.name) {
            None => VipChange::Added,
            Some(o) => vip_change(&o, v),
        };
        out.push((v.name.to_string(), c));
    }
    // Sorted names: the removed ones are found in n log n, not n².
    let mut names: Vec<&str> = new.iter().map(|v| &*v.name).collect();
    names.sort_unstable();
    for o in old_names {
        if names.binary_search(&o).is_err() {
            out.push((o.to_string(), VipChange::Removed));
        }
    }
    out
}

/// Two checks are the same probe: everything but their timing and
/// `detailed_metrics` is equal.
fn same_probe(a: &CheckSpec, b: &CheckSpec) -> bool {
    a.name == b.name && a.probe == b.probe
}

pub(crate) fn vip_change(old: &VipSpec, new: &VipSpec) -> VipChange {
    if old == new {
        return VipChange::Unchanged;
    }
    let (oc, nc) = (&old.checks, &new.checks);
    let restart = if old.prefix != new.prefix || old.more_prefixes != new.more_prefixes {
        Some("prefix")
    } else if old.always != new.always {
        Some("always")
    } else if old.checks_policy != new.checks_policy {
        Some("checks_policy")
    } else if old.local_address.is_some() != new.local_address.is_some() {
        Some("require_local_address")
    } else if old.local_address != new.local_address {
        Some("local_interface")
    } else if old.needs.services != new.needs.services {
        Some("services")
    } else if old.needs.interfaces != new.needs.interfaces {
        Some("interfaces")
    } else if oc.len() != nc.len() || oc.iter().zip(nc).any(|(a, b)| !same_probe(a, b)) {
        Some("checks")
    } else {
        None
    };
    if let Some(what) = restart {
        return VipChange::Restarted(what);
    }
    let timing = oc.iter().zip(nc).any(|(a, b)| {
        (
            a.interval,
            a.fast_interval,
            a.timeout,
            a.rise,
            a.fall,
            a.degraded,
        ) != (
            b.interval,
            b.fast_interval,
            b.timeout,
            b.rise,
            b.fall,
            b.degraded,
        )
    });
    let attributes = old.policy != new.policy
        || oc
            .iter()
            .zip(nc)
            .any(|(a, b)| a.detailed_metrics != b.detailed_metrics);
    VipChange::Kept { attributes, timing }
}

#[cfg(test)]
mod tests;
