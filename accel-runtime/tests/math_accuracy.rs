//! The CPU backend's inlined math library (`src/cpu/codegen/math`) against references:
//! the error of every function in units in the last place (ULP) on random inputs, over
//! the interesting range and over all magnitudes, for scalar code and vector lanes, with
//! and without FMA; special values exactly as libm gives them; vector lanes bit-identical
//! to scalar code; `ACCEL_EXACT_MATH=1` bit-identical to Rust's own functions.
//!
//! `f64` references are computed in 160-bit precision (astro-float); `f32` references are
//! the platform's `f64` functions (their error, under 2^-52 relative, is a 2^-29 of an
//! `f32` ULP). `ACCEL_MATH_SAMPLES=N` sets the random inputs per function and range
//! (default 4000 for f64, 40000 for f32); `ACCEL_MATH_EXHAUSTIVE=1` also runs every `f32`
//! through the unary functions (minutes, in release mode; `ACCEL_MATH_FUNCS=exp,sin` picks
//! functions): the numbers in the README come
//! from such runs.

use accel_runtime::__private::{MathProbe, ProbeConfig};
use astro_float::{BigFloat, Consts, RoundingMode, Sign};

const RM: RoundingMode = RoundingMode::ToEven;
const PREC: usize = 160;

/// A function of the library: its name, its error bound in ULP for f32 and f64 (the
/// README's contract), and the ranges sampled besides all magnitudes.
struct Func {
    name: &'static str,
    bound_f32: f64,
    bound_f64: f64,
    ranges: &'static [(f64, f64)],
}

const FUNCS: &[Func] = &[
    Func {
        name: "exp",
        bound_f32: 1.0,
        bound_f64: 1.0,
        ranges: &[(-1.0, 1.0), (-745.2, 709.8), (-103.98, 88.73)],
    },
    Func {
        name: "exp2",
        bound_f32: 1.0,
        bound_f64: 1.0,
        ranges: &[(-1.0, 1.0), (-1075.0, 1024.0), (-150.0, 128.0)],
    },
    Func {
        name: "ln",
        bound_f32: 1.0,
        bound_f64: 1.0,
        ranges: &[(0.5, 2.0), (0.0, 1e6)],
    },
    Func {
        name: "log2",
        bound_f32: 1.0,
        bound_f64: 1.0,
        ranges: &[(0.5, 2.0), (0.0, 1e6)],
    },
    Func {
        name: "log10",
        bound_f32: 1.0,
        bound_f64: 1.0,
        ranges: &[(0.5, 2.0), (0.0, 1e6)],
    },
    Func {
        name: "sin",
        bound_f32: 0.51,
        bound_f64: 1.0,
        ranges: &[(-4.0, 4.0), (-1e5, 1e5), (-2e6, 2e6)],
    },
    Func {
        name: "cos",
        bound_f32: 0.51,
        bound_f64: 1.0,
        ranges: &[(-4.0, 4.0), (-1e5, 1e5), (-2e6, 2e6)],
    },
    Func {
        name: "tan",
        bound_f32: 0.51,
        bound_f64: 1.0,
        ranges: &[(-4.0, 4.0), (-1e5, 1e5), (-2e6, 2e6)],
    },
    Func {
        name: "tanh",
        bound_f32: 0.51,
        bound_f64: 1.5,
        ranges: &[(-1.0, 1.0), (-25.0, 25.0)],
    },
    Func {
        name: "powf",
        bound_f32: 0.51,
        bound_f64: 0.0,
        ranges: &[(0.0, 4.0), (0.0, 1e4)],
    },
];

/// A deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }

    /// A finite f64 of any magnitude and sign (uniform over bit patterns).
    fn any_f64(&mut self) -> f64 {
        loop {
            let x = f64::from_bits(self.next());
            if x.is_finite() {
                return x;
            }
        }
    }

    fn any_f32(&mut self) -> f32 {
        loop {
            let x = f32::from_bits(self.next() as u32);
            if x.is_finite() {
                return x;
            }
        }
    }
}

/// The functions to measure: all, or those `ACCEL_MATH_FUNCS` names (comma-separated), so
/// that long runs can be split.
fn chosen(f: &&Func) -> bool {
    std::env::var("ACCEL_MATH_FUNCS").map_or(true, |names| names.split(',').any(|n| n == f.name))
}

