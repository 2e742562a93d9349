//! `reduce_by_index` (histograms) and `scatter` on the GPU, after Henriksen et al.,
//! "Compiling Generalized Histograms for GPU" (SC'20): a kernel copies the initial bins
//! (the destination) into the result, then one thread per value (grid-stride) computes
//! it and meets its bin in one of three ways ([`Update`]):
//!
//! - an operator that is `+`, `*`, `min` or `max` of each 32- or 64-bit scalar (counts,
//!   sums, k-means' sums as tuples) is one atomic operation per scalar: the hardware's
//!   where it has one, a compare-and-swap loop otherwise. When every block's copy of the
//!   bins fits in shared memory ([`SHARED_SLOTS`]), each block combines into its own
//!   sub-histogram first (initialised with the neutral element) and adds that to the
//!   result at its end, so that values meet in fast memory and few atomics reach global
//!   memory; the host picks that kernel when the bins fit.
//! - any other operator (tuples combined by a lambda, records, booleans) holds a lock per
//!   bin while it reads the bin, applies the operator and writes it back;
//! - `scatter` writes the value (indices are distinct, which debug mode checks).
//!
//! Float sums combine in whatever order the threads reach a bin (within the documented
//! tolerance). Nested, a sequential loop.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use crate::backend::failure::FailureKind;
use crate::backend::layout::{is_flat, Word};
use crate::cuda::c::word_cty;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::{ReduceByIndex, Scatter};
use accel_ir::passes::recognize::{componentwise, Prim};
use accel_ir::{Expr, ParOp, ScalarType, Type};

kernel_params!(
    /// Copies the initial bins `0..m` into the result columns and clears their locks
    /// (`locks` null when the update takes none).
    HistInit "_init" { m, locks; out }
);
kernel_params!(
    /// Combines values `0..n` into their bins (`< m`) of the result columns.
    HistCombine "" { n, m, locks; out }
);
kernel_params!(
    /// Combines values `0..n` into a sub-histogram in shared memory per block, then
    /// those into the result columns.
    HistShared "_shared" { n, m; out }
);

/// The 8-byte slots of the shared-memory sub-histogram: a bin count times the element's
/// scalars at most this many takes that path (16 KiB, so that several blocks share an
/// SM: 256 bins of k-means' 4-scalar sums, 2048 bins of counts).
pub const SHARED_SLOTS: u64 = 2048;

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
        let scalars = words(&elem)?;
        // GPUs have no atomics of 8- or 16-bit words: those bins take the lock.
        let atomic = scalars
            .iter()
            .all(|w| !matches!(w, Word::Scalar(s) if *s == ScalarType::Bool || s.is_small_int()));
        let update = match componentwise(h.op) {
            Some(prims) if atomic && prims.len() == scalars.len() => Update::Atomic {
                prims,
                ne: h.ne.clone(),
            },
            _ => Update::Locked(h.op.clone()),
        };
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
            locked: matches!(update, Update::Locked(_)),
            shared: matches!(update, Update::Atomic { .. }),
        };
        let mut suffixes = vec![HistInit::SUFFIX, HistCombine::SUFFIX];
        if let Update::Atomic { .. } = update {
            suffixes.push(HistShared::SUFFIX);
        }
        // The op and the neutral element may read host variables too.
        let mut all = args.to_vec();
        let extra: Vec<Expr> = match &update {
            Update::Atomic { ne, .. } => vec![ne.clone()],
            Update::Locked(op) => vec![op.clone()],
            Update::Write => vec![],
        };
        all.extend(extra.iter());
        self.launch(&all, &n, kind, &suffixes, |kg, name| {
            kg.histogram_kernels(name, &dest, &is, &vs, elem, &update)
        })
    }
}

/// How a value meets its bin.
enum Update {
    /// Combined with one atomic operation per scalar; `ne` the operator's neutral
    /// element, which starts each block's shared sub-histogram.
    Atomic { prims: Vec<Prim>, ne: Expr },
    /// Combined by the operator while the bin's lock is held.
    Locked(Expr),
    /// Written over it (`scatter`).
    Write,
}

