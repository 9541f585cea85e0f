//! A reload (SIGHUP, ubus `reload`): the file loaded and validated, then a
//! step of the state, which plans it once against the running state
//! (`daemon::reload`) and applies the plan to the engine and the trigger
//! runs; here the same plan is applied to the check loops, the speaker
//! and the API.

use super::loops::{check_ids, spawn, spawn_checks, Runtimes};
use super::{level_filter, log_plan, state, Owner};
use crate::api::model::ReloadRecord;
use crate::check::scheduler;
use crate::daemon::http;
use crate::daemon::reload::{LiveChange, ReloadPlan, VipChange};
use std::time::Instant;

impl Owner {
    /// Re-reads the config. Invalid: keep running the old one, its errors
    /// logged (and returned to the API or ubus caller). Valid: apply
    /// the difference — unchanged VIPs keep state and counters (no UPDATE),
    /// changed ones restart withdrawn, removed ones are withdrawn, and only
    /// changed neighbors restart their sessions. The answer is the reload's
    /// record: applied, or partly applied (what could not take its new
    /// settings, and why).
    pub(super) fn reload(&mut self, now: Instant) -> Result<ReloadRecord, Vec<String>> {
        let (path, format) = (&self.opts.config_path, self.opts.format);
        let new = match super::child_check::refused(path, format) {
            Some(errs) => Err(errs),
            None => crate::config_file::load(path, format)
                .map(Box::new)
                .map_err(|errs| errs.into_iter().map(|e| e.to_string()).collect()),
        };
        let mut fx = self.state.step(state::Event::Reload(new), now);
        let r = match fx.reload.take() {
            Some(Ok(plan)) => {
                log_plan(&plan);
                let not_applied = self.restart(&plan);
                // A VIP that now names a service or an interface.
                let api = &self.state.config().api;
                let running = Some(self.watching);
                self.watching =
                    super::super::ubus::watch_needs(&self.state, api, &self.ctl, running);
                let path = self.opts.config_path.display();
                if not_applied.is_empty() {
                    log::info!("reload: applied {path}");
                } else {
                    for what in &not_applied {
                        log::error!("reload: not applied: {what}");
                    }
                    log::warn!(
                        "reload: partially applied {path}: {} setting(s) not applied",
                        not_applied.len()
                    );
                }
                self.state.reload_not_applied(not_applied);
                self.state.last_reload().cloned().ok_or_else(Vec::new)
            }
            Some(Err(errs)) => {
                // The old config goes on; the log says why, whoever asked.
                for e in &errs {
                    log::error!("reload: {e}");
                }
                Err(errs)
            }
            // A reload step always decides one or the other.
            None => Err(Vec::new()),
        };
        // The routes go out after the speaker has the new neighbors; the
        // trigger runs asked again go to the new loops.
        self.carry_out(fx, now);
        // What the load freed (the file's text, a VIP's value at a time,
        // the errors' paths) goes back to the system, applied or not: a
        // refused 4 MiB file must not leave the daemon larger.
        crate::sys::trim_heap();
        r
    }

    /// The plan applied to what the owner runs beside the state: the check
    /// loops, the speaker's sessions, the log level, the HTTP server and
    /// the exporter. Returns what could not take its new settings, and why
    /// (empty when everything did).
    fn restart(&mut self, plan: &ReloadPlan) -> Vec<String> {
        let mut not_applied = Vec::new();
        let engine = self.state.engine();
        // The new table of loops; what is left in `before` after the loop
        // (removed VIPs, replaced loops) ends with it.
        let mut before = std::mem::take(&mut self.runtimes);
        let mut runtimes = Vec::new();
        // The slots are in the new config's order, the plan's too.
        for (k, s) in engine.vips().iter().enumerate() {
            let v = &*s.config();
            let old = before.take(&v.name);
            let ids = check_ids(engine, &v.name);
            let rt = match (plan.vip_at(k, &v.name), old) {
                (VipChange::Unchanged | VipChange::Kept { timing: false, .. }, Some(rt)) => {
                    Some(rt)
                }
                // New loops with the new timing, the same check ids. If the
                // probes cannot be built now (e.g. a CA file gone), the old
                // loops go on: the VIP's state stays backed by running checks.
                (VipChange::Kept { timing: true, .. }, Some(rt)) => {
                    match scheduler::build(v, &ids) {
                        Ok(mut loops) => {
                            // Fast runs go on where the kept counters are.
                            if let Some(slot) = engine.vip(&v.name) {
                                for (l, c) in loops.iter_mut().zip(slot.checks.iter()) {
                                    l.seed(&c.hysteresis);
                                }
                            }
                            spawn(Ok(loops), v, &self.result_tx)
                        }
                        Err(e) => {
                            not_applied.push(format!(
                                "vip {}: new check timing not applied, the old checks go on: {e}",
                                v.name
                            ));
                            Some(rt)
                        }
                    }
                }
                // Restarted or added, or checks that could not start before
                // (e.g. an unreadable CA file): start afresh.
                _ => spawn_checks(v, &ids, &self.result_tx),
            };
            if let Some(rt) = rt {
                runtimes.push((v.name.clone(), rt));
            }
        }
        self.runtimes = Runtimes::new(runtimes);
        drop(before);
        let new = self.state.config();
        self.speaker.reconfigure(new, &plan.neighbors);
        self.bfd.reconfigure(new, Instant::now());
        if plan.changes(LiveChange::LogLevel) && !self.opts.debug {
            crate::logging::set_level(level_filter(new.logging.level));
        }
        // Also when the server is not where the config puts it: an earlier
        // new address could not be bound (or none at start), and every
        // reload tries again and says whether it could.
        if plan.changes_api() || http::listening(self.http.as_ref()) != new.api.listen {
            let (h, failed) = http::restart(self.http.take(), &new.api, self.ctl.clone());
            self.http = h;
            not_applied.extend(failed);
        }
        if plan.changes(LiveChange::Otel) {
            // The old exporter's task ends as it is dropped, mid-request
            // or not: what it had queued is dropped with it.
            self.otel = None;
            self.otel = crate::daemon::otel::start(new, self.ctl.clone());
        }
        self.drain_any = self.state.drain_files().next().is_some();
        self.flows_any = super::flows_any(&self.state);
        super::log_room(&self.state);
        not_applied
    }
}
