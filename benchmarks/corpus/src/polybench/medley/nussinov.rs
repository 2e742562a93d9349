//! PolyBench's nussinov with N = 1500 instead of LARGE's 2500 (2500 takes about 5 s
//! sequentially here): Nussinov's dynamic program for RNA folding, the most base pairs
//! `table[i][j]` that the subsequence `seq[i..=j]` can form, filled from the last row up
//! (each cell the best of its neighbours below and to the left, of a pair `(i, j)` around
//! `table[i+1][j-1]`, and of every split `table[i][k] + table[k+1][j]`), in `i32` as
//! PolyBench's default type; the bases are random in `0..4` (PolyBench cycles them), held
//! as `i32` (PolyBench's `base` is `char`, but accelerated code rejects `u8`), and the
//! table starts at zero. A cell needs only cells of shorter spans, so the cells of
//! one diagonal `j - i = d` are independent: the rayon form computes each diagonal in
//! parallel into a vector and writes it back, and the accel form does the same with one
//! `create` over a diagonal's cells, calling an `#[accel]` function for a cell.

use crate::check::exact;
use crate::random::below;
use crate::{Program, Scale};
use accel_runtime::prelude::*;
use rayon::prelude::*;

pub struct Nussinov {
    n: usize,
    seq: Vec<i32>,
}

impl Nussinov {
    pub fn new(scale: Scale) -> Nussinov {
        let n = scale.pick(37, 1500);
        Nussinov {
            n,
            seq: below(n, 513, 4).into_iter().map(|b| b as i32).collect(),
        }
    }
}

/// The value of cell `(i, j)`, `i < j`, from the cells of shorter spans (PolyBench's
/// loop body, the cell starting at zero).
#[accel]
pub fn cell(table: &[i32], seq: &[i32], n: usize, i: usize, j: usize) -> i32 {
    let mut best = table[i * n + j].max(table[i * n + j - 1]);
    best = best.max(table[(i + 1) * n + j]);
    if i < j - 1 {
        let pair = if seq[i] + seq[j] == 3 { 1 } else { 0 };
        best = best.max(table[(i + 1) * n + j - 1] + pair);
    } else {
        best = best.max(table[(i + 1) * n + j - 1]);
    }
    for k in i + 1..j {
        best = best.max(table[i * n + k] + table[(k + 1) * n + j]);
    }
    best
}

impl Program for Nussinov {
    type Output = Vec<i32>;

    fn size(&self) -> String {
        format!("{} bases", self.n)
    }

    fn sequential(&self) -> Vec<i32> {
        let (n, seq) = (self.n, &self.seq);
        let score = |a: i32, b: i32| if a >= b { a } else { b };
        let mut table = vec![0i32; n * n];
        for i in (0..n).rev() {
            for j in i + 1..n {
                if j >= 1 {
                    table[i * n + j] = score(table[i * n + j], table[i * n + j - 1]);
                }
                if i + 1 < n {
                    table[i * n + j] = score(table[i * n + j], table[(i + 1) * n + j]);
                }
                if j >= 1 && i + 1 < n {
                    if i < j - 1 {
                        let pair = if seq[i] + seq[j] == 3 { 1 } else { 0 };
                        table[i * n + j] =
                            score(table[i * n + j], table[(i + 1) * n + j - 1] + pair);
                    } else {
                        table[i * n + j] = score(table[i * n + j], table[(i + 1) * n + j - 1]);
                    }
                }
                for k in i + 1..j {
                    table[i * n + j] =
                        score(table[i * n + j], table[i * n + k] + table[(k + 1) * n + j]);
                }
            }
        }
        table
    }

    fn rayon(&self) -> Vec<i32> {
        let (n, seq) = (self.n, &self.seq);
        let mut table = vec![0i32; n * n];
        for d in 1..n {
            let diagonal: Vec<i32> = (0..n - d)
                .into_par_iter()
                .map(|i| cell(&table, seq, n, i, i + d))
                .collect();
            for (i, v) in diagonal.into_iter().enumerate() {
                table[i * n + i + d] = v;
            }
        }
        table
    }

    fn accel(&self) -> Vec<i32> {
        let (n, seq) = (self.n, &self.seq);
        let mut table = vec![0i32; n * n];
        for d in 1..n {
            let diagonal: Vec<i32> = accelerate!(create(n - d, |i| cell(&table, seq, n, i, i + d)));
            for (i, v) in diagonal.into_iter().enumerate() {
                table[i * n + i + d] = v;
            }
        }
        table
    }

    fn check(&self, got: &Vec<i32>, want: &Vec<i32>) -> Result<(), String> {
        exact(got, want)
    }
}
