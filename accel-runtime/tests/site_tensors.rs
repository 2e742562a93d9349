//! Tensors made inside a site (`Tensor::zeros`, `Tensor::from_vec`, `to_vec`): compiled on
//! the CPU and, between launches, on the GPU (the emulator here), not run sequentially.
//! Each site against debug mode at every CPU tier and in cuda mode, at sizes around a
//! gang's width and past a launch's split; the failures (a shape the elements do not
//! fill, a rank too high, a shape too large) as errors of the right kind in every mode;
//! and the memory a loop recycles is zero again in each new tensor.

use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;

mod common;

/// The identity matrix of order `n`, written by a `parallel_loop`.
#[accel]
fn identity(n: usize) -> Vec<f32> {
    let t: Tensor<f32> = Tensor::zeros(&[n, n]);
    parallel_loop(n, |i| t.set([i, i], 1.0));
    t.to_vec()
}

/// A histogram of `xs` into `k` bins: one `parallel_loop` over the bins, each counting
/// its own.
#[accel]
fn bins(xs: &[u32], k: usize) -> Vec<u64> {
    let h: Tensor<u64> = Tensor::zeros(&[k]);
    parallel_loop(k, |b| {
        let mut c = 0u64;
        for x in xs.iter() {
            if (*x as usize) % k == b {
                c += 1;
            }
        }
        h.set([b], c);
    });
    h.to_vec()
}

/// `xs` as an `r`-row matrix, each row scaled by its index, back as a sequence.
#[accel]
fn scaled_rows(xs: Vec<f64>, r: usize) -> Vec<f64> {
    let c = xs.len() / r;
    let t = Tensor::from_vec(xs, &[r, c]);
    parallel_loop(r, |i| {
        for j in 0..c {
            t.set([i, j], t.get([i, j]) * i as f64);
        }
    });
    t.to_vec()
}

/// Steps that each make a tensor, write every third element (each step a different
/// third), and sum it: memory a step recycles from the one before must be zero again.
#[accel]
fn fresh_each_step(n: usize, steps: usize) -> Vec<i64> {
    let sums: Tensor<i64> = Tensor::zeros(&[steps]);
    for s in 0..steps {
        let t: Tensor<i64> = Tensor::zeros(&[n]);
        parallel_loop(n / 3, |i| t.set([3 * i + s % 3], (s + i) as i64));
        let v = t.to_vec();
        parallel_loop(1, |_| {
            let mut total = 0i64;
            for x in v.iter() {
                total += *x;
            }
            sums.set([s], total);
        });
    }
    sums.to_vec()
}

/// A tensor whose ends the site sets between launches and whose elements it reads back
/// (on the GPU, each a copy of one element).
#[accel]
fn with_ends(n: usize, left: f64) -> (f64, f64, Vec<f64>) {
    let t: Tensor<f64> = Tensor::zeros(&[n]);
    t.set([0], left);
    t.set([n - 1], -1.0);
    parallel_loop(n - 2, |i| t.set([i + 1], t.get([0]) + i as f64 * 0.5));
    let last = t.get([n - 1]);
    t.set([n - 1], last * 2.0);
    (t.get([n - 2]), t.get([n - 1]), t.to_vec())
}

/// Runs `site` in cuda mode on the emulator (when the `cuda` feature and the emulator are
/// there): its result must be `want`; and compiles its kernels for the GPU (NVRTC and
/// ptxas, where found).
fn on_the_gpu<R: PartialEq + std::fmt::Debug>(site: impl Fn() -> R, want: &R) {
    #[cfg(feature = "cuda")]
    if common::emulator_present() {
        let got = accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, &site));
        assert_eq!(&got, want, "cuda (emulator) and debug differ");
        accel_runtime::cuda::with_kernel_check(|| with_mode(Mode::Cpu, &site));
    }
    #[cfg(not(feature = "cuda"))]
    let _ = (site, want);
}

/// Sizes around the gang widths (4 to 32 lanes) and past a launch's split into chunks.
const SIZES: [usize; 7] = [0, 1, 3, 16, 17, 33, 1001];

#[test]
fn a_tensor_made_in_a_site_is_compiled_and_agrees_with_debug_mode() {
    for n in SIZES {
        let got = common::exact(|| accelerate!(identity(n)));
        assert_eq!(got.len(), n * n);
        for (p, x) in got.iter().enumerate() {
            let want = if n > 0 && p / n == p % n { 1.0 } else { 0.0 };
            assert_eq!(*x, want, "identity({n})[{p}]");
        }
        on_the_gpu(|| accelerate!(identity(n)), &got);
    }
    let xs: Vec<u32> = (0..5000u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7)
        .collect();
    for k in [1, 5, 64] {
        let got = common::exact(|| accelerate!(bins(&xs, k)));
        let mut want = vec![0u64; k];
        for x in &xs {
            want[*x as usize % k] += 1;
        }
        assert_eq!(got, want, "bins of {k}");
        on_the_gpu(|| accelerate!(bins(&xs, k)), &got);
    }
}

#[test]
fn from_vec_copies_and_to_vec_reads_in_row_major_order() {
    for (r, c) in [(1, 1), (3, 5), (17, 33), (40, 250)] {
        let xs = common::values(r * c, 7);
        let got = common::exact(|| accelerate!(scaled_rows(xs.clone(), r)));
        let want: Vec<f64> = (0..r * c).map(|p| xs[p] * (p / c) as f64).collect();
        assert_eq!(got, want, "{r}x{c}");
        on_the_gpu(|| accelerate!(scaled_rows(xs.clone(), r)), &got);
    }
    // A shape that is a sequence (a captured tensor's `shape()`).
    let like = Tensor::<f32>::zeros(&[4, 6]);
    let xs: Vec<f32> = (0..24).map(|i| i as f32 * 0.5).collect();
    let site = || {
        accelerate!({
            let t = Tensor::from_vec(xs.clone(), like.shape());
            parallel_loop(1, |_| t.set([3, 5], -1.0));
            (t.rank(), t.to_vec())
        })
    };
    let got = common::exact(site);
    let mut want = xs.clone();
    want[23] = -1.0;
    assert_eq!(got, (2, want));
    on_the_gpu(site, &got);
}

