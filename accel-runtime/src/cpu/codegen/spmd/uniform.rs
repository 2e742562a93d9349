//! Uniformity analysis: which variables of an element function differ between the lanes
//! of a gang (ISPC's "varying"), the rest being the same for every lane ("uniform").
//!
//! The gang's index is varying. A `let` is varying when its value is; a variable assigned
//! a varying value, or assigned at all under control that differs between lanes (an `if`,
//! `while` or `match` on a varying condition, a `for` over varying bounds, the right side
//! of `&&`/`||` after a varying left side), is varying. A `for` over varying bounds has a
//! varying variable. The rules run to a fixpoint, since a loop can make a variable
//! varying after its first use.

use accel_ir::ops::OpView;
use accel_ir::{BinOp, Expr, Stmt};
use std::collections::HashSet;

/// The varying variables of `body`, given the varying `params`.
pub(in crate::cpu::codegen) fn varying_vars(body: &Expr, params: &[String]) -> HashSet<String> {
    let mut v: HashSet<String> = params.iter().cloned().collect();
    loop {
        let before = v.len();
        visit(body, &mut v, false);
        if v.len() == before {
            return v;
        }
    }
}

/// Whether `e` reads a varying variable (its value may then differ between lanes).
pub(in crate::cpu::codegen) fn reads_varying(e: &Expr, v: &HashSet<String>) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let Expr::Var(name) = x {
            found |= v.contains(name);
        }
    });
    found
}

/// One pass of the rules over `e`; `divergent` when control here differs between lanes.
fn visit(e: &Expr, v: &mut HashSet<String>, divergent: bool) {
    match e {
        Expr::Block { stmts, result } => {
            for st in stmts {
                match st {
                    Stmt::Let { pat, init, .. } => {
                        if let Some(init) = init {
                            visit(init, v, divergent);
                            if reads_varying(init, v) {
                                v.extend(pat.bound_names());
                            }
                        }
                    }
                    Stmt::Expr(x) => visit(x, v, divergent),
                }
            }
            if let Some(r) = result {
                visit(r, v, divergent);
            }
        }
        Expr::Assign { target, value } => {
            visit(value, v, divergent);
            if let Some(root) = target.assigned_root() {
                if divergent || reads_varying(value, v) || reads_varying(target, v) {
                    v.insert(root.to_string());
                }
            }
        }
        Expr::If { cond, then, els } => {
            visit(cond, v, divergent);
            let d = divergent || reads_varying(cond, v);
            visit(then, v, d);
            if let Some(e) = els {
                visit(e, v, d);
            }
        }
        Expr::While { cond, body } => {
            // The condition is evaluated again after the body: varying when the body
            // makes it so (the fixpoint sees that).
            let d = divergent || reads_varying(cond, v);
            visit(cond, v, d);
            visit(body, v, d);
        }
        Expr::For { var, lo, hi, body } => {
            visit(lo, v, divergent);
            visit(hi, v, divergent);
            // The counter runs from a uniform start for every lane (lanes past their end
            // are masked off): it varies only when the start does.
            if reads_varying(lo, v) {
                v.insert(var.clone());
            }
            let d = divergent || reads_varying(lo, v) || reads_varying(hi, v);
            visit(body, v, d);
        }
        Expr::Match { scrutinee, arms } => {
            visit(scrutinee, v, divergent);
            let varying = reads_varying(scrutinee, v);
            let d = divergent || varying;
            for arm in arms {
                if varying {
                    v.extend(arm.pat.bound_names());
                }
                if let Some(g) = &arm.guard {
                    visit(g, v, d);
                }
                visit(
                    &arm.body,
                    v,
                    d || arm.guard.as_ref().is_some_and(|g| reads_varying(g, v)),
                );
            }
        }
        Expr::Binary(BinOp::And | BinOp::Or, a, b) => {
            visit(a, v, divergent);
            let d = divergent || reads_varying(a, v);
            visit(b, v, d);
        }
        Expr::Par { op, args, .. } => visit_par(e, *op, args, v, divergent),
        _ => e.for_each_child(&mut |c| visit(c, v, divergent)),
    }
}

