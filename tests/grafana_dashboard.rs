//! files/pathosd-grafana.json against the real daemon. Every PromQL
//! expression of the dashboard (panel queries and the template variables'
//! `label_values` queries) must parse: promtool (Debian's prometheus) reads
//! them as one recording rule each. Every metric an expression selects must
//! be in the /metrics of a running pathosd whose config makes the families
//! appear (exec, http and tcp checks, a BGP session to BIRD with routes in
//! its Adj-RIB-Out, a VIP drained through the API, a VIP that stays down),
//! and so must every label it matches on; over that scrape, replayed in
//! promtool, every query must evaluate and return something. The variables
//! `instance` and `vip` must filter every panel, and every panel must query
//! `${datasource}`. A missing promtool, a daemon that does not start or a
//! failed fetch fails the test; the last part of the test doctors the
//! dashboard to show that a bad expression, an unknown metric, an unknown
//! label, a query that returns nothing and one that cannot be evaluated are
//! reported.
// Scenarios against real peers and whole configurations read as one
// script, top to bottom: the workspace's function-length lint is for
// shipped code.
#![allow(clippy::too_many_lines)]

mod support;

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::bird::{Bird, BirdPeer};
use support::daemon::{config, is_announced, is_pessimized, policy, Pathosd, Setup, API_PORT};
use support::{poll, test_ip, Addrs, TempDir};

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/files/pathosd-grafana.json");

/// Labels Prometheus adds to every scraped series (they are in no /metrics).
const TARGET_LABELS: [&str; 2] = ["instance", "job"];

/// How long promtool may take to read the rules (it takes ~50 ms).
const PROMTOOL_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// The dashboard's expressions

/// One PromQL expression of the dashboard, as Grafana holds it.
#[derive(Debug, Clone)]
struct Query {
    /// Where it is, for the report: the panel title and refId, or the variable.
    place: String,
    expr: String,
    /// A panel's query (filtered by the variables); false for a variable's.
    panel: bool,
}

/// The panels, rows' nested panels included.
fn panels(dash: &Value) -> Vec<&Value> {
    fn walk<'a>(list: &'a Value, out: &mut Vec<&'a Value>) {
        for p in list.as_array().into_iter().flatten() {
            out.push(p);
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dash["panels"], &mut out);
    out
}

fn queries(dash: &Value) -> Vec<Query> {
    let mut out = Vec::new();
    for p in panels(dash) {
        for t in p["targets"].as_array().into_iter().flatten() {
            if let Some(e) = t["expr"].as_str() {
                out.push(Query {
                    place: format!(
                        "panel {:?} query {}",
                        p["title"].as_str().unwrap_or_default(),
                        t["refId"]
                    ),
                    expr: e.to_string(),
                    panel: true,
                });
            }
        }
    }
    for v in dash["templating"]["list"].as_array().into_iter().flatten() {
        if v["type"] != "query" {
            continue;
        }
        // Grafana 10+ keeps the query in an object, older ones as a string.
        let q = v["query"]["query"].as_str().or(v["query"].as_str());
        let Some(q) = q else { continue };
        // label_values(SELECTOR, LABEL) is Grafana's, not PromQL: its first
        // argument is the expression.
        let inner = q
            .trim()
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|r| r.rsplit_once(','))
            .map_or(q, |(sel, _label)| sel.trim());
        out.push(Query {
            place: format!("variable {}", v["name"]),
            expr: inner.to_string(),
            panel: false,
        });
    }
    out
}

/// The expression with Grafana's variables replaced by values PromQL
/// accepts: the intervals by durations, the template variables (used only
/// inside regex matchers) by `.*`. An unknown variable is an error.
fn to_promql(expr: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = expr;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, used) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or_else(|| format!("unclosed ${{ in {expr:?}"))?;
            (&braced[..end], end + 2)
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        out.push_str(match name {
            "__rate_interval" | "__interval" | "__range" => "5m",
            "instance" | "vip" => ".*",
            _ => return Err(format!("unknown Grafana variable ${name} in {expr:?}")),
        });
        rest = &after[used..];
    }
    out.push_str(rest);
    Ok(out)
}

