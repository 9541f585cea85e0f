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

use serde_json::Value;

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
    let mut p = Parser { s: src, pos: 0 };
    let e = p.or()?;
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
        v => Err(format!("jq expression is not true: {v}")),
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

fn eval(e: &JsonExpr, doc: &Value) -> Value {
    match e {
        JsonExpr::Path(p) => lookup(doc, p).clone(),
        JsonExpr::Cmp(p, op, lit) => Value::Bool(compare(lookup(doc, p), *op, lit)),
        JsonExpr::Not(e) => Value::Bool(!truthy(&eval(e, doc))),
        JsonExpr::And(a, b) => Value::Bool(truthy(&eval(a, doc)) && truthy(&eval(b, doc))),
        JsonExpr::Or(a, b) => Value::Bool(truthy(&eval(a, doc)) || truthy(&eval(b, doc))),
    }
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
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
    fn or(&mut self) -> Result<JsonExpr, String> {
        let mut e = self.and()?;
        while self.keyword("or") {
            e = JsonExpr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }
    fn and(&mut self) -> Result<JsonExpr, String> {
        let mut e = self.term()?;
        while self.keyword("and") {
            e = JsonExpr::And(Box::new(e), Box::new(self.term()?));
        }
        Ok(e)
    }
    fn term(&mut self) -> Result<JsonExpr, String> {
        if self.keyword("not") {
            return Ok(JsonExpr::Not(Box::new(self.term()?)));
        }
        if self.eat("(") {
            let e = self.or()?;
            if !self.eat(")") {
                return Err(self.err("\")\""));
            }
            return Ok(e);
        }
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
        let mut it = serde_json::Deserializer::from_str(self.rest()).into_iter::<Value>();
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
}
