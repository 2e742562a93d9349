//! One site across several devices (`ACCEL_DEVICES`, `with_devices`): the CPU and the GPU
//! (the emulator where there is none) take parts of a site from one queue, and the
//! results are the single-device results: the same bit for bit for integers and exact
//! float arithmetic whatever the balancing, within the cpu/cuda tolerance where math
//! functions run on both.
#![cfg(feature = "cuda")]

use accel_runtime::prelude::*;
use accel_runtime::{site_stats, Device, ErrorKind, RanOn};

mod common;

use common::devices::*;

#[test]
fn every_split_operation_agrees_with_one_device_on_integers() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for n in [0usize, 1, 999, 1000, 1001, 7_777] {
            let xs = ints(n, 3);
            let ys = ints(n, 4);
            let expect_map: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| a * 3 - b).collect();
            let expect_sum: i64 = xs.iter().map(|x| x * x % 1000).sum();
            let expect_scan: Vec<i64> = xs
                .iter()
                .scan(0i64, |s, x| {
                    *s += x;
                    Some(*s)
                })
                .collect();
            let expect_filter: Vec<i64> = xs.iter().copied().filter(|x| x % 3 == 0).collect();
            let expect_max = xs.iter().copied().max().unwrap_or(i64::MIN);
            let (m, s, sc, f, mx) = on(&devices, || {
                (
                    accelerate!(map2(|a, b| a * 3 - b, &xs, &ys)),
                    accelerate!(reduce(|a, b| a + b, 0, map(|x| x * x % 1000, &xs))),
                    accelerate!(scan(|a, b| a + b, 0, &xs)),
                    accelerate!(filter(|x| x % 3 == 0, &xs)),
                    accelerate!(reduce(|a: i64, b: i64| a.max(b), i64::MIN, &xs)),
                )
            });
            let on = format!("n = {n} on {devices:?}");
            assert_eq!(m, expect_map, "map2, {on}");
            assert_eq!(s, expect_sum, "reduce, {on}");
            assert_eq!(sc, expect_scan, "scan, {on}");
            assert_eq!(f, expect_filter, "filter, {on}");
            assert_eq!(mx, expect_max, "max, {on}");
        }
    }
}

#[test]
fn float_results_do_not_depend_on_how_many_gpus_took_the_parts() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    // Devices that compute alike: the same bits whatever the balancing.
    let xs: Vec<f64> = common::values(9_999, 5);
    let run = |devices: &[Device]| {
        on(devices, || {
            (
                accelerate!(reduce(|a, b| a + b, 0.0, map(|x: f64| x.exp() * 0.5, &xs))),
                accelerate!(scan(|a, b| a + b, 0.0, &xs)),
                accelerate!(map(|x: f64| x.sin(), &xs)),
            )
        })
    };
    let gpus = device_lists()
        .into_iter()
        .filter(|l| !l.contains(&Device::Cpu));
    let results: Vec<_> = gpus.map(|l| (run(&l), l)).collect();
    for ((r, l), (first, l0)) in results.iter().zip(std::iter::repeat(&results[0])) {
        assert_eq!(
            r.0.to_bits(),
            first.0.to_bits(),
            "reduce on {l:?} and {l0:?}"
        );
        assert!(
            r.1.iter()
                .zip(&first.1)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "scan on {l:?}"
        );
        assert!(
            r.2.iter()
                .zip(&first.2)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "map on {l:?}"
        );
    }
}

