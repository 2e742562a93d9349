//! Accepted: what API.md allows, compiled through the macros and run in debug mode.
use accel_runtime::prelude::*;

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct P {
    x: f32,
    y: f32,
}

#[accel]
fn norm(p: P) -> f32 {
    let P { x, y } = p;
    (x * x + y * y).sqrt()
}

#[accel]
fn apply(f: impl Fn(f32) -> f32, xs: &[f32]) -> Vec<f32> {
    map(f, xs)
}

fn main() {
    let ps = vec![P { x: 3.0, y: 4.0 }];
    let ns: Vec<f32> = accelerate!(map(norm, &ps));
    assert_eq!(ns, vec![5.0]);
    let k = 2.0f32;
    let ys = accelerate!(apply(|x| x * k, &ns));
    assert_eq!(ys, vec![10.0]);
}
