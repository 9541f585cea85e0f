//! The checks_policy expression language. The parser (nom) lives here so that
//! a bad policy is a config error; the evaluator lives in `check::policy`.
//!
//! Grammar, loosest binding first (expr-lang's operators, as pathosd's README
//! promises, plus two counting forms):
//!
//! ```text
//! or      = and  (("||" | "or")  and)*
//! and     = unary (("&&" | "and") unary)*
//! unary   = ("!" | "not") unary | primary
//! primary = "(" or ")" | "all" | "any" | "at_least" "(" N ")"
//!         | "ratio" (">=" | ">" | "<=" | "<") NUMBER | NAME
//! ```

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while1};
use nom::character::complete::{digit1, multispace0};
use nom::combinator::{opt, recognize};
use nom::sequence::pair;
use nom::{IResult, Parser};
use std::fmt;

/// A parsed checks_policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Every check healthy.
    All,
    /// At least one check healthy.
    Any,
    /// The named check is healthy.
    Name(String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// At least N checks healthy.
    AtLeast(u32),
    /// healthy / total compared with a threshold, e.g. `ratio >= 0.5`.
    Ratio(Cmp, f64),
}

/// Comparison operators for `ratio`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Cmp {
    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Ge => ">=",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Lt => "<",
        }
    }
}

/// Words that cannot name a check: they mean something in a policy.
pub(crate) const RESERVED: &[&str] = &["all", "any", "and", "or", "not", "at_least", "ratio"];

/// Deeper nesting of `(` and `!` than this is rejected, so a hostile policy
/// cannot exhaust the stack (a real one has a handful of levels).
pub(crate) const MAX_DEPTH: usize = 64;
/// Most operands (check names, all, any, at_least, ratio) in one policy. With
/// MAX_DEPTH this bounds the depth of the tree the parser builds (an `&&`
/// chain is a left-leaning tree as deep as it is long), and with it every
/// recursive walk over the tree (printing, comparing, dropping).
pub(crate) const MAX_TERMS: usize = 256;
/// Longest policy accepted, in bytes.
pub const MAX_LEN: usize = 4096;

/// A parse error; `column` is 1-based and counts characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl Expr {
    /// Binding strength, loosest first; atoms bind tightest.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Or(..) => 1,
            Expr::And(..) => 2,
            Expr::Not(_) => 3,
            _ => 4,
        }
    }

    fn fmt_min(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        if self.precedence() < min {
            f.write_str("(")?;
            self.fmt_min(f, 0)?;
            return f.write_str(")");
        }
        match self {
            Expr::All => f.write_str("all"),
            Expr::Any => f.write_str("any"),
            Expr::Name(n) => f.write_str(n),
            Expr::Not(e) => {
                f.write_str("!")?;
                e.fmt_min(f, 3)
            }
            // Operators associate to the left, so only a right operand of
            // the same operator needs parentheses to keep the tree's shape.
            Expr::And(a, b) => {
                a.fmt_min(f, 2)?;
                f.write_str(" && ")?;
                b.fmt_min(f, 3)
            }
            Expr::Or(a, b) => {
                a.fmt_min(f, 1)?;
                f.write_str(" || ")?;
                b.fmt_min(f, 2)
            }
            Expr::AtLeast(n) => write!(f, "at_least({n})"),
            // `{}` on f64 never uses an exponent, which the parser lacks.
            Expr::Ratio(c, x) => write!(f, "ratio {} {x}", c.as_str()),
        }
    }
}

impl fmt::Display for Expr {
    /// Prints the expression with the fewest parentheses that parse back to
    /// the same tree (so never nested deeper than the source was).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_min(f, 0)
    }
}

/// Whether `s` has identifier syntax: `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every check name the expression refers to, in order of appearance.
pub fn names(e: &Expr) -> Vec<&str> {
    let mut out = Vec::new();
    // An explicit stack (right operand pushed first, so the left one is
    // visited first): no recursion, whatever the tree's depth.
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Name(n) => out.push(n.as_str()),
            Expr::Not(x) => stack.push(x),
            Expr::And(a, b) | Expr::Or(a, b) => {
                stack.push(b);
                stack.push(a);
            }
            Expr::All | Expr::Any | Expr::AtLeast(_) | Expr::Ratio(..) => {}
        }
    }
    out
}

