//! `ACCEL_TRACE=FILE`: the timeline a child process writes, read back as JSON (Chrome's
//! trace-event array, left open as the format allows): sites, compilations, the CPU
//! backend's chunks per thread, and with the `cuda` feature the emulated device's copies
//! and kernels.

use accel_runtime::prelude::*;

mod common;

fn site_of(marker: &str) -> String {
    common::site_of("trace.rs", include_str!("trace.rs"), marker)
}

/// Runs the test `child` with `env` and `ACCEL_TRACE` set; returns its stdout and the
/// trace's events.
fn traced_child(child: &str, env: &[(&str, &str)]) -> (String, Vec<serde_json::Value>) {
    let file =
        std::env::temp_dir().join(format!("accel-trace-{child}-{}.json", std::process::id()));
    let mut env = env.to_vec();
    env.push(("ACCEL_TRACE", file.to_str().unwrap()));
    let (ok, out, err) = common::run_child(child, &env);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&file).expect("the trace file");
    let _ = std::fs::remove_file(&file);
    let events = serde_json::from_str(&format!("{text}]")).expect("a JSON array once closed");
    (out, events)
}

/// The events of category `cat` named `name`.
fn named<'e>(events: &'e [serde_json::Value], cat: &str, name: &str) -> Vec<&'e serde_json::Value> {
    events
        .iter()
        .filter(|e| e["cat"] == cat && e["name"] == name)
        .collect()
}

#[test]
#[ignore = "run in a child process by `the_cpu_backend_traces_sites_compiles_and_chunks`"]
fn child_traces_a_site() {
    let v: Vec<i64> = (0..100_000).collect();
    let s = accelerate!(reduce(|a, b| a + b, 0, &v)); // [traced]
    println!("child sum {s}");
    accel_runtime::__private::wait_for_cpu_tier_ups();
}

#[test]
fn the_cpu_backend_traces_sites_compiles_and_chunks() {
    let env = [("ACCEL_MODE", "cpu"), ("ACCEL_NUM_THREADS", "2")];
    let (out, events) = traced_child("child_traces_a_site", &env);
    assert!(out.contains("child sum 4999950000"), "{out}");
    let site = site_of("// [traced]");
    let sites = named(&events, "site", &site);
    assert_eq!(sites.len(), 1, "{events:?}");
    assert_eq!(sites[0]["args"]["backend"], "cpu");
    // The quick code's compile on the site's thread, the optimized code's on the
    // background thread.
    let compiles = named(&events, "compile", &format!("compile {site}"));
    assert_eq!(compiles.len(), 2, "{events:?}");
    assert_eq!(compiles[0]["args"]["tier"], "quick", "{events:?}");
    assert_eq!(compiles[1]["args"]["tier"], "optimized", "{events:?}");
    assert_eq!(compiles[0]["tid"], sites[0]["tid"], "{events:?}");
    let background = events
        .iter()
        .find(|e| e["ph"] == "M" && e["tid"] == compiles[1]["tid"])
        .expect("the background thread named");
    assert_eq!(background["args"]["name"], "accel-tier-up", "{events:?}");
    // 100 000 cheap elements: chunks of 4096, covering every index once.
    let chunks = named(&events, "chunk", "chunk");
    assert_eq!(chunks.len(), 25, "{events:?}");
    let mut spans: Vec<(u64, u64)> = chunks
        .iter()
        .map(|c| {
            let i = &c["args"]["indices"];
            (i[0].as_u64().unwrap(), i[1].as_u64().unwrap())
        })
        .collect();
    spans.sort();
    assert_eq!(spans.first().unwrap().0, 0);
    assert_eq!(spans.last().unwrap().1, 100_000);
    assert!(spans.windows(2).all(|w| w[0].1 == w[1].0), "{spans:?}");
    // Every event on a named thread; the chunks inside the site's span.
    let threads: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| &e["tid"])
        .collect();
    let start = sites[0]["ts"].as_f64().unwrap();
    let end = start + sites[0]["dur"].as_f64().unwrap();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(threads.contains(&&e["tid"]), "an unnamed thread: {e}");
        assert!(e["dur"].as_f64().unwrap() >= 0.0, "{e}");
        let ts = e["ts"].as_f64().unwrap();
        if e["cat"] == "chunk" {
            assert!(ts >= start && ts <= end, "a chunk outside its site: {e}");
        }
    }
}

#[test]
#[ignore = "run in a child process by `the_cuda_backend_traces_copies_and_kernels`"]
fn child_runs_a_site_on_the_device() {
    let v: Vec<f32> = (0..1000).map(|x| x as f32).collect();
    let s: f32 = accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x * 2.0, &v))); // [device]
    println!("child result {s}");
}

#[cfg(feature = "cuda")]
#[test]
fn the_cuda_backend_traces_copies_and_kernels() {
    // Says visibly that it skipped when there is no emulator.
    if !common::emulator_present() {
        return;
    }
    let env = [("ACCEL_MODE", "cuda"), ("ACCEL_CUDA_EMULATOR", "1")];
    let (out, events) = traced_child("child_runs_a_site_on_the_device", &env);
    assert!(out.contains("child result 999000"), "{out}");
    let site = site_of("// [device]");
    let compile = named(&events, "compile", &format!("compile {site}"));
    assert_eq!(compile.len(), 1, "{events:?}");
    assert_eq!(compile[0]["args"]["backend"], "cuda");
    assert_eq!(named(&events, "site", &site)[0]["args"]["backend"], "cuda");
    // The input's 4000 bytes go to the device; kernels run; the sum comes back.
    let up = named(&events, "copy", "copy to device");
    assert!(up.iter().any(|e| e["args"]["bytes"] == 4000), "{events:?}");
    assert!(
        !named(&events, "copy", "copy to host").is_empty(),
        "{events:?}"
    );
    let kernels = named(&events, "kernel", "kernel");
    assert!(!kernels.is_empty(), "{events:?}");
    assert!(
        kernels
            .iter()
            .all(|k| k["args"]["device"] == "cuda:0" && k["args"]["emulated"] == true),
        "{events:?}"
    );
}
