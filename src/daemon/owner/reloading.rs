//! A reload (SIGHUP, ubus `reload`): the file loaded and validated,
//! planned once against the running state (`daemon::reload`), and the plan
//! applied by the engine, the check loops, the speaker and the API.

use super::loops::{check_ids, has_drain_files, spawn, spawn_checks, Runtimes};
use super::{level_filter, log_plan, Owner};
use crate::api::model::ReloadRecord;
use crate::check::scheduler;
use crate::daemon::reload::{self, ReloadPlan, VipChange};
use std::time::{Instant, SystemTime};

impl Owner {
    /// Re-reads the config. Invalid: keep running the old one. Valid: apply
    /// the difference — unchanged VIPs keep state and counters (no UPDATE),
    /// changed ones restart withdrawn, removed ones are withdrawn, and only
    /// changed neighbors restart their sessions.
    pub(super) fn reload(&mut self, now: Instant) -> Result<(), Vec<String>> {
        let r = self.try_reload(now);
        // Kept for /status and ubus `status`: a rejected file is otherwise
        // only in the log, and LuCI's Save & Apply looks like it worked.
        self.last_reload = Some(ReloadRecord {
            time: SystemTime::now(),
            applied: r.is_ok(),
            errors: r.as_ref().err().cloned().unwrap_or_default(),
            needs_restart: r
                .as_ref()
                .map(|p| p.needs_restart.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default(),
        });
        r.map(|_| ())
    }

    /// Loads the file and applies it as [`reload::diff`] plans it (the one
    /// rule for the engine, the check loops and the speaker).
    fn try_reload(&mut self, now: Instant) -> Result<ReloadPlan, Vec<String>> {
        let mut new = crate::config_file::load(&self.opts.config_path, self.opts.format)
            .map_err(|errs| errs.into_iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
        // The old side of the VIPs' diff is the engine's (the running
        // config keeps no VIPs).
        let plan = reload::plan(&self.cfg, &new, self.engine.diff(&new.vips));
        log_plan(&plan);
        // The engine keeps each kept check's slot, id and hysteresis (retuned
        // to the new rise / fall); restarted and new VIPs get new ids. It
        // keeps the new configs too.
        let outs = self.engine.reload(new.take_vips(), &plan, now);
        // Trigger runs in flight whose loops are replaced with the same
        // checks ask the new loops; the others end with what they have.
        let mut reask = Vec::new();
        // The new table of loops; what is left in `before` after the loop
        // (removed VIPs, replaced loops) ends with it.
        let mut before = std::mem::take(&mut self.runtimes);
        let mut runtimes = Vec::new();
        // The slots are in the new config's order, the plan's too.
        for (k, s) in self.engine.vips().iter().enumerate() {
            let v = &*s.config();
            let old = before.take(&v.name);
            let ids = check_ids(&self.engine, &v.name);
            let rt = match (plan.vip_at(k, &v.name), old) {
                (VipChange::Unchanged | VipChange::Kept { timing: false, .. }, Some(rt)) => {
                    Some(rt)
                }
                // New loops with the new timing, the same check ids. If the
                // probes cannot be built now (e.g. a CA file gone), the old
                // loops go on: the VIP's state stays backed by running checks.
                (VipChange::Kept { timing: true, .. }, Some(rt)) => {
                    match scheduler::build(v, &ids) {
                        Ok(loops) => {
                            reask.push(v.name.clone());
                            spawn(Ok(loops), v, &self.result_tx)
                        }
                        Err(e) => {
                            log::error!(
                                "vip {}: new check timing not applied, the old checks go on: {e}",
                                v.name
                            );
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
        let engine = &self.engine;
        for v in engine.vips().iter().filter_map(|s| s.full_config()) {
            if let Some(rt) = self.runtimes.get_mut(&v.name) {
                rt.drain_file = v.policy.lower_priority_file.clone();
            }
        }
        for vip in self.triggers.running() {
            let kept = matches!(
                plan.vip(&vip),
                VipChange::Unchanged | VipChange::Kept { .. }
            );
            if !kept {
                if let Some(done) = self.triggers.abandon(&vip) {
                    self.answer(&vip, done);
                }
            } else if reask.iter().any(|r| **r == *vip) {
                if let Some((id, pending)) = self.triggers.pending(&vip) {
                    let pending = pending.to_vec();
                    self.ask_loops(&vip, id, &pending);
                }
            }
        }
        self.speaker.reconfigure(&new, &plan.neighbors);
        if plan.live.contains(&"logging.level") && !self.opts.debug {
            crate::logging::set_level(level_filter(new.logging.level));
        }
        if plan.live.iter().any(|k| reload::HTTP_KEYS.contains(k)) {
            self.http = crate::daemon::http::restart(self.http.take(), &new.api, self.ctl.clone());
        }
        if plan.live.contains(&"otel") {
            // The old exporter's task ends as it is dropped, mid-request
            // or not: what it had queued is dropped with it.
            self.otel = None;
            self.otel = crate::daemon::otel::start(&new, self.ctl.clone());
        }
        self.apply(outs);
        log::info!("reload: applied {}", self.opts.config_path.display());
        self.cfg = new;
        self.drain_any = has_drain_files(&self.engine);
        Ok(plan)
    }
}
