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

/// The primitive of each field an operator closure `|a, b| …` combines, if it combines
/// every field so: a scalar [`primitive`] (one field), or a tuple whose field `k` is a
/// primitive of `a.k` and `b.k` (`|a, b| (a.0 + b.0, a.1.max(b.1))`). Commutative on every
/// field, such a reduction may fold its elements in any grouping and order.
///
/// ```
/// use accel_ir::passes::recognize::{componentwise, Prim};
/// use accel_ir::{BinOp, Expr, Pat, Type};
/// let field = |v: &str, k: &str| Expr::Field(Box::new(Expr::var(v)), k.into());
/// let add = |k: &str| Expr::Binary(BinOp::Add, Box::new(field("a", k)), Box::new(field("b", k)));
/// let op = Expr::Lambda {
///     params: vec![(Pat::bind("a"), Type::Infer), (Pat::bind("b"), Type::Infer)],
///     body: Box::new(Expr::Tuple(vec![add("0"), add("1")])),
/// };
/// assert_eq!(componentwise(&op), Some(vec![Prim::Add, Prim::Add]));
/// ```
pub fn componentwise(op: &Expr) -> Option<Vec<Prim>> {
    if let Some(p) = primitive(op) {
        return Some(vec![p]);
    }
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
    let Expr::Tuple(fields) = final_expr(body, &mut defs)? else {
        return None;
    };
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
    // `p.k` for the parameter (or a renaming of it) `p`.
    let field_of = |x: &Expr, k: &str| -> Option<String> {
        let x = match x {
            Expr::Var(v) => defs.get(v.as_str()).copied().unwrap_or(x),
            _ => x,
        };
        match x {
            Expr::Field(base, f) if f == k => root(base),
            _ => None,
        }
    };
    let pair = |x: &Expr, y: &Expr, k: &str| match (field_of(x, k), field_of(y, k)) {
        (Some(x), Some(y)) => (&x == a && &y == b) || (&x == b && &y == a),
        _ => false,
    };
    let mut out = Vec::new();
    for (k, e) in fields.iter().enumerate() {
        let k = k.to_string();
        let e = match e {
            Expr::Var(v) => defs.get(v.as_str()).copied().unwrap_or(e),
            _ => e,
        };
        out.push(match e {
            Expr::Binary(BinOp::Add, x, y) if pair(x, y, &k) => Prim::Add,
            Expr::Binary(BinOp::Mul, x, y) if pair(x, y, &k) => Prim::Mul,
            Expr::Method { recv, method, args } if args.len() == 1 && pair(recv, &args[0], &k) => {
                match method.as_str() {
                    "min" => Prim::Min,
                    "max" => Prim::Max,
                    _ => return None,
                }
            }
            _ => return None,
        });
    }
    Some(out)
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
    fn tuples_of_primitives_are_componentwise() {
        let field = |v: &str, k: &str| Expr::Field(Box::new(Expr::var(v)), k.into());
        let op = |k: &str, o: BinOp, x: &str, y: &str| {
            Expr::Binary(o, Box::new(field(x, k)), Box::new(field(y, k)))
        };
        let max = Expr::Method {
            recv: Box::new(field("b", "2")),
            method: "max".into(),
            args: vec![field("a", "2")],
        };
        let body = Expr::Tuple(vec![
            op("0", BinOp::Add, "a", "b"),
            op("1", BinOp::Mul, "b", "a"),
            max,
        ]);
        assert_eq!(
            componentwise(&lam(&["a", "b"], body)),
            Some(vec![Prim::Add, Prim::Mul, Prim::Max])
        );
        // A field combined with another field, or a non-commutative operator: no.
        let crossed = Expr::Tuple(vec![op("0", BinOp::Add, "a", "b"), {
            Expr::Binary(
                BinOp::Add,
                Box::new(field("a", "0")),
                Box::new(field("b", "1")),
            )
        }]);
        assert_eq!(componentwise(&lam(&["a", "b"], crossed)), None);
        let minus = Expr::Tuple(vec![op("0", BinOp::Sub, "a", "b")]);
        assert_eq!(componentwise(&lam(&["a", "b"], minus)), None);
        assert_eq!(
            componentwise(&lam(&["a", "b"], bin(BinOp::Add, "a", "b"))),
            Some(vec![Prim::Add])
        );
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
