//! PolyBench's atax, LARGE (M = 1900, N = 2100): `y = A^T (A x)` for an M x N matrix `A`,
//! through `tmp = A x`.
//!
//! The accel form is two sites: `tmp` as an iterator chain over the row indices of `A` (a
//! dot product of a row slice each; `a.par_chunks(n)`, the first form written, is rejected
//! by the front end), then one element of `y` per output, a loop down a column of `A` (stride
//! N). The rayon form maps the rows for `tmp` and computes `A^T tmp` as a fold of scaled
//! rows into per-task vectors, then a sum of them.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Atax {
    m: usize,
    n: usize,
    a: Vec<f64>,
    x: Vec<f64>,
}

impl Atax {
    pub fn new(scale: Scale) -> Atax {
        let (m, n) = scale.pick((31, 37), (1900, 2100));
        Atax {
            m,
            n,
            a: matrix(m * n, 455, 0.0, 1.0),
            x: matrix(n, 456, 0.0, 1.0),
        }
    }
}

impl Program for Atax {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n, a, x) = (self.m, self.n, &self.a, &self.x);
        let mut y = vec![0.0; n];
        let mut tmp = vec![0.0; m];
        for i in 0..m {
            tmp[i] = 0.0;
            for j in 0..n {
                tmp[i] += a[i * n + j] * x[j];
            }
            for j in 0..n {
                y[j] += a[i * n + j] * tmp[i];
            }
        }
        y
    }

    fn rayon(&self) -> Vec<f64> {
        let (n, a, x) = (self.n, &self.a, &self.x);
        let tmp: Vec<f64> = a
            .par_chunks(n)
            .map(|row| row.iter().zip(x).map(|(p, q)| p * q).sum())
            .collect();
        a.par_chunks(n)
            .zip(&tmp)
            .fold(
                || vec![0.0; n],
                |mut y, (row, t)| {
                    for (v, p) in y.iter_mut().zip(row) {
                        *v += p * t;
                    }
                    y
                },
            )
            .reduce(
                || vec![0.0; n],
                |mut y, z| {
                    for (v, w) in y.iter_mut().zip(&z) {
                        *v += w;
                    }
                    y
                },
            )
    }

    fn accel(&self) -> Vec<f64> {
        let (m, n, a, x) = (self.m, self.n, &self.a, &self.x);
        let tmp: Vec<f64> = accelerate!((0..m)
            .into_par_iter()
            .map(|i| {
                let row = &a[i * n..(i + 1) * n];
                row.iter().zip(x).map(|(p, q)| p * q).sum::<f64>()
            })
            .collect());
        let tmp = &tmp;
        accelerate!(create(n, |j| {
            let mut acc = 0.0;
            for i in 0..m {
                acc += a[i * n + j] * tmp[i];
            }
            acc
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, (self.m * self.n) as f64)
    }
}
