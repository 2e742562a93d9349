//! What a site reports through the `log` facade (target `accel`): an application's
//! logger receives the records `ACCEL_LOG=1` prints, with compile times, cache hits and
//! why a cache missed or a site fell back; and the thread pool a site runs on.

use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;
use std::sync::Mutex;

mod common;

/// Every record the test logger received: level, target, message.
static RECORDS: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Recorder;

impl log::Log for Recorder {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        RECORDS.lock().unwrap().push((
            record.level(),
            record.target().to_string(),
            record.args().to_string(),
        ));
    }

    fn flush(&self) {}
}

fn install_logger() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&Recorder).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Info);
    });
}

/// The records about `site` (tests run in parallel and share the logger).
fn records_of(site: &str) -> Vec<(log::Level, String, String)> {
    RECORDS
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, _, m)| m.starts_with(&format!("{site}: ")))
        .cloned()
        .collect()
}

fn site_of(marker: &str) -> String {
    common::site_of("logging.rs", include_str!("logging.rs"), marker)
}

fn sum<T: Accel + Copy + std::ops::Add<Output = T> + Default>(v: &[T]) -> T {
    let zero = T::default();
    with_mode(Mode::Cpu, || accelerate!(reduce(|a, b| a + b, zero, v))) // [sum]
}

#[test]
fn a_logger_receives_compiles_runs_hits_and_why_the_cache_missed() {
    install_logger();
    let site = site_of("[sum]");
    assert_eq!(sum(&[1i64, 2, 3]), 6);
    assert_eq!(sum(&[4i64, 5]), 9);
    assert_eq!(sum(&[0.5f64, 0.25]), 0.75);
    let records = records_of(&site);
    let messages: Vec<&str> = records.iter().map(|(_, _, m)| m.as_str()).collect();
    assert!(
        records
            .iter()
            .all(|(level, target, _)| *level == log::Level::Info && target == "accel"),
        "{records:?}"
    );
    let compiled: Vec<&str> = messages
        .iter()
        .filter(|m| m.contains(": cpu: compiled in "))
        .copied()
        .collect();
    assert_eq!(compiled.len(), 2, "{messages:#?}");
    assert!(
        compiled[0].ends_with("(1 parallel kernel(s)); first run of the site"),
        "{}",
        compiled[0]
    );
    assert!(
        compiled[1]
            .ends_with("; new capture types: `zero` is f64 (was i64), `v` is [f64] (was [i64])"),
        "{}",
        compiled[1]
    );
    assert_eq!(
        messages
            .iter()
            .filter(|m| **m == format!("{site}: cpu: cache hit"))
            .count(),
        1,
        "{messages:#?}"
    );
    let runs: Vec<&str> = messages
        .iter()
        .filter(|m| m.starts_with(&format!("{site}: cpu: ran in ")))
        .copied()
        .collect();
    assert_eq!(runs.len(), 3, "{messages:#?}");
    assert!(
        runs[0].ends_with("32 bytes in, 0 of them copied to marshal; on 1 thread(s)"),
        "{}",
        runs[0]
    );
}

#[test]
fn a_site_in_a_one_thread_pool_runs_on_that_thread_alone() {
    install_logger();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    // Costly elements over many chunks: on a larger pool, helpers would take some.
    let xs: Vec<f64> = (0..1 << 16).map(|i| i as f64).collect();
    let work = |xs: &Vec<f64>| {
        with_mode(Mode::Cpu, || {
            accelerate!(map(
                |x| {
                    let mut s = 0.0;
                    for k in 0..64 {
                        s += (x + k as f64).sqrt();
                    }
                    s
                },
                xs
            )) // [pooled]
        })
    };
    let (threads, ys) = pool.install(|| (accel_runtime::num_threads(), work(&xs)));
    assert_eq!(threads, 1);
    let expected: Vec<f64> = xs
        .iter()
        .map(|x| (0..64).map(|k| (x + k as f64).sqrt()).sum())
        .collect();
    assert_eq!(ys, expected);
    let site = site_of("[pooled]");
    let runs: Vec<String> = records_of(&site)
        .into_iter()
        .map(|(_, _, m)| m)
        .filter(|m| m.contains(": cpu: ran in "))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].ends_with("on 1 thread(s)"), "{}", runs[0]);
}

