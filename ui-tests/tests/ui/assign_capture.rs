use accel_runtime::prelude::*;

fn main() {
    let v = vec![1, 2, 3];
    let mut count = 0;
    let _ = accelerate!(map(|x| { count += 1; x }, &v));
}
