//! `reduce`: each chunk folds four contiguous streams with four accumulators (which needs
//! only associativity), or SIMD lanes for a primitive operator; the host combines the
//! chunks' partial results in order. Nested, the same fold over the whole input.

use super::super::cx::*;
use super::super::kernel::Chunk;
use super::super::proofs::Proofs;
use accel_ir::ops::{delayed, Reduce};
use accel_ir::{ParOp, ScalarType, Type};
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::Variable;

impl FnCx<'_, '_> {
    /// A top-level `reduce`: partial results per chunk, combined in order.
    pub(super) fn launch_reduce(&mut self, r: Reduce<'_>) -> R<V> {
        let (n, _) = self.input_shape(r.xs)?;
        let t = self.type_of(r.ne)?;
        let l = self.begin_launch(&[r.op, r.ne, r.xs], n, None, Some(&t))?;
        let partial_words = l.partial_words as usize;
        self.run_chunks(&l, ParOp::Reduce, |f, c| {
            f.reduce_chunk(r, &c, partial_words)
        })?;
        // Combine the chunks' partial results in order.
        let ne = self.expr(r.ne)?;
        let accs = self.declare_like(&ne);
        self.each(l.chunks, |f, c| {
            let (_, p) = f.partial_slot(&t, l.partials, c, l.partial_words)?;
            let a = f.use_vars(&t, &accs);
            let v = f.apply(r.op, vec![a, p])?;
            f.def_vars(&accs, &v);
            Ok(())
        })?;
        Ok(self.use_vars(&t, &accs))
    }

    /// A kernel's chunk of a reduction: its total into the chunk's partial slot.
    pub(super) fn reduce_chunk(&mut self, r: Reduce<'_>, c: &Chunk, partial_words: usize) -> R<()> {
        let total = match self.vector_reduce(r, c.lo, c.hi)? {
            Some(v) => v,
            None => match self.g.spmd {
                true => match self.gang_reduce(r, c.lo, c.hi)? {
                    Some(v) => v,
                    None => self.stream_reduce(r, c.lo, c.hi)?,
                },
                false => self.stream_reduce(r, c.lo, c.hi)?,
            },
        };
        for (k, w) in total
            .w
            .iter()
            .enumerate()
            .take(partial_words.max(total.w.len()))
        {
            self.store(*w, c.slot, 8 * k as i32);
        }
        Ok(())
    }

    /// A `reduce` inside an element: SIMD when it qualifies, else four streams (versioned
    /// on loads indexed by, or at indices affine in, the element's index: checked once
    /// before).
    pub(super) fn nested_reduce(&mut self, r: Reduce<'_>) -> R<V> {
        let (n, _) = self.input_shape(r.xs)?;
        let zero = self.iconst(0);
        if let Some(v) = self.vector_reduce(r, zero, n)? {
            return Ok(v);
        }
        // Four independent accumulators: the fold's latency chain split in four;
        // loads at indices affine in the element's index are checked once, before.
        let (param, proofs) = match delayed(r.xs) {
            Some((_, name, body)) => (
                name.to_string(),
                Proofs {
                    indexed: self.indexed_by(body, name),
                    affine: self.affine_loads(body, name),
                    ..Proofs::default()
                },
            ),
            None => (String::new(), Proofs::default()),
        };
        if proofs.indexed.is_empty() && proofs.affine.is_empty() {
            return self.stream_reduce(r, zero, n);
        }
        let result: std::cell::RefCell<Option<(Type, Vec<Variable>)>> =
            std::cell::RefCell::new(None);
        self.versioned(&proofs, &param, zero, n, |f| {
            let v = f.stream_reduce(r, zero, n)?;
            let mut out = result.borrow_mut();
            match &*out {
                Some((_, vars)) => f.def_vars(vars, &v),
                None => *out = Some((v.ty.clone(), f.declare_like(&v))),
            }
            Ok(())
        })?;
        let (ty, vars) = result.into_inner().ok_or("a reduction without a result")?;
        Ok(self.use_vars(&ty, &vars))
    }

    /// A reduction over `lo..hi` as four contiguous streams, one accumulator each
    /// (associativity suffices), combined in order.
    pub(in crate::cpu::codegen) fn stream_reduce(
        &mut self,
        r: Reduce<'_>,
        lo: Value,
        hi: Value,
    ) -> R<V> {
        let ne = self.expr(r.ne)?;
        let t = ne.ty.clone();
        let accs: Vec<Vec<Variable>> = (0..4).map(|_| self.declare_like(&ne)).collect();
        let len = self.b.ins().isub(hi, lo);
        let q = self.b.ins().ushr_imm_u(len, 2);
        let starts: Vec<Value> = (0..4i64)
            .map(|k| {
                let off = self.b.ins().imul_imm_s(q, k);
                self.b.ins().iadd(lo, off)
            })
            .collect();
        self.each(q, |f, j| {
            for k in 0..4 {
                let i = f.b.ins().iadd(starts[k], j);
                f.fold_step(r.op, r.xs, &t, &accs[k], i)?;
            }
            Ok(())
        })?;
        let four_q = self.b.ins().imul_imm_s(q, 4);
        let rest = self.b.ins().iadd(lo, four_q);
        self.counted_loop(rest, hi, ScalarType::Usize, |f, i| {
            f.fold_step(r.op, r.xs, &t, &accs[3], i)?;
            Ok(())
        })?;
        let mut total = self.use_vars(&t, &accs[0]);
        for acc in &accs[1..] {
            let next = self.use_vars(&t, acc);
            total = self.apply(r.op, vec![total, next])?;
        }
        Ok(total)
    }
}
