//! The AVX2 kernels of `limits` (with FMA), one chunk each, for CPUs without AVX-512: the
//! same algorithms as `avx512.rs` in 256-bit vectors. AVX2 has no masked loads of floats
//! that skip faults cheaply and no mask registers, so tails are scalar and lane masks are
//! vectors of all-ones lanes; it has 16 vector registers where AVX-512 has 32, so the
//! compute kernels keep fewer groups in flight where more spill.
//!
//! Every kernel is reached through [`Avx2`], which exists only where AVX2 and FMA were
//! detected: that is what makes calling the `#[target_feature]` functions sound.

use super::avx2_math::{cnd, exp, ln};
use super::kernels::escape_time;
use accel_examples::classic::black_scholes_option;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// `f32` lanes in a vector.
const LANES: usize = 8;
/// Accumulators of the streaming reductions: enough to cover the add's latency times the
/// loads per cycle.
const ACCS: usize = 8;

/// The proof that this CPU has AVX2 and FMA: only [`Avx2::detect`] makes one.
#[derive(Clone, Copy)]
pub struct Avx2(());

impl Avx2 {
    /// The token, where the CPU has AVX2 and FMA.
    pub fn detect() -> Option<Avx2> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Avx2(()))
    }
}

super::kernels::chunks_of_this_module!(Avx2, BODY_GROUPS * LANES);

/// Writes a vector at `p` (32-byte aligned), without reading its line first if `STREAM`.
///
/// # Safety
/// `p` is valid for 8 floats and 32-byte aligned.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn store<const STREAM: bool>(p: *mut f32, v: __m256) {
    // SAFETY: the caller's promise.
    unsafe {
        if STREAM {
            _mm256_stream_ps(p, v)
        } else {
            _mm256_store_ps(p, v)
        }
    }
}

/// The sum of one chunk.
#[target_feature(enable = "avx2,fma")]
fn sum_chunk(xs: &[f32]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); ACCS];
    let blocks = xs.chunks_exact(ACCS * LANES);
    let rest = blocks.remainder();
    for b in blocks {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: `b` holds ACCS * 8 floats, so the 8 from k * 8 are in it.
            *a = _mm256_add_ps(*a, unsafe { _mm256_loadu_ps(b.as_ptr().add(k * LANES)) });
        }
    }
    horizontal_sum(fold(acc)) + rest.iter().sum::<f32>()
}

/// The dot product of one chunk of each.
#[target_feature(enable = "avx2,fma")]
fn dot_chunk(xs: &[f32], ys: &[f32]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); ACCS];
    let xb = xs.chunks_exact(ACCS * LANES);
    let yb = ys.chunks_exact(ACCS * LANES);
    let (xr, yr) = (xb.remainder(), yb.remainder());
    for (x, y) in xb.zip(yb) {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: `x` and `y` hold ACCS * 8 floats each.
            let (u, v) = unsafe {
                (
                    _mm256_loadu_ps(x.as_ptr().add(k * LANES)),
                    _mm256_loadu_ps(y.as_ptr().add(k * LANES)),
                )
            };
            *a = _mm256_fmadd_ps(u, v, *a);
        }
    }
    let tail: f32 = xr.iter().zip(yr).map(|(x, y)| x * y).sum();
    horizontal_sum(fold(acc)) + tail
}

/// The accumulators added pairwise into one.
#[target_feature(enable = "avx2,fma")]
fn fold(acc: [__m256; ACCS]) -> __m256 {
    let a = [
        _mm256_add_ps(acc[0], acc[4]),
        _mm256_add_ps(acc[1], acc[5]),
        _mm256_add_ps(acc[2], acc[6]),
        _mm256_add_ps(acc[3], acc[7]),
    ];
    _mm256_add_ps(_mm256_add_ps(a[0], a[2]), _mm256_add_ps(a[1], a[3]))
}

/// The sum of a vector's lanes.
#[target_feature(enable = "avx2,fma")]
fn horizontal_sum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<1>(s, s)))
}

