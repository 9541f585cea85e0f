//! The owner's state and its one transition: [`State::step`] takes an
//! event and the time and returns what the step decided, as [`Effects`]
//! for the driver to carry out: route changes and VIP transitions for the
//! speaker, the log and ubus; answers to the callers of finished trigger
//! runs; trigger runs for the check loops; a reload's plan for the loops,
//! the speaker and the API to apply. Pure: no clock, no I/O, no tasks. The
//! daemon's owner task (`pathosd::daemon`) is a loop over it, and
//! tests/daemon_replay.rs drives the same steps from recorded events.
//!
//! The state is the engine (the VIPs, their checks and routes), the
//! running configuration (without VIPs: the engine keeps those), the
//! trigger runs in flight and the last reload's outcome. What the driver
//! owns (the speaker's sessions, the check loops, the API servers) is
//! not in it; a snapshot takes their parts as [`Live`].

use super::engine::{CheckId, CheckRun, Engine, Input, Output};
use super::reload::{self, ReloadPlan, VipChange};
use super::triggers::{Admit, Done, Triggers};
use super::views;
use crate::api::model::{
    OtelView, PageInfo, PeerView, PoolView, ReloadRecord, ReloadResult, Scope, Snapshot, VipView,
    Want,
};
use crate::api::router::ApiError;
use crate::api::TriggerOutcome;
use crate::check::CheckResult;
use crate::config::{NeedKind, RunConfig, VipSpec};
use crate::vip::VipState;
use std::time::{Instant, SystemTime};

/// What happens to the daemon, as the owner receives it.
#[derive(Debug)]
pub enum Event<R> {
    /// A check loop's result (through the hysteresis, the checks policy
    /// and the VIP's state machine; then to the trigger run it belongs
    /// to, if any).
    Result(CheckRun),
    /// The engine's next deadline has passed.
    Tick,
    /// The VIP's lower_priority_file was looked at: there or not.
    DrainFile { vip: String, present: bool },
    /// The active flows of the VIPs that wait for them, counted by the
    /// driver (`Engine::flow_waits`).
    Flows(Vec<(String, u32)>),
    /// An API request to drain the VIP, or to stop draining it; answered
    /// in [`Effects::drain`].
    Drain { vip: String, enable: bool },
    /// An API request to run the VIP's checks (or only `check`) now;
    /// `running` says whether the VIP's check loops run (the driver owns
    /// them). `reply` is the caller's, answered in [`Effects::answers`].
    Trigger {
        vip: String,
        check: Option<String>,
        running: bool,
        reply: R,
    },
    /// The loops of `checks` could not take trigger run `id` (they are
    /// not running): the run records a failure for each, so it completes.
    NotRun {
        vip: String,
        id: u64,
        checks: Vec<CheckId>,
    },
    /// A reload: the new file as loaded and validated, or its errors
    /// (boxed: the other events are a fraction of its size).
    Reload(Result<Box<RunConfig>, Vec<String>>),
    /// procd reported a service stopped or started, netifd an interface
    /// down or up (`Input::Need`). A start or an up also probes the VIPs
    /// naming it at once, and any interface event the VIPs with
    /// `require_local_address` (their address may have come or gone):
    /// [`Effects::asks`] with id [`PROBE_NOW`].
    Need {
        kind: NeedKind,
        name: String,
        up: bool,
    },
    /// SIGTERM or SIGINT: every VIP that is not withdrawn becomes so, a
    /// transition and a withdrawal each (the driver's speaker withdraws
    /// every route itself, then sends Cease).
    Shutdown,
}

/// One trigger run for the check loops: run `checks` of `vip` once,
/// tagged with `id`.
#[derive(Debug, PartialEq, Eq)]
pub struct Ask {
    pub vip: String,
    pub id: u64,
    pub checks: Vec<CheckId>,
}

/// The id of the runs an event asks for ([`Event::Need`]): no trigger
/// run has it (theirs count from 1), so their results answer no caller
/// and count as any scheduled one's.
pub const PROBE_NOW: u64 = 0;

/// A trigger run's answer to its callers.
pub type TriggerAnswer = Result<TriggerOutcome, ApiError>;

