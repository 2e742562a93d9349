//! The CPU backend's gang loops against debug mode: 2-D elements' rows walked (`p / w`,
//! `p % w`), clamped neighbours (an image's edge), elements whose long loop runs in
//! blocks over tiles of gangs (a matrix product, a walk down columns), gangs narrowed
//! for walks along each lane's own row, search loops' lockstep counters and
//! range tests, at sizes around the gangs' width and the blocks' length; results
//! bit-identical, each site checked to run on SIMD lanes (and to take its shape where
//! it has one).

use accel_runtime::__private::cpu_gang_shapes;
use accel_runtime::prelude::*;

mod common;

use common::{exact, panic_message, site_of};

const SOURCE: &str = include_str!("simd_rows.rs");

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
}

/// Asserts the site ran on SIMD lanes (its kernel did not fall back to scalar code).
fn vectorized(marker: &str) {
    common::assert_vectorized("simd_rows.rs", SOURCE, marker);
}

/// A clamped neighbour of a grey image, as image code reads one.
#[accel]
fn pixel_at(img: &[f32], w: usize, h: usize, x: i64, y: i64) -> f32 {
    let cx = x.clamp(0, w as i64 - 1) as usize;
    let cy = y.clamp(0, h as i64 - 1) as usize;
    img[cy * w + cx]
}

#[test]
fn rows_and_clamped_neighbours_are_bit_identical() {
    let mut rng = Rng(9);
    // 2-D elements over rows of every width around the gangs' (and a width of one).
    for (w, h) in [
        (1, 9),
        (3, 5),
        (4, 4),
        (7, 3),
        (15, 2),
        (16, 3),
        (17, 5),
        (33, 4),
        (100, 41),
        (1021, 9),
    ] {
        let img = rng.f32s(w * h, 0.0, 1.0);
        let n = w * h;
        exact(|| {
            accelerate!(create(n, |p| {
                let (x, y) = ((p % w) as i64, (p / w) as i64);
                let mut s = 0.0f32;
                for d in -2..3i64 {
                    s += pixel_at(&img, w, h, x + d, y) + pixel_at(&img, w, h, x, y + d);
                }
                s
            }))
        }); // clamped 2-D
        exact(|| {
            accelerate!(create(n, |p| {
                let (i, j) = (p / w, p % w);
                img[i * w + j.max(1) - 1] + img[i * w + (j + 1).min(w - 1)] + i as f32
            }))
        }); // min max
        exact(|| accelerate!(create(n, |p| img[(p as i64 - 3).clamp(0, n as i64 - 1) as usize])));
        // clamped 1-D
    }
    for marker in ["// clamped 2-D", "// min max", "// clamped 1-D"] {
        vectorized(marker);
    }
    // A clamp whose bounds are reversed fails as Rust's does, in every lane that runs it.
    let img = rng.f32s(64, 0.0, 1.0);
    let (lo, hi) = (5i64, 2i64);
    let m = panic_message(|| {
        with_mode(Mode::Cpu, || {
            accelerate!(create(64, |p| img[(p as i64).clamp(lo, hi) as usize]))
        });
    });
    assert!(m.contains("min > max"), "{m}");
}

/// A matrix product written one element at a time, as users write it first.
#[accel]
fn product_at(a: &[f64], b: &[f64], k: usize, m: usize, p: usize) -> f64 {
    let i = p / m;
    let j = p % m;
    let mut acc = 0.0;
    for l in 0..k {
        acc += a[i * k + l] * b[l * m + j];
    }
    acc
}

