//! PolyBench's lu with N = 1200 instead of LARGE's 2000 (2000 takes about 9 s sequentially
//! here): the LU factorisation without pivoting, `L` (unit diagonal, not stored) and `U`
//! written over `A`, row by row as PolyBench's loops compute it. The matrix is random in
//! `[0, 1)` with `N` added to the diagonal, so that it is diagonally dominant and needs no
//! pivoting (PolyBench builds `B B^T` instead). The rayon and accel forms are the
//! right-looking factorisation, pivot by pivot (the same operations on every element, in
//! the same order): the rows below the pivot in parallel, each divided by the pivot in
//! the pivot's column and updated by the pivot row, in place: rayon's `par_chunks_mut`,
//! and the same form inside `accelerate!`.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Lu {
    n: usize,
    a: Vec<f64>,
}

impl Lu {
    pub fn new(scale: Scale) -> Lu {
        let n = scale.pick(33, 1200);
        let mut a = matrix(n * n, 505, 0.0, 1.0);
        for i in 0..n {
            a[i * n + i] += n as f64;
        }
        Lu { n, a }
    }
}

impl Program for Lu {
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
                    a[i * n + j] -= a[i * n + k] * a[k * n + j];
                }
                a[i * n + j] /= a[j * n + j];
            }
            for j in i..n {
                for k in 0..i {
                    a[i * n + j] -= a[i * n + k] * a[k * n + j];
                }
            }
        }
        a
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
        a
    }

    fn accel(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        for k in 0..n {
            let (top, below) = a.split_at_mut((k + 1) * n);
            let pivot = &top[k * n..];
            accelerate!(below.par_chunks_mut(n).for_each(|row| {
                row[k] /= pivot[k];
                let l = row[k];
                for j in k + 1..n {
                    row[j] -= l * pivot[j];
                }
            }));
        }
        a
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
