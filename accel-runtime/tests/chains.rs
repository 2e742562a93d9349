//! Iterator chains inside `accelerate!` and `#[accel]` functions (API.md, "Inside
//! accelerated code"): every source, adaptor and consumer, alone and chained, at sizes
//! around the CPU's chunks and lanes and the GPU's blocks, in debug, cpu and cuda modes
//! (the emulator here) with the exact values Rust's own iterators give.

// The chains are written as users write them, including forms clippy would shorten.
#![allow(
    clippy::iter_count,
    clippy::manual_contains,
    clippy::useless_conversion
)]

use accel_runtime::prelude::*;

mod common;

use common::{agree, noise};

const SIZES: [usize; 11] = [0, 1, 2, 3, 255, 256, 257, 4095, 4096, 4097, 100_003];

#[accel]
fn dot(xs: &[f32], ys: &[f32]) -> f32 {
    xs.iter().zip(ys).map(|(x, y)| x * y).sum()
}

#[accel]
fn count_above(xs: &[i64], t: i64) -> usize {
    let mut above = 0;
    for x in xs.iter() {
        if *x > t {
            above += 1;
        }
    }
    above
}

#[test]
fn the_examples_of_api_md() {
    let xs: Vec<f32> = noise(1000, 1).iter().map(|&x| x as f32 * 0.01).collect();
    let ys: Vec<f32> = noise(1000, 2).iter().map(|&x| x as f32 * 0.01).collect();
    let t = 1.5f32;
    let want: f32 = xs.iter().zip(&ys).map(|(x, y)| x * y).sum();
    let dot: f32 = agree(|| accelerate!(xs.par_iter().zip(&ys).map(|(x, y)| x * y).sum()));
    assert!(
        (dot - want).abs() <= 1e-3 * want.abs().max(1.0),
        "{dot} vs {want}"
    );
    let big: usize = agree(|| accelerate!(xs.iter().filter(|x| **x > t).count()));
    assert_eq!(big, xs.iter().filter(|x| **x > t).count());
    let exps: Vec<f32> = agree(|| accelerate!(xs.iter().map(|x| x.exp()).collect()));
    assert_eq!(exps.len(), xs.len());
}

/// Rust's float sum starts at -0.0, the neutral element of `+`: an empty sum, or one of
/// -0.0s, is -0.0 (a sum started at 0.0 gives 0.0), in every mode and tier; an integer
/// sum starts at 0.
#[test]
fn a_float_sum_starts_at_minus_zero_as_rusts_does() {
    for xs in [vec![], vec![-0.0f32], vec![-0.0f32; 40]] {
        let got = common::exact(|| accelerate!(xs.par_iter().sum::<f32>()));
        assert_eq!(got.to_bits(), (-0.0f32).to_bits(), "{xs:?}");
        let doubled =
            common::exact(|| accelerate!(xs.par_iter().map(|x| *x as f64 * 2.0).sum::<f64>()));
        assert_eq!(doubled.to_bits(), (-0.0f64).to_bits(), "{xs:?}");
    }
    let none: Vec<u32> = vec![];
    assert_eq!(
        common::exact(|| accelerate!(none.par_iter().sum::<u32>())),
        0
    );
    let ys = vec![3i64, -5, 7];
    assert_eq!(common::exact(|| accelerate!(ys.par_iter().sum::<i64>())), 5);
}

#[test]
fn sources_and_consumers() {
    for n in SIZES {
        let xs = noise(n, 3);
        let sum: i64 = xs.iter().sum();
        assert_eq!(
            agree(|| accelerate!(xs.iter().sum::<i64>())),
            sum,
            "n = {n}"
        );
        assert_eq!(
            agree(|| accelerate!(xs.par_iter().copied().sum::<i64>())),
            sum
        );
        let s: i64 = agree(|| accelerate!(xs.iter().cloned().sum()));
        assert_eq!(s, sum);
        let small: Vec<i64> = xs.iter().map(|x| x % 3).collect();
        let product: i64 = small.iter().map(|x| x + 2).product();
        assert_eq!(
            agree(|| accelerate!(small.iter().map(|x| x + 2).product::<i64>())),
            product
        );
        assert_eq!(agree(|| accelerate!(xs.iter().fold(0, |a, b| a + b))), sum);
        assert_eq!(
            agree(|| accelerate!(xs.par_iter().copied().reduce(|| 0, |a, b| a + b))),
            sum
        );
        let max = xs.iter().copied().fold(i64::MIN, i64::max);
        assert_eq!(
            agree(|| accelerate!(xs.iter().copied().fold(i64::MIN, i64::max))),
            max
        );
        assert_eq!(agree(|| accelerate!(xs.iter().count())), n);
        assert_eq!(
            agree(|| accelerate!(xs.iter().all(|x| *x > -500))),
            xs.iter().all(|x| *x > -500)
        );
        assert_eq!(
            agree(|| accelerate!(xs.iter().any(|&x| x == 499))),
            xs.iter().any(|&x| x == 499)
        );
        let doubled: Vec<i64> = agree(|| accelerate!(xs.iter().map(|x| x * 2).collect()));
        assert_eq!(doubled, xs.iter().map(|x| x * 2).collect::<Vec<_>>());
        // Ranges: indices, from zero and from elsewhere, inclusive.
        let squares: Vec<usize> =
            agree(|| accelerate!((0..n).into_par_iter().map(|i| i * i).collect()));
        assert_eq!(squares, (0..n).map(|i| i * i).collect::<Vec<_>>());
        let total: usize = agree(|| accelerate!((3..=n + 3).map(|i| i % 7).sum()));
        assert_eq!(total, (3..=n + 3).map(|i| i % 7).sum::<usize>());
    }
}

