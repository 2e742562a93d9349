//! rayon's in-place forms inside `accelerate!`: `par_iter_mut().for_each`, with `zip` and
//! `enumerate`, and `par_chunks_mut(k)` (std's `iter_mut`/`chunks_mut` alike) write into
//! the captured sequence's own memory. Each site runs in debug, cpu and cuda (emulator)
//! modes on a copy of the same input, and every mode must leave exactly Rust's result.

// Rows are indexed: accelerated code has no iterator over a row written in place.
#![allow(clippy::needless_range_loop)]

use accel_runtime::__private::{with_cpu_tier, CpuTier};
use accel_runtime::prelude::*;

mod common;
use common::values;

const SOURCE: &str = include_str!("in_place.rs");

/// Runs `f` on a copy of `xs` in every mode; each must leave the same sequence, which is
/// returned. Floats are compared exactly: every form here computes each element once.
fn in_every_mode<T: Clone + PartialEq + std::fmt::Debug>(
    xs: &[T],
    f: impl Fn(&mut Vec<T>),
) -> Vec<T> {
    #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
    let mut modes = vec![Mode::Debug, Mode::Cpu];
    #[cfg(feature = "cuda")]
    if common::emulator_present() {
        modes.push(Mode::Cuda);
    }
    let mut results = Vec::new();
    for mode in modes {
        let mut v = xs.to_vec();
        #[cfg(feature = "cuda")]
        if mode == Mode::Cuda {
            accel_runtime::cuda::with_emulator(|| with_mode(mode, || f(&mut v)));
            results.push((mode, v));
            continue;
        }
        if mode == Mode::Cpu {
            // The quick tier's code (gangs of four lanes), LLVM's, then the
            // optimized code, compiled last: the shapes the tests check are its.
            let mut quick = xs.to_vec();
            with_mode(mode, || with_cpu_tier(CpuTier::Quick, || f(&mut quick)));
            results.push((mode, quick));
            if common::llvm_present() {
                let mut llvm = xs.to_vec();
                with_mode(mode, || with_cpu_tier(CpuTier::Llvm, || f(&mut llvm)));
                results.push((mode, llvm));
            }
            with_mode(mode, || with_cpu_tier(CpuTier::Optimized, || f(&mut v)));
        } else {
            with_mode(mode, || f(&mut v));
        }
        results.push((mode, v));
    }
    let (_, first) = results[0].clone();
    for (mode, r) in &results {
        assert_eq!(r, &first, "{mode:?} differs from debug");
    }
    first
}

#[test]
fn par_iter_mut_writes_each_element_in_place() {
    let xs: Vec<f32> = (0..1003).map(|i| i as f32 * 0.5).collect();
    let got = in_every_mode(&xs, |v| {
        accelerate!(v.par_iter_mut().for_each(|x| *x = 2.0 * *x + 1.0))
    });
    assert_eq!(got, xs.iter().map(|x| 2.0 * x + 1.0).collect::<Vec<f32>>());
    let got = in_every_mode(&xs, |v| accelerate!(v.iter_mut().for_each(|x| *x *= 3.0)));
    assert_eq!(got, xs.iter().map(|x| x * 3.0).collect::<Vec<f32>>());
}

