//! Creates written into the memory of the sequence they replace: in `x = create(n, |i|
//! ...)` whose element reads `x` only at its own index (a Jacobi step's borders, `x[i]`),
//! element `i` reads `x[i]` before it writes its own value there and no other element
//! reads it, so the new sequence can take the old one's memory: no allocation, and a loop
//! of such steps keeps two sequences in cache instead of three (PolyBench's jacobi-1d, of
//! 16 KiB sequences, ran 1.3x slower than sequential Rust that way).
//!
//! [`eligible`] decides it from the site's program: `x` is bound only to fresh sequences
//! (a `create`, `map` or `map2`) and never copied, so no other name sees its memory. The
//! code then checks at run time that the lengths agree and that the memory is the
//! site's own (never a caller's sequence), and else allocates as usual.

use accel_ir::ops::delayed;
use accel_ir::{Expr, ParOp, Pat, Stmt};
use std::collections::HashSet;

/// The `create`s of `body` (by their element function's address) that may write into
/// the memory of the variable they are assigned to.
pub(super) fn eligible(body: &Expr) -> HashSet<usize> {
    let mut candidates: Vec<(&str, &Expr)> = Vec::new();
    body.walk(&mut |e| {
        if let Expr::Assign { target, value } = e {
            if let (Expr::Var(x), Some((_, param, element))) = (&**target, delayed(value)) {
                if reads_only_at(element, x, param) {
                    candidates.push((x, value));
                }
            }
        }
    });
    candidates
        .into_iter()
        .filter(|(x, _)| fresh_and_private(body, x))
        .filter_map(|(_, value)| match value {
            Expr::Par { args, .. } => args.get(1).map(|f| f as *const Expr as usize),
            _ => None,
        })
        .collect()
}

/// Whether `body` reads `x` only as `x[param]` or `x.len()`, and never assigns `param`.
fn reads_only_at(body: &Expr, x: &str, param: &str) -> bool {
    let mut uses = 0;
    let mut allowed = 0;
    let mut assigns_param = false;
    body.walk(&mut |e| match e {
        Expr::Var(v) if v == x => uses += 1,
        Expr::Index(base, i) if matches!(&**base, Expr::Var(v) if v == x) => {
            allowed += usize::from(matches!(&**i, Expr::Var(p) if p == param));
        }
        Expr::Method { recv, method, .. } if method == "len" => {
            allowed += usize::from(matches!(&**recv, Expr::Var(v) if v == x));
        }
        Expr::Assign { target, .. } => {
            assigns_param |= matches!(&**target, Expr::Var(p) if p == param);
        }
        _ => {}
    });
    uses == allowed && !assigns_param
}

/// Whether every value `x` is bound or assigned is a fresh sequence, and `x` is read only
/// through indexing and its length, assigned, or returned at the end: then no other name
/// holds its memory.
fn fresh_and_private(body: &Expr, x: &str) -> bool {
    let fresh = |e: &Expr| {
        matches!(
            e,
            Expr::Par {
                op: ParOp::Create | ParOp::Map | ParOp::Map2,
                ..
            }
        )
    };
    let mut uses = 0;
    let mut allowed = 0;
    let mut bound_fresh = true;
    let mut lets = 0;
    let mut visit = |e: &Expr| match e {
        Expr::Var(v) if v == x => uses += 1,
        Expr::Index(base, _) => allowed += usize::from(is_var(base, x)),
        Expr::Method { recv, method, .. } if method == "len" => {
            allowed += usize::from(is_var(recv, x))
        }
        Expr::Assign { target, value } if is_var(target, x) => {
            allowed += 1;
            bound_fresh &= fresh(value);
        }
        Expr::Block { stmts, .. } => {
            for s in stmts {
                if let Stmt::Let { pat, init, .. } = s {
                    if binds(pat, x) {
                        lets += 1;
                        bound_fresh &= init.as_ref().is_some_and(&fresh);
                    }
                }
            }
        }
        Expr::Lambda { params, .. } => {
            bound_fresh &= !params.iter().any(|(p, _)| binds(p, x));
        }
        Expr::For { var, .. } => bound_fresh &= var != x,
        _ => {}
    };
    body.walk(&mut visit);
    // Bound by a `let` of the program (a captured name is the caller's).
    uses == allowed + returned(body, x) && bound_fresh && lets == 1
}

