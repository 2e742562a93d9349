//! PolyBench's durbin, LARGE (N = 2000): Durbin's (Levinson's) recursion for the
//! Yule-Walker equations, `y` such that `T y = -r` for the symmetric Toeplitz matrix `T`
//! with ones on the diagonal and `r` beside it; each step `k` takes the dot product of
//! `y[..k]` with `r[..k]` reversed to get the reflection coefficient `alpha`, then
//! updates `y[..k]` from itself reversed. `r[k]` is random in `[-0.5, 0.5)` divided by
//! `(k + 2)^2`, so that `T` is diagonally dominant and the recursion stable (PolyBench's
//! `r[i] = N + 1 - i` overflows to infinities and NaNs). The steps are sequential; the
//! rayon form parallelises each step's dot product (a parallel sum) and update; the accel
//! form is one site, an `#[accel]` function whose loop runs the steps, each a reduction
//! and a `create` of the new `y` (so the steps cost no site calls).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// Durbin's recursion as one accelerated function: the steps a sequential loop, each
/// step's dot product a reduction and its new `y` a `create` one longer.
#[accel]
pub fn levinson(r: &[f64]) -> Vec<f64> {
    let n = r.len();
    let mut y = vec![-r[0]];
    let mut beta = 1.0;
    let mut alpha = -r[0];
    for k in 1..n {
        beta *= 1.0 - alpha * alpha;
        let sum = reduce(|a, b| a + b, 0.0, create(k, |i| r[k - i - 1] * y[i]));
        alpha = -(r[k] + sum) / beta;
        y = create(k + 1, |i| {
            if i < k {
                y[i] + alpha * y[k - i - 1]
            } else {
                alpha
            }
        });
    }
    y
}

pub struct Durbin {
    r: Vec<f64>,
}

impl Durbin {
    pub fn new(scale: Scale) -> Durbin {
        let n = scale.pick(41, 2000);
        let mut r = matrix(n, 503, -0.5, 0.5);
        for (k, x) in r.iter_mut().enumerate() {
            *x /= ((k + 2) * (k + 2)) as f64;
        }
        Durbin { r }
    }
}

impl Program for Durbin {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("n = {}", self.r.len())
    }

    fn sequential(&self) -> Vec<f64> {
        let (n, r) = (self.r.len(), &self.r);
        let mut y = vec![0.0; n];
        let mut z = vec![0.0; n];
        y[0] = -r[0];
        let mut beta = 1.0;
        let mut alpha = -r[0];
        for k in 1..n {
            beta *= 1.0 - alpha * alpha;
            let mut sum = 0.0;
            for i in 0..k {
                sum += r[k - i - 1] * y[i];
            }
            alpha = -(r[k] + sum) / beta;
            for i in 0..k {
                z[i] = y[i] + alpha * y[k - i - 1];
            }
            y[..k].copy_from_slice(&z[..k]);
            y[k] = alpha;
        }
        y
    }

    fn rayon(&self) -> Vec<f64> {
        let (n, r) = (self.r.len(), &self.r);
        let mut y = vec![0.0; n];
        y[0] = -r[0];
        let mut beta = 1.0;
        let mut alpha = -r[0];
        for k in 1..n {
            beta *= 1.0 - alpha * alpha;
            let sum: f64 = (0..k).into_par_iter().map(|i| r[k - i - 1] * y[i]).sum();
            alpha = -(r[k] + sum) / beta;
            let z: Vec<f64> = (0..k)
                .into_par_iter()
                .map(|i| y[i] + alpha * y[k - i - 1])
                .collect();
            y[..k].copy_from_slice(&z);
            y[k] = alpha;
        }
        y
    }

    fn accel(&self) -> Vec<f64> {
        let r = &self.r;
        accelerate!(levinson(r))
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-10, 1e-6)
    }
}
