//! The CPU backend's SPMD code (elements of `map`/`create`, the producers of reductions
//! and `parallel_loop` bodies run four lanes at a time) against debug mode: every
//! construct, at sizes around the gang and chunk edges, on random inputs. Results without
//! math functions must be bit-identical (each lane computes its element with scalar
//! code's operations); with math functions within the library's bound of libm's results
//! (bit-identical under `ACCEL_EXACT_MATH=1`). Each site is also checked to run on SIMD
//! lanes (`cpu_simd_loops`), so a construct that silently fell back to scalar code
//! fails here.

use accel_runtime::__private::cpu_simd_loops;
use accel_runtime::prelude::*;

mod common;

use common::{panic_message, run_child, site_of};

const SOURCE: &str = include_str!("simd.rs");

/// The lengths every site runs at: empty, around one gang (4), around chunk edges (the
/// chunk of cheap elements is 4096), and odd sizes.
const SIZES: &[usize] = &[
    0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1001, 4095, 4096, 4097, 8195, 20_003,
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

    fn f64s(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n)
            .map(|_| lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64)
            .collect()
    }

    fn f32s(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f32> {
        self.f64s(n, lo, hi).into_iter().map(|x| x as f32).collect()
    }

    fn ints(&mut self, n: usize, below: u64) -> Vec<u64> {
        (0..n).map(|_| self.next() % below.max(1)).collect()
    }
}

/// Runs `site` in debug and cpu modes; their results must print alike (so floats are
/// bit-identical, `-0.0` and NaN included). Returns the result.
fn exact<R: Accel + std::fmt::Debug>(site: impl Fn() -> R) -> R {
    let d = with_mode(Mode::Debug, &site);
    let c = with_mode(Mode::Cpu, &site);
    assert_eq!(format!("{c:?}"), format!("{d:?}"), "cpu and debug differ");
    d
}

/// The distance in units in the last place between two floats of one sign (NaNs alike).
fn ulp_distance_f32(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        (if i < 0 { i32::MIN - i } else { i }) as i64
    };
    (key(a) - key(b)).unsigned_abs()
}

fn ulp_distance_f64(a: f64, b: f64) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    let key = |x: f64| {
        let i = x.to_bits() as i64;
        (if i < 0 { i64::MIN - i } else { i }) as i128
    };
    (key(a) - key(b)).unsigned_abs() as u64
}

/// The library's contract against libm: each result within this many ULP of libm's (one
/// ULP of ours and at most one of libm's from the exact value).
const MATH_ULPS: u64 = 2;

/// Asserts the site ran on SIMD lanes (its kernel did not fall back to scalar code).
fn vectorized(marker: &str) {
    common::assert_vectorized("simd.rs", SOURCE, marker);
}

#[accel]
fn cnd(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.231_641_9 * d.abs());
    let poly = k
        * (0.319_381_53
            + k * (-0.356_563_78 + k * (1.781_477_9 + k * (-1.821_256 + k * 1.330_274_5))));
    let w = 1.0 - 0.398_942_3 * (-0.5 * d * d).exp() * poly;
    if d < 0.0 {
        1.0 - w
    } else {
        w
    }
}

/// Black-Scholes as users write it: a tuple of results from `#[accel]` helpers.
#[accel]
fn black_scholes(price: f32, strike: f32, years: f32) -> (f32, f32) {
    let (r, v) = (0.02f32, 0.30f32);
    let sqrt_t = years.sqrt();
    let d1 = ((price / strike).ln() + (r + 0.5 * v * v) * years) / (v * sqrt_t);
    let d2 = d1 - v * sqrt_t;
    let discount = strike * (-r * years).exp();
    let call = price * cnd(d1) - discount * cnd(d2);
    let put = discount * cnd(-d2) - price * cnd(-d1);
    (call, put)
}

#[accel]
fn escape_time(k: usize, w: usize, h: usize) -> u32 {
    let cx = (k % w) as f64 / w as f64 * 3.0 - 2.0;
    let cy = (k / w) as f64 / h as f64 * 2.0 - 1.0;
    let (mut x, mut y) = (0.0, 0.0);
    let mut i = 0u32;
    while i < 256 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        i += 1;
    }
    i
}

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Stats {
    mean: f64,
    count: u32,
    positive: bool,
}