#[test]
fn floats_agree_with_one_device_within_the_cpu_cuda_tolerance() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    let xs: Vec<f64> = common::values(5_555, 9);
    let split = on_both(|| {
        (
            accelerate!(map(|x: f64| x.sin() * 2.0 + 1.0, &xs)),
            accelerate!(reduce(|a, b| a + b, 0.0, map(|x: f64| x * x, &xs))),
            accelerate!(scan(|a, b| a + b, 0.0, &xs)),
        )
    });
    let one = with_mode(Mode::Cpu, || {
        (
            accelerate!(map(|x: f64| x.sin() * 2.0 + 1.0, &xs)),
            accelerate!(reduce(|a, b| a + b, 0.0, map(|x: f64| x * x, &xs))),
            accelerate!(scan(|a, b| a + b, 0.0, &xs)),
        )
    });
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()));
    assert_eq!(split.0.len(), one.0.len());
    for (k, (a, b)) in split.0.iter().zip(&one.0).enumerate() {
        assert!(close(*a, *b), "map element {k}: {a} against {b}");
    }
    assert!(
        close(split.1, one.1),
        "reduce: {} against {}",
        split.1,
        one.1
    );
    for (k, (a, b)) in split.2.iter().zip(&one.2).enumerate() {
        assert!(close(*a, *b), "scan element {k}: {a} against {b}");
    }
}

#[test]
fn a_failing_part_reports_the_first_failure_in_index_order() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    // Every index from 2500 on reads past the end: parts 2 to 4 fail, and the site's
    // error is part 2's first one, as on one device.
    let xs: Vec<i64> = (0..5_000).collect();
    let split = on_both(|| try_accelerate!(map(|i: i64| xs[(i * 2) as usize], &xs)));
    let one = with_mode(Mode::Cpu, || {
        try_accelerate!(map(|i: i64| xs[(i * 2) as usize], &xs))
    });
    let (split, one) = (split.unwrap_err(), one.unwrap_err());
    assert_eq!(split.kind(), ErrorKind::IndexOutOfBounds, "{split}");
    // The same message as on one device (after the site's place, which differs).
    let what = |e: &AccelError| e.to_string().split_once(": ").map(|(_, m)| m.to_string());
    assert_eq!(
        what(&split).as_deref(),
        Some("index out of bounds: the len is 5000 but the index is 5000")
    );
    assert_eq!(what(&split), what(&one));
}

#[test]
fn what_does_not_split_runs_on_the_first_device_and_says_so() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    // Each iteration writes a row, but not provably its own (`2_999 - i`).
    let t = Tensor::<i64>::zeros(&[3_000]);
    on_both(|| accelerate!(parallel_loop(3_000, |i| t.set([2_999 - i], i as i64 * 2))));
    assert_eq!(
        t.to_vec(),
        (0..3_000).rev().map(|i| i * 2).collect::<Vec<i64>>()
    );
    let here = common::site_of(
        "devices.rs",
        include_str!("devices.rs"),
        "t.set([2_999 - i], i as i64 * 2)",
    );
    let stats = site_stats();
    let stat = stats
        .iter()
        .find(|s| s.site == here)
        .expect("the site's stats");
    assert_eq!(stat.ran_on, RanOn::Cuda);
}

#[test]
fn a_scatter_writes_every_parts_pairs() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for (n, m) in [(0usize, 4usize), (3_000, 3_001), (5_500, 2_000)] {
            // Distinct indices (a permutation's prefix), some past the end (skipped).
            let is: Vec<usize> = (0..n).map(|k| (k * 7919) % (n.max(m) + 1)).collect();
            let vs: Vec<i64> = ints(n, 13);
            let dest: Vec<i64> = ints(m, 14);
            let mut expect = dest.clone();
            for (&i, &v) in is.iter().zip(&vs) {
                if i < m {
                    expect[i] = v - 1;
                }
            }
            let written = on(&devices, || {
                accelerate!(scatter(&dest, &is, map(|v| v - 1, &vs)))
            });
            assert_eq!(written, expect, "n = {n}, m = {m} on {devices:?}");
        }
    }
}