/// How many uses of `x` are the program's result: `x` itself, or `let r = x; r` at the
/// end of the outermost block (nothing runs after them).
fn returned(body: &Expr, x: &str) -> usize {
    let Expr::Block { stmts, result } = body else {
        return usize::from(is_var(body, x));
    };
    match (stmts.last(), result.as_deref()) {
        (_, Some(r)) if is_var(r, x) => 1,
        (
            Some(Stmt::Let {
                pat,
                init: Some(init),
                ..
            }),
            Some(Expr::Var(r)),
        ) if is_var(init, x) && binds(pat, r) => 1,
        _ => 0,
    }
}

fn is_var(e: &Expr, x: &str) -> bool {
    matches!(e, Expr::Var(v) if v == x)
}

/// Whether `pat` binds the name `x`.
fn binds(pat: &Pat, x: &str) -> bool {
    pat.bound_names().iter().any(|n| n == x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{ScalarType, Type};

    fn var(x: &str) -> Expr {
        Expr::var(x)
    }

    fn index(xs: &str, i: Expr) -> Expr {
        Expr::Index(Box::new(var(xs)), Box::new(i))
    }

    fn create(body: Expr) -> Expr {
        let f = Expr::Lambda {
            params: vec![(Pat::bind("i"), Type::Scalar(ScalarType::Usize))],
            body: Box::new(body),
        };
        Expr::par(ParOp::Create, vec![var("n"), f])
    }

    fn set(x: &str, value: Expr) -> Stmt {
        Stmt::Expr(Expr::Assign {
            target: Box::new(var(x)),
            value: Box::new(value),
        })
    }

    fn let_(x: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::bind(x),
            ty: Type::Infer,
            init: Some(init),
        }
    }

    fn program(stmts: Vec<Stmt>, result: Expr) -> Expr {
        Expr::Block {
            stmts,
            result: Some(Box::new(result)),
        }
    }

    /// `b[i] + a[i - 1]`: its own element and another sequence's neighbour.
    fn step() -> Expr {
        let left = Expr::Binary(
            accel_ir::BinOp::Sub,
            Box::new(var("i")),
            Box::new(Expr::int(1)),
        );
        Expr::Binary(
            accel_ir::BinOp::Add,
            Box::new(index("b", var("i"))),
            Box::new(index("a", left)),
        )
    }

    #[test]
    fn a_step_reading_its_own_sequence_at_its_index_writes_in_place() {
        let in_loop = Expr::For {
            var: "t".into(),
            lo: Box::new(Expr::int(0)),
            hi: Box::new(Expr::int(3)),
            body: Box::new(program(vec![set("b", create(step()))], Expr::Tuple(vec![]))),
        };
        let p = program(
            vec![
                let_("b", create(index("xs", var("i")))),
                Stmt::Expr(in_loop),
                let_("r", var("b")),
            ],
            var("r"),
        );
        assert_eq!(eligible(&p).len(), 1);
    }

    #[test]
    fn neighbours_copies_and_captures_keep_separate_memory() {
        let fresh = let_("b", create(var("i")));
        let next = Expr::Binary(
            accel_ir::BinOp::Add,
            Box::new(var("i")),
            Box::new(Expr::int(1)),
        );
        // A neighbour of the sequence being replaced.
        let neighbour = program(
            vec![fresh.clone(), set("b", create(index("b", next)))],
            var("b"),
        );
        assert_eq!(eligible(&neighbour).len(), 0);
        // A copy of it that lives on.
        let copied = program(
            vec![fresh.clone(), let_("c", var("b")), set("b", create(step()))],
            index("c", Expr::int(0)),
        );
        assert_eq!(eligible(&copied).len(), 0);
        // A sequence that was not made here.
        let captured = program(
            vec![let_("b", var("xs")), set("b", create(step()))],
            var("b"),
        );
        assert_eq!(eligible(&captured).len(), 0);
        // The same program with a fresh sequence.
        let own = program(vec![fresh, set("b", create(step()))], var("b"));
        assert_eq!(eligible(&own).len(), 1);
    }
}
