//! The CPU backend against debug mode (the reference semantics): every operation over
//! random inputs, empty, one-element and odd sizes included; how compiled code reports a
//! failure; and which constructs it does not compile yet.

use accel_runtime::prelude::*;
use proptest::collection::vec;
use proptest::prelude::*;

mod common;

use common::{agree, agree_scaled, panic_message};

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Particle {
    pos: [f64; 2],
    mass: f64,
}

/// Field names that the derive's generated code once used for its own locals (a record
/// with a field `k` did not compile: found by accel-fuzz).
#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Shadowing {
    k: u32,
    len: i64,
    u: f32,
    out: bool,
}

#[test]
fn records_whose_fields_are_named_like_the_derives_locals() {
    let xs: Vec<Shadowing> = (0..100)
        .map(|i| Shadowing {
            k: i,
            len: -(i as i64),
            u: i as f32 * 0.5,
            out: i % 3 == 0,
        })
        .collect();
    let got = agree(|| {
        accelerate!(map(
            |s| Shadowing {
                k: s.k + 1,
                len: s.len * 2,
                u: s.u,
                out: !s.out
            },
            &xs
        ))
    });
    assert_eq!(
        got[7],
        Shadowing {
            k: 8,
            len: -14,
            u: 3.5,
            out: true
        }
    );
    assert_eq!(
        agree(|| accelerate!(reduce(|a, b| a + b, 0, map(|s| s.k as u64, &xs)))),
        4950
    );
}

#[accel]
fn kinetic(p: Particle, v: f64) -> f64 {
    0.5 * p.mass * v * v
}

#[accel]
fn collatz(n: u64) -> u32 {
    let mut n = n;
    let mut steps = 0;
    while n > 1 {
        n = if n.is_multiple_of(2) {
            n / 2
        } else {
            3 * n + 1
        };
        steps += 1;
    }
    steps
}

fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1),
        Just(2),
        Just(3),
        Just(255),
        Just(257),
        Just(1023),
        0usize..5000
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn reduce_and_scan_of_integers(xs in sizes().prop_flat_map(|n| vec(-1_000_000i64..1_000_000, n))) {
        agree(|| accelerate!(reduce(|a, b| a + b, 0, &xs)));
        agree(|| accelerate!(reduce(|a, b| a.max(b), i64::MIN, &xs)));
        agree(|| accelerate!(scan(|a, b| a + b, 0, &xs)));
        agree(|| accelerate!(reduce(|a, b| a + b, 0, map(|x| x * x % 1000, &xs))));
    }

    #[test]
    fn map_map2_and_float_reductions(xs in sizes().prop_flat_map(|n| vec(-1e3f32..1e3, n))) {
        let c = 1.5f32;
        let ys: Vec<f32> = agree(|| accelerate!(map(|x| c * x + 1.0, &xs)));
        agree(|| accelerate!(map2(|a, b| a * b - a, &xs, &ys)));
        let total: f32 = xs.iter().zip(&ys).map(|(a, b)| (a * b).abs()).sum();
        agree_scaled(|| accelerate!(reduce(|a, b| a + b, 0.0, map2(|a, b| a * b, &xs, &ys))), Some(&total));
        let magnitudes: Vec<f32> = xs.iter().scan(0.0, |s, x| { *s += x.abs(); Some(*s) }).collect();
        agree_scaled(|| accelerate!(scan(|a, b| a + b, 0.0, &xs)), Some(&magnitudes));
        agree(|| accelerate!(reduce(|a, b| a.min(b), f32::INFINITY, &xs)));
    }

    #[test]
    fn create_flatten_and_nested_reductions(n in 0usize..300, m in 1usize..9) {
        let rows: Vec<Vec<i32>> = (0..n).map(|i| (0..m).map(|j| (i * 7 + j) as i32).collect()).collect();
        agree(|| accelerate!(flatten(&rows)));
        agree(|| accelerate!(map(|row| reduce(|a, b| a + b, 0, row), &rows)));
        agree(|| accelerate!(create(n, |i| (i as f64).sqrt() * 2.0)));
        agree(|| accelerate!(create(n * m, |k| rows[k / m][k % m] - 1)));
    }

    #[test]
    fn records_tuples_loops_and_matches(n in 0usize..2000) {
        let ps: Vec<Particle> = (0..n).map(|i| Particle { pos: [i as f64, -(i as f64)], mass: 1.0 + (i % 5) as f64 }).collect();
        agree(|| accelerate!(map(|p| kinetic(p, p.pos[0] * 0.01), &ps)));
        agree(|| accelerate!(map(|p| Particle { pos: [p.pos[1], p.pos[0]], mass: p.mass * 2.0 }, &ps)));
        agree(|| accelerate!(reduce(|a, b| if a.1 >= b.1 { a } else { b }, (0usize, f64::MIN), create(ps.len(), |i| (i, ps[i].mass)))));
        let ns: Vec<u64> = (1..=n as u64).collect();
        agree(|| accelerate!(map(collatz, &ns)));
        agree(|| accelerate!(map(|x| match x % 4 { 0 => 10, 1 | 2 => 20, _ => 30 }, &ns)));
    }

    #[test]
    fn filters_and_histograms(xs in sizes().prop_flat_map(|n| vec(-1_000i64..1_000, n)), m in 1usize..600, keep in 1i64..5) {
        agree(|| accelerate!(filter(|x| x % keep == 0, &xs)));
        agree(|| accelerate!(filter(|x| x > 0, map(|x| x * 3 - 1, &xs))));
        agree(|| accelerate!(reduce(|a, b| a + b, 0, filter(|x| x % keep == 0, &xs))));
        // Indices past the bins (up to m + m / 4) are skipped.
        let bins: Vec<usize> = xs.iter().map(|x| x.unsigned_abs() as usize * 7 % (m + m / 4 + 1)).collect();
        agree(|| accelerate!(reduce_by_index(vec![0i64; m], |a, b| a + b, 0, &bins, &xs)));
        agree(|| accelerate!(reduce_by_index(vec![i64::MAX; m], |a, b| a.min(b), i64::MAX, &bins, &xs)));
        agree(|| accelerate!(reduce_by_index(
            vec![(0i64, 0u32); m],
            |a: (i64, u32), b: (i64, u32)| if a.0 > b.0 || (a.0 == b.0 && a.1 > b.1) { a } else { b },
            (i64::MIN, 0),
            &bins,
            map(|x| (x, (x & 15) as u32), &xs)
        )));
    }

    #[test]
    fn scatters(perm in sizes().prop_flat_map(|n| Just((0..n).collect::<Vec<usize>>()).prop_shuffle()), past in 0usize..3) {
        let n = perm.len();
        // Some positions point past the destination (skipped), all distinct.
        let is: Vec<usize> = perm.iter().map(|&p| if p % 5 == 4 { n + p * past } else { p }).collect();
        let vs: Vec<i32> = (0..n as i32).map(|v| v * 3 - 7).collect();
        agree(|| accelerate!(scatter(vec![-1i32; n], &is, &vs)));
        agree(|| accelerate!(scatter(vec![(0i32, 0.5f64); n], &is, map(|v| (v, v as f64 * 0.25), &vs))));
    }

    #[test]
    fn parallel_loops_over_tensors(n in 0usize..3000) {
        let run = |mode| {
            let src = Tensor::from_vec((0..n as i64).collect(), &[n]);
            let dst = Tensor::<i64>::zeros(&[n]);
            with_mode(mode, || accelerate!(parallel_loop(n, |i| dst.set([i], src.get([i]) * 2 + 1))));
            dst.to_vec()
        };
        prop_assert_eq!(run(Mode::Cpu), run(Mode::Debug));
    }
}

