//! PolyBench's correlation with M = 900 attributes and N = 1050 data points instead of
//! LARGE's 1200 and 1400 (LARGE takes about 9 s sequentially here, the column-wise dot
//! products striding through the data): the means and standard deviations of the columns
//! of the N x M `data` (a deviation at most 0.1 taken as 1), the data centred and scaled
//! by `sqrt(N)` times the deviation, and the M x M correlation matrix, `corr[i][j] =
//! sum_k data[k][i] data[k][j]` for `j > i`, mirrored, with ones on the diagonal. `data`
//! is random in `[0, 1)`. The rayon form takes the column statistics in parallel,
//! normalises rows in parallel and builds `corr`'s upper triangle a row per task, then
//! mirrors it; the accel form is one `create` per step (means, deviations, normalised
//! data, correlations), the last computing every element of `corr`, both triangles.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Correlation {
    m: usize,
    n: usize,
    data: Vec<f64>,
}

impl Correlation {
    pub fn new(scale: Scale) -> Correlation {
        let (m, n) = scale.pick((21, 27), (900, 1050));
        Correlation {
            m,
            n,
            data: matrix(n * m, 500, 0.0, 1.0),
        }
    }
}

/// PolyBench's threshold below which a standard deviation is taken as 1.
const EPS: f64 = 0.1;

impl Program for Correlation {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} attributes, {} points", self.m, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (m, n) = (self.m, self.n);
        let float_n = n as f64;
        let mut data = self.data.clone();
        let mut mean = vec![0.0; m];
        let mut stddev = vec![0.0; m];
        let mut corr = vec![0.0; m * m];
        for j in 0..m {
            mean[j] = 0.0;
            for i in 0..n {
                mean[j] += data[i * m + j];
            }
            mean[j] /= float_n;
        }
        for j in 0..m {
            stddev[j] = 0.0;
            for i in 0..n {
                stddev[j] += (data[i * m + j] - mean[j]) * (data[i * m + j] - mean[j]);
            }
            stddev[j] /= float_n;
            stddev[j] = stddev[j].sqrt();
            stddev[j] = if stddev[j] <= EPS { 1.0 } else { stddev[j] };
        }
        for i in 0..n {
            for j in 0..m {
                data[i * m + j] -= mean[j];
                data[i * m + j] /= float_n.sqrt() * stddev[j];
            }
        }
        for i in 0..m - 1 {
            corr[i * m + i] = 1.0;
            for j in i + 1..m {
                corr[i * m + j] = 0.0;
                for k in 0..n {
                    corr[i * m + j] += data[k * m + i] * data[k * m + j];
                }
                corr[j * m + i] = corr[i * m + j];
            }
        }
        corr[(m - 1) * m + m - 1] = 1.0;
        corr
    }

    fn rayon(&self) -> Vec<f64> {
        let (m, n) = (self.m, self.n);
        let float_n = n as f64;
        let mut data = self.data.clone();
        let stats: Vec<(f64, f64)> = (0..m)
            .into_par_iter()
            .map(|j| {
                let mean = (0..n).map(|i| data[i * m + j]).sum::<f64>() / float_n;
                let var = (0..n)
                    .map(|i| (data[i * m + j] - mean) * (data[i * m + j] - mean))
                    .sum::<f64>()
                    / float_n;
                let stddev = var.sqrt();
                (mean, if stddev <= EPS { 1.0 } else { stddev })
            })
            .collect();
        data.par_chunks_mut(m).for_each(|row| {
            for (x, (mean, stddev)) in row.iter_mut().zip(&stats) {
                *x = (*x - mean) / (float_n.sqrt() * stddev);
            }
        });
        let mut corr = vec![0.0; m * m];
        corr.par_chunks_mut(m).enumerate().for_each(|(i, row)| {
            row[i] = 1.0;
            for j in i + 1..m {
                row[j] = (0..n).map(|k| data[k * m + i] * data[k * m + j]).sum();
            }
        });
        for i in 0..m {
            for j in 0..i {
                corr[i * m + j] = corr[j * m + i];
            }
        }
        corr
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
        let stddev: Vec<f64> = accelerate!(create(m, |j| {
            let mut s = 0.0;
            for i in 0..n {
                let d = data[i * m + j] - mean[j];
                s += d * d;
            }
            let sd = (s / float_n).sqrt();
            if sd <= EPS {
                1.0
            } else {
                sd
            }
        }));
        let normalised: Vec<f64> = accelerate!(create(n * m, |p| {
            let j = p % m;
            (data[p] - mean[j]) / (float_n.sqrt() * stddev[j])
        }));
        accelerate!(create(m * m, |p| {
            let i = p / m;
            let j = p % m;
            if i == j {
                1.0
            } else {
                let mut s = 0.0;
                for k in 0..n {
                    s += normalised[k * m + i] * normalised[k * m + j];
                }
                s
            }
        }))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
