use accel_runtime::prelude::*;

#[accel]
fn even(n: u64) -> bool {
    if n == 0 { true } else { odd(n - 1) }
}

#[accel]
fn odd(n: u64) -> bool {
    if n == 0 { false } else { even(n - 1) }
}

fn main() {
    // Recursion is rejected where accelerated code reaches it: the functions alone remain
    // ordinary Rust functions.
    let v = vec![1u64, 2, 3];
    let _ = accelerate!(map(even, &v));
}
