use accel_runtime::prelude::*;

fn main() {
    let v = vec![1, 2, 3];
    let _ = accelerate!({
        let _f = |x: i32| x + 1;
        map(|x| x * 2, &v)
    });
}
