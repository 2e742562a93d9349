//! Slices whose bounds differ between lanes (`par_chunks(k)`'s row, `windows(k)`'s window,
//! `&xs[a..b]` per element): at the LLVM tier's groups wider than 128 bits a gang holds a
//! sequence per lane (gathered lane by lane); in Cranelift's 4-lane groups the element is
//! scalar code. Each site against debug mode, bit for bit, at every tier, and a slice out
//! of bounds fails as in debug mode at every tier.

use accel_runtime::__private::{cpu_simd_loops, cpu_spmd_fallbacks, with_cpu_tier, CpuTier};
use accel_runtime::prelude::*;

mod common;

use common::exact;

const SOURCE: &str = include_str!("simd_slices.rs");

/// Grey levels of RGB pixels, three bytes each (the last pixel may be short).
fn grey(img: &[u8]) -> Vec<u8> {
    accelerate!(img
        .par_chunks(3)
        .map(|px| {
            let g = 0.299 * px[0] as f32 + 0.587 * px[px.len().min(2) - 1] as f32;
            (g + 0.114 * px[px.len() - 1] as f32) as u8
        })
        .collect()) // rgb rows
}

/// Each window of `k` values: its first plus half its last.
fn window_ends(xs: &[f32], k: usize) -> Vec<f32> {
    accelerate!(xs
        .par_windows(k)
        .map(|w| w[0] + 0.5 * w[w.len() - 1])
        .collect()) // windows
}

/// Sums of `k` consecutive values (scalar code, which sums a window on vectors).
fn window_sums(xs: &[f32], k: usize) -> Vec<f32> {
    accelerate!(xs.par_windows(k).map(|w| w.iter().sum::<f32>()).collect())
}

/// Nearest of `k` centres to each `d`-dimensional point.
fn nearest(points: &[f64], centres: &[f64], d: usize) -> Vec<usize> {
    let k = centres.len() / d;
    accelerate!(points
        .par_chunks_exact(d)
        .map(|p| {
            let (mut best, mut best_distance) = (0usize, f64::MAX);
            for c in 0..k {
                let mut s = 0.0;
                for j in 0..d {
                    let t = p[j] - centres[c * d + j];
                    s += t * t;
                }
                if s < best_distance {
                    best_distance = s;
                    best = c;
                }
            }
            best
        })
        .collect()) // nearest centre
}

/// First and last of `xs[i * step..i * step + k]` for each `i < n`: past the end fails.
fn ends(xs: &[i32], n: usize, step: usize, k: usize) -> Result<Vec<i32>, AccelError> {
    try_accelerate!(create(n, |i| {
        let s = &xs[i * step..i * step + k];
        s[0] * 1000 + s[s.len() - 1]
    })) // explicit slices
}

/// Asserts the site marked `marker` ran on SIMD lanes at the LLVM tier (run last here).
fn vectorized_at_llvm(marker: &str, run: impl Fn()) {
    if !common::llvm_present() {
        return;
    }
    with_mode(Mode::Cpu, || with_cpu_tier(CpuTier::Llvm, run));
    let site = common::site_of("simd_slices.rs", SOURCE, marker);
    assert!(
        cpu_simd_loops(&site).is_some_and(|n| n >= 1),
        "{site} ({marker}) did not run on SIMD lanes at the LLVM tier: {:?}",
        cpu_spmd_fallbacks(&site)
    );
    assert_eq!(
        cpu_spmd_fallbacks(&site),
        Some(vec![]),
        "{site} ({marker}) fell back to scalar kernels at the LLVM tier"
    );
}

#[test]
fn rows_windows_and_slices_per_lane_compute_what_scalar_code_does() {
    let bytes: Vec<u8> = common::noise(3 * 1000 + 2, 1)
        .iter()
        .map(|x| *x as u8)
        .collect();
    let xs: Vec<f32> = common::values(700, 2).iter().map(|x| *x as f32).collect();
    let points = common::values(4 * 301, 3);
    let centres = common::values(4 * 7, 4);
    let ints: Vec<i32> = common::noise(500, 5).iter().map(|x| *x as i32).collect();
    // Each site's first compilation at the LLVM tier, whose report is then its last.
    vectorized_at_llvm("// rgb rows", || {
        grey(&bytes);
    });
    vectorized_at_llvm("// windows", || {
        window_ends(&xs, 5);
    });
    vectorized_at_llvm("// nearest centre", || {
        nearest(&points, &centres, 4);
    });
    vectorized_at_llvm("// explicit slices", || {
        ends(&ints, 100, 5, 5).unwrap();
    });
    for n in [0, 1, 2, 3, 5, 3 * 17 + 1, 3 * 40, bytes.len()] {
        exact(|| grey(&bytes[..n]));
    }
    for (n, k) in [(0, 1), (3, 4), (4, 4), (40, 3), (700, 5), (700, 1)] {
        exact(|| window_ends(&xs[..n], k));
        exact(|| window_sums(&xs[..n], k));
    }
    for n in [0, 1, 17, 301] {
        exact(|| nearest(&points[..4 * n], &centres, 4));
    }
    exact(|| ends(&ints, 100, 5, 5).unwrap());
    exact(|| ends(&ints, 60, 7, 3).unwrap());
}

#[test]
fn a_slice_per_lane_out_of_bounds_fails_as_in_debug_mode() {
    let ints: Vec<i32> = (0..100).collect();
    // Element 33's slice, the last, is 99..102: past the end.
    let mut tiers = vec![CpuTier::Quick, CpuTier::Optimized];
    if common::llvm_present() {
        tiers.push(CpuTier::Llvm);
    }
    for tier in tiers {
        let errors = common::errors_in_every_mode(|| with_cpu_tier(tier, || ends(&ints, 34, 3, 3)));
        for (mode, e) in errors {
            let message = e.to_string();
            // Debug mode runs the slice as Rust, which panics with its own message.
            let want = match mode.as_str() {
                "debug" => "range end index 102 out of range for slice of length 100",
                _ => "slice bounds 99..102 are out of range",
            };
            assert!(message.contains(want), "{mode} ({tier:?}): {message}");
        }
    }
}
