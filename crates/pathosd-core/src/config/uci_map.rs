//! Maps pathosd's UCI layout (docs/config-uci.md) to the v1 JSON value, so
//! that UCI and JSON share one decoder and one validator. Every JSON path the
//! mapping writes remembers the UCI section, option and line it came from, so
//! errors on UCI input are reported in UCI words:
//! `check 'web_http' option timeout (line 14): 1s must be less than interval 1s`.
//!
//! UCI has only strings; the decoder accepts strings for integers ("65001"),
//! booleans ('0'/'1') and numbers, so every value is passed through as text.

use super::field::{quote, ConfigError, Errors};
use super::uci::Line;
use serde_json::{json, Map, Value};

mod layout;
mod plan;
mod source;

use layout::{type_rows, Kind, Kind::*, Row, SectionKind, CHECK, GLOBAL, NEIGHBOR, VIP};
pub(crate) use plan::{plan, Plan};
pub(crate) use source::Source;
use source::{Head, Opt, Val};

/// Most option values and list items one VIP with its checks, or the
/// pathosd and neighbor sections together, may hold: the JSON value of one
/// of them is all the loader holds at once (a VIP of 64 checks with ten
/// options each needs 650).
pub(crate) const MAX_UNIT_VALUES: usize = 16_384;

/// Where a JSON path came from in the UCI file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Loc {
    section: String,
    /// `option NAME` or `list NAME`; None for the section itself.
    option: Option<String>,
    line: usize,
    /// The section's rows, to name an option that was not written.
    rows: [&'static [Row]; 2],
}

/// Maps sections to v1 values. While loading it reports UCI's own errors
/// (unknown options, a list for a single value, a header that is not
/// "Name: value"); to locate an error it records instead where each v1
/// path came from.
struct Mapper<'m, 'a> {
    src: &'m Source<'a>,
    errs: Option<&'m mut Errors>,
    locs: Option<&'m mut Vec<(String, Loc)>>,
    /// Values the current unit may still hold.
    budget: usize,
    over: bool,
}

