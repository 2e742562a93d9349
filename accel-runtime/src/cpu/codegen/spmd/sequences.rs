//! Sequences per lane: a row of a shared sequence of sequences picked by an index that
//! differs between lanes (Viterbi's `seqs[i]`), a nested `create` whose elements differ
//! between lanes (each lane fills its own buffer), slices whose bounds differ between
//! lanes (a `chunks(k)` row per lane), indexing such sequences and reducing over them. A
//! sequence per lane is a gang value like any other: its words are its length (often the
//! same for every lane) and its columns' addresses, one per lane. Only sequences of
//! numbers (or tuples and records of numbers) take this form.

use super::super::cx::*;
use super::{not_spmd, Part, G};
use crate::backend::failure::FailureKind;
use crate::backend::layout::{self, Word};
use accel_ir::ops::Create;
use accel_ir::{Expr, Pat, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};

impl FnCx<'_, '_> {
    /// The scalar types of the columns of a sequence of `elem`, when they are all numbers.
    fn number_columns(elem: &Type) -> R<Vec<ScalarType>> {
        let words = layout::words(elem).map_err(not_spmd)?;
        words
            .into_iter()
            .map(|w| match w {
                Word::Scalar(ScalarType::Bool) | Word::Ptr(_) => {
                    Err(not_spmd(format!("sequences of {elem} per lane")))
                }
                Word::Scalar(s) => Ok(s),
            })
            .collect()
    }

    /// `rows[r]` for lanes `r`, `rows` the same for every lane: each lane's row, checked.
    /// Rows of a (regular) sequence of sequences share its width, so the length stays one
    /// value; the columns start at `r * width` of the flat columns.
    pub(super) fn grow(&mut self, rows: &V, r: &Part) -> R<G> {
        let Type::Seq(inner) = &rows.ty else {
            return Err(not_spmd(format!("rows of a {} per lane", rows.ty)));
        };
        let Type::Seq(elem) = &**inner else {
            return Err(not_spmd(format!("rows of a {} per lane", rows.ty)));
        };
        let ss = Self::number_columns(elem)?;
        let (len, width) = (rows.w[0], rows.w[1]);
        self.check_lanes_below(r, len, FailureKind::Index)?;
        let mut w = vec![Part::Uni(width)];
        for (&col, s) in rows.w[2..].iter().zip(ss) {
            let start = self.per_lane(ScalarType::Usize, &[(r, ScalarType::Usize)], |f, x| {
                let first = f.b.ins().imul(x[0], width);
                let off = f.scaled(first, s);
                Ok(f.b.ins().iadd(col, off))
            })?;
            w.push(start);
        }
        Ok(G {
            ty: (**inner).clone(),
            w,
        })
    }

    /// `xs[i]` with `xs` a sequence per lane: each running lane's index checked against
    /// its own length, then one load per lane.
    pub(super) fn gindex_lanes_seq(&mut self, xs: &G, i: &Part) -> R<G> {
        let Type::Seq(elem) = &xs.ty else {
            return Err(not_spmd(format!("indexing a {} per lane", xs.ty)));
        };
        let ss = Self::number_columns(elem)?;
        match &xs.w[0] {
            Part::Uni(len) => self.check_lanes_below(i, *len, FailureKind::Index)?,
            len => {
                let u = ScalarType::Usize;
                let oob = self.gcompare(IntCC::UnsignedGreaterThanOrEqual, u, i, len);
                self.fail_lanes(oob, FailureKind::Index, (i, u), (len, u));
            }
        }
        // Not read-only: these may be buffers this element itself filled.
        let flags = MemFlagsData::trusted();
        let mut w = Vec::new();
        for (col, s) in xs.w[1..].iter().zip(ss) {
            w.push(self.gather(s, flags, |f, k| {
                let base = f.lane_of(col, ScalarType::Usize, k);
                let x = f.lane_of(i, ScalarType::Usize, k);
                let off = f.scaled(x, s);
                f.b.ins().iadd(base, off)
            }));
        }
        Ok(G {
            ty: (**elem).clone(),
            w,
        })
    }

