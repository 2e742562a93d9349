//! The GPU benchmark suite (feature `cuda`, on a machine with a GPU): memory-bound `map`
//! and `reduce` over 2^26 `f32` against the device's measured copy bandwidth, and
//! Black-Scholes against a hand-written CUDA kernel compiled with NVRTC as nvcc would
//! (fused multiply-adds on), on the same device in the same run. Kernel times exclude the
//! copies to and from the device (they are reported apart, end to end).
//!
//! `cargo run --release -p accel-bench --features cuda --bin gpu_suite -- --out benchmarks/results`

use accel_bench::{median, write_results, HAND_BLACK_SCHOLES};
use accel_examples::classic::call_price;
use accel_runtime::cuda::{self, device, nvrtc};
use accel_runtime::prelude::*;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

const RUNS: usize = 10;

/// The median kernel time (ms) and end-to-end time (ms) of `f` over [`RUNS`] runs, after
/// one compiling run.
fn kernel_ms<R>(f: impl Fn() -> R) -> (f64, f64, R) {
    let first = f();
    let mut kernel = Vec::new();
    let mut total = Vec::new();
    for _ in 0..RUNS {
        cuda::KERNEL_NANOS.store(0, Relaxed);
        let start = Instant::now();
        std::hint::black_box(f());
        total.push(start.elapsed().as_secs_f64() * 1e3);
        kernel.push(cuda::KERNEL_NANOS.load(Relaxed) as f64 / 1e6);
    }
    (median(kernel), median(total), first)
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let gpu = match device::gpu() {
        Ok(g) => g,
        Err(e) => {
            println!("SKIPPED: the GPU benchmarks need a GPU: {e}");
            return Ok(());
        }
    };
    let bandwidth = gpu.enter()?.copy_bandwidth(1 << 28, 10)?;
    println!(
        "{}: {} multiprocessors, copy bandwidth {bandwidth:.0} GB/s",
        gpu.name, gpu.multiprocessors
    );
    cuda::PROFILE.store(true, Relaxed);
    let mut rows = Vec::new();
    let mut table = String::from(
        "| benchmark | size | kernel (ms) | GB/s | of copy bandwidth | end to end (ms) | reference | ratio |\n|---|---|---:|---:|---:|---:|---|---:|\n",
    );
    streams(bandwidth, &mut table, &mut rows);
    black_scholes(gpu, &mut table, &mut rows)?;
    copies(gpu, &mut table, &mut rows)?;
    print!("{table}");
    if let Some(dir) = out {
        let preamble = format!(
            "Device: {}, {} multiprocessors; measured device-to-device copy bandwidth {bandwidth:.0} GB/s (bytes read + written). Kernel times: median of {RUNS} runs, synchronised around each launch; end to end includes copies to and from the device (an input unchanged from run to run is copied once and found again by its hash; the last reduce's input changes every run). Targets: map and reduce at >= 80% of the copy bandwidth; Black-Scholes within 1.2x of the hand-written kernel (ratio = accel / hand-written).\n\n",
            gpu.name, gpu.multiprocessors
        );
        write_results(
            &dir,
            "gpu",
            "GPU benchmarks",
            &preamble,
            &table,
            &serde_json::json!({"device": gpu.name, "copy_gb_per_s": bandwidth, "rows": rows}),
        );
    }
    Ok(())
}

/// `map` and `reduce` over 2^26 `f32` against the device's copy bandwidth.
fn streams(bandwidth: f64, table: &mut String, rows: &mut Vec<serde_json::Value>) {
    let n = 1usize << 26;
    let v = accel_examples::random::uniform(n, 1, 0.0, 1.0);
    let (map_ms, map_total, ys) =
        kernel_ms(|| with_mode(Mode::Cuda, || accelerate!(map(|x| x * 2.0 + 1.0, &v))));
    assert!(ys.iter().zip(&v).all(|(y, x)| *y == x * 2.0 + 1.0));
    let (red_ms, red_total, sum) =
        kernel_ms(|| with_mode(Mode::Cuda, || accelerate!(reduce(|a, b| a + b, 0.0f32, &v))));
    let exact: f64 = v.iter().map(|&x| x as f64).sum();
    assert!(
        ((sum as f64 - exact) / exact).abs() < 1e-3,
        "{sum} vs {exact}"
    );
    // The same reduce with one element changed before every call: its input is copied
    // every time (the runs above find theirs kept on the GPU, see `cuda::inputs`).
    let changing = std::cell::RefCell::new((v.clone(), 0usize));
    let (changed_ms, changed_total, _) = kernel_ms(|| {
        let mut state = changing.borrow_mut();
        state.1 += 1;
        let k = state.1;
        state.0[k % n] += 1.0;
        let xs: &Vec<f32> = &state.0;
        with_mode(Mode::Cuda, || accelerate!(reduce(|a, b| a + b, 0.0f32, xs)))
    });
    for (name, ms, total, bytes) in [
        ("map (x * 2 + 1)", map_ms, map_total, 8 * n),
        ("reduce (+)", red_ms, red_total, 4 * n),
        (
            "reduce (+), input changed every call",
            changed_ms,
            changed_total,
            4 * n,
        ),
    ] {
        let gbs = bytes as f64 / (ms / 1e3) / 1e9;
        table.push_str(&format!(
            "| {name} | 2^26 f32 | {ms:.3} | {gbs:.0} | {:.0}% | {total:.1} | copy {bandwidth:.0} GB/s | {:.2} |\n",
            100.0 * gbs / bandwidth,
            gbs / bandwidth
        ));
        rows.push(
            serde_json::json!({"benchmark": name, "elements": n, "kernel_ms": ms,
            "end_to_end_ms": total, "gb_per_s": gbs, "copy_gb_per_s": bandwidth}),
        );
    }
}

