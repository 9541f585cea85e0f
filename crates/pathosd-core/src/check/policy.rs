//! The checks_policy evaluator: combines per-check health (after each check's
//! own rise/fall) into the VIP's health. Pure.
//!
//! Beyond pathosd's all / any / boolean expressions, the Nexus pool design
//! adds thresholds: `at_least(N)` (N checks healthy) and `ratio OP X` (the
//! healthy fraction compared with X). A check that never reported counts as
//! unhealthy.

use crate::config::policy_expr::{Cmp, Expr};

/// One step of the explicit-stack evaluation.
enum Step<'e> {
    Visit(&'e Expr),
    Not,
    And,
    Or,
}

/// Evaluates `expr` given every check name of the VIP and a health lookup.
///
/// Iterative (an explicit work stack and value stack on the heap), so the
/// thread's stack use does not depend on the expression at all; the parser
/// bounds how large the heap stacks get (`policy_expr::MAX_TERMS` operands
/// and `MAX_DEPTH` negations: at most one entry per tree node). Both operands
/// of `&&`/`||` are evaluated: a health lookup has no effects, so the result
/// is the same as with short circuit.
pub fn eval(expr: &Expr, names: &[String], healthy: &dyn Fn(&str) -> bool) -> bool {
    let mut work = vec![Step::Visit(expr)];
    let mut vals: Vec<bool> = Vec::new();
    while let Some(step) = work.pop() {
        match step {
            Step::Visit(e) => match e {
                Expr::Not(x) => {
                    work.push(Step::Not);
                    work.push(Step::Visit(x));
                }
                Expr::And(a, b) => {
                    work.push(Step::And);
                    work.push(Step::Visit(b));
                    work.push(Step::Visit(a));
                }
                Expr::Or(a, b) => {
                    work.push(Step::Or);
                    work.push(Step::Visit(b));
                    work.push(Step::Visit(a));
                }
                leaf => vals.push(eval_leaf(leaf, names, healthy)),
            },
            Step::Not => {
                let v = vals.pop().unwrap_or(false);
                vals.push(!v);
            }
            Step::And | Step::Or => {
                let b = vals.pop().unwrap_or(false);
                let a = vals.pop().unwrap_or(false);
                vals.push(if matches!(step, Step::And) {
                    a && b
                } else {
                    a || b
                });
            }
        }
    }
    vals.pop().unwrap_or(false)
}

/// The value of an operand (anything but `!`, `&&` and `||`).
fn eval_leaf(expr: &Expr, names: &[String], healthy: &dyn Fn(&str) -> bool) -> bool {
    match expr {
        Expr::All => names.iter().all(|n| healthy(n)),
        Expr::Any => names.iter().any(|n| healthy(n)),
        Expr::Name(n) => healthy(n),
        Expr::AtLeast(n) => {
            let up = names.iter().filter(|c| healthy(c)).count();
            u32::try_from(up).unwrap_or(u32::MAX) >= *n
        }
        Expr::Ratio(cmp, x) => {
            if names.is_empty() {
                return false;
            }
            let up = names.iter().filter(|c| healthy(c)).count();
            let r = up as f64 / names.len() as f64;
            match cmp {
                Cmp::Ge => r >= *x,
                Cmp::Gt => r > *x,
                Cmp::Le => r <= *x,
                Cmp::Lt => r < *x,
            }
        }
        // Operators are handled by `eval`; reaching here is a bug there.
        Expr::Not(_) | Expr::And(..) | Expr::Or(..) => false,
    }
}

