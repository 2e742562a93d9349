//! Build-time kernels: running sites with `ACCEL_RECORD` writes the site record, the
//! build-time generator turns it into a bundle of PTX (or fails naming the site), and a
//! registered bundle serves the sites it holds, while those it misses (not recorded, or
//! recorded before their program changed) compile at run time with the reason logged.
//! The sites run on the emulator (the GPU, when one is lent, runs the same lookups).
#![cfg(feature = "cuda")]

use accel_runtime::build;
use accel_runtime::cuda::{bundle, nvrtc, with_emulator, with_fault, Fault};
use accel_runtime::prelude::*;
use accel_runtime::record::{self, Record};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod common;

fn site_of(marker: &str) -> String {
    common::site_of("bundle.rs", include_str!("bundle.rs"), marker)
}

fn scaled_sum(v: &[f64], k: f64) -> f64 {
    accelerate!(reduce(|a, b| a + b, 0.0, map(|x| x * k, v))) // [scaled sum]
}

fn doubled(v: &[f64]) -> Vec<f64> {
    accelerate!(map(|x| x * 2.0, v)) // [doubled]
}

fn plus_three(v: &[f64]) -> Vec<f64> {
    accelerate!(map(|x| x + 3.0, v)) // [plus three]
}

fn squares(v: &[i64]) -> Vec<i64> {
    accelerate!(map(|x| x * x, v)) // [squares]
}

fn halved(v: &[f64]) -> Vec<f64> {
    accelerate!(map(|x| x / 2.0, v)) // [halved]
}

fn negated(v: &[i64]) -> Result<Vec<i64>, accel_runtime::AccelError> {
    try_accelerate!(map(|x| -x, v)) // [negated]
}

fn inputs() -> (Vec<f64>, Vec<i64>) {
    let ints = common::noise(1000, 7);
    (ints.iter().map(|&i| i as f64 / 8.0).collect(), ints)
}

/// Runs the four sites and checks their values (what the record is made from).
fn run_the_sites() {
    let (v, ints) = inputs();
    assert_eq!(scaled_sum(&v, 0.5), v.iter().map(|x| x * 0.5).sum::<f64>());
    assert_eq!(doubled(&v), v.iter().map(|x| x * 2.0).collect::<Vec<_>>());
    assert_eq!(
        plus_three(&v),
        v.iter().map(|x| x + 3.0).collect::<Vec<_>>()
    );
    assert_eq!(
        squares(&ints),
        ints.iter().map(|x| x * x).collect::<Vec<_>>()
    );
}

/// Runs the two sites the test with NVRTC taken away uses.
fn run_the_sites_without_nvrtc() {
    let (v, ints) = inputs();
    assert_eq!(halved(&v), v.iter().map(|x| x / 2.0).collect::<Vec<_>>());
    assert_eq!(
        negated(&ints).unwrap(),
        ints.iter().map(|x| -x).collect::<Vec<_>>()
    );
}

#[test]
#[ignore = "run by the tests below in a child process"]
fn child_runs_the_sites() {
    run_the_sites();
    run_the_sites_without_nvrtc();
}

