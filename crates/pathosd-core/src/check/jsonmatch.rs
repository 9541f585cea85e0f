//! `response_jq`: a small, documented subset of jq, evaluated over the
//! response body parsed with serde_json (already a dependency, so this costs
//! a few KiB instead of a jq engine's hundreds).
//!
//! ```text
//! expr    := and ("or" and)*
//! and     := term ("and" term)*
//! term    := path [op literal] | "not" term | "(" expr ")"
//! path    := "." | ("." ident | "." string | "[" int "]" | "[" string "]")+
//! op      := "==" | "!=" | ">=" | ">" | "<=" | "<"
//! literal := JSON number, string, true, false or null
//! ```
//!
//! A missing key or index yields null, as in jq. Like pathosd, the check
//! passes only when the expression's value is the boolean `true`: a bare
//! path such as `.ready` passes only if it is `true`. `and`, `or` and `not`
//! use jq truthiness (false and null are false). Numbers compare as numbers;
//! `<`-style operators on two strings compare them bytewise; any other
//! ordering comparison is false.
//!
//! Limits (an expression comes from the config file, so a hostile or broken
//! file must get an error, never a stack overflow): at most
//! [`MAX_LEN`] bytes, [`MAX_TERMS`] paths or comparisons, and [`MAX_DEPTH`]
//! levels of `(` and `not` nesting. The parser recurses once per nesting
//! level and checks the level before recursing. The tree it builds is at
//! most `MAX_TERMS + MAX_DEPTH` deep (fewer than MAX_TERMS `and`/`or` nodes,
//! and at most MAX_DEPTH `not`s on any path), which bounds the derived
//! Clone, PartialEq and Drop; evaluation uses an explicit stack.

use serde_json::Value;

/// Longest expression accepted, in bytes.
pub const MAX_LEN: usize = 4096;
/// Most paths and comparisons in one expression.
pub(crate) const MAX_TERMS: usize = 256;
/// Deepest nesting of `(` and `not`.
pub(crate) const MAX_DEPTH: usize = 64;

/// A parsed response_jq expression.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonExpr {
    Path(Vec<Seg>),
    Cmp(Vec<Seg>, Op, Value),
    Not(Box<JsonExpr>),
    And(Box<JsonExpr>, Box<JsonExpr>),
    Or(Box<JsonExpr>, Box<JsonExpr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Key(String),
    Index(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Ge,
    Gt,
    Le,
    Lt,
}

/// Parses an expression; the error names the position and what was expected.
pub fn parse(src: &str) -> Result<JsonExpr, String> {
    if src.len() > MAX_LEN {
        return Err(format!(
            "response_jq: longer than {MAX_LEN} bytes ({} bytes)",
            src.len()
        ));
    }
    let mut p = Parser {
        s: src,
        pos: 0,
        terms: 0,
    };
    let e = p.or(0)?;
    p.ws();
    if p.pos < p.s.len() {
        return Err(p.err("end of expression"));
    }
    Ok(e)
}

/// Evaluates against a JSON document: true only if the value is `true`.
pub fn matches(e: &JsonExpr, doc: &Value) -> Result<(), String> {
    match eval(e, doc) {
        Value::Bool(true) => Ok(()),
        // The value may be a whole 1 MiB response (`.`): quote a prefix.
        v => Err(format!(
            "jq expression is not true: {}",
            crate::config::field::show(v)
        )),
    }
}

fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Null | Value::Bool(false))
}

fn lookup<'a>(doc: &'a Value, path: &[Seg]) -> &'a Value {
    let mut v = doc;
    for s in path {
        let next = match (s, v) {
            (Seg::Key(k), Value::Object(m)) => m.get(k),
            (Seg::Index(i), Value::Array(a)) => {
                // Negative indexes count from the end, as in jq.
                let idx = if *i < 0 {
                    i64::try_from(a.len()).ok().and_then(|n| n.checked_add(*i))
                } else {
                    Some(*i)
                };
                idx.and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| a.get(i))
            }
            _ => None,
        };
        match next {
            Some(n) => v = n,
            None => return &Value::Null,
        }
    }
    v
}

fn compare(a: &Value, op: Op, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => None,
        },
        (Value::String(x), Value::String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    };
    match op {
        Op::Eq => ord.map_or(a == b, |o| o == Ordering::Equal),
        Op::Ne => ord.map_or(a != b, |o| o != Ordering::Equal),
        Op::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
        Op::Gt => ord == Some(Ordering::Greater),
        Op::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        Op::Lt => ord == Some(Ordering::Less),
    }
}

/// One step of the explicit-stack evaluation.
enum Step<'e> {
    Visit(&'e JsonExpr),
    Not,
    And,
    Or,
}

