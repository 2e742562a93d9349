//! The parallel operations on the GPU, one module per kind of launch, behind
//! [`Operations`] twice: for the host program (a top-level operation becomes a launch:
//! its kernels, their parameters declared once, and the launch at run time) and for
//! kernel code (an operation nested inside an element is a sequential loop).

pub(crate) mod filter;
pub(crate) mod flatten;
pub(crate) mod histogram;
pub(crate) mod map;
pub(crate) mod parallel_loop;
pub(crate) mod reduce;
pub(crate) mod row_fold;
pub(crate) mod rows;
pub(crate) mod scan;
pub(crate) mod segmented;

use super::host_lower::Gen;
use super::kernel::*;
use crate::backend::layout::is_flat;
use accel_ir::ops::{
    Create, Filter, Flatten, Map, Map2, Operations, ParallelLoop, Reduce, ReduceByIndex, Scan,
    Scatter,
};
use accel_ir::{Expr, ParOp, Pat, ScalarType, Stmt, Type};

impl Operations for Gen {
    type Out = R<Expr>;

    fn map(&mut self, op: Map<'_>) -> R<Expr> {
        self.map_on_host(op.f, &[op.xs])
    }

    fn map2(&mut self, op: Map2<'_>) -> R<Expr> {
        self.map_on_host(op.f, &[op.xs, op.ys])
    }

    fn create(&mut self, op: Create<'_>) -> R<Expr> {
        self.create_launch(op)
    }

    fn reduce(&mut self, op: Reduce<'_>) -> R<Expr> {
        let Some(input) = self.fold_input(ParOp::Reduce, op.ne, op.xs)? else {
            return self.with_host_arg(ParOp::Reduce, &[op.op, op.ne, op.xs], 2, "input");
        };
        self.reduce_launch(op, input)
    }

    fn scan(&mut self, op: Scan<'_>) -> R<Expr> {
        let Some(input) = self.fold_input(ParOp::Scan, op.ne, op.xs)? else {
            return self.with_host_arg(ParOp::Scan, &[op.op, op.ne, op.xs], 2, "input");
        };
        self.scan_launch(op, input)
    }

    fn flatten(&mut self, op: Flatten<'_>) -> R<Expr> {
        self.flatten_on_host(op)
    }

    fn parallel_loop(&mut self, op: ParallelLoop<'_>) -> R<Expr> {
        self.loop_launch(op)
    }

    fn reduce_by_index(&mut self, op: ReduceByIndex<'_>) -> R<Expr> {
        self.histogram_launch(op)
    }

    fn filter(&mut self, op: Filter<'_>) -> R<Expr> {
        self.filter_launch(op)
    }

    fn scatter(&mut self, op: Scatter<'_>) -> R<Expr> {
        self.scatter_launch(op)
    }
}

impl Operations for KernelGen<'_> {
    type Out = R<V>;

    fn map(&mut self, op: Map<'_>) -> R<V> {
        self.nested_map(op.f, &[op.xs])
    }

    fn map2(&mut self, op: Map2<'_>) -> R<V> {
        self.nested_map(op.f, &[op.xs, op.ys])
    }

    fn create(&mut self, op: Create<'_>) -> R<V> {
        self.nested_create(op)
    }

    fn reduce(&mut self, op: Reduce<'_>) -> R<V> {
        self.nested_fold(op.op, op.ne, op.xs, false)
    }

    fn scan(&mut self, op: Scan<'_>) -> R<V> {
        self.nested_fold(op.op, op.ne, op.xs, true)
    }

    fn flatten(&mut self, op: Flatten<'_>) -> R<V> {
        self.nested_flatten(op)
    }

    fn parallel_loop(&mut self, op: ParallelLoop<'_>) -> R<V> {
        self.nested_loop(op)
    }

    fn reduce_by_index(&mut self, op: ReduceByIndex<'_>) -> R<V> {
        self.nested_histogram(op)
    }

    fn filter(&mut self, op: Filter<'_>) -> R<V> {
        self.nested_filter(op)
    }

    fn scatter(&mut self, op: Scatter<'_>) -> R<V> {
        self.nested_scatter(op)
    }
}

/// The input of a top-level `reduce` or `scan` as a delayed array: its length (a host
/// expression) and the closure giving element `i`; and the element type.
pub(crate) struct FoldInput {
    pub(crate) n: Expr,
    pub(crate) element: Expr,
    pub(crate) elem: Type,
}

