//! Which sections are mapped: the global section, the enabled neighbors
//! and VIPs, and each VIP's checks.

use super::super::field::{quote, Errors};
use super::super::schema::CheckType;
use super::super::validate::MAX_CHECKS_PER_VIP;
use super::layout::{check_type, SectionKind, MAIN};
use super::source::{one, small, Head, Opt, Source, Val, NONE};
use std::borrow::Cow;
use std::collections::HashMap;

/// What goes where: the global section, the enabled neighbors and VIPs in
/// file order, and each VIP's checks (by VIP, in file order).
pub(crate) struct Plan {
    /// Whether a VIP has more checks than MAX_CHECKS_PER_VIP (the errors
    /// say which): the file is refused before anything is mapped.
    pub(crate) over_limit: bool,
    pub(super) global: Option<u32>,
    pub(super) neighbors: Vec<u32>,
    pub(super) vips: Vec<u32>,
    /// (VIP, check section, its type if valid), sorted by VIP, each VIP's
    /// in file order.
    pub(super) checks: Vec<(u32, u32, Option<CheckType>)>,
}

impl Plan {
    /// The VIPs to map, in order.
    pub(crate) fn vip_count(&self) -> usize {
        self.vips.len()
    }

    pub(super) fn checks_of(&self, vip: usize) -> &[(u32, u32, Option<CheckType>)] {
        let v = small(vip);
        let from = self.checks.partition_point(|(x, _, _)| *x < v);
        let to = self.checks.partition_point(|(x, _, _)| *x <= v);
        self.checks.get(from..to).unwrap_or(&[])
    }
}

/// Whether `option enabled` switches a section off; an unreadable value is
/// an error and leaves it on.
pub(super) fn disabled(
    src: &Source<'_>,
    h: &Head<'_>,
    opts: &[Opt<'_>],
    errs: &mut Errors,
) -> bool {
    let Some(o) = opts.iter().find(|o| o.name == "enabled") else {
        return false;
    };
    match &o.value {
        Val::One(v) => match v.as_ref() {
            "0" | "false" | "no" | "off" | "disabled" => true,
            "1" | "true" | "yes" | "on" | "enabled" => false,
            _ => {
                errs.push_as_written(
                    format_args!("{} option enabled{}", h.label(), src.at(o.line)),
                    format_args!("{} is not a boolean ('0' or '1')", quote(v)),
                );
                false
            }
        },
        Val::List(_) => false,
    }
}

/// Finds the enabled sections and attaches each check to its VIP (by the
/// VIP's name, or its section name when `option name` differs; the first
/// VIP that has it wins). Errors are UCI's own: an unreadable `enabled`, a
/// check without a VIP or with one that does not exist, more than
/// MAX_CHECKS_PER_VIP checks on a VIP.
pub(crate) fn plan(src: &Source<'_>, errs: &mut Errors) -> Plan {
    let mut p = Plan {
        over_limit: false,
        global: None,
        neighbors: Vec::new(),
        vips: Vec::new(),
        checks: Vec::new(),
    };
    // VIP names (and section names) → VIP, or NONE for a disabled one.
    let by_name = sections(src, &mut p, errs);
    if p.global.is_none() {
        errs.push_as_written(
            format_args!("config pathosd '{MAIN}'"),
            format_args!(
                "missing (it holds asn, router_id and the other global settings, and the \
                 init script's option enabled)"
            ),
        );
    }
    attach_checks(src, &mut p, &by_name, errs);
    // Stable: each VIP's checks stay in file order.
    p.checks.sort_by_key(|(v, _, _)| *v);
    let mut over = false;
    for (k, &h) in p.vips.iter().enumerate() {
        let n = p.checks_of(k).len();
        if n > MAX_CHECKS_PER_VIP {
            over = true;
            if let Some(h) = src.heads.get(h as usize) {
                errs.push_as_written(
                format_args!("{}{}", h.label(), src.at(h.line as usize)),
                    format_args!(
                        "{n} check sections, more than the limit of {MAX_CHECKS_PER_VIP} for one vip"
                    ),
                );
            }
        }
    }
    p.over_limit = over;
    p
}

/// Sorts the sections into the plan (the global one, the enabled
/// neighbors and VIPs); VIP names (and section names) → VIP, or NONE for
/// a disabled one.
fn sections<'a>(src: &Source<'a>, p: &mut Plan, errs: &mut Errors) -> HashMap<Cow<'a, str>, u32> {
    let mut by_name: HashMap<Cow<'a, str>, u32> = HashMap::new();
    for (i, h) in src.heads.iter().enumerate() {
        let i = small(i);
        match h.kind {
            SectionKind::Pathosd => {
                p.global = Some(i);
                // The init script and LuCI read the switch as
                // `pathosd.main.enabled`: under another name, or none, the
                // file has no switch, and a daemon that accepted it would
                // run a file its init script reads as disabled.
                if h.name.as_deref() != Some(MAIN) {
                    errs.push_as_written(
                        format_args!("{}{}", h.label(), src.at(h.line as usize)),
                        format_args!(
                            "the pathosd section must be named 'main' (config pathosd 'main'): \
                             the init script and LuCI read its option enabled there"
                        ),
                    );
                }
            }
            SectionKind::Neighbor => {
                let opts = src.some_options(h, &["enabled"]);
                if !disabled(src, h, &opts, errs) {
                    p.neighbors.push(i);
                }
            }
            SectionKind::Vip => {
                let opts = src.some_options(h, &["enabled", "name"]);
                let off = disabled(src, h, &opts, errs);
                let slot = if off { NONE } else { small(p.vips.len()) };
                if !off {
                    p.vips.push(i);
                }
                let names = [one(&opts, "name").cloned(), h.name.clone()];
                for n in names.into_iter().flatten() {
                    let e = by_name.entry(n).or_insert(slot);
                    // An enabled VIP wins over a disabled one of the name.
                    if *e == NONE {
                        *e = slot;
                    }
                }
            }
            SectionKind::Check => {}
        }
    }
    by_name
}

/// Attaches each enabled check to its VIP.
fn attach_checks(
    src: &Source<'_>,
    p: &mut Plan,
    by_name: &HashMap<Cow<'_, str>, u32>,
    errs: &mut Errors,
) {
    for (i, h) in src.heads.iter().enumerate() {
        if h.kind != SectionKind::Check {
            continue;
        }
        let opts = src.some_options(h, &["enabled", "vip", "type"]);
        if disabled(src, h, &opts, errs) {
            continue;
        }
        let Some(o) = opts.iter().find(|o| o.name == "vip") else {
            errs.push_as_written(
                format_args!("{}{}", h.label(), src.at(h.line as usize)),
                format_args!(
                    "option vip is required (the name of the vip section this check belongs to)"
                ),
            );
            continue;
        };
        let Val::One(target) = &o.value else {
            errs.push_as_written(
                format_args!("{} list vip{}", h.label(), src.at(o.line)),
                format_args!("a check belongs to one vip: write option vip, not list"),
            );
            continue;
        };
        match by_name.get(target) {
            Some(&NONE) => {}
            Some(&v) => {
                let t = one(&opts, "type").and_then(|t| check_type(t));
                p.checks.push((v, small(i), t));
            }
            None => errs.push_as_written(
                format_args!("{} option vip{}", h.label(), src.at(o.line)),
                format_args!("no vip section named {}", quote(target)),
            ),
        }
    }
}
