//! `reduce`: each block folds its part into a partial result (a grid-stride loop and an
//! unordered tree for a primitive commutative operator; otherwise contiguous chunks and
//! an order-keeping tree, since associativity is all the API promises), then one block
//! folds the partials in order. Nested, a sequential loop ([`KernelGen::nested_fold`]).

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use super::{light, FoldInput};
use crate::cuda::c::to_word;
use crate::cuda::host::scalar::HostVal;
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::Reduce;
use accel_ir::passes::recognize::primitive;
use accel_ir::{Expr, ParOp, Type};

kernel_params!(
    /// Each block's total of its elements into `partials[block]` (a scan's first pass too).
    Part "_part" { n, chunk, partials }
);
kernel_params!(
    /// One block folding the `count` partials in order into the result words at `out`.
    Final "_final" { count, partials, out }
);

impl Gen {
    /// A top-level `reduce` over its input as a delayed array.
    pub(super) fn reduce_launch(&mut self, r: Reduce<'_>, input: FoldInput) -> R<Expr> {
        let args = [r.op, r.ne, r.xs];
        if let Type::Seq(row) = &input.elem {
            let row = (**row).clone();
            return self.row_fold_launch(ParOp::Reduce, &args, input.n, input.element, &row);
        }
        let commutative = primitive(r.op).is_some();
        let elem = input.elem.clone();
        let kind = LaunchKind::Reduce {
            commutative,
            elem: elem.clone(),
        };
        let element = input.element;
        self.launch(
            &args,
            &input.n,
            kind,
            &[Part::SUFFIX, Final::SUFFIX],
            |kg, name| kg.reduce_kernels(name, &element, r.op, r.ne, &elem, commutative),
        )
    }
}

impl KernelGen<'_> {
    /// Kernel `NAME_part` of a reduction or scan: each block's total of its elements into
    /// `partials[block]` (grid-stride for a commutative operator, else in order over the
    /// block's chunk).
    pub(super) fn partials_kernel(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
        commutative: bool,
    ) -> R<String> {
        let acc = format!("{name}_acc");
        self.begin_params::<Part>(name, elem)?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.reduction_parts(name, Some(f), op, ne, elem)?;
        if commutative && !light(f) {
            self.line(&format!("{acc} t = ne;"));
            self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) { t = combine(t, element(i)); accel_arena_reset(&arena); }");
        } else if commutative {
            // Four accumulators: four independent loads in flight per thread.
            self.line(&format!("{acc} t0 = ne, t1 = ne, t2 = ne, t3 = ne;"));
            self.line("const ull stride = (ull)gridDim.x * blockDim.x;");
            self.line("ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
            self.line("for (; i + 3 * stride < n; i += 4 * stride) {");
            self.line("    t0 = combine(t0, element(i)); t1 = combine(t1, element(i + stride));");
            self.line("    t2 = combine(t2, element(i + 2 * stride)); t3 = combine(t3, element(i + 3 * stride));");
            self.line("    accel_arena_reset(&arena);");
            self.line("}");
            self.line("for (; i < n; i += stride) { t0 = combine(t0, element(i)); accel_arena_reset(&arena); }");
            self.line(&format!(
                "{acc} t = combine(combine(t0, t1), combine(t2, t3));"
            ));
        }
        if commutative {
            self.commutative_tree();
        } else {
            self.line("ull start = blockIdx.x * chunk;");
            self.line("ull end = start + chunk < n ? start + chunk : n;");
            self.fold_part(&acc, "element(i)");
            self.line("sh[threadIdx.x] = t;");
            self.ordered_tree();
        }
        self.line(&format!(
            "if (threadIdx.x == 0) (({acc}*)partials)[blockIdx.x] = sh[0];"
        ));
        Ok(self.end())
    }

    pub(super) fn reduce_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
        commutative: bool,
    ) -> R<String> {
        let acc = format!("{name}_acc");
        let mut src = Self::acc_struct(name, elem)?;
        src.push_str(&self.partials_kernel(name, f, op, ne, elem, commutative)?);
        // The final stage: one block over the partials, in order.
        self.scope.clear();
        self.begin_params::<Final>(name, elem)?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.reduction_parts(name, None, op, ne, elem)?;
        self.line(&format!("const {acc}* parts = (const {acc}*)partials;"));
        self.line("ull start = 0, end = count;");
        self.fold_part(&acc, "parts[i]");
        self.line("sh[threadIdx.x] = t;");
        self.ordered_tree();
        self.line("if (threadIdx.x == 0) {");
        self.depth += 1;
        for (k, w) in words(elem)?.into_iter().enumerate() {
            let x = to_word(w, &format!("sh[0].w{k}"));
            self.line(&format!("((ull*)out)[{k}] = {x};"));
        }
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }
}

/// Runs a `reduce`: the partials kernel over the blocks, the final one over the partials;
/// the result's words come back to the host.
pub(crate) fn run(
    run: &mut Run<'_, '_>,
    at: &Launching,
    elem: &Type,
    commutative: bool,
) -> R<HostVal> {
    let (n, sms, threads) = (at.n, at.sms, at.threads);
    let acc_bytes = 8 * words(elem)?.len().max(1);
    let blocks = if n == 0 {
        0
    } else if commutative {
        n.div_ceil(threads).clamp(1, sms * 8)
    } else {
        n.div_ceil(8 * threads).clamp(1, 1024)
    };
    let chunk = if blocks == 0 { 0 } else { n.div_ceil(blocks) };
    let partials = run.alloc(acc_bytes * blocks.max(1) as usize)?;
    if blocks > 0 {
        run.start(at, blocks as u32, &Part { n, chunk, partials })?;
    }
    let words_n = words(elem)?.len();
    let out = run.alloc(8 * words_n.max(1))?;
    let count = blocks;
    run.start(
        at,
        1,
        &Final {
            count,
            partials,
            out,
        },
    )?;
    run.check_failure()?;
    let mut bytes = vec![0u8; 8 * words_n];
    run.session.download(out, &mut bytes)?;
    let w = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    Ok(HostVal {
        ty: elem.clone(),
        w,
    })
}