/// A parallel operation nested in an element: a `reduce` over a delayed array keeps its
/// element's index uniform (it is a loop all lanes run together) and its operator's
/// parameters varying when the element or the neutral element is; in any other
/// operation every closure parameter counts as varying when the operation reads
/// anything varying.
fn visit_par(
    e: &Expr,
    op: accel_ir::ParOp,
    args: &[Expr],
    v: &mut HashSet<String>,
    divergent: bool,
) {
    for a in args {
        visit(a, v, divergent);
    }
    if let Ok(OpView::Reduce(r)) = op.view(args) {
        if let Some((n, _, body)) = accel_ir::ops::delayed(r.xs) {
            if !reads_varying(n, v) && !divergent {
                if reads_varying(body, v) || reads_varying(r.ne, v) {
                    lambda_params(r.op, v);
                }
                return;
            }
        }
    }
    if reads_varying(e, v) || divergent {
        for a in args {
            lambda_params(a, v);
        }
    }
}

/// Marks a closure's parameters varying.
fn lambda_params(f: &Expr, v: &mut HashSet<String>) {
    if let Expr::Lambda { params, .. } = f {
        for (p, _) in params {
            v.extend(p.bound_names());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{Lit, Pat, ScalarType, Type};

    fn var(n: &str) -> Expr {
        Expr::var(n)
    }

    fn lit(x: u64) -> Expr {
        Expr::Lit(Lit::Int(x, Some(ScalarType::Usize)))
    }

    fn let_(name: &str, init: Expr) -> Stmt {
        Stmt::Let {
            pat: Pat::bind(name),
            ty: Type::Infer,
            init: Some(init),
        }
    }

    fn assign(name: &str, value: Expr) -> Stmt {
        Stmt::Expr(Expr::Assign {
            target: Box::new(var(name)),
            value: Box::new(value),
        })
    }

    fn add(a: Expr, b: Expr) -> Expr {
        Expr::Binary(BinOp::Add, Box::new(a), Box::new(b))
    }

    fn block(stmts: Vec<Stmt>, result: Expr) -> Expr {
        Expr::Block {
            stmts,
            result: Some(Box::new(result)),
        }
    }

    #[test]
    fn lets_follow_their_values() {
        // let a = i + 1; let b = n + 1; a + b
        let body = block(
            vec![
                let_("a", add(var("i"), lit(1))),
                let_("b", add(var("n"), lit(1))),
            ],
            add(var("a"), var("b")),
        );
        let v = varying_vars(&body, &["i".into()]);
        assert!(v.contains("a") && !v.contains("b"), "{v:?}");
    }

    #[test]
    fn assignments_under_varying_control_vary() {
        // let mut c = 0; let mut u = 0; if i < n { c = 1 }; if n < 2 { u = 1 }; c
        let lt = |a, b| Expr::Binary(BinOp::Lt, Box::new(a), Box::new(b));
        let body = block(
            vec![
                let_("c", lit(0)),
                let_("u", lit(0)),
                Stmt::Expr(Expr::If {
                    cond: Box::new(lt(var("i"), var("n"))),
                    then: Box::new(block(vec![assign("c", lit(1))], Expr::Tuple(vec![]))),
                    els: None,
                }),
                Stmt::Expr(Expr::If {
                    cond: Box::new(lt(var("n"), lit(2))),
                    then: Box::new(block(vec![assign("u", lit(1))], Expr::Tuple(vec![]))),
                    els: None,
                }),
            ],
            var("c"),
        );
        let v = varying_vars(&body, &["i".into()]);
        assert!(v.contains("c") && !v.contains("u"), "{v:?}");
    }

    #[test]
    fn loops_reach_a_fixpoint() {
        // let mut a = 0; let mut b = 0; while b < n { b = a; a = i; }
        // a becomes varying in the body; b is assigned a before that in the body, and
        // only the second pass sees it; the loop condition then varies.
        let lt = |a, b| Expr::Binary(BinOp::Lt, Box::new(a), Box::new(b));
        let body = block(
            vec![
                let_("a", lit(0)),
                let_("b", lit(0)),
                Stmt::Expr(Expr::While {
                    cond: Box::new(lt(var("b"), var("n"))),
                    body: Box::new(block(
                        vec![assign("b", var("a")), assign("a", var("i"))],
                        Expr::Tuple(vec![]),
                    )),
                }),
            ],
            var("b"),
        );
        let v = varying_vars(&body, &["i".into()]);
        assert!(v.contains("a") && v.contains("b"), "{v:?}");
        // A uniform loop's counter stays uniform.
        let uniform = Expr::For {
            var: "j".into(),
            lo: Box::new(lit(0)),
            hi: Box::new(var("n")),
            body: Box::new(block(
                vec![assign("s", add(var("s"), var("i")))],
                Expr::Tuple(vec![]),
            )),
        };
        let v = varying_vars(&uniform, &["i".into()]);
        assert!(v.contains("s") && !v.contains("j"), "{v:?}");
    }
}
