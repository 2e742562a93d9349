//! Support for generated programs: seeded inputs, running a program in every mode, and
//! comparing the outcomes. accel-fuzz copies this file into each batch crate it generates.

use accel_runtime::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::{Pt, Px};

/// SplitMix64, seeded per input.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A random value: integers mostly small, sometimes large or extreme; floats multiples of
/// 1/4 up to 64 in magnitude (sums of up to 4096 of them are exact in `f32`).
pub trait Sample {
    fn sample(r: &mut Rng) -> Self;
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn sample(r: &mut Rng) -> $t {
                let x = r.next();
                match x % 16 {
                    0 => [<$t>::MIN, <$t>::MAX, 0 as $t, 1 as $t, (0 as $t).wrapping_sub(1)][(x >> 8) as usize % 5],
                    1 | 2 => (x >> 8) as $t,
                    _ => {
                        let small = ((x >> 8) % 201) as i64 - 100;
                        if <$t>::MIN == 0 as $t { small.unsigned_abs() as $t } else { small as $t }
                    }
                }
            }
        }
    )*};
}
ints!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl Sample for f32 {
    fn sample(r: &mut Rng) -> f32 {
        ((r.next() % 513) as i32 - 256) as f32 / 4.0
    }
}

impl Sample for f64 {
    fn sample(r: &mut Rng) -> f64 {
        ((r.next() % 513) as i32 - 256) as f64 / 4.0
    }
}

impl Sample for bool {
    fn sample(r: &mut Rng) -> bool {
        r.next() & 1 == 1
    }
}

impl<A: Sample, B: Sample> Sample for (A, B) {
    fn sample(r: &mut Rng) -> (A, B) {
        let a = A::sample(r);
        (a, B::sample(r))
    }
}

impl Sample for Pt {
    fn sample(r: &mut Rng) -> Pt {
        let x = f64::sample(r);
        Pt {
            x,
            n: i64::sample(r),
        }
    }
}

impl Sample for Px {
    fn sample(r: &mut Rng) -> Px {
        let a = f32::sample(r);
        let k = u32::sample(r);
        Px {
            a,
            k,
            on: bool::sample(r),
        }
    }
}

fn rng(seed: u64) -> Rng {
    let mut r = Rng(seed ^ 0xa076_1d64_78bd_642f);
    r.next();
    r
}

pub fn seq<T: Sample>(seed: u64, len: usize) -> Vec<T> {
    let mut r = rng(seed);
    (0..len).map(|_| T::sample(&mut r)).collect()
}

pub fn rows<T: Sample>(seed: u64, n: usize, k: usize) -> Vec<Vec<T>> {
    let mut r = rng(seed);
    (0..n)
        .map(|_| (0..k).map(|_| T::sample(&mut r)).collect())
        .collect()
}

pub fn one<T: Sample>(seed: u64) -> T {
    T::sample(&mut rng(seed))
}

/// `len` distinct indices below `bound` (or below `len`, if larger), in random order.
pub fn distinct(seed: u64, len: usize, bound: usize) -> Vec<usize> {
    let mut r = rng(seed);
    let mut all: Vec<usize> = (0..bound.max(len)).collect();
    for k in 0..len {
        let pick = k + (r.next() % (all.len() - k) as u64) as usize;
        all.swap(k, pick);
    }
    all.truncate(len);
    all
}

/// What a run gave: its value (`Debug`), an error's kind, or a panic's message.
pub fn outcome<T: std::fmt::Debug>(run: impl FnOnce() -> Result<T, AccelError>) -> String {
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(value)) => format!("{value:?}"),
        // A backend's stated limit; any other rejection of a program debug mode runs (a
        // type error, say) is a bug, and differs from debug mode's outcome.
        Ok(Err(e))
            if e.kind() == accel_runtime::ErrorKind::Unsupported
                && e.to_string().contains("backend cannot compile") =>
        {
            format!("unsupported: {e}")
        }
        Ok(Err(e)) if e.kind() == accel_runtime::ErrorKind::Unsupported => {
            format!("error Unsupported: {e}")
        }
        Ok(Err(e)) => format!("error {:?}", e.kind()),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            format!("panic: {message}")
        }
    }
}

