//! Lanes: the vectors a varying word takes, words made vectors (a uniform word splatted,
//! the gang's index counted up), single lanes and words from lanes, masks (`I32X4`, one
//! lane per element, widened for 64-bit words), blends, and code run lane by lane.

use super::super::cx::*;
use super::{not_spmd, Part, G, LANES};
use crate::backend::layout::{self, Word};
use accel_ir::{ScalarType, Type};
use cranelift_codegen::ir::{condcodes::IntCC, Value};
use cranelift_codegen::ir::{types as ct, ConstantData, Endianness, InstBuilder, MemFlagsData};

impl FnCx<'_, '_> {
    /// The vector type holding lanes of `s`, and how many vectors one word takes.
    pub(super) fn lane_vector(s: ScalarType) -> (CType, usize) {
        match s {
            ScalarType::F32 => (ct::F32X4, 1),
            ScalarType::I32 | ScalarType::U32 | ScalarType::Bool => (ct::I32X4, 1),
            ScalarType::F64 => (ct::F64X2, 2),
            ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => (ct::I64X2, 2),
        }
    }

    /// The scalar type of each word of a value of type `t`, a sequence's addresses as
    /// `usize` lanes (sequences per lane: see `sequences.rs`).
    pub(super) fn word_scalars(t: &Type) -> R<Vec<ScalarType>> {
        Ok(layout::words(t)
            .map_err(not_spmd)?
            .into_iter()
            .map(|w| match w {
                Word::Scalar(s) => s,
                Word::Ptr(_) => ScalarType::Usize,
            })
            .collect())
    }

    /// The scalar type of each word of `t` when they are all numbers or bools: what loads
    /// and stores of columns handle.
    pub(super) fn number_words(t: &Type) -> R<Vec<ScalarType>> {
        layout::words(t)
            .map_err(not_spmd)?
            .into_iter()
            .map(|w| match w {
                Word::Scalar(s) => Ok(s),
                Word::Ptr(_) => Err(not_spmd(format!("elements of type {t} per lane"))),
            })
            .collect()
    }

    /// The scalar type of a one-word value.
    pub(super) fn g_scalar(g: &G) -> R<ScalarType> {
        match g.ty {
            Type::Scalar(s) => Ok(s),
            ref t => Err(not_spmd(format!("a number was expected, found {t}"))),
        }
    }

    /// A constant vector of type `t` from its bytes.
    pub(super) fn vconst_bytes(&mut self, t: CType, bytes: Vec<u8>) -> Value {
        let handle = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        self.b.ins().vconst(t, handle)
    }

    /// A constant vector of two `i64` lanes.
    pub(super) fn vconst_i64x2(&mut self, a: i64, b: i64) -> Value {
        let bytes = [a.to_le_bytes(), b.to_le_bytes()].concat();
        self.vconst_bytes(ct::I64X2, bytes)
    }

    /// The mask with every lane set.
    pub(super) fn all_lanes(&mut self) -> Value {
        self.vconst_bytes(ct::I32X4, vec![0xff; 16])
    }

    /// `x` reinterpreted as the vector type `t`.
    pub(super) fn vbitcast(&mut self, t: CType, x: Value) -> Value {
        if self.b.func.dfg.value_type(x) == t {
            return x;
        }
        let flags = MemFlagsData::new().with_endianness(Endianness::Little);
        self.b.ins().bitcast(t, flags, x)
    }

    /// A word as its vectors.
    pub(super) fn vectors(&mut self, p: &Part, s: ScalarType) -> Vec<Value> {
        match p {
            Part::Var(v) => v.clone(),
            Part::Uni(x) => self.splat_word(*x, s),
            Part::Seq(base, _) => {
                let b = self.b.ins().splat(ct::I64X2, *base);
                let low = self.vconst_i64x2(0, 1);
                let high = self.vconst_i64x2(2, 3);
                vec![self.b.ins().iadd(b, low), self.b.ins().iadd(b, high)]
            }
        }
    }

    /// A scalar word in every lane (a `bool` as a mask).
    pub(super) fn splat_word(&mut self, x: Value, s: ScalarType) -> Vec<Value> {
        let (t, n) = Self::lane_vector(s);
        if s == ScalarType::Bool {
            let w = self.b.ins().uextend(ct::I32, x);
            let m = self.b.ins().ineg(w);
            return vec![self.b.ins().splat(ct::I32X4, m)];
        }
        let v = self.b.ins().splat(t, x);
        vec![v; n]
    }

    /// A gang value with every word as vectors.
    pub(super) fn materialize(&mut self, g: &G) -> R<G> {
        let ss = Self::word_scalars(&g.ty)?;
        let w =
            g.w.iter()
                .zip(ss)
                .map(|(p, s)| Part::Var(self.vectors(p, s)))
                .collect();
        Ok(G {
            ty: g.ty.clone(),
            w,
        })
    }

