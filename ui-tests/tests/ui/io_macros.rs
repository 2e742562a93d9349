#![allow(unreachable_code)]
use accel_runtime::prelude::*;

#[accel]
fn noisy(x: i32) -> i32 {
    println!("{x}");
    x
}

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| { let _s = format!("{x}"); x }, &v));
}
