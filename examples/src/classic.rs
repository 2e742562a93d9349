//! The classic array benchmarks: sum, dot product, SAXPY, Black-Scholes, Mandelbrot, N-body
//! and k-means, each as a user would write it with `accelerate!`.

//!
//! Inputs are random from fixed seeds ([`crate::random`]), the same numbers the peers'
//! script builds.

use crate::random::{below, uniform};
use crate::{close, measure, Report};
use accel_runtime::prelude::*;

/// `Σ x`.
pub fn sum(small: bool) -> Report {
    let n = if small { 10_000 } else { 1 << 25 };
    let x = uniform(n, 1, 0.0, 1.0);
    measure(
        "sum",
        format!("{n} f32"),
        || x.iter().map(|&v| v as f64).sum::<f64>() as f32,
        || accelerate!(reduce(|a, b| a + b, 0.0, &x)),
        // As the dot product's: debug mode's one f32 addition after another drifts.
        |mode, got, want| {
            close(
                &[*got],
                &[*want],
                if mode == Mode::Debug { 5e-2 } else { 1e-4 },
            )
        },
    )
}

/// `x · y`.
pub fn dot(small: bool) -> Report {
    let n = if small { 10_000 } else { 1 << 25 };
    let (x, y) = (uniform(n, 1, -1.0, 1.0), uniform(n, 2, -1.0, 1.0));
    measure(
        "dot",
        format!("{n} f32"),
        || {
            x.iter()
                .zip(&y)
                .map(|(a, b)| *a as f64 * *b as f64)
                .sum::<f64>() as f32
        },
        || accelerate!(reduce(|a, b| a + b, 0.0, map2(|a, b| a * b, &x, &y))),
        // Debug mode runs the sum as written, one f32 addition after another: over 2^25
        // terms that drifts by a few percent from the exact (f64) sum; the parallel
        // backends' many partial sums stay within 1e-4 of it.
        |mode, got, want| {
            close(
                &[*got],
                &[*want],
                if mode == Mode::Debug { 5e-2 } else { 1e-4 },
            )
        },
    )
}

/// `a x + y`.
pub fn saxpy(small: bool) -> Report {
    let n = if small { 10_000 } else { 1 << 25 };
    let (x, y, a) = (uniform(n, 3, -1.0, 1.0), uniform(n, 4, -1.0, 1.0), 2.5f32);
    measure(
        "saxpy",
        format!("{n} f32"),
        || {
            x.iter()
                .zip(&y)
                .map(|(x, y)| a * x + y)
                .collect::<Vec<f32>>()
        },
        || accelerate!(map2(|x, y| a * x + y, &x, &y)),
        |_, got, want| close(got, want, 0.0),
    )
}

/// The cumulative normal distribution (the benchmark's polynomial approximation).
#[accel]
pub fn cnd(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.231_641_9 * d.abs());
    let poly = k
        * (0.319_381_53
            + k * (-0.356_563_78 + k * (1.781_477_9 + k * (-1.821_256 + k * 1.330_274_5))));
    let w = 1.0 - 0.398_942_3 * (-0.5 * d * d).exp() * poly;
    if d < 0.0 {
        1.0 - w
    } else {
        w
    }
}

/// The Black-Scholes price of a European call.
#[accel]
pub fn call_price(s: f32, x: f32, t: f32, r: f32, v: f32) -> f32 {
    let sqrt_t = t.sqrt();
    let d1 = ((s / x).ln() + (r + 0.5 * v * v) * t) / (v * sqrt_t);
    let d2 = d1 - v * sqrt_t;
    s * cnd(d1) - x * (-r * t).exp() * cnd(d2)
}

