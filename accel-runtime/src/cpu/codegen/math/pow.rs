//! `powf` and `powi`. `f32` `powf` is `2^(y log2|x|)` computed in `f64` (the product's
//! error, at most a few units of 2^-52 relative, is far below an `f32` unit), rounded
//! once, with C99's special cases (`pow(x, 0) = 1`, `pow(1, y) = 1`, negative `x` with
//! odd and non-integer `y`, zeros, infinities). `f64` `powf` calls libm. `powi` is Rust's
//! own algorithm, so bit-identical to debug mode.

use super::Math;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};

impl Math<'_, '_, '_> {
    /// `x.powf(y)` for `f32` numbers or lanes.
    pub(super) fn powf(&mut self, x: Value, y: Value) -> Value {
        let wide = self.promoted_type();
        let xs = self.promote(x);
        let ys = self.promote(y);
        let r: Vec<Value> = xs
            .into_iter()
            .zip(ys)
            .map(|(a, b)| self.with(wide).pow_f32_in_f64(a, b))
            .collect();
        self.demote(&r)
    }

    /// `pow(x, y)` for `f32` values held in `f64`.
    fn pow_f32_in_f64(&mut self, x: Value, y: Value) -> Value {
        let ax = self.abs(x);
        let l = self.log2(ax);
        let p = self.mul(y, l);
        let r = self.exp2(p);
        // y an integer, and odd: f32 values of 2^23 and more are even integers.
        let ay = self.abs(y);
        let big_y = self.gt_k(ay, 8388608.0);
        let (yr, yk) = {
            let zero = self.c(0.0);
            let y_small = self.sel(big_y, zero, y);
            self.round_int(y_small)
        };
        let int_small = self.fcmp(cranelift_codegen::ir::condcodes::FloatCC::Equal, yr, y);
        let is_int = self.or(big_y, int_small);
        let one = self.ci(1);
        let low = self.f.b.ins().band(yk, one);
        let odd_bit = self.icmp_k(IntCC::NotEqual, low, 0);
        let not_big = self.not(big_y);
        let odd = self.and(int_small, odd_bit);
        let odd = self.and(odd, not_big);
        // The sign of x (-0 and -inf included) with an odd y.
        let xb = self.bits(x);
        let sign = self.icmp_k(IntCC::SignedLessThan, xb, 0);
        let flip = self.and(sign, odd);
        let nr = self.neg(r);
        let r = self.sel(flip, nr, r);
        // A finite negative x with a non-integer y: NaN.
        let negative = self.lt_k(x, 0.0);
        let finite = self.lt_k(ax, f64::INFINITY);
        let not_int = self.not(is_int);
        let bad = self.and(negative, finite);
        let bad = self.and(bad, not_int);
        let nan = self.c(f64::NAN);
        let r = self.sel(bad, nan, r);
        // pow(1, y) = 1, pow(-1, ±inf) = 1, pow(x, ±0) = 1.
        let one_f = self.c(1.0);
        let x_one = self.eq_k(x, 1.0);
        let r = self.sel(x_one, one_f, r);
        let x_minus_one = self.eq_k(x, -1.0);
        let y_inf = self.eq_k(ay, f64::INFINITY);
        let both = self.and(x_minus_one, y_inf);
        let r = self.sel(both, one_f, r);
        let y_zero = self.eq_k(y, 0.0);
        self.sel(y_zero, one_f, r)
    }

    /// `x.powi(n)`: square-and-multiply over `|n|` (`n` one `i32` for all lanes), then
    /// `1 / r` for a negative `n`, as compiler-builtins' `__powidf2` and LLVM's expansion
    /// for a constant `n` both compute it. A constant `n` is unrolled.
    pub(super) fn powi(&mut self, x: Value, n: Value) -> Value {
        if let Some(k) = self.f.iconst_value(n) {
            let k = k as i32;
            let mut e = k.unsigned_abs();
            let mut r: Option<Value> = None;
            let mut a = x;
            while e != 0 {
                if e & 1 != 0 {
                    r = Some(match r {
                        Some(r) => self.mul(r, a),
                        None => a,
                    });
                }
                e >>= 1;
                if e != 0 {
                    a = self.mul(a, a);
                }
            }
            let r = r.unwrap_or_else(|| self.c(1.0));
            return if k < 0 {
                let one = self.c(1.0);
                self.div(one, r)
            } else {
                r
            };
        }
        let b = &mut self.f.b;
        let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, n, 0);
        let minus = b.ins().ineg(n);
        let e0 = b.ins().select(neg, minus, n);
        let head = b.create_block();
        let body = b.create_block();
        let exit = b.create_block();
        let t = self.t;
        let one = self.c(1.0);
        let b = &mut self.f.b;
        let acc = b.append_block_param(head, t);
        let base = b.append_block_param(head, t);
        let e = b.append_block_param(head, ct::I32);
        let done = b.append_block_param(exit, t);
        b.ins().jump(head, &[one.into(), x.into(), e0.into()]);
        b.switch_to_block(head);
        // Exit first, as `FnCx::loop_test` explains.
        let stop = b.ins().icmp_imm_s(IntCC::Equal, e, 0);
        b.ins().brif(stop, exit, &[acc.into()], body, &[]);
        b.switch_to_block(body);
        let bit = b.ins().band_imm_u(e, 1);
        let prod = b.ins().fmul(acc, base);
        let acc2 = b.ins().select(bit, prod, acc);
        let sq = b.ins().fmul(base, base);
        let e2 = b.ins().ushr_imm_u(e, 1);
        b.ins().jump(head, &[acc2.into(), sq.into(), e2.into()]);
        b.switch_to_block(exit);
        let one = self.c(1.0);
        let inv = self.div(one, done);
        self.f.b.ins().select(neg, inv, done)
    }
}