#[test]
fn simd_kernels_agree_at_every_length() {
    // Lengths around the vector width and the two-accumulator unroll, and chunk sizes.
    for n in (0usize..40).chain([255, 256, 257, 4095, 4097, 70_001]) {
        let f: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 0.25 - 2.0).collect();
        let d: Vec<f64> = (0..n).map(|i| (i % 13) as f64 * 0.5 - 3.0).collect();
        let w: Vec<i32> = (0..n).map(|i| ((i * 7919) % 1001) as i32 - 500).collect();
        let u: Vec<u32> = (0..n).map(|i| ((i * 104_729) % 997) as u32).collect();
        let l: Vec<i64> = (0..n).map(|i| i as i64 * 3 - 7).collect();
        let k = 0.5f32;
        agree(|| accelerate!(reduce(|a, b| a + b, 0.0, &f)));
        agree(|| accelerate!(reduce(|a, b| a + b, 0.0, map2(|x, y| x * y - k, &f, &f))));
        agree(|| accelerate!(reduce(|a, b| a + b, 0.0, map(|x| (x * x).sqrt() / 2.0, &d))));
        agree(|| accelerate!(reduce(|a, b| a * b, 1.0, map(|x| 1.0 + x * 1e-3, &d))));
        agree(|| accelerate!(reduce(|a, b| a.max(b), i32::MIN, &w)));
        agree(|| accelerate!(reduce(|a, b| b.min(a), u32::MAX, &u)));
        agree(|| accelerate!(reduce(|a, b| a + b, 0, map(|x| -x, &l))));
        // Element-wise producers on vector lanes (SAXPY-like), and their scalar remainders.
        agree(|| accelerate!(map2(|x, y| k * x + y, &f, &f)));
        agree(|| accelerate!(map(|x| x * 2 - 1, &w)));
        agree(|| accelerate!(map(|x| (x * x + 1.0).sqrt(), &d)));
    }
}

#[test]
fn reductions_side_by_side_give_the_sequential_results() {
    let xs: Vec<f64> = (0..10_001)
        .map(|i| ((i * 37) % 1000) as f64 - 500.0)
        .collect();
    let (sum, max) = agree(|| {
        accelerate!((
            reduce(|a, b| a + b, 0.0, &xs),
            reduce(|a, b| a.max(b), f64::MIN, &xs)
        ))
    });
    assert_eq!(max, 499.0);
    assert!((sum - xs.iter().sum::<f64>()).abs() < 1e-6);
    let (mean, var) = agree(|| {
        accelerate!({
            let s = reduce(|a, b| a + b, 0.0, map(|x| x, &xs));
            let q = reduce(|a, b| a + b, 0.0, map(|x| x * x, &xs));
            let n = xs.len() as f64;
            (s / n, q / n - (s / n) * (s / n))
        })
    });
    assert!(mean.abs() < 1.0 && var > 0.0);
}

#[test]
fn aliasing_views_share_one_buffer_in_compiled_code() {
    let t = Tensor::<i64>::zeros(&[6]);
    let (a, b) = (t.sub(1, 2), t.sub(4, 2));
    with_mode(Mode::Cpu, || {
        accelerate!(parallel_loop(1, |i| {
            a.set([i], 7);
            b.set([i + 1], 2);
        }))
    });
    assert_eq!(t.to_vec(), vec![0, 7, 0, 0, 0, 2]);
    let m = Tensor::<f32>::zeros(&[64, 64]);
    with_mode(Mode::Cpu, || {
        accelerate!(parallel_loop(64 * 64, |k| m.set([k / 64, k % 64], (k % 64) as f32)))
    });
    assert_eq!(m.get([63, 5]), 5.0);
}

/// Tensor accesses in a `for` loop are checked once before it (the rank, the loop's range
/// against its coordinate's dimension, the other coordinates); a loop that would go out of
/// bounds runs the checked copy and fails at the access.
#[test]
fn tensor_accesses_in_loops_are_checked_once_and_still_fail_clearly() {
    let rows = 5usize;
    for cols in [0usize, 1, 7, 16] {
        let src = Tensor::from_vec((0..(rows * cols) as i64).collect(), &[rows, cols]);
        let expected: Vec<i64> = (0..rows)
            .map(|r| {
                (0..cols)
                    .map(|c| (r * cols + c) as i64 * (c as i64 + 1))
                    .sum()
            })
            .collect();
        let run = |mode| {
            let dst = Tensor::<i64>::zeros(&[rows]);
            with_mode(mode, || {
                accelerate!(parallel_loop(rows, |r| {
                    let mut total = 0i64;
                    for c in 0..cols {
                        total += src.get([r, c]) * (c as i64 + 1);
                    }
                    dst.set([r], total)
                }))
            });
            dst.to_vec()
        };
        assert_eq!(run(Mode::Debug), expected);
        assert_eq!(run(Mode::Cpu), expected);
    }
    // One column too many: the loop's range does not fit, so each access is checked.
    let t = Tensor::<i32>::zeros(&[3, 4]);
    let out = Tensor::<i32>::zeros(&[3]);
    let msg = panic_message(|| {
        with_mode(Mode::Cpu, || {
            accelerate!(parallel_loop(3, |r| {
                let mut s = 0;
                for c in 0..5 {
                    s += t.get([r, c]);
                }
                out.set([r], s)
            }))
        })
    });
    assert!(
        msg.ends_with("index out of bounds: the len is 4 but the index is 4"),
        "{msg}"
    );
    // A wrong rank is still reported, from the checked copy.
    let msg = panic_message(|| {
        with_mode(Mode::Cpu, || {
            accelerate!(parallel_loop(1, |r| {
                for c in 0..2 {
                    out.set([r, c], 1);
                }
            }))
        })
    });
    assert!(
        msg.ends_with("a tensor index has 2 coordinates, but the tensor has rank 1"),
        "{msg}"
    );
}