#[test]
fn blocked_loops_are_bit_identical() {
    let mut rng = Rng(11);
    // Rows shorter and longer than a gang, around its width, a power of two long (rows of
    // 1, 2 and 4 KiB run blocks of 32, 16 and 8 iterations); loops shorter and longer
    // than a block of iterations; triangular bounds.
    for (n, m, k) in [
        (3, 1, 5),
        (5, 7, 1),
        (17, 16, 3),
        (9, 33, 70),
        (40, 128, 65),
        (4, 256, 37),
        (3, 512, 20),
        (33, 100, 200),
    ] {
        let a = rng.f64s(n * k, -1.0, 1.0);
        let b = rng.f64s(k * m, -1.0, 1.0);
        let c = rng.f32s(n * m, -1.0, 1.0);
        exact(|| accelerate!(create(n * m, |p| product_at(&a, &b, k, m, p)))); // blocked
        exact(|| {
            accelerate!(create(n * m, |p| {
                let i = p / m;
                let j = p % m;
                let mut acc = c[p] as f64;
                for l in i % k..k {
                    acc = acc * 0.5 + a[i * k + l] * b[l * m + j];
                }
                (acc * 2.0) as f32 + c[p]
            }))
        }); // triangular
    }
    for marker in ["// blocked", "// triangular"] {
        vectorized(marker);
        let site = site_of("simd_rows.rs", SOURCE, marker);
        assert_eq!(
            cpu_gang_shapes(&site),
            Some(vec!["blocked".to_string(), "packed columns".to_string()]),
            "{site} ({marker})"
        );
    }
}

#[test]
fn reversed_indices_are_bit_identical() {
    let mut rng = Rng(13);
    for n in [1usize, 5, 15, 16, 17, 33, 100, 1001] {
        let xs = rng.f64s(n, -1.0, 1.0);
        let ys = rng.f32s(n, -1.0, 1.0);
        exact(|| accelerate!(create(n, |i| xs[n - 1 - i] * 2.0 + ys[i] as f64))); // reversed
        let is: Vec<i64> = xs.iter().map(|x| (x * 1000.0) as i64).collect();
        exact(|| {
            accelerate!(reduce(
                |a, b| a + b,
                0,
                create(n, |i| is[n - i - 1] * (i as i64 - 3))
            ))
        }); // reversed sum
            // Counting down and up again, and past the start (failing lanes named).
        let k = n / 2;
        exact(|| accelerate!(create(k, |i| ys[k - (k - 1 - i)] + ys[2 * k - 1 - i])));
    }
    for marker in ["// reversed", "// reversed sum"] {
        vectorized(marker);
    }
    let xs = rng.f64s(40, 0.0, 1.0);
    let m = panic_message(|| {
        with_mode(Mode::Cpu, || accelerate!(create(40, |i| xs[38 - i])));
    });
    assert!(m.contains("index out of bounds"), "{m}");
}

/// The length of the run of letters that starts at `i` (at most `cap`), 0 where `i` does
/// not start one: the counter leaves the loop at a different count in each lane.
#[accel]
fn run_at(text: &[u32], i: usize, cap: usize) -> usize {
    if text[i] < 97 || (i > 0 && text[i - 1] >= 97) {
        0
    } else {
        let mut k = 1;
        while k < cap && i + k < text.len() && text[i + k] >= 97 {
            k += 1;
        }
        k
    }
}

/// A forward search by steps of two from a uniform start, its counter used after the
/// loop and as an offset inside it.
#[accel]
fn step_sum(xs: &[i64], i: usize, limit: i64) -> i64 {
    let mut k = 3;
    let mut acc = 0;
    while i + k < xs.len() && acc + xs[i + k] < limit {
        acc += xs[i + k];
        k += 2;
    }
    acc * 100 + k as i64
}

/// The length (at most eight) of the run of letters starting at `i`, as word count's
/// test: a 64-bit counter bounded by a constant, counted per lane.
#[accel]
fn run_of_eight(text: &[u32], i: usize) -> usize {
    let mut k = 1;
    while k < 8 && i + k < text.len() && text[i + k] >= 97 {
        k += 1;
    }
    k
}

/// A 32-bit counter stepping down by three while the lane's values stay small.
#[accel]
fn descent(xs: &[i64], i: usize, from: i32) -> i32 {
    let mut k = from;
    while k > 0 && i + (k as usize) < xs.len() && xs[i + k as usize] < 5 {
        k -= 3;
    }
    k * 7
}