/// Ranges of every integer type, typed from their bounds as Rust types them, at their
/// types' ends; a range whose end is not past its start is empty.
#[test]
fn ranges_of_every_integer_type() {
    for n in [0u64, 1, 2, 257, 4097] {
        let squares: Vec<u64> =
            agree(|| accelerate!((1..n).into_par_iter().map(|x| x * x).collect()));
        assert_eq!(squares, (1..n).map(|x| x * x).collect::<Vec<_>>());
        let odd = agree(|| accelerate!((0..n).into_par_iter().filter(|x| x % 2 == 1).count()));
        assert_eq!(odd, (0..n).filter(|x| x % 2 == 1).count());
        let m = n as i32;
        let total: i64 =
            agree(|| accelerate!((-m..=m / 2).into_par_iter().map(|x| x as i64 * 3).sum()));
        assert_eq!(total, (-m..=m / 2).map(|x| x as i64 * 3).sum::<i64>());
        let k = n as u32;
        let hashed: Vec<u32> = agree(|| {
            accelerate!((k..k + 40)
                .into_par_iter()
                .map(|x| x.wrapping_mul(2_654_435_761))
                .collect())
        });
        assert_eq!(
            hashed,
            (k..k + 40)
                .map(|x| x.wrapping_mul(2_654_435_761))
                .collect::<Vec<_>>()
        );
    }
    // Empty: the end before the start, of unsigned and signed types.
    let (a, b) = (7usize, 3usize);
    assert_eq!(agree(|| accelerate!((a..b).into_par_iter().count())), 0);
    assert_eq!(agree(|| accelerate!((a..=b).into_par_iter().count())), 0);
    let (c, d) = (5i32, -5i32);
    let none: Vec<i32> = agree(|| accelerate!((c..d).into_par_iter().collect()));
    assert!(none.is_empty());
    // Whole types, and the ends of the widest.
    let (lo, hi) = (i8::MIN, i8::MAX);
    let all: Vec<i8> = agree(|| accelerate!((lo..=hi).into_par_iter().collect()));
    assert_eq!(all, (lo..=hi).collect::<Vec<_>>());
    let bytes: Vec<u8> = agree(|| {
        accelerate!((0..=255u8)
            .into_par_iter()
            .map(|x| x.wrapping_mul(3))
            .collect())
    });
    assert_eq!(
        bytes,
        (0..=255u8).map(|x| x.wrapping_mul(3)).collect::<Vec<_>>()
    );
    let low = i64::MIN;
    let lows: Vec<i64> = agree(|| accelerate!((low..low + 5).into_par_iter().collect()));
    assert_eq!(lows, (low..low + 5).collect::<Vec<_>>());
    let high = i64::MAX;
    let across: Vec<i64> =
        agree(|| accelerate!((-3..=high - (high - 3)).into_par_iter().collect()));
    assert_eq!(across, (-3..=3).collect::<Vec<_>>());
    let top = u64::MAX;
    let tops: Vec<u64> = agree(|| accelerate!((top - 4..=top).into_par_iter().collect()));
    assert_eq!(tops, (top - 4..=top).collect::<Vec<_>>());
    // Unconstrained bounds are `i32`s, as in Rust.
    let sum = agree(|| accelerate!((-10..10).into_par_iter().map(|x| x * x).sum::<i32>()));
    assert_eq!(sum, (-10..10).map(|x| x * x).sum::<i32>());
}

