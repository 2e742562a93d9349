//! The CPU benchmark suite: each workload three ways in one run (`accelerate!` on the CPU
//! backend, idiomatic rayon, sequential Rust), medians of repeated runs, ratios, and the
//! first call's extra time (compilation). Prints a Markdown table; with `--out DIR` writes
//! it and a JSON file there; `--only GROUP[,GROUP...]` runs some groups of workloads
//! (streams, black_scholes, mandelbrot, n_body, histograms, filters, scatters), for comparing
//! builds.
//!
//! `cargo run --release -p accel-bench --bin cpu_suite [-- --quick] [-- --out benchmarks/results] [-- --only histograms]`

use accel_bench::{median_ms, ms, n_body_x, n_body_x_accel};
use accel_examples::classic::{black_scholes_option, escape_time as mandel, option_book};
use accel_examples::random::{below, bits, uniform};
use accel_runtime::prelude::*;
use rayon::prelude::*;

struct Row {
    name: &'static str,
    size: String,
    accel: f64,
    /// Time to compile the site on its first call.
    compile_ms: f64,
    rayon: f64,
    sequential: f64,
    max_rel_error: f64,
}

/// Times the three versions; `check` compares accel's result with the sequential one.
fn bench<R>(
    name: &'static str,
    size: String,
    runs: usize,
    accel: impl Fn() -> R,
    rayon: impl Fn() -> R,
    seq: impl Fn() -> R,
    check: impl Fn(&R, &R) -> f64,
) -> Row {
    let compiled_before = accel_runtime::__private::cpu_compile_times().len();
    let (first, first_ms) = ms(&accel);
    // 0 when the site's code was compiled by an earlier row (same site, same types).
    let compile_ms: f64 = accel_runtime::__private::cpu_compile_times()[compiled_before..]
        .iter()
        .fold(0.0, |a, b| a + b);
    let reference = seq();
    let max_rel_error = check(&first, &reference);
    let a = median_ms(runs, &accel);
    let r = median_ms(runs, &rayon);
    let s = median_ms(runs.min(3), &seq);
    eprintln!("{name}: accel {a:.2} ms, rayon {r:.2} ms, sequential {s:.2} ms");
    let _ = first_ms;
    Row {
        name,
        size,
        accel: a,
        compile_ms,
        rayon: r,
        sequential: s,
        max_rel_error,
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-30)
}

/// The error column of results that must be equal: 0 when they are, infinite otherwise.
fn exactly<T: PartialEq>(a: &Vec<T>, b: &Vec<T>) -> f64 {
    if a == b {
        0.0
    } else {
        f64::INFINITY
    }
}

fn max_rel(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() as f64 / (y.abs() as f64).max(1.0))
        .fold(0.0, f64::max)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|groups| groups.split(',').map(str::to_string).collect());
    if only.is_some() && out_dir.is_some() {
        eprintln!("cpu_suite: --only runs part of the suite, whose results --out must not replace");
        std::process::exit(2);
    }
    let runs = if quick { 3 } else { 11 };
    let scale = |full: usize, small: usize| if quick { small } else { full };
    type Group = fn(usize, &dyn Fn(usize, usize) -> usize, &mut Vec<Row>);
    let groups: [(&str, Group); 7] = [
        ("streams", streams),
        ("black_scholes", black_scholes),
        ("mandelbrot", mandelbrot),
        ("n_body", n_body),
        ("histograms", histograms),
        ("filters", filters),
        ("scatters", scatters),
    ];
    for wanted in only.iter().flatten() {
        if !groups.iter().any(|(name, _)| name == wanted) {
            let names: Vec<&str> = groups.iter().map(|(name, _)| *name).collect();
            eprintln!(
                "cpu_suite: no group `{wanted}`; the groups are {}",
                names.join(", ")
            );
            std::process::exit(2);
        }
    }
    let mut rows = Vec::new();
    for (name, group) in groups {
        if only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name))
        {
            group(runs, &scale, &mut rows);
        }
    }
    report(&rows, runs, out_dir);
}

