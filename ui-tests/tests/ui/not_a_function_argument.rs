use accel_runtime::prelude::*;

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map((1, 2), &v));
}