/// Whether two outcomes agree: the same text, except that floats (numbers written with a
/// `.` or an exponent) may differ by 1e-5 relative to the larger plus 1e-6 (transcendental
/// functions round differently between backends, and parallel sums of bounded values
/// group differently).
pub fn agree(a: &str, b: &str) -> bool {
    let (ta, tb) = (tokens(a), tokens(b));
    ta.len() == tb.len()
        && ta.iter().zip(&tb).all(|(x, y)| {
            x == y
                || match (float(x), float(y)) {
                    (Some(x), Some(y)) => (x - y).abs() <= 1e-5 * x.abs().max(y.abs()) + 1e-6,
                    _ => false,
                }
        })
}

fn float(token: &str) -> Option<f64> {
    if token.contains(['.', 'e']) {
        token.parse().ok()
    } else {
        None
    }
}

/// Numbers (with sign, fraction and exponent) and single other characters.
fn tokens(s: &str) -> Vec<&str> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < bytes.len() {
        let start = k;
        let digit_at = |i: usize| bytes.get(i).is_some_and(|c| c.is_ascii_digit());
        let ident_before =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if !ident_before && (digit_at(k) || (bytes[k] == b'-' && digit_at(k + 1))) {
            k += 1;
            while k < bytes.len()
                && (bytes[k].is_ascii_digit()
                    || bytes[k] == b'.'
                    || bytes[k] == b'e'
                    || (bytes[k] == b'-' && bytes[k - 1] == b'e'))
            {
                k += 1;
            }
        } else {
            k += 1;
            while k < bytes.len()
                && bytes[k].is_ascii_alphanumeric()
                && bytes[start].is_ascii_alphabetic()
            {
                k += 1;
            }
        }
        out.push(&s[start..k]);
    }
    out
}

/// The value after `flag` on the command line.
fn arg(flag: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|a| a != flag);
    args.next().and(args.next())
}

/// Runs `program` in `mode` (`cuda`: on the GPU when there is one, else on the emulator).
fn run_in(mode: &str, program: fn() -> String) -> String {
    match mode {
        "debug" => with_mode(Mode::Debug, program),
        "cpu" => with_mode(Mode::Cpu, program),
        // The CPU backend's LLVM tier, where its library is present.
        "llvm" => match accel_runtime::__private::llvm_available() {
            Ok(_) => with_mode(Mode::Cpu, || {
                let got = accel_runtime::__private::with_cpu_tier(
                    accel_runtime::__private::CpuTier::Llvm,
                    program,
                );
                if accel_runtime::__private::llvm_fallbacks() > 0 {
                    return "unsupported: a site fell back from LLVM to Cranelift".to_string();
                }
                got
            }),
            Err(why) => format!("unsupported: {why}"),
        },
        "cuda" => cuda(program),
        // One site split across the GPU (the emulator here) and the CPU, in small parts.
        "devices" => devices(program),
        // Every site's sequences spread over three ranks (threads), as distributed sites.
        "ranks" => ranks(program),
        other => format!("unknown mode {other}"),
    }
}