#[test]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(x > 2.0)` holds for NaN: tested
fn arithmetic_casts_and_comparisons_are_bit_identical() {
    let mut rng = Rng(1);
    for &n in SIZES {
        let xs = rng.f32s(n, -1e3, 1e3);
        let ys = rng.f64s(n, -1e6, 1e6);
        let is: Vec<i32> = rng
            .ints(n, 1 << 20)
            .iter()
            .map(|&x| x as i32 - (1 << 19))
            .collect();
        let us: Vec<u64> = rng.ints(n, u64::MAX);
        exact(|| accelerate!(map2(|x, y| (x * 1.5 - 2.0) / (y as f32 + 0.5), &xs, &ys))); // arith f32
                                                                                          // The gang's index against a uniform value: which lane, if any (wrapping far away).
        for m in [
            0,
            3,
            4,
            n / 2,
            n.saturating_sub(1),
            usize::MAX,
            usize::MAX - 2,
        ] {
            exact(|| accelerate!(create(n, |i| (i == m, i != m, i + 1 == m))));
        }
        exact(|| accelerate!(map2(|x, y| x as f64 * y - (y / 3.0), &xs, &ys))); // arith f64
        exact(|| accelerate!(map(|i| (i * 3 - 7, i as u32 / 5, i as f32, i as f64), &is))); // ints
        exact(|| accelerate!(map(|u| (u as f64, u as i32, u >> 3, u % 10, u as f32), &us))); // u64
        exact(|| {
            accelerate!(map(
                |x| (x as i32, x as u32, x as i64, x as usize, x as u64),
                &xs
            ))
        }); // to ints
        exact(|| {
            accelerate!(map2(
                |x, y| (x < 0.0, x as f64 >= y, x == 1.0, -x, !(x > 2.0)),
                &xs,
                &ys
            ))
        }); // cmp
        exact(|| {
            accelerate!(map(
                |i| (i << 3, i >> 2, i & 255, i | 1, i ^ -1, i.wrapping_mul(7)),
                &is
            ))
        }); // bits
        exact(|| accelerate!(create(n, |k| (k * 2 + 1, k as f32 * 0.5, k % 4 == 0))));
        // index
    }
    for marker in [
        "// arith f32",
        "// arith f64",
        "// ints",
        "// u64",
        "// to ints",
        "// cmp",
        "// bits",
        "// index",
    ] {
        vectorized(marker);
    }
}

#[test]
fn control_flow_per_lane_is_bit_identical() {
    let mut rng = Rng(2);
    for &n in SIZES {
        let xs = rng.f64s(n, -10.0, 10.0);
        let ks: Vec<u64> = rng.ints(n, 1000);
        // A cheap if (blended), a costly one (a loop in one arm), an if without else.
        exact(|| accelerate!(map(|x| if x < 0.0 { -x * 2.0 } else { x + 1.0 }, &xs))); // cheap if
                                                                                       // Blends with zero are masks (`and`); `-0.0` is not zero bits and must stay `-0.0`.
        exact(|| accelerate!(map(|x| if x < 0.0 { x } else { 0.0 }, &xs)));
        exact(|| accelerate!(map(|x| if x < 0.0 { 0.0 } else { x }, &xs)));
        exact(|| accelerate!(map(|x| if x < 1.0 { x } else { -0.0 }, &xs)));
        exact(|| accelerate!(map(|k| if k % 2 == 0 { 0 } else { k }, &ks)));
        exact(|| {
            accelerate!(map(
                |k| if k % 3 == 0 {
                    let mut s = 0u64;
                    for j in 0..k {
                        s += j * j;
                    }
                    s
                } else {
                    k + 1
                },
                &ks
            ))
        }); // costly if
        exact(|| {
            accelerate!(map(
                |x| {
                    let mut y = x;
                    if y > 5.0 {
                        y = 5.0;
                    }
                    if y < -5.0 {
                        y = -5.0;
                    } else if y > 4.0 {
                        y *= 0.5;
                    }
                    y
                },
                &xs
            ))
        }); // assigning ifs
            // A data-dependent while loop, a loop over uniform bounds, short circuits.
        exact(|| {
            accelerate!(map(
                |k| {
                    let mut m = k + 1;
                    let mut steps = 0u32;
                    while m != 1 {
                        m = if m % 2 == 0 { m / 2 } else { 3 * m + 1 };
                        steps += 1;
                    }
                    steps
                },
                &ks
            ))
        }); // collatz
        exact(|| {
            accelerate!(map(
                |x| {
                    let mut s = 0.0;
                    for j in 0..16 {
                        s = s * x + j as f64;
                    }
                    s
                },
                &xs
            ))
        }); // uniform loop
        let m = xs.len();
        exact(|| accelerate!(create(m + 4, |i| i < m && xs[i] > 0.0 || i % 7 == 3)));
        // short circuit
    }
    let side = 48;
    exact(|| accelerate!(create(side * side, |k| escape_time(k, side, side)))); // mandelbrot
    for marker in [
        "// cheap if",
        "// costly if",
        "// assigning ifs",
        "// collatz",
        "// uniform loop",
        "// short circuit",
        "// mandelbrot",
    ] {
        vectorized(marker);
    }
}

