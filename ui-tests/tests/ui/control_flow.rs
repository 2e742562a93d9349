use accel_runtime::prelude::*;

#[accel]
fn first_negative(xs: &[i32]) -> i32 {
    for i in 0..xs.len() {
        if xs[i] < 0 {
            return xs[i];
        }
    }
    loop {}
}

fn main() {}