#[test]
fn histograms_merge_the_parts_bins_in_part_order() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for (n, m) in [(0usize, 5usize), (3_000, 7), (9_999, 300), (2_500, 4_000)] {
            let is: Vec<usize> = (0..n).map(|k| (k * 13 + k / 7) % (m + 3)).collect();
            let vs: Vec<i64> = ints(n, 8);
            let dest: Vec<i64> = ints(m, 9);
            let mut expect = dest.clone();
            let mut most = vec![i64::MIN; m];
            for (&i, &v) in is.iter().zip(&vs) {
                // Past the end: skipped.
                if i < m {
                    expect[i] += v * 2;
                    most[i] = most[i].max(v);
                }
            }
            let (sums, maxima) = on(&devices, || {
                (
                    accelerate!(reduce_by_index(
                        dest.clone(),
                        |a, b| a + b,
                        0,
                        &is,
                        map(|v| v * 2, &vs)
                    )),
                    accelerate!(reduce_by_index(
                        vec![i64::MIN; m],
                        |a: i64, b: i64| a.max(b),
                        i64::MIN,
                        &is,
                        &vs
                    )),
                )
            });
            assert_eq!(sums, expect, "n = {n}, m = {m} on {devices:?}");
            assert_eq!(maxima, most, "n = {n}, m = {m} on {devices:?}");
        }
    }
}

#[test]
fn a_split_site_is_recorded_as_running_on_devices() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    let xs: Vec<i64> = (0..4_000).collect();
    let s = on_both(|| accelerate!(reduce(|a, b| a + b, 0, &xs)));
    assert_eq!(s, 4_000 * 3_999 / 2);
    let here = common::site_of(
        "devices.rs",
        include_str!("devices.rs"),
        "reduce(|a, b| a + b, 0, &xs)))",
    );
    let stats = site_stats();
    let stat = stats
        .iter()
        .find(|s| s.site == here)
        .expect("the site's stats");
    assert_eq!(stat.ran_on, RanOn::Devices);
}

/// The child of `the_trace_shows_each_part_on_its_device`.
#[test]
#[ignore]
fn trace_child() {
    let xs: Vec<i64> = (0..20_000).collect();
    let s = on_both(|| accelerate!(reduce(|a, b| a + b, 0, &xs)));
    println!("sum {s}");
    let ys = on_both(|| accelerate!(map(|x| x * 5, &xs)));
    let right = ys.iter().enumerate().all(|(k, &y)| y == 5 * k as i64);
    println!("map {} right {right}", ys.len());
}

#[test]
fn the_trace_shows_each_part_on_its_device() {
    if !device() {
        return;
    }
    let file =
        std::env::temp_dir().join(format!("accel-devices-trace-{}.json", std::process::id()));
    let mut env = vec![
        ("ACCEL_TRACE", file.to_str().expect("a UTF-8 path")),
        ("ACCEL_DEVICE_CHUNK", "1000"),
    ];
    if !common::gpu_present() {
        env.push(("ACCEL_CUDA_EMULATOR", "1"));
    }
    let (ok, out, err) = common::run_child("trace_child", &env);
    assert!(ok, "{err}");
    assert!(out.contains("sum 199990000"), "{out}");
    let text = std::fs::read_to_string(&file).expect("the trace file");
    let _ = std::fs::remove_file(&file);
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&format!("{text}]")).expect("a JSON array once closed");
    assert!(out.contains("map 20000 right true"), "{out}");
    // The map's parts go straight to their places in its result: a GPU's copied there
    // from the device, the CPU's copied there once it ran (its code writes memory of the
    // run's own); the reduction's combine their partial sums.
    let (map_parts, parts): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) = events
        .iter()
        .filter(|e| e["cat"] == "part")
        .partition(|e| e["args"]["in_place"] == true);
    let mut map_covered = 0;
    for e in &map_parts {
        let a = &e["args"];
        let elements = a["hi"].as_u64().unwrap() - a["lo"].as_u64().unwrap();
        map_covered += elements;
        let copied = if a["device"] == "cpu" {
            8 * elements
        } else {
            0
        };
        assert_eq!(a["copied_bytes"], copied, "{e}");
    }
    assert_eq!(map_covered, 20_000, "{map_parts:?}");
    assert!(map_parts.iter().any(|e| e["args"]["device"] == "cuda:0"));
    assert_eq!(parts.len(), 20, "{parts:?}");
    let mut covered: Vec<(u64, u64)> = parts
        .iter()
        .map(|e| {
            (
                e["args"]["lo"].as_u64().unwrap(),
                e["args"]["hi"].as_u64().unwrap(),
            )
        })
        .collect();
    covered.sort();
    assert_eq!(
        covered,
        (0..20)
            .map(|c| (c * 1000, c * 1000 + 1000))
            .collect::<Vec<_>>()
    );
    // The GPU's thread takes the first part; each event names its device.
    assert!(parts
        .iter()
        .any(|e| e["args"]["device"] == "cuda:0" && e["args"]["lo"] == 0));
    assert!(parts
        .iter()
        .all(|e| e["args"]["device"] == "cuda:0" || e["args"]["device"] == "cpu"));
}

