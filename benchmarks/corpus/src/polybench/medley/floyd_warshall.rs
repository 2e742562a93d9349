//! PolyBench's floyd-warshall with N = 1000 instead of LARGE's 2800 (2800 takes about
//! 19 s sequentially here): all-pairs shortest path lengths by Floyd-Warshall, `path[i][j]
//! = min(path[i][j], path[i][k] + path[k][j])` for every `k` in turn, in `i32` as
//! PolyBench's default type for this kernel. The edge lengths are random in `1..=100`,
//! with a quarter of the pairs unconnected at length 999 (PolyBench's "no edge" value).
//! Both parallel forms update the rows in place, in parallel, against a copy of row `k`
//! (which step `k` leaves unchanged, the lengths being positive): rayon's
//! `par_chunks_mut`, and the same form inside `accelerate!` with the loop along the row
//! written with indices.

use crate::check::exact;
use crate::random::below;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct FloydWarshall {
    n: usize,
    path: Vec<i32>,
}

impl FloydWarshall {
    pub fn new(scale: Scale) -> FloydWarshall {
        let n = scale.pick(31, 1000);
        let length = below(n * n, 511, 100);
        let missing = below(n * n, 512, 4);
        let path = length
            .iter()
            .zip(&missing)
            .map(|(&l, &m)| if m == 0 { 999 } else { l as i32 + 1 })
            .collect();
        FloydWarshall { n, path }
    }
}

impl Program for FloydWarshall {
    type Output = Vec<i32>;

    fn size(&self) -> String {
        format!("{} vertices", self.n)
    }

    fn sequential(&self) -> Vec<i32> {
        let n = self.n;
        let mut path = self.path.clone();
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    path[i * n + j] = if path[i * n + j] < path[i * n + k] + path[k * n + j] {
                        path[i * n + j]
                    } else {
                        path[i * n + k] + path[k * n + j]
                    };
                }
            }
        }
        path
    }

    fn rayon(&self) -> Vec<i32> {
        let n = self.n;
        let mut path = self.path.clone();
        for k in 0..n {
            let row_k = path[k * n..(k + 1) * n].to_vec();
            path.par_chunks_mut(n).for_each(|row| {
                let ik = row[k];
                for (x, kj) in row.iter_mut().zip(&row_k) {
                    *x = (*x).min(ik + kj);
                }
            });
        }
        path
    }

    fn accel(&self) -> Vec<i32> {
        let n = self.n;
        let mut path = self.path.clone();
        for k in 0..n {
            let row_k = path[k * n..(k + 1) * n].to_vec();
            accelerate!(path.par_chunks_mut(n).for_each(|row| {
                let ik = row[k];
                for j in 0..n {
                    row[j] = row[j].min(ik + row_k[j]);
                }
            }));
        }
        path
    }

    fn check(&self, got: &Vec<i32>, want: &Vec<i32>) -> Result<(), String> {
        exact(got, want)
    }
}
