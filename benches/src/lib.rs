//! Shared pieces of the benchmark binaries.

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
