use accel_runtime::prelude::*;

#[accel]
fn apply(_f: &dyn Fn(i32) -> i32, x: i32) -> i32 {
    x
}

fn main() {}
