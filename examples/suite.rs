//! Runs every classic benchmark example in every available mode, checks each against its
//! sequential reference, prints one line each, and writes a Markdown table.
//!
//! `cargo run --release -p accel-examples --bin suite [-- --small] [-- --out DIR]`

use accel_examples::classic;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let small = args.iter().any(|a| a == "--small");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let reports = [
        classic::dot(small),
        classic::saxpy(small),
        classic::black_scholes(small),
        classic::mandelbrot(small),
        classic::nbody(small),
        classic::kmeans(small),
    ];
    let mut table = String::from("| example | size | mode | time (ms) | sequential reference (ms) | speedup |\n|---|---|---|---:|---:|---:|\n");
    for r in &reports {
        println!("{}", r.line());
        for (mode, ms) in &r.modes {
            table.push_str(&format!(
                "| {} | {} | {mode} | {ms:.1} | {:.1} | {:.2}x |\n",
                r.name,
                r.size,
                r.reference_ms,
                r.reference_ms / ms
            ));
        }
    }
    if let Some(dir) = out {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let md = format!(
            "# Examples\n\nEach example checked against its sequential reference in every mode; release build, {cores} cores, one run.\n\n{table}"
        );
        std::fs::write(format!("{dir}/examples.md"), md)
            .unwrap_or_else(|e| panic!("cannot write {dir}/examples.md: {e}"));
    }
}
