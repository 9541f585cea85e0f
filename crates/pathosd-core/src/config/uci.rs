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
use std::collections::HashMap;
use std::fmt;

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

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
}

fn inline_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\x0b' | '\x0c')
}

impl Lexer<'_> {
    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next();
        if c == Some('\n') {
            self.line += 1;
        }
        c
    }

    /// Consumes `\` + line break (also `\r\n`) if that is what follows the
    /// backslash; returns whether it did.
    fn continuation(&mut self) -> bool {
        match self.chars.peek() {
            Some('\n') => {
                self.bump();
                true
            }
            Some('\r') => {
                let mut ahead = self.chars.clone();
                ahead.next();
                if ahead.peek() == Some(&'\n') {
                    self.bump();
                    self.bump();
                    true
                } else {
                    false
                }
            }
            _ => false,
        }
    }

    /// The next statement's words and the line it starts on; None at the end.
    fn statement(&mut self) -> Result<Option<(usize, Vec<String>)>, UciError> {
        let mut words: Vec<String> = Vec::new();
        let mut start = self.line;
        loop {
            match self.chars.peek().copied() {
                None => {
                    return Ok((!words.is_empty()).then_some((start, words)));
                }
                Some('\n') | Some(';') => {
                    self.bump();
                    if !words.is_empty() {
                        return Ok(Some((start, words)));
                    }
                }
                Some('#') => {
                    while self.chars.peek().is_some_and(|c| *c != '\n') {
                        self.bump();
                    }
                }
                Some(c) if inline_space(c) => {
                    self.bump();
                }
                Some('\\') => {
                    // A continuation between words is just space.
                    let mut ahead = self.chars.clone();
                    ahead.next();
                    if matches!(ahead.peek(), Some('\n') | Some('\r')) {
                        self.bump();
                        if self.continuation() {
                            continue;
                        }
                        // A lone `\` before `\r` that is not a line break:
                        // it escapes the `\r`.
                        let mut w = String::new();
                        if let Some(c) = self.bump() {
                            w.push(c);
                        }
                        self.word_into(&mut w)?;
                        if words.is_empty() {
                            start = self.line;
                        }
                        words.push(w);
                    } else {
                        if words.is_empty() {
                            start = self.line;
                        }
                        let mut w = String::new();
                        self.word_into(&mut w)?;
                        words.push(w);
                    }
                }
                Some(_) => {
                    if words.is_empty() {
                        start = self.line;
                    }
                    let mut w = String::new();
                    self.word_into(&mut w)?;
                    words.push(w);
                }
            }
        }
    }

    /// Reads adjacent pieces into `w` until space, `;`, `#` or the line ends.
    fn word_into(&mut self, w: &mut String) -> Result<(), UciError> {
        loop {
            match self.chars.peek().copied() {
                None | Some('\n') | Some(';') | Some('#') => return Ok(()),
                Some(c) if inline_space(c) => return Ok(()),
                Some(q @ ('\'' | '"')) => self.quoted_into(q, w)?,
                Some('\\') => {
                    self.bump();
                    if self.continuation() {
                        continue;
                    }
                    if let Some(c) = self.bump() {
                        w.push(c);
                    }
                }
                Some(c) => {
                    self.bump();
                    w.push(c);
                }
            }
        }
    }

    /// Reads one quoted piece, from the opening quote `q` to its match, into
    /// `w`. Single quotes take everything literally; inside double quotes a
    /// backslash escapes the next character or joins a continued line.
    fn quoted_into(&mut self, q: char, w: &mut String) -> Result<(), UciError> {
        let open = self.line;
        let unterminated = || UciError {
            line: open,
            message: format!("unterminated {q} quote"),
        };
        self.bump();
        loop {
            match self.bump().ok_or_else(unterminated)? {
                c if c == q => return Ok(()),
                '\\' if q == '"' => {
                    if self.continuation() {
                        continue;
                    }
                    w.push(self.bump().ok_or_else(unterminated)?);
                }
                c => w.push(c),
            }
        }
    }
}

