//! Inlined math: `exp`, `exp2`, `ln`, `log2`, `log10`, `sin`, `cos`, `tan`, `sin_cos`,
//! `tanh`, `powf` and `powi`, generated as Cranelift IR over one number (`F32`, `F64`) or
//! a vector of them (`F32X4`, `F64X2`), so that scalar code and every SIMD lane compute an
//! element alike, with no call.
//!
//! The algorithms are the classic ones (fdlibm, Cody and Waite): reduce the argument
//! exactly or in extra precision (`k ln 2 + r`, `n pi/2 + r` in three parts), evaluate a
//! minimax polynomial fitted for this library ([`coefficients`], made by
//! `scripts/math_coefficients.py`), and rebuild. Special values (±0, ±inf, NaN, subnormal
//! inputs and results, overflow and underflow) come out as the platform's libm gives
//! them. `f32` `sin`, `cos`, `tan`, `tanh` and `powf` are computed in `f64` and rounded
//! once. Each function's error bound is in the README and measured by
//! `tests/math_accuracy.rs` (and `benches`' `math_accuracy` on millions of inputs).
//!
//! What stays a call of the platform's libm: the other functions, `f64` `powf`,
//! trigonometric arguments beyond 1.6e6 in magnitude (lanes needing it call it, the others
//! do not), and everything under `ACCEL_EXACT_MATH=1`, which makes results bit-identical
//! to debug mode.

#[rustfmt::skip]
mod coefficients;
mod exp;
mod log;
mod pow;
pub mod probe;
mod tanh;
mod trig;

use super::cx::*;
use accel_ir::ScalarType;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::Value;
use cranelift_codegen::ir::{types as ct, ConstantData, Endianness, InstBuilder, MemFlagsData};

/// The functions [`FnCx::inline_math`] generates inline (for `f64` `powf`, see there).
pub(super) const INLINE: &[&str] = &[
    "exp", "exp2", "ln", "log2", "log10", "sin", "cos", "tan", "tanh", "powf",
];

impl FnCx<'_, '_> {
    /// `name` (a float method of [`INLINE`]) of `args`, all of the float type `t` (a
    /// number or a vector), generated inline; `None` when it is a libm call here (not
    /// inlined, `f64` `powf`, or `ACCEL_EXACT_MATH=1`).
    pub(super) fn inline_math(&mut self, t: CType, name: &str, args: &[Value]) -> Option<Value> {
        if self.g.exact_math || !INLINE.contains(&name) {
            return None;
        }
        let mut m = Math::new(self, t);
        Some(match name {
            "exp" => m.exp(args[0]),
            "exp2" => m.exp2(args[0]),
            "ln" => m.ln(args[0]),
            "log2" => m.log2(args[0]),
            "log10" => m.log10(args[0]),
            "sin" => m.sin_cos(args[0]).0,
            "cos" => m.sin_cos(args[0]).1,
            "tan" => m.tan(args[0]),
            "tanh" => m.tanh(args[0]),
            "powf" if !m.wide() => m.powf(args[0], args[1]),
            _ => return None,
        })
    }

    /// `x.sin_cos()` inline, or `None` under `ACCEL_EXACT_MATH=1`.
    pub(super) fn inline_sin_cos(&mut self, t: CType, x: Value) -> Option<(Value, Value)> {
        if self.g.exact_math {
            return None;
        }
        Some(Math::new(self, t).sin_cos(x))
    }

    /// `x.powi(n)` as Rust computes it (compiler-builtins' `__powidf2`: square and
    /// multiply over `|n|`, then one division for a negative `n`), so the result is
    /// bit-identical to debug mode; `n` is one `i32` for every lane of `x`.
    pub(super) fn powi(&mut self, t: CType, x: Value, n: Value) -> Value {
        Math::new(self, t).powi(x, n)
    }
}

/// Builds math over values of one float type: a number (`F32`, `F64`) or a vector of
/// them (`F32X4`, `F64X2`). Comparisons give masks: an `I8` for a number, lanes of all
/// ones or zeros for a vector.
pub(super) struct Math<'c, 'a, 'g> {
    pub(super) f: &'c mut FnCx<'a, 'g>,
    pub(super) t: CType,
}

impl<'c, 'a, 'g> Math<'c, 'a, 'g> {
    pub(super) fn new(f: &'c mut FnCx<'a, 'g>, t: CType) -> Self {
        Math { f, t }
    }

