//! `reduce_by_index` (histograms): the first chunk of the values folds them straight into
//! the result, its bins set to the initial ones; every other chunk folds its values into a
//! private histogram of its own, and a second launch combines, bin by bin in parallel, the
//! result with the private histograms in chunk order. There are at most
//! [`MAX_HISTOGRAMS`] chunks, each at least [`VALUES_PER_BIN`] times as long as there are
//! bins, so initialising and combining the private histograms costs a small fraction of the
//! fold: few bins (k-means' clusters) get every core; many bins get fewer chunks, down to
//! one (a quarter as many bins as values: random updates of one large histogram are bound
//! by memory, and two of them ran slower than one), which makes no private histogram at
//! all. Elements without floats, which combine exactly in any grouping, take one chunk per
//! thread of the pool when there are fewer than [`AMPLE_VALUES_PER_BIN`] values per bin
//! (65536 counts on 2 cores: 2 chunks instead of 16); float sums keep a chunk count fixed
//! by the sizes, so that they are the same on every machine. The fold's chunks wake the
//! pool before the first one runs, since each is long.
//! Values meet their bin in input order within a chunk and chunks in order, so only
//! associativity is used; commutativity is not needed on the CPU. Nested, one sequential
//! pass.

use super::super::cx::*;
use super::super::kernel::{grain, Chunk};
use crate::backend::failure::FailureKind;
use crate::backend::layout::{words, Word};
use accel_ir::ops::ReduceByIndex;
use accel_ir::{Expr, ParOp, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};

/// The most private histograms a launch makes.
const MAX_HISTOGRAMS: i64 = 32;

/// The fewest values per bin in a chunk: below this, initialising and combining a chunk's
/// private histogram costs too much of folding its values.
const VALUES_PER_BIN: i64 = 16;

/// Values per bin from which a private histogram's setting and combining costs elements
/// without floats too little to matter (below it, they take one chunk per thread).
const AMPLE_VALUES_PER_BIN: i64 = 256;

impl FnCx<'_, '_> {
    /// A top-level `reduce_by_index`.
    pub(super) fn launch_reduce_by_index(&mut self, h: ReduceByIndex<'_>) -> R<V> {
        let (t, m, n) = self.histogram_shape(h)?;
        let out = self.alloc_columns(&t, m)?;
        // At most `MAX_HISTOGRAMS` chunks, each at least `VALUES_PER_BIN` values per bin
        // long. Floats keep a count that is a function of `n` and `m` alone, so that their
        // sums group the same way on every machine. Other elements combine exactly in any
        // grouping: below `AMPLE_VALUES_PER_BIN` values per bin they take one chunk per
        // thread, so that many bins are not set and combined more often than the cores
        // need.
        let fewest = grain(&[h.op, h.ne, h.is, h.vs]);
        let fewest = self.iconst(fewest);
        let per_bins = self.b.ins().imul_imm_u(m, VALUES_PER_BIN);
        let most = self.iconst(MAX_HISTOGRAMS);
        let share = self.ceil_div(n, most);
        let least = self.b.ins().umax(per_bins, share);
        let least = if has_floats(&t)? {
            least
        } else {
            let threads = self.helper("accel_threads", &[])[0];
            let per_thread = self.ceil_div(n, threads);
            let ample = self.b.ins().imul_imm_u(m, AMPLE_VALUES_PER_BIN);
            let by_threads = self.b.ins().umin(ample, per_thread);
            self.b.ins().umax(least, by_threads)
        };
        let grain_v = self.b.ins().umax(fewest, least);
        let chunks = self.helper("accel_chunks", &[n, grain_v])[0];
        let size = self.helper("accel_chunk_size", &[n, grain_v])[0];
        // Each chunk's histogram starts on its own cache lines and keeps at least 128
        // elements (128 bytes of the narrowest column) from the next: neighbouring chunks
        // run on different cores, whose prefetchers fetch lines in pairs.
        let padded = self.b.ins().iadd_imm_s(m, 255);
        let stride = self.b.ins().band_imm_s(padded, -128);
        // Chunk 0 folds into the result: one private histogram per other chunk (none
        // when there are no values, and so no chunks).
        let one = self.iconst(1);
        let others = self.b.ins().umax(chunks, one);
        let others = self.b.ins().iadd_imm_s(others, -1);
        let private_len = self.b.ins().imul(others, stride);
        let hist = self.alloc_columns(&t, private_len)?;
        let seq_t = Type::Seq(Box::new(t.clone()));
        let usize_t = Type::Scalar(ScalarType::Usize);
        let k = self.g.kernels;
        let names = [
            format!("histograms#{k}"),
            format!("chunk_size#{k}"),
            format!("bins#{k}"),
            format!("private_histograms#{k}"),
            format!("result#{k}"),
            format!("stride#{k}"),
        ];
        let word = |ty: &Type, w: Vec<Value>| V { ty: ty.clone(), w };
        self.bind_var(&names[0], word(&seq_t, [vec![private_len], hist].concat()));
        self.bind_var(&names[1], word(&usize_t, vec![size]));
        self.bind_var(&names[2], word(&usize_t, vec![m]));
        self.bind_var(&names[3], word(&usize_t, vec![others]));
        self.bind_var(&names[4], word(&seq_t, [vec![m], out.clone()].concat()));
        self.bind_var(&names[5], word(&usize_t, vec![stride]));
        let var = |k: usize| Expr::Var(names[k].clone());
        let vars = Histograms {
            private: var(0),
            chunk_size: var(1),
            bins: var(2),
            count: var(3),
            result: var(4),
            stride: var(5),
        };

        // Each chunk of the values into the result or its own histogram.
        let mut fold = self.begin_launch(
            &[
                h.op,
                h.ne,
                h.dest,
                h.is,
                h.vs,
                &vars.private,
                &vars.chunk_size,
                &vars.bins,
                &vars.stride,
                &vars.result,
            ],
            n,
            None,
            None,
        )?;
        fold.grain = grain_v;
        // Its chunks are long (a private histogram's worth of values each): waiting for the
        // first to finish before waking the pool would run it alone.
        fold.eager = true;
        self.run_chunks(&fold, ParOp::ReduceByIndex, |f, c| {
            f.fold_chunk(h, c, &vars)
        })?;
        // Without values no chunk ran to set the result's bins: they are the initial ones.
        let (no_values, folded) = (self.b.create_block(), self.b.create_block());
        let none = self.b.ins().icmp_imm_s(IntCC::Equal, n, 0);
        self.b.ins().brif(none, no_values, &[], folded, &[]);
        self.b.switch_to_block(no_values);
        self.each(m, |f, b| {
            let x = f.input_element(h.dest, b)?;
            f.store_elem(&t, &out, b, &x.w)
        })?;
        self.b.ins().jump(folded, &[]);
        self.b.switch_to_block(folded);
        self.combine_histograms(h, &vars, m)?;
        let cols = self.finish_columns(&t, m, out)?;
        Ok(V {
            ty: seq_t,
            w: [vec![m], cols].concat(),
        })
    }

