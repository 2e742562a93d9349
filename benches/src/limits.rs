//! The limits: the six classic CPU benchmarks of `cpu_suite` (sum, dot, SAXPY,
//! Black-Scholes, Mandelbrot, N-body) written by hand with AVX-512 intrinsics (AVX2 and
//! FMA where the CPU has no AVX-512) as a performance engineer writes them for this
//! machine, beside accel's CPU code for the same
//! expressions (its LLVM tier, steady state: the first call compiles, the median of later
//! calls counts). The ratio says how far accel's generated code is from what this machine
//! can do, rather than from idiomatic rayon. The same run measures the machine's read
//! bandwidth (the limit's streaming sum of 256 MiB on every core), the ceiling of the
//! streaming reductions, and reports sum's and dot's share of it.
//!
//! Every limit result is checked against the sequential reference (an exact f64 sum for
//! the reductions, the same Rust functions elsewhere); a mismatch stops the run. Without
//! AVX-512 or AVX2 the limit column says it was skipped. Prints a Markdown table; `--out
//! DIR` writes it to `DIR/limits.md` (`DIR/limits-avx2.md` for the AVX2 limits; and the
//! same `.json`), `--quick` runs small sizes.
//!
//! `cargo run --release -p accel-bench --bin limits [-- --quick] [-- --out DIR]
//! [-- --only streams,black-scholes,mandelbrot,n-body]`

// A binary's root file finds modules beside it, not in `limits/`.
#[cfg(target_arch = "x86_64")]
#[path = "limits/avx2.rs"]
mod avx2;
#[cfg(target_arch = "x86_64")]
#[path = "limits/avx2_math.rs"]
mod avx2_math;
#[cfg(target_arch = "x86_64")]
#[path = "limits/avx512.rs"]
mod avx512;
#[cfg(target_arch = "x86_64")]
#[path = "limits/avx512_math.rs"]
mod avx512_math;
#[cfg(target_arch = "x86_64")]
#[path = "limits/cephes.rs"]
mod cephes;
#[cfg(target_arch = "x86_64")]
#[path = "limits/kernels.rs"]
mod kernels;

/// Elsewhere there is neither AVX-512 nor AVX2: no token, so no limit runs.
#[cfg(not(target_arch = "x86_64"))]
mod kernels {
    use std::mem::MaybeUninit;

    #[derive(Clone, Copy)]
    pub enum Isa {}

    impl Isa {
        pub fn detect() -> Option<Isa> {
            None
        }
        pub fn name(self) -> &'static str {
            match self {}
        }
        pub fn sum(self, _: &[f32]) -> f32 {
            match self {}
        }
        pub fn dot(self, _: &[f32], _: &[f32]) -> f32 {
            match self {}
        }
        pub fn saxpy(self, _: f32, _: &[f32], _: &[f32]) -> Vec<f32> {
            match self {}
        }
        pub fn saxpy_into(self, _: f32, _: &[f32], _: &[f32], _: &mut [MaybeUninit<f32>]) {
            match self {}
        }
        pub fn black_scholes(self, _: &[f32], _: &[f32], _: &[f32]) -> Vec<(f32, f32)> {
            match self {}
        }
        pub fn black_scholes_into(
            self,
            _: &[f32],
            _: &[f32],
            _: &[f32],
            _: &mut [MaybeUninit<(f32, f32)>],
        ) {
            match self {}
        }
        pub fn mandelbrot(self, _: usize, _: usize) -> Vec<u32> {
            match self {}
        }
        pub fn n_body(self, _: &[f32], _: &[f32], _: &[f32], _: &[f32]) -> Vec<f32> {
            match self {}
        }
        pub fn n_body_exact(self, _: &[f32], _: &[f32], _: &[f32], _: &[f32]) -> Vec<f32> {
            match self {}
        }
        pub fn read(self, _: &[f32]) -> f32 {
            match self {}
        }
    }
}

use accel_bench::{median, median_ms, ms, n_body_x, n_body_x_accel};
use accel_examples::classic::{black_scholes_option, escape_time as mandel, option_book};
use accel_examples::random::uniform;
use accel_runtime::__private::{with_cpu_tier, CpuTier};
use accel_runtime::prelude::*;
use kernels::Isa;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// The largest relative error a limit may have (Mandelbrot's must be exact).
const TOLERANCE: f64 = 1e-4;