/// Checks at load time that `expr` only names existing checks and that its
/// thresholds can be met: at_least(N) needs 1 <= N <= number of checks, and a
/// ratio threshold lies in [0, 1].
pub fn validate(expr: &Expr, names: &[String]) -> Result<(), String> {
    // Explicit stack, left operand first, like `eval`.
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        match e {
            Expr::All | Expr::Any => {}
            Expr::Name(n) => {
                if !names.iter().any(|c| c == n) {
                    return Err(format!(
                        "unknown check name {n:?} (checks: {})",
                        names.join(", ")
                    ));
                }
            }
            Expr::Not(e) => stack.push(e),
            Expr::And(a, b) | Expr::Or(a, b) => {
                stack.push(b);
                stack.push(a);
            }
            Expr::AtLeast(n) => {
                let total = u32::try_from(names.len()).unwrap_or(u32::MAX);
                if *n == 0 || *n > total {
                    return Err(format!(
                        "at_least({n}) needs 1..={total} (the number of checks)"
                    ));
                }
            }
            Expr::Ratio(_, x) => {
                if !(x.is_finite() && (0.0..=1.0).contains(x)) {
                    return Err(format!("ratio threshold {x} is not between 0 and 1"));
                }
            }
        }
    }
    Ok(())
}

/// Tracks per-check health and reports the VIP's combined health only when
/// the policy result changes.
#[derive(Debug, Clone)]
pub struct Combiner {
    expr: Expr,
    names: Vec<String>,
    /// Health of `names[i]` (false until it reports): a Vec beside the
    /// names, not a map keyed by a copy of each name (per-VIP memory).
    health: Vec<bool>,
    combined: bool,
}

impl Combiner {
    /// The VIP starts unhealthy (withdrawn): every check counts as unhealthy
    /// until it reports.
    pub fn new(expr: Expr, names: Vec<String>) -> Combiner {
        Combiner {
            expr,
            health: vec![false; names.len()],
            names,
            combined: false,
        }
    }

    /// The current combined health.
    pub fn healthy(&self) -> bool {
        self.combined
    }

