//! What a warm call of a small site costs: sites over 16 to 4096 elements called many
//! times in a row (the per-step sites of an iterative program, such as a 1-D Jacobi
//! sweep), against the same loop in plain Rust. Prints microseconds per call.
//!
//! `cargo run --release -p accel-bench --bin site_overhead [-- --calls N]`

use accel_bench::median;
use accel_runtime::prelude::*;
use std::time::Instant;

fn per_call_us(calls: usize, mut f: impl FnMut()) -> f64 {
    let rounds: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                f();
            }
            start.elapsed().as_secs_f64() * 1e6 / calls as f64
        })
        .collect();
    median(rounds)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000usize);
    println!("| elements | accel µs/call | sequential µs/call | accel - sequential |");
    println!("|---:|---:|---:|---:|");
    for n in [16usize, 256, 4096] {
        let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
        let mut out = Vec::new();
        let accel = per_call_us(calls, || {
            out = with_mode(Mode::Cpu, || {
                accelerate!(create(a.len(), |i| if i == 0 || i + 1 == a.len() {
                    a[i]
                } else {
                    0.33333 * (a[i - 1] + a[i] + a[i + 1])
                }))
            });
            std::hint::black_box(&out);
        });
        let seq = per_call_us(calls, || {
            let v: Vec<f64> = (0..n)
                .map(|i| {
                    if i == 0 || i + 1 == n {
                        a[i]
                    } else {
                        0.33333 * (a[i - 1] + a[i] + a[i + 1])
                    }
                })
                .collect();
            std::hint::black_box(&v);
        });
        println!("| {n} | {accel:.2} | {seq:.2} | {:.2} |", accel - seq);
    }
}