/// The call and put prices of a European option with a 2% rate and 30% volatility, as a
/// user writes it: one function over the option's three numbers.
#[accel]
pub fn black_scholes_option(price: f32, strike: f32, years: f32) -> (f32, f32) {
    let rate = 0.02f32;
    let volatility = 0.30f32;
    let sqrt_t = years.sqrt();
    let d1 = ((price / strike).ln() + (rate + 0.5 * volatility * volatility) * years)
        / (volatility * sqrt_t);
    let d2 = d1 - volatility * sqrt_t;
    let discounted = strike * (-rate * years).exp();
    let call = price * cnd(d1) - discounted * cnd(d2);
    let put = discounted * (1.0 - cnd(d2)) - price * (1.0 - cnd(d1));
    (call, put)
}

/// A book of random options: prices in [5, 30), strikes in [1, 100), maturities in
/// [0.25, 5) years.
pub fn option_book(n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    (
        uniform(n, 5, 5.0, 30.0),
        uniform(n, 6, 1.0, 100.0),
        uniform(n, 7, 0.25, 5.0),
    )
}

/// Prices a book of random options, call and put.
pub fn black_scholes(small: bool) -> Report {
    let n = if small { 10_000 } else { 1 << 23 };
    let (price, strike, years) = option_book(n);
    measure(
        "black-scholes",
        format!("{n} options"),
        || {
            (0..n)
                .map(|i| black_scholes_option(price[i], strike[i], years[i]))
                .collect::<Vec<(f32, f32)>>()
        },
        || {
            accelerate!(create(price.len(), |i| black_scholes_option(
                price[i], strike[i], years[i]
            )))
        },
        |_, got: &Vec<(f32, f32)>, want: &Vec<(f32, f32)>| {
            let flat =
                |v: &Vec<(f32, f32)>| -> Vec<f32> { v.iter().flat_map(|&(c, p)| [c, p]).collect() };
            close(&flat(got), &flat(want), 1e-5)
        },
    )
}

/// Iterations until the orbit of pixel `k` of a `w` x `h` view escapes (at most 256).
#[accel]
pub fn escape_time(k: usize, w: usize, h: usize) -> u32 {
    let cx = (k % w) as f64 / w as f64 * 3.0 - 2.0;
    let cy = (k / w) as f64 / h as f64 * 2.0 - 1.0;
    let (mut x, mut y) = (0.0, 0.0);
    let mut i = 0u32;
    while i < 256 && x * x + y * y <= 4.0 {
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        i += 1;
    }
    i
}

/// The Mandelbrot set (uneven work per pixel).
pub fn mandelbrot(small: bool) -> Report {
    let side = if small { 128 } else { 2048 };
    measure(
        "mandelbrot",
        format!("{side}x{side}"),
        || {
            (0..side * side)
                .map(|k| escape_time(k, side, side))
                .collect::<Vec<u32>>()
        },
        || accelerate!(create(side * side, |k| escape_time(k, side, side))),
        |_, got, want| {
            if got == want {
                Ok(())
            } else {
                Err("pixels differ".into())
            }
        },
    )
}

/// The gravitational acceleration along x on every body (all pairs, softened).
pub fn nbody(small: bool) -> Report {
    let n = if small { 512 } else { 16_384 };
    let px = uniform(n, 8, -100.0, 100.0);
    let py = uniform(n, 9, -100.0, 100.0);
    let pm = uniform(n, 10, 1.0, 8.0);
    let reference = || {
        (0..n)
            .map(|i| {
                let mut ax = 0.0f32;
                for j in 0..n {
                    let (dx, dy) = (px[j] - px[i], py[j] - py[i]);
                    let d2 = dx * dx + dy * dy + 0.01;
                    ax += pm[j] * dx / (d2 * d2.sqrt());
                }
                ax
            })
            .collect::<Vec<f32>>()
    };
    measure(
        "n-body",
        format!("{n} bodies"),
        reference,
        || {
            accelerate!(create(px.len(), |i| {
                let mut ax = 0.0f32;
                for j in 0..px.len() {
                    let dx = px[j] - px[i];
                    let dy = py[j] - py[i];
                    let d2 = dx * dx + dy * dy + 0.01;
                    ax += pm[j] * dx / (d2 * d2.sqrt());
                }
                ax
            }))
        },
        |_, got, want| close(got, want, 1e-5),
    )
}

