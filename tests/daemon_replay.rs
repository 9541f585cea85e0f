//! Replays of whole runs through the daemon's state ([`State::step`], the
//! step the owner task loops over: the engine's hysteresis, checks policy
//! and VIP state, the trigger runs, reloads, the shutdown), its route
//! changes then through RIB-out — compared line by line with the expected
//! effects and UPDATE contents in tests/replay/daemon/.
//!
//! File format: a header (`router`, `peer`, `vip` lines) up to `---`, then
//! steps. A step is `@MS EVENT ARGS`; the lines starting with `=` after it are
//! exactly what that step must produce, in order (none: nothing).
//! Events: `report VIP/CHECK ok|fail [run=ID]` (a check loop's result, of
//! trigger run ID if given), `drain-file VIP on|off`, `drain-api VIP on|off`
//! (answered `drain VIP STATE`), `trigger VIP[/CHECK] caller=N` (the run's
//! requests to the loops print as `ask VIP run=ID CHECK...`, answers as
//! `answer N ...`), `not-run VIP run=ID CHECK...` (loops that could not take
//! the run), `service NAME stop|start` and `interface NAME down|up` (procd's
//! and netifd's events; the probes they call for print as `ask VIP run=0
//! CHECK...`), `tick`, `peer-up PEER [ipv4] [ipv6]`, `peer-down PEER`,
//! `signal term` (every VIP withdrawn, then Cease), `states` (each VIP's
//! state, as /status and the metrics read it: `state VIP STATE`),
//! `reload [VIP, ...]`
//! (the rest of the line: a JSON array of the new config's VIPs; the plan's
//! change of each VIP is printed as `reload VIP CHANGE` before what the
//! step then decides, exactly as the owner plans and applies a SIGHUP).

use pathosd::bgp::rib_out::{AdjRibOut, Changes, PeerShape, RibOut};
use pathosd::bgp::types::{Afi, PathAttrs};
use pathosd::check::CheckResult;
use pathosd::config::load::{load_str, Format};
use pathosd::config::{NeedKind, RunConfig};
use pathosd::daemon::engine::{CheckId, CheckRun, Output};
use pathosd::daemon::reload::VipChange;
use pathosd::daemon::state::{Effects, Event, State};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant, SystemTime};

struct Peer {
    name: String,
    adj: AdjRibOut,
}

struct Harness {
    /// The daemon's state; a trigger's caller is a number.
    state: State<u32>,
    rib: RibOut,
    peers: Vec<Peer>,
    t0: Instant,
    /// The config's `router` and `bgp` objects, for each reload's config.
    router: (serde_json::Value, serde_json::Value),
}

fn attrs_line(a: &PathAttrs) -> String {
    let path: Vec<String> = a.as_path.iter().map(|x| x.to_string()).collect();
    let mut s = format!("path={} nh={}", path.join(","), a.next_hop);
    if !a.communities.is_empty() {
        let c: Vec<String> = a.communities.iter().map(|c| c.to_string()).collect();
        s.push_str(&format!(" comm={}", c.join(",")));
    }
    if !a.large_communities.is_empty() {
        let c: Vec<String> = a.large_communities.iter().map(|c| c.to_string()).collect();
        s.push_str(&format!(" lcomm={}", c.join(",")));
    }
    if let Some(lp) = a.local_pref {
        s.push_str(&format!(" lp={lp}"));
    }
    s
}

fn changes_lines(peer: &str, c: &Changes, out: &mut Vec<String>) {
    for p in &c.withdraw {
        out.push(format!("update {peer} withdraw {p}"));
    }
    for (p, a) in &c.announce {
        out.push(format!("update {peer} announce {p} {}", attrs_line(a)));
    }
    for f in &c.end_of_rib {
        out.push(format!(
            "update {peer} end-of-rib {}",
            if *f == Afi::Ipv4 { "ipv4" } else { "ipv6" }
        ));
    }
}

