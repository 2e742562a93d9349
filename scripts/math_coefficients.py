#!/usr/bin/env python3
"""Minimax coefficients of the CPU backend's inlined math functions.

Each kernel polynomial is fitted by the Remez exchange algorithm in high precision
(mpmath), its coefficients rounded to the working precision (f64 or f32), and the
error of the rounded polynomial measured on a dense grid. The constants that split
ln 2, log10(2), 1/ln 2, ... and pi/2 into parts are computed here too. Prints
`accel-runtime/src/cpu/codegen/math/coefficients.rs`:

    python3 scripts/math_coefficients.py > accel-runtime/src/cpu/codegen/math/coefficients.rs
"""

import struct
import sys

import mpmath as mp

mp.mp.dps = 80


def to_f64(x):
    return float(x)


def to_f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def remez(target, weight, lo, hi, exponents, iterations=40):
    """Coefficients c minimising max |weight(x) * (sum c_j x^e_j - target(x))| on [lo, hi]."""
    n = len(exponents)
    m = n + 1  # reference points: n coefficients and the levelled error
    # Chebyshev extrema as the first reference, nudged off the interval's centre (targets
    # divided by a power of x are not evaluated at 0); the grid has the end points and
    # the midpoints of 4000 cells.
    refs = [
        (lo + hi) / 2 - (hi - lo) / 2 * mp.cos(mp.pi * k / (m - 1)) + (hi - lo) * mp.mpf(10) ** -20
        for k in range(m)
    ]
    refs[-1] = hi
    grid = [lo] + [lo + (hi - lo) * (k + mp.mpf(1) / 2) / 4000 for k in range(4000)] + [hi]
    coeffs = None
    for _ in range(iterations):
        rows = []
        rhs = []
        for k, x in enumerate(refs):
            rows.append([x**e for e in exponents] + [(-1) ** k / weight(x)])
            rhs.append(target(x))
        sol = mp.lu_solve(mp.matrix(rows), mp.matrix(rhs))
        coeffs = [sol[j] for j in range(n)]

        def err(x):
            return weight(x) * (sum(c * x**e for c, e in zip(coeffs, exponents)) - target(x))

        values = [err(x) for x in grid]
        # Local extrema of the error, alternating in sign: one per run of equal sign.
        extrema = []
        start = 0
        for k in range(1, len(grid) + 1):
            if k == len(grid) or mp.sign(values[k]) != mp.sign(values[start]):
                best = max(range(start, k), key=lambda j: abs(values[j]))
                extrema.append(grid[best])
                start = k
        if len(extrema) < m:
            break
        # Keep the m consecutive extrema with the largest smallest error.
        best_window = max(
            range(len(extrema) - m + 1),
            key=lambda s: min(abs(err(x)) for x in extrema[s : s + m]),
        )
        new = extrema[best_window : best_window + m]
        if all(abs(a - b) < (hi - lo) * mp.mpf(10) ** -30 for a, b in zip(new, refs)):
            break
        refs = new
    return coeffs


def max_error(target, weight, lo, hi, exponents, coeffs, points=20000):
    worst = mp.mpf(0)
    for k in range(points + 1):
        x = lo + (hi - lo) * (k + mp.mpf(1) / 3) / (points + 1)
        e = weight(x) * (sum(mp.mpf(c) * x**ex for c, ex in zip(coeffs, exponents)) - target(x))
        worst = max(worst, abs(e))
    return worst


def fit(name, target, weight, lo, hi, exponents, rounding):
    c = remez(target, weight, mp.mpf(lo), mp.mpf(hi), exponents)
    rounded = [rounding(x) for x in c]
    e = max_error(target, weight, mp.mpf(lo), mp.mpf(hi), exponents, rounded)
    return name, rounded, e


def split(value, bits, rounding=to_f64):
    """value as hi + lo, hi with only `bits` significant bits (so k * hi is exact for small k)."""
    e = mp.floor(mp.log(abs(value), 2))
    scale = mp.mpf(2) ** (bits - 1 - e)
    hi = mp.floor(value * scale) / scale
    return rounding(hi), rounding(value - hi)


