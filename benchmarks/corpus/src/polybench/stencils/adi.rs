//! PolyBench's adi (alternating direction implicit solver of a 2-d heat equation) at
//! LARGE's grid (N = 1000) with 50 time steps instead of 500 (500 take about 18 s
//! sequentially here; `DT = 1 / TSTEPS` follows the steps run, as PolyBench computes it):
//! each step solves one tridiagonal system per column of `u` into `v` (the column sweep,
//! a forward recurrence into `p` and `q` and a backward substitution), then one per row
//! of `v` into `u` (the row sweep); the result is `u`. The systems of one sweep are
//! independent: the rayon form solves them in parallel, keeping `v` transposed so that
//! each column sweep writes rows; the accel form holds `u`, `v`, `p` and `q` in
//! `Tensor`s and runs one `parallel_loop` over the systems per sweep.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Adi {
    tsteps: usize,
    n: usize,
    u: Vec<f64>,
}

/// PolyBench's coefficients `(a, b, c, d, e, f)`.
fn coefficients(tsteps: usize, n: usize) -> (f64, f64, f64, f64, f64, f64) {
    let dx = 1.0 / n as f64;
    let dy = 1.0 / n as f64;
    let dt = 1.0 / tsteps as f64;
    let (b1, b2) = (2.0, 1.0);
    let mul1 = b1 * dt / (dx * dx);
    let mul2 = b2 * dt / (dy * dy);
    let a = -mul1 / 2.0;
    let b = 1.0 + mul1;
    let c = a;
    let d = -mul2 / 2.0;
    let e = 1.0 + mul2;
    let f = d;
    (a, b, c, d, e, f)
}

impl Adi {
    pub fn new(scale: Scale) -> Adi {
        let (tsteps, n) = scale.pick((4, 31), (50, 1000));
        Adi {
            tsteps,
            n,
            u: matrix(n * n, 514, 0.0, 1.0),
        }
    }
}

