//! Sequence results of flat elements whose scalars are numbers of one size (`(f32, f32)`,
//! `[f64; 3]`, `(u32, f32, i32)`): the CPU backend writes them in rows, as Rust lays the
//! elements out, and the `Vec` adopts that memory (a record's rows are read element by
//! element). Each site against debug mode, bit for bit, at every tier, at lengths around
//! the gangs' width and past the parallel read's threshold; and the path each took.

use accel_runtime::__private::{rows_results, with_cpu_tier, CpuTier};
use accel_runtime::prelude::*;

mod common;

#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Point {
    x: f32,
    y: f32,
    z: f32,
}

/// Rows of three `f32`s, but 16 bytes in Rust: read element by element.
#[derive(Accel, Clone, Copy, Debug, PartialEq)]
#[repr(C, align(16))]
struct Padded {
    x: f32,
    y: f32,
    z: f32,
}

/// Runs `site` in debug mode and in cpu mode at every tier: the results must print alike
/// (floats bit for bit). Returns how many cpu results were adopted and read from rows.
fn exact<R: Accel + std::fmt::Debug>(site: impl Fn() -> R) -> (usize, usize) {
    let d = with_mode(Mode::Debug, &site);
    let mut tiers = vec![CpuTier::Quick, CpuTier::Optimized];
    if common::llvm_present() {
        tiers.push(CpuTier::Llvm);
    }
    let before = rows_results();
    for tier in &tiers {
        let c = with_mode(Mode::Cpu, || with_cpu_tier(*tier, &site));
        assert_eq!(
            format!("{c:?}"),
            format!("{d:?}"),
            "cpu ({tier:?}) and debug differ"
        );
    }
    let after = rows_results();
    // The other modes too (the CUDA backend returns columns).
    common::agree(&site);
    (after.0 - before.0, after.1 - before.1)
}

#[test]
fn pairs_of_f32_from_create_are_adopted_as_rows() {
    for n in common::GANG_LENGTHS {
        let xs: Vec<f32> = common::numbers(n, 1)
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let (adopted, read) = exact(|| {
            accelerate!(create(xs.len(), |i| {
                let x = xs[i];
                if x > 0.25 {
                    (x * 2.0, x - 1.0)
                } else {
                    (-x, x * x)
                }
            }))
        });
        // Empty results have no memory to adopt.
        let runs = if common::llvm_present() { 3 } else { 2 };
        assert_eq!(
            (adopted, read),
            (if n == 0 { 0 } else { runs }, 0),
            "n = {n}"
        );
    }
}

#[test]
fn rows_of_three_and_of_mixed_numbers_from_maps() {
    for n in common::GANG_LENGTHS {
        let xs: Vec<f32> = common::numbers(n, 2)
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let ys: Vec<f64> = common::numbers(n, 3);
        // Twelve bytes a row: no power of two.
        let (adopted, _) = exact(|| accelerate!(map(|x| (x, x + 1.0, x * x), &xs)));
        assert_eq!(adopted > 0, n > 0, "n = {n}");
        exact(|| {
            accelerate!(map(
                |x| ((x * 10.0) as u32, x / 3.0, (x * -7.0) as i32),
                &xs
            ))
        });
        exact(|| accelerate!(map2(|x, y| (y, x as f64 * y), &xs, &ys)));
        exact(|| accelerate!(map(|y| [y, -y, y * 0.5], &ys)));
        exact(|| accelerate!(create(ys.len(), |i| ([ys[i] as f32, 1.0f32], i as f32))));
        exact(|| accelerate!(create(ys.len(), |i| (i, ys[i] as i64))));
    }
}

#[test]
fn records_are_adopted_and_others_read_element_by_element() {
    let runs = if common::llvm_present() { 3 } else { 2 };
    for n in common::GANG_LENGTHS {
        let xs: Vec<f32> = common::numbers(n, 4)
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let (adopted, read) = exact(|| {
            accelerate!(create(xs.len(), |i| Point {
                x: xs[i],
                y: xs[i] * 2.0,
                z: i as f32,
            }))
        });
        assert_eq!(
            (adopted, read),
            (if n == 0 { 0 } else { runs }, 0),
            "n = {n}"
        );
        let (adopted, read) = exact(|| {
            accelerate!(map(
                |x| Padded {
                    x,
                    y: -x,
                    z: x * 0.25,
                },
                &xs
            ))
        });
        assert_eq!(
            (adopted, read),
            (0, if n == 0 { 0 } else { runs }),
            "n = {n}"
        );
    }
}

#[test]
fn elements_of_mixed_sizes_stay_in_columns() {
    for n in [0, 17, 1001] {
        let xs: Vec<f64> = common::numbers(n, 5);
        let (adopted, read) = exact(|| accelerate!(map(|x| (x, x as f32), &xs)));
        assert_eq!((adopted, read), (0, 0));
        let (adopted, read) = exact(|| accelerate!(map(|x| (x > 0.0, x < 0.5), &xs)));
        assert_eq!((adopted, read), (0, 0));
    }
}

#[test]
fn rows_inside_other_results_and_of_later_operations() {
    let xs: Vec<f32> = common::numbers(1001, 6)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    // A tuple holding the sequence, a filter's result, a producer read by a reduction:
    // columns, as before.
    let (adopted, _) = exact(|| accelerate!((map(|x| (x, -x), &xs), 2.0f32)));
    assert_eq!(adopted, 0);
    exact(|| {
        accelerate!(filter(
            |p: (f32, f32)| p.0 > 0.0,
            map(|x| (x, x * 3.0), &xs)
        ))
    });
    common::agree(|| {
        accelerate!(reduce(
            |a: f32, b: f32| a + b,
            0.0,
            map(|p: (f32, f32)| p.0 * p.1, map(|x| (x, x + 1.0), &xs))
        ))
    });
    // A site called again reuses its code and adopts each result anew.
    for _ in 0..3 {
        let (adopted, _) = exact(|| accelerate!(map(|x| (x, x * 0.5), &xs)));
        assert!(adopted > 0);
    }
}

#[test]
fn long_sequences_of_tuples_and_records_are_captured_alike() {
    // Captured tuples and records are copied into columns, in parallel from 2^15
    // elements, into memory earlier calls gave back: every length below reuses some.
    for n in [40_003usize, 40_003, 70_001, 40_003, 33_000] {
        let xs: Vec<f32> = common::numbers(n, 7)
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let pairs: Vec<(f32, f64)> = xs.iter().map(|&x| (x, x as f64 * 3.0)).collect();
        let points: Vec<Point> = xs.iter().map(|&x| Point { x, y: -x, z: x * x }).collect();
        let nested: Vec<([u32; 2], f32)> = xs
            .iter()
            .enumerate()
            .map(|(i, &x)| ([i as u32, 7], x))
            .collect();
        exact(|| accelerate!(map(|p: (f32, f64)| p.0 as f64 + p.1, &pairs)));
        exact(|| accelerate!(map(|p: Point| p.x * p.y + p.z, &points)));
        exact(|| {
            accelerate!(create(nested.len(), |i| nested[i].0[0] as f32
                + nested[i].0[1] as f32 * nested[i].1))
        });
        common::agree(|| {
            accelerate!(reduce(
                |a, b| a + b,
                0.0,
                map(|p: Point| p.x * p.z, &points)
            ))
        });
    }
}
