//! The assignment step of k-means: for each of 400,000 points in 8 dimensions (`f32`),
//! the nearest of 16 centres by squared distance, as a user writes it: `par_chunks_exact(8)`
//! over the points' coordinates, loops over the centres and the dimensions inside. The
//! test size is 1001 points.

use crate::check::exact;
use crate::random::uniform;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

const DIMS: usize = 8;

pub struct Kmeans {
    points: Vec<f32>,
    centres: Vec<f32>,
}

impl Kmeans {
    pub fn new(scale: Scale) -> Kmeans {
        let n = scale.pick(1001, 400_000);
        Kmeans {
            points: uniform(n * DIMS, 650, -1.0, 1.0),
            centres: uniform(16 * DIMS, 651, -1.0, 1.0),
        }
    }
}

/// The centre nearest to point `p`.
fn nearest(p: &[f32], centres: &[f32]) -> usize {
    let (mut best, mut best_distance) = (0, f32::MAX);
    for c in 0..centres.len() / DIMS {
        let mut s = 0.0f32;
        for j in 0..DIMS {
            let t = p[j] - centres[c * DIMS + j];
            s += t * t;
        }
        if s < best_distance {
            best_distance = s;
            best = c;
        }
    }
    best
}

impl Program for Kmeans {
    type Output = Vec<usize>;

    fn size(&self) -> String {
        format!(
            "{} points, {} centres, {DIMS} dims",
            self.points.len() / DIMS,
            self.centres.len() / DIMS
        )
    }

    fn sequential(&self) -> Vec<usize> {
        let cs = &self.centres;
        self.points
            .chunks_exact(DIMS)
            .map(|p| nearest(p, cs))
            .collect()
    }

    fn rayon(&self) -> Vec<usize> {
        let cs = &self.centres;
        self.points
            .par_chunks_exact(DIMS)
            .map(|p| nearest(p, cs))
            .collect()
    }

    fn accel(&self) -> Vec<usize> {
        let (points, centres) = (&self.points, &self.centres);
        let (k, d) = (centres.len() / DIMS, DIMS);
        accelerate!(points
            .par_chunks_exact(d)
            .map(|p| {
                let (mut best, mut best_distance) = (0usize, f32::MAX);
                for c in 0..k {
                    let mut s = 0.0f32;
                    for j in 0..d {
                        let t = p[j] - centres[c * d + j];
                        s += t * t;
                    }
                    if s < best_distance {
                        best_distance = s;
                        best = c;
                    }
                }
                best
            })
            .collect())
    }

    fn check(&self, got: &Vec<usize>, want: &Vec<usize>) -> Result<(), String> {
        exact(got, want)
    }
}