#[test]
fn zip_and_enumerate_give_each_iteration_its_pair() {
    let xs: Vec<f64> = (0..517).map(|i| (i % 13) as f64).collect();
    let ys: Vec<f64> = (0..500).map(|i| i as f64 * 0.25).collect();
    // zip: the shorter length wins; the rest of xs is left as it was.
    let got = in_every_mode(&xs, |v| {
        accelerate!(v.par_iter_mut().zip(&ys).for_each(|(x, y)| *x += *y))
    });
    let mut want = xs.clone();
    want.iter_mut().zip(&ys).for_each(|(x, y)| *x += *y);
    assert_eq!(got, want);
    let got = in_every_mode(&xs, |v| {
        accelerate!(v
            .par_iter_mut()
            .zip(ys.par_iter())
            .for_each(|(x, &y)| *x = *x * y - 1.0))
    });
    let mut want = xs.clone();
    want.iter_mut()
        .zip(&ys)
        .for_each(|(x, &y)| *x = *x * y - 1.0);
    assert_eq!(got, want);
    let got = in_every_mode(&xs, |v| {
        accelerate!(v
            .par_iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = if i % 2 == 0 { *x } else { -*x }))
    });
    let mut want = xs.clone();
    want.iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = if i % 2 == 0 { *x } else { -*x });
    assert_eq!(got, want);
    let counts: Vec<u32> = (0..300).map(|i| (i * 7 % 11) as u32).collect();
    let got = in_every_mode(&counts, |v| {
        accelerate!(v.par_iter_mut().for_each(|c| *c = c.wrapping_mul(3) ^ 1))
    });
    assert_eq!(
        got,
        counts
            .iter()
            .map(|c| c.wrapping_mul(3) ^ 1)
            .collect::<Vec<u32>>()
    );
}

#[test]
fn chunks_mut_writes_rows_in_place() {
    let (rows, cols) = (37, 24);
    let m: Vec<f32> = (0..rows * cols).map(|i| (i % 17) as f32).collect();
    // Each row scaled by its first element's parity, written through the row view.
    let got = in_every_mode(&m, |v| {
        accelerate!(v.par_chunks_mut(cols).for_each(|row| {
            let s = if row[0] > 8.0 { 0.5 } else { 2.0 };
            for j in 0..row.len() {
                row[j] *= s;
            }
        }))
    });
    let mut want = m.clone();
    want.chunks_mut(cols).for_each(|row| {
        let s = if row[0] > 8.0 { 0.5 } else { 2.0 };
        for j in 0..row.len() {
            row[j] *= s;
        }
    });
    assert_eq!(got, want);
    // A last, shorter chunk; rows numbered by enumerate.
    let xs: Vec<i64> = (0..103).collect();
    let got = in_every_mode(&xs, |v| {
        accelerate!(v.chunks_mut(10).enumerate().for_each(|(r, row)| {
            let n = row.len();
            row[n - 1] = r as i64 * 1000 + n as i64;
        }))
    });
    let mut want = xs.clone();
    want.chunks_mut(10).enumerate().for_each(|(r, row)| {
        let n = row.len();
        row[n - 1] = r as i64 * 1000 + n as i64;
    });
    assert_eq!(got, want);
    // Exact chunks leave the remainder alone.
    let got = in_every_mode(&xs, |v| {
        accelerate!(v.par_chunks_exact_mut(10).for_each(|row| row[0] = -1))
    });
    let mut want = xs.clone();
    want.chunks_exact_mut(10).for_each(|row| row[0] = -1);
    assert_eq!(got, want);
}

/// LU's step `k` on an `n` by `n` matrix, as rayon writes it: the rows below the pivot
/// divided by it in its column and updated by the pivot row.
fn lu_step(a: &mut [f64], n: usize, k: usize) {
    let (top, below) = a.split_at_mut((k + 1) * n);
    let pivot = &top[k * n..];
    below.chunks_mut(n).for_each(|row| {
        row[k] /= pivot[k];
        let l = row[k];
        for j in k + 1..n {
            row[j] -= l * pivot[j];
        }
    });
}

