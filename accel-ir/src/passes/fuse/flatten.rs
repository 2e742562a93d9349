//! Flattening of the blocks that composing element functions leaves behind: fusion applies
//! one element function to another's result, so a chain such as
//! `xs.iter().zip(&ys).map(|(x, y)| x * y)` fuses to
//! `let (x, y) = { let a = xs[i]; let b = ys[i]; (a, b) }; x * y`. Hoisting the inner
//! block's statements and splitting the tuple binding gives straight-line code,
//! `let a = xs[i]; let b = ys[i]; let x = a; let y = b; x * y`, which the backends'
//! vectorisers recognise exactly as they recognise the functional `map2(|x, y| x * y, ..)`.
//! Evaluation order is unchanged.

use crate::expr::{Expr, Pat, Stmt};
use crate::types::Type;

/// Flattens every block in `e` (see the module documentation).
pub(super) fn flatten_blocks(e: &mut Expr) {
    e.for_each_child_mut(&mut flatten_blocks);
    if let Expr::Block { stmts, result } = e {
        let mut out = Vec::with_capacity(stmts.len());
        let mut rest: Vec<Stmt> = std::mem::take(stmts);
        rest.reverse();
        while let Some(s) = rest.pop() {
            let later_uses = |names: &[String], rest: &[Stmt], result: &Option<Box<Expr>>| {
                names.iter().any(|n| {
                    rest.iter().any(|s| super::stmt_uses(s, n) > 0)
                        || result.as_deref().is_some_and(|r| super::uses(r, n) > 0)
                })
            };
            match s {
                // `let p = { s; r }` is `s; let p = r` when nothing after it names what
                // `s` binds (which hoisting would shadow).
                Stmt::Let {
                    pat,
                    ty,
                    init:
                        Some(Expr::Block {
                            stmts: inner,
                            result: Some(r),
                        }),
                } if !later_uses(&bound(&inner), &rest, result) => {
                    rest.push(Stmt::Let {
                        pat,
                        ty,
                        init: Some(*r),
                    });
                    rest.extend(inner.into_iter().rev());
                }
                // `let (p, q) = (a, b)` is `let p = a; let q = b` when `b` does not name
                // what `p` binds.
                Stmt::Let {
                    pat: Pat::Tuple(ps),
                    ty,
                    init: Some(Expr::Tuple(es)),
                } if ps.len() == es.len() && !captures_earlier(&ps, &es) => {
                    let tys = match ty {
                        Type::Tuple(ts) if ts.len() == ps.len() => ts,
                        _ => vec![Type::Infer; ps.len()],
                    };
                    let split = ps
                        .into_iter()
                        .zip(tys)
                        .zip(es)
                        .map(|((pat, ty), e)| Stmt::Let {
                            pat,
                            ty,
                            init: Some(e),
                        });
                    rest.extend(split.rev());
                }
                other => out.push(other),
            }
        }
        *stmts = out;
        // `{ s; { t; r } }` is `{ s; t; r }`.
        if let Some(Expr::Block {
            stmts: inner,
            result: inner_result @ Some(_),
        }) = result.as_deref_mut()
        {
            stmts.append(inner);
            *result = inner_result.take();
        }
    }
}

/// The names the statements bind.
fn bound(stmts: &[Stmt]) -> Vec<String> {
    stmts.iter().flat_map(|s| s.bound_names()).collect()
}

/// Whether some component expression names a variable that an earlier component's pattern
/// binds (splitting the binding would then change what it refers to).
fn captures_earlier(ps: &[Pat], es: &[Expr]) -> bool {
    (1..ps.len()).any(|k| {
        ps[..k]
            .iter()
            .flat_map(|p| p.bound_names())
            .any(|n| super::uses(&es[k], &n) > 0)
    })
}
