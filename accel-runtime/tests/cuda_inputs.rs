//! Captured sequences kept on the GPU between calls (`cuda::inputs`): a large input passed
//! again with the same contents is not copied again, whichever site and whichever `Vec`
//! holds it, nor is a large result passed to the next site; a changed one is, and the
//! result follows the change. Counted with the
//! backend's copy counter on the emulator (the GPU when one is lent runs the same code).
#![cfg(feature = "cuda")]

use accel_runtime::cuda::{bytes_uploaded, with_emulator};
use accel_runtime::prelude::*;

mod common;

/// The tests read the backend's copy counter, so they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What `f` copied to the GPU, and its result, in cuda mode.
fn uploaded<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = bytes_uploaded();
    let r = with_mode(Mode::Cuda, f);
    (bytes_uploaded() - before, r)
}

#[test]
fn a_large_input_passed_again_unchanged_stays_on_the_gpu() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !common::emulator_present() {
        return;
    }
    with_emulator(|| {
        let n = 300_000;
        let bytes = n * 8;
        let mut xs: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
        // Each call also copies its 32-byte error word.
        let word = 32;
        let (first, ys) = uploaded(|| accelerate!(map(|x| x * 2.0, &xs)));
        assert_eq!(first, bytes + word);
        assert_eq!(ys[n - 1], (n - 1) as f64);
        let (again, ys) = uploaded(|| accelerate!(map(|x| x * 2.0, &xs)));
        assert_eq!(again, word);
        assert_eq!(ys[7], 7.0);
        // Another site, and another vector with the same contents: the same copy.
        let copy = xs.clone();
        let (other, sum) = uploaded(|| accelerate!(reduce(|a, b| a + b, 0.0, &copy)));
        assert_eq!(other, word);
        assert_eq!(sum, (0..n).map(|i| i as f64 * 0.5).sum::<f64>());
        // One element changed: copied again, and the result sees the change.
        xs[n / 2] = -1.0;
        let (changed, ys) = uploaded(|| accelerate!(map(|x| x * 2.0, &xs)));
        assert_eq!(changed, bytes + word);
        assert_eq!(ys[n / 2], -2.0);
        assert_eq!(ys[n / 2 + 1], (n / 2 + 1) as f64);
        // Small inputs are copied at every call.
        let small: Vec<f64> = vec![1.5; 1000];
        let (once, _) = uploaded(|| accelerate!(map(|x| x + 1.0, &small)));
        let (twice, zs) = uploaded(|| accelerate!(map(|x| x + 1.0, &small)));
        assert_eq!((once, twice), (8000 + word, 8000 + word));
        assert_eq!(zs, vec![2.5; 1000]);
    });
}

#[test]
fn a_large_result_passed_to_the_next_site_is_still_on_the_gpu() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !common::emulator_present() {
        return;
    }
    with_emulator(|| {
        let n = 200_000;
        let bytes = n * 8;
        let word = 32;
        let xs: Vec<i64> = (0..n as i64).collect();
        let (first, mut ys) = uploaded(|| accelerate!(map(|x| x * 3 + 1, &xs)));
        assert_eq!(first, bytes + word);
        let (next, zs) = uploaded(|| accelerate!(map(|y| y - 1, &ys)));
        assert_eq!(next, word);
        assert_eq!(zs[n - 1], 3 * (n as i64 - 1));
        // Changed on the host, the result is copied again.
        ys[0] = 100;
        let (changed, zs) = uploaded(|| accelerate!(map(|y| y - 1, &ys)));
        assert_eq!(changed, bytes + word);
        assert_eq!(zs[0], 99);
    });
}

/// The child of `the_least_recently_used_input_is_given_up_beyond_the_limit`.
#[test]
#[ignore]
fn limit_child() {
    // Three inputs of 3 MiB under a limit of 8 MiB: two fit.
    let n = 3 << 17;
    let bytes = n * 8;
    let word = 32;
    let [a, b, c]: [Vec<i64>; 3] = [1, 2, 3].map(|k| (0..n as i64).map(|x| x * k).collect());
    let sum = |xs: &Vec<i64>| uploaded(|| accelerate!(reduce(|p, q| p + q, 0, xs)));
    let expect = |k: i64| k * (n as i64 - 1) * n as i64 / 2;
    let steps = [
        (&a, 1, bytes),
        (&b, 2, bytes),
        // `a` again (kept): now the most recently used.
        (&a, 1, 0),
        // `c` goes past the limit: `b`, the least recently used, is given up.
        (&c, 3, bytes),
        (&a, 1, 0),
        (&b, 2, bytes),
    ];
    for (k, (xs, factor, copied)) in steps.into_iter().enumerate() {
        let (got, s) = sum(xs);
        assert_eq!(s, expect(factor), "step {k}");
        assert_eq!(got, copied + word, "step {k}");
    }
    println!("limit ok");
}

#[test]
fn the_least_recently_used_input_is_given_up_beyond_the_limit() {
    if !common::emulator_present() {
        return;
    }
    let env = [
        ("ACCEL_CUDA_EMULATOR", "1"),
        ("ACCEL_MODE", "cuda"),
        ("ACCEL_CUDA_KEEP_INPUTS", "8"),
    ];
    let (ok, out, err) = common::run_child("limit_child", &env);
    assert!(ok && out.contains("limit ok"), "{out}\n{err}");
}