#[test]
fn adaptors_alone_and_chained() {
    for n in SIZES {
        let xs = noise(n, 5);
        // The shorter side of a zip wins, on either side.
        let ys = noise(n / 2 + 1, 6);
        let want: i64 = xs.iter().zip(&ys).map(|(x, y)| x * y).sum();
        assert_eq!(
            agree(|| accelerate!(xs.iter().zip(&ys).map(|(x, y)| x * y).sum::<i64>())),
            want,
            "n = {n}"
        );
        let want: Vec<(i64, i64)> = ys.iter().copied().zip(xs.iter().copied()).collect();
        let got: Vec<(i64, i64)> =
            agree(|| accelerate!(ys.iter().copied().zip(xs.iter().copied()).collect()));
        assert_eq!(got, want);
        // enumerate, then filter on the index and the value.
        let want: Vec<(usize, i64)> = xs
            .iter()
            .copied()
            .enumerate()
            .filter(|(i, x)| i % 3 == 0 && *x > 0)
            .collect();
        let got: Vec<(usize, i64)> = agree(|| {
            accelerate!(xs
                .iter()
                .copied()
                .enumerate()
                .filter(|(i, x)| i % 3 == 0 && *x > 0)
                .collect())
        });
        assert_eq!(got, want);
        // A filter fused into its consumer, and a map after a filter.
        let want = xs.iter().filter(|x| **x % 4 == 1).count();
        assert_eq!(
            agree(|| accelerate!(xs.iter().filter(|x| **x % 4 == 1).count())),
            want
        );
        let want: i64 = xs.iter().filter(|&&x| x < 0).map(|x| x * x).sum();
        assert_eq!(
            agree(|| accelerate!(xs.iter().filter(|&&x| x < 0).map(|x| x * x).sum::<i64>())),
            want
        );
        // A chain over a chain's result (a zip of two maps).
        let want: i64 = xs
            .iter()
            .map(|x| x + 1)
            .zip(ys.iter().map(|y| y - 1))
            .map(|(a, b)| a.max(b))
            .sum();
        let got: i64 = agree(|| {
            accelerate!(xs
                .iter()
                .map(|x| x + 1)
                .zip(ys.iter().map(|y| y - 1))
                .map(|(a, b)| a.max(b))
                .sum())
        });
        assert_eq!(got, want);
    }
}