struct Row {
    name: &'static str,
    size: String,
    accel_ms: f64,
    /// Whether LLVM could not compile accel's site (Cranelift's code ran instead).
    cranelift: bool,
    accel_error: f64,
    /// The limit's median time and largest error; `None` without AVX-512 or AVX2.
    limit: Option<(f64, f64)>,
    /// Bytes one call reads, for the streaming reductions' bandwidth.
    bytes: Option<f64>,
}

/// What every workload needs: runs per measurement, the sizes, the limits' instruction
/// set.
struct Setup {
    runs: usize,
    quick: bool,
    avx: Option<Isa>,
}

impl Setup {
    fn scale(&self, full: usize, small: usize) -> usize {
        if self.quick {
            small
        } else {
            full
        }
    }
}

/// Times accel's site (LLVM tier, after the first call, which compiles it), then the
/// limit; `error` measures a result against the reference. A limit off by more than
/// `tolerance` stops the run; accel's error is only reported.
///
/// Each is timed in a run of calls of its own, as a program calling it in a loop would
/// see it: alternating them would time each in the other's wake (accel's helpers spin on
/// rayon's threads for half a millisecond after a launch, see `cpu/pool/linger.rs`).
fn bench<R>(
    name: &'static str,
    size: String,
    runs: usize,
    accel: impl Fn() -> R,
    limit: Option<impl Fn() -> R>,
    error: impl Fn(&R) -> f64,
    tolerance: f64,
) -> Row {
    let accel = || with_mode(Mode::Cpu, || with_cpu_tier(CpuTier::Llvm, &accel));
    let fallbacks = accel_runtime::__private::llvm_fallbacks();
    let (first, first_ms) = ms(accel);
    let cranelift = accel_runtime::__private::llvm_fallbacks() > fallbacks;
    let accel_error = error(&first);
    drop(first);
    if accel_error > tolerance || accel_error.is_nan() {
        eprintln!(
            "limits: {name}: accel's result is off by {accel_error:.1e} (reported, not checked)"
        );
    }
    let limit_error = limit.as_ref().map(|f| {
        let e = error(&f());
        if e > tolerance || e.is_nan() {
            eprintln!(
                "limits: {name}: the limit is WRONG: max rel. error {e:.3e} > {tolerance:.0e}"
            );
            std::process::exit(1);
        }
        e
    });
    // Runs in turn, accel then the limit, so that both meet the same state of a shared
    // machine (its load, its free huge pages) rather than one the first half of the runs
    // and the other the second.
    let (mut accel_runs, mut limit_runs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        // Each starts when the other's threads have stopped spinning for more work (on two
        // cores a spinning thread of one pool takes a core from the other's).
        std::thread::sleep(std::time::Duration::from_millis(2));
        accel_runs.push(ms(accel).1);
        if let Some(f) = &limit {
            std::thread::sleep(std::time::Duration::from_millis(2));
            limit_runs.push(ms(f).1);
        }
    }
    let accel_ms = median(accel_runs);
    let limit = limit.map(|_| median(limit_runs));
    let limit = limit.zip(limit_error);
    let shown = limit.map_or("skipped".to_string(), |(l, e)| {
        format!("{l:.2} ms (max rel. error {e:.1e})")
    });
    eprintln!("{name}: accel {accel_ms:.2} ms (first call {first_ms:.0} ms), limit {shown}");
    Row {
        name,
        size,
        accel_ms,
        cranelift,
        accel_error,
        limit,
        bytes: None,
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-30)
}

/// As `cpu_suite`'s: relative to the reference, or absolute below 1.
fn max_rel(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "results of different lengths");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() as f64 / (y.abs() as f64).max(1.0))
        .fold(0.0, |m, e| if e > m || e.is_nan() { e } else { m })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    // `--only black-scholes,mandelbrot`: some workloads (names as in the table's first
    // word); the bandwidth is measured only with the streams.
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(str::to_string).collect());
    let runs_workload = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|w| w == name));
    let avx = Isa::detect();
    if avx.is_none() {
        eprintln!(
            "limits: this CPU has neither AVX-512F nor AVX2 with FMA: the limit column and the read bandwidth are SKIPPED"
        );
    }
    let llvm = accel_runtime::__private::llvm_available();
    if let Err(e) = &llvm {
        eprintln!("limits: accel's LLVM tier is unavailable ({e}): its column is Cranelift's optimized code");
    }
    let setup = Setup {
        runs: if quick { 3 } else { 11 },
        quick,
        avx,
    };
    let buffer = setup.scale(256 << 20, 64 << 20);
    let streaming = runs_workload("streams");
    let bandwidth = avx
        .filter(|_| streaming)
        .map(|a| read_bandwidth(a, setup.runs, buffer));
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    if streaming {
        streams(&setup, &mut rows, &mut notes);
    }
    if runs_workload("black-scholes") {
        black_scholes(&setup, &mut rows, &mut notes);
    }
    if runs_workload("mandelbrot") {
        mandelbrot(&setup, &mut rows);
    }
    if runs_workload("n-body") {
        n_body(&setup, &mut rows);
    }
    let machine = Machine {
        isa: avx.map(Isa::name),
        runs: setup.runs,
        bandwidth,
        buffer,
        llvm,
    };
    report(&rows, &notes, &machine, out_dir);
}