// ---------------------------------------------------------------------------
// The metric selectors of a PromQL expression

/// A vector selector: the metric name and its label matchers.
#[derive(Debug, Clone, PartialEq)]
struct Selector {
    name: String,
    matchers: Vec<Matcher>,
}

/// label, operator (`=`, `!=`, `=~`, `!~`), value as written.
type Matcher = (String, String, String);

/// Identifiers followed by a parenthesised list of label names.
const GROUPING: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
/// Words that are no metric: binary operators, modifiers and number words.
const KEYWORDS: [&str; 8] = [
    "and", "or", "unless", "bool", "offset", "atan2", "inf", "nan",
];
/// Aggregations, which may take `by (…)` / `without (…)` before their argument.
const AGGREGATIONS: [&str; 14] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// Reads a quoted string starting at `s[0]` (`"`, `'` or a backtick);
/// returns its text (escapes kept as written) and the bytes it took.
fn string_at(s: &str) -> Result<(String, usize), String> {
    let q = s.as_bytes()[0];
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        if b[i] == b'\\' && q != b'`' {
            i += 2;
            continue;
        }
        if b[i] == q {
            return Ok((s[1..i].to_string(), i + 1));
        }
        i += 1;
    }
    Err(format!("unclosed string in {s:?}"))
}

