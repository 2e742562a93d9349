use accel_runtime::prelude::*;

#[accel]
fn maybe(x: i32) -> Option<i32> {
    Some(x)
}

fn main() {}