/// Loads at indices affine in a loop's variable (`xs[s * stride + offset]`, in nested
/// reductions and `for` loops) are checked once before the loop; out of bounds, or with an
/// index that would wrap, the checked copy runs and fails at the access.
#[test]
#[allow(clippy::needless_range_loop)] // accelerated code indexes; it has no iterators
fn strided_loads_are_checked_once_and_still_fail_clearly() {
    let (rows, cols) = (37usize, 5usize);
    let m: Vec<i64> = (0..(rows * cols) as i64).collect();
    let column_sums: Vec<i64> = (0..cols)
        .map(|c| (0..rows).map(|r| m[r * cols + c]).sum())
        .collect();
    let got = agree(|| {
        accelerate!(create(cols, |c| reduce(
            |a, b| a + b,
            0,
            create(rows, |r| m[r * cols + c])
        )))
    });
    assert_eq!(got, column_sums);
    let got = agree(|| {
        accelerate!(create(cols, |c| {
            let mut t = 0i64;
            for r in 0..rows {
                t += m[c + cols * r];
            }
            t
        }))
    });
    assert_eq!(got, column_sums);
    // One row too many: the whole loop does not fit, each load is checked.
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(create(cols, |c| reduce(
                |a, b| a + b,
                0,
                create(rows + 1, |r| m[r * cols + c])
            )))
        }))
    });
    assert!(
        msg.ends_with(&format!(
            "index out of bounds: the len is {} but the index is {}",
            rows * cols,
            rows * cols
        )),
        "{msg}"
    );
    // A stride whose product wraps around: not proven, checked, fails.
    let huge = usize::MAX / 2 + 1;
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(create(1, |_| {
                let mut t = 0i64;
                for r in 0..3 {
                    t += m[r * huge];
                }
                t
            }))
        }))
    });
    assert!(msg.contains("index out of bounds"), "{msg}");
    // An empty loop with an offset beyond the end touches nothing.
    let (far, none) = (1000usize, 0usize);
    let got = with_mode(Mode::Cpu, || {
        accelerate!(create(2, |c| reduce(
            |a, b| a + b,
            0,
            create(none + c - c, |r| m[r * 2 + far])
        )))
    });
    assert_eq!(got, vec![0, 0]);
}

/// An `if` that only assigns (`if d < best { best = d; arg = c; }`) runs as selects: ties
/// keep the first, NaNs never win, and assignments see the ones before them.
#[test]
#[allow(clippy::needless_range_loop)] // accelerated code indexes; it has no iterators
#[allow(clippy::almost_swapped)] // `a = b; b = a;` in order is what is under test
fn assignment_only_ifs_keep_their_meaning_as_selects() {
    let ds = vec![3.0f32, 1.0, f32::NAN, 1.0, 0.5, 0.5, 9.0];
    let reference = |ds: &[f32]| {
        let (mut best, mut arg) = (f32::INFINITY, usize::MAX);
        for (c, &d) in ds.iter().enumerate() {
            if d < best {
                best = d;
                arg = c;
            }
        }
        (best, arg)
    };
    let got = with_mode(Mode::Cpu, || {
        accelerate!(create(ds.len(), |n| {
            let mut best = f32::INFINITY;
            let mut arg = usize::MAX;
            for c in 0..n + 1 {
                if ds[c] < best {
                    best = ds[c];
                    arg = c;
                }
            }
            (best, arg)
        }))
    });
    let want: Vec<(f32, usize)> = (0..ds.len()).map(|n| reference(&ds[..=n])).collect();
    assert_eq!(got, want);
    // Later assignments read earlier ones; a false condition changes nothing.
    let flags = vec![true, false, true];
    let got = with_mode(Mode::Cpu, || {
        accelerate!(create(flags.len(), |k| {
            let (mut a, mut b) = (1i64, 2i64);
            let f = flags[k];
            if f {
                a = b;
                b = a;
            }
            let m = a * 10;
            if f {
                b = m;
            }
            (a, b)
        }))
    });
    assert_eq!(got, vec![(2, 20), (1, 2), (2, 20)]);
}

