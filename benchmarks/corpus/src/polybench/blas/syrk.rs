//! PolyBench's syrk, LARGE (M = 1000, N = 1200): the lower triangle of `C = alpha A A^T +
//! beta C` for an N x M matrix `A` and an N x N `C`, with `alpha = 1.5`, `beta = 1.2`; the
//! strict upper triangle of `C` is left as it was.
//!
//! The accel form is one element of `C` per output (those above the diagonal copied), a
//! loop over `k` reading rows `i` and `j` of `A`. The rayon form builds rows in parallel,
//! each lower element a dot product of two contiguous rows (PolyBench's k-outside loop
//! order would read columns).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Syrk {
    m: usize,
    n: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    c: Vec<f64>,
}

impl Syrk {
    pub fn new(scale: Scale) -> Syrk {
        let (m, n) = scale.pick((19, 29), (1000, 1200));
        Syrk {
            m,
            n,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(n * m, 435, 0.0, 1.0),
            c: matrix(n * n, 436, 0.0, 1.0),
        }
    }
}

impl Program for Syrk {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let a = &self.a;
        let mut c = self.c.clone();
        for i in 0..n {
            for j in 0..=i {
                c[i * n + j] *= beta;
            }
            for k in 0..m {
                for j in 0..=i {
                    c[i * n + j] += alpha * a[i * m + k] * a[j * m + k];
                }
            }
        }
        c
    }

    fn rayon(&self) -> Vec<f64> {
        let (m, alpha, beta) = (self.m, self.alpha, self.beta);
        let a = &self.a;
        let mut c = self.c.clone();
        c.par_chunks_mut(self.n).enumerate().for_each(|(i, row)| {
            let ai = &a[i * m..(i + 1) * m];
            for (j, v) in row[..=i].iter_mut().enumerate() {
                let dot: f64 = ai
                    .iter()
                    .zip(&a[j * m..(j + 1) * m])
                    .map(|(p, q)| p * q)
                    .sum();
                *v = beta * *v + alpha * dot;
            }
        });
        c
    }

    fn accel(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let (a, c) = (&self.a, &self.c);
        accelerate!(create(n * n, |p| {
            let i = p / n;
            let j = p % n;
            if j <= i {
                let mut acc = 0.0;
                for k in 0..m {
                    acc += a[i * m + k] * a[j * m + k];
                }
                beta * c[p] + alpha * acc
            } else {
                c[p]
            }
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, self.m as f64)
    }
}