/// Sum, dot product and SAXPY over long `f32` sequences.
fn streams(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let n = scale(1 << 25, 1 << 18);
    let xs = uniform(n, 1, 0.0, 1.0);
    let ys = uniform(n, 2, 0.0, 1.0);
    rows.push(bench(
        "sum",
        format!("{n} f32"),
        runs,
        || accelerate!(reduce(|a, b| a + b, 0.0, &xs)),
        || xs.par_iter().sum::<f32>(),
        || xs.iter().sum::<f32>(),
        |a, _| rel(*a as f64, xs.iter().map(|&x| x as f64).sum::<f64>()),
    ));
    // Each benchmark in the functional form and as an iterator chain inside `accelerate!`
    // (issue 13: within 5% of each other), against the same rayon and sequential code.
    let dot_rayon = || xs.par_iter().zip(&ys).map(|(x, y)| x * y).sum::<f32>();
    let dot_seq = || xs.iter().zip(&ys).map(|(x, y)| x * y).sum::<f32>();
    let dot_error = |a: &f32, _: &f32| {
        rel(
            *a as f64,
            xs.iter()
                .zip(&ys)
                .map(|(&x, &y)| x as f64 * y as f64)
                .sum::<f64>(),
        )
    };
    rows.push(bench(
        "dot",
        format!("{n} f32"),
        runs,
        || accelerate!(reduce(|a, b| a + b, 0.0, map2(|x, y| x * y, &xs, &ys))),
        dot_rayon,
        dot_seq,
        dot_error,
    ));
    rows.push(bench(
        "dot (iterator chain)",
        format!("{n} f32"),
        runs,
        || accelerate!(xs.par_iter().zip(&ys).map(|(x, y)| x * y).sum::<f32>()),
        dot_rayon,
        dot_seq,
        dot_error,
    ));
    let alpha = 2.5f32;
    let saxpy_rayon = || {
        xs.par_iter()
            .zip(&ys)
            .map(|(x, y)| alpha * x + y)
            .collect::<Vec<f32>>()
    };
    let saxpy_seq = || {
        xs.iter()
            .zip(&ys)
            .map(|(x, y)| alpha * x + y)
            .collect::<Vec<f32>>()
    };
    rows.push(bench(
        "saxpy",
        format!("{n} f32"),
        runs,
        || accelerate!(map2(|x, y| alpha * x + y, &xs, &ys)),
        saxpy_rayon,
        saxpy_seq,
        |a, b| max_rel(a, b),
    ));
    rows.push(bench(
        "saxpy (iterator chain)",
        format!("{n} f32"),
        runs,
        || {
            accelerate!(xs
                .par_iter()
                .zip(&ys)
                .map(|(x, y)| alpha * x + y)
                .collect::<Vec<f32>>())
        },
        saxpy_rayon,
        saxpy_seq,
        |a, b| max_rel(a, b),
    ));
    // The same data as a user's `Vec` of pairs and of records: read where they lie.
    let pairs: Vec<(f32, f32)> = xs.iter().zip(&ys).map(|(&x, &y)| (x, y)).collect();
    drop((xs, ys));
    let exact: f64 = pairs.iter().map(|&(x, y)| x as f64 * y as f64).sum();
    rows.push(bench(
        "dot over a Vec of pairs",
        format!("{n} (f32, f32)"),
        runs,
        || accelerate!(pairs.par_iter().map(|&(x, y)| x * y).sum::<f32>()),
        || pairs.par_iter().map(|&(x, y)| x * y).sum::<f32>(),
        || pairs.iter().map(|&(x, y)| x * y).sum::<f32>(),
        |a, _| rel(*a as f64, exact),
    ));
    let particles: Vec<Particle> = pairs[..n / 2]
        .iter()
        .zip(&pairs[n / 2..])
        .map(|(&(x, y), &(z, mass))| Particle { x, y, z, mass })
        .collect();
    drop(pairs);
    let energy = |p: &Particle| p.mass * (p.x * p.x + p.y * p.y + p.z * p.z);
    let exact: f64 = particles
        .iter()
        .map(|p| {
            p.mass as f64
                * (p.x as f64 * p.x as f64 + p.y as f64 * p.y as f64 + p.z as f64 * p.z as f64)
        })
        .sum();
    rows.push(bench(
        "sum over a Vec of records",
        format!("{} records of four f32", n / 2),
        runs,
        || {
            accelerate!(particles
                .par_iter()
                .map(|p| p.mass * (p.x * p.x + p.y * p.y + p.z * p.z))
                .sum::<f32>())
        },
        || particles.par_iter().map(energy).sum::<f32>(),
        || particles.iter().map(energy).sum::<f32>(),
        |a, _| rel(*a as f64, exact),
    ));
}

/// A user's record: a particle's position and mass.
#[derive(Accel, Clone, Copy, Debug, PartialEq)]
struct Particle {
    x: f32,
    y: f32,
    z: f32,
    mass: f32,
}