#[test]
#[ignore = "run by the tests below in a child process"]
fn child_generates_kernels() {
    let record = std::env::var("ACCEL_TEST_RECORD").expect("the record to generate from");
    build::kernels(record).archs(&["compute_90"]).generate();
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("accel-bundle-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records the four sites into `path` by running them in a child process (cpu mode).
fn record_into(path: &Path) {
    let (ok, out, err) = common::run_child(
        "child_runs_the_sites",
        &[
            ("ACCEL_RECORD", path.to_str().unwrap()),
            ("ACCEL_MODE", "cpu"),
        ],
    );
    assert!(ok, "{out}\n{err}");
}

/// Runs `generate()` on `record` in a child process, as build.rs would, with `OUT_DIR` a
/// fresh folder in `dir`: (success, stdout, stderr, OUT_DIR).
fn generate_in_child(dir: &Path, record: &Path) -> (bool, String, String, PathBuf) {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (ok, stdout, err) = common::run_child(
        "child_generates_kernels",
        &[
            ("ACCEL_TEST_RECORD", record.to_str().unwrap()),
            ("OUT_DIR", out.to_str().unwrap()),
        ],
    );
    (ok, stdout, err, out)
}

fn sorted(mut v: Vec<(String, String)>) -> Vec<(String, String)> {
    v.sort();
    v
}

#[test]
fn running_sites_records_each_site_and_signature_once() {
    let dir = scratch("record");
    let path = dir.join("sites.json");
    record_into(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let r = Record::read(&path).unwrap();
    let entries: Vec<(String, String)> = r
        .sites
        .iter()
        .map(|e| (e.site.clone(), e.signature.clone()))
        .collect();
    assert_eq!(
        entries,
        sorted(vec![
            (site_of("[scaled sum]"), "(k: f64, v: [f64]) -> f64".into()),
            (site_of("[doubled]"), "(v: [f64]) -> [f64]".into()),
            (site_of("[plus three]"), "(v: [f64]) -> [f64]".into()),
            (site_of("[squares]"), "(v: [i64]) -> [i64]".into()),
            (site_of("[halved]"), "(v: [f64]) -> [f64]".into()),
            (site_of("[negated]"), "(v: [i64]) -> [i64]".into()),
        ])
    );
    for e in &r.sites {
        assert_eq!(e.program_hash, record::program_hash(&e.program));
    }
    // Recording the same runs again changes nothing: the file is stable under review.
    record_into(&path);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether NVRTC is here to compile a bundle's PTX; says so, visibly, when not.
fn nvrtc_present() -> bool {
    let present = nvrtc::available();
    if !present {
        eprintln!("[accel tests] SKIPPED: bundles with PTX: NVRTC was not found");
    }
    present
}

#[test]
fn the_bundle_holds_ptx_of_every_recorded_site_for_each_architecture() {
    if !nvrtc_present() {
        return;
    }
    let dir = scratch("generate");
    let path = dir.join("sites.json");
    record_into(&path);
    let b = build::kernels(&path)
        .archs(&["compute_80", "compute_90"])
        .bundle()
        .unwrap();
    assert!(b.compiled);
    let record = Record::read(&path).unwrap();
    assert_eq!(b.sites.len(), record.sites.len());
    for (s, e) in b.sites.iter().zip(&record.sites) {
        assert_eq!((&s.site, &s.signature), (&e.site, &e.signature));
        let archs: Vec<&str> = s.ptx.iter().map(|p| p.arch.as_str()).collect();
        assert_eq!(archs, ["compute_80", "compute_90"]);
        for p in &s.ptx {
            assert!(p.ptx.contains(".visible .entry accel_"), "{}", p.ptx);
            assert!(p.ptx.contains(&format!(".target sm_{}", &p.arch[8..])));
        }
    }
    // generate(), as build.rs calls it: the bundle in OUT_DIR, cargo told what to watch.
    let (ok, stdout, err, out) = generate_in_child(&dir, &path);
    assert!(ok, "{stdout}\n{err}");
    assert!(stdout.contains(&format!("cargo:rerun-if-changed={}\n", path.display())));
    let written = std::fs::read_to_string(out.join(bundle::FILE_NAME)).unwrap();
    let written: bundle::Bundle = serde_json::from_str(&written).unwrap();
    assert_eq!(written.sites.len(), record.sites.len());
    assert!(written.sites.iter().all(|s| s.ptx.len() == 1));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_site_whose_kernels_do_not_compile_fails_the_build_naming_it() {
    let dir = scratch("failure");
    let path = dir.join("sites.json");
    record_into(&path);
    let record = Record::read(&path).unwrap();
    // NVRTC rejecting the kernels (injected): the error names a recorded site.
    let e = with_fault(Fault::KernelCompilation, || build::kernels(&path).bundle()).unwrap_err();
    let named = record
        .sites
        .iter()
        .find(|s| e.starts_with(&format!("{} ({}): ", s.site, s.signature)));
    assert!(named.is_some(), "{e}");
    assert!(e.contains("NVRTC rejected the generated CUDA C"), "{e}");
    // An entry edited by hand: build.rs exits with an error naming it.
    let mut edited = record.clone();
    edited.sites[1].program_hash = "0000000000000000".into();
    std::fs::write(&path, edited.to_text()).unwrap();
    let (ok, stdout, err, out) = generate_in_child(&dir, &path);
    assert!(!ok, "{stdout}");
    assert!(
        err.contains(&format!(
            "error: {} ({}): the record's entry does not match its hash (edited by hand?): \
             record the site again\n",
            edited.sites[1].site, edited.sites[1].signature
        )),
        "{err}"
    );
    assert!(!out.join(bundle::FILE_NAME).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every record the test logger received.
static RECORDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Recorder;

impl log::Log for Recorder {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        RECORDS.lock().unwrap().push(record.args().to_string());
    }

    fn flush(&self) {}
}

/// The lines logged about `site` by the cuda backend.
fn cuda_lines(site: &str) -> Vec<String> {
    let prefix = format!("{site}: cuda: ");
    RECORDS
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| m.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// Replaces the float literal `from` in a program's JSON by `to`.
fn edit_literal(v: &mut serde_json::Value, from: f64, to: f64) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::Array(lit)) = m.get_mut("Float") {
                if lit[0].as_f64() == Some(from) {
                    lit[0] = to.into();
                }
            }
            m.values_mut().for_each(|x| edit_literal(x, from, to));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| edit_literal(x, from, to)),
        _ => {}
    }
}

#[test]
fn embedded_kernels_serve_recorded_sites_and_misses_say_why() {
    if !common::emulator_present() || !nvrtc_present() {
        return;
    }
    log::set_logger(&Recorder).expect("no other logger in this test binary");
    log::set_max_level(log::LevelFilter::Info);
    let dir = scratch("embedded");
    let path = dir.join("sites.json");
    record_into(&path);
    let mut record = Record::read(&path).unwrap();
    // `squares` and `negated` were not recorded; `plus three` was recorded before it read
    // `x + 4.0`.
    record
        .sites
        .retain(|e| e.site != site_of("[squares]") && e.site != site_of("[negated]"));
    let stale = record
        .sites
        .iter_mut()
        .find(|e| e.site == site_of("[plus three]"))
        .unwrap();
    let mut program = serde_json::to_value(&stale.program).unwrap();
    edit_literal(&mut program, 3.0, 4.0);
    stale.program = serde_json::from_value(program).unwrap();
    stale.program_hash = record::program_hash(&stale.program);
    std::fs::write(&path, record.to_text()).unwrap();
    let b = build::kernels(&path)
        .archs(&["compute_90"])
        .bundle()
        .unwrap();
    bundle::register(&serde_json::to_string(&b).unwrap());

    // With NVRTC taken away (the emulator then needs PTX as a GPU does), a recorded site
    // runs from the bundle and one not recorded fails, naming itself and the remedy.
    let (v, ints) = inputs();
    let (served, failed) = with_fault(Fault::NoNvrtc, || {
        with_emulator(|| with_mode(Mode::Cuda, || (halved(&v), negated(&ints))))
    });
    assert_eq!(served, v.iter().map(|x| x / 2.0).collect::<Vec<_>>());
    assert!(cuda_lines(&site_of("[halved]"))[0].contains("PTX from the embedded bundle"));
    assert_eq!(
        failed.unwrap_err().to_string(),
        format!(
            "accelerate! at {}: its kernels are not in the embedded bundle (the site was not \
             recorded with the types (v: [i64]) -> [i64]) and NVRTC is not available to \
             compile them: record the site (run with ACCEL_RECORD=accel-sites.json), rebuild \
             so that build.rs embeds its kernels, or install NVRTC (ACCEL_MODE=cuda); {}",
            site_of("[negated]"),
            "use ACCEL_MODE=cpu, or leave ACCEL_MODE unset to fall back to the CPU"
        )
    );

    // Served or not, every site computes what it should (the stale kernels are not used).
    with_emulator(|| with_mode(Mode::Cuda, run_the_sites));
    for marker in ["[scaled sum]", "[doubled]"] {
        let lines = cuda_lines(&site_of(marker));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].contains("kernel(s); PTX from the embedded bundle); first run of the site"),
            "{lines:?}"
        );
    }
    let stale = cuda_lines(&site_of("[plus three]"));
    assert_eq!(
        stale[0],
        "not in the embedded kernel bundle: the record is stale: the site's program changed \
         since it was recorded"
    );
    assert!(!stale[1].contains("embedded bundle"), "{stale:?}");
    let missing = cuda_lines(&site_of("[squares]"));
    assert_eq!(
        missing[0],
        "not in the embedded kernel bundle: the site was not recorded with the types \
         (v: [i64]) -> [i64]"
    );
    bundle::clear();
    std::fs::remove_dir_all(&dir).unwrap();
}