#[test]
fn counted_lockstep_counters_are_bit_identical() {
    let mut rng = Rng(23);
    for n in [1usize, 2, 7, 15, 16, 17, 31, 64, 100, 1003] {
        let text: Vec<u32> = (0..n)
            .map(|_| if rng.next().is_multiple_of(4) { 32 } else { 97 })
            .collect();
        exact(|| accelerate!(create(n, |i| run_of_eight(&text, i)))); // eight
        let xs: Vec<i64> = (0..n).map(|_| (rng.next() % 7) as i64).collect();
        for from in [0i32, 1, 2, 3, 10, 40] {
            exact(|| accelerate!(create(n, |i| descent(&xs, i, from)))); // descent
        }
    }
    for marker in ["// eight", "// descent"] {
        vectorized(marker);
        let site = site_of("simd_rows.rs", SOURCE, marker);
        let shapes = cpu_gang_shapes(&site).unwrap_or_default();
        assert!(
            shapes.iter().any(|s| s == "counted loop"),
            "{site}: {shapes:?}"
        );
    }
}

/// `c >= lo && c <= hi` on lanes of each integer type of at most 32 bits (tested as one
/// unsigned comparison), at and around the bounds, negative values included.
// The tests spelled out as users write them (`(97..=122).contains(&c)` desugars to the
// same), the degenerate ones included.
#[allow(
    clippy::manual_range_contains,
    clippy::double_comparisons,
    clippy::impossible_comparisons
)]
#[test]
fn range_tests_are_exact() {
    macro_rules! ranges {
        ($t:ty, $xs:expr) => {{
            let xs: Vec<$t> = $xs;
            let n = xs.len();
            exact(|| {
                accelerate!(create(n, |i| {
                    let c = xs[i];
                    c >= 97 && c <= 122
                }))
            });
            exact(|| {
                accelerate!(create(n, |i| {
                    let c = xs[i];
                    5 <= c && 122 >= c
                }))
            });
            exact(|| {
                accelerate!(create(n, |i| {
                    let c = xs[i];
                    c >= 100 && c <= 100
                }))
            });
            // Bounds the wrong way round: never.
            exact(|| {
                accelerate!(create(n, |i| {
                    let c = xs[i];
                    c >= 100 && c <= 99
                }))
            });
        }};
    }
    let mut rng = Rng(29);
    let mut values = vec![0i64, 4, 5, 6, 96, 97, 98, 99, 100, 101, 121, 122, 123, 127];
    values.extend((0..40).map(|_| (rng.next() % 256) as i64 - 128));
    ranges!(u8, values.iter().map(|&v| v as u8).collect());
    ranges!(i8, values.iter().map(|&v| v as i8).collect());
    ranges!(u16, values.iter().map(|&v| (v * 300) as u16).collect());
    ranges!(i16, values.iter().map(|&v| v as i16).collect());
    ranges!(
        u32,
        values
            .iter()
            .map(|&v| (v * 40_000_000) as u32)
            .chain([u32::MAX, 97])
            .collect()
    );
    ranges!(
        i32,
        values
            .iter()
            .map(|&v| v as i32)
            .chain([i32::MIN, i32::MAX])
            .collect()
    );
    ranges!(i64, values.clone());
}