impl Harness {
    /// A step's effects in the order the owner carries them out: the
    /// reload's plan, the outputs, the answers, the trigger runs.
    fn effects(&mut self, fx: Effects<u32>, lines: &mut Vec<String>) {
        if let Some(r) = fx.reload {
            let plan = r.expect("a valid reload");
            for (name, c) in &plan.vips {
                let c = match c {
                    VipChange::Unchanged => "unchanged".to_string(),
                    VipChange::Kept { attributes, timing } => format!(
                        "kept{}{}",
                        if *attributes { " attributes" } else { "" },
                        if *timing { " timing" } else { "" }
                    ),
                    VipChange::Restarted(why) => format!("restarted ({why})"),
                    VipChange::Added => "added".to_string(),
                    VipChange::Removed => "removed".to_string(),
                };
                lines.push(format!("reload {name} {c}"));
            }
        }
        self.apply(fx.outputs, lines);
        if let Some(r) = fx.drain {
            lines.push(match r {
                Ok(state) => format!("drain {state}"),
                Err(e) => format!("drain error {}", e.kind()),
            });
        }
        for (callers, answer) in fx.answers {
            let to: Vec<String> = callers.iter().map(|c| c.to_string()).collect();
            let what = match answer {
                Ok(o) => {
                    let results: Vec<String> = o
                        .results
                        .iter()
                        .map(|(n, r)| format!("{n}={}", if r.ok { "ok" } else { "fail" }))
                        .collect();
                    format!(
                        "{} {} combined={} {}",
                        o.vip,
                        o.state,
                        o.combined,
                        results.join(" ")
                    )
                }
                Err(e) => format!("error {}", e.kind()),
            };
            // An answer without results (a VIP with no checks) ends at
            // `combined=…`, as the file's lines are read trimmed.
            lines.push(format!("answer {} {}", to.join(","), what.trim_end()));
        }
        for a in fx.asks {
            let names: Vec<String> = a.checks.iter().map(|c| self.check_name(*c)).collect();
            lines.push(format!("ask {} run={} {}", a.vip, a.id, names.join(" ")));
        }
    }

    fn check_name(&self, id: CheckId) -> String {
        let (slot, k) = self
            .state
            .engine()
            .check(id)
            .expect("a check of the engine");
        slot.checks[k].name.clone()
    }

    fn check_id(&self, vip: &str, check: &str) -> CheckId {
        let slot = self.state.engine().vip(vip).expect("a VIP of the config");
        slot.checks
            .iter()
            .find(|c| c.name == check)
            .expect("a check of the VIP")
            .id
    }

    fn apply(&mut self, outs: Vec<Output>, lines: &mut Vec<String>) {
        // Like the speaker: each route change goes out when it is decided.
        for o in outs {
            match o {
                Output::VipTransition {
                    vip,
                    from,
                    to,
                    reason,
                    ..
                } => lines.push(format!(
                    "vip {vip} {} -> {} ({reason})",
                    from.as_str(),
                    to.as_str()
                )),
                Output::Route { prefix, intent } => {
                    if self.rib.set_desired_shared(prefix, intent) {
                        self.sync(lines);
                    }
                }
                Output::CheckTransitionOnly { vip, check, reason } => {
                    lines.push(format!("check {vip}/{check} {reason}"))
                }
                Output::LocalAddressMissing { vip, check, detail } => {
                    lines.push(format!("warn {vip}/{check} {detail}"))
                }
                Output::InitialDone => {
                    lines.push("initial-done".into());
                    self.rib.mark_initial_done();
                    self.sync(lines);
                }
            }
        }
    }

    fn sync(&mut self, lines: &mut Vec<String>) {
        for p in &mut self.peers {
            let c = p.adj.sync(&self.rib);
            changes_lines(&p.name, &c, lines);
        }
    }

    /// `signal term`: the stop's step, then the speaker's stop.
    fn stop(&mut self, now: Instant) -> Vec<String> {
        let mut lines = Vec::new();
        // The state withdraws the VIPs; as in the owner, their
        // routes are not sent one by one: the speaker withdraws
        // every route, then sends Cease.
        let mut fx = self.state.step(Event::Shutdown, now);
        fx.outputs.retain(|o| !matches!(o, Output::Route { .. }));
        self.effects(fx, &mut lines);
        let prefixes: Vec<_> = self.rib.desired().keys().copied().collect();
        for p in prefixes {
            self.rib.set_desired(p, None);
        }
        self.sync(&mut lines);
        for p in &self.peers {
            if p.adj.is_established() {
                lines.push(format!(
                    "notification {} cease/administrative-shutdown",
                    p.name
                ));
            }
        }
        lines
    }

