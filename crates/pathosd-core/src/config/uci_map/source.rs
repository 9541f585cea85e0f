//! The UCI text as the loader reads it: every statement checked once, the
//! sections of a known type indexed (where their statements are), and
//! their options read from the text again when a section is mapped.

use super::super::field::{quote, Errors};
use super::super::uci::{
    command, outside_section, overwrites, Cmd, Command, Lexer, Line, UciError,
};
use super::layout::SectionKind;
use super::MAX_UNIT_VALUES;
use std::borrow::Cow;
use std::collections::HashMap;

/// "No occurrence", at the end of a section's chain.
pub(super) const NONE: u32 = u32::MAX;

pub(super) fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(NONE)
}

/// A section of a known type as the index has it: no options, only where
/// its statements are (the `config` statements that open it, a chain
/// through `Source::occs`).
#[derive(Debug)]
pub(super) struct Head<'a> {
    pub(super) kind: SectionKind,
    pub(super) name: Option<Cow<'a, str>>,
    /// Position among the sections of the same type (for `@type[N]`).
    pub(super) index: u32,
    pub(super) line: u32,
    pub(super) first: u32,
}

impl Head<'_> {
    /// How `uci` addresses the section: `vip 'web'` or `@check[1]`.
    pub(super) fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{} '{n}'", self.kind.as_str()),
            None => format!("@{}[{}]", self.kind.as_str(), self.index),
        }
    }
}

/// One `config` statement of an indexed section: where its options start
/// (byte offset and line) and the next statement of the same section.
#[derive(Debug)]
pub(super) struct Occ {
    pub(super) at: u32,
    pub(super) line: u32,
    pub(super) next: u32,
}

/// A UCI file as the loader reads it: the text and an index of its
/// sections (a few dozen bytes each). Options are read from the text when
/// a section is mapped, one VIP (with its checks) at a time, never all at
/// once: a 4 MiB file of short options as values took 200 MB.
pub(crate) struct Source<'a> {
    pub(super) text: &'a str,
    /// Whether a section count passed its limit (the errors say which):
    /// the file is refused before anything is mapped.
    pub(crate) over_limit: bool,
    pub(super) heads: Vec<Head<'a>>,
    pub(super) occs: Vec<Occ>,
    /// Whether errors name lines (not for sections handed over as values).
    pub(super) lines: bool,
}