#[test]
fn a_rows_independent_loop_runs_on_lanes_bit_for_bit() {
    // Loops along the row of every length from none to past two gangs, starting anywhere.
    for n in [1usize, 2, 5, 16, 17, 33, 40] {
        let m: Vec<f64> = (0..n * n)
            .map(|p| {
                ((p * 7919) % 101) as f64 / 7.0 + if p % (n + 1) == 0 { n as f64 } else { 0.0 }
            })
            .collect();
        let got = in_every_mode(&m, |a| {
            for k in 0..n {
                let (top, below) = a.split_at_mut((k + 1) * n);
                let pivot = &top[k * n..];
                accelerate!(below.par_chunks_mut(n).for_each(|row| {
                    row[k] /= pivot[k];
                    let l = row[k];
                    for j in k + 1..n {
                        row[j] -= l * pivot[j]; // [lu row]
                    }
                }));
            }
        });
        let mut want = m.clone();
        for k in 0..n {
            lu_step(&mut want, n, k);
        }
        assert_eq!(got, want, "n = {n}");
    }
    assert!(
        accel_runtime::__private::cpu_simd_loops(&common::site_of(
            "in_place.rs",
            SOURCE,
            "[lu row]"
        ))
        .is_some_and(|loops| loops >= 1),
        "the loop along the row did not run on lanes"
    );
    // The same step in a 2-D tensor: row `i` written, the pivot's row `k` read.
    let n = 29;
    let m: Vec<f64> = (0..n * n).map(|p| ((p * 31) % 13) as f64 + 1.0).collect();
    let mut want = m.clone();
    lu_step(&mut want, n, 3);
    let a = Tensor::from_vec(m, &[n, n]);
    let k = 3;
    with_mode(Mode::Cpu, || {
        accelerate!(parallel_loop(n - k - 1, |r| {
            let i = k + 1 + r;
            let l = a.get([i, k]) / a.get([k, k]);
            a.set([i, k], l);
            for j in k + 1..n {
                a.set([i, j], a.get([i, j]) - l * a.get([k, j])); // [tensor row]
            }
        }))
    });
    assert_eq!(a.to_vec(), want);
    assert!(
        accel_runtime::__private::cpu_simd_loops(&common::site_of(
            "in_place.rs",
            SOURCE,
            "[tensor row]"
        ))
        .is_some_and(|loops| loops >= 1),
        "the loop along the tensor's row did not run on lanes"
    );
}

#[test]
fn a_loop_that_reads_what_it_wrote_keeps_its_order() {
    // Each element from the one before it (a running sum along the row), and one read at
    // a fixed index the loop also writes: lanes in lockstep would compute other values.
    let (rows, cols) = (5, 43);
    let m: Vec<f32> = (0..rows * cols).map(|p| (p % 11) as f32 * 0.25).collect();
    let got = in_every_mode(&m, |v| {
        accelerate!(v.par_chunks_mut(cols).for_each(|row| {
            for j in 1..row.len() {
                row[j] += row[j - 1];
            }
            for j in 0..row.len() {
                row[j] -= row[7];
            }
        }))
    });
    let mut want = m.clone();
    want.chunks_mut(cols).for_each(|row| {
        for j in 1..row.len() {
            row[j] += row[j - 1];
        }
        for j in 0..row.len() {
            row[j] -= row[7];
        }
    });
    assert_eq!(got, want);
}

#[test]
fn a_lane_past_the_end_of_what_the_loop_reads_fails_as_rust_does() {
    // The pivot row is one short: iteration `j = 19` reads past it.
    let pivot: Vec<f64> = vec![2.0; 19];
    for (mode, e) in common::errors_in_every_mode(|| {
        let mut v = vec![1.0f64; 60];
        try_accelerate!(v.par_chunks_mut(20).for_each(|row| {
            for j in 0..row.len() {
                row[j] -= pivot[j];
            }
        }))
    }) {
        assert_eq!(
            e.kind(),
            accel_runtime::ErrorKind::IndexOutOfBounds,
            "{mode}: {e}"
        );
        assert!(e.to_string().contains("in_place.rs"), "{mode}: {e}");
        assert!(e.to_string().contains("19"), "{mode}: {e}");
    }
}

