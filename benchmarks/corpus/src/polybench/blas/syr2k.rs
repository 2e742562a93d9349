//! PolyBench's syr2k, LARGE (M = 1000, N = 1200): the lower triangle of `C = alpha A B^T +
//! alpha B A^T + beta C` for N x M matrices `A` and `B` and an N x N `C`, with `alpha =
//! 1.5`, `beta = 1.2`; the strict upper triangle of `C` is left as it was.
//!
//! The accel form is one element of `C` per output (those above the diagonal copied), a
//! loop over `k` reading rows `i` and `j` of `A` and `B`. The rayon form builds rows in
//! parallel, each lower element a pair of dot products of contiguous rows (PolyBench's
//! k-outside loop order would read columns).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Syr2k {
    m: usize,
    n: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Syr2k {
    pub fn new(scale: Scale) -> Syr2k {
        let (m, n) = scale.pick((19, 29), (1000, 1200));
        Syr2k {
            m,
            n,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(n * m, 430, 0.0, 1.0),
            b: matrix(n * m, 431, 0.0, 1.0),
            c: matrix(n * n, 432, 0.0, 1.0),
        }
    }
}

impl Program for Syr2k {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let (a, b) = (&self.a, &self.b);
        let mut c = self.c.clone();
        for i in 0..n {
            for j in 0..=i {
                c[i * n + j] *= beta;
            }
            for k in 0..m {
                for j in 0..=i {
                    c[i * n + j] +=
                        a[j * m + k] * alpha * b[i * m + k] + b[j * m + k] * alpha * a[i * m + k];
                }
            }
        }
        c
    }

    fn rayon(&self) -> Vec<f64> {
        let (m, alpha, beta) = (self.m, self.alpha, self.beta);
        let (a, b) = (&self.a, &self.b);
        let mut c = self.c.clone();
        c.par_chunks_mut(self.n).enumerate().for_each(|(i, row)| {
            let (ai, bi) = (&a[i * m..(i + 1) * m], &b[i * m..(i + 1) * m]);
            for (j, v) in row[..=i].iter_mut().enumerate() {
                let (aj, bj) = (&a[j * m..(j + 1) * m], &b[j * m..(j + 1) * m]);
                let mut acc = 0.0;
                for k in 0..m {
                    acc += aj[k] * bi[k] + bj[k] * ai[k];
                }
                *v = beta * *v + alpha * acc;
            }
        });
        c
    }

    fn accel(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let (a, b, c) = (&self.a, &self.b, &self.c);
        accelerate!(create(n * n, |p| {
            let i = p / n;
            let j = p % n;
            if j <= i {
                let mut acc = 0.0;
                for k in 0..m {
                    acc += a[j * m + k] * b[i * m + k] + b[j * m + k] * a[i * m + k];
                }
                beta * c[p] + alpha * acc
            } else {
                c[p]
            }
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 2.0 * self.m as f64)
    }
}
