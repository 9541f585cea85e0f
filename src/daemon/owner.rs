//! `pathosd run`: start-up, the owner loop, reload and shutdown.

use super::engine::{CheckId, CheckRun, Engine, Input, Output};
use super::reload::{self, NeighborChange, ReloadPlan, VipChange};
use super::triggers::{Admit, Done, Refusal, Triggers};
use super::Msg;
use crate::api::control::{ApiError, Control, ControlHandle, Quoted, Reply, TriggerOutcome};
use crate::api::model::{
    select, CheckView, PrefixOf, ReloadRecord, Scope, Snapshot, VipKey, VipView,
};
use crate::bgp::speaker::{PeerEvent, Speaker, SpeakerHandle};
use crate::check::{policy, scheduler};
use crate::config::load::Format;
use crate::config::policy_expr::Expr;
use crate::config::{LogLevel, RunConfig, VipSpec as Vip};
use crate::vip::VipState;
use smol::channel::{unbounded, Receiver, Sender};
use smol::future::FutureExt;
use smol::Task;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How `pathosd run` was invoked.
#[derive(Debug, Clone)]
pub struct Options {
    pub config_path: PathBuf,
    pub format: Option<Format>,
    pub debug: bool,
}

type TriggerReply = Reply<Result<TriggerOutcome, ApiError>>;

/// Runs the daemon on a loaded, valid config until a signal stops it;
/// returns the exit code.
pub fn run(opts: Options, cfg: RunConfig) -> i32 {
    let level = if opts.debug {
        log::LevelFilter::Debug
    } else {
        level_filter(cfg.logging.level)
    };
    crate::logging::init(
        level,
        crate::logging::choose_sink(cfg.logging.syslog, cfg.logging.timestamps),
    );
    crate::rt::block_on(async_main(opts, cfg))
}

fn level_filter(l: LogLevel) -> log::LevelFilter {
    match l {
        LogLevel::Debug => log::LevelFilter::Debug,
        LogLevel::Info => log::LevelFilter::Info,
        LogLevel::Warn => log::LevelFilter::Warn,
        LogLevel::Error => log::LevelFilter::Error,
    }
}

