use accel_runtime::prelude::*;

#[accel]
async fn later(x: i32) -> i32 {
    x
}

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| async { x }, &v));
}
