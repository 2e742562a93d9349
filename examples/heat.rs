//! A program that keeps its data in `ndarray` arrays (feature `ndarray`): heat spreading
//! over a metal plate. The plate is an `Array2<f32>`; each step writes the next plate in
//! place through `with_tensor` from a site that reads the current one as a captured 2-d
//! array (`cur[[i, j]]`, ndarray's own indexing); per-row statistics come back as arrays.
//! Every result is checked against the same computation written with ndarray alone.
//!
//! `cargo run --release -p accel-examples --bin heat` (`--small` for a quick run).

use accel_examples::random::uniform;
use accel_runtime::arrays::{array1, with_tensor};
use accel_runtime::prelude::*;
use ndarray::{s, Array1, Array2, Axis, Zip};

/// How much of the difference to its neighbours' mean a cell takes per step.
const RATE: f32 = 0.2;

/// One explicit diffusion step: every interior cell moves toward its four neighbours'
/// mean; the border (held at fixed temperatures) is copied.
fn step(cur: &Array2<f32>, next: &mut Array2<f32>) {
    let (h, w) = cur.dim();
    with_tensor(next, |t| {
        accelerate!(parallel_loop(h * w, |k| {
            let (i, j) = (k / w, k % w);
            let here = cur[[i, j]];
            if i == 0 || j == 0 || i == h - 1 || j == w - 1 {
                t.set([i, j], here)
            } else {
                let around = cur[[i - 1, j]] + cur[[i + 1, j]] + cur[[i, j - 1]] + cur[[i, j + 1]];
                t.set([i, j], here + RATE * (0.25 * around - here))
            }
        }))
    });
}

/// The same step written with ndarray alone (the reference).
fn step_reference(cur: &Array2<f32>) -> Array2<f32> {
    let mut next = cur.clone();
    let (h, w) = cur.dim();
    Zip::from(next.slice_mut(s![1..h - 1, 1..w - 1]))
        .and(cur.slice(s![1..h - 1, 1..w - 1]))
        .and(cur.slice(s![..h - 2, 1..w - 1]))
        .and(cur.slice(s![2.., 1..w - 1]))
        .and(cur.slice(s![1..h - 1, ..w - 2]))
        .and(cur.slice(s![1..h - 1, 2..]))
        .for_each(|n, &c, &up, &down, &left, &right| {
            *n = c + RATE * (0.25 * (up + down + left + right) - c)
        });
    next
}

fn main() {
    let small = std::env::args().any(|a| a == "--small");
    let (h, w, steps) = if small {
        (64, 48, 20)
    } else {
        (1024, 1024, 200)
    };
    println!("heat: a {h}x{w} plate, {steps} steps");
    // A random plate (fixed seed) with a hot left edge and a cold right one.
    let mut plate =
        Array2::from_shape_vec((h, w), uniform(h * w, 7, 15.0, 25.0)).expect("h * w values");
    plate.column_mut(0).fill(100.0);
    plate.column_mut(w - 1).fill(0.0);
    let mut reference = plate.clone();

    let start = std::time::Instant::now();
    let mut next = Array2::<f32>::zeros((h, w));
    for _ in 0..steps {
        step(&plate, &mut next);
        std::mem::swap(&mut plate, &mut next);
    }
    let elapsed = start.elapsed();
    for _ in 0..steps {
        reference = step_reference(&reference);
    }
    let worst = Zip::from(&plate)
        .and(&reference)
        .fold(0.0f32, |m, a, b| m.max((a - b).abs()));
    assert!(worst <= 1e-4, "the plate differs from ndarray's by {worst}");

    // Per-row mean temperature: a 2-d array read as rows, the result made an Array1.
    let width = w as f32;
    let row_means: Array1<f32> = array1(accelerate!(map(
        |row| reduce(|a, b| a + b, 0.0, &row) / width,
        &plate
    )));
    let expected = plate.mean_axis(Axis(1)).expect("rows");
    let worst_mean = Zip::from(&row_means)
        .and(&expected)
        .fold(0.0f32, |m, a, b| m.max((a - b).abs()));
    assert!(worst_mean <= 1e-3, "row means differ by {worst_mean}");
    // The hottest interior cell, over a 1-d view of the whole plate (standard layout:
    // read in place).
    let cells = plate
        .view()
        .into_shape_with_order(h * w)
        .expect("contiguous");
    let hottest_interior = accelerate!(cells
        .par_iter()
        .enumerate()
        .filter(|(k, _)| k % w != 0)
        .map(|(_, t)| *t)
        .fold(f32::MIN, f32::max));
    let expected_hottest = plate.slice(s![.., 1..]).fold(f32::MIN, |m, t| m.max(*t));
    assert_eq!(hottest_interior, expected_hottest);

    println!(
        "mean temperature {:.3}, row 0 {:.3}, hottest interior cell {:.3}",
        row_means.mean().expect("rows"),
        row_means[0],
        hottest_interior
    );
    println!(
        "{steps} steps in {:.1} ms ({}); every result matches ndarray's",
        elapsed.as_secs_f64() * 1e3,
        mode().map_or("?".to_string(), |m| m.to_string())
    );
}