fn skip_space(s: &str, mut i: usize) -> usize {
    let b = s.as_bytes();
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

/// Parses the matchers of `{…}` starting at `s[i] == '{'`; returns them and
/// the index after the `}`.
fn matchers_at(s: &str, mut i: usize) -> Result<(Vec<Matcher>, usize), String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    i += 1;
    loop {
        i = skip_space(s, i);
        match b.get(i) {
            None => return Err(format!("unclosed {{ in {s:?}")),
            Some(b'}') => return Ok((out, i + 1)),
            Some(b',') => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if start == i {
            return Err(format!("no label name at {:?}", &s[start..]));
        }
        let label = s[start..i].to_string();
        i = skip_space(s, i);
        let op = ["=~", "!~", "!=", "="]
            .into_iter()
            .find(|op| s[i..].starts_with(op))
            .ok_or_else(|| format!("no matcher operator after {label} in {s:?}"))?;
        i = skip_space(s, i + op.len());
        if !matches!(b.get(i), Some(b'"' | b'\'' | b'`')) {
            return Err(format!("no quoted value for {label} in {s:?}"));
        }
        let (value, used) = string_at(&s[i..])?;
        i += used;
        out.push((label, op.to_string(), value));
    }
}

/// The vector selectors of a PromQL (or Grafana) expression: every metric
/// name outside strings, ranges, label lists and matchers that is no
/// function, aggregation or keyword. A selector without a metric name
/// (`{__name__=~…}`) is an error: its metric could not be checked.
fn selectors(s: &str) -> Result<Vec<Selector>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b'"' | b'\'' | b'`') {
            i += string_at(&s[i..])?.1;
        } else if c == b'#' {
            i = s[i..].find('\n').map_or(b.len(), |n| i + n);
        } else if c == b'[' {
            // A range or subquery: durations and Grafana's interval variables.
            i = s[i..]
                .find(']')
                .map(|n| i + n + 1)
                .ok_or_else(|| format!("unclosed [ in {s:?}"))?;
        } else if c == b'{' {
            return Err(format!("a selector without a metric name at {:?}", &s[i..]));
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            // A number or a duration (5m, 1e3, 0x1f).
            while i < b.len() && (is_ident(b[i]) || b[i] == b'.') {
                i += 1;
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let word = &s[start..i];
            let lower = word.to_ascii_lowercase();
            let next = skip_space(s, i);
            let next_c = b.get(next).copied();
            let grouping = GROUPING.contains(&lower.as_str());
            if grouping && next_c == Some(b'(') {
                i = s[next..]
                    .find(')')
                    .map(|n| next + n + 1)
                    .ok_or_else(|| format!("unclosed label list in {s:?}"))?;
            }
            // A word followed by `(` is a function or an aggregation, whose
            // argument follows; an aggregation may put `by (…)` first.
            let aggregation = AGGREGATIONS.contains(&word)
                && ["by", "without"]
                    .iter()
                    .any(|k| s[next..].to_ascii_lowercase().starts_with(k));
            let metric = !grouping
                && !KEYWORDS.contains(&lower.as_str())
                && next_c != Some(b'(')
                && !aggregation;
            if metric {
                let mut sel = Selector {
                    name: word.to_string(),
                    matchers: Vec::new(),
                };
                if next_c == Some(b'{') {
                    let (m, end) = matchers_at(s, next)?;
                    sel.matchers = m;
                    i = end;
                }
                out.push(sel);
            }
        } else {
            i += 1;
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// What a /metrics page has

/// Sample names of an exposition (histograms as `_bucket`, `_sum`,
/// `_count`) with the label names each carries.
fn exported(text: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let end = line
            .find(|c: char| c == '{' || c.is_ascii_whitespace())
            .ok_or_else(|| format!("no value in /metrics line {line:?}"))?;
        let labels = out.entry(line[..end].to_string()).or_default();
        if line[end..].starts_with('{') {
            let (m, _) = matchers_at(line, end)?;
            labels.extend(m.into_iter().map(|(l, _, _)| l));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// The check

/// `promtool SUB rules FILE` (SUB: check or test), bounded by
/// PROMTOOL_LIMIT: its exit and its stdout and stderr together, or why it
/// did not run.
fn promtool_rules(
    sub: &str,
    file: &std::path::Path,
) -> Result<(std::process::Output, String), String> {
    let out = run_bounded(
        Command::new("/usr/bin/promtool")
            .arg(sub)
            .arg("rules")
            .arg(file),
        PROMTOOL_LIMIT,
    )
    .map_err(|e| format!("promtool (Debian package prometheus): {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out, text))
}

/// Runs `cmd` with its output captured, bounded by `limit`: a thread waits
/// for the child, the test waits for the thread, and a child still running
/// then is killed by its PID.
fn run_bounded(cmd: &mut Command, limit: Duration) -> Result<std::process::Output, String> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.map_err(|e| format!("{cmd:?}: {e}")),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            Err(format!("{cmd:?} took longer than {limit:?}"))
        }
    }
}

/// `promtool check rules` on one recording rule per expression; the
/// findings name the rule (`dashboard:qN`), which is mapped back to the
/// query's place.
fn promtool_parse(queries: &[(Query, String)], dir: &TempDir) -> Vec<String> {
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(n, (_, e))| json!({"record": format!("dashboard:q{n}"), "expr": e}))
        .collect();
    // YAML reads JSON, so the rules file needs no YAML writer.
    let file = dir.path("dashboard.rules.json");
    let doc = json!({"groups": [{"name": "dashboard", "rules": rules}]});
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let (out, text) = match promtool_rules("check", &file) {
        Ok(r) => r,
        Err(e) => return vec![e],
    };
    let want = format!("SUCCESS: {} rules found", queries.len());
    if out.status.success() && text.contains(&want) {
        return Vec::new();
    }
    let mut found = Vec::new();
    for line in text.lines() {
        let place = queries.iter().enumerate().find_map(|(n, (q, _))| {
            line.contains(&format!("\"dashboard:q{n}\""))
                .then_some(q.place.as_str())
        });
        if let Some(place) = place {
            found.push(format!("{place}: promtool: {}", line.trim()));
        }
    }
    if found.is_empty() {
        found.push(format!(
            "promtool check rules failed ({}):\n{text}",
            out.status
        ));
    }
    found
}

/// The minute of the replay at which each query is evaluated.
const EVAL_AT: &str = "30m";

/// `promtool test rules` replays the scrape as the series of two instances
/// (`r1`, `r2`, job `pathosd`): gauges constant at the scraped value,
/// counters and histogram parts growing by 1 a minute from it. Every query
/// must evaluate without error (a vector match that is not one-to-one, say)
/// and return at least one series: a label value that no series has (a
/// misspelt `session_state`) leaves a panel empty, which parsing cannot see.
/// Each query is a test expecting nothing, so promtool prints what each
/// returned; one it does not print returned nothing.
fn promtool_eval(queries: &[(Query, String)], metrics: &str, dir: &TempDir) -> Vec<String> {
    let mut series = Vec::new();
    for instance in ["r1", "r2"] {
        for line in metrics.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let name_end = line
                .find(|c: char| c == '{' || c.is_ascii_whitespace())
                .unwrap_or(line.len());
            let name = &line[..name_end];
            let (labels, rest) = if line[name_end..].starts_with('{') {
                match matchers_at(line, name_end) {
                    Ok((_, end)) => (&line[name_end + 1..end - 1], &line[end..]),
                    Err(e) => return vec![format!("/metrics: {e}")],
                }
            } else {
                ("", &line[name_end..])
            };
            let Some(value) = rest.split_whitespace().next() else {
                return vec![format!("no value in /metrics line {line:?}")];
            };
            let sep = if labels.is_empty() { "" } else { "," };
            let growing = ["_total", "_bucket", "_count", "_sum"]
                .iter()
                .any(|s| name.ends_with(s));
            let step = if growing { 1 } else { 0 };
            series.push(json!({
                "series": format!("{name}{{{labels}{sep}instance=\"{instance}\",job=\"pathosd\"}}"),
                "values": format!("{value}+{step}x40"),
            }));
        }
    }
    let tests: Vec<Value> = queries
        .iter()
        .map(|(_, e)| json!({"expr": e, "eval_time": EVAL_AT, "exp_samples": []}))
        .collect();
    let file = dir.path("dashboard.test.json");
    let doc = json!({
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}],
    });
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let (out, text) = match promtool_rules("test", &file) {
        Ok(r) => r,
        Err(e) => return vec![e],
    };
    if !text.contains("expr: ") {
        return vec![format!(
            "promtool test rules printed no query ({}):\n{text}",
            out.status
        )];
    }
    let mut found = Vec::new();
    for (q, e) in queries {
        // promtool quotes the expression with Go's %q, which for ASCII text
        // is what Rust's {:?} writes.
        let head = format!("expr: {e:?}, time: {EVAL_AT},");
        match text.lines().find(|l| l.trim_start().starts_with(&head)) {
            None => found.push(format!(
                "{}: returns nothing over the scrape replayed in promtool: {e}",
                q.place
            )),
            Some(l) if l.contains(" err: ") => {
                found.push(format!("{}: promtool: {}", q.place, l.trim()))
            }
            Some(_) => {}
        }
    }
    found
}

