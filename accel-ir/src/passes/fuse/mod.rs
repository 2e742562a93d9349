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
//! Reductions over the same input are fused side by side (horizontal fusion): in a tuple,
//! or in consecutive independent `let`s, `reduce(f, a, xs)` and `reduce(g, b, xs)` become
//! one `reduce` over pairs, one pass over `xs`.
//!
//! Runs on an inlined, typed site (unique names).

use crate::expr::{Expr, ParOp, Pat, Stmt};
use crate::types::{ScalarType, Type};

/// Fuses producers into their consumers throughout `e`.
pub fn fuse(e: &Expr) -> Expr {
    let mut f = Fuser { counter: 0 };
    let mut fused = f.expr(e.clone());
    flatten::flatten_blocks(&mut fused);
    fused
}

struct Fuser {
    counter: usize,
}

fn usize_ty() -> Type {
    Type::Scalar(ScalarType::Usize)
}

/// `create(n, |i: usize| body)`.
fn delayed_array(n: Expr, i: &str, body: Expr, loc: crate::Loc) -> Expr {
    Expr::Par {
        op: ParOp::Create,
        args: vec![
            n,
            Expr::Lambda {
                params: vec![(Pat::bind(i), usize_ty())],
                body: Box::new(body),
            },
        ],
        loc,
    }
}

