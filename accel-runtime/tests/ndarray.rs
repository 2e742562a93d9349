//! `ndarray` arrays in accelerated code (feature `ndarray`): captured arrays and views of
//! rank 1 to 3 in every layout, array results, and arrays lent as tensors, each in every
//! mode against debug mode and against ndarray's own computation.
#![cfg(feature = "ndarray")]
// Sequences are passed as `&xs` in accelerated code whatever their type, as the API shows;
// for views, which are sequences by value too, clippy would drop the borrow.
#![allow(clippy::needless_borrows_for_generic_args)]

use accel_runtime::arrays::{array1, array2, array3, with_tensor};
use accel_runtime::prelude::*;
use ndarray::{array, s, Array1, Array2, Array3, ArrayView2, Axis};

mod common;
use common::agree;

/// A matrix of pseudo-random values (fixed seed).
fn matrix(rows: usize, cols: usize, seed: u64) -> Array2<f64> {
    let values = common::noise(rows * cols, seed);
    Array2::from_shape_vec(
        (rows, cols),
        values.iter().map(|&v| v as f64 / 8.0).collect(),
    )
    .unwrap()
}

fn row_sums(m: ArrayView2<'_, f64>) -> Vec<f64> {
    agree(|| accelerate!(map(|row| reduce(|a, b| a + b, 0.0, &row), &m))) // [row sums]
}

#[test]
fn a_2d_array_is_a_sequence_of_rows_in_every_layout() {
    // Sizes at the lane and chunk edges; an empty matrix; a single row.
    for (rows, cols) in [(0, 3), (1, 1), (3, 5), (17, 4), (1000, 9)] {
        let m = matrix(rows, cols, 7);
        let expected = m.sum_axis(Axis(1)).to_vec();
        assert_eq!(row_sums(m.view()), expected, "{rows}x{cols}");
        // The transpose (copied for the run), and a slice of every other row (strided:
        // copied too); a slice of whole rows stays in standard layout.
        assert_eq!(row_sums(m.t()), m.sum_axis(Axis(0)).to_vec());
        let every_other = m.slice(s![..;2, ..]);
        assert_eq!(
            row_sums(every_other),
            every_other.sum_axis(Axis(1)).to_vec()
        );
        let tail = m.slice(s![rows / 2.., ..]);
        assert_eq!(row_sums(tail), tail.sum_axis(Axis(1)).to_vec());
    }
}

#[test]
fn a_1d_array_and_its_views_are_sequences() {
    let v: Array1<f64> = matrix(1, 1037, 3).into_shape_with_order(1037).unwrap();
    let total = agree(|| accelerate!(reduce(|a, b| a + b, 0.0, &v)));
    assert!((total - v.sum()).abs() < 1e-9 * v.mapv(f64::abs).sum());
    let reversed = v.slice(s![..;-1]);
    let shifted: Vec<f64> = agree(|| accelerate!(map(|x| x + 1.0, &reversed)));
    assert_eq!(shifted, reversed.mapv(|x| x + 1.0).to_vec());
    // Indexing a captured array inside an element function.
    let n = v.len();
    let pairs: Vec<f64> = agree(|| {
        accelerate!(map(
            |i| v[i] * v[n - 1 - i],
            &(0..n).collect::<Vec<usize>>()
        ))
    });
    assert_eq!(pairs[5], v[5] * v[n - 6]);
}

#[test]
fn a_chain_over_a_1d_array_collects_into_an_array() {
    let v = Array1::from_iter((0..4099).map(|i| i as f32 * 0.5));
    let doubled: Array1<f32> = agree(|| accelerate!(v.par_iter().map(|x| x * 2.0).collect()));
    assert_eq!(doubled, v.mapv(|x| x * 2.0));
    let big = agree(|| accelerate!(v.par_iter().filter(|x| **x > 1000.0).count()));
    assert_eq!(big, v.iter().filter(|x| **x > 1000.0).count());
}

#[test]
fn a_3d_array_is_a_sequence_of_matrices() {
    let a = Array3::from_shape_fn((4, 3, 5), |(i, j, k)| (i * 100 + j * 10 + k) as i64);
    let traces: Vec<i64> =
        agree(|| accelerate!(map(|m| reduce(|x, y| x + y, 0, &map(|row| row[0], &m)), &a)));
    assert_eq!(
        traces,
        a.outer_iter()
            .map(|m| m.column(0).sum())
            .collect::<Vec<_>>()
    );
    let permuted = a.view().permuted_axes([2, 0, 1]);
    let sizes: Vec<usize> = agree(|| accelerate!(map(|m| m.len(), &permuted)));
    assert_eq!(sizes, vec![4; 5]);
}