/// SAXPY over one chunk; `out` starts on a cache line.
#[target_feature(enable = "avx2,fma")]
fn saxpy_chunk<const STREAM: bool>(a: f32, xs: &[f32], ys: &[f32], out: &mut [MaybeUninit<f32>]) {
    const UNROLL: usize = 4;
    let va = _mm256_set1_ps(a);
    let n = out.len();
    let o = out.as_mut_ptr().cast::<f32>();
    let mut i = 0;
    while i + UNROLL * LANES <= n {
        for k in 0..UNROLL {
            let at = i + k * LANES;
            // SAFETY: `at + 8 <= n`, the length of all three slices; `o + at` is 32-byte
            // aligned (`out` starts on a cache line and `at` is a multiple of 8), as
            // `store` requires.
            unsafe {
                let x = _mm256_loadu_ps(xs.as_ptr().add(at));
                let y = _mm256_loadu_ps(ys.as_ptr().add(at));
                // Multiply then add, as the reference does (no fused rounding).
                store::<STREAM>(o.add(at), _mm256_add_ps(_mm256_mul_ps(va, x), y));
            }
        }
        i += UNROLL * LANES;
    }
    for k in i..n {
        out[k].write(a * xs[k] + ys[k]);
    }
    // Non-temporal stores are weakly ordered: make them visible before rayon's join
    // publishes the chunk as done.
    if STREAM {
        _mm_sfence();
    }
}

/// Black-Scholes over one chunk of options; `out` starts on a cache line.
#[target_feature(enable = "avx2,fma")]
fn black_scholes_chunk<const STREAM: bool>(
    price: &[f32],
    strike: &[f32],
    years: &[f32],
    out: &mut [MaybeUninit<(f32, f32)>],
) {
    let n = out.len();
    let o = out.as_mut_ptr().cast::<f32>();
    // One group per iteration: two, as `avx512.rs` keeps, spill here (16 registers) and
    // ran no faster.
    const UNROLL: usize = 1;
    let mut i = 0;
    while i + UNROLL * LANES <= n {
        let mut prices = [(_mm256_setzero_ps(), _mm256_setzero_ps()); UNROLL];
        for (u, p) in prices.iter_mut().enumerate() {
            let at = i + u * LANES;
            // SAFETY: `at + 8 <= n`, the length of the inputs.
            let (s, x, t) = unsafe {
                (
                    _mm256_loadu_ps(price.as_ptr().add(at)),
                    _mm256_loadu_ps(strike.as_ptr().add(at)),
                    _mm256_loadu_ps(years.as_ptr().add(at)),
                )
            };
            *p = black_scholes8(s, x, t);
        }
        for (u, &(call, put)) in prices.iter().enumerate() {
            // Lane k's call and put side by side: within each 128-bit half, then the
            // halves in order.
            let (low, high) = (_mm256_unpacklo_ps(call, put), _mm256_unpackhi_ps(call, put));
            let at = 2 * (i + u * LANES);
            // SAFETY: the 16 floats from `at` are in `out` (`at / 2 + 8 <= n`) and 32-byte
            // aligned (`out` starts on a cache line and `at` is a multiple of 16), as
            // `store` requires.
            unsafe {
                store::<STREAM>(o.add(at), _mm256_permute2f128_ps::<0x20>(low, high));
                store::<STREAM>(o.add(at + LANES), _mm256_permute2f128_ps::<0x31>(low, high));
            }
        }
        i += UNROLL * LANES;
    }
    for k in i..n {
        out[k].write(black_scholes_option(price[k], strike[k], years[k]));
    }
    // As in `saxpy_chunk`.
    if STREAM {
        _mm_sfence();
    }
}

