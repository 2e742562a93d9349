//! Byte classes and range membership, desugared into comparisons once in the front end so
//! that every backend runs them (and the CPU's range test sees `c >= lo && c <= hi`):
//! `c.is_ascii_digit()` and the other `is_ascii_*` classes of a `u8`, and
//! `(lo..=hi).contains(&x)` (any range form: `lo..hi`, `lo..`, `..=hi`, `..hi`), which
//! clippy asks for in place of `x >= lo && x <= hi`.
//!
//! Evaluation keeps Rust's order: a range's bounds, then the value tested; each once.

use super::chains::within_lets;
use super::Lowerer;
use accel_ir::{BinOp, Expr, Lit, ScalarType};

/// The bytes of each `u8::is_ascii_*` class, as inclusive ranges (std's definitions).
fn class(method: &str) -> Option<&'static [(u64, u64)]> {
    Some(match method {
        "is_ascii_alphabetic" => &[(b'A' as u64, b'Z' as u64), (b'a' as u64, b'z' as u64)],
        "is_ascii_uppercase" => &[(b'A' as u64, b'Z' as u64)],
        "is_ascii_lowercase" => &[(b'a' as u64, b'z' as u64)],
        "is_ascii_alphanumeric" => &[
            (b'0' as u64, b'9' as u64),
            (b'A' as u64, b'Z' as u64),
            (b'a' as u64, b'z' as u64),
        ],
        "is_ascii_digit" => &[(b'0' as u64, b'9' as u64)],
        "is_ascii_hexdigit" => &[
            (b'0' as u64, b'9' as u64),
            (b'A' as u64, b'F' as u64),
            (b'a' as u64, b'f' as u64),
        ],
        "is_ascii_punctuation" => &[(0x21, 0x2f), (0x3a, 0x40), (0x5b, 0x60), (0x7b, 0x7e)],
        "is_ascii_graphic" => &[(0x21, 0x7e)],
        // Space, tab, line feed, form feed and carriage return (not the vertical tab).
        "is_ascii_whitespace" => &[(0x09, 0x0a), (0x0c, 0x0d), (0x20, 0x20)],
        "is_ascii_control" => &[(0x00, 0x1f), (0x7f, 0x7f)],
        _ => return None,
    })
}

impl Lowerer {
    /// `c.is_ascii_digit()` and the other classes as comparisons of `c` (bound once);
    /// `None` for other methods.
    pub(super) fn byte_class(&mut self, m: &syn::ExprMethodCall) -> Option<Expr> {
        let ranges = class(&m.method.to_string())?;
        if !m.args.is_empty() {
            return None;
        }
        let byte = self.expr(&m.receiver);
        let c = self.fresh_name("c");
        let lit = |v: u64| Expr::Lit(Lit::Int(v, Some(ScalarType::U8)));
        let test = ranges
            .iter()
            .map(|&(lo, hi)| in_range(&Expr::var(&c), Some(lit(lo)), Some((lit(hi), true))))
            .reduce(|a, b| Expr::Binary(BinOp::Or, Box::new(a), Box::new(b)))
            .expect("a class has a range");
        Some(within_lets(vec![(c, byte)], test))
    }

    /// `(lo..=hi).contains(&x)` (any range form) as comparisons; `None` when `m` is not a
    /// range's `contains`.
    pub(super) fn range_contains(&mut self, m: &syn::ExprMethodCall) -> Option<Expr> {
        if m.method != "contains" || m.args.len() != 1 {
            return None;
        }
        let mut recv = &*m.receiver;
        while let syn::Expr::Paren(p) = recv {
            recv = &p.expr;
        }
        let syn::Expr::Range(r) = recv else {
            return None;
        };
        let mut arg = &m.args[0];
        if let syn::Expr::Reference(x) = arg {
            arg = &x.expr;
        }
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        let mut lets = Vec::new();
        // A bound is bound to a name unless it is a literal (nothing to compute).
        let mut bound = |f: &mut Self, e: &syn::Expr, base: &str| {
            let value = f.expr(e);
            if matches!(value, Expr::Lit(_)) {
                return value;
            }
            let name = f.fresh_name(base);
            lets.push((name.clone(), value));
            Expr::var(&name)
        };
        let lo = r.start.as_deref().map(|e| bound(self, e, "lo"));
        let hi = r.end.as_deref().map(|e| bound(self, e, "hi"));
        let x = self.expr(arg);
        let name = self.fresh_name("x");
        lets.push((name.clone(), x));
        let test = in_range(&Expr::var(&name), lo, hi.map(|h| (h, inclusive)));
        Some(within_lets(lets, test))
    }
}

/// `lo <= x && x < hi` (`<=` when the end is inclusive), for the bounds given; `true`
/// with none.
fn in_range(x: &Expr, lo: Option<Expr>, hi: Option<(Expr, bool)>) -> Expr {
    let below = hi.map(|(h, inclusive)| {
        let op = if inclusive { BinOp::Le } else { BinOp::Lt };
        Expr::Binary(op, Box::new(x.clone()), Box::new(h))
    });
    // `x >= lo`, as the CPU's range test matches it.
    let above = lo.map(|l| Expr::Binary(BinOp::Ge, Box::new(x.clone()), Box::new(l)));
    match (above, below) {
        (Some(a), Some(b)) => Expr::Binary(BinOp::And, Box::new(a), Box::new(b)),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => Expr::Lit(Lit::Bool(true)),
    }
}