/// Float `min`/`max` follow Rust: a NaN operand yields the other one, on either side.
#[test]
#[allow(clippy::needless_range_loop)] // accelerated code indexes; it has no iterators
fn float_min_and_max_follow_rust_with_nans() {
    let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -1.5, 2.25];
    let pairs: Vec<(f64, f64)> = special
        .iter()
        .flat_map(|&a| special.iter().map(move |&b| (a, b)))
        .collect();
    let bits = |v: Vec<(f64, f64)>| -> Vec<(u64, u64)> {
        v.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()
    };
    let want: Vec<(f64, f64)> = pairs.iter().map(|&(a, b)| (a.max(b), a.min(b))).collect();
    let got = with_mode(Mode::Cpu, || {
        accelerate!(map(|p: (f64, f64)| (p.0.max(p.1), p.0.min(p.1)), &pairs))
    });
    assert_eq!(bits(got), bits(want));
    let singles: Vec<(f32, f32)> = pairs.iter().map(|&(a, b)| (a as f32, b as f32)).collect();
    let want: Vec<(f32, f32)> = singles.iter().map(|&(a, b)| (a.max(b), a.min(b))).collect();
    let got = with_mode(Mode::Cpu, || {
        accelerate!(map(|p: (f32, f32)| (p.0.max(p.1), p.0.min(p.1)), &singles))
    });
    let bits32 = |v: Vec<(f32, f32)>| -> Vec<(u32, u32)> {
        v.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()
    };
    assert_eq!(bits32(got), bits32(want));
    // A running maximum from NaN.
    let xs = vec![1.0f64, -3.0, 7.5, f64::NAN, 2.0];
    let got = with_mode(Mode::Cpu, || {
        accelerate!(create(1, |_| {
            let mut best = f64::NAN;
            for i in 0..xs.len() {
                best = best.max(xs[i]);
            }
            best
        }))
    });
    assert_eq!(got, vec![7.5]);
}

/// Captured integers named like constants are compiled in (`x / D` by a power of two
/// becomes a shift); a value that changes gets code of its own, up to a few versions, then
/// the generic code; results are right every time.
#[test]
#[allow(non_snake_case)] // a local named like a constant is what is under test
fn captures_named_like_constants_are_compiled_in() {
    const D: usize = 8;
    let xs: Vec<usize> = (0..100).collect();
    let got = with_mode(Mode::Cpu, || accelerate!(map(|x| (x / D, x % D), &xs)));
    let want: Vec<(usize, usize)> = xs.iter().map(|&x| (x / D, x % D)).collect();
    assert_eq!(got, want);
    let signed: Vec<i32> = (-50..50).collect();
    for N in [1i32, 2, 3, 4, 7, 16, 64, 100, -4] {
        let got = with_mode(Mode::Cpu, || accelerate!(map(|x| x / N + x % N, &signed)));
        let want: Vec<i32> = signed.iter().map(|&x| x / N + x % N).collect();
        assert_eq!(got, want, "N = {N}");
    }
    for M in [1u64, 2, 3, 1 << 40, 6, 1024] {
        let us: Vec<u64> = (0..200).map(|x| x * 977).collect();
        let got = with_mode(Mode::Cpu, || accelerate!(map(|x| x / M * 3 + x % M, &us)));
        let want: Vec<u64> = us.iter().map(|&x| x / M * 3 + x % M).collect();
        assert_eq!(got, want, "M = {M}");
    }
    // Division by a zero constant still fails clearly.
    let Z = 0usize;
    let msg = panic_message(|| drop(with_mode(Mode::Cpu, || accelerate!(map(|x| x / Z, &xs)))));
    assert!(msg.ends_with("attempt to divide by zero"), "{msg}");
}

