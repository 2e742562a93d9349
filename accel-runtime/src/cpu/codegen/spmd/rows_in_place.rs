//! A gang's reads of a capture read in place (see `codegen::row_inputs`): consecutive
//! lanes load whole vectors of their rows, once for all the scalars of one size, and
//! deinterleave them.

use super::super::cx::*;
use super::{Part, G};
use crate::backend::layout::flat_columns;
use crate::backend::layout::RowLayout;
use accel_ir::{ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};

impl FnCx<'_, '_> {
    /// The gang's elements `i` of a sequence of `elem` (length `len`) laid out as `row`
    /// says, read in place: consecutive lanes whose elements and the next are in the
    /// sequence load whole vectors of rows and pick each scalar's lanes; others load lane
    /// by lane, a row apart. Bounds are the caller's.
    pub(super) fn gang_rows_in_place(
        &mut self,
        elem: &Type,
        cols: &[Value],
        i: &Part,
        len: Value,
        row: &RowLayout,
        movable: bool,
    ) -> R<G> {
        let leaves = flat_columns(elem).map_err(unsupported)?;
        let ty = elem.clone();
        let masked = self.gang.as_ref().is_some_and(|g| g.mask.is_some());
        let stride = row.stride;
        if let Part::Seq(first, _) = i {
            let first = *first;
            // A row's vectors from a scalar that is not its first read into the next
            // row: the gang's elements and one more must be in the sequence.
            let lanes = self.lanes() as i64;
            let end = self.b.ins().iadd_imm_s(first, lanes);
            let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, end, len);
            let (leaves_fast, cols_fast, ty_fast) = (leaves.clone(), cols.to_vec(), ty.clone());
            return self.either_g(
                inside,
                |f| {
                    let w =
                        f.deinterleaved_rows(&leaves_fast, &cols_fast, &row.offsets, first, stride);
                    Ok(G { ty: ty_fast, w })
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
                    Ok(G { ty, w })
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

    /// Each scalar (`leaves`, at `offsets` in a row, their addresses in the first row
    /// `cols`) of elements `first..first + lanes`, all in bounds with the next: the
    /// scalars of one size share the vectors their rows span, loaded once from the first
    /// of them in a row.
    fn deinterleaved_rows(
        &mut self,
        leaves: &[ScalarType],
        cols: &[Value],
        offsets: &[i64],
        first: Value,
        stride: i64,
    ) -> Vec<Part> {
        let mut out: Vec<Option<Part>> = vec![None; leaves.len()];
        for k in 0..leaves.len() {
            if out[k].is_some() {
                continue;
            }
            let size = size_of(leaves[k]);
            // The scalars of this size, each by its place among them in a row.
            let group: Vec<usize> = (k..leaves.len())
                .filter(|&j| size_of(leaves[j]) == size && out[j].is_none())
                .collect();
            let lowest = group
                .iter()
                .copied()
                .min_by_key(|&j| offsets[j])
                .expect("the scalar itself");
            let places: Vec<usize> = group
                .iter()
                .map(|&j| ((offsets[j] - offsets[lowest]) / size) as usize)
                .collect();
            let parts = self.deinterleaved(cols[lowest], leaves, &group, &places, first, stride);
            for (j, p) in group.into_iter().zip(parts) {
                out[j] = Some(p);
            }
        }
        out.into_iter().map(|p| p.expect("every scalar")).collect()
    }

    /// The scalars `group` of `leaves` (one size; `places`: each one's index among that
    /// size's scalars of a row, from `col`) of elements `first..first + lanes`: per vector
    /// of lanes, the `m` vectors its rows span, each scalar's lanes picked by two-input
    /// shuffles (lane `l` is lane `l * m + place` of the vectors one after another).
    fn deinterleaved(
        &mut self,
        col: Value,
        leaves: &[ScalarType],
        group: &[usize],
        places: &[usize],
        first: Value,
        stride: i64,
    ) -> Vec<Part> {
        let (t, n) = self.lane_vectors(leaves[group[0]]);
        let per = t.lane_count() as usize;
        let lane_bytes = (t.bytes() as usize / per) as u8;
        let m = (stride / size_of(leaves[group[0]])) as usize;
        let flags = MemFlagsData::trusted().with_readonly();
        let at = self.b.ins().imul_imm_s(first, stride);
        let base = self.b.ins().iadd(col, at);
        let vector_bytes = t.bytes() as i32;
        let mut parts: Vec<Vec<Value>> = vec![Vec::new(); group.len()];
        for k in 0..n {
            // The rows of lanes `k * per..(k + 1) * per`: `m` vectors from there.
            let from = (k * per * stride as usize) as i32;
            let vs: Vec<Value> = (0..m)
                .map(|j| {
                    self.b
                        .ins()
                        .load(t, flags, base, from + vector_bytes * j as i32)
                })
                .collect();
            for (g, &place) in places.iter().enumerate() {
                let v = self.picked(&vs, per, m, place, lane_bytes);
                // A scalar of the same size and another type (`u32` beside `f32`).
                let (own, _) = self.lane_vectors(leaves[group[g]]);
                let v = if own == t { v } else { self.vbitcast(own, v) };
                parts[g].push(v);
            }
        }
        parts.into_iter().map(Part::Var).collect()
    }

    /// Lane `l` of the result is lane `l * m + place` of the vectors `vs` one after
    /// another (`per` lanes each, of `lane_bytes` bytes).
    fn picked(
        &mut self,
        vs: &[Value],
        per: usize,
        m: usize,
        place: usize,
        lane_bytes: u8,
    ) -> Value {
        if m == 1 {
            return vs[0];
        }
        if (m, per, lane_bytes) == (4, 4, 4) {
            // Four 32-bit scalars a row in vectors of four (Cranelift's): lane `place` of
            // each vector, gathered by three two-input shuffles of the `shufps` form.
            let q = place as u8;
            let low = self.shuffle_lanes(vs[0], vs[1], &[q, q, 4 + q, 4 + q], 4);
            let high = self.shuffle_lanes(vs[2], vs[3], &[q, q, 4 + q, 4 + q], 4);
            return self.shuffle_lanes(low, high, &[0, 2, 4, 6], 4);
        }
        let source = |l: usize| l * m + place;
        let first_two: Vec<u8> = (0..per)
            .map(|l| match source(l) {
                src if src < 2 * per => src as u8,
                _ => 0,
            })
            .collect();
        let mut acc = self.shuffle_lanes(vs[0], vs[1], &first_two, lane_bytes);
        for (j, &v) in vs.iter().enumerate().skip(2) {
            let pick: Vec<u8> = (0..per)
                .map(|l| match source(l) {
                    src if src >= j * per && src < (j + 1) * per => (per + src - j * per) as u8,
                    _ => l as u8,
                })
                .collect();
            if pick.iter().enumerate().all(|(l, &p)| p as usize == l) {
                continue;
            }
            acc = self.shuffle_lanes(acc, v, &pick, lane_bytes);
        }
        acc
    }
}
