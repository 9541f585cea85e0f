//! The checks_policy expression language. The parser (nom) comes with the
//! config issue; the evaluator lives in `check::policy`.

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
