//! The cost of debug mode's checks: each workload runs, in one process, as idiomatic
//! sequential Rust, as the same parallel operations called outside `accelerate!` (the
//! sequential reference semantics, unchecked), and as an `accelerate!` site in debug mode
//! with every check on.
//! Prints a table of medians and ratios; writes Markdown and JSON beside each other.
//!
//! `cargo run --release -p accel-bench --bin debug_overhead [-- --quick] [-- --out DIR]`

use accel_bench::median_ms;
use accel_runtime::prelude::*;

struct Row {
    name: String,
    size: usize,
    plain: f64,
    unchecked: f64,
    checked: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let (n, runs) = if quick { (1 << 16, 3) } else { (1 << 22, 7) };
    let mut rows = Vec::new();
    functional(n, runs, &mut rows);
    nested_and_imperative(n, runs, &mut rows);
    report(&rows, runs, out_dir);
}

/// `reduce`, `map` and `scan` over flat sequences.
fn functional(n: usize, runs: usize, rows: &mut Vec<Row>) {
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    rows.push(Row {
        name: "reduce (sum of f32)".into(),
        size: n,
        plain: median_ms(runs, || xs.iter().fold(0.0f32, |a, b| a + b)),
        unchecked: median_ms(runs, || reduce(|a, b| a + b, 0.0, &xs)),
        checked: median_ms(runs, || {
            with_mode(Mode::Debug, || accelerate!(reduce(|a, b| a + b, 0.0, &xs)))
        }),
    });

    let c = 2.5f32;
    rows.push(Row {
        name: "map (c * x)".into(),
        size: n,
        plain: median_ms(runs, || xs.iter().map(|x| c * x).collect::<Vec<f32>>()),
        unchecked: median_ms(runs, || map(|x| c * x, &xs)),
        checked: median_ms(runs, || {
            with_mode(Mode::Debug, || accelerate!(map(|x| c * x, &xs)))
        }),
    });

    let ints: Vec<i64> = (0..n as i64).collect();
    rows.push(Row {
        name: "scan (prefix sum of i64)".into(),
        size: n,
        plain: median_ms(runs, || {
            let mut acc = 0i64;
            ints.iter()
                .map(|x| {
                    acc += x;
                    acc
                })
                .collect::<Vec<i64>>()
        }),
        unchecked: median_ms(runs, || scan(|a, b| a + b, 0, &ints)),
        checked: median_ms(runs, || {
            with_mode(Mode::Debug, || accelerate!(scan(|a, b| a + b, 0, &ints)))
        }),
    });
}

/// Reductions nested in a map, and a `parallel_loop` over tensors.
fn nested_and_imperative(n: usize, runs: usize, rows: &mut Vec<Row>) {
    let rows_n = n / 64;
    let matrix: Vec<Vec<f64>> = (0..rows_n)
        .map(|r| (0..64).map(|c| (r * 64 + c) as f64).collect())
        .collect();
    rows.push(Row {
        name: "map of row reduces (64 wide)".into(),
        size: rows_n * 64,
        plain: median_ms(runs, || {
            matrix
                .iter()
                .map(|r| r.iter().fold(0.0, |a, b| a + b))
                .collect::<Vec<f64>>()
        }),
        unchecked: median_ms(runs, || map(|r| reduce(|a, b| a + b, 0.0, r), &matrix)),
        checked: median_ms(runs, || {
            with_mode(Mode::Debug, || {
                accelerate!(map(|r| reduce(|a, b| a + b, 0.0, r), &matrix))
            })
        }),
    });

    let m = n / 16;
    let src = Tensor::from_vec((0..m as i64).collect(), &[m]);
    let dst = Tensor::<i64>::zeros(&[m]);
    rows.push(Row {
        name: "parallel_loop (dst[i] = 2 * src[i])".into(),
        size: m,
        plain: median_ms(runs, || (0..m).for_each(|i| dst.set([i], 2 * src.get([i])))),
        unchecked: median_ms(runs, || {
            parallel_loop(m, |i| dst.set([i], 2 * src.get([i])))
        }),
        checked: median_ms(runs, || {
            with_mode(Mode::Debug, || {
                accelerate!(parallel_loop(m, |i| dst.set([i], 2 * src.get([i]))))
            })
        }),
    });
}

/// Prints the table and writes it with the JSON results under `out_dir`.
fn report(rows: &[Row], runs: usize, out_dir: Option<String>) {
    let mut table = String::from(
        "| workload | elements | plain Rust (ms) | unchecked sequential (ms) | debug mode (ms) | debug / unchecked |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        table.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2}x |\n",
            r.name,
            r.size,
            r.plain,
            r.unchecked,
            r.checked,
            r.checked / r.unchecked
        ));
    }
    println!("{table}");
    if let Some(dir) = out_dir {
        let json: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "workload": r.name, "elements": r.size, "plain_ms": r.plain,
                    "unchecked_ms": r.unchecked, "debug_ms": r.checked, "debug_over_unchecked": r.checked / r.unchecked,
                })
            })
            .collect();
        let meta = format!(
            "Median of {runs} runs, release build, {} cores, measured in one process. \
             \"Unchecked sequential\" calls the same parallel operations outside `accelerate!` (the \
             sequential reference semantics, which copy borrowed inputs into owned elements); \
             debug mode runs them inside a debug-mode site with every check on.\n\n",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        );
        accel_bench::write_results(
            &dir,
            "debug-overhead",
            "Debug mode overhead",
            &meta,
            &table,
            &serde_json::Value::Array(json),
        );
    }
}
