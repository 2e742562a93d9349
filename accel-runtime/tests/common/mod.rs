//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

use accel_runtime::prelude::*;

/// Runs a site in debug mode and in cpu mode; they must agree (floats within
/// `Accel::close_to`'s tolerance, since parallel reductions group differently). Returns
/// debug mode's result, the reference.
pub fn agree<R: Accel + std::fmt::Debug>(f: impl Fn() -> R) -> R {
    agree_scaled(f, None)
}

/// Like `agree`, with the float tolerance relative to `scale` too (for sums with
/// cancellation, the rounding error grows with the sum of magnitudes, not the result).
pub fn agree_scaled<R: Accel + std::fmt::Debug>(f: impl Fn() -> R, scale: Option<&R>) -> R {
    let d = with_mode(Mode::Debug, &f);
    let c = with_mode(Mode::Cpu, &f);
    let scales: Vec<&R> = scale.into_iter().collect();
    assert!(c.close_to(&d, &scales), "cpu gave {c:?}, debug gave {d:?}");
    d
}

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
