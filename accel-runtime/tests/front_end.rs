//! The front end (inline, typecheck, fuse) runs once per site and type combination, and
//! program assembly once per site, whatever backend compiles the site and whatever falls
//! back to what; the backends share its facts (types of expressions, operator
//! recognition) rather than copies of them.

mod common;

use accel_runtime::prelude::*;

#[accel]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

#[accel]
fn add_i64(a: i64, b: i64) -> i64 {
    a + b
}

fn site_of(marker: &str) -> String {
    common::site_of("front_end.rs", include_str!("front_end.rs"), marker)
}

/// A site whose types depend on `T`: one site, a front end per type.
fn total<T: Accel + Copy + Default + std::ops::Add<Output = T>>(v: &Vec<T>) -> T {
    let zero = T::default();
    accelerate!(reduce(|a, b| a + b, zero, v))
}

/// Runs `f` twice (a first call and a cached one) and prints how many front ends and
/// program assemblies that took, and how the calls went.
fn counted<R: std::fmt::Debug>(name: &str, f: impl Fn() -> R) {
    use accel_runtime::__private::{front_end_runs, program_assemblies};
    let (fronts, programs) = (front_end_runs(), program_assemblies());
    let mut outcome = Vec::new();
    for _ in 0..2 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&f));
        outcome.push(match r {
            Ok(v) => format!("{v:?}"),
            Err(_) => "failed".to_string(),
        });
    }
    println!(
        "{name}: front ends {}, assemblies {}, results {}",
        front_end_runs() - fronts,
        program_assemblies() - programs,
        outcome.join(" / ")
    );
}

/// Sites that every backend compiles, that only the CPU backend compiles, that no backend
/// compiles, and one site with two type combinations.
#[test]
#[ignore = "run by the tests below in a child process"]
fn child_counts_front_end_runs() {
    let v: Vec<i64> = (1..=100).collect();
    counted("both", || accelerate!(reduce(|a, b| a + b, 0, &v)));
    // The host program of the CUDA backend has no `match`: the CPU backend only.
    counted("cpu only", || {
        accelerate!({
            let s = reduce(|a, b| a + b, 0, &v);
            match s {
                5050 => 1,
                _ => 2,
            }
        })
    });
    // Sequences nested three deep as a result: no backend.
    counted("neither", || {
        accelerate!(create(2, |i| create(2, |j| create(2, |k| i + j + k))))
    });
    let fs: Vec<f64> = vec![0.5, 1.5, 2.0];
    counted("generic", || (total(&v), total(&fs)));
}

/// The child's lines, checked: `expected` gives each site's front ends and assemblies.
fn run_child(env: &[(&str, &str)], expected: &[(&str, usize, usize)]) -> String {
    let (ok, out, err) = common::run_child("child_counts_front_end_runs", env);
    assert!(ok, "{env:?}: {err}");
    for (site, fronts, programs) in expected {
        let line = line(&out, site);
        assert!(
            line.starts_with(&format!(
                "{site}: front ends {fronts}, assemblies {programs}, results "
            )),
            "{env:?}: {line}"
        );
    }
    out
}

/// The child's line about `site` (the test harness may print before it on its line).
fn line<'a>(out: &'a str, site: &str) -> &'a str {
    let head = format!("{site}: front ends");
    out.lines()
        .find_map(|l| l.find(&head).map(|at| &l[at..]))
        .unwrap_or("")
}

#[test]
fn once_per_site_and_type_combination_on_the_cpu() {
    let once = [
        ("both", 1, 1),
        ("cpu only", 1, 1),
        ("neither", 1, 1),
        ("generic", 2, 1),
    ];
    let out = run_child(&[("ACCEL_MODE", "cpu")], &once);
    assert!(line(&out, "both").ends_with("results 5050 / 5050"), "{out}");
    assert!(line(&out, "cpu only").ends_with("results 1 / 1"), "{out}");
    // A construct the chosen backend cannot compile is an error, each call.
    assert!(
        line(&out, "neither").ends_with("results failed / failed"),
        "{out}"
    );
    assert!(
        line(&out, "generic").ends_with("results (5050, 4.0) / (5050, 4.0)"),
        "{out}"
    );
    // With ACCEL_LOG the log's program report reuses the assembled program.
    run_child(&[("ACCEL_MODE", "cpu"), ("ACCEL_LOG", "1")], &once);
}

#[test]
fn debug_mode_runs_no_front_end() {
    let none = [
        ("both", 0, 0),
        ("cpu only", 0, 0),
        ("neither", 0, 0),
        ("generic", 0, 0),
    ];
    let out = run_child(&[("ACCEL_MODE", "debug")], &none);
    assert!(
        line(&out, "neither").contains("results [[[0, 1], [1, 2]], [[1, 2], [2, 3]]]"),
        "{out}"
    );
    // Its log reports each site's program: assembled once.
    let logged = [
        ("both", 0, 1),
        ("cpu only", 0, 1),
        ("neither", 0, 1),
        ("generic", 0, 1),
    ];
    run_child(&[("ACCEL_MODE", "debug"), ("ACCEL_LOG", "1")], &logged);
}

