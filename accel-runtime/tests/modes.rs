//! `ACCEL_MODE` and `ACCEL_LOG`, read from the environment of a child process running the
//! ignored test below, and the messages of broken assumptions naming their site.

use accel_runtime::prelude::*;

#[test]
#[ignore = "run in a child process by the tests below, with its environment set"]
fn child_runs_a_site() {
    let v = vec![1i64, 2, 3];
    let s = accelerate!(reduce(|a, b| a + b, 0, &v));
    println!("child result {s}");
}

#[test]
#[ignore = "run in a child process by `the_tensor_rank_bound_is_configurable`"]
fn child_uses_a_rank_4_tensor() {
    let t = Tensor::<i32>::zeros(&[1, 2, 1, 2]);
    accelerate!(parallel_loop(2, |i| t.set([0, i, 0, i], 1)));
    println!("child sum {}", t.to_vec().iter().sum::<i32>());
}

#[test]
#[ignore = "run in a child process by `a_fallback_says_so_once_and_site_stats_tell_it`"]
fn child_runs_a_site_no_backend_compiles() {
    let n = 2usize;
    for _ in 0..3 {
        // Sequences nested three deep as a result: the CPU backend does not compile them.
        let deep = accelerate!(create(n, |i| create(2, |j| create(2, |k| i + j + k)))); // [deep]
        assert_eq!(deep[1][1], vec![2, 3]);
    }
    let xs = vec![1i64, 2, 3];
    let s = accelerate!(reduce(|a, b| a + b, 0, &xs)); // [compiled]
    assert_eq!(s, 6);
    for st in accel_runtime::site_stats() {
        println!(
            "stats {} {:?} {}",
            st.site,
            st.ran_on,
            st.fallbacks.join(" | ")
        );
    }
}

mod common;
use common::panic_message;

fn site_of(marker: &str) -> String {
    common::site_of("modes.rs", include_str!("modes.rs"), marker)
}

/// Runs `child_runs_a_site` with `env`; returns (success, stdout, stderr).
fn child(env: &[(&str, &str)]) -> (bool, String, String) {
    common::run_child("child_runs_a_site", env)
}

#[test]
fn debug_and_default_modes_run_the_site() {
    for env in [
        vec![("ACCEL_MODE", "debug")],
        vec![("ACCEL_MODE", "cpu")],
        vec![],
    ] {
        let (ok, out, err) = child(&env);
        assert!(ok, "{env:?}: {err}");
        assert!(out.contains("child result 6"), "{env:?}: {out}");
    }
}

#[test]
fn accel_dump_writes_the_cpu_backends_machine_code() {
    let dir = std::env::temp_dir().join(format!("accel-cpu-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (ok, out, err) = child(&[("ACCEL_MODE", "cpu"), ("ACCEL_DUMP", dir.to_str().unwrap())]);
    assert!(ok, "{err}");
    assert!(out.contains("child result 6"), "{out}");
    let stem: String = site_of("let s = accelerate!")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let file = std::fs::read_dir(&dir)
        .expect("ACCEL_DUMP made its folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with(&stem) && name.ends_with(".cpu.s")
        })
        .expect("a .cpu.s file for the site");
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(";; (reduce "), "the fused program: {text}");
    assert!(text.contains(";; kernel1: the `reduce` chunks"), "{text}");
    assert!(text.contains(";; the site function"), "{text}");
    assert!(text.contains("ret"), "machine code: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_mode_is_a_clear_error_naming_the_site() {
    let (ok, _, err) = child(&[("ACCEL_MODE", "gpu")]);
    assert!(!ok);
    let expected = format!(
        "accelerate! at {}: ACCEL_MODE=\"gpu\" is not a mode: \
         use one of debug, cpu, cuda (or leave it unset for the best available)",
        site_of("let s = accelerate!")
    );
    assert!(err.contains(&expected), "{err}");
}

/// Without the `cuda` feature (CI runs this file so too); with it, the no-GPU error is
/// tested in `cuda_backend.rs`.
#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_mode_without_the_feature_is_a_clear_error() {
    let (ok, _, err) = child(&[("ACCEL_MODE", "cuda")]);
    assert!(!ok);
    assert!(
        err.contains("ACCEL_MODE=cuda, but accel-runtime was built without its `cuda` feature"),
        "{err}"
    );
}

