//! The example of API.md: a reduction with an #[accel] function, a map with a captured
//! local, a function that reaches parallel operations itself, and two iterator chains.
//!
//! `cargo run -p accel-examples --bin quickstart` (set `ACCEL_MODE=debug` for checked
//! sequential execution, `ACCEL_LOG=1` to see what each site did).

use accel_runtime::prelude::*;

#[accel] // usable from accelerated code; still an ordinary fn
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[accel]
fn sum_of_squares(xs: &[f32]) -> f32 {
    // #[accel] fns may use parallel operations too
    reduce(|a, b| a + b, 0.0, map(|x| x * x, xs))
}

fn main() {
    let v: Vec<i64> = (1..=1_000_000).collect();
    let s = accelerate!(reduce(add, 0, &v)); // runs in parallel
    let t: i64 = accelerate!(v.par_iter().sum()); // the same, as an iterator chain
    let xs: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let c = 3.0f32;
    let ys: Vec<f32> = accelerate!(map(|x| c * x, &xs)); // captured locals are marshaled
    let q: f32 = accelerate!(sum_of_squares(&ys)); // reaches reduce through the fn
    let zs: Vec<f32> = accelerate!(xs.iter().map(|x| c * x).collect()); // a chain again

    assert_eq!(s, 500_000_500_000);
    assert_eq!(ys[10], 30.0);
    assert_eq!(t, s);
    assert_eq!(zs, ys);
    // A parallel float reduction groups additions differently from a sequential fold.
    let expected: f32 = ys.iter().fold(0.0, |a, y| a + y * y);
    assert!(
        (q - expected).abs() <= 1e-5 * expected.abs(),
        "{q} vs {expected}"
    );
    println!(
        "mode: {}",
        mode()
            .map(|m| m.to_string())
            .unwrap_or_else(|e| e.to_string())
    );
    println!("sum of 1..=1000000 = {s}");
    println!("3 * xs: first {:?}, last {}", &ys[..3], ys[999]);
    println!("sum of squares = {q}");
}
