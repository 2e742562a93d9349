//! `try_accelerate!`: every failure `accelerate!` panics on is an `Err` with the same
//! message, the site and a kind to match on, in every mode; after an `Err` the site and
//! the process keep working, and failing calls leak no memory.

mod common;

use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;
use common::run_child;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Counts the bytes this test binary holds, to check that failing calls free what they
/// allocated (the CUDA emulator's device memory is host memory, counted too).
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to the system allocator with the caller's layout; the
// counter is only arithmetic on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `accel-runtime/tests/errors.rs:LINE:COLUMN` of the site on or above the line that
/// carries `marker`.
fn site(marker: &str) -> String {
    common::site_of("errors.rs", include_str!("errors.rs"), marker)
}

/// The error `f` gives in every mode this build can run (debug, cpu, and cuda on the
/// emulator when it is there), each checked to have `kind` and `site`; returns them.
fn in_every_mode<R: std::fmt::Debug>(
    kind: ErrorKind,
    site: &str,
    f: impl Fn() -> Result<R, AccelError>,
) -> Vec<AccelError> {
    #[allow(unused_mut)]
    let mut errors = vec![
        with_mode(Mode::Debug, &f).expect_err("debug mode fails"),
        with_mode(Mode::Cpu, &f).expect_err("cpu mode fails"),
    ];
    #[cfg(feature = "cuda")]
    if common::emulator_present() {
        let cuda = accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, &f));
        errors.push(cuda.expect_err("cuda mode fails"));
    }
    for e in &errors {
        assert_eq!(e.kind(), kind, "{e}");
        assert_eq!(e.site(), site, "{e}");
        assert!(e.to_string().contains(&format!(" at {site}: ")), "{e}");
    }
    errors
}

#[test]
fn a_filter_over_the_indices_checks_what_its_test_before_the_loop_does_not_prove() {
    // Its predicate's loads at the index and beside it are checked once per chunk where a
    // test can prove them: a run-length encoding's run starts, in every chunk.
    let xs: Vec<i64> = (0..10_000).map(|k| k / 3 % 5).collect();
    let n = xs.len();
    let want: Vec<usize> = (0..n).filter(|&i| i == 0 || xs[i] != xs[i - 1]).collect();
    for mode in [Mode::Debug, Mode::Cpu] {
        let got = with_mode(mode, || {
            accelerate!(filter(|i| i == 0 || xs[i] != xs[i - 1], create(n, |i| i)))
        });
        assert_eq!(got, want, "{mode}");
    }
    // The last chunk's `xs[i + 1]` cannot be proved, and fails where the element does.
    for e in in_every_mode(ErrorKind::IndexOutOfBounds, &site("[neighbour]"), || {
        try_accelerate!(filter(|i| xs[i] != xs[i + 1], create(n, |i| i))) // [neighbour]
    }) {
        assert!(
            e.to_string()
                .ends_with("index out of bounds: the len is 10000 but the index is 10000"),
            "{e}"
        );
    }
}

#[test]
fn failures_of_the_computation_are_errors_of_their_kind() {
    let xs = vec![1i64, 2, 3];
    let is = vec![0usize, 7];
    let errors = in_every_mode(ErrorKind::IndexOutOfBounds, &site("[index]"), || {
        try_accelerate!(map(|i| xs[i], &is)) // [index]
    });
    for e in errors {
        assert_eq!(
            e.to_string(),
            format!(
                "accelerate! at {}: index out of bounds: the len is 3 but the index is 7",
                site("[index]")
            )
        );
    }
    let zs = vec![5i64, 0, 2];
    in_every_mode(ErrorKind::DivisionByZero, &site("[division]"), || {
        try_accelerate!(map(|z| 10 / z, &zs)) // [division]
    });
    let ms = vec![i64::MIN, -1];
    let d = ms[1];
    in_every_mode(ErrorKind::Overflow, &site("[overflow]"), || {
        try_accelerate!(map(|m| m / d, &ms)) // [overflow]
    });
    let ys = vec![1i64, 2];
    for e in in_every_mode(ErrorKind::LengthMismatch, &site("[lengths]"), || {
        try_accelerate!(map2(|x, y| x + y, &xs, &ys)) // [lengths]
    }) {
        assert!(e.to_string().contains("3"), "{e}");
    }
    // A nested sequence whose rows differ, produced by the site.
    let n = 4usize;
    in_every_mode(ErrorKind::Irregular, &site("[irregular]"), || {
        try_accelerate!(create(n, |i| create(i, |j| j as i64))) // [irregular]
    });
    // A tensor of rank 1 written with two coordinates (its rank is known only at run time).
    let out = Tensor::<i64>::zeros(&[2]);
    for e in in_every_mode(ErrorKind::TensorRank, &site("[rank]"), || {
        try_accelerate!(parallel_loop(2, |r| out.set([r, 0], 1))) // [rank]
    }) {
        assert!(
            e.to_string()
                .contains("2 coordinates, but the tensor has rank 1"),
            "{e}"
        );
    }
}

