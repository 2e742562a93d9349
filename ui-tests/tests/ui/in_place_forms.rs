use accel_runtime::prelude::*;

fn main() {
    let mut xs = vec![1.0f32, 2.0, 3.0];
    // An in-place form must end in `.for_each`: a map over `iter_mut` is not one.
    let _: Vec<f32> = accelerate!(xs.iter_mut().map(|x| *x * 2.0).collect());
    // It writes a captured sequence, not one made inside the site.
    accelerate!({
        let mut ys = vec![0.0f32; 3];
        ys.par_iter_mut().for_each(|y| *y = 1.0)
    });
    // Its closure names the parts of a pair.
    accelerate!(xs.par_iter_mut().enumerate().for_each(|pair| *pair.1 = 0.0));
    // A closure defined outside the site.
    let double = |x: f32| x * 2.0;
    let _: Vec<f32> = accelerate!(map(double, &xs));
}
