//! `avx512_math`'s `exp`, `ln` and normal distribution in AVX2 with FMA: the same
//! polynomials, with the range reductions AVX-512 has instructions for (`scalef`,
//! `getexp`, `getmant`) done on the floats' bits.

use super::cephes::{CND_K, CND_POLY, EXP_POLY, EXP_RANGE, INV_SQRT_2PI, LN2_HI, LN2_LO, LN_POLY};
use std::arch::x86_64::*;

/// `2^k` of each lane, `k` a whole number in [-126, 127].
#[target_feature(enable = "avx2,fma")]
#[inline]
fn pow2(k: __m256) -> __m256 {
    let biased = _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127));
    _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased))
}

/// `e^x` of each lane (0 below -104, where `f32` underflows anyway).
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn exp(x: __m256) -> __m256 {
    let x = _mm256_min_ps(
        _mm256_max_ps(x, _mm256_set1_ps(EXP_RANGE.0)),
        _mm256_set1_ps(EXP_RANGE.1),
    );
    // x = n ln 2 + r, |r| <= ln 2 / 2, with ln 2 split in two so that n * C1 is exact.
    let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        x,
        _mm256_set1_ps(std::f32::consts::LOG2_E),
    ));
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    let mut p = _mm256_set1_ps(EXP_POLY[0]);
    for &c in &EXP_POLY[1..] {
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
    }
    let e = _mm256_fmadd_ps(
        p,
        _mm256_mul_ps(r, r),
        _mm256_add_ps(r, _mm256_set1_ps(1.0)),
    );
    // e * 2^n for n in [-150, 128]: in two factors, each a normal float, so that only the
    // last product rounds (as `scalef` does).
    let half = _mm256_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        n,
        _mm256_set1_ps(0.5),
    ));
    let rest = _mm256_sub_ps(n, half);
    _mm256_mul_ps(_mm256_mul_ps(e, pow2(half)), pow2(rest))
}

/// The natural logarithm of each lane (positive, normal numbers).
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn ln(x: __m256) -> __m256 {
    // x = m 2^e with m in [sqrt(1/2), sqrt(2)), from the float's exponent and mantissa bits.
    let bits = _mm256_castps_si256(x);
    let e = _mm256_cvtepi32_ps(_mm256_sub_epi32(
        _mm256_srli_epi32::<23>(bits),
        _mm256_set1_epi32(127),
    ));
    let m = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x007f_ffff)),
        _mm256_set1_epi32(0x3f80_0000),
    ));
    let one = _mm256_set1_ps(1.0);
    let big = _mm256_cmp_ps::<_CMP_GT_OQ>(m, _mm256_set1_ps(std::f32::consts::SQRT_2));
    let m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5)), big);
    let e = _mm256_add_ps(e, _mm256_and_ps(big, one));
    let f = _mm256_sub_ps(m, one);
    let z = _mm256_mul_ps(f, f);
    let mut p = _mm256_set1_ps(LN_POLY[0]);
    for &c in &LN_POLY[1..] {
        p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c));
    }
    // ln(1 + f) = f - f^2 / 2 + f^3 p(f); e ln 2 in two parts as in `exp`.
    let y = _mm256_mul_ps(_mm256_mul_ps(p, f), z);
    let y = _mm256_fmadd_ps(e, _mm256_set1_ps(LN2_LO), y);
    let y = _mm256_fnmadd_ps(_mm256_set1_ps(0.5), z, y);
    _mm256_fmadd_ps(e, _mm256_set1_ps(LN2_HI), _mm256_add_ps(f, y))
}

/// The cumulative normal distribution of each lane: `accel_examples::classic::cnd`'s
/// polynomial (Abramowitz and Stegun 26.2.17).
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn cnd(d: __m256) -> __m256 {
    let one = _mm256_set1_ps(1.0);
    let abs = _mm256_andnot_ps(_mm256_set1_ps(-0.0), d);
    let k = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(CND_K), abs, one));
    let mut p = _mm256_set1_ps(CND_POLY[0]);
    for &c in &CND_POLY[1..] {
        p = _mm256_fmadd_ps(p, k, _mm256_set1_ps(c));
    }
    let poly = _mm256_mul_ps(k, p);
    let density = exp(_mm256_mul_ps(_mm256_set1_ps(-0.5), _mm256_mul_ps(d, d)));
    let w = _mm256_fnmadd_ps(
        _mm256_mul_ps(_mm256_set1_ps(INV_SQRT_2PI), density),
        poly,
        one,
    );
    let negative = _mm256_cmp_ps::<_CMP_LT_OQ>(d, _mm256_setzero_ps());
    _mm256_blendv_ps(w, _mm256_sub_ps(one, w), negative)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest distance in ulps between `f` and `reference` over `xs`.
    fn max_ulps(xs: &[f32], f: unsafe fn(__m256) -> __m256, reference: fn(f32) -> f32) -> u32 {
        let mut worst = 0;
        for c in xs.chunks_exact(8) {
            let mut got = [0.0f32; 8];
            // SAFETY: the caller checked for AVX2 and FMA; `c` and `got` hold 8 floats.
            unsafe { _mm256_storeu_ps(got.as_mut_ptr(), f(_mm256_loadu_ps(c.as_ptr()))) };
            for (&x, &g) in c.iter().zip(&got) {
                worst = worst.max(g.to_bits().abs_diff(reference(x).to_bits()));
            }
        }
        worst
    }

    #[test]
    fn exp_and_ln_are_within_two_ulps_of_std() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            eprintln!("no AVX2 with FMA: SKIPPED");
            return;
        }
        let grid = |lo: f32, hi: f32| -> Vec<f32> {
            (0..1 << 16)
                .map(|i| lo + (hi - lo) * i as f32 / 65536.0)
                .collect()
        };
        // The arguments Black-Scholes gives them: -d^2/2, -r t; s / x. And the ends of
        // `exp`'s range, where its result is built from two powers of two.
        let e = max_ulps(&grid(-87.0, 0.0), exp, f32::exp);
        let l = max_ulps(&grid(0.05, 30.0), ln, f32::ln);
        let ends = max_ulps(&grid(80.0, 88.7), exp, f32::exp);
        assert!(
            e <= 2 && l <= 2 && ends <= 2,
            "exp {e} ulps, ln {l} ulps, exp near the top {ends} ulps"
        );
        // Below -87.3 the result is subnormal: exact powers of two keep it within a
        // subnormal's ulp of std's.
        let low = max_ulps(&grid(-103.0, -88.0), exp, f32::exp);
        assert!(low <= 2, "exp of subnormal results: {low} ulps");
    }
}