/// The read bandwidth in GB/s: the median time of the limit's sum over a `bytes` buffer
/// (written first, so that its pages exist).
fn read_bandwidth(avx: Isa, runs: usize, bytes: usize) -> f64 {
    let buf = vec![1.0f32; bytes / 4];
    avx.read(&buf);
    let t = median_ms(runs, || avx.read(&buf));
    eprintln!(
        "read bandwidth: {:.1} GB/s ({} MiB in {t:.2} ms)",
        bytes as f64 / t / 1e6,
        bytes >> 20
    );
    bytes as f64 / t / 1e6
}

/// Sum, dot product and SAXPY over long `f32` sequences (`cpu_suite`'s `streams`).
fn streams(setup: &Setup, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    // Runs of a few milliseconds, whose times move most on a shared machine: three times
    // as many (still under a second each).
    let (runs, avx) = (3 * setup.runs, setup.avx);
    let n = setup.scale(1 << 25, 1 << 18);
    let xs = uniform(n, 1, 0.0, 1.0);
    let ys = uniform(n, 2, 0.0, 1.0);
    // What the limits' closures take with them.
    let (xv, yv) = (xs.as_slice(), ys.as_slice());
    let exact: f64 = xs.iter().map(|&x| x as f64).sum();
    let mut row = bench(
        "sum",
        format!("{n} f32"),
        runs,
        || accelerate!(reduce(|a, b| a + b, 0.0, &xs)),
        avx.map(|a| move || a.sum(xv)),
        |s| rel(*s as f64, exact),
        TOLERANCE,
    );
    row.bytes = Some(4.0 * n as f64);
    rows.push(row);
    let exact: f64 = xs.iter().zip(&ys).map(|(&x, &y)| x as f64 * y as f64).sum();
    let mut row = bench(
        "dot",
        format!("{n} f32"),
        runs,
        || accelerate!(reduce(|a, b| a + b, 0.0, map2(|x, y| x * y, &xs, &ys))),
        avx.map(|a| move || a.dot(xv, yv)),
        |s| rel(*s as f64, exact),
        TOLERANCE,
    );
    row.bytes = Some(8.0 * n as f64);
    rows.push(row);
    let alpha = 2.5f32;
    let reference: Vec<f32> = xs.par_iter().zip(&ys).map(|(x, y)| alpha * x + y).collect();
    rows.push(bench(
        "saxpy",
        format!("{n} f32, into a new vector"),
        runs,
        || accelerate!(map2(|x, y| alpha * x + y, &xs, &ys)),
        avx.map(|a| move || a.saxpy(alpha, xv, yv)),
        |v| max_rel(v, &reference),
        TOLERANCE,
    ));
    if let Some(a) = avx {
        // The same stores into pages that exist: what the new vector's page faults cost.
        let mut buf = vec![MaybeUninit::new(0.0f32); n];
        let t = median_ms(runs, || a.saxpy_into(alpha, &xs, &ys, &mut buf));
        notes.push(format!(
            "SAXPY's limit writing into a buffer written before (no page faults): {t:.2} ms, \
             {:.1} GB/s of reads and writes.",
            12.0 * n as f64 / t / 1e6
        ));
    }
}

