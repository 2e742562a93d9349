//! The default mode with a GPU: each site's device is chosen from its own calls
//! (`dispatch::device_choice`): its first two run on the GPU, the next two on the CPU,
//! and the rest on whichever ran its last probe faster, with the same results every call;
//! calls of another size choose anew.
//! The emulator stands in for the GPU (the GPU itself, when one is lent).
#![cfg(feature = "cuda")]

use accel_runtime::prelude::*;
use accel_runtime::{site_stats, RanOn};

mod common;

const CALLS: usize = 7;

/// Calls two sites `CALLS` times each in the default mode, printing their results and
/// their records.
#[test]
#[ignore = "run in a child process, once, by the tests below (`child_run`)"]
fn choice_child() {
    let xs: Vec<i64> = (0..300_000).collect();
    for call in 0..CALLS {
        let s: i64 = accelerate!(reduce(|a, b| a + b, 0, map(|x| x * 3 % 7, &xs)));
        let v: Vec<i64> = accelerate!(map(|x| x * x - 1, &xs));
        println!("call {call}: {s} {}", v.iter().sum::<i64>());
    }
    for s in site_stats() {
        println!("record: {} {} {:?}", s.site, s.ran_on, s.fallbacks);
    }
    // One site tried on small inputs, then on large ones.
    for n in [1000, 300_000] {
        let v: Vec<i64> = (0..n).collect();
        for _ in 0..4 {
            let w: Vec<i64> = accelerate!(map(|x| x + 1, &v));
            println!("size {n}: {}", w.iter().sum::<i64>());
        }
    }
}

/// The device of each call of the site at `site`, in order, from `ACCEL_LOG`'s lines
/// (`[accel] SITE: cuda: ran in ..`).
fn devices_of<'a>(log: &'a str, site: &str) -> Vec<&'a str> {
    log.lines()
        .filter_map(|l| l.strip_prefix(&format!("[accel] {site}: ")))
        .filter_map(|rest| rest.split_once(": ran in ").map(|(device, _)| device))
        .collect()
}

/// The device the log says `site` chose, and the two probes' times it compared.
fn choice_of(log: &str, site: &str) -> (&'static str, f64, f64) {
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix(&format!("[accel] {site}: runs on the ")))
        .unwrap_or_else(|| panic!("no choice for {site} in\n{log}"));
    let device = if line.starts_with("CPU") {
        "cpu"
    } else {
        "cuda"
    };
    let number_after = |key: &str| -> f64 {
        let at = line.find(key).expect("the line names both times") + key.len();
        line[at..].split(' ').next().unwrap().parse().unwrap()
    };
    (device, number_after("took "), number_after("GPU, "))
}

/// `choice_child`'s output and log, run once for the tests that read them (the GPU, or
/// the emulator standing in for it); `None` where neither is here (said on stderr).
fn child_run() -> Option<&'static (String, String)> {
    static RUN: std::sync::OnceLock<Option<(String, String)>> = std::sync::OnceLock::new();
    RUN.get_or_init(|| {
        let mut env = vec![("ACCEL_LOG", "1")];
        if !common::gpu_present() {
            if !common::emulator_present() {
                return None;
            }
            env.push(("ACCEL_CUDA_EMULATOR", "1"));
        }
        let (ok, out, err) = common::run_child("choice_child", &env);
        assert!(ok, "{err}");
        Some((out, err))
    })
    .as_ref()
}

#[test]
fn the_default_mode_keeps_each_site_on_the_faster_device() {
    let Some((out, err)) = child_run() else {
        return;
    };
    let sum: i64 = (0..300_000i64).map(|x| x * 3 % 7).sum();
    let squares: i64 = (0..300_000i64).map(|x| x * x - 1).sum();
    for call in 0..CALLS {
        assert!(
            out.contains(&format!("call {call}: {sum} {squares}")),
            "{out}"
        );
    }
    let source = include_str!("device_choice.rs");
    for marker in ["map(|x| x * 3 % 7, &xs)", "map(|x| x * x - 1, &xs)"] {
        let site = common::site_of("device_choice.rs", source, marker);
        let ran = devices_of(err, &site);
        assert_eq!(ran.len(), CALLS, "{site}: {err}");
        assert_eq!(ran[..4], ["cuda", "cuda", "cpu", "cpu"], "{site}: {err}");
        let (chosen, gpu_ms, cpu_ms) = choice_of(err, &site);
        assert_eq!(chosen == "cpu", cpu_ms < gpu_ms, "{site}: {err}");
        assert!(ran[4..].iter().all(|d| *d == chosen), "{site}: {ran:?}");
        let record = out
            .lines()
            .find(|l| l.starts_with(&format!("record: {site} ")))
            .expect("the site's record");
        match chosen {
            "cpu" => assert!(
                record.contains(" cpu [\"a call took ") && record.contains("it runs on the CPU"),
                "{record}"
            ),
            _ => assert!(record.ends_with(" cuda []"), "{record}"),
        }
    }
}

#[test]
fn calls_of_another_size_choose_their_device_anew() {
    let Some((out, err)) = child_run() else {
        return;
    };
    for n in [1000i64, 300_000] {
        let line = format!("size {n}: {}", n * (n + 1) / 2);
        assert_eq!(out.matches(&format!("{line}\n")).count(), 4, "{out}");
    }
    let site = common::site_of(
        "device_choice.rs",
        include_str!("device_choice.rs"),
        "map(|x| x + 1, &v)",
    );
    // 1000 elements and 300,000 are sizes far apart: each probes both devices.
    let probes = ["cuda", "cuda", "cpu", "cpu"];
    assert_eq!(devices_of(err, &site), [probes, probes].concat(), "{err}");
    let choices = err
        .lines()
        .filter(|l| l.starts_with(&format!("[accel] {site}: runs on the ")))
        .count();
    assert_eq!(choices, 2, "{err}");
}

#[test]
fn a_chosen_mode_is_not_second_guessed() {
    if !common::emulator_present() {
        return;
    }
    let xs: Vec<i64> = (0..1000).collect();
    // Chosen by `with_mode`: every call on the GPU, with no probe on the CPU.
    accel_runtime::cuda::with_emulator(|| {
        with_mode(Mode::Cuda, || {
            for _ in 0..6 {
                let s: i64 = accelerate!(reduce(|a, b| a + b, 0, &xs));
                assert_eq!(s, 499_500);
            }
        })
    });
    let site = common::site_of(
        "device_choice.rs",
        include_str!("device_choice.rs"),
        "reduce(|a, b| a + b, 0, &xs));",
    );
    let record = site_stats()
        .into_iter()
        .find(|s| s.site == site)
        .expect("the site's record");
    assert_eq!(record.ran_on, RanOn::Cuda);
    assert!(record.fallbacks.is_empty(), "{:?}", record.fallbacks);
}
