//! Records the optimisation level accel-runtime (and, in a user's profile, usually the
//! Cranelift it depends on) is built at, so that the log can say when a dev profile leaves
//! the JIT unoptimised; and a hash of the crate's source, part of the key of the code the
//! disk cache keeps (object code calls the runtime's helpers by name: code another build
//! compiled may expect other helpers, even under the same version).

use std::path::{Path, PathBuf};

fn main() {
    let level = std::env::var("OPT_LEVEL").unwrap_or_default();
    println!("cargo:rustc-env=ACCEL_BUILT_OPT_LEVEL={level}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    files.sort();
    // FNV-1a over each file's path and contents.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        let contents = std::fs::read(file).unwrap_or_default();
        for byte in file.to_string_lossy().bytes().chain(contents) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=ACCEL_SOURCE_HASH={hash:016x}");
}

/// The `.rs` files under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
