//! The primes below 3,000,000, counted by trial division (`u64`): a filter whose test is
//! a loop that leaves at the number's smallest factor, a prime's only at its square root,
//! as a user writes it: `(0..n).into_par_iter().filter(|x| is_prime(*x)).count()`. The
//! test size is 1001.

use crate::check::same;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Primes {
    n: u64,
}

impl Primes {
    pub fn new(scale: Scale) -> Primes {
        Primes {
            n: scale.pick(1001, 3_000_000),
        }
    }
}

/// Whether `x` is prime, by trial division.
#[accel]
fn is_prime(x: u64) -> bool {
    let mut d = 2u64;
    let mut prime = x >= 2;
    while prime && d * d <= x {
        if x.is_multiple_of(d) {
            prime = false;
        }
        d += 1;
    }
    prime
}

impl Program for Primes {
    type Output = usize;

    fn size(&self) -> String {
        format!("below {}", self.n)
    }

    fn sequential(&self) -> usize {
        (0..self.n).filter(|x| is_prime(*x)).count()
    }

    fn rayon(&self) -> usize {
        (0..self.n).into_par_iter().filter(|x| is_prime(*x)).count()
    }

    fn accel(&self) -> usize {
        let n = self.n;
        accelerate!((0..n).into_par_iter().filter(|x| is_prime(*x)).count())
    }

    fn check(&self, got: &usize, want: &usize) -> Result<(), String> {
        same(got, want)
    }
}
