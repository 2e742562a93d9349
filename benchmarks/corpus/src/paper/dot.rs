//! The dot product of two vectors of 2^25 random `f32` in [-1, 1) (the classic suite's
//! inputs, streams 1 and 2), written in all three forms as the iterator chain
//! `xs.iter().zip(ys).map(|(x, y)| x * y).sum()`: sequentially with `iter`, with rayon's
//! `par_iter`, and inside `accelerate!`, which runs the chain as a parallel reduction.
//! The test size is 1001 elements.

use crate::check::close;
use crate::random::uniform;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Dot {
    xs: Vec<f32>,
    ys: Vec<f32>,
}

impl Dot {
    pub fn new(scale: Scale) -> Dot {
        let n = scale.pick(1001, 1 << 25);
        Dot {
            xs: uniform(n, 1, -1.0, 1.0),
            ys: uniform(n, 2, -1.0, 1.0),
        }
    }
}

impl Program for Dot {
    type Output = f32;

    fn size(&self) -> String {
        format!("{} f32", self.xs.len())
    }

    fn sequential(&self) -> f32 {
        self.xs.iter().zip(&self.ys).map(|(x, y)| x * y).sum()
    }

    fn rayon(&self) -> f32 {
        self.xs.par_iter().zip(&self.ys).map(|(x, y)| x * y).sum()
    }

    fn accel(&self) -> f32 {
        let (xs, ys) = (&self.xs, &self.ys);
        accelerate!(xs.par_iter().zip(ys).map(|(x, y)| x * y).sum::<f32>())
    }

    fn check(&self, got: &f32, want: &f32) -> Result<(), String> {
        // The sequential form adds the terms one after another in f32 and drifts from the
        // exact sum (at 2^25 terms by 0.03 of 149); a parallel form groups them
        // differently and lands elsewhere. Errors are judged against sqrt(n), the typical
        // size of a sum of n such terms: 1e-4 of it is 0.58 at 2^25 terms and 0.003 at
        // the test size, where one term left out or counted twice (0.25 on average) fails.
        let n = self.xs.len() as f64;
        close(&[*got], &[*want], 1e-4, n.sqrt())
    }
}