#[test]
fn lockstep_counters_are_bit_identical() {
    let mut rng = Rng(17);
    for n in [1usize, 2, 7, 15, 16, 17, 31, 64, 100, 1003] {
        // Letters (97..=122) and spaces (32) in runs of random lengths, ending mid-word.
        let text: Vec<u32> = (0..n)
            .map(|_| {
                let r = rng.next();
                if r.is_multiple_of(5) {
                    32
                } else {
                    97 + (r >> 8) as u32 % 26
                }
            })
            .collect();
        for cap in [1usize, 2, 8, 40] {
            exact(|| accelerate!(create(n, |i| run_at(&text, i, cap)))); // run lengths
            exact(|| {
                accelerate!((0..text.len())
                    .into_par_iter()
                    .filter(|i| run_at(&text, *i, cap) >= 3)
                    .count())
            }); // long runs
        }
        let xs: Vec<i64> = (0..n).map(|_| (rng.next() % 7) as i64).collect();
        for limit in [0i64, 5, 30] {
            exact(|| accelerate!(create(n, |i| step_sum(&xs, i, limit)))); // steps
        }
    }
    for marker in ["// run lengths", "// long runs", "// steps"] {
        vectorized(marker);
    }
}

/// Each comparison of consecutive lanes with a uniform value, both ways round, as
/// `exact` sites: `$x` is the lanes' value (of the gang's index `i`), `$u` the uniform.
macro_rules! every_order {
    ($n:expr, |$i:ident| $x:expr, $u:expr) => {{
        let (n, u) = ($n, $u);
        exact(|| accelerate!(create(n, |$i| $x < u)));
        exact(|| accelerate!(create(n, |$i| $x <= u)));
        exact(|| accelerate!(create(n, |$i| $x > u)));
        exact(|| accelerate!(create(n, |$i| $x >= u)));
        exact(|| accelerate!(create(n, |$i| u < $x)));
        exact(|| accelerate!(create(n, |$i| u <= $x)));
        exact(|| accelerate!(create(n, |$i| u > $x)));
        exact(|| accelerate!(create(n, |$i| u >= $x)));
    }};
}

#[test]
fn consecutive_lanes_compare_exactly() {
    for n in [1usize, 5, 16, 17, 40] {
        for d in [0i64, 1, 3, 15, 16, 17, 100] {
            // Unsigned lanes that wrap past u64::MAX to 0 (from `d` below zero).
            for u in [0u64, 1, 2, 5, 16, 30, u64::MAX, u64::MAX - 1, u64::MAX - 5] {
                every_order!(n, |i| ((i as i64 - d) as u64), u);
                let (du, uu) = (d as usize, u as usize);
                every_order!(n, |i| i + du, uu);
            }
            // Signed lanes that wrap past i64::MAX to i64::MIN.
            let top = (1u64 << 63) - d as u64;
            for u in [i64::MIN, i64::MIN + 1, -1, 0, 1, 20, i64::MAX, i64::MAX - 2] {
                every_order!(n, |i| ((i as u64 + top) as i64), u);
                every_order!(n, |i| i as i64 - d, u);
            }
        }
    }
}

#[test]
fn stencil_borders_are_bit_identical() {
    let mut rng = Rng(19);
    for (w, h) in [
        (3usize, 3usize),
        (5, 4),
        (16, 3),
        (17, 5),
        (33, 7),
        (64, 4),
        (100, 9),
    ] {
        let n = w * h;
        let a = rng.f64s(n, -1.0, 1.0);
        exact(|| {
            accelerate!(create(n, |p| {
                let i = p / w;
                let j = p % w;
                if i == 0 || j == 0 || i == h - 1 || j == w - 1 {
                    a[p]
                } else {
                    0.2 * (a[p] + a[p - 1] + a[p + 1] + a[p + w] + a[p - w])
                }
            }))
        }); // five points
        exact(|| {
            accelerate!(create(n, |p| {
                let i = p / w;
                let j = p % w;
                if j < 1 || j + 2 > w || i < 1 || i >= h - 1 {
                    -a[p]
                } else {
                    a[p - 1] - a[p + 1] + a[p - w]
                }
            }))
        }); // ordered borders
        exact(|| {
            accelerate!(create(n, |p| {
                let j = p % w;
                if j >= 2 && j <= w - 3 {
                    a[p - 2] + a[p + 2]
                } else {
                    0.0
                }
            }))
        }); // interior test
    }
    for marker in ["// five points", "// ordered borders", "// interior test"] {
        vectorized(marker);
    }
}