    fn step(&mut self, ms: u64, ev: &str, args: &[&str], rest: &str) -> Vec<String> {
        let now = self.t0 + Duration::from_millis(ms);
        let mut lines = Vec::new();
        let event = match ev {
            "reload" => {
                let vips: serde_json::Value = serde_json::from_str(rest).expect("a JSON array");
                Event::Reload(Ok(Box::new(config(&self.router, vips))))
            }
            "report" => {
                let (vip, check) = args[0].split_once('/').expect("VIP/CHECK");
                // The raw result, as the check's loop sends it: the engine
                // applies the hysteresis.
                Event::Result(CheckRun {
                    check: self.check_id(vip, check),
                    result: if args[1] == "ok" {
                        CheckResult::pass("ok")
                    } else {
                        CheckResult::fail("fail")
                    },
                    trigger: kv(args, "run").map(|id| id.parse().expect("run=ID")),
                })
            }
            "drain-file" => Event::DrainFile {
                vip: args[0].into(),
                present: args[1] == "on",
            },
            "drain-api" => Event::Drain {
                vip: args[0].into(),
                enable: args[1] == "on",
            },
            "trigger" => {
                let (vip, check) = match args[0].split_once('/') {
                    Some((v, c)) => (v, Some(c.to_string())),
                    None => (args[0], None),
                };
                // The owner's loops run for every VIP with checks.
                let running = self
                    .state
                    .engine()
                    .vip(vip)
                    .is_some_and(|v| !v.checks.is_empty());
                Event::Trigger {
                    vip: vip.into(),
                    check,
                    running,
                    reply: kv(args, "caller").expect("caller=N").parse().unwrap(),
                }
            }
            "not-run" => Event::NotRun {
                vip: args[0].into(),
                id: kv(args, "run").expect("run=ID").parse().unwrap(),
                checks: args[2..]
                    .iter()
                    .map(|c| self.check_id(args[0], c))
                    .collect(),
            },
            "service" | "interface" => Event::Need {
                kind: if ev == "service" {
                    NeedKind::Service
                } else {
                    NeedKind::Interface
                },
                name: args[0].into(),
                up: matches!(args[1], "start" | "up"),
            },
            "tick" => Event::Tick,
            "peer-up" => {
                let fams: Vec<Afi> = args[1..]
                    .iter()
                    .map(|f| if *f == "ipv6" { Afi::Ipv6 } else { Afi::Ipv4 })
                    .collect();
                let p = self
                    .peers
                    .iter_mut()
                    .find(|p| p.name == args[0])
                    .expect("peer");
                let c = p.adj.on_established(&fams, &self.rib);
                changes_lines(&p.name, &c, &mut lines);
                return lines;
            }
            "peer-down" => {
                let p = self
                    .peers
                    .iter_mut()
                    .find(|p| p.name == args[0])
                    .expect("peer");
                p.adj.on_session_down();
                return lines;
            }
            "signal" => return self.stop(now),
            "states" => {
                for v in self.state.engine().vips() {
                    lines.push(format!("state {} {}", v.name, v.machine.state().as_str()));
                }
                return lines;
            }
            other => panic!("unknown event {other}"),
        };
        let fx = self.state.step(event, now);
        self.effects(fx, &mut lines);
        lines
    }
}

