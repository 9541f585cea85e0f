//! The rules of `vips`: names and prefixes unique, each VIP's checks (in
//! `check`) and their names, its `checks_policy` compiled against them,
//! and its policy. Each VIP's rules build its [`VipSpec`].

use super::super::field::{join, Errors, Quote, MAX_PREFIXES_PER_VIP};
use super::super::policy_expr::{self, is_identifier, Expr, RESERVED};
use super::super::run::{CheckSpec, LocalAddress, Needs, VipSpec};
use super::super::schema::{Check, Damping, FailAction, Policy, Vip};
use super::check::check;
use super::{object_name, too_many, MAX_CHECKS_PER_VIP, MAX_NAME_LEN, MAX_VIPS, PREPEND_MAX};
use crate::bgp::types::Prefix;
use crate::vip::damping;

/// The rules of every VIP, consuming them; their specs, in order.
pub(super) fn vips(vips: Vec<Vip>, errs: &mut Errors) -> Option<Vec<VipSpec>> {
    if vips.is_empty() && !errs.has_under("vips") {
        errs.push("vips", "at least one VIP is required");
    }
    if too_many(errs, "vips", "VIPs", vips.len(), MAX_VIPS) {
        return None;
    }
    // The first VIP with each name and prefix, found through index lists
    // sorted by name and by prefix (4 bytes a VIP), not through maps (two
    // BTreeMaps were 0.9 MB at 10,000 VIPs, at the start's peak). VIP i's
    // first prefix is key i; the others of a VIP with a list follow, each
    // (VIP, index) in `more` (empty when every VIP has one prefix).
    // A prefix that is missing or failed to decode (reported by the
    // decoder) holds a placeholder: it takes no part in this rule.
    let n = vips.len();
    let prefix_ok: Vec<bool> = (0..n)
        .map(|i| !errs.has_under(&format!("vips[{i}].prefix")))
        .collect();
    // At most MAX_VIPS VIPs and MAX_PREFIXES_PER_VIP items: the casts keep all.
    let mut more: Vec<(u32, u8)> = Vec::new();
    for (i, v) in vips.iter().enumerate() {
        for j in 1..=v.prefix.more.len() {
            more.push((i as u32, j as u8));
        }
    }
    let at = |k: usize| match k.checked_sub(n).and_then(|m| more.get(m)) {
        Some(&(i, j)) => (i as usize, usize::from(j)),
        None => (k, 0),
    };
    let prefix_at = |k: usize| {
        let (i, j) = at(k);
        let p = &vips[i].prefix;
        j.checked_sub(1).map_or(p.first, |m| p.more[m])
    };
    let first_name = first_of(
        n,
        &|i| !vips[i].name.is_empty(),
        &|a, b| vips[a].name.cmp(&vips[b].name),
        &|i| i,
    );
    // The first in the file's order, VIP then item, is the one kept.
    let first_prefix = first_of(
        n + more.len(),
        &|k| prefix_ok[at(k).0],
        &|a, b| prefix_at(a).cmp(&prefix_at(b)),
        &|k| {
            let (i, j) = at(k);
            i * MAX_PREFIXES_PER_VIP + j
        },
    );
    // Each duplicate (its key, the first key of its prefix, the prefix) in
    // key order: the VIPs' first prefixes, then their others, each part in
    // VIP order; told with its VIP below.
    let mut dups = Vec::new();
    for (k, f) in first_prefix.iter().enumerate() {
        if let Some(f) = f {
            dups.push((k, *f as usize, prefix_at(k)));
        }
    }
    let split = dups.partition_point(|d| d.0 < n);
    let mut firsts = dups[..split].iter().peekable();
    let mut others = dups[split..].iter().peekable();
    // A VIP with one prefix names it `prefix`, one with a list `prefix[j]`.
    let listed: Vec<bool> = vips.iter().map(|v| !v.prefix.more.is_empty()).collect();
    let path_at = |k: usize| {
        let (i, j) = at(k);
        if listed[i] {
            format!("vips[{i}].prefix[{j}]")
        } else {
            format!("vips[{i}].prefix")
        }
    };
    drop(prefix_ok);
    let mut specs = Some(Vec::with_capacity(n));
    for (i, v) in vips.into_iter().enumerate() {
        let p = format!("vips[{i}]");
        object_name(&join(&p, "name"), &v.name, errs);
        if let Some(first) = first_name[i] {
            errs.push_fmt(
                join(&p, "name"),
                format_args!("duplicate VIP name {} (also vips[{first}])", Quote(&v.name)),
            );
        }
        let mine = |d: &&(usize, usize, Prefix)| at(d.0).0 == i;
        while let Some((k, f, x)) = firsts.next_if(mine).or_else(|| others.next_if(mine)) {
            errs.push_fmt(
                path_at(*k),
                format_args!("duplicate prefix {x} (also {})", path_at(*f)),
            );
        }
        match (vip(v, &p, errs), &mut specs) {
            (Some(spec), Some(list)) => list.push(spec),
            // Past the first failure only the rules run.
            _ => specs = None,
        }
    }
    specs
}

