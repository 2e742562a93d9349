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

/// A loop of `steps` steps inside one site, each a reduction and a `create` over `n`
/// elements: what a launch costs inside a site.
#[accel]
fn steps_in_a_site(a: &[f64], steps: usize) -> f64 {
    let mut y = create(a.len(), |i| a[i]);
    let mut total = 0.0;
    for s in 0..steps {
        let sum = reduce(|p, q| p + q, 0.0, create(y.len(), |i| y[i] * a[i]));
        total += sum;
        y = create(y.len(), |i| y[i] * 0.5 + (s as f64) * 1e-3);
    }
    total
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
    println!();
    println!("| elements | accel µs/step (2 launches) | sequential µs/step |");
    println!("|---:|---:|---:|");
    let steps = 1000;
    for n in [16usize, 256, 4096] {
        let a: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 * 1e-4).collect();
        let accel = per_call_us(calls / steps + 1, || {
            let t = with_mode(Mode::Cpu, || accelerate!(steps_in_a_site(&a, steps)));
            std::hint::black_box(t);
        }) / steps as f64;
        let seq = per_call_us(calls / steps + 1, || {
            let mut y = a.clone();
            let mut total = 0.0;
            for s in 0..steps {
                total += y.iter().zip(&a).map(|(p, q)| p * q).sum::<f64>();
                y = y.iter().map(|v| v * 0.5 + (s as f64) * 1e-3).collect();
            }
            std::hint::black_box(total);
        }) / steps as f64;
        println!("| {n} | {accel:.2} | {seq:.2} |");
    }
}
