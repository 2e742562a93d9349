//! PolyBench's mvt, LARGE (N = 2000): `x1 = x1 + A y1` and `x2 = x2 + A^T y2` for an N x N
//! matrix `A`; the vectors are in `[-1, 1)`.
//!
//! The accel form is two sites: `x1` as an iterator chain over `x1`, enumerated (a dot
//! product of a row slice of `A` each; `x1.par_iter().zip(a.par_chunks(n))`, the first form
//! written, is rejected by the front end), `x2` one element per output with a loop down a column of `A`
//! (stride N). The rayon form maps the rows for `x1` and computes `A^T y2` as a fold of
//! scaled rows into per-task vectors, then a sum of them.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Mvt {
    n: usize,
    a: Vec<f64>,
    x1: Vec<f64>,
    x2: Vec<f64>,
    y1: Vec<f64>,
    y2: Vec<f64>,
}

impl Mvt {
    pub fn new(scale: Scale) -> Mvt {
        let n = scale.pick(39, 2000);
        Mvt {
            n,
            a: matrix(n * n, 470, 0.0, 1.0),
            x1: matrix(n, 471, -1.0, 1.0),
            x2: matrix(n, 472, -1.0, 1.0),
            y1: matrix(n, 473, -1.0, 1.0),
            y2: matrix(n, 474, -1.0, 1.0),
        }
    }
}

impl Program for Mvt {
    /// `(x1, x2)`.
    type Output = (Vec<f64>, Vec<f64>);

    fn size(&self) -> String {
        format!("{}", self.n)
    }

    fn sequential(&self) -> Self::Output {
        let (n, a, y1, y2) = (self.n, &self.a, &self.y1, &self.y2);
        let (mut x1, mut x2) = (self.x1.clone(), self.x2.clone());
        for i in 0..n {
            for j in 0..n {
                x1[i] += a[i * n + j] * y1[j];
            }
        }
        for i in 0..n {
            for j in 0..n {
                x2[i] += a[j * n + i] * y2[j];
            }
        }
        (x1, x2)
    }

    fn rayon(&self) -> Self::Output {
        let (n, a, y1) = (self.n, &self.a, &self.y1);
        let x1: Vec<f64> = self
            .x1
            .par_iter()
            .zip(a.par_chunks(n))
            .map(|(x, row)| x + row.iter().zip(y1).map(|(p, q)| p * q).sum::<f64>())
            .collect();
        let aty = a
            .par_chunks(n)
            .zip(&self.y2)
            .fold(
                || vec![0.0; n],
                |mut s, (row, yj)| {
                    for (v, p) in s.iter_mut().zip(row) {
                        *v += p * yj;
                    }
                    s
                },
            )
            .reduce(
                || vec![0.0; n],
                |mut s, t| {
                    for (v, w) in s.iter_mut().zip(&t) {
                        *v += w;
                    }
                    s
                },
            );
        let x2 = self.x2.iter().zip(&aty).map(|(x, t)| x + t).collect();
        (x1, x2)
    }

    fn accel(&self) -> Self::Output {
        let (n, a, x1, x2, y1, y2) = (self.n, &self.a, &self.x1, &self.x2, &self.y1, &self.y2);
        let x1: Vec<f64> = accelerate!(x1
            .par_iter()
            .enumerate()
            .map(|(i, x)| {
                let row = &a[i * n..(i + 1) * n];
                x + row.iter().zip(y1).map(|(p, q)| p * q).sum::<f64>()
            })
            .collect());
        let x2: Vec<f64> = accelerate!(create(n, |i| {
            let mut acc = x2[i];
            for j in 0..n {
                acc += a[j * n + i] * y2[j];
            }
            acc
        }));
        (x1, x2)
    }

    fn check(&self, got: &Self::Output, want: &Self::Output) -> Result<(), String> {
        let n = self.n as f64;
        close(&got.0, &want.0, 1e-12, n).map_err(|e| format!("x1: {e}"))?;
        close(&got.1, &want.1, 1e-12, n).map_err(|e| format!("x2: {e}"))
    }
}
