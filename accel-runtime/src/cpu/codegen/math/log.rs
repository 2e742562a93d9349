//! `ln`, `log2`, `log10`: `x = 2^k m` with `m` in `[sqrt(2)/2, sqrt(2))` (subnormal `x`
//! scaled first), `f = m - 1`, `s = f / (2 + f)`, and
//! `ln(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2))` with the minimax `R`. `ln` adds `k ln 2`
//! in two parts; `log2` and `log10` split `f - f^2/2` so that its product with `1/ln 2`
//! (or `1/ln 10`) in two parts is exact, as FreeBSD's msun does. ±0 gives -inf, a
//! negative number NaN, +inf +inf.

use super::coefficients::*;
use super::Math;
use cranelift_codegen::ir::{InstBuilder, Value};

/// The parts of `log(x)` every logarithm combines.
struct Parts {
    /// `k` as a float.
    k: Value,
    /// `f = m - 1`.
    f: Value,
    /// `f^2 / 2`.
    hfsq: Value,
    /// `s (f^2/2 + R(s^2))`.
    r: Value,
}

impl Math<'_, '_, '_> {
    /// `ln(x)`.
    pub(super) fn ln(&mut self, x: Value) -> Value {
        let p = self.log_parts(x);
        let (hi, lo) = if self.wide() {
            (LN2_HI_F64, LN2_LO_F64)
        } else {
            (LN2_HI_F32, LN2_LO_F32)
        };
        // k ln2_hi - ((hfsq - (r + k ln2_lo)) - f)
        let klo = self.mulk(p.k, lo);
        let a = self.add(p.r, klo);
        let b = self.sub(p.hfsq, a);
        let c = self.sub(b, p.f);
        let khi = self.mulk(p.k, hi);
        let v = self.sub(khi, c);
        self.log_specials(x, v)
    }

    /// `log2(x)`.
    pub(super) fn log2(&mut self, x: Value) -> Value {
        let p = self.log_parts(x);
        let (hi, lo) = self.split_f(&p);
        let v = if self.wide() {
            let val_hi = self.mulk(hi, INV_LN2_HI_F64);
            let sum = self.add(lo, hi);
            let a = self.mulk(sum, INV_LN2_LO_F64);
            let val_lo = self.mlak(lo, INV_LN2_HI_F64, a);
            self.add_k_exactly(p.k, val_hi, val_lo)
        } else {
            let sum = self.add(lo, hi);
            let a = self.mulk(sum, INV_LN2_LO_F32);
            let b = self.mlak(lo, INV_LN2_HI_F32, a);
            let c = self.mlak(hi, INV_LN2_HI_F32, b);
            self.add(c, p.k)
        };
        self.log_specials(x, v)
    }

    /// `log10(x)`.
    pub(super) fn log10(&mut self, x: Value) -> Value {
        let p = self.log_parts(x);
        let (hi, lo) = self.split_f(&p);
        let v = if self.wide() {
            let val_hi = self.mulk(hi, INV_LN10_HI_F64);
            let y2 = self.mulk(p.k, LOG10_2_HI_F64);
            let sum = self.add(lo, hi);
            let a = self.mulk(sum, INV_LN10_LO_F64);
            let b = self.mlak(p.k, LOG10_2_LO_F64, a);
            let val_lo = self.mlak(lo, INV_LN10_HI_F64, b);
            self.add_k_exactly(y2, val_hi, val_lo)
        } else {
            let sum = self.add(lo, hi);
            let a = self.mulk(sum, INV_LN10_LO_F32);
            let b = self.mlak(p.k, LOG10_2_LO_F32, a);
            let c = self.mlak(lo, INV_LN10_HI_F32, b);
            let d = self.mlak(hi, INV_LN10_HI_F32, c);
            self.mlak(p.k, LOG10_2_HI_F32, d)
        };
        self.log_specials(x, v)
    }

    /// `f - f^2/2` as `hi + lo` where `hi` keeps the top bits only (21 for f64, 12 for
    /// f32), so that `hi` times a constant's high part is exact.
    fn split_f(&mut self, p: &Parts) -> (Value, Value) {
        let d = self.sub(p.f, p.hfsq);
        let keep = if self.wide() {
            -(1i64 << 32)
        } else {
            0xffff_f000u32 as i32 as i64
        };
        let bits = self.bits(d);
        let mask = self.ci(keep);
        let hb = self.f.b.ins().band(bits, mask);
        let hi = self.float_of_bits(hb);
        // lo = (f - hi) - hfsq + r
        let a = self.sub(p.f, hi);
        let b = self.sub(a, p.hfsq);
        let lo = self.add(b, p.r);
        (hi, lo)
    }

    /// `y + hi + lo` rounded once more carefully: `y + hi` exactly as a sum and an error.
    fn add_k_exactly(&mut self, y: Value, hi: Value, lo: Value) -> Value {
        let w = self.add(y, hi);
        let e = self.sub(y, w);
        let e = self.add(e, hi);
        let lo = self.add(lo, e);
        self.add(lo, w)
    }

    /// `k`, `f`, `f^2/2` and `s (f^2/2 + R(s^2))` of `x` (positive, finite; others give
    /// garbage that [`Self::log_specials`] replaces).
    fn log_parts(&mut self, x: Value) -> Parts {
        let wide = self.wide();
        let (min_normal, scale, scale_bits) = if wide {
            (f64::MIN_POSITIVE, 18014398509481984.0, 54)
        } else {
            (f32::MIN_POSITIVE as f64, 33554432.0, 25)
        };
        let sub = self.lt_k(x, min_normal);
        let scaled = self.mulk(x, scale);
        let xs = self.sel(sub, scaled, x);
        let (one, sqrt_half, shift, frac, bias) = if wide {
            (
                0x3ff0_0000_0000_0000i64,
                0x3fe6_a09e_667f_3bcdi64,
                52,
                0x000f_ffff_ffff_ffffi64,
                1023,
            )
        } else {
            (0x3f80_0000, 0x3f35_04f3, 23, 0x007f_ffff, 127)
        };
        // With m's bits offset so that [sqrt(2)/2, sqrt(2)) maps to one exponent.
        let hx = self.bits(xs);
        let off = self.ci(one - sqrt_half);
        let u = self.f.b.ins().iadd(hx, off);
        let e = self.f.b.ins().ushr_imm_u(u, shift);
        let b = self.ci(bias);
        let k = self.f.b.ins().isub(e, b);
        let adjust = self.ci(scale_bits);
        let zero = self.ci(0);
        let sub_k = self.sel_i(sub, adjust, zero);
        let k = self.f.b.ins().isub(k, sub_k);
        let fm = self.ci(frac);
        let mb = self.f.b.ins().band(u, fm);
        let sh = self.ci(sqrt_half);
        let mb = self.f.b.ins().iadd(mb, sh);
        let m = self.float_of_bits(mb);
        let f = self.addk(m, -1.0);
        let kf = self.int_to_float(k);
        let half_f = self.mulk(f, 0.5);
        let hfsq = self.mul(half_f, f);
        let two_f = self.addk(f, 2.0);
        let s = self.div(f, two_f);
        let z = self.mul(s, s);
        let poly = if wide {
            self.horner(z, &LOG_F64)
        } else {
            self.horner(z, &LOG_F32)
        };
        let big_r = self.mul(z, poly);
        let sum = self.add(hfsq, big_r);
        let r = self.mul(s, sum);
        Parts { k: kf, f, hfsq, r }
    }

    /// `v`, except for the special inputs: ±0 gives -inf, negatives NaN, +inf +inf, NaN
    /// itself.
    fn log_specials(&mut self, x: Value, v: Value) -> Value {
        let zero = self.eq_k(x, 0.0);
        let minus_inf = self.c(f64::NEG_INFINITY);
        let v = self.sel(zero, minus_inf, v);
        let negative = self.lt_k(x, 0.0);
        let nan = self.c(f64::NAN);
        let v = self.sel(negative, nan, v);
        let inf = self.eq_k(x, f64::INFINITY);
        let v = self.sel(inf, x, v);
        let is_nan = self.is_nan(x);
        self.sel(is_nan, x, v)
    }
}
