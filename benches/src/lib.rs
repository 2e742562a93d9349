//! Shared pieces of the benchmark binaries.

use std::time::Instant;

/// The result of `f` and its wall time in milliseconds.
pub fn ms<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let start = Instant::now();
    let r = std::hint::black_box(f());
    (r, start.elapsed().as_secs_f64() * 1e3)
}

/// The median of some times.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The median wall time of `runs` calls of `f`, in milliseconds.
pub fn median_ms<R>(runs: usize, mut f: impl FnMut() -> R) -> f64 {
    median((0..runs).map(|_| ms(&mut f).1).collect())
}

/// Writes a benchmark's results beside each other: `DIR/STEM.md` (a title, a preamble
/// and the table) and `DIR/STEM.json` (machine-readable rows).
pub fn write_results(
    dir: &str,
    stem: &str,
    title: &str,
    preamble: &str,
    table: &str,
    json: &serde_json::Value,
) {
    let md = format!("# {title}\n\n{preamble}{table}");
    std::fs::write(format!("{dir}/{stem}.md"), md)
        .unwrap_or_else(|e| panic!("cannot write {dir}/{stem}.md: {e}"));
    let text = serde_json::to_string_pretty(json)
        .unwrap_or_else(|e| panic!("cannot serialize the results: {e}"));
    std::fs::write(format!("{dir}/{stem}.json"), text)
        .unwrap_or_else(|e| panic!("cannot write {dir}/{stem}.json: {e}"));
}