#[test]
fn the_site_sets_and_reads_elements_between_launches() {
    for n in [2, 3, 40] {
        let got = common::exact(|| accelerate!(with_ends(n, 4.0)));
        let mut want: Vec<f64> = vec![0.0; n];
        want[0] = 4.0;
        want[n - 1] = -1.0;
        for (i, w) in want.iter_mut().enumerate().take(n - 1).skip(1) {
            *w = 4.0 + (i - 1) as f64 * 0.5;
        }
        want[n - 1] = -2.0;
        assert_eq!(got, (want[n - 2], -2.0, want), "n = {n}");
        on_the_gpu(|| accelerate!(with_ends(n, 4.0)), &got);
    }
    let t = Tensor::<i32>::zeros(&[2, 3]);
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!({
            parallel_loop(2, |i| t.set([i, 0], 1));
            t.set([1, 3], 5);
        })
    }) {
        assert_eq!(e.kind(), ErrorKind::IndexOutOfBounds, "{mode}: {e}");
        assert!(e.to_string().contains("out of bounds"), "{mode}: {e}");
    }
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!({
            parallel_loop(2, |i| t.set([i, 0], 1));
            t.get([1])
        })
    }) {
        assert_eq!(e.kind(), ErrorKind::TensorRank, "{mode}: {e}");
    }
}

#[test]
fn a_loop_of_new_tensors_starts_each_from_zeros() {
    for n in [3, 48, 3000] {
        let got = common::exact(|| accelerate!(fresh_each_step(n, 6)));
        let want: Vec<i64> = (0..6)
            .map(|s| (0..n / 3).map(|i| (s + i) as i64).sum())
            .collect();
        assert_eq!(got, want, "n = {n}");
        on_the_gpu(|| accelerate!(fresh_each_step(n, 6)), &got);
    }
}

#[test]
fn a_tensor_made_inside_an_element_is_its_own() {
    let got = common::exact(|| {
        accelerate!(create(37, |i| {
            let t = Tensor::<u32>::zeros(&[4]);
            t.set([i % 4], i as u32);
            t.get([0]) + 10 * t.get([1]) + 100 * t.get([2]) + 1000 * t.get([3])
        }))
    });
    let want: Vec<u32> = (0..37u32).map(|i| i * 10u32.pow(i % 4)).collect();
    assert_eq!(got, want);
    on_the_gpu(
        || {
            accelerate!(create(37, |i| {
                let t = Tensor::<u32>::zeros(&[4]);
                t.set([i % 4], i as u32);
                t.get([0]) + 10 * t.get([1]) + 100 * t.get([2]) + 1000 * t.get([3])
            }))
        },
        &want,
    );
    let site = || {
        accelerate!(create(41, |i| {
            let t = Tensor::from_vec(create(6, |k| (i * k) as u32), &[2, 3]);
            t.set([1, 2], 7);
            let v = t.to_vec();
            v[5] + v[4] + t.get([0, 1]) + v.len() as u32
        }))
    };
    let got = common::exact(site);
    let want: Vec<u32> = (0..41u32).map(|i| 7 + 5 * i + 6).collect();
    assert_eq!(got, want);
    on_the_gpu(site, &want);
    let k = 5usize;
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!(create(9, |i| {
            let t = Tensor::from_vec(create(k, |j| (i + j) as f32), &[2, 3]);
            t.get([1, 1])
        }))
    }) {
        assert_eq!(e.kind(), ErrorKind::LengthMismatch, "{mode}: {e}");
        assert!(
            e.to_string().contains("5 elements do not fill"),
            "{mode}: {e}"
        );
    }
}

#[test]
fn shapes_the_elements_do_not_fill_ranks_too_high_and_huge_shapes_fail() {
    let xs: Vec<f32> = vec![1.0; 10];
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!({
            let t = Tensor::from_vec(xs.clone(), &[3, 4]);
            parallel_loop(3, |i| t.set([i, 0], 2.0));
            t.to_vec()
        })
    }) {
        assert_eq!(e.kind(), ErrorKind::LengthMismatch, "{mode}: {e}");
        assert!(
            e.to_string().contains("10 elements do not fill"),
            "{mode}: {e}"
        );
    }
    let shape: Vec<usize> = vec![2, 2, 2, 2];
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!({
            let t: Tensor<f32> = Tensor::zeros(&shape);
            parallel_loop(2, |i| t.set([i, 0, 0, 0], 2.0));
            t.to_vec()
        })
    }) {
        assert_eq!(e.kind(), ErrorKind::TensorRank, "{mode}: {e}");
        assert!(e.to_string().contains("rank 4"), "{mode}: {e}");
    }
    let huge = usize::MAX / 2;
    for (mode, e) in common::errors_in_every_mode(|| {
        try_accelerate!({
            let t: Tensor<u8> = Tensor::zeros(&[huge, 3]);
            parallel_loop(2, |i| t.set([i, 0], 2));
            t.rank()
        })
    }) {
        assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{mode}: {e}");
        assert!(
            e.to_string().contains("more elements than memory can hold"),
            "{mode}: {e}"
        );
    }
}