/// What one step decided, for the driver to carry out in this order: the
/// reload's restarts, the outputs, the answers, the trigger runs.
#[derive(Debug)]
pub struct Effects<R> {
    /// The engine's decisions, in order: route changes (to the speaker as
    /// one batch), VIP and check transitions (the log, ubus), the end of
    /// the first evaluation (End-of-RIB).
    pub outputs: Vec<Output>,
    /// Callers to answer, each group with its answer.
    pub answers: Vec<(Vec<R>, TriggerAnswer)>,
    /// Trigger runs the check loops are asked for.
    pub asks: Vec<Ask>,
    /// The answer to a [`Event::Drain`]: the VIP's state after it.
    pub drain: Option<Result<&'static str, ApiError>>,
    /// The outcome of a [`Event::Reload`]: the plan, which the driver
    /// applies to the check loops, the speaker and the API (the engine
    /// and the trigger runs have), or the file's errors (nothing changed).
    pub reload: Option<Result<ReloadPlan, Vec<String>>>,
}

impl<R> Default for Effects<R> {
    fn default() -> Self {
        Effects {
            outputs: Vec::new(),
            answers: Vec::new(),
            asks: Vec::new(),
            drain: None,
            reload: None,
        }
    }
}

/// What a snapshot needs from the driver: the sessions, the blocking pool
/// and the exporter are theirs, not the state's.
pub struct Live {
    pub version: &'static str,
    pub peers: Vec<PeerView>,
    pub blocking_pool: PoolView,
    pub otel: Option<OtelView>,
    /// BFD datagrams that matched no session.
    pub bfd_unmatched: u64,
    /// Hook events dropped because the hooks' queue was full.
    pub hook_drops: u64,
}

/// Why a VIP is withdrawn at the end.
pub const SHUTDOWN_REASON: &str = "pathosd shutting down";

/// The daemon's state; `R` is a trigger caller's reply channel.
pub struct State<R> {
    engine: Engine,
    /// The running configuration; its VIPs are in the engine (one copy
    /// of 10,000 VIPs, not two).
    cfg: RunConfig,
    triggers: Triggers<R>,
    /// The start, on both clocks: the engine's instants become the
    /// wall-clock times /status shows.
    start: Instant,
    start_time: SystemTime,
    last_reload: Option<ReloadRecord>,
    /// Applied reloads: a streamed answer's positions among the VIPs and
    /// the peers hold only while it does not change.
    generation: u64,
}

impl<R: Clone> State<R> {
    /// The state at start from a valid config, at `now` (`start_time` on
    /// the wall clock), with the engine's first outputs (the VIPs that
    /// announce at once).
    pub fn start(mut cfg: RunConfig, now: Instant, start_time: SystemTime) -> (Self, Vec<Output>) {
        let gshut = cfg.graceful_shutdown;
        let (engine, outputs) = Engine::start_with(cfg.take_vips(), gshut, now);
        let state = State {
            engine,
            cfg,
            triggers: Triggers::default(),
            start: now,
            start_time,
            last_reload: None,
            generation: 0,
        };
        (state, outputs)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The running configuration, without its VIPs (see [`Self::engine`]).
    pub fn config(&self) -> &RunConfig {
        &self.cfg
    }

    /// Changes with each applied reload (see `api::stream::Source`).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The wall-clock time of `t`, as /status shows times.
    pub fn wall_time(&self, t: Instant) -> SystemTime {
        self.start_time + t.saturating_duration_since(self.start)
    }

    /// The VIPs a streamed answer of `scope` shows, by index, and its page
    /// (`api::stream::Source::select`).
    pub fn select_vips(&self, scope: &Scope) -> (Vec<usize>, Option<PageInfo>) {
        views::select_vips(&self.engine, scope)
    }

    /// VIP `i` as the API shows it, with its flows left (`Source::vip`).
    pub fn vip_view(&self, i: usize, want: Want) -> Option<VipView> {
        views::engine_vip_view(&self.engine, i, want, &|t| self.wall_time(t))
    }

    /// When the next step is due without an event (a VIP's first
    /// evaluation bound or hold time).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.engine.next_deadline()
    }

    /// The last reload's outcome (None before the first).
    pub fn last_reload(&self) -> Option<&ReloadRecord> {
        self.last_reload.as_ref()
    }

