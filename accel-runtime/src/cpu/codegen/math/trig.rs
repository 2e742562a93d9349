//! `sin`, `cos`, `sin_cos` and `tan`, in `f64` (`f32` arguments are computed in `f64` and
//! rounded once): `x = n pi/2 + y` with `pi/2` in three 33-bit parts and their tails (as
//! fdlibm's `__rem_pio2` for medium arguments, every round done), `y = y0 + y1` in extra
//! precision, then fdlibm's kernels with minimax polynomials on `[-pi/4, pi/4]` and the
//! quadrant `n mod 4`. Arguments of magnitude 1.6e6 and more (and ±inf, NaN) are the lanes
//! that call libm, which reduces them exactly.

use super::coefficients::*;
use super::Math;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};

/// Below this magnitude the three-part reduction is accurate (`n < 2^20`).
const REDUCIBLE: f64 = 1.6e6;

/// An argument reduced: `x = n pi/2 + y0 + y1`.
struct Reduced {
    y0: Value,
    y1: Value,
    n: Value,
    /// Lanes whose argument is not reducible here (libm's).
    huge: Value,
}

impl Math<'_, '_, '_> {
    /// `(sin x, cos x)`.
    pub(super) fn sin_cos(&mut self, x: Value) -> (Value, Value) {
        if self.wide() {
            return self.sin_cos_f64(x);
        }
        let wide = self.promoted_type();
        let parts = self.promote(x);
        let (mut s, mut c) = (Vec::new(), Vec::new());
        for p in parts {
            let (a, b) = self.with(wide).sin_cos_f64(p);
            s.push(a);
            c.push(b);
        }
        (self.demote(&s), self.demote(&c))
    }

    /// `tan x`.
    pub(super) fn tan(&mut self, x: Value) -> Value {
        self.in_f64(x, |m, p| m.tan_f64(p))
    }

    fn sin_cos_f64(&mut self, x: Value) -> (Value, Value) {
        let r = self.reduce_pio2(x);
        let s = self.kernel_sin(r.y0, r.y1);
        let c = self.kernel_cos(r.y0, r.y1);
        let q1 = self.quadrant_bit(r.n, 1);
        let q2 = self.quadrant_bit(r.n, 2);
        // sin: s, c, -s, -c; cos: c, -s, -c, s.
        let sin = self.sel(q1, c, s);
        let minus = self.neg(sin);
        let sin = self.sel(q2, minus, sin);
        let cos = self.sel(q1, s, c);
        let flip = self.f.b.ins().bxor(q1, q2);
        let minus = self.neg(cos);
        let cos = self.sel(flip, minus, cos);
        // Tiny arguments (and ±0) are their own sine.
        let tiny = self.tiny(x);
        let sin = self.sel(tiny, x, sin);
        let sin = self.unless(r.huge, sin, "sin", &[x]);
        let cos = self.unless(r.huge, cos, "cos", &[x]);
        (sin, cos)
    }

    fn tan_f64(&mut self, x: Value) -> Value {
        let r = self.reduce_pio2(x);
        let odd = self.quadrant_bit(r.n, 1);
        let t = self.kernel_tan(r.y0, r.y1, odd);
        // Tiny arguments (and ±0) are their own tangent.
        let tiny = self.tiny(x);
        let t = self.sel(tiny, x, t);
        self.unless(r.huge, t, "tan", &[x])
    }

    /// Whether `|x| < 2^-27`, where `sin`, `tan`, `tanh` round to `x` itself.
    pub(super) fn tiny(&mut self, x: Value) -> Value {
        let ax = self.abs(x);
        self.lt_k(ax, 7.450580596923828e-9)
    }

    /// Whether bit `bit` of the quadrant `n` is set: a mask.
    fn quadrant_bit(&mut self, n: Value, bit: i64) -> Value {
        let b = self.ci(bit);
        let v = self.f.b.ins().band(n, b);
        self.icmp_k(IntCC::NotEqual, v, 0)
    }

    /// `x = n pi/2 + y0 + y1`, `|y0| <= pi/4` (about), for `|x| < REDUCIBLE`: `n pi/2`
    /// subtracted in parts whose products with `n` are exact, each difference's rounding
    /// error kept (Knuth's two-sum), so `y0 + y1` carries about 100 bits.
    fn reduce_pio2(&mut self, x: Value) -> Reduced {
        let ax = self.abs(x);
        let small = self.lt_k(ax, REDUCIBLE);
        let huge = self.not(small);
        let zero = self.c(0.0);
        let x = self.sel(huge, zero, x);
        let scaled = self.mulk(x, std::f64::consts::FRAC_2_PI);
        let (fnv, n) = self.round_int(scaled);
        // n * PIO2_1 is exact and so is x - n * PIO2_1 (Sterbenz).
        let t1 = self.mlak(fnv, -PIO2_1, x);
        let w2 = self.mulk(fnv, -PIO2_2);
        let (r2, lost2) = self.two_sum(t1, w2);
        let w3 = self.mulk(fnv, -PIO2_3);
        let (r3, lost3) = self.two_sum(r2, w3);
        // x - n pi/2 = r3 + lost2 + lost3 - n PIO2_3T
        let lost = self.add(lost2, lost3);
        let tail = self.mulk(fnv, PIO2_3T);
        let w = self.sub(tail, lost);
        let y0 = self.sub(r3, w);
        let d = self.sub(r3, y0);
        let y1 = self.sub(d, w);
        Reduced { y0, y1, n, huge }
    }

    /// `a + b` as its rounded sum and the exact rounding error (Knuth's two-sum).
    fn two_sum(&mut self, a: Value, b: Value) -> (Value, Value) {
        let s = self.add(a, b);
        let bb = self.sub(s, a);
        let aa = self.sub(s, bb);
        let da = self.sub(a, aa);
        let db = self.sub(b, bb);
        (s, self.add(da, db))
    }

    /// `sin(x + y)` for `|x| <= pi/4`, `|y|` tiny.
    fn kernel_sin(&mut self, x: Value, y: Value) -> Value {
        let z = self.mul(x, x);
        let w = self.mul(z, z);
        let s = SIN_F64;
        // r = S2 + z (S3 + z S4) + z w (S5 + z S6)
        let a = self.horner(z, &[s[1], s[2], s[3]]);
        let b = self.horner(z, &[s[4], s[5]]);
        let zw = self.mul(z, w);
        let r = self.mla(zw, b, a);
        let v = self.mul(z, x);
        // x - ((z (y/2 - v r) - y) - v S1)
        let hy = self.mulk(y, 0.5);
        let vr = self.mul(v, r);
        let t = self.sub(hy, vr);
        let t = self.mul(z, t);
        let t = self.sub(t, y);
        let vs = self.mulk(v, s[0]);
        let t = self.sub(t, vs);
        self.sub(x, t)
    }

    /// `cos(x + y)` for `|x| <= pi/4`, `|y|` tiny.
    fn kernel_cos(&mut self, x: Value, y: Value) -> Value {
        let z = self.mul(x, x);
        let w = self.mul(z, z);
        let c = COS_F64;
        // r = z (C1 + z (C2 + z C3)) + w^2 (C4 + z (C5 + z C6))
        let a = self.horner(z, &[c[0], c[1], c[2]]);
        let b = self.horner(z, &[c[3], c[4], c[5]]);
        let za = self.mul(z, a);
        let w2 = self.mul(w, w);
        let r = self.mla(w2, b, za);
        let hz = self.mulk(z, 0.5);
        let w = self.ksub(1.0, hz);
        // w + (((1 - w) - hz) + (z r - x y))
        let one_w = self.ksub(1.0, w);
        let lost = self.sub(one_w, hz);
        let zr = self.mul(z, r);
        let xy = self.mul(x, y);
        let t = self.sub(zr, xy);
        let t = self.add(lost, t);
        self.add(w, t)
    }

    /// `tan(x + y)` (or `-1/tan(x + y)` where `odd`) for `|x| <= pi/4`, `|y|` tiny; near
    /// pi/4 through `tan(pi/4 - x)`, and `-1/tan` computed with extra bits (fdlibm's
    /// `__kernel_tan`).
    fn kernel_tan(&mut self, x: Value, y: Value, odd: Value) -> Value {
        let ax = self.abs(x);
        let big = self.gt_k(ax, 0.6744);
        let big = {
            let eq = self.eq_k(ax, 0.6744);
            self.or(big, eq)
        };
        let negative = self.lt_k(x, 0.0);
        let ny = self.neg(y);
        let ya = self.sel(negative, ny, y);
        // Near pi/4: x = (pi/4 - |x|) + (pio4lo - y), y = 0.
        let a = self.ksub(std::f64::consts::FRAC_PI_4, ax);
        let b = self.ksub(PIO4_LO, ya);
        let folded = self.add(a, b);
        let x = self.sel(big, folded, x);
        let zero = self.c(0.0);
        let y = self.sel(big, zero, y);
        let z = self.mul(x, x);
        let q = self.horner(z, &TAN_F64[1..]);
        let s = self.mul(z, x);
        // r = y + z (s q + y) + s T0
        let sq = self.mla(s, q, y);
        let zsq = self.mla(z, sq, y);
        let r = self.mlak(s, TAN_F64[0], zsq);
        let w = self.add(x, r);
        // Near pi/4: v = sgn - 2 (x + (r - w^2 / (w + sgn))), sgn = 1 - 2 odd, signed as x.
        let one = self.c(1.0);
        let minus_one = self.c(-1.0);
        let sgn = self.sel(odd, minus_one, one);
        let ws = self.add(w, sgn);
        let w2 = self.mul(w, w);
        let q2 = self.div(w2, ws);
        let t = self.sub(r, q2);
        let t = self.add(x, t);
        let t = self.mulk(t, 2.0);
        let v = self.sub(sgn, t);
        let nv = self.neg(v);
        let near = self.sel(negative, nv, v);
        // Odd quadrants: -1/w with w and -1/w split into high and low parts.
        let keep = self.ci(-(1i64 << 32));
        let wb = self.bits(w);
        let wb = self.f.b.ins().band(wb, keep);
        let w0 = self.float_of_bits(wb);
        let d = self.sub(w0, x);
        let v = self.sub(r, d);
        let minus_one = self.c(-1.0);
        let a = self.div(minus_one, w);
        let ab = self.bits(a);
        let ab = self.f.b.ins().band(ab, keep);
        let a0 = self.float_of_bits(ab);
        // a0 + a (1 + a0 w0 + a0 v)
        let one = self.c(1.0);
        let t = self.mla(a0, w0, one);
        let t = self.mla(a0, v, t);
        let inverted = self.mla(a, t, a0);
        let far = self.sel(odd, inverted, w);
        self.sel(big, near, far)
    }
}
