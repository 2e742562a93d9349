//! `filter` on the GPU, as stream compaction in three kernels. Each block takes a
//! contiguous chunk and each of its threads a contiguous part of that: the first kernel
//! computes every element once (its producer included) into a scratch array with a flag
//! saying whether it is kept, and each block's count of kept elements; one thread turns
//! the counts into the blocks' offsets (and the total, which sizes the result); the last
//! kernel gives each thread its offset (an exclusive scan of the threads' counts in shared
//! memory) and copies the kept elements there in order. Nested, a sequential loop into the
//! thread's arena.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::Filter;
use accel_ir::{Expr, ParOp, Type};

kernel_params!(
    /// Every element into the scratch columns with its flag; each block's count.
    FilterFlags "_flags" { n, chunk, counts, flags; scratch }
);
kernel_params!(
    /// The `count` block counts turned into offsets, the total after them, in one thread.
    FilterOffsets "_offsets" { count, counts }
);
kernel_params!(
    /// The kept elements copied from the scratch columns to their place in the result.
    FilterWrite "_write" { n, chunk, counts, flags; scratch, out }
);

impl Gen {
    /// A top-level `filter`.
    pub(super) fn filter_launch(&mut self, op: Filter<'_>) -> R<Expr> {
        let args = [op.p, op.xs];
        let Some((n, element)) = super::delayed_input(op.xs) else {
            return self.with_host_arg(ParOp::Filter, &args, 1, "input");
        };
        let elem = self.type_of(op.xs).and_then(|t| match t {
            Type::Seq(e) if !matches!(*e, Type::Seq(_)) => Ok(*e),
            t => Err(unsupported(format!("a filter over a sequence of type {t}"))),
        })?;
        let kind = LaunchKind::Filter { elem: elem.clone() };
        let suffixes = [
            FilterFlags::SUFFIX,
            FilterOffsets::SUFFIX,
            FilterWrite::SUFFIX,
        ];
        self.launch(&args, &n, kind, &suffixes, |kg, name| {
            kg.filter_kernels(name, &element, op.p, &elem)
        })
    }
}

