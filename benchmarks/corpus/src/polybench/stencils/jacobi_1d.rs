//! PolyBench's jacobi-1d, LARGE (500 time steps, N = 2000): each step sets `B[i]` to
//! `0.33333` times the sum of `A[i-1..=i+1]` for the interior points, then `A` from `B`
//! the same way; the end points of both arrays keep their initial values, and the result
//! is `A`. The accel form is one `create` over the points per half step (the end points
//! copied), the rayon form a parallel pass over `par_windows(3)`.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

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
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        let n = a.len();
        for _ in 0..self.tsteps {
            b = accelerate!(create(n, |i| {
                if i == 0 || i == n - 1 {
                    b[i]
                } else {
                    0.33333 * (a[i - 1] + a[i] + a[i + 1])
                }
            }));
            a = accelerate!(create(n, |i| {
                if i == 0 || i == n - 1 {
                    a[i]
                } else {
                    0.33333 * (b[i - 1] + b[i] + b[i + 1])
                }
            }));
        }
        a
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