def series_tiny(f, x):
    # mpmath evaluates at high precision: cancellation near 0 is harmless if x is not 0.
    return f(x)


def main():
    tiny = mp.mpf(10) ** -30
    kernels = []

    # exp(r) = 1 + r + r^2/2 + r^3 P(r) on |r| <= ln2/2 (slightly widened), relative error.
    def exp_target(r):
        return (mp.exp(r) - 1 - r - r * r / 2) / r**3

    def exp_weight(r):
        return abs(r**3) / mp.exp(r)

    lim = mp.log(2) / 2 * mp.mpf("1.01")
    kernels.append(fit("EXP_F64", exp_target, exp_weight, -lim, lim, list(range(9)), to_f64))
    kernels.append(fit("EXP_F32", exp_target, exp_weight, -lim, lim, list(range(4)), to_f32))

    # log(1+f) = 2s + s R(z), s = f/(2+f), z = s^2, |s| <= 3 - 2 sqrt(2): R(z) = sum Lg_j z^j.
    smax = (3 - 2 * mp.sqrt(2)) * mp.mpf("1.0001")

    def log_target(z):
        s = mp.sqrt(z)
        return (mp.log((1 + s) / (1 - s)) - 2 * s) / s

    one = lambda z: mp.mpf(1)
    kernels.append(fit("LOG_F64", log_target, one, tiny, smax**2, list(range(1, 8)), to_f64))
    kernels.append(fit("LOG_F32", log_target, one, tiny, smax**2, list(range(1, 5)), to_f32))

    # sin(x) = x + x^3 S(x^2), cos(x) = 1 - x^2/2 + x^4 C(x^2) on |x| <= pi/4, relative error.
    q = (mp.pi / 4 * mp.mpf("1.0001")) ** 2

    def sin_target(z):
        x = mp.sqrt(z)
        return (mp.sin(x) - x) / x**3

    def sin_weight(z):
        x = mp.sqrt(z)
        return x**3 / mp.sin(x)

    def cos_target(z):
        x = mp.sqrt(z)
        return (mp.cos(x) - 1 + z / 2) / z**2

    def cos_weight(z):
        return z**2 / mp.cos(mp.sqrt(z))

    kernels.append(fit("SIN_F64", sin_target, sin_weight, tiny, q, list(range(6)), to_f64))
    kernels.append(fit("COS_F64", cos_target, cos_weight, tiny, q, list(range(6)), to_f64))

    # tan(x) = x + x^3 T(x^2) on |x| <= 0.6745 (beyond it, tan(pi/4 - x) is used).
    tq = mp.mpf("0.6745") ** 2

    def tan_target(z):
        x = mp.sqrt(z)
        return (mp.tan(x) - x) / x**3

    def tan_weight(z):
        x = mp.sqrt(z)
        return x**3 / mp.tan(x)

    kernels.append(fit("TAN_F64", tan_target, tan_weight, tiny, tq, list(range(13)), to_f64))

    # tanh(x) = x + x^3 U(x^2) on |x| <= 0.55 (beyond it, 1 - 2 / (exp(2x) + 1)).
    hq = mp.mpf("0.5501") ** 2

    def tanh_target(z):
        x = mp.sqrt(z)
        return (mp.tanh(x) - x) / x**3

    def tanh_weight(z):
        x = mp.sqrt(z)
        return x**3 / mp.tanh(x)

    kernels.append(fit("TANH_F64", tanh_target, tanh_weight, tiny, hq, list(range(14)), to_f64))

    out = sys.stdout
    out.write("//! Generated by `scripts/math_coefficients.py` (mpmath Remez fits); do not edit.\n")
    out.write("//! Each kernel's comment gives the maximum weighted error of its rounded coefficients.\n\n")
    for name, coeffs, err in kernels:
        ty = "f32" if name.endswith("F32") else "f64"
        bits = -mp.log(err, 2) if err > 0 else mp.inf
        out.write(f"/// Error bound 2^-{float(bits):.1f}.\n")
        out.write(f"pub(super) const {name}: [f64; {len(coeffs)}] = [\n")
        for c in coeffs:
            out.write(f"    {float(c)!r},\n")
        out.write("];\n\n")

    consts = []
    ln2 = mp.log(2)
    consts.append(("LN2_HI_F64", "ln 2, high part, 32 bits (k times it is exact for |k| < 2^21)", split(ln2, 32)[0]))
    consts.append(("LN2_LO_F64", "ln 2 minus its high part", split(ln2, 32)[1]))
    consts.append(("LN2_HI_F32", "ln 2, high part for f32, 16 bits (k times it is exact for |k| < 2^8)", split(ln2, 16, to_f32)[0]))
    consts.append(("LN2_LO_F32", "ln 2 minus its f32 high part", split(ln2, 16, to_f32)[1]))
    consts.append(("INV_LN2_HI_F64", "1/ln 2, high part (32 bits)", split(1 / ln2, 32)[0]))
    consts.append(("INV_LN2_LO_F64", "1/ln 2 minus its high part", split(1 / ln2, 32)[1]))
    consts.append(("INV_LN2_HI_F32", "1/ln 2, high part for f32 (12 bits)", split(1 / ln2, 12, to_f32)[0]))
    consts.append(("INV_LN2_LO_F32", "1/ln 2 minus its f32 high part", split(1 / ln2, 12, to_f32)[1]))
    consts.append(("LN2_TAIL_F64", "ln 2 minus its f64", to_f64(ln2 - mp.mpf(to_f64(ln2)))))
    consts.append(("LN2_TAIL_F32", "ln 2 minus its f32", to_f32(ln2 - mp.mpf(to_f32(ln2)))))
    inv_ln10 = 1 / mp.log(10)
    consts.append(("INV_LN10_HI_F64", "1/ln 10, high part (32 bits)", split(inv_ln10, 32)[0]))
    consts.append(("INV_LN10_LO_F64", "1/ln 10 minus its high part", split(inv_ln10, 32)[1]))
    consts.append(("INV_LN10_HI_F32", "1/ln 10, high part for f32 (12 bits)", split(inv_ln10, 12, to_f32)[0]))
    consts.append(("INV_LN10_LO_F32", "1/ln 10 minus its f32 high part", split(inv_ln10, 12, to_f32)[1]))
    log10_2 = mp.log10(2)
    consts.append(("LOG10_2_HI_F64", "log10(2), high part, 32 bits", split(log10_2, 32)[0]))
    consts.append(("LOG10_2_LO_F64", "log10(2) minus its high part", split(log10_2, 32)[1]))
    consts.append(("LOG10_2_HI_F32", "log10(2), high part for f32, 16 bits", split(log10_2, 16, to_f32)[0]))
    consts.append(("LOG10_2_LO_F32", "log10(2) minus its f32 high part", split(log10_2, 16, to_f32)[1]))
    # pi/2 in three 33-bit parts and their tails (k * part exact for k < 2^20).
    rest = mp.pi / 2
    for k in (1, 2, 3):
        hi, _ = split(rest, 33)
        rest = rest - mp.mpf(hi)
        consts.append((f"PIO2_{k}", f"pi/2, part {k} (33 bits)", hi))
    consts.append(("PIO2_3T", "pi/2 minus its three parts", to_f64(rest)))
    consts.append(("PIO4_LO", "pi/4 minus its f64", to_f64(mp.pi / 4 - mp.mpf(to_f64(mp.pi / 4)))))
    for name, doc, value in consts:
        out.write(f"/// {doc}.\npub(super) const {name}: f64 = {float(value)!r};\n")
    for name, coeffs, err in kernels:
        sys.stderr.write(f"{name}: {len(coeffs)} coefficients, error 2^{float(mp.log(err, 2)):.2f}\n")


if __name__ == "__main__":
    main()
