//! PolyBench's jacobi-2d, LARGE (500 time steps, N = 1300): each step sets every interior
//! point of `B` to `0.2` times the sum of the point and its four neighbours in `A`, then
//! `A` from `B` the same way; the border rows and columns of both arrays keep their
//! initial values, and the result is `A`. The accel form is one `create` over the whole
//! grid per half step (border points copied); the rayon form runs the interior rows in
//! parallel.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Jacobi2d {
    tsteps: usize,
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Jacobi2d {
    pub fn new(scale: Scale) -> Jacobi2d {
        let (tsteps, n) = scale.pick((5, 29), (500, 1300));
        Jacobi2d {
            tsteps,
            n,
            a: matrix(n * n, 522, 0.0, 1.0),
            b: matrix(n * n, 523, 0.0, 1.0),
        }
    }
}

/// The interior rows of `to` from `from`, in parallel.
fn half_step(n: usize, from: &[f64], to: &mut [f64]) {
    to[n..(n - 1) * n]
        .par_chunks_mut(n)
        .enumerate()
        .for_each(|(r, row)| {
            let i = r + 1;
            for j in 1..n - 1 {
                row[j] = 0.2
                    * (from[i * n + j]
                        + from[i * n + j - 1]
                        + from[i * n + 1 + j]
                        + from[(1 + i) * n + j]
                        + from[(i - 1) * n + j]);
            }
        });
}

impl Program for Jacobi2d {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} steps, {}x{}", self.tsteps, self.n, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        for _ in 0..self.tsteps {
            for i in 1..n - 1 {
                for j in 1..n - 1 {
                    b[i * n + j] = 0.2
                        * (a[i * n + j]
                            + a[i * n + j - 1]
                            + a[i * n + 1 + j]
                            + a[(1 + i) * n + j]
                            + a[(i - 1) * n + j]);
                }
            }
            for i in 1..n - 1 {
                for j in 1..n - 1 {
                    a[i * n + j] = 0.2
                        * (b[i * n + j]
                            + b[i * n + j - 1]
                            + b[i * n + 1 + j]
                            + b[(1 + i) * n + j]
                            + b[(i - 1) * n + j]);
                }
            }
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let n = self.n;
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        for _ in 0..self.tsteps {
            half_step(n, &a, &mut b);
            half_step(n, &b, &mut a);
        }
        a
    }

    fn accel(&self) -> Vec<f64> {
        let n = self.n;
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        for _ in 0..self.tsteps {
            b = accelerate!(create(n * n, |p| {
                let i = p / n;
                let j = p % n;
                if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                    b[p]
                } else {
                    0.2 * (a[p] + a[p - 1] + a[p + 1] + a[p + n] + a[p - n])
                }
            }));
            a = accelerate!(create(n * n, |p| {
                let i = p / n;
                let j = p % n;
                if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                    a[p]
                } else {
                    0.2 * (b[p] + b[p - 1] + b[p + 1] + b[p + n] + b[p - n])
                }
            }));
        }
        a
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