/// Black-Scholes call and put prices of random options (`cpu_suite`'s).
fn black_scholes(setup: &Setup, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let m = setup.scale(1 << 23, 1 << 16);
    let (price, strike, years) = option_book(m);
    let flat = |v: &Vec<(f32, f32)>| -> Vec<f32> { v.iter().flat_map(|&(c, p)| [c, p]).collect() };
    let reference: Vec<f32> = flat(
        &price
            .par_iter()
            .zip(&strike)
            .zip(&years)
            .map(|((&p, &s), &y)| black_scholes_option(p, s, y))
            .collect(),
    );
    rows.push(bench(
        "black-scholes",
        format!("{m} random options"),
        setup.runs,
        || {
            accelerate!(create(price.len(), |i| black_scholes_option(
                price[i], strike[i], years[i]
            )))
        },
        setup.avx.map(|a| {
            let (p, s, y) = (&price, &strike, &years);
            move || a.black_scholes(p, s, y)
        }),
        |v| max_rel(&flat(v), &reference),
        TOLERANCE,
    ));
    if let Some(a) = setup.avx {
        let mut buf = vec![MaybeUninit::new((0.0f32, 0.0f32)); m];
        let t = median_ms(setup.runs, || {
            a.black_scholes_into(&price, &strike, &years, &mut buf)
        });
        notes.push(format!(
            "Black-Scholes' limit writing into a buffer written before (no page faults): {t:.2} ms."
        ));
    }
}

/// Escape times of the Mandelbrot set (`cpu_suite`'s); the counts must be equal.
fn mandelbrot(setup: &Setup, rows: &mut Vec<Row>) {
    let side = setup.scale(2048, 256);
    let (w, h) = (side, side);
    let reference: Vec<u32> = (0..w * h)
        .into_par_iter()
        .map(|k| mandel(k, w, h))
        .collect();
    rows.push(bench(
        "mandelbrot",
        format!("{w}x{h}, 256 iterations"),
        setup.runs.min(7),
        || accelerate!(create(w * h, |k| mandel(k, w, h))),
        setup.avx.map(|a| move || a.mandelbrot(w, h)),
        // The share of pixels that differ.
        |v: &Vec<u32>| {
            assert_eq!(v.len(), reference.len());
            v.iter().zip(&reference).filter(|(p, q)| p != q).count() as f64 / v.len() as f64
        },
        0.0,
    ));
}

