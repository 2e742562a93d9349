use accel_runtime::prelude::*;

fn main() {
    let mut xs = vec![1.0f32, 2.0, 3.0];
    // rayon's in-place forms: each message says what to write instead.
    accelerate!(xs.par_iter_mut().for_each(|x| *x *= 2.0));
    let _ = accelerate!(xs.windows(2).map(|w| w[0] + w[1]).collect::<Vec<f32>>());
    let _ = accelerate!(xs.chunks(2).map(|c| c[0]).collect::<Vec<f32>>());
    // A closure defined outside the site.
    let double = |x: f32| x * 2.0;
    let _: Vec<f32> = accelerate!(map(double, &xs));
}
