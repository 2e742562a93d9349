use accel_runtime::prelude::*;

#[accel]
fn fill(t: &Tensor<f32>, n: usize) {
    parallel_loop(n, |i| t.set([i], 1.0));
}

fn main() {
    let t = Tensor::<f32>::zeros(&[4]);
    let v = vec![1.0f32; 4];
    let _ = accelerate!({
        fill(&t, 4);
        reduce(|a, b| a + b, 0.0, &v)
    });
}
