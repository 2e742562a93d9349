//! PolyBench's fdtd-2d, a 2-d finite-difference time-domain simulation, at LARGE's grid
//! (NX = 1000, NY = 1200) with 500 time steps: each step sets row 0 of `ey` to the step's
//! source value `_fict_[t]`, updates `ey` from the difference of `hz` along x, `ex` from
//! the difference of `hz` along y, and then `hz` from the new `ex` and `ey`; the result is
//! the three fields. Every form updates the fields in place, as PolyBench does: the
//! accel form runs three `par_iter_mut().enumerate()` passes over the whole grid per step
//! (points a loop skips left alone); the rayon form runs rows in parallel in each of
//! the three loops.

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Fdtd2d {
    tmax: usize,
    nx: usize,
    ny: usize,
    ex: Vec<f64>,
    ey: Vec<f64>,
    hz: Vec<f64>,
    fict: Vec<f64>,
}

impl Fdtd2d {
    pub fn new(scale: Scale) -> Fdtd2d {
        let (tmax, nx, ny) = scale.pick((5, 19, 23), (500, 1000, 1200));
        Fdtd2d {
            tmax,
            nx,
            ny,
            ex: matrix(nx * ny, 515, 0.0, 1.0),
            ey: matrix(nx * ny, 516, 0.0, 1.0),
            hz: matrix(nx * ny, 517, 0.0, 1.0),
            fict: matrix(tmax, 518, 0.0, 1.0),
        }
    }
}

/// The fields `(ex, ey, hz)`.
type Fields = (Vec<f64>, Vec<f64>, Vec<f64>);

impl Program for Fdtd2d {
    type Output = Fields;

    fn size(&self) -> String {
        format!("{} steps, {}x{}", self.tmax, self.nx, self.ny)
    }

    fn sequential(&self) -> Fields {
        let (nx, ny) = (self.nx, self.ny);
        let (mut ex, mut ey, mut hz) = (self.ex.clone(), self.ey.clone(), self.hz.clone());
        for t in 0..self.tmax {
            ey[..ny].fill(self.fict[t]);
            for i in 1..nx {
                for j in 0..ny {
                    ey[i * ny + j] -= 0.5 * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
                }
            }
            for i in 0..nx {
                for j in 1..ny {
                    ex[i * ny + j] -= 0.5 * (hz[i * ny + j] - hz[i * ny + j - 1]);
                }
            }
            for i in 0..nx - 1 {
                for j in 0..ny - 1 {
                    hz[i * ny + j] -= 0.7
                        * (ex[i * ny + j + 1] - ex[i * ny + j] + ey[(i + 1) * ny + j]
                            - ey[i * ny + j]);
                }
            }
        }
        (ex, ey, hz)
    }

    fn rayon(&self) -> Fields {
        let (nx, ny) = (self.nx, self.ny);
        let (mut ex, mut ey, mut hz) = (self.ex.clone(), self.ey.clone(), self.hz.clone());
        for t in 0..self.tmax {
            ey[..ny].fill(self.fict[t]);
            ey[ny..]
                .par_chunks_mut(ny)
                .zip(hz.par_chunks(ny).zip(hz[ny..].par_chunks(ny)))
                .for_each(|(ey, (above, here))| {
                    for j in 0..ny {
                        ey[j] -= 0.5 * (here[j] - above[j]);
                    }
                });
            ex.par_chunks_mut(ny)
                .zip(hz.par_chunks(ny))
                .for_each(|(ex, hz)| {
                    for j in 1..ny {
                        ex[j] -= 0.5 * (hz[j] - hz[j - 1]);
                    }
                });
            hz[..(nx - 1) * ny]
                .par_chunks_mut(ny)
                .enumerate()
                .for_each(|(i, hz)| {
                    let (ex, ey) = (&ex[i * ny..], &ey[i * ny..]);
                    for j in 0..ny - 1 {
                        hz[j] -= 0.7 * (ex[j + 1] - ex[j] + ey[ny + j] - ey[j]);
                    }
                });
        }
        (ex, ey, hz)
    }

    fn accel(&self) -> Fields {
        let (nx, ny) = (self.nx, self.ny);
        let (mut ex, mut ey, mut hz) = (self.ex.clone(), self.ey.clone(), self.hz.clone());
        for t in 0..self.tmax {
            let source = self.fict[t];
            accelerate!(ey.par_iter_mut().enumerate().for_each(|(p, e)| {
                if p < ny {
                    *e = source;
                } else {
                    *e -= 0.5 * (hz[p] - hz[p - ny]);
                }
            }));
            accelerate!(ex.par_iter_mut().enumerate().for_each(|(p, e)| {
                if p % ny != 0 {
                    *e -= 0.5 * (hz[p] - hz[p - 1]);
                }
            }));
            accelerate!(hz.par_iter_mut().enumerate().for_each(|(p, h)| {
                let i = p / ny;
                let j = p % ny;
                if i != nx - 1 && j != ny - 1 {
                    *h -= 0.7 * (ex[p + 1] - ex[p] + ey[p + ny] - ey[p]);
                }
            }));
        }
        (ex, ey, hz)
    }

    fn check(&self, got: &Fields, want: &Fields) -> Result<(), String> {
        close(&got.0, &want.0, 1e-12, 1.0).map_err(|e| format!("ex: {e}"))?;
        close(&got.1, &want.1, 1e-12, 1.0).map_err(|e| format!("ey: {e}"))?;
        close(&got.2, &want.2, 1e-12, 1.0).map_err(|e| format!("hz: {e}"))
    }
}
