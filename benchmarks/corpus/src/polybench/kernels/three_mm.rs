//! PolyBench's 3mm, LARGE (NI = 800, NJ = 900, NK = 1000, NL = 1100, NM = 1200): `G = (A
//! B) (C D)`, as PolyBench computes it: `E = A B` (NI x NJ), `F = C D` (NJ x NL), then `G =
//! E F` (NI x NL).
//!
//! The accel form is three sites in sequence, each a call of one `#[accel]` product
//! function: one element per output with a loop over the shared dimension (a row of the
//! left matrix, a column of the right one). The rayon form builds the rows of each product
//! in parallel with the i-k-j order.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct ThreeMm {
    ni: usize,
    nj: usize,
    nk: usize,
    nl: usize,
    nm: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    d: Vec<f64>,
}

/// `x y` for an `n x k` matrix `x` and a `k x m` matrix `y`, PolyBench's loops.
fn product(x: &[f64], y: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            out[i * m + j] = 0.0;
            for l in 0..k {
                out[i * m + j] += x[i * k + l] * y[l * m + j];
            }
        }
    }
    out
}

/// `x y` with rows in parallel, i-k-j.
fn par_product(x: &[f64], y: &[f64], k: usize, m: usize) -> Vec<f64> {
    let mut out = vec![0.0; x.len() / k * m];
    out.par_chunks_mut(m).enumerate().for_each(|(i, row)| {
        for l in 0..k {
            let xil = x[i * k + l];
            for (v, yl) in row.iter_mut().zip(&y[l * m..(l + 1) * m]) {
                *v += xil * yl;
            }
        }
    });
    out
}

/// `x y` for an `n x k` matrix `x` and a `k x m` matrix `y`: one element per output.
#[accel]
pub fn matmul(x: &[f64], y: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
    create(n * m, |p| {
        let i = p / m;
        let j = p % m;
        let mut acc = 0.0;
        for l in 0..k {
            acc += x[i * k + l] * y[l * m + j];
        }
        acc
    })
}

impl ThreeMm {
    pub fn new(scale: Scale) -> ThreeMm {
        let (ni, nj, nk, nl, nm) = scale.pick((13, 17, 19, 23, 21), (800, 900, 1000, 1100, 1200));
        ThreeMm {
            ni,
            nj,
            nk,
            nl,
            nm,
            a: matrix(ni * nk, 450, 0.0, 1.0),
            b: matrix(nk * nj, 451, 0.0, 1.0),
            c: matrix(nj * nm, 452, 0.0, 1.0),
            d: matrix(nm * nl, 453, 0.0, 1.0),
        }
    }
}

impl Program for ThreeMm {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        let s = self;
        format!("{}x{}x{}x{}x{}", s.ni, s.nj, s.nk, s.nl, s.nm)
    }

    fn sequential(&self) -> Vec<f64> {
        let (ni, nj, nk, nl, nm) = (self.ni, self.nj, self.nk, self.nl, self.nm);
        let e = product(&self.a, &self.b, ni, nk, nj);
        let f = product(&self.c, &self.d, nj, nm, nl);
        product(&e, &f, ni, nj, nl)
    }

    fn rayon(&self) -> Vec<f64> {
        let e = par_product(&self.a, &self.b, self.nk, self.nj);
        let f = par_product(&self.c, &self.d, self.nm, self.nl);
        par_product(&e, &f, self.nj, self.nl)
    }

    fn accel(&self) -> Vec<f64> {
        let (ni, nj, nk, nl, nm) = (self.ni, self.nj, self.nk, self.nl, self.nm);
        let (a, b, c, d) = (&self.a, &self.b, &self.c, &self.d);
        let e: Vec<f64> = accelerate!(matmul(a, b, ni, nk, nj));
        let f: Vec<f64> = accelerate!(matmul(c, d, nj, nm, nl));
        let (e, f) = (&e, &f);
        accelerate!(matmul(e, f, ni, nj, nl))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, (self.nk * self.nm) as f64)
    }
}
