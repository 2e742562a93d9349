//! The gravitational acceleration of every body of 16384 in the plane, from all the
//! others (all pairs, softened by 0.01), along x and y, with the classic suite's inputs
//! (positions in [-100, 100)^2, masses in [1, 8), streams 8, 9 and 10). Each body's sum
//! runs over the other bodies in order in every form: a loop per body sequentially,
//! `into_par_iter` over the bodies with rayon, and `create` over the bodies with a loop
//! inside each element in the accel form (the classic suite's form, with y beside x). The
//! test size is 301 bodies.

use crate::check::close;
use crate::random::uniform;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct NBody {
    px: Vec<f32>,
    py: Vec<f32>,
    pm: Vec<f32>,
}

impl NBody {
    pub fn new(scale: Scale) -> NBody {
        let n = scale.pick(301, 16_384);
        NBody {
            px: uniform(n, 8, -100.0, 100.0),
            py: uniform(n, 9, -100.0, 100.0),
            pm: uniform(n, 10, 1.0, 8.0),
        }
    }

    /// The acceleration of body `i`.
    fn acceleration(&self, i: usize) -> (f32, f32) {
        let (px, py, pm) = (&self.px, &self.py, &self.pm);
        let (mut ax, mut ay) = (0.0f32, 0.0f32);
        for j in 0..px.len() {
            let (dx, dy) = (px[j] - px[i], py[j] - py[i]);
            let d2 = dx * dx + dy * dy + 0.01;
            let r3 = d2 * d2.sqrt();
            ax += pm[j] * dx / r3;
            ay += pm[j] * dy / r3;
        }
        (ax, ay)
    }
}

impl Program for NBody {
    type Output = Vec<(f32, f32)>;

    fn size(&self) -> String {
        format!("{} bodies", self.px.len())
    }

    fn sequential(&self) -> Vec<(f32, f32)> {
        (0..self.px.len()).map(|i| self.acceleration(i)).collect()
    }

    fn rayon(&self) -> Vec<(f32, f32)> {
        (0..self.px.len())
            .into_par_iter()
            .map(|i| self.acceleration(i))
            .collect()
    }

    fn accel(&self) -> Vec<(f32, f32)> {
        let (px, py, pm) = (&self.px, &self.py, &self.pm);
        accelerate!(create(px.len(), |i| {
            let mut ax = 0.0f32;
            let mut ay = 0.0f32;
            for j in 0..px.len() {
                let dx = px[j] - px[i];
                let dy = py[j] - py[i];
                let d2 = dx * dx + dy * dy + 0.01;
                let r3 = d2 * d2.sqrt();
                ax += pm[j] * dx / r3;
                ay += pm[j] * dy / r3;
            }
            (ax, ay)
        }))
    }

    fn check(&self, got: &Vec<(f32, f32)>, want: &Vec<(f32, f32)>) -> Result<(), String> {
        // Each body's sum runs in the same order in every form (the CPU backend's results
        // are identical); the tolerance leaves room for a backend that contracts
        // `a * b + c` into a fused multiply-add or rounds `sqrt` differently.
        let flat =
            |v: &Vec<(f32, f32)>| -> Vec<f32> { v.iter().flat_map(|&(x, y)| [x, y]).collect() };
        close(&flat(got), &flat(want), 1e-4, 1.0)
    }
}
