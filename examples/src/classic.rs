//! The classic array benchmarks: dot product, SAXPY, Black-Scholes, Mandelbrot, N-body and
//! k-means, each as a user would write it with `accelerate!`.

use crate::{close, measure, Report};
use accel_runtime::prelude::*;

fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 + seed * 104_729) % 2000) as f32 * 1e-3 - 1.0)
        .collect()
}

/// `x · y`.
pub fn dot(small: bool) -> Report {
    let n = if small { 10_000 } else { 1 << 25 };
    let (x, y) = (data(n, 1), data(n, 2));
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
    let (x, y, a) = (data(n, 3), data(n, 4), 2.5f32);
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

/// Prices a book of options.
pub fn black_scholes(small: bool) -> Report {
    let n = if small { 10_000 } else { 1 << 23 };
    let s: Vec<f32> = (0..n).map(|i| 5.0 + (i % 25) as f32).collect();
    let x: Vec<f32> = (0..n).map(|i| 1.0 + (i % 100) as f32).collect();
    let t: Vec<f32> = (0..n).map(|i| 0.25 + (i % 10) as f32 * 0.5).collect();
    let (r, v) = (0.02f32, 0.30f32);
    measure(
        "black-scholes",
        format!("{n} options"),
        || {
            (0..n)
                .map(|i| call_price(s[i], x[i], t[i], r, v))
                .collect::<Vec<f32>>()
        },
        || accelerate!(create(s.len(), |i| call_price(s[i], x[i], t[i], r, v))),
        |_, got, want| close(got, want, 1e-5),
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
    let px: Vec<f32> = (0..n).map(|i| (i as f32 * 0.618).sin() * 100.0).collect();
    let py: Vec<f32> = (0..n).map(|i| (i as f32 * 0.414).cos() * 100.0).collect();
    let pm: Vec<f32> = (0..n).map(|i| 1.0 + (i % 7) as f32).collect();
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

/// k-means: assign every point to its nearest centroid, then move each centroid to the
/// mean of its points; ten rounds from the first k points.
pub fn kmeans(small: bool) -> Report {
    let (n, k) = if small { (2_000, 4) } else { (1 << 20, 8) };
    let xs: Vec<f32> = (0..n)
        .map(|i| ((i % k) as f32) * 10.0 + ((i * 7919) % 100) as f32 * 0.05)
        .collect();
    let ys: Vec<f32> = (0..n)
        .map(|i| ((i % k) as f32) * -5.0 + ((i * 104_729) % 100) as f32 * 0.05)
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
            let sums: Vec<(f32, f32, u32)> = if accelerated {
                accelerate!(create(k, |c| reduce(
                    |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2),
                    (0.0, 0.0, 0),
                    create(assign.len(), |i| if assign[i] == c {
                        (xs[i], ys[i], 1)
                    } else {
                        (0.0, 0.0, 0)
                    })
                )))
            } else {
                (0..k)
                    .map(|c| {
                        (0..n)
                            .filter(|&i| assign[i] == c)
                            .fold((0.0, 0.0, 0), |a, i| (a.0 + xs[i], a.1 + ys[i], a.2 + 1))
                    })
                    .collect()
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
    measure(
        "k-means",
        format!("{n} points, k = {k}"),
        || rounds(false),
        || rounds(true),
        |_, got, want| close(got, want, 1e-3),
    )
}
