//! Lanes: the vectors a varying word takes, words made vectors (a uniform word splatted,
//! the gang's index counted up), single lanes and words from lanes, masks (a vector of
//! 32-bit lanes per group, widened for 64-bit words), blends, and code run lane by lane.
//!
//! A gang is one or more groups of lanes (four at Cranelift's tiers: 128-bit vectors;
//! up to 16 at LLVM's: see `Gen::group_lanes`). A word of a 32-bit type is one vector per
//! group, of a 64-bit type two (the group's first half of lanes, then its second), group
//! after group.

use super::super::cx::*;
use super::{not_spmd, Mask, Part, G};
use crate::backend::layout::{self, Word};
use accel_ir::Expr;
use accel_ir::{ScalarType, Type};
use cranelift_codegen::ir::{condcodes::IntCC, Value};
use cranelift_codegen::ir::{types as ct, ConstantData, Endianness, InstBuilder, MemFlagsData};

/// The lanes of a group of a gang that iterates to convergence (see [`super::converges`]):
/// 256 bits of 32-bit lanes.
const LATENCY_GROUP: usize = 8;

impl FnCx<'_, '_> {
    /// The shape of the gang that runs `body` over `param`: its groups, and the lanes of
    /// each. [`super::gang_groups`] says how many groups the element's code affords; a
    /// group is as wide as the tier's vectors (four lanes at Cranelift's tiers, sixteen
    /// with LLVM on AVX-512), up to the widest gang: Black-Scholes' element, one group, runs
    /// sixteen lanes in one 512-bit vector at the LLVM tier (it ran four, a quarter of the
    /// vector, 4x slower than hand-written code); Mandelbrot's, four groups of code, runs
    /// 32 lanes there (four 256-bit groups, see below). Every lane computes the same value
    /// whatever the gang's width, so the tiers' results are the same bits.
    pub(super) fn gang_shape(&mut self, body: &Expr, param: &str) -> (usize, usize) {
        let groups = match self.g.pinned_lanes {
            Some(lanes) => super::Width::Lanes(lanes),
            None => super::gang_groups(body, param, self.g.max_groups, self.g.search_lanes),
        };
        let lanes = match groups {
            // A search loop's or `ACCEL_GANG`'s lanes, as they are.
            super::Width::Lanes(lanes) => lanes,
            super::Width::RowWalk => {
                self.g.shapes.push("row walk per lane");
                super::ROW_WALK_LANES
            }
            super::Width::Groups(groups) => {
                let lanes = (groups * self.g.group_lanes).min(super::MAX_LANES);
                if super::converges(body, param) {
                    let carried = if super::carries_f64(body) { 8 } else { 4 };
                    lanes.min(converging_lanes(
                        self.g.vector_registers,
                        self.g.group_lanes,
                        carried,
                    ))
                } else {
                    lanes
                }
            }
        };
        let mut group = lanes.min(self.g.group_lanes);
        // An iteration to convergence on AVX-512 (LLVM's tier): its gang in 256-bit
        // groups, twice as many chains of dependent steps at once. Mandelbrot's 16-lane
        // gang ran 76 ms against 99 in two 256-bit groups rather than one 512-bit one
        // (cpu_suite, 2048x2048), and its 32-lane gang, four 256-bit groups, 64-70;
        // four 128-bit groups ran 111-131, and N-body's loop over bodies (uniform, its
        // steps independent) runs faster in 512-bit groups (40 ms against 46). Not where
        // the loop carries `f64`s: four 256-bit groups hold them in eight vectors each,
        // and Mandelbrot's `x`, `y` and `cx` with their squares spilled; in two 512-bit
        // groups (four vectors each) its 32-lane gang ran 40-43 ms against 49-52, once
        // its escaped lanes' `x` and `y` were no longer blended (`Gang::free_running`).
        if matches!(groups, super::Width::Groups(g) if g > 1)
            && group > LATENCY_GROUP
            && super::converges(body, param)
            && !super::carries_f64(body)
        {
            group = LATENCY_GROUP;
        }
        self.g.next_group = group;
        (lanes / group, group)
    }

