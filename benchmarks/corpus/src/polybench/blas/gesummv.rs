//! PolyBench's gesummv, LARGE (N = 1300): `y = alpha A x + beta B x` for two N x N
//! matrices, with `alpha = 1.5`, `beta = 1.2`. The vector `x` is in `[-1, 1)`.
//!
//! The accel form is one element of `y` per output with a loop over the row; the rayon
//! form maps the rows of `A` and `B` in parallel.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Gesummv {
    n: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    b: Vec<f64>,
    x: Vec<f64>,
}

impl Gesummv {
    pub fn new(scale: Scale) -> Gesummv {
        let n = scale.pick(29, 1300);
        Gesummv {
            n,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(n * n, 420, 0.0, 1.0),
            b: matrix(n * n, 421, 0.0, 1.0),
            x: matrix(n, 422, -1.0, 1.0),
        }
    }
}

impl Program for Gesummv {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}", self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (n, a, b, x) = (self.n, &self.a, &self.b, &self.x);
        let mut tmp = vec![0.0; n];
        let mut y = vec![0.0; n];
        for i in 0..n {
            tmp[i] = 0.0;
            y[i] = 0.0;
            for j in 0..n {
                tmp[i] += a[i * n + j] * x[j];
                y[i] += b[i * n + j] * x[j];
            }
            y[i] = self.alpha * tmp[i] + self.beta * y[i];
        }
        y
    }

    fn rayon(&self) -> Vec<f64> {
        let (n, x) = (self.n, &self.x);
        self.a
            .par_chunks(n)
            .zip(self.b.par_chunks(n))
            .map(|(ra, rb)| {
                let (mut t, mut y) = (0.0, 0.0);
                for ((p, q), xj) in ra.iter().zip(rb).zip(x) {
                    t += p * xj;
                    y += q * xj;
                }
                self.alpha * t + self.beta * y
            })
            .collect()
    }

    fn accel(&self) -> Vec<f64> {
        let (n, alpha, beta) = (self.n, self.alpha, self.beta);
        let (a, b, x) = (&self.a, &self.b, &self.x);
        accelerate!(create(n, |i| {
            let mut t = 0.0;
            let mut y = 0.0;
            for j in 0..n {
                t += a[i * n + j] * x[j];
                y += b[i * n + j] * x[j];
            }
            alpha * t + beta * y
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, self.n as f64)
    }
}
