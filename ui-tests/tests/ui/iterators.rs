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

// A fold is a parallel reduce: its accumulator has the element's type.
#[accel]
fn widened(xs: &[i32]) -> i64 {
    xs.iter().fold(0i64, |acc, x| acc + *x as i64)
}

fn main() {}
