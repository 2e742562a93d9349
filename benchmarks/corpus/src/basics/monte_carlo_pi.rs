//! A Monte Carlo estimate of pi from 20,000,000 points of the unit square, each point's
//! coordinates hashed from its index (splitmix64, 64-bit multiplies and shifts, the top
//! 53 bits as an `f64`), counting those inside the quarter circle: the way a user
//! parallelises random sampling without a shared generator. The test size is 1001
//! points.

use crate::check::same;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct MonteCarloPi {
    points: u64,
}

impl MonteCarloPi {
    pub fn new(scale: Scale) -> MonteCarloPi {
        MonteCarloPi {
            points: scale.pick(1001, 20_000_000),
        }
    }
}

/// A uniform number in `[0, 1)` from `i` (splitmix64's finaliser).
#[accel]
fn uniform(i: u64) -> f64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / 9_007_199_254_740_992.0
}

/// Whether point `i` falls inside the quarter circle.
#[accel]
fn inside(i: u64) -> bool {
    let (x, y) = (uniform(2 * i), uniform(2 * i + 1));
    x * x + y * y < 1.0
}

impl Program for MonteCarloPi {
    /// Points inside, and the estimate.
    type Output = (usize, f64);

    fn size(&self) -> String {
        format!("{} points", self.points)
    }

    fn sequential(&self) -> (usize, f64) {
        let hits = (0..self.points).filter(|i| inside(*i)).count();
        (hits, 4.0 * hits as f64 / self.points as f64)
    }

    fn rayon(&self) -> (usize, f64) {
        let hits = (0..self.points)
            .into_par_iter()
            .filter(|i| inside(*i))
            .count();
        (hits, 4.0 * hits as f64 / self.points as f64)
    }

    fn accel(&self) -> (usize, f64) {
        let n = self.points;
        let hits = accelerate!((0..n).into_par_iter().filter(|i| inside(*i)).count());
        (hits, 4.0 * hits as f64 / n as f64)
    }

    fn check(&self, got: &(usize, f64), want: &(usize, f64)) -> Result<(), String> {
        same(got, want)
    }
}
