//! Replays of whole runs through the pure layers — raw check results through
//! the engine (its hysteresis, checks policy, VIP state), then RIB-out —
//! compared line by line with
//! the expected state changes and UPDATE contents in tests/replay/daemon/.
//!
//! File format: a header (`router`, `peer`, `vip` lines) up to `---`, then
//! steps. A step is `@MS EVENT ARGS`; the lines starting with `=` after it are
//! exactly what that step must produce, in order (none: nothing).
//! Events: `report VIP/CHECK ok|fail`, `drain-file VIP on|off`,
//! `drain-api VIP on|off`, `tick`, `peer-up PEER [ipv4] [ipv6]`,
//! `peer-down PEER`, `signal term` (withdraw everything, then Cease),
//! `reload [VIP, ...]` (the rest of the line: a JSON array of the new
//! config's VIPs; the plan's change of each VIP is printed as
//! `reload VIP CHANGE` before what the engine then decides, exactly as the
//! owner plans and applies a SIGHUP).

use pathosd::bgp::rib_out::{AdjRibOut, Changes, PeerShape, RibOut};
use pathosd::bgp::types::{Afi, PathAttrs};
use pathosd::check::CheckResult;
use pathosd::config::{Errors, Field, Vip};
use pathosd::daemon::engine::{CheckRun, Engine, Input, Output};
use pathosd::daemon::reload::{ReloadPlan, VipChange};
use std::time::{Duration, Instant};

struct Peer {
    name: String,
    adj: AdjRibOut,
}

struct Harness {
    engine: Engine,
    rib: RibOut,
    peers: Vec<Peer>,
    t0: Instant,
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
                    if self.rib.set_desired(prefix, intent) {
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

    /// A reload to `vips`: planned by the engine's diff (the one walker the
    /// owner uses) and applied by `Engine::reload`, whose outputs go to the
    /// RIB-out as any other step's.
    fn reload(&mut self, vips: Vec<pathosd::config::VipSpec>, now: Instant) -> Vec<String> {
        let plan = ReloadPlan {
            vips: self.engine.diff(&vips),
            ..ReloadPlan::default()
        };
        let mut lines: Vec<String> = plan
            .vips
            .iter()
            .map(|(name, c)| {
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
                format!("reload {name} {c}")
            })
            .collect();
        let outs = self.engine.reload(vips, &plan, now);
        self.apply(outs, &mut lines);
        lines
    }

    fn step(&mut self, ms: u64, ev: &str, args: &[&str], rest: &str) -> Vec<String> {
        let now = self.t0 + Duration::from_millis(ms);
        let mut lines = Vec::new();
        let input = match ev {
            "reload" => {
                let list: serde_json::Value = serde_json::from_str(rest).expect("a JSON array");
                let vips = list
                    .as_array()
                    .expect("a JSON array")
                    .iter()
                    .map(vip_of)
                    .collect();
                return self.reload(vips, now);
            }
            "report" => {
                let (vip, check) = args[0].split_once('/').expect("VIP/CHECK");
                let ok = args[1] == "ok";
                // The raw result, as the check's loop sends it: the engine
                // applies the hysteresis.
                let id = self
                    .engine
                    .vip(vip)
                    .and_then(|v| v.checks.iter().find(|c| c.name == check))
                    .expect("known check")
                    .id;
                Some(Input::Result(CheckRun {
                    check: id,
                    result: if ok {
                        CheckResult::pass("ok")
                    } else {
                        CheckResult::fail("fail")
                    },
                    trigger: None,
                }))
            }
            "drain-file" => Some(Input::DrainFile {
                vip: args[0].into(),
                present: args[1] == "on",
            }),
            "drain-api" => Some(Input::DrainApi {
                vip: args[0].into(),
                enable: args[1] == "on",
            }),
            "tick" => Some(Input::Tick),
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
                None
            }
            "peer-down" => {
                let p = self
                    .peers
                    .iter_mut()
                    .find(|p| p.name == args[0])
                    .expect("peer");
                p.adj.on_session_down();
                None
            }
            "signal" => {
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
                None
            }
            other => panic!("unknown event {other}"),
        };
        if let Some(i) = input {
            let outs = self.engine.handle(i, now);
            self.apply(outs, &mut lines);
        }
        lines
    }
}

fn kv<'a>(parts: &'a [&'a str], key: &str) -> Option<&'a str> {
    parts
        .iter()
        .find_map(|p| p.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// A VIP of the file, decoded and made a run VIP as the daemon's config is.
fn vip_of(v: &serde_json::Value) -> pathosd::config::VipSpec {
    let mut errs = Errors::default();
    let vip = Vip::decode(v, "vip", &mut errs).unwrap();
    assert!(errs.is_empty(), "{errs:?}");
    // Through the run config's own constructor, as validation.
    pathosd::config::run::vip_spec(vip).unwrap()
}

fn run_file(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let (head, body) = text.split_once("\n---\n").expect("header --- steps");
    let mut local_as = 0;
    let (mut nh4, mut nh6) = (None, None);
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
            "vip" => {
                let v: serde_json::Value = serde_json::from_str(&line[4..]).unwrap();
                vips.push(vip_of(&v));
            }
            other => panic!("unknown header line {other}"),
        }
    }
    let t0 = Instant::now();
    let (engine, outs) = Engine::new(&*vips, t0);
    let mut h = Harness {
        engine,
        rib: RibOut::new(),
        peers: peer_defs
            .into_iter()
            .map(|(name, asn)| Peer {
                name,
                adj: AdjRibOut::new(PeerShape {
                    ebgp: asn != local_as,
                    local_as,
                    next_hop_v4: nh4,
                    next_hop_v6: nh6,
                    families: Vec::new(),
                }),
            })
            .collect(),
        t0,
    };
    let mut start_lines = Vec::new();
    h.apply(outs, &mut start_lines);

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
