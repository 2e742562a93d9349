use accel_runtime::prelude::*;

#[derive(Clone, Copy)]
struct Pair {
    a: i32,
    b: i32,
}

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| Pair { a: x, b: -x }, &v));
}
