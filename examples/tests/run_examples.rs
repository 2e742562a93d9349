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
fn ode() {
    for mode in [Some("debug"), Some("cpu"), None] {
        let out = run_with(env!("CARGO_BIN_EXE_ode"), mode, &["--small"]);
        assert!(out.starts_with("ode: 64 pendulums x 1000 steps"), "{out}");
        assert!(out.contains("max difference 0.0e0"), "{out}");
    }
}

#[test]
fn classic_suite_checks_every_example_in_every_mode() {
    let out = run_with(env!("CARGO_BIN_EXE_suite"), None, &["--small"]);
    for name in [
        "dot",
        "saxpy",
        "black-scholes",
        "mandelbrot",
        "n-body",
        "k-means",
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
}

#[test]
fn viterbi() {
    for mode in [Some("debug"), Some("cpu"), None] {
        let out = run_with(env!("CARGO_BIN_EXE_viterbi"), mode, &["--small"]);
        assert!(
            out.starts_with("viterbi: 10 sequences x 200 signals, 8 states"),
            "{out}"
        );
    }
}