#[test]
fn a_gpu_receives_an_input_read_beside_its_index_once_per_call_and_a_sliced_input_by_parts() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    let gpus = [Device::Cuda(0), Device::Cuda(1)];
    if !runnable(&gpus) {
        eprintln!("[accel tests] SKIPPED: two GPUs: fewer here and no emulator");
        return;
    }
    let n = 8_000usize;
    let xs: Vec<i64> = (0..n as i64).collect();
    let bytes = n * 8;
    // Eight parts over two GPUs. Read beside its index, `xs` goes to each GPU once (not to
    // each part); read at its index, each part receives its own range.
    let before = accel_runtime::cuda::bytes_uploaded();
    let stencil = on(&gpus, || {
        accelerate!(create(xs.len(), |i| xs[i] + xs[(i + 1).min(xs.len() - 1)]))
    });
    let beside = accel_runtime::cuda::bytes_uploaded() - before;
    let before = accel_runtime::cuda::bytes_uploaded();
    let doubled = on(&gpus, || accelerate!(map(|x| x * 2, &xs)));
    let at_index = accel_runtime::cuda::bytes_uploaded() - before;
    assert_eq!(stencil[n - 1], 2 * (n as i64 - 1));
    assert_eq!(stencil[10], 21);
    assert_eq!(doubled[n - 1], 2 * (n as i64 - 1));
    // Besides the inputs, each part uploads its error word (32 bytes).
    let words = 8 * 32;
    assert!(
        beside > bytes && beside <= 2 * bytes + words,
        "{beside} bytes for {bytes}"
    );
    assert_eq!(at_index, bytes + words, "{at_index} bytes for {bytes}");
}

/// The child of `a_mistaken_device_list_is_an_error_naming_the_site`.
#[test]
#[ignore]
fn bad_list_child() {
    let xs: Vec<i64> = (0..10).collect();
    match try_accelerate!(reduce(|a, b| a + b, 0, &xs)) {
        Ok(s) => println!("sum {s}"),
        Err(e) => println!("error {:?}: {e}", e.kind()),
    }
}

#[test]
fn a_mistaken_device_list_is_an_error_naming_the_site() {
    let (ok, out, err) = common::run_child("bad_list_child", &[("ACCEL_DEVICES", "cpu,gpu")]);
    assert!(ok, "{err}");
    let site = common::site_of(
        "devices.rs",
        include_str!("devices.rs"),
        "reduce(|a, b| a + b, 0, &xs)) {",
    );
    assert!(
        out.contains(&format!(
            "error InvalidMode: accelerate! at {site}: ACCEL_DEVICES=\"cpu,gpu\": `gpu` is not a device: use cpu, cuda, cuda:N or all, separated by commas"
        )),
        "{out}"
    );
}

