// Each example uses some of these.
#![allow(dead_code)]

//! What the examples share: deterministic data made from global indices (so every
//! number of ranks sees the same sequence), timing between collectives, and output on
//! rank 0.

use accel_runtime::comm::{all_gather_words, Communicator};
use std::sync::Arc;
use std::time::Instant;

/// A value in `[0, 1)` for global index `i` and stream `seed` (a hash: the same for any
/// partition of the indices).
pub fn unit(i: usize, seed: u64) -> f32 {
    let mut z = (i as u64).wrapping_add(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 24) as f32
}

/// The number after `--name` on the command line, or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|k| args.get(k + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `f` after every rank has arrived, and the slowest rank's time in ms.
pub fn timed<R>(comm: &Arc<dyn Communicator>, f: impl FnOnce() -> R) -> (R, f64) {
    all_gather_words(&**comm, 0);
    let start = Instant::now();
    let r = f();
    let mine = start.elapsed().as_secs_f64() * 1e3;
    let all = all_gather_words(&**comm, mine.to_bits());
    let slowest = all.into_iter().map(f64::from_bits).fold(0.0, f64::max);
    (r, slowest)
}