/// Black-Scholes call and put prices of random options, written as users write it: one
/// `#[accel]` function per option calling another for the normal distribution.
fn black_scholes(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let m = scale(1 << 23, 1 << 16);
    let (price, strike, years) = option_book(m);
    let flat = |v: &Vec<(f32, f32)>| -> Vec<f32> { v.iter().flat_map(|&(c, p)| [c, p]).collect() };
    rows.push(bench(
        "black-scholes",
        format!("{m} random options"),
        runs,
        || {
            accelerate!(create(price.len(), |i| black_scholes_option(
                price[i], strike[i], years[i]
            )))
        },
        || {
            price
                .par_iter()
                .zip(&strike)
                .zip(&years)
                .map(|((&p, &s), &y)| black_scholes_option(p, s, y))
                .collect::<Vec<(f32, f32)>>()
        },
        || {
            price
                .iter()
                .zip(&strike)
                .zip(&years)
                .map(|((&p, &s), &y)| black_scholes_option(p, s, y))
                .collect::<Vec<(f32, f32)>>()
        },
        |a, b| max_rel(&flat(a), &flat(b)),
    ));
    drop((price, strike, years));
}

/// Escape times of the Mandelbrot set.
fn mandelbrot(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let side = scale(2048, 256);
    let (w, h) = (side, side);
    rows.push(bench(
        "mandelbrot",
        format!("{w}x{h}, 256 iterations"),
        runs.min(7),
        || accelerate!(create(w * h, |k| mandel(k, w, h))),
        || {
            (0..w * h)
                .into_par_iter()
                .map(|k| mandel(k, w, h))
                .collect::<Vec<u32>>()
        },
        || (0..w * h).map(|k| mandel(k, w, h)).collect::<Vec<u32>>(),
        |a, b| a.iter().zip(b).filter(|(p, q)| p != q).count() as f64 / a.len() as f64,
    ));
}

/// N-body accelerations (x components).
fn n_body(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let bodies = scale(16384, 1024);
    let [px, py, pz, pm] = accel_bench::bodies(bodies);
    let accel_x = |i: usize| n_body_x(i, &px, &py, &pz, &pm);
    rows.push(bench(
        "n-body (x accelerations)",
        format!("{bodies} bodies"),
        runs.min(5),
        || n_body_x_accel(&px, &py, &pz, &pm),
        || {
            (0..bodies)
                .into_par_iter()
                .map(accel_x)
                .collect::<Vec<f32>>()
        },
        || (0..bodies).map(accel_x).collect::<Vec<f32>>(),
        |a, b| max_rel(a, b),
    ));
}

/// Histograms of random bins: counts into 256 bins (private histograms per chunk), and
/// weighted sums into a quarter as many bins as values (few, long chunks).
fn histograms(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let n = scale(1 << 24, 1 << 18);
    for (name, m, seed) in [
        ("histogram (256 bins)", 256, 21),
        ("histogram (65536 bins)", 1 << 16, 22),
    ] {
        let bins = below(n, seed, m);
        rows.push(bench(
            name,
            format!("{n} random bins"),
            runs,
            || {
                accelerate!(reduce_by_index(
                    vec![0u32; m],
                    |a, b| a + b,
                    0,
                    &bins,
                    map(|_| 1u32, &bins)
                ))
            },
            || {
                bins.par_iter()
                    .fold(
                        || vec![0u32; m],
                        |mut h, &b| {
                            h[b] += 1;
                            h
                        },
                    )
                    .reduce(
                        || vec![0u32; m],
                        |mut a, b| {
                            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                            a
                        },
                    )
            },
            || {
                let mut h = vec![0u32; m];
                for &b in &bins {
                    h[b] += 1;
                }
                h
            },
            exactly,
        ));
    }
    let m = n / 4;
    let bins = below(n, 23, m);
    let ws = uniform(n, 24, 0.0, 1.0);
    rows.push(bench(
        "histogram (n/4 bins)",
        format!("{n} random bins, {m} bins, f32 weights"),
        runs,
        || {
            accelerate!(reduce_by_index(
                vec![0.0f32; m],
                |a, b| a + b,
                0.0,
                &bins,
                &ws
            ))
        },
        || {
            bins.par_iter()
                .zip(&ws)
                .fold(
                    || vec![0.0f32; m],
                    |mut h, (&b, &w)| {
                        h[b] += w;
                        h
                    },
                )
                .reduce(
                    || vec![0.0f32; m],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                        a
                    },
                )
        },
        || {
            let mut h = vec![0.0f32; m];
            for (&b, &w) in bins.iter().zip(&ws) {
                h[b] += w;
            }
            h
        },
        |a, b| max_rel(a, b),
    ));
}

