//! The paper's Listing 3: two views of one tensor, written from one parallel loop, alias
//! the same memory, so the tensor ends `[0, 7, 0, 0, 0, 2]`.
//!
//! `cargo run -p accel-examples --bin aliasing`

use accel_runtime::prelude::*;

fn main() {
    let t = Tensor::<i64>::zeros(&[6]);
    let a = t.sub(1, 2); // elements 1 and 2
    let b = t.sub(4, 2); // elements 4 and 5
    accelerate!(parallel_loop(1, |i| {
        a.set([i], 7);
        b.set([i + 1], 2);
    }));
    let result = t.to_vec();
    assert_eq!(result, vec![0, 7, 0, 0, 0, 2]);
    println!("{result:?}");
}