#[test]
fn out_of_row_indices_and_zero_chunks_fail_naming_the_site() {
    let xs: Vec<f32> = vec![1.0; 20];
    for (mode, e) in common::errors_in_every_mode(|| {
        let mut v = xs.clone();
        try_accelerate!(v.par_chunks_mut(6).for_each(|row| row[5] = 0.0))
    }) {
        assert_eq!(
            e.kind(),
            accel_runtime::ErrorKind::IndexOutOfBounds,
            "{mode}: {e}"
        );
        assert!(e.to_string().contains("in_place.rs"), "{mode}: {e}");
    }
    // One chunk of the whole sequence, however large the size (it wrapped around).
    for k in [20usize, 21, usize::MAX] {
        let got = in_every_mode(&xs, |v| {
            accelerate!(v.par_chunks_mut(k).for_each(|row| row[0] = -1.0))
        });
        let mut want = xs.clone();
        want[0] = -1.0;
        assert_eq!(got, want, "par_chunks_mut({k})");
    }
    let k = 0usize;
    for (mode, e) in common::errors_in_every_mode(|| {
        let mut v = xs.clone();
        try_accelerate!(v.par_chunks_mut(k).for_each(|row| row[0] = 0.0))
    }) {
        // Rust's assertion, in every mode.
        assert_eq!(e.kind(), accel_runtime::ErrorKind::Panicked, "{mode}: {e}");
        assert!(
            e.to_string().contains("chunk size must be non-zero"),
            "{mode}: {e}"
        );
    }
}

#[test]
fn in_place_stencils_store_whole_gangs_away_from_their_borders() {
    // An `if` on the borders (through `!`, and the column `p % w` of the rows walked)
    // decides whole gangs where their lanes agree: there the element's store is one
    // vector store, elsewhere lane by lane; results are Rust's, bit for bit, in every
    // mode, at sizes around the gangs' width.
    for (w, h) in [
        (3usize, 3usize),
        (5, 4),
        (16, 3),
        (17, 5),
        (33, 7),
        (100, 9),
    ] {
        let n = w * h;
        let src: Vec<f64> = (0..n).map(|p| ((p * 7919) % 1000) as f64 / 999.0).collect();
        let dst: Vec<f64> = (0..n).map(|p| p as f64).collect();
        let got = in_every_mode(&dst, |b| {
            accelerate!(b.par_iter_mut().enumerate().for_each(|(p, x)| {
                let i = p / w;
                let j = p % w;
                if !(i == 0 || j == 0 || i == h - 1 || j == w - 1) {
                    *x = 0.2 * (src[p] + src[p - 1] + src[p + 1] + src[p + w] + src[p - w]);
                }
            })) // negated borders
        });
        let mut want = dst.clone();
        for i in 1..h - 1 {
            for j in 1..w - 1 {
                let p = i * w + j;
                want[p] = 0.2 * (src[p] + src[p - 1] + src[p + 1] + src[p + w] + src[p - w]);
            }
        }
        assert_eq!(got, want, "{w}x{h}");
        let got = in_every_mode(&dst, |e| {
            accelerate!(e.par_iter_mut().enumerate().for_each(|(p, x)| {
                if p % w != 0 {
                    *x -= 0.5 * (src[p] - src[p - 1]);
                }
            })) // column test
        });
        let want: Vec<f64> = (0..n)
            .map(|p| match p % w {
                0 => dst[p],
                _ => dst[p] - 0.5 * (src[p] - src[p - 1]),
            })
            .collect();
        assert_eq!(got, want, "{w}x{h}");
    }
    for marker in ["// negated borders", "// column test"] {
        common::assert_vectorized("in_place.rs", SOURCE, marker);
        let site = common::site_of("in_place.rs", SOURCE, marker);
        let shapes = accel_runtime::__private::cpu_gang_shapes(&site).unwrap_or_default();
        assert!(
            shapes.iter().any(|s| s == "coherent if"),
            "{site}: {shapes:?}"
        );
    }
}

