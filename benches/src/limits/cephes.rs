//! The numbers the limits' vector `exp`, `ln` and normal distribution evaluate, for every
//! instruction set alike (`avx512_math.rs`, `avx2_math.rs`): Cephes' single-precision
//! polynomials, their coefficients as the nearest `f32`s, highest degree first; and
//! `accel_examples::classic::cnd`'s (Abramowitz and Stegun 26.2.17).

/// `exp`'s arguments are clamped to this range: below it `f32` underflows anyway, above
/// it overflows.
pub const EXP_RANGE: (f32, f32) = (-104.0, 88.7);
/// ln 2 in two parts, the first 355/512 so that `n * LN2_HI` is exact for the exponents
/// `n` of range reduction.
pub const LN2_HI: f32 = 0.693_359_4;
pub const LN2_LO: f32 = -2.121_944_4e-4;
/// `(e^r - 1 - r) / r^2` on |r| <= ln 2 / 2.
pub const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_6e-1,
    0.5,
];
/// `(ln(1 + f) - f + f^2 / 2) / f^3` on 1 + f in [sqrt(1/2), sqrt(2)).
pub const LN_POLY: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461e-1,
    1.167_699_84e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_7e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];
/// The normal distribution's `k = 1 / (1 + CND_K |d|)`.
pub const CND_K: f32 = 0.231_641_9;
/// Its polynomial in `k` (times `k`).
pub const CND_POLY: [f32; 5] = [
    1.330_274_5,
    -1.821_256,
    1.781_477_9,
    -0.356_563_78,
    0.319_381_53,
];
/// 1 / sqrt(2 pi), the density's factor.
pub const INV_SQRT_2PI: f32 = 0.398_942_3;