#[test]
fn one_dimensional_stencils_are_bit_identical_at_every_length() {
    // Gangs start right after the border the shifted loads would cross and a `create`
    // ends with a gang overlapping the one before (its last indices stored twice, alike):
    // every length around the gangs' widths, f64 (16 lanes) and f32, and an element that
    // divides by a multiple of the width (its gangs stay aligned to share the quotient).
    let mut rng = Rng(29);
    for n in (0..70).chain([127, 128, 129, 2000]) {
        let a = rng.f64s(n, -1.0, 1.0);
        let got = exact(|| {
            accelerate!(create(n, |i| {
                if i == 0 || i == n - 1 {
                    a[i]
                } else {
                    0.33333 * (a[i - 1] + a[i] + a[i + 1])
                }
            }))
        }); // jacobi
        let want: Vec<f64> = (0..n)
            .map(|i| match i {
                0 => a[i],
                i if i == n - 1 => a[i],
                i => 0.33333 * (a[i - 1] + a[i] + a[i + 1]),
            })
            .collect();
        assert_eq!(got, want, "n = {n}");
        let b: Vec<f32> = a.iter().map(|x| *x as f32).collect();
        let m = n.saturating_sub(3);
        exact(|| accelerate!(create(m, |i| b[i + 3] - 2.0 * b[i + 1] + b[i]))); // shifted only
        exact(|| {
            accelerate!(create(n, |i| if i >= 2 {
                b[i - 2] * (i / 32) as f32 + (i % 32) as f32
            } else {
                b[i]
            }))
        }); // aligned quotient
    }
    for marker in ["// jacobi", "// shifted only", "// aligned quotient"] {
        vectorized(marker);
    }
    // A lane failing in the overlapped last gang reports the first failing index.
    let xs: Vec<f64> = vec![1.0; 40];
    let ks: Vec<usize> = (0..37).map(|i| if i >= 35 { 99 } else { i }).collect();
    let message = panic_message(|| {
        with_mode(Mode::Cpu, || {
            accelerate!(create(37, |i| xs[i + 1] + xs[ks[i]]))
        });
    });
    assert!(
        message.contains("the len is 40 but the index is 99"),
        "{message}"
    );
}

#[test]
#[allow(clippy::nonminimal_bool)] // `!(i <= ..)`: a negated comparison is under test
fn settled_ifs_are_bit_identical() {
    // An element that is one `if` on its index against values from outside: runs of
    // gangs between the condition's thresholds take one arm untested. Thresholds at,
    // before and past every position of a gang, both ends of the range, none in it, and
    // launches of several chunks.
    let mut rng = Rng(31);
    for n in (0..40).chain([63, 64, 65, 100, 1000, 20_000]) {
        let a = rng.f64s(n + 1, -1.0, 1.0);
        for k in [
            0,
            1,
            2,
            15,
            16,
            17,
            33,
            n / 2,
            n.saturating_sub(17),
            n,
            n + 5,
            usize::MAX,
        ] {
            let got = exact(|| {
                accelerate!(create(n, |i| if i < k {
                    a[i] + a[i + 1]
                } else {
                    a[i] * 2.0
                }))
            }); // below
            let want: Vec<f64> = (0..n)
                .map(|i| if i < k { a[i] + a[i + 1] } else { a[i] * 2.0 })
                .collect();
            assert_eq!(got, want, "n = {n}, k = {k}");
            let m = k.wrapping_add(9);
            exact(|| {
                accelerate!(create(n, |i| {
                    if i == k || i + 1 == m || !(i <= n / 3) && i > k {
                        a[i]
                    } else {
                        a[i + 1] - a[i]
                    }
                }))
            }); // mixed
            exact(|| {
                accelerate!(create(n, |i| if i >= k && i - k < 20 {
                    a[i] - 1.0
                } else {
                    a[i] + 1.0
                }))
            }); // window
        }
    }
    // `let`s before the `if`, read through.
    for n in [0usize, 5, 16, 17, 100, 1000] {
        let a = rng.f64s(n + 1, -1.0, 1.0);
        for k in [0, 1, 16, n / 2, n] {
            let got = exact(|| {
                accelerate!(create(n, |i| {
                    let m = k + 3;
                    let j = i;
                    if j + 1 < m {
                        a[j + 1]
                    } else {
                        a[j] * 0.5
                    }
                }))
            }); // through lets
            let want: Vec<f64> = (0..n)
                .map(|i| if i + 1 < k + 3 { a[i + 1] } else { a[i] * 0.5 })
                .collect();
            assert_eq!(got, want, "n = {n}, k = {k}");
        }
    }
    for marker in ["// below", "// mixed", "// window", "// through lets"] {
        vectorized(marker);
        let site = site_of("simd_rows.rs", SOURCE, marker);
        let shapes = cpu_gang_shapes(&site).unwrap_or_default();
        assert!(
            shapes.iter().any(|s| s == "settled if"),
            "{site}: {shapes:?}"
        );
    }
}

