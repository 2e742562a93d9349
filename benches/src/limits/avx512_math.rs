//! Vector `exp`, `ln` and the normal distribution for the Black-Scholes limit: Cephes'
//! single-precision polynomials (`cephes.rs`, their coefficients as the nearest `f32`s; 1 ulp from
//! std's over the arguments Black-Scholes gives them, where the test below allows 2), with
//! AVX-512's exponent instructions (`getexp`, `getmant`, `scalef`) doing the range
//! reduction that scalar code does with bit tricks.

use super::cephes::{CND_K, CND_POLY, EXP_POLY, EXP_RANGE, INV_SQRT_2PI, LN2_HI, LN2_LO, LN_POLY};
use std::arch::x86_64::*;

/// `e^x` of each lane (0 below -104, where `f32` underflows anyway).
#[target_feature(enable = "avx512f")]
#[inline]
pub fn exp(x: __m512) -> __m512 {
    let x = _mm512_min_ps(
        _mm512_max_ps(x, _mm512_set1_ps(EXP_RANGE.0)),
        _mm512_set1_ps(EXP_RANGE.1),
    );
    // x = n ln 2 + r, |r| <= ln 2 / 2, with ln 2 split in two so that n * LN2_HI is exact.
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    let mut p = _mm512_set1_ps(EXP_POLY[0]);
    for &c in &EXP_POLY[1..] {
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
    }
    let e = _mm512_fmadd_ps(
        p,
        _mm512_mul_ps(r, r),
        _mm512_add_ps(r, _mm512_set1_ps(1.0)),
    );
    // e * 2^n, without building the exponent's bits (and 0 where n is far below -126).
    _mm512_scalef_ps(e, n)
}

/// The natural logarithm of each lane (positive, normal numbers).
#[target_feature(enable = "avx512f")]
#[inline]
pub fn ln(x: __m512) -> __m512 {
    // x = m 2^e with m in [sqrt(1/2), sqrt(2)).
    let e = _mm512_getexp_ps(x);
    let m = _mm512_getmant_ps::<_MM_MANT_NORM_1_2, _MM_MANT_SIGN_SRC>(x);
    let big = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(m, _mm512_set1_ps(std::f32::consts::SQRT_2));
    let m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5));
    let e = _mm512_mask_add_ps(e, big, e, _mm512_set1_ps(1.0));
    let f = _mm512_sub_ps(m, _mm512_set1_ps(1.0));
    let z = _mm512_mul_ps(f, f);
    let mut p = _mm512_set1_ps(LN_POLY[0]);
    for &c in &LN_POLY[1..] {
        p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c));
    }
    // ln(1 + f) = f - f^2 / 2 + f^3 p(f); e ln 2 in two parts as in `exp`.
    let y = _mm512_mul_ps(_mm512_mul_ps(p, f), z);
    let y = _mm512_fmadd_ps(e, _mm512_set1_ps(LN2_LO), y);
    let y = _mm512_fnmadd_ps(_mm512_set1_ps(0.5), z, y);
    _mm512_fmadd_ps(e, _mm512_set1_ps(LN2_HI), _mm512_add_ps(f, y))
}

/// The cumulative normal distribution of each lane: `accel_examples::classic::cnd`'s
/// polynomial (Abramowitz and Stegun 26.2.17).
#[target_feature(enable = "avx512f")]
#[inline]
pub fn cnd(d: __m512) -> __m512 {
    let one = _mm512_set1_ps(1.0);
    let k = _mm512_div_ps(
        one,
        _mm512_fmadd_ps(_mm512_set1_ps(CND_K), _mm512_abs_ps(d), one),
    );
    let mut p = _mm512_set1_ps(CND_POLY[0]);
    for &c in &CND_POLY[1..] {
        p = _mm512_fmadd_ps(p, k, _mm512_set1_ps(c));
    }
    let poly = _mm512_mul_ps(k, p);
    let density = exp(_mm512_mul_ps(_mm512_set1_ps(-0.5), _mm512_mul_ps(d, d)));
    let w = _mm512_fnmadd_ps(
        _mm512_mul_ps(_mm512_set1_ps(INV_SQRT_2PI), density),
        poly,
        one,
    );
    let negative = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(d, _mm512_setzero_ps());
    _mm512_mask_sub_ps(w, negative, one, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest distance in ulps between `f` and `reference` over `xs`.
    fn max_ulps(xs: &[f32], f: unsafe fn(__m512) -> __m512, reference: fn(f32) -> f32) -> u32 {
        let mut worst = 0;
        for c in xs.chunks_exact(16) {
            let mut got = [0.0f32; 16];
            // SAFETY: the caller checked for AVX-512F; `c` and `got` hold 16 floats.
            unsafe { _mm512_storeu_ps(got.as_mut_ptr(), f(_mm512_loadu_ps(c.as_ptr()))) };
            for (&x, &g) in c.iter().zip(&got) {
                worst = worst.max(g.to_bits().abs_diff(reference(x).to_bits()));
            }
        }
        worst
    }

    #[test]
    fn exp_and_ln_are_within_two_ulps_of_std() {
        if !is_x86_feature_detected!("avx512f") {
            eprintln!("no AVX-512F: SKIPPED");
            return;
        }
        let grid = |lo: f32, hi: f32| -> Vec<f32> {
            (0..1 << 16)
                .map(|i| lo + (hi - lo) * i as f32 / 65536.0)
                .collect()
        };
        // The arguments Black-Scholes gives them: -d^2/2, -r t; s / x.
        let e = max_ulps(&grid(-87.0, 0.0), exp, f32::exp);
        let l = max_ulps(&grid(0.05, 30.0), ln, f32::ln);
        assert!(e <= 2 && l <= 2, "exp {e} ulps, ln {l} ulps");
    }
}