/// Parses a checks_policy.
pub fn parse(src: &str) -> Result<Expr, PolicyError> {
    if src.len() > MAX_LEN {
        return Err(PolicyError {
            column: 1,
            message: format!("longer than {MAX_LEN} bytes ({} bytes)", src.len()),
        });
    }
    let mut p = P { src, terms: 0 };
    let (rest, e) = p.or(src, 0)?;
    let rest = ws(rest);
    if !rest.is_empty() {
        return Err(p.err(rest, format!("unexpected {}", describe(rest))));
    }
    Ok(e)
}

/// Parses a checks_policy and checks every name against `checks`; the
/// error says which name is unknown, or why the policy can never hold.
pub fn compile(src: &str, checks: &[String]) -> Result<Expr, PolicyError> {
    let e = parse(src)?;
    let mut problem = None;
    check_names(src, &e, checks, &mut problem);
    match problem {
        Some(p) => Err(p),
        None => Ok(e),
    }
}

/// The first unknown name or impossible at_least, in order of appearance;
/// walked with an explicit stack like `names`.
fn check_names(src: &str, e: &Expr, checks: &[String], out: &mut Option<PolicyError>) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Name(n) if !checks.iter().any(|c| c == n) => {
                *out = Some(PolicyError {
                    column: find_word(src, n).unwrap_or(1),
                    message: format!(
                        "unknown check {} (checks: {})",
                        crate::config::field::quote(n),
                        checks.join(", ")
                    ),
                });
                return;
            }
            Expr::AtLeast(k)
                if *k == 0 || usize::try_from(*k).map_or(true, |k| k > checks.len()) =>
            {
                *out = Some(PolicyError {
                    column: find_word(src, "at_least").unwrap_or(1),
                    message: format!(
                        "at_least({k}) needs 1..={} (the number of checks)",
                        checks.len()
                    ),
                });
                return;
            }
            Expr::Not(x) => stack.push(x),
            Expr::And(a, b) | Expr::Or(a, b) => {
                stack.push(b);
                stack.push(a);
            }
            _ => {}
        }
    }
}

/// The 1-based column of the first whole-word occurrence of `w`.
fn find_word(src: &str, w: &str) -> Option<usize> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut start = 0;
    while let Some(i) = src.get(start..)?.find(w) {
        let at = start + i;
        let end = at + w.len();
        let before_ok = src[..at].chars().next_back().is_none_or(|c| !is_word(c));
        let after_ok = src[end..].chars().next().is_none_or(|c| !is_word(c));
        if before_ok && after_ok {
            return Some(src[..at].chars().count() + 1);
        }
        start = end;
    }
    None
}

fn describe(rest: &str) -> String {
    match rest.chars().next() {
        None => "end of policy".to_string(),
        Some(_) => {
            let word: String = rest.chars().take(12).collect();
            format!("{word:?}")
        }
    }
}

type Res<'a, T> = Result<(&'a str, T), PolicyError>;

fn ws(i: &str) -> &str {
    let r: IResult<&str, &str> = multispace0(i);
    match r {
        Ok((rest, _)) => rest,
        Err(_) => i,
    }
}

fn ident(i: &str) -> Option<(&str, &str)> {
    let r: IResult<&str, &str> = recognize(pair(
        take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))
    .parse(i);
    r.ok()
}

fn symbol<'a>(i: &'a str, s: &'static str) -> Option<&'a str> {
    let r: IResult<&str, &str> = tag(s).parse(i);
    r.ok().map(|(rest, _)| rest)
}

/// A keyword operator (`and`) or its symbol (`&&`).
fn operator<'a>(i: &'a str, sym: &'static str, word: &'static str) -> Option<&'a str> {
    if let Some(rest) = symbol(i, sym) {
        return Some(rest);
    }
    match ident(i) {
        Some((rest, w)) if w == word => Some(rest),
        _ => None,
    }
}

fn number(i: &str) -> Option<(&str, &str)> {
    let r: IResult<&str, &str> =
        recognize(pair(opt(digit1), opt(pair(tag("."), opt(digit1))))).parse(i);
    r.ok().filter(|(_, n)| !n.is_empty() && *n != ".")
}

fn comparison(i: &str) -> Option<(&str, Cmp)> {
    let r: IResult<&str, &str> = alt((tag(">="), tag("<="), tag(">"), tag("<"))).parse(i);
    let (rest, op) = r.ok()?;
    let cmp = match op {
        ">=" => Cmp::Ge,
        "<=" => Cmp::Le,
        ">" => Cmp::Gt,
        _ => Cmp::Lt,
    };
    Some((rest, cmp))
}

struct P<'s> {
    src: &'s str,
    /// Operands read so far.
    terms: usize,
}

