//! Helpers shared by the integration tests.

/// `accel-runtime/tests/FILE:LINE:COLUMN` of the site enclosing the first line of `source`
/// (the test file's own text) that contains `marker`: the nearest `accelerate!(` at or
/// above it. Found in the source, so formatting cannot break the tests' expectations.
pub fn site_of(file: &str, source: &str, marker: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(marker) && !l.contains("site_of("))
        .expect("the marker is in this file");
    let n = (0..=at)
        .rev()
        .find(|&k| lines[k].contains("accelerate!("))
        .expect("a site encloses the marker");
    let column = lines[n].find("accelerate!(").expect("the line has a site") + 1;
    format!("accel-runtime/tests/{file}:{}:{column}", n + 1)
}