fn kv<'a>(parts: &'a [&'a str], key: &str) -> Option<&'a str> {
    parts
        .iter()
        .find_map(|p| p.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// The run config of `router`, `bgp` and `vips`, through the loader the
/// daemon uses (so every rule of validation holds).
fn config(
    (router, bgp): &(serde_json::Value, serde_json::Value),
    vips: serde_json::Value,
) -> RunConfig {
    let text = serde_json::json!({
        "schema": "v1",
        "router": router,
        "bgp": bgp,
        "vips": vips,
    })
    .to_string();
    load_str(&text, Some(Format::Json), &|_| None).unwrap_or_else(|e| panic!("{e:?}"))
}

fn run_file(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let (head, body) = text.split_once("\n---\n").expect("header --- steps");
    let (mut h, start_lines) = start(head);
    replay_steps(&mut h, head, body, start_lines, path);
}

/// The harness of a file's header (`router`, `peer`, `vip` lines), and
/// what its start produced.
fn start(head: &str) -> (Harness, Vec<String>) {
    let mut local_as = 0;
    let (mut nh4, mut nh6): (Option<Ipv4Addr>, Option<Ipv6Addr>) = (None, None);
    let mut peer_defs = Vec::new();
    let mut vips = Vec::new();
    for line in head
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts[0] {
            "router" => {
                local_as = kv(&parts, "asn").unwrap().parse().unwrap();
                nh4 = kv(&parts, "next_hop").map(|s| s.parse().unwrap());
                nh6 = kv(&parts, "next_hop_v6").map(|s| s.parse().unwrap());
            }
            "peer" => peer_defs.push((
                parts[1].to_string(),
                kv(&parts, "asn").unwrap().parse::<u32>().unwrap(),
            )),
            "vip" => vips.push(serde_json::from_str::<serde_json::Value>(&line[4..]).unwrap()),
            other => panic!("unknown header line {other}"),
        }
    }
    let t0 = Instant::now();
    // The router's id and the neighbors' addresses are not in the files:
    // nothing they replay shows them (the sessions are RIB-out's).
    let neighbors: Vec<serde_json::Value> = (peer_defs.iter().enumerate())
        .map(|(i, (name, asn))| {
            serde_json::json!({"name": name, "address": format!("198.51.100.{}", i + 1), "peer_asn": asn})
        })
        .collect();
    let mut r = serde_json::json!({"asn": local_as, "router_id": "192.0.2.254"});
    // The next hops are the router's local addresses, as validation asks.
    if let Some(a) = nh4 {
        r["local_address"] = a.to_string().into();
    }
    if let Some(a) = nh6 {
        r["local_address_ipv6"] = a.to_string().into();
    }
    let router = (
        r,
        serde_json::json!({"listen_port": -1, "neighbors": neighbors}),
    );
    let cfg = config(&router, serde_json::Value::Array(vips));
    let (state, outs) = State::start(cfg, t0, SystemTime::UNIX_EPOCH);
    // The start's routes from the engine's slots, as the owner sets them.
    let mut rib = RibOut::new();
    for (p, i) in state.engine().routes() {
        rib.set_desired_shared(p, Some(i.clone()));
    }
    let mut h = Harness {
        state,
        router,
        rib,
        peers: peer_defs
            .into_iter()
            .map(|(name, asn)| Peer {
                name,
                adj: AdjRibOut::new(PeerShape {
                    ebgp: asn != local_as,
                    local_as,
                    next_hop_v4: nh4,
                    next_hop_v6: nh6,
                    ..PeerShape::default()
                }),
            })
            .collect(),
        t0,
    };
    let mut start_lines = Vec::new();
    h.apply(outs, &mut start_lines);
    (h, start_lines)
}

fn replay_steps(
    h: &mut Harness,
    head: &str,
    body: &str,
    start_lines: Vec<String>,
    path: &std::path::Path,
) {
    // Group each step with its expectations.
    let mut steps: Vec<(usize, String, Vec<String>)> = Vec::new();
    let mut pending_start: Vec<String> = Vec::new();
    let head_lines = head.lines().count() + 2;
    for (i, line) in body.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(exp) = line.strip_prefix('=') {
            match steps.last_mut() {
                Some(s) => s.2.push(exp.trim().to_string()),
                None => pending_start.push(exp.trim().to_string()),
            }
        } else {
            steps.push((head_lines + i, line.to_string(), Vec::new()));
        }
    }
    assert_eq!(start_lines, pending_start, "{}: at start", path.display());
    for (lineno, step, want) in steps {
        let parts: Vec<&str> = step.split_whitespace().collect();
        let ms: u64 = parts[0].strip_prefix('@').expect("@MS").parse().unwrap();
        // The text after the event's name, for an argument with spaces.
        let rest = step.split_once(parts[1]).map_or("", |(_, r)| r.trim());
        let got = h.step(ms, parts[1], &parts[2..], rest);
        assert_eq!(
            got,
            want,
            "{}:{lineno}: `{step}` produced (left) but the file expects (right)",
            path.display()
        );
    }
}

#[test]
fn replay_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay/daemon");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "replay") {
            run_file(&p);
            n += 1;
        }
    }
    assert!(n >= 3, "expected replay files in {}", dir.display());
}

