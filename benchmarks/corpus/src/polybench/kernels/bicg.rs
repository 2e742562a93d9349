//! PolyBench's bicg, LARGE (M = 1900, N = 2100): the BiCG sub-kernel, `s = A^T r` and `q =
//! A p` for an N x M matrix `A`; `p` and `r` are in `[-1, 1)`.
//!
//! The accel form is two sites, one element per output each: `q` a loop along a row of
//! `A`, `s` a loop down a column (stride M). The rayon form maps the rows for `q` and
//! computes `A^T r` as a fold of scaled rows into per-task vectors, then a sum of them.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Bicg {
    m: usize,
    n: usize,
    a: Vec<f64>,
    p: Vec<f64>,
    r: Vec<f64>,
}

impl Bicg {
    pub fn new(scale: Scale) -> Bicg {
        let (m, n) = scale.pick((29, 35), (1900, 2100));
        Bicg {
            m,
            n,
            a: matrix(n * m, 460, 0.0, 1.0),
            p: matrix(m, 461, -1.0, 1.0),
            r: matrix(n, 462, -1.0, 1.0),
        }
    }
}

impl Program for Bicg {
    /// `(s, q)`.
    type Output = (Vec<f64>, Vec<f64>);

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Self::Output {
        let (m, n, a, p, r) = (self.m, self.n, &self.a, &self.p, &self.r);
        let mut s = vec![0.0; m];
        let mut q = vec![0.0; n];
        for i in 0..n {
            q[i] = 0.0;
            for j in 0..m {
                s[j] += r[i] * a[i * m + j];
                q[i] += a[i * m + j] * p[j];
            }
        }
        (s, q)
    }

    fn rayon(&self) -> Self::Output {
        let (m, a, p) = (self.m, &self.a, &self.p);
        let q: Vec<f64> = a
            .par_chunks(m)
            .map(|row| row.iter().zip(p).map(|(x, y)| x * y).sum())
            .collect();
        let s = a
            .par_chunks(m)
            .zip(&self.r)
            .fold(
                || vec![0.0; m],
                |mut s, (row, ri)| {
                    for (v, x) in s.iter_mut().zip(row) {
                        *v += ri * x;
                    }
                    s
                },
            )
            .reduce(
                || vec![0.0; m],
                |mut s, t| {
                    for (v, w) in s.iter_mut().zip(&t) {
                        *v += w;
                    }
                    s
                },
            );
        (s, q)
    }

    fn accel(&self) -> Self::Output {
        let (m, n, a, p, r) = (self.m, self.n, &self.a, &self.p, &self.r);
        let s: Vec<f64> = accelerate!(create(m, |j| {
            let mut acc = 0.0;
            for i in 0..n {
                acc += r[i] * a[i * m + j];
            }
            acc
        }));
        let q: Vec<f64> = accelerate!(create(n, |i| {
            let mut acc = 0.0;
            for j in 0..m {
                acc += a[i * m + j] * p[j];
            }
            acc
        }));
        (s, q)
    }

    fn check(&self, got: &Self::Output, want: &Self::Output) -> Result<(), String> {
        close(&got.0, &want.0, 1e-12, self.n as f64).map_err(|e| format!("s: {e}"))?;
        close(&got.1, &want.1, 1e-12, self.m as f64).map_err(|e| format!("q: {e}"))
    }
}
