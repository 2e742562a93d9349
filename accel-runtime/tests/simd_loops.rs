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