/// Whether an expression can be duplicated without duplicating work.
fn trivial(e: &Expr) -> bool {
    match e {
        Expr::Var(_) | Expr::Lit(_) | Expr::Const(_) => true,
        Expr::Method { recv, method, args } => {
            (method == "len" && args.is_empty() && trivial(recv))
                || (method == "min" && trivial(recv) && args.iter().all(trivial))
        }
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
            } => Some(applied_to_index(&args[1], i)),
            Expr::Var(_) => Some(Expr::Index(Box::new(xs.clone()), Box::new(i.clone()))),
            Expr::Slice { seq, .. } if Self::prefix_in_bounds(xs) => self.element(seq, i),
            _ => None,
        }
    }

    /// Whether `xs` is a prefix `&seq[0..min(a, b)]` of a variable or delayed array whose
    /// length is `a` or `b` (what an iterator's `zip` makes): in bounds by construction,
    /// so its elements are `seq`'s with no slice check.
    fn prefix_in_bounds(xs: &Expr) -> bool {
        let Expr::Slice { seq, lo, hi } = xs else {
            return false;
        };
        let Expr::Method { recv, method, args } = &**hi else {
            return false;
        };
        let starts_at_zero = matches!(**lo, Expr::Lit(crate::Lit::Int(0, _)));
        let bounds = [&**recv, args.first().unwrap_or(recv)];
        starts_at_zero
            && method == "min"
            && args.len() == 1
            && bounds.iter().all(|b| trivial(b))
            && Self::length(seq).is_some_and(|len| bounds.contains(&&len))
    }

    /// The length of a sequence expression that is a variable or a delayed array.
    fn length(xs: &Expr) -> Option<Expr> {
        match xs {
            Expr::Par {
                op: ParOp::Create,
                args,
                ..
            } if trivial(&args[0]) => Some(args[0].clone()),
            Expr::Var(_) => Some(Expr::len_of(xs.clone())),
            Expr::Slice { hi, .. } if Self::prefix_in_bounds(xs) => Some((**hi).clone()),
            _ => None,
        }
    }

    /// `create(n, |i| f(element_i of inputs...))`, when every input is a variable or a
    /// delayed array.
    fn delayed(&mut self, f: &Expr, inputs: &[Expr], loc: crate::Loc) -> Option<Expr> {
        let mut n = Self::length(&inputs[0])?;
        for other in &inputs[1..] {
            // `map2` needs equal lengths: fusion keeps the check (`same_len` is the first
            // length after checking that the second equals it), unless they are the same
            // expression (a `zip`'s two prefixes).
            let m = Self::length(other)?;
            if m == n {
                continue;
            }
            n = Expr::Assoc {
                ty: "accel".into(),
                func: "same_len".into(),
                args: vec![n, m],
            };
        }
        let i = self.fresh("i");
        let iv = Expr::Var(i.clone());
        let elems = inputs
            .iter()
            .map(|xs| self.element(xs, &iv))
            .collect::<Option<Vec<_>>>()?;
        Some(delayed_array(n, &i, Expr::applied(f, elems), loc))
    }

    fn expr(&mut self, e: Expr) -> Expr {
        // Children first: inner producers are delayed before their consumers look at them.
        let mut e = e;
        e.for_each_child_mut(&mut |c| {
            let taken = std::mem::replace(c, Expr::Tuple(vec![]));
            *c = self.expr(taken);
        });
        if let Some(hoisted) = Self::hoist_operand_lets(&e) {
            return self.expr(hoisted);
        }
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
            Expr::Par {
                op: ParOp::Reduce,
                ref args,
                loc,
            } => self.reduce_over_filter(args, loc).unwrap_or(e),
            Expr::Block { stmts, result } => {
                let (stmts, result) = self.side_by_side_lets(stmts, result);
                self.block(stmts, result)
            }
            Expr::Tuple(es) if es.len() >= 2 => match self.side_by_side(&es) {
                Some(fused) => fused,
                None => Expr::Tuple(es),
            },
            other => other,
        }
    }

    /// A consumer whose sequence operand is a block (`map(f, { let xs = &l[..]; let ys =
    /// &x[..]; create(.., |i| (xs[i], ys[i])) })`, what an iterator chain's `zip` of two
    /// slices becomes) with the block's `let`s moved before it: `{ let xs = ..; let ys =
    /// ..; map(f, create(..)) }`, so that the consumer sees its producer and fuses with
    /// it. Names are unique in a site, so the consumer's closures cannot mean other
    /// variables by them; its other operands are closures or trivial values, so no
    /// evaluation moves across the `let`s. `None` where there is nothing to move.
    fn hoist_operand_lets(e: &Expr) -> Option<Expr> {
        let Expr::Par { op, args, loc } = e else {
            return None;
        };
        let sequences: &[usize] = match op {
            ParOp::Map | ParOp::Filter => &[1],
            ParOp::Map2 => &[1, 2],
            ParOp::Reduce | ParOp::Scan => &[2],
            _ => return None,
        };
        let block_at = sequences.iter().copied().find(
            |&k| matches!(&args[k], Expr::Block { stmts, result: Some(_) } if !stmts.is_empty()),
        )?;
        let others_stay = args
            .iter()
            .enumerate()
            .all(|(k, a)| k == block_at || matches!(a, Expr::Lambda { .. }) || trivial(a));
        if !others_stay {
            return None;
        }
        let Expr::Block { stmts, result } = &args[block_at] else {
            unreachable!("found above")
        };
        let mut args = args.clone();
        args[block_at] = (**result.as_ref()?).clone();
        Some(Expr::Block {
            stmts: stmts.clone(),
            result: Some(Box::new(Expr::Par {
                op: *op,
                args,
                loc: *loc,
            })),
        })
    }

    /// `reduce(op, ne, filter(p, xs))` (or over `map(f, filter(p, xs))`) as a reduction
    /// over `xs` itself whose dropped elements count as `ne`, which is neutral (an
    /// assumption of `reduce` that debug mode checks): no array is built. `None` unless
    /// `ne` is cheap to repeat and `xs` is a variable or a delayed array.
    fn reduce_over_filter(&mut self, args: &[Expr], loc: crate::Loc) -> Option<Expr> {
        let (op, ne) = (&args[0], &args[1]);
        let (f, filtered) = match &args[2] {
            Expr::Par {
                op: ParOp::Map,
                args: m,
                ..
            } => (Some(&m[0]), &m[1]),
            other => (None, other),
        };
        let Expr::Par {
            op: ParOp::Filter,
            args: fa,
            ..
        } = filtered
        else {
            return None;
        };
        let cheap = |e: &Expr| trivial(e) || matches!(e, Expr::Tuple(es) if es.iter().all(trivial));
        let (p, xs) = (&fa[0], &fa[1]);
        let Expr::Lambda { params, .. } = p else {
            return None;
        };
        if !cheap(ne) {
            return None;
        }
        let n = Self::length(xs)?;
        let i = self.fresh("i");
        let x = self.fresh("kept");
        let element = self.element(xs, &Expr::Var(i.clone()))?;
        let xv = Expr::Var(x.clone());
        let value = match f {
            Some(f) => Expr::applied(f, vec![xv.clone()]),
            None => xv.clone(),
        };
        let body = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind(&x),
                ty: params.first()?.1.clone(),
                init: Some(element),
            }],
            result: Some(Box::new(Expr::If {
                cond: Box::new(Expr::applied(p, vec![xv])),
                then: Box::new(value),
                els: Some(Box::new(ne.clone())),
            })),
        };
        let input = delayed_array(n, &i, body, loc);
        Some(Expr::Par {
            op: ParOp::Reduce,
            args: vec![op.clone(), ne.clone(), input],
            loc,
        })
    }

    /// `(reduce(f, a, xs), reduce(g, b, xs), …)` over one input: one reduction over tuples,
    /// then its parts. `None` unless every element reduces the same input.
    fn side_by_side(&mut self, es: &[Expr]) -> Option<Expr> {
        let reduces: Vec<(&Expr, &Expr, &Expr)> = es
            .iter()
            .map(|e| match e {
                Expr::Par {
                    op: ParOp::Reduce,
                    args,
                    ..
                } => Some((&args[0], &args[1], &args[2])),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let input = self.as_delayed(reduces[0].2)?;
        for (_, _, xs) in &reduces[1..] {
            let other = self.as_delayed(xs)?;
            if !same_producer(&input, &other) {
                return None;
            }
        }
        let input = &input;
        let k = reduces.len();
        let (a, b) = (self.fresh("acc"), self.fresh("elem"));
        let parts = |name: &str| -> Vec<Expr> {
            (0..k)
                .map(|j| Expr::Field(Box::new(Expr::var(name)), j.to_string()))
                .collect()
        };
        let (ap, bp) = (parts(&a), parts(&b));
        let combined = Expr::Tuple(
            reduces
                .iter()
                .enumerate()
                .map(|(j, (op, _, _))| Expr::applied(op, vec![ap[j].clone(), bp[j].clone()]))
                .collect(),
        );
        let op = Expr::Lambda {
            params: vec![(Pat::bind(&a), Type::Infer), (Pat::bind(&b), Type::Infer)],
            body: Box::new(combined),
        };
        let ne = Expr::Tuple(reduces.iter().map(|(_, ne, _)| (*ne).clone()).collect());
        // Every reduction sees the same element: a tuple of k copies of it.
        let Expr::Par {
            args: cargs, loc, ..
        } = input
        else {
            return None;
        };
        let Expr::Lambda { params, body } = &cargs[1] else {
            return None;
        };
        let x = self.fresh("x");
        let copies = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind(&x),
                ty: Type::Infer,
                init: Some((**body).clone()),
            }],
            result: Some(Box::new(Expr::Tuple(vec![Expr::var(&x); k]))),
        };
        let producer = Expr::Par {
            op: ParOp::Create,
            args: vec![
                cargs[0].clone(),
                Expr::Lambda {
                    params: params.clone(),
                    body: Box::new(copies),
                },
            ],
            loc: *loc,
        };
        Some(Expr::Par {
            op: ParOp::Reduce,
            args: vec![op, ne, producer],
            loc: *loc,
        })
    }

    /// A sequence input as a delayed array: itself, or `create(xs.len(), |i| xs[i])`.
    fn as_delayed(&mut self, xs: &Expr) -> Option<Expr> {
        match xs {
            Expr::Par {
                op: ParOp::Create, ..
            } => Some(xs.clone()),
            Expr::Var(_) => {
                let i = self.fresh("i");
                Some(Expr::Par {
                    op: ParOp::Create,
                    args: vec![
                        Expr::len_of(xs.clone()),
                        Expr::Lambda {
                            params: vec![(Pat::bind(&i), usize_ty())],
                            body: Box::new(Expr::Index(
                                Box::new(xs.clone()),
                                Box::new(Expr::Var(i)),
                            )),
                        },
                    ],
                    loc: Default::default(),
                })
            }
            _ => None,
        }
    }

    /// Consecutive `let`s that each reduce the same input, none using another's result,
    /// become one `let` of a fused reduction and projections of its parts.
    fn side_by_side_lets(
        &mut self,
        stmts: Vec<Stmt>,
        result: Option<Box<Expr>>,
    ) -> (Vec<Stmt>, Option<Box<Expr>>) {
        let reduce_input = |s: &Stmt| match s {
            Stmt::Let {
                pat: Pat::Bind { mutable: false, .. },
                init:
                    Some(Expr::Par {
                        op: ParOp::Reduce,
                        args,
                        ..
                    }),
                ..
            } => Some(args[2].clone()),
            _ => None,
        };
        let mut out = Vec::new();
        let mut k = 0;
        while k < stmts.len() {
            let Some(input) = reduce_input(&stmts[k]) else {
                out.push(stmts[k].clone());
                k += 1;
                continue;
            };
            // The run of lets reducing the same input, independent of each other.
            let mut end = k + 1;
            let mut names: Vec<String> = stmts[k].bound_names();
            while end < stmts.len()
                && reduce_input(&stmts[end]).as_ref() == Some(&input)
                && names.iter().all(|n| stmt_uses(&stmts[end], n) == 0)
            {
                names.extend(stmts[end].bound_names());
                end += 1;
            }
            if end - k < 2 {
                out.push(stmts[k].clone());
                k += 1;
                continue;
            }
            let inits: Vec<Expr> = stmts[k..end]
                .iter()
                .filter_map(|s| match s {
                    Stmt::Let { init: Some(e), .. } => Some(e.clone()),
                    _ => None,
                })
                .collect();
            match self.side_by_side(&inits) {
                Some(fused) => {
                    let all = self.fresh("reduced");
                    out.push(Stmt::Let {
                        pat: Pat::bind(&all),
                        ty: Type::Infer,
                        init: Some(fused),
                    });
                    for (j, s) in stmts[k..end].iter().enumerate() {
                        if let Stmt::Let { pat, ty, .. } = s {
                            let part = Expr::Field(Box::new(Expr::var(&all)), j.to_string());
                            out.push(Stmt::Let {
                                pat: pat.clone(),
                                ty: ty.clone(),
                                init: Some(part),
                            });
                        }
                    }
                }
                None => out.extend(stmts[k..end].iter().cloned()),
            }
            k = end;
        }
        (out, result)
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

/// Whether two delayed arrays are the same up to the name of their index.
fn same_producer(a: &Expr, b: &Expr) -> bool {
    let (
        Expr::Par {
            op: ParOp::Create,
            args: x,
            ..
        },
        Expr::Par {
            op: ParOp::Create,
            args: y,
            ..
        },
    ) = (a, b)
    else {
        return false;
    };
    let (
        Expr::Lambda {
            params: px,
            body: bx,
        },
        Expr::Lambda {
            params: py,
            body: by,
        },
    ) = (&x[1], &y[1])
    else {
        return false;
    };
    let (Some((Pat::Bind { name: nx, .. }, _)), Some((Pat::Bind { name: ny, .. }, _))) =
        (px.first(), py.first())
    else {
        return false;
    };
    let mut renamed = (**by).clone();
    rename_var(&mut renamed, ny, nx);
    x[0] == y[0] && **bx == renamed
}

/// A delayed array's element function applied to an index. When the index is a variable and
/// the parameter a plain immutable name, the body is renamed rather than given a
/// `let param = i`: the element reads `xs[i]` with the loop's own index, so the backends'
/// bounds proofs (which look for a sequence indexed by the loop variable) see through a
/// chain of composed producers.
fn applied_to_index(f: &Expr, i: &Expr) -> Expr {
    if let (Expr::Lambda { params, body }, Expr::Var(index)) = (f, i) {
        if let [(
            Pat::Bind {
                name,
                mutable: false,
            },
            _,
        )] = params.as_slice()
        {
            if !body.binds(index) && !body.binds(name) {
                let mut body = (**body).clone();
                rename_var(&mut body, name, index);
                return body;
            }
        }
    }
    Expr::applied(f, vec![i.clone()])
}

fn rename_var(e: &mut Expr, from: &str, to: &str) {
    if let Expr::Var(v) = e {
        if v == from {
            *v = to.to_string();
        }
    }
    e.for_each_child_mut(&mut |c| rename_var(c, from, to));
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

impl Stmt {
    /// The names a `let` binds.
    fn bound_names(&self) -> Vec<String> {
        match self {
            Stmt::Let { pat, .. } => pat.bound_names(),
            Stmt::Expr(_) => vec![],
        }
    }
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
                ParOp::ReduceByIndex => &[0, 3, 4],
                ParOp::Filter => &[1],
                ParOp::Scatter => &[0, 1, 2],
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

mod flatten;
#[cfg(test)]
mod tests;