    /// How many groups the gang being generated has.
    pub(super) fn groups(&self) -> usize {
        self.gang.as_ref().map_or(1, |g| g.groups)
    }

    /// The lanes of each of its groups (before it starts, of the next gang's).
    pub(super) fn group(&self) -> usize {
        self.gang.as_ref().map_or(self.g.next_group, |g| g.group)
    }

    /// The gang's lanes.
    pub(in crate::cpu::codegen) fn lanes(&self) -> usize {
        self.group() * self.groups()
    }

    /// A group's vector of 32-bit integer lanes: what a mask is.
    pub(super) fn mask_type(&self) -> CType {
        ct::I32
            .by(self.group() as u32)
            .expect("a group of 4, 8 or 16 lanes")
    }

    /// A vector of half a group's lanes of type `lane` (`I64X2` for a group of four).
    pub(super) fn half_vector(&self, lane: CType) -> CType {
        lane.by(self.group() as u32 / 2)
            .expect("a group of 4, 8 or 16 lanes")
    }

    /// The vector type holding lanes of `s`, and how many vectors one word takes for the
    /// whole gang.
    pub(super) fn lane_vectors(&self, s: ScalarType) -> (CType, usize) {
        let (t, n) = self.lane_vector(s);
        (t, n * self.groups())
    }

    /// The vector type holding lanes of `s`, and how many vectors one group's word takes.
    pub(super) fn lane_vector(&self, s: ScalarType) -> (CType, usize) {
        match s {
            ScalarType::F32 => (ct::F32.by(self.group() as u32).expect("a group's lanes"), 1),
            // 8- and 16-bit integers as 32-bit lanes, normalized (see `small.rs`).
            ScalarType::I32
            | ScalarType::U32
            | ScalarType::Bool
            | ScalarType::I8
            | ScalarType::I16
            | ScalarType::U8
            | ScalarType::U16 => (self.mask_type(), 1),
            ScalarType::F64 => (self.half_vector(ct::F64), 2),
            ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => (self.half_vector(ct::I64), 2),
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

    /// A constant vector of half a group's `i64` lanes, lane `k` being `first + k`.
    pub(super) fn vconst_i64_from(&mut self, first: i64) -> Value {
        let t = self.half_vector(ct::I64);
        let bytes = (0..t.lane_count() as i64)
            .flat_map(|k| (first + k).to_le_bytes())
            .collect();
        self.vconst_bytes(t, bytes)
    }

    /// A constant vector of half a group's `i64` lanes, each `x`.
    pub(super) fn vconst_i64_splat(&mut self, x: i64) -> Value {
        let t = self.half_vector(ct::I64);
        let bytes = (0..t.lane_count()).flat_map(|_| x.to_le_bytes()).collect();
        self.vconst_bytes(t, bytes)
    }

    /// A constant vector of a group's 32-bit lanes, each `x`.
    pub(super) fn vconst_i32_splat(&mut self, x: u32) -> Value {
        let t = self.mask_type();
        let bytes = (0..t.lane_count()).flat_map(|_| x.to_le_bytes()).collect();
        self.vconst_bytes(t, bytes)
    }

    /// The mask with every lane set.
    pub(super) fn all_lanes(&mut self) -> Mask {
        let ones = self.vconst_i32_splat(u32::MAX);
        vec![ones; self.groups()]
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
                let (wt, half) = (self.half_vector(ct::I64), self.group() as i64 / 2);
                let b = self.b.ins().splat(wt, *base);
                (0..2 * self.groups() as i64)
                    .map(|k| {
                        let offsets = self.vconst_i64_from(half * k);
                        self.b.ins().iadd(b, offsets)
                    })
                    .collect()
            }
            Part::Strided(base, stride) => {
                let (wt, half) = (self.half_vector(ct::I64), self.group() as i64 / 2);
                let b = self.b.ins().splat(wt, *base);
                let st = self.b.ins().splat(wt, *stride);
                (0..2 * self.groups() as i64)
                    .map(|k| {
                        let lanes = self.vconst_i64_from(half * k);
                        let scaled = self.b.ins().imul(lanes, st);
                        self.b.ins().iadd(b, scaled)
                    })
                    .collect()
            }
            Part::Rev(top) => {
                let (wt, half) = (self.half_vector(ct::I64), self.group() as i64 / 2);
                let t = self.b.ins().splat(wt, *top);
                (0..2 * self.groups() as i64)
                    .map(|k| {
                        let offsets = self.vconst_i64_from(half * k);
                        self.b.ins().isub(t, offsets)
                    })
                    .collect()
            }
            Part::Clamp(c) => {
                let lanes = self.vectors(&Part::Seq(c.base, false), s);
                let t = self.half_vector(ct::I64);
                let (lo, hi, off) = (
                    self.b.ins().splat(t, c.lo),
                    self.b.ins().splat(t, c.hi),
                    self.b.ins().splat(t, c.off),
                );
                let (below, above) = if c.signed {
                    (IntCC::SignedLessThan, IntCC::SignedGreaterThan)
                } else {
                    (IntCC::UnsignedLessThan, IntCC::UnsignedGreaterThan)
                };
                lanes
                    .into_iter()
                    .map(|v| {
                        let under = self.b.ins().icmp(below, v, lo);
                        let v = self.b.ins().bitselect(under, lo, v);
                        let over = self.b.ins().icmp(above, v, hi);
                        let v = self.b.ins().bitselect(over, hi, v);
                        self.b.ins().iadd(v, off)
                    })
                    .collect()
            }
        }
    }

