//! `reduce_by_index` (histograms) on the GPU: a kernel copies the initial bins into the
//! result, then one thread per value (grid-stride) combines it into its bin with an
//! atomic operation per scalar of the element. That needs an operator that is `+`, `*`,
//! `min` or `max` of each scalar (counts, sums, k-means' sums as tuples); integers add and
//! take minima and maxima with the hardware's atomics, other combinations with
//! compare-and-swap loops. Float sums combine in whatever order the threads reach a bin
//! (within the documented tolerance). Other operators are not compiled for the GPU yet
//! (the site runs on the CPU). Nested, a sequential loop.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use crate::backend::layout::{is_flat, size_of, Word};
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::ReduceByIndex;
use accel_ir::passes::recognize::{componentwise, Prim};
use accel_ir::{Expr, ParOp, Pat, ScalarType, Type};

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
            if delayed_input(args[k]).is_none() {
                return self.with_host_arg(ParOp::ReduceByIndex, &args, k, what);
            }
        }
        let elem = self.type_of(h.ne)?;
        if !is_flat(&elem) {
            return Err(unsupported(format!(
                "a reduce_by_index over elements of type {elem}"
            )));
        }
        let prims = componentwise(h.op)
            .filter(|p| p.len() == words(&elem).map_or(0, |w| w.len()))
            .ok_or_else(|| {
                unsupported(
                    "a reduce_by_index whose operator is not `+`, `*`, `min` or `max` of each scalar",
                )
            })?;
        let (m, dest) = delayed_input(h.dest).ok_or("the bins as a delayed array")?;
        let (n_is, is) = delayed_input(h.is).ok_or("the indices as a delayed array")?;
        let (n_vs, vs) = delayed_input(h.vs).ok_or("the values as a delayed array")?;
        // The value count, checked against the index count on the host.
        let n = Expr::Assoc {
            ty: "accel".into(),
            func: "histogram_len".into(),
            args: vec![n_is, n_vs],
        };
        let m_host = self.host(&m)?;
        let kind = LaunchKind::Histogram {
            elem: elem.clone(),
            m: m_host,
        };
        self.launch(
            &args,
            &n,
            kind,
            &[HistInit::SUFFIX, HistCombine::SUFFIX],
            |kg, name| kg.histogram_kernels(name, &dest, &is, &vs, &elem, &prims),
        )
    }
}

impl KernelGen<'_> {
    fn histogram_kernels(
        &mut self,
        name: &str,
        dest: &Expr,
        is: &Expr,
        vs: &Expr,
        elem: &Type,
        prims: &[Prim],
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
        for ((col, x), p) in cols.iter().zip(&v.w).zip(prims) {
            let op = match p {
                Prim::Add => "add",
                Prim::Mul => "mul",
                Prim::Min => "min",
                Prim::Max => "max",
            };
            self.line(&format!("accel_atomic_{op}(&{col}[{b}], {x});"));
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
        let dest = self.expr(h.dest)?;
        let (m, cols) = self.arena_columns(&elem, &dest.w[0])?;
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {m}; {j}++) {{"));
        self.depth += 1;
        let x = self.index(&dest, &j)?;
        self.store_columns(&x, &cols, &j);
        self.depth -= 1;
        self.line("}");
        let is = self.expr(h.is)?;
        let vs = self.expr(h.vs)?;
        let (n, count) = (is.w[0].clone(), vs.w[0].clone());
        self.line(&format!(
            "if ({n} != {count}) accel_fail(err, {}, {n}, {count});",
            crate::backend::failure::FailureKind::HistogramLengths.code()
        ));
        self.line(&format!(
            "for (ull {j} = 0; {j} < {n} && {j} < {count}; {j}++) {{"
        ));
        self.depth += 1;
        let bin = self.index(&is, &j)?.w[0].clone();
        let b = self.fresh("bin");
        self.line(&format!("const ull {b} = {bin};"));
        self.line(&format!("if ({b} < {m}) {{"));
        self.depth += 1;
        let current = V {
            ty: elem.clone(),
            w: cols.iter().map(|c| format!("{c}[{b}]")).collect(),
        };
        let current = self.copy(&current, "cur")?;
        let v = self.index(&vs, &j)?;
        let r = self.apply(h.op, vec![current, v])?;
        self.store_columns(&r, &cols, &b);
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(V {
            ty: Type::Seq(Box::new(elem)),
            w: [vec![m], cols].concat(),
        })
    }
}

/// A `create(n, f)` or a variable `xs` as its length and the closure giving element `i`.
fn delayed_input(xs: &Expr) -> Option<(Expr, Expr)> {
    match xs {
        Expr::Par {
            op: ParOp::Create,
            args,
            ..
        } => Some((args[0].clone(), args[1].clone())),
        Expr::Var(_) => Some((
            Expr::Method {
                recv: Box::new(xs.clone()),
                method: "len".into(),
                args: vec![],
            },
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

/// Runs a `reduce_by_index`: the result columns, the initial bins copied, then the values
/// combined in.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type, m: &Expr) -> R<HostVal> {
    let n = at.n;
    let m = run.eval(m)?.w[0];
    let mut outs = Vec::new();
    for c in columns(elem)? {
        let Word::Ptr(s) = c else {
            return Err("a histogram column is not a pointer".into());
        };
        outs.push(run.alloc(m as usize * size_of(s))?);
    }
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