#[test]
fn records_tuples_and_gathers_are_bit_identical() {
    let mut rng = Rng(3);
    for &n in SIZES {
        let xs = rng.f64s(n, -1.0, 1.0);
        let idx: Vec<usize> = rng.ints(n, n as u64).iter().map(|&i| i as usize).collect();
        let counts: Vec<u32> = rng.ints(n, 50).iter().map(|&c| c as u32).collect();
        exact(|| {
            accelerate!(map2(
                |x, c| Stats {
                    mean: x / (c as f64 + 1.0),
                    count: c * 2,
                    positive: x > 0.0
                },
                &xs,
                &counts
            ))
        }); // record
        exact(|| accelerate!(create(idx.len(), |i| xs[idx[i]] * 2.0 + xs[i]))); // gather
        exact(|| accelerate!(create(idx.len(), |i| (xs[idx[i]], idx[idx[i]], [i, i + 1]))));
        // tuple
    }
    for marker in ["// record", "// gather", "// tuple"] {
        vectorized(marker);
    }
}

#[test]
fn reductions_on_lanes_agree() {
    let mut rng = Rng(4);
    for &n in SIZES {
        let ks: Vec<u32> = rng.ints(n, 8).iter().map(|&k| k as u32).collect();
        let xs = rng.f32s(n, 0.0, 1.0);
        let is: Vec<i64> = rng.ints(n, 2000).iter().map(|&x| x as i64 - 1000).collect();
        // Integer reductions (any grouping gives the same) are exact.
        exact(|| {
            accelerate!(reduce(
                |a, b| (a.0 + b.0, a.1.max(b.1), a.2.min(b.2)),
                (0i64, i64::MIN, i64::MAX),
                map(|x| (x * x, x, x / 3), &is)
            ))
        }); // int tuple
            // k-means' per-cluster sums: a nested reduction per lane.
        let sums = |mode| {
            with_mode(mode, || {
                accelerate!(create(8, |c| reduce(
                    |a, b| (a.0 + b.0, a.1 + b.1),
                    (0.0f32, 0u32),
                    create(ks.len(), |i| if ks[i] == c as u32 {
                        (xs[i], 1)
                    } else {
                        (0.0, 0)
                    })
                )))
            })
        }; // cluster sums
        let (d, c) = (sums(Mode::Debug), sums(Mode::Cpu));
        for ((ds, dn), (cs, cn)) in d.iter().zip(&c) {
            assert_eq!(dn, cn);
            assert!((ds - cs).abs() <= 1e-4 * ds.abs().max(1.0), "{d:?} {c:?}");
        }
        // A float sum of a costly element: grouped differently, within rounding.
        let total = || {
            accelerate!(reduce(
                |a, b| a + b,
                0.0f32,
                map(|x| cnd(x * 4.0 - 2.0), &xs)
            ))
        }; // cnd sum
        let (d, c) = (with_mode(Mode::Debug, total), with_mode(Mode::Cpu, total));
        assert!((d - c).abs() <= 1e-4 * d.abs().max(1.0), "{d} {c}");
    }
    for marker in ["// int tuple", "// cluster sums", "// cnd sum"] {
        vectorized(marker);
    }
}

