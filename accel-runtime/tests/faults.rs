//! The CUDA backend's rare failures, injected (`cuda::with_fault`): NVRTC rejecting a
//! site's kernels and device memory running out at each allocation of a run. Each is an
//! error of its kind naming the site; nothing stays allocated; the site works afterwards.
//! Run on the emulator (the GPU when one is lent runs the same code paths up to the
//! driver calls the faults stand in for).
#![cfg(feature = "cuda")]

use accel_runtime::cuda::{bytes_in_use, with_emulator, with_fault, Fault};
use accel_runtime::prelude::*;
use accel_runtime::ErrorKind;
use std::sync::Mutex;

mod common;

/// The tests read the backend's device-memory count, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn site_of(marker: &str) -> String {
    common::site_of("faults.rs", include_str!("faults.rs"), marker)
}

fn on_the_emulator<R>(f: impl FnOnce() -> R) -> Option<R> {
    common::emulator_present().then(|| with_emulator(f))
}

#[test]
fn a_kernel_nvrtc_rejects_is_a_kernel_compilation_error_in_the_chosen_mode() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let xs: Vec<i64> = (0..1000).collect();
    let run = || try_accelerate!(map(|x| x * 3, &xs)); // [rejected]
    let Some(e) =
        on_the_emulator(|| with_fault(Fault::KernelCompilation, || with_mode(Mode::Cuda, run)))
    else {
        return;
    };
    let e = e.expect_err("the compile fails");
    assert_eq!(e.kind(), ErrorKind::KernelCompilation);
    assert_eq!(e.site(), site_of("[rejected]"));
    assert_eq!(
        e.to_string(),
        format!(
            "accelerate! at {}: NVRTC rejected the generated CUDA C (a bug in accel; \
             ACCEL_DUMP=DIR writes it out):\naccel_site.cu(1): error: injected fault \
             (ACCEL_MODE=cuda); use ACCEL_MODE=cpu, or leave ACCEL_MODE unset to fall back \
             to the CPU",
            site_of("[rejected]")
        )
    );
    // The other modes run the site as ever.
    assert_eq!(with_mode(Mode::Cpu, run).unwrap()[999], 2997);
}

#[test]
fn device_memory_running_out_at_any_allocation_is_an_error_and_frees_the_rest() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let xs: Vec<f64> = (0..5000).map(|i| i as f64).collect();
    let ys: Vec<f64> = xs.iter().map(|x| x * 0.5).collect();
    let run = || try_accelerate!(map2(|x, y| x + y, &xs, &ys)); // [oom]
    let expected: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| x + y).collect();
    let Some(()) = on_the_emulator(|| {
        let before = bytes_in_use();
        // A run allocates a few buffers (inputs, result, error word); fail each in turn.
        let mut failures = 0;
        for n in 0..8 {
            let outcome = with_fault(Fault::OutOfMemoryAfter(n), || with_mode(Mode::Cuda, run));
            match outcome {
                Err(e) => {
                    failures += 1;
                    assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
                    assert_eq!(e.site(), site_of("[oom]"));
                    assert!(
                        e.to_string()
                            .contains("bytes on the GPU: CUDA_ERROR_OUT_OF_MEMORY"),
                        "{e}"
                    );
                }
                // Past the run's last allocation, nothing fails.
                Ok(v) => assert_eq!(v, expected),
            }
            assert_eq!(bytes_in_use(), before, "allocation {n} failed and leaked");
        }
        assert!(failures >= 3, "only {failures} allocations to fail");
        // The site works afterwards, many times, holding no device memory between runs.
        for _ in 0..20 {
            assert_eq!(with_mode(Mode::Cuda, run).unwrap(), expected);
        }
        assert_eq!(bytes_in_use(), before);
    }) else {
        return;
    };
}
