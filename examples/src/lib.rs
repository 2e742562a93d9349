//! The case studies and classic benchmarks, as functions the example binaries and the
//! suite (`suite`) share. Each runs its computation in every available mode, checks each
//! result against a sequential reference written as plain Rust, and reports its times.

pub mod classic;
pub mod nn;
pub mod ode;
pub mod random;
pub mod viterbi;

use accel_runtime::prelude::*;
use std::time::Instant;

/// What one example measured.
pub struct Report {
    pub name: &'static str,
    pub size: String,
    /// Milliseconds per mode (`debug`, `cpu`, `cuda`): the median of up to five runs after
    /// the first (which compiles).
    pub modes: Vec<(Mode, f64)>,
    /// Milliseconds of the sequential reference (the median of up to six runs).
    pub reference_ms: f64,
}

impl Report {
    /// One line: name, size, and the time of each mode and of the reference.
    pub fn line(&self) -> String {
        let modes: Vec<String> = self
            .modes
            .iter()
            .map(|(m, ms)| format!("{m} {ms:.1} ms"))
            .collect();
        format!(
            "{} ({}): {}; sequential reference {:.1} ms",
            self.name,
            self.size,
            modes.join(", "),
            self.reference_ms
        )
    }
}

/// The modes to run: debug (the checked sequential path), the compiled modes this build
/// has: cpu, and cuda when the process runs on a GPU (built with the `cuda` feature, a GPU
/// there, `ACCEL_MODE` unset or `cuda`).
pub fn modes() -> Vec<Mode> {
    let mut modes = vec![Mode::Debug, Mode::Cpu];
    if mode() == Ok(Mode::Cuda) {
        modes.push(Mode::Cuda);
    }
    modes
}

/// Runs `f` in `mode`. The cuda mode is the process's own mode (see [`modes`]): unless
/// `ACCEL_MODE=cuda` asked for it strictly, a site the CUDA backend does not compile runs
/// on the CPU, as it would for users.
pub fn in_mode<R>(mode: Mode, f: impl FnOnce() -> R) -> R {
    if mode == Mode::Cuda {
        f()
    } else {
        with_mode(mode, f)
    }
}

/// Times `f` (after one untimed call, which compiles) in every mode, checking each result
/// with `check(mode, result, reference)`.
pub fn measure<R>(
    name: &'static str,
    size: String,
    reference: impl Fn() -> R,
    f: impl Fn() -> R,
    check: impl Fn(Mode, &R, &R) -> Result<(), String>,
) -> Report {
    let start = Instant::now();
    let expected = reference();
    let mut reference_ms = vec![start.elapsed().as_secs_f64() * 1e3];
    reference_ms.extend(timed_runs(&reference, reference_ms[0]));
    let mut out = Vec::new();
    for mode in modes() {
        let start = Instant::now();
        let first = in_mode(mode, &f);
        let first_ms = start.elapsed().as_secs_f64() * 1e3;
        if let Err(e) = check(mode, &first, &expected) {
            panic!("{name} in {mode} mode: {e}");
        }
        drop(first);
        out.push((mode, median(timed_runs(|| in_mode(mode, &f), first_ms))));
    }
    let reference_ms = median(reference_ms);
    Report {
        name,
        size,
        modes: out,
        reference_ms,
    }
}

/// Times more runs of `f` (whose first run took `first_ms`): up to five, fewer when they
/// are long (about two seconds in all); at least one.
fn timed_runs<R>(f: impl Fn() -> R, first_ms: f64) -> Vec<f64> {
    let runs = ((2000.0 / first_ms.max(1e-3)) as usize).clamp(1, 5);
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            drop(std::hint::black_box(f()));
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Checks that two float sequences agree within a relative tolerance.
pub fn close(a: &[f32], b: &[f32], tol: f32) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("lengths differ: {} vs {}", a.len(), b.len()));
    }
    match a
        .iter()
        .zip(b)
        .position(|(x, y)| (x - y).abs() > tol * y.abs().max(1.0))
    {
        Some(i) => Err(format!(
            "element {i} is {} but the reference says {}",
            a[i], b[i]
        )),
        None => Ok(()),
    }
}