#[test]
fn parallel_loops_and_tensors_on_lanes_are_bit_identical() {
    for n in [0, 1, 3, 5, 9, 64, 1001] {
        let m = 7;
        let run = |mode| {
            with_mode(mode, || {
                let t = Tensor::<f64>::zeros(&[n, m]);
                let hits = Tensor::<u32>::zeros(&[n]);
                accelerate!(parallel_loop(n, |i| {
                    let mut s = 0.3 + i as f64 * 0.01;
                    for k in 0..m {
                        s = s * 0.9 + (k as f64).sqrt();
                        t.set([i, k], s);
                    }
                    if s > 2.5 {
                        hits.set([i], 1);
                    }
                })); // tensor loop
                (t.to_vec(), hits.to_vec())
            })
        };
        assert_eq!(
            format!("{:?}", run(Mode::Cpu)),
            format!("{:?}", run(Mode::Debug))
        );
        // Rows of a lane at a stride: gets and sets at `[i, a, b]`, under a mask, and
        // with a last coordinate that differs between lanes.
        let strided = |mode| {
            with_mode(mode, || {
                let u = Tensor::<i64>::zeros(&[n, 3, 4]);
                let w = Tensor::<i64>::zeros(&[n, 3]);
                accelerate!(parallel_loop(n, |i| {
                    for a in 0..3 {
                        for b in 0..4 {
                            u.set([i, a, b], (i * 12 + a * 4 + b) as i64 - 50);
                        }
                    }
                    let mut acc = 0i64;
                    for a in 0..3 {
                        if i % 3 != a {
                            acc += u.get([i, a, (i + a) % 4]) * 3 + u.get([i, a, 2]);
                        }
                        w.set([i, a], acc);
                    }
                })); // strided tensors
                (u.to_vec(), w.to_vec())
            })
        };
        assert_eq!(
            format!("{:?}", strided(Mode::Cpu)),
            format!("{:?}", strided(Mode::Debug))
        );
    }
    vectorized("// tensor loop");
    vectorized("// strided tensors");
}

#[test]
fn math_on_lanes_is_within_the_bound() {
    let mut rng = Rng(5);
    for &n in SIZES {
        let xs = rng.f32s(n, -20.0, 20.0);
        let ps = rng.f32s(n, 1.0, 100.0);
        let ds = rng.f64s(n, -50.0, 50.0);
        let checks_f32 = |got: &[f32], want: &[f32]| {
            for (g, w) in got.iter().zip(want) {
                assert!(ulp_distance_f32(*g, *w) <= MATH_ULPS, "{g:e} vs libm {w:e}");
            }
        };
        let checks_f64 = |got: &[f64], want: &[f64]| {
            for (g, w) in got.iter().zip(want) {
                assert!(ulp_distance_f64(*g, *w) <= MATH_ULPS, "{g:e} vs libm {w:e}");
            }
        };
        let f32_site = || {
            accelerate!(map2(
                |x, p| (
                    x.exp(),
                    p.ln(),
                    x.sin(),
                    x.cos(),
                    x.tanh(),
                    p.powf(x * 0.1),
                    p.log2(),
                    p.log10()
                ),
                &xs,
                &ps
            ))
        }; // f32 math
        let (d, c) = (
            with_mode(Mode::Debug, f32_site),
            with_mode(Mode::Cpu, f32_site),
        );
        for (a, b) in d.iter().zip(&c) {
            checks_f32(
                &[b.0, b.1, b.2, b.3, b.4, b.5, b.6, b.7],
                &[a.0, a.1, a.2, a.3, a.4, a.5, a.6, a.7],
            );
        }
        let f64_site = || {
            accelerate!(map(
                |x| (x.exp(), x.abs().ln(), x.sin(), x.cos(), x.tan(), x.tanh()),
                &ds
            ))
        }; // f64 math
        let (d, c) = (
            with_mode(Mode::Debug, f64_site),
            with_mode(Mode::Cpu, f64_site),
        );
        for (a, b) in d.iter().zip(&c) {
            checks_f64(
                &[b.0, b.1, b.2, b.3, b.4, b.5],
                &[a.0, a.1, a.2, a.3, a.4, a.5],
            );
        }
        // Exact functions and those left to libm lane by lane: bit-identical.
        exact(|| {
            accelerate!(map(
                |x| (
                    (
                        x.sqrt(),
                        x.abs(),
                        x.floor(),
                        x.ceil(),
                        x.min(1.0),
                        x.max(-1.0)
                    ),
                    (
                        x.signum(),
                        x.powi(3),
                        x.mul_add(2.0, 1.0),
                        x.atan2(2.0),
                        x.round()
                    )
                ),
                &ds
            ))
        }); // exact math
        let bs = || {
            accelerate!(create(ps.len(), |i| black_scholes(
                ps[i],
                50.0,
                (xs[i].abs() + 0.1) * 0.2
            )))
        }; // black-scholes
        let (d, c) = (with_mode(Mode::Debug, bs), with_mode(Mode::Cpu, bs));
        for (a, b) in d.iter().zip(&c) {
            // Errors of exp and ln pass through a few operations: relative 1e-5.
            for (x, y) in [(a.0, b.0), (a.1, b.1)] {
                assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{d:?}\n{c:?}");
            }
        }
    }
    for marker in [
        "// f32 math",
        "// f64 math",
        "// exact math",
        "// black-scholes",
    ] {
        vectorized(marker);
    }
}

