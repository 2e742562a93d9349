#![allow(unreachable_code)]
use accel_runtime::prelude::*;

struct Counter {
    n: i32,
}

impl Counter {
    #[accel]
    fn bump(&self, x: i32) -> i32 {
        x + self.n
    }
}

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| { fn helper(y: i32) -> i32 { y } helper(x) }, &v));
}
