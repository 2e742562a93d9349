//! Every corpus program at its test size: the rayon form and the accel form in every mode
//! (debug, cpu, and with the `cuda` feature the cuda mode on a GPU or the emulator) agree
//! with the sequential form. The cpu mode is strict: a site the CPU backend cannot compile
//! fails here instead of running sequentially.

use accel_corpus::{programs, Case, Form, Scale};
use accel_runtime::prelude::*;

fn message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The accel form in `mode`, checked; a failure names the program and the mode.
fn accel_agrees(name: &str, case: &dyn Case, want: &dyn std::any::Any, mode: Mode) {
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        with_mode(mode, || case.run(Form::Accel))
    }))
    .unwrap_or_else(|e| panic!("{name} in {mode} mode failed: {}", message(e)));
    if let Err(e) = case.check(&*got, want) {
        panic!("{name} in {mode} mode: {e}");
    }
}

/// The cuda mode: on the GPU when there is one, else on the emulator; a site the CUDA
/// backend cannot compile yet is reported visibly (the default mode runs it on the CPU).
#[cfg(feature = "cuda")]
fn cuda_agrees(name: &str, case: &dyn Case, want: &dyn std::any::Any) -> Option<String> {
    use accel_runtime::cuda;
    let run = || with_mode(Mode::Cuda, || case.run(Form::Accel));
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if cuda::available().is_ok() {
            Some(run())
        } else if cuda::emulator::available() {
            Some(cuda::with_emulator(run))
        } else {
            None
        }
    }));
    match got {
        Ok(None) => Some(format!(
            "{name}: SKIPPED in cuda mode: no GPU and no emulator"
        )),
        Ok(Some(got)) => {
            if let Err(e) = case.check(&*got, want) {
                panic!("{name} in cuda mode: {e}");
            }
            None
        }
        Err(e) => {
            let m = message(e);
            if m.contains("the cuda backend cannot compile") {
                Some(format!("{name}: cuda: {m}"))
            } else {
                panic!("{name} in cuda mode failed: {m}");
            }
        }
    }
}

/// One program in every mode; panics naming the first disagreement.
fn agrees(name: &str, case: &dyn Case) -> Option<String> {
    let want = case.run(Form::Sequential);
    if let Err(e) = case.check(&*case.run(Form::Rayon), &*want) {
        panic!("{name}: the rayon form: {e}");
    }
    if let Some(out) = case.try_run(Form::Library) {
        if let Err(e) = case.check(&*out, &*want) {
            panic!("{name}: the library: {e}");
        }
    }
    accel_agrees(name, case, &*want, Mode::Debug);
    // With the CUDA backend built, the cpu run also compiles every kernel the site would
    // launch on a GPU (NVRTC + ptxas for sm_80 and sm_90).
    #[cfg(feature = "cuda")]
    accel_runtime::cuda::with_kernel_check(|| accel_agrees(name, case, &*want, Mode::Cpu));
    #[cfg(not(feature = "cuda"))]
    accel_agrees(name, case, &*want, Mode::Cpu);
    #[cfg(feature = "cuda")]
    return cuda_agrees(name, case, &*want);
    #[cfg(not(feature = "cuda"))]
    None
}

/// Every program (or those `CORPUS_ONLY=NAME[,NAME..]` names); all of them run, and the
/// failures are listed together.
#[test]
fn every_program_agrees_in_every_mode() {
    let only: Option<Vec<String>> = std::env::var("CORPUS_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let (mut notes, mut failures) = (Vec::new(), Vec::new());
    for p in programs() {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == p.name))
        {
            continue;
        }
        let case = (p.make)(Scale::Test);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| agrees(p.name, &*case))) {
            Ok(note) => notes.extend(note),
            Err(e) => failures.push(message(e)),
        }
    }
    for n in &notes {
        eprintln!("[accel corpus] {n}");
    }
    assert!(
        failures.is_empty(),
        "{} program(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn names_are_unique() {
    let all = programs();
    for (k, p) in all.iter().enumerate() {
        assert!(
            all[k + 1..].iter().all(|q| q.name != p.name),
            "{} twice",
            p.name
        );
    }
}
