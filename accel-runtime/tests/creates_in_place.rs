//! A `create` assigned to the sequence it replaces, reading that sequence only at its own
//! index (a Jacobi step's borders), writes into its memory on the CPU. Every mode and
//! tier gives the sequential result, the caller's sequences are never written, and a
//! `create` of another length takes new memory.

use accel_runtime::__private::cpu_creates_in_place;
use accel_runtime::prelude::*;

mod common;
use common::{agree, values};

/// PolyBench's jacobi-1d: each half step reads the other sequence's neighbours and its
/// own at the borders.
#[accel]
fn jacobi(a: &[f64], b: &[f64], steps: usize) -> Vec<f64> {
    let n = a.len();
    let mut a = create(n, |i| a[i]);
    let mut b = create(n, |i| b[i]);
    for _t in 0..steps {
        b = create(n, |i| {
            if i == 0 || i == n - 1 {
                b[i]
            } else {
                0.33333 * (a[i - 1] + a[i] + a[i + 1])
            }
        });
        a = create(n, |i| {
            if i == 0 || i == n - 1 {
                a[i]
            } else {
                0.33333 * (b[i - 1] + b[i] + b[i + 1])
            }
        });
    }
    a
}

/// Every element from its own old value: a lane computed twice would double it again.
#[accel]
fn doubled(xs: &[f32], steps: usize) -> Vec<f32> {
    let n = xs.len();
    let mut x = create(n, |i| xs[i]);
    for _t in 0..steps {
        x = create(n, |i| x[i] * 2.0 + 1.0);
    }
    x
}

/// A sequence growing by one element every other step: those steps take new memory.
#[accel]
fn grown(xs: &[u32], steps: usize) -> Vec<u32> {
    let mut x = create(xs.len(), |i| xs[i]);
    for t in 0..steps {
        let m = x.len() + t % 2;
        x = create(m, |i| if i < x.len() { x[i] + 1 } else { 7 });
    }
    x
}

#[test]
fn steps_that_read_their_own_element_write_in_place_with_the_sequential_result() {
    for n in [1usize, 2, 3, 15, 16, 17, 37, 100, 1000, 2003] {
        let (a, b) = (values(n, 1), values(n, 2));
        let (a0, b0) = (a.clone(), b.clone());
        let before = cpu_creates_in_place();
        let got = agree(|| accelerate!(jacobi(&a, &b, 7)));
        if n >= 3 {
            assert!(
                cpu_creates_in_place() > before,
                "n = {n}: no step wrote in place"
            );
        }
        assert_eq!((a, b), (a0, b0), "the caller's sequences were written");
        // The sequential loop, which updates its two sequences in place.
        let (mut x, mut y) = (values(n, 1), values(n, 2));
        for _ in 0..7 {
            for i in 1..n.saturating_sub(1) {
                y[i] = 0.33333 * (x[i - 1] + x[i] + x[i + 1]);
            }
            for i in 1..n.saturating_sub(1) {
                x[i] = 0.33333 * (y[i - 1] + y[i] + y[i + 1]);
            }
        }
        assert_eq!(got, x, "n = {n}");

        let xs: Vec<f32> = values(n, 3).iter().map(|&v| v as f32).collect();
        let got = agree(|| accelerate!(doubled(&xs, 3)));
        let want: Vec<f32> = xs
            .iter()
            .map(|&v| ((v * 2.0 + 1.0) * 2.0 + 1.0) * 2.0 + 1.0)
            .collect();
        assert_eq!(got, want, "n = {n}");
    }
}

#[test]
fn a_create_of_another_length_takes_new_memory() {
    let xs: Vec<u32> = (0..40).collect();
    let got = agree(|| accelerate!(grown(&xs, 4)));
    let mut want: Vec<u32> = (4..44).collect();
    want.extend([9, 7]);
    assert_eq!(got, want);
    assert_eq!(xs, (0..40).collect::<Vec<u32>>());
}
