//! A histogram of a large distributed input: 256 bins of byte values spread over the
//! ranks, each rank counting its part and the ranks' bins merged on every rank.
//!
//! `mpirun -n 4 target/release/examples/histogram [--n 67108864] [--runs 5]`

use accel_runtime::prelude::*;
use accel_runtime::DistVec;

mod common;
use common::*;

fn main() {
    let mpi = accel_mpi::Mpi::init().expect("MPI starts");
    let world = mpi.world();
    let (n, runs) = (arg("--n", 1 << 26), arg("--runs", 5));
    let byte = |i: usize| (unit(i, 7) * unit(i, 8) * 256.0) as u8;
    let mine: Vec<u8> = DistVec::<u8>::even_range(&world, n).map(byte).collect();
    let bytes = DistVec::from_local(&world, mine);
    let mut best = f64::INFINITY;
    let mut bins = Vec::new();
    for _ in 0..runs {
        let (h, ms) = timed(&world, || {
            accelerate!(reduce_by_index(
                vec![0u64; 256],
                |a, b| a + b,
                0,
                map(|b: u8| b as usize, &bytes),
                map(|_b: u8| 1u64, &bytes)
            ))
        });
        best = best.min(ms);
        bins = h;
    }
    if world.rank() == 0 {
        let mut reference = vec![0u64; 256];
        for i in 0..n {
            reference[byte(i) as usize] += 1;
        }
        assert_eq!(bins, reference, "the one-process histogram");
        let checksum: u64 = bins.iter().enumerate().map(|(b, c)| b as u64 * c).sum();
        println!(
            "histogram: {n} bytes on {} ranks: {best:.2} ms (best of {runs}); bins checksum {checksum}; matches the one-process histogram",
            world.size()
        );
    }
}
