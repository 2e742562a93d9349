use accel_runtime::prelude::*;

#[accel]
fn square(x: f64) -> f64 {
    x * x
}

fn main() {
    let x = 3.0f64;
    let _ = accelerate!(square(x) + 1.0);
}