impl<'a> Mapper<'_, 'a> {
    fn error(&mut self, path: std::fmt::Arguments<'_>, message: std::fmt::Arguments<'_>) {
        if let Some(e) = self.errs.as_deref_mut() {
            e.push_as_written(path, message);
        }
    }

    fn loc(
        &mut self,
        path: String,
        h: &Head<'_>,
        option: Option<String>,
        line: usize,
        rows: [&'static [Row]; 2],
    ) {
        if let Some(l) = self.locs.as_deref_mut() {
            l.push((
                path,
                Loc {
                    section: h.label(),
                    option,
                    line: if self.src.lines { line } else { 0 },
                    rows,
                },
            ));
        }
    }

    /// Copies the options of `h` that `rows` know into `obj` (JSON path
    /// `base`); `skip` lists options handled elsewhere; other options are
    /// errors unless `quiet` (their type is unknown, which is reported).
    fn fill(
        &mut self,
        h: &Head<'a>,
        rows: [&'static [Row]; 2],
        skip: &'static [&'static str],
        quiet: bool,
        base: &str,
        obj: &mut Map<String, Value>,
    ) {
        let src = self.src;
        let row = |name: &str| {
            rows.iter()
                .flat_map(|r| r.iter())
                .find(|(u, _, _)| *u == name)
                .map(|(u, _, _)| *u)
                .or_else(|| skip.iter().find(|k| **k == name).copied())
        };
        self.loc(base.to_string(), h, None, h.line as usize, rows);
        let mut budget = self.budget;
        let label = h.label();
        let mut errs = self.errs.as_deref_mut().filter(|_| !quiet);
        let (opts, ok) = src.options(
            h,
            &row,
            &mut |name, line| {
                if let Some(e) = errs.as_deref_mut() {
                    e.push_as_written(
                        format_args!("{label} option {name}{}", src.at(line)),
                        format_args!("unknown option for a {} section", h.kind.as_str()),
                    );
                }
            },
            &mut budget,
        );
        self.budget = budget;
        if !ok && !self.over {
            self.over = true;
            self.error(
                format_args!("{}{}", h.label(), src.at(h.line as usize)),
                format_args!(
                    "{} hold more than the limit of {MAX_UNIT_VALUES} option values and list items",
                    if h.kind == SectionKind::Vip || h.kind == SectionKind::Check {
                        "a vip section and its check sections"
                    } else {
                        "the pathosd and neighbor sections"
                    }
                ),
            );
        }
        for o in opts {
            if skip.contains(&o.name) {
                continue;
            }
            let Some(&(_, json_rel, kind)) = rows
                .iter()
                .flat_map(|r| r.iter())
                .find(|(u, _, _)| *u == o.name)
            else {
                continue;
            };
            let path = join(base, json_rel);
            self.put(h, rows, o, (kind, json_rel, path), obj);
        }
    }

    /// Option `o` of `h`, of shape `kind`, into `obj` at `json_rel` (JSON
    /// path `path`).
    fn put(
        &mut self,
        h: &Head<'a>,
        rows: [&'static [Row]; 2],
        o: Opt<'a>,
        (kind, json_rel, path): (Kind, &str, String),
        obj: &mut Map<String, Value>,
    ) {
        let src = self.src;
        let word = match &o.value {
            Val::One(_) => "option",
            Val::List(_) => "list",
        };
        match (kind, o.value) {
            (Scalar | OneOrList, Val::One(v)) => {
                self.loc(path, h, Some(format!("option {}", o.name)), o.line, rows);
                insert(obj, json_rel, Value::String(v.into_owned()));
            }
            (Scalar, Val::List(_)) => self.error(
                format_args!("{} list {}{}", h.label(), o.name, src.at(o.line)),
                format_args!(
                    "{} takes one value: write option {}, not list",
                    o.name, o.name
                ),
            ),
            (List, Val::One(v)) => {
                self.loc(path, h, Some(format!("option {}", o.name)), o.line, rows);
                insert(
                    obj,
                    json_rel,
                    Value::Array(vec![Value::String(v.into_owned())]),
                );
            }
            (List | OneOrList, Val::List(items)) => {
                if self.locs.is_some() {
                    self.loc(
                        path.clone(),
                        h,
                        Some(format!("list {}", o.name)),
                        o.line,
                        rows,
                    );
                    for (k, (_, line)) in items.iter().enumerate() {
                        self.loc(
                            format!("{path}[{k}]"),
                            h,
                            Some(format!("list {}", o.name)),
                            *line,
                            rows,
                        );
                    }
                }
                let vals: Vec<Value> = items
                    .into_iter()
                    .map(|(v, _)| Value::String(v.into_owned()))
                    .collect();
                insert(obj, json_rel, Value::Array(vals));
            }
            (Pairs, value) => {
                let items = match value {
                    Val::One(v) => vec![(v, o.line)],
                    Val::List(l) => l,
                };
                self.loc(
                    path.clone(),
                    h,
                    Some(format!("{word} {}", o.name)),
                    o.line,
                    rows,
                );
                let mut m = Map::new();
                for (item, line) in items {
                    match item.split_once(':') {
                        Some((k, v)) if !k.trim().is_empty() => {
                            let k = k.trim().to_string();
                            if self.locs.is_some() {
                                self.loc(
                                    join(&path, &k),
                                    h,
                                    Some(format!("list {}", o.name)),
                                    line,
                                    rows,
                                );
                            }
                            m.insert(k, Value::String(v.trim_start().to_string()));
                        }
                        _ => self.error(
                            format_args!("{} list {}{}", h.label(), o.name, src.at(line)),
                            format_args!("{} is not \"Name: value\"", quote(&item)),
                        ),
                    }
                }
                insert(obj, json_rel, Value::Object(m));
            }
        }
    }

    /// Everything but the VIPs: the pathosd section and the enabled
    /// neighbors, as the v1 value without `vips`.
    fn rest(&mut self, plan: &Plan) -> Value {
        let src = self.src;
        self.budget = MAX_UNIT_VALUES;
        let mut root = Map::new();
        root.insert("schema".into(), json!("v1"));
        if let Some(h) = plan.global.and_then(|g| src.heads.get(g as usize)) {
            // `enabled` is the init script's switch; the daemon reads the
            // rest whatever it says, so `validate` works on a disabled config.
            self.fill(h, [GLOBAL, &[]], &["enabled"], false, "", &mut root);
        }
        let mut neighbors = Vec::new();
        for (k, h) in plan
            .neighbors
            .iter()
            .filter_map(|&h| src.heads.get(h as usize))
            .enumerate()
        {
            let mut obj = Map::new();
            if let Some(n) = &h.name {
                obj.insert("name".into(), json!(n));
            }
            let base = format!("bgp.neighbors[{k}]");
            self.fill(h, [NEIGHBOR, &[]], &["enabled"], false, &base, &mut obj);
            neighbors.push(Value::Object(obj));
        }
        insert(&mut root, "bgp.neighbors", Value::Array(neighbors));
        Value::Object(root)
    }

    /// VIP `k` of the plan with its checks, as its v1 value.
    fn vip(&mut self, plan: &Plan, k: usize) -> Value {
        let src = self.src;
        self.budget = MAX_UNIT_VALUES;
        let mut obj = Map::new();
        let Some(h) = plan.vips.get(k).and_then(|&h| src.heads.get(h as usize)) else {
            return Value::Object(obj);
        };
        if let Some(n) = &h.name {
            obj.insert("name".into(), json!(n));
        }
        let base = format!("vips[{k}]");
        self.fill(h, [VIP, &[]], &["enabled"], false, &base, &mut obj);
        let checks = plan.checks_of(k);
        let single_check = checks.len() == 1;
        let mut list = Vec::new();
        for (j, (s, t)) in checks
            .iter()
            .filter_map(|&(_, c, t)| Some((src.heads.get(c as usize)?, t)))
            .enumerate()
        {
            let base = if single_check {
                format!("{base}.check")
            } else {
                format!("{base}.checks[{j}]")
            };
            let mut c = Map::new();
            if let Some(n) = &s.name {
                c.insert("name".into(), json!(n));
            }
            match t {
                Some(t) => self.fill(
                    s,
                    [CHECK, type_rows(t)],
                    &["enabled", "vip"],
                    false,
                    &base,
                    &mut c,
                ),
                // Without a valid type the type's options cannot be placed;
                // the decoder reports the type itself.
                None => self.fill(s, [CHECK, &[]], &["enabled", "vip"], true, &base, &mut c),
            }
            list.push(Value::Object(c));
        }
        if single_check {
            if let Some(c) = list.pop() {
                obj.insert("check".into(), c);
            }
        } else if !list.is_empty() {
            obj.insert("checks".into(), Value::Array(list));
        }
        Value::Object(obj)
    }
}

/// The v1 value of everything but the VIPs, with UCI's own errors in
/// `errs`; None when it holds more than MAX_UNIT_VALUES.
pub(crate) fn rest_value(src: &Source<'_>, plan: &Plan, errs: &mut Errors) -> Option<Value> {
    let mut m = Mapper {
        src,
        errs: Some(errs),
        locs: None,
        budget: MAX_UNIT_VALUES,
        over: false,
    };
    let v = m.rest(plan);
    (!m.over).then_some(v)
}

/// The v1 value of VIP `k` of the plan with its checks, with UCI's own
/// errors in `errs`; None when it holds more than MAX_UNIT_VALUES.
pub(crate) fn vip_value(
    src: &Source<'_>,
    plan: &Plan,
    k: usize,
    errs: &mut Errors,
) -> Option<Value> {
    let mut m = Mapper {
        src,
        errs: Some(errs),
        locs: None,
        budget: MAX_UNIT_VALUES,
        over: false,
    };
    let v = m.vip(plan, k);
    (!m.over).then_some(v)
}

/// Rewrites errors about v1 paths into UCI places: the VIP or the rest
/// that a path is in is mapped again, recording where each path came from.
pub(crate) struct Locator<'s, 'a> {
    pub(crate) src: &'s Source<'a>,
    pub(crate) plan: &'s Plan,
}

impl Locator<'_, '_> {
    /// Rewrites an error about a v1 path into UCI terms: its place and the
    /// places it names.
    pub(crate) fn locate(&self, e: ConfigError) -> ConfigError {
        let message = self.rewrite_also(&e.message);
        ConfigError {
            path: self.uci_path(&e.path),
            message,
        }
    }

    /// Where each path of the unit holding `path` came from.
    fn locs(&self, path: &str) -> Vec<(String, Loc)> {
        let mut locs = Vec::new();
        let mut m = Mapper {
            src: self.src,
            errs: None,
            locs: Some(&mut locs),
            budget: MAX_UNIT_VALUES,
            over: false,
        };
        let vip = path
            .strip_prefix("vips[")
            .and_then(|r| r.split_once(']'))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        match vip {
            Some(k) => {
                m.vip(self.plan, k);
            }
            None => {
                m.rest(self.plan);
            }
        }
        locs
    }

    /// A v1 path in a message (`(also vips[0].checks[1])`, `because
    /// vips[1].prefix …`) names a UCI place instead. Quoted text is the
    /// user's own and stays as it is.
    fn rewrite_also(&self, msg: &str) -> String {
        let is_path_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']');
        let mut out = String::with_capacity(msg.len());
        let mut in_quote = false;
        let mut escaped = false;
        let mut i = 0;
        while let Some(c) = msg[i..].chars().next() {
            if in_quote {
                out.push(c);
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_quote = false,
                    _ => {}
                }
                i += c.len_utf8();
                continue;
            }
            let rest = &msg[i..];
            let at_word_start = msg[..i]
                .chars()
                .next_back()
                .is_none_or(|p| !is_path_char(p));
            if at_word_start && (rest.starts_with("vips[") || rest.starts_with("bgp.neighbors[")) {
                let len = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
                let path = rest[..len].trim_end_matches('.');
                out.push_str(&self.uci_path(path));
                i += path.len();
                continue;
            }
            if let Some((json, uci)) = UCI_WORDS.iter().find(|(j, _)| rest.starts_with(j)) {
                out.push_str(uci);
                i += json.len();
                continue;
            }
            if c == '"' {
                in_quote = true;
            }
            out.push(c);
            i += c.len_utf8();
        }
        out
    }

    fn uci_path(&self, path: &str) -> String {
        let locs = self.locs(path);
        // The longest location that is `path` or a parent of it (`path`
        // continues with '.' or '['); "" covers everything. Candidates are
        // `path` itself and its prefixes ending before a '.' or '[', longest
        // first; of several entries for one path the last counts.
        let cuts = path
            .char_indices()
            .filter(|(_, c)| matches!(c, '.' | '['))
            .map(|(i, _)| i)
            .rev();
        let best = std::iter::once(path.len())
            .chain(cuts)
            .chain(std::iter::once(0))
            .find_map(|end| locs.iter().rev().find(|(p, _)| *p == path[..end]));
        let Some((p, loc)) = best else {
            return fallback(path);
        };
        let rest = path[p.len()..].trim_start_matches('.');
        match (&loc.option, rest) {
            (Some(opt), "") => format!("{} {opt}{}", loc.section, Line(loc.line)),
            (Some(opt), rest) => format!("{} {opt}{} {rest}", loc.section, Line(loc.line)),
            (None, "") => format!("{}{}", loc.section, Line(loc.line)),
            (None, rest) => match loc
                .rows
                .iter()
                .flat_map(|r| r.iter())
                .find(|(_, j, _)| *j == rest)
            {
                Some((u, _, _)) => format!("{}{} option {u}", loc.section, Line(loc.line)),
                // The global section covers every path; only its own
                // options are worth naming it for.
                None if p.is_empty() => fallback(path),
                None => format!("{}{} {rest}", loc.section, Line(loc.line)),
            },
        }
    }
}

