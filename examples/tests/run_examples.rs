//! Runs every example in debug mode and in the default mode; each checks its own result.

use std::process::Command;

fn run(exe: &str, mode: Option<&str>) -> String {
    run_with(exe, mode, &[])
}

fn run_with(exe: &str, mode: Option<&str>, args: &[&str]) -> String {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    cmd.env_remove("ACCEL_MODE");
    if let Some(m) = mode {
        cmd.env("ACCEL_MODE", m);
    }
    let out = cmd.output().expect("the example runs");
    assert!(
        out.status.success(),
        "{exe} ({mode:?}) failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn quickstart() {
    for mode in [Some("debug"), None] {
        let out = run(env!("CARGO_BIN_EXE_quickstart"), mode);
        assert!(out.contains("sum of 1..=1000000 = 500000500000"), "{out}");
    }
}

#[test]
fn aliasing() {
    for mode in [Some("debug"), None] {
        assert_eq!(
            run(env!("CARGO_BIN_EXE_aliasing"), mode),
            "[0, 7, 0, 0, 0, 2]\n"
        );
    }
}

#[test]
fn particles() {
    for mode in [Some("debug"), None] {
        assert!(run(env!("CARGO_BIN_EXE_particles"), mode)
            .starts_with("centre of mass after 200 steps: ("));
    }
}

#[test]
fn sensors() {
    for mode in [Some("debug"), None] {
        let out = run_with(env!("CARGO_BIN_EXE_sensors"), mode, &["--small"]);
        // The program checks each chain against std's iterators itself.
        assert!(
            out.starts_with("sensors: 8 stations x 1000 readings\n"),
            "{out}"
        );
    }
}

#[test]
fn heat() {
    for mode in [Some("debug"), None] {
        let out = run_with(env!("CARGO_BIN_EXE_heat"), mode, &["--small"]);
        // The program checks every result against ndarray's own computation.
        assert!(out.starts_with("heat: a 64x48 plate, 20 steps\n"), "{out}");
        assert!(out.contains("every result matches ndarray's"), "{out}");
    }
}

#[test]
fn ode() {
    let out = run_with(env!("CARGO_BIN_EXE_ode"), None, &["--small"]);
    assert!(out.starts_with("ode: 64 pendulums x 1000 steps\n"), "{out}");
    // Each mode's trace was checked against the reference (within 1e-9) in the process.
    assert!(
        out.contains("ode (RK4) (64 pendulums x 1000 steps): debug ") && out.contains(", cpu "),
        "{out}"
    );
}

#[test]
fn the_suite_checks_every_example_in_every_mode_and_writes_its_table_and_chart() {
    let dir = std::env::temp_dir().join(format!("accel-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = run_with(
        env!("CARGO_BIN_EXE_suite"),
        None,
        &["--small", "--no-peers", "--out", dir.to_str().unwrap()],
    );
    for name in [
        "dot",
        "saxpy",
        "black-scholes",
        "mandelbrot",
        "n-body",
        "k-means",
        "k-means (per cluster)",
        "viterbi (functional)",
        "viterbi (imperative)",
        "ode (RK4)",
        "nn (digits)",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} (")))
            .unwrap_or_else(|| panic!("{name} missing:\n{out}"));
        assert!(
            line.contains("debug ")
                && line.contains("cpu ")
                && line.contains("sequential reference"),
            "{line}"
        );
    }
    let table = std::fs::read_to_string(dir.join("examples.md")).expect("the table");
    assert!(
        table.contains("| example | size | sequential reference | debug | cpu |"),
        "{table}"
    );
    assert!(
        table.contains("| nn (digits) | 1438 images, 3 epochs |"),
        "{table}"
    );
    if cfg!(feature = "chart") {
        let png = std::fs::read(dir.join("examples.png")).expect("the chart");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() > 10_000, "a chart with content");
    } else {
        assert!(
            out.contains("no chart: build with `--features chart`"),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nn() {
    let out = run_with(env!("CARGO_BIN_EXE_nn"), None, &["--small"]);
    assert!(
        out.starts_with("nn: 1438 training / 359 test images, 64-64-10, batch 32, 3 epochs"),
        "{out}"
    );
    for mode in ["debug", "cpu"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("nn: mode {mode}: ")))
            .unwrap_or_else(|| panic!("no {mode} line:\n{out}"));
        // Debug mode sums in the reference's order: the same network, bit for bit; the
        // CPU backend sums dot products on SIMD lanes: the same accuracy.
        assert!(line.contains("test accuracy 91.9%"), "{line}");
        if mode == "debug" {
            assert!(line.ends_with("max weight difference 0.0e0"), "{line}");
        }
    }
}

#[test]
fn viterbi() {
    let out = run_with(env!("CARGO_BIN_EXE_viterbi"), None, &["--small"]);
    assert!(
        out.starts_with("viterbi: 10 sequences x 200 signals, 8 states\n"),
        "{out}"
    );
    for version in ["functional", "imperative"] {
        assert!(
            out.contains(&format!(
                "viterbi ({version}) (10 x 200 signals, 8 states): debug "
            )),
            "{out}"
        );
    }
}

/// With the CUDA backend built: every example's kernels compile with NVRTC and assemble
/// with ptxas for sm_80 and sm_90 (ACCEL_CUDA_CHECK; skipped visibly without them), and
/// every example runs in the default mode on the GPU, or on the emulator when there is
/// none (sites the CUDA backend does not compile yet run on the CPU, as users get them).
#[cfg(feature = "cuda")]
#[test]
fn every_example_compiles_its_kernels_and_runs_on_the_device() {
    if !accel_runtime::cuda::emulator::available() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "[accel tests] SKIPPED: the examples on the CUDA emulator: no C++20 compiler"
        );
        return;
    }
    let examples: [(&str, &[&str]); 9] = [
        (env!("CARGO_BIN_EXE_quickstart"), &[]),
        (env!("CARGO_BIN_EXE_heat"), &["--small"]),
        (env!("CARGO_BIN_EXE_sensors"), &["--small"]),
        (env!("CARGO_BIN_EXE_aliasing"), &[]),
        (env!("CARGO_BIN_EXE_particles"), &[]),
        (env!("CARGO_BIN_EXE_ode"), &["--small"]),
        (env!("CARGO_BIN_EXE_viterbi"), &["--small"]),
        (
            env!("CARGO_BIN_EXE_suite"),
            &["--small", "--no-peers", "--classic"],
        ),
        (
            env!("CARGO_BIN_EXE_nn"),
            &["--small", "--epochs", "1", "--train", "128"],
        ),
    ];
    for (exe, args) in examples {
        let check = Command::new(exe)
            .args(args)
            .env("ACCEL_MODE", "cpu")
            .env("ACCEL_CUDA_CHECK", "1")
            .output()
            .expect("the example runs");
        let log = String::from_utf8_lossy(&check.stderr);
        assert!(
            check.status.success(),
            "{exe} (kernel check) failed:\n{log}"
        );
        // The kernel report (registers per kernel) goes to stderr: show it.
        eprint!("{log}");
        let device = Command::new(exe)
            .args(args)
            .env_remove("ACCEL_MODE")
            .env("ACCEL_CUDA_EMULATOR", "1")
            .env("ACCEL_LOG", "1")
            .output()
            .expect("the example runs");
        let log = String::from_utf8_lossy(&device.stderr);
        assert!(device.status.success(), "{exe} (device) failed:\n{log}");
        assert!(
            log.contains(": cuda: ran in"),
            "{exe}: nothing ran on the device:\n{log}"
        );
    }
}
