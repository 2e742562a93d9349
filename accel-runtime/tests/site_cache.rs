//! A site finds its compiled code again on every call: per combination of captured types
//! and per compiled-in constant, whether the calling thread remembers it or the shared
//! cache holds it.

use accel_runtime::prelude::*;

fn total<T: Accel + Copy + Default + std::ops::Add<Output = T>>(v: &[T]) -> T {
    let zero = T::default();
    with_mode(Mode::Cpu, || accelerate!(reduce(|a, b| a + b, zero, v)))
}

#[allow(non_snake_case)]
fn scaled(v: &[i64], SCALE: i64) -> Vec<i64> {
    with_mode(Mode::Cpu, || accelerate!(map(|x| x * SCALE, v)))
}

#[test]
fn one_site_called_in_turn_with_other_types_and_constants_runs_the_code_of_each() {
    // Five type combinations of one site, more than a thread remembers: each call must
    // find its own code, remembered or not.
    let ints: Vec<i64> = (1..=1000).collect();
    let floats: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
    let narrow: Vec<i32> = (0..1000).map(|i| i - 500).collect();
    let unsigned: Vec<u32> = (0..1000).map(|i| i * 3).collect();
    let singles: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
    for _ in 0..6 {
        assert_eq!(total(&ints), 500_500);
        assert_eq!(total(&floats), 249_750.0);
        assert_eq!(total(&narrow), -500);
        assert_eq!(total(&unsigned), 1_498_500);
        assert_eq!(total(&singles), 124_875.0);
        // A capture named like a constant is compiled in: each value its own code.
        assert_eq!(scaled(&ints[..3], 2), vec![2, 4, 6]);
        assert_eq!(scaled(&ints[..3], 3), vec![3, 6, 9]);
    }
}
