//! `reduce_by_index` (histograms) and `scatter` on the GPU: a kernel copies the initial
//! bins (the destination) into the result, then one thread per value (grid-stride)
//! combines it into its bin with an atomic operation per scalar of the element, or, for
//! `scatter`, writes it there (indices are distinct, which debug mode checks). That needs an operator that is `+`, `*`,
//! `min` or `max` of each scalar (counts, sums, k-means' sums as tuples); integers add and
//! take minima and maxima with the hardware's atomics, other combinations with
//! compare-and-swap loops. Float sums combine in whatever order the threads reach a bin
//! (within the documented tolerance). Other operators are not compiled for the GPU yet
//! (the site runs on the CPU). Nested, a sequential loop.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use crate::backend::failure::FailureKind;
use crate::backend::layout::is_flat;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::{ReduceByIndex, Scatter};
use accel_ir::passes::recognize::{componentwise, Prim};
use accel_ir::{Expr, ParOp, Type};

kernel_params!(
    /// Copies the initial bins `0..m` into the result columns.
    HistInit "_init" { m; out }
);
kernel_params!(
    /// Combines values `0..n` into their bins (`< m`) of the result columns.
    HistCombine "" { n, m; out }
);

impl Gen {
    /// A top-level `reduce_by_index`.
    pub(super) fn histogram_launch(&mut self, h: ReduceByIndex<'_>) -> R<Expr> {
        let args = [h.dest, h.op, h.ne, h.is, h.vs];
        for (k, what) in [(0, "bins"), (3, "indices"), (4, "values")] {
            if super::delayed_input(args[k]).is_none() {
                return self.with_host_arg(ParOp::ReduceByIndex, &args, k, what);
            }
        }
        let elem = self.type_of(h.ne)?;
        if !is_flat(&elem) {
            return Err(unsupported(format!(
                "a reduce_by_index over elements of type {elem}"
            )));
        }
        let update = Update::Atomic(componentwise(h.op)
            .filter(|p| p.len() == words(&elem).map_or(0, |w| w.len()))
            .ok_or_else(|| {
                unsupported(
                    "a reduce_by_index whose operator is not `+`, `*`, `min` or `max` of each scalar",
                )
            })?);
        self.indexed_update_launch(&args, [h.dest, h.is, h.vs], &elem, update, "histogram_len")
    }

    /// A top-level `scatter`.
    pub(super) fn scatter_launch(&mut self, s: Scatter<'_>) -> R<Expr> {
        let args = [s.dest, s.is, s.vs];
        for (k, what) in [(0, "destination"), (1, "indices"), (2, "values")] {
            if super::delayed_input(args[k]).is_none() {
                return self.with_host_arg(ParOp::Scatter, &args, k, what);
            }
        }
        let elem = match self.type_of(s.dest)? {
            Type::Seq(e) if is_flat(&e) => *e,
            t => {
                return Err(unsupported(format!(
                    "a scatter into a sequence of type {t}"
                )))
            }
        };
        self.indexed_update_launch(
            &args,
            [s.dest, s.is, s.vs],
            &elem,
            Update::Write,
            "scatter_len",
        )
    }

    /// The launch of `reduce_by_index` or `scatter`: `dest`, `is` and `vs` delayed arrays
    /// (or variables); `check` the host function comparing the index and value counts.
    fn indexed_update_launch(
        &mut self,
        args: &[&Expr],
        [dest, is, vs]: [&Expr; 3],
        elem: &Type,
        update: Update,
        check: &str,
    ) -> R<Expr> {
        let (m, dest) = super::delayed_input(dest).ok_or("the bins as a delayed array")?;
        let (n_is, is) = super::delayed_input(is).ok_or("the indices as a delayed array")?;
        let (n_vs, vs) = super::delayed_input(vs).ok_or("the values as a delayed array")?;
        // The value count, checked against the index count on the host.
        let n = Expr::Assoc {
            ty: "accel".into(),
            func: check.into(),
            args: vec![n_is, n_vs],
        };
        let m_host = self.host(&m)?;
        let kind = LaunchKind::Histogram {
            elem: elem.clone(),
            m: m_host,
        };
        self.launch(
            args,
            &n,
            kind,
            &[HistInit::SUFFIX, HistCombine::SUFFIX],
            |kg, name| kg.histogram_kernels(name, &dest, &is, &vs, elem, &update),
        )
    }
}

/// How a value meets its bin.
enum Update {
    /// Combined with one atomic operation per scalar.
    Atomic(Vec<Prim>),
    /// Written over it (`scatter`).
    Write,
}

