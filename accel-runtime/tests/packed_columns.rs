//! A blocked loop's reads down the columns of another matrix (`b[l * m + j]` in a matrix
//! product, `j` the element's column) run from a buffer each block copies them into
//! (`spmd::packed`): against debug mode at every CPU tier, bit for bit, at rows of every
//! length around the gangs' width and of a multiple of 1024 bytes (where Cranelift's
//! code copies too), with strides other than the rows' length, two such reads under a
//! condition, loops shorter and longer than a block; and a read out of bounds fails as
//! it fails unpacked, naming the same index, in every tier.

use accel_runtime::__private::{cpu_gang_shapes, with_cpu_tier, CpuTier};
use accel_runtime::prelude::*;

mod common;

use common::{exact, llvm_present, site_of};

const SOURCE: &str = include_str!("packed_columns.rs");

/// `n` numbers in `[-1, 1)` from a deterministic generator (a multiplicative hash).
fn f32s(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            let h = (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed.wrapping_mul(0xbf58_476d);
            let h = h.wrapping_mul(0x94d0_49bb_1331_11eb) >> 40;
            (h as f64 / (1u64 << 24) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// `n x k` times `k x m`, `b`'s rows `stride` long (at least `m`).
fn product(a: &[f32], b: &[f32], (n, k, m): (usize, usize, usize), stride: usize) -> Vec<f32> {
    accelerate!(create(n * m, |p| {
        let i = p / m;
        let j = p % m;
        let mut acc = 0.0f32;
        for l in 0..k {
            acc += a[i * k + l] * b[l * stride + j];
        }
        acc
    })) // product
}

#[test]
fn packed_column_reads_are_bit_identical() {
    // Rows around 32 lanes and of 256 or 512 `f32` (1 and 2 KiB); loops around a block
    // of 64 iterations.
    for (n, k, m) in [
        (1, 1, 1),
        (3, 5, 31),
        (2, 63, 32),
        (5, 64, 33),
        (33, 65, 64),
        (4, 130, 256),
        (3, 7, 512),
        (2, 200, 260),
    ] {
        let a = f32s(n * k, 1);
        for stride in [m, m + 3, 256.max(m)] {
            let b = f32s(k * stride, 2);
            exact(|| product(&a, &b, (n, k, m), stride));
        }
    }
    let site = site_of("packed_columns.rs", SOURCE, "// product");
    common::assert_vectorized("packed_columns.rs", SOURCE, "// product");
    assert_eq!(
        cpu_gang_shapes(&site),
        Some(vec!["blocked".to_string(), "packed columns".to_string()]),
        "{site}"
    );
}

#[test]
fn two_packed_reads_under_a_condition_are_bit_identical() {
    for (n, k, m) in [(6, 9, 17), (3, 70, 40), (2, 129, 256)] {
        let (b, c) = (f32s(k * m, 3), f32s(k * m, 4));
        let w = f32s(n, 5);
        exact(|| {
            accelerate!(create(n * m, |p| {
                let i = p / m;
                let j = p % m;
                let mut acc = w[i];
                for l in i..k {
                    if b[l * m + j] > c[l * m + j] {
                        acc = acc * 0.75 + b[l * m + j] * c[l * m + j];
                    }
                }
                acc
            })) // two
        });
    }
    let site = site_of("packed_columns.rs", SOURCE, "// two");
    // The accumulator starts from a read of the row's (its type known before the
    // prefix is bound): this ran as scalar code before.
    common::assert_vectorized("packed_columns.rs", SOURCE, "// two");
    assert_eq!(
        cpu_gang_shapes(&site),
        Some(vec!["blocked".to_string(), "packed columns".to_string()]),
        "{site}"
    );
}

#[test]
fn a_packed_read_out_of_bounds_fails_as_unpacked() {
    // `b` one element short: the last column's last iteration reads past its end, first
    // at element `m - 1` (row 0); at 256 columns Cranelift's code copies too.
    for (n, k, m) in [(3, 70, 40), (2, 9, 256)] {
        let a = f32s(n * k, 6);
        let b = f32s(k * m - 1, 7);
        let site = || {
            try_accelerate!(create(n * m, |p| {
                let i = p / m;
                let j = p % m;
                let mut acc = 0.0f32;
                for l in 0..k {
                    acc += a[i * k + l] * b[l * m + j];
                }
                acc
            }))
        };
        let want = with_mode(Mode::Debug, site).expect_err("debug mode fails");
        let mut tiers = vec![CpuTier::Quick, CpuTier::Optimized];
        if llvm_present() {
            tiers.push(CpuTier::Llvm);
        }
        for tier in tiers {
            let got =
                with_mode(Mode::Cpu, || with_cpu_tier(tier, site)).expect_err("cpu mode fails");
            assert_eq!(got.kind(), want.kind(), "{tier:?}: {got}");
            assert_eq!(got.to_string(), want.to_string(), "{tier:?}");
        }
    }
}
