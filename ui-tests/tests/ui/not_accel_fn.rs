#![allow(unreachable_code)]
use accel_runtime::prelude::*;

fn double(x: i64) -> i64 {
    x * 2
}

#[accel]
fn quadruple(x: i64) -> i64 {
    double(double(x))
}

fn main() {
    let v = vec![1i64, 2, 3];
    let _ = accelerate!(map(double, &v));
    let _ = accelerate!(map(quadruple, &v));
}
