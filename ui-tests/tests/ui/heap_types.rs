#![allow(unreachable_code)]
use accel_runtime::prelude::*;
use std::rc::Rc;

#[accel]
fn shared(_x: Rc<i32>) -> i32 {
    0
}

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!(map(|x| Box::new(x), &v));
    let _ = accelerate!(create(3, |i| Vec::with_capacity(i)));
}
