//! Debug mode checks every assumption the compiler cannot, and names the site that broke
//! it. Each test asserts the message; the `no_false_alarm` tests run correct programs,
//! floating-point reductions over large inputs included.

use accel_runtime::prelude::*;

fn debug<R>(f: impl FnOnce() -> R) -> R {
    with_mode(Mode::Debug, f)
}

mod common;
use common::panic_message;

fn site_of(marker: &str) -> String {
    common::site_of("debug_checks.rs", include_str!("debug_checks.rs"), marker)
}

#[accel]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[accel]
fn sub_unless_zero(a: i64, b: i64) -> i64 {
    if a == 0 {
        b
    } else if b == 0 {
        a
    } else {
        a - b
    }
}

#[accel]
fn midpoint_unless_zero(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        b
    } else if b == 0.0 {
        a
    } else {
        (a + b) / 2.0
    }
}

#[test]
fn map2_lengths_must_be_equal() {
    let (xs, ys) = (vec![1.0f32; 1000], vec![1.0f32; 999]);
    let msg = panic_message(|| drop(debug(|| accelerate!(map2(|a, b| a * b, &xs, &ys)))));
    assert_eq!(
        msg,
        format!(
            "map2 at {}: lengths differ: 1000 vs 999",
            site_of("map2(|a, b| a * b")
        )
    );
}

#[test]
fn nested_sequences_must_be_regular_where_captured_flattened_or_returned() {
    let xss = vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8]];
    let msg = panic_message(|| drop(debug(|| accelerate!(map(|row| row[0], &xss)))));
    assert_eq!(
        msg,
        format!(
            "accelerate! at {}: captured xss is irregular: row 0 has 3 elements, row 2 has 2",
            site_of("map(|row| row[0], &xss)")
        )
    );

    let n = 3usize;
    let msg = panic_message(|| {
        drop(debug(|| {
            accelerate!(flatten(create(n, |i| create(i + 1, |j| j))))
        }))
    });
    assert_eq!(
        msg,
        format!(
            "flatten at {}: the sequence is irregular: row 0 has 1 elements, row 1 has 2",
            site_of("flatten(create(n")
        )
    );

    let msg = panic_message(|| drop(debug(|| accelerate!(create(n, |i| create(i, |j| j))))));
    assert_eq!(
        msg,
        format!(
            "accelerate! at {}: the result is irregular: row 0 has 0 elements, row 1 has 1",
            site_of("create(n, |i| create(i, |j| j))")
        )
    );

    // Irregularity deeper inside a record of the captured value is named by its path.
    let nested = (
        1,
        vec![vec![vec![1.0f64], vec![2.0]], vec![vec![3.0], vec![]]],
    );
    let msg = panic_message(|| drop(debug(|| accelerate!(map(|x| x.len(), &nested.1)))));
    assert_eq!(msg, format!("accelerate! at {}: captured nested.1[1] is irregular: row 0 has 1 elements, row 1 has 0", site_of("map(|x| x.len(), &nested.1)")));
}

#[test]
fn tensors_must_be_within_the_rank_bound() {
    let t = Tensor::<f32>::zeros(&[1, 1, 1, 2]);
    let msg =
        panic_message(|| debug(|| accelerate!(parallel_loop(2, |i| t.set([0, 0, 0, i], 1.0)))));
    assert_eq!(
        msg,
        format!(
            "accelerate! at {}: captured t has rank 4 (shape [1, 1, 1, 2]), above the tensor rank bound 3 (set ACCEL_MAX_TENSOR_RANK to raise it)",
            site_of("t.set([0, 0, 0, i], 1.0)")
        )
    );
    let msg = panic_message(|| {
        drop(debug(|| {
            accelerate!(map(
                |x| {
                    let u = Tensor::<i32>::zeros(&[1, 1, 1, 1]);
                    x + u.rank()
                },
                &[1usize]
            ))
        }))
    });
    assert_eq!(
        msg,
        format!(
            "Tensor at {}: a tensor created here has rank 4 (shape [1, 1, 1, 1]), above the tensor rank bound 3 (set ACCEL_MAX_TENSOR_RANK to raise it)",
            site_of("Tensor::<i32>::zeros(&[1, 1, 1, 1])")
        )
    );
    assert_eq!(accel_runtime::max_tensor_rank(), 3);
}

