//! PolyBench's gemver, LARGE (N = 2000): `A = A + u1 v1^T + u2 v2^T`, then `x = x + beta
//! A^T y + z`, then `w = w + alpha A x`, with `alpha = 1.5`, `beta = 1.2`. All three
//! results are checked (PolyBench prints only `w`).
//!
//! The accel form is three sites in sequence, one element per output: the second reads a
//! column of `A` (stride `N`), as PolyBench's loop does. The rayon form updates `A` by rows
//! and computes `A^T y` as a fold of scaled rows into per-task vectors, then a sum of them.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Gemver {
    n: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    u1: Vec<f64>,
    v1: Vec<f64>,
    u2: Vec<f64>,
    v2: Vec<f64>,
    w: Vec<f64>,
    x: Vec<f64>,
    y: Vec<f64>,
    z: Vec<f64>,
}

impl Gemver {
    pub fn new(scale: Scale) -> Gemver {
        let n = scale.pick(37, 2000);
        Gemver {
            n,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(n * n, 410, 0.0, 1.0),
            u1: matrix(n, 411, 0.0, 1.0),
            v1: matrix(n, 412, 0.0, 1.0),
            u2: matrix(n, 413, 0.0, 1.0),
            v2: matrix(n, 414, 0.0, 1.0),
            w: matrix(n, 415, 0.0, 1.0),
            x: matrix(n, 416, 0.0, 1.0),
            y: matrix(n, 417, 0.0, 1.0),
            z: matrix(n, 418, 0.0, 1.0),
        }
    }
}

impl Program for Gemver {
    /// `(A, x, w)` after the kernel.
    type Output = (Vec<f64>, Vec<f64>, Vec<f64>);

    fn size(&self) -> String {
        format!("{}", self.n)
    }

    fn sequential(&self) -> Self::Output {
        let (n, alpha, beta) = (self.n, self.alpha, self.beta);
        let (mut a, mut x, mut w) = (self.a.clone(), self.x.clone(), self.w.clone());
        let (u1, v1, u2, v2, y, z) = (&self.u1, &self.v1, &self.u2, &self.v2, &self.y, &self.z);
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] += u1[i] * v1[j] + u2[i] * v2[j];
            }
        }
        for i in 0..n {
            for j in 0..n {
                x[i] += beta * a[j * n + i] * y[j];
            }
        }
        for i in 0..n {
            x[i] += z[i];
        }
        for i in 0..n {
            for j in 0..n {
                w[i] += alpha * a[i * n + j] * x[j];
            }
        }
        (a, x, w)
    }

    fn rayon(&self) -> Self::Output {
        let (n, alpha, beta) = (self.n, self.alpha, self.beta);
        let (u1, v1, u2, v2) = (&self.u1, &self.v1, &self.u2, &self.v2);
        let mut a = self.a.clone();
        a.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            for ((v, p), q) in row.iter_mut().zip(v1).zip(v2) {
                *v += u1[i] * p + u2[i] * q;
            }
        });
        let aty = a
            .par_chunks(n)
            .zip(&self.y)
            .fold(
                || vec![0.0; n],
                |mut acc, (row, yj)| {
                    for (s, v) in acc.iter_mut().zip(row) {
                        *s += v * yj;
                    }
                    acc
                },
            )
            .reduce(
                || vec![0.0; n],
                |mut s, t| {
                    for (p, q) in s.iter_mut().zip(&t) {
                        *p += q;
                    }
                    s
                },
            );
        let x: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|i| self.x[i] + beta * aty[i] + self.z[i])
            .collect();
        let w: Vec<f64> = a
            .par_chunks(n)
            .zip(&self.w)
            .map(|(row, w)| w + alpha * row.iter().zip(&x).map(|(p, q)| p * q).sum::<f64>())
            .collect();
        (a, x, w)
    }

    fn accel(&self) -> Self::Output {
        let (n, alpha, beta) = (self.n, self.alpha, self.beta);
        let (a, u1, v1, u2, v2) = (&self.a, &self.u1, &self.v1, &self.u2, &self.v2);
        let (w, x, y, z) = (&self.w, &self.x, &self.y, &self.z);
        let a: Vec<f64> = accelerate!(create(n * n, |p| {
            let i = p / n;
            let j = p % n;
            a[p] + u1[i] * v1[j] + u2[i] * v2[j]
        }));
        let a_new = &a;
        let x: Vec<f64> = accelerate!(create(n, |i| {
            let mut acc = 0.0;
            for j in 0..n {
                acc += a_new[j * n + i] * y[j];
            }
            x[i] + beta * acc + z[i]
        }));
        let x_new = &x;
        let w: Vec<f64> = accelerate!(create(n, |i| {
            let mut acc = 0.0;
            for j in 0..n {
                acc += a_new[i * n + j] * x_new[j];
            }
            w[i] + alpha * acc
        }));
        (a, x, w)
    }

    fn check(&self, got: &Self::Output, want: &Self::Output) -> Result<(), String> {
        let n = self.n as f64;
        close(&got.0, &want.0, 1e-12, 1.0).map_err(|e| format!("A: {e}"))?;
        close(&got.1, &want.1, 1e-12, n).map_err(|e| format!("x: {e}"))?;
        close(&got.2, &want.2, 1e-12, n * n).map_err(|e| format!("w: {e}"))
    }
}
