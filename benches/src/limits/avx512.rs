//! The AVX-512 kernels of `limits`, one chunk each (the drivers in `kernels.rs` split the
//! work over the cores). The streaming reductions keep eight independent accumulators and
//! read 256 bits at a time: on this Zen 4 (whose vector units split 512-bit operations in
//! two halves) the same loop with 512-bit loads streamed 4-50% slower from 64 and 256 MiB
//! buffers in every trial, for no reason we found (512-bit loads issued more slowly kept
//! up). Outputs larger than the cache are written with aligned non-temporal stores, which
//! skip the read for ownership. The compute kernels keep several independent vector
//! groups in flight per core so that one group's dependency chain runs while the others
//! wait.
//!
//! Every kernel is reached through [`Avx512`], which exists only where AVX-512F was
//! detected: that is what makes calling the `#[target_feature]` functions sound.

use super::avx512_math::{cnd, exp, ln};
use super::kernels::escape_time;
use accel_examples::classic::black_scholes_option;
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// `f32` lanes in a vector.
const LANES: usize = 16;
/// `f32` lanes of the streaming reductions' loads (256 bits, see above).
const HALF_LANES: usize = 8;
/// Accumulators of the streaming reductions: enough to cover the add's latency times the
/// loads per cycle.
const ACCS: usize = 8;

/// The proof that this CPU has AVX-512F: only [`Avx512::detect`] makes one.
#[derive(Clone, Copy)]
pub struct Avx512(());

impl Avx512 {
    /// The token, where the CPU has AVX-512F.
    pub fn detect() -> Option<Avx512> {
        is_x86_feature_detected!("avx512f").then_some(Avx512(()))
    }
}

super::kernels::chunks_of_this_module!(Avx512, BODY_GROUPS * LANES);

/// Writes a vector at `p` (64-byte aligned), without reading its line first if `STREAM`.
///
/// # Safety
/// `p` is valid for 16 floats and 64-byte aligned.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn store<const STREAM: bool>(p: *mut f32, v: __m512) {
    // SAFETY: the caller's promise.
    unsafe {
        if STREAM {
            _mm512_stream_ps(p, v)
        } else {
            _mm512_store_ps(p, v)
        }
    }
}

/// The mask of a vector's first `k` lanes (all of them from 16 on).
fn lanes_below(k: usize) -> __mmask16 {
    ((1u32 << k.min(LANES)) - 1) as __mmask16
}

/// The sum of one chunk.
#[target_feature(enable = "avx512f")]
fn sum_chunk(xs: &[f32]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); ACCS];
    let blocks = xs.chunks_exact(ACCS * HALF_LANES);
    let rest = blocks.remainder();
    for b in blocks {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: `b` holds ACCS * 8 floats, so the 8 from k * 8 are in it.
            *a = _mm256_add_ps(*a, unsafe {
                _mm256_loadu_ps(b.as_ptr().add(k * HALF_LANES))
            });
        }
    }
    let mut tail = _mm512_setzero_ps();
    for v in rest.chunks(LANES) {
        // SAFETY: the mask keeps the load to the `v.len()` floats of `v` (masked-off
        // lanes are not read and do not fault).
        let x = unsafe { _mm512_maskz_loadu_ps(lanes_below(v.len()), v.as_ptr()) };
        tail = _mm512_add_ps(tail, x);
    }
    _mm512_reduce_add_ps(_mm512_add_ps(widen(fold(acc)), tail))
}

/// The dot product of one chunk of each.
#[target_feature(enable = "avx512f")]
fn dot_chunk(xs: &[f32], ys: &[f32]) -> f32 {
    let mut acc = [_mm256_setzero_ps(); ACCS];
    let xb = xs.chunks_exact(ACCS * HALF_LANES);
    let yb = ys.chunks_exact(ACCS * HALF_LANES);
    let (xr, yr) = (xb.remainder(), yb.remainder());
    for (x, y) in xb.zip(yb) {
        for (k, a) in acc.iter_mut().enumerate() {
            // SAFETY: `x` and `y` hold ACCS * 8 floats each.
            let (u, v) = unsafe {
                (
                    _mm256_loadu_ps(x.as_ptr().add(k * HALF_LANES)),
                    _mm256_loadu_ps(y.as_ptr().add(k * HALF_LANES)),
                )
            };
            *a = _mm256_fmadd_ps(u, v, *a);
        }
    }
    let mut tail = _mm512_setzero_ps();
    for (x, y) in xr.chunks(LANES).zip(yr.chunks(LANES)) {
        let m = lanes_below(x.len());
        // SAFETY: the mask keeps both loads to the `x.len()` floats of `x` and `y`.
        let (u, v) = unsafe {
            (
                _mm512_maskz_loadu_ps(m, x.as_ptr()),
                _mm512_maskz_loadu_ps(m, y.as_ptr()),
            )
        };
        tail = _mm512_fmadd_ps(u, v, tail);
    }
    _mm512_reduce_add_ps(_mm512_add_ps(widen(fold(acc)), tail))
}

