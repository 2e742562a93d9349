use accel_runtime::prelude::*;

#[accel]
fn label(_name: &str) -> i32 {
    0
}

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| if x > 1 { "big" } else { "small" }, &v));
}
