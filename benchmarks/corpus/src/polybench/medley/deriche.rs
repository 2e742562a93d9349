//! PolyBench's deriche, LARGE (W = 4096, H = 2160), in `f64` (PolyBench's default type
//! for deriche is `float`): Deriche's recursive edge-detection filter with `alpha =
//! 0.25`, PolyBench's coefficients (`b1 = 2^-alpha` included): a causal and an
//! anti-causal second-order recursion along every row of `imgIn` (`W` rows of `H`
//! pixels), summed, then the same two along every column of that sum; the result is
//! `imgOut`. The recursions of one pass are independent: the rayon form runs rows in
//! parallel and the column passes over columns, writing them transposed; the accel form
//! holds the images in `Tensor`s and runs one `parallel_loop` per PolyBench loop nest
//! (over rows, over columns, or over pixels for the sums).

use crate::check::close;
use crate::polybench::matrix;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Deriche {
    w: usize,
    h: usize,
    img: Vec<f64>,
}

/// PolyBench's coefficients.
struct Coefficients {
    a1: f64,
    a2: f64,
    a3: f64,
    a4: f64,
    a5: f64,
    a6: f64,
    a7: f64,
    a8: f64,
    b1: f64,
    b2: f64,
    c1: f64,
    c2: f64,
}

impl Coefficients {
    fn new(alpha: f64) -> Coefficients {
        let k = (1.0 - (-alpha).exp()) * (1.0 - (-alpha).exp())
            / (1.0 + 2.0 * alpha * (-alpha).exp() - (2.0 * alpha).exp());
        let a1 = k;
        let a2 = k * (-alpha).exp() * (alpha - 1.0);
        let a3 = k * (-alpha).exp() * (alpha + 1.0);
        let a4 = -k * (-2.0 * alpha).exp();
        Coefficients {
            a1,
            a2,
            a3,
            a4,
            a5: a1,
            a6: a2,
            a7: a3,
            a8: a4,
            b1: 2.0f64.powf(-alpha),
            b2: -(-2.0 * alpha).exp(),
            c1: 1.0,
            c2: 1.0,
        }
    }
}

const ALPHA: f64 = 0.25;

impl Deriche {
    pub fn new(scale: Scale) -> Deriche {
        let (w, h) = scale.pick((29, 23), (4096, 2160));
        Deriche {
            w,
            h,
            img: matrix(w * h, 510, 0.0, 1.0),
        }
    }
}

impl Program for Deriche {
    type Output = Vec<f64>;

    fn size(&self) -> String {
        format!("{}x{}", self.w, self.h)
    }

