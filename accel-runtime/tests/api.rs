//! The example of API.md, as written there.

use accel_runtime::prelude::*;

#[accel]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[accel]
fn sum_of_squares(xs: &[f32]) -> f32 {
    reduce(|a, b| a + b, 0.0, map(|x| x * x, xs))
}

#[test]
fn the_api_example_runs() {
    let v: Vec<i64> = (1..=1_000_000).collect();
    let s = accelerate!(reduce(add, 0, &v));
    assert_eq!(s, 500_000_500_000);
    let xs: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let c = 3.0f32;
    let ys: Vec<f32> = accelerate!(map(|x| c * x, &xs));
    assert_eq!(ys[999], 2997.0);
    let q: f32 = accelerate!(sum_of_squares(&ys));
    // Parallel float reductions group additions differently from a sequential fold.
    let expected: f32 = ys.iter().map(|y| y * y).fold(0.0, |a, b| a + b);
    assert!(
        (q - expected).abs() <= 1e-5 * expected.abs(),
        "{q} vs {expected}"
    );
}

#[test]
fn describe_lists_the_program() {
    let ys = vec![1.0f32];
    let p = describe!(sum_of_squares(&ys)).program().unwrap();
    assert_eq!(p.function_names(), vec!["api::sum_of_squares"]);
    println!("{p}");
}
