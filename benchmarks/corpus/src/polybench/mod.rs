//! PolyBench/C 4.2's kernels, in `f64` as PolyBench's default `DATA_TYPE`, at its LARGE
//! sizes where they fit 2 cores' time (each file says when not). PolyBench initialises
//! its arrays with formulas; the corpus uses random numbers from fixed seeds instead, as
//! real data is, with the kernels' loops as PolyBench writes them.

mod blas;
mod datamining;
mod kernels;
mod medley;
mod solvers;
mod stencils;

use crate::Entry;

/// `n` random `f64` numbers in `[lo, hi)` (stream `seed`).
pub fn matrix(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f64> {
    crate::random::uniform(n, seed, lo, hi)
        .into_iter()
        .map(f64::from)
        .collect()
}

/// PolyBench's kernels, in PolyBench's order.
pub fn programs() -> Vec<Entry> {
    let mut all = Vec::new();
    all.extend(datamining::programs());
    all.extend(blas::programs());
    all.extend(kernels::programs());
    all.extend(solvers::programs());
    all.extend(medley::programs());
    all.extend(stencils::programs());
    all
}