/// An option's merged value, borrowed from the file's text when it can be.
pub(super) enum Val<'a> {
    One(Cow<'a, str>),
    List(Vec<(Cow<'a, str>, usize)>),
}

/// An option of a section, merged as libuci merges repeated statements.
pub(super) struct Opt<'a> {
    pub(super) name: &'static str,
    pub(super) value: Val<'a>,
    /// Line of the last statement that set it.
    pub(super) line: usize,
}

impl<'a> Source<'a> {
    /// Reads the text once: every statement is checked (a syntax error is
    /// returned as libuci reports it), sections of an unknown type or past
    /// a limit are errors in `errs`, and the others are indexed.
    pub(crate) fn index(
        text: &'a str,
        lines: bool,
        errs: &mut Errors,
    ) -> Result<Source<'a>, UciError> {
        let mut ix = Indexer {
            src: Source {
                text,
                over_limit: false,
                heads: Vec::new(),
                occs: Vec::new(),
                lines,
            },
            by_name: HashMap::new(),
            written: [0; 4],
            per_kind: [0; 4],
            global: None,
            last_occ: Vec::new(),
        };
        let mut lx = Lexer::new(text);
        let mut in_section = false;
        while let Some(c) = command(&mut lx)? {
            let (name, kind_text) = match &c.cmd {
                Cmd::Package(_) => {
                    in_section = false;
                    continue;
                }
                Cmd::Option { .. } if !in_section => return Err(outside_section(&c)),
                Cmd::Option { .. } => continue,
                Cmd::Config { kind, name } => (name.clone(), kind.clone()),
            };
            in_section = true;
            ix.config(&c, name, kind_text, lx.place(), errs)?;
        }
        let mut src = ix.src;
        for k in [SectionKind::Neighbor, SectionKind::Vip, SectionKind::Check] {
            let n = ix.written[k as usize];
            if n > k.limit() {
                src.over_limit = true;
                errs.push_as_written(
                    format_args!("config {}", k.as_str()),
                    format_args!(
                        "{n} {} sections, more than the limit of {}",
                        k.as_str(),
                        k.limit()
                    ),
                );
            }
        }
        src.heads.shrink_to_fit();
        src.occs.shrink_to_fit();
        Ok(src)
    }

    /// " (line N)", or nothing without lines.
    pub(super) fn at(&self, line: usize) -> Line {
        Line(if self.lines { line } else { 0 })
    }

    /// Calls `f` with every option and list statement of `h`, in file
    /// order: (list?, name, value, line).
    pub(super) fn each_option(
        &self,
        h: &Head<'a>,
        f: &mut dyn FnMut(bool, Cow<'a, str>, Cow<'a, str>, usize) -> bool,
    ) {
        let mut o = h.first;
        while let Some(occ) = self.occs.get(o as usize) {
            let mut lx = Lexer::at(self.text, occ.at as usize, occ.line as usize);
            // The index checked every statement: none fails here.
            while let Ok(Some(c)) = command(&mut lx) {
                match c.cmd {
                    Cmd::Option { list, name, value } => {
                        if !f(list, name, value, c.line) {
                            return;
                        }
                    }
                    _ => break,
                }
            }
            o = occ.next;
        }
    }

    /// The options of `h` that `known` names (by a static name), merged as
    /// libuci merges them: an option replaces, a list appends (and makes an
    /// earlier option its first item). Others go to `unknown` with their
    /// line. At most `budget` values are kept; false in `.1` once more were
    /// written.
    pub(super) fn options(
        &self,
        h: &Head<'a>,
        known: &dyn Fn(&str) -> Option<&'static str>,
        unknown: &mut dyn FnMut(&str, usize),
        budget: &mut usize,
    ) -> (Vec<Opt<'a>>, bool) {
        let mut opts: Vec<Opt<'a>> = Vec::new();
        let mut ok = true;
        self.each_option(h, &mut |list, name, value, line| {
            let Some(key) = known(&name) else {
                unknown(&name, line);
                return true;
            };
            if *budget == 0 {
                ok = false;
                return false;
            }
            *budget -= 1;
            match opts.iter_mut().find(|o| o.name == key) {
                Some(o) => {
                    let old_line = std::mem::replace(&mut o.line, line);
                    if list {
                        let mut items = match std::mem::replace(&mut o.value, Val::List(Vec::new()))
                        {
                            Val::One(v) => vec![(v, old_line)],
                            Val::List(l) => l,
                        };
                        items.push((value, line));
                        o.value = Val::List(items);
                    } else {
                        o.value = Val::One(value);
                    }
                }
                None => opts.push(Opt {
                    name: key,
                    value: if list {
                        Val::List(vec![(value, line)])
                    } else {
                        Val::One(value)
                    },
                    line,
                }),
            }
            true
        });
        (opts, ok)
    }

    /// The few options of `h` named in `names` (no others are kept).
    pub(super) fn some_options(
        &self,
        h: &Head<'a>,
        names: &'static [&'static str],
    ) -> Vec<Opt<'a>> {
        let known = |n: &str| names.iter().find(|k| **k == n).copied();
        let mut budget = MAX_UNIT_VALUES;
        self.options(h, &known, &mut |_, _| {}, &mut budget).0
    }
}

/// The index being made, and what it needs while the text is read.
struct Indexer<'a> {
    src: Source<'a>,
    /// Section name → (type, line, head): for merging and for libuci's
    /// rule that a name keeps its type.
    by_name: HashMap<Cow<'a, str>, (Cow<'a, str>, u32, u32)>,
    /// `config` statements per known type, and sections per type.
    written: [usize; 4],
    per_kind: [u32; 4],
    global: Option<u32>,
    /// The last occurrence of each head, to chain the next one.
    last_occ: Vec<u32>,
}

