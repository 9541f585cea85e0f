//! `pathosd run`: the owner task, the one holder of the daemon's state.
//! Start-up and the event loop are here; the VIPs' check loops in
//! `loops`, reload in `reloading`, the graceful stop in `shutdown`, what
//! a step tells (log, ubus, spans) in `report`, the API's reading of the
//! state in `reading`.

mod child_check;
mod inbox;
mod loops;
mod reading;
mod reloading;
mod report;
mod shutdown;

use inbox::{Event, Inbox};
use loops::{check_ids, spawn_checks, Runtimes};
use reading::{peer_view, Reading};
use report::{report, send_peer_event};

use super::engine::{CheckId, CheckRun, Output};
use super::reload::ReloadPlan;
use super::state::{self, Ask, Effects, Live, State};
use crate::api::control::{ApiError, Control, ControlHandle, Reply, TriggerOutcome};
use crate::api::model::{Scope, Snapshot};
use crate::bgp::speaker::{Speaker, SpeakerHandle};
use crate::chan::{unbounded, Signal, Tx};
use crate::config::load::Format;
use crate::config::{LogLevel, RunConfig};
use smol::future::FutureExt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
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
    crate::rt::block_on(main_task(opts, cfg))
}

/// The owner's future, on the heap and behind a pointer: `block_on` then
/// holds a pointer, not the future, in its frame on the main thread's
/// stack, and the executor's poll of it is a call, not the owner's whole
/// poll inlined into its own frame. What the main thread's stack ever
/// holds stays resident all the daemon's life (measured in
/// docs/performance.md, "RSS with one VIP"; `tests/e2e_threads.rs` bounds it).
#[inline(never)]
fn main_task(opts: Options, cfg: RunConfig) -> Pin<Box<dyn Future<Output = i32>>> {
    Box::pin(async_main(opts, cfg))
}

pub(super) fn level_filter(l: LogLevel) -> log::LevelFilter {
    match l {
        LogLevel::Debug => log::LevelFilter::Debug,
        LogLevel::Info => log::LevelFilter::Info,
        LogLevel::Warn => log::LevelFilter::Warn,
        LogLevel::Error => log::LevelFilter::Error,
    }
}

/// The reload's changes, one line per class of VIP and neighbor
/// (`ReloadPlan::report`), and one warning per setting that waits for a
/// restart.
fn log_plan(plan: &ReloadPlan) {
    for line in plan.report() {
        log::info!("reload: {line}");
    }
    for s in &plan.needs_restart {
        log::warn!("reload: {s} changed: applies after a restart");
    }
}

struct Owner {
    opts: Options,
    /// The daemon's state: every decision is its step's (`daemon::state`);
    /// the rest of this struct carries the effects out.
    state: State<TriggerReply>,
    speaker: SpeakerHandle,
    /// By VIP name, the check loops of each VIP that has checks.
    runtimes: Runtimes,
    /// Where the check loops send their results.
    result_tx: Tx<CheckRun>,
    ubus: Option<crate::ubus::UbusHandle>,
    /// The hotplug.d hooks' queue; None when `hooks.dir` is empty.
    hooks: Option<super::hotplug::Hooks>,
    /// Whether some VIP has a lower_priority_file: only then does the
    /// owner wake each second to poll them.
    drain_any: bool,
    /// Whether some VIP's drain waits for its flows
    /// (`drain_until_flows_below`): only then are drains scanned for VIPs
    /// whose flows to count.
    flows_any: bool,
    /// The counts of those flows, read off the owner's thread.
    flows: super::flows::FlowReader,
    /// The HTTP API server, replaced by a reload that changes `api.*`.
    http: Option<super::http::Http>,
    /// The OTLP exporter, restarted by a reload that changes `otel`.
    otel: Option<super::otel::Exporter>,
    ctl: ControlHandle,
    /// procd's watchdog, pinged from this task's loop (see `run`).
    watchdog: Option<super::watchdog::Pinger>,
    /// The neighbors' BFD sessions, run from this task's loop (see `run`).
    bfd: super::bfd::Bfd,
    /// The last wake was BFD's: the next select polls the others first.
    after_bfd: bool,
    /// What procd's and netifd's events are watched for (services,
    /// interfaces); (false, false) while no VIP names one: no connection.
    watching: (bool, bool),
}

