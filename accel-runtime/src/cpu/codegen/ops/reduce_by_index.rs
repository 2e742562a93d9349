//! `reduce_by_index` (histograms): each chunk of the values folds them into a private
//! histogram of its own, then a second launch combines, bin by bin in parallel, the
//! initial bin with the chunks' histograms in chunk order. There are at most
//! [`MAX_HISTOGRAMS`] chunks, each at least [`VALUES_PER_BIN`] times as long as there are
//! bins, so initialising and combining the private histograms costs a small fraction of the
//! fold: few bins (k-means' clusters) get every core; many bins get fewer chunks, down to
//! one (a quarter as many bins as values: random updates of one large histogram are bound
//! by memory, and two of them ran slower than one).
//! Values meet their bin in input order within a chunk and chunks in order, so only
//! associativity is used; commutativity is not needed on the CPU. Nested, one sequential
//! pass.

use super::super::cx::*;
use super::super::kernel::{grain, Chunk};
use crate::backend::failure::FailureKind;
use accel_ir::ops::ReduceByIndex;
use accel_ir::{Expr, ParOp, ScalarType, Type};
use cranelift_codegen::ir::{InstBuilder, Value};

/// The most private histograms a launch makes.
const MAX_HISTOGRAMS: i64 = 32;

/// The fewest values per bin in a chunk: below this, initialising and combining a chunk's
/// private histogram costs too much of folding its values.
const VALUES_PER_BIN: i64 = 16;

/// Values folded per iteration of a chunk's loop.
const UNROLL: i64 = 8;

impl FnCx<'_, '_> {
    /// A top-level `reduce_by_index`.
    pub(super) fn launch_reduce_by_index(&mut self, h: ReduceByIndex<'_>) -> R<V> {
        let (t, m, n) = self.histogram_shape(h)?;
        let out = self.alloc_columns(&t, m)?;
        // At most `MAX_HISTOGRAMS` chunks (their count a function of `n` and `m` alone, so
        // float sums group the same way on every machine), each at least `VALUES_PER_BIN`
        // values per bin long.
        let fewest = grain(&[h.op, h.ne, h.is, h.vs]);
        let fewest = self.iconst(fewest);
        let per_bins = self.b.ins().imul_imm_u(m, VALUES_PER_BIN);
        let rounded = self.b.ins().iadd_imm_s(n, MAX_HISTOGRAMS - 1);
        let share = self.b.ins().udiv_imm_u(rounded, MAX_HISTOGRAMS);
        let least = self.b.ins().umax(per_bins, share);
        let grain_v = self.b.ins().umax(fewest, least);
        let chunks = self.helper("accel_chunks", &[n, grain_v])[0];
        let size = self.helper("accel_chunk_size", &[n, grain_v])[0];
        // Each chunk's histogram starts on its own cache lines and keeps at least 128
        // elements (128 bytes of the narrowest column) from the next: neighbouring chunks
        // run on different cores, whose prefetchers fetch lines in pairs.
        let padded = self.b.ins().iadd_imm_s(m, 255);
        let stride = self.b.ins().band_imm_s(padded, -128);
        let private_len = self.b.ins().imul(chunks, stride);
        let hist = self.alloc_columns(&t, private_len)?;
        let seq_t = Type::Seq(Box::new(t.clone()));
        let usize_t = Type::Scalar(ScalarType::Usize);
        let k = self.g.kernels;
        let names = [
            format!("histograms#{k}"),
            format!("chunk_size#{k}"),
            format!("bins#{k}"),
            format!("chunks#{k}"),
            format!("result#{k}"),
            format!("stride#{k}"),
        ];
        let word = |ty: &Type, w: Vec<Value>| V { ty: ty.clone(), w };
        self.bind_var(&names[0], word(&seq_t, [vec![private_len], hist].concat()));
        self.bind_var(&names[1], word(&usize_t, vec![size]));
        self.bind_var(&names[2], word(&usize_t, vec![m]));
        self.bind_var(&names[3], word(&usize_t, vec![chunks]));
        self.bind_var(&names[4], word(&seq_t, [vec![m], out.clone()].concat()));
        self.bind_var(&names[5], word(&usize_t, vec![stride]));
        let var = |k: usize| Expr::Var(names[k].clone());
        let (hist_e, size_e, bins_e, chunks_e, out_e) = (var(0), var(1), var(2), var(3), var(4));
        let stride_e = var(5);

        // Each chunk of the values into its own histogram.
        let mut fold = self.begin_launch(
            &[h.op, h.ne, h.is, h.vs, &hist_e, &size_e, &bins_e, &stride_e],
            n,
            None,
            None,
        )?;
        fold.grain = grain_v;
        self.run_chunks(&fold, ParOp::ReduceByIndex, |f, c| {
            f.fold_chunk(h, c, [&hist_e, &size_e, &bins_e, &stride_e])
        })?;

        // Each bin: its initial value, then the chunks' histograms in order. A range of
        // bins takes one histogram at a time, so that the loads stream.
        let combine = self.begin_launch(
            &[h.op, h.dest, &hist_e, &stride_e, &chunks_e, &out_e],
            m,
            None,
            None,
        )?;
        self.run_chunks(&combine, ParOp::ReduceByIndex, |f, c| {
            let hist = f.expr(&hist_e)?;
            let stride = f.expr(&stride_e)?.w[0];
            let chunks = f.expr(&chunks_e)?.w[0];
            let out = f.expr(&out_e)?;
            let t = f.type_of(h.ne)?;
            f.counted_loop(c.lo, c.hi, ScalarType::Usize, |f, b| {
                let first = f.input_element(h.dest, b)?;
                f.store_elem(&t, &out.w[1..], b, &first.w)
            })?;
            f.each(chunks, |f, chunk| {
                let row = f.b.ins().imul(chunk, stride);
                f.counted_loop(c.lo, c.hi, ScalarType::Usize, |f, b| {
                    let so_far = f.load_elem(&t, &out.w[1..], b)?;
                    let at = f.b.ins().iadd(row, b);
                    let w = f.load_elem(&t, &hist.w[1..], at)?;
                    let r = f.apply(
                        h.op,
                        vec![
                            V {
                                ty: t.clone(),
                                w: so_far,
                            },
                            V { ty: t.clone(), w },
                        ],
                    )?;
                    f.store_elem(&t, &out.w[1..], b, &r.w)
                })
            })
        })?;
        let cols = self.finish_columns(&t, m, out)?;
        Ok(V {
            ty: seq_t,
            w: [vec![m], cols].concat(),
        })
    }

