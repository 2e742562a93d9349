//! Run-length encoding of 2^24 random `u32` values in runs of random lengths 1 to 64: the
//! (value, run length) pairs, in order. The sequential form is one loop; the rayon form
//! finds the run starts with `into_par_iter().filter(..)` over the indices and then each
//! run's value and length with `par_iter().enumerate().map(..)`; the accel form is the
//! same two steps in one `accelerate!`: a `filter` of the run-start indices, then a
//! `create` over the runs. The test size is 1001 values.

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Rle {
    xs: Vec<u32>,
}

impl Rle {
    pub fn new(scale: Scale) -> Rle {
        let n = scale.pick(1001, 1 << 24);
        let mut xs = Vec::with_capacity(n + 64);
        let mut run = 0;
        while xs.len() < n {
            let length = 1 + bits(650, run) % 64;
            let value = bits(651, run) as u32;
            xs.extend((0..length).map(|_| value));
            run += 1;
        }
        xs.truncate(n);
        Rle { xs }
    }
}

impl Program for Rle {
    type Output = Vec<(u32, u32)>;

    fn size(&self) -> String {
        format!("{} u32", self.xs.len())
    }

    fn sequential(&self) -> Vec<(u32, u32)> {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &x in &self.xs {
            match runs.last_mut() {
                Some((value, length)) if *value == x => *length += 1,
                _ => runs.push((x, 1)),
            }
        }
        runs
    }

    fn rayon(&self) -> Vec<(u32, u32)> {
        let xs = &self.xs;
        let starts: Vec<usize> = (0..xs.len())
            .into_par_iter()
            .filter(|&i| i == 0 || xs[i] != xs[i - 1])
            .collect();
        starts
            .par_iter()
            .enumerate()
            .map(|(r, &s)| {
                let end = if r + 1 < starts.len() {
                    starts[r + 1]
                } else {
                    xs.len()
                };
                (xs[s], (end - s) as u32)
            })
            .collect()
    }

    fn accel(&self) -> Vec<(u32, u32)> {
        let xs = &self.xs;
        accelerate!({
            let starts = filter(|i| i == 0 || xs[i] != xs[i - 1], create(xs.len(), |i| i));
            create(starts.len(), |r| {
                let s = starts[r];
                let end = if r + 1 < starts.len() {
                    starts[r + 1]
                } else {
                    xs.len()
                };
                (xs[s], (end - s) as u32)
            })
        })
    }

    fn check(&self, got: &Vec<(u32, u32)>, want: &Vec<(u32, u32)>) -> Result<(), String> {
        exact(got, want)
    }
}
