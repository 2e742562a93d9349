//! One site on several devices (feature `cuda`): Mandelbrot, N-body and Black-Scholes on
//! the CPU alone, the GPU alone, and split across the GPU and the CPU (and across every
//! GPU where there are several), in one run, with each split result checked against the
//! single-device one. Times are end to end (copies included), medians of a few runs after
//! a compiling one.
//!
//! `cargo run --release -p accel-bench --features cuda --bin devices -- --out benchmarks/results`
//! (`--small`: small sizes, for the emulator: `ACCEL_CUDA_EMULATOR=1`; `--only NAME`: one
//! benchmark).

use accel_bench::{median_ms, n_body_x_accel, write_results};
use accel_examples::classic::{black_scholes_option, escape_time as mandel, option_book};
use accel_runtime::prelude::*;
use accel_runtime::{cuda, Device};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let small = args.iter().any(|a| a == "--small");
    // `--only NAME`: one benchmark (its name's start), for a trace of it.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let wanted = |name: &str| only.as_ref().is_none_or(|o| name.starts_with(o.as_str()));
    let gpus = match cuda::available().and_then(|()| cuda::gpu_count()) {
        Ok(n) => n,
        Err(e) => {
            println!("SKIPPED: the devices benchmark needs a GPU (or ACCEL_CUDA_EMULATOR=1): {e}");
            return Ok(());
        }
    };
    let name = cuda::device::gpu().map(|g| g.name.clone())?;
    let mut lists: Vec<(String, Vec<Device>)> = vec![
        ("cpu".into(), vec![Device::Cpu]),
        ("cuda:0".into(), vec![Device::Cuda(0)]),
        ("cuda:0 + cpu".into(), vec![Device::Cuda(0), Device::Cpu]),
    ];
    if gpus > 1 {
        let all: Vec<Device> = (0..gpus).map(Device::Cuda).collect();
        lists.push((format!("{gpus} GPUs"), all.clone()));
        lists.push((
            format!("{gpus} GPUs + cpu"),
            [all, vec![Device::Cpu]].concat(),
        ));
    }
    let runs = if small { 2 } else { 3 };
    let mut table = String::from("| benchmark | size | devices | ms | vs GPU alone | max difference from one device |\n|---|---|---|---:|---:|---:|\n");
    let mut rows = Vec::new();

    let side = if small { 128 } else { 4096 };
    let (w, h) = (side, side);
    wanted("mandelbrot").then(|| {
        measure(
            "mandelbrot",
            &format!("{w}x{h}, 256 iterations"),
            &lists,
            runs,
            || accelerate!(create(w * h, |k| mandel(k, w, h))),
            |a, b| a.iter().zip(b).filter(|(p, q)| p != q).count() as f64 / a.len() as f64,
            (&mut table, &mut rows),
        )
    });
    let bodies = if small { 256 } else { 32_768 };
    let [px, py, pz, pm] = accel_bench::bodies(bodies);
    wanted("n-body").then(|| {
        measure(
            "n-body (x accelerations)",
            &format!("{bodies} bodies"),
            &lists,
            runs,
            || n_body_x_accel(&px, &py, &pz, &pm),
            |a, b| max_rel(a, b),
            (&mut table, &mut rows),
        )
    });
    let m = if small { 4096 } else { 1 << 24 };
    let (price, strike, years) = option_book(m);
    wanted("black-scholes").then(|| {
        measure(
            "black-scholes",
            &format!("{m} options"),
            &lists,
            runs,
            || {
                accelerate!(create(price.len(), |i| black_scholes_option(
                    price[i], strike[i], years[i]
                )))
            },
            |a: &Vec<(f32, f32)>, b: &Vec<(f32, f32)>| {
                let flat =
                    |v: &Vec<(f32, f32)>| v.iter().flat_map(|&(c, p)| [c, p]).collect::<Vec<f32>>();
                max_rel(&flat(a), &flat(b))
            },
            (&mut table, &mut rows),
        )
    });
    print!("{table}");
    if let Some(dir) = out {
        let preamble = format!(
            "Device: {name} ({gpus} GPU(s)) and the CPU. Each program on the CPU alone, the GPU alone, and split across devices (`with_devices`, parts of the default size taken from one queue); times end to end, median of {runs} runs after a compiling one; the last column: the split result's largest difference from the single-device result (relative for floats, the fraction of differing pixels for Mandelbrot).\n\n"
        );
        write_results(
            &dir,
            "devices",
            "One site on several devices",
            &preamble,
            &table,
            &serde_json::json!({"device": name, "gpus": gpus, "rows": rows}),
        );
    }
    Ok(())
}

/// The largest relative difference between two float results.
fn max_rel(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| ((x - y).abs() / x.abs().max(y.abs()).max(1e-6)) as f64)
        .fold(0.0, f64::max)
}

/// Times `f` on each list of devices, and compares each result with the first device's
/// (the CPU's).
fn measure<R>(
    name: &str,
    size: &str,
    lists: &[(String, Vec<Device>)],
    runs: usize,
    f: impl Fn() -> R,
    differ: impl Fn(&R, &R) -> f64,
    (table, rows): (&mut String, &mut Vec<serde_json::Value>),
) {
    let mut first: Option<R> = None;
    let mut times = Vec::new();
    for (label, devices) in lists {
        let result = with_devices(devices, &f);
        let ms = median_ms(runs, || with_devices(devices, &f));
        let difference = first.as_ref().map_or(0.0, |r| differ(r, &result));
        times.push((label.clone(), ms, difference));
        if first.is_none() {
            first = Some(result);
        }
    }
    let gpu_alone = times
        .iter()
        .find(|(l, _, _)| l == "cuda:0")
        .map_or(f64::NAN, |t| t.1);
    for (label, ms, difference) in times {
        table.push_str(&format!(
            "| {name} | {size} | {label} | {ms:.2} | {:.2}x | {difference:.1e} |\n",
            ms / gpu_alone
        ));
        rows.push(serde_json::json!({"benchmark": name, "size": size, "devices": label, "ms": ms, "difference": difference}));
    }
}
