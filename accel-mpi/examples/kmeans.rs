//! Distributed k-means: the points spread over the ranks; each round every rank assigns
//! its points to the nearest centroid (a `map2` kept distributed), the ranks' sums per
//! cluster are merged on every rank (`reduce_by_index`), and every rank moves the
//! centroids alike.
//!
//! `mpirun -n 4 target/release/examples/kmeans [--n 4194304] [--k 8] [--rounds 10]`

use accel_runtime::prelude::*;
use accel_runtime::DistVec;

mod common;
use common::*;

/// The index of the centroid nearest to `(x, y)`.
#[accel]
fn nearest(x: f32, y: f32, cx: &[f32], cy: &[f32]) -> usize {
    let mut best = 0;
    let mut best_d = f32::INFINITY;
    for c in 0..cx.len() {
        let d = (x - cx[c]) * (x - cx[c]) + (y - cy[c]) * (y - cy[c]);
        if d < best_d {
            best_d = d;
            best = c;
        }
    }
    best
}

/// One round on whole sequences (the one-process reference).
fn round_sequential(xs: &[f32], ys: &[f32], cx: &mut [f32], cy: &mut [f32]) -> Vec<u32> {
    let k = cx.len();
    let mut sums = vec![(0.0f64, 0.0f64, 0u32); k];
    for (&x, &y) in xs.iter().zip(ys) {
        let c = nearest(x, y, cx, cy);
        sums[c] = (sums[c].0 + x as f64, sums[c].1 + y as f64, sums[c].2 + 1);
    }
    update(cx, cy, &sums)
}

/// Moves each centroid to its points' mean; the clusters' sizes.
fn update(cx: &mut [f32], cy: &mut [f32], sums: &[(f64, f64, u32)]) -> Vec<u32> {
    for (c, &(sx, sy, count)) in sums.iter().enumerate() {
        if count > 0 {
            cx[c] = (sx / count as f64) as f32;
            cy[c] = (sy / count as f64) as f32;
        }
    }
    sums.iter().map(|s| s.2).collect()
}

fn main() {
    let mpi = accel_mpi::Mpi::init().expect("MPI starts");
    let world = mpi.world();
    let (n, k, rounds) = (arg("--n", 1 << 22), arg("--k", 8), arg("--rounds", 10));
    // Points around k centres (c * 10, c * -5).
    let point = |i: usize| {
        let c = (unit(i, 1) * k as f32) as usize % k;
        (
            c as f32 * 10.0 + unit(i, 2) * 5.0,
            c as f32 * -5.0 + unit(i, 3) * 5.0,
        )
    };
    let range = DistVec::<f32>::even_range(&world, n);
    let xs = DistVec::from_local(&world, range.clone().map(|i| point(i).0).collect());
    let ys = DistVec::from_local(&world, range.map(|i| point(i).1).collect());
    let first: Vec<(f32, f32)> = (0..k).map(point).collect();
    let (mut cx, mut cy): (Vec<f32>, Vec<f32>) = first.iter().copied().unzip();
    let (sizes, ms) = timed(&world, || {
        let mut sizes = Vec::new();
        for _ in 0..rounds {
            let assign = DistVec::from_site(&world, || {
                accelerate!(map2(|x, y| nearest(x, y, &cx, &cy), &xs, &ys))
            });
            let sums: Vec<(f64, f64, u32)> = accelerate!(reduce_by_index(
                vec![(0.0f64, 0.0f64, 0u32); k],
                |a: (f64, f64, u32), b: (f64, f64, u32)| (a.0 + b.0, a.1 + b.1, a.2 + b.2),
                (0.0, 0.0, 0),
                &assign,
                map2(|x: f32, y: f32| (x as f64, y as f64, 1u32), &xs, &ys)
            ));
            sizes = update(&mut cx, &mut cy, &sums);
        }
        sizes
    });
    if world.rank() == 0 {
        let (wx, wy): (Vec<f32>, Vec<f32>) = (0..n).map(point).unzip();
        let (mut rx, mut ry): (Vec<f32>, Vec<f32>) = first.iter().copied().unzip();
        let mut reference = Vec::new();
        for _ in 0..rounds {
            reference = round_sequential(&wx, &wy, &mut rx, &mut ry);
        }
        assert_eq!(sizes, reference, "the one-process clusters' sizes");
        assert_eq!(
            (&cx, &cy),
            (&rx, &ry),
            "the one-process centroids, bit for bit"
        );
        let centroids: Vec<String> = cx
            .iter()
            .zip(&cy)
            .map(|(x, y)| format!("({x:.3}, {y:.3})"))
            .collect();
        println!(
            "kmeans: {n} points, {k} clusters, {rounds} rounds on {} ranks: {ms:.1} ms; sizes {sizes:?}; centroids {}; matches the one-process run",
            world.size(),
            centroids.join(" ")
        );
    }
}