    /// Whether a clamped index's clamp binds no lane (an `I8`): then its lanes are
    /// `base + off + k`.
    pub(super) fn clamp_unbound(&mut self, c: &super::Clamp) -> Value {
        let width = self.lanes() as i64;
        let last = self.b.ins().iadd_imm_s(c.base, width - 1);
        let (ge, le) = if c.signed {
            (
                IntCC::SignedGreaterThanOrEqual,
                IntCC::SignedLessThanOrEqual,
            )
        } else {
            (
                IntCC::UnsignedGreaterThanOrEqual,
                IntCC::UnsignedLessThanOrEqual,
            )
        };
        let from = self.b.ins().icmp(ge, c.base, c.lo);
        // The last lane not wrapped past the first, and not above `hi`.
        let no_wrap = self.b.ins().icmp(ge, last, c.base);
        let to = self.b.ins().icmp(le, last, c.hi);
        let ok = self.b.ins().band(from, no_wrap);
        self.b.ins().band(ok, to)
    }

    /// A scalar word in every lane (a `bool` as a mask).
    pub(super) fn splat_word(&mut self, x: Value, s: ScalarType) -> Vec<Value> {
        let (t, n) = self.lane_vectors(s);
        if s == ScalarType::Bool {
            let w = self.b.ins().uextend(ct::I32, x);
            let m = self.b.ins().ineg(w);
            let mt = self.mask_type();
            return vec![self.b.ins().splat(mt, m); n];
        }
        let x = if s.is_small_int() {
            self.small_to_lane(s, x)
        } else {
            x
        };
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
            Part::Rev(top) => self.b.ins().iadd_imm_s(*top, -(k as i64)),
            Part::Strided(base, stride) => {
                let scaled = self.b.ins().imul_imm_s(*stride, k as i64);
                self.b.ins().iadd(*base, scaled)
            }
            Part::Clamp(c) => {
                let x = self.b.ins().iadd_imm_s(c.base, k as i64);
                let (below, above) = if c.signed {
                    (IntCC::SignedLessThan, IntCC::SignedGreaterThan)
                } else {
                    (IntCC::UnsignedLessThan, IntCC::UnsignedGreaterThan)
                };
                let under = self.b.ins().icmp(below, x, c.lo);
                let x = self.b.ins().select(under, c.lo, x);
                let over = self.b.ins().icmp(above, x, c.hi);
                let x = self.b.ins().select(over, c.hi, x);
                self.b.ins().iadd(x, c.off)
            }
            Part::Var(v) => {
                let per = self.lanes() / v.len();
                let x = self.b.ins().extractlane(v[k / per], (k % per) as u8);
                if s == ScalarType::Bool {
                    self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
                } else if s.is_small_int() {
                    self.b.ins().ireduce(clif(s), x)
                } else {
                    x
                }
            }
        }
    }

    /// A word from its lanes (scalars of `s`; `bool`s as 0 or 1).
    pub(super) fn part_of_lanes(&mut self, s: ScalarType, lanes: &[Value]) -> Part {
        let (t, n) = self.lane_vectors(s);
        let per = self.lanes() / n;
        let lanes: Vec<Value> = lanes
            .iter()
            .map(|&x| {
                if s == ScalarType::Bool {
                    let w = self.b.ins().uextend(ct::I32, x);
                    self.b.ins().ineg(w)
                } else if s.is_small_int() {
                    self.small_to_lane(s, x)
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
    pub(super) fn mask_of(&mut self, g: &G) -> R<Mask> {
        if g.ty != Type::Scalar(ScalarType::Bool) {
            return Err(not_spmd(format!("a condition of type {}", g.ty)));
        }
        Ok(self.vectors(&g.w[0], ScalarType::Bool))
    }

    /// A mask as a `bool` gang value.
    pub(super) fn bool_of(m: Mask) -> G {
        G {
            ty: Type::Scalar(ScalarType::Bool),
            w: vec![Part::Var(m)],
        }
    }

    /// The running lanes and `m`.
    pub(super) fn and_active(&mut self, m: Mask) -> Mask {
        match self.gang.as_ref().and_then(|g| g.mask.clone()) {
            Some(a) => self.mask_and(&a, &m),
            None => m,
        }
    }

    /// The lanes set in both masks.
    pub(super) fn mask_and(&mut self, a: &Mask, b: &Mask) -> Mask {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| self.b.ins().band(x, y))
            .collect()
    }

    /// The lanes set in either mask.
    pub(super) fn mask_or(&mut self, a: &Mask, b: &Mask) -> Mask {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| self.b.ins().bor(x, y))
            .collect()
    }

    /// The lanes not set in `m`.
    pub(super) fn mask_not(&mut self, m: &Mask) -> Mask {
        m.iter().map(|&x| self.b.ins().bnot(x)).collect()
    }

    /// Whether any lane of the mask is set (an `I8`).
    pub(super) fn any_lane(&mut self, m: &Mask) -> Value {
        let mut any = m[0];
        for &x in &m[1..] {
            any = self.b.ins().bor(any, x);
        }
        self.b.ins().vany_true(any)
    }

    /// Whether every lane of the mask is set (an `I8`).
    pub(super) fn all_lanes_set(&mut self, m: &Mask) -> Value {
        let mut all = m[0];
        for &x in &m[1..] {
            all = self.b.ins().band(all, x);
        }
        self.b.ins().vall_true(all)
    }

    /// The mask's lanes as bits of an `I32`, lane `k` at bit `k`.
    pub(super) fn mask_bits(&mut self, m: &Mask) -> Value {
        let mut bits = self.b.ins().vhigh_bits(ct::I32, m[0]);
        for (g, &x) in m.iter().enumerate().skip(1) {
            let b = self.b.ins().vhigh_bits(ct::I32, x);
            let shift = (self.group() * g) as i64;
            let b = self.b.ins().ishl_imm_u(b, shift);
            bits = self.b.ins().bor(bits, b);
        }
        bits
    }

    /// Whether lane `k` of the mask is set (an `I32`, all ones or zero).
    pub(super) fn mask_lane(&mut self, m: &Mask, k: usize) -> Value {
        let group = self.group();
        self.b.ins().extractlane(m[k / group], (k % group) as u8)
    }

    /// The mask for a word of `s`: one vector per group (`I32X4` for four lanes), or two
    /// of 64-bit lanes for 64-bit words (`I64X2`). Also whether the parts were widened here (Cranelift then no longer sees that
    /// each lane is all ones or all zeros).
    pub(super) fn mask_parts(&mut self, m: &Mask, s: ScalarType) -> (Vec<Value>, bool) {
        if self.lane_vector(s).1 == 1 {
            return (m.clone(), false);
        }
        let mut parts = Vec::with_capacity(2 * m.len());
        let mut widened = false;
        for &g in m {
            match self.gang.as_ref().and_then(|x| x.wide_masks.get(&g)) {
                // The comparison's own 64-bit masks: no widening, and a blend on them is
                // one `blendvpd`.
                Some(own) => parts.extend(own.iter().copied()),
                None => {
                    parts.push(self.b.ins().swiden_low(g));
                    parts.push(self.b.ins().swiden_high(g));
                    widened = true;
                }
            }
        }
        (parts, widened)
    }

    /// A lane-wise comparison result of a word (its vectors) as a mask.
    pub(super) fn narrow_mask(&mut self, parts: &[Value]) -> Mask {
        let groups = self.groups();
        let mt = self.mask_type();
        if parts.len() == groups {
            return parts.iter().map(|&m| self.vbitcast(mt, m)).collect();
        }
        let evens: Vec<u8> = (0..self.group() as u8).map(|l| 2 * l).collect();
        // Two 64-bit vectors per group: each 64-bit lane is all ones or all zeros, and its
        // low half says the same.
        parts
            .chunks(2)
            .map(|pair| {
                let (wide_a, wide_b) = (pair[0], pair[1]);
                let a = self.vbitcast(mt, wide_a);
                let b = self.vbitcast(mt, wide_b);
                let m = self.shuffle32(a, b, &evens);
                if let Some(g) = &mut self.gang {
                    g.wide_masks.insert(m, vec![wide_a, wide_b]);
                }
                m
            })
            .collect()
    }

    /// The lanes of word `a` where `m` is set, of `b` elsewhere.
    pub(super) fn blend_part(&mut self, m: &Mask, a: &Part, b: &Part, s: ScalarType) -> Part {
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
        let (t, _) = self.lane_vector(s);
        let it = self.half_vector(ct::I64);
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
    pub(super) fn blend(&mut self, m: &Mask, a: &G, b: &G) -> R<G> {
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
        let mut lanes = Vec::with_capacity(self.lanes());
        for k in 0..self.lanes() {
            let xs: Vec<Value> = args.iter().map(|(p, s)| self.lane_of(p, *s, k)).collect();
            lanes.push(f(self, &xs)?);
        }
        Ok(self.part_of_lanes(out, &lanes))
    }

    /// The `f32` lanes of vectors as two vectors of `f64` lanes each (the first half of
    /// lanes, then the second: `F64X2` for an `F32X4`).
    pub(in crate::cpu::codegen) fn promote_lanes(&mut self, xs: &[Value]) -> Vec<Value> {
        let n = self.group() as u8;
        let high: Vec<u8> = (n / 2..n).chain(n / 2..n).collect();
        let mut out = Vec::with_capacity(2 * xs.len());
        let wide = ct::F64
            .by(u32::from(n) / 2)
            .expect("a group of 4, 8 or 16 lanes");
        for &x in xs {
            let low = self.b.ins().fvpromote_low(x);
            out.push(self.retype(low, wide));
            let high_lanes = self.shuffle32(x, x, &high);
            let high = self.b.ins().fvpromote_low(high_lanes);
            out.push(self.retype(high, wide));
        }
        out
    }

    /// Pairs of vectors of `f64` lanes rounded to one of `f32` lanes each.
    pub(in crate::cpu::codegen) fn demote_lanes(&mut self, parts: &[Value]) -> Vec<Value> {
        let n = self.group() as u8;
        let halves: Vec<u8> = (0..n / 2).chain(n..n + n / 2).collect();
        parts
            .chunks(2)
            .map(|pair| {
                let narrow = ct::F32
                    .by(u32::from(n))
                    .expect("a group of 4, 8 or 16 lanes");
                let low = self.b.ins().fvdemote(pair[0]);
                let low = self.retype(low, narrow);
                let high = self.b.ins().fvdemote(pair[1]);
                let high = self.retype(high, narrow);
                self.shuffle32(low, high, &halves)
            })
            .collect()
    }

    /// `v`, the result of an instruction CLIF types for 128-bit vectors only (`shuffle`,
    /// `fvpromote_low`, `fvdemote`), as type `t`: a wider group's (compiled by LLVM
    /// only) has its operands' width.
    fn retype(&mut self, v: Value, t: CType) -> Value {
        match self.b.func.dfg.value_type(v) == t {
            true => v,
            false => self.b.func.dfg.replace_result(v, t),
        }
    }

    /// The 32-bit lanes `pick` of the lanes of `a` then `b` (as `a`'s type; `pick` has a
    /// group's lanes).
    pub(super) fn shuffle32(&mut self, a: Value, b: Value, pick: &[u8]) -> Value {
        self.shuffle_lanes(a, b, pick, 4)
    }

    /// The lanes `pick` of `lane_bytes` bytes each of `a` then `b` (as `a`'s type; `pick`
    /// has as many lanes as `a`).
    pub(super) fn shuffle_lanes(
        &mut self,
        a: Value,
        b: Value,
        pick: &[u8],
        lane_bytes: u8,
    ) -> Value {
        let t = self.b.func.dfg.value_type(a);
        let bytes: Vec<u8> = pick
            .iter()
            .flat_map(|&l| (0..lane_bytes).map(move |k| lane_bytes * l + k))
            .collect();
        let bt = ct::I8
            .by(bytes.len() as u32)
            .expect("a group of 4, 8 or 16 lanes");
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(bytes));
        let ab = self.vbitcast(bt, a);
        let bb = self.vbitcast(bt, b);
        let s = self.b.ins().shuffle(ab, bb, mask);
        let s = self.retype(s, bt);
        self.vbitcast(t, s)
    }
}

/// The most lanes of a gang iterating to convergence: as many as keep each number the
/// loop carries (`carried_bytes` each: its widest type's) in an eighth of the tier's
/// `vector_registers` of `group_lanes` 32-bit lanes, so that its variables, their squares
/// and the loop's invariants stay in registers. Each step's work is short and depends on
/// the step before; lanes beyond that spill to the stack at every step. Measured on
/// Mandelbrot (2048x2048, cpu_suite and its `f32` form), every optimum on this bound: on
/// AVX2, LLVM's `f64` loop ran 84 ms at 8 lanes against 101 at 16 and 164 at 32, its
/// `f32` loop 50 ms at 16 against 54 at 32 and 73 at 8; Cranelift's (16 `xmm` registers)
/// `f64` loop 185-219 ms at 4 lanes against 270-275 at 16, its `f32` loop 95 ms at 8
/// against 146 at 4 and 196 at 16; on AVX-512 (32 registers), LLVM's `f64` loop ran
/// fastest at 32 lanes in two 512-bit groups (see `FnCx::gang_shape`).
fn converging_lanes(vector_registers: usize, group_lanes: usize, carried_bytes: usize) -> usize {
    let vector_bytes = 4 * group_lanes;
    (vector_registers / 8 * vector_bytes / carried_bytes).max(super::GROUP)
}

#[cfg(test)]
mod tests {
    use super::converging_lanes;

    #[test]
    fn a_converging_loop_keeps_its_numbers_in_an_eighth_of_the_registers() {
        // Cranelift on x86-64: 16 registers of four 32-bit lanes.
        assert_eq!(converging_lanes(16, 4, 8), 4);
        assert_eq!(converging_lanes(16, 4, 4), 8);
        // LLVM on AVX2: 16 registers of eight.
        assert_eq!(converging_lanes(16, 8, 8), 8);
        assert_eq!(converging_lanes(16, 8, 4), 16);
        // LLVM on AVX-512: 32 registers of sixteen (the widest gang, 32 lanes, is less).
        assert_eq!(converging_lanes(32, 16, 8), 32);
        assert_eq!(converging_lanes(32, 16, 4), 64);
        // Never less than one of Cranelift's groups.
        assert_eq!(converging_lanes(8, 4, 8), 4);
    }
}
