//! Sites whose elements are rows, split across devices: a `create` of rows concatenates
//! row by row, a `flatten` of rows splits as its rows, and a `parallel_loop` whose
//! iterations write their own rows of a tensor splits by rows (each part writing, or
//! copying back from a GPU, only its own).
#![cfg(feature = "cuda")]

use accel_runtime::prelude::*;
use accel_runtime::{site_stats, Device, ErrorKind, RanOn};

mod common;

use common::devices::*;

#[test]
fn rows_made_by_create_concatenate_row_by_row() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for n in [0usize, 999, 2_345] {
            let rows: Vec<Vec<i64>> = (0..n).map(|i| ints(3, i as u64)).collect();
            let doubled: Vec<Vec<i64>> = rows
                .iter()
                .map(|r| r.iter().map(|x| x * 2).collect())
                .collect();
            let made: Vec<Vec<usize>> = (0..n)
                .map(|i| (0..4).map(|j| i * 4 + j).collect())
                .collect();
            let (d, m) = on(&devices, || {
                (
                    accelerate!(map(|row| map(|x| x * 2, &row), &rows)),
                    accelerate!(create(n, |i| create(4, |j| i * 4 + j))),
                )
            });
            assert_eq!(d, doubled, "n = {n} on {devices:?}");
            assert_eq!(m, made, "n = {n} on {devices:?}");
        }
    }
    // Rows of one length in each part, of another in later parts: irregular, as on one
    // device.
    let split = on_both(|| {
        try_accelerate!(create(3_000, |i| create(
            if i < 2_000 { 2 } else { 3 },
            |j| j
        )))
    });
    let one = with_mode(Mode::Cpu, || {
        try_accelerate!(create(3_000, |i| create(
            if i < 2_000 { 2 } else { 3 },
            |j| j
        )))
    });
    let message = |e: AccelError| e.to_string().split_once(": ").map(|(_, m)| m.to_string());
    let split = message(split.unwrap_err());
    assert_eq!(
        split.as_deref(),
        Some("a produced sequence of sequences is irregular: row 0 has 2 elements, another row 3")
    );
    assert_eq!(split, message(one.unwrap_err()));
}

#[test]
fn a_flatten_of_rows_splits_and_irregular_rows_fail_as_on_one_device() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for n in [0usize, 1, 999, 1001, 4_321] {
            let xs = ints(n, 6);
            let expect: Vec<i64> = xs
                .iter()
                .flat_map(|x| (0..3).map(move |k| x * 10 + k as i64))
                .collect();
            let flat = on(&devices, || {
                accelerate!(flatten(
                    create(xs.len(), |i| create(3, |k| xs[i] * 10 + k as i64))
                ))
            });
            assert_eq!(flat, expect, "n = {n} on {devices:?}");
        }
        // Rows of two lengths, in different parts (1000 elements a part): an error, as on
        // one device, not a concatenation of the parts' own flattenings.
        let xs = ints(3_000, 7);
        let split = on(&devices, || {
            try_accelerate!(flatten(create(xs.len(), |i| create(1 + i / 2_000, |k| xs
                [i]
                + k as i64))))
        });
        let one = with_mode(Mode::Cpu, || {
            try_accelerate!(flatten(create(xs.len(), |i| create(1 + i / 2_000, |k| xs
                [i]
                + k as i64))))
        });
        let (split, one) = (split.unwrap_err(), one.unwrap_err());
        assert_eq!(split.kind(), ErrorKind::Irregular, "{split}");
        assert_eq!(one.kind(), ErrorKind::Irregular, "{one}");
    }
    let here = common::site_of(
        "devices_rows.rs",
        include_str!("devices_rows.rs"),
        "accelerate!(flatten(create(xs.len()",
    );
    let stats = site_stats();
    let stat = stats.iter().find(|s| s.site == here).expect("its stats");
    assert_eq!(stat.ran_on, RanOn::Devices);
}

#[test]
fn a_loop_whose_iterations_write_their_own_rows_splits_by_rows() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for n in [1usize, 999, 3_210] {
            let xs = ints(n, 15);
            // Rows of a matrix (the ODE case study's shape) and a vector, written by the
            // iteration of their index; every part's rows land, whichever device ran it.
            let m = Tensor::<i64>::zeros(&[n, 3]);
            let v = Tensor::<i64>::zeros(&[n]);
            on(&devices, || {
                accelerate!(parallel_loop(n, |i| {
                    for j in 0..3 {
                        m.set([i, j], xs[i] * 10 + j as i64);
                    }
                    v.set([i], xs[i] - 1);
                }))
            });
            let expect_m: Vec<i64> = xs
                .iter()
                .flat_map(|x| (0..3).map(move |j| x * 10 + j))
                .collect();
            let expect_v: Vec<i64> = xs.iter().map(|x| x - 1).collect();
            assert_eq!(m.to_vec(), expect_m, "n = {n} on {devices:?}");
            assert_eq!(v.to_vec(), expect_v, "n = {n} on {devices:?}");
        }
    }
}

#[test]
fn a_gpu_receives_the_tensors_a_loop_writes_once_per_call() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    let gpus = [Device::Cuda(0), Device::Cuda(1)];
    if !runnable(&gpus) {
        eprintln!("[accel tests] SKIPPED: two GPUs: fewer here and no emulator");
        return;
    }
    // Eight parts over two GPUs: the tensor goes to each GPU once (not to each part),
    // and each part copies back only its rows.
    let n = 8_000usize;
    let xs: Vec<i64> = (0..n as i64).collect();
    let v = Tensor::<i64>::zeros(&[n]);
    let before = accel_runtime::cuda::bytes_uploaded();
    on(&gpus, || {
        accelerate!(parallel_loop(n, |i| v.set([i], xs[i] * 3)))
    });
    let uploaded = accel_runtime::cuda::bytes_uploaded() - before;
    assert_eq!(v.to_vec(), xs.iter().map(|x| x * 3).collect::<Vec<i64>>());
    let bytes = n * 8;
    // `xs` and the tensor once per GPU (`xs` is not sliced: the loop's size is `n`, not
    // `xs.len()`), an error word per part; per part, they would be 16 times their size.
    assert!(
        uploaded <= 4 * bytes + 8 * 32,
        "{uploaded} bytes for {bytes} and a tensor of {bytes}"
    );
    assert!(
        uploaded > 2 * bytes,
        "{uploaded} bytes: both GPUs ran parts"
    );
}