    /// The driver could not carry out part of the last reload's plan (what
    /// it runs beside the state: the API's new address could not be bound,
    /// a VIP's checks with the new timing could not start): the reload is
    /// recorded as partly applied, with `what` (each part and why) as its
    /// errors. Nothing else changes: the state took the new configuration.
    pub fn reload_not_applied(&mut self, what: Vec<String>) {
        if what.is_empty() {
            return;
        }
        if let Some(r) = self
            .last_reload
            .as_mut()
            .filter(|r| r.result != ReloadResult::Rejected)
        {
            r.result = ReloadResult::PartiallyApplied;
            r.errors = what;
        }
    }

    /// The VIPs with a lower_priority_file and its path.
    pub fn drain_files(&self) -> impl Iterator<Item = (&VipSpec, &String)> {
        self.engine
            .vips()
            .iter()
            .filter_map(|s| s.full_config())
            .filter_map(|v| Some((v, v.policy.lower_priority_file.as_ref()?)))
    }

    /// The state with views of the VIPs of `scope` only, and the driver's
    /// parts.
    pub fn snapshot(&self, scope: &Scope, now: Instant, live: Live) -> Snapshot {
        let (vips, page) = views::vip_views(&self.engine, scope, &|t| self.wall_time(t));
        Snapshot {
            router_id: self.cfg.router_id.to_string(),
            asn: self.cfg.asn,
            version: live.version,
            start_time: self.start_time,
            uptime: now.saturating_duration_since(self.start),
            peers: live.peers,
            vips,
            last_reload: self.last_reload.clone(),
            blocking_pool: live.blocking_pool,
            otel: live.otel,
            bfd_unmatched: live.bfd_unmatched,
            hook_drops: live.hook_drops,
            page,
        }
    }

    /// The one transition.
    pub fn step(&mut self, event: Event<R>, now: Instant) -> Effects<R> {
        let mut fx = Effects::default();
        match event {
            Event::Result(r) => self.result(r, now, &mut fx),
            Event::Tick => fx.outputs = self.engine.handle(Input::Tick, now),
            Event::Flows(counts) => fx.outputs = self.engine.handle(Input::Flows(counts), now),
            Event::DrainFile { vip, present } => {
                fx.outputs = self.engine.handle(Input::DrainFile { vip, present }, now);
            }
            Event::Drain { vip, enable } => {
                if self.engine.vip(&vip).is_none() {
                    fx.drain = Some(Err(ApiError::NotFound(format!("VIP not found: {vip}"))));
                } else {
                    let input = Input::DrainApi {
                        vip: vip.clone(),
                        enable,
                    };
                    fx.outputs = self.engine.handle(input, now);
                    let state = self.engine.vip(&vip).map(|v| v.machine.state());
                    fx.drain = Some(Ok(state.unwrap_or(VipState::Withdrawn).as_str()));
                }
            }
            Event::Trigger {
                vip,
                check,
                running,
                reply,
            } => self.trigger(vip, check, running, reply, now, &mut fx),
            Event::NotRun { vip, id, checks } => {
                for c in checks {
                    let Some((slot, k)) = self.engine.check(c) else {
                        continue;
                    };
                    let name = slot.checks[k].name.clone();
                    let failed = CheckResult::fail("the check is not running");
                    if let Some(done) = self.triggers.record(&vip, id, c, (k, &name), failed) {
                        self.finish(&vip, done, &mut fx);
                    }
                }
            }
            Event::Need { kind, name, up } => self.need(kind, name, up, now, &mut fx),
            Event::Reload(new) => self.reload(new, now, &mut fx),
            Event::Shutdown => fx.outputs = self.engine.stop(&SHUTDOWN_REASON, now),
        }
        fx
    }

    fn result(&mut self, r: CheckRun, now: Instant, fx: &mut Effects<R>) {
        let Some((slot, k)) = self.engine.check(r.check) else {
            // The check is gone (a reload removed or restarted its VIP).
            return;
        };
        // Names are copied only for a result of a trigger run (most are
        // scheduled ones).
        let tagged = r.trigger.map(|id| {
            let names = (slot.name.to_string(), slot.checks[k].name.clone());
            (id, r.check, names, r.result.clone())
        });
        fx.outputs = self.engine.handle(Input::Result(r), now);
        if let Some((id, c, (vip, check), result)) = tagged {
            if let Some(done) = self.triggers.record(&vip, id, c, (k, &check), result) {
                self.finish(&vip, done, fx);
            }
        }
    }