impl<'s> P<'s> {
    fn err(&self, at: &str, message: String) -> PolicyError {
        let offset = self.src.len().saturating_sub(at.len());
        let column = self.src.get(..offset).map_or(1, |s| s.chars().count() + 1);
        PolicyError { column, message }
    }

    fn or<'a>(&mut self, i: &'a str, depth: usize) -> Res<'a, Expr> {
        let (mut i, mut lhs) = self.and(i, depth)?;
        while let Some(rest) = operator(ws(i), "||", "or") {
            let (rest, rhs) = self.and(rest, depth)?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
            i = rest;
        }
        Ok((i, lhs))
    }

    fn and<'a>(&mut self, i: &'a str, depth: usize) -> Res<'a, Expr> {
        let (mut i, mut lhs) = self.unary(i, depth)?;
        while let Some(rest) = operator(ws(i), "&&", "and") {
            let (rest, rhs) = self.unary(rest, depth)?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
            i = rest;
        }
        Ok((i, lhs))
    }

    fn unary<'a>(&mut self, i: &'a str, depth: usize) -> Res<'a, Expr> {
        let i = ws(i);
        // `depth` counts the `(` and `!` around this point: MAX_DEPTH of
        // them are allowed, and each recursion below adds one.
        if depth > MAX_DEPTH {
            return Err(self.err(i, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        // `!=` is not an operator here; `!` must not swallow it silently.
        if symbol(i, "!=").is_none() {
            if let Some(rest) = operator(i, "!", "not") {
                let (rest, e) = self.unary(rest, depth + 1)?;
                return Ok((rest, Expr::Not(Box::new(e))));
            }
        }
        self.primary(i, depth)
    }

    fn primary<'a>(&mut self, i: &'a str, depth: usize) -> Res<'a, Expr> {
        if let Some(rest) = symbol(i, "(") {
            // `unary` checked `depth` against MAX_DEPTH before calling.
            let (rest, e) = self.or(rest, depth + 1)?;
            let rest = ws(rest);
            return match symbol(rest, ")") {
                Some(rest) => Ok((rest, e)),
                None => Err(self.err(rest, format!("expected \")\" but found {}", describe(rest)))),
            };
        }
        let Some((rest, word)) = ident(i) else {
            return Err(self.err(
                i,
                format!(
                    "expected a check name, all, any, !, or \"(\" but found {}",
                    describe(i)
                ),
            ));
        };
        if self.terms >= MAX_TERMS {
            return Err(self.err(i, format!("more than {MAX_TERMS} operands")));
        }
        self.terms += 1;
        match word {
            "all" => Ok((rest, Expr::All)),
            "any" => Ok((rest, Expr::Any)),
            "at_least" => self.at_least(rest),
            "ratio" => self.ratio(rest),
            "and" | "or" | "not" => Err(self.err(
                i,
                format!("expected a check name but found the operator {word:?}"),
            )),
            name => Ok((rest, Expr::Name(name.to_string()))),
        }
    }

    fn at_least<'a>(&mut self, i: &'a str) -> Res<'a, Expr> {
        let i = ws(i);
        let Some(i) = symbol(i, "(") else {
            return Err(self.err(
                i,
                format!("expected \"(\" after at_least but found {}", describe(i)),
            ));
        };
        let i = ws(i);
        let r: IResult<&str, &str> = digit1(i);
        let Ok((rest, digits)) = r else {
            return Err(self.err(i, format!("expected a count but found {}", describe(i))));
        };
        let n: u32 = digits
            .parse()
            .map_err(|_| self.err(i, format!("count {digits} is too large")))?;
        let rest = ws(rest);
        match symbol(rest, ")") {
            Some(rest) => Ok((rest, Expr::AtLeast(n))),
            None => Err(self.err(rest, format!("expected \")\" but found {}", describe(rest)))),
        }
    }

    fn ratio<'a>(&mut self, i: &'a str) -> Res<'a, Expr> {
        let i = ws(i);
        let Some((rest, cmp)) = comparison(i) else {
            return Err(self.err(
                i,
                format!(
                    "expected >=, >, <= or < after ratio but found {}",
                    describe(i)
                ),
            ));
        };
        let rest = ws(rest);
        let Some((after, num)) = number(rest) else {
            return Err(self.err(
                rest,
                format!("expected a number but found {}", describe(rest)),
            ));
        };
        match num.parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => Ok((after, Expr::Ratio(cmp, x))),
            _ => Err(self.err(rest, format!("ratio threshold {num} is not in 0..1"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Box<Expr> {
        Box::new(Expr::Name(s.into()))
    }

    #[test]
    fn precedence_and_spellings() {
        assert_eq!(
            parse("web || (dns && ping)").unwrap(),
            Expr::Or(n("web"), Box::new(Expr::And(n("dns"), n("ping"))))
        );
        assert_eq!(
            parse("a or b and not c").unwrap(),
            Expr::Or(
                n("a"),
                Box::new(Expr::And(n("b"), Box::new(Expr::Not(n("c")))))
            )
        );
        assert_eq!(
            parse("!a&&b").unwrap(),
            Expr::And(Box::new(Expr::Not(n("a"))), n("b"))
        );
        assert_eq!(
            parse("a || b || c").unwrap(),
            Expr::Or(Box::new(Expr::Or(n("a"), n("b"))), n("c"))
        );
        assert_eq!(parse(" all ").unwrap(), Expr::All);
        assert_eq!(parse("any").unwrap(), Expr::Any);
        assert_eq!(parse("at_least( 2 )").unwrap(), Expr::AtLeast(2));
        assert_eq!(parse("ratio >= 0.5").unwrap(), Expr::Ratio(Cmp::Ge, 0.5));
        assert_eq!(parse("ratio<1").unwrap(), Expr::Ratio(Cmp::Lt, 1.0));
        assert_eq!(parse("ratio > .25").unwrap(), Expr::Ratio(Cmp::Gt, 0.25));
        // Keywords are whole words: these are names.
        assert_eq!(parse("notify").unwrap(), Expr::Name("notify".into()));
        assert_eq!(
            parse("oracle and android").unwrap(),
            Expr::And(n("oracle"), n("android"))
        );
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(
            e("web && "),
            "column 8: expected a check name, all, any, !, or \"(\" but found end of policy"
        );
        assert_eq!(
            e("(web || dns"),
            "column 12: expected \")\" but found end of policy"
        );
        assert_eq!(e("web dns"), "column 5: unexpected \"dns\"");
        assert_eq!(e("web & dns"), "column 5: unexpected \"& dns\"");
        assert_eq!(e("a != b"), "column 3: unexpected \"!= b\"");
        assert_eq!(
            e("ratio = 1"),
            "column 7: expected >=, >, <= or < after ratio but found \"= 1\""
        );
        assert_eq!(
            e("ratio >= 2"),
            "column 10: ratio threshold 2 is not in 0..1"
        );
        assert_eq!(
            e("at_least(x)"),
            "column 10: expected a count but found \"x)\""
        );
        assert_eq!(
            e("a and or b"),
            "column 7: expected a check name but found the operator \"or\""
        );
        assert_eq!(
            e("é"),
            "column 1: expected a check name, all, any, !, or \"(\" but found \"é\""
        );
        assert_eq!(e("ab é"), "column 4: unexpected \"é\"");
    }

    #[test]
    fn compile_checks_names() {
        let checks = vec!["web".to_string(), "dns".to_string()];
        assert!(compile("web && !dns", &checks).is_ok());
        assert_eq!(
            compile("web || pnig", &checks).unwrap_err().to_string(),
            "column 8: unknown check \"pnig\" (checks: web, dns)"
        );
        assert_eq!(
            compile("at_least(3)", &checks).unwrap_err().to_string(),
            "column 1: at_least(3) needs 1..=2 (the number of checks)"
        );
        assert_eq!(
            names(&parse("a || (b && !a)").unwrap()),
            vec!["a", "b", "a"]
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "(".repeat(4_000);
        assert!(parse(&deep).unwrap_err().message.contains("nested deeper"));
        let nots = "!".repeat(4_000) + "a";
        assert!(parse(&nots).is_err());
    }

    #[test]
    fn nesting_at_and_past_the_limit() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        let parens = |n: usize| "(".repeat(n) + "a" + &")".repeat(n);
        assert_eq!(parse(&parens(MAX_DEPTH)).unwrap(), Expr::Name("a".into()));
        assert_eq!(
            e(&parens(MAX_DEPTH + 1)),
            "column 66: nested deeper than 64 levels"
        );
        let nots = |n: usize| "!".repeat(n) + "a";
        assert!(parse(&nots(MAX_DEPTH)).is_ok());
        assert_eq!(
            e(&nots(MAX_DEPTH + 1)),
            "column 66: nested deeper than 64 levels"
        );
        let words = "not ".repeat(MAX_DEPTH + 1) + "a";
        assert!(e(&words).ends_with("nested deeper than 64 levels"));
    }

    /// An `&&`/`||` chain of `n` operands.
    fn chain(op: &str, n: usize) -> String {
        let mut s = "a".to_string();
        s.push_str(&format!(" {op} a").repeat(n - 1));
        s
    }

    #[test]
    fn operands_at_and_past_the_limit() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        for op in ["&&", "||", "and", "or"] {
            assert!(parse(&chain(op, MAX_TERMS)).is_ok(), "{op}");
            assert!(
                e(&chain(op, MAX_TERMS + 1)).ends_with(": more than 256 operands"),
                "{op}"
            );
        }
        assert_eq!(
            e(&chain("&&", MAX_TERMS + 1)),
            format!("column {}: more than 256 operands", 5 * MAX_TERMS + 1)
        );
        // Every kind of operand counts.
        let mixed = "all || any || at_least(1) || ratio >= 0.5 || ".repeat(MAX_TERMS / 4);
        assert!(parse(mixed.trim_end_matches(" || ")).is_ok());
        assert!(e(&(mixed + "a")).ends_with("more than 256 operands"));
    }

    #[test]
    fn length_at_and_past_the_limit() {
        let pad = |n: usize| format!("a{}", " ".repeat(n - 1));
        assert!(parse(&pad(MAX_LEN)).is_ok());
        assert_eq!(
            parse(&pad(MAX_LEN + 1)).unwrap_err().to_string(),
            "column 1: longer than 4096 bytes (4097 bytes)"
        );
        // The issue's 47,600-term chains: the length limit, not the stack.
        assert_eq!(
            parse(&chain("&&", 47_600)).unwrap_err().to_string(),
            "column 1: longer than 4096 bytes (237996 bytes)"
        );
        assert!(parse(&chain("||", 47_600)).is_err());
    }

    /// The bound on recursion: the deepest tree the limits allow (a
    /// left-leaning `&&` chain of MAX_TERMS operands whose first operand has
    /// MAX_DEPTH - 1 negations and a parenthesis) can be parsed, compiled,
    /// cloned, compared, printed, evaluated and dropped in a 256 KiB stack,
    /// an eighth of Rust's default thread stack, unoptimized.
    #[test]
    fn worst_case_fits_a_small_stack() {
        let mut src = "!".repeat(MAX_DEPTH - 1) + "(a)";
        src.push_str(&" && a".repeat(MAX_TERMS - 1));
        assert!(src.len() <= MAX_LEN);
        let t = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let e = compile(&src, &["a".to_string()]).unwrap();
                let copy = e.clone();
                assert_eq!(copy, e);
                assert_eq!(parse(&e.to_string()).unwrap(), e);
                assert_eq!(names(&e).len(), MAX_TERMS);
                // 63 negations of a healthy `a`: false.
                let names = ["a".to_string()];
                assert!(!crate::check::policy::eval(&e, &names, &|_| true));
                assert!(!crate::check::policy::eval(&e, &names, &|_| false));
                assert!(crate::check::policy::validate(&e, &names).is_ok());
            })
            .unwrap();
        t.join().unwrap();
    }

    #[test]
    fn display_parses_back() {
        for s in [
            "a || (b && !c)",
            "all && ratio >= 0.5",
            "at_least(2) or any",
        ] {
            let e = parse(s).unwrap();
            assert_eq!(parse(&e.to_string()).unwrap(), e, "{s}");
        }
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("web_1"));
        assert!(is_identifier("_x"));
        assert!(!is_identifier("1web"));
        assert!(!is_identifier("web-1"));
        assert!(!is_identifier(""));
    }

    fn arb_expr() -> impl proptest::strategy::Strategy<Value = Expr> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Expr::All),
            Just(Expr::Any),
            "[a-z_][a-z0-9_]{0,6}"
                .prop_filter("reserved", |n| !RESERVED.contains(&n.as_str()))
                .prop_map(Expr::Name),
            (1u32..10).prop_map(Expr::AtLeast),
            (0u32..=100).prop_map(|p| Expr::Ratio(Cmp::Ge, f64::from(p) / 100.0)),
        ];
        leaf.prop_recursive(6, 40, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
                (inner.clone(), inner).prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
            ]
        })
    }

    proptest::proptest! {
        /// Printing keeps the tree: precedence and associativity round-trip.
        #[test]
        fn printed_policies_parse_back(e in arb_expr()) {
            proptest::prop_assert_eq!(parse(&e.to_string()), Ok(e));
        }
    }
}