    /// One chunk `c` of the values folded into its private histogram: its bins set to the
    /// neutral element, then its values combined in order. `vars`
    /// are the histograms, the chunk size, the number of bins and the histograms' stride.
    fn fold_chunk(&mut self, h: ReduceByIndex<'_>, c: Chunk, vars: [&Expr; 4]) -> R<()> {
        let [hist_e, size_e, bins_e, stride_e] = vars;
        let hist = self.expr(hist_e)?;
        let size = self.expr(size_e)?.w[0];
        let m = self.expr(bins_e)?.w[0];
        let stride = self.expr(stride_e)?.w[0];
        let t = self.type_of(h.ne)?;
        let index = self.b.ins().udiv(c.lo, size);
        let base = self.b.ins().imul(index, stride);
        let cols = self.offset_columns(&t, &hist.w[1..], base)?;
        let ne = self.expr(h.ne)?;
        self.each(m, |f, b| f.store_elem(&t, &cols, b, &ne.w))?;
        // `UNROLL` values per iteration (one loop branch for all), then the rest.
        let len = self.b.ins().isub(c.hi, c.lo);
        let groups = self.b.ins().udiv_imm_u(len, UNROLL);
        self.each(groups, |f, g| {
            let first = f.b.ins().imul_imm_u(g, UNROLL);
            let first = f.b.ins().iadd(c.lo, first);
            for k in 0..UNROLL {
                let i = f.b.ins().iadd_imm_s(first, k);
                f.combine_into(h, &t, &cols, m, i)?;
            }
            Ok(())
        })
        .and_then(|_| {
            let done = self.b.ins().imul_imm_u(groups, UNROLL);
            let rest = self.b.ins().iadd(c.lo, done);
            self.counted_loop(rest, c.hi, ScalarType::Usize, |f, i| {
                f.combine_into(h, &t, &cols, m, i)
            })
        })
    }

    /// A `reduce_by_index` inside an element: the bins copied, then one pass over the
    /// values.
    pub(super) fn nested_reduce_by_index(&mut self, h: ReduceByIndex<'_>) -> R<V> {
        let (t, m, n) = self.histogram_shape(h)?;
        let out = self.alloc_columns(&t, m)?;
        self.each(m, |f, b| {
            let x = f.input_element(h.dest, b)?;
            f.store_elem(&t, &out, b, &x.w)
        })?;
        self.each(n, |f, i| f.combine_into(h, &t, &out, m, i))?;
        let cols = self.finish_columns(&t, m, out)?;
        Ok(V {
            ty: Type::Seq(Box::new(t)),
            w: [vec![m], cols].concat(),
        })
    }

    /// The element type, the number of bins and of values; fails when `is` and `vs`
    /// differ in length.
    fn histogram_shape(&mut self, h: ReduceByIndex<'_>) -> R<(Type, Value, Value)> {
        let t = self.type_of(h.ne)?;
        if matches!(t, Type::Seq(_)) {
            return Err(unsupported("`reduce_by_index` with sequences as values"));
        }
        let (m, _) = self.input_shape(h.dest)?;
        let n = self.value_count(h.is, h.vs, FailureKind::HistogramLengths)?;
        Ok((t, m, n))
    }

    /// Value `i` combined into its bin of the `m` bins `cols` (skipped when its index is
    /// `m` or more).
    fn combine_into(
        &mut self,
        h: ReduceByIndex<'_>,
        t: &Type,
        cols: &[Value],
        m: Value,
        i: Value,
    ) -> R<()> {
        self.at_index_below(h.is, h.vs, m, i, |f, bin, v| {
            let w = f.load_elem(t, cols, bin)?;
            let r = f.apply(h.op, vec![V { ty: t.clone(), w }, v])?;
            f.store_elem(t, cols, bin, &r.w)
        })
    }
}