/// The validator's words for JSON values and keys, and what a UCI file
/// writes instead: an error about a UCI file says `option always '1'`,
/// not `always: true`. Longest first where one begins another.
const UCI_WORDS: &[(&str, &str)] = &[
    (
        "exactly one of check or checks is required (or always: true)",
        "a check section with option vip naming this vip is required (or option always '1')",
    ),
    ("always: true", "option always '1'"),
    (
        "allow_default_route: true",
        "option allow_default_route '1'",
    ),
    (
        "require_local_address is true",
        "option require_local_address is '1'",
    ),
    ("enable_multihop is false", "option enable_multihop is '0'"),
    ("unless tls is true", "unless option tls is '1'"),
    ("true needs pathosd built", "'1' needs pathosd built"),
    (
        "bgp.listen_port is -1",
        "option listen_port of the pathosd section is '-1'",
    ),
    ("(count - 1) x interval", "(count - 1) x ping_interval"),
];

/// Names a place that no section covers: a missing section or global option.
fn fallback(path: &str) -> String {
    if path == "vips" {
        return "config vip".into();
    }
    if path == "bgp.neighbors" {
        return "config neighbor".into();
    }
    match GLOBAL.iter().find(|(_, j, _)| *j == path) {
        Some((u, _, _)) => format!("config pathosd option {u}"),
        None => path.to_string(),
    }
}

