//! Every compile-time rejection of accelerated code, with its reviewed message and span.
//! Regenerate snapshots with `TRYBUILD=overwrite cargo test -p accel-ui-tests` and review
//! the diff.

#[test]
fn rejections_and_accepted_programs() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