async fn async_main(opts: Options, cfg: RunConfig) -> i32 {
    let now = Instant::now();
    // exec checks reap their children through this task instead of the
    // thread smol::process would otherwise start for it ("async-process").
    // A task of output (), as every other: the driver's own output type
    // (it never returns) would be a second copy of the task code (≈ 3 KB).
    crate::rt::spawn(async { match smol::process::driver().await {} }).detach();
    let (signal_tx, signals) = unbounded();

    // Check results, session events and API requests have their own
    // channels, which the owner reads directly (no forwarding task, no
    // second hop per event).
    let (result_tx, result_rx) = unbounded();
    let (peer_tx, peer_rx) = unbounded();

    let (state, outputs) = State::start(cfg, now, SystemTime::now());
    let mut runtimes = Vec::new();
    // A plain VIP (`always`, no other setting) has no checks to start.
    let engine = state.engine();
    for v in engine.vips().iter().filter_map(|s| s.full_config()) {
        if let Some(rt) = spawn_checks(v, &check_ids(engine, &v.name), &result_tx) {
            runtimes.push((v.name.clone(), rt));
        }
    }
    let runtimes = Runtimes::new(runtimes);

    let cfg = state.config();
    let (ctl_tx, ctl_rx) = unbounded();
    let ctl = ControlHandle::new(ctl_tx);
    let http = super::http::start(&cfg.api, ctl.clone());
    let ubus = super::ubus::start(&cfg.api, ctl.clone());
    let watching = super::ubus::watch_needs(&state, &cfg.api, &ctl, None);
    let otel = super::otel::start(cfg, ctl.clone());
    let hooks = super::hotplug::Hooks::start(
        std::path::Path::new(&cfg.hooks.dir),
        cfg.hooks.timeout.get(),
        usize::try_from(cfg.hooks.queue).unwrap_or(usize::MAX),
    );
    super::signals::start(signal_tx);

    // The sessions start once the first engine step has decided the
    // routes (applied right below): a session that comes up finds the
    // whole table waiting and sends it at once, instead of waiting
    // Established for the engine's start-up with many VIPs.
    let speaker = match Speaker::start(cfg, peer_tx) {
        Ok(s) => s,
        Err(e) => {
            log::error!("bgp: {e}");
            return 1;
        }
    };

    log::info!(
        "pathosd {} started: {} VIPs, {} neighbors",
        env!("CARGO_PKG_VERSION"),
        state.engine().vips().len(),
        cfg.neighbors.len()
    );
    let inbox = Inbox {
        signals,
        control: ctl_rx,
        peers: peer_rx,
        results: result_rx,
    };
    let watchdog = procd_watchdog(ubus.as_ref());
    let bfd = super::bfd::Bfd::new(cfg, Instant::now());
    let drain_any = state.drain_files().next().is_some();
    let flows_any = flows_any(&state);
    log_room(&state);
    let mut owner = Owner {
        opts,
        state,
        speaker,
        runtimes,
        result_tx,
        ubus,
        hooks,
        drain_any,
        flows_any,
        flows: super::flows::FlowReader::new(Instant::now()),
        http,
        otel,
        ctl,
        watchdog,
        bfd,
        after_bfd: false,
        watching,
    };
    // The start's routes come from the engine's slots, with no `Output`
    // each (the start's peak), before any End-of-RIB below.
    let routes = owner.state.engine().routes();
    owner
        .speaker
        .set_routes(routes.map(|(p, i)| (p, Some(i.clone()))));
    owner.apply(outputs);
    owner.run(&inbox).await
}

/// What ended a wait of the owner's loop.
enum Woke {
    /// A BFD socket is readable or a BFD deadline came.
    Bfd,
    /// An event of the inbox; None: the state's deadline came.
    Event(Option<Event>),
    /// The read of the draining VIPs' flows ended.
    Flows(Result<Vec<u32>, String>),
}

/// Whether some VIP's drain waits for its flows.
fn flows_any(state: &State<TriggerReply>) -> bool {
    state
        .engine()
        .vips()
        .iter()
        .filter_map(|s| s.full_config())
        .any(|v| v.policy.drain_until_flows_below > 0)
}

