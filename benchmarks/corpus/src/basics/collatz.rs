//! The longest Collatz orbit of the numbers below 2,000,000 (`u64`s): each element a
//! `while` loop whose trip count differs from its neighbours', over a `u64` range, as a
//! user writes it: `(1..n).into_par_iter().map(collatz).max()` with rayon, a `fold` with
//! the neutral element in accelerated code (which has no `Option`). The test size is
//! 1001.

use crate::check::same;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Collatz {
    n: u64,
}

impl Collatz {
    pub fn new(scale: Scale) -> Collatz {
        Collatz {
            n: scale.pick(1001, 2_000_000),
        }
    }
}

/// The steps of `x`'s orbit down to 1.
#[accel]
fn collatz(x: u64) -> u32 {
    let mut v = x;
    let mut steps = 0u32;
    while v != 1 {
        v = if v.is_multiple_of(2) {
            v / 2
        } else {
            3 * v + 1
        };
        steps += 1;
    }
    steps
}

impl Program for Collatz {
    type Output = u32;

    fn size(&self) -> String {
        format!("1..{}", self.n)
    }

    fn sequential(&self) -> u32 {
        (1..self.n).map(collatz).max().unwrap_or(0)
    }

    fn rayon(&self) -> u32 {
        (1..self.n).into_par_iter().map(collatz).max().unwrap_or(0)
    }

    fn accel(&self) -> u32 {
        let n = self.n;
        accelerate!((1..n).into_par_iter().map(collatz).fold(0, |a, b| a.max(b)))
    }

    fn check(&self, got: &u32, want: &u32) -> Result<(), String> {
        same(got, want)
    }
}
