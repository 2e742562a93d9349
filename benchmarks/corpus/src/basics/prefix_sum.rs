//! The inclusive prefix sum of 2^24 random `i64` in [-1000, 1000]. The sequential form is
//! one loop (`iter().scan(..)`); the rayon form, as a rayon user writes one (rayon has no
//! scan), sums chunks of 2^16 in parallel, offsets the chunks by the sums before them
//! (sequentially) and adds the offsets in parallel; the accel form is `scan`. The test
//! size is 1001 values.

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// The rayon form's chunk.
const CHUNK: usize = 1 << 16;

pub struct PrefixSum {
    xs: Vec<i64>,
}

impl PrefixSum {
    pub fn new(scale: Scale) -> PrefixSum {
        let n = scale.pick(1001, 1 << 24);
        PrefixSum {
            xs: (0..n as u64)
                .map(|i| (bits(640, i) % 2001) as i64 - 1000)
                .collect(),
        }
    }
}

impl Program for PrefixSum {
    type Output = Vec<i64>;

    fn size(&self) -> String {
        format!("{} i64", self.xs.len())
    }

    fn sequential(&self) -> Vec<i64> {
        self.xs
            .iter()
            .scan(0, |sum, x| {
                *sum += x;
                Some(*sum)
            })
            .collect()
    }

    fn rayon(&self) -> Vec<i64> {
        let mut out = self.xs.clone();
        out.par_chunks_mut(CHUNK).for_each(|chunk| {
            let mut sum = 0;
            for x in chunk {
                sum += *x;
                *x = sum;
            }
        });
        let mut offsets = Vec::with_capacity(out.len().div_ceil(CHUNK));
        let mut offset = 0;
        for chunk in out.chunks(CHUNK) {
            offsets.push(offset);
            offset += chunk[chunk.len() - 1];
        }
        out.par_chunks_mut(CHUNK)
            .zip(offsets)
            .for_each(|(chunk, offset)| {
                for x in chunk {
                    *x += offset;
                }
            });
        out
    }

    fn accel(&self) -> Vec<i64> {
        let xs = &self.xs;
        accelerate!(scan(|a, b| a + b, 0, xs))
    }

    fn check(&self, got: &Vec<i64>, want: &Vec<i64>) -> Result<(), String> {
        exact(got, want)
    }
}