#[test]
fn strided_walks_are_bit_identical() {
    let mut rng = Rng(23);
    for (n, m) in [
        (3usize, 2usize),
        (5, 7),
        (16, 3),
        (17, 16),
        (33, 5),
        (40, 33),
    ] {
        let a = rng.f64s(n * m, -1.0, 1.0);
        let c = rng.f64s(n * n, -1.0, 1.0);
        // syrk's element: the lower triangle, a column walk per lane under a mask.
        exact(|| {
            accelerate!(create(n * n, |p| {
                let i = p / n;
                let j = p % n;
                if j <= i {
                    let mut acc = 0.0;
                    for k in 0..m {
                        acc += a[i * m + k] * a[j * m + k];
                    }
                    0.5 * c[p] + 1.5 * acc
                } else {
                    c[p]
                }
            }))
        }); // masked columns
            // Every lane running: a transposed read, and strides minus a constant.
        exact(|| accelerate!(create(n * m, |p| a[(p % n) * m + p / n]))); // transpose
        exact(|| accelerate!(create(n, |j| a[j * m] - a[j * m + m - 1]))); // row ends
    }
    for marker in ["// masked columns", "// transpose", "// row ends"] {
        vectorized(marker);
    }
    // A walk past the end fails naming the first lane out of bounds.
    let a = rng.f64s(40, 0.0, 1.0);
    let m = panic_message(|| {
        with_mode(Mode::Cpu, || accelerate!(create(16, |j| a[j * 3])));
    });
    assert!(m.contains("index out of bounds") && m.contains("42"), "{m}");
}

