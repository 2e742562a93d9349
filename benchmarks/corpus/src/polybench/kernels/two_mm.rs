//! PolyBench's 2mm, LARGE (NI = 800, NJ = 900, NK = 1100, NL = 1200): `D = alpha A B C +
//! beta D`, as PolyBench computes it: `tmp = alpha A B` (NI x NJ), then `D = tmp C + beta
//! D` (NI x NL), with `alpha = 1.5`, `beta = 1.2`.
//!
//! The accel form is two sites in sequence, each one element per output with a loop over
//! the shared dimension (a row of the left matrix, a column of the right one); the rayon
//! form builds the rows of each product in parallel with the i-k-j order.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct TwoMm {
    ni: usize,
    nj: usize,
    nk: usize,
    nl: usize,
    alpha: f64,
    beta: f64,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    d: Vec<f64>,
}

impl TwoMm {
    pub fn new(scale: Scale) -> TwoMm {
        let (ni, nj, nk, nl) = scale.pick((17, 23, 19, 29), (800, 900, 1100, 1200));
        TwoMm {
            ni,
            nj,
            nk,
            nl,
            alpha: 1.5,
            beta: 1.2,
            a: matrix(ni * nk, 445, 0.0, 1.0),
            b: matrix(nk * nj, 446, 0.0, 1.0),
            c: matrix(nj * nl, 447, 0.0, 1.0),
            d: matrix(ni * nl, 448, 0.0, 1.0),
        }
    }
}

impl Program for TwoMm {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}x{}x{}", self.ni, self.nj, self.nk, self.nl)
    }

    fn sequential(&self) -> Vec<f64> {
        let (ni, nj, nk, nl) = (self.ni, self.nj, self.nk, self.nl);
        let (a, b, c) = (&self.a, &self.b, &self.c);
        let mut tmp = vec![0.0; ni * nj];
        let mut d = self.d.clone();
        for i in 0..ni {
            for j in 0..nj {
                tmp[i * nj + j] = 0.0;
                for k in 0..nk {
                    tmp[i * nj + j] += self.alpha * a[i * nk + k] * b[k * nj + j];
                }
            }
        }
        for i in 0..ni {
            for j in 0..nl {
                d[i * nl + j] *= self.beta;
                for k in 0..nj {
                    d[i * nl + j] += tmp[i * nj + k] * c[k * nl + j];
                }
            }
        }
        d
    }

    fn rayon(&self) -> Vec<f64> {
        let (nj, nk, nl) = (self.nj, self.nk, self.nl);
        let (a, b, c) = (&self.a, &self.b, &self.c);
        let mut tmp = vec![0.0; self.ni * nj];
        tmp.par_chunks_mut(nj).enumerate().for_each(|(i, row)| {
            for k in 0..nk {
                let aik = self.alpha * a[i * nk + k];
                for (v, bk) in row.iter_mut().zip(&b[k * nj..(k + 1) * nj]) {
                    *v += aik * bk;
                }
            }
        });
        let mut d = self.d.clone();
        d.par_chunks_mut(nl).enumerate().for_each(|(i, row)| {
            for v in row.iter_mut() {
                *v *= self.beta;
            }
            for k in 0..nj {
                let t = tmp[i * nj + k];
                for (v, ck) in row.iter_mut().zip(&c[k * nl..(k + 1) * nl]) {
                    *v += t * ck;
                }
            }
        });
        d
    }

    fn accel(&self) -> Vec<f64> {
        let (ni, nj, nk, nl, alpha, beta) =
            (self.ni, self.nj, self.nk, self.nl, self.alpha, self.beta);
        let (a, b, c, d) = (&self.a, &self.b, &self.c, &self.d);
        let tmp: Vec<f64> = accelerate!(create(ni * nj, |p| {
            let i = p / nj;
            let j = p % nj;
            let mut acc = 0.0;
            for k in 0..nk {
                acc += a[i * nk + k] * b[k * nj + j];
            }
            alpha * acc
        }));
        let tmp = &tmp;
        accelerate!(create(ni * nl, |p| {
            let i = p / nl;
            let j = p % nl;
            let mut acc = beta * d[p];
            for k in 0..nj {
                acc += tmp[i * nj + k] * c[k * nl + j];
            }
            acc
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, (self.nj * self.nk) as f64)
    }
}