/// Everything wrong with `dash` given the /metrics text `metrics` of a
/// running daemon; empty when the dashboard is right.
fn check_dashboard(dash: &Value, metrics: &str, dir: &TempDir) -> Vec<String> {
    let mut problems = Vec::new();
    let have = match exported(metrics) {
        Ok(h) if !h.is_empty() => h,
        Ok(_) => return vec!["/metrics is empty".into()],
        Err(e) => return vec![format!("/metrics: {e}")],
    };

    // The variables every panel depends on.
    let vars = dash["templating"]["list"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let var = |name: &str| vars.iter().find(|v| v["name"] == name).cloned();
    match var("datasource") {
        Some(v) if v["type"] == "datasource" && v["query"] == "prometheus" => {}
        v => problems.push(format!("no datasource variable of type prometheus: {v:?}")),
    }
    for name in ["instance", "vip"] {
        match var(name) {
            Some(v) if v["type"] == "query" && v["datasource"]["uid"] == "${datasource}" => {}
            v => problems.push(format!(
                "no query variable {name} on ${{datasource}}: {v:?}"
            )),
        }
    }
    for p in panels(dash) {
        if p["type"] == "row" {
            continue;
        }
        let title = p["title"].as_str().unwrap_or_default();
        if p["datasource"]["uid"] != "${datasource}" {
            problems.push(format!(
                "panel {title:?}: datasource is not ${{datasource}}"
            ));
        }
        let targets = p["targets"].as_array().cloned().unwrap_or_default();
        if targets.is_empty() {
            problems.push(format!("panel {title:?} has no query"));
        }
        for t in targets {
            if t["datasource"]["uid"] != "${datasource}" {
                problems.push(format!(
                    "panel {title:?} query {}: datasource is not ${{datasource}}",
                    t["refId"]
                ));
            }
        }
    }

    let qs = queries(dash);
    if qs.is_empty() {
        problems.push("the dashboard has no queries".into());
    }
    let mut parsed = Vec::new();
    for q in qs {
        match to_promql(&q.expr) {
            Ok(p) => parsed.push((q.clone(), p)),
            Err(e) => problems.push(format!("{}: {e}", q.place)),
        }
        let sels = match selectors(&q.expr) {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("{}: {e}", q.place));
                continue;
            }
        };
        if sels.is_empty() {
            problems.push(format!("{}: selects no metric: {}", q.place, q.expr));
        }
        let filtered_by = |sel: &Selector, label: &str| {
            sel.matchers
                .iter()
                .any(|(l, op, v)| l == label && op == "=~" && *v == format!("${label}"))
        };
        for sel in &sels {
            let Some(labels) = have.get(&sel.name) else {
                problems.push(format!(
                    "{}: {} is not in the /metrics of the running daemon: {}",
                    q.place, sel.name, q.expr
                ));
                continue;
            };
            for (l, _, _) in &sel.matchers {
                if !labels.contains(l) && !TARGET_LABELS.contains(&l.as_str()) {
                    problems.push(format!(
                        "{}: {} has no label {l} (it has {labels:?})",
                        q.place, sel.name
                    ));
                }
            }
            if q.panel && !filtered_by(sel, "instance") {
                problems.push(format!(
                    "{}: {} is not filtered by instance=~\"$instance\"",
                    q.place, sel.name
                ));
            }
            if q.panel && labels.contains("vip") && !filtered_by(sel, "vip") {
                problems.push(format!(
                    "{}: {} is not filtered by vip=~\"$vip\"",
                    q.place, sel.name
                ));
            }
        }
        if q.panel && !sels.iter().any(|s| filtered_by(s, "vip")) {
            problems.push(format!(
                "{}: nothing in it is filtered by vip=~\"$vip\": {}",
                q.place, q.expr
            ));
        }
    }
    let parse = promtool_parse(&parsed, dir);
    // Evaluating needs every query to parse; the parse errors say it all.
    if parse.is_empty() {
        problems.extend(promtool_eval(&parsed, metrics, dir));
    }
    problems.extend(parse);
    problems
}

