//! Programs accel-fuzz generated that once ran differently in some mode, reduced and kept:
//! each runs again in debug mode, on the CPU and in the cuda mode (on the emulator, or a
//! GPU when there is one, with the `cuda` feature) and must agree. accel-fuzz appends new
//! ones at the end.
#![allow(warnings)]

use accel_runtime::prelude::*;

#[path = "../harness/support.rs"]
mod support;

// The records every generated program may use (`accel_fuzz::gen::types::RECORDS`).
include!("../harness/records.rs");

/// Runs `program` in every mode against debug mode; fails with both outcomes if they differ.
fn check(id: usize, program: fn() -> String) {
    let modes = vec!["cpu".to_string(), "cuda".to_string()];
    let verdict = support::verdict(id, program, &modes);
    assert!(!verdict.contains("MISMATCH"), "{verdict}");
    if verdict.contains("unsupported") {
        eprintln!("[accel-fuzz regressions] {verdict}");
    }
}
