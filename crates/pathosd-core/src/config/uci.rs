//! A reader for UCI files (/etc/config/*), following libuci's file grammar
//! (openwrt/uci file.c) so that whatever LuCI or `uci commit` writes reads
//! back the same:
//!
//! * statements `package NAME`, `config TYPE ['NAME']`, `option NAME VALUE`,
//!   `list NAME VALUE` (libuci also accepts the one-letter forms p, c, o, l);
//! * a value is made of adjacent pieces: bare text, `'single quoted'` (no
//!   escapes), `"double quoted"` (backslash escapes the next character), so
//!   `'it'\''s'` (libuci's own way of writing a quote) reads as `it's`;
//! * quoted values may span lines and keep the line breaks; a backslash at
//!   the end of a line continues the statement on the next one;
//! * `#` starts a comment (also after a value), `;` ends a statement;
//! * a repeated `config TYPE 'NAME'` adds to the earlier section; a repeated
//!   option replaces its value; `list` appends.

use super::field::{quote as shorten, ConfigError};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

mod lexer;

pub(crate) use lexer::Lexer;
use lexer::{Statement, Word};

/// A parse error at a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UciError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for UciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl From<UciError> for ConfigError {
    fn from(e: UciError) -> ConfigError {
        ConfigError {
            path: format!("line {}", e.line),
            message: e.message,
        }
    }
}

/// " (line N)" after a UCI place, or nothing for line 0: sections handed
/// over as values (rpcd's `uci get`, for the ubus `validate` method) have
/// no file and so no lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line(pub usize);

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => Ok(()),
            n => write!(f, " (line {n})"),
        }
    }
}

/// An option's value: `option` gives one string, `list` several (each with
/// the line it came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UciValue {
    Single(String),
    List(Vec<(String, usize)>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UciOption {
    pub name: String,
    pub value: UciValue,
    /// Line of the last statement that set the option.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The section type: `config TYPE`.
    pub kind: String,
    /// None for an anonymous section.
    pub name: Option<String>,
    /// Position among the sections of the same type (for `@type[N]`).
    pub index: usize,
    pub line: usize,
    pub options: Vec<UciOption>,
}

impl Section {
    pub fn get(&self, name: &str) -> Option<&UciOption> {
        self.options.iter().find(|o| o.name == name)
    }

    /// How `uci` addresses the section: `vip 'web'` or `@check[1]`.
    pub(crate) fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{} '{n}'", self.kind),
            None => format!("@{}[{}]", self.kind, self.index),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UciFile {
    pub package: Option<String>,
    pub sections: Vec<Section>,
}

/// Longest package, section type, section name or option name, in bytes.
/// libuci has no limit, but pathosd's own names are at most
/// `validate::MAX_NAME_LEN` (64) and its option names are short words, so a
/// longer one is a mistake; the cap also keeps such names out of every
/// error path.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// libuci's uci_validate_name: option and section names.
fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// libuci's uci_validate_type also allows '-'.
fn valid_type(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The error for a name over MAX_NAME_LEN, if it is.
fn name_too_long(what: &str, s: &str) -> Option<String> {
    (s.len() > MAX_NAME_LEN)
        .then(|| format!("{what} {} is longer than {MAX_NAME_LEN} bytes", shorten(s)))
}

/// A statement read and checked: what it does, and the lines of its start
/// and of its command word (where libuci finds an option outside a section).
pub(crate) enum Cmd<'a> {
    Package(Cow<'a, str>),
    Config {
        kind: Cow<'a, str>,
        name: Option<Cow<'a, str>>,
    },
    Option {
        list: bool,
        name: Cow<'a, str>,
        value: Cow<'a, str>,
    },
}

pub(crate) struct Command<'a> {
    pub cmd: Cmd<'a>,
    /// The line the statement starts on: where the file shows it.
    pub line: usize,
    /// The line libuci reports for a problem with the command word, and
    /// for one with the whole statement.
    pub word_line: usize,
    pub end_line: usize,
}

/// The next statement of `lx`, checked as libuci checks it: the command,
/// its arguments and the names (at most MAX_NAME_LEN bytes here).
pub(crate) fn command<'a>(lx: &mut Lexer<'a>) -> Result<Option<Command<'a>>, UciError> {
    let Some(st) = lx.statement()? else {
        return Ok(None);
    };
    let Statement {
        start_line,
        words,
        end_line,
    } = st;
    let word_line = words[0].line;
    // A problem with the arguments is found at the last one read.
    let last_line = words.last().map_or(end_line, |w| w.line);
    let mut words = words.into_iter();
    let Some(first) = words.next() else {
        return Ok(None);
    };
    let args = Args {
        words: words.collect(),
        end_line,
        last_line,
    };
    let cmd = match first.text.as_ref() {
        "package" | "p" => {
            args.arity(1, 1, "package NAME")?;
            // libuci's package names may also hold '-'.
            name_err(
                &args.words[0],
                "package name",
                valid_type(&args.words[0].text),
                "",
            )?;
            Some(Cmd::Package(
                (args.words.into_iter())
                    .next()
                    .map_or(Cow::Borrowed(""), |w| w.text),
            ))
        }
        "config" | "c" => config(args)?,
        w @ ("option" | "o" | "list" | "l") => option(w.starts_with('l'), args)?,
        other => {
            return Err(UciError {
                line: word_line,
                message: format!(
                    "invalid command {} (expected package, config, option or list)",
                    shorten(other)
                ),
            })
        }
    };
    Ok(cmd.map(|cmd| Command {
        cmd,
        line: start_line,
        word_line,
        end_line: last_line,
    }))
}