    /// Lane `k` of a word, as a scalar of `s` (a `bool` as 0 or 1).
    pub(super) fn lane_of(&mut self, p: &Part, s: ScalarType, k: usize) -> Value {
        match p {
            Part::Uni(x) => *x,
            Part::Seq(base, _) => self.b.ins().iadd_imm_s(*base, k as i64),
            Part::Var(v) => {
                let per = LANES / v.len();
                let x = self.b.ins().extractlane(v[k / per], (k % per) as u8);
                if s == ScalarType::Bool {
                    self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
                } else {
                    x
                }
            }
        }
    }

    /// A word from its lanes (scalars of `s`; `bool`s as 0 or 1).
    pub(super) fn part_of_lanes(&mut self, s: ScalarType, lanes: &[Value]) -> Part {
        let (t, n) = Self::lane_vector(s);
        let per = LANES / n;
        let lanes: Vec<Value> = lanes
            .iter()
            .map(|&x| {
                if s == ScalarType::Bool {
                    let w = self.b.ins().uextend(ct::I32, x);
                    self.b.ins().ineg(w)
                } else {
                    x
                }
            })
            .collect();
        let vs = (0..n)
            .map(|j| {
                let mut v = self.b.ins().splat(t, lanes[j * per]);
                for l in 1..per {
                    v = self.b.ins().insertlane(v, lanes[j * per + l], l as u8);
                }
                v
            })
            .collect();
        Part::Var(vs)
    }

    /// A `bool` gang value as a mask.
    pub(super) fn mask_of(&mut self, g: &G) -> R<Value> {
        if g.ty != Type::Scalar(ScalarType::Bool) {
            return Err(not_spmd(format!("a condition of type {}", g.ty)));
        }
        Ok(self.vectors(&g.w[0], ScalarType::Bool)[0])
    }

    /// A mask as a `bool` gang value.
    pub(super) fn bool_of(m: Value) -> G {
        G {
            ty: Type::Scalar(ScalarType::Bool),
            w: vec![Part::Var(vec![m])],
        }
    }

    /// The running lanes and `m`.
    pub(super) fn and_active(&mut self, m: Value) -> Value {
        match self.gang.as_ref().and_then(|g| g.mask) {
            Some(a) => self.b.ins().band(a, m),
            None => m,
        }
    }

    /// Whether any lane of the mask is set (an `I8`).
    pub(super) fn any_lane(&mut self, m: Value) -> Value {
        self.b.ins().vany_true(m)
    }

    /// The mask for a word of `s`: one `I32X4`, or two `I64X2` for 64-bit words.
    /// Also whether the parts were widened here (Cranelift then no longer sees that each
    /// lane is all ones or all zeros).
    pub(super) fn mask_parts(&mut self, m: Value, s: ScalarType) -> (Vec<Value>, bool) {
        match Self::lane_vector(s).1 {
            1 => (vec![m], false),
            _ => match self.gang.as_ref().and_then(|g| g.wide_masks.get(&m)) {
                // The comparison's own 64-bit masks: no widening, and a blend on them is
                // one `blendvpd`.
                Some(parts) => (parts.clone(), false),
                None => (
                    vec![self.b.ins().swiden_low(m), self.b.ins().swiden_high(m)],
                    true,
                ),
            },
        }
    }

    /// A lane-wise comparison result of a word of `s` as one `I32X4` mask.
    pub(super) fn narrow_mask(&mut self, parts: &[Value]) -> Value {
        match parts {
            [m] => self.vbitcast(ct::I32X4, *m),
            // Each 64-bit lane is all ones or all zeros: its low half says the same.
            [a, b] => {
                let (wide_a, wide_b) = (*a, *b);
                let a = self.vbitcast(ct::I32X4, wide_a);
                let b = self.vbitcast(ct::I32X4, wide_b);
                let m = self.shuffle32(a, b, [0, 2, 4, 6]);
                if let Some(g) = &mut self.gang {
                    g.wide_masks.insert(m, vec![wide_a, wide_b]);
                }
                m
            }
            _ => unreachable!("a word is one or two vectors"),
        }
    }