    /// `a / b` rounded up (`b` > 0).
    fn ceil_div(&mut self, a: Value, b: Value) -> Value {
        let rounded = self.b.ins().iadd(a, b);
        let rounded = self.b.ins().iadd_imm_s(rounded, -1);
        self.b.ins().udiv(rounded, b)
    }

    /// Each bin of the result combined with the private histograms' in chunk order. A range
    /// of bins takes one histogram at a time, so that the loads stream.
    fn combine_histograms(&mut self, h: ReduceByIndex<'_>, vars: &Histograms, m: Value) -> R<()> {
        let combine = self.begin_launch(
            &[h.op, &vars.private, &vars.stride, &vars.count, &vars.result],
            m,
            None,
            None,
        )?;
        self.run_chunks(&combine, ParOp::ReduceByIndex, |f, c| {
            let hist = f.expr(&vars.private)?;
            let stride = f.expr(&vars.stride)?.w[0];
            let others = f.expr(&vars.count)?.w[0];
            let out = f.expr(&vars.result)?;
            let t = f.type_of(h.ne)?;
            f.each(others, |f, chunk| {
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
        })
    }

    /// One chunk `c` of the values folded in order into its bins: chunk 0's are the
    /// result's, first set to the initial bins; chunk `k > 0`'s are private histogram
    /// `k - 1`, first set to the neutral element.
    fn fold_chunk(&mut self, h: ReduceByIndex<'_>, c: Chunk, vars: &Histograms) -> R<()> {
        let hist = self.expr(&vars.private)?;
        let out = self.expr(&vars.result)?;
        let size = self.expr(&vars.chunk_size)?.w[0];
        let m = self.expr(&vars.bins)?.w[0];
        let stride = self.expr(&vars.stride)?.w[0];
        let t = self.type_of(h.ne)?;
        let ne = self.expr(h.ne)?;
        let index = self.b.ins().udiv(c.lo, size);
        let first = self.b.ins().icmp_imm_s(IntCC::Equal, index, 0);
        // Chunk 0's private offset wraps around; the select never takes it.
        let private = self.b.ins().iadd_imm_s(index, -1);
        let base = self.b.ins().imul(private, stride);
        let private = self.offset_columns(&t, &hist.w[1..], base)?;
        let cols: Vec<Value> = out.w[1..]
            .iter()
            .zip(&private)
            .map(|(&o, &p)| self.b.ins().select(first, o, p))
            .collect();
        let (from_dest, from_ne, set) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(first, from_dest, &[], from_ne, &[]);
        self.b.switch_to_block(from_dest);
        self.each(m, |f, b| {
            let x = f.input_element(h.dest, b)?;
            f.store_elem(&t, &cols, b, &x.w)
        })?;
        self.b.ins().jump(set, &[]);
        self.b.switch_to_block(from_ne);
        self.each(m, |f, b| f.store_elem(&t, &cols, b, &ne.w))?;
        self.b.ins().jump(set, &[]);
        self.b.switch_to_block(set);
        self.each_value_prefetched(c.lo, c.hi, &[h.is, h.vs], |f, i| {
            f.combine_into(h, &t, &cols, m, i)
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

/// The variables a histogram's launches share: the private histograms (one per chunk
/// after the first), the values per chunk, the number of bins, the number of private
/// histograms, the result and the distance between private histograms.
struct Histograms {
    private: Expr,
    chunk_size: Expr,
    bins: Expr,
    count: Expr,
    result: Expr,
    stride: Expr,
}

/// Whether values of `t` hold a float (whose sums depend on how they are grouped).
fn has_floats(t: &Type) -> R<bool> {
    Ok(words(t)
        .map_err(unsupported)?
        .iter()
        .any(|w| matches!(w, Word::Scalar(s) if s.is_float())))
}