impl<'a> Indexer<'a> {
    /// A `config` statement `c`, its options starting at `place` (byte
    /// offset and line).
    fn config(
        &mut self,
        c: &Command<'a>,
        name: Option<Cow<'a, str>>,
        kind_text: Cow<'a, str>,
        (at, at_line): (usize, usize),
        errs: &mut Errors,
    ) -> Result<(), UciError> {
        let kind = SectionKind::of(&kind_text);
        let occ = Occ {
            at: small(at),
            line: small(at_line),
            next: NONE,
        };
        if let Some(k) = kind {
            self.written[k as usize] += 1;
        }
        let over = kind.is_some_and(|k| self.written[k as usize] > k.limit());
        let earlier = name.as_ref().and_then(|n| self.by_name.get(n));
        if let (Some(n), Some((ekind, eline, head))) = (&name, earlier) {
            if *ekind != kind_text {
                return Err(overwrites(c, n, &kind_text, ekind, *eline as usize));
            }
            // The same section again: its statements are read with it.
            if *head != NONE && !over {
                let h = *head as usize;
                self.reopen(h, occ);
            }
            return Ok(());
        }
        let index = match kind {
            Some(k) => {
                let counter = &mut self.per_kind[k as usize];
                *counter = counter.saturating_add(1);
                *counter - 1
            }
            None => 0,
        };
        let head = match kind {
            None => {
                let line = if self.src.lines { c.line } else { 0 };
                errs.push_as_written(
                    format_args!("config {kind_text}{}", Line(line)),
                    format_args!(
                        "unknown section type {} (pathosd, neighbor, vip or check)",
                        quote(&kind_text)
                    ),
                );
                NONE
            }
            Some(_) if over => NONE,
            Some(k) => self.head(c, k, name.clone(), index, occ, errs),
        };
        // The names of sections past a limit, or of unknown type past the
        // errors' limit, are not kept: the file is refused whatever they
        // say.
        if let Some(n) = name {
            if head != NONE || (kind.is_none() && !errs.stopped()) {
                self.by_name.insert(n, (kind_text, small(c.line), head));
            }
        }
        Ok(())
    }

    /// Chains `occ` to the section at head `h`, opened again.
    fn reopen(&mut self, h: usize, occ: Occ) {
        let i = small(self.src.occs.len());
        match (self.last_occ.get(h).copied()).and_then(|o| self.src.occs.get_mut(o as usize)) {
            Some(prev) => prev.next = i,
            None => return,
        }
        self.last_occ[h] = i;
        self.src.occs.push(occ);
    }

    /// A new section of kind `k`: its head, or NONE for a second pathosd
    /// section (an error).
    fn head(
        &mut self,
        c: &Command<'a>,
        k: SectionKind,
        name: Option<Cow<'a, str>>,
        index: u32,
        occ: Occ,
        errs: &mut Errors,
    ) -> u32 {
        let src = &mut self.src;
        if let (SectionKind::Pathosd, Some(g)) = (k, self.global) {
            let first = src.heads.get(g as usize);
            let this = Head {
                kind: SectionKind::Pathosd,
                name,
                index,
                line: small(c.line),
                first: NONE,
            };
            errs.push_as_written(
                format_args!("{}{}", this.label(), src.at(c.line)),
                format_args!(
                    "only one pathosd section is allowed (the first is {}{})",
                    first.map_or_else(String::new, Head::label),
                    src.at(first.map_or(0, |f| f.line as usize))
                ),
            );
            return NONE;
        }
        let h = small(src.heads.len());
        if k == SectionKind::Pathosd {
            self.global = Some(h);
        }
        let o = small(src.occs.len());
        src.heads.push(Head {
            kind: k,
            name,
            index,
            line: small(c.line),
            first: o,
        });
        src.occs.push(occ);
        self.last_occ.push(o);
        h
    }
}

pub(super) fn one<'o, 'a>(opts: &'o [Opt<'a>], name: &str) -> Option<&'o Cow<'a, str>> {
    match opts.iter().find(|o| o.name == name).map(|o| &o.value) {
        Some(Val::One(v)) => Some(v),
        _ => None,
    }
}