    /// A service or interface event: the engine fails or releases the VIPs
    /// naming it; the probes it calls for are asked of the check loops.
    fn need(&mut self, kind: NeedKind, name: String, up: bool, now: Instant, fx: &mut Effects<R>) {
        let mut probe = if up {
            self.engine.naming(kind, &name)
        } else {
            Vec::new()
        };
        if kind == NeedKind::Interface {
            let guarded = self.engine.vips().iter().enumerate();
            probe.extend(
                guarded
                    .filter(|(_, s)| s.full_config().is_some_and(|v| v.local_address.is_some()))
                    .map(|(i, _)| i),
            );
            probe.sort_unstable();
            probe.dedup();
        }
        fx.outputs = self.engine.handle(Input::Need { kind, name, up }, now);
        for i in probe {
            let Some(slot) = self.engine.vips().get(i) else {
                continue;
            };
            if slot.checks.is_empty() {
                continue;
            }
            fx.asks.push(Ask {
                vip: slot.name.to_string(),
                id: PROBE_NOW,
                checks: slot.checks.iter().map(|c| c.id).collect(),
            });
        }
    }

    /// A trigger: at most one run per VIP at a time and within the VIP's
    /// rate limit (see [`super::triggers`]). The run's results come back
    /// as results tagged with its id; it answers its callers once the
    /// engine has seen each of them.
    fn trigger(
        &mut self,
        vip: String,
        check: Option<String>,
        running: bool,
        reply: R,
        now: Instant,
        fx: &mut Effects<R>,
    ) {
        let selected = match views::trigger_checks(&self.engine, &vip, check.as_deref(), running) {
            Ok(s) => s,
            Err(e) => return fx.answers.push((vec![reply], Err(e))),
        };
        let admit = self
            .triggers
            .admit(&vip, check.as_deref(), &selected, reply.clone(), now);
        match admit {
            // A VIP without checks (`always`): nothing to run, and the run
            // is over at once; its answer says so, with the VIP's state.
            // It went through the rate limit all the same (a flood of
            // them is answered and logged as any other).
            Admit::Start(_) if selected.is_empty() => {
                if let Some(done) = self.triggers.abandon(&vip) {
                    self.finish(&vip, done, fx);
                }
            }
            Admit::Start(id) => fx.asks.push(Ask {
                vip,
                id,
                checks: selected,
            }),
            Admit::Joined => {}
            Admit::Busy { retry_after, why } => {
                let refused = views::trigger_refused(&vip, why, retry_after);
                fx.answers.push((vec![reply], Err(refused)));
            }
        }
    }

    /// A finished trigger run: its callers get the outcome.
    fn finish(&mut self, vip: &str, done: Done<R>, fx: &mut Effects<R>) {
        let outcome = views::trigger_outcome(&self.engine, vip, done.results);
        fx.answers.push((done.waiters, outcome));
        let engine = &self.engine;
        self.triggers.retain(|v| engine.vip(v).is_some());
    }