/// Inserts `v` at a dotted path below `obj`, creating objects on the way.
fn insert(obj: &mut Map<String, Value>, dotted: &str, v: Value) {
    match dotted.split_once('.') {
        None => {
            obj.insert(dotted.to_string(), v);
        }
        Some((head, tail)) => {
            let child = obj
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !child.is_object() {
                *child = Value::Object(Map::new());
            }
            if let Value::Object(m) = child {
                insert(m, tail, v);
            }
        }
    }
}

fn join(base: &str, rel: &str) -> String {
    if base.is_empty() {
        rel.to_string()
    } else {
        format!("{base}.{rel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::{MAX_CHECKS, MAX_CHECKS_PER_VIP, MAX_NEIGHBORS, MAX_VIPS};

    /// A file mapped as the loader maps it, the VIPs put together as one
    /// value; UCI's own errors.
    struct Mapped {
        value: Value,
        errors: Vec<ConfigError>,
        text: String,
    }

    impl Mapped {
        fn locate(&self, e: ConfigError) -> ConfigError {
            let mut errs = Errors::default();
            let src = Source::index(&self.text, true, &mut errs).unwrap();
            let plan = plan(&src, &mut errs);
            Locator {
                src: &src,
                plan: &plan,
            }
            .locate(e)
        }
    }

    fn mapped(text: &str) -> Mapped {
        let mut errs = Errors::default();
        let src = Source::index(text, true, &mut errs).unwrap();
        let plan = plan(&src, &mut errs);
        let mut value = rest_value(&src, &plan, &mut errs).unwrap();
        let vips: Vec<Value> = (0..plan.vip_count())
            .map(|k| vip_value(&src, &plan, k, &mut errs).unwrap())
            .collect();
        value["vips"] = Value::Array(vips);
        Mapped {
            value,
            errors: errs.into_vec(),
            text: text.to_string(),
        }
    }

    #[test]
    fn maps_sections_to_v1() {
        let m = mapped(
            "config pathosd 'main'\n\
             \toption enabled '1'\n\
             \toption asn '65001'\n\
             \toption router_id '10.0.0.1'\n\
             \toption listen_port '-1'\n\
             \toption log_level 'debug'\n\
             \toption api_token '0123456789abcdef'\n\
             config neighbor 'bird'\n\
             \toption address '127.0.0.1'\n\
             \toption peer_asn '65000'\n\
             config neighbor 'off'\n\
             \toption enabled '0'\n\
             config vip 'web'\n\
             \toption prefix '192.0.2.1/32'\n\
             \tlist community '65001:1'\n\
             \toption lower_priority_as_path_prepend '4'\n\
             config check\n\
             \toption vip 'web'\n\
             \toption type 'http'\n\
             \toption url '/healthz'\n\
             \tlist header 'Host: example.com'\n\
             \tlist response_code '200-299'\n\
             config vip 'two'\n\
             \toption prefix '192.0.2.2/32'\n\
             config check 'a'\n\
             \toption vip 'two'\n\
             \toption type 'tcp'\n\
             \toption port '80'\n\
             config check 'b'\n\
             \toption vip 'two'\n\
             \toption type 'ping'\n\
             \toption ping_interval '10ms'\n",
        );
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(
            m.value,
            json!({
                "schema": "v1",
                "router": {"asn": "65001", "router_id": "10.0.0.1"},
                "bgp": {"listen_port": "-1", "neighbors": [
                    {"name": "bird", "address": "127.0.0.1", "peer_asn": "65000"}]},
                "api": {"token": "0123456789abcdef"},
                "logging": {"level": "debug"},
                "vips": [
                    {"name": "web", "prefix": "192.0.2.1/32",
                     "policy": {"announce": {"communities": ["65001:1"]},
                                "lower_priority": {"as_path_prepend": "4"}},
                     "check": {"type": "http", "http": {"url": "/healthz",
                        "headers": {"Host": "example.com"}, "response_codes": ["200-299"]}}},
                    {"name": "two", "prefix": "192.0.2.2/32", "checks": [
                        {"name": "a", "type": "tcp", "tcp": {"port": "80"}},
                        {"name": "b", "type": "ping", "ping": {"interval": "10ms"}}]}
                ]
            })
        );
    }

    /// A section opened twice is read from both places, merged as libuci
    /// merges it; a check of a disabled VIP goes with it, and an enabled VIP
    /// wins over a disabled one of the same name.
    #[test]
    fn reopened_sections_and_disabled_vips() {
        let m = mapped(
            "config pathosd 'main'\n\
             config vip 'web'\n\toption prefix '192.0.2.1/32'\n\tlist community '1:1'\n\
             config vip 'old'\n\toption name 'web2'\n\toption enabled '0'\n\
             config vip 'web2'\n\toption prefix '192.0.2.2/32'\n\toption always '1'\n\
             config check\n\toption vip 'old'\n\toption type 'tcp'\n\
             config check 'a'\n\toption vip 'web2'\n\toption type 'tcp'\n\
             config vip 'web'\n\tlist community '1:2'\n\toption prefix '192.0.2.3/32'\n",
        );
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(m.value["vips"][0]["prefix"], "192.0.2.3/32");
        assert_eq!(
            m.value["vips"][0]["policy"]["announce"]["communities"],
            json!(["1:1", "1:2"])
        );
        assert_eq!(m.value["vips"][1]["name"], "web2");
        assert_eq!(m.value["vips"][1]["check"]["name"], "a");
        assert_eq!(m.value["vips"].as_array().map(Vec::len), Some(2));
    }

    /// Sections past a count limit are refused before anything is mapped,
    /// as are more checks on one VIP than it may have.
    #[test]
    fn section_counts_are_limited_as_written() {
        let many = |kind: &str, n: usize| -> String {
            (0..n)
                .map(|i| format!("config {kind} 's{i}'\n\toption enabled '0'\n"))
                .collect()
        };
        for (kind, limit) in [
            ("neighbor", MAX_NEIGHBORS),
            ("vip", MAX_VIPS),
            ("check", MAX_CHECKS),
        ] {
            let mut errs = Errors::default();
            let text = many(kind, limit + 1);
            let src = Source::index(&text, true, &mut errs).unwrap();
            assert!(src.over_limit, "{kind}");
            assert_eq!(
                errs.into_vec()[0].to_string(),
                format!(
                    "config {kind}: {} {kind} sections, more than the limit of {limit}",
                    limit + 1
                )
            );
            let mut errs = Errors::default();
            let text = many(kind, limit);
            assert!(!Source::index(&text, true, &mut errs).unwrap().over_limit);
            assert!(errs.is_empty());
        }
        let mut text =
            "config pathosd 'main'\nconfig vip 'web'\n\toption prefix '10.0.0.1/32'\n".to_string();
        for i in 0..=MAX_CHECKS_PER_VIP {
            text.push_str(&format!("config check 'c{i}'\n\toption vip 'web'\n"));
        }
        let mut errs = Errors::default();
        let src = Source::index(&text, true, &mut errs).unwrap();
        assert!(plan(&src, &mut errs).over_limit);
        assert_eq!(
            errs.into_vec()[0].to_string(),
            "vip 'web' (line 2): 65 check sections, more than the limit of 64 for one vip"
        );
    }

    /// One VIP with its checks may hold MAX_UNIT_VALUES values: past them
    /// its value is not built, and one error says so.
    #[test]
    fn a_vip_holds_a_bounded_number_of_values() {
        let mut text =
            "config pathosd 'main'\nconfig vip 'web'\n\toption prefix '10.0.0.1/32'\n".to_string();
        for i in 0..MAX_UNIT_VALUES {
            text.push_str(&format!("\tlist community '1:{}'\n", i % 65_536));
        }
        let mut errs = Errors::default();
        let src = Source::index(&text, true, &mut errs).unwrap();
        let p = plan(&src, &mut errs);
        assert!(vip_value(&src, &p, 0, &mut errs).is_none());
        assert_eq!(
            errs.into_vec()[0].to_string(),
            format!("vip 'web' (line 2): a vip section and its check sections hold more than the limit of {MAX_UNIT_VALUES} option values and list items")
        );
        // One fewer fits.
        let fits = text.replacen("\tlist community '1:0'\n", "", 1);
        let mut errs = Errors::default();
        let src = Source::index(&fits, true, &mut errs).unwrap();
        let p = plan(&src, &mut errs);
        assert!(vip_value(&src, &p, 0, &mut errs).is_some());
        assert!(errs.is_empty());
    }

    #[test]
    fn checks_find_their_vip_by_name_or_section() {
        let m = mapped(
            "config pathosd 'main'\n\
             config vip 'web_1'\n\toption name 'web-1'\n\toption prefix '192.0.2.1/32'\n\
             config check 'a'\n\toption vip 'web-1'\n\toption type 'ping'\n\
             config check 'b'\n\toption vip 'web_1'\n\toption type 'ping'\n",
        );
        assert!(m.errors.is_empty(), "{:?}", m.errors);
        assert_eq!(m.value["vips"][0]["name"], "web-1");
        assert_eq!(m.value["vips"][0]["checks"][1]["name"], "b");
    }

    #[test]
    fn paths_inside_messages_are_rewritten_but_not_quoted_values() {
        let m = mapped("config vip 'web'\n\toption prefix '2001:db8::1/128'\n");
        let e = m.locate(ConfigError {
            path: "router.local_address_ipv6".into(),
            message: "required because vips[0].prefix 2001:db8::1/128 is IPv6; \"vips[0]\" and \"a\\\"vips[0]\" stay".into(),
        });
        assert_eq!(
            e.to_string(),
            "config pathosd option local_address_ipv6: required because vip 'web' option prefix (line 2) 2001:db8::1/128 is IPv6; \"vips[0]\" and \"a\\\"vips[0]\" stay"
        );
    }

    #[test]
    fn uci_only_errors() {
        let m = mapped(
            "config pathosd\n\
             \toption colour 'red'\n\
             config pathosd 'again'\n\
             config vpn 'x'\n\
             config vip 'web'\n\
             \tlist drain_time '5s'\n\
             config check\n\
             \toption type 'tcp'\n\
             config check\n\
             \toption vip 'nope'\n\
             config check\n\
             \toption vip 'web'\n\
             \toption type 'tcp'\n\
             \toption url '/'\n\
             \tlist header 'nocolon'\n\
             config vip 'off'\n\
             \toption enabled '0'\n\
             config check\n\
             \toption vip 'off'\n\
             \toption type 'bogus'\n\
             \toption anything 'x'\n",
        );
        let got: Vec<String> = m.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            got,
            vec![
                "pathosd 'again' (line 3): only one pathosd section is allowed (the first is @pathosd[0] (line 1))",
                "config vpn (line 4): unknown section type \"vpn\" (pathosd, neighbor, vip or check)",
                "@pathosd[0] (line 1): the pathosd section must be named 'main' (config pathosd 'main'): the init script and LuCI read its option enabled there",
                "@check[0] (line 7): option vip is required (the name of the vip section this check belongs to)",
                "@check[1] option vip (line 10): no vip section named \"nope\"",
                "@pathosd[0] option colour (line 2): unknown option for a pathosd section",
                "vip 'web' list drain_time (line 6): drain_time takes one value: write option drain_time, not list",
                "@check[2] option url (line 14): unknown option for a check section",
                "@check[2] option header (line 15): unknown option for a check section",
            ]
        );
    }

    /// The init script and LuCI read the switch as `pathosd.main.enabled`:
    /// a file whose pathosd section has another name, or none, or that has
    /// no pathosd section, is not one the daemon runs.
    #[test]
    fn the_pathosd_section_is_main() {
        let rest =
            "config neighbor 'bird'\n\toption address '127.0.0.1'\n\toption peer_asn '65000'\n";
        let errors = |main: &str| -> Vec<String> {
            mapped(&format!("{rest}{main}"))
                .errors
                .iter()
                .map(|e| e.to_string())
                .collect()
        };
        assert_eq!(
            errors("config pathosd 'main'\n\toption enabled '1'\n"),
            Vec::<String>::new()
        );
        let named = "the pathosd section must be named 'main' (config pathosd 'main'): \
                     the init script and LuCI read its option enabled there";
        assert_eq!(
            errors("config pathosd 'global'\n\toption enabled '1'\n"),
            [format!("pathosd 'global' (line 4): {named}")]
        );
        assert_eq!(
            errors("config pathosd\n\toption enabled '1'\n"),
            [format!("@pathosd[0] (line 4): {named}")]
        );
        assert_eq!(
            errors(""),
            [
                "config pathosd 'main': missing (it holds asn, router_id and the other global \
              settings, and the init script's option enabled)"
            ]
        );
    }

    #[test]
    fn locates_v1_paths() {
        let m = mapped(
            "config pathosd 'main'\n\
             \toption asn '1'\n\
             config vip 'web'\n\
             \tlist community '1:1'\n\
             \tlist community '1:x'\n\
             config check 'a'\n\
             \toption vip 'web'\n\
             \toption type 'tcp'\n\
             config check 'b'\n\
             \toption vip 'web'\n\
             \toption type 'http'\n\
             \tlist header 'X Y: 1'\n",
        );
        let at = |p: &str| {
            m.locate(ConfigError {
                path: p.into(),
                message: "m (also vips[0].checks[0])".into(),
            })
            .to_string()
        };
        assert_eq!(
            at("router.asn"),
            "pathosd 'main' option asn (line 2): m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("router.router_id"),
            "pathosd 'main' (line 1) option router_id: m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0].policy.announce.communities[1]"),
            "vip 'web' list community (line 5): m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0].checks[0].tcp.port"),
            "check 'a' (line 6) option port: m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0].checks[1].http.headers.X Y"),
            "check 'b' list header (line 12): m (also check 'a' (line 6))"
        );
        assert_eq!(
            at("vips[0]"),
            "vip 'web' (line 3): m (also check 'a' (line 6))"
        );
        assert_eq!(at("vips"), "config vip: m (also check 'a' (line 6))");
        assert_eq!(
            at("bgp.neighbors"),
            "config neighbor: m (also check 'a' (line 6))"
        );
    }
}
