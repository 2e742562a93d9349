//! Loops to convergence for gangs of lanes (a `while` whose test differs between lanes):
//! a lane that left the loop may go on computing the variables nothing after the loop
//! reads (Mandelbrot's `x` and `y`), never those read later, those assigned under an
//! `if` inside the loop, or a loop's inside another loop. Each site against debug mode,
//! bit for bit, at every tier, and checked to run on SIMD lanes.

// `accelerate!` takes a closure where a sequential map could take the function.
#![allow(clippy::redundant_closure)]

use accel_runtime::prelude::*;

mod common;

use common::exact;

const SOURCE: &str = include_str!("simd_loops.rs");

/// Escape times of `n` points of a row of the Mandelbrot set, in `f64` or `f32`.
#[accel]
fn escape64(k: usize, n: usize) -> u32 {
    let cx = k as f64 / n as f64 * 3.0 - 2.0;
    let cy = 0.3f64;
    let (mut x, mut y) = (0.0f64, 0.0f64);
    let mut i = 0u32;
    while i < 200 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        i += 1;
    }
    i
}

#[accel]
fn escape32(k: usize, n: usize) -> u32 {
    let cx = k as f32 / n as f32 * 3.0 - 2.0;
    let (mut x, mut y) = (0.0f32, 0.0f32);
    let mut i = 0u32;
    while i < 200 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y - 0.4;
        x = t;
        i += 1;
    }
    i
}

/// `x` is read after the loop: every lane keeps the value it left with.
#[accel]
fn last_orbit(k: usize, n: usize) -> (u32, f64) {
    let c = k as f64 / n as f64 * 2.5 - 2.0;
    let mut x = 0.0f64;
    let mut i = 0u32;
    while i < 100 && x * x <= 4.0 {
        x = x * x + c;
        i += 1;
    }
    (i, x)
}

/// `x` is assigned under an `if` inside the loop: lanes that take the other arm keep it.
#[accel]
fn branching_steps(k: usize) -> u32 {
    let mut x = (k % 97) as f64;
    let mut steps = 0u32;
    while x < 1000.0 && steps < 60 {
        if x > 5.0 {
            x = x * 1.5 + 1.0;
        } else {
            x += 2.0;
        }
        steps += 1;
    }
    steps
}

/// The loop runs once per step of an outer loop, `x` carried from one to the next (read
/// by the loop's own test only: a lane that went on would re-enter with another `x`).
#[accel]
fn nested_counts(k: usize) -> u32 {
    let mut x = (k % 13) as f64;
    let mut total = 0u32;
    for step in 0..3 {
        let mut i = 0u32;
        while i < 40 && (x + step as f64) % 9.0 != 0.0 {
            x += 1.0;
            i += 1;
        }
        total = total * 50 + i;
    }
    total
}

#[test]
fn escaped_lanes_run_free_and_every_count_is_exact() {
    for n in [1usize, 3, 16, 17, 33, 257, 2048] {
        exact(|| accelerate!(create(n, |k| escape64(k, n)))); // f64 escape
        exact(|| accelerate!(create(n, |k| escape32(k, n)))); // f32 escape
        exact(|| accelerate!(create(n, |k| last_orbit(k, n)))); // read after
        exact(|| accelerate!(create(n, |k| branching_steps(k)))); // branches
        exact(|| accelerate!(create(n, |k| nested_counts(k)))); // nested
    }
    for marker in [
        "// f64 escape",
        "// f32 escape",
        "// read after",
        "// branches",
        "// nested",
    ] {
        common::assert_vectorized("simd_loops.rs", SOURCE, marker);
    }
}

/// Whether `x` is prime, by trial division: lanes leave the loop at their smallest
/// factor, primes only at their square root.
#[accel]
fn is_prime(x: u64) -> bool {
    let mut d = 2u64;
    let mut prime = x >= 2;
    while prime && d * d <= x {
        if x.is_multiple_of(d) {
            prime = false;
        }
        d += 1;
    }
    prime
}

/// The same test by `%`.
#[accel]
#[allow(clippy::manual_is_multiple_of)] // the operator's own path is tested
fn is_prime_by_rem(x: u64) -> bool {
    let mut d = 2u64;
    let mut prime = x >= 2;
    while prime && d * d <= x {
        if x % d == 0 {
            prime = false;
        }
        d += 1;
    }
    prime
}

/// Halvings of `x`'s Collatz orbit by a constant power of two: vector shifts and masks.
#[accel]
fn collatz_steps(x: u64) -> u32 {
    let (mut v, mut k) = (x.max(1), 0u32);
    while v != 1 {
        v = if v.is_multiple_of(2) {
            v / 2
        } else {
            3 * v + 1
        };
        k += 1;
    }
    k
}

/// A loop whose lanes leave at different steps and divides lane by lane runs as scalar
/// code, which makes the same divisions without waiting for the gang's last lane (trial
/// division ran 7x slower in gangs); one dividing by a constant power of two stays on
/// SIMD lanes.
#[test]
fn a_varying_loop_dividing_lane_by_lane_runs_as_scalar_code() {
    use accel_runtime::__private::cpu_spmd_fallbacks;
    for n in [0u64, 1, 17, 300, 5000] {
        let primes = exact(|| accelerate!((0..n).into_par_iter().filter(|x| is_prime(*x)).count())); // trial division
        assert_eq!(primes, (0..n).filter(|&x| is_prime(x)).count());
        let by_rem = exact(|| {
            accelerate!((0..n)
                .into_par_iter()
                .filter(|x| is_prime_by_rem(*x))
                .count())
        }); // by rem
        assert_eq!(by_rem, primes);
        let longest = exact(|| {
            accelerate!((1..n + 1)
                .into_par_iter()
                .map(|x| collatz_steps(x))
                .fold(0, |a, b| a.max(b))) // halvings
        });
        assert_eq!(longest, (1..n + 1).map(collatz_steps).max().unwrap_or(0));
    }
    common::assert_vectorized("simd_loops.rs", SOURCE, "// halvings");
    for marker in ["// trial division", "// by rem"] {
        let site = common::site_of("simd_loops.rs", SOURCE, marker);
        let fallbacks = cpu_spmd_fallbacks(&site).expect("the site ran on the CPU");
        assert!(
            !fallbacks.is_empty()
                && fallbacks
                    .iter()
                    .all(|why| why.contains("divides lane by lane")),
            "{site}: {fallbacks:?}"
        );
    }
}
