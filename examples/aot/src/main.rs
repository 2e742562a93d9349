//! Build-time kernels, end to end: the sites below are recorded in `accel-sites.json`
//! (`ACCEL_RECORD`), `build.rs` compiles their kernels to PTX, and `embed_kernels!()` puts
//! them in the binary, so `ACCEL_MODE=cuda` runs them without NVRTC.
//!
//! ```text
//! ACCEL_RECORD=examples/aot/accel-sites.json cargo run -p accel-aot-example   # record
//! cargo build -p accel-aot-example                                            # build
//! ACCEL_MODE=cuda ACCEL_LOG=1 target/debug/accel-aot-example                  # run
//! ```

use accel_runtime::prelude::*;

#[accel]
fn clamp01(x: f32) -> f32 {
    x.clamp(0.0, 1.0)
}

fn main() {
    accel_runtime::embed_kernels!();
    let n = 100_000usize;
    // A fixed pseudo-random signal (a linear congruential generator).
    let mut state = 12345u64;
    let xs: Vec<f32> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32 * 1.5 - 0.25
        })
        .collect();

    let gain = 1.1f32;
    let clamped: Vec<f32> = accelerate!(map(|x| clamp01(gain * x), &xs));
    let bins = 16usize;
    let buckets: Vec<usize> = accelerate!(map(
        |x| if x >= 1.0 {
            bins - 1
        } else {
            (x * bins as f32) as usize
        },
        &clamped
    ));
    let histogram: Vec<u32> = accelerate!(reduce_by_index(
        vec![0u32; bins],
        |a, b| a + b,
        0,
        &buckets,
        map(|_| 1u32, &buckets)
    ));
    let saturated: usize = accelerate!(clamped.iter().filter(|x| **x == 1.0).count());
    let total: f64 = accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x as f64, &clamped)));

    // The same, sequentially.
    let expected: Vec<f32> = xs.iter().map(|&x| clamp01(gain * x)).collect();
    assert_eq!(clamped, expected);
    let mut counts = vec![0u32; bins];
    for &x in &expected {
        counts[if x >= 1.0 {
            bins - 1
        } else {
            (x * bins as f32) as usize
        }] += 1;
    }
    assert_eq!(histogram, counts);
    assert_eq!(saturated, expected.iter().filter(|&&x| x == 1.0).count());
    let sum: f64 = expected.iter().map(|&x| x as f64).sum();
    assert!((total - sum).abs() <= 1e-9 * sum, "{total} vs {sum}");

    println!(
        "mode: {}",
        mode()
            .map(|m| m.to_string())
            .unwrap_or_else(|e| e.to_string())
    );
    println!("histogram of {n} clamped values: {histogram:?}");
    println!("{saturated} saturated; mean {:.6}", total / n as f64);
}