#[test]
fn failures_in_compiled_code_name_the_site_and_never_crash() {
    let xs = vec![1, 2, 3];
    let msg = panic_message(|| drop(with_mode(Mode::Cpu, || accelerate!(create(4, |i| xs[i])))));
    assert!(
        msg.ends_with("index out of bounds: the len is 3 but the index is 3"),
        "{msg}"
    );
    assert!(
        msg.starts_with("accelerate! at accel-runtime/tests/cpu_backend.rs:"),
        "{msg}"
    );
    let zs = vec![1i32, 0, 2];
    let msg = panic_message(|| drop(with_mode(Mode::Cpu, || accelerate!(map(|z| 10 / z, &zs)))));
    assert!(msg.ends_with("attempt to divide by zero"), "{msg}");
    let t = Tensor::<i32>::zeros(&[2, 2]);
    let msg = panic_message(|| {
        with_mode(Mode::Cpu, || {
            accelerate!(parallel_loop(3, |i| t.set([i, 0], 1)))
        })
    });
    assert!(
        msg.ends_with("index out of bounds: the len is 2 but the index is 2"),
        "{msg}"
    );
    let (a, b) = (vec![1.0f32; 3], vec![1.0f32; 2]);
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(map2(|x, y| x + y, &a, &b))
        }))
    });
    assert!(msg.ends_with("map2 lengths differ: 3 vs 2"), "{msg}");
    let (bins, values) = (vec![0usize, 1, 2], vec![1i64; 2]);
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(reduce_by_index(
                vec![0i64; 4],
                |x, y| x + y,
                0,
                &bins,
                &values
            ))
        }))
    });
    assert!(
        msg.ends_with("reduce_by_index lengths differ: 3 indices vs 2 values"),
        "{msg}"
    );
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(scatter(vec![0i64; 4], &bins, &values))
        }))
    });
    assert!(
        msg.ends_with("scatter lengths differ: 3 indices vs 2 values"),
        "{msg}"
    );
    // Float-to-integer casts saturate, as Rust's `as` does.
    let fs = vec![f32::NAN, 1e20, -1e20, 2.7];
    assert_eq!(
        with_mode(Mode::Cpu, || accelerate!(map(|f| f as i32, &fs))),
        vec![0, i32::MAX, i32::MIN, 2]
    );
}

const FACTOR: i64 = 3;

#[accel]
fn scaled(x: i64) -> i64 {
    x * FACTOR
}

/// What the cpu backend does not compile yet: an explicit `ACCEL_MODE=cpu` says so, naming
/// the site and the construct; the default mode runs these sequentially instead.
#[test]
fn nested_results_are_packed_and_must_be_regular() {
    let rows: Vec<Vec<f32>> = (0..300).map(|i| vec![i as f32, 1.0, -2.0]).collect();
    agree(|| accelerate!(map(|row| map(|x| x * 2.0, row), &rows)));
    agree(|| accelerate!(create(257, |i| vec![i, i + 1])));
    agree(|| accelerate!(create(100, |i| create(3, |j| (i as f64, j as i32)))));
    agree(|| accelerate!(scan(|a, b| map2(|x, y| x + y, a, b), vec![0.0; 3], &rows)));
    let empty: Vec<Vec<f32>> = vec![];
    agree(|| accelerate!(map(|row| map(|x| x + 1.0, row), &empty)));
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(create(3, |i| create(i, |j| j)))
        }))
    });
    assert!(
        msg.ends_with(
            "a produced sequence of sequences is irregular: row 0 has 0 elements, another row 1"
        ),
        "{msg}"
    );
}

#[test]
fn constants_named_in_accel_functions_are_marshaled() {
    let xs: Vec<i64> = (0..1000).collect();
    let ys = agree(|| accelerate!(map(scaled, &xs)));
    assert_eq!(ys[999], 2997);
    let p = describe!(map(scaled, &xs)).program().unwrap();
    assert_eq!(p.site.captures, vec!["xs", "cpu_backend::scaled::FACTOR"]);
}