impl KernelGen<'_> {
    fn histogram_kernels(
        &mut self,
        name: &str,
        dest: &Expr,
        is: &Expr,
        vs: &Expr,
        elem: &Type,
        update: &Update,
    ) -> R<String> {
        let cols = self.begin_params::<HistInit>(name, elem)?.remove(0);
        self.line("for (ull b = blockIdx.x * (ull)blockDim.x + threadIdx.x; b < m; b += (ull)gridDim.x * blockDim.x) {");
        self.depth += 1;
        let v = self.apply_index(dest, "b")?;
        self.store_columns(&v, &cols, "b");
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        let mut src = self.end();
        self.scope.clear();
        let cols = self.begin_params::<HistCombine>(name, elem)?.remove(0);
        self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {");
        self.depth += 1;
        let bin = self.apply_index(is, "i")?.w[0].clone();
        let b = self.fresh("bin");
        self.line(&format!("const ull {b} = {bin};"));
        self.line(&format!("if ({b} < m) {{"));
        self.depth += 1;
        let v = self.apply_index(vs, "i")?;
        match update {
            Update::Atomic(prims) => {
                for ((col, x), p) in cols.iter().zip(&v.w).zip(prims) {
                    let op = match p {
                        Prim::Add => "add",
                        Prim::Mul => "mul",
                        Prim::Min => "min",
                        Prim::Max => "max",
                    };
                    self.line(&format!("accel_atomic_{op}(&{col}[{b}], {x});"));
                }
            }
            Update::Write => self.store_columns(&v, &cols, &b),
        }
        self.depth -= 1;
        self.line("}");
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    /// A `reduce_by_index` inside a kernel: the bins copied into the thread's arena, then
    /// each value combined into its bin in order.
    pub(super) fn nested_histogram(&mut self, h: ReduceByIndex<'_>) -> R<V> {
        let elem = self.type_of(h.ne)?;
        let args = [h.dest, h.is, h.vs];
        self.nested_indexed(
            &elem,
            args,
            FailureKind::HistogramLengths,
            |kg, cols, b, v| {
                let current = V {
                    ty: elem.clone(),
                    w: cols.iter().map(|c| format!("{c}[{b}]")).collect(),
                };
                let current = kg.copy(&current, "cur")?;
                let r = kg.apply(h.op, vec![current, v])?;
                kg.store_columns(&r, cols, b);
                Ok(())
            },
        )
    }

    /// A `scatter` inside a kernel: the destination copied into the thread's arena, then
    /// each value written at its index.
    pub(super) fn nested_scatter(&mut self, s: Scatter<'_>) -> R<V> {
        let elem = match self.type_of(s.dest)? {
            Type::Seq(e) => *e,
            _ => return Err("a scatter into a value that is not a sequence".into()),
        };
        let args = [s.dest, s.is, s.vs];
        self.nested_indexed(
            &elem,
            args,
            FailureKind::ScatterLengths,
            |kg, cols, at, v| {
                kg.store_columns(&v, cols, at);
                Ok(())
            },
        )
    }

    /// A nested `reduce_by_index` or `scatter`: `dest` copied into the thread's arena,
    /// `is` and `vs` compared in length (`kind` reported when they differ), then each value
    /// and its index given to `update` with the arena's columns when the index is below
    /// the destination's length. The arena's sequence is the result.
    fn nested_indexed(
        &mut self,
        elem: &Type,
        [dest, is, vs]: [&Expr; 3],
        kind: FailureKind,
        update: impl FnOnce(&mut Self, &[String], &str, V) -> R<()>,
    ) -> R<V> {
        let dest = self.expr(dest)?;
        let (m, cols) = self.arena_columns(elem, &dest.w[0])?;
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {m}; {j}++) {{"));
        self.depth += 1;
        let x = self.index(&dest, &j)?;
        self.store_columns(&x, &cols, &j);
        self.depth -= 1;
        self.line("}");
        let is = self.expr(is)?;
        let vs = self.expr(vs)?;
        let (n, count) = (is.w[0].clone(), vs.w[0].clone());
        self.line(&format!(
            "if ({n} != {count}) accel_fail(err, {}, {n}, {count});",
            kind.code()
        ));
        self.line(&format!(
            "for (ull {j} = 0; {j} < {n} && {j} < {count}; {j}++) {{"
        ));
        self.depth += 1;
        let at = self.index(&is, &j)?.w[0].clone();
        let at = self.let_("const ull", "at", &at);
        let v = self.index(&vs, &j)?;
        let v = self.copy(&v, "v")?;
        self.line(&format!("if ({at} < {m}) {{"));
        self.depth += 1;
        update(self, &cols, &at, v)?;
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(V {
            ty: Type::Seq(Box::new(elem.clone())),
            w: [vec![m], cols].concat(),
        })
    }
}

/// Runs a `reduce_by_index`: the result columns, the initial bins copied, then the values
/// combined in.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type, m: &Expr) -> R<HostVal> {
    let n = at.n;
    let m = run.eval(m)?.w[0];
    let outs = run.alloc_rows(elem, 1, m)?;
    if m > 0 {
        let out = outs.clone();
        run.start(at, at.grid(m, at.sms * 32), &HistInit { m, out })?;
    }
    if n > 0 && m > 0 {
        let out = outs.clone();
        run.start(at, at.grid(n, at.sms * 32), &HistCombine { n, m, out })?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(elem.clone())),
        w: [vec![m], outs].concat(),
    })
}
