use accel_runtime::prelude::*;

#[accel]
fn total(xs: &[i32]) -> i32 {
    xs.iter().sum()
}

#[accel]
fn grow(mut xs: Vec<i32>) -> Vec<i32> {
    xs.push(1);
    xs
}

fn main() {}