#[test]
fn row_walks_and_column_walks_are_bit_identical() {
    let mut rng = Rng(29);
    for (n, m) in [
        (1usize, 3usize),
        (3, 1),
        (4, 17),
        (5, 64),
        (31, 9),
        (33, 40),
        (70, 5),
    ] {
        let a = rng.f64s(n * m, -1.0, 1.0);
        let b = rng.f64s(n * m, -1.0, 1.0);
        let x = rng.f64s(m, -1.0, 1.0);
        // gesummv's element: each lane walks its own row of two matrices.
        exact(|| {
            accelerate!(create(n, |i| {
                let mut t = 0.0;
                let mut y = 0.0;
                for j in 0..m {
                    t += a[i * m + j] * x[j];
                    y += b[i * m + j] * x[j];
                }
                1.5 * t + 2.5 * y
            }))
        }); // two rows
            // The stride on the left of the product, a running value carried along.
        exact(|| {
            accelerate!(create(n, |i| {
                let mut acc = 0.0;
                for j in 1..m {
                    acc = acc * 0.5 + a[m * i + j];
                }
                acc
            }))
        }); // stride first
            // A walk down columns: consecutive across the lanes, run in blocks of rows over
            // tiles of gangs.
        let t = rng.f64s(n, -1.0, 1.0);
        exact(|| {
            accelerate!(create(m, |j| {
                let mut acc = 0.0;
                for i in 0..n {
                    acc += a[i * m + j] * t[i];
                }
                acc
            }))
        }); // columns
    }
    // Long rows: chunks of many gangs, tiles of up to 64 of them (a chunk's last tile
    // shorter), an overlapping last gang.
    for (n, m) in [(3usize, 9001usize), (2, 20000), (0, 5000)] {
        let a = rng.f64s(n * m, -1.0, 1.0);
        let t = rng.f64s(n, -1.0, 1.0);
        let c = rng.f64s(m, -1.0, 1.0);
        exact(|| {
            accelerate!(create(m, |j| {
                let mut acc = c[j];
                for i in 0..n {
                    acc = acc * 0.75 + a[i * m + j] * t[i];
                }
                acc * 2.0
            }))
        }); // long columns
    }
    for marker in [
        "// two rows",
        "// stride first",
        "// columns",
        "// long columns",
    ] {
        vectorized(marker);
        let site = site_of("simd_rows.rs", SOURCE, marker);
        let shapes = cpu_gang_shapes(&site).unwrap_or_default();
        let has = |shape: &str| shapes.iter().any(|s| s == shape);
        let columns = marker.ends_with("columns");
        assert_eq!(
            has("row walk per lane"),
            !columns,
            "{site} ({marker}): {shapes:?}"
        );
        assert_eq!(
            has("blocked columns"),
            columns,
            "{site} ({marker}): {shapes:?}"
        );
    }
    // A 2-D element's row (`p / n`) is the same across its gang: not a walk per lane.
    let (n, m) = (9usize, 13usize);
    let a = rng.f64s(n * m, -1.0, 1.0);
    exact(|| {
        accelerate!(create(n * n, |p| {
            let i = p / n;
            let mut acc = 0.0;
            for k in 0..m {
                acc += a[i * m + k];
            }
            acc + (p % n) as f64
        }))
    }); // 2-D rows
    let site = site_of("simd_rows.rs", SOURCE, "// 2-D rows");
    let shapes = cpu_gang_shapes(&site).unwrap_or_default();
    assert!(
        !shapes.iter().any(|s| s == "row walk per lane"),
        "{shapes:?}"
    );
}

#[test]
fn three_dimensional_rows_are_bit_identical() {
    let mut rng = Rng(29);
    for n in [3usize, 5, 17, 20, 24] {
        let nn = n * n;
        let a = rng.f64s(n * nn, -1.0, 1.0);
        exact(|| {
            accelerate!(create(n * nn, |p| {
                let i = p / nn;
                let j = p / n % n;
                let k = p % n;
                if i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1 {
                    a[p] + (i * 100 + j * 10 + k) as f64
                } else {
                    0.125 * (a[p + nn] - 2.0 * a[p] + a[p - nn])
                        + 0.125 * (a[p + n] - 2.0 * a[p] + a[p - n])
                        + 0.125 * (a[p + 1] - 2.0 * a[p] + a[p - 1])
                        + a[p]
                }
            }))
        }); // heat
            // A middle coordinate through a name, and a remainder by a literal: each row's
            // value computed once at its start.
        exact(|| {
            accelerate!(create(n * nn, |p| {
                let q = p / n;
                let j = q % n;
                let band = (p / nn) % 2;
                a[p] * (j as f64) + (band as f64) - ((q / 3) % 5) as f64
            }))
        }); // per row
    }
    for marker in ["// heat", "// per row"] {
        vectorized(marker);
        let site = site_of("simd_rows.rs", SOURCE, marker);
        let shapes = cpu_gang_shapes(&site).unwrap_or_default();
        assert!(
            shapes.iter().any(|s| s == "row values"),
            "{site}: {shapes:?}"
        );
    }
}