    /// Records `check`'s current health (after hysteresis). Returns the new
    /// combined health when, and only when, it changed. Feeding every result
    /// (not only transitions) is fine: an unchanged input changes nothing,
    /// and a policy such as `!web` becomes true on web's first report.
    pub fn update(&mut self, check: &str, healthy: bool) -> Option<bool> {
        if let Some(h) = self
            .names
            .iter()
            .position(|n| n == check)
            .and_then(|i| self.health.get_mut(i))
        {
            *h = healthy;
        }
        let (names, h) = (&self.names, &self.health);
        let now = eval(&self.expr, names, &|n| {
            names
                .iter()
                .position(|x| x == n)
                .is_some_and(|i| h.get(i) == Some(&true))
        });
        if now != self.combined {
            self.combined = now;
            Some(now)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }
    fn name(n: &str) -> Box<Expr> {
        Box::new(Expr::Name(n.into()))
    }

    /// Rows: the healthy set as a bit mask over [a, b, c], in order 0..8.
    fn truth_table(e: &Expr) -> String {
        let ns = names(&["a", "b", "c"]);
        (0..8u8)
            .map(|m| {
                let f = |n: &str| {
                    let i = ns.iter().position(|x| x == n).unwrap();
                    m & (1 << i) != 0
                };
                if eval(e, &ns, &f) {
                    '1'
                } else {
                    '0'
                }
            })
            .collect()
    }

    #[test]
    fn truth_tables() {
        // Mask bit 0 = a, bit 1 = b, bit 2 = c; column k is mask k.
        assert_eq!(truth_table(&Expr::All), "00000001");
        assert_eq!(truth_table(&Expr::Any), "01111111");
        assert_eq!(truth_table(&Expr::Name("b".into())), "00110011");
        assert_eq!(truth_table(&Expr::Not(name("a"))), "10101010");
        // a || (b && c)
        let e = Expr::Or(name("a"), Box::new(Expr::And(name("b"), name("c"))));
        assert_eq!(truth_table(&e), "01010111");
        assert_eq!(truth_table(&Expr::AtLeast(2)), "00010111");
        assert_eq!(truth_table(&Expr::AtLeast(1)), truth_table(&Expr::Any));
        assert_eq!(truth_table(&Expr::AtLeast(3)), truth_table(&Expr::All));
        assert_eq!(truth_table(&Expr::Ratio(Cmp::Ge, 0.5)), "00010111");
        assert_eq!(truth_table(&Expr::Ratio(Cmp::Gt, 0.34)), "00010111");
        assert_eq!(truth_table(&Expr::Ratio(Cmp::Ge, 0.3)), "01111111");
        assert_eq!(truth_table(&Expr::Ratio(Cmp::Lt, 0.5)), "11101000");
        assert_eq!(truth_table(&Expr::Ratio(Cmp::Le, 0.0)), "10000000");
    }

    #[test]
    fn empty_check_list() {
        let f = |_: &str| true;
        assert!(eval(&Expr::All, &[], &f));
        assert!(!eval(&Expr::Any, &[], &f));
        assert!(!eval(&Expr::Ratio(Cmp::Ge, 0.0), &[], &f));
    }

    #[test]
    fn validation() {
        let ns = names(&["web", "dns"]);
        assert!(validate(&Expr::Or(name("web"), name("dns")), &ns).is_ok());
        assert_eq!(
            validate(&Expr::Not(name("wbe")), &ns).unwrap_err(),
            "unknown check name \"wbe\" (checks: web, dns)"
        );
        assert!(validate(&Expr::AtLeast(2), &ns).is_ok());
        assert!(validate(&Expr::AtLeast(3), &ns).is_err());
        assert!(validate(&Expr::AtLeast(0), &ns).is_err());
        assert!(validate(&Expr::Ratio(Cmp::Ge, 1.0), &ns).is_ok());
        assert!(validate(&Expr::Ratio(Cmp::Ge, 1.5), &ns).is_err());
        assert!(validate(&Expr::Ratio(Cmp::Ge, f64::NAN), &ns).is_err());
    }

    #[test]
    fn combiner_reports_only_changes() {
        // web || (dns && ping)
        let e = Expr::Or(name("web"), Box::new(Expr::And(name("dns"), name("ping"))));
        let mut c = Combiner::new(e, names(&["web", "dns", "ping"]));
        assert!(!c.healthy());
        assert_eq!(c.update("dns", true), None);
        assert_eq!(c.update("ping", true), Some(true));
        assert_eq!(c.update("web", true), None);
        assert_eq!(c.update("ping", false), None);
        assert_eq!(c.update("web", false), Some(false));
        assert_eq!(c.update("web", false), None);
        assert_eq!(c.update("ping", true), Some(true));
    }

    #[test]
    fn combiner_negation_turns_true_on_first_report() {
        let mut c = Combiner::new(Expr::Not(name("maint")), names(&["maint"]));
        assert!(!c.healthy());
        assert_eq!(c.update("maint", false), Some(true));
    }

    /// The evaluator uses no stack per level: trees far deeper than the
    /// parser allows, built by hand, evaluate (and validate) on a 128 KiB
    /// stack. They are taken apart by hand, since the derived Drop recurses
    /// (the parser's limits bound that for parsed trees).
    #[test]
    fn evaluation_uses_no_stack_per_level() {
        let t = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(|| {
                let ns = names(&["a", "b"]);
                let mut e = Expr::Name("a".into());
                for i in 0..100_000 {
                    e = match i % 3 {
                        0 => Expr::And(Box::new(e), name("a")),
                        1 => Expr::Or(Box::new(e), name("b")),
                        _ => Expr::Not(Box::new(Expr::Not(Box::new(e)))),
                    };
                }
                let f = |n: &str| n == "a";
                // ((a && a) || b) ... with b false is a after every round.
                assert!(eval(&e, &ns, &f));
                assert!(!eval(&e, &ns, &|_| false));
                assert!(validate(&e, &ns).is_ok());
                let mut next = Some(e);
                while let Some(e) = next.take() {
                    next = match e {
                        Expr::Not(x) => Some(*x),
                        Expr::And(a, _) | Expr::Or(a, _) => Some(*a),
                        _ => None,
                    };
                }
            })
            .unwrap();
        t.join().unwrap();
    }
}