/// For each of `n` items whose key an earlier item has too, the index of
/// the first such item (None for the first and for items without a key).
/// `cmp` orders two items by key; `keyed` tells the items that have one;
/// of equal keys the one of least `rank` is the first.
/// Not generic: one sort in the binary for both rules (flash).
fn first_of(
    n: usize,
    keyed: &dyn Fn(usize) -> bool,
    cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering,
    rank: &dyn Fn(usize) -> usize,
) -> Vec<Option<u32>> {
    let mut order: Vec<u32> = (0..n)
        .filter(|&i| keyed(i))
        .filter_map(|i| u32::try_from(i).ok())
        .collect();
    // Equal keys in rank order, the first one first.
    order.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        cmp(a, b).then(rank(a).cmp(&rank(b)))
    });
    let mut first = vec![None; n];
    let mut run: Option<u32> = None;
    for i in order {
        match run {
            Some(f) if cmp(f as usize, i as usize).is_eq() => first[i as usize] = Some(f),
            _ => run = Some(i),
        }
    }
    first
}

/// The rules of VIP `v` at path `p` (its name and prefix apart, which
/// `vips` checks against the others); its spec.
pub(crate) fn vip(v: Vip, p: &str, errs: &mut Errors) -> Option<VipSpec> {
    // A VIP written as 0.0.0.0/0 is far more often a slip (a form's empty
    // address, a copied route) than a wish to draw every peer's traffic
    // here, and announcing it takes the peers' default route.
    for (j, prefix) in v.prefix.iter().enumerate() {
        if prefix.is_empty() && !v.allow_default_route {
            let at = if v.prefix.more.is_empty() {
                join(p, "prefix")
            } else {
                format!("{p}.prefix[{j}]")
            };
            errs.push_fmt(
                at,
                format_args!(
                    "{prefix} is a default route: announced, it draws all of the peers' traffic to this router (set allow_default_route: true if that is meant)",
                ),
            );
        }
    }
    one_way_to_check(&v, p, errs);
    let list: Vec<(String, Check)> = match (v.check, v.checks) {
        (Some(c), _) => vec![(join(p, "check"), *c)],
        (None, Some(cs)) => (cs.into_iter().enumerate())
            .map(|(j, c)| (format!("{p}.checks[{j}]"), c))
            .collect(),
        (None, None) => Vec::new(),
    };
    if too_many(
        errs,
        &join(p, "checks"),
        "checks",
        list.len(),
        MAX_CHECKS_PER_VIP,
    ) {
        return None;
    }
    let listed = !list.is_empty();
    let (checks, names) = checks(&v.prefix.first, list, errs);
    let pp = join(p, "checks_policy");
    let checks_expr = if v.always {
        Some(Expr::All)
    } else if let (true, Some(names), false) = (listed, &names, errs.has(&pp)) {
        policy_expr::compile(&v.checks_policy, names)
            .map_err(|e| {
                errs.push_fmt(
                    pp,
                    format_args!(
                        "column {} of {}: {}",
                        e.column,
                        Quote(&v.checks_policy),
                        e.message
                    ),
                );
            })
            .ok()
    } else {
        None
    };
    if let Some(ifname) = &v.local_interface {
        let ip = join(p, "local_interface");
        if !v.require_local_address {
            errs.push(&ip, "has no effect unless require_local_address is true");
        } else if ifname.is_empty()
            || ifname.len() > 15
            || ifname.chars().any(|c| c == '/' || c.is_whitespace())
        {
            errs.push_fmt(
                &ip,
                format_args!("{} is not an interface name", Quote(ifname)),
            );
        }
    }
    policy(&v.policy, &join(p, "policy"), errs);
    let services = v.services.map(|b| *b).unwrap_or_default();
    let interfaces = v.interfaces.map(|b| *b).unwrap_or_default();
    needs(v.always, (&services, &interfaces), p, errs);
    if v.always && v.policy.damping.enabled {
        errs.push(
            join(p, "policy.damping.enabled"),
            "has no effect with always: true (the VIP never flaps)",
        );
    }
    Some(VipSpec {
        name: v.name,
        prefix: v.prefix.first,
        more_prefixes: v.prefix.more,
        always: v.always,
        checks: checks?,
        checks_policy: v.checks_policy,
        checks_expr: checks_expr?,
        policy: v.policy,
        local_address: v.require_local_address.then_some(LocalAddress {
            interface: v.local_interface,
        }),
        needs: Needs {
            services,
            interfaces,
        },
    })
}

