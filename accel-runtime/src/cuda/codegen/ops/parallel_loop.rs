//! `parallel_loop`: one thread per iteration (grid-stride); nested, a sequential loop.

use super::super::host_lower::Gen;
use super::super::kernel::*;
use super::super::launch::LaunchKind;
use crate::cuda::host::scalar::{unit, HostVal};
use crate::cuda::host::{Launching, Run};
use accel_ir::ops::ParallelLoop;
use accel_ir::{Expr, Type};

kernel_params!(
    /// Runs iterations `0..n`.
    LoopKernel "" { n }
);

impl Gen {
    /// A top-level `parallel_loop`.
    pub(super) fn loop_launch(&mut self, p: ParallelLoop<'_>) -> R<Expr> {
        self.launch(
            &[p.n, p.f],
            p.n,
            LaunchKind::Loop,
            &[LoopKernel::SUFFIX],
            |kg, name| kg.loop_kernel(name, p.f),
        )
    }
}

impl KernelGen<'_> {
    /// The kernel of a `parallel_loop`.
    pub(super) fn loop_kernel(&mut self, name: &str, f: &Expr) -> R<String> {
        self.begin_params::<LoopKernel>(name, &Type::Unit)?;
        self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {");
        self.depth += 1;
        self.apply_index(f, "i")?;
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
    }

    /// A `parallel_loop` inside a kernel: its iterations in order.
    pub(super) fn nested_loop(&mut self, p: ParallelLoop<'_>) -> R<V> {
        let n = self.expr(p.n)?.w[0].clone();
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
        self.depth += 1;
        self.apply_index(p.f, &j)?;
        self.depth -= 1;
        self.line("}");
        Ok(V::unit())
    }
}

/// Runs a `parallel_loop`.
pub(crate) fn run(run: &mut Run<'_, '_>, at: &Launching) -> R<HostVal> {
    let n = at.n;
    if n > 0 {
        run.start(at, at.grid(n, at.sms * 32), &LoopKernel { n })?;
    }
    Ok(unit())
}