/// The name of the atomic operation of `p` in the prelude.
fn atomic_name(p: Prim) -> &'static str {
    match p {
        Prim::Add => "accel_atomic_add",
        Prim::Mul => "accel_atomic_mul",
        Prim::Min => "accel_atomic_min",
        Prim::Max => "accel_atomic_max",
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
        update: &Update,
    ) -> R<String> {
        let cols = self.begin_params::<HistInit>(name, elem)?.remove(0);
        self.line("for (ull b = blockIdx.x * (ull)blockDim.x + threadIdx.x; b < m; b += (ull)gridDim.x * blockDim.x) {");
        self.depth += 1;
        let v = self.apply_index(dest, "b")?;
        self.store_columns(&v, &cols, "b");
        self.line("if (locks != 0) ((unsigned*)locks)[b] = 0;");
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        let mut src = self.end();
        self.scope.clear();
        let cols = self.begin_params::<HistCombine>(name, elem)?.remove(0);
        self.values_loop(is, vs, |kg, b, v| {
            match update {
                Update::Atomic { prims, .. } => kg.atomic_combine(prims, &cols, b, &v.w),
                Update::Locked(op) => kg.locked_update(op, &cols, b, v)?,
                Update::Write => kg.store_columns(&v, &cols, b),
            }
            Ok(())
        })?;
        src.push_str(&self.end());
        if let Update::Atomic { prims, ne } = update {
            self.scope.clear();
            src.push_str(&self.shared_histogram_kernel(name, is, vs, elem, prims, ne)?);
        }
        Ok(src)
    }

    /// The grid-stride loop over the values: each value computed (so that its failures
    /// are reported whatever its index, as the reference does), then given to `update`
    /// with its bin when that is below `m`.
    fn values_loop(
        &mut self,
        is: &Expr,
        vs: &Expr,
        update: impl FnOnce(&mut Self, &str, V) -> R<()>,
    ) -> R<()> {
        self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {");
        self.depth += 1;
        let bin = self.apply_index(is, "i")?.w[0].clone();
        let b = self.fresh("bin");
        self.line(&format!("const ull {b} = {bin};"));
        let v = self.apply_index(vs, "i")?;
        let v = self.copy(&v, "v")?;
        self.line(&format!("if ({b} < m) {{"));
        self.depth += 1;
        update(self, &b, v)?;
        self.depth -= 1;
        self.line("}");
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        Ok(())
    }

    /// `op(bin, v)` written into bin `b` of `cols` under the bin's lock. The bin is read
    /// through `volatile` so that no stale cached copy is combined.
    fn locked_update(&mut self, op: &Expr, cols: &[String], b: &str, v: V) -> R<()> {
        let done = self.fresh("done");
        self.line(&format!("bool {done} = false;"));
        self.line(&format!("while (!{done}) {{"));
        self.depth += 1;
        self.line(&format!("if (accel_try_lock((unsigned*)locks + {b})) {{"));
        self.depth += 1;
        self.combine_into_bin(op, cols, b, v, true)?;
        self.line(&format!("accel_unlock((unsigned*)locks + {b});"));
        self.line(&format!("{done} = true;"));
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(())
    }

    /// `op(bin, v)` written into bin `b` of `cols`; the bin read through `volatile` when
    /// other threads may have written it since this one last read it (under a lock).
    fn combine_into_bin(
        &mut self,
        op: &Expr,
        cols: &[String],
        b: &str,
        v: V,
        volatile: bool,
    ) -> R<()> {
        let current = V {
            ty: v.ty.clone(),
            w: cols
                .iter()
                .zip(words(&v.ty)?)
                .map(|(c, w)| match volatile {
                    true => format!("*(volatile {}*)&{c}[{b}]", word_cty(w)),
                    false => format!("{c}[{b}]"),
                })
                .collect(),
        };
        let current = self.copy(&current, "cur")?;
        let r = self.apply(op, vec![current, v])?;
        self.store_columns(&r, cols, b);
        Ok(())
    }

    /// `values` (one per scalar) combined atomically into bin `b` of `bins`.
    fn atomic_combine(&mut self, prims: &[Prim], bins: &[String], b: &str, values: &[String]) {
        for ((bin, x), p) in bins.iter().zip(values).zip(prims) {
            self.line(&format!("{}(&{bin}[{b}], {x});", atomic_name(*p)));
        }
    }

    /// The kernel that combines each block's values in a sub-histogram in shared memory
    /// (column `k` at slots `k * m ..`), then adds it to the result's bins atomically.
    fn shared_histogram_kernel(
        &mut self,
        name: &str,
        is: &Expr,
        vs: &Expr,
        elem: &Type,
        prims: &[Prim],
        ne: &Expr,
    ) -> R<String> {
        let cols = self.begin_params::<HistShared>(name, elem)?.remove(0);
        self.line(&format!(
            "__shared__ ull accel_shared_bins[{SHARED_SLOTS}];"
        ));
        let kinds = words(elem)?;
        let mut sub = Vec::new();
        for (k, w) in kinds.iter().enumerate() {
            let t = word_cty(*w);
            let s = self.fresh("sub");
            self.line(&format!("{t}* {s} = ({t}*)(accel_shared_bins + {k} * m);"));
            sub.push(s);
        }
        let ne = self.expr(ne)?;
        let ne = self.copy(&ne, "ne")?;
        self.line("for (ull b = threadIdx.x; b < m; b += blockDim.x) {");
        self.depth += 1;
        self.store_columns(&ne, &sub, "b");
        self.depth -= 1;
        self.line("}");
        self.line("__syncthreads();");
        self.values_loop(is, vs, |kg, b, v| {
            kg.atomic_combine(prims, &sub, b, &v.w);
            Ok(())
        })?;
        self.line("__syncthreads();");
        self.line("for (ull b = threadIdx.x; b < m; b += blockDim.x) {");
        self.depth += 1;
        let totals: Vec<String> = sub.iter().map(|s| format!("{s}[b]")).collect();
        self.atomic_combine(prims, &cols, "b", &totals);
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
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
            |kg, cols, b, v| kg.combine_into_bin(h.op, cols, b, v, false),
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
pub(crate) fn run(
    run: &mut Run<'_, '_>,
    at: &Launching,
    elem: &Type,
    m: &Expr,
    locked: bool,
    shared: bool,
) -> R<HostVal> {
    let n = at.n;
    let m = run.eval(m)?.w[0];
    let outs = run.alloc_rows(elem, 1, m)?;
    let locks = if locked && m > 0 {
        run.alloc(4 * m as usize)?
    } else {
        0
    };
    if m > 0 {
        let out = outs.clone();
        run.start(at, at.grid(m, at.sms * 32), &HistInit { m, locks, out })?;
    }
    let slots = m.saturating_mul(columns(elem)?.len() as u64);
    if n > 0 && m > 0 && shared && slots <= SHARED_SLOTS {
        // Enough values per block to pay for clearing and adding its sub-histogram.
        let blocks = n.div_ceil(16 * at.threads).clamp(1, at.sms * 8) as u32;
        let out = outs.clone();
        run.start(at, blocks, &HistShared { n, m, out })?;
    } else if n > 0 && m > 0 {
        let out = outs.clone();
        run.start(
            at,
            at.grid(n, at.sms * 32),
            &HistCombine { n, m, locks, out },
        )?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(elem.clone())),
        w: [vec![m], outs].concat(),
    })
}