/// A Gauss-Seidel sweep along each row and ADI's two recurrences (one step reads what the
/// step before stored, also after storing its own), as plain Rust.
fn recurrences_in_rust(a: &mut [f64], p: &mut [f64], q: &mut [f64], cols: usize) {
    for i in 0..a.len() / cols {
        for j in 1..cols {
            a[i * cols + j] = (a[i * cols + j - 1] + 0.5 * a[i * cols + j]) / 3.0;
        }
        for j in 1..cols {
            p[i * cols + j] = -0.25 / (1.5 * p[i * cols + j - 1] + 2.0);
            q[i * cols + j] =
                (a[i * cols + j] - 1.5 * q[i * cols + j - 1]) / (1.5 * p[i * cols + j - 1] + 2.0);
        }
    }
}

#[test]
fn in_place_recurrences_keep_stored_values_bit_for_bit() {
    // Rows run on lanes (37: two gangs of 16 and five rows of scalar code) or alone.
    for (rows, cols) in [(1, 1), (2, 2), (3, 17), (8, 64), (37, 9)] {
        let n = rows * cols;
        let (a0, p0, q0) = (values(n, 1), values(n, 2), values(n, 3));
        let (mut a, mut p, mut q) = (a0.clone(), p0.clone(), q0.clone());
        recurrences_in_rust(&mut a, &mut p, &mut q, cols);
        for mode in [Mode::Debug, Mode::Cpu] {
            let at = Tensor::from_vec(a0.clone(), &[rows, cols]);
            let pt = Tensor::from_vec(p0.clone(), &[rows, cols]);
            let qt = Tensor::from_vec(q0.clone(), &[rows, cols]);
            with_mode(mode, || {
                accelerate!(parallel_loop(rows, |i| {
                    for j in 1..cols {
                        at.set([i, j], (at.get([i, j - 1]) + 0.5 * at.get([i, j])) / 3.0);
                    }
                })); // sweep
                accelerate!(parallel_loop(rows, |i| {
                    for j in 1..cols {
                        pt.set([i, j], -0.25 / (1.5 * pt.get([i, j - 1]) + 2.0));
                        qt.set(
                            [i, j],
                            (at.get([i, j]) - 1.5 * qt.get([i, j - 1]))
                                / (1.5 * pt.get([i, j - 1]) + 2.0),
                        );
                    }
                })); // two recurrences
            });
            let got = (at.to_vec(), pt.to_vec(), qt.to_vec());
            assert_eq!(
                got,
                (a.clone(), p.clone(), q.clone()),
                "{mode:?} {rows}x{cols}"
            );
        }
    }
    for marker in ["// sweep", "// two recurrences"] {
        let site = common::site_of("in_place.rs", SOURCE, marker);
        let shapes = accel_runtime::__private::cpu_gang_shapes(&site).unwrap_or_default();
        assert!(
            shapes.iter().any(|s| s == "kept stores"),
            "{site}: {shapes:?}"
        );
    }
}

#[test]
fn a_recurrence_whose_element_another_view_overwrites_reads_memory() {
    // `q` is `p` one row on: `q.set([k - 1, j], _)` overwrites `p[k][j]` after the step set
    // it, so the next step must read memory, not the value it stored. Each iteration
    // touches its own row `k` alone.
    let (rows, cols) = (37, 9);
    let mut want = vec![1.0f64; (rows + 2) * cols];
    for k in 1..=rows {
        for j in 1..cols {
            let v = want[k * cols + j - 1] + 1.0;
            want[k * cols + j] = 2.0 * v;
        }
    }
    for mode in [Mode::Debug, Mode::Cpu] {
        let t = Tensor::from_vec(vec![1.0f64; (rows + 2) * cols], &[rows + 2, cols]);
        let (p, q) = (t.sub(0, rows + 1), t.sub(1, rows + 1));
        with_mode(mode, || {
            accelerate!(parallel_loop(rows, |r| {
                let k = r + 1;
                for j in 1..cols {
                    let v = p.get([k, j - 1]) + 1.0;
                    p.set([k, j], v);
                    q.set([k - 1, j], 2.0 * v);
                }
            }))
        });
        assert_eq!(t.to_vec(), want, "{mode:?}");
    }
}
