//! Records the optimisation level accel-runtime (and, in a user's profile, usually the
//! Cranelift it depends on) is built at, so that the log can say when a dev profile leaves
//! the JIT unoptimised.

fn main() {
    let level = std::env::var("OPT_LEVEL").unwrap_or_default();
    println!("cargo:rustc-env=ACCEL_BUILT_OPT_LEVEL={level}");
    println!("cargo:rerun-if-changed=build.rs");
}