impl Program for Adi {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{} steps, {}x{}", self.tsteps, self.n, self.n)
    }

    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let (a, b, c, d, e, f) = coefficients(self.tsteps, n);
        let mut u = self.u.clone();
        let mut v = vec![0.0; n * n];
        let mut p = vec![0.0; n * n];
        let mut q = vec![0.0; n * n];
        for _ in 1..=self.tsteps {
            // Column sweep.
            for i in 1..n - 1 {
                v[i] = 1.0;
                p[i * n] = 0.0;
                q[i * n] = v[i];
                for j in 1..n - 1 {
                    p[i * n + j] = -c / (a * p[i * n + j - 1] + b);
                    q[i * n + j] = (-d * u[j * n + i - 1] + (1.0 + 2.0 * d) * u[j * n + i]
                        - f * u[j * n + i + 1]
                        - a * q[i * n + j - 1])
                        / (a * p[i * n + j - 1] + b);
                }
                v[(n - 1) * n + i] = 1.0;
                for j in (1..=n - 2).rev() {
                    v[j * n + i] = p[i * n + j] * v[(j + 1) * n + i] + q[i * n + j];
                }
            }
            // Row sweep.
            for i in 1..n - 1 {
                u[i * n] = 1.0;
                p[i * n] = 0.0;
                q[i * n] = u[i * n];
                for j in 1..n - 1 {
                    p[i * n + j] = -f / (d * p[i * n + j - 1] + e);
                    q[i * n + j] = (-a * v[(i - 1) * n + j] + (1.0 + 2.0 * a) * v[i * n + j]
                        - c * v[(i + 1) * n + j]
                        - d * q[i * n + j - 1])
                        / (d * p[i * n + j - 1] + e);
                }
                u[i * n + n - 1] = 1.0;
                for j in (1..=n - 2).rev() {
                    u[i * n + j] = p[i * n + j] * u[i * n + j + 1] + q[i * n + j];
                }
            }
        }
        u
    }

    fn rayon(&self) -> Vec<f64> {
        let n = self.n;
        let (a, b, c, d, e, f) = coefficients(self.tsteps, n);
        let mut u = self.u.clone();
        // vt[i][j] is v[j][i]: the column sweep writes rows of vt.
        let mut vt = vec![0.0; n * n];
        let mut p = vec![0.0; n * n];
        let mut q = vec![0.0; n * n];
        for _ in 1..=self.tsteps {
            vt[n..(n - 1) * n]
                .par_chunks_mut(n)
                .zip(p[n..(n - 1) * n].par_chunks_mut(n))
                .zip(q[n..(n - 1) * n].par_chunks_mut(n))
                .enumerate()
                .for_each(|(r, ((v, p), q))| {
                    let i = r + 1;
                    v[0] = 1.0;
                    p[0] = 0.0;
                    q[0] = v[0];
                    for j in 1..n - 1 {
                        p[j] = -c / (a * p[j - 1] + b);
                        q[j] = (-d * u[j * n + i - 1] + (1.0 + 2.0 * d) * u[j * n + i]
                            - f * u[j * n + i + 1]
                            - a * q[j - 1])
                            / (a * p[j - 1] + b);
                    }
                    v[n - 1] = 1.0;
                    for j in (1..=n - 2).rev() {
                        v[j] = p[j] * v[j + 1] + q[j];
                    }
                });
            u[n..(n - 1) * n]
                .par_chunks_mut(n)
                .zip(p[n..(n - 1) * n].par_chunks_mut(n))
                .zip(q[n..(n - 1) * n].par_chunks_mut(n))
                .enumerate()
                .for_each(|(r, ((u, p), q))| {
                    let i = r + 1;
                    u[0] = 1.0;
                    p[0] = 0.0;
                    q[0] = u[0];
                    for j in 1..n - 1 {
                        p[j] = -f / (d * p[j - 1] + e);
                        q[j] = (-a * vt[j * n + i - 1] + (1.0 + 2.0 * a) * vt[j * n + i]
                            - c * vt[j * n + i + 1]
                            - d * q[j - 1])
                            / (d * p[j - 1] + e);
                    }
                    u[n - 1] = 1.0;
                    for j in (1..=n - 2).rev() {
                        u[j] = p[j] * u[j + 1] + q[j];
                    }
                });
        }
        u
    }

    fn accel(&self) -> Vec<f64> {
        let n = self.n;
        let (a, b, c, d, e, f) = coefficients(self.tsteps, n);
        let u = Tensor::from_vec(self.u.clone(), &[n, n]);
        let v = Tensor::<f64>::zeros(&[n, n]);
        let p = Tensor::<f64>::zeros(&[n, n]);
        let q = Tensor::<f64>::zeros(&[n, n]);
        for _ in 1..=self.tsteps {
            // Column sweep: one system per column i.
            accelerate!(parallel_loop(n - 2, |r| {
                let i = r + 1;
                v.set([0, i], 1.0);
                p.set([i, 0], 0.0);
                q.set([i, 0], v.get([0, i]));
                for j in 1..n - 1 {
                    p.set([i, j], -c / (a * p.get([i, j - 1]) + b));
                    q.set(
                        [i, j],
                        (-d * u.get([j, i - 1]) + (1.0 + 2.0 * d) * u.get([j, i])
                            - f * u.get([j, i + 1])
                            - a * q.get([i, j - 1]))
                            / (a * p.get([i, j - 1]) + b),
                    );
                }
                v.set([n - 1, i], 1.0);
                let mut j = n - 2;
                while j >= 1 {
                    v.set([j, i], p.get([i, j]) * v.get([j + 1, i]) + q.get([i, j]));
                    j -= 1;
                }
            }));
            // Row sweep: one system per row i.
            accelerate!(parallel_loop(n - 2, |r| {
                let i = r + 1;
                u.set([i, 0], 1.0);
                p.set([i, 0], 0.0);
                q.set([i, 0], u.get([i, 0]));
                for j in 1..n - 1 {
                    p.set([i, j], -f / (d * p.get([i, j - 1]) + e));
                    q.set(
                        [i, j],
                        (-a * v.get([i - 1, j]) + (1.0 + 2.0 * a) * v.get([i, j])
                            - c * v.get([i + 1, j])
                            - d * q.get([i, j - 1]))
                            / (d * p.get([i, j - 1]) + e),
                    );
                }
                u.set([i, n - 1], 1.0);
                let mut j = n - 2;
                while j >= 1 {
                    u.set([i, j], p.get([i, j]) * u.get([i, j + 1]) + q.get([i, j]));
                    j -= 1;
                }
            }));
        }
        u.to_vec()
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