#[test]
fn a_gpu_that_is_not_there_is_named_and_the_site_runs_on_the_next_backend() {
    if !common::emulator_present() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    // The emulator presents three GPUs: `cuda:7` is not one of them. The split does not
    // compile for it; the site runs on the first device's mode (cuda), whose backend
    // cannot use `cuda:7` either, and the default mode falls back to the CPU: right
    // results, and the reason in the site's record.
    let xs: Vec<i64> = (0..5_000).collect();
    let s = accel_runtime::cuda::with_emulator(|| {
        with_devices(&[Device::Cuda(7), Device::Cpu], || {
            accelerate!(reduce(|p, q| p + q, 0, &xs))
        })
    });
    assert_eq!(s, 5_000 * 4_999 / 2);
    let here = common::site_of(
        "devices.rs",
        include_str!("devices.rs"),
        "reduce(|p, q| p + q, 0, &xs)",
    );
    let stats = site_stats();
    let stat = stats
        .iter()
        .find(|s| s.site == here)
        .expect("the site's stats");
    assert_eq!(stat.ran_on, RanOn::Cpu);
    assert!(
        stat.fallbacks
            .iter()
            .any(|f| f.contains("cuda:7: the emulator presents 3 device(s)")),
        "{:?}",
        stat.fallbacks
    );
}

#[test]
fn a_site_of_several_operations_splits_them_one_after_another() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    for devices in device_lists() {
        for n in [1usize, 2_500, 6_001] {
            let xs = ints(n, 11);
            let ys = ints(n, 12);
            let total: i64 = xs.iter().sum();
            let expect_centred: Vec<i64> = xs.iter().map(|x| x * n as i64 - total).collect();
            let kept: Vec<i64> = xs.iter().copied().filter(|x| x % 2 == 0).collect();
            let expect_kept = (kept.iter().sum::<i64>(), kept.len());
            let expect_pair = (
                xs.iter().copied().max().unwrap(),
                ys.iter().copied().min().unwrap(),
            );
            let mut bins = [0i64; 10];
            for x in &xs {
                bins[x.rem_euclid(10) as usize] += 1;
            }
            let expect_busiest = bins.iter().copied().max().unwrap();
            let (centred, kept_sum, pair, busiest) = on(&devices, || {
                (
                    accelerate!({
                        let t = reduce(|a, b| a + b, 0, &xs);
                        map(|x| x * xs.len() as i64 - t, &xs)
                    }),
                    accelerate!({
                        let evens = filter(|x| x % 2 == 0, &xs);
                        (reduce(|a, b| a + b, 0, &evens), evens.len())
                    }),
                    accelerate!((
                        reduce(|a: i64, b: i64| a.max(b), i64::MIN, &xs),
                        reduce(|a: i64, b: i64| a.min(b), i64::MAX, &ys) * 2 / 2
                    )),
                    accelerate!(reduce(
                        |a: i64, b: i64| a.max(b),
                        0,
                        reduce_by_index(
                            vec![0i64; 10],
                            |a, b| a + b,
                            0,
                            map(|x: i64| x.rem_euclid(10) as usize, &xs),
                            map(|_x| 1i64, &xs)
                        )
                    )),
                )
            });
            let at = format!("n = {n} on {devices:?}");
            assert_eq!(centred, expect_centred, "{at}");
            assert_eq!(kept_sum, expect_kept, "{at}");
            assert_eq!(pair, expect_pair, "{at}");
            assert_eq!(busiest, expect_busiest, "{at}");
            // One operation with more after it: a stage, then the rest on the CPU.
            let twice = on(&devices, || {
                accelerate!(reduce(|a, b| a + b, 0, &xs) * 2 + 1)
            });
            assert_eq!(twice, total * 2 + 1, "{at}");
        }
    }
}

