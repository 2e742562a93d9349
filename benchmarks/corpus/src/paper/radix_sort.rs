//! LSD radix sort of random `u32` keys, as the Accelerate paper's benchmark table has it,
//! in the form a user writes for a parallel machine: four passes of 8-bit digits, each
//! a histogram per block of keys (a local array of 256 counts), a prefix sum over the
//! counts in digit-major order (where each block's keys of each digit start), and a
//! pass that moves each block's keys to their places in order. The rayon and
//! sequential forms sort as their users would, with `par_sort_unstable` and
//! `sort_unstable`.
//!
//! (A radix sort of one bit per pass, map/scan/scatter 32 times, reads and writes the
//! keys over thirty times as often: on two cores it cannot beat `sort_unstable`.)

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

/// Keys per block of the histograms.
const BLOCK: usize = 1 << 14;

pub struct RadixSort {
    keys: Vec<u32>,
}

/// The 8-bit digit of `key` at `shift`.
#[accel]
pub fn digit(key: u32, shift: u32) -> usize {
    ((key >> shift) & 255) as usize
}

impl RadixSort {
    pub fn new(scale: Scale) -> RadixSort {
        let n = scale.pick(40_001, 1 << 22);
        RadixSort {
            keys: (0..n as u64).map(|i| bits(111, i) as u32).collect(),
        }
    }
}

impl Program for RadixSort {
    type Output = Vec<u32>;

    fn size(&self) -> String {
        format!("{} u32 keys", self.keys.len())
    }

    fn sequential(&self) -> Vec<u32> {
        let mut keys = self.keys.clone();
        keys.sort_unstable();
        keys
    }

    fn rayon(&self) -> Vec<u32> {
        let mut keys = self.keys.clone();
        keys.par_sort_unstable();
        keys
    }

    // Loops over the 256 digits index local arrays and tensors alike, as users write them.
    #[allow(clippy::needless_range_loop)]
    fn accel(&self) -> Vec<u32> {
        let n = self.keys.len();
        let blocks = n.div_ceil(BLOCK);
        // The keys move between two buffers, pass after pass.
        let mut keys = Tensor::from_vec(self.keys.clone(), &[n]);
        let mut sorted = Tensor::<u32>::zeros(&[n]);
        let counts = Tensor::<usize>::zeros(&[256, blocks]);
        for pass in 0..4u32 {
            let shift = 8 * pass;
            // Each block's count of each digit, digit-major.
            accelerate!(parallel_loop(blocks, |b| {
                let mut h = [0usize; 256];
                for i in b * BLOCK..((b + 1) * BLOCK).min(n) {
                    h[digit(keys.get([i]), shift)] += 1;
                }
                for d in 0..256 {
                    counts.set([d, b], h[d]);
                }
            }));
            let flat = counts.to_vec();
            // Where each block's keys of each digit end.
            let ends: Vec<usize> = accelerate!(scan(|a, b| a + b, 0, &flat));
            accelerate!(parallel_loop(blocks, |b| {
                let mut at = [0usize; 256];
                for d in 0..256 {
                    at[d] = ends[d * blocks + b] - flat[d * blocks + b];
                }
                for i in b * BLOCK..((b + 1) * BLOCK).min(n) {
                    let key = keys.get([i]);
                    let d = digit(key, shift);
                    sorted.set([at[d]], key);
                    at[d] += 1;
                }
            }));
            std::mem::swap(&mut keys, &mut sorted);
        }
        keys.to_vec()
    }

    fn check(&self, got: &Vec<u32>, want: &Vec<u32>) -> Result<(), String> {
        exact(got, want)
    }
}