    /// A reload, planned once against the running state
    /// ([`reload::plan`]: the one rule for the engine, the check loops
    /// and the speaker). Invalid: the old config goes on. Valid: the
    /// engine applies the plan (unchanged VIPs keep state and counters,
    /// changed ones restart withdrawn, removed ones are withdrawn), and
    /// trigger runs in flight end or are asked again.
    fn reload(
        &mut self,
        new: Result<Box<RunConfig>, Vec<String>>,
        now: Instant,
        fx: &mut Effects<R>,
    ) {
        let r = new.map(|new| {
            let mut new = *new;
            // The old side of the VIPs' diff is the engine's (the running
            // config keeps no VIPs).
            let plan = reload::plan(&self.cfg, &new, self.engine.diff(&new.vips));
            // The engine keeps each kept check's slot, id and hysteresis
            // (retuned to the new rise / fall); restarted and new VIPs get
            // new ids.
            fx.outputs = self.engine.reload(new.take_vips(), &plan, now);
            // After the VIPs' own changes: only announcements in place.
            let gshut = self
                .engine
                .set_graceful_shutdown(new.graceful_shutdown, now);
            fx.outputs.extend(gshut);
            for vip in self.triggers.running() {
                match plan.vip(&vip) {
                    VipChange::Unchanged | VipChange::Kept { timing: false, .. } => {}
                    // New loops with the new timing run the same checks: the
                    // run asks them for what has not reported.
                    VipChange::Kept { timing: true, .. } => {
                        if let Some((id, pending)) = self.triggers.pending(&vip) {
                            let checks = pending.to_vec();
                            fx.asks.push(Ask { vip, id, checks });
                        }
                    }
                    // Removed or restarted: the others never come.
                    _ => {
                        if let Some(done) = self.triggers.abandon(&vip) {
                            self.finish(&vip, done, fx);
                        }
                    }
                }
            }
            self.cfg = new;
            self.generation = self.generation.wrapping_add(1);
            plan
        });
        // Kept for /status and ubus `status`: a rejected file is otherwise
        // only in the log, and LuCI's Save & Apply looks like it worked.
        self.last_reload = Some(ReloadRecord {
            time: self.wall_time(now),
            result: match r {
                Ok(_) => ReloadResult::Applied,
                Err(_) => ReloadResult::Rejected,
            },
            errors: r.as_ref().err().cloned().unwrap_or_default(),
            needs_restart: r
                .as_ref()
                .map(|p| p.needs_restart.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default(),
        });
        fx.reload = Some(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load::{load_str, Format};

    fn config(vip_prefix: &str) -> Box<RunConfig> {
        let text = format!(
            r#"{{"schema":"v1","router":{{"asn":65001,"router_id":"192.0.2.254","local_address":"192.0.2.1"}},
            "bgp":{{"listen_port":-1,"neighbors":[{{"name":"p","address":"198.51.100.1","peer_asn":65000}}]}},
            "vips":[{{"name":"dns","prefix":"{vip_prefix}","always":true}}]}}"#
        );
        Box::new(load_str(&text, Some(Format::Json), &|_| None).unwrap())
    }

    fn live() -> Live {
        Live {
            version: "test",
            peers: Vec::new(),
            blocking_pool: PoolView::default(),
            bfd_unmatched: 0,
            hook_drops: 0,
            otel: None,
        }
    }

    /// A rejected file changes nothing but the record /status shows; an
    /// accepted one after it replaces the record.
    #[test]
    fn reload_records_its_outcome() {
        let t0 = Instant::now();
        let (mut s, _) = State::<u32>::start(*config("10.0.0.53/32"), t0, SystemTime::UNIX_EPOCH);
        assert!(s.snapshot(&Scope::All, t0, live()).last_reload.is_none());

        let t1 = t0 + std::time::Duration::from_secs(5);
        let fx = s.step(Event::Reload(Err(vec!["vips[0].prefix: bad".into()])), t1);
        assert!(matches!(fx.reload, Some(Err(ref e)) if e.len() == 1));
        assert!(fx.outputs.is_empty());
        let r = s.snapshot(&Scope::All, t1, live()).last_reload.unwrap();
        assert_eq!(r.result, ReloadResult::Rejected);
        assert_eq!(r.errors, ["vips[0].prefix: bad"]);
        // The wall-clock time of the step, from the start's.
        assert_eq!(
            r.time,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(5)
        );
        assert_eq!(s.engine().vips()[0].prefix.to_string(), "10.0.0.53/32");

        let fx = s.step(Event::Reload(Ok(config("10.0.0.54/32"))), t1);
        let plan = fx.reload.unwrap().unwrap();
        assert_eq!(plan.vips.len(), 1);
        let r = s.snapshot(&Scope::All, t1, live()).last_reload.unwrap();
        assert_eq!((r.result, r.errors), (ReloadResult::Applied, Vec::new()));
        assert_eq!(s.engine().vips()[0].prefix.to_string(), "10.0.0.54/32");
    }

    /// A valid reload whose plan the driver could carry out only in part
    /// (the API's new address was taken) is recorded as partly applied,
    /// with what and why; the state keeps the new configuration; the next
    /// reload's record replaces it; a rejected record is never turned into
    /// a partly applied one.
    #[test]
    fn a_reload_applied_in_part_says_what_was_not_applied() {
        let t0 = Instant::now();
        let (mut s, _) = State::<u32>::start(*config("10.0.0.53/32"), t0, SystemTime::UNIX_EPOCH);
        // Nothing to amend before the first reload.
        s.reload_not_applied(vec!["api.listen: taken".into()]);
        assert!(s.last_reload().is_none());

        let t1 = t0 + std::time::Duration::from_secs(1);
        let fx = s.step(Event::Reload(Ok(config("10.0.0.54/32"))), t1);
        assert!(matches!(fx.reload, Some(Ok(_))));
        s.reload_not_applied(Vec::new());
        assert_eq!(s.last_reload().unwrap().result, ReloadResult::Applied);
        let why = "api.listen 127.0.0.1:80: cannot listen (Address in use); the API stays on \
                   http://127.0.0.1:59179 with its old settings";
        s.reload_not_applied(vec![why.into()]);
        let r = s.snapshot(&Scope::All, t1, live()).last_reload.unwrap();
        assert_eq!(r.result, ReloadResult::PartiallyApplied);
        assert_eq!(r.errors, [why]);
        assert_eq!(
            r.time,
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1)
        );
        // What the state applies, it applied.
        assert_eq!(s.engine().vips()[0].prefix.to_string(), "10.0.0.54/32");
        let v = crate::api::status::reload_json(&r);
        assert_eq!(v["result"], "partially_applied");
        assert_eq!(v["errors"][0], why);

        // The next reload's record replaces it.
        let fx = s.step(Event::Reload(Ok(config("10.0.0.54/32"))), t1);
        assert!(matches!(fx.reload, Some(Ok(_))));
        let r = s.last_reload().unwrap();
        assert_eq!((r.result, r.errors.len()), (ReloadResult::Applied, 0));

        // A rejection stays one.
        s.step(Event::Reload(Err(vec!["vips[0].prefix: bad".into()])), t1);
        s.reload_not_applied(vec![why.into()]);
        let r = s.last_reload().unwrap();
        assert_eq!(r.result, ReloadResult::Rejected);
        assert_eq!(r.errors, ["vips[0].prefix: bad"]);
    }

