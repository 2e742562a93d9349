//! The latency of each collective that distributed sites use, on this machine: every
//! rank sends `bytes` (an all-gather, a gather to rank 0, a scatter from rank 0), the
//! median of `--runs` calls each. The guide's table of what each operation sends is in
//! these units.
//!
//! `mpirun -n 4 target/release/examples/collectives [--runs 50]`

use accel_runtime::comm::{all_gather_words, Communicator};
use std::time::Instant;

mod common;
use common::arg;

/// The median time in µs of `runs` calls of `f`, the slowest rank's.
fn median(world: &dyn Communicator, runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        all_gather_words(world, 0);
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    let mine = times[runs / 2];
    all_gather_words(world, mine.to_bits())
        .into_iter()
        .map(f64::from_bits)
        .fold(0.0, f64::max)
}

fn main() {
    let mpi = accel_mpi::Mpi::init().expect("MPI starts");
    let world = mpi.world();
    let w = &*world;
    let runs = arg("--runs", 50);
    let size = w.size();
    if w.rank() == 0 {
        println!("| bytes per rank | all-gather µs | gather µs | scatter µs | ({size} ranks) |");
        println!("|---|---|---|---|---|");
    }
    for bytes in [8usize, 1 << 10, 1 << 16, 1 << 20, 1 << 24] {
        let mine = vec![w.rank() as u8; bytes];
        let counts = vec![bytes; size];
        let mut all = vec![0u8; bytes * size];
        let all_gather = median(w, runs, || w.all_gather_into(&mine, &counts, &mut all));
        let gather = median(w, runs, || {
            let out = (w.rank() == 0).then_some(&mut all[..]);
            w.gather_into(0, &mine, &counts, out)
        });
        let whole = vec![1u8; bytes * size];
        let mut part = vec![0u8; bytes];
        let scatter = median(w, runs, || {
            w.scatter_into(0, (w.rank() == 0).then_some(&whole[..]), &counts, &mut part)
        });
        assert!(all
            .chunks(bytes)
            .enumerate()
            .all(|(r, c)| c.iter().all(|&b| b == r as u8)));
        if w.rank() == 0 {
            println!("| {bytes} | {all_gather:.1} | {gather:.1} | {scatter:.1} | |");
        }
    }
}