impl Owner {
    async fn run(&mut self, rx: &Inbox) -> i32 {
        // The lower_priority_file is polled at least once a second.
        let mut next_poll = Instant::now();
        // The sessions' reports: the peer summaries live here, in the owner.
        let sessions = self.speaker.reports();
        loop {
            let flows_due = self.count_flows(Instant::now());
            let poll = self.drain_any.then_some(next_poll);
            let poll = match (poll, flows_due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let deadline = match (self.state.next_deadline(), poll) {
                (Some(d), Some(p)) => Some(d.min(p)),
                (d, p) => d.or(p),
            };
            let deadline = match (deadline, self.watchdog.as_ref().map(|w| w.next)) {
                (Some(d), Some(w)) => Some(d.min(w)),
                (d, w) => d.or(w),
            };
            // Only this future of the select uses the speaker; the borrow
            // ends with the select.
            let speaker = &mut self.speaker;
            let bfd = &self.bfd;
            let flows = &mut self.flows;
            // BFD first: the select polls in order, and a flood of events
            // must not delay its packets past the peer's Detection Time.
            // After a turn of BFD's, the other events go first once: a
            // flood of datagrams on a BFD port must not hold them up either.
            let after_bfd = std::mem::take(&mut self.after_bfd);
            let woke = async {
                if after_bfd {
                    smol::future::yield_now().await;
                }
                bfd.ready().await;
                Woke::Bfd
            }
            .or(async { Woke::Event(rx.next().await) })
            .or(async { Woke::Flows(flows.done().await) })
            .or(async {
                // Session reports only update the peer summaries: they
                // are applied here, without a turn of the loop (whose
                // deadline scan costs O(VIPs); a KEEPALIVE each second
                // must not).
                while let Ok(r) = sessions.recv().await {
                    speaker.apply(*r);
                }
                // The handle keeps a sender: never closed while it lives.
                std::future::pending::<Woke>().await
            })
            .or(async {
                match deadline {
                    Some(d) => crate::rt::sleep_until(d).await,
                    None => std::future::pending().await,
                }
                Woke::Event(None)
            })
            .await;
            let now = Instant::now();
            // Here, on every turn of the owner's own loop, and nowhere
            // else: the pings stop when this loop stops turning, which is
            // what procd's watchdog is there to see.
            if let Some(w) = &mut self.watchdog {
                w.tick(now);
            }
            if self.drain_any && now >= next_poll {
                self.poll_drain_files(now);
                next_poll = now + Duration::from_secs(1);
            }
            // BFD's own wake-ups need no step of the state.
            let ev = match woke {
                Woke::Bfd => {
                    self.bfd_turn(now);
                    self.after_bfd = true;
                    continue;
                }
                Woke::Flows(r) => {
                    if let Some(counts) = self.flows.finish(r) {
                        self.step(state::Event::Flows(counts), now);
                    }
                    continue;
                }
                Woke::Event(ev) => ev,
            };
            let Some(ev) = ev else {
                self.step(state::Event::Tick, now);
                continue;
            };
            match ev {
                Event::Result(r) => self.on_result(r, now),
                Event::Control(c) => self.control(c, now),
                Event::Peer(p) => send_peer_event(self.ubus.as_ref(), &p),
                // Its errors are logged by the reload.
                Event::Signal(Signal(libc::SIGHUP)) => {
                    let _ = self.reload(now);
                }
                // The stop's future runs once: on the heap and behind a
                // pointer (`stop`) it is no part of the owner's future nor
                // of the frame of the owner's poll, both on the main
                // thread's stack from start to end (inline, its future cost
                // 0.8 MB of that stack; boxed but polled inline, its last
                // export's sends put 85 KB in the poll's frame).
                Event::Signal(_) => return self.stop(rx).await,
            }
        }
    }

    /// Starts a count of the flows of the VIPs that wait for theirs, if
    /// one is due; returns when the next is, while some VIP waits.
    fn count_flows(&mut self, now: Instant) -> Option<Instant> {
        if !self.flows_any {
            return None;
        }
        let engine = self.state.engine();
        engine.flow_waits().next()?;
        // The names and prefixes are copied only when a read starts, not on
        // every turn of the loop.
        if self.flows.due().is_some_and(|d| d <= now) {
            // One entry per prefix: a VIP's flows are those to any of them.
            let mut vips = Vec::new();
            for s in engine.flow_waits() {
                for p in std::iter::once(&s.prefix).chain(s.more_prefixes()) {
                    vips.push((s.name.to_string(), *p));
                }
            }
            self.flows.start(vips, now);
        }
        self.flows.due()
    }

    /// The BFD sessions' turn; a session that failed takes its BGP
    /// session down.
    fn bfd_turn(&mut self, now: Instant) {
        for name in self.bfd.turn(now) {
            self.speaker.bfd_down(&name);
        }
    }

    /// [`Self::shutdown`]'s future, on the heap, polled through a pointer.
    #[inline(never)]
    fn stop<'a>(&'a mut self, rx: &'a Inbox) -> Pin<Box<dyn Future<Output = i32> + 'a>> {
        Box::pin(self.shutdown(rx))
    }

    /// One step of the state, its effects carried out.
    fn step(&mut self, ev: state::Event<TriggerReply>, now: Instant) {
        let fx = self.state.step(ev, now);
        self.carry_out(fx, now);
    }

    /// A step's effects but a reload's (see [`Self::reload`]), in the
    /// order [`Effects`] gives.
    fn carry_out(&mut self, fx: Effects<TriggerReply>, now: Instant) {
        self.apply(fx.outputs);
        for (waiters, outcome) in fx.answers {
            // Callers that gave up have closed their channel: the send fails quietly.
            for w in waiters {
                let _ = w.try_send(outcome.clone());
            }
        }
        for ask in fx.asks {
            self.ask_loops(ask, now);
        }
    }

    /// A check loop's result: logged and traced, then a step; the VIP's
    /// drain file is also checked on every result of its checks.
    fn on_result(&mut self, r: CheckRun, now: Instant) {
        let Some((slot, k)) = self.state.engine().check(r.check) else {
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
        if super::otel::sampled() {
            use pathosd_core::api::otlp::Value;
            let kind = slot
                .config()
                .checks
                .get(k)
                .map_or("", |c| c.probe.kind().as_str());
            super::otel::record(
                "health_check",
                r.result.duration,
                vec![
                    ("vip.name", Value::Str(slot.name.to_string())),
                    ("check.name", Value::Str(check.clone())),
                    ("check.type", Value::Str(kind.to_string())),
                    ("check.success", Value::Bool(r.result.ok)),
                    (
                        "check.duration_ms",
                        Value::Int(
                            i64::try_from(r.result.duration.as_millis()).unwrap_or(i64::MAX),
                        ),
                    ),
                    ("check.detail", Value::Str(r.result.detail.clone())),
                    ("check.timed_out", Value::Bool(r.result.timed_out)),
                ],
                !r.result.ok,
            );
        }
        // Copied only for a VIP with a drain file (most have none).
        let drain = slot.full_config().and_then(|v| {
            let f = v.policy.lower_priority_file.clone()?;
            Some((v.name.to_string(), f))
        });
        self.step(state::Event::Result(r), now);
        if let Some((vip, path)) = drain {
            self.poll_drain_file(vip, &path, now);
        }
    }

    fn apply(&mut self, outputs: Vec<Output>) {
        // Logs and events first; then the route changes of the step go to the
        // speaker as one batch (one RIB update and one sync per peer, however
        // many VIPs moved) straight from `outputs`, with no second vector of
        // them (10,000 at start with as many `always` VIPs).
        report(
            &self.state,
            self.ubus.as_ref(),
            self.hooks.as_mut(),
            &outputs,
        );
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
        let files: Vec<(String, String)> = self
            .state
            .drain_files()
            .map(|(v, f)| (v.name.to_string(), f.clone()))
            .collect();
        for (vip, path) in files {
            self.poll_drain_file(vip, &path, now);
        }
    }

    fn poll_drain_file(&mut self, vip: String, path: &str, now: Instant) {
        // Any stat error counts as absent, as in pathosd.
        let present = std::fs::metadata(PathBuf::from(path)).is_ok();
        self.step(state::Event::DrainFile { vip, present }, now);
    }

    fn control(&mut self, c: Control, now: Instant) {
        match c {
            Control::Snapshot { scope, reply } => {
                let _ = reply.try_send(self.snapshot(&scope, now));
            }
            Control::Render { mut job, reply } => {
                job.step(&mut Reading { owner: self, now });
                let _ = reply.try_send(job);
            }
            Control::Drain { vip, enable, reply } => {
                let mut fx = self.state.step(state::Event::Drain { vip, enable }, now);
                let r = fx.drain.take();
                self.carry_out(fx, now);
                if let Some(r) = r {
                    let _ = reply.try_send(r);
                }
            }
            Control::Reload { reply } => {
                let _ = reply.try_send(self.reload(now));
            }
            Control::Need { kind, name, up } => {
                log::info!(
                    "ubus: {} {name} {}",
                    kind.as_str(),
                    if up { "up" } else { "down" }
                );
                self.step(state::Event::Need { kind, name, up }, now);
            }
            Control::Trigger { vip, check, reply } => {
                let running = self.runtimes.get(&vip).is_some();
                let ev = state::Event::Trigger {
                    vip,
                    check,
                    running,
                    reply,
                };
                self.step(ev, now);
            }
        }
    }

    /// Asks the loops of the run's checks for one ad-hoc run each; a loop
    /// runs it after the probe it is running, if any, so the check's runs
    /// stay in order. The results come back through the event channel like
    /// scheduled ones. For a loop that is not there (any more) the run
    /// records a failure, so it still completes; the check's hysteresis
    /// does not see it (nothing ran).
    fn ask_loops(&mut self, ask: Ask, now: Instant) {
        let Ask { vip, id, checks } = ask;
        let loops = self.runtimes.get(&vip).map_or(&[][..], |rt| &rt.loops[..]);
        let not_run: Vec<CheckId> = checks
            .into_iter()
            .filter(|c| {
                !loops
                    .iter()
                    .find(|l| l.id == *c)
                    .is_some_and(|l| l.trigger.request(id))
            })
            .collect();
        if !not_run.is_empty() {
            // Its effects are answers only: no further asks.
            let ev = state::Event::NotRun {
                vip,
                id,
                checks: not_run,
            };
            self.step(ev, now);
        }
    }

    /// The state with views of the VIPs of `scope` only (`views::vip_views`).
    fn snapshot(&mut self, scope: &Scope, now: Instant) -> Snapshot {
        let live = Live {
            version: env!("CARGO_PKG_VERSION"),
            peers: self
                .speaker
                .peers()
                .into_iter()
                .map(|p| {
                    let mut v = peer_view(p);
                    v.bfd = self.bfd.view(&v.name, now);
                    v
                })
                .collect(),
            bfd_unmatched: self.bfd.unmatched(),
            hook_drops: self.hooks.as_ref().map_or(0, |h| h.drops()),
            // Counted by the pool's threads; read here, on the owner's.
            blocking_pool: crate::pool::stats(),
            otel: self.otel.as_ref().map(|_| crate::daemon::otel::stats()),
        };
        self.state.snapshot(scope, now, live)
    }
}

/// procd's watchdog when the init script armed it (`watchdog::ENV`): its
/// pings go through the daemon's ubus client, or through a client of its
/// own when `api.ubus_socket` is off. Logged once.
fn procd_watchdog(ubus: Option<&crate::ubus::UbusHandle>) -> Option<super::watchdog::Pinger> {
    let dog = match super::watchdog::Watchdog::from_env() {
        Ok(Some(d)) => d,
        Ok(None) => return None,
        Err(e) => {
            log::warn!("procd watchdog: {e}; not pinging it");
            return None;
        }
    };
    let link = match ubus {
        Some(u) => u.clone(),
        None => super::ubus::start_watchdog_only(),
    };
    log::info!(
        "procd watchdog on: pinging service {} instance {} every {} ms; procd restarts pathosd after {} s without a ping",
        dog.service,
        dog.instance,
        dog.every.as_millis(),
        dog.timeout.as_secs()
    );
    Some(super::watchdog::Pinger {
        dog,
        link,
        next: Instant::now(),
    })
}

/// Room in the log records' copy for OTLP for a line per VIP and per check
/// (`logging::otel_room`): what one step may log.
fn log_room(state: &State<TriggerReply>) {
    let vips = state.engine().vips();
    crate::logging::otel_room(vips.iter().map(|s| 1 + s.checks.len()).sum());
}

/// How long the exit waits for ubusd to take the last events (its answer to
/// the REMOVE_OBJECT sent after them).
const UBUS_FLUSH_LIMIT: Duration = Duration::from_secs(2);