#[test]
fn indices_and_values_of_different_lengths_fail_as_on_one_device() {
    if !device() {
        return;
    }
    small_parts();
    let _one = one_at_a_time();
    let is: Vec<usize> = (0..3_000).map(|k| k % 5).collect();
    let vs: Vec<i64> = (0..2_999).collect();
    let dest = vec![0i64; 5];
    let message = |e: AccelError| e.to_string().split_once(": ").map(|(_, m)| m.to_string());
    let split = on_both(|| {
        (
            try_accelerate!(reduce_by_index(dest.clone(), |a, b| a + b, 0, &is, &vs)),
            try_accelerate!(scatter(&dest, &is, &vs)),
        )
    });
    let one = with_mode(Mode::Cpu, || {
        (
            try_accelerate!(reduce_by_index(dest.clone(), |a, b| a + b, 0, &is, &vs)),
            try_accelerate!(scatter(&dest, &is, &vs)),
        )
    });
    let histogram = message(split.0.unwrap_err());
    assert_eq!(
        histogram.as_deref(),
        Some("reduce_by_index lengths differ: 3000 indices vs 2999 values")
    );
    assert_eq!(histogram, message(one.0.unwrap_err()));
    let scattered = message(split.1.unwrap_err());
    assert_eq!(
        scattered.as_deref(),
        Some("scatter lengths differ: 3000 indices vs 2999 values")
    );
    assert_eq!(scattered, message(one.1.unwrap_err()));
}

/// The child of `accel_devices_splits_sites_of_a_whole_process`.
#[test]
#[ignore]
fn environment_child() {
    let xs: Vec<i64> = (0..20_000).collect();
    let s = accelerate!(reduce(|a, b| a + b, 0, map(|x| x * 3, &xs)));
    println!("sum {s}");
}

#[test]
fn accel_devices_splits_sites_of_a_whole_process() {
    if !common::emulator_present() {
        return;
    }
    let env = [
        ("ACCEL_DEVICES", "cuda:0, cuda:1, cpu"),
        ("ACCEL_CUDA_EMULATOR", "1"),
        ("ACCEL_CUDA_EMULATOR_DEVICES", "2"),
        ("ACCEL_DEVICE_CHUNK", "5000"),
        ("ACCEL_LOG", "1"),
    ];
    let (ok, out, err) = common::run_child("environment_child", &env);
    assert!(ok, "{err}");
    assert!(out.contains("sum 599970000"), "{out}");
    let site = common::site_of(
        "devices.rs",
        include_str!("devices.rs"),
        "map(|x| x * 3, &xs)",
    );
    assert!(
        err.contains(&format!("{site}: devices: compiled"))
            && err.contains("(split across cuda:0, cuda:1, cpu)"),
        "{err}"
    );
    assert!(
        err.contains("4 chunks of up to 5000 in 4 parts (cuda:0 "),
        "{err}"
    );
}

// Lanes of a GPU (`ACCEL_CUDA_LANES`): the parts of a split site run on several streams
// of one GPU side by side, so that one part's copies overlap another's kernels; the
// lanes share the GPU's copy of each input, and the results are those of one lane.

/// The child of `two_lanes_of_a_gpu_take_parts_and_share_its_inputs`: a stencil (its input
/// read beside each index, so copied to the GPU whole) and a map, on the GPU and the CPU.
#[test]
#[ignore]
fn lanes_child() {
    let n = 20_000usize;
    let xs: Vec<i64> = (0..n as i64).collect();
    let devices = [Device::Cuda(0), Device::Cpu];
    let before = accel_runtime::cuda::bytes_uploaded();
    let stencil = on(&devices, || {
        accelerate!(create(xs.len(), |i| xs[i] + xs[(i + 1).min(xs.len() - 1)]))
    });
    let uploaded = accel_runtime::cuda::bytes_uploaded() - before;
    let right = (0..n).all(|i| stencil[i] == xs[i] + xs[(i + 1).min(n - 1)]);
    println!("stencil right {right} uploaded {uploaded}");
    // Many parts: on a real GPU beside many cores, both lanes get some.
    let big: Vec<i64> = (0..100_000).collect();
    let tripled = on(&devices, || accelerate!(map(|x| x * 3, &big)));
    let right = tripled.iter().zip(&big).all(|(t, x)| *t == 3 * x);
    println!("map right {right}");
    // The GPU named alone splits across its lanes.
    let less = on(&[Device::Cuda(0)], || accelerate!(map(|x| x - 1, &big)));
    let right = less.iter().zip(&big).all(|(l, x)| *l == x - 1);
    let here = common::site_of(
        "devices.rs",
        include_str!("devices.rs"),
        "map(|x| x - 1, &big)",
    );
    let ran = site_stats()
        .into_iter()
        .find(|s| s.site == here)
        .map(|s| s.ran_on);
    println!("alone right {right} ran on {ran:?}");
}

