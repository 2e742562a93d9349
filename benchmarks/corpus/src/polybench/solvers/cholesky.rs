//! PolyBench's cholesky with N = 1400 instead of LARGE's 2000 (2000 takes about 4.5 s
//! sequentially here): the Cholesky factor `L` of a symmetric
//! positive-definite matrix, written over the lower triangle of `A` row by row
//! (PolyBench's loops; the upper triangle is left as it was). The matrix is random in
//! `[0, 1)`, made symmetric, with `N` added to the diagonal, so that it is diagonally
//! dominant and safely positive definite (PolyBench builds `B B^T` instead). The rayon
//! and accel forms compute `L` column by column (the same operations on every element,
//! in the same order): the diagonal element of column `j` in ordinary Rust, then the
//! elements below it in parallel, each a dot product of two rows; the accel form builds
//! those with one `create` per column and writes them back.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Cholesky {
    n: usize,
    a: Vec<f64>,
}

impl Cholesky {
    pub fn new(scale: Scale) -> Cholesky {
        let n = scale.pick(37, 1400);
        let mut a = matrix(n * n, 502, 0.0, 1.0);
        for i in 0..n {
            for j in 0..i {
                a[j * n + i] = a[i * n + j];
            }
            a[i * n + i] += n as f64;
        }
        Cholesky { n, a }
    }
}

/// The diagonal element of column `j` (row `j`'s elements left of it are final).
fn diagonal(a: &mut [f64], n: usize, j: usize) {
    for k in 0..j {
        a[j * n + j] -= a[j * n + k] * a[j * n + k];
    }
    a[j * n + j] = a[j * n + j].sqrt();
}

impl Program for Cholesky {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{0}x{0}", self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for i in 0..n {
            for j in 0..i {
                for k in 0..j {
                    a[i * n + j] -= a[i * n + k] * a[j * n + k];
                }
                a[i * n + j] /= a[j * n + j];
            }
            for k in 0..i {
                a[i * n + i] -= a[i * n + k] * a[i * n + k];
            }
            a[i * n + i] = a[i * n + i].sqrt();
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for j in 0..n {
            diagonal(&mut a, n, j);
            let (top, below) = a.split_at_mut((j + 1) * n);
            let row_j = &top[j * n..];
            below.par_chunks_mut(n).for_each(|row| {
                for k in 0..j {
                    row[j] -= row[k] * row_j[k];
                }
                row[j] /= row_j[j];
            });
        }
        a
    }

    fn accel(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for j in 0..n {
            diagonal(&mut a, n, j);
            let column: Vec<f64> = accelerate!(create(n - j - 1, |r| {
                let i = j + 1 + r;
                let mut x = a[i * n + j];
                for k in 0..j {
                    x -= a[i * n + k] * a[j * n + k];
                }
                x / a[j * n + j]
            }));
            for (r, x) in column.into_iter().enumerate() {
                a[(j + 1 + r) * n + j] = x;
            }
        }
        a
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
