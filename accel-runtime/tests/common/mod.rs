//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

use accel_runtime::prelude::*;

#[cfg(feature = "cuda")]
pub mod devices;

/// Runs a site in debug mode and in cpu mode; they must agree (floats within
/// `Accel::close_to`'s tolerance, since parallel reductions group differently). Returns
/// debug mode's result, the reference.
pub fn agree<R: Accel + std::fmt::Debug>(f: impl Fn() -> R) -> R {
    agree_scaled(f, None)
}

/// Like `agree`, with the float tolerance relative to `scale` too (for sums with
/// cancellation, the rounding error grows with the sum of magnitudes, not the result).
pub fn agree_scaled<R: Accel + std::fmt::Debug>(f: impl Fn() -> R, scale: Option<&R>) -> R {
    let d = with_mode(Mode::Debug, &f);
    let scales: Vec<&R> = scale.into_iter().collect();
    // With the CUDA backend built, the CPU run also compiles every kernel the site would
    // launch on a GPU (NVRTC + ptxas for sm_80 and sm_90), and a GPU, when there is one,
    // runs the site too.
    #[cfg(feature = "cuda")]
    let c = accel_runtime::cuda::with_kernel_check(|| with_mode(Mode::Cpu, &f));
    #[cfg(not(feature = "cuda"))]
    let c = with_mode(Mode::Cpu, &f);
    assert!(c.close_to(&d, &scales), "cpu gave {c:?}, debug gave {d:?}");
    // The LLVM tier compiles the same operations: the same result, bit for bit.
    if llvm_present() {
        use accel_runtime::__private::{llvm_fallbacks, with_cpu_tier, CpuTier};
        let l = with_mode(Mode::Cpu, || with_cpu_tier(CpuTier::Llvm, &f));
        assert_eq!(
            llvm_fallbacks(),
            0,
            "a site asked for LLVM code got Cranelift's"
        );
        assert_eq!(
            format!("{l:?}"),
            format!("{c:?}"),
            "the LLVM tier differs from Cranelift's"
        );
    }
    // The cuda mode on the GPU when there is one, else on the emulator (the generated
    // kernels compiled for the CPU).
    #[cfg(feature = "cuda")]
    {
        let run = || with_mode(Mode::Cuda, &f);
        let g = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if gpu_present() {
                Some(run())
            } else if emulator_present() {
                Some(accel_runtime::cuda::with_emulator(run))
            } else {
                None
            }
        }));
        match g {
            Ok(None) => {}
            Ok(Some(g)) => {
                assert!(g.close_to(&d, &scales), "cuda gave {g:?}, debug gave {d:?}")
            }
            // A construct the CUDA backend does not compile yet is reported, not hidden
            // (the default mode runs such a site on the CPU); any other failure fails.
            Err(e) => {
                let message = e.downcast_ref::<String>().cloned().unwrap_or_default();
                if !message.contains("the cuda backend cannot compile") {
                    std::panic::resume_unwind(e);
                }
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "[accel tests] cuda: {message}");
            }
        }
    }
    d
}

/// Runs `site` in debug and cpu modes, the CPU at every tier; their results must print
/// alike (so floats are bit-identical, `-0.0` and NaN included). Returns the result.
pub fn exact<R: Accel + std::fmt::Debug>(site: impl Fn() -> R) -> R {
    use accel_runtime::__private::{with_cpu_tier, CpuTier};
    let d = with_mode(Mode::Debug, &site);
    // The quick tier's code (gangs of four lanes), LLVM's, then the optimized code,
    // compiled last: the shapes tests check are its.
    let mut tiers = vec![CpuTier::Quick];
    if llvm_present() {
        tiers.push(CpuTier::Llvm);
    }
    tiers.push(CpuTier::Optimized);
    for tier in tiers {
        let c = with_mode(Mode::Cpu, || with_cpu_tier(tier, &site));
        assert_eq!(
            format!("{c:?}"),
            format!("{d:?}"),
            "cpu ({tier:?}) and debug differ"
        );
    }
    d
}

/// Whether the CPU backend's LLVM tier compiles here (libLLVM 15 or later found at run
/// time); says once, visibly, when not.
pub fn llvm_present() -> bool {
    static ONCE: std::sync::Once = std::sync::Once::new();
    match accel_runtime::__private::llvm_available() {
        Ok(_) => true,
        Err(why) => {
            // CI installs LLVM and must not skip its tier.
            assert!(
                std::env::var("ACCEL_TESTS_REQUIRE_LLVM").as_deref() != Ok("1"),
                "ACCEL_TESTS_REQUIRE_LLVM=1, but the LLVM tier is unavailable: {why}"
            );
            ONCE.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "[accel tests] SKIPPED: the CPU backend's LLVM tier: {why}"
                );
            });
            false
        }
    }
}

/// Whether the emulator can stand in for a GPU here (it needs a C++20 compiler); says
/// once, visibly, when not.
#[cfg(feature = "cuda")]
pub fn emulator_present() -> bool {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let present = accel_runtime::cuda::emulator::available();
    if !present {
        ONCE.call_once(|| {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "[accel tests] SKIPPED: the cuda mode on the emulator: no C++20 compiler (g++ or ACCEL_EMULATOR_CXX)"
            );
        });
    }
    present
}