#[cfg(feature = "cuda")]
#[test]
fn once_through_the_gpu_its_kernel_checks_and_the_fallbacks() {
    if !common::emulator_present() {
        return;
    }
    let once = [
        ("both", 1, 1),
        ("cpu only", 1, 1),
        ("neither", 1, 1),
        ("generic", 2, 1),
    ];
    // The CPU backend with every kernel also lowered for the GPU and compiled (or skipped
    // visibly without NVRTC): one front end for both.
    run_child(&[("ACCEL_MODE", "cpu"), ("ACCEL_CUDA_CHECK", "1")], &once);
    // The CUDA backend (on the emulator), chosen: what it cannot compile is an error.
    let out = run_child(
        &[("ACCEL_MODE", "cuda"), ("ACCEL_CUDA_EMULATOR", "1")],
        &once,
    );
    assert!(line(&out, "both").ends_with("results 5050 / 5050"), "{out}");
    assert!(
        line(&out, "cpu only").ends_with("results failed / failed"),
        "{out}"
    );
    // The default mode: the GPU first, then the CPU, then sequential Rust, sharing one
    // front end (with the log on too).
    for log in ["0", "1"] {
        let out = run_child(&[("ACCEL_CUDA_EMULATOR", "1"), ("ACCEL_LOG", log)], &once);
        assert!(line(&out, "cpu only").ends_with("results 1 / 1"), "{out}");
        assert!(line(&out, "neither").contains("results [[[0, 1]"), "{out}");
    }
}

#[test]
fn an_inlined_accel_operator_takes_the_simd_path() {
    // `reduce(add, ..)` with `#[accel] fn add` is the same primitive `+` as the closure:
    // both reductions run on SIMD lanes.
    let v: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let by_fn = with_mode(Mode::Cpu, || accelerate!(reduce(add, 0.0, &v))); // f32 fn
    let by_closure = with_mode(Mode::Cpu, || accelerate!(reduce(|a, b| a + b, 0.0, &v))); // f32 closure
    assert_eq!((by_fn, by_closure), (499_500.0, 499_500.0));
    let ints: Vec<i64> = (1..=1_000_000).collect();
    let by_i64_fn = with_mode(Mode::Cpu, || accelerate!(reduce(add_i64, 0, &ints))); // i64 fn
    assert_eq!(by_i64_fn, 500_000_500_000);
    for marker in ["// f32 fn", "// f32 closure", "// i64 fn"] {
        let loops = accel_runtime::__private::cpu_simd_loops(&site_of(marker));
        assert!(loops.is_some_and(|n| n > 0), "{marker}: {loops:?}");
    }
    // An operator that is not a primitive one keeps the general path.
    let d = with_mode(Mode::Cpu, || accelerate!(reduce(|a, b| a | b, 0, &ints))); // not primitive
    assert_eq!(d, (1 << 20) - 1);
    assert_eq!(
        accel_runtime::__private::cpu_simd_loops(&site_of("// not primitive")),
        Some(0)
    );
}

#[test]
fn sin_cos_fields_are_typed_alike_on_every_backend() {
    // `x.sin_cos().0` has the type the method table gives `sin_cos`, a pair: the CPU
    // backend compiles it (the chosen mode would fail otherwise), with its inlined sine
    // and cosine (within 1 ULP of libm's; `tests/math_accuracy.rs` measures them).
    let xs: Vec<f64> = (0..257).map(|i| i as f64 * 0.37 - 40.0).collect();
    let site = || accelerate!(map(|x| x.sin_cos().0 - 2.0 * x.sin_cos().1, &xs));
    let debug = with_mode(Mode::Debug, site);
    let cpu = with_mode(Mode::Cpu, site);
    assert!(cpu.close_to(&debug, &[]), "{cpu:?}");
    let f32s: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    let pairs = || accelerate!(create(f32s.len(), |i| f32s[i].sin_cos()));
    let cpu = with_mode(Mode::Cpu, pairs);
    assert!(cpu.close_to(&with_mode(Mode::Debug, pairs), &[]), "{cpu:?}");
    #[cfg(feature = "cuda")]
    if common::emulator_present() {
        // CUDA's sin and cos: within the float tolerance.
        let gpu = accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, site));
        assert!(gpu.close_to(&debug, &[]), "{gpu:?}");
        let gpu = accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, pairs));
        assert!(gpu.close_to(&with_mode(Mode::Debug, pairs), &[]), "{gpu:?}");
    }
}
