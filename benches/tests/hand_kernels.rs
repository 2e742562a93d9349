//! The GPU suite's hand-written reference kernel compiles (NVRTC) and assembles (ptxas)
//! for the architectures accel targets, so a lent GPU's time is not lost to a typo.
#![cfg(feature = "cuda")]

use accel_runtime::cuda::nvrtc;

#[test]
fn the_hand_written_black_scholes_kernel_compiles() {
    if !nvrtc::available() || nvrtc::ptxas_path().is_none() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "[accel tests] SKIPPED: the hand-written kernel check needs NVRTC and ptxas"
        );
        return;
    }
    for (compute, sm) in [("compute_80", "sm_80"), ("compute_90", "sm_90")] {
        let ptx = nvrtc::compile_with(accel_bench::HAND_BLACK_SCHOLES, compute, true)
            .expect("the hand-written kernel compiles");
        let report = nvrtc::assemble(&ptx, sm).expect("and assembles");
        assert_eq!(report.len(), 1);
        assert_eq!(report[0].kernel, "black_scholes");
        assert_eq!(report[0].spill_stores, 0);
    }
}