/// `services` and `interfaces`: names, and nothing to fail on an `always` VIP.
fn needs(always: bool, (services, interfaces): (&[String], &[String]), p: &str, errs: &mut Errors) {
    for (key, list) in [("services", services), ("interfaces", interfaces)] {
        if always && !list.is_empty() {
            errs.push(
                join(p, key),
                "has no effect with always: true (the VIP has no health to fail)",
            );
        }
        for (i, name) in list.iter().enumerate() {
            // procd's service names are init script names, netifd's
            // interfaces UCI section names: short, no spaces.
            if name.is_empty() || name.len() > 64 || name.chars().any(|c| c.is_whitespace()) {
                errs.push_fmt(
                    format!("{}[{i}]", join(p, key)),
                    format_args!("{} is not a name", Quote(name)),
                );
            }
        }
    }
}

/// `check` or `checks`: exactly one of them, and neither with `always`.
fn one_way_to_check(v: &Vip, p: &str, errs: &mut Errors) {
    if v.always {
        for (key, set) in [("check", v.check.is_some()), ("checks", v.checks.is_some())] {
            if set {
                errs.push(
                    join(p, key),
                    "not allowed with always: true (the VIP is announced without checks)",
                );
            }
        }
        return;
    }
    match (&v.check, &v.checks) {
        (Some(_), Some(_)) => errs.push(join(p, "checks"), "set either check or checks, not both"),
        (None, None)
            if !errs.has_under(&join(p, "check")) && !errs.has_under(&join(p, "checks")) =>
        {
            errs.push(
                p,
                "exactly one of check or checks is required (or always: true)",
            )
        }
        (None, Some(cs)) if cs.is_empty() => {
            errs.push(join(p, "checks"), "at least one check is required")
        }
        _ => {}
    }
}

/// A VIP's checks, each with its path: their specs, and their names for
/// `checks_policy` (None when a name broke its rule or is a duplicate).
fn checks(
    vip: &crate::bgp::types::Prefix,
    list: Vec<(String, Check)>,
    errs: &mut Errors,
) -> (Option<Vec<CheckSpec>>, Option<Vec<String>>) {
    let mut specs = Some(Vec::with_capacity(list.len()));
    // Names seen so far and the path of the check that has each: at most
    // MAX_CHECKS_PER_VIP (64), searched in order (no map type for this).
    let mut names: Vec<String> = Vec::with_capacity(list.len());
    let mut paths: Vec<String> = Vec::with_capacity(list.len());
    let mut names_ok = true;
    for (cp, c) in list {
        let name = c.effective_name();
        let written = c.name.is_some();
        match (check(vip, &cp, c, errs), &mut specs) {
            (Some(spec), Some(list)) => list.push(spec),
            _ => specs = None,
        }
        let np = join(&cp, "name");
        if written && !check_name(&np, &name, errs) {
            names_ok = false;
        }
        if name.is_empty() {
            names_ok = false;
            continue;
        }
        match names.iter().position(|n| *n == name) {
            Some(k) => {
                errs.push_fmt(
                    &np,
                    format_args!("duplicate check name {} (also {}); two checks of the same type need explicit names", Quote(&name), paths[k]),
                );
                names_ok = false;
            }
            None => {
                names.push(name);
                paths.push(cp);
            }
        }
    }
    (specs, names_ok.then_some(names))
}

