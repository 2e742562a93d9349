//! Distributed N-body: each rank owns a range of the bodies; every step the positions are
//! all-gathered, each rank computes its bodies' accelerations against all of them (a
//! `map2` kept distributed), and moves its bodies.
//!
//! `mpirun -n 4 target/release/examples/nbody [--n 8192] [--steps 4]`

use accel_runtime::prelude::*;
use accel_runtime::DistVec;

mod common;
use common::*;

/// The acceleration of a body at `(x, y)` from all the bodies.
#[accel]
fn pull(x: f32, y: f32, px: &[f32], py: &[f32], m: &[f32]) -> (f32, f32) {
    let mut ax = 0.0f32;
    let mut ay = 0.0f32;
    for j in 0..px.len() {
        let dx = px[j] - x;
        let dy = py[j] - y;
        let d2 = dx * dx + dy * dy + 0.01;
        let f = m[j] / (d2 * d2.sqrt());
        ax += f * dx;
        ay += f * dy;
    }
    (ax, ay)
}

const DT: f32 = 0.01;

fn main() {
    let mpi = accel_mpi::Mpi::init().expect("MPI starts");
    let world = mpi.world();
    let (n, steps) = (arg("--n", 8192), arg("--steps", 4));
    let mass: Vec<f32> = (0..n).map(|i| 1.0 + 7.0 * unit(i, 3)).collect();
    let start = |i: usize| (unit(i, 1) * 200.0 - 100.0, unit(i, 2) * 200.0 - 100.0);
    let range = DistVec::<f32>::even_range(&world, n);
    let mut px = DistVec::from_local(&world, range.clone().map(|i| start(i).0).collect());
    let mut py = DistVec::from_local(&world, range.clone().map(|i| start(i).1).collect());
    let mut vx = DistVec::from_local(&world, vec![0.0f32; range.len()]);
    let mut vy = DistVec::from_local(&world, vec![0.0f32; range.len()]);
    let ((), ms) = timed(&world, || {
        for _ in 0..steps {
            let (all_x, all_y) = (px.gather(), py.gather());
            let acc = DistVec::from_site(&world, || {
                accelerate!(map2(|x, y| pull(x, y, &all_x, &all_y, &mass), &px, &py))
            });
            vx = DistVec::from_site(&world, || {
                accelerate!(map2(|v, a: (f32, f32)| v + a.0 * DT, &vx, &acc))
            });
            vy = DistVec::from_site(&world, || {
                accelerate!(map2(|v, a: (f32, f32)| v + a.1 * DT, &vy, &acc))
            });
            px = DistVec::from_site(&world, || accelerate!(map2(|p, v| p + v * DT, &px, &vx)));
            py = DistVec::from_site(&world, || accelerate!(map2(|p, v| p + v * DT, &py, &vy)));
        }
    });
    let (fx, fy) = (px.gather_to(0), py.gather_to(0));
    if let (Some(fx), Some(fy)) = (fx, fy) {
        // The one-process run, sequential.
        let (mut x, mut y): (Vec<f32>, Vec<f32>) = (0..n).map(start).unzip();
        let (mut u, mut v) = (vec![0.0f32; n], vec![0.0f32; n]);
        for _ in 0..steps {
            let acc: Vec<(f32, f32)> = (0..n).map(|i| pull(x[i], y[i], &x, &y, &mass)).collect();
            for i in 0..n {
                u[i] += acc[i].0 * DT;
                v[i] += acc[i].1 * DT;
            }
            for i in 0..n {
                x[i] += u[i] * DT;
                y[i] += v[i] * DT;
            }
        }
        let worst = (0..n)
            .map(|i| (fx[i] - x[i]).abs().max((fy[i] - y[i]).abs()))
            .fold(0.0f32, f32::max);
        assert!(
            worst <= 1e-3,
            "positions differ from the one-process run by {worst}"
        );
        let centre: f64 = fx
            .iter()
            .zip(&mass)
            .map(|(x, m)| (*x * *m) as f64)
            .sum::<f64>()
            / mass.iter().map(|&m| m as f64).sum::<f64>();
        println!(
            "nbody: {n} bodies, {steps} steps on {} ranks: {ms:.1} ms; centre of mass x {centre:.4}; largest difference from the one-process run {worst:.2e}",
            world.size()
        );
    }
}