/// The index of the centroid nearest to `(x, y)`.
#[accel]
pub fn nearest(x: f32, y: f32, cx: &[f32], cy: &[f32]) -> usize {
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

/// How k-means sums each cluster's points.
#[derive(Clone, Copy, PartialEq)]
enum ClusterSums {
    /// One `reduce_by_index` over the assignments: a histogram of sums and counts.
    Histogram,
    /// One reduction per cluster over all points, each keeping its cluster's (the form
    /// before `reduce_by_index`: `k` passes over the points, one launch).
    PerCluster,
}

/// k-means: assign every point to its nearest centroid, then move each centroid to the
/// mean of its points; ten rounds from the first k points. Sums per cluster with
/// `reduce_by_index`.
pub fn kmeans(small: bool) -> Report {
    kmeans_with(small, ClusterSums::Histogram)
}

/// k-means with one reduction per cluster for the sums ([`kmeans`]' former form, kept to
/// measure what `reduce_by_index` gained).
pub fn kmeans_per_cluster(small: bool) -> Report {
    kmeans_with(small, ClusterSums::PerCluster)
}

fn kmeans_with(small: bool, form: ClusterSums) -> Report {
    let (n, k) = if small { (2_000, 4) } else { (1 << 20, 8) };
    // Points scattered around k random cluster centres (c * 10, c * -5).
    let cluster = below(n, 11, k);
    let xs: Vec<f32> = cluster
        .iter()
        .zip(uniform(n, 12, 0.0, 5.0))
        .map(|(&c, u)| c as f32 * 10.0 + u)
        .collect();
    let ys: Vec<f32> = cluster
        .iter()
        .zip(uniform(n, 13, 0.0, 5.0))
        .map(|(&c, u)| c as f32 * -5.0 + u)
        .collect();
    let rounds = |accelerated: bool| {
        let (mut cx, mut cy) = (xs[..k].to_vec(), ys[..k].to_vec());
        for _ in 0..10 {
            let assign: Vec<usize> = if accelerated {
                accelerate!(map2(|x, y| nearest(x, y, &cx, &cy), &xs, &ys))
            } else {
                xs.iter()
                    .zip(&ys)
                    .map(|(&x, &y)| nearest(x, y, &cx, &cy))
                    .collect()
            };
            let sums: Vec<(f32, f32, u32)> = match (accelerated, form) {
                // A histogram over the assignments.
                (true, ClusterSums::Histogram) => accelerate!(reduce_by_index(
                    vec![(0.0f32, 0.0f32, 0u32); k],
                    |a: (f32, f32, u32), b: (f32, f32, u32)| (a.0 + b.0, a.1 + b.1, a.2 + b.2),
                    (0.0, 0.0, 0),
                    &assign,
                    create(n, |i| (xs[i], ys[i], 1))
                )),
                (true, ClusterSums::PerCluster) => accelerate!(create(k, |c| reduce(
                    |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2),
                    (0.0, 0.0, 0),
                    create(assign.len(), |i| if assign[i] == c {
                        (xs[i], ys[i], 1)
                    } else {
                        (0.0, 0.0, 0)
                    })
                ))),
                (false, _) => {
                    let mut sums = vec![(0.0f32, 0.0f32, 0u32); k];
                    for ((&c, &x), &y) in assign.iter().zip(&xs).zip(&ys) {
                        sums[c] = (sums[c].0 + x, sums[c].1 + y, sums[c].2 + 1);
                    }
                    sums
                }
            };
            for (c, (sx, sy, count)) in sums.into_iter().enumerate() {
                if count > 0 {
                    cx[c] = sx / count as f32;
                    cy[c] = sy / count as f32;
                }
            }
        }
        [cx, cy].concat()
    };
    let name = match form {
        ClusterSums::Histogram => "k-means",
        ClusterSums::PerCluster => "k-means (per cluster)",
    };
    measure(
        name,
        format!("{n} points, k = {k}"),
        || rounds(false),
        || rounds(true),
        |_, got, want| close(got, want, 1e-3),
    )
}
