//! Inclusive `scan`: two passes over the chunks. The first reduces each chunk (as
//! `reduce` does), the host turns the totals into each chunk's offset, the second rescans
//! each chunk from its offset writing the running values. Nested, one sequential pass.

use super::super::cx::*;
use accel_ir::ops::{Reduce, Scan};
use accel_ir::{ParOp, ScalarType, Type};

impl FnCx<'_, '_> {
    /// A top-level `scan`.
    pub(super) fn launch_scan(&mut self, s: Scan<'_>) -> R<V> {
        let (n, _) = self.input_shape(s.xs)?;
        let t = self.type_of(s.ne)?;
        let l = self.begin_launch(&[s.op, s.ne, s.xs], n, Some(t.clone()), Some(&t))?;
        // Pass 1 reduces each chunk; the host turns the partials into chunk offsets.
        let totals = Reduce {
            op: s.op,
            ne: s.ne,
            xs: s.xs,
        };
        let partial_words = l.partial_words as usize;
        self.run_chunks(&l, ParOp::Reduce, |f, c| {
            f.reduce_chunk(totals, &c, partial_words)
        })?;
        let ne = self.expr(s.ne)?;
        let accs = self.declare_like(&ne);
        self.each(l.chunks, |f, c| {
            let (addr, p) = f.partial_slot(&t, l.partials, c, l.partial_words)?;
            let offset = f.use_vars(&t, &accs);
            for (k, w) in offset.w.iter().enumerate() {
                f.store(*w, addr, 8 * k as i32);
            }
            let next = f.apply(s.op, vec![offset, p])?;
            f.def_vars(&accs, &next);
            Ok(())
        })?;
        // Pass 2: each chunk starts from its offset and writes the running values.
        self.run_chunks(&l, ParOp::Scan, |f, c| {
            let t = f.type_of(s.ne)?;
            let tys = words(&t)?;
            let offset = V {
                ty: t.clone(),
                w: tys
                    .iter()
                    .enumerate()
                    .map(|(k, &ty)| f.load(ty, c.slot, 8 * k as i32))
                    .collect(),
            };
            let accs = f.declare_like(&offset);
            f.counted_loop(c.lo, c.hi, ScalarType::Usize, |f, i| {
                let r = f.fold_step(s.op, s.xs, &t, &accs, i)?;
                f.store_elem(&t, &c.out_cols, i, &r.w)
            })
        })?;
        let out_cols = self.finish_columns(&t, n, l.out_cols.clone())?;
        Ok(V {
            ty: Type::Seq(Box::new(t)),
            w: [vec![n], out_cols].concat(),
        })
    }

    /// A `scan` inside an element: one sequential pass into new columns.
    pub(super) fn nested_scan(&mut self, s: Scan<'_>) -> R<V> {
        let ne = self.expr(s.ne)?;
        let (n, _) = self.input_shape(s.xs)?;
        let acc_ty = ne.ty.clone();
        let cols = self.alloc_columns(&acc_ty, n)?;
        let accs = self.declare_like(&ne);
        self.each(n, |f, i| {
            let r = f.fold_step(s.op, s.xs, &acc_ty, &accs, i)?;
            f.store_elem(&acc_ty, &cols, i, &r.w)
        })?;
        let cols = self.finish_columns(&acc_ty, n, cols)?;
        Ok(V {
            ty: Type::Seq(Box::new(acc_ty)),
            w: [vec![n], cols].concat(),
        })
    }
}
