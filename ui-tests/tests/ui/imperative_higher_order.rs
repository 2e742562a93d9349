use accel_runtime::prelude::*;

#[accel]
fn apply_at(t: &Tensor<f32>, i: usize, f: impl Fn(f32) -> f32) {
    t.set([i], f(t.get([i])));
}

fn main() {
    let t = Tensor::<f32>::zeros(&[4]);
    accelerate!(parallel_loop(4, |i| apply_at(&t, i, |x| x + 1.0)));
}