/// A command's arguments, and the lines libuci reports for too few (the
/// statement's end) and too many (the last one read).
struct Args<'a> {
    words: Vec<Word<'a>>,
    end_line: usize,
    last_line: usize,
}

impl Args<'_> {
    fn arity(&self, min: usize, max: usize, usage: &str) -> Result<(), UciError> {
        if self.words.len() < min {
            Err(UciError {
                line: self.end_line,
                message: format!("missing arguments; expected {usage}"),
            })
        } else if self.words.len() > max {
            Err(UciError {
                line: self.last_line,
                message: format!("too many arguments; expected {usage}"),
            })
        } else {
            Ok(())
        }
    }
}

/// The error of a name `w` (a `what`) that is too long or not `valid`
/// (`rule` says what is).
fn name_err(w: &Word<'_>, what: &str, valid: bool, rule: &str) -> Result<(), UciError> {
    let message = match name_too_long(what, &w.text) {
        Some(m) => m,
        None if valid => return Ok(()),
        None => format!("invalid {what} {}{rule}", shorten(&w.text)),
    };
    Err(UciError {
        line: w.line,
        message,
    })
}

/// `config TYPE ['NAME']`.
fn config(args: Args<'_>) -> Result<Option<Cmd<'_>>, UciError> {
    args.arity(1, 2, "config TYPE ['NAME']")?;
    let mut words = args.words.into_iter();
    let (Some(kind), name) = (words.next(), words.next()) else {
        return Ok(None);
    };
    name_err(
        &kind,
        "section type",
        valid_type(&kind.text),
        " (letters, digits, '_' and '-' only)",
    )?;
    let name = name.filter(|n| !n.text.is_empty());
    if let Some(n) = &name {
        name_err(
            n,
            "section name",
            valid_name(&n.text),
            " (letters, digits and '_' only)",
        )?;
    }
    Ok(Some(Cmd::Config {
        kind: kind.text,
        name: name.map(|n| n.text),
    }))
}

/// `option NAME VALUE`, or with `list`, `list NAME VALUE`.
fn option(list: bool, args: Args<'_>) -> Result<Option<Cmd<'_>>, UciError> {
    args.arity(
        1,
        2,
        if list {
            "list NAME VALUE"
        } else {
            "option NAME VALUE"
        },
    )?;
    let mut words = args.words.into_iter();
    let (Some(name), value) = (words.next(), words.next()) else {
        return Ok(None);
    };
    name_err(
        &name,
        "option name",
        valid_name(&name.text),
        " (letters, digits and '_' only)",
    )?;
    Ok(Some(Cmd::Option {
        list,
        name: name.text,
        value: value.map_or(Cow::Borrowed(""), |v| v.text),
    }))
}

/// The error of an option or list before the first section.
pub(crate) fn outside_section(c: &Command<'_>) -> UciError {
    let list = matches!(c.cmd, Cmd::Option { list: true, .. });
    UciError {
        line: c.word_line,
        message: format!(
            "{} before the first config section",
            if list { "list" } else { "option" }
        ),
    }
}

/// The error of a named section whose type differs from an earlier one of
/// the same name.
pub(crate) fn overwrites(
    c: &Command<'_>,
    name: &str,
    kind: &str,
    earlier: &str,
    line: usize,
) -> UciError {
    UciError {
        line: c.end_line,
        message: format!(
            "section {} of type {} overwrites the earlier {} section of the same name (line {line})",
            shorten(name),
            shorten(kind),
            shorten(earlier),
        ),
    }
}

/// Parses a UCI file into sections and options (the whole file as values:
/// for tests, fuzzing and `uci export`-style writing; the loader reads the
/// text section by section instead, `uci_map`).
pub fn parse(text: &str) -> Result<UciFile, UciError> {
    let mut lx = Lexer::new(text);
    let mut file = UciFile::default();
    // Index into file.sections of the section options go to.
    let mut current: Option<usize> = None;
    // Indexes, so that a file of many sections or options (up to the 4 MiB
    // file limit) parses in linear time, not quadratic: section name →
    // index, sections per type, and (section, option name) → option index.
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut per_kind: HashMap<String, usize> = HashMap::new();
    let mut options: HashMap<(usize, String), usize> = HashMap::new();
    while let Some(c) = command(&mut lx)? {
        let line = c.line;
        match &c.cmd {
            Cmd::Package(p) => {
                file.package.get_or_insert_with(|| p.to_string());
                current = None;
            }
            Cmd::Config { kind, name } => {
                if let Some(n) = name {
                    if let Some(&i) = by_name.get(n.as_ref()) {
                        let earlier = &file.sections[i];
                        if earlier.kind != *kind {
                            return Err(overwrites(&c, n, kind, &earlier.kind, earlier.line));
                        }
                        current = Some(i);
                        continue;
                    }
                }
                let count = per_kind.entry(kind.to_string()).or_insert(0);
                let index = *count;
                *count += 1;
                if let Some(n) = name {
                    by_name.insert(n.to_string(), file.sections.len());
                }
                file.sections.push(Section {
                    kind: kind.to_string(),
                    name: name.as_ref().map(|n| n.to_string()),
                    index,
                    line,
                    options: Vec::new(),
                });
                current = Some(file.sections.len() - 1);
            }
            Cmd::Option { list, name, value } => {
                let Some((sec_i, sec)) = current.and_then(|i| Some((i, file.sections.get_mut(i)?)))
                else {
                    return Err(outside_section(&c));
                };
                let (is_list, value) = (*list, value.to_string());
                let key = (sec_i, name.to_string());
                match options.get(&key).and_then(|&k| sec.options.get_mut(k)) {
                    Some(o) => {
                        let old_line = std::mem::replace(&mut o.line, line);
                        if is_list {
                            // libuci turns an option into a list when a list
                            // statement names it, keeping the old value first.
                            let mut items =
                                match std::mem::replace(&mut o.value, UciValue::List(Vec::new())) {
                                    UciValue::Single(s) => vec![(s, old_line)],
                                    UciValue::List(l) => l,
                                };
                            items.push((value, line));
                            o.value = UciValue::List(items);
                        } else {
                            o.value = UciValue::Single(value);
                        }
                    }
                    None => {
                        options.insert(key, sec.options.len());
                        sec.options.push(UciOption {
                            name: name.to_string(),
                            value: if is_list {
                                UciValue::List(vec![(value, line)])
                            } else {
                                UciValue::Single(value)
                            },
                            line,
                        });
                    }
                }
            }
        }
    }
    Ok(file)
}

/// Sections handed over as values rather than text, as rpcd's
/// `uci get {"config": "pathosd"}` returns them (LuCI's uci.js holds the
/// same, staged changes included): `{NAME: {".type": T, ".name": NAME,
/// ".anonymous": bool, ".index": N, OPTION: "value" or ["item", …]}}`.
/// Sections come in `.index` order (a JSON object has none of its own);
/// there are no lines. `expand` is applied to every value, as `%{VAR}`
/// placeholders are expanded in a file's text. Names follow the same rules
/// as in a file.
pub fn from_values(
    values: &serde_json::Value,
    expand: &dyn Fn(&str) -> Result<String, ConfigError>,
) -> Result<UciFile, ConfigError> {
    use serde_json::Value;
    let fail = |message: String| ConfigError {
        path: String::new(),
        message,
    };
    let Value::Object(sections) = values else {
        return Err(fail(
            "the sections must be an object of sections by name (rpcd's uci get values)".into(),
        ));
    };
    let mut ordered: Vec<(u64, &String, &serde_json::Map<String, Value>)> = Vec::new();
    for (key, v) in sections {
        let Value::Object(sec) = v else {
            return Err(fail(format!("section {}: not an object", shorten(key))));
        };
        let index = sec
            .get(".index")
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        ordered.push((index, key, sec));
    }
    // Stable: sections without an index keep their key order, after the rest.
    ordered.sort_by_key(|(i, _, _)| *i);
    let mut file = UciFile::default();
    let mut per_kind: HashMap<String, usize> = HashMap::new();
    for (_, key, sec) in ordered {
        let kind = match sec.get(".type") {
            Some(Value::String(t)) if valid_type(t) && t.len() <= MAX_NAME_LEN => t.clone(),
            _ => return Err(fail(format!("section {}: no valid .type", shorten(key)))),
        };
        let anonymous = matches!(sec.get(".anonymous"), Some(Value::Bool(true)));
        let name = match sec.get(".name") {
            Some(Value::String(n)) => n,
            _ => key,
        };
        let named_well = valid_name(name) && name.len() <= MAX_NAME_LEN;
        if !anonymous && !named_well {
            return Err(fail(format!(
                "section {}: invalid section name",
                shorten(name)
            )));
        }
        let counter = per_kind.entry(kind.clone()).or_insert(0);
        let index = *counter;
        *counter += 1;
        let mut section = Section {
            kind,
            name: (!anonymous).then(|| name.clone()),
            index,
            line: 0,
            options: Vec::new(),
        };
        for (opt, v) in sec.iter().filter(|(k, _)| !k.starts_with('.')) {
            if !(valid_name(opt) && opt.len() <= MAX_NAME_LEN) {
                return Err(fail(format!(
                    "{} option {}: invalid option name",
                    section.label(),
                    shorten(opt)
                )));
            }
            let not_text = || {
                fail(format!(
                    "{} option {opt}: not a string or a list of strings",
                    section.label()
                ))
            };
            let value = match v {
                Value::String(t) => UciValue::Single(expand(t)?),
                Value::Array(items) => UciValue::List(
                    items
                        .iter()
                        .map(|i| match i {
                            Value::String(t) => Ok((expand(t)?, 0)),
                            _ => Err(not_text()),
                        })
                        .collect::<Result<_, _>>()?,
                ),
                _ => return Err(not_text()),
            };
            section.options.push(UciOption {
                name: opt.clone(),
                value,
                line: 0,
            });
        }
        file.sections.push(section);
    }
    Ok(file)
}

/// Writes a value the way libuci's exporter does: single quotes, with `'`
/// as `'\''`.
pub fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// Serializes a file as `uci export` would (used by tests and fuzzing to
/// check that parse and write agree).
pub fn export(file: &UciFile) -> String {
    let mut out = String::new();
    if let Some(p) = &file.package {
        out.push_str(&format!("package {p}\n\n"));
    }
    for s in &file.sections {
        match &s.name {
            Some(n) => out.push_str(&format!("config {} {}\n", s.kind, quote(n))),
            None => out.push_str(&format!("config {}\n", s.kind)),
        }
        for o in &s.options {
            match &o.value {
                UciValue::Single(v) => out.push_str(&format!("\toption {} {}\n", o.name, quote(v))),
                UciValue::List(items) => {
                    for (v, _) in items {
                        out.push_str(&format!("\tlist {} {}\n", o.name, quote(v)));
                    }
                }
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(f: &UciFile, sec: usize, opt: &str) -> String {
        match &f.sections[sec].get(opt).unwrap().value {
            UciValue::Single(s) => s.clone(),
            v => panic!("{opt} is {v:?}"),
        }
    }

    fn list(f: &UciFile, sec: usize, opt: &str) -> Vec<String> {
        match &f.sections[sec].get(opt).unwrap().value {
            UciValue::List(l) => l.iter().map(|(s, _)| s.clone()).collect(),
            v => panic!("{opt} is {v:?}"),
        }
    }

    #[test]
    fn statements_quotes_and_comments() {
        let f = parse(
            "package pathosd\n\
             \n\
             # a comment\n\
             config vip 'web' # trailing comment\n\
             \toption prefix '192.0.2.1/32'\n\
             \toption bare value\n\
             \toption dq \"a \\\"b\\\" \\\\ c\"\n\
             \toption sq 'it'\\''s'\n\
             \toption mixed pre'single'\"double\"post\n\
             \toption empty ''\n\
             \toption hash 'a # not a comment'\n\
             \toption cut a#comment\n\
             \tlist community '65001:1'\n\
             \tlist community \"65001:2\"\n\
             config check; option vip web; option type tcp\n\
             config check\n\
             \toption vip 'web'\n",
        )
        .unwrap();
        assert_eq!(f.package.as_deref(), Some("pathosd"));
        assert_eq!(f.sections.len(), 3);
        let s = &f.sections[0];
        assert_eq!(
            (s.kind.as_str(), s.name.as_deref(), s.line),
            ("vip", Some("web"), 4)
        );
        assert_eq!(single(&f, 0, "prefix"), "192.0.2.1/32");
        assert_eq!(single(&f, 0, "bare"), "value");
        assert_eq!(single(&f, 0, "dq"), "a \"b\" \\ c");
        assert_eq!(single(&f, 0, "sq"), "it's");
        assert_eq!(single(&f, 0, "mixed"), "presingledoublepost");
        assert_eq!(single(&f, 0, "empty"), "");
        assert_eq!(single(&f, 0, "hash"), "a # not a comment");
        assert_eq!(single(&f, 0, "cut"), "a");
        assert_eq!(list(&f, 0, "community"), vec!["65001:1", "65001:2"]);
        assert_eq!(s.get("community").unwrap().line, 14);
        assert_eq!(f.sections[1].name, None);
        assert_eq!(f.sections[1].label(), "@check[0]");
        assert_eq!(f.sections[2].label(), "@check[1]");
        assert_eq!(single(&f, 1, "type"), "tcp");
        assert_eq!(f.sections[2].get("vip").unwrap().line, 17);
    }

    /// As `uci show` of the real libuci (openwrt/uci 66127cd) reads them:
    /// a continuation joins the lines inside a word.
    #[test]
    fn multi_line_values_and_continuations() {
        let f = parse(
            "config check 'x'\n\
             \toption script 'line one\n\
             line two'\n\
             \toption dq \"a\\\n\
             b\"\n\
             \toption c1 a\\\n\
             b\n\
             \toption c2 'a'\\\n\
             'b'\n\
             \toption c3 \\\n\
             b\n\
             \toption crlf 'v'\r\n\
             \toption after 'ok'\n",
        )
        .unwrap();
        assert_eq!(single(&f, 0, "script"), "line one\nline two");
        assert_eq!(single(&f, 0, "dq"), "ab");
        assert_eq!(single(&f, 0, "c1"), "ab");
        assert_eq!(single(&f, 0, "c2"), "ab");
        assert_eq!(single(&f, 0, "c3"), "b");
        assert_eq!(single(&f, 0, "crlf"), "v");
        assert_eq!(f.sections[0].get("after").unwrap().line, 13);
    }

    #[test]
    fn merging_and_list_conversion() {
        let f = parse(
            "config vip 'a'\n option x 1\n option y 1\nconfig vip 'b'\nconfig vip 'a'\n option x 2\n list y 2\n option z 1\n list z 2\n option z 3\n",
        )
        .unwrap();
        assert_eq!(f.sections.len(), 2);
        assert_eq!(single(&f, 0, "x"), "2");
        assert_eq!(list(&f, 0, "y"), vec!["1", "2"]);
        assert_eq!(single(&f, 0, "z"), "3");
    }

    #[test]
    fn one_letter_keywords() {
        let f = parse("p pathosd\nc vip 'a'\no x 1\nl y 2\n").unwrap();
        assert_eq!(single(&f, 0, "x"), "1");
        assert_eq!(list(&f, 0, "y"), vec!["2"]);
    }

    /// Each file's error is at the line the real `uci` (libuci at openwrt/uci
    /// 66127cd, `uci -c DIR show FILE`) reports for it, shown after each
    /// case: the lines libuci has read when it finds the problem. That is
    /// the end of a statement spanning lines, the end of the file for an
    /// unterminated quote, and one less on a last line without a newline.
    /// The wording is pathosd's.
    #[test]
    fn errors_are_at_the_lines_uci_reports() {
        let cases: &[(&str, &str)] = &[
            // (invalid command) at line 2
            ("config vip 'a'\nopshun x 1\n", "line 2: invalid command \"opshun\" (expected package, config, option or list)"),
            // (invalid command) at line 1: no newline at the end
            ("config vip 'a'\nopshun x 1", "line 1: invalid command \"opshun\" (expected package, config, option or list)"),
            // (invalid command) at line 0
            ("opshun", "line 0: invalid command \"opshun\" (expected package, config, option or list)"),
            // (EOF with unterminated ') at line 4
            ("config vip 'a'\n\toption x 'open\n\nmore\n", "line 4: unterminated ' quote"),
            // (EOF with unterminated ') at line 3
            ("config vip 'a'\n\toption x 'open\n\nmore", "line 3: unterminated ' quote"),
            // (EOF with unterminated ") at line 2
            ("config vip 'a'\n\toption x \"open\n", "line 2: unterminated \" quote"),
            // (too many arguments) at line 2
            ("config vip 'a'\noption x 1 2\n", "line 2: too many arguments; expected option NAME VALUE"),
            // (too many arguments) at line 3
            ("config vip 'a'\noption x 'a\nb' 2\n", "line 3: too many arguments; expected option NAME VALUE"),
            // (too many arguments) at line 4
            ("config vip 'a'\n\toption x 'a\nb\nc' 'd'\n", "line 4: too many arguments; expected option NAME VALUE"),
            // (invalid command) at line 4
            ("config vip 'a'\noption x 'a\nb'\nopshun\n", "line 4: invalid command \"opshun\" (expected package, config, option or list)"),
            // (too many arguments) at line 1
            ("config vip 'a'; option x 1 2; option y 2\n", "line 1: too many arguments; expected option NAME VALUE"),
            // (too many arguments) at line 3: the continuation ends the
            // value, so 'continued' is one argument too many
            ("config vip 'a'\n\toption cont \\\n\t'continued'\n", "line 3: too many arguments; expected option NAME VALUE"),
            // (invalid command) at line 2
            ("config vip 'a'\n\\\n\toption x 1\n", "line 2: invalid command \"\\\" (expected package, config, option or list)"),
            // (invalid command) at line 1: libuci's command word is
            // "config\n"; pathosd names the missing argument
            ("config\n", "line 1: missing arguments; expected config TYPE ['NAME']"),
            // (invalid character in name field) at line 1
            ("config vip 'web-1'\n", "line 1: invalid section name \"web-1\" (letters, digits and '_' only)"),
            // (invalid character in name field) at line 2
            ("config vip 'a'\noption 'x-y' 1\n", "line 2: invalid option name \"x-y\" (letters, digits and '_' only)"),
            // (invalid character in type field) at line 1
            ("config 'vi p' 'a'\n", "line 1: invalid section type \"vi p\" (letters, digits, '_' and '-' only)"),
            // (too many arguments) at line 1
            ("config vip 'a' 'b'\n", "line 1: too many arguments; expected config TYPE ['NAME']"),
            // (section of different type overwrites prior section with
            // same name) at line 2
            ("config vip 'a'\nconfig check 'a'\n", "line 2: section \"a\" of type \"check\" overwrites the earlier \"vip\" section of the same name (line 1)"),
            // (option/list command found before the first section) at line 1
            ("option x 1\n", "line 1: option before the first config section"),
            // (option/list command found before the first section) at line 3
            ("\n\noption x 1\n", "line 3: option before the first config section"),
            // (invalid command) at line 3
            ("config vip 'a'\noption x 1 # c\nopt x\n", "line 3: invalid command \"opt\" (expected package, config, option or list)"),
            // (invalid command) at line 2
            ("config vip 'a'\r\nopshun x 1\r\n", "line 2: invalid command \"opshun\" (expected package, config, option or list)"),
            // (too many arguments) at line 2: the comment ends line 1
            ("config vip a#b\noption x 1 2\n", "line 2: too many arguments; expected option NAME VALUE"),
        ];
        for (text, want) in cases {
            assert_eq!(&parse(text).unwrap_err().to_string(), want, "{text:?}");
        }
        // What libuci accepts reads as it does: a package name may hold '-'
        // (the real uci shows nothing for `package 'a-b'`).
        assert_eq!(
            parse("package 'a-b'\n").unwrap().package.as_deref(),
            Some("a-b")
        );
    }

    #[test]
    fn export_round_trips() {
        let src = "package pathosd\n\nconfig vip 'web'\n\toption a 'it'\\''s \"q\" \\ #x'\n\tlist b 'l1\nl2'\n\tlist b ''\n\nconfig check\n\toption vip 'web'\n\n";
        let f = parse(src).unwrap();
        assert_eq!(export(&f), src);
        assert_eq!(parse(&export(&f)).unwrap(), f);
    }

    proptest::proptest! {
        /// Whatever a value holds, libuci-style quoting reads back the same.
        #[test]
        fn quoted_values_read_back(v in "\\PC*", w in "[ -~\n\t]*") {
            let src = format!("config vip 'a'\n\toption x {}\n\tlist y {}\n", quote(&v), quote(&w));
            let f = parse(&src).unwrap();
            proptest::prop_assert_eq!(single(&f, 0, "x"), v);
            proptest::prop_assert_eq!(list(&f, 0, "y"), vec![w]);
        }
    }
}
