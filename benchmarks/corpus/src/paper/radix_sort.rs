//! LSD radix sort of random `u32` keys, one bit per pass, as the Accelerate paper's
//! benchmark does it: per bit, each key's destination from a prefix sum of the bit's
//! zeros, then a scatter. The rayon and sequential forms sort as their users would, with
//! `par_sort_unstable` and `sort_unstable`.

use crate::check::exact;
use crate::random::bits;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct RadixSort {
    keys: Vec<u32>,
}

/// One pass: the keys stably partitioned by bit `bit`, zeros first.
#[accel]
pub fn radix_pass(keys: &[u32], bit: u32) -> Vec<u32> {
    let n = keys.len();
    let zeros = scan(
        |a, b| a + b,
        0,
        map(|k| 1 - ((k >> bit) & 1) as usize, keys),
    );
    let total_zeros = zeros[n - 1];
    let dest = create(n, |i| {
        if (keys[i] >> bit) & 1 == 0 {
            zeros[i] - 1
        } else {
            total_zeros + i - zeros[i]
        }
    });
    scatter(vec![0u32; n], &dest, keys)
}

impl RadixSort {
    pub fn new(scale: Scale) -> RadixSort {
        let n = scale.pick(1001, 1 << 22);
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

    fn accel(&self) -> Vec<u32> {
        let mut keys = self.keys.clone();
        for bit in 0..32u32 {
            keys = accelerate!(radix_pass(&keys, bit));
        }
        keys
    }

    fn check(&self, got: &Vec<u32>, want: &Vec<u32>) -> Result<(), String> {
        exact(got, want)
    }
}