#[test]
fn captured_values_that_accelerated_code_cannot_take_are_errors() {
    let rows = vec![vec![1i64, 2], vec![3]];
    for e in in_every_mode(ErrorKind::InvalidCapture, &site("[rows]"), || {
        try_accelerate!(map(|r: Vec<i64>| r.len(), &rows)) // [rows]
    }) {
        assert!(matches!(e, AccelError::Capture { .. }), "{e:?}");
        assert!(e.to_string().contains("irregular"), "{e}");
    }
}

#[test]
fn a_broken_assumption_in_debug_mode_is_a_violation() {
    let xs: Vec<i64> = (1..=20).collect();
    let r = with_mode(Mode::Debug, || {
        try_accelerate!(reduce(|a, b| a - b, 0, &xs)) // [minus]
    });
    let e = r.expect_err("`-` is not associative");
    assert_eq!(e.kind(), ErrorKind::AssumptionViolated);
    assert_eq!(e.site(), site("[minus]"));
    let AccelError::Violation {
        operation, message, ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(operation, "reduce");
    assert_eq!(
        e.to_string(),
        format!("reduce at {}: {message}", site("[minus]"))
    );
    // The compiled modes do not check; the site keeps working after the error.
    let fine = with_mode(Mode::Debug, || {
        try_accelerate!(reduce(|a, b| a + b, 0, &xs))
    });
    assert_eq!(fine, Ok(210));
}

#[test]
fn accelerate_panics_with_the_message_try_accelerate_returns() {
    let xs = vec![1i64, 2, 3];
    let is = vec![9usize];
    for mode in [Mode::Debug, Mode::Cpu] {
        let e = with_mode(mode, || try_accelerate!(map(|i| xs[i], &is))).unwrap_err();
        let payload =
            std::panic::catch_unwind(|| with_mode(mode, || accelerate!(map(|i| xs[i], &is))))
                .expect_err("accelerate! panics");
        let message = payload
            .downcast_ref::<String>()
            .expect("a formatted message");
        // The sites differ; what follows them does not.
        let after_site = |m: &str| m.split_once(": ").map(|(_, rest)| rest.to_string());
        assert_eq!(after_site(message), after_site(&e.to_string()));
        assert!(message.starts_with("accelerate! at accel-runtime/tests/errors.rs:"));
    }
}

#[test]
fn a_construct_the_chosen_backend_cannot_compile_is_unsupported() {
    // reduce_by_index with sequences as values: the CPU backend does not compile it.
    let is = vec![0usize, 1, 0];
    let rows = vec![vec![1i64, 2], vec![3, 4], vec![5, 6]];
    let dest = vec![vec![0i64, 0], vec![0, 0]];
    let histogram = || {
        try_accelerate!(reduce_by_index(
            dest.clone(),
            |a: Vec<i64>, b: Vec<i64>| map2(|x, y| x + y, a, b),
            vec![0i64, 0],
            &is,
            &rows
        )) // [rows-hist]
    };
    let e = with_mode(Mode::Cpu, histogram).expect_err("the cpu backend rejects it");
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(e.site(), site("[rows-hist]"));
    assert!(e.to_string().contains("(ACCEL_MODE=cpu)"), "{e}");
    // Debug mode runs the same site.
    let ok = with_mode(Mode::Debug, histogram);
    assert_eq!(ok, Ok(vec![vec![6, 8], vec![3, 4]]));
}

#[test]
fn an_allocation_that_fails_is_out_of_memory() {
    let n = usize::MAX / 64;
    let r = with_mode(Mode::Cpu, || try_accelerate!(create(n, |i| i as i64))); // [huge]
    let e = r.expect_err("no machine has this much memory");
    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
    assert_eq!(e.site(), site("[huge]"));
}

/// In a process of its own, so that no other test allocates meanwhile.
#[test]
fn failing_calls_hold_memory_flat_and_the_site_keeps_working() {
    // Cranelift's tiers only: the LLVM tier's look in the disk cache, which a site makes
    // once it has run 2 ms, would hold its module's memory in the background meanwhile.
    let (ok, out, err) = run_child("child_fails_many_times", &[("ACCEL_TIER", "cranelift")]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("flat in cpu and debug modes"), "{out}");
}

#[test]
#[ignore]
fn child_fails_many_times() {
    let xs: Vec<i64> = (0..10_000).collect();
    let run = |is: &Vec<usize>| try_accelerate!(reduce(|a, b| a + b, 0, map(|i| xs[i], is)));
    let bad: Vec<usize> = (0..10_000)
        .map(|i| if i == 7_777 { 10_000 } else { i })
        .collect();
    let good: Vec<usize> = (0..10_000).collect();
    let modes = [Mode::Cpu, Mode::Debug];
    for mode in modes {
        with_mode(mode, || {
            // Warm up: compile (the optimized code too), fill caches, start the pool.
            for _ in 0..3 {
                assert!(run(&bad).is_err());
                assert_eq!(run(&good), Ok(49_995_000));
            }
            accel_runtime::__private::wait_for_cpu_tier_ups();
            for _ in 0..3 {
                assert!(run(&bad).is_err());
            }
            let before = HELD.load(Ordering::SeqCst);
            for _ in 0..200 {
                assert_eq!(run(&bad).unwrap_err().kind(), ErrorKind::IndexOutOfBounds);
            }
            let after = HELD.load(Ordering::SeqCst);
            assert!(
                after - before < 64 * 1024,
                "{mode}: 200 failing calls kept {} bytes",
                after - before
            );
            assert_eq!(run(&good), Ok(49_995_000));
        });
    }
    println!("flat in cpu and debug modes");
}

/// Run by the parent tests below in a child process with `ACCEL_MODE` set.
#[test]
#[ignore]
fn child_runs_one_site() {
    let xs = vec![1i64, 2, 3];
    match try_accelerate!(reduce(|a, b| a + b, 0, &xs)) {
        Ok(v) => println!("ok {v}"),
        Err(e) => println!("err {:?} {e}", e.kind()),
    }
}

#[test]
fn an_unknown_mode_is_an_error() {
    let (ok, out, err) = run_child("child_runs_one_site", &[("ACCEL_MODE", "gpu")]);
    assert!(ok, "{err}");
    assert!(
        out.contains("err InvalidMode accelerate! at accel-runtime/tests/errors.rs:"),
        "{out}"
    );
    assert!(out.contains("ACCEL_MODE=\"gpu\" is not a mode"), "{out}");
}

/// ACCEL_MODE=cuda with no GPU and no emulator: the backend is unavailable (without the
/// `cuda` feature, the mode is not built).
#[test]
fn a_cuda_mode_that_cannot_run_is_an_error() {
    let (ok, out, err) = run_child("child_runs_one_site", &[("ACCEL_MODE", "cuda")]);
    assert!(ok, "{err}");
    #[cfg(feature = "cuda")]
    if common::gpu_present() {
        assert_eq!(out.trim_end(), "ok 6");
    } else {
        assert!(out.contains("err Unavailable accelerate! at "), "{out}");
        assert!(out.contains("(ACCEL_MODE=cuda)"), "{out}");
    }
    #[cfg(not(feature = "cuda"))]
    {
        assert!(out.contains("err InvalidMode "), "{out}");
        assert!(out.contains("built without its `cuda` feature"), "{out}");
    }
}

#[test]
fn of_many_failing_elements_the_first_in_index_order_is_reported() {
    // A million elements in many chunks, run by every thread; in the second half every
    // 1009th index reads past the end, each at its own index, so the message tells which
    // failed. The threads reach the last failures first as often as the first.
    let n = 1usize << 20;
    let xs: Vec<f32> = vec![1.5; n];
    let fails = |i: usize| i > n / 2 && i.is_multiple_of(1009);
    let at: Vec<usize> = (0..n).map(|i| if fails(i) { n + i } else { i }).collect();
    let first = n + (0..n).find(|&i| fails(i)).expect("some index fails");
    for mode in [Mode::Debug, Mode::Cpu] {
        for _ in 0..5 {
            let e = with_mode(mode, || try_accelerate!(create(n, |i| xs[at[i]])))
                .expect_err("a read past the end fails");
            assert_eq!(e.kind(), accel_runtime::ErrorKind::IndexOutOfBounds, "{e}");
            assert!(e.to_string().contains(&first.to_string()), "{mode:?}: {e}");
        }
    }
}