/// The call and put prices of 8 options (`black_scholes_option`'s formula, with the
/// normal distribution computed once per `d` instead of twice).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn black_scholes8(s: __m256, x: __m256, t: __m256) -> (__m256, __m256) {
    let (rate, volatility) = (0.02f32, 0.30f32);
    let sqrt_t = _mm256_sqrt_ps(t);
    let vs = _mm256_mul_ps(_mm256_set1_ps(volatility), sqrt_t);
    let drift = _mm256_set1_ps(rate + 0.5 * volatility * volatility);
    let d1 = _mm256_div_ps(_mm256_fmadd_ps(drift, t, ln(_mm256_div_ps(s, x))), vs);
    let d2 = _mm256_sub_ps(d1, vs);
    let discounted = _mm256_mul_ps(x, exp(_mm256_mul_ps(_mm256_set1_ps(-rate), t)));
    let (c1, c2) = (cnd(d1), cnd(d2));
    let call = _mm256_fmsub_ps(s, c1, _mm256_mul_ps(discounted, c2));
    let one = _mm256_set1_ps(1.0);
    let (n1, n2) = (_mm256_sub_ps(one, c1), _mm256_sub_ps(one, c2));
    let put = _mm256_fmsub_ps(discounted, n2, _mm256_mul_ps(s, n1));
    (call, put)
}

/// Groups of 4 pixels (one vector of `f64`) each Mandelbrot task keeps in flight: as in
/// `avx512.rs`, enough independent chains to keep the vector units busy; each group holds
/// five vectors (x, y, its columns, its count and its live lanes) in 16 registers.
const PIXEL_GROUPS: usize = 3;

/// The escape times of one row of pixels.
#[target_feature(enable = "avx2,fma")]
fn mandelbrot_row(cx: &[f64], cy: f64, out: &mut [MaybeUninit<u32>]) {
    const WIDTH: usize = PIXEL_GROUPS * 4;
    let w = out.len();
    let vcy = _mm256_set1_pd(cy);
    let four = _mm256_set1_pd(4.0);
    let two = _mm256_set1_pd(2.0);
    // Each 64-bit count's low word, in the first four lanes.
    let low_words = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    let mut c = 0;
    while c + WIDTH <= w {
        let mut vcx = [_mm256_setzero_pd(); PIXEL_GROUPS];
        for (g, v) in vcx.iter_mut().enumerate() {
            // SAFETY: `c + WIDTH <= w`, the length of `cx`.
            *v = unsafe { _mm256_loadu_pd(cx.as_ptr().add(c + 4 * g)) };
        }
        let mut x = [_mm256_setzero_pd(); PIXEL_GROUPS];
        let mut y = [_mm256_setzero_pd(); PIXEL_GROUPS];
        let mut count = [_mm256_setzero_si256(); PIXEL_GROUPS];
        // All-ones lanes are live.
        let mut live = [_mm256_castsi256_pd(_mm256_set1_epi64x(-1)); PIXEL_GROUPS];
        for _ in 0..256 {
            let mut any = _mm256_setzero_pd();
            for g in 0..PIXEL_GROUPS {
                // `escape_time`'s operations in its order, without fused multiply-adds:
                // the test is on the old x and y.
                let xx = _mm256_mul_pd(x[g], x[g]);
                let yy = _mm256_mul_pd(y[g], y[g]);
                let inside = _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_add_pd(xx, yy), four);
                live[g] = _mm256_and_pd(live[g], inside);
                // A live lane is -1: subtracting it counts the step.
                count[g] = _mm256_sub_epi64(count[g], _mm256_castpd_si256(live[g]));
                let t = _mm256_add_pd(_mm256_sub_pd(xx, yy), vcx[g]);
                y[g] = _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(x[g], two), y[g]), vcy);
                x[g] = t;
                any = _mm256_or_pd(any, live[g]);
            }
            // Escaped lanes keep iterating (their values may overflow) but no longer count.
            if _mm256_movemask_pd(any) == 0 {
                break;
            }
        }
        for (g, n) in count.iter().enumerate() {
            let words = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(*n, low_words));
            // SAFETY: the 4 counts from `c + 4 * g` are in `out` (`c + WIDTH <= w`).
            unsafe { _mm_storeu_si128(out.as_mut_ptr().add(c + 4 * g).cast(), words) };
        }
        c += WIDTH;
    }
    for k in c..w {
        out[k].write(escape_time(cx[k], cy));
    }
}

/// Groups of 8 bodies each N-body task keeps in flight, sharing each other body's loads
/// (four groups' positions and accelerations fill the 16 registers; the positions are
/// read from memory as operands).
const BODY_GROUPS: usize = 4;