/// The accumulators added pairwise into one.
#[target_feature(enable = "avx512f")]
fn fold(acc: [__m256; ACCS]) -> __m256 {
    let a = [
        _mm256_add_ps(acc[0], acc[4]),
        _mm256_add_ps(acc[1], acc[5]),
        _mm256_add_ps(acc[2], acc[6]),
        _mm256_add_ps(acc[3], acc[7]),
    ];
    _mm256_add_ps(_mm256_add_ps(a[0], a[2]), _mm256_add_ps(a[1], a[3]))
}

/// `v` in the low half of a vector whose high half is 0.
#[target_feature(enable = "avx512f")]
fn widen(v: __m256) -> __m512 {
    _mm512_castsi512_ps(_mm512_zextsi256_si512(_mm256_castps_si256(v)))
}

/// SAXPY over one chunk; `out` starts on a cache line.
#[target_feature(enable = "avx512f")]
fn saxpy_chunk<const STREAM: bool>(a: f32, xs: &[f32], ys: &[f32], out: &mut [MaybeUninit<f32>]) {
    const UNROLL: usize = 4;
    let va = _mm512_set1_ps(a);
    let n = out.len();
    let o = out.as_mut_ptr().cast::<f32>();
    let mut i = 0;
    while i + UNROLL * LANES <= n {
        for k in 0..UNROLL {
            let at = i + k * LANES;
            // SAFETY: `at + 16 <= n`, the length of all three slices; `o + at` is 64-byte
            // aligned (`out` starts on a cache line and `at` is a multiple of 16), as
            // `store` requires.
            unsafe {
                let x = _mm512_loadu_ps(xs.as_ptr().add(at));
                let y = _mm512_loadu_ps(ys.as_ptr().add(at));
                // Multiply then add, as the reference does (no fused rounding).
                store::<STREAM>(o.add(at), _mm512_add_ps(_mm512_mul_ps(va, x), y));
            }
        }
        i += UNROLL * LANES;
    }
    while i < n {
        let m = lanes_below(n - i);
        // SAFETY: the mask keeps the loads and the store to the `n - i` elements left.
        unsafe {
            let x = _mm512_maskz_loadu_ps(m, xs.as_ptr().add(i));
            let y = _mm512_maskz_loadu_ps(m, ys.as_ptr().add(i));
            _mm512_mask_storeu_ps(o.add(i), m, _mm512_add_ps(_mm512_mul_ps(va, x), y));
        }
        i += LANES;
    }
    // Non-temporal stores are weakly ordered: make them visible before rayon's join
    // publishes the chunk as done.
    if STREAM {
        _mm_sfence();
    }
}

