//! Sparse matrix times dense vector, the matrix in CSR form with a random number of
//! nonzeros per row (1 to 32) at random columns.

use crate::check::close;
use crate::random::{below, uniform};
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Smvm {
    row_start: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f32>,
    x: Vec<f32>,
}

impl Smvm {
    pub fn new(scale: Scale) -> Smvm {
        let rows = scale.pick(1000, 1 << 20);
        let lens = below(rows, 101, 32);
        let mut row_start = vec![0usize];
        for l in &lens {
            row_start.push(row_start.last().unwrap() + l + 1);
        }
        let nnz = *row_start.last().unwrap();
        Smvm {
            row_start,
            cols: below(nnz, 102, rows),
            vals: uniform(nnz, 103, -1.0, 1.0),
            x: uniform(rows, 104, -1.0, 1.0),
        }
    }

    fn row(&self, r: usize) -> f32 {
        let mut sum = 0.0;
        for k in self.row_start[r]..self.row_start[r + 1] {
            sum += self.vals[k] * self.x[self.cols[k]];
        }
        sum
    }
}

impl Program for Smvm {
    type Output = Vec<f32>;

    fn size(&self) -> String {
        format!("{} rows, {} nonzeros", self.x.len(), self.vals.len())
    }

    fn sequential(&self) -> Vec<f32> {
        (0..self.x.len()).map(|r| self.row(r)).collect()
    }

    fn rayon(&self) -> Vec<f32> {
        (0..self.x.len())
            .into_par_iter()
            .map(|r| self.row(r))
            .collect()
    }

    fn accel(&self) -> Vec<f32> {
        let (row_start, cols, vals, x) = (&self.row_start, &self.cols, &self.vals, &self.x);
        accelerate!(create(x.len(), |r| {
            let mut sum = 0.0f32;
            for k in row_start[r]..row_start[r + 1] {
                sum += vals[k] * x[cols[k]];
            }
            sum
        }))
    }

    fn check(&self, got: &Vec<f32>, want: &Vec<f32>) -> Result<(), String> {
        close(got, want, 1e-5, 1.0)
    }
}