fn samples(default: usize) -> usize {
    std::env::var("ACCEL_MATH_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn probe(name: &str, f64: bool, vector: bool, fma: Option<bool>, exact: bool) -> MathProbe {
    let config = ProbeConfig {
        f64,
        vector,
        fma,
        exact,
    };
    MathProbe::new(name, config).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `b` as an f64 (truncated; enough for error magnitudes).
fn approx(b: &BigFloat) -> f64 {
    if b.is_zero() {
        return 0.0;
    }
    let Some((m, _, s, e, _)) = b.as_raw_parts() else {
        return f64::NAN;
    };
    let top = *m.last().unwrap_or(&0) as f64 / 2f64.powi(64);
    let v = top * 2f64.powi(e);
    if s == Sign::Neg {
        -v
    } else {
        v
    }
}

/// `x` exactly (astro-float reads subnormal f64 values wrongly: those are scaled up by
/// 2^600 first and back down after).
fn big(x: f64) -> BigFloat {
    if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
        let mut b = BigFloat::from_f64(x * 2f64.powi(600), PREC);
        let e = b.exponent().expect("a finite number");
        b.set_exponent(e - 600);
        b
    } else {
        BigFloat::from_f64(x, PREC)
    }
}

/// The exact value of `name` at `x` (and `y`), to `PREC` bits.
fn reference(name: &str, x: f64, cc: &mut Consts) -> BigFloat {
    let b = big(x);
    match name {
        "exp" => b.exp(PREC, RM, cc),
        "exp2" => BigFloat::from_f64(2.0, PREC).pow(&b, PREC, RM, cc),
        "ln" => b.ln(PREC, RM, cc),
        "log2" => b.log2(PREC, RM, cc),
        "log10" => b.log10(PREC, RM, cc),
        "sin" => b.sin(PREC, RM, cc),
        "cos" => b.cos(PREC, RM, cc),
        "tan" => b.tan(PREC, RM, cc),
        "tanh" => b.tanh(PREC, RM, cc),
        _ => unreachable!("no f64 reference for {name}"),
    }
}

/// The error of `got` in ULP of the exact value (for f64: 53 significand bits, the
/// smallest normal exponent -1022).
fn ulps_f64(got: f64, exact: &BigFloat) -> f64 {
    let Some(e) = exact.exponent() else {
        return 0.0;
    };
    // exact is in [2^(e-1), 2^e): one ULP is 2^(max(e-1, -1022) - 52); astro-float reads
    // subnormal f64 values wrongly, so both sides are scaled up by 2^600 first.
    let mut ulp = BigFloat::from_f64(1.0, 64);
    let mut exact = exact.clone();
    let mut got = got;
    let mut ulp_exponent = (e - 1).max(-1022) - 52;
    if got != 0.0 && got.abs() < 1e-290 {
        got *= 2f64.powi(600);
        exact.set_exponent(e + 600);
        ulp_exponent += 600;
    }
    ulp.set_exponent(ulp_exponent + 1);
    let diff = big(got).sub(&exact, PREC, RM);
    approx(&diff.div(&ulp, PREC, RM)).abs()
}

/// The error of `got` in f32 ULP of `exact` (an f64 reference).
fn ulps_f32(got: f32, exact: f64) -> f64 {
    let e = if exact == 0.0 {
        -126
    } else {
        (exact.abs().log2().floor() as i32).max(-126)
    };
    let ulp = 2f64.powi(e - 23);
    (got as f64 - exact).abs() / ulp
}

/// Whether two results are the same value (NaNs alike, zeros by sign).
fn same_f64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same_f32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Rust's own `f64` function (the platform's libm).
fn libm_f64(name: &str, x: f64, y: f64) -> f64 {
    match name {
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "ln" => x.ln(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "tanh" => x.tanh(),
        "powf" => x.powf(y),
        _ => unreachable!("{name}"),
    }
}

fn libm_f32(name: &str, x: f32, y: f32) -> f32 {
    match name {
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "ln" => x.ln(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "tanh" => x.tanh(),
        "powf" => x.powf(y),
        _ => unreachable!("{name}"),
    }
}

/// The inputs of one function: `n` from each range and `n` of any magnitude; for
/// `powf` exponents too.
fn inputs_f64(f: &Func, n: usize, rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let mut xs = Vec::new();
    for &(lo, hi) in f.ranges {
        xs.extend((0..n).map(|_| rng.uniform(lo, hi)));
    }
    xs.extend((0..n).map(|_| rng.any_f64()));
    let ys = xs.iter().map(|_| rng.uniform(-30.0, 30.0)).collect();
    (xs, ys)
}

fn inputs_f32(f: &Func, n: usize, rng: &mut Rng) -> (Vec<f32>, Vec<f32>) {
    let mut xs = Vec::new();
    for &(lo, hi) in f.ranges {
        xs.extend((0..n).map(|_| rng.uniform(lo, hi) as f32));
    }
    xs.extend((0..n).map(|_| rng.any_f32()));
    let ys = xs
        .iter()
        .enumerate()
        .map(|(k, _)| {
            // Integers (odd and even) and fractions, small and large.
            match k % 4 {
                0 => rng.uniform(-12.0, 12.0).round() as f32,
                1 => rng.uniform(-40.0, 40.0) as f32,
                2 => rng.uniform(-1.0, 1.0) as f32,
                _ => rng.any_f32(),
            }
        })
        .collect();
    (xs, ys)
}

#[test]
fn f64_functions_are_within_their_bounds() {
    let mut cc = Consts::new().expect("astro-float constants");
    let mut rng = Rng(0x5eed);
    let n = samples(4000);
    let mut report = Vec::new();
    for f in FUNCS.iter().filter(|f| f.name != "powf").filter(chosen) {
        let (xs, ys) = inputs_f64(f, n, &mut rng);
        let vector = probe(f.name, true, true, None, false).run_f64(&xs, &ys);
        let scalar = probe(f.name, true, false, None, false).run_f64(&xs, &ys);
        let no_fma = probe(f.name, true, true, Some(false), false).run_f64(&xs, &ys);
        let (mut worst, mut worst_no_fma, mut at) = (0.0f64, 0.0f64, 0.0);
        for (k, &x) in xs.iter().enumerate() {
            assert!(
                same_f64(vector[k], scalar[k]),
                "{}({x:e}): vector lanes give {:e}, scalar code {:e}",
                f.name,
                vector[k],
                scalar[k]
            );
            let r = reference(f.name, x, &mut cc);
            let want = approx(&r);
            if want.is_nan() || want.abs() > f64::MAX {
                // Overflow, or a NaN: the special-value test checks these exactly.
                continue;
            }
            let u = ulps_f64(vector[k], &r);
            if u > worst {
                (worst, at) = (u, x);
            }
            worst_no_fma = worst_no_fma.max(ulps_f64(no_fma[k], &r));
        }
        report.push(format!(
            "{} f64: {worst:.3} ULP (at {at:e}), {worst_no_fma:.3} without FMA, over {} inputs",
            f.name,
            xs.len()
        ));
        assert!(
            worst <= f.bound_f64 && worst_no_fma <= f.bound_f64,
            "{} f64: {worst} ULP at {at:e} ({worst_no_fma} without FMA), bound {}",
            f.name,
            f.bound_f64
        );
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn f32_functions_are_within_their_bounds() {
    let mut rng = Rng(0xf32);
    let n = samples(40_000);
    let mut report = Vec::new();
    for f in FUNCS.iter().filter(chosen) {
        let (xs, ys) = inputs_f32(f, n, &mut rng);
        let vector = probe(f.name, false, true, None, false).run_f32(&xs, &ys);
        let scalar = probe(f.name, false, false, None, false).run_f32(&xs, &ys);
        let no_fma = probe(f.name, false, true, Some(false), false).run_f32(&xs, &ys);
        let (mut worst, mut worst_no_fma, mut at) = (0.0f64, 0.0f64, (0.0, 0.0));
        for (k, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
            assert!(
                same_f32(vector[k], scalar[k]),
                "{}({x:e}, {y:e}): vector lanes give {:e}, scalar code {:e}",
                f.name,
                vector[k],
                scalar[k]
            );
            let want = libm_f64(f.name, x as f64, y as f64);
            if !want.is_finite() || want.abs() > f32::MAX as f64 {
                continue;
            }
            let u = ulps_f32(vector[k], want);
            if u > worst {
                (worst, at) = (u, (x, y));
            }
            worst_no_fma = worst_no_fma.max(ulps_f32(no_fma[k], want));
        }
        report.push(format!(
            "{} f32: {worst:.3} ULP (at {:e}, {:e}), {worst_no_fma:.3} without FMA, over {} inputs",
            f.name,
            at.0,
            at.1,
            xs.len()
        ));
        assert!(
            worst <= f.bound_f32 && worst_no_fma <= f.bound_f32,
            "{} f32: {worst} ULP at {at:?} ({worst_no_fma} without FMA), bound {}",
            f.name,
            f.bound_f32
        );
    }
    eprintln!("{}", report.join("\n"));
}

/// Inputs whose results libm gives exactly (or as special values): the library must give
/// the same, bit for bit.
fn specials_f64() -> Vec<(&'static str, f64, f64)> {
    let edge = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        -f64::MAX,
        1.0,
        -1.0,
    ];
    let mut out = Vec::new();
    for name in [
        "exp", "exp2", "ln", "log2", "log10", "sin", "cos", "tan", "tanh",
    ] {
        for &x in &edge {
            // Finite nonzero arguments of sin/cos/tan/tanh round (they are checked by
            // bound above); their exact cases are below.
            let exact_case = match name {
                "sin" | "tan" | "tanh" => x == 0.0 || !x.is_finite(),
                "cos" => !x.is_finite() || x == 0.0,
                "ln" | "log2" | "log10" => x <= 0.0 || !x.is_finite() || x == 1.0,
                _ => x.abs() < 1e-300 || !x.is_finite() || x.abs() > 1e300,
            };
            if exact_case {
                out.push((name, x, 0.0));
            }
        }
    }
    for k in -1074..1024 {
        out.push(("exp2", k as f64, 0.0));
        out.push(("log2", 2f64.powi(k.max(-1022)), 0.0));
    }
    for k in 0..23 {
        out.push(("log10", 10f64.powi(k), 0.0));
    }
    // Overflow and underflow thresholds: the first inputs giving inf and 0.
    out.extend([
        ("exp", 709.782712893384, 0.0),
        ("exp", 709.7827128933841, 0.0),
        ("exp", -745.1332191019411, 0.0),
        ("exp", -745.1332191019412, 0.0),
        ("exp", 1e6, 0.0),
        ("exp", -1e6, 0.0),
        ("tanh", 20.0, 0.0),
        ("tanh", -30.0, 0.0),
        ("tanh", 1e300, 0.0),
    ]);
    out
}

fn specials_f32() -> Vec<(&'static str, f32, f32)> {
    let edge = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        f32::MAX,
        -f32::MAX,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
    ];
    let mut out = Vec::new();
    for name in [
        "exp", "exp2", "ln", "log2", "log10", "sin", "cos", "tan", "tanh",
    ] {
        for &x in &edge[..13] {
            let exact_case = match name {
                "sin" | "tan" | "tanh" => x == 0.0 || !x.is_finite(),
                "cos" => !x.is_finite() || x == 0.0,
                "ln" | "log2" | "log10" => x <= 0.0 || !x.is_finite() || x == 1.0,
                _ => x.abs() < 1e-30 || !x.is_finite() || x.abs() > 1e30,
            };
            if exact_case {
                out.push((name, x, 0.0));
            }
        }
    }
    for k in -149..128 {
        out.push(("exp2", k as f32, 0.0));
        out.push(("log2", 2f32.powi(k.max(-126)), 0.0));
    }
    for k in 0..11 {
        out.push(("log10", 10f32.powi(k), 0.0));
    }
    out.extend([
        ("exp", 88.72283, 0.0),
        ("exp", 88.72284, 0.0),
        ("exp", -103.97208, 0.0),
        ("exp", -103.97209, 0.0),
        ("tanh", 9.1, 0.0),
        ("tanh", -20.0, 0.0),
    ]);
    // powf: C99's special cases, over every pair of edge values.
    for &x in &edge {
        for &y in &edge {
            out.push(("powf", x, y));
        }
    }
    for (x, y) in [
        (-8.0, 1.0 / 3.0),
        (-2.0, 3.0),
        (-2.0, -3.0),
        (-2.0, 4.0),
        (-0.0, -3.0),
        (-0.0, 3.0),
        (0.0, -3.0),
        (-1.0, f32::INFINITY),
        (-1.0, f32::NEG_INFINITY),
        (0.5, f32::INFINITY),
        (2.0, f32::NEG_INFINITY),
        (f32::NEG_INFINITY, 3.0),
        (f32::NEG_INFINITY, -3.0),
        (f32::NEG_INFINITY, 0.5),
        (2.0, 128.0),
        (2.0, -149.0),
        (2.0, -150.0),
        (10.0, 38.0),
        (10.0, 39.0),
    ] {
        out.push(("powf", x, y));
    }
    out
}

#[test]
fn special_values_are_libms() {
    let specials = specials_f64();
    for vector in [true, false] {
        for name in [
            "exp", "exp2", "ln", "log2", "log10", "sin", "cos", "tan", "tanh",
        ] {
            let cases: Vec<_> = specials.iter().filter(|c| c.0 == name).collect();
            let xs: Vec<f64> = cases.iter().map(|c| c.1).collect();
            let got = probe(name, true, vector, None, false).run_f64(&xs, &[]);
            for (x, g) in xs.iter().zip(&got) {
                let want = libm_f64(name, *x, 0.0);
                assert!(
                    same_f64(*g, want),
                    "{name}({x:e}) f64 gives {g:e}, libm {want:e}"
                );
            }
        }
    }
    let specials = specials_f32();
    for vector in [true, false] {
        for name in [
            "exp", "exp2", "ln", "log2", "log10", "sin", "cos", "tan", "tanh", "powf",
        ] {
            let cases: Vec<_> = specials.iter().filter(|c| c.0 == name).collect();
            let xs: Vec<f32> = cases.iter().map(|c| c.1).collect();
            let ys: Vec<f32> = cases.iter().map(|c| c.2).collect();
            let got = probe(name, false, vector, None, false).run_f32(&xs, &ys);
            for ((x, y), g) in xs.iter().zip(&ys).zip(&got) {
                let want = libm_f32(name, *x, *y);
                assert!(
                    same_f32(*g, want),
                    "{name}({x:e}, {y:e}) f32 gives {g:e}, libm {want:e}"
                );
            }
        }
    }
}

#[test]
fn exact_math_is_libm_bit_for_bit() {
    let mut rng = Rng(7);
    for f in FUNCS {
        let (xs, ys) = inputs_f32(f, 2000, &mut rng);
        let got = probe(f.name, false, true, None, true).run_f32(&xs, &ys);
        for ((x, y), g) in xs.iter().zip(&ys).zip(&got) {
            let want = libm_f32(f.name, *x, *y);
            assert!(same_f32(*g, want), "{}({x:e}, {y:e})", f.name);
        }
        let (xs, ys) = inputs_f64(f, 2000, &mut rng);
        let got = probe(f.name, true, true, None, true).run_f64(&xs, &ys);
        for ((x, y), g) in xs.iter().zip(&ys).zip(&got) {
            let want = libm_f64(f.name, *x, *y);
            assert!(same_f64(*g, want), "{}({x:e}, {y:e})", f.name);
        }
    }
}

/// Every f32 through the unary functions (`ACCEL_MATH_EXHAUSTIVE=1`; release mode).
#[test]
fn every_f32_when_asked() {
    if std::env::var("ACCEL_MATH_EXHAUSTIVE").as_deref() != Ok("1") {
        eprintln!("[accel tests] SKIPPED: every f32 through the math functions (set ACCEL_MATH_EXHAUSTIVE=1)");
        return;
    }
    for f in FUNCS.iter().filter(|f| f.name != "powf").filter(chosen) {
        let probe = probe(f.name, false, true, None, false);
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunk = (1u64 << 32) / threads as u64;
        let worst: Vec<(f64, f32)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let probe = &probe;
                    s.spawn(move || {
                        let mut worst = (0.0f64, 0.0f32);
                        let (lo, hi) = (t * chunk, (t + 1) * chunk);
                        let mut start = lo;
                        while start < hi {
                            let end = (start + (1 << 20)).min(hi);
                            let xs: Vec<f32> =
                                (start..end).map(|b| f32::from_bits(b as u32)).collect();
                            let got = probe.run_f32(&xs, &[]);
                            for (x, g) in xs.iter().zip(&got) {
                                let want = libm_f64(f.name, *x as f64, 0.0);
                                if !want.is_finite() || want.abs() > f32::MAX as f64 {
                                    assert!(same_f32(*g, libm_f32(f.name, *x, 0.0)));
                                    continue;
                                }
                                let u = ulps_f32(*g, want);
                                if u > worst.0 {
                                    worst = (u, *x);
                                }
                            }
                            start = end;
                        }
                        worst
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let (u, at) = worst
            .into_iter()
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
        eprintln!("{} f32, every input: {u:.3} ULP at {at:e}", f.name);
        assert!(u <= f.bound_f32, "{}: {u} ULP at {at:e}", f.name);
    }
}
