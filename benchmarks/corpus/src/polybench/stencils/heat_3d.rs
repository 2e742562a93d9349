//! PolyBench's heat-3d at LARGE's grid (N = 120) with 250 time steps instead of 500 (500
//! take about 2.5 s sequentially here): each step sets every interior
//! point of the cube `B` to `A`'s value plus `0.125` times its second differences along
//! the three axes, then `A` from `B` the same way; both arrays start equal (as
//! PolyBench's initialisation makes them), their faces keep their initial values, and the
//! result is `A`. The accel form is one `create` over the whole cube per half step (face
//! points copied); the rayon form runs the interior planes in parallel.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Heat3d {
    tsteps: usize,
    n: usize,
    a: Vec<f64>,
}

impl Heat3d {
    pub fn new(scale: Scale) -> Heat3d {
        let (tsteps, n) = scale.pick((5, 15), (250, 120));
        Heat3d {
            tsteps,
            n,
            a: matrix(n * n * n, 519, 0.0, 1.0),
        }
    }
}

/// The new value of the interior point `p` of `from` (strides `nn` and `n`), PolyBench's
/// expression.
fn point(from: &[f64], n: usize, nn: usize, p: usize) -> f64 {
    0.125 * (from[p + nn] - 2.0 * from[p] + from[p - nn])
        + 0.125 * (from[p + n] - 2.0 * from[p] + from[p - n])
        + 0.125 * (from[p + 1] - 2.0 * from[p] + from[p - 1])
        + from[p]
}

/// The interior planes of `to` from `from`, in parallel.
fn half_step(n: usize, from: &[f64], to: &mut [f64]) {
    let nn = n * n;
    to[nn..(n - 1) * nn]
        .par_chunks_mut(nn)
        .enumerate()
        // `move` copies `n`, `nn` and `from` into the closure: captured by reference, they
        // are reloaded after every store and the loop runs four times slower.
        .for_each(move |(r, plane)| {
            let i = r + 1;
            for j in 1..n - 1 {
                for k in 1..n - 1 {
                    plane[j * n + k] = point(from, n, nn, i * nn + j * n + k);
                }
            }
        });
}

impl Program for Heat3d {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} steps, {}^3", self.tsteps, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let (n, nn) = (self.n, self.n * self.n);
        let mut a = self.a.clone();
        let mut b = self.a.clone();
        for _ in 0..self.tsteps {
            for i in 1..n - 1 {
                for j in 1..n - 1 {
                    for k in 1..n - 1 {
                        b[i * nn + j * n + k] = point(&a, n, nn, i * nn + j * n + k);
                    }
                }
            }
            for i in 1..n - 1 {
                for j in 1..n - 1 {
                    for k in 1..n - 1 {
                        a[i * nn + j * n + k] = point(&b, n, nn, i * nn + j * n + k);
                    }
                }
            }
        }
        a
    }

    fn rayon(&self) -> Vec<f64> {
        let n = self.n;
        let mut a = self.a.clone();
        let mut b = self.a.clone();
        for _ in 0..self.tsteps {
            half_step(n, &a, &mut b);
            half_step(n, &b, &mut a);
        }
        a
    }

    fn accel(&self) -> Vec<f64> {
        let (n, nn) = (self.n, self.n * self.n);
        let mut a = self.a.clone();
        let mut b = self.a.clone();
        for _ in 0..self.tsteps {
            b = accelerate!(create(n * nn, |p| {
                let i = p / nn;
                let j = p / n % n;
                let k = p % n;
                if i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1 {
                    b[p]
                } else {
                    0.125 * (a[p + nn] - 2.0 * a[p] + a[p - nn])
                        + 0.125 * (a[p + n] - 2.0 * a[p] + a[p - n])
                        + 0.125 * (a[p + 1] - 2.0 * a[p] + a[p - 1])
                        + a[p]
                }
            }));
            a = accelerate!(create(n * nn, |p| {
                let i = p / nn;
                let j = p / n % n;
                let k = p % n;
                if i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1 {
                    a[p]
                } else {
                    0.125 * (b[p + nn] - 2.0 * b[p] + b[p - nn])
                        + 0.125 * (b[p + n] - 2.0 * b[p] + b[p - n])
                        + 0.125 * (b[p + 1] - 2.0 * b[p] + b[p - 1])
                        + b[p]
                }
            }));
        }
        a
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
