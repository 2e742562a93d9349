//! Failures in the code a gang loop leaves to its launch's scalar kernel (a function of
//! its own that the SPMD kernel calls: a row's last columns, the indices after the last
//! whole gang, a `parallel_loop`'s last iterations), and in clamped loads whose clamp lets
//! lanes past the end: reported as debug mode reports them, at every CPU tier.

use accel_runtime::prelude::*;

mod common;

/// The error `site` gives in debug mode and at every CPU tier: the same.
fn fails_alike<R: std::fmt::Debug>(site: impl Fn() -> Result<R, accel_runtime::AccelError>) {
    use accel_runtime::__private::{with_cpu_tier, CpuTier};
    let want = with_mode(Mode::Debug, &site)
        .expect_err("debug mode fails")
        .to_string();
    let mut tiers = vec![CpuTier::Quick, CpuTier::Optimized];
    if common::llvm_present() {
        tiers.push(CpuTier::Llvm);
    }
    for tier in tiers {
        let got = with_mode(Mode::Cpu, || with_cpu_tier(tier, &site))
            .expect_err("cpu mode fails")
            .to_string();
        assert_eq!(got, want, "cpu ({tier:?}) and debug fail differently");
    }
}

/// Failures in the indices a gang loop leaves to its launch's scalar kernel (a row's last
/// columns, the indices after the last whole gang, a `parallel_loop`'s last iterations)
/// and in a clamped load whose clamp lets lanes past the end: reported as debug mode
/// reports them.
#[test]
fn failures_left_to_scalar_code_are_reported_as_in_debug_mode() {
    // Rows of 7: a gang of 4 and 3 columns left per row.
    let (w, h) = (7usize, 5usize);
    let n = w * h;
    let img: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let tail = 2 * w + w - 1;
    fails_alike(|| {
        try_accelerate!(create(n, |p| {
            let (x, y) = (p % w, p / w);
            if p == tail {
                img[n + x]
            } else {
                img[y * w + x]
            }
        }))
    });
    fails_alike(|| try_accelerate!(create(n, |p| if p == n - 1 { img[n] } else { img[p] })));
    fails_alike(|| try_accelerate!(create(n, |p| img[(p as i64 + 2).clamp(0, n as i64) as usize])));
    let t = Tensor::<f32>::zeros(&[n]);
    fails_alike(|| {
        try_accelerate!(parallel_loop(n, |i| {
            if i == n - 2 {
                t.set([i], img[n + 1]);
            } else {
                t.set([i], img[i]);
            }
        }))
    });
}
