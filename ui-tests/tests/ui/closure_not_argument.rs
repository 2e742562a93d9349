use accel_runtime::prelude::*;

fn closure_in_a_tuple(v: &[i32]) -> Vec<i32> {
    accelerate!({
        let t = (|x: i32| x + 1, 2);
        map(|x| x * t.1, v)
    })
}

fn capture_assigned_later(v: &[i32]) -> Vec<i32> {
    accelerate!({
        let mut c = 1;
        let f = move |x: i32| x + c;
        c += 1;
        map(f, v)
    })
}

fn main() {
    closure_in_a_tuple(&[1]);
    capture_assigned_later(&[1]);
}
