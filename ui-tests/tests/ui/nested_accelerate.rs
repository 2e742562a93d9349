use accel_runtime::prelude::*;

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| accelerate!(reduce(|a, b| a + b, 0, &v)) + x, &v));
}