impl KernelGen<'_> {
    fn filter_kernels(&mut self, name: &str, element: &Expr, p: &Expr, elem: &Type) -> R<String> {
        // 1. Elements and flags; each block's count.
        let scratch = self.begin_params::<FilterFlags>(name, elem)?.remove(0);
        self.thread_part();
        self.line("unsigned char* flag = (unsigned char*)flags;");
        self.line("ull kept = 0;");
        self.line("for (ull i = lo; i < hi; i++) {");
        self.depth += 1;
        let x = self.apply_index(element, "i")?;
        let x = self.copy(&x, "x")?;
        self.store_columns(&x, &scratch, "i");
        let keep = self.apply(p, vec![x])?.w[0].clone();
        self.line(&format!("const bool keep = {keep};"));
        self.line("flag[i] = keep;");
        self.line("kept += keep;");
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        self.threads_prefix();
        self.line(
            "if (threadIdx.x == blockDim.x - 1) ((ull*)counts)[blockIdx.x] = sh[threadIdx.x];",
        );
        let mut src = self.end();
        // 2. Offsets, in one thread.
        self.scope.clear();
        self.begin_params::<FilterOffsets>(name, elem)?;
        self.line("if (blockIdx.x == 0 && threadIdx.x == 0) {");
        self.line("    ull* c = (ull*)counts;");
        self.line("    ull run = 0;");
        self.line(
            "    for (ull b = 0; b < count; b++) { const ull k = c[b]; c[b] = run; run += k; }",
        );
        self.line("    c[count] = run;");
        self.line("}");
        src.push_str(&self.end());
        // 3. The kept elements to their place.
        self.scope.clear();
        let sets = self.begin_params::<FilterWrite>(name, elem)?;
        let (scratch, out) = (&sets[0], &sets[1]);
        self.thread_part();
        self.line("const unsigned char* flag = (const unsigned char*)flags;");
        self.line("ull kept = 0;");
        self.line("for (ull i = lo; i < hi; i++) kept += flag[i];");
        self.threads_prefix();
        self.line("ull at = ((const ull*)counts)[blockIdx.x] + sh[threadIdx.x] - kept;");
        self.line("for (ull i = lo; i < hi; i++) {");
        self.line("    if (!flag[i]) continue;");
        for (to, from) in out.iter().zip(scratch) {
            self.line(&format!("    {to}[at] = {from}[i];"));
        }
        self.line("    at++;");
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    /// `lo..hi`: this thread's contiguous part of its block's chunk of `0..n`.
    fn thread_part(&mut self) {
        self.line("const ull start = blockIdx.x * chunk;");
        self.line("const ull end = start + chunk < n ? start + chunk : n;");
        self.line("const ull per = (end - start + blockDim.x - 1) / blockDim.x;");
        self.line(
            "const ull lo = start + threadIdx.x * per < end ? start + threadIdx.x * per : end;",
        );
        self.line("const ull hi = lo + per < end ? lo + per : end;");
    }

    /// `sh[t]`: the sum of the `kept` counts of threads `0..=t` of the block (Hillis-Steele).
    fn threads_prefix(&mut self) {
        self.line(&format!("__shared__ ull sh[{BLOCK}];"));
        self.line("sh[threadIdx.x] = kept;");
        self.line("__syncthreads();");
        self.line("for (unsigned d = 1; d < blockDim.x; d *= 2) {");
        self.line("    const ull v = threadIdx.x >= d ? sh[threadIdx.x - d] + sh[threadIdx.x] : sh[threadIdx.x];");
        self.line("    __syncthreads();");
        self.line("    sh[threadIdx.x] = v;");
        self.line("    __syncthreads();");
        self.line("}");
    }

    /// A `filter` inside a kernel: the kept elements copied in order into the thread's
    /// arena (room for all of them).
    pub(super) fn nested_filter(&mut self, op: Filter<'_>) -> R<V> {
        let xs = self.expr(op.xs)?;
        let Type::Seq(elem) = &xs.ty else {
            return Err("a filter over a value that is not a sequence".into());
        };
        let elem = (**elem).clone();
        let (n, cols) = self.arena_columns(&elem, &xs.w[0])?;
        let kept = self.let_("ull", "kept", "0");
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
        self.depth += 1;
        let x = self.index(&xs, &j)?;
        let x = self.copy(&x, "x")?;
        let keep = self.apply(op.p, vec![x.clone()])?.w[0].clone();
        self.line(&format!("if ({keep}) {{"));
        self.depth += 1;
        self.store_columns(&x, &cols, &kept);
        self.line(&format!("{kept}++;"));
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        Ok(V {
            ty: Type::Seq(Box::new(elem)),
            w: [vec![kept], cols].concat(),
        })
    }
}

/// Runs a `filter`: flags and counts, offsets, then the total read back to size the
/// result, which the last kernel fills.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type) -> R<HostVal> {
    let (n, threads) = (at.n, at.threads);
    let blocks = n.div_ceil(8 * threads).clamp(1, 1024);
    let chunk = n.div_ceil(blocks).max(1);
    let counts = run.alloc(8 * (blocks as usize + 1))?;
    let flags = run.alloc(n.max(1) as usize)?;
    let scratch = run.alloc_rows(elem, 1, n.max(1))?;
    if n > 0 {
        let flagging = FilterFlags {
            n,
            chunk,
            counts,
            flags,
            scratch: scratch.clone(),
        };
        run.start(at, blocks as u32, &flagging)?;
    }
    let count = if n > 0 { blocks } else { 0 };
    run.start(at, 1, &FilterOffsets { count, counts })?;
    run.check_failure()?;
    let mut total = [0u8; 8];
    run.session.download(counts + 8 * count, &mut total)?;
    let total = u64::from_le_bytes(total);
    let out = run.alloc_rows(elem, 1, total.max(1))?;
    if total > 0 {
        let writing = FilterWrite {
            n,
            chunk,
            counts,
            flags,
            scratch,
            out: out.clone(),
        };
        run.start(at, blocks as u32, &writing)?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(elem.clone())),
        w: [vec![total], out].concat(),
    })
}
