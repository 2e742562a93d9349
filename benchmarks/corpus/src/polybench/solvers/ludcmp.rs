//! PolyBench's ludcmp with N = 1200 instead of LARGE's 2000 (2000 takes about 4 s
//! sequentially here): solves `A x = b` by the LU factorisation of `A` without pivoting
//! (PolyBench's loops, with the running value in a local `w`), forward substitution into
//! `y` and back substitution into `x`; the result is `x`. The matrix is random in `[0,
//! 1)` with `N` added to the diagonal, so that it is diagonally dominant and needs no
//! pivoting (PolyBench builds `B B^T` instead); `b` is random in `[0, 1)`. The rayon and
//! accel forms factorise right-looking, pivot by pivot (the same operations on every
//! element, in the same order), the rows below the pivot in parallel: the accel form
//! holds the matrix in a `Tensor` and runs one `parallel_loop` over those rows per pivot,
//! updating them in place. Both leave the two substitutions, `O(N^2)` against the
//! factorisation's `O(N^3)` and a chain of dependent rows, sequential.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Ludcmp {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
}

impl Ludcmp {
    pub fn new(scale: Scale) -> Ludcmp {
        let n = scale.pick(35, 1200);
        let mut a = matrix(n * n, 506, 0.0, 1.0);
        for i in 0..n {
            a[i * n + i] += n as f64;
        }
        Ludcmp {
            n,
            a,
            b: matrix(n, 507, 0.0, 1.0),
        }
    }
}

/// `x` from the factorised `a` and `b`: PolyBench's forward and back substitutions.
fn substitute(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut w = b[i];
        for j in 0..i {
            w -= a[i * n + j] * y[j];
        }
        y[i] = w;
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let mut w = y[i];
        for j in i + 1..n {
            w -= a[i * n + j] * x[j];
        }
        x[i] = w / a[i * n + i];
    }
    x
}

impl Program for Ludcmp {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{0}x{0}", self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for i in 0..n {
            for j in 0..i {
                let mut w = a[i * n + j];
                for k in 0..j {
                    w -= a[i * n + k] * a[k * n + j];
                }
                a[i * n + j] = w / a[j * n + j];
            }
            for j in i..n {
                let mut w = a[i * n + j];
                for k in 0..i {
                    w -= a[i * n + k] * a[k * n + j];
                }
                a[i * n + j] = w;
            }
        }
        substitute(&a, &self.b, n)
    }

    fn rayon(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for k in 0..n {
            let (top, below) = a.split_at_mut((k + 1) * n);
            let pivot = &top[k * n..];
            below.par_chunks_mut(n).for_each(|row| {
                row[k] /= pivot[k];
                let l = row[k];
                for j in k + 1..n {
                    row[j] -= l * pivot[j];
                }
            });
        }
        substitute(&a, &self.b, n)
    }

    fn accel(&self) -> Vec<f64> {
        let n = self.n;
        let a = Tensor::from_vec(self.a.clone(), &[n, n]);
        for k in 0..n {
            accelerate!(parallel_loop(n - k - 1, |r| {
                let i = k + 1 + r;
                let l = a.get([i, k]) / a.get([k, k]);
                a.set([i, k], l);
                for j in k + 1..n {
                    a.set([i, j], a.get([i, j]) - l * a.get([k, j]));
                }
            }));
        }
        substitute(&a.to_vec(), &self.b, n)
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