#[test]
fn indices_must_be_in_bounds() {
    let xs = vec![1, 2, 3];
    let msg = panic_message(|| drop(debug(|| accelerate!(create(4, |i| xs[i])))));
    assert_eq!(
        msg,
        format!(
            "accelerate! at {}: index out of bounds: the len is 3 but the index is 3",
            site_of("create(4, |i| xs[i])")
        )
    );
    let t = Tensor::<i64>::zeros(&[2, 3]);
    let msg =
        panic_message(|| debug(|| accelerate!(parallel_loop(7, |i| t.set([i / 3, i % 3], 1)))));
    assert_eq!(
        msg,
        format!(
            "Tensor::set at {}: index [2, 0] is out of bounds for shape [2, 3]",
            site_of("t.set([i / 3, i % 3], 1)")
        )
    );
}

#[test]
#[cfg(debug_assertions)]
fn integer_overflow_is_reported_as_in_debug_builds() {
    let xs = vec![i32::MAX - 1, i32::MAX];
    let msg = panic_message(|| drop(debug(|| accelerate!(map(|x| x + 1, &xs)))));
    assert_eq!(
        msg,
        format!(
            "accelerate! at {}: attempt to add with overflow",
            site_of("map(|x| x + 1, &xs)")
        )
    );
}

#[test]
fn reduce_and_scan_need_a_neutral_element() {
    let v: Vec<i64> = (1..=100).collect();
    let msg = panic_message(|| {
        debug(|| accelerate!(reduce(add, 1, &v)));
    });
    assert_eq!(
        msg,
        format!(
            "reduce at {}: ne is not a neutral element of op: op(ne, x) = 2 but x = 1 (ne = 1)",
            site_of("reduce(add, 1, &v)")
        )
    );
    let msg = panic_message(|| drop(debug(|| accelerate!(scan(|a, b| a * b, 0, &v)))));
    assert_eq!(
        msg,
        format!(
            "scan at {}: ne is not a neutral element of op: op(ne, x) = 0 but x = 1 (ne = 0)",
            site_of("scan(|a, b| a * b, 0, &v)")
        )
    );
}

/// NaNs under `f32::min`/`max` (which ignore them): `min(∞, NaN) = ∞`, so `∞` is not
/// neutral for a NaN, yet a NaN is neutral itself and every grouping gives the same
/// result; debug mode accepts it, as every backend computes it (found by accel-fuzz:
/// debug mode reported a violation where the CPU gave `inf`). A value neutral itself does
/// not excuse an `ne` that is not idempotent: `reduce(add, 1, zeros)` still fails.
#[test]
fn nans_under_min_and_max_are_not_violations() {
    let xs = vec![f32::NAN, 3.5, f32::NAN, -2.0, 8.25];
    let min = common::agree(|| accelerate!(reduce(|a, b| a.min(b), f32::INFINITY, &xs)));
    assert_eq!(min, -2.0);
    let max =
        common::agree(|| accelerate!(xs.iter().copied().fold(f32::NEG_INFINITY, |a, b| a.max(b))));
    assert_eq!(max, 8.25);
    let nans = vec![f32::NAN; 3];
    let min = common::agree(|| accelerate!(reduce(|a, b| a.min(b), f32::INFINITY, &nans)));
    assert_eq!(min, f32::INFINITY);
    let zeros = vec![0i64; 5];
    let msg = panic_message(|| {
        debug(|| accelerate!(reduce(add, 1, &zeros)));
    });
    assert_eq!(
        msg,
        format!(
            "reduce at {}: ne is not a neutral element of op: op(ne, x) = 1 but x = 0 (ne = 1)",
            site_of("reduce(add, 1, &zeros)")
        )
    );
}

#[test]
fn reduce_by_index_needs_a_commutative_monoid_and_equal_lengths() {
    // Affine maps `x -> a x + b` composed: associative, `(1, 0)` neutral, not commutative.
    let is = vec![0usize, 1];
    let maps = vec![(2i64, 1i64), (3, 5)];
    let msg = panic_message(|| {
        drop(debug(|| {
            accelerate!(reduce_by_index(
                vec![(1i64, 0i64); 2],
                |p: (i64, i64), q: (i64, i64)| (p.0 * q.0, p.0 * q.1 + p.1),
                (1, 0),
                &is,
                &maps
            ))
        }))
    });
    assert_eq!(
        msg,
        format!(
            "reduce_by_index at {}: op is not commutative: op(a, b) = (6, 11) but op(b, a) = (6, 8) for a = (2, 1), b = (3, 5)",
            site_of("vec![(1i64, 0i64); 2],")
        )
    );
    let ones = vec![1i64; 2];
    let msg = panic_message(|| {
        drop(debug(|| {
            accelerate!(reduce_by_index(vec![0i64; 4], add, 1, &is, &ones))
        }))
    });
    assert_eq!(
        msg,
        format!(
            "reduce_by_index at {}: ne is not a neutral element of op: op(ne, x) = 2 but x = 1 (ne = 1)",
            site_of("reduce_by_index(vec![0i64; 4], add, 1")
        )
    );
    let three = vec![0usize, 1, 2];
    let msg = panic_message(|| {
        drop(debug(|| {
            accelerate!(reduce_by_index(vec![0i64; 4], add, 0, &three, &ones))
        }))
    });
    assert_eq!(
        msg,
        format!(
            "reduce_by_index at {}: lengths differ: 3 indices vs 2 values",
            site_of("reduce_by_index(vec![0i64; 4], add, 0")
        )
    );
}