    /// The lanes of word `a` where `m` is set, of `b` elsewhere.
    pub(super) fn blend_part(&mut self, m: Value, a: &Part, b: &Part, s: ScalarType) -> Part {
        if let (Part::Uni(x), Part::Uni(y)) = (a, b) {
            if x == y {
                return a.clone();
            }
        }
        // Blending with zero (an `if` whose other arm is a reduction's neutral `0`) is one
        // `and`: all-zero bits are `0`, `0.0` and `false` alike.
        let zero = |f: &Self, p: &Part| matches!(p, Part::Uni(v) if f.is_zero_bits(*v));
        let (a_zero, b_zero) = (zero(self, a), zero(self, b));
        let av = self.vectors(a, s);
        let bv = self.vectors(b, s);
        let (ms, widened) = self.mask_parts(m, s);
        // A widened mask blends with one `blendv` (it reads each lane's top bit) rather
        // than three logic instructions; only x86 (SSE4.1) has it, on integer lanes.
        let blendv = widened && self.g.blendv;
        let (t, _) = Self::lane_vector(s);
        let out = av
            .iter()
            .zip(&bv)
            .zip(ms)
            .map(|((&x, &y), mk)| {
                let mk = self.vbitcast(t, mk);
                if b_zero {
                    self.b.ins().band(x, mk)
                } else if a_zero {
                    self.b.ins().band_not(y, mk)
                } else if blendv {
                    let it = ct::I64X2;
                    let (mk, xi, yi) = (
                        self.vbitcast(it, mk),
                        self.vbitcast(it, x),
                        self.vbitcast(it, y),
                    );
                    let r = self.b.ins().blendv(mk, xi, yi);
                    self.vbitcast(t, r)
                } else {
                    self.b.ins().bitselect(mk, x, y)
                }
            })
            .collect();
        Part::Var(out)
    }

    /// Whether `v` is a constant whose bits are all zero.
    fn is_zero_bits(&self, v: Value) -> bool {
        use cranelift_codegen::ir::{InstructionData, ValueDef};
        let ValueDef::Result(inst, _) = self.b.func.dfg.value_def(v) else {
            return false;
        };
        match self.b.func.dfg.insts[inst] {
            InstructionData::UnaryImm { imm, .. } => imm.bits() == 0,
            InstructionData::UnaryIeee32 { imm, .. } => imm.bits() == 0,
            InstructionData::UnaryIeee64 { imm, .. } => imm.bits() == 0,
            _ => false,
        }
    }

    /// The lanes of `a` where `m` is set, of `b` elsewhere.
    pub(super) fn blend(&mut self, m: Value, a: &G, b: &G) -> R<G> {
        let ss = Self::word_scalars(&a.ty)?;
        let w =
            a.w.iter()
                .zip(&b.w)
                .zip(ss)
                .map(|((x, y), s)| self.blend_part(m, x, y, s))
                .collect();
        Ok(G {
            ty: a.ty.clone(),
            w,
        })
    }

    /// A word computed lane by lane: `f` gets each lane's scalar arguments (of the given
    /// types) and gives that lane's result, of type `out`.
    pub(super) fn per_lane(
        &mut self,
        out: ScalarType,
        args: &[(&Part, ScalarType)],
        mut f: impl FnMut(&mut Self, &[Value]) -> R<Value>,
    ) -> R<Part> {
        let mut lanes = Vec::with_capacity(LANES);
        for k in 0..LANES {
            let xs: Vec<Value> = args.iter().map(|(p, s)| self.lane_of(p, *s, k)).collect();
            lanes.push(f(self, &xs)?);
        }
        Ok(self.part_of_lanes(out, &lanes))
    }

    /// The `f32` lanes of a vector as two `F64X2` (lanes 0-1, 2-3).
    pub(in crate::cpu::codegen) fn promote_lanes(&mut self, x: Value) -> Vec<Value> {
        let low = self.b.ins().fvpromote_low(x);
        let high_lanes = self.shuffle32(x, x, [2, 3, 2, 3]);
        let high = self.b.ins().fvpromote_low(high_lanes);
        vec![low, high]
    }

    /// Two `F64X2` rounded to one `F32X4`.
    pub(in crate::cpu::codegen) fn demote_lanes(&mut self, parts: &[Value]) -> Value {
        let low = self.b.ins().fvdemote(parts[0]);
        let high = self.b.ins().fvdemote(parts[1]);
        self.shuffle32(low, high, [0, 1, 4, 5])
    }

    /// The 32-bit lanes `pick` of the eight lanes of `a` then `b` (as `a`'s type).
    pub(super) fn shuffle32(&mut self, a: Value, b: Value, pick: [u8; 4]) -> Value {
        let t = self.b.func.dfg.value_type(a);
        let bytes: Vec<u8> = pick
            .iter()
            .flat_map(|&l| (0..4).map(move |k| 4 * l + k))
            .collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(bytes));
        let ab = self.vbitcast(ct::I8X16, a);
        let bb = self.vbitcast(ct::I8X16, b);
        let s = self.b.ins().shuffle(ab, bb, mask);
        self.vbitcast(t, s)
    }
}
