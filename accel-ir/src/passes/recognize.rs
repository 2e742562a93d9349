//! Operator recognition: whether a reduction's operator is a primitive commutative one
//! (`+`, `*`, `min`, `max` of its two parameters), written as a closure or reached through
//! an inlined `#[accel]` function. Backends give such reductions their fastest forms (SIMD
//! lanes on the CPU, atomics and unordered trees on the GPU).
//!
//! ```
//! use accel_ir::passes::recognize::{primitive, Prim};
//! use accel_ir::{BinOp, Expr, Pat, Stmt, Type};
//! // `|x, y| { let a = x; let b = y; a + b }`: `fn add(a, b) { a + b }` once inlined.
//! let bind = |name: &str, init: &str| Stmt::Let {
//!     pat: Pat::bind(name),
//!     ty: Type::Infer,
//!     init: Some(Expr::var(init)),
//! };
//! let op = Expr::Lambda {
//!     params: vec![(Pat::bind("x"), Type::Infer), (Pat::bind("y"), Type::Infer)],
//!     body: Box::new(Expr::Block {
//!         stmts: vec![bind("a", "x"), bind("b", "y")],
//!         result: Some(Box::new(Expr::Binary(
//!             BinOp::Add,
//!             Box::new(Expr::var("a")),
//!             Box::new(Expr::var("b")),
//!         ))),
//!     }),
//! };
//! assert_eq!(primitive(&op), Some(Prim::Add));
//! ```

use crate::expr::{BinOp, Expr, Pat, Stmt};
use std::collections::HashMap;

/// A primitive commutative reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    /// `a + b`.
    Add,
    /// `a * b`.
    Mul,
    /// `a.min(b)`.
    Min,
    /// `a.max(b)`.
    Max,
}

/// The primitive an operator closure `|a, b| …` is, if any: `a + b`, `a * b`, `a.min(b)`,
/// `a.max(b)` in either operand order, also when the body reaches the operation through
/// `let`s that rename the parameters (what the inliner makes of `#[accel] fn add`).
pub fn primitive(op: &Expr) -> Option<Prim> {
    let Expr::Lambda { params, body } = op else {
        return None;
    };
    let (Some((Pat::Bind { name: a, .. }, _)), Some((Pat::Bind { name: b, .. }, _))) =
        (params.first(), params.get(1))
    else {
        return None;
    };
    if params.len() != 2 {
        return None;
    }
    let mut defs: HashMap<&str, &Expr> = HashMap::new();
    let e = final_expr(body, &mut defs)?;
    let root = |x: &Expr| {
        let mut x = x;
        while let Expr::Var(v) = x {
            match defs.get(v.as_str()) {
                Some(d) => x = d,
                None => return Some(v.clone()),
            }
        }
        None
    };
    let pair = |x: &Expr, y: &Expr| match (root(x), root(y)) {
        (Some(x), Some(y)) => (&x == a && &y == b) || (&x == b && &y == a),
        _ => false,
    };
    match e {
        Expr::Binary(BinOp::Add, x, y) if pair(x, y) => Some(Prim::Add),
        Expr::Binary(BinOp::Mul, x, y) if pair(x, y) => Some(Prim::Mul),
        Expr::Method { recv, method, args } if args.len() == 1 && pair(recv, &args[0]) => {
            match method.as_str() {
                "min" => Some(Prim::Min),
                "max" => Some(Prim::Max),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The expression a body computes, following blocks of plain `let`s (recorded in `defs`)
/// and variables bound by them; `None` when a block holds anything else.
fn final_expr<'e>(e: &'e Expr, defs: &mut HashMap<&'e str, &'e Expr>) -> Option<&'e Expr> {
    let mut e = e;
    loop {
        match e {
            Expr::Block { stmts, result } => {
                for st in stmts {
                    match st {
                        Stmt::Let {
                            pat: Pat::Bind { name, .. },
                            init: Some(x),
                            ..
                        } => {
                            defs.insert(name, x);
                        }
                        _ => return None,
                    }
                }
                e = result.as_deref()?;
            }
            Expr::Var(v) => match defs.get(v.as_str()) {
                Some(d) => e = d,
                None => return Some(e),
            },
            _ => return Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Type;

    fn lam(params: &[&str], body: Expr) -> Expr {
        Expr::Lambda {
            params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
            body: Box::new(body),
        }
    }

    fn bin(op: BinOp, a: &str, b: &str) -> Expr {
        Expr::Binary(op, Box::new(Expr::var(a)), Box::new(Expr::var(b)))
    }

    fn let_(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::bind(name),
            ty: Type::Infer,
            init: Some(init),
        }
    }

    #[test]
    fn closures_and_inlined_functions_are_recognised() {
        assert_eq!(
            primitive(&lam(&["a", "b"], bin(BinOp::Add, "a", "b"))),
            Some(Prim::Add)
        );
        assert_eq!(
            primitive(&lam(&["a", "b"], bin(BinOp::Mul, "b", "a"))),
            Some(Prim::Mul)
        );
        let max = Expr::Method {
            recv: Box::new(Expr::var("a")),
            method: "max".into(),
            args: vec![Expr::var("b")],
        };
        assert_eq!(primitive(&lam(&["a", "b"], max)), Some(Prim::Max));
        // fn min(x, y) { x.min(y) } inlined: parameters renamed, the result bound too.
        let body = Expr::Block {
            stmts: vec![
                let_("x", Expr::var("a")),
                let_("y", Expr::var("b")),
                let_(
                    "r",
                    Expr::Method {
                        recv: Box::new(Expr::var("x")),
                        method: "min".into(),
                        args: vec![Expr::var("y")],
                    },
                ),
            ],
            result: Some(Box::new(Expr::var("r"))),
        };
        assert_eq!(primitive(&lam(&["a", "b"], body)), Some(Prim::Min));
    }

    #[test]
    fn other_operators_are_not() {
        assert_eq!(
            primitive(&lam(&["a", "b"], bin(BinOp::Sub, "a", "b"))),
            None
        );
        assert_eq!(
            primitive(&lam(&["a", "b"], bin(BinOp::Add, "a", "a"))),
            None
        );
        let twice = Expr::Binary(
            BinOp::Add,
            Box::new(bin(BinOp::Add, "a", "b")),
            Box::new(Expr::var("b")),
        );
        assert_eq!(primitive(&lam(&["a", "b"], twice)), None);
        // A statement that is not a plain `let` may have effects: not recognised.
        let body = Expr::Block {
            stmts: vec![Stmt::Expr(Expr::var("a"))],
            result: Some(Box::new(bin(BinOp::Add, "a", "b"))),
        };
        assert_eq!(primitive(&lam(&["a", "b"], body)), None);
        assert_eq!(primitive(&Expr::var("f")), None);
    }
}
