//! Fusion (Accelerate's delayed arrays, Futhark's producer-consumer fusion). Every producer
//! becomes `create(n, |i| element)`, a delayed array: `map(f, xs)` is
//! `create(len xs, |i| f(xs[i]))`, and a producer whose input is itself delayed composes
//! with it, so `map(f, map(g, xs))` is one `create` and `reduce(op, ne, map(f, xs))` is a
//! `reduce` over a delayed array: one pass over the data, no intermediate array (a redomap;
//! `scan` likewise gives a scanomap). A `let`-bound array with exactly one use, where that
//! use consumes each element once (the array argument of a parallel operation, not under a
//! closure or loop that would repeat it), is substituted into the use, so a `let` the user
//! wrote does not block fusion and nothing is ever computed twice.
//!
//! Runs on an inlined, typed site (unique names).

use crate::expr::{Expr, ParOp, Pat, Stmt};
use crate::types::{ScalarType, Type};

/// Fuses producers into their consumers throughout `e`.
pub fn fuse(e: &Expr) -> Expr {
    let mut f = Fuser { counter: 0 };
    f.expr(e.clone())
}

struct Fuser {
    counter: usize,
}

fn usize_ty() -> Type {
    Type::Scalar(ScalarType::Usize)
}

fn len_of(xs: Expr) -> Expr {
    Expr::Method {
        recv: Box::new(xs),
        method: "len".into(),
        args: vec![],
    }
}

/// Whether an expression can be duplicated without duplicating work.
fn trivial(e: &Expr) -> bool {
    match e {
        Expr::Var(_) | Expr::Lit(_) | Expr::Const(_) => true,
        Expr::Method { recv, method, args } => method == "len" && args.is_empty() && trivial(recv),
        Expr::Assoc { func, args, .. } => func == "same_len" && args.iter().all(trivial),
        _ => false,
    }
}

impl Fuser {
    fn fresh(&mut self, base: &str) -> String {
        self.counter += 1;
        format!("{base}#f{}", self.counter)
    }

    /// The element `i` of a sequence expression that is a variable or a delayed array.
    fn element(&mut self, xs: &Expr, i: &Expr) -> Option<Expr> {
        match xs {
            Expr::Par {
                op: ParOp::Create,
                args,
                ..
            } => Some(apply(&args[1], vec![i.clone()])),
            Expr::Var(_) => Some(Expr::Index(Box::new(xs.clone()), Box::new(i.clone()))),
            _ => None,
        }
    }

    /// The length of a sequence expression that is a variable or a delayed array.
    fn length(xs: &Expr) -> Option<Expr> {
        match xs {
            Expr::Par {
                op: ParOp::Create,
                args,
                ..
            } if trivial(&args[0]) => Some(args[0].clone()),
            Expr::Var(_) => Some(len_of(xs.clone())),
            _ => None,
        }
    }

    /// `create(n, |i| f(element_i of inputs...))`, when every input is a variable or a
    /// delayed array.
    fn delayed(&mut self, f: &Expr, inputs: &[Expr], loc: crate::Loc) -> Option<Expr> {
        let mut n = Self::length(&inputs[0])?;
        for other in &inputs[1..] {
            // `map2` needs equal lengths: fusion keeps the check (`same_len` is the first
            // length after checking that the second equals it).
            n = Expr::Assoc {
                ty: "accel".into(),
                func: "same_len".into(),
                args: vec![n, Self::length(other)?],
            };
        }
        let i = self.fresh("i");
        let iv = Expr::Var(i.clone());
        let elems = inputs
            .iter()
            .map(|xs| self.element(xs, &iv))
            .collect::<Option<Vec<_>>>()?;
        let body = apply(f, elems);
        Some(Expr::Par {
            op: ParOp::Create,
            args: vec![
                n,
                Expr::Lambda {
                    params: vec![(Pat::bind(&i), usize_ty())],
                    body: Box::new(body),
                },
            ],
            loc,
        })
    }

    fn expr(&mut self, e: Expr) -> Expr {
        // Children first: inner producers are delayed before their consumers look at them.
        let mut e = e;
        e.for_each_child_mut(&mut |c| {
            let taken = std::mem::replace(c, Expr::Tuple(vec![]));
            *c = self.expr(taken);
        });
        match e {
            Expr::Par {
                op: ParOp::Map,
                ref args,
                loc,
            } => self.delayed(&args[0], &args[1..2], loc).unwrap_or(e),
            Expr::Par {
                op: ParOp::Map2,
                ref args,
                loc,
            } => self.delayed(&args[0], &args[1..3], loc).unwrap_or(e),
            Expr::Method {
                ref recv,
                ref method,
                ref args,
            } if method == "len" && args.is_empty() => match &**recv {
                Expr::Par {
                    op: ParOp::Create,
                    args: cargs,
                    ..
                } if trivial(&cargs[0]) => cargs[0].clone(),
                _ => e,
            },
            Expr::Index(ref xs, ref i)
                if matches!(
                    **xs,
                    Expr::Par {
                        op: ParOp::Create,
                        ..
                    }
                ) && trivial(i) =>
            {
                self.element(xs, i).unwrap_or(e)
            }
            Expr::Block { stmts, result } => self.block(stmts, result),
            other => other,
        }
    }