/// Black-Scholes over one chunk of options; `out` starts on a cache line.
#[target_feature(enable = "avx512f")]
fn black_scholes_chunk<const STREAM: bool>(
    price: &[f32],
    strike: &[f32],
    years: &[f32],
    out: &mut [MaybeUninit<(f32, f32)>],
) {
    let n = out.len();
    let o = out.as_mut_ptr().cast::<f32>();
    // Lane k's call and put side by side: calls are the first table, puts the second
    // (indices 16 + k).
    let lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    let hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    // Two independent groups per iteration: one group's chain of divisions, square root
    // and polynomials is longer than the out-of-order window covers alone.
    const UNROLL: usize = 2;
    let mut i = 0;
    while i + UNROLL * LANES <= n {
        let mut prices = [(_mm512_setzero_ps(), _mm512_setzero_ps()); UNROLL];
        for (u, p) in prices.iter_mut().enumerate() {
            let at = i + u * LANES;
            // SAFETY: `at + 16 <= n`, the length of the inputs.
            let (s, x, t) = unsafe {
                (
                    _mm512_loadu_ps(price.as_ptr().add(at)),
                    _mm512_loadu_ps(strike.as_ptr().add(at)),
                    _mm512_loadu_ps(years.as_ptr().add(at)),
                )
            };
            *p = black_scholes16(s, x, t);
        }
        for (u, &(call, put)) in prices.iter().enumerate() {
            let at = 2 * (i + u * LANES);
            // SAFETY: the 32 floats from `at` are in `out` (`at / 2 + 16 <= n`) and 64-byte
            // aligned (`out` starts on a cache line and `at` is a multiple of 32), as
            // `store` requires.
            unsafe {
                store::<STREAM>(o.add(at), _mm512_permutex2var_ps(call, lo, put));
                store::<STREAM>(o.add(at + LANES), _mm512_permutex2var_ps(call, hi, put));
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

/// The call and put prices of 16 options (`black_scholes_option`'s formula, with the
/// normal distribution computed once per `d` instead of twice).
#[target_feature(enable = "avx512f")]
#[inline]
fn black_scholes16(s: __m512, x: __m512, t: __m512) -> (__m512, __m512) {
    let (rate, volatility) = (0.02f32, 0.30f32);
    let sqrt_t = _mm512_sqrt_ps(t);
    let vs = _mm512_mul_ps(_mm512_set1_ps(volatility), sqrt_t);
    let drift = _mm512_set1_ps(rate + 0.5 * volatility * volatility);
    let d1 = _mm512_div_ps(_mm512_fmadd_ps(drift, t, ln(_mm512_div_ps(s, x))), vs);
    let d2 = _mm512_sub_ps(d1, vs);
    let discounted = _mm512_mul_ps(x, exp(_mm512_mul_ps(_mm512_set1_ps(-rate), t)));
    let (c1, c2) = (cnd(d1), cnd(d2));
    let call = _mm512_fmsub_ps(s, c1, _mm512_mul_ps(discounted, c2));
    let one = _mm512_set1_ps(1.0);
    let (n1, n2) = (_mm512_sub_ps(one, c1), _mm512_sub_ps(one, c2));
    let put = _mm512_fmsub_ps(discounted, n2, _mm512_mul_ps(s, n1));
    (call, put)
}

/// Groups of 8 pixels (one vector of `f64`) each Mandelbrot task keeps in flight: an
/// iteration's chain (multiply, subtract, add) is about 10 cycles, a group's operations
/// about 5 cycles of the vector units, so 4 groups keep them busy.
const PIXEL_GROUPS: usize = 4;

/// The escape times of one row of pixels.
#[target_feature(enable = "avx512f")]
fn mandelbrot_row(cx: &[f64], cy: f64, out: &mut [MaybeUninit<u32>]) {
    const WIDTH: usize = PIXEL_GROUPS * 8;
    let w = out.len();
    let vcy = _mm512_set1_pd(cy);
    let four = _mm512_set1_pd(4.0);
    let two = _mm512_set1_pd(2.0);
    let one = _mm512_set1_epi64(1);
    let mut c = 0;
    while c + WIDTH <= w {
        let mut vcx = [_mm512_setzero_pd(); PIXEL_GROUPS];
        for (g, v) in vcx.iter_mut().enumerate() {
            // SAFETY: `c + WIDTH <= w`, the length of `cx`.
            *v = unsafe { _mm512_loadu_pd(cx.as_ptr().add(c + 8 * g)) };
        }
        let mut x = [_mm512_setzero_pd(); PIXEL_GROUPS];
        let mut y = [_mm512_setzero_pd(); PIXEL_GROUPS];
        let mut count = [_mm512_setzero_si512(); PIXEL_GROUPS];
        let mut live: [__mmask8; PIXEL_GROUPS] = [0xFF; PIXEL_GROUPS];
        for _ in 0..256 {
            let mut any: __mmask8 = 0;
            for g in 0..PIXEL_GROUPS {
                // `escape_time`'s operations in its order, without fused multiply-adds:
                // the test is on the old x and y.
                let xx = _mm512_mul_pd(x[g], x[g]);
                let yy = _mm512_mul_pd(y[g], y[g]);
                live[g] =
                    _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(live[g], _mm512_add_pd(xx, yy), four);
                count[g] = _mm512_mask_add_epi64(count[g], live[g], count[g], one);
                let t = _mm512_add_pd(_mm512_sub_pd(xx, yy), vcx[g]);
                y[g] = _mm512_add_pd(_mm512_mul_pd(_mm512_mul_pd(x[g], two), y[g]), vcy);
                x[g] = t;
                any |= live[g];
            }
            // Escaped lanes keep iterating (their values may overflow) but no longer count.
            if any == 0 {
                break;
            }
        }
        for (g, n) in count.iter().enumerate() {
            // SAFETY: the 8 counts from `c + 8 * g` are in `out` (`c + WIDTH <= w`).
            unsafe {
                _mm256_storeu_si256(
                    out.as_mut_ptr().add(c + 8 * g).cast(),
                    _mm512_cvtepi64_epi32(*n),
                )
            };
        }
        c += WIDTH;
    }
    for k in c..w {
        out[k].write(escape_time(cx[k], cy));
    }
}

/// Groups of 16 bodies each N-body task keeps in flight, sharing each other body's loads:
/// an interaction is about 11 multiply-class operations and a chain of about 40 cycles.
const BODY_GROUPS: usize = 4;

/// The x accelerations of bodies `i0..i0 + 64`, into `out`: approximated as a
/// performance engineer writes it, or with `EXACT` as the reference computes it.
#[target_feature(enable = "avx512f")]
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
    let mut xi = [_mm512_setzero_ps(); BODY_GROUPS];
    let mut yi = xi;
    let mut zi = xi;
    for g in 0..BODY_GROUPS {
        let at = i0 + g * LANES;
        (xi[g], yi[g], zi[g]) = (load16(px, at), load16(py, at), load16(pz, at));
    }
    let mut ax = [_mm512_setzero_ps(); BODY_GROUPS];
    for j in 0..n {
        let (xj, yj, zj) = (
            _mm512_set1_ps(px[j]),
            _mm512_set1_ps(py[j]),
            _mm512_set1_ps(pz[j]),
        );
        let mj = match EXACT {
            true => _mm512_set1_ps(pm[j]),
            // The Newton step's halving, cubed, folded into the mass (once per body j).
            false => _mm512_mul_ps(_mm512_set1_ps(pm[j]), _mm512_set1_ps(0.125)),
        };
        for g in 0..BODY_GROUPS {
            let d = (
                _mm512_sub_ps(xj, xi[g]),
                _mm512_sub_ps(yj, yi[g]),
                _mm512_sub_ps(zj, zi[g]),
            );
            ax[g] = match EXACT {
                true => exact_pull(d, mj, ax[g]),
                false => approximate_pull(d, mj, ax[g]),
            };
        }
    }
    for (g, a) in ax.iter().enumerate() {
        let o = &mut out[g * LANES..(g + 1) * LANES];
        // SAFETY: `o` holds 16 floats.
        unsafe { _mm512_storeu_ps(o.as_mut_ptr(), *a) };
    }
}

/// `ax` plus one body's pull at distance `(dx, dy, dz)`, `m8` its mass over 8: with
/// `r = 1 / sqrt(d2)` from the 14-bit estimate `r0` and one Newton step, `2r = r0 (3 - d2
/// r0^2)` (about 2^-23 relative), cheaper than a square root and a division; multiply-adds
/// fused.
#[target_feature(enable = "avx512f")]
#[inline]
fn approximate_pull((dx, dy, dz): (__m512, __m512, __m512), m8: __m512, ax: __m512) -> __m512 {
    let d2 = _mm512_fmadd_ps(
        dz,
        dz,
        _mm512_fmadd_ps(dy, dy, _mm512_fmadd_ps(dx, dx, _mm512_set1_ps(0.01))),
    );
    let r0 = _mm512_rsqrt14_ps(d2);
    let three = _mm512_set1_ps(3.0);
    let r2 = _mm512_mul_ps(r0, _mm512_fnmadd_ps(d2, _mm512_mul_ps(r0, r0), three));
    let inv8 = _mm512_mul_ps(_mm512_mul_ps(r2, r2), r2);
    _mm512_fmadd_ps(_mm512_mul_ps(m8, dx), inv8, ax)
}

/// `ax` plus one body's pull as the reference computes it: `d2 = dx dx + dy dy + dz dz +
/// 0.01`, `1 / (d2 sqrt(d2))`, `ax + m dx inv`, each operation rounded in that order.
#[target_feature(enable = "avx512f")]
#[inline]
fn exact_pull((dx, dy, dz): (__m512, __m512, __m512), m: __m512, ax: __m512) -> __m512 {
    let d2 = _mm512_add_ps(
        _mm512_add_ps(
            _mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)),
            _mm512_mul_ps(dz, dz),
        ),
        _mm512_set1_ps(0.01),
    );
    let inv = _mm512_div_ps(_mm512_set1_ps(1.0), _mm512_mul_ps(d2, _mm512_sqrt_ps(d2)));
    _mm512_add_ps(ax, _mm512_mul_ps(_mm512_mul_ps(m, dx), inv))
}

/// The 16 floats of `v` from `at`.
#[target_feature(enable = "avx512f")]
#[inline]
fn load16(v: &[f32], at: usize) -> __m512 {
    let v = &v[at..at + LANES];
    // SAFETY: `v` holds 16 floats.
    unsafe { _mm512_loadu_ps(v.as_ptr()) }
}