    fn sequential(&self) -> Vec<f64> {
        let (w, h) = (self.w, self.h);
        let Coefficients {
            a1,
            a2,
            a3,
            a4,
            a5,
            a6,
            a7,
            a8,
            b1,
            b2,
            c1,
            c2,
        } = Coefficients::new(ALPHA);
        let img_in = &self.img;
        let mut img_out = vec![0.0; w * h];
        let mut y1 = vec![0.0; w * h];
        let mut y2 = vec![0.0; w * h];
        for i in 0..w {
            let (mut ym1, mut ym2, mut xm1) = (0.0, 0.0, 0.0);
            for j in 0..h {
                y1[i * h + j] = a1 * img_in[i * h + j] + a2 * xm1 + b1 * ym1 + b2 * ym2;
                xm1 = img_in[i * h + j];
                ym2 = ym1;
                ym1 = y1[i * h + j];
            }
        }
        for i in 0..w {
            let (mut yp1, mut yp2, mut xp1, mut xp2) = (0.0, 0.0, 0.0, 0.0);
            for j in (0..h).rev() {
                y2[i * h + j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2;
                xp2 = xp1;
                xp1 = img_in[i * h + j];
                yp2 = yp1;
                yp1 = y2[i * h + j];
            }
        }
        for i in 0..w {
            for j in 0..h {
                img_out[i * h + j] = c1 * (y1[i * h + j] + y2[i * h + j]);
            }
        }
        for j in 0..h {
            let (mut tm1, mut ym1, mut ym2) = (0.0, 0.0, 0.0);
            for i in 0..w {
                y1[i * h + j] = a5 * img_out[i * h + j] + a6 * tm1 + b1 * ym1 + b2 * ym2;
                tm1 = img_out[i * h + j];
                ym2 = ym1;
                ym1 = y1[i * h + j];
            }
        }
        for j in 0..h {
            let (mut tp1, mut tp2, mut yp1, mut yp2) = (0.0, 0.0, 0.0, 0.0);
            for i in (0..w).rev() {
                y2[i * h + j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2;
                tp2 = tp1;
                tp1 = img_out[i * h + j];
                yp2 = yp1;
                yp1 = y2[i * h + j];
            }
        }
        for i in 0..w {
            for j in 0..h {
                img_out[i * h + j] = c2 * (y1[i * h + j] + y2[i * h + j]);
            }
        }
        img_out
    }

    fn rayon(&self) -> Vec<f64> {
        let (w, h) = (self.w, self.h);
        let c = Coefficients::new(ALPHA);
        // The row passes: rows of `y1` and `y2` in parallel, then their sum.
        let mut y1 = vec![0.0; w * h];
        let mut y2 = vec![0.0; w * h];
        y1.par_chunks_mut(h)
            .zip(y2.par_chunks_mut(h))
            .zip(self.img.par_chunks(h))
            .for_each(|((y1, y2), x)| {
                let (mut ym1, mut ym2, mut xm1) = (0.0, 0.0, 0.0);
                for j in 0..h {
                    y1[j] = c.a1 * x[j] + c.a2 * xm1 + c.b1 * ym1 + c.b2 * ym2;
                    xm1 = x[j];
                    ym2 = ym1;
                    ym1 = y1[j];
                }
                let (mut yp1, mut yp2, mut xp1, mut xp2) = (0.0, 0.0, 0.0, 0.0);
                for j in (0..h).rev() {
                    y2[j] = c.a3 * xp1 + c.a4 * xp2 + c.b1 * yp1 + c.b2 * yp2;
                    xp2 = xp1;
                    xp1 = x[j];
                    yp2 = yp1;
                    yp1 = y2[j];
                }
            });
        let mid: Vec<f64> = y1
            .par_iter()
            .zip(&y2)
            .map(|(a, b)| c.c1 * (a + b))
            .collect();
        // The column passes: column j of the image is row j of `y1t` and `y2t`.
        let mut y1t = vec![0.0; w * h];
        let mut y2t = vec![0.0; w * h];
        y1t.par_chunks_mut(w)
            .zip(y2t.par_chunks_mut(w))
            .enumerate()
            .for_each(|(j, (y1, y2))| {
                let (mut tm1, mut ym1, mut ym2) = (0.0, 0.0, 0.0);
                for i in 0..w {
                    y1[i] = c.a5 * mid[i * h + j] + c.a6 * tm1 + c.b1 * ym1 + c.b2 * ym2;
                    tm1 = mid[i * h + j];
                    ym2 = ym1;
                    ym1 = y1[i];
                }
                let (mut tp1, mut tp2, mut yp1, mut yp2) = (0.0, 0.0, 0.0, 0.0);
                for i in (0..w).rev() {
                    y2[i] = c.a7 * tp1 + c.a8 * tp2 + c.b1 * yp1 + c.b2 * yp2;
                    tp2 = tp1;
                    tp1 = mid[i * h + j];
                    yp2 = yp1;
                    yp1 = y2[i];
                }
            });
        let mut out = vec![0.0; w * h];
        out.par_chunks_mut(h).enumerate().for_each(|(i, row)| {
            for (j, o) in row.iter_mut().enumerate() {
                *o = c.c2 * (y1t[j * w + i] + y2t[j * w + i]);
            }
        });
        out
    }

    fn accel(&self) -> Vec<f64> {
        let (w, h) = (self.w, self.h);
        let Coefficients {
            a1,
            a2,
            a3,
            a4,
            a5,
            a6,
            a7,
            a8,
            b1,
            b2,
            c1,
            c2,
        } = Coefficients::new(ALPHA);
        let img_in = Tensor::from_vec(self.img.clone(), &[w, h]);
        let img_out = Tensor::<f64>::zeros(&[w, h]);
        let y1 = Tensor::<f64>::zeros(&[w, h]);
        let y2 = Tensor::<f64>::zeros(&[w, h]);
        accelerate!(parallel_loop(w, |i| {
            let mut ym1 = 0.0;
            let mut ym2 = 0.0;
            let mut xm1 = 0.0;
            for j in 0..h {
                let y = a1 * img_in.get([i, j]) + a2 * xm1 + b1 * ym1 + b2 * ym2;
                y1.set([i, j], y);
                xm1 = img_in.get([i, j]);
                ym2 = ym1;
                ym1 = y;
            }
        }));
        accelerate!(parallel_loop(w, |i| {
            let mut yp1 = 0.0;
            let mut yp2 = 0.0;
            let mut xp1 = 0.0;
            let mut xp2 = 0.0;
            for r in 0..h {
                let j = h - 1 - r;
                let y = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2;
                y2.set([i, j], y);
                xp2 = xp1;
                xp1 = img_in.get([i, j]);
                yp2 = yp1;
                yp1 = y;
            }
        }));
        accelerate!(parallel_loop(w * h, |p| {
            let (i, j) = (p / h, p % h);
            img_out.set([i, j], c1 * (y1.get([i, j]) + y2.get([i, j])));
        }));
        accelerate!(parallel_loop(h, |j| {
            let mut tm1 = 0.0;
            let mut ym1 = 0.0;
            let mut ym2 = 0.0;
            for i in 0..w {
                let y = a5 * img_out.get([i, j]) + a6 * tm1 + b1 * ym1 + b2 * ym2;
                y1.set([i, j], y);
                tm1 = img_out.get([i, j]);
                ym2 = ym1;
                ym1 = y;
            }
        }));
        accelerate!(parallel_loop(h, |j| {
            let mut tp1 = 0.0;
            let mut tp2 = 0.0;
            let mut yp1 = 0.0;
            let mut yp2 = 0.0;
            for r in 0..w {
                let i = w - 1 - r;
                let y = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2;
                y2.set([i, j], y);
                tp2 = tp1;
                tp1 = img_out.get([i, j]);
                yp2 = yp1;
                yp1 = y;
            }
        }));
        accelerate!(parallel_loop(w * h, |p| {
            let (i, j) = (p / h, p % h);
            img_out.set([i, j], c2 * (y1.get([i, j]) + y2.get([i, j])));
        }));
        img_out.to_vec()
    }

    fn check(&self, got: &Vec<f64>, want: &Vec<f64>) -> Result<(), String> {
        close(got, want, 1e-12, 1.0)
    }
}