    /// `check` on an `always` VIP: the VIP is there and has no checks to
    /// run, which is the answer (its state, no results), not "not found";
    /// within the trigger rate limit as any other. A check of it by name
    /// is not found (it has none), nor is a VIP that is not there.
    #[test]
    fn a_trigger_of_a_vip_without_checks_answers_that_it_has_none() {
        let t0 = Instant::now();
        let (mut s, _) = State::<u32>::start(*config("10.0.0.53/32"), t0, SystemTime::UNIX_EPOCH);
        let trigger = |s: &mut State<u32>, vip: &str, check: Option<&str>| {
            let ev = Event::Trigger {
                vip: vip.into(),
                check: check.map(str::to_string),
                running: false,
                reply: 7,
            };
            let fx = s.step(ev, t0);
            assert!(fx.asks.is_empty(), "nothing to run");
            let [(waiters, answer)] = <[_; 1]>::try_from(fx.answers).unwrap();
            assert_eq!(waiters, [7]);
            answer
        };
        let o = trigger(&mut s, "dns", None).unwrap();
        assert_eq!(
            (o.vip.as_str(), o.state, o.combined),
            ("dns", "announced", true)
        );
        assert!(o.results.is_empty());
        let j = crate::api::status::trigger_json(&o);
        assert_eq!(
            j["result"]["detail"],
            "VIP dns has no checks to run: it is always announced"
        );
        assert_eq!(j["result"]["success"], true);
        assert_eq!(j["results"], serde_json::json!({}));
        assert_eq!(
            trigger(&mut s, "dns", Some("web")),
            Err(ApiError::NotFound("check not found: web".into()))
        );
        assert_eq!(
            trigger(&mut s, "nope", None),
            Err(ApiError::NotFound("VIP not found: nope".into()))
        );
        // Five at once in all (the burst), then refused as any trigger.
        for _ in 0..4 {
            assert!(trigger(&mut s, "dns", None).is_ok());
        }
        assert!(matches!(
            trigger(&mut s, "dns", None),
            Err(ApiError::Busy { .. })
        ));
    }