#[test]
fn chains_nested_in_elements_and_in_functions() {
    let rows: Vec<Vec<i64>> = (0..300).map(|r| noise(17, r as u64)).collect();
    let want: Vec<i64> = rows
        .iter()
        .map(|row| row.iter().map(|x| x * x).sum())
        .collect();
    let got: Vec<i64> = agree(|| {
        accelerate!(rows
            .iter()
            .map(|row| row.iter().map(|x| x * x).sum::<i64>())
            .collect())
    });
    assert_eq!(got, want);
    let got: Vec<i64> = agree(|| {
        accelerate!(map(
            |row: Vec<i64>| row.iter().filter(|x| **x > 0).sum(),
            &rows
        ))
    });
    assert_eq!(
        got,
        rows.iter()
            .map(|r| r.iter().filter(|x| **x > 0).sum())
            .collect::<Vec<i64>>()
    );
    // `#[accel]` functions: a chain, and a `for x in xs.iter()` loop.
    for n in [0usize, 1, 257, 4097] {
        let xs: Vec<f32> = noise(n, 8).iter().map(|&x| x as f32 * 0.5).collect();
        let ys: Vec<f32> = noise(n, 9).iter().map(|&x| x as f32 * 0.25).collect();
        let want = dot(&xs, &ys);
        let got: f32 =
            agree(|| accelerate!(map(|k: usize| dot(&xs, &ys) * k as f32, create(2, |i| i))))[1];
        assert_eq!(got, want);
        let is = noise(n, 10);
        let got: Vec<usize> =
            agree(|| accelerate!(map(|t| count_above(&is, t), &[-100i64, 0, 100])));
        assert_eq!(
            got,
            [-100i64, 0, 100]
                .iter()
                .map(|&t| is.iter().filter(|x| **x > t).count())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn fold_and_reduce_carry_reduces_assumptions() {
    let xs = noise(100, 4);
    let message = common::panic_message(|| {
        with_mode(Mode::Debug, || {
            accelerate!(xs.iter().fold(10, |a, b| a + b))
        });
    });
    assert!(
        message.contains("fold at")
            && message.contains("ne is not a neutral element of op: op(ne, x) = "),
        "{message}"
    );
    let message = common::panic_message(|| {
        with_mode(Mode::Debug, || {
            accelerate!(xs.par_iter().copied().reduce(
                || 0,
                |a, b| if a == 0 {
                    b
                } else if b == 0 {
                    a
                } else {
                    a - b
                }
            ))
        });
    });
    assert!(
        message.contains("reduce at") && message.contains("op is not associative"),
        "{message}"
    );
}

/// `windows(k)` and `chunks(k)` (`chunks_exact`, rayon's `par_` forms) are sequences of
/// views: a stencil and per-block sums, as Rust computes them, in every mode; sizes
/// below, at and past `k`, and a last short chunk.
#[test]
fn windows_and_chunks_are_sequences_of_views() {
    for n in [0usize, 1, 2, 3, 7, 64, 1001] {
        let xs: Vec<f32> = (0..n).map(|i| ((i * 37) % 23) as f32 - 11.0).collect();
        let got = agree(|| {
            accelerate!(xs
                .windows(3)
                .map(|w| w[0] + 2.0 * w[1] + w[2])
                .collect::<Vec<f32>>())
        });
        let want: Vec<f32> = xs.windows(3).map(|w| w[0] + 2.0 * w[1] + w[2]).collect();
        assert_eq!(got, want, "windows, n = {n}");
        let got =
            agree(|| accelerate!(xs.par_windows(2).map(|w| w[1] - w[0]).collect::<Vec<f32>>()));
        let want: Vec<f32> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(got, want, "par_windows, n = {n}");
        let got = agree(|| {
            accelerate!(xs
                .chunks(8)
                .map(|c| c.iter().sum::<f32>())
                .collect::<Vec<f32>>())
        });
        let want: Vec<f32> = xs.chunks(8).map(|c| c.iter().sum::<f32>()).collect();
        assert_eq!(got, want, "chunks, n = {n}");
        let got = agree(|| {
            accelerate!(xs
                .par_chunks_exact(4)
                .map(|c| c.len() as f32 * c[3])
                .collect::<Vec<f32>>())
        });
        let want: Vec<f32> = xs.chunks_exact(4).map(|c| c.len() as f32 * c[3]).collect();
        assert_eq!(got, want, "chunks_exact, n = {n}");
        let big = agree(|| accelerate!(xs.chunks(5).map(|c| c[0]).filter(|x| *x > 0.0).count()));
        assert_eq!(
            big,
            xs.chunks(5).map(|c| c[0]).filter(|x| *x > 0.0).count(),
            "n = {n}"
        );
    }
}

/// Chunk and window sizes up to `usize::MAX`: as many views as Rust makes, in every mode
/// (a chunk count computed as `(len + k - 1) / k` wrapped around and made no chunk).
#[test]
fn chunk_and_window_sizes_near_the_largest_usize() {
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    for k in [9usize, 10, 11, usize::MAX / 2, usize::MAX - 1, usize::MAX] {
        let got = agree(|| {
            accelerate!(xs
                .par_chunks(k)
                .map(|c| c.iter().sum::<f32>())
                .collect::<Vec<f32>>())
        });
        let want: Vec<f32> = xs.chunks(k).map(|c| c.iter().sum::<f32>()).collect();
        assert_eq!(got, want, "chunks({k})");
        let got = agree(|| {
            accelerate!(xs
                .chunks_exact(k)
                .map(|c| c.len() as f32)
                .collect::<Vec<f32>>())
        });
        let want: Vec<f32> = xs.chunks_exact(k).map(|c| c.len() as f32).collect();
        assert_eq!(got, want, "chunks_exact({k})");
        let got = agree(|| accelerate!(xs.par_windows(k).map(|w| w[0]).collect::<Vec<f32>>()));
        let want: Vec<f32> = xs.windows(k).map(|w| w[0]).collect();
        assert_eq!(got, want, "windows({k})");
    }
}

/// A zero chunk or window size fails as Rust's assertion does, in every mode, also inside
/// an element (where the size differs between elements).
#[test]
fn a_zero_chunk_or_window_size_is_rusts_assertion_in_every_mode() {
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let k = 0usize;
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!(xs.par_chunks(k).map(|c| c.len()).collect::<Vec<usize>>())
    }) {
        assert_eq!(e.kind(), accel_runtime::ErrorKind::Panicked, "{mode}: {e}");
        assert!(
            e.to_string().contains("chunk size must be non-zero"),
            "{mode}: {e}"
        );
    }
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!(xs.windows(k).map(|w| w.len()).collect::<Vec<usize>>())
    }) {
        assert_eq!(e.kind(), accel_runtime::ErrorKind::Panicked, "{mode}: {e}");
        assert!(
            e.to_string().contains("window size must be non-zero"),
            "{mode}: {e}"
        );
    }
    let sizes: Vec<usize> = vec![3, 2, 1, 0, 4];
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!(sizes
            .par_iter()
            .map(|k| xs.chunks(*k).count())
            .collect::<Vec<usize>>())
    }) {
        assert_eq!(e.kind(), accel_runtime::ErrorKind::Panicked, "{mode}: {e}");
        assert!(
            e.to_string().contains("chunk size must be non-zero"),
            "{mode}: {e}"
        );
    }
    let got = agree(|| {
        accelerate!(sizes
            .iter()
            .filter(|k| **k > 0)
            .map(|k| xs.chunks(*k).count())
            .collect::<Vec<usize>>())
    });
    assert_eq!(got, vec![4, 5, 10, 3]);
}