/// The x accelerations of bodies `i0..i0 + 32`, into `out`: approximated as a
/// performance engineer writes it, or with `EXACT` as the reference computes it.
#[target_feature(enable = "avx2,fma")]
fn n_body_block<const EXACT: bool>(
    i0: usize,
    px: &[f32],
    py: &[f32],
    pz: &[f32],
    pm: &[f32],
    out: &mut [f32],
) {
    let n = px.len();
    let (py, pz, pm) = (&py[..n], &pz[..n], &pm[..n]);
    let mut xi = [_mm256_setzero_ps(); BODY_GROUPS];
    let mut yi = xi;
    let mut zi = xi;
    for g in 0..BODY_GROUPS {
        let at = i0 + g * LANES;
        (xi[g], yi[g], zi[g]) = (load8(px, at), load8(py, at), load8(pz, at));
    }
    let mut ax = [_mm256_setzero_ps(); BODY_GROUPS];
    for j in 0..n {
        let (xj, yj, zj) = (
            _mm256_set1_ps(px[j]),
            _mm256_set1_ps(py[j]),
            _mm256_set1_ps(pz[j]),
        );
        let mj = match EXACT {
            true => _mm256_set1_ps(pm[j]),
            // The Newton step's halving, cubed, folded into the mass (once per body j).
            false => _mm256_set1_ps(pm[j] * 0.125),
        };
        for g in 0..BODY_GROUPS {
            let d = (
                _mm256_sub_ps(xj, xi[g]),
                _mm256_sub_ps(yj, yi[g]),
                _mm256_sub_ps(zj, zi[g]),
            );
            ax[g] = match EXACT {
                true => exact_pull(d, mj, ax[g]),
                false => approximate_pull(d, mj, ax[g]),
            };
        }
    }
    for (g, a) in ax.iter().enumerate() {
        let o = &mut out[g * LANES..(g + 1) * LANES];
        // SAFETY: `o` holds 8 floats.
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), *a) };
    }
}

/// `ax` plus one body's pull at distance `(dx, dy, dz)`, `m8` its mass over 8: with
/// `r = 1 / sqrt(d2)` from the 12-bit estimate `r0` and one Newton step, `2r = r0 (3 - d2
/// r0^2)` (about 2^-22 relative), cheaper than a square root and a division; multiply-adds
/// fused.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn approximate_pull((dx, dy, dz): (__m256, __m256, __m256), m8: __m256, ax: __m256) -> __m256 {
    let d2 = _mm256_fmadd_ps(
        dz,
        dz,
        _mm256_fmadd_ps(dy, dy, _mm256_fmadd_ps(dx, dx, _mm256_set1_ps(0.01))),
    );
    let r0 = _mm256_rsqrt_ps(d2);
    let three = _mm256_set1_ps(3.0);
    let r2 = _mm256_mul_ps(r0, _mm256_fnmadd_ps(d2, _mm256_mul_ps(r0, r0), three));
    let inv8 = _mm256_mul_ps(_mm256_mul_ps(r2, r2), r2);
    _mm256_fmadd_ps(_mm256_mul_ps(m8, dx), inv8, ax)
}

/// `ax` plus one body's pull as the reference computes it: `d2 = dx dx + dy dy + dz dz +
/// 0.01`, `1 / (d2 sqrt(d2))`, `ax + m dx inv`, each operation rounded in that order.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exact_pull((dx, dy, dz): (__m256, __m256, __m256), m: __m256, ax: __m256) -> __m256 {
    let d2 = _mm256_add_ps(
        _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)),
            _mm256_mul_ps(dz, dz),
        ),
        _mm256_set1_ps(0.01),
    );
    let inv = _mm256_div_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(d2, _mm256_sqrt_ps(d2)));
    _mm256_add_ps(ax, _mm256_mul_ps(_mm256_mul_ps(m, dx), inv))
}

/// The 8 floats of `v` from `at`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn load8(v: &[f32], at: usize) -> __m256 {
    let v = &v[at..at + LANES];
    // SAFETY: `v` holds 8 floats.
    unsafe { _mm256_loadu_ps(v.as_ptr()) }
}
