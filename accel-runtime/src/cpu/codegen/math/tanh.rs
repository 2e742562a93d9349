//! `tanh`, in `f64` (`f32` arguments computed in `f64` and rounded once): for `|x| < 0.55`
//! `x + x^3 U(x^2)` with the minimax `U`; beyond, `1 - 2 / (e^(2|x|) + 1)` with the sign
//! of `x` (no cancellation there: the quotient is at most 1/2), and ±1 from `|x| = 20` on.

use super::coefficients::*;
use super::Math;
use cranelift_codegen::ir::Value;

impl Math<'_, '_, '_> {
    /// `tanh x`.
    pub(super) fn tanh(&mut self, x: Value) -> Value {
        self.in_f64(x, |m, p| m.tanh_f64(p))
    }

    fn tanh_f64(&mut self, x: Value) -> Value {
        let ax = self.abs(x);
        let z = self.mul(x, x);
        let u = self.horner(z, &TANH_F64);
        let s = self.mul(x, z);
        let small = self.mla(s, u, x);
        let over = self.gt_k(ax, 20.0);
        let twenty = self.c(20.0);
        let a = self.sel(over, twenty, ax);
        let a2 = self.mulk(a, 2.0);
        let e = self.exp(a2);
        let e1 = self.addk(e, 1.0);
        let two = self.c(2.0);
        let q = self.div(two, e1);
        let t = self.ksub(1.0, q);
        let large = self.copysign(t, x);
        let is_small = self.lt_k(ax, 0.55);
        let t = self.sel(is_small, small, large);
        let tiny = self.tiny(x);
        self.sel(tiny, x, t)
    }
}