// ---------------------------------------------------------------------------
// The tests

#[test]
fn selectors_are_found_where_promql_has_them() {
    let names = |e: &str| -> Vec<String> {
        selectors(e)
            .unwrap_or_else(|err| panic!("{e}: {err}"))
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert_eq!(
        names(
            r#"histogram_quantile(0.9, sum by (instance, le) (rate(a_bucket{vip=~"$vip", x="{b}"}[$__rate_interval])))"#
        ),
        ["a_bucket"]
    );
    assert_eq!(
        names("sum without (le) (a) / ignoring(x) group_left(y, z) count(b offset 5m) > bool 0.5e3 and on (i) c"),
        ["a", "b", "c"]
    );
    assert_eq!(
        names("max(a[5m:1m]) or vector(0) unless sum(b) by (c)"),
        ["a", "b"]
    );
    assert_eq!(names("sum by (instance) (up)"), ["up"]);
    assert_eq!(names(r#"topk(3, x) # a comment naming y"#), ["x"]);
    let s = selectors(r#"m{a="1", b!~'2,3' , c=~"\"}"}"#).unwrap();
    assert_eq!(
        s,
        [Selector {
            name: "m".into(),
            matchers: vec![
                ("a".into(), "=".into(), "1".into()),
                ("b".into(), "!~".into(), "2,3".into()),
                ("c".into(), "=~".into(), r#"\"}"#.into()),
            ],
        }]
    );
    assert!(selectors(r#"{__name__=~"pathosd_.*"}"#).is_err());
    assert_eq!(
        to_promql(r#"rate(a{i=~"$instance", v=~"${vip}"}[$__rate_interval])"#).unwrap(),
        r#"rate(a{i=~".*", v=~".*"}[5m])"#
    );
    assert!(to_promql("rate(a[$__interval_ms])").is_err());
}

/// The dashboard against the real daemon, then doctored copies of it.
#[test]
fn dashboard_queries_parse_and_name_only_what_a_running_daemon_exports() {
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(DASHBOARD).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}")),
    )
    .unwrap_or_else(|e| panic!("{DASHBOARD} is no JSON: {e}"));

    let dir = TempDir::new("grafana");
    let up = dir.path("up");
    std::fs::write(&up, "").unwrap();
    let a = Addrs {
        ours: test_ip(1),
        peer: test_ip(2),
    };
    let api = SocketAddr::from((a.ours, API_PORT));
    // Nothing listens on this address: the tcp check of "down" fails.
    let closed = test_ip(3);
    let timing = json!({"interval": "300ms", "timeout": "200ms", "rise": 1, "fall": 1});
    let check = |v: Value| {
        let mut c = timing.clone();
        c.as_object_mut()
            .unwrap()
            .extend(v.as_object().unwrap().clone());
        c
    };
    let (web, drained, down) = ("10.199.1.1/32", "10.199.2.1/32", "10.199.3.1/32");
    let vips = json!([
        {"name": "web", "prefix": web, "policy": policy("withdraw"), "checks": [
            check(json!({"type": "exec", "detailed_metrics": true,
                         "exec": {"command": "/usr/bin/test", "args": ["-e", up.display().to_string()]}})),
            check(json!({"type": "http", "detailed_metrics": true,
                         "http": {"url": format!("http://{api}/healthz")}})),
            check(json!({"type": "tcp", "tcp": {"host": a.ours.to_string(), "port": API_PORT}})),
        ]},
        {"name": "drained", "prefix": drained, "policy": policy("lower_priority"),
         "check": check(json!({"type": "exec", "exec": {"command": "/usr/bin/true"}}))},
        {"name": "down", "prefix": down, "policy": policy("withdraw"),
         "check": check(json!({"type": "tcp", "tcp": {"host": closed.to_string(), "port": 9}}))},
    ]);
    let bird = Bird::start(BirdPeer::new(a.peer, a.ours));
    let cfg = config(a, vips);
    let d = Pathosd::start(&cfg, api);
    let s = Setup { a, cfg, d, bird };
    s.wait_established();
    s.wait_route(web, "announced", is_announced);
    s.wait_route(drained, "announced", is_announced);
    let r =
        s.d.request("POST", "/api/v1/vips/drained/drain")
            .unwrap_or_else(|| panic!("the drain request got no answer:\n{}", s.d.log()));
    assert_eq!(r.code, 200, "{}", r.body);
    s.wait_route(drained, "pessimized", is_pessimized);

    // The snapshot /metrics renders follows the session's Adj-RIB-Out; the
    // failing check has run once when its last result is written.
    let metrics = poll(Duration::from_secs(10), || {
        let r = s.d.get("/metrics").filter(|r| r.code == 200)?;
        let t = r.body;
        let ready = t.contains(&format!("pathosd_route_state{{nlri=\"{web}\""))
            && t.contains(&format!("pathosd_route_state{{nlri=\"{drained}\""))
            && t.contains(&format!(
                "pathosd_check_last_result{{vip=\"down\",nlri=\"{down}\",check=\"tcp\",type=\"tcp\"}} 0"
            ));
        ready.then_some(t)
    })
    .unwrap_or_else(|| {
        panic!(
            "/metrics never had the routes and the failed check:\n{:?}\n{}",
            s.d.get("/metrics").map(|r| r.body),
            s.d.log()
        )
    });

    // The rows the dashboard is for stay in it.
    let used: BTreeSet<String> = queries(&dash)
        .iter()
        .flat_map(|q| selectors(&q.expr).unwrap_or_default())
        .map(|s| s.name)
        .collect();
    for family in [
        "pathosd_vip_state",
        "pathosd_vip_transitions_total",
        "pathosd_check_duration_seconds_bucket",
        "pathosd_check_total",
        "bgp_peer_state",
        "bgp_sent_messages_total",
        "bgp_received_messages_total",
        "pathosd_route_state",
        "pathosd_blocking_pool_jobs_queued",
        "pathosd_blocking_pool_workers",
        "pathosd_blocking_pool_jobs_total",
    ] {
        assert!(used.contains(family), "no panel uses {family}: {used:?}");
    }

    let problems = check_dashboard(&dash, &metrics, &dir);
    assert!(
        problems.is_empty(),
        "{DASHBOARD}:\n{}\n\n/metrics of the test daemon:\n{metrics}",
        problems.join("\n")
    );

    // The same check on doctored copies: each defect is reported, with the
    // panel it is in.
    let doctored = |expr: &str| {
        let mut d = dash.clone();
        d["panels"].as_array_mut().unwrap().push(json!({
            "type": "timeseries", "title": "doctored", "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "targets": [{"refId": "A", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr}]
        }));
        check_dashboard(&d, &metrics, &dir)
    };
    let f = r#"instance=~"$instance", vip=~"$vip""#;
    for (expr, want) in [
        (
            format!("rate(pathosd_vip_state_changes_total{{{f}}}[$__rate_interval])"),
            "panel \"doctored\" query \"A\": pathosd_vip_state_changes_total is not in the /metrics",
        ),
        (
            format!("sum by (vip (pathosd_vip_state{{{f}}})"),
            "panel \"doctored\" query \"A\": promtool: ",
        ),
        (
            format!("pathosd_vip_state{{{f}, state=\"announced\"}}"),
            "panel \"doctored\" query \"A\": pathosd_vip_state has no label state",
        ),
        (
            r#"pathosd_vip_state{vip=~"$vip"}"#.to_string(),
            "pathosd_vip_state is not filtered by instance",
        ),
        (
            "sum(bgp_peer_up{instance=~\"$instance\"})".to_string(),
            "nothing in it is filtered by vip",
        ),
        (
            format!("bgp_peer_up{{instance=~\"$instance\"}} and on(instance) pathosd_vip_state{{{f}, nlri=\"10.0.0.0/8\"}}"),
            "panel \"doctored\" query \"A\": returns nothing",
        ),
        (
            format!("bgp_peer_up{{instance=~\"$instance\"}} * on(instance) pathosd_vip_state{{{f}}}"),
            "panel \"doctored\" query \"A\": promtool: expr: ",
        ),
        (
            format!("rate(pathosd_check_total{{{f}}}[$__rate_window])"),
            "unknown Grafana variable $__rate_window",
        ),
    ] {
        let found = doctored(&expr);
        assert!(
            found.iter().any(|p| p.contains(want)),
            "{expr}: no {want:?} in {found:#?}"
        );
    }
    // A panel on another datasource.
    let mut d = dash.clone();
    d["panels"][1]["datasource"]["uid"] = json!("prometheus-1");
    let found = check_dashboard(&d, &metrics, &dir);
    assert!(
        found
            .iter()
            .any(|p| p.contains("datasource is not ${datasource}")),
        "{found:#?}"
    );
}