#[cfg(feature = "cuda")]
fn cuda(program: fn() -> String) -> String {
    let run = || with_mode(Mode::Cuda, program);
    if accel_runtime::cuda::available().is_ok() {
        run()
    } else {
        accel_runtime::cuda::with_emulator(run)
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: fn() -> String) -> String {
    "unsupported: built without the cuda feature".into()
}

/// Every GPU (the emulator's `ACCEL_CUDA_EMULATOR_DEVICES` where there is none) and the
/// CPU, each site split across them in parts of a few elements.
#[cfg(feature = "cuda")]
fn devices(program: fn() -> String) -> String {
    use accel_runtime::Device;
    let run = || {
        let gpus = accel_runtime::cuda::gpu_count().unwrap_or(1);
        let list: Vec<Device> = (0..gpus).map(Device::Cuda).chain([Device::Cpu]).collect();
        accel_runtime::with_devices(&list, program)
    };
    if accel_runtime::cuda::available().is_ok() {
        run()
    } else {
        accel_runtime::cuda::with_emulator(run)
    }
}

#[cfg(not(feature = "cuda"))]
fn devices(_: fn() -> String) -> String {
    "unsupported: built without the cuda feature".into()
}

/// Runs `program` on three ranks (threads of this process) with every captured sequence
/// spread over them, each site run as a distributed site (each rank its part, combined by
/// collectives); every rank must get the same outcome.
fn ranks(program: fn() -> String) -> String {
    let outcomes = accel_runtime::comm::threads::ranks(3, |comm| {
        with_mode(Mode::Cpu, || {
            accel_runtime::__private::with_sequences_spread(comm, program)
        })
    });
    if outcomes.iter().any(|o| *o != outcomes[0]) {
        return format!("the ranks disagree: {}", outcomes.join(" | "));
    }
    outcomes[0].clone()
}

/// Runs `program` in debug mode and in each of `modes`: `P <id> ok`, `P <id> MISMATCH
/// <mode>` with both outcomes on the next lines, or `P <id> unsupported <mode>: ...`.
pub fn verdict(id: usize, program: fn() -> String, modes: &[String]) -> String {
    let reference = with_mode(Mode::Debug, program);
    if std::env::var_os("ACCEL_FUZZ_SHOW").is_some() {
        eprintln!("program {id}: {}", clip(&reference));
    }
    let mut verdict = format!("P {id} ok");
    for mode in modes {
        let got = run_in(mode, program);
        if got.starts_with("unsupported") && !reference.starts_with("unsupported") {
            verdict = format!("P {id} unsupported {mode}: {}", clip(&got));
        } else if !agree(&reference, &got) {
            return format!(
                "P {id} MISMATCH {mode}\n  debug: {}\n  {mode}: {}",
                clip(&reference),
                clip(&got)
            );
        }
    }
    verdict
}

/// Runs each program (those of `--only`, if given) in debug mode and every other mode,
/// printing one verdict per program for accel-fuzz to read; `--jobs N` programs at once
/// (the emulator's compiler runs as a separate process, so they overlap well).
pub fn main(programs: &[(usize, fn() -> String)]) {
    // Panics are outcomes here, reported in the verdicts.
    std::panic::set_hook(Box::new(|_| {}));
    // Random programs' sequences are short: parts of a few elements, so that the devices
    // mode splits them (read once, at the first split site).
    if std::env::var_os("ACCEL_DEVICE_CHUNK").is_none() {
        // SAFETY: set before any thread of the harness starts.
        unsafe { std::env::set_var("ACCEL_DEVICE_CHUNK", "4") };
    }
    let only: Option<Vec<usize>> =
        arg("--only").map(|s| s.split(',').filter_map(|n| n.parse().ok()).collect());
    let jobs: usize = arg("--jobs")
        .and_then(|j| j.parse().ok())
        .unwrap_or(1)
        .max(1);
    // The modes compared with debug mode.
    let modes: Vec<String> = arg("--modes")
        .map(|m| m.split(',').map(String::from).collect())
        .unwrap_or_else(|| vec!["cpu".into(), "cuda".into()]);
    let chosen: Vec<(usize, fn() -> String)> = programs
        .iter()
        .copied()
        .filter(|(id, _)| only.as_ref().is_none_or(|o| o.contains(id)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(id, program)) = chosen.get(k) else {
                    break;
                };
                // One `println!` per verdict: lines of different programs do not interleave.
                println!("{}", verdict(id, program, &modes));
            });
        }
    });
}

fn clip(s: &str) -> String {
    let s = s.replace('\n', " ");
    if s.len() > 400 {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}