#[test]
fn failures_on_lanes_name_the_first_failing_index() {
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let idx: Vec<usize> = vec![0, 1, 2, 3, 4, 5, 6, 13, 8, 9];
    let site = || accelerate!(map(|i| xs[i] * 2.0, &idx)); // gather fails
    let message = panic_message(|| {
        with_mode(Mode::Cpu, site);
    });
    assert!(
        message.contains(&site_of("simd.rs", SOURCE, "// gather fails"))
            && message.contains("13")
            && message.contains("10"),
        "{message}"
    );
    let ds: Vec<i32> = vec![5, 4, 3, 2, 1, 0, 1, 2];
    let div = || accelerate!(map(|d| 100 / d, &ds)); // division fails
    let message = panic_message(|| {
        with_mode(Mode::Cpu, div);
    });
    assert!(message.contains("zero"), "{message}");
    // A lane that does not run never fails: the division is guarded per lane.
    exact(|| accelerate!(map(|d| if d != 0 { 100 / d } else { -1 }, &ds))); // guarded
    vectorized("// guarded");
}

#[test]
fn exact_math_is_bit_identical_to_debug_mode() {
    let (ok, out, err) = run_child("child_exact_math", &[("ACCEL_EXACT_MATH", "1")]);
    assert!(ok, "{out}\n{err}");
}

#[test]
#[ignore = "run in a child process by `exact_math_is_bit_identical_to_debug_mode`"]
fn child_exact_math() {
    let mut rng = Rng(6);
    for &n in SIZES {
        let xs = rng.f32s(n, -20.0, 20.0);
        let ds = rng.f64s(n, -50.0, 50.0);
        exact(|| {
            accelerate!(map(
                |x| (
                    x.exp(),
                    x.abs().ln(),
                    x.sin(),
                    x.cos(),
                    x.tan(),
                    x.tanh(),
                    x.abs().powf(0.7)
                ),
                &xs
            ))
        });
        exact(|| {
            accelerate!(map(
                |x| (
                    x.exp(),
                    x.abs().ln(),
                    x.sin(),
                    x.cos(),
                    x.tan(),
                    x.tanh(),
                    x.abs().log10()
                ),
                &ds
            ))
        });
        exact(|| {
            accelerate!(create(xs.len(), |i| black_scholes(
                xs[i].abs() + 1.0,
                10.0,
                0.5
            )))
        });
    }
}

/// The site compared with and without SIMD lanes.
fn simd_or_not(xs: &[f32], ks: &[u64]) -> (Vec<f32>, Vec<u32>) {
    let a = with_mode(Mode::Cpu, || accelerate!(map(|x| cnd(x) + x.exp(), xs))); // simd off
    let side = 40;
    let b = with_mode(Mode::Cpu, || {
        accelerate!(create(side * side, |k| escape_time(
            k + ks[k % ks.len()] as usize,
            side,
            side
        )))
    });
    (a, b)
}

fn simd_inputs() -> (Vec<f32>, Vec<u64>) {
    let mut rng = Rng(7);
    (rng.f32s(1001, -4.0, 4.0), rng.ints(13, 50))
}

#[test]
fn scalar_kernels_give_what_lanes_give() {
    // ACCEL_SIMD=0 compiles scalar kernels only: the same results, bit for bit, as the
    // SIMD kernels of this process.
    let (xs, ks) = simd_inputs();
    let lanes = simd_or_not(&xs, &ks);
    vectorized("// simd off");
    let (ok, out, err) = run_child("child_simd_off", &[("ACCEL_SIMD", "0")]);
    assert!(ok, "{out}\n{err}");
    let scalar = out
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
        .expect("the child prints its result");
    assert_eq!(scalar, format!("{lanes:?}"));
}

