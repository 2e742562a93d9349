//! `exp` and `exp2`: `x = k ln 2 + r` with `|r| <= ln 2 / 2` (the product `k ln 2` in two
//! parts, the first exact), `e^r = 1 + r + r^2/2 + r^3 P(r)` with the minimax `P`, then
//! `2^k` put in the exponent in two steps so that a subnormal result rounds once.
//! Beyond the overflow and underflow thresholds the arguments are clamped, so the
//! scaling itself gives ±inf and 0; NaN passes through.

use super::coefficients::*;
use super::Math;
use cranelift_codegen::ir::Value;

impl Math<'_, '_, '_> {
    /// `e^x`.
    pub(super) fn exp(&mut self, x: Value) -> Value {
        let x = self.clamp_exponent(x, std::f64::consts::LOG2_E);
        let scaled = self.mulk(x, std::f64::consts::LOG2_E);
        let (kf, k) = self.round_int(scaled);
        let (hi, lo) = if self.wide() {
            (LN2_HI_F64, LN2_LO_F64)
        } else {
            (LN2_HI_F32, LN2_LO_F32)
        };
        // x - k ln2_hi is exact; r = that - k ln2_lo rounds, and its error is kept.
        let h = self.mlak(kf, -hi, x);
        let klo = self.mulk(kf, lo);
        let r = self.sub(h, klo);
        let d = self.sub(h, r);
        let r_lo = self.sub(d, klo);
        let p = self.exp_kernel(r, r_lo);
        self.ldexp(p, k)
    }

    /// `2^x`.
    pub(super) fn exp2(&mut self, x: Value) -> Value {
        let x = self.clamp_exponent(x, 1.0);
        let (kf, k) = self.round_int(x);
        // `x - k` is exact; times ln 2 in two parts.
        let f = self.sub(x, kf);
        let (ln2, tail) = if self.wide() {
            (std::f64::consts::LN_2, LN2_TAIL_F64)
        } else {
            (std::f64::consts::LN_2 as f32 as f64, LN2_TAIL_F32)
        };
        let l = self.c(ln2);
        let (r, e) = self.two_prod(f, l);
        let r_lo = self.mlak(f, tail, e);
        let p = self.exp_kernel(r, r_lo);
        self.ldexp(p, k)
    }

    /// `x` clamped to where `2^(x * log2_per_unit)` certainly overflows or underflows
    /// (the results there are ±inf and 0 all the same), keeping `round_int` and the
    /// exponent arithmetic in range; NaN passes.
    fn clamp_exponent(&mut self, x: Value, log2_per_unit: f64) -> Value {
        // In binary exponents: f64 overflows above 1024 and underflows below -1075;
        // f32 above 128 and below -150.
        let (over, under) = if self.wide() {
            (1100.0, -1100.0)
        } else {
            (140.0, -160.0)
        };
        let (over, under) = (over / log2_per_unit, under / log2_per_unit);
        let high = self.gt_k(x, over);
        let top = self.c(over);
        let x = self.sel(high, top, x);
        let low = self.lt_k(x, under);
        let bottom = self.c(under);
        self.sel(low, bottom, x)
    }

    /// `e^(r + r_lo)` for `|r| <= ln 2 / 2` (a little more is fine), `r_lo` a tiny
    /// correction.
    pub(super) fn exp_kernel(&mut self, r: Value, r_lo: Value) -> Value {
        let q = if self.wide() {
            self.horner(r, &EXP_F64)
        } else {
            self.horner(r, &EXP_F32)
        };
        let half = self.c(0.5);
        let t = self.mla(r, q, half);
        let r2 = self.mul(r, r);
        let y = self.mla(r2, t, r_lo);
        let y = self.add(y, r);
        self.addk(y, 1.0)
    }
}
