//! PolyBench's trisolv, LARGE (N = 2000): solves `L x = b` for a lower-triangular `L` by
//! forward substitution, row by row. `L`'s lower triangle is random in `[-1, 1)` with `N`
//! added to the diagonal, so that it is well conditioned (PolyBench uses a formula; the
//! upper triangle is random and never read); `b` is random in `[0, 1)`. Each
//! row needs every earlier `x`, so the forms parallelise within a row: `x[i] = (b[i] -
//! L[i][..i] . x[..i]) / L[i][i]` with the dot product a parallel sum (rayon's
//! `par_iter().zip().sum()`, an iterator chain in one `accelerate!` site per row), which
//! subtracts the products in another grouping than PolyBench's running `x[i] -= ...`.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Trisolv {
    n: usize,
    l: Vec<f64>,
    b: Vec<f64>,
}

impl Trisolv {
    pub fn new(scale: Scale) -> Trisolv {
        let n = scale.pick(39, 2000);
        let mut l = matrix(n * n, 508, -1.0, 1.0);
        for i in 0..n {
            l[i * n + i] += n as f64;
        }
        Trisolv {
            n,
            l,
            b: matrix(n, 509, 0.0, 1.0),
        }
    }
}

impl Program for Trisolv {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{0}x{0}", self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (n, l) = (self.n, &self.l);
        let mut x = vec![0.0; n];
        for i in 0..n {
            x[i] = self.b[i];
            for j in 0..i {
                x[i] -= l[i * n + j] * x[j];
            }
            x[i] /= l[i * n + i];
        }
        x
    }

    fn rayon(&self) -> Vec<f64> {
        let (n, l) = (self.n, &self.l);
        let mut x = vec![0.0; n];
        for i in 0..n {
            let dot: f64 = l[i * n..i * n + i]
                .par_iter()
                .zip(&x[..i])
                .map(|(a, b)| a * b)
                .sum();
            x[i] = (self.b[i] - dot) / l[i * n + i];
        }
        x
    }

    fn accel(&self) -> Vec<f64> {
        let (n, l) = (self.n, &self.l);
        let mut x = vec![0.0; n];
        for i in 0..n {
            let dot: f64 = accelerate!(l[i * n..i * n + i]
                .par_iter()
                .zip(&x[..i])
                .map(|(a, b)| a * b)
                .sum());
            x[i] = (self.b[i] - dot) / l[i * n + i];
        }
        x
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-10, 1e-6)
    }
}
