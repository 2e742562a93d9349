//! `C = alpha A B + beta C` (PolyBench's gemm, LARGE: 1000x1200 times 1200x1100), and the
//! same product in `f32` at 1024x1024 beside the `matrixmultiply` crate's sgemm (what
//! `ndarray`'s `dot` uses).
//!
//! The accel form is the one a user writes first: one element per output, a loop over the
//! shared dimension reading a row of `A` and a column of `B`. The rayon form is the
//! cache-friendly i-k-j loop a rayon user writes (rows in parallel).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Gemm {
    ni: usize,
    nj: usize,
    nk: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Gemm {
    pub fn new(scale: Scale) -> Gemm {
        let (ni, nj, nk) = scale.pick((23, 31, 17), (1000, 1100, 1200));
        Gemm {
            ni,
            nj,
            nk,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(ni * nk, 401, 0.0, 1.0),
            b: matrix(nk * nj, 402, 0.0, 1.0),
            c: matrix(ni * nj, 403, 0.0, 1.0),
        }
    }

    /// Row `i` of the result, PolyBench's loops.
    fn row(&self, i: usize, row: &mut [f64]) {
        let (nj, nk) = (self.nj, self.nk);
        for v in row.iter_mut() {
            *v *= self.beta;
        }
        for k in 0..nk {
            let a = self.alpha * self.a[i * nk + k];
            for (v, b) in row.iter_mut().zip(&self.b[k * nj..(k + 1) * nj]) {
                *v += a * b;
            }
        }
    }
}

impl Program for Gemm {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}x{}", self.ni, self.nj, self.nk)
    }

    fn sequential(&self) -> Vec<f64> {
        let mut c = self.c.clone();
        for (i, row) in c.chunks_mut(self.nj).enumerate() {
            self.row(i, row);
        }
        c
    }

    fn rayon(&self) -> Vec<f64> {
        let mut c = self.c.clone();
        c.par_chunks_mut(self.nj)
            .enumerate()
            .for_each(|(i, row)| self.row(i, row));
        c
    }

    fn accel(&self) -> Vec<f64> {
        let (nj, nk, alpha, beta) = (self.nj, self.nk, self.alpha, self.beta);
        let (a, b, c) = (&self.a, &self.b, &self.c);
        accelerate!(create(c.len(), |p| {
            let i = p / nj;
            let j = p % nj;
            let mut acc = 0.0;
            for k in 0..nk {
                acc += alpha * a[i * nk + k] * b[k * nj + j];
            }
            beta * c[p] + acc
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, self.nk as f64)
    }
}

pub struct Sgemm {
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Sgemm {
    pub fn new(scale: Scale) -> Sgemm {
        let n = scale.pick(37, 1024);
        Sgemm {
            n,
            a: crate::random::uniform(n * n, 404, -1.0, 1.0),
            b: crate::random::uniform(n * n, 405, -1.0, 1.0),
        }
    }

    fn row(&self, i: usize, row: &mut [f32]) {
        let n = self.n;
        for l in 0..n {
            let a = self.a[i * n + l];
            for (v, b) in row.iter_mut().zip(&self.b[l * n..(l + 1) * n]) {
                *v += a * b;
            }
        }
    }
}

impl Program for Sgemm {
    type Output = Vec<f32>;
    const LIBRARY: Option<&'static str> = Some("matrixmultiply::sgemm");

    fn size(&self) -> String {
        format!("{0}x{0} f32", self.n)
    }

    fn sequential(&self) -> Vec<f32> {
        let mut c = vec![0.0; self.n * self.n];
        for (i, row) in c.chunks_mut(self.n).enumerate() {
            self.row(i, row);
        }
        c
    }

    fn rayon(&self) -> Vec<f32> {
        let mut c = vec![0.0; self.n * self.n];
        c.par_chunks_mut(self.n)
            .enumerate()
            .for_each(|(i, row)| self.row(i, row));
        c
    }

    fn accel(&self) -> Vec<f32> {
        let (n, a, b) = (self.n, &self.a, &self.b);
        accelerate!(create(n * n, |p| {
            let i = p / n;
            let j = p % n;
            let mut acc = 0.0f32;
            for l in 0..n {
                acc += a[i * n + l] * b[l * n + j];
            }
            acc
        }))
    }

    fn library(&self) -> Option<Vec<f32>> {
        let n = self.n;
        let mut c = vec![0.0f32; n * n];
        // SAFETY: the pointers are to n x n row-major matrices that live for the call, with
        // row stride n and column stride 1, and c is not aliased.
        unsafe {
            matrixmultiply::sgemm(
                n,
                n,
                n,
                1.0,
                self.a.as_ptr(),
                n as isize,
                1,
                self.b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
        Some(c)
    }

    fn check(&self, got: &Vec<f32>, want: &Vec<f32>) -> Result<(), String> {
        close(got, want, 1e-5, (self.n as f64).sqrt())
    }
}