#[test]
fn accel_log_reports_the_program_and_the_run() {
    let (ok, _, err) = child(&[("ACCEL_MODE", "debug"), ("ACCEL_LOG", "1")]);
    assert!(ok, "{err}");
    let site = site_of("let s = accelerate!");
    assert!(
        err.contains(&format!(
            "[accel] {site}: program of 0 function(s) [], captures [v]"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "[accel] {site}: debug: ran as checked sequential Rust in"
        )),
        "{err}"
    );
}

#[test]
fn the_tensor_rank_bound_is_configurable() {
    let (ok, _, err) = common::run_child("child_uses_a_rank_4_tensor", &[("ACCEL_MODE", "debug")]);
    assert!(!ok);
    assert!(
        err.contains("captured t has rank 4 (shape [1, 2, 1, 2]), above the tensor rank bound 3"),
        "{err}"
    );
    let (ok, out, err) = common::run_child(
        "child_uses_a_rank_4_tensor",
        &[("ACCEL_MODE", "debug"), ("ACCEL_MAX_TENSOR_RANK", "4")],
    );
    assert!(ok, "{err}");
    assert!(out.contains("child sum 2"), "{out}");
    let (ok, _, err) = common::run_child(
        "child_uses_a_rank_4_tensor",
        &[("ACCEL_MODE", "debug"), ("ACCEL_MAX_TENSOR_RANK", "many")],
    );
    assert!(!ok);
    assert!(
        err.contains(
            "ACCEL_MAX_TENSOR_RANK=\"many\" is not a rank: give a whole number of at least 1"
        ),
        "{err}"
    );
}

#[test]
fn broken_assumptions_name_the_site() {
    let xs = vec![1, 2, 3];
    let ys = vec![1, 2];
    let msg = panic_message(|| {
        with_mode(Mode::Debug, || accelerate!(map2(|a, b| a + b, &xs, &ys)));
    });
    assert_eq!(
        msg,
        format!(
            "map2 at {}: lengths differ: 3 vs 2",
            site_of("map2(|a, b| a + b, &xs, &ys)")
        )
    );
    let t = Tensor::<i32>::zeros(&[2, 2]);
    let msg = panic_message(|| {
        with_mode(Mode::Debug, || {
            accelerate!(parallel_loop(3, |i| t.set([i, 0], 1)))
        });
    });
    assert_eq!(
        msg,
        format!(
            "Tensor::set at {}: index [2, 0] is out of bounds for shape [2, 2]",
            site_of("t.set([i, 0], 1)")
        )
    );
    // Outside accelerated code the same checks name no site.
    let msg = panic_message(|| {
        map2(|a: i32, b: i32| a + b, &xs, &ys);
    });
    assert_eq!(msg, "map2: lengths differ: 3 vs 2");
}

#[test]
fn a_fallback_says_so_once_and_site_stats_tell_it() {
    let deep = site_of("[deep]");
    let compiled = site_of("[compiled]");
    // No setting: one warning for the site however often it runs, naming the construct.
    let (ok, out, err) = common::run_child("child_runs_a_site_no_backend_compiles", &[]);
    assert!(ok, "{err}");
    let warning = format!(
        "[accel] warning: {deep}: cpu: the cpu backend cannot compile sequences nested three or more levels deep as results yet; running sequentially instead"
    );
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    assert_eq!(err.matches("[accel] warning").count(), 1, "{err}");
    assert!(
        out.contains(&format!(
            "stats {deep} Sequential cpu: the cpu backend cannot compile sequences nested three"
        )),
        "{out}"
    );
    assert!(out.contains(&format!("stats {compiled} Cpu \n")), "{out}");
    // ACCEL_LOG=0 silences it; the stats still tell.
    let (ok, out, err) = common::run_child(
        "child_runs_a_site_no_backend_compiles",
        &[("ACCEL_LOG", "0")],
    );
    assert!(ok, "{err}");
    assert!(!err.contains("[accel]"), "{err}");
    assert!(out.contains(&format!("stats {deep} Sequential")), "{out}");
}

#[test]
fn an_unoptimised_build_is_noticed_once_in_the_log() {
    let (ok, _, err) = child(&[("ACCEL_MODE", "cpu"), ("ACCEL_LOG", "1")]);
    assert!(ok, "{err}");
    let notice = "accel-runtime was built without optimisations (opt-level 0)";
    let expected = usize::from(accel_runtime::__private::BUILT_OPT_LEVEL == "0");
    assert_eq!(err.matches(notice).count(), expected, "{err}");
    if expected == 1 {
        assert!(
            err.contains("[profile.dev.package.\"*\"] opt-level = 2"),
            "{err}"
        );
    }
}