    /// The same builder over another float type (`f32` functions computed in `f64`).
    fn with<'d>(&'d mut self, t: CType) -> Math<'d, 'a, 'g> {
        Math { f: self.f, t }
    }

    /// Whether the numbers are `f64`.
    pub(super) fn wide(&self) -> bool {
        self.t.lane_type() == ct::F64
    }

    fn lanes(&self) -> u8 {
        self.t.lane_count() as u8
    }

    /// The integer type of the same shape (the bits of the numbers).
    pub(super) fn int(&self) -> CType {
        self.t.as_int()
    }

    fn scalar(&self) -> ScalarType {
        if self.wide() {
            ScalarType::F64
        } else {
            ScalarType::F32
        }
    }

    /// A constant of the float type.
    pub(super) fn c(&mut self, v: f64) -> Value {
        match (self.t.is_vector(), self.wide()) {
            (false, true) => self.f.b.ins().f64const(v),
            (false, false) => self.f.b.ins().f32const(v as f32),
            (true, true) => self.vconst(self.t, &v.to_le_bytes()),
            (true, false) => self.vconst(self.t, &(v as f32).to_le_bytes()),
        }
    }

    /// A constant of the integer type.
    pub(super) fn ci(&mut self, v: i64) -> Value {
        let t = self.int();
        match (t.is_vector(), self.wide()) {
            (false, _) => self.f.b.ins().iconst(t, v),
            (true, true) => self.vconst(t, &v.to_le_bytes()),
            (true, false) => self.vconst(t, &(v as i32).to_le_bytes()),
        }
    }

    /// A vector of type `t` whose every lane has the bytes `lane`.
    fn vconst(&mut self, t: CType, lane: &[u8]) -> Value {
        let bytes: Vec<u8> = (0..t.lane_count()).flat_map(|_| lane.to_vec()).collect();
        let handle = self
            .f
            .b
            .func
            .dfg
            .constants
            .insert(ConstantData::from(bytes));
        self.f.b.ins().vconst(t, handle)
    }

    pub(super) fn add(&mut self, a: Value, b: Value) -> Value {
        self.f.b.ins().fadd(a, b)
    }

    pub(super) fn sub(&mut self, a: Value, b: Value) -> Value {
        self.f.b.ins().fsub(a, b)
    }

    pub(super) fn mul(&mut self, a: Value, b: Value) -> Value {
        self.f.b.ins().fmul(a, b)
    }

    pub(super) fn div(&mut self, a: Value, b: Value) -> Value {
        self.f.b.ins().fdiv(a, b)
    }

    pub(super) fn neg(&mut self, a: Value) -> Value {
        self.f.b.ins().fneg(a)
    }

    pub(super) fn abs(&mut self, a: Value) -> Value {
        self.f.b.ins().fabs(a)
    }

    /// `a * b + c`: one fused operation where the host has FMA, else two roundings (the
    /// algorithms' error bounds hold either way).
    pub(super) fn mla(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.f.g.fma {
            self.f.b.ins().fma(a, b, c)
        } else {
            let p = self.f.b.ins().fmul(a, b);
            self.f.b.ins().fadd(p, c)
        }
    }

    /// `a * k + c` for a constant `k`.
    pub(super) fn mlak(&mut self, a: Value, k: f64, c: Value) -> Value {
        let k = self.c(k);
        self.mla(a, k, c)
    }

    /// `a * b` as its rounded product and the exact rounding error: one FMA, or
    /// Dekker's product of halves without.
    pub(super) fn two_prod(&mut self, a: Value, b: Value) -> (Value, Value) {
        let p = self.mul(a, b);
        if self.f.g.fma {
            let np = self.neg(p);
            return (p, self.f.b.ins().fma(a, b, np));
        }
        let (ah, al) = self.split_halves(a);
        let (bh, bl) = self.split_halves(b);
        // ((ah bh - p) + ah bl + al bh) + al bl
        let hh = self.mul(ah, bh);
        let e = self.sub(hh, p);
        let hl = self.mul(ah, bl);
        let e = self.add(e, hl);
        let lh = self.mul(al, bh);
        let e = self.add(e, lh);
        let ll = self.mul(al, bl);
        (p, self.add(e, ll))
    }

    /// Veltkamp's split of `a` into a high half and the rest, each exact in a product.
    fn split_halves(&mut self, a: Value) -> (Value, Value) {
        let factor = if self.wide() { 134217729.0 } else { 4097.0 };
        let c = self.mulk(a, factor);
        let d = self.sub(c, a);
        let hi = self.sub(c, d);
        (hi, self.sub(a, hi))
    }

    /// `a * k` for a constant `k`.
    pub(super) fn mulk(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.mul(a, k)
    }

    /// `a + k` for a constant `k`.
    pub(super) fn addk(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.add(a, k)
    }

    /// `k - a` for a constant `k`.
    pub(super) fn ksub(&mut self, k: f64, a: Value) -> Value {
        let k = self.c(k);
        self.sub(k, a)
    }

    /// The polynomial `c[0] + c[1] x + c[2] x^2 + …` (Horner's scheme).
    pub(super) fn horner(&mut self, x: Value, c: &[f64]) -> Value {
        let mut acc = self.c(c[c.len() - 1]);
        for &k in c[..c.len() - 1].iter().rev() {
            let k = self.c(k);
            acc = self.mla(acc, x, k);
        }
        acc
    }

    /// A float comparison: a mask.
    pub(super) fn fcmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.f.b.ins().fcmp(cc, a, b)
    }

    /// `a < k` for a constant `k`.
    pub(super) fn lt_k(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.fcmp(FloatCC::LessThan, a, k)
    }

    /// `a > k` for a constant `k`.
    pub(super) fn gt_k(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.fcmp(FloatCC::GreaterThan, a, k)
    }

    /// `a == k` for a constant `k`.
    pub(super) fn eq_k(&mut self, a: Value, k: f64) -> Value {
        let k = self.c(k);
        self.fcmp(FloatCC::Equal, a, k)
    }

    /// Whether `a` is NaN.
    pub(super) fn is_nan(&mut self, a: Value) -> Value {
        self.fcmp(FloatCC::Unordered, a, a)
    }

    /// An integer comparison of values of the integer type: a mask.
    pub(super) fn icmp_k(&mut self, cc: IntCC, a: Value, k: i64) -> Value {
        let k = self.ci(k);
        self.f.b.ins().icmp(cc, a, k)
    }

    /// Lanes of `a` where `m` holds, of `b` elsewhere (floats).
    pub(super) fn sel(&mut self, m: Value, a: Value, b: Value) -> Value {
        if self.t.is_vector() {
            let m = self.bitcast(self.t, m);
            self.f.b.ins().bitselect(m, a, b)
        } else {
            self.f.b.ins().select(m, a, b)
        }
    }

    /// Lanes of `a` where `m` holds, of `b` elsewhere (of the integer type).
    pub(super) fn sel_i(&mut self, m: Value, a: Value, b: Value) -> Value {
        if self.t.is_vector() {
            self.f.b.ins().bitselect(m, a, b)
        } else {
            self.f.b.ins().select(m, a, b)
        }
    }

    /// The mask `a` and `b`.
    pub(super) fn and(&mut self, a: Value, b: Value) -> Value {
        self.f.b.ins().band(a, b)
    }

    /// The mask `a` or `b`.
    pub(super) fn or(&mut self, a: Value, b: Value) -> Value {
        self.f.b.ins().bor(a, b)
    }

    /// The mask `not a`.
    pub(super) fn not(&mut self, a: Value) -> Value {
        if self.t.is_vector() {
            self.f.b.ins().bnot(a)
        } else {
            self.f.b.ins().bxor_imm_u(a, 1)
        }
    }

    /// Whether any lane of the mask holds (an `I8`).
    pub(super) fn any(&mut self, m: Value) -> Value {
        if self.t.is_vector() {
            self.f.b.ins().vany_true(m)
        } else {
            m
        }
    }

    fn bitcast(&mut self, to: CType, x: Value) -> Value {
        let flags = if to.is_vector() {
            MemFlagsData::new().with_endianness(Endianness::Little)
        } else {
            MemFlagsData::new()
        };
        self.f.b.ins().bitcast(to, flags, x)
    }

    /// The bits of the numbers.
    pub(super) fn bits(&mut self, x: Value) -> Value {
        let t = self.int();
        self.bitcast(t, x)
    }

    /// The numbers with the bits `i`.
    pub(super) fn float_of_bits(&mut self, i: Value) -> Value {
        self.bitcast(self.t, i)
    }

    /// `x` rounded to the nearest integer (ties to even), as a float and as an integer of
    /// the integer type; `|x|` must be below 2^22 (f32) or 2^51 (f64). Adding 1.5 * 2^23
    /// (or 2^52) leaves the integer in the low bits of the significand.
    pub(super) fn round_int(&mut self, x: Value) -> (Value, Value) {
        let magic = if self.wide() {
            6755399441055744.0
        } else {
            12582912.0
        };
        let t = self.addk(x, magic);
        let r = self.addk(t, -magic);
        let tb = self.bits(t);
        let mb = self.c(magic);
        let mb = self.bits(mb);
        let k = self.f.b.ins().isub(tb, mb);
        (r, k)
    }

    /// The small integers `k` (below 2^22 in magnitude) as floats.
    pub(super) fn int_to_float(&mut self, k: Value) -> Value {
        let magic = if self.wide() {
            6755399441055744.0
        } else {
            12582912.0
        };
        let mb = self.c(magic);
        let mb = self.bits(mb);
        let sum = self.f.b.ins().iadd(mb, k);
        let f = self.float_of_bits(sum);
        self.addk(f, -magic)
    }

    /// `p * 2^k` for integers `k` within twice the exponent range, rounded once (so a
    /// subnormal result is right): two multiplications by powers of two.
    pub(super) fn ldexp(&mut self, p: Value, k: Value) -> Value {
        let (bias, shift) = if self.wide() { (1023, 52) } else { (127, 23) };
        let k1 = self.f.b.ins().sshr_imm_u(k, 1);
        let k2 = self.f.b.ins().isub(k, k1);
        let mut r = p;
        for part in [k1, k2] {
            let b = self.ci(bias);
            let biased = self.f.b.ins().iadd(part, b);
            let e = self.f.b.ins().ishl_imm_u(biased, shift);
            let scale = self.float_of_bits(e);
            r = self.mul(r, scale);
        }
        r
    }

    /// `x` with the sign of `s`.
    pub(super) fn copysign(&mut self, x: Value, s: Value) -> Value {
        let sign = if self.wide() {
            i64::MIN
        } else {
            i32::MIN as i64
        };
        let mask = self.ci(sign);
        let xb = self.bits(x);
        let sb = self.bits(s);
        let mag = self.f.b.ins().band_not(xb, mask);
        let sgn = self.f.b.ins().band(sb, mask);
        let r = self.f.b.ins().bor(mag, sgn);
        self.float_of_bits(r)
    }

    /// Lane `k` of a vector (a number is its only lane).
    pub(super) fn lane(&mut self, x: Value, k: u8) -> Value {
        if self.t.is_vector() || self.f.b.func.dfg.value_type(x).is_vector() {
            self.f.b.ins().extractlane(x, k)
        } else {
            x
        }
    }

    /// The libm function `helper` (of the lane type) of each lane of `args`.
    pub(super) fn call_lanes(&mut self, helper: &str, args: &[Value]) -> Value {
        let name =
            super::super::helpers::math_name(helper, self.scalar()).unwrap_or("accel_exp_f64");
        let n = self.lanes();
        let mut out: Option<Value> = None;
        for k in 0..n {
            let lane_args: Vec<Value> = args.iter().map(|&a| self.lane(a, k)).collect();
            let r = self.f.helper(name, &lane_args)[0];
            out = Some(match out {
                None if self.t.is_vector() => self.f.b.ins().splat(self.t, r),
                None => r,
                Some(v) => self.f.b.ins().insertlane(v, r, k),
            });
        }
        out.expect("at least one lane")
    }

    /// `fast`, except in the lanes where the mask `slow` holds: there the libm function
    /// `helper` of `args` (called only when some lane needs it, off the hot path).
    pub(super) fn unless(
        &mut self,
        slow: Value,
        fast: Value,
        helper: &str,
        args: &[Value],
    ) -> Value {
        let any = self.any(slow);
        let call = self.f.b.create_block();
        let join = self.f.b.create_block();
        let out = self.f.b.append_block_param(join, self.t);
        self.f.b.set_cold_block(call);
        self.f.b.ins().brif(any, call, &[], join, &[fast.into()]);
        self.f.b.switch_to_block(call);
        let libm = self.call_lanes(helper, args);
        let r = self.sel(slow, libm, fast);
        self.f.b.ins().jump(join, &[r.into()]);
        self.f.b.switch_to_block(join);
        out
    }

    /// The `f32` lanes of `x` (of this `f32` builder's type) as `f64` values: one number,
    /// or two vectors of half as many lanes (the first half, then the second).
    pub(super) fn promote(&mut self, x: Value) -> Vec<Value> {
        if self.t.is_vector() {
            self.f.promote_lanes(&[x])
        } else {
            vec![self.f.b.ins().fpromote(ct::F64, x)]
        }
    }

    /// The `f64` type holding this `f32` type's promoted lanes: half as many lanes for
    /// vectors (`F64X2` for `F32X4`).
    pub(super) fn promoted_type(&self) -> CType {
        if self.t.is_vector() {
            ct::F64
                .by(self.t.lane_count() / 2)
                .expect("a vector of 4, 8 or 16 lanes")
        } else {
            ct::F64
        }
    }

    /// `f(x)` for this builder's numbers: directly for `f64`; for `f32`, on the lanes
    /// promoted to `f64`, rounded once at the end.
    pub(super) fn in_f64(
        &mut self,
        x: Value,
        f: for<'d> fn(&mut Math<'d, 'a, 'g>, Value) -> Value,
    ) -> Value {
        if self.wide() {
            return f(self, x);
        }
        let wide = self.promoted_type();
        let parts = self.promote(x);
        let out: Vec<Value> = parts
            .into_iter()
            .map(|p| f(&mut self.with(wide), p))
            .collect();
        self.demote(&out)
    }

    /// The inverse of [`Self::promote`]: `f64` values rounded to this `f32` type.
    pub(super) fn demote(&mut self, parts: &[Value]) -> Value {
        if self.t.is_vector() {
            self.f.demote_lanes(parts)[0]
        } else {
            self.f.b.ins().fdemote(ct::F32, parts[0])
        }
    }
}
