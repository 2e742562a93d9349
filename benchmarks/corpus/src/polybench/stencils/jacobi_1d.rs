//! PolyBench's jacobi-1d, LARGE (500 time steps, N = 2000): each step sets `B[i]` to
//! `0.33333` times the sum of `A[i-1..=i+1]` for the interior points, then `A` from `B`
//! the same way; the end points of both arrays keep their initial values, and the result
//! is `A`. The accel form is one site, an `#[accel]` function whose loop runs the steps,
//! each half step a `create` over the points (the end points copied): a step of 2000
//! points is about a microsecond of work, so the guide's advice for loops of tiny sites
//! applies (one site per half step ran 2.5-3x slower than the sequential loop); the rayon
//! form is a parallel pass over `par_windows(3)` per half step.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// The time steps as one accelerated function: each half step a new array of the points.
#[accel]
pub fn jacobi_1d(a: &[f64], b: &[f64], tsteps: usize) -> Vec<f64> {
    let n = a.len();
    let mut a = create(n, |i| a[i]);
    let mut b = create(n, |i| b[i]);
    for _t in 0..tsteps {
        b = create(n, |i| {
            if i == 0 || i == n - 1 {
                b[i]
            } else {
                0.33333 * (a[i - 1] + a[i] + a[i + 1])
            }
        });
        a = create(n, |i| {
            if i == 0 || i == n - 1 {
                a[i]
            } else {
                0.33333 * (b[i - 1] + b[i] + b[i + 1])
            }
        });
    }
    a
}

pub struct Jacobi1d {
    tsteps: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Jacobi1d {
    pub fn new(scale: Scale) -> Jacobi1d {
        let (tsteps, n) = scale.pick((7, 37), (500, 2000));
        Jacobi1d {
            tsteps,
            a: matrix(n, 520, 0.0, 1.0),
            b: matrix(n, 521, 0.0, 1.0),
        }
    }
}

impl Program for Jacobi1d {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} steps, n = {}", self.tsteps, self.a.len())
    }

    fn sequential(&self) -> Vec<f64> {
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        let n = a.len();
        for _ in 0..self.tsteps {
            for i in 1..n - 1 {
                b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1]);
            }
            for i in 1..n - 1 {
                a[i] = 0.33333 * (b[i - 1] + b[i] + b[i + 1]);
            }
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        let n = a.len();
        for _ in 0..self.tsteps {
            b[1..n - 1]
                .par_iter_mut()
                .zip(a.par_windows(3))
                .for_each(|(x, w)| *x = 0.33333 * (w[0] + w[1] + w[2]));
            a[1..n - 1]
                .par_iter_mut()
                .zip(b.par_windows(3))
                .for_each(|(x, w)| *x = 0.33333 * (w[0] + w[1] + w[2]));
        }
        a
    }

    fn accel(&self) -> Vec<f64> {
        let (a, b, tsteps) = (&self.a, &self.b, self.tsteps);
        accelerate!(jacobi_1d(a, b, tsteps))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
