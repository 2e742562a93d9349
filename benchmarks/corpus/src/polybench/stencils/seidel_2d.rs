//! PolyBench's seidel-2d at LARGE's grid (N = 2000) with 20 time steps instead of 500
//! (500 take about 25 s sequentially here): each step sweeps the interior in row-major
//! order, setting every point to the mean of its 3x3 neighbourhood, in place (a
//! Gauss-Seidel sweep: the neighbours above and to the left already have this step's
//! values). The rayon and accel forms sweep the same points by wavefronts `2i + j = d`,
//! whose points depend only on earlier wavefronts, so every form computes the same
//! values: the rayon form computes each wavefront's points in parallel into a vector and
//! writes them back; the accel form holds the grid in a `Tensor` and runs one
//! `parallel_loop` over each wavefront's points.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Seidel2d {
    tsteps: usize,
    n: usize,
    a: Vec<f64>,
}

impl Seidel2d {
    pub fn new(scale: Scale) -> Seidel2d {
        let (tsteps, n) = scale.pick((3, 23), (20, 2000));
        Seidel2d {
            tsteps,
            n,
            a: matrix(n * n, 524, 0.0, 1.0),
        }
    }
}

/// The new value of point `(i, j)`, PolyBench's expression.
fn point(a: &[f64], n: usize, i: usize, j: usize) -> f64 {
    (a[(i - 1) * n + j - 1]
        + a[(i - 1) * n + j]
        + a[(i - 1) * n + j + 1]
        + a[i * n + j - 1]
        + a[i * n + j]
        + a[i * n + j + 1]
        + a[(i + 1) * n + j - 1]
        + a[(i + 1) * n + j]
        + a[(i + 1) * n + j + 1])
        / 9.0
}

/// The rows `i` of the interior points `(i, d - 2i)` of wavefront `d`, as a range.
fn wavefront(n: usize, d: usize) -> std::ops::RangeInclusive<usize> {
    let lo = d.saturating_sub(n - 2).div_ceil(2).max(1);
    let hi = ((d - 1) / 2).min(n - 2);
    lo..=hi
}

impl Program for Seidel2d {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} steps, {}x{}", self.tsteps, self.n, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for _ in 0..self.tsteps {
            for i in 1..=n - 2 {
                for j in 1..=n - 2 {
                    a[i * n + j] = point(&a, n, i, j);
                }
            }
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for _ in 0..self.tsteps {
            for d in 3..=3 * (n - 2) {
                let rows = wavefront(n, d);
                let new: Vec<f64> = rows
                    .clone()
                    .into_par_iter()
                    .map(|i| point(&a, n, i, d - 2 * i))
                    .collect();
                for (i, v) in rows.zip(new) {
                    a[i * n + d - 2 * i] = v;
                }
            }
        }
        a
    }

    fn accel(&self) -> Vec<f64> {
        let n = self.n;
        let a = Tensor::from_vec(self.a.clone(), &[n, n]);
        for _ in 0..self.tsteps {
            for d in 3..=3 * (n - 2) {
                let rows = wavefront(n, d);
                let (first, count) = (*rows.start(), rows.count());
                accelerate!(parallel_loop(count, |k| {
                    let i = first + k;
                    let j = d - 2 * i;
                    let v = (a.get([i - 1, j - 1])
                        + a.get([i - 1, j])
                        + a.get([i - 1, j + 1])
                        + a.get([i, j - 1])
                        + a.get([i, j])
                        + a.get([i, j + 1])
                        + a.get([i + 1, j - 1])
                        + a.get([i + 1, j])
                        + a.get([i + 1, j + 1]))
                        / 9.0;
                    a.set([i, j], v);
                }));
            }
        }
        a.to_vec()
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
