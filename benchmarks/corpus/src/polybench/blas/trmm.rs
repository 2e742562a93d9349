//! PolyBench's trmm, LARGE (M = 1000, N = 1200): `B = alpha A^T B` in place, for an M x N
//! `B` and an M x M unit lower-triangular `A` of which only the strict lower triangle is
//! read (PolyBench's loop: `B[i][j] += A[k][i] B[k][j]` for `k > i`, then `B[i][j] *=
//! alpha`, with `alpha = 1.5`). The forms other than the sequential one write a new matrix.
//!
//! The accel form is one element per output with a loop over `k > i`, reading a column of
//! `A` and a column of `B` (both strided); the rayon form builds rows in parallel, adding
//! scaled rows of `B` (i-k-j).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Trmm {
    m: usize,
    n: usize,
    alpha: f64,
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Trmm {
    pub fn new(scale: Scale) -> Trmm {
        let (m, n) = scale.pick((27, 33), (1000, 1200));
        Trmm {
            m,
            n,
            alpha: 1.5,
            a: matrix(m * m, 440, 0.0, 1.0),
            b: matrix(m * n, 441, 0.0, 1.0),
        }
    }
}

impl Program for Trmm {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n, alpha, a) = (self.m, self.n, self.alpha, &self.a);
        let mut b = self.b.clone();
        for i in 0..m {
            for j in 0..n {
                for k in i + 1..m {
                    b[i * n + j] += a[k * m + i] * b[k * n + j];
                }
                b[i * n + j] *= alpha;
            }
        }
        b
    }

    fn rayon(&self) -> Vec<f64> {
        let (m, n, alpha) = (self.m, self.n, self.alpha);
        let (a, b) = (&self.a, &self.b);
        let mut out = b.clone();
        out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            for k in i + 1..m {
                let aki = a[k * m + i];
                for (v, bk) in row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                    *v += aki * bk;
                }
            }
            for v in row.iter_mut() {
                *v *= alpha;
            }
        });
        out
    }

    fn accel(&self) -> Vec<f64> {
        let (m, n, alpha) = (self.m, self.n, self.alpha);
        let (a, b) = (&self.a, &self.b);
        accelerate!(create(m * n, |p| {
            let i = p / n;
            let j = p % n;
            let mut acc = b[p];
            for k in i + 1..m {
                acc += a[k * m + i] * b[k * n + j];
            }
            alpha * acc
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, self.m as f64)
    }
}