const TRUE: &Value = &Value::Bool(true);
const FALSE: &Value = &Value::Bool(false);

fn boolean(b: bool) -> &'static Value {
    if b {
        TRUE
    } else {
        FALSE
    }
}

/// Post-order evaluation with explicit stacks, so no input (nor a tree built
/// by hand, deeper than the parser allows) can exhaust the thread's stack.
/// Both operands of `and`/`or` are evaluated: evaluation has no effects, so
/// the result is the same as jq's short circuit.
fn eval<'d>(e: &JsonExpr, doc: &'d Value) -> &'d Value {
    let mut work = vec![Step::Visit(e)];
    let mut vals: Vec<&'d Value> = Vec::new();
    while let Some(step) = work.pop() {
        match step {
            Step::Visit(JsonExpr::Path(p)) => vals.push(lookup(doc, p)),
            Step::Visit(JsonExpr::Cmp(p, op, lit)) => {
                vals.push(boolean(compare(lookup(doc, p), *op, lit)))
            }
            Step::Visit(JsonExpr::Not(x)) => {
                work.push(Step::Not);
                work.push(Step::Visit(x));
            }
            Step::Visit(JsonExpr::And(a, b)) => {
                work.push(Step::And);
                work.push(Step::Visit(b));
                work.push(Step::Visit(a));
            }
            Step::Visit(JsonExpr::Or(a, b)) => {
                work.push(Step::Or);
                work.push(Step::Visit(b));
                work.push(Step::Visit(a));
            }
            Step::Not => {
                let v = vals.pop().unwrap_or(&Value::Null);
                vals.push(boolean(!truthy(v)));
            }
            Step::And | Step::Or => {
                let b = truthy(vals.pop().unwrap_or(&Value::Null));
                let a = truthy(vals.pop().unwrap_or(&Value::Null));
                let r = if matches!(step, Step::And) {
                    a && b
                } else {
                    a || b
                };
                vals.push(boolean(r));
            }
        }
    }
    vals.pop().unwrap_or(&Value::Null)
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    /// Paths and comparisons read so far.
    terms: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.pos..]
    }
    fn ws(&mut self) {
        let t = self.rest().trim_start();
        self.pos = self.s.len() - t.len();
    }
    fn err(&self, want: &str) -> String {
        format!("response_jq: expected {want} at offset {}", self.pos)
    }
    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.rest().starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }
    fn keyword(&mut self, kw: &str) -> bool {
        self.ws();
        let r = self.rest();
        let after = r.get(kw.len()..).and_then(|t| t.chars().next());
        if r.starts_with(kw) && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }
    /// `depth` is the number of `(` and `not` around this point; the
    /// recursion below goes one level deeper only after checking it.
    fn or(&mut self, depth: usize) -> Result<JsonExpr, String> {
        let mut e = self.and(depth)?;
        while self.keyword("or") {
            e = JsonExpr::Or(Box::new(e), Box::new(self.and(depth)?));
        }
        Ok(e)
    }
    fn and(&mut self, depth: usize) -> Result<JsonExpr, String> {
        let mut e = self.term(depth)?;
        while self.keyword("and") {
            e = JsonExpr::And(Box::new(e), Box::new(self.term(depth)?));
        }
        Ok(e)
    }
    fn deeper(&self, depth: usize) -> Result<usize, String> {
        if depth >= MAX_DEPTH {
            return Err(format!(
                "response_jq: nesting of \"(\" and not deeper than {MAX_DEPTH} at offset {}",
                self.pos
            ));
        }
        Ok(depth + 1)
    }
    fn term(&mut self, depth: usize) -> Result<JsonExpr, String> {
        if self.keyword("not") {
            let d = self.deeper(depth)?;
            return Ok(JsonExpr::Not(Box::new(self.term(d)?)));
        }
        if self.eat("(") {
            let d = self.deeper(depth)?;
            let e = self.or(d)?;
            if !self.eat(")") {
                return Err(self.err("\")\""));
            }
            return Ok(e);
        }
        self.ws();
        if self.terms >= MAX_TERMS {
            return Err(format!(
                "response_jq: more than {MAX_TERMS} paths and comparisons at offset {}",
                self.pos
            ));
        }
        self.terms += 1;
        let path = self.path()?;
        let ops = [
            ("==", Op::Eq),
            ("!=", Op::Ne),
            (">=", Op::Ge),
            ("<=", Op::Le),
            (">", Op::Gt),
            ("<", Op::Lt),
        ];
        for (tok, op) in ops {
            if self.eat(tok) {
                return Ok(JsonExpr::Cmp(path, op, self.literal()?));
            }
        }
        Ok(JsonExpr::Path(path))
    }
    fn path(&mut self) -> Result<Vec<Seg>, String> {
        self.ws();
        if !self.rest().starts_with('.') && !self.rest().starts_with('[') {
            return Err(self.err("a path such as .status"));
        }
        let mut segs = Vec::new();
        loop {
            let r = self.rest();
            if r.starts_with("[") {
                self.pos += 1;
                self.ws();
                if self.rest().starts_with('"') {
                    segs.push(Seg::Key(self.string()?));
                } else {
                    let digits = self
                        .rest()
                        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                        .unwrap_or(self.rest().len());
                    let n: i64 = self.rest()[..digits]
                        .parse()
                        .map_err(|_| self.err("an array index"))?;
                    self.pos += digits;
                    segs.push(Seg::Index(n));
                }
                if !self.eat("]") {
                    return Err(self.err("\"]\""));
                }
            } else if let Some(after) = r.strip_prefix('.') {
                if after.starts_with('"') {
                    self.pos += 1;
                    segs.push(Seg::Key(self.string()?));
                } else {
                    let n = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    if n == 0 {
                        // "." alone is the identity; ".[0]" continues.
                        self.pos += 1;
                        if (!segs.is_empty() && !self.rest().starts_with('['))
                            || self.rest().starts_with('.')
                        {
                            return Err(self.err("a key after \".\""));
                        }
                        continue;
                    }
                    segs.push(Seg::Key(after[..n].to_string()));
                    self.pos += 1 + n;
                }
            } else {
                return Ok(segs);
            }
        }
    }
    fn string(&mut self) -> Result<String, String> {
        match self.literal()? {
            Value::String(s) => Ok(s),
            _ => Err(self.err("a string")),
        }
    }
    fn literal(&mut self) -> Result<Value, String> {
        self.ws();
        // serde_json reads exactly one value from the front of the input.
        // from_slice: the one JSON reader on flash (config::load).
        let mut it =
            serde_json::Deserializer::from_slice(self.rest().as_bytes()).into_iter::<Value>();
        match it.next() {
            Some(Ok(v)) if !v.is_object() && !v.is_array() => {
                self.pos += it.byte_offset();
                Ok(v)
            }
            _ => Err(self.err("a JSON literal (number, string, true, false or null)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(e: &str, doc: &Value) -> bool {
        matches(&parse(e).unwrap(), doc).is_ok()
    }

    #[test]
    fn subset() {
        let d = json!({"status": "ok", "ready": true, "count": 3, "items": [{"name": "a"}, {"name": "b"}],
                       "weird key": 1, "nested": {"x": null}, "s": "yes"});
        assert!(check(".ready", &d));
        assert!(check(".ready == true", &d));
        assert!(check(".status == \"ok\"", &d));
        assert!(check(".count >= 3", &d));
        assert!(check(".count > 2.5", &d));
        assert!(!check(".count > 3", &d));
        assert!(check(".count != 4", &d));
        assert!(check(".items[1].name == \"b\"", &d));
        assert!(check(".items[-1].name == \"b\"", &d));
        assert!(check(".[\"weird key\"] == 1", &d));
        assert!(check(".\"weird key\" == 1", &d));
        assert!(check(".missing == null", &d));
        assert!(check(".nested.x == null", &d));
        assert!(check(".ready and .count < 10", &d));
        assert!(check(".missing or .ready", &d));
        assert!(check("not .missing", &d));
        assert!(check("(.missing or .ready) and .s == \"yes\"", &d));
        // A bare non-boolean path is not `true`.
        assert!(!check(".status", &d));
        assert_eq!(
            matches(&parse(".status").unwrap(), &d).unwrap_err(),
            "jq expression is not true: \"ok\""
        );
        assert!(!check(".status > 1", &d));
        assert!(check(".[0] == 1", &json!([1])));
        assert!(check(". == 5", &json!(5)));
    }

    #[test]
    fn a_large_false_value_is_quoted_by_a_prefix() {
        let doc = json!({"big": "x".repeat(100_000)});
        assert_eq!(
            matches(&parse(".big").unwrap(), &doc).unwrap_err(),
            format!(
                "jq expression is not true: \"{}\"… (100000 bytes)",
                "x".repeat(64)
            )
        );
        let e = matches(&parse(".").unwrap(), &doc).unwrap_err();
        assert!(e.ends_with("… (100010 bytes)"), "{e}");
    }

    #[test]
    fn parse_errors() {
        for bad in [
            "", "status", ".a ==", ".a == {}", ".a[", ".a and", "(.a", ".a b", "..a",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(
            parse(".a == ").unwrap_err(),
            "response_jq: expected a JSON literal (number, string, true, false or null) at offset 6"
        );
    }

    /// The deepest and longest expressions the limits allow, built the way
    /// that gives the deepest tree (a left-leaning `and` chain whose first
    /// term carries the most `not`s).
    fn worst_case() -> String {
        let mut e = "not ".repeat(MAX_DEPTH - 1) + "(.a)";
        e.push_str(&" and .a".repeat(MAX_TERMS - 1));
        e
    }

    #[test]
    fn nesting_at_and_past_the_limit() {
        let parens = |n: usize| "(".repeat(n) + ".a" + &")".repeat(n);
        assert!(parse(&parens(MAX_DEPTH)).is_ok());
        assert_eq!(
            parse(&parens(MAX_DEPTH + 1)).unwrap_err(),
            "response_jq: nesting of \"(\" and not deeper than 64 at offset 65"
        );
        let nots = |n: usize| "not ".repeat(n) + ".a";
        // An even number of nots: the value itself.
        assert!(check(&nots(MAX_DEPTH), &json!({"a": true})));
        assert!(parse(&nots(MAX_DEPTH + 1))
            .unwrap_err()
            .contains("deeper than 64"));
        // Mixed: 32 of each is 64 levels.
        let mixed = "not (".repeat(32) + ".a" + &")".repeat(32);
        assert!(parse(&mixed).is_ok());
        assert!(parse(&("not ".to_string() + &mixed))
            .unwrap_err()
            .contains("deeper than 64"));
        // The sizes from the issue: errors, not aborts.
        assert!(parse(&parens(7_300)).is_err());
        assert!(parse(&nots(15_400)).is_err());
    }

    #[test]
    fn terms_at_and_past_the_limit() {
        let chain = |op: &str, n: usize| {
            let mut e = ".a".to_string();
            e.push_str(&format!(" {op} .a").repeat(n - 1));
            e
        };
        let d = json!({"a": true});
        assert!(check(&chain("and", MAX_TERMS), &d));
        assert!(check(&chain("or", MAX_TERMS), &d));
        assert_eq!(
            parse(&chain("and", MAX_TERMS + 1)).unwrap_err(),
            format!(
                "response_jq: more than 256 paths and comparisons at offset {}",
                7 * MAX_TERMS
            )
        );
        assert!(parse(&chain("or", MAX_TERMS + 1))
            .unwrap_err()
            .contains("more than 256 paths"));
        // Comparisons count as one term each.
        let cmps = chain("and", MAX_TERMS).replace(".a", ".a == 1");
        assert!(parse(&cmps).is_ok());
        assert!(parse(&format!("{cmps} and .b")).is_err());
        // 130,000 terms: stopped by the length limit before anything else.
        assert_eq!(
            parse(&chain("and", 130_000)).unwrap_err(),
            "response_jq: longer than 4096 bytes (909995 bytes)"
        );
    }

    #[test]
    fn length_at_and_past_the_limit() {
        let pad = |n: usize| format!(".a{}", " ".repeat(n - 2));
        assert!(parse(&pad(MAX_LEN)).is_ok());
        assert_eq!(
            parse(&pad(MAX_LEN + 1)).unwrap_err(),
            "response_jq: longer than 4096 bytes (4097 bytes)"
        );
    }

    /// The bound on recursion: everything done with the deepest tree the
    /// limits allow (parse, clone, compare, evaluate, drop) fits in a 256 KiB
    /// stack, an eighth of Rust's default thread stack, even unoptimized.
    #[test]
    fn worst_case_fits_a_small_stack() {
        let src = worst_case();
        assert!(src.len() <= MAX_LEN);
        let t = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let e = parse(&src).unwrap();
                let copy = e.clone();
                assert_eq!(copy, e);
                // 63 nots of true is false; and-ed with the rest: false.
                assert!(matches(&e, &json!({"a": true})).is_err());
                assert!(matches(&e, &json!({"a": false})).is_err());
                drop(copy);
            })
            .unwrap();
        t.join().unwrap();
    }

    /// Evaluation does not recurse at all: a tree far deeper than the parser
    /// allows, built by hand, evaluates on a small stack. (It is taken apart
    /// by hand too: the derived Drop does recurse, which is why the parser
    /// bounds the depth of the trees it builds.)
    #[test]
    fn evaluation_uses_no_stack_per_level() {
        let t = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut e = JsonExpr::Path(vec![Seg::Key("a".into())]);
                for _ in 0..100_000 {
                    e = JsonExpr::Not(Box::new(e));
                }
                assert!(matches(&e, &json!({"a": true})).is_ok());
                let mut e = Some(e);
                while let Some(JsonExpr::Not(inner)) = e.take() {
                    e = Some(*inner);
                }
            })
            .unwrap();
        t.join().unwrap();
    }
}
