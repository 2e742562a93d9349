//! Local arrays assigned at computed indices (a histogram's `h[d] += 1`), in functional
//! and imperative sites, against debug mode (and cuda on the emulator when built with
//! it); an index past the array's end is an error of its kind in every mode.

use accel_runtime::prelude::*;

mod common;

use common::{agree as debug, noise};

/// A histogram of a block's digits in a local array, as a radix sort counts them.
#[accel]
fn digit_counts(xs: &[u32], lo: usize, hi: usize) -> [u32; 8] {
    let mut h = [0u32; 8];
    for i in lo..hi {
        h[(xs[i] % 8) as usize] += 1;
    }
    h
}

#[test]
#[allow(clippy::needless_range_loop)] // the loops accelerated code writes
fn local_arrays_assigned_at_computed_indices() {
    let xs: Vec<u32> = noise(1000, 5).iter().map(|x| (x + 500) as u32).collect();
    let blocks = 7usize;
    let per = xs.len().div_ceil(blocks);
    // Counts per block (functional), read back whole and element by element.
    let counts = debug(|| {
        accelerate!(create(blocks, |b| digit_counts(
            &xs,
            b * per,
            ((b + 1) * per).min(xs.len())
        )))
    });
    let mut want = vec![[0u32; 8]; blocks];
    for (i, x) in xs.iter().enumerate() {
        want[i / per][(x % 8) as usize] += 1;
    }
    assert_eq!(counts, want);
    // Running positions (imperative): each block's keys of each digit placed in order.
    let out = Tensor::<u32>::zeros(&[xs.len()]);
    let starts: Vec<u32> = (0..8u32)
        .map(|d| xs.iter().filter(|x| *x % 8 < d).count() as u32)
        .collect();
    debug(|| {
        accelerate!(parallel_loop(1, |_b| {
            let mut seen = [0u32; 8];
            for i in 0..xs.len() {
                let d = (xs[i] % 8) as usize;
                out.set([(starts[d] + seen[d]) as usize], xs[i]);
                seen[d] += 1;
            }
        }))
    });
    let mut sorted = xs.clone();
    sorted.sort_by_key(|x| x % 8);
    assert_eq!(out.to_vec(), sorted);
    // A computed index out of the array's bounds fails in every mode.
    let at = vec![3usize, 8];
    for mode in [Mode::Debug, Mode::Cpu] {
        let e = with_mode(mode, || {
            try_accelerate!(map(
                |k| {
                    let mut h = [0u32; 8];
                    h[k] += 1;
                    h[0]
                },
                &at
            ))
        })
        .unwrap_err();
        assert_eq!(
            e.kind(),
            accel_runtime::ErrorKind::IndexOutOfBounds,
            "{mode}: {e}"
        );
    }
}
