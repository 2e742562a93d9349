//! `parallel_loop`: each chunk runs its iterations in order; nested, a sequential loop.

use super::super::cx::*;
use accel_ir::ops::ParallelLoop;
use accel_ir::{ParOp, ScalarType};

impl FnCx<'_, '_> {
    /// A top-level `parallel_loop`.
    pub(super) fn launch_loop(&mut self, p: ParallelLoop<'_>) -> R<V> {
        let n = self.expr(p.n)?.w[0];
        let l = self.begin_launch(&[p.n, p.f], n, None, None)?;
        self.run_independent_chunks(&l, ParOp::ParallelLoop, |f, c| {
            if let (true, Some(k)) = (f.g.spmd, c.scalar) {
                if let Some(rest) = f.gang_iterations(p, (c.lo, c.hi), k)? {
                    // After the gangs, the scalar kernel's iterations.
                    f.call_scalar(k, rest, c.hi);
                    return Ok(());
                }
            }
            f.counted_loop(c.lo, c.hi, ScalarType::Usize, |f, i| f.iteration(p.f, i))
        })?;
        Ok(V::unit())
    }

    /// A `parallel_loop` inside an element: its iterations in order.
    pub(super) fn nested_loop(&mut self, p: ParallelLoop<'_>) -> R<V> {
        let n = self.expr(p.n)?.w[0];
        self.each(n, |f, i| f.iteration(p.f, i))?;
        Ok(V::unit())
    }
}