/// Parses a UCI file.
pub fn parse(text: &str) -> Result<UciFile, UciError> {
    let mut lx = Lexer {
        chars: text.chars().peekable(),
        line: 1,
    };
    let mut file = UciFile::default();
    // Index into file.sections of the section options go to.
    let mut current: Option<usize> = None;
    // Indexes, so that a file of many sections or options (up to the 4 MiB
    // file limit) parses in linear time, not quadratic: section name →
    // index, sections per type, and (section, option name) → option index.
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut per_kind: HashMap<String, usize> = HashMap::new();
    let mut options: HashMap<(usize, String), usize> = HashMap::new();
    while let Some((line, words)) = lx.statement()? {
        let err = |message: String| UciError { line, message };
        let args = &words[1..];
        let arity = |min: usize, max: usize, usage: &str| {
            if args.len() < min || args.len() > max {
                Err(err(format!(
                    "{} arguments; expected {usage}",
                    if args.len() < min {
                        "missing"
                    } else {
                        "too many"
                    }
                )))
            } else {
                Ok(())
            }
        };
        match words[0].as_str() {
            "package" | "p" => {
                arity(1, 1, "package NAME")?;
                if let Some(m) = name_too_long("package name", &args[0]) {
                    return Err(err(m));
                }
                if !valid_name(&args[0]) {
                    return Err(err(format!("invalid package name {}", shorten(&args[0]))));
                }
                file.package.get_or_insert_with(|| args[0].clone());
                current = None;
            }
            "config" | "c" => {
                arity(1, 2, "config TYPE ['NAME']")?;
                let kind = &args[0];
                if let Some(m) = name_too_long("section type", kind) {
                    return Err(err(m));
                }
                if !valid_type(kind) {
                    return Err(err(format!(
                        "invalid section type {} (letters, digits, '_' and '-' only)",
                        shorten(kind)
                    )));
                }
                let name = args.get(1).filter(|n| !n.is_empty()).cloned();
                if let Some(n) = &name {
                    if let Some(m) = name_too_long("section name", n) {
                        return Err(err(m));
                    }
                    if !valid_name(n) {
                        return Err(err(format!(
                            "invalid section name {} (letters, digits and '_' only)",
                            shorten(n)
                        )));
                    }
                    if let Some(&i) = by_name.get(n) {
                        if file.sections[i].kind != *kind {
                            return Err(err(format!(
                                "section {} of type {} overwrites the earlier {} section of the same name (line {})",
                                shorten(n), shorten(kind), shorten(&file.sections[i].kind), file.sections[i].line
                            )));
                        }
                        current = Some(i);
                        continue;
                    }
                }
                let count = per_kind.entry(kind.clone()).or_insert(0);
                let index = *count;
                *count += 1;
                if let Some(n) = &name {
                    by_name.insert(n.clone(), file.sections.len());
                }
                file.sections.push(Section {
                    kind: kind.clone(),
                    name,
                    index,
                    line,
                    options: Vec::new(),
                });
                current = Some(file.sections.len() - 1);
            }
            w @ ("option" | "o" | "list" | "l") => {
                let is_list = w.starts_with('l');
                arity(
                    1,
                    2,
                    if is_list {
                        "list NAME VALUE"
                    } else {
                        "option NAME VALUE"
                    },
                )?;
                let Some((sec_i, sec)) = current.and_then(|i| Some((i, file.sections.get_mut(i)?)))
                else {
                    return Err(err(format!(
                        "{} before the first config section",
                        if is_list { "list" } else { "option" }
                    )));
                };
                let name = &args[0];
                if let Some(m) = name_too_long("option name", name) {
                    return Err(err(m));
                }
                if !valid_name(name) {
                    return Err(err(format!(
                        "invalid option name {} (letters, digits and '_' only)",
                        shorten(name)
                    )));
                }
                let value = args.get(1).cloned().unwrap_or_default();
                let key = (sec_i, name.clone());
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
                            name: name.clone(),
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
            other => {
                return Err(err(format!(
                    "invalid command {} (expected package, config, option or list)",
                    shorten(other)
                )))
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

    #[test]
    fn multi_line_values_and_continuations() {
        let f = parse(
            "config check 'x'\n\
             \toption script 'line one\n\
             line two'\n\
             \toption dq \"a\\\n\
             b\"\n\
             \toption cont \\\n\
             \t'continued'\n\
             \toption crlf 'v'\r\n\
             \toption after 'ok'\n",
        )
        .unwrap();
        assert_eq!(single(&f, 0, "script"), "line one\nline two");
        assert_eq!(single(&f, 0, "dq"), "ab");
        assert_eq!(single(&f, 0, "cont"), "continued");
        assert_eq!(single(&f, 0, "crlf"), "v");
        assert_eq!(f.sections[0].get("after").unwrap().line, 9);
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

    #[test]
    fn errors_have_lines() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("option x 1\n"),
            "line 1: option before the first config section"
        );
        assert_eq!(
            e("config vip 'a'\n\noption x 'open\n\n"),
            "line 3: unterminated ' quote"
        );
        assert_eq!(
            e("config vip 'a'\noption x \"open\n"),
            "line 2: unterminated \" quote"
        );
        assert_eq!(
            e("config vip 'a'\nopshun x 1\n"),
            "line 2: invalid command \"opshun\" (expected package, config, option or list)"
        );
        assert_eq!(
            e("config vip 'a'\noption x 1 2\n"),
            "line 2: too many arguments; expected option NAME VALUE"
        );
        assert_eq!(
            e("config\n"),
            "line 1: missing arguments; expected config TYPE ['NAME']"
        );
        assert_eq!(
            e("config vip 'web-1'\n"),
            "line 1: invalid section name \"web-1\" (letters, digits and '_' only)"
        );
        assert_eq!(
            e("config vip 'a'\noption 'x-y' 1\n"),
            "line 2: invalid option name \"x-y\" (letters, digits and '_' only)"
        );
        assert_eq!(e("config vip 'a'\nconfig check 'a'\n"),
            "line 2: section \"a\" of type \"check\" overwrites the earlier \"vip\" section of the same name (line 1)");
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
