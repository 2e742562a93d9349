//! Benchmark inputs: random numbers from a fixed seed, identical in Rust and in the peers'
//! script (`benchmarks/peers/peers.py` computes the same bits with numpy).
//!
//! Element `i` of stream `seed` is the SplitMix64 finaliser of `seed * 2^32 + i`: a
//! counter-based generator, so any element can be computed alone and every language gets
//! the same values. Real data is not periodic; inputs built from `i % k` would make a
//! kernel's branches predictable and flatter it.
//!
//! ```
//! let xs = accel_examples::random::uniform(4, 1, -1.0, 1.0);
//! assert!(xs.iter().all(|x| (-1.0..1.0).contains(x)));
//! assert_eq!(xs, accel_examples::random::uniform(4, 1, -1.0, 1.0));
//! ```

/// The 64 random bits of element `i` of stream `seed`.
pub fn bits(seed: u64, i: u64) -> u64 {
    let mut z = (seed << 32)
        .wrapping_add(i)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A number in `[0, 1)` with 24 random bits (exact in `f32`).
pub fn unit(seed: u64, i: u64) -> f32 {
    (bits(seed, i) >> 40) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// `n` numbers uniform in `[lo, hi)`, computed in `f32` as `lo + (hi - lo) * unit`.
pub fn uniform(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let width = hi - lo;
    (0..n as u64).map(|i| lo + width * unit(seed, i)).collect()
}

/// `n` integers uniform in `0..k` (`floor(unit * k)`).
pub fn below(n: usize, seed: u64, k: usize) -> Vec<usize> {
    (0..n as u64)
        .map(|i| ((unit(seed, i) * k as f32) as usize).min(k - 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values peers.py must reproduce (its `--self-test` checks the same numbers).
    #[test]
    fn known_values() {
        assert_eq!(bits(0, 0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(unit(1, 0), (bits(1, 0) >> 40) as f32 / 16_777_216.0);
        let xs = uniform(1000, 3, -1.0, 1.0);
        assert!(xs.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f32>() / 1000.0;
        assert!(mean.abs() < 0.1, "mean {mean}");
        let ks = below(1000, 4, 8);
        assert!((0..8).all(|k| ks.contains(&k)));
        assert!(ks.iter().all(|&k| k < 8));
    }

    /// The first numbers of the suite's streams, as numpy computes them in peers.py.
    #[test]
    fn same_numbers_as_numpy() {
        assert_eq!(
            uniform(4, 1, -1.0, 1.0),
            [0.532_603_5, -0.747_938_04, 0.401_862_38, 0.265_752_43]
        );
        assert_eq!(
            uniform(3, 7, 0.25, 5.0),
            [3.754_101_5, 0.736_963_75, 3.349_706_6]
        );
    }
}
