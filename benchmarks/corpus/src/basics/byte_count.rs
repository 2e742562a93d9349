//! The number of occurrences of each of the 256 byte values in 2^26 bytes (a histogram),
//! the bytes skewed towards small values (each the smaller of two uniform bytes), as `u8`
//! in all three forms. The sequential form counts in a loop,
//! the rayon form with `par_iter().fold(..).reduce(..)` over per-thread counts, the accel
//! form with `reduce_by_index` of ones into 256 bins. The test size is 1001 bytes.

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct ByteCount {
    bytes: Vec<u8>,
}

impl ByteCount {
    pub fn new(scale: Scale) -> ByteCount {
        let n = scale.pick(1001, 1 << 26);
        let bytes = (0..n as u64)
            .map(|i| {
                let r = bits(630, i);
                (r & 0xff).min((r >> 8) & 0xff) as u8
            })
            .collect();
        ByteCount { bytes }
    }
}

impl Program for ByteCount {
    type Output = Vec<u32>;

    fn size(&self) -> String {
        format!("{} bytes", self.bytes.len())
    }

    fn sequential(&self) -> Vec<u32> {
        let mut counts = vec![0u32; 256];
        for &b in &self.bytes {
            counts[b as usize] += 1;
        }
        counts
    }

    fn rayon(&self) -> Vec<u32> {
        self.bytes
            .par_iter()
            .fold(
                || vec![0u32; 256],
                |mut counts, &b| {
                    counts[b as usize] += 1;
                    counts
                },
            )
            .reduce(
                || vec![0u32; 256],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            )
    }

    fn accel(&self) -> Vec<u32> {
        let bytes = &self.bytes;
        accelerate!(reduce_by_index(
            vec![0u32; 256],
            |a, b| a + b,
            0,
            map(|b| b as usize, bytes),
            map(|_| 1u32, bytes)
        ))
    }

    fn check(&self, got: &Vec<u32>, want: &Vec<u32>) -> Result<(), String> {
        exact(got, want)
    }
}
