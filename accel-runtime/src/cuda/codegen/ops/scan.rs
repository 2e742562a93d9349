//! Inclusive `scan` in three kernels: each block's total (as `reduce`'s first pass), the
//! carry into each block (one thread, in order), then each thread rescans its part from
//! its carry into the output. Nested, a sequential loop into the thread's arena
//! ([`KernelGen::nested_fold`]).

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use super::reduce::Part;
use super::FoldInput;
use crate::backend::layout::{size_of, Word};
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::Scan;
use accel_ir::{Expr, ParOp, Type};

kernel_params!(
    /// The exclusive scan of the `count` block totals into `carries`, in one thread.
    Carry "_carry" { count, partials, carries }
);
kernel_params!(
    /// Each block rescanned from its carry into the output.
    ScanFinal "_final" { n, chunk, carries; out }
);

impl Gen {
    /// A top-level `scan` over its input as a delayed array.
    pub(super) fn scan_launch(&mut self, s: Scan<'_>, input: FoldInput) -> R<Expr> {
        let args = [s.op, s.ne, s.xs];
        if let Type::Seq(row) = &input.elem {
            let row = (**row).clone();
            return self.row_fold_launch(ParOp::Scan, &args, input.n, input.element, &row);
        }
        let elem = input.elem.clone();
        let element = input.element;
        self.launch(
            &args,
            &input.n,
            LaunchKind::Scan { elem: elem.clone() },
            &[Part::SUFFIX, Carry::SUFFIX, ScanFinal::SUFFIX],
            |kg, name| kg.scan_kernels(name, &element, s.op, s.ne, &elem),
        )
    }
}

impl KernelGen<'_> {
    pub(super) fn scan_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
    ) -> R<String> {
        let acc = format!("{name}_acc");
        let mut src = Self::acc_struct(name, elem)?;
        // 1. Each block's total.
        src.push_str(&self.partials_kernel(name, f, op, ne, elem, false)?);
        // 2. The carry into each block: an exclusive scan of the totals, in one thread.
        self.scope.clear();
        self.begin_params::<Carry>(name, elem)?;
        self.reduction_parts(name, None, op, ne, elem)?;
        self.line("if (blockIdx.x == 0 && threadIdx.x == 0) {");
        self.line(&format!("    const {acc}* parts = (const {acc}*)partials;"));
        self.line(&format!("    {acc}* out = ({acc}*)carries;"));
        self.line(&format!("    {acc} run = ne;"));
        self.line(
            "    for (ull b = 0; b < count; b++) { out[b] = run; run = combine(run, parts[b]); }",
        );
        self.line("}");
        src.push_str(&self.end());
        // 3. Each thread rescans its part from its carry: the block's carry combined with
        // the totals of the threads before it (an order-keeping Hillis-Steele scan).
        self.scope.clear();
        let cols = self.begin_params::<ScanFinal>(name, elem)?.remove(0);
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.reduction_parts(name, Some(f), op, ne, elem)?;
        self.line("ull start = blockIdx.x * chunk;");
        self.line("ull end = start + chunk < n ? start + chunk : n;");
        self.fold_part(&acc, "element(i)");
        self.line("sh[threadIdx.x] = t;");
        self.line("__syncthreads();");
        self.line("for (unsigned d = 1; d < blockDim.x; d *= 2) {");
        self.line(&format!(
            "    {acc} v = threadIdx.x >= d ? combine(sh[threadIdx.x - d], sh[threadIdx.x]) : sh[threadIdx.x];"
        ));
        self.line("    __syncthreads();");
        self.line("    sh[threadIdx.x] = v;");
        self.line("    __syncthreads();");
        self.line("}");
        self.line(&format!("{acc} run = (({acc}*)carries)[blockIdx.x];"));
        self.line("if (threadIdx.x > 0) run = combine(run, sh[threadIdx.x - 1]);");
        self.line("for (ull i = lo; i < hi; i++) {");
        self.depth += 1;
        self.line("run = combine(run, element(i));");
        self.line("accel_arena_reset(&arena);");
        let v = Self::acc_value(elem, "run")?;
        self.store_columns(&v, &cols, "i");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }
}

/// Runs a `scan`: block totals, carries, rescans into new columns.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching, elem: &Type) -> R<HostVal> {
    let (n, threads) = (at.n, at.threads);
    let mut outs = Vec::new();
    for c in columns(elem)? {
        let Word::Ptr(s) = c else {
            return Err("a scan result column is not a pointer".into());
        };
        outs.push(run.alloc(n as usize * size_of(s))?);
    }
    if n > 0 {
        let acc_bytes = 8 * words(elem)?.len().max(1);
        let blocks = n.div_ceil(8 * threads).clamp(1, 1024);
        let chunk = n.div_ceil(blocks);
        let partials = run.alloc(acc_bytes * blocks as usize)?;
        let carries = run.alloc(acc_bytes * blocks as usize)?;
        run.start(at, blocks as u32, &Part { n, chunk, partials })?;
        let count = blocks;
        run.start(
            at,
            1,
            &Carry {
                count,
                partials,
                carries,
            },
        )?;
        let out = outs.clone();
        let fin = ScanFinal {
            n,
            chunk,
            carries,
            out,
        };
        run.start(at, blocks as u32, &fin)?;
    }
    Ok(HostVal {
        ty: Type::Seq(Box::new(elem.clone())),
        w: [vec![n], outs].concat(),
    })
}