/// The reload's changes, one line per class of VIP and neighbor, and one
/// warning per setting that waits for a restart.
fn log_plan(plan: &ReloadPlan) {
    let names = |f: &dyn Fn(&VipChange) -> bool| -> Vec<String> {
        plan.vips
            .iter()
            .filter(|(_, c)| f(c))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let classes: [(&str, Vec<String>); 6] = [
        (
            "VIPs restarted withdrawn (check identity changed)",
            plan.vips
                .iter()
                .filter_map(|(n, c)| match c {
                    VipChange::Restarted(what) => Some(format!("{n} ({what})")),
                    _ => None,
                })
                .collect(),
        ),
        (
            "VIPs kept, new timing",
            names(&|c| matches!(c, VipChange::Kept { timing: true, .. })),
        ),
        (
            "VIPs kept, new policy or attributes",
            names(&|c| {
                matches!(
                    c,
                    VipChange::Kept {
                        attributes: true,
                        ..
                    }
                )
            }),
        ),
        ("VIPs added", names(&|c| *c == VipChange::Added)),
        ("VIPs removed", names(&|c| *c == VipChange::Removed)),
        ("VIPs unchanged", names(&|c| *c == VipChange::Unchanged)),
    ];
    for (what, list) in classes {
        if !list.is_empty() {
            log::info!("reload: {what}: {}", list.join(", "));
        }
    }
    for (what, want) in [
        ("neighbors restarted", NeighborChange::Restarted),
        ("neighbors with a new `required`", NeighborChange::Required),
        ("neighbors added", NeighborChange::Added),
        ("neighbors removed", NeighborChange::Removed),
    ] {
        let list: Vec<&str> = plan
            .neighbors
            .iter()
            .filter(|(_, c)| *c == want)
            .map(|(n, _)| n.as_str())
            .collect();
        if !list.is_empty() {
            log::info!("reload: {what}: {}", list.join(", "));
        }
    }
    for s in &plan.live {
        log::info!("reload: {s} changed: applied");
    }
    for s in &plan.needs_restart {
        log::warn!("reload: {s} changed: applies after a restart");
    }
}

/// A VIP's running check loops, in config order; dropping it cancels them.
#[derive(Default)]
struct VipRuntime {
    loops: Vec<CheckLoopHandle>,
    /// The VIP's lower_priority_file, polled on each of its results.
    drain_file: Option<String>,
}

/// The VIPs' running check loops by VIP name, sorted by it (VIPs with
/// checks only). A sorted `Vec`, not a `BTreeMap`: the map's node code
/// (insert, remove, rebalancing: ≈ 12 KB on mips) would be
/// compiled for this one key and value type, and the owner builds this in
/// one go (at start and at each reload) and then only looks it up.
#[derive(Default)]
struct Runtimes(Vec<(Arc<str>, VipRuntime)>);

impl Runtimes {
    /// From (name, runtime) pairs in any order; VIP names are unique
    /// (validation), so an unstable sort is exact.
    fn new(mut v: Vec<(Arc<str>, VipRuntime)>) -> Runtimes {
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Runtimes(v)
    }

    fn find(&self, vip: &str) -> Option<usize> {
        self.0.binary_search_by(|(n, _)| (**n).cmp(vip)).ok()
    }

    fn get(&self, vip: &str) -> Option<&VipRuntime> {
        self.find(vip).map(|i| &self.0[i].1)
    }

    fn get_mut(&mut self, vip: &str) -> Option<&mut VipRuntime> {
        let i = self.find(vip)?;
        Some(&mut self.0[i].1)
    }

    /// Takes `vip`'s loops out, for a reload's new table (an empty runtime
    /// is left: a stored one always has loops, `spawn`).
    fn take(&mut self, vip: &str) -> Option<VipRuntime> {
        let rt = std::mem::take(self.get_mut(vip)?);
        (!rt.loops.is_empty()).then_some(rt)
    }
}

/// One running check loop.
struct CheckLoopHandle {
    id: CheckId,
    /// Asks the loop for an ad-hoc run tagged with a trigger id.
    trigger: Rc<scheduler::TriggerSlot>,
    _task: Task<()>,
}

struct Owner {
    opts: Options,
    cfg: RunConfig,
    engine: Engine,
    speaker: SpeakerHandle,
    /// By VIP name, the config's `Arc` (no copy per VIP).
    runtimes: Runtimes,
    /// Where the check loops send their results.
    result_tx: Sender<Msg>,
    ubus: Option<crate::ubus::UbusHandle>,
    /// Ad-hoc triggers in flight (one per VIP) and each VIP's rate limit.
    triggers: Triggers<TriggerReply>,
    /// Whether some VIP has a lower_priority_file: only then does the
    /// owner wake each second to poll them.
    drain_any: bool,
    start: Instant,
    start_time: SystemTime,
    last_reload: Option<ReloadRecord>,
    /// The HTTP API server, replaced by a reload that changes `api.*`.
    http: Option<super::http::Http>,
    ctl: ControlHandle,
}

/// The ids the engine gave the checks of `vip`, in config order.
fn check_ids(engine: &Engine, vip: &str) -> Vec<CheckId> {
    engine
        .vip(vip)
        .map(|s| s.checks.iter().map(|c| c.id).collect())
        .unwrap_or_default()
}

/// Starts the check loops of `vip`, tagged with the engine's ids.
fn spawn_checks(vip: &Vip, ids: &[CheckId], result_tx: &Sender<Msg>) -> Option<VipRuntime> {
    spawn(scheduler::build(vip, ids), vip, result_tx)
}

fn spawn(
    checks: Result<Vec<scheduler::CheckLoop>, String>,
    vip: &Vip,
    result_tx: &Sender<Msg>,
) -> Option<VipRuntime> {
    match checks {
        // No runtime for a VIP without checks (`always`): no map entry, no
        // name copy (10,000 `always` VIPs). A trigger finds none
        // and answers "no checks to run"; its drain file is polled each second
        // (`poll_drain_files`), there being no result to poll it on.
        Ok(loops) if loops.is_empty() => None,
        Ok(loops) => {
            // Exactly sized: collected in place from the CheckLoops, the
            // Vec would keep their (larger) allocation.
            let mut handles = Vec::with_capacity(loops.len());
            for c in loops {
                let trigger = Rc::new(scheduler::TriggerSlot::default());
                handles.push(CheckLoopHandle {
                    id: c.id(),
                    trigger: trigger.clone(),
                    _task: crate::rt::spawn(scheduler::run_check_loop(
                        c,
                        trigger,
                        result_tx.clone(),
                    )),
                });
            }
            let loops = handles;
            Some(VipRuntime {
                loops,
                drain_file: vip.policy.lower_priority_file.clone(),
            })
        }
        Err(e) => {
            // Validation passed, so this is e.g. an unreadable CA file: the
            // VIP stays withdrawn (fail closed) and says why.
            log::error!("vip {}: checks not started: {e}", vip.name);
            None
        }
    }
}

async fn async_main(opts: Options, mut cfg: RunConfig) -> i32 {
    let now = Instant::now();
    // exec checks reap their children through this task instead of the
    // thread smol::process would otherwise start for it ("async-process").
    crate::rt::spawn(smol::process::driver()).detach();
    let (events, event_rx) = unbounded::<Msg>();

    // Check results, session events and API requests have their own
    // channels, which the owner reads directly (no forwarding task, no
    // second hop per event), all of the one type `Msg`.
    let (result_tx, result_rx) = unbounded();
    let (peer_tx, peer_rx) = unbounded();

    // The engine keeps the VIPs' configs; the owner's config has none
    // left (one copy of 10,000 VIPs, not two).
    let (engine, outputs) = Engine::start(cfg.take_vips(), now);
    let mut runtimes = Vec::new();
    // A plain VIP (`always`, no other setting) has no checks to start.
    for v in engine.vips().iter().filter_map(|s| s.full_config()) {
        if let Some(rt) = spawn_checks(v, &check_ids(&engine, &v.name), &result_tx) {
            runtimes.push((v.name.clone(), rt));
        }
    }
    let runtimes = Runtimes::new(runtimes);

    let (ctl_tx, ctl_rx) = unbounded();
    let ctl = ControlHandle::new(ctl_tx);
    let http = super::http::start(&cfg.api, ctl.clone());
    let ubus = super::ubus::start(&cfg.api, ctl.clone());
    super::signals::start(events.clone());

    // The sessions start once the first engine step has decided the
    // routes (applied right below): a session that comes up finds the
    // whole table waiting and sends it at once, instead of waiting
    // Established for the engine's start-up with many VIPs.
    let speaker = match Speaker::start(&cfg, peer_tx) {
        Ok(s) => s,
        Err(e) => {
            log::error!("bgp: {e}");
            return 1;
        }
    };

    log::info!(
        "pathosd {} started: {} VIPs, {} neighbors",
        env!("CARGO_PKG_VERSION"),
        engine.vips().len(),
        cfg.neighbors.len()
    );
    let inbox = Inbox {
        events: event_rx,
        control: ctl_rx,
        peers: peer_rx,
        results: result_rx,
    };
    let drain_any = has_drain_files(&engine);
    let mut owner = Owner {
        opts,
        cfg,
        engine,
        speaker,
        runtimes,
        result_tx,
        ubus,
        triggers: Triggers::default(),
        drain_any,
        start: now,
        start_time: SystemTime::now(),
        last_reload: None,
        http,
        ctl,
    };
    // The start's routes come from the engine's slots, with no `Output`
    // each (the start's peak), before any End-of-RIB below.
    owner
        .speaker
        .set_routes(owner.engine.routes().map(|(p, i)| (p, Some(i.clone()))));
    owner.apply(outputs);
    owner.run(&inbox).await
}

/// Whether some VIP has a lower_priority_file.
fn has_drain_files(engine: &Engine) -> bool {
    drain_files(engine).next().is_some()
}

/// The VIPs with a lower_priority_file and its path (a plain VIP has none).
fn drain_files(engine: &Engine) -> impl Iterator<Item = (&Vip, &String)> {
    engine
        .vips()
        .iter()
        .filter_map(|s| s.full_config())
        .filter_map(|v| Some((v, v.policy.lower_priority_file.as_ref()?)))
}

/// The channels the owner reads: signals (`events`), requests, session
/// events and check results, each `Msg`s of one kind.
struct Inbox {
    events: Receiver<Msg>,
    control: Receiver<Msg>,
    peers: Receiver<Msg>,
    results: Receiver<Msg>,
}

impl Inbox {
    /// The next event already queued: signals and requests before session
    /// events before check results, so a flood of reports never holds up
    /// a request.
    fn try_next(&self) -> Option<Msg> {
        self.events
            .try_recv()
            .or_else(|_| self.control.try_recv())
            .or_else(|_| self.peers.try_recv())
            .or_else(|_| self.results.try_recv())
            .ok()
    }

    /// The next event; None once every channel is closed (the owner holds
    /// a sender of each but `peers`, so in practice never).
    async fn next(&self) -> Option<Msg> {
        if let Some(ev) = self.try_next() {
            return Some(ev);
        }
        let closed = || std::future::pending::<Option<Msg>>();
        async { self.events.recv().await.ok() }
            .or(async { self.control.recv().await.ok() })
            .or(async { self.peers.recv().await.ok() })
            .or(async { self.results.recv().await.ok() })
            .or(async {
                // All four closed: nothing will come.
                if self.events.is_closed()
                    && self.control.is_closed()
                    && self.peers.is_closed()
                    && self.results.is_closed()
                {
                    return None;
                }
                closed().await
            })
            .await
    }
}

impl Owner {
    async fn run(&mut self, rx: &Inbox) -> i32 {
        // The lower_priority_file is polled at least once a second.
        let mut next_poll = Instant::now();
        // The sessions' reports: the peer summaries live here, in the owner.
        let sessions = self.speaker.reports();
        loop {
            let poll = self.drain_any.then_some(next_poll);
            let deadline = match (self.engine.next_deadline(), poll) {
                (Some(d), Some(p)) => Some(d.min(p)),
                (d, p) => d.or(p),
            };
            // Only this future of the select uses the speaker; the borrow
            // ends with the select.
            let speaker = &mut self.speaker;
            let ev = async { rx.next().await }
                .or(async {
                    // Session reports only update the peer summaries: they
                    // are applied here, without a turn of the loop (whose
                    // deadline scan costs O(VIPs); a KEEPALIVE each second
                    // must not).
                    while let Ok(ev) = sessions.recv().await {
                        // Only reports come on this channel.
                        if let Msg::Report(r) = ev {
                            speaker.apply(*r);
                        }
                    }
                    // The handle keeps a sender: never closed while it lives.
                    std::future::pending::<Option<Msg>>().await
                })
                .or(async {
                    match deadline {
                        Some(d) => crate::rt::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                    None
                })
                .await;
            let now = Instant::now();
            if self.drain_any && now >= next_poll {
                self.poll_drain_files(now);
                next_poll = now + Duration::from_secs(1);
            }
            let Some(ev) = ev else {
                let outs = self.engine.handle(Input::Tick, now);
                self.apply(outs);
                continue;
            };
            match ev {
                Msg::Result(r) => self.on_result(r, now),
                Msg::Control(c) => self.control(c, now).await,
                Msg::Peer(p) => self.peer_event(p),
                // Reports come on the speaker's channel, read above;
                // sessions' requests never reach the owner.
                Msg::Report(r) => self.speaker.apply(*r),
                Msg::Signal(s) if s == libc::SIGHUP => {
                    if let Err(errs) = self.reload(now) {
                        for e in errs {
                            log::error!("reload: {e}");
                        }
                    }
                }
                Msg::Signal(_) => return self.shutdown(rx).await,
                Msg::Session(_)
                | Msg::UbusCall(_)
                | Msg::UbusDone(..)
                | Msg::Answer(_)
                | Msg::Wake => {}
            }
        }
    }

    /// A check loop's result: through the engine (hysteresis, policy, VIP
    /// state), then to the trigger run that asked for it, if any.
    fn on_result(&mut self, r: CheckRun, now: Instant) {
        let Some((slot, k)) = self.engine.check(r.check) else {
            // The check is gone (a reload removed or restarted its VIP).
            return;
        };
        let check = &slot.checks[k].name;
        log::debug!(
            "check {}: vip={} check={check} duration={:?} detail={}",
            if r.result.ok { "passed" } else { "failed" },
            slot.name,
            r.result.duration,
            r.result.detail
        );
        // Names are copied only for what needs them after the engine step:
        // a trigger run, a drain file (most results need neither).
        let tagged = r.trigger.map(|id| {
            (
                id,
                r.check,
                slot.name.clone(),
                check.clone(),
                r.result.clone(),
            )
        });
        let drain = self
            .runtimes
            .get(&slot.name)
            .and_then(|rt| rt.drain_file.clone())
            .map(|f| (slot.name.to_string(), f));
        let outs = self.engine.handle(Input::Result(r), now);
        self.apply(outs);
        if let Some((id, c, vip, check, result)) = tagged {
            if let Some(done) = self.triggers.record(&vip, id, c, (k, &check), result) {
                self.answer(&vip, done);
            }
        }
        // The drain file is also checked on every check result.
        if let Some((vip, path)) = drain {
            self.poll_drain_file(vip, &path, now);
        }
    }

    /// Answers every caller of a finished trigger run.
    fn answer(&mut self, vip: &str, done: Done<TriggerReply>) {
        let outcome = self.trigger_outcome(vip, done.results);
        // Callers that gave up have closed their channel: the send fails quietly.
        for w in done.waiters {
            let _ = w.try_send(outcome.clone());
        }
        let engine = &self.engine;
        self.triggers.retain(|v| engine.vip(v).is_some());
    }

    fn apply(&mut self, outputs: Vec<Output>) {
        // Logs and events first; then the route changes of the step go to the
        // speaker as one batch (one RIB update and one sync per peer, however
        // many VIPs moved) straight from `outputs`, with no second vector of
        // them (10,000 at start with as many `always` VIPs).
        for o in &outputs {
            match o {
                Output::Route { .. } | Output::InitialDone => {}
                Output::VipTransition {
                    vip,
                    prefix,
                    from,
                    to,
                    reason,
                } => {
                    let prefix = prefix.to_string();
                    log::info!(
                        "vip {vip} {prefix}: {} -> {} ({reason})",
                        from.as_str(),
                        to.as_str()
                    );
                    if let Some(u) = &self.ubus {
                        // The time /status shows as the VIP's last_transition_time.
                        let at = self
                            .engine
                            .vip(vip)
                            .and_then(|v| v.machine.last_transition())
                            .map_or_else(SystemTime::now, |(t, _)| self.wall_time(*t));
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
        let initial_done = outputs.iter().any(|o| matches!(o, Output::InitialDone));
        let route = |o: Output| match o {
            Output::Route { prefix, intent } => Some((prefix, intent)),
            _ => None,
        };
        let mut outputs = outputs.into_iter();
        if initial_done {
            // The routes decided before this go out before End-of-RIB.
            let before = outputs
                .by_ref()
                .take_while(|o| !matches!(o, Output::InitialDone));
            self.speaker.set_routes(before.filter_map(route));
            log::info!("initial evaluation done: sending End-of-RIB");
            self.speaker.mark_initial_done();
        }
        let mut routes = outputs.filter_map(route).peekable();
        if routes.peek().is_some() {
            self.speaker.set_routes(routes);
        }
    }

    /// Polls the lower_priority_file of every VIP that has one.
    fn poll_drain_files(&mut self, now: Instant) {
        let files: Vec<(String, String)> = drain_files(&self.engine)
            .map(|(v, f)| (v.name.to_string(), f.clone()))
            .collect();
        for (vip, path) in files {
            self.poll_drain_file(vip, &path, now);
        }
    }

    fn poll_drain_file(&mut self, vip: String, path: &str, now: Instant) {
        // Any stat error counts as absent, as in pathosd.
        let present = std::fs::metadata(PathBuf::from(path)).is_ok();
        let outs = self.engine.handle(Input::DrainFile { vip, present }, now);
        self.apply(outs);
    }

    fn peer_event(&mut self, p: PeerEvent) {
        send_peer_event(self.ubus.as_ref(), &p);
    }

    async fn control(&mut self, c: Control, now: Instant) {
        match c {
            Control::Snapshot { scope, reply } => {
                let _ = reply.try_send(self.snapshot(&scope, now));
            }
            Control::Drain { vip, enable, reply } => {
                let r = if self.engine.vip(&vip).is_none() {
                    Err(ApiError::NotFound(format!("VIP not found: {vip}")))
                } else {
                    let outs = self.engine.handle(
                        Input::DrainApi {
                            vip: vip.clone(),
                            enable,
                        },
                        now,
                    );
                    self.apply(outs);
                    Ok(self
                        .engine
                        .vip(&vip)
                        .map_or("withdrawn", |v| v.machine.state().as_str()))
                };
                let _ = reply.try_send(r);
            }
            Control::Reload { reply } => {
                let r = self.reload(now);
                if let Err(errs) = &r {
                    for e in errs {
                        log::error!("reload: {e}");
                    }
                }
                let _ = reply.try_send(r);
            }
            Control::Trigger { vip, check, reply } => self.trigger(vip, check, reply, now),
        }
    }

    /// Asks the loops of the selected checks for one ad-hoc run each, at
    /// most one trigger run per VIP at a time and within the VIP's rate
    /// limit (see [`super::triggers`]); a loop runs it after the probe it is
    /// running, if any, so the check's runs stay in order. The results come
    /// back through the event channel like scheduled ones; the run answers
    /// its callers once the engine has seen each of them. The owner never
    /// waits on a trigger, so reads are answered while checks run.
    fn trigger(&mut self, vip: String, check: Option<String>, reply: TriggerReply, now: Instant) {
        // Checks whose loops run (none when they could not start).
        let selected: Vec<CheckId> = match (self.engine.vip(&vip), self.runtimes.get(vip.as_str()))
        {
            (Some(slot), Some(_)) => slot
                .checks
                .iter()
                .filter(|c| check.as_deref().is_none_or(|n| c.name == n))
                .map(|c| c.id)
                .collect(),
            _ => Vec::new(),
        };
        if selected.is_empty() {
            let msg = if self.engine.vip(&vip).is_none() {
                format!("VIP not found: {vip}")
            } else if let Some(c) = &check {
                format!("check not found: {c}")
            } else {
                // An `always` VIP, or one whose checks could not start.
                format!("VIP {vip} has no checks to run")
            };
            let _ = reply.try_send(Err(ApiError::NotFound(msg)));
            return;
        }
        let id = match self
            .triggers
            .admit(&vip, check.as_deref(), &selected, reply.clone(), now)
        {
            Admit::Start(id) => id,
            Admit::Joined => {
                log::debug!("trigger of VIP {}: joined the running one", Quoted(&vip));
                return;
            }
            Admit::Busy { retry_after, why } => {
                let message = match why {
                    Refusal::RateLimited => format!(
                        "too many triggers for VIP {vip}: at most {} at once, then one per {} s",
                        super::triggers::BURST,
                        super::triggers::REFILL.as_secs_f64()
                    ),
                    Refusal::Running => {
                        format!("another trigger of VIP {vip} is running")
                    }
                };
                log::debug!("trigger of VIP {} refused: {why:?}", Quoted(&vip));
                let _ = reply.try_send(Err(ApiError::Busy {
                    message,
                    retry_after,
                }));
                return;
            }
        };
        self.ask_loops(&vip, id, &selected);
    }

    /// Sends trigger run `id` to the loops of `checks` of `vip`. For a loop
    /// that is not there (any more) the run records a failure, so it still
    /// completes; the check's hysteresis does not see it (nothing ran).
    fn ask_loops(&mut self, vip: &str, id: u64, checks: &[CheckId]) {
        for c in checks {
            let sent = self
                .runtimes
                .get(vip)
                .and_then(|rt| rt.loops.iter().find(|l| l.id == *c))
                .is_some_and(|l| l.trigger.request(id));
            if sent {
                continue;
            }
            let Some((slot, k)) = self.engine.check(*c) else {
                continue;
            };
            let name = slot.checks[k].name.clone();
            let failed = crate::check::CheckResult::fail("the check is not running");
            if let Some(done) = self.triggers.record(vip, id, *c, (k, &name), failed) {
                self.answer(vip, done);
            }
        }
    }

    fn trigger_outcome(
        &self,
        vip: &str,
        results: Vec<(String, crate::check::CheckResult)>,
    ) -> Result<TriggerOutcome, ApiError> {
        let slot = self
            .engine
            .vip(vip)
            .ok_or_else(|| ApiError::NotFound(format!("VIP not found: {vip}")))?;
        let names: Vec<String> = slot.checks.iter().map(|c| c.name.clone()).collect();
        let all = Expr::All;
        let expr = slot.full_config().map_or(&all, |v| &v.checks_expr);
        // Checks that did not run count as failed in the combined result.
        let combined = policy::eval(expr, &names, &|n| {
            results.iter().any(|(c, r)| c == n && r.ok)
        });
        Ok(TriggerOutcome {
            vip: vip.to_string(),
            results,
            combined,
            state: slot.machine.state().as_str(),
        })
    }

    /// The wall-clock time of `t`, as /status shows times.
    fn wall_time(&self, t: Instant) -> SystemTime {
        self.start_time + t.saturating_duration_since(self.start)
    }

    /// The state with views of the VIPs of `scope` only: at 10,000 VIPs
    /// a view of each with its checks is most of a request's cost.
    fn snapshot(&mut self, scope: &Scope, now: Instant) -> Snapshot {
        let to_sys = |t: Instant| self.wall_time(t);
        let all = self.engine.vips();
        let (picked, page) = select(
            scope,
            all.iter().map(|v| VipKey {
                name: &v.name,
                prefix: PrefixOf::Value(v.prefix),
                state: v.machine.state().as_str(),
                healthy: v.machine.healthy(),
                drained: v.machine.drain_file() || v.machine.drain_api(),
            }),
        );
        // The engine keeps the VIPs' configs: the owner's has none.
        let vips = picked
            .into_iter()
            .filter_map(|i| all.get(i))
            .map(|v| (v, v.config()))
            .map(|(v, config)| {
                let intent = v.machine.intent();
                VipView {
                    name: v.name.to_string(),
                    prefix: v.prefix.to_string(),
                    state: v.machine.state().as_str(),
                    healthy: v.machine.healthy(),
                    drain_file: v.machine.drain_file(),
                    drain_api: v.machine.drain_api(),
                    as_path_prepend_base: config.policy.announce.as_path_prepend,
                    as_path_prepend: intent.map_or(0, |i| i.as_path_prepend),
                    communities: intent
                        .map(|i| i.communities.iter().map(|c| c.to_string()).collect())
                        .unwrap_or_default(),
                    large_communities: intent
                        .map(|i| i.large_communities.iter().map(|c| c.to_string()).collect())
                        .unwrap_or_default(),
                    flaps: v.machine.flaps(),
                    last_transition: v
                        .machine
                        .last_transition()
                        .map(|(t, r)| (to_sys(*t), r.to_string())),
                    transitions: v.transitions,
                    checks_policy: config.checks_policy.to_string(),
                    // From the newest guarded result; false until one arrives.
                    local_address_assigned: config.local_address.as_ref().map(|_| {
                        v.checks
                            .iter()
                            .filter_map(|c| Some((c.last_time?, c.last.as_ref()?)))
                            .max_by_key(|(t, _)| *t)
                            .and_then(|(_, r)| r.get("local_address_assigned")?.as_bool())
                            .unwrap_or(false)
                    }),
                    checks: v
                        .checks
                        .iter()
                        .zip(&config.checks)
                        .map(|(c, cfg)| CheckView {
                            name: c.name.clone(),
                            kind: cfg.probe.kind().as_str().to_string(),
                            healthy: c.hysteresis.healthy(),
                            consecutive_ok: c.hysteresis.consecutive_ok(),
                            consecutive_fail: c.hysteresis.consecutive_fail(),
                            last: c.last.as_ref().map(|r| r.to_result()),
                            last_time: c.last_time.map(to_sys),
                            last_transition: c
                                .last_transition
                                .map(|(t, r)| (to_sys(t), r.to_string())),
                            total_ok: c.total_ok,
                            total_fail: c.total_fail,
                            timeouts: c.timeouts,
                            bucket_bounds: super::engine::duration_buckets(c.bucket_timeout)
                                .to_vec(),
                            buckets: c.buckets.to_vec(),
                            duration_sum: c.duration_sum,
                            detailed_metrics: cfg.detailed_metrics,
                        })
                        .collect(),
                }
            })
            .collect();
        Snapshot {
            router_id: self.cfg.router_id.to_string(),
            asn: self.cfg.asn,
            version: env!("CARGO_PKG_VERSION"),
            start_time: self.start_time,
            uptime: now.saturating_duration_since(self.start),
            peers: self.speaker.peers().into_iter().map(peer_view).collect(),
            vips,
            last_reload: self.last_reload.clone(),
            // Counted by the pool's threads; read here, on the owner's.
            blocking_pool: crate::check::probe::blocking::stats(),
            page,
        }
    }

    /// Re-reads the config. Invalid: keep running the old one. Valid: apply
    /// the difference — unchanged VIPs keep state and counters (no UPDATE),
    /// changed ones restart withdrawn, removed ones are withdrawn, and only
    /// changed neighbors restart their sessions.
    fn reload(&mut self, now: Instant) -> Result<(), Vec<String>> {
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
            self.http = super::http::restart(self.http.take(), &new.api, self.ctl.clone());
        }
        self.apply(outs);
        log::info!("reload: applied {}", self.opts.config_path.display());
        self.cfg = new;
        self.drain_any = has_drain_files(&self.engine);
        Ok(plan)
    }

    /// SIGTERM/SIGINT: withdraw every VIP, wait shutdown_drain, Cease, exit 0.
    /// A second signal exits at once.
    async fn shutdown(&mut self, rx: &Inbox) -> i32 {
        log::info!("shutting down: withdrawing every VIP");
        self.runtimes = Runtimes::default();
        // The speaker withdraws every route below; the events say so, as on
        // every other VIP change.
        let t = SystemTime::now();
        for v in self.engine.vips() {
            let from = v.machine.state();
            if from == VipState::Withdrawn {
                continue;
            }
            let prefix = v.prefix.to_string();
            let reason = "pathosd shutting down";
            log::info!(
                "vip {} {prefix}: {} -> withdrawn ({reason})",
                v.name,
                from.as_str()
            );
            if let Some(u) = &self.ubus {
                u.send_event(
                    crate::ubus::EVENT_VIP,
                    crate::api::ubus_methods::vip_event(
                        &v.name,
                        &prefix,
                        from.as_str(),
                        VipState::Withdrawn.as_str(),
                        reason,
                        t,
                    ),
                );
            }
        }
        let ubus = self.ubus.clone();
        let drain = self.cfg.shutdown_drain.min(Duration::from_secs(4));
        let stop = self.speaker.shutdown("pathosd shutting down", drain);
        // Session changes of the shutdown become `pathosd.peer` events.
        let second_signal = async {
            loop {
                match rx.next().await {
                    Some(Msg::Signal(s)) if s != libc::SIGHUP => return true,
                    Some(Msg::Peer(p)) => send_peer_event(ubus.as_ref(), &p),
                    Some(_) => continue,
                    None => std::future::pending::<()>().await,
                }
            }
        };
        let bounded = async {
            smol::Timer::after(drain + Duration::from_millis(800)).await;
            log::warn!("shutdown: peers did not close in time");
            false
        };
        let at_once = async {
            stop.await;
            false
        }
        .or(second_signal)
        .or(bounded)
        .await;
        // The peers' last changes (to idle) were sent before their tasks
        // acknowledged the stop.
        while let Ok(ev) = rx.peers.try_recv() {
            if let Msg::Peer(p) = ev {
                send_peer_event(ubus.as_ref(), &p);
            }
        }
        if let Some(u) = &ubus {
            // Queued events go to ubusd before REMOVE_OBJECT (bounded: a
            // wedged ubusd does not hold up the exit).
            u.shutdown();
            if !at_once {
                u.stopped()
                    .or(async {
                        smol::Timer::after(UBUS_FLUSH_LIMIT).await;
                        log::warn!("shutdown: ubus events not flushed in time");
                    })
                    .await;
            }
        }
        log::info!("stopped");
        0
    }
}

/// How long the exit waits for the ubus client to send the last events.
const UBUS_FLUSH_LIMIT: Duration = Duration::from_secs(2);

fn send_peer_event(ubus: Option<&crate::ubus::UbusHandle>, p: &PeerEvent) {
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

fn counts(m: crate::bgp::speaker::MessageCounters) -> crate::api::model::MsgCounts {
    crate::api::model::MsgCounts {
        open: m.open,
        update: m.update,
        notification: m.notification,
        keepalive: m.keepalive,
        route_refresh: m.route_refresh,
    }
}

fn peer_view(p: crate::bgp::speaker::PeerStatus) -> crate::api::model::PeerView {
    let s = p.summary;
    crate::api::model::PeerView {
        name: p.name,
        address: p.address,
        peer_asn: p.asn,
        required: p.required,
        state: s.state.to_string(),
        established_for: p.uptime,
        last_error: s.last_error,
        notification_sent: s.last_notification_sent,
        notification_received: s.last_notification_received,
        received: counts(s.messages_in),
        sent: counts(s.messages_out),
        advertised: s.advertised,
        flaps: s.flaps,
        routes: p.routes,
    }
}
