//! PolyBench's doitgen, LARGE (NQ = 140, NR = 150, NP = 160): the multiresolution
//! analysis kernel, `A[r][q][p] = sum_s A[r][q][s] C4[s][p]` for every `(r, q)`, in place
//! through a row buffer `sum` (a product of the NR*NQ x NP matrix `A` with the NP x NP
//! `C4`). The forms other than the sequential one write a new array.
//!
//! The accel form is one element per output with a loop over `s`, reading a row of `A` and
//! a column of `C4` (stride NP); the rayon form runs the blocks `A[r]` in parallel, each
//! row through a buffer as PolyBench does, the s-p order in the inner loops.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Doitgen {
    nq: usize,
    nr: usize,
    np: usize,
    a: Vec<f64>,
    c4: Vec<f64>,
}

impl Doitgen {
    pub fn new(scale: Scale) -> Doitgen {
        let (nq, nr, np) = scale.pick((15, 13, 19), (140, 150, 160));
        Doitgen {
            nq,
            nr,
            np,
            a: matrix(nr * nq * np, 465, 0.0, 1.0),
            c4: matrix(np * np, 466, 0.0, 1.0),
        }
    }
}

impl Program for Doitgen {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}x{}", self.nq, self.nr, self.np)
    }

    fn sequential(&self) -> Vec<f64> {
        let (nq, nr, np, c4) = (self.nq, self.nr, self.np, &self.c4);
        let mut a = self.a.clone();
        let mut sum = vec![0.0; np];
        for r in 0..nr {
            for q in 0..nq {
                let base = (r * nq + q) * np;
                for p in 0..np {
                    sum[p] = 0.0;
                    for s in 0..np {
                        sum[p] += a[base + s] * c4[s * np + p];
                    }
                }
                a[base..base + np].copy_from_slice(&sum);
            }
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let (nq, np, c4) = (self.nq, self.np, &self.c4);
        let mut a = self.a.clone();
        a.par_chunks_mut(nq * np).for_each(|block| {
            let mut sum = vec![0.0; np];
            for row in block.chunks_mut(np) {
                sum.fill(0.0);
                for (s, x) in row.iter().enumerate() {
                    for (v, c) in sum.iter_mut().zip(&c4[s * np..(s + 1) * np]) {
                        *v += x * c;
                    }
                }
                row.copy_from_slice(&sum);
            }
        });
        a
    }

    fn accel(&self) -> Vec<f64> {
        let (nq, nr, np) = (self.nq, self.nr, self.np);
        let (a, c4) = (&self.a, &self.c4);
        accelerate!(create(nr * nq * np, |x| {
            let r = x / (nq * np);
            let q = x / np % nq;
            let p = x % np;
            let mut sum = 0.0;
            for s in 0..np {
                sum += a[(r * nq + q) * np + s] * c4[s * np + p];
            }
            sum
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, self.np as f64)
    }
}
