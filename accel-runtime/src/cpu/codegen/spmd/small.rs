//! 8- and 16-bit integers in gangs. A lane holds one as a 32-bit integer (C's promotion),
//! always *normalized*: sign-extended for `i8`/`i16`, zero-extended for `u8`/`u16`, so that
//! comparisons, division and widening casts of the 32-bit lanes give the narrow type's
//! results. Loads widen, stores narrow, and every operation that can leave the type's
//! range (`+ - *`, `<<`, negation, `!`, a cast) wraps its result back. Scalar code holds
//! them in Cranelift's own 8- and 16-bit types; splats, lanes and gathers convert.

use super::super::cx::*;
use super::Part;
use accel_ir::ScalarType;
use cranelift_codegen::ir::{types as ct, InstBuilder, MemFlagsData, Value};

impl FnCx<'_, '_> {
    /// A lane vector of `s` wrapped back into the type's range (normalized).
    pub(super) fn wrap_small(&mut self, s: ScalarType, v: Value) -> Value {
        let shift = i64::from(32 - s.bits());
        if s.is_signed_int() {
            let up = self.b.ins().ishl_imm_u(v, shift);
            self.b.ins().sshr_imm_u(up, shift)
        } else {
            let m = self.vconst_i32_splat((1 << s.bits()) - 1);
            self.b.ins().band(v, m)
        }
    }

    /// A varying word of `s` wrapped back into its range when `s` is a small integer (a
    /// uniform word is scalar code's, already of the type).
    pub(super) fn wrap_part(&mut self, s: ScalarType, p: Part) -> Part {
        match p {
            Part::Var(vs) if s.is_small_int() => {
                Part::Var(vs.into_iter().map(|v| self.wrap_small(s, v)).collect())
            }
            p => p,
        }
    }

    /// A scalar of small type `s` as a 32-bit lane value.
    pub(super) fn small_to_lane(&mut self, s: ScalarType, x: Value) -> Value {
        if s.is_signed_int() {
            self.b.ins().sextend(ct::I32, x)
        } else {
            self.b.ins().uextend(ct::I32, x)
        }
    }

    /// The words one group's elements of small type `s` are loaded and stored as (the
    /// group's bytes in one `I32` or `I64`, or several `I64`s), and the vector of them
    /// whose bytes are a vector of the group's 32-bit lanes.
    fn small_group_words(&self, s: ScalarType) -> (CType, usize, CType) {
        let bytes = self.group() * s.bytes() as usize;
        let word = if bytes == 4 { ct::I32 } else { ct::I64 };
        let words = bytes.div_ceil(8);
        let container = word
            .by((4 * self.group() / word.bytes() as usize) as u32)
            .expect("a group of 4, 8 or 16 lanes");
        (word, words, container)
    }

    /// One group's consecutive elements of small type `s` at `addr + offset`, widened to
    /// 32-bit lanes: loaded as one to four words (never past the group's elements).
    pub(super) fn load_small_group(
        &mut self,
        s: ScalarType,
        flags: MemFlagsData,
        addr: Value,
        offset: i32,
    ) -> Value {
        let widen = |f: &mut Self, v: Value| {
            if s.is_signed_int() {
                f.b.ins().swiden_low(v)
            } else {
                f.b.ins().uwiden_low(v)
            }
        };
        let (word, words, container) = self.small_group_words(s);
        let first = self.b.ins().load(word, flags, addr, offset);
        let mut v = self.b.ins().scalar_to_vector(container, first);
        for k in 1..words {
            let w = self.b.ins().load(word, flags, addr, offset + 8 * k as i32);
            v = self.b.ins().insertlane(v, w, k as u8);
        }
        let small_lane = if s.bits() == 8 { ct::I8 } else { ct::I16 };
        let small = small_lane
            .by(container.bytes() / s.bytes())
            .expect("a group of 4, 8 or 16 lanes");
        let small = self.vbitcast(small, v);
        let halves = widen(self, small);
        if s.bits() == 8 {
            widen(self, halves)
        } else {
            halves
        }
    }

    /// Stores one group's normalized lanes `v` of small type `s` as consecutive elements at
    /// `addr + offset`: narrowed (exactly: the lanes are in range) and written as one to
    /// four words.
    pub(super) fn store_small_group(&mut self, s: ScalarType, v: Value, addr: Value, offset: i32) {
        let narrow = |f: &mut Self, v: Value| {
            if s.is_signed_int() {
                f.b.ins().snarrow(v, v)
            } else {
                f.b.ins().unarrow(v, v)
            }
        };
        let halves = narrow(self, v);
        let narrowed = if s.bits() == 8 {
            narrow(self, halves)
        } else {
            halves
        };
        let flags = MemFlagsData::trusted();
        let (_, words, container) = self.small_group_words(s);
        let packed = self.vbitcast(container, narrowed);
        for k in 0..words {
            let w = self.b.ins().extractlane(packed, k as u8);
            self.b.ins().store(flags, w, addr, offset + 8 * k as i32);
        }
    }

    /// A word of `from` as `to` per lane where either is a small integer: through the
    /// 32-bit type of the same signedness that holds its lanes, then wrapped (integers)
    /// or saturated (floats, as `as` does) into `to`'s range.
    pub(super) fn cast_small(&mut self, p: &Part, from: ScalarType, to: ScalarType) -> R<Part> {
        let carrier = |s: ScalarType| match s {
            s if !s.is_small_int() => s,
            s if s.is_signed_int() => ScalarType::I32,
            _ => ScalarType::U32,
        };
        if from.is_float() {
            if from != ScalarType::F32 {
                return self.per_lane(to, &[(p, from)], |f, xs| Ok(f.cast(xs[0], from, to)));
            }
            let (lo, hi) = to.int_range().unwrap_or((0, 0));
            let (lo, hi) = (
                self.vconst_i32_splat(lo as i32 as u32),
                self.vconst_i32_splat(hi as i32 as u32),
            );
            let vs = self.vectors(p, from);
            let out = vs
                .into_iter()
                .map(|v| {
                    let mt = self.mask_type();
                    let w = self.b.ins().fcvt_to_sint_sat(mt, v);
                    let w = self.b.ins().smax(w, lo);
                    self.b.ins().smin(w, hi)
                })
                .collect();
            return Ok(Part::Var(out));
        }
        let (cf, ct_) = (carrier(from), carrier(to));
        let mid = if cf == ct_ {
            Part::Var(self.vectors(p, from))
        } else {
            self.cast_part(p, cf, ct_)?
        };
        Ok(if to.is_small_int() {
            self.wrap_part(to, mid)
        } else {
            mid
        })
    }
}