    /// `bgp.graceful_shutdown` at start and toggled by reloads: a
    /// pessimized route carries GRACEFUL_SHUTDOWN while it is on and is
    /// re-announced in place (no transition, no withdraw) when it changes;
    /// an announced route is never touched.
    #[test]
    fn graceful_shutdown_marks_pessimized_routes_and_a_reload_toggles_it_in_place() {
        use crate::bgp::types::GRACEFUL_SHUTDOWN;
        let t0 = Instant::now();
        let with = |on: bool| {
            let mut c = config("10.0.0.53/32");
            c.graceful_shutdown = on;
            let mut up = c.vips[0].clone();
            up.name = "up".into();
            up.prefix = "10.0.0.54/32".parse().unwrap();
            c.vips.push(up);
            c
        };
        let routes = |fx: &Effects<u32>| -> Vec<(String, Option<bool>)> {
            fx.outputs
                .iter()
                .filter_map(|o| match o {
                    Output::Route { prefix, intent } => Some((
                        prefix.to_string(),
                        intent
                            .as_ref()
                            .map(|i| i.communities.contains(&GRACEFUL_SHUTDOWN)),
                    )),
                    Output::VipTransition { .. } => None,
                    o => panic!("unexpected {o:?}"),
                })
                .collect()
        };
        let (mut s, _) = State::<u32>::start(*with(true), t0, SystemTime::UNIX_EPOCH);
        let fx = s.step(
            Event::Drain {
                vip: "dns".into(),
                enable: true,
            },
            t0,
        );
        assert_eq!(routes(&fx), [("10.0.0.53/32".to_string(), Some(true))]);
        // Off: the pessimized route is re-announced without it, in place.
        let fx = s.step(Event::Reload(Ok(with(false))), t0);
        assert_eq!(routes(&fx), [("10.0.0.53/32".to_string(), Some(false))]);
        assert!(fx.outputs.iter().all(|o| matches!(o, Output::Route { .. })));
        let plan = fx.reload.unwrap().unwrap();
        assert_eq!(plan.live, [reload::LiveChange::GracefulShutdown]);
        // Unchanged: nothing sent.
        let fx = s.step(Event::Reload(Ok(with(false))), t0);
        assert!(fx.outputs.is_empty(), "{:?}", fx.outputs);
        // On again: with it.
        let fx = s.step(Event::Reload(Ok(with(true))), t0);
        assert_eq!(routes(&fx), [("10.0.0.53/32".to_string(), Some(true))]);
        assert!(fx.outputs.iter().all(|o| matches!(o, Output::Route { .. })));
        // The announced VIP never carries it.
        let up = s.engine().vip("up").unwrap();
        assert!(!up
            .machine
            .intent()
            .unwrap()
            .communities
            .contains(&GRACEFUL_SHUTDOWN));
    }

    /// The stop withdraws every VIP that is not withdrawn, once: the
    /// state that the last export and snapshot read is the one announced.
    #[test]
    fn shutdown_withdraws_what_is_up() {
        let t0 = Instant::now();
        let (mut s, _) = State::<u32>::start(*config("10.0.0.53/32"), t0, SystemTime::UNIX_EPOCH);
        assert_eq!(
            s.engine().vip("dns").unwrap().machine.state(),
            VipState::Announced
        );
        let fx = s.step(Event::Shutdown, t0);
        assert!(
            matches!(
                &fx.outputs[..],
                [
                    Output::VipTransition { vip, to: VipState::Withdrawn, reason, .. },
                    Output::Route { intent: None, .. },
                ] if vip == "dns" && reason == SHUTDOWN_REASON
            ),
            "{:?}",
            fx.outputs
        );
        let dns = s.engine().vip("dns").unwrap();
        assert_eq!(dns.machine.state(), VipState::Withdrawn);
        assert_eq!(
            dns.machine.last_transition().map(|(_, r)| r),
            Some(SHUTDOWN_REASON)
        );
        assert_eq!(dns.transitions[0], 1);
        // Withdrawn already: nothing more.
        assert!(s.step(Event::Shutdown, t0).outputs.is_empty());
    }
}