#[test]
fn nested_results_convert_to_arrays() {
    let m = array![[1i32, 2, 3], [4, 5, 6]];
    let scaled = agree(|| accelerate!(map(|row| map(|x| x * 10, &row), &m)));
    assert_eq!(array2(scaled).unwrap(), &m * 10);
    let cube = array![[[1u32, 2], [3, 4]], [[5, 6], [7, 8]]];
    let sums = agree(|| {
        accelerate!(map(
            |m| map(|r| reduce(|a, b| a + b, 0, &map(|x| x * x, &r)), &m),
            &cube
        ))
    });
    assert_eq!(
        array2(sums).unwrap(),
        cube.mapv(|x| x * x).sum_axis(Axis(2))
    );
    // Three levels deep, as debug mode gives them back (the compiled backends do not
    // return them yet).
    let squared = with_mode(Mode::Debug, || {
        accelerate!(map(|m| map(|r| map(|x| x * x, &r), &m), &cube))
    });
    assert_eq!(array3(squared).unwrap(), cube.mapv(|x| x * x));
    let flat = agree(|| accelerate!(flatten(&m)));
    assert_eq!(array1(flat), array![1, 2, 3, 4, 5, 6]);
}

/// Writes arrays through `with_tensor` with sites run by `run` (a mode, or the emulator).
fn lend_and_fill(what: &str, run: &dyn Fn(&mut dyn FnMut())) {
    let mut image = Array2::<f32>::zeros((33, 17));
    let address = image.as_ptr();
    let (h, w) = (33usize, 17usize);
    with_tensor(&mut image, |t| {
        run(&mut || accelerate!(parallel_loop(h * w, |k| t.set([k / w, k % w], (k % 7) as f32))))
    });
    assert_eq!(image.as_ptr(), address, "{what}");
    assert_eq!(
        image,
        Array2::from_shape_fn((h, w), |(i, j)| ((i * w + j) % 7) as f32),
        "{what}"
    );
    // A mutable view in another layout: written through a copy.
    let mut columns = Array2::<i64>::zeros((4, 3));
    with_tensor(&mut columns.view_mut().reversed_axes(), |t| {
        run(&mut || accelerate!(parallel_loop(12, |k| t.set([k / 4, k % 4], k as i64))))
    });
    assert_eq!(
        columns,
        Array2::from_shape_fn((4, 3), |(i, j)| (j * 4 + i) as i64),
        "{what}"
    );
}

#[test]
fn an_array_lent_as_a_tensor_is_written_in_place_in_every_mode() {
    for mode in [Mode::Debug, Mode::Cpu] {
        lend_and_fill(mode.name(), &|f| with_mode(mode, f));
    }
    #[cfg(feature = "cuda")]
    if common::gpu_present() {
        lend_and_fill("cuda", &|f| with_mode(Mode::Cuda, f));
    } else if common::emulator_present() {
        lend_and_fill("cuda (emulator)", &|f| {
            accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, f))
        });
    }
}

#[test]
#[ignore = "run in a child process by `standard_layouts_are_read_in_place`"]
fn child_runs_an_array_site() {
    let m = matrix(64, 8, 1);
    println!("in place {:?}", row_sums(m.view()).len());
    println!("transposed {:?}", row_sums(m.t()).len());
}

#[test]
fn standard_layouts_are_read_in_place_and_others_copied_once() {
    let (ok, out, err) = common::run_child(
        "child_runs_an_array_site",
        // No LLVM code from the disk cache: the calls counted run Cranelift's.
        &[
            ("ACCEL_MODE", "cpu"),
            ("ACCEL_LOG", "1"),
            ("ACCEL_CACHE", "0"),
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("in place 64\ntransposed 8\n"), "{out}");
    let site = common::site_of("ndarray.rs", include_str!("ndarray.rs"), "[row sums]");
    let runs: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with(&format!("[accel] {site}: cpu: ran in ")))
        // The differential runs' extra call of the LLVM tier marshals as the first.
        .filter(|l| !l.contains("; LLVM code;"))
        .collect();
    assert_eq!(runs.len(), 2, "{err}");
    assert!(
        runs[0].contains("; 4096 bytes in, 0 of them copied to marshal;"),
        "{}",
        runs[0]
    );
    assert!(
        runs[1].contains("; 4096 bytes in, 4096 of them copied to marshal;"),
        "{}",
        runs[1]
    );
}