    /// Substitutes `let`-bound delayed arrays into their single consuming use.
    fn block(&mut self, stmts: Vec<Stmt>, result: Option<Box<Expr>>) -> Expr {
        let mut stmts = stmts;
        let mut result = result;
        let mut k = 0;
        while k < stmts.len() {
            let candidate = match &stmts[k] {
                Stmt::Let {
                    pat:
                        Pat::Bind {
                            name,
                            mutable: false,
                        },
                    init: Some(init @ Expr::Par { op, .. }),
                    ..
                } if *op != ParOp::Reduce && *op != ParOp::ParallelLoop => {
                    Some((name.clone(), init.clone()))
                }
                _ => None,
            };
            if let Some((name, init)) = candidate {
                let rest_uses: usize = stmts[k + 1..]
                    .iter()
                    .map(|s| stmt_uses(s, &name))
                    .sum::<usize>()
                    + result.as_deref().map_or(0, |r| uses(r, &name));
                if rest_uses == 1 {
                    let mut done = false;
                    for s in stmts[k + 1..].iter_mut() {
                        let target = match s {
                            Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => e,
                            Stmt::Let { init: None, .. } => continue,
                        };
                        done = substitute_consumer(target, &name, &init);
                        if done || uses(target, &name) > 0 {
                            break;
                        }
                    }
                    if !done {
                        if let Some(r) = result.as_deref_mut() {
                            done = substitute_consumer(r, &name, &init);
                        }
                    }
                    if done {
                        stmts.remove(k);
                        // Fuse the consumer again, now that its input is visible.
                        let block = Expr::Block { stmts, result };
                        return self.expr(block);
                    }
                }
            }
            k += 1;
        }
        Expr::Block { stmts, result }
    }
}

/// Applies a lambda to arguments: a block that binds its parameters.
fn apply(f: &Expr, args: Vec<Expr>) -> Expr {
    match f {
        Expr::Lambda { params, body } => Expr::Block {
            stmts: params
                .iter()
                .cloned()
                .zip(args)
                .map(|((pat, ty), init)| Stmt::Let {
                    pat,
                    ty,
                    init: Some(init),
                })
                .collect(),
            result: Some(body.clone()),
        },
        other => Expr::Apply {
            func: Box::new(other.clone()),
            args,
        },
    }
}

fn uses(e: &Expr, name: &str) -> usize {
    let mut n = 0;
    e.walk(&mut |x| {
        if matches!(x, Expr::Var(v) if v == name) {
            n += 1;
        }
    });
    n
}

fn stmt_uses(s: &Stmt, name: &str) -> usize {
    match s {
        Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => uses(e, name),
        Stmt::Let { init: None, .. } => 0,
    }
}