    /// `&seq[lo..hi]` with bounds that differ between lanes (a `chunks(k)` row or a
    /// `windows(k)` window per lane): a sequence per lane, `hi - lo` long, its columns
    /// `lo` elements into `seq`'s (strided addresses where `lo` is the gang's index times a
    /// uniform value, so that reading the rows costs no vector extraction), checked in the
    /// running lanes as scalar code checks a slice. Its elements are gathered lane by
    /// lane, which only groups wider than 128 bits repay: grayscale from RGB rows of
    /// `par_chunks(3)` (4096x4096, 2 threads, AVX2) ran in 25 ms at the LLVM tier against
    /// 45 as scalar code, but 1.15-1.2x slower than scalar code in Cranelift's 4-lane
    /// groups, where a slice per lane stays scalar code.
    pub(super) fn gslice(&mut self, seq: &Expr, lo: &Expr, hi: &Expr) -> R<G> {
        if self.varies(seq) || self.row_input(seq).is_some() {
            return Err(not_spmd("a slice of a sequence that differs between lanes"));
        }
        if self.g.group_lanes <= super::GROUP {
            return Err(not_spmd(
                "a slice per lane in 128-bit groups (its elements gathered lane by lane)",
            ));
        }
        let v = self.expr(seq)?;
        let Type::Seq(elem) = &v.ty else {
            return Err(not_spmd(format!("a slice of a {}", v.ty)));
        };
        let ss = Self::number_columns(elem)?;
        let u = ScalarType::Usize;
        let start = self.gexpr(lo)?.w[0].clone();
        let end = self.gexpr(hi)?.w[0].clone();
        let len = Part::Uni(v.w[0]);
        let backwards = self.gcompare(IntCC::UnsignedGreaterThan, u, &start, &end);
        let past = self.gcompare(IntCC::UnsignedGreaterThan, u, &end, &len);
        let bad = self.mask_or(&backwards, &past);
        self.fail_lanes(bad, FailureKind::Slice, (&start, u), (&end, u));
        // A window's length is the same in every lane (`i..i + k`).
        let n = match (&start, &end) {
            (Part::Seq(a, _), Part::Seq(b, _)) => Part::Uni(self.b.ins().isub(*b, *a)),
            (Part::Strided(a, s), Part::Strided(b, t)) if s == t => {
                Part::Uni(self.b.ins().isub(*b, *a))
            }
            // Checked above: no running lane's end is before its start.
            _ => {
                let (ends, starts) = (self.vectors(&end, u), self.vectors(&start, u));
                let n = ends.iter().zip(&starts);
                Part::Var(n.map(|(&b, &a)| self.b.ins().isub(b, a)).collect())
            }
        };
        let mut w = vec![n];
        for (&col, s) in v.w[1..].iter().zip(ss) {
            w.push(self.advanced(col, &start, s));
        }
        Ok(G {
            ty: v.ty.clone(),
            w,
        })
    }

    /// The address `col` advanced by `at` elements of `s`, per lane.
    fn advanced(&mut self, col: Value, at: &Part, s: ScalarType) -> Part {
        let bytes = i64::from(s.bytes());
        match at {
            Part::Uni(x) => {
                let off = self.scaled(*x, s);
                Part::Uni(self.b.ins().iadd(col, off))
            }
            Part::Seq(first, _) => {
                let off = self.scaled(*first, s);
                let base = self.b.ins().iadd(col, off);
                Part::Strided(base, self.iconst(bytes))
            }
            Part::Strided(first, stride) => {
                let off = self.scaled(*first, s);
                let base = self.b.ins().iadd(col, off);
                Part::Strided(base, self.scaled(*stride, s))
            }
            at => {
                let shift = i64::from(bytes.trailing_zeros());
                let col = self.splat_word(col, ScalarType::Usize);
                let lanes = self.vectors(at, ScalarType::Usize);
                let w = lanes
                    .iter()
                    .zip(col)
                    .map(|(&x, c)| {
                        let off = self.b.ins().ishl_imm_u(x, shift);
                        self.b.ins().iadd(c, off)
                    })
                    .collect();
                Part::Var(w)
            }
        }
    }

    /// A nested `create(n, |j| body)` whose elements differ between lanes, `n` the same
    /// for every lane: one allocation of `lanes * n` elements per column, lane `k`'s sequence at
    /// `k n`; `j` counts once for the gang, each lane storing its own element.
    pub(super) fn gnested_create(&mut self, c: Create<'_>, ty: &Type) -> R<G> {
        let Type::Seq(elem) = ty else {
            return Err(not_spmd(format!("a `create` of type {ty}")));
        };
        let ss = Self::number_columns(elem)?;
        let Part::Uni(n) = self.gexpr(c.n)?.w[0] else {
            return Err(not_spmd(
                "a nested `create` whose length differs between lanes",
            ));
        };
        let Expr::Lambda { params, body } = c.f else {
            return Err(unsupported("a function argument that is not a closure"));
        };
        let Some((Pat::Bind { name: param, .. }, _)) = params.first() else {
            return Err(not_spmd("a `create` closure without a named index"));
        };
        let mut starts = Vec::new();
        for &s in &ss {
            let lane_bytes = self.scaled(n, s);
            let lanes = self.lanes() as i64;
            let bytes = self.b.ins().imul_imm_s(lane_bytes, lanes);
            let align = self.iconst(size_of(s));
            let ctx = self.ctx;
            let p = self.helper("accel_alloc", &[ctx, bytes, align])[0];
            let null = self.b.ins().icmp_imm_s(IntCC::Equal, p, 0);
            self.fail_if(null, FailureKind::Alloc, bytes, bytes);
            let lanes: Vec<Value> = (0..self.lanes() as i64)
                .map(|k| {
                    let at = self.b.ins().imul_imm_s(lane_bytes, k);
                    self.b.ins().iadd(p, at)
                })
                .collect();
            starts.push(lanes);
        }
        let zero = self.iconst(0);
        let flags = MemFlagsData::trusted();
        self.counted_loop(zero, n, ScalarType::Usize, |f, j| {
            f.bind_var(
                param,
                V {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![j],
                },
            );
            let g = f.gexpr(body)?;
            // Lanes not running store too, into their own new buffer, which nothing
            // reads for them.
            for ((part, &s), lanes) in g.w.iter().zip(&ss).zip(&starts) {
                let off = f.scaled(j, s);
                for (k, &start) in lanes.iter().enumerate() {
                    let x = f.lane_of(part, s, k);
                    let addr = f.b.ins().iadd(start, off);
                    f.b.ins().store(flags, x, addr, 0);
                }
            }
            Ok(())
        })?;
        let mut w = vec![Part::Uni(n)];
        for lanes in &starts {
            w.push(self.part_of_lanes(ScalarType::Usize, lanes));
        }
        Ok(G { ty: ty.clone(), w })
    }
}