#[test]
#[ignore = "run in a child process by `scalar_kernels_give_what_lanes_give`"]
fn child_simd_off() {
    let (xs, ks) = simd_inputs();
    let got = simd_or_not(&xs, &ks);
    let site = site_of("simd.rs", SOURCE, "// simd off");
    assert_eq!(cpu_simd_loops(&site), Some(0));
    println!("RESULT {got:?}");
}

#[test]
#[allow(clippy::needless_range_loop)] // accelerated code indexes
fn sequences_per_lane_are_bit_identical() {
    let mut rng = Rng(9);
    for &n in SIZES {
        for width in [1usize, 3, 4, 9] {
            let rows: Vec<Vec<u64>> = (0..n).map(|_| rng.ints(width, 1000)).collect();
            let frows: Vec<Vec<f64>> = (0..n).map(|_| rng.f64s(width, -5.0, 5.0)).collect();
            // A row per lane: its length, its ends, an element at an index per lane.
            exact(|| {
                accelerate!(map(
                    |row| row.len() as u64 * 10_000
                        + row[0] * 100
                        + row[(row[0] as usize) % row.len()],
                    &rows
                ))
            }); // row per lane
                // A nested `create` per lane, read back, and reduced (integers: any grouping).
            exact(|| {
                accelerate!(map(
                    |row| {
                        let doubled = create(row.len(), |j| row[j] * 2 + j as u64);
                        reduce(|a, b| a + b, 0, &doubled) + doubled[row.len() - 1]
                    },
                    &rows
                ))
            }); // create per lane
                // Viterbi's shape: a sequence per lane replaced each step, maxima of floats
                // (exact in any order).
            exact(|| {
                accelerate!(map(
                    |row| {
                        let mut best = create(row.len(), |j| row[j]);
                        for t in 1..4 {
                            best = create(row.len(), |j| {
                                let mut m = f64::NEG_INFINITY;
                                for i in 0..row.len() {
                                    m = m.max(best[i] - (i as f64 - j as f64).abs() * t as f64);
                                }
                                m + row[j]
                            });
                        }
                        reduce(|a, b| a.max(b), f64::NEG_INFINITY, &best)
                    },
                    &frows
                ))
            }); // viterbi shape
        }
    }
    for marker in ["// row per lane", "// create per lane", "// viterbi shape"] {
        vectorized(marker);
    }
    // An index past a lane's row fails naming it, as scalar code would.
    let rows: Vec<Vec<u64>> = (0..9).map(|r| vec![r; 3]).collect();
    let ks: Vec<usize> = vec![0, 1, 2, 0, 1, 7, 2, 0, 1];
    let site = || accelerate!(map2(|row, k| row[k], &rows, &ks)); // row index fails
    let message = panic_message(|| {
        with_mode(Mode::Cpu, site);
    });
    assert!(
        message.contains(&site_of("simd.rs", SOURCE, "// row index fails"))
            && message.contains("the len is 3 but the index is 7"),
        "{message}"
    );
}

#[test]
fn a_condition_on_the_index_and_a_shorter_sequence_split_the_range_exactly() {
    // `i < k` holds in every lane of the gangs below `k`, in none above, in some of one;
    // `y` is `k` long and read only where `i < k`, so the launch's last indices run as
    // scalar code after the gangs (Durbin's step, a padded copy).
    let mut rng = Rng(9);
    for &k in SIZES {
        let y = rng.f64s(k, -1.0, 1.0);
        let alpha = 0.375f64;
        let got = exact(|| {
            accelerate!(create(k + 1, |i| if i < k {
                y[i] + alpha * y[k - i - 1] // padded
            } else {
                alpha
            }))
        });
        let mut want: Vec<f64> = (0..k).map(|i| y[i] + alpha * y[k - i - 1]).collect();
        want.push(alpha);
        assert_eq!(got, want, "k = {k}");
        for cut in [0, k / 3, k] {
            exact(|| accelerate!(create(k, |i| if i >= cut { y[i] * 2.0 } else { -y[i] })));
        }
    }
    vectorized("// padded");
    // Read past the end with no guard: the first index past it fails, as in Rust.
    let xs: Vec<f32> = vec![2.0; 100];
    let message = panic_message(|| {
        with_mode(Mode::Cpu, || accelerate!(create(133, |i| xs[i] + 1.0)));
    });
    assert!(
        message.contains("the len is 100 but the index is 100"),
        "{message}"
    );
}