#[test]
fn scatter_needs_distinct_indices_and_equal_lengths() {
    let dest = vec![0i64; 6];
    let is = vec![4usize, 1, 9, 3, 9, 1];
    let vs = vec![10i64, 20, 30, 40, 50, 60];
    // Index 9 is past the end (skipped, even twice); 1 appears at positions 1 and 5.
    let msg = panic_message(|| drop(debug(|| accelerate!(scatter(&dest, &is, &vs)))));
    assert_eq!(
        msg,
        format!(
            "scatter at {}: index 1 appears twice, at positions 1 and 5 of the indices",
            site_of("scatter(&dest, &is, &vs)")
        )
    );
    let short = vec![1i64, 2];
    let msg = panic_message(|| drop(debug(|| accelerate!(scatter(&dest, &is, &short)))));
    assert_eq!(
        msg,
        format!(
            "scatter at {}: lengths differ: 6 indices vs 2 values",
            site_of("scatter(&dest, &is, &short)")
        )
    );
}

#[test]
fn reduce_and_scan_need_an_associative_operator() {
    let v: Vec<i64> = vec![5, 3, 8, 2];
    let msg = panic_message(|| {
        debug(|| accelerate!(reduce(sub_unless_zero, 0, &v)));
    });
    assert_eq!(
        msg,
        format!(
            "reduce at {}: op is not associative: op(op(a, b), c) = 0 but op(a, op(b, c)) = 4 for a = 5, b = 3, c = 2",
            site_of("reduce(sub_unless_zero, 0, &v)")
        )
    );
    // Floats: a real non-associativity is far beyond rounding.
    let f = vec![1.5f64, 2.0, 4.0, 8.0];
    let msg = panic_message(|| {
        debug(|| accelerate!(scan(midpoint_unless_zero, 0.0, &f)));
    });
    assert_eq!(
        msg,
        format!(
            "scan at {}: op is not associative: op(op(a, b), c) = 4.875 but op(a, op(b, c)) = 3.25 for a = 1.5, b = 2.0, c = 8.0",
            site_of("scan(midpoint_unless_zero, 0.0, &f)")
        )
    );
}

#[test]
fn parallel_loop_iterations_must_not_write_the_same_element() {
    let t = Tensor::<usize>::zeros(&[4]);
    let msg = panic_message(|| debug(|| accelerate!(parallel_loop(8, |i| t.set([i / 2], i)))));
    let site = site_of("parallel_loop(8, |i| t.set([i / 2], i))");
    assert!(
        msg.starts_with(&format!("parallel_loop at {site}: iterations ")),
        "{msg}"
    );
    assert!(msg.ends_with(": iterations must be independent"), "{msg}");
    // The two iterations reported are the ones that share the element: 2k and 2k+1 write t[k].
    let words: Vec<&str> = msg.split(' ').collect();
    let (i, j): (usize, usize) = (words[4].parse().unwrap(), words[6].parse().unwrap());
    assert_eq!((i / 2, i % 2, j), (j / 2, 0, i + 1), "{msg}");
    assert!(msg.contains(&format!("both write t[{}]", i / 2)), "{msg}");
}

#[test]
fn parallel_loop_iterations_must_not_read_what_another_writes() {
    let t = Tensor::from_vec(vec![1i64; 5], &[5]);
    let msg = panic_message(|| {
        debug(|| accelerate!(parallel_loop(4, |i| t.set([i + 1], t.get([i]) + 1))))
    });
    let site = site_of("t.set([i + 1], t.get([i]) + 1)");
    assert!(
        msg.starts_with(&format!("parallel_loop at {site}: iteration ")),
        "{msg}"
    );
    // Iteration k reads t[k], which iteration k-1 writes.
    let words: Vec<&str> = msg.split(' ').collect();
    let (reader, writer): (usize, usize) = (words[4].parse().unwrap(), words[8].parse().unwrap());
    assert_eq!(reader, writer + 1, "{msg}");
    assert!(
        msg.ends_with(&format!(
            "writes, t[{reader}]: iterations must be independent"
        )),
        "{msg}"
    );
}