/// Copies of 256 MiB between ordinary host memory and the GPU: to the GPU directly and
/// through the backend's pinned buffers (its default for large copies), back directly;
/// each the median of [`RUNS`].
fn copies(
    gpu: &device::Gpu,
    table: &mut String,
    rows: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    let bytes = 1usize << 28;
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let mut back = vec![0u8; bytes];
    let mut timed = |staged: bool| -> Result<(f64, f64), String> {
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for _ in 0..RUNS + 1 {
            let session = gpu.enter()?;
            let mut copy = || -> Result<(f64, f64), String> {
                let start = Instant::now();
                let buf = session.upload(&data)?;
                let up = start.elapsed().as_secs_f64() * 1e3;
                let start = Instant::now();
                session.download(buf.ptr, &mut back)?;
                Ok((up, start.elapsed().as_secs_f64() * 1e3))
            };
            let (u, d) = if staged {
                copy()?
            } else {
                device::without_staging(copy)?
            };
            up.push(u);
            down.push(d);
        }
        up.remove(0);
        down.remove(0);
        assert!(back == data, "the copies changed the data");
        Ok((median(up), median(down)))
    };
    let (direct_up, direct_down) = timed(false)?;
    let (staged_up, _) = timed(true)?;
    let gbs = |ms: f64| bytes as f64 / (ms / 1e3) / 1e9;
    table.push_str(&format!(
        "\n| copy of 256 MiB | direct (ms) | GB/s | through pinned buffers (ms) | GB/s | ratio |\n|---|---:|---:|---:|---:|---:|\n\
         | host to GPU | {direct_up:.1} | {:.1} | {staged_up:.1} | {:.1} | {:.2} |\n\
         | GPU to host | {direct_down:.1} | {:.1} | (copies back go directly) | | |\n",
        gbs(direct_up),
        gbs(staged_up),
        staged_up / direct_up,
        gbs(direct_down),
    ));
    rows.push(
        serde_json::json!({"benchmark": "copy host to GPU", "bytes": bytes,
        "direct_ms": direct_up, "staged_ms": staged_up}),
    );
    rows.push(
        serde_json::json!({"benchmark": "copy GPU to host", "bytes": bytes,
        "direct_ms": direct_down}),
    );
    Ok(())
}

/// Black-Scholes: the accel kernel and the hand-written one on the same data.
fn black_scholes(
    gpu: &device::Gpu,
    table: &mut String,
    rows: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    let n = 1usize << 24;
    let (s, x, t) = accel_examples::classic::option_book(n);
    let (r, vol) = (0.02f32, 0.30f32);
    let (bs_ms, bs_total, prices) = kernel_ms(|| {
        with_mode(Mode::Cuda, || {
            accelerate!(create(s.len(), |i| call_price(s[i], x[i], t[i], r, vol)))
        })
    });
    let (hand_ms, hand_prices) = hand_black_scholes(gpu, &s, &x, &t, r, vol)?;
    let worst = prices
        .iter()
        .zip(&hand_prices)
        .map(|(a, b)| ((a - b).abs() / b.abs().max(1.0)) as f64)
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-4,
        "accel and the hand-written kernel differ by {worst}"
    );
    table.push_str(&format!(
        "| Black-Scholes | 2^24 options | {bs_ms:.3} | | | {bs_total:.1} | hand-written kernel {hand_ms:.3} ms | {:.2} |\n",
        bs_ms / hand_ms
    ));
    rows.push(
        serde_json::json!({"benchmark": "black-scholes", "options": n, "kernel_ms": bs_ms,
        "end_to_end_ms": bs_total, "hand_written_ms": hand_ms, "ratio": bs_ms / hand_ms,
        "max_rel_difference": worst}),
    );
    Ok(())
}

/// The hand-written Black-Scholes kernel's median time and its prices.
fn hand_black_scholes(
    gpu: &device::Gpu,
    s: &[f32],
    x: &[f32],
    t: &[f32],
    r: f32,
    vol: f32,
) -> Result<(f64, Vec<f32>), String> {
    let n = s.len();
    let ptx = nvrtc::compile_with(HAND_BLACK_SCHOLES, &gpu.compute_arch(), true)?;
    let kernel = gpu.load("", &ptx, &["black_scholes".to_string()])?[0];
    let session = gpu.enter()?;
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let (ds, dx, dt) = (
        session.upload(&bytes(s))?,
        session.upload(&bytes(x))?,
        session.upload(&bytes(t))?,
    );
    let dout = session.alloc(4 * n)?;
    let params = [
        ds.ptr,
        dx.ptr,
        dt.ptr,
        dout.ptr,
        n as u64,
        r.to_bits() as u64,
        vol.to_bits() as u64,
    ];
    let blocks = (n as u32)
        .div_ceil(gpu.threads)
        .min(gpu.multiprocessors * 32);
    let mut hand = Vec::new();
    for _ in 0..RUNS + 1 {
        session.synchronize()?;
        let start = Instant::now();
        session.launch(kernel, blocks, &params)?;
        session.synchronize()?;
        hand.push(start.elapsed().as_secs_f64() * 1e3);
    }
    hand.remove(0);
    let hand_ms = median(hand);
    let mut raw = vec![0u8; 4 * n];
    session.download(dout.ptr, &mut raw)?;
    drop(session);
    let hand_prices: Vec<f32> = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((hand_ms, hand_prices))
}