/// N-body accelerations, x components (`cpu_suite`'s).
fn n_body(setup: &Setup, rows: &mut Vec<Row>) {
    let bodies = setup.scale(16384, 1024);
    let [px, py, pz, pm] = accel_bench::bodies(bodies);
    let reference: Vec<f32> = (0..bodies)
        .into_par_iter()
        .map(|i| n_body_x(i, &px, &py, &pz, &pm))
        .collect();
    // The second limit computes what accel computes (its contract: every operation
    // rounded as written, no approximate square roots, no fused multiply-adds): how much
    // of the distance to the first is the arithmetic.
    type Limit = fn(Isa, &[f32], &[f32], &[f32], &[f32]) -> Vec<f32>;
    let limits: [(&'static str, Limit); 2] = [
        ("n-body (x accelerations)", Isa::n_body),
        ("n-body, exact limit", Isa::n_body_exact),
    ];
    for (name, limit) in limits {
        rows.push(bench(
            name,
            format!("{bodies} bodies"),
            setup.runs.min(5),
            || n_body_x_accel(&px, &py, &pz, &pm),
            setup.avx.map(|a| {
                let (x, y, z, m) = (&px, &py, &pz, &pm);
                move || limit(a, x, y, z, m)
            }),
            |v| max_rel(v, &reference),
            TOLERANCE,
        ));
    }
}

/// What the report's header says about the run.
struct Machine {
    /// The limits' instruction set; `None` where there are no limits.
    isa: Option<&'static str>,
    runs: usize,
    /// The read bandwidth in GB/s; `None` without limits.
    bandwidth: Option<f64>,
    /// The bandwidth buffer's size in bytes.
    buffer: usize,
    /// LLVM's library, or why accel's LLVM tier is unavailable.
    llvm: Result<String, String>,
}

/// This CPU's name and vector extensions, as `/proc/cpuinfo` says.
fn cpu_description() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("model name").unwrap_or_else(|| "an unknown CPU".into());
    let flags = field("flags").unwrap_or_default();
    let avx512: Vec<&str> = ["avx512f", "avx512dq", "avx512bw", "avx512vl"]
        .into_iter()
        .filter(|f| flags.split(' ').any(|g| g == *f))
        .collect();
    let avx512 = if avx512.is_empty() {
        let avx2: Vec<&str> = ["avx2", "fma"]
            .into_iter()
            .filter(|f| flags.split(' ').any(|g| g == *f))
            .collect();
        format!("no AVX-512, {}", avx2.join(" "))
    } else {
        avx512.join(" ")
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {cores} cores, {avx512}")
}

/// A bandwidth cell: GB/s and the share of the read bandwidth.
fn bandwidth_cell(bytes: Option<f64>, t_ms: Option<f64>, read: Option<f64>) -> String {
    match (bytes, t_ms) {
        (Some(b), Some(t)) => {
            let gbs = b / t / 1e6;
            match read {
                Some(r) => format!("{gbs:.1} GB/s ({:.0}%)", 100.0 * gbs / r),
                None => format!("{gbs:.1} GB/s"),
            }
        }
        _ => "".into(),
    }
}

/// Prints the table and writes it under `out_dir`.
fn report(rows: &[Row], notes: &[String], machine: &Machine, out_dir: Option<String>) {
    let tier = match &machine.llvm {
        Ok(lib) => format!("LLVM tier ({lib})"),
        Err(e) => format!("Cranelift's optimized code: LLVM's tier is unavailable ({e})"),
    };
    let isa = machine.isa.unwrap_or("no AVX-512 or AVX2");
    let bandwidth = match machine.bandwidth {
        Some(b) => format!(
            "{b:.1} GB/s (an {isa} sum of {} MiB on every core)",
            machine.buffer >> 20
        ),
        None => format!("not measured ({isa})"),
    };
    let mut preamble = format!(
        "Machine: {}. Median of {} runs (three times as many for the streams, 7 for Mandelbrot, 5 for N-body), accel's and the limit's in turn, release build, one process. \
         Read bandwidth: {bandwidth}.\n\n\
         - **accelerate! cpu**: `cpu_suite`'s site in `Mode::Cpu`, {tier}, after a first call that compiles it (or loads it from accel's disk cache).\n\
         - **limit**: hand-written {isa} intrinsics over all cores with rayon \
           (`benches/src/limits/`; sum and dot read with 256-bit loads, which streamed faster \
           than 512-bit ones on AVX-512; N-body's approximates `1 / sqrt` and fuses multiply-adds, its exact limit \
           rounds every operation as written, as accel does), checked against the sequential reference.\n\
         - **accel / limit**: how many times longer accel takes.\n\
         - **bandwidth**: bytes read per second by the reductions, and their share of the read bandwidth.\n\
         - **max rel. error**: against an exact (f64) sum for the reductions, sequential Rust \
           elsewhere (relative, absolute below 1); for Mandelbrot the share of pixels that differ.\n\n",
        cpu_description(),
        machine.runs,
    );
    for note in notes {
        preamble.push_str(&format!("{note}\n\n"));
    }
    let mut table = String::from(
        "| benchmark | size | accelerate! cpu (ms) | limit (ms) | accel / limit | accel bandwidth | limit bandwidth | max rel. error (accel, limit) |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let limit_ms = r.limit.map(|(t, _)| t);
        let (limit, ratio, limit_error) = match r.limit {
            Some((t, e)) => (
                format!("{t:.2}"),
                format!("{:.2}x", r.accel_ms / t),
                format!("{e:.1e}"),
            ),
            None => (format!("skipped ({isa})"), "".into(), "-".into()),
        };
        let tier = if r.cranelift { " (Cranelift)" } else { "" };
        table.push_str(&format!(
            "| {} | {} | {:.2}{tier} | {limit} | {ratio} | {} | {} | {:.1e}, {limit_error} |\n",
            r.name,
            r.size,
            r.accel_ms,
            bandwidth_cell(r.bytes, Some(r.accel_ms), machine.bandwidth),
            bandwidth_cell(r.bytes, limit_ms, machine.bandwidth),
            r.accel_error,
        ));
    }
    println!("{preamble}{table}");
    if let Some(dir) = out_dir {
        let json: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "benchmark": r.name, "size": r.size, "accel_ms": r.accel_ms,
                    "limit_ms": r.limit.map(|(t, _)| t),
                    "accel_over_limit": r.limit.map(|(t, _)| r.accel_ms / t),
                    "bytes_read": r.bytes, "read_bandwidth_gbs": machine.bandwidth,
                    "accel_max_rel_error": r.accel_error, "limit_max_rel_error": r.limit.map(|(_, e)| e),
                })
            })
            .collect();
        // The AVX2 limits are another measure: their results do not replace AVX-512's.
        let (file, title) = match machine.isa {
            Some("AVX2") => ("limits-avx2", "accel against hand-written AVX2 limits"),
            _ => ("limits", "accel against hand-written AVX-512 limits"),
        };
        accel_bench::write_results(
            &dir,
            file,
            title,
            &preamble,
            &table,
            &serde_json::Value::Array(json),
        );
    }
}