#[test]
fn two_lanes_of_a_gpu_take_parts_and_share_its_inputs() {
    if !common::emulator_present() && !common::gpu_present() {
        eprintln!("[accel tests] SKIPPED: lanes of a GPU: no GPU and no emulator");
        return;
    }
    let file = std::env::temp_dir().join(format!("accel-lanes-{}.json", std::process::id()));
    let mut env = vec![
        ("ACCEL_CUDA_LANES", "2"),
        ("ACCEL_DEVICE_CHUNK", "1000"),
        ("ACCEL_TRACE", file.to_str().expect("a UTF-8 path")),
    ];
    if !common::gpu_present() {
        env.push(("ACCEL_CUDA_EMULATOR", "1"));
    }
    let (ok, out, err) = common::run_child("lanes_child", &env);
    assert!(ok, "{err}");
    assert!(out.contains("stencil right true"), "{out}");
    assert!(out.contains("map right true"), "{out}");
    assert!(
        out.contains("alone right true ran on Some(Devices)"),
        "{out}"
    );
    let text = std::fs::read_to_string(&file).expect("the trace file");
    let _ = std::fs::remove_file(&file);
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&format!("{text}]")).expect("a JSON array once closed");
    let parts: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "part").collect();
    let on_gpu = |lane: u64| {
        parts
            .iter()
            .filter(|e| e["args"]["device"] == "cuda:0" && e["args"]["lane"] == lane)
            .count()
    };
    assert!(on_gpu(0) > 0 && on_gpu(1) > 0, "{parts:?}");
    assert!(parts
        .iter()
        .all(|e| e["args"]["device"] == "cpu" || e["args"]["device"] == "cuda:0"));
    // The stencil's input went to the GPU once, whichever lane asked first (besides
    // it, each part the GPU ran sent its error word, 32 bytes).
    let uploaded: usize = out
        .split("uploaded ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the bytes uploaded");
    // Two lanes each copying it would make 320000.
    assert!(
        (160_000..200_000).contains(&uploaded),
        "{uploaded} bytes uploaded for a 160000-byte input"
    );
}

/// The child of `a_mistaken_number_of_lanes_is_an_error_naming_the_setting`.
#[test]
#[ignore]
fn bad_lanes_child() {
    let xs: Vec<i64> = (0..20_000).collect();
    let devices = [Device::Cuda(0), Device::Cpu];
    match on(&devices, || try_accelerate!(map(|x| x + 1, &xs))) {
        Ok(v) => println!("ran {}", v.len()),
        Err(e) => println!("error: {e}"),
    }
}

#[test]
fn a_mistaken_number_of_lanes_is_an_error_naming_the_setting() {
    if !common::emulator_present() && !common::gpu_present() {
        eprintln!("[accel tests] SKIPPED: lanes of a GPU: no GPU and no emulator");
        return;
    }
    let mut env = vec![("ACCEL_CUDA_LANES", "9"), ("ACCEL_DEVICE_CHUNK", "1000")];
    if !common::gpu_present() {
        env.push(("ACCEL_CUDA_EMULATOR", "1"));
    }
    let (ok, out, err) = common::run_child("bad_lanes_child", &env);
    assert!(ok, "{err}");
    assert!(
        out.contains("ACCEL_CUDA_LANES=\"9\" is not a number of lanes from 1 to 4"),
        "{out}\n{err}"
    );
}
