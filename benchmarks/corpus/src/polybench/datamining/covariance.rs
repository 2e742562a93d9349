//! PolyBench's covariance with M = 900 attributes and N = 1050 data points instead of
//! LARGE's 1200 and 1400 (LARGE takes about 9 s sequentially here, the column-wise dot
//! products striding through the data): the means of the columns of the N x M `data`,
//! the data centred on them, and the M x M covariance matrix `cov[i][j] = sum_k
//! data[k][i] data[k][j] / (N - 1)`, computed for `j >= i` and mirrored. `data` is random
//! in `[0, 1)`. The rayon form takes the means over columns in parallel, centres rows in
//! parallel and builds `cov`'s upper triangle a row per task, then mirrors it; the accel
//! form is one `create` per step (means, centred data, covariances), the last computing
//! every element of `cov`, both triangles.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Covariance {
    m: usize,
    n: usize,
    data: Vec<f64>,
}

impl Covariance {
    pub fn new(scale: Scale) -> Covariance {
        let (m, n) = scale.pick((19, 23), (900, 1050));
        Covariance {
            m,
            n,
            data: matrix(n * m, 501, 0.0, 1.0),
        }
    }
}

impl Program for Covariance {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} attributes, {} points", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n) = (self.m, self.n);
        let float_n = n as f64;
        let mut data = self.data.clone();
        let mut mean = vec![0.0; m];
        let mut cov = vec![0.0; m * m];
        for j in 0..m {
            mean[j] = 0.0;
            for i in 0..n {
                mean[j] += data[i * m + j];
            }
            mean[j] /= float_n;
        }
        for i in 0..n {
            for j in 0..m {
                data[i * m + j] -= mean[j];
            }
        }
        for i in 0..m {
            for j in i..m {
                cov[i * m + j] = 0.0;
                for k in 0..n {
                    cov[i * m + j] += data[k * m + i] * data[k * m + j];
                }
                cov[i * m + j] /= float_n - 1.0;
                cov[j * m + i] = cov[i * m + j];
            }
        }
        cov
    }

    fn rayon(&self) -> Vec<f64> {
        let (m, n) = (self.m, self.n);
        let float_n = n as f64;
        let mut data = self.data.clone();
        let mean: Vec<f64> = (0..m)
            .into_par_iter()
            .map(|j| (0..n).map(|i| data[i * m + j]).sum::<f64>() / float_n)
            .collect();
        data.par_chunks_mut(m).for_each(|row| {
            for (x, mean) in row.iter_mut().zip(&mean) {
                *x -= mean;
            }
        });
        let mut cov = vec![0.0; m * m];
        cov.par_chunks_mut(m).enumerate().for_each(|(i, row)| {
            for j in i..m {
                let s: f64 = (0..n).map(|k| data[k * m + i] * data[k * m + j]).sum();
                row[j] = s / (float_n - 1.0);
            }
        });
        for i in 0..m {
            for j in 0..i {
                cov[i * m + j] = cov[j * m + i];
            }
        }
        cov
    }

    fn accel(&self) -> Vec<f64> {
        let (m, n) = (self.m, self.n);
        let float_n = n as f64;
        let data = &self.data;
        let mean: Vec<f64> = accelerate!(create(m, |j| {
            let mut s = 0.0;
            for i in 0..n {
                s += data[i * m + j];
            }
            s / float_n
        }));
        let centred: Vec<f64> = accelerate!(create(n * m, |p| data[p] - mean[p % m]));
        accelerate!(create(m * m, |p| {
            let i = p / m;
            let j = p % m;
            let mut s = 0.0;
            for k in 0..n {
                s += centred[k * m + i] * centred[k * m + j];
            }
            s / (float_n - 1.0)
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
