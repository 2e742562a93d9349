//! PolyBench's gramschmidt with an 840x700 `A` (M rows, N columns) instead of LARGE's
//! 1000x1200 (the PolyBench size has more columns than rows, so that every column past
//! the M-th is dependent on earlier ones and its norm a rounding error; and 1200x1000
//! takes about 16 s sequentially here): the QR factorisation of `A` by modified
//! Gram-Schmidt, column by column: column `k`'s norm is `R[k][k]`, `Q`'s column `k` is it
//! normalised, and every later column `j` gets `R[k][j]`, its component along `Q`'s
//! column `k`, subtracted; the result is `A` (left orthogonalised, unnormalised), `R`
//! and `Q`. `A` is random in `[-1, 1)`. The columns are sequential; the rayon form
//! computes `R`'s row `k` over the later columns in parallel and updates `A`'s rows in
//! parallel; the accel form runs four sites per column (the norm, an iterator chain
//! summing; `Q`'s column, `R`'s row and the new `A`, each a `create`).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Gramschmidt {
    m: usize,
    n: usize,
    a: Vec<f64>,
}

impl Gramschmidt {
    pub fn new(scale: Scale) -> Gramschmidt {
        let (m, n) = scale.pick((31, 25), (840, 700));
        Gramschmidt {
            m,
            n,
            a: matrix(m * n, 504, -1.0, 1.0),
        }
    }
}

/// `(A, R, Q)` after the factorisation.
type Factors = (Vec<f64>, Vec<f64>, Vec<f64>);

impl Program for Gramschmidt {
    type Output = Factors;

    fn size(&self) -> String {
        format!("{}x{}", self.m, self.n)
    }

    fn sequential(&self) -> Factors {
        let (m, n) = (self.m, self.n);
        let mut a = self.a.clone();
        let mut r = vec![0.0; n * n];
        let mut q = vec![0.0; m * n];
        for k in 0..n {
            let mut nrm = 0.0;
            for i in 0..m {
                nrm += a[i * n + k] * a[i * n + k];
            }
            r[k * n + k] = f64::sqrt(nrm);
            for i in 0..m {
                q[i * n + k] = a[i * n + k] / r[k * n + k];
            }
            for j in k + 1..n {
                r[k * n + j] = 0.0;
                for i in 0..m {
                    r[k * n + j] += q[i * n + k] * a[i * n + j];
                }
                for i in 0..m {
                    a[i * n + j] -= q[i * n + k] * r[k * n + j];
                }
            }
        }
        (a, r, q)
    }

    fn rayon(&self) -> Factors {
        let (m, n) = (self.m, self.n);
        let mut a = self.a.clone();
        let mut r = vec![0.0; n * n];
        let mut q = vec![0.0; m * n];
        for k in 0..n {
            let nrm: f64 = (0..m).map(|i| a[i * n + k] * a[i * n + k]).sum();
            r[k * n + k] = nrm.sqrt();
            for i in 0..m {
                q[i * n + k] = a[i * n + k] / r[k * n + k];
            }
            let (a_ref, q_ref) = (&a, &q);
            r[k * n + k + 1..(k + 1) * n]
                .par_iter_mut()
                .enumerate()
                .for_each(|(t, rkj)| {
                    let j = k + 1 + t;
                    *rkj = (0..m).map(|i| q_ref[i * n + k] * a_ref[i * n + j]).sum();
                });
            let r_k = &r[k * n..(k + 1) * n];
            a.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                let qik = q[i * n + k];
                for j in k + 1..n {
                    row[j] -= qik * r_k[j];
                }
            });
        }
        (a, r, q)
    }

    fn accel(&self) -> Factors {
        let (m, n) = (self.m, self.n);
        let mut a = self.a.clone();
        let mut r = vec![0.0; n * n];
        let mut q = vec![0.0; m * n];
        for k in 0..n {
            let nrm: f64 = accelerate!((0..m).map(|i| a[i * n + k] * a[i * n + k]).sum());
            let rkk = nrm.sqrt();
            let qk: Vec<f64> = accelerate!(create(m, |i| a[i * n + k] / rkk));
            let rk: Vec<f64> = accelerate!(create(n - k - 1, |t| {
                let j = k + 1 + t;
                let mut s = 0.0;
                for i in 0..m {
                    s += qk[i] * a[i * n + j];
                }
                s
            }));
            a = accelerate!(create(m * n, |p| {
                let i = p / n;
                let j = p % n;
                if j > k {
                    a[p] - qk[i] * rk[j - k - 1]
                } else {
                    a[p]
                }
            }));
            r[k * n + k] = rkk;
            r[k * n + k + 1..(k + 1) * n].copy_from_slice(&rk);
            for (i, x) in qk.into_iter().enumerate() {
                q[i * n + k] = x;
            }
        }
        (a, r, q)
    }

    fn check(&self, got: &Factors, want: &Factors) -> Result<(), String> {
        close(&got.0, &want.0, 1e-9, 1.0).map_err(|e| format!("A: {e}"))?;
        close(&got.1, &want.1, 1e-9, 1.0).map_err(|e| format!("R: {e}"))?;
        close(&got.2, &want.2, 1e-9, 1.0).map_err(|e| format!("Q: {e}"))
    }
}