/// A backend that flaps every 2 s for 10 minutes (rise 1, fall 1, so each
/// change of its result changes the VIP's health), with the owner's timer
/// run as the owner runs it (a tick at each deadline): without damping
/// every change is an UPDATE (about 300); with the default damping at
/// most 10, the status says damped meanwhile, and once the backend is
/// steady the VIP is announced again on its own, when the penalty has
/// decayed below reuse.
#[test]
fn damping_ten_minutes_of_flapping() {
    let run = |damping: bool| {
        let head = format!(
            "router asn=65001 next_hop=192.0.2.1\npeer bird asn=65000\nvip {}",
            serde_json::json!({"name": "web", "prefix": "10.0.0.1/32",
                "check": {"type": "tcp", "rise": 1, "fall": 1, "tcp": {"port": 80}},
                "policy": {"fail_action": "withdraw", "damping": {"enabled": damping}}})
        );
        let (mut h, _) = start(&head);
        let mut updates = 0;
        let mut damped_at = None;
        // The UPDATEs of the VIP's route a step sends (after the ticks of
        // the deadlines that came first, as the owner's timer runs them).
        let step = |h: &mut Harness, ms: u64, ev: &str, args: &[&str]| -> usize {
            let mut lines = Vec::new();
            while let Some(d) = h.state.next_deadline() {
                let d = d.duration_since(h.t0).as_millis() as u64;
                if d > ms {
                    break;
                }
                lines.extend(h.step(d, "tick", &[], ""));
            }
            lines.extend(h.step(ms, ev, args, ""));
            lines
                .iter()
                .filter(|l| {
                    l.starts_with("update bird announce 10.0.0.1")
                        || l.starts_with("update bird withdraw 10.0.0.1")
                })
                .count()
        };
        updates += step(&mut h, 0, "peer-up", &["bird", "ipv4"]);
        // Up 2 s, down 2 s, for 10 minutes.
        for k in 0..300u64 {
            let r = if k % 2 == 0 { "ok" } else { "fail" };
            updates += step(&mut h, k * 2000, "report", &["web/tcp", r]);
            let v = h.state.vip_view(0, pathosd::api::model::Want::Vip).unwrap();
            if v.damping.as_ref().is_some_and(|d| d.suppressed) && damped_at.is_none() {
                damped_at = Some(k * 2000);
            }
        }
        let during = updates;
        // Then steady: healthy from 10 minutes on, reported each second.
        let mut back = None;
        for s in 600..3600u64 {
            updates += step(&mut h, s * 1000, "report", &["web/tcp", "ok"]);
            let state = h.state.engine().vip("web").unwrap().machine.state();
            if back.is_none() && state.as_str() == "announced" {
                back = Some(s);
            }
        }
        (during, damped_at, back, updates)
    };
    let (plain, plain_damped, _, _) = run(false);
    assert!(plain >= 299, "{plain} UPDATEs without damping");
    assert_eq!(plain_damped, None);
    let (during, damped_at, back, total) = run(true);
    eprintln!(
        "10 min flapping every 2 s: {plain} UPDATEs without damping, {during} with (damped at {damped_at:?} ms), announced again at {back:?} s, {total} UPDATEs in all"
    );
    assert!(during <= 10, "{during} UPDATEs with damping");
    assert!(damped_at.is_some());
    // Released by the penalty's decay alone, at most max_suppress (20
    // minutes) after the last flap, and announced with one UPDATE.
    let back = back.expect("announced again");
    assert!(back <= 600 + 1200, "announced again at {back} s");
    assert_eq!(total, during + 1);
}