#[test]
fn constructs_the_cpu_backend_does_not_compile_yet() {
    let unsupported = |f: &dyn Fn()| panic_message(|| with_mode(Mode::Cpu, f));
    let n = 3usize;
    let msg = unsupported(&|| {
        drop(accelerate!(create(n, |i| create(2, |j| create(2, |k| i
            + j
            + k)))))
    });
    assert!(msg.contains("the cpu backend cannot compile sequences nested three or more levels deep as results yet (ACCEL_MODE=cpu)"), "{msg}");
    // Unset mode: the same site runs, sequentially.
    assert_eq!(
        accelerate!(create(n, |i| create(2, |j| i + j))),
        vec![vec![0, 1], vec![1, 2], vec![2, 3]]
    );
}

/// Dot products inside an element (`a[r * m + j] * v[j]`) run on SIMD vectors when every
/// load is in bounds for the whole loop (checked once before it), and fall back to the
/// checked loop otherwise, which reports the first bad index.
#[test]
fn nested_dot_products_vectorize_and_keep_their_bounds_checks() {
    for m in 0..20usize {
        for rows in [1usize, 3] {
            let a: Vec<f32> = (0..rows * m).map(|k| (k % 7) as f32 - 3.0).collect();
            let v: Vec<f32> = (0..m).map(|k| k as f32 * 0.5).collect();
            let f = agree(|| {
                accelerate!(create(rows, |r| reduce(
                    |x, y| x + y,
                    0.0,
                    create(m, |j| a[r * m + j] * v[j])
                )))
            });
            let expected: Vec<f32> = (0..rows)
                .map(|r| (0..m).map(|j| a[r * m + j] * v[j]).sum())
                .collect();
            assert_eq!(f, expected, "m = {m}");
            let ai: Vec<i64> = (0..rows * m).map(|k| k as i64 - 5).collect();
            agree(|| {
                accelerate!(create(rows, |r| reduce(
                    |x, y| x + y,
                    0i64,
                    create(m, |j| ai[r * m + j] * 3)
                )))
            });
        }
    }
    let a = vec![1.0f32; 10];
    let v = vec![1.0f32; 4];
    let msg = panic_message(|| {
        drop(with_mode(Mode::Cpu, || {
            accelerate!(create(3, |r| reduce(
                |x, y| x + y,
                0.0,
                create(4, |j| a[r * 4 + j] * v[j])
            )))
        }))
    });
    assert!(
        msg.ends_with("index out of bounds: the len is 10 but the index is 10"),
        "{msg}"
    );
}

/// A record no site captures or returns: sites and functions only build and read it.
#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Span {
    lo: i64,
    hi: i64,
}

#[accel]
fn width(s: Span) -> i64 {
    s.hi - s.lo
}

#[accel]
fn around(x: i64) -> i64 {
    let s = Span {
        lo: x - 1,
        hi: x + 2,
    };
    width(s) * x
}

#[test]
fn records_built_and_read_inside_accelerated_code_only() {
    let xs: Vec<i64> = (0..40).collect();
    // Built in the site, passed to a function.
    assert_eq!(
        agree(|| accelerate!(map(|x| width(Span { lo: x, hi: x * x }), &xs)))[..4],
        [0, 0, 2, 6]
    );
    // Built and read in a function only.
    assert_eq!(
        agree(|| accelerate!(reduce(|a, b| a + b, 0, map(around, &xs)))),
        3 * (0..40).sum::<i64>()
    );
    // Named in a closure's parameters, in a reduction (the widest, then the highest `lo`).
    let widest = agree(|| {
        accelerate!(reduce(
            |a: Span, b: Span| {
                let (wa, wb) = (width(a), width(b));
                if wb > wa || (wb == wa && b.lo > a.lo) {
                    b
                } else {
                    a
                }
            },
            Span { lo: 0, hi: 0 },
            map(|x| Span { lo: x % 7, hi: x }, &xs)
        ))
    });
    assert_eq!(widest, Span { lo: 4, hi: 39 });
    // Taken apart by a pattern.
    let lo = widest.lo;
    assert_eq!(
        agree(|| accelerate!(map(
            |x| {
                let Span { lo: a, hi: b } = Span { lo, hi: x };
                b - a
            },
            &xs
        )))[39],
        35
    );
}