#[test]
#[ignore = "run in a child process by the tests below, with its environment set"]
fn child_reports_threads_and_runs_a_site() {
    install_logger();
    println!("threads outside {}", accel_runtime::num_threads());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(5)
        .build()
        .unwrap();
    println!(
        "threads in a pool of 5 {}",
        pool.install(accel_runtime::num_threads)
    );
    let v: Vec<i64> = (1..=100).collect();
    match try_accelerate!(reduce(|a, b| a + b, 0, &v)) {
        Ok(s) => println!("sum {s}"),
        Err(e) => println!("error {:?}: {e}", e.kind()),
    }
    for (level, target, message) in RECORDS.lock().unwrap().iter() {
        println!("record {level} {target} {message}");
    }
}

#[test]
fn accel_num_threads_sizes_the_pool_sites_use_outside_a_users_pool() {
    let (ok, out, err) = common::run_child(
        "child_reports_threads_and_runs_a_site",
        &[("ACCEL_NUM_THREADS", "3"), ("ACCEL_MODE", "cpu")],
    );
    assert!(ok, "{err}");
    assert!(out.contains("threads outside 3\n"), "{out}");
    assert!(out.contains("threads in a pool of 5 5\n"), "{out}");
    assert!(out.contains("sum 5050\n"), "{out}");
}

#[test]
#[ignore = "run by its parent test in a child process"]
fn child_runs_a_long_site_alone() {
    install_logger();
    let v: Vec<i64> = (1..=1_000_000).collect();
    let s = accelerate!(reduce(|a, b| a + b, 0, &v)); // alone
    println!("threads {} sum {s}", accel_runtime::num_threads());
    for (_, _, message) in RECORDS.lock().unwrap().iter() {
        println!("record {message}");
    }
}

#[test]
fn one_thread_runs_every_chunk_of_a_long_launch_on_the_calling_thread() {
    // `ACCEL_NUM_THREADS=1`: the site runs on the caller (a pool of one thread would only
    // hand it over and back), still in many chunks, and no other thread joins.
    let (ok, out, err) = common::run_child(
        "child_runs_a_long_site_alone",
        &[
            ("ACCEL_NUM_THREADS", "1"),
            ("ACCEL_MODE", "cpu"),
            ("ACCEL_LOG", "1"),
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("threads 1 sum 500000500000\n"), "{out}");
    let site = site_of("// alone");
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("record {site}: cpu: ran in"))
                && l.ends_with("on 1 thread(s)")),
        "{out}"
    );
}

#[test]
fn a_bad_thread_count_is_an_error_naming_the_site() {
    let (ok, out, err) = common::run_child(
        "child_reports_threads_and_runs_a_site",
        &[("ACCEL_NUM_THREADS", "many"), ("ACCEL_MODE", "cpu")],
    );
    assert!(ok, "{err}");
    let site = site_of("match try_accelerate!");
    assert!(
        out.contains(&format!(
            "error {:?}: accelerate! at {site}: ACCEL_NUM_THREADS=`many` is not a number of \
             threads: use a whole number from 1 (or leave it unset to use every core)\n",
            ErrorKind::InvalidMode
        )),
        "{out}"
    );
}

#[test]
fn with_a_logger_installed_accel_log_prints_nothing_itself_and_fallbacks_are_warnings() {
    // No mode chosen: the default tries the backends in order and says why one is not
    // used (warnings); the site compiles on the CPU.
    let (ok, out, err) = common::run_child(
        "child_reports_threads_and_runs_a_site",
        &[("ACCEL_LOG", "1")],
    );
    assert!(ok, "{err}");
    assert!(!err.contains("[accel]"), "{err}");
    let site = site_of("match try_accelerate!");
    assert!(
        out.contains(&format!("record INFO accel {site}: cpu: compiled in ")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "record INFO accel {site}: program of 0 function(s)"
        )),
        "{out}"
    );
    #[cfg(feature = "cuda")]
    if !common::gpu_present() {
        assert!(
            out.contains("record WARN accel the CUDA backend is not used: "),
            "{out}"
        );
    }
}