#[test]
fn aliasing_views_are_the_same_memory() {
    let t = Tensor::<i32>::zeros(&[4]);
    let a = t.sub(0, 3);
    let b = t.sub(2, 2);
    // a[2] and b[0] are t[2]: iteration 1 writes it through a, iteration 0 through b.
    let msg = panic_message(|| {
        debug(|| {
            accelerate!(parallel_loop(2, |i| {
                a.set([i + 1], 1);
                b.set([i], 2);
            }))
        })
    });
    let site = site_of("a.set([i + 1], 1);");
    assert_eq!(msg, format!("parallel_loop at {site}: iterations 0 and 1 both write a[2]: iterations must be independent"));
}

#[test]
fn checks_are_off_in_accelerated_modes() {
    let v: Vec<i64> = (1..=4).collect();
    // No check fires: the compiled reduce trusts that ne is neutral and folds it into each
    // of its accumulators (`add` is `+`: sixteen i64 partial results in vectors, and the
    // scalar one for the rest) and the final combine, so the broken assumption gives
    // 10 + 18 * 1 rather than the sequential 11. Debug mode reports it instead
    // (`reduce_and_scan_need_a_neutral_element`).
    assert_eq!(with_mode(Mode::Cpu, || accelerate!(reduce(add, 1, &v))), 28);
    let t = Tensor::<usize>::zeros(&[1]);
    with_mode(Mode::Cpu, || {
        accelerate!(parallel_loop(3, |i| t.set([0], i)))
    });
    assert_eq!(t.get([0]), 2);
}

#[test]
fn no_false_alarm_on_large_float_reductions() {
    // Values of mixed sign and magnitude: rounding differs between groupings, which the
    // tolerance (relative to the magnitudes involved) absorbs.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 2_000_001) as f64 - 1_000_000.0
    };
    let big: Vec<f32> = (0..1_000_000).map(|_| next() as f32 * 1e-3).collect();
    let big64: Vec<f64> = (0..1_000_000).map(|_| next() * 1e3).collect();
    let s32 = debug(|| accelerate!(reduce(|a, b| a + b, 0.0, &big)));
    let s64 = debug(|| accelerate!(reduce(|a, b| a + b, 0.0, &big64)));
    assert_eq!(s32, big.iter().fold(0.0, |a, b| a + b));
    assert_eq!(s64, big64.iter().fold(0.0, |a, b| a + b));
    let near_one: Vec<f64> = big64.iter().map(|v| 1.0 + v * 1e-15).collect();
    debug(|| accelerate!(reduce(|a, b| a * b, 1.0, &near_one)));
    debug(|| accelerate!(scan(|a, b| a + b, 0.0, &big)));
    debug(|| accelerate!(reduce(|a, b| a.max(b), f32::NEG_INFINITY, &big)));
    debug(|| {
        accelerate!(reduce(
            |a, b| (a.0 + b.0, a.1 + b.1),
            (0.0, 0u64),
            map(|v| (v, 1u64), &big64)
        ))
    });
    let rows = vec![vec![0.1f32, 0.2, 0.3]; 1000];
    debug(|| accelerate!(reduce(|a, b| map2(|x, y| x + y, a, b), vec![0.0; 3], &rows)));
}

#[test]
fn no_false_alarm_on_independent_loops() {
    let n = 1000;
    let src = Tensor::from_vec((0..n as i64).collect(), &[n]);
    let dst = Tensor::<i64>::zeros(&[n]);
    // Every iteration reads shared elements and writes only its own.
    debug(|| {
        accelerate!(parallel_loop(n, |i| dst
            .set([i], src.get([i]) + src.get([0]) + src.get([n - 1 - i]))))
    });
    assert_eq!(dst.get([10]), 10 + (n as i64 - 11)); // src[10] + src[0] + src[n - 11]
                                                     // Disjoint views of one buffer, and a nested loop writing one row per outer iteration.
    let m = Tensor::<i32>::zeros(&[4, 8]);
    let (top, bottom) = (m.sub(0, 2), m.sub(2, 2));
    debug(|| {
        accelerate!(parallel_loop(2, |r| {
            parallel_loop(8, |c| {
                top.set([r, c], 1);
                bottom.set([r, c], 2);
            })
        }))
    });
    assert_eq!(m.to_vec().iter().sum::<i32>(), 16 + 32);
}