impl Gen {
    /// The input of a `reduce` or `scan` over a delayed array or a variable; `None` when
    /// it must be evaluated first (its own launch). Rejects element types the kernels do
    /// not hold; rows (a row as neutral element) are [`row_fold`]'s.
    fn fold_input(&mut self, op: ParOp, ne: &Expr, xs: &Expr) -> R<Option<FoldInput>> {
        let Some((n, element)) = delayed_input(xs) else {
            return Ok(None);
        };
        let elem = self.type_of(ne)?;
        if !matches!(&elem, Type::Seq(row) if is_flat(row)) {
            if !is_flat(&elem) {
                return Err(unsupported(format!(
                    "a {} over elements of type {elem}",
                    op.name()
                )));
            }
            if words(&elem)?.len() > 24 {
                return Err(unsupported(format!(
                    "a {} over elements of more than 24 scalars",
                    op.name()
                )));
            }
        }
        Ok(Some(FoldInput { n, element, elem }))
    }
}

impl KernelGen<'_> {
    /// A `reduce` or (with `scan`) a `scan` inside a kernel: a sequential loop over a
    /// delayed input (its closure applied per index) or a sequence value; a scan's
    /// prefixes go to the thread's arena.
    fn nested_fold(&mut self, op: &Expr, ne: &Expr, xs: &Expr, scan: bool) -> R<V> {
        let ne = self.expr(ne)?;
        let acc = self.copy(&ne, "acc")?;
        let (n, delayed, value) = match xs {
            Expr::Par {
                op: ParOp::Create,
                args: c,
                ..
            } => (self.expr(&c[0])?.w[0].clone(), Some(c[1].clone()), None),
            xs => {
                let v = self.expr(xs)?;
                if !matches!(v.ty, Type::Seq(_)) {
                    return Err(unsupported(format!("a reduce over {}", v.ty)));
                }
                (v.w[0].clone(), None, Some(v))
            }
        };
        let out = if scan {
            Some(self.arena_columns(&acc.ty, &n)?)
        } else {
            None
        };
        let n = out.as_ref().map_or(n, |(len, _)| len.clone());
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
        self.depth += 1;
        let x = match (&delayed, &value) {
            (Some(f), _) => self.apply_index(f, &j)?,
            (_, Some(v)) => self.index(v, &j)?,
            _ => unreachable!("an input is delayed or a value"),
        };
        let r = self.apply(op, vec![acc.clone(), x])?;
        self.assign_words(&acc, &r);
        if let Some((_, cols)) = &out {
            self.store_columns(&acc, cols, &j);
        }
        self.depth -= 1;
        self.line("}");
        Ok(match out {
            Some((len, cols)) => V {
                ty: Type::Seq(Box::new(acc.ty)),
                w: [vec![len], cols].concat(),
            },
            None => acc,
        })
    }
}

/// A one-parameter closure `|i| { lets…; e }` split into its parameter, the `let`s (of
/// nested blocks too) and its final expression `e`.
fn closure_parts(f: &Expr) -> Option<(Pat, Vec<Stmt>, &Expr)> {
    let Expr::Lambda { params, body } = f else {
        return None;
    };
    let param = params.first()?.0.clone();
    let mut stmts = Vec::new();
    let mut e: &Expr = body;
    while let Expr::Block {
        stmts: s,
        result: Some(r),
    } = e
    {
        stmts.extend(s.iter().cloned());
        e = r;
    }
    Some((param, stmts, e))
}

/// Whether a closure's body is cheap enough to unroll: no loops, no nested parallel
/// operations.
fn light(f: &Expr) -> bool {
    let mut ok = true;
    f.walk(&mut |e| {
        if matches!(e, Expr::For { .. } | Expr::While { .. } | Expr::Par { .. }) {
            ok = false;
        }
    });
    ok
}

/// A `create(n, f)` or a variable `xs` as its length and the closure giving element `i`.
pub(super) fn delayed_input(xs: &Expr) -> Option<(Expr, Expr)> {
    match xs {
        Expr::Par {
            op: ParOp::Create,
            args,
            ..
        } => Some((args[0].clone(), args[1].clone())),
        Expr::Var(_) => Some((
            Expr::len_of(xs.clone()),
            Expr::Lambda {
                params: vec![(Pat::bind("accel#i"), Type::Scalar(ScalarType::Usize))],
                body: Box::new(Expr::Index(
                    Box::new(xs.clone()),
                    Box::new(Expr::var("accel#i")),
                )),
            },
        )),
        _ => None,
    }
}
