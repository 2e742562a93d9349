//! `filter`: each chunk compacts the elements it keeps to the front of its own part of a
//! scratch array and counts them; the host turns the counts into each chunk's end in the
//! result, and a second launch copies every chunk's kept elements to their place. An
//! element (and its producer) is computed once. The compaction stores every element and
//! advances past the kept ones, so the predicate costs no branch, which random data would
//! mispredict. The scratch array is as long as the input, but a chunk writes only its kept
//! elements and one more: where few are kept, huge pages would fault in and zero 2 MiB
//! for every chunk (a run-length encoding's run starts: 1.4x the time), and where most
//! are, 4 KiB pages fault 512 times as often (a filter keeping 90%: 1.25x). Which it is
//! is known after the launch, so each filter remembers whether its last call kept more
//! than a quarter and asks for huge pages only then. Nested, one sequential pass. Where
//! the input is the indices themselves (`create(n, |i| i)`), the predicate's loads at the
//! index and beside it (`xs[i - 1]`) are checked by one test before a chunk's loop (see
//! `proofs::versioned`) instead of at every element.
//!
//! A `reduce` over a `filter` builds no array: fusion rewrites it (see
//! `accel_ir::passes::fuse`).

use super::super::cx::*;
use super::super::proofs::Proofs;
use super::map::Producer;
use accel_ir::ops::{one_param, Filter};
use accel_ir::{Expr, ParOp, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types as ct;
use cranelift_codegen::ir::{InstBuilder, Value};

impl FnCx<'_, '_> {
    /// A top-level `filter`.
    pub(super) fn launch_filter(&mut self, op: Filter<'_>) -> R<V> {
        let (n, t) = self.filter_shape(op)?;
        let usize_t = Type::Scalar(ScalarType::Usize);
        // Whether the last call kept more than a quarter of its input: then the scratch
        // array is written nearly whole, and huge pages save page faults.
        let dense = self.site_word();
        let was_dense = self.load(ct::I64, dense, 0);
        let sparse = self.b.ins().icmp_imm_s(IntCC::Equal, was_dense, 0);
        let sparse = self.b.ins().uextend(ct::I64, sparse);
        let scratch = Some(t.clone());
        let l = self.begin_launch_touching(&[op.p, op.xs], n, scratch, Some(&usize_t), sparse)?;
        self.run_chunks(&l, ParOp::Filter, |f, c| {
            let kept = f.compact(op, &t, &c.out_cols, c.lo, c.lo, c.hi)?;
            f.store(kept, c.slot, 0);
            Ok(())
        })?;
        // Each chunk's count becomes its end in the result.
        let total = self.b.declare_var(ct::I64);
        let zero = self.iconst(0);
        self.b.def_var(total, zero);
        self.each(l.chunks, |f, c| {
            let at = f.b.ins().ishl_imm_u(c, 3);
            let slot = f.b.ins().iadd(l.partials, at);
            let count = f.load(ct::I64, slot, 0);
            let so_far = f.b.use_var(total);
            let end = f.b.ins().iadd(so_far, count);
            f.store(end, slot, 0);
            f.b.def_var(total, end);
            Ok(())
        })?;
        let total = self.b.use_var(total);
        let quadruple = self.b.ins().ishl_imm_u(total, 2);
        let now_dense = self.b.ins().icmp(IntCC::UnsignedGreaterThan, quadruple, n);
        let now_dense = self.b.ins().uextend(ct::I64, now_dense);
        self.store(now_dense, dense, 0);
        let out = self.alloc_columns(&t, total)?;

        // Every chunk's kept elements copied to their place, one chunk per iteration.
        let size = self.helper("accel_chunk_size", &[n, l.grain])[0];
        let k = self.g.kernels;
        let names = [
            format!("ends#{k}"),
            format!("scratch#{k}"),
            format!("kept#{k}"),
            format!("chunk_size#{k}"),
        ];
        let seq_of = |ty: &Type, len: Value, cols: &[Value]| V {
            ty: Type::Seq(Box::new(ty.clone())),
            w: [vec![len], cols.to_vec()].concat(),
        };
        self.bind_var(&names[0], seq_of(&usize_t, l.chunks, &[l.partials]));
        self.bind_var(&names[1], seq_of(&t, n, &l.out_cols));
        self.bind_var(&names[2], seq_of(&t, total, &out));
        self.bind_var(
            &names[3],
            V {
                ty: usize_t,
                w: vec![size],
            },
        );
        let [ends_e, scratch_e, kept_e, size_e] = names.map(Expr::Var);
        let mut copy = self.begin_launch(
            &[&ends_e, &scratch_e, &kept_e, &size_e],
            l.chunks,
            None,
            None,
        )?;
        copy.grain = self.iconst(1);
        let leaves = scalar_leaves(&t)?;
        self.run_chunks(&copy, ParOp::Filter, |f, c| {
            let ends = f.expr(&ends_e)?.w[1];
            let scratch = f.expr(&scratch_e)?.w[1..].to_vec();
            let kept = f.expr(&kept_e)?.w[1..].to_vec();
            let size = f.expr(&size_e)?.w[0];
            f.counted_loop(c.lo, c.hi, ScalarType::Usize, |f, chunk| {
                let at = f.b.ins().ishl_imm_u(chunk, 3);
                let slot = f.b.ins().iadd(ends, at);
                let end = f.load(ct::I64, slot, 0);
                // The previous chunk's end (0 for the first), read without a branch.
                let first = f.b.ins().icmp_imm_s(IntCC::Equal, chunk, 0);
                let one = f.iconst(1);
                let before = f.b.ins().umax(chunk, one);
                let before = f.b.ins().ishl_imm_u(before, 3);
                let before = f.b.ins().iadd(ends, before);
                let prev = f.load(ct::I64, before, -8);
                let zero = f.iconst(0);
                let begin = f.b.ins().select(first, zero, prev);
                let count = f.b.ins().isub(end, begin);
                let start = f.b.ins().imul(chunk, size);
                for ((s, &from), &to) in leaves.iter().zip(&scratch).zip(&kept) {
                    let bytes = f.scaled(count, *s);
                    let src = f.scaled(start, *s);
                    let src = f.b.ins().iadd(from, src);
                    let dst = f.scaled(begin, *s);
                    let dst = f.b.ins().iadd(to, dst);
                    f.helper("accel_copy", &[dst, src, bytes]);
                }
                Ok(())
            })
        })?;
        let cols = self.finish_columns(&t, total, out)?;
        Ok(seq_of(&t, total, &cols))
    }

    /// A `filter` inside an element: one pass compacting into new columns as long as the
    /// input.
    pub(super) fn nested_filter(&mut self, op: Filter<'_>) -> R<V> {
        let (n, t) = self.filter_shape(op)?;
        let cols = self.alloc_columns(&t, n)?;
        let zero = self.iconst(0);
        let kept = self.compact(op, &t, &cols, zero, zero, n)?;
        let cols = self.finish_columns(&t, kept, cols)?;
        Ok(V {
            ty: Type::Seq(Box::new(t)),
            w: [vec![kept], cols].concat(),
        })
    }

    /// The input's length and element type.
    fn filter_shape(&mut self, op: Filter<'_>) -> R<(Value, Type)> {
        let (n, t) = self.input_shape(op.xs)?;
        if matches!(t, Type::Seq(_)) {
            return Err(unsupported("`filter` over sequences of sequences"));
        }
        Ok((n, t))
    }

    /// Elements `lo..hi` of the input, those kept written in order to `cols` from `at`;
    /// returns how many were kept. Each element is stored at the next free place, which
    /// only a kept one then takes: `at + kept <= i`, so nothing is written past `hi`.
    fn compact(
        &mut self,
        op: Filter<'_>,
        t: &Type,
        cols: &[Value],
        at: Value,
        lo: Value,
        hi: Value,
    ) -> R<Value> {
        let next = self.b.declare_var(ct::I64);
        self.b.def_var(next, at);
        let run = |f: &mut Self| {
            f.counted_loop(lo, hi, ScalarType::Usize, |f, i| {
                let x = f.input_element(op.xs, i)?;
                let keep = f.apply(op.p, vec![x.clone()])?.w[0];
                let place = f.b.use_var(next);
                f.store_elem(t, cols, place, &x.w)?;
                let keep = f.word(keep);
                let after = f.b.ins().iadd(place, keep);
                f.b.def_var(next, after);
                Ok(())
            })
        };
        match self.index_predicate(op) {
            // One test before the loop for the predicate's loads at the index (and at
            // the index moved by a constant): a run-length encoding's `xs[i] != xs[i - 1]`
            // checked two bounds per element, as much work as the comparison.
            Some((param, proofs)) => self.versioned(&proofs, &param, lo, hi, run)?,
            None => run(self)?,
        }
        let end = self.b.use_var(next);
        Ok(self.b.ins().isub(end, at))
    }

    /// Where the input is the indices themselves (`create(n, |i| i)`, a parallel range),
    /// the predicate's parameter, which is then the loop's index, and the loads at it that
    /// a test before the loop can prove in bounds.
    fn index_predicate(&self, op: Filter<'_>) -> Option<(String, Proofs)> {
        let Some(Producer::Create(c)) = Producer::of(op.xs) else {
            return None;
        };
        let (index, element) = one_param(c.f)?;
        if !matches!(element, Expr::Var(x) if x == index) {
            return None;
        }
        let (name, body) = one_param(op.p)?;
        let proofs = Proofs {
            indexed: self.indexed_by(body, name),
            shifted: self.shifted_loads(body, name),
            ..Proofs::default()
        };
        Some((name.to_string(), proofs))
    }
}