/// Replaces the use of `name` by `value` if it is the array argument of a parallel
/// operation reached without entering a closure or loop body. Returns whether it did.
fn substitute_consumer(e: &mut Expr, name: &str, value: &Expr) -> bool {
    match e {
        Expr::Par { op, args, .. } => {
            let array_args: &[usize] = match op {
                ParOp::Map | ParOp::Flatten => &[1, 0],
                ParOp::Map2 => &[1, 2],
                ParOp::Reduce | ParOp::Scan => &[2],
                ParOp::Create | ParOp::ParallelLoop => &[],
            };
            for &k in array_args {
                let k = if *op == ParOp::Map && k == 0 {
                    continue;
                } else if *op == ParOp::Flatten {
                    0
                } else {
                    k
                };
                if matches!(&args[k], Expr::Var(v) if v == name) {
                    args[k] = value.clone();
                    return true;
                }
            }
            for (k, a) in args.iter_mut().enumerate() {
                if Some(k) != op.fn_arg() && substitute_consumer(a, name, value) {
                    return true;
                }
            }
            false
        }
        Expr::Lambda { .. } | Expr::For { .. } | Expr::While { .. } => false,
        other => {
            let mut done = false;
            other.for_each_child_mut(&mut |c| {
                if !done {
                    done = substitute_consumer(c, name, value);
                }
            });
            done
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::BinOp;

    fn lam(p: &str, body: Expr) -> Expr {
        Expr::Lambda {
            params: vec![(Pat::bind(p), Type::Infer)],
            body: Box::new(body),
        }
    }

    fn lam2(a: &str, b: &str, body: Expr) -> Expr {
        Expr::Lambda {
            params: vec![(Pat::bind(a), Type::Infer), (Pat::bind(b), Type::Infer)],
            body: Box::new(body),
        }
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    fn add() -> Expr {
        lam2("a", "b", bin(BinOp::Add, Expr::var("a"), Expr::var("b")))
    }

    #[test]
    fn map_into_reduce_is_one_pass_redomap() {
        let e = Expr::par(
            ParOp::Reduce,
            vec![
                add(),
                Expr::int(0),
                Expr::par(
                    ParOp::Map,
                    vec![
                        lam("x", bin(BinOp::Mul, Expr::var("x"), Expr::var("x"))),
                        Expr::var("xs"),
                    ],
                ),
            ],
        );
        assert_eq!(
            e.to_string(),
            "(reduce (lambda (a b) (+ a b)) 0 (map (lambda (x) (* x x)) xs))"
        );
        assert_eq!(
            fuse(&e).to_string(),
            "(reduce (lambda (a b) (+ a b)) 0 (create (.len xs) (lambda (i#f1: usize) (do (let x (index xs i#f1)) (* x x)))))"
        );
    }

    #[test]
    fn map_of_map2_of_create_composes_into_one_create() {
        let inner = Expr::par(
            ParOp::Map2,
            vec![
                lam2("a", "b", bin(BinOp::Sub, Expr::var("a"), Expr::var("b"))),
                Expr::var("xs"),
                Expr::par(
                    ParOp::Create,
                    vec![Expr::var("n"), lam("j", Expr::var("j"))],
                ),
            ],
        );
        let e = Expr::par(
            ParOp::Map,
            vec![
                lam("y", bin(BinOp::Add, Expr::var("y"), Expr::int(1))),
                inner,
            ],
        );
        assert_eq!(
            fuse(&e).to_string(),
            "(create (accel::same_len (.len xs) n) (lambda (i#f2: usize) (do (let y (do (let i#f1: usize i#f2) (do (let a (index xs i#f1)) \
             (let b (do (let j i#f1) j)) (- a b)))) (+ y 1))))"
        );
    }

    #[test]
    fn a_let_with_one_consuming_use_does_not_block_fusion() {
        // { let ys = map(f, xs); reduce(+, 0, ys) }
        let e = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind("ys"),
                ty: Type::Infer,
                init: Some(Expr::par(
                    ParOp::Map,
                    vec![lam("x", Expr::var("x")), Expr::var("xs")],
                )),
            }],
            result: Some(Box::new(Expr::par(
                ParOp::Reduce,
                vec![add(), Expr::int(0), Expr::var("ys")],
            ))),
        };
        assert_eq!(
            fuse(&e).to_string(),
            "(do (reduce (lambda (a b) (+ a b)) 0 (create (.len xs) (lambda (i#f1: usize) (do (let x (index xs i#f1)) x)))))"
        );
    }

    #[test]
    fn nothing_is_computed_twice() {
        // Two uses: ys stays a manifest array.
        let two = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind("ys"),
                ty: Type::Infer,
                init: Some(Expr::par(
                    ParOp::Map,
                    vec![lam("x", Expr::var("x")), Expr::var("xs")],
                )),
            }],
            result: Some(Box::new(Expr::Tuple(vec![
                Expr::par(ParOp::Reduce, vec![add(), Expr::int(0), Expr::var("ys")]),
                Expr::par(ParOp::Scan, vec![add(), Expr::int(0), Expr::var("ys")]),
            ]))),
        };
        assert!(fuse(&two)
            .to_string()
            .starts_with("(do (let ys (create (.len xs)"));
        // One use, but inside a closure that runs once per element of zs: not substituted.
        let under_lambda = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind("ys"),
                ty: Type::Infer,
                init: Some(Expr::par(
                    ParOp::Map,
                    vec![lam("x", Expr::var("x")), Expr::var("xs")],
                )),
            }],
            result: Some(Box::new(Expr::par(
                ParOp::Map,
                vec![
                    lam(
                        "z",
                        Expr::par(ParOp::Reduce, vec![add(), Expr::var("z"), Expr::var("ys")]),
                    ),
                    Expr::var("zs"),
                ],
            ))),
        };
        assert!(fuse(&under_lambda)
            .to_string()
            .starts_with("(do (let ys (create (.len xs)"));
    }
}
