use accel_runtime::prelude::*;

#[accel]
fn inc(x: i32) -> i32 {
    x + 1
}

#[accel]
fn dec(x: i32) -> i32 {
    x - 1
}

fn main() {
    let v = vec![1, 2, 3];
    let up = true;
    let _ = accelerate!(map(if up { inc } else { dec }, &v));
}
