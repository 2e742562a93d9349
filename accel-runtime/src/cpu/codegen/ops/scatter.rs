//! `scatter`: a launch copies `dest` into the result, a second writes every value at its
//! index (skipping indices past the end; eight values per iteration, their inputs' memory
//! asked for ahead, as a histogram's fold does), both over all cores. Indices must be
//! distinct (debug mode checks it): with a repeated index, the value that lands there is
//! one of those written to it. Nested, a copy then one sequential pass.

use super::super::cx::*;
use crate::backend::failure::FailureKind;
use accel_ir::ops::Scatter;
use accel_ir::{Expr, ParOp, ScalarType, Type};
use cranelift_codegen::ir::Value;

impl FnCx<'_, '_> {
    /// A top-level `scatter`.
    pub(super) fn launch_scatter(&mut self, op: Scatter<'_>) -> R<V> {
        let (t, m, n) = self.scatter_shape(op)?;
        let copy = self.begin_launch(&[op.dest], m, Some(t.clone()), None)?;
        self.run_chunks(&copy, ParOp::Scatter, |f, c| {
            f.counted_loop(c.lo, c.hi, ScalarType::Usize, |f, i| {
                let x = f.input_element(op.dest, i)?;
                f.store_elem(&t, &c.out_cols, i, &x.w)
            })
        })?;
        let out = copy.out_cols;
        let name = format!("scattered#{}", self.g.kernels);
        let seq_t = Type::Seq(Box::new(t.clone()));
        self.bind_var(
            &name,
            V {
                ty: seq_t.clone(),
                w: [vec![m], out.clone()].concat(),
            },
        );
        let out_e = Expr::Var(name);
        let write = self.begin_launch(&[op.is, op.vs, &out_e], n, None, None)?;
        self.run_chunks(&write, ParOp::Scatter, |f, c| {
            let out = f.expr(&out_e)?;
            f.each_value_prefetched(c.lo, c.hi, &[op.is, op.vs], |f, k| {
                f.write_at_index(op, &t, &out.w[1..], out.w[0], k)
            })
        })?;
        Ok(V {
            ty: seq_t,
            w: [vec![m], out].concat(),
        })
    }

    /// A `scatter` inside an element: `dest` copied, then one pass over the values.
    pub(super) fn nested_scatter(&mut self, op: Scatter<'_>) -> R<V> {
        let (t, m, n) = self.scatter_shape(op)?;
        let out = self.alloc_columns(&t, m)?;
        self.each(m, |f, i| {
            let x = f.input_element(op.dest, i)?;
            f.store_elem(&t, &out, i, &x.w)
        })?;
        self.each(n, |f, k| f.write_at_index(op, &t, &out, m, k))?;
        Ok(V {
            ty: Type::Seq(Box::new(t)),
            w: [vec![m], out].concat(),
        })
    }

    /// The element type, the destination's length and the number of values; fails when
    /// `is` and `vs` differ in length.
    fn scatter_shape(&mut self, op: Scatter<'_>) -> R<(Type, Value, Value)> {
        let (m, t) = self.input_shape(op.dest)?;
        if matches!(t, Type::Seq(_)) {
            return Err(unsupported("`scatter` into sequences of sequences"));
        }
        let n = self.value_count(op.is, op.vs, FailureKind::ScatterLengths)?;
        Ok((t, m, n))
    }

    /// Value `k` written at its index into the `m` elements `cols` (skipped when the index
    /// is `m` or more).
    fn write_at_index(
        &mut self,
        op: Scatter<'_>,
        t: &Type,
        cols: &[Value],
        m: Value,
        k: Value,
    ) -> R<()> {
        self.at_index_below(op.is, op.vs, m, k, |f, i, v| f.store_elem(t, cols, i, &v.w))
    }
}