/// Compaction: the values above a threshold (half of them, at random), kept in order.
fn filters(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let n = scale(1 << 24, 1 << 18);
    let xs = uniform(n, 25, -1.0, 1.0);
    rows.push(bench(
        "filter (half kept)",
        format!("{n} random f32"),
        runs,
        || accelerate!(filter(|x| x > 0.0, &xs)),
        || {
            xs.par_iter()
                .copied()
                .filter(|&x| x > 0.0)
                .collect::<Vec<f32>>()
        },
        || {
            xs.iter()
                .copied()
                .filter(|&x| x > 0.0)
                .collect::<Vec<f32>>()
        },
        exactly,
    ));
}

/// Prints the table and writes it with the JSON results under `out_dir`.
fn report(rows: &[Row], runs: usize, out_dir: Option<String>) {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut table = format!(
        "Median of {runs} runs (fewer for the long ones), release build, {cores} cores, one process, ACCEL_MODE={}. \
         The error column is the largest relative difference from an exact (f64) result for the sums, from \
         sequential Rust elsewhere.\n\n\
         | benchmark | size | accelerate! cpu (ms) | rayon (ms) | sequential (ms) | accel / rayon | sequential / accel | compile on first call (ms) | max rel. error |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        mode().map(|m| m.to_string()).unwrap_or_else(|e| e.to_string())
    );
    for r in rows {
        table.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2}x | {:.2}x | {:.1} | {:.1e} |\n",
            r.name,
            r.size,
            r.accel,
            r.rayon,
            r.sequential,
            r.accel / r.rayon,
            r.sequential / r.accel,
            r.compile_ms,
            r.max_rel_error
        ));
    }
    println!("{table}");
    if let Some(dir) = out_dir {
        let json: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "benchmark": r.name, "size": r.size, "accel_ms": r.accel, "rayon_ms": r.rayon,
                    "sequential_ms": r.sequential, "accel_over_rayon": r.accel / r.rayon,
                    "sequential_over_accel": r.sequential / r.accel, "compile_ms": r.compile_ms,
                    "max_rel_error": r.max_rel_error,
                })
            })
            .collect();
        accel_bench::write_results(
            &dir,
            "cpu",
            "CPU backend benchmarks",
            "",
            &table,
            &serde_json::Value::Array(json),
        );
    }
}

/// Scattered writes: random values written at a random permutation of their positions (each
/// index once, as `scatter` asks) into a copy of a destination as long.
fn scatters(runs: usize, scale: &dyn Fn(usize, usize) -> usize, rows: &mut Vec<Row>) {
    let n = scale(1 << 24, 1 << 18);
    // Fisher-Yates with the suite's fixed-seed bits.
    let mut is: Vec<usize> = (0..n).collect();
    for k in (1..n).rev() {
        let j = (bits(26, k as u64) % (k as u64 + 1)) as usize;
        is.swap(k, j);
    }
    let vs = uniform(n, 27, -1.0, 1.0);
    let dest = uniform(n, 28, -1.0, 1.0);
    rows.push(bench(
        "scatter (a permutation)",
        format!("{n} random f32 at distinct random indices"),
        runs,
        || accelerate!(scatter(&dest, &is, &vs)),
        || {
            let mut out: Vec<f32> = dest.par_iter().copied().collect();
            let at = Written(out.as_mut_ptr());
            is.par_iter().zip(&vs).for_each(|(&i, &v)| {
                if i < n {
                    // SAFETY: `i` is in bounds, and the indices are distinct, so no two
                    // threads write one element; `out` outlives the loop.
                    unsafe { at.write(i, v) }
                }
            });
            out
        },
        || {
            let mut out = dest.clone();
            for (&i, &v) in is.iter().zip(&vs) {
                if let Some(o) = out.get_mut(i) {
                    *o = v;
                }
            }
            out
        },
        exactly,
    ));
}

/// The buffer the rayon scatter writes from several threads (a raw pointer is neither
/// `Send` nor `Sync`; the scatter's distinct indices make the writes disjoint).
#[derive(Clone, Copy)]
struct Written(*mut f32);

// SAFETY: only used to write distinct elements of one live buffer.
unsafe impl Send for Written {}
// SAFETY: as above.
unsafe impl Sync for Written {}

impl Written {
    /// Writes element `i`.
    ///
    /// # Safety
    /// `i` is in bounds and no other thread accesses element `i` meanwhile.
    unsafe fn write(self, i: usize, v: f32) {
        // SAFETY: the caller's promise.
        unsafe { *self.0.add(i) = v }
    }
}