/// Whether a GPU runs the cuda mode here; says once, visibly, when not.
#[cfg(feature = "cuda")]
pub fn gpu_present() -> bool {
    static ONCE: std::sync::Once = std::sync::Once::new();
    match accel_runtime::cuda::available() {
        Ok(()) => true,
        Err(why) => {
            ONCE.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "[accel tests] SKIPPED: differential runs in ACCEL_MODE=cuda: {why}"
                );
            });
            false
        }
    }
}

/// `accel-runtime/tests/FILE:LINE:COLUMN` of the site enclosing the first line of `source`
/// (the test file's own text) that contains `marker` outside a string literal (a call
/// naming the marker does not count): the nearest `accelerate!(` or `try_accelerate!(` at
/// or above it. Found in the source, so formatting cannot break the tests' expectations.
pub fn site_of(file: &str, source: &str, marker: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let quoted = format!("{marker:?}");
    let at = lines
        .iter()
        .position(|l| l.contains(marker) && !l.contains(&quoted))
        .expect("the marker is in this file");
    let n = (0..=at)
        .rev()
        .find(|&k| lines[k].contains("accelerate!("))
        .expect("a site encloses the marker");
    let line = lines[n];
    let start = line
        .find("try_accelerate!(")
        .or_else(|| line.find("accelerate!("))
        .expect("the line has a site");
    format!("accel-runtime/tests/{file}:{}:{}", n + 1, start + 1)
}

/// Runs the ignored test `test` of the current test binary in a child process, with no
/// `ACCEL_*` variable but those in `env` (and `ACCEL_PTXAS` and `ACCEL_CACHE_DIR`, where the
/// tools and caches of the tests are); returns (success, stdout, stderr).
pub fn run_child(test: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "--ignored",
        "--exact",
        test,
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, _) in std::env::vars() {
        if k.starts_with("ACCEL_") && k != "ACCEL_PTXAS" && k != "ACCEL_CACHE_DIR" {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the child test runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Pseudo-random values in -500..500 (a fixed sequence).
pub fn noise(n: usize, seed: u64) -> Vec<i64> {
    (0..n as u64)
        .map(|i| {
            let z = (i + seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            ((z ^ (z >> 29)) % 1000) as i64 - 500
        })
        .collect()
}

/// The message of the panic `f` must raise.
pub fn panic_message(f: impl FnOnce()) -> String {
    let err =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("the site panics");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The error `f` gives in debug and cpu modes, and cuda on the emulator when it is there.
pub fn errors_in_every_mode<R: std::fmt::Debug>(
    f: impl Fn() -> Result<R, accel_runtime::AccelError>,
) -> Vec<(String, accel_runtime::AccelError)> {
    #[allow(unused_mut)]
    let mut out = vec![
        (
            "debug".to_string(),
            with_mode(Mode::Debug, &f).expect_err("debug mode fails"),
        ),
        (
            "cpu".to_string(),
            with_mode(Mode::Cpu, &f).expect_err("cpu mode fails"),
        ),
    ];
    #[cfg(feature = "cuda")]
    if emulator_present() {
        let e = accel_runtime::cuda::with_emulator(|| with_mode(Mode::Cuda, &f));
        out.push(("cuda".to_string(), e.expect_err("cuda mode fails")));
    }
    out
}

/// Asserts the site marked `marker` in `file` (whose text is `source`) ran on SIMD lanes
/// in cpu mode: its kernels did not fall back to scalar code.
pub fn assert_vectorized(file: &str, source: &str, marker: &str) {
    use accel_runtime::__private::{cpu_simd_loops, cpu_spmd_fallbacks};
    let site = site_of(file, source, marker);
    assert!(
        cpu_simd_loops(&site).is_some_and(|n| n >= 1),
        "{site} ({marker}) did not run on SIMD lanes"
    );
    assert_eq!(
        cpu_spmd_fallbacks(&site),
        Some(vec![]),
        "{site} ({marker}) fell back to scalar kernels"
    );
}

/// `accelerate!(xs.par_iter().map(|&x| BODY).collect())` in every mode (see [`agree`])
/// against the same map in plain Rust, the body written once (as raw tokens, which the
/// site's macro reads as written). Not every test file uses it.
#[allow(unused_macros)]
macro_rules! map_matches_std {
    ($xs:expr, |$x:ident| $($body:tt)*) => {{
        let xs = &$xs;
        let got = crate::common::agree(|| {
            accelerate!(xs.par_iter().map(|&$x| $($body)*).collect::<Vec<_>>())
        });
        let want: Vec<_> = xs.iter().map(|&$x| $($body)*).collect();
        assert_eq!(got, want);
    }};
}

#[allow(unused_imports)]
pub(crate) use map_matches_std;

/// `n` values in `[-0.5, 0.5)` from a deterministic generator.
pub fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// `n` numbers in [-1, 1) from a fixed seed.
pub fn numbers(n: usize, seed: u64) -> Vec<f64> {
    values(n, seed).into_iter().map(|x| 2.0 * x).collect()
}

/// Lengths around a gang's width (4 to 32 lanes) and its tails, and long enough to be
/// split into chunks and read or written in parallel.
pub const GANG_LENGTHS: [usize; 9] = [0, 1, 3, 15, 16, 17, 33, 1001, 40_003];
