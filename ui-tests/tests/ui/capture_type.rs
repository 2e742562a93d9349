use accel_runtime::prelude::*;

fn main() {
    let v = vec![1, 2, 3];
    let name = String::from("scale");
    let _ = accelerate!(map(|x| if name.len() > 3 { x } else { 0 }, &v));
}
