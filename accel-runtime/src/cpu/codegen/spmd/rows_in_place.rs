//! A gang's reads of a capture read in place (see `codegen::row_inputs`): consecutive
//! lanes load whole vectors of their rows and deinterleave them.

use super::super::cx::*;
use super::{Part, G};
use crate::backend::layout::flat_columns;
use accel_ir::{ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};

impl FnCx<'_, '_> {
    /// The gang's elements `i` of a sequence of `elem` (length `len`) read in place:
    /// consecutive lanes whose elements and the next are in the sequence load `m` whole
    /// vectors per vector of a scalar (`m` scalars of its size in a row) and pick every
    /// `m`th lane; others load lane by lane, `m` scalars apart. Bounds are the caller's.
    pub(super) fn gang_rows_in_place(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: &Part,
        len: Value,
        stride: i64,
        movable: bool,
    ) -> R<G> {
        let leaves = flat_columns(elem).map_err(unsupported)?;
        let ty = elem.clone();
        let masked = self.gang.as_ref().is_some_and(|g| g.mask.is_some());
        if let Part::Seq(first, _) = i {
            let first = *first;
            // The last vector of a scalar that is not a row's first reads into the next
            // row: the gang's elements and one more must be in the sequence.
            let lanes = self.lanes() as i64;
            let end = self.b.ins().iadd_imm_s(first, lanes);
            let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, end, len);
            let (leaves_fast, cols_fast) = (leaves.clone(), cols.to_vec());
            return self.either_g(
                inside,
                |f| {
                    let w = leaves_fast
                        .iter()
                        .zip(&cols_fast)
                        .map(|(&s, &col)| f.deinterleaved(col, s, first, stride))
                        .collect();
                    Ok(G { ty: ty.clone(), w })
                },
                |f| {
                    let w = leaves
                        .iter()
                        .zip(cols)
                        .map(|(&s, &col)| {
                            let m = stride / size_of(s);
                            let start = f.b.ins().imul_imm_s(first, m);
                            let step = f.iconst(m);
                            let part = Part::Strided(start, step);
                            f.load_column(col, s, &part, None, movable || !masked)
                        })
                        .collect();
                    Ok(G { ty: ty.clone(), w })
                },
            );
        }
        let mut w = Vec::new();
        for (&s, &col) in leaves.iter().zip(cols) {
            let m = stride / size_of(s);
            let part = self.scaled_index(i, m);
            w.push(self.load_column(col, s, &part, None, movable));
        }
        Ok(G { ty, w })
    }

    /// The lanes of index `i` times `m`.
    fn scaled_index(&mut self, i: &Part, m: i64) -> Part {
        match i {
            Part::Uni(x) => Part::Uni(self.b.ins().imul_imm_s(*x, m)),
            Part::Strided(first, step) => Part::Strided(
                self.b.ins().imul_imm_s(*first, m),
                self.b.ins().imul_imm_s(*step, m),
            ),
            p => {
                let lanes = self.vectors(p, ScalarType::Usize);
                let factor = self.iconst(m);
                let factors = self.splat_word(factor, ScalarType::Usize);
                Part::Var(
                    lanes
                        .iter()
                        .zip(&factors)
                        .map(|(&x, &k)| self.b.ins().imul(x, k))
                        .collect(),
                )
            }
        }
    }

    /// Scalar `s` of elements `first..first + lanes` from its column word `col` (rows
    /// `stride` bytes apart, all in bounds with the next): per vector of lanes, the `m`
    /// vectors its rows span, every `m`th lane picked by two-input shuffles.
    fn deinterleaved(&mut self, col: Value, s: ScalarType, first: Value, stride: i64) -> Part {
        let (t, n) = self.lane_vectors(s);
        let per = t.lane_count() as usize;
        let lane_bytes = (t.bytes() as usize / per) as u8;
        let m = (stride / size_of(s)) as usize;
        let flags = MemFlagsData::trusted().with_readonly();
        let at = self.b.ins().imul_imm_s(first, stride);
        let base = self.b.ins().iadd(col, at);
        let vector_bytes = t.bytes() as i32;
        Part::Var(
            (0..n)
                .map(|k| {
                    // The rows of lanes `k * per..(k + 1) * per`: `m` vectors from there.
                    let from = (k * per * stride as usize) as i32;
                    let vs: Vec<Value> = (0..m)
                        .map(|j| {
                            let off = from + vector_bytes * j as i32;
                            self.b.ins().load(t, flags, base, off)
                        })
                        .collect();
                    if m == 1 {
                        return vs[0];
                    }
                    // Lane `l` is lane `l * m` of the vectors one after another.
                    let first_two: Vec<u8> = (0..per)
                        .map(|l| if l * m < 2 * per { (l * m) as u8 } else { 0 })
                        .collect();
                    let mut acc = self.shuffle_lanes(vs[0], vs[1], &first_two, lane_bytes);
                    for (j, &v) in vs.iter().enumerate().skip(2) {
                        let pick: Vec<u8> = (0..per)
                            .map(|l| match l * m {
                                src if src >= j * per && src < (j + 1) * per => {
                                    (per + src - j * per) as u8
                                }
                                _ => l as u8,
                            })
                            .collect();
                        acc = self.shuffle_lanes(acc, v, &pick, lane_bytes);
                    }
                    acc
                })
                .collect(),
        )
    }
}