/// A check's `name` as written: a checks_policy identifier, not reserved.
fn check_name(np: &str, n: &str, errs: &mut Errors) -> bool {
    if n.len() > MAX_NAME_LEN {
        errs.push_fmt(
            np,
            format_args!("{} is longer than {MAX_NAME_LEN} bytes", Quote(n)),
        );
    } else if !is_identifier(n) {
        errs.push_fmt(
            np,
            format_args!("{} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", Quote(n)),
        );
    } else if RESERVED.contains(&n) {
        errs.push_fmt(
            np,
            format_args!("{} is reserved in checks_policy", Quote(n)),
        );
    } else {
        return true;
    }
    false
}

fn policy(pol: &Policy, p: &str, errs: &mut Errors) {
    for (path, n) in [
        (
            join(p, "announce.as_path_prepend"),
            pol.announce.as_path_prepend,
        ),
        (
            join(p, "lower_priority.as_path_prepend"),
            pol.lower_priority.as_path_prepend,
        ),
    ] {
        if n > PREPEND_MAX {
            errs.push_fmt(path, format_args!("{n} is more than {PREPEND_MAX}"));
        }
    }
    // A pessimized route must never rank above the healthy one, or the
    // standby order would invert: RFC 4271 §9.1.2.2 prefers the lower
    // MULTI_EXIT_DISC (an absent one counts as 0) and the higher LOCAL_PREF.
    let med = pol.announce.med.unwrap_or(0);
    if let Some(m) = pol.lower_priority.med.filter(|m| *m < med) {
        errs.push_fmt(
            join(p, "lower_priority.med"),
            format_args!("{m} is below announce.med {med}: a pessimized route would be preferred"),
        );
    }
    let pref = pol.announce.local_pref;
    if let Some(l) = pol.lower_priority.local_pref.filter(|l| *l > pref) {
        errs.push_fmt(
            join(p, "lower_priority.local_pref"),
            format_args!(
                "{l} is above announce.local_pref {pref}: a pessimized route would be preferred"
            ),
        );
    }
    if pol.fail_action == FailAction::DrainThenWithdraw && pol.drain_time.is_zero() {
        errs.push(
            join(p, "drain_time"),
            "0s must be greater than 0 for fail_action drain_then_withdraw",
        );
    } else if pol.drain_until_flows_below > 0 && pol.drain_time.is_zero() {
        // drain_time bounds the wait for the flows: without it a drain
        // could wait for ever.
        errs.push(
            join(p, "drain_time"),
            "0s must be greater than 0 with drain_until_flows_below",
        );
    }
    damping(&pol.damping, &join(p, "damping"), errs);
    if let Some(f) = &pol.lower_priority_file {
        if !f.starts_with('/') {
            errs.push_fmt(
                join(p, "lower_priority_file"),
                format_args!("{} must be an absolute path", Quote(f)),
            );
        }
    }
}

/// `policy.damping`: a penalty that can exceed suppress and decay below
/// reuse again.
fn damping(d: &Damping, p: &str, errs: &mut Errors) {
    let h = d.half_life.get();
    if h < std::time::Duration::from_secs(1) || h > damping::MAX_HALF_LIFE {
        errs.push(join(p, "half_life"), "must be 1s to 45m");
    } else if d.max_suppress.get() > damping::MAX_SUPPRESS {
        errs.push(join(p, "max_suppress"), "must be at most 12h");
    } else if d.reuse == 0 || d.reuse >= d.suppress {
        errs.push(
            join(p, "reuse"),
            "must be at least 1 and less than suppress",
        );
    } else if d.suppress
        >= damping::DampingPolicy::new(h, d.suppress, d.reuse, d.max_suppress.get()).ceiling
    {
        errs.push(
            join(p, "suppress"),
            "can never be exceeded: the penalty stops below reuse × 2^(max_suppress/half_life); raise max_suppress or lower suppress",
        );
    }
}
