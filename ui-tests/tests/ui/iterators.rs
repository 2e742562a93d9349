use accel_runtime::prelude::*;

// Iterator chains are accelerated code; these parts of them are not.
#[accel]
fn largest(xs: &[i32]) -> i32 {
    xs.iter().copied().max().unwrap_or(0)
}

#[accel]
fn backwards(xs: &[i32]) -> i32 {
    xs.iter().rev().sum()
}

#[accel]
fn grow(mut xs: Vec<i32>) -> Vec<i32> {
    xs.push(1);
    xs
}

fn main() {}
