//! The example's three steps hold together: the committed record is what running the
//! program records (nothing stale), and the built binary runs every site from its
//! embedded kernels on the emulator with NVRTC out of reach.

use std::process::Command;

const BINARY: &str = env!("CARGO_BIN_EXE_accel-aot-example");

/// The binary with no `ACCEL_*` variable but `env`.
fn run(env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = Command::new(BINARY);
    for (k, _) in std::env::vars() {
        if k.starts_with("ACCEL_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("the example runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn the_committed_record_is_what_the_program_records() {
    let dir = std::env::temp_dir().join(format!("accel-aot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fresh = dir.join("accel-sites.json");
    run(&[
        ("ACCEL_MODE", "cpu"),
        ("ACCEL_RECORD", fresh.to_str().unwrap()),
    ]);
    let committed = include_str!("../accel-sites.json");
    assert!(
        std::fs::read_to_string(&fresh).unwrap() == committed,
        "examples/aot/accel-sites.json is stale: record it again with \
         ACCEL_RECORD=examples/aot/accel-sites.json cargo run -p accel-aot-example"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_site_runs_from_the_embedded_kernels_without_nvrtc() {
    if !accel_runtime::cuda::emulator::available() {
        eprintln!("[accel tests] SKIPPED: the example on the emulator: no C++20 compiler");
        return;
    }
    // NVRTC out of reach: no library path to it.
    let (stdout, log) = run(&[
        ("ACCEL_MODE", "cuda"),
        ("ACCEL_CUDA_EMULATOR", "1"),
        ("ACCEL_LOG", "1"),
        ("LD_LIBRARY_PATH", ""),
    ]);
    let bundle_line = log.lines().next().unwrap_or("");
    if bundle_line.ends_with("(built without NVRTC)") {
        eprintln!(
            "[accel tests] SKIPPED: embedded kernels: the example was built without NVRTC \
             (put its library on LD_LIBRARY_PATH when building)"
        );
        return;
    }
    assert_eq!(
        bundle_line,
        "[accel] embedded kernel bundle: 5 site(s), 10 PTX file(s)"
    );
    let compiled: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(": cuda: compiled"))
        .collect();
    assert_eq!(compiled.len(), 5, "{log}");
    for line in &compiled {
        assert!(
            line.contains("PTX from the embedded bundle); first run of the site"),
            "{line}"
        );
    }
    assert!(!log.contains("NVRTC"), "{log}");
    assert!(!log.contains("not in the embedded kernel bundle"), "{log}");
    assert!(
        stdout.starts_with("mode: cuda\nhistogram of 100000 clamped values: "),
        "{stdout}"
    );
}
