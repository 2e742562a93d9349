//! PolyBench's symm, LARGE (M = 1000, N = 1200): `C = alpha A B + beta C` with `A` an
//! M x M symmetric matrix of which only the lower triangle is read (the upper holds random
//! numbers that no form may use), `B` and `C` M x N, `alpha = 1.5`, `beta = 1.2`.
//!
//! The sequential form is PolyBench's loop, which scatters into earlier rows of `C`. The
//! accel form is one element per output, reading `A[i][k]` for `k <= i` and `A[k][i]`
//! (a column, stride M) past the diagonal, and a column of `B`; the rayon form builds rows
//! in parallel with the i-k-j order.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Symm {
    m: usize,
    n: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Symm {
    pub fn new(scale: Scale) -> Symm {
        let (m, n) = scale.pick((23, 31), (1000, 1200));
        Symm {
            m,
            n,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(m * m, 425, 0.0, 1.0),
            b: matrix(m * n, 426, 0.0, 1.0),
            c: matrix(m * n, 427, 0.0, 1.0),
        }
    }
}

impl Program for Symm {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let (a, b) = (&self.a, &self.b);
        let mut c = self.c.clone();
        for i in 0..m {
            for j in 0..n {
                let mut temp2 = 0.0;
                for k in 0..i {
                    c[k * n + j] += alpha * b[i * n + j] * a[i * m + k];
                    temp2 += b[k * n + j] * a[i * m + k];
                }
                c[i * n + j] =
                    beta * c[i * n + j] + alpha * b[i * n + j] * a[i * m + i] + alpha * temp2;
            }
        }
        c
    }

    fn rayon(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let (a, b) = (&self.a, &self.b);
        let mut c = self.c.clone();
        c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            for v in row.iter_mut() {
                *v *= beta;
            }
            for k in 0..m {
                let aik = alpha * if k <= i { a[i * m + k] } else { a[k * m + i] };
                for (v, bk) in row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                    *v += aik * bk;
                }
            }
        });
        c
    }

    fn accel(&self) -> Vec<f64> {
        let (m, n, alpha, beta) = (self.m, self.n, self.alpha, self.beta);
        let (a, b, c) = (&self.a, &self.b, &self.c);
        accelerate!(create(m * n, |p| {
            let i = p / n;
            let j = p % n;
            let mut acc = 0.0;
            for k in 0..m {
                let aik = if k <= i { a[i * m + k] } else { a[k * m + i] };
                acc += aik * b[k * n + j];
            }
            beta * c[p] + alpha * acc
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, self.m as f64)
    }
}
