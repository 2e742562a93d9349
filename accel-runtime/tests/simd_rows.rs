//! The CPU backend's gang loops over 2-D elements against debug mode: rows walked (`p /
//! w`, `p % w`), clamped neighbours (an image's edge), and elements whose long loop runs
//! in blocks over tiles of gangs (a matrix product), at sizes around the gangs' width and
//! the blocks' length; results bit-identical, each site checked to run on SIMD lanes
//! (and, for blocked loops, to take that shape).

use accel_runtime::__private::{cpu_gang_walks, cpu_simd_loops, cpu_spmd_fallbacks};
use accel_runtime::prelude::*;

mod common;

use common::{panic_message, site_of};

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

/// Runs `site` in debug and cpu modes; their results must print alike (so floats are
/// bit-identical, `-0.0` and NaN included). Returns the result.
fn exact<R: Accel + std::fmt::Debug>(site: impl Fn() -> R) -> R {
    let d = with_mode(Mode::Debug, &site);
    let c = with_mode(Mode::Cpu, &site);
    assert_eq!(format!("{c:?}"), format!("{d:?}"), "cpu and debug differ");
    d
}

/// Asserts the site ran on SIMD lanes (its kernel did not fall back to scalar code).
fn vectorized(marker: &str) {
    let site = site_of("simd_rows.rs", SOURCE, marker);
    assert!(
        cpu_simd_loops(&site).is_some_and(|n| n >= 1),
        "{site} ({marker}) did not run on SIMD lanes"
    );
    assert_eq!(
        cpu_spmd_fallbacks(&site),
        Some(vec![]),
        "{site} ({marker}) fell back to scalar kernels"
    );
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
    // Rows shorter and longer than a gang, around its width, a power of two long; loops
    // shorter and longer than a block of iterations; triangular bounds.
    for (n, m, k) in [
        (3, 1, 5),
        (5, 7, 1),
        (17, 16, 3),
        (9, 33, 70),
        (40, 128, 65),
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
            cpu_gang_walks(&site),
            Some(vec!["blocked".to_string()]),
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
