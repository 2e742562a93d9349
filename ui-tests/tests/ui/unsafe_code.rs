use accel_runtime::prelude::*;

fn main() {
    let v = vec![1u32, 2, 3];
    let _ = accelerate!(map(|x| unsafe { std::mem::transmute::<u32, i32>(x) }, &v));
}
