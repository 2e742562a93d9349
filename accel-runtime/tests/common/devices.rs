//! Helpers of the tests that split sites across devices (`devices*.rs`).

use accel_runtime::prelude::*;
use accel_runtime::Device;

/// How many real GPUs there are (0 without a GPU).
pub fn real_gpus() -> u32 {
    if super::gpu_present() {
        accel_runtime::cuda::gpu_count().unwrap_or(1)
    } else {
        0
    }
}

/// How many GPUs a list names (the highest ordinal's count).
pub fn gpus_named(devices: &[Device]) -> u32 {
    devices
        .iter()
        .filter_map(|d| match d {
            Device::Cuda(k) => Some(k + 1),
            Device::Cpu => None,
        })
        .max()
        .unwrap_or(0)
}

/// Whether the list can run here: on real GPUs, or on the emulator's three.
pub fn runnable(devices: &[Device]) -> bool {
    gpus_named(devices) <= real_gpus() || (gpus_named(devices) <= 3 && super::emulator_present())
}

/// Runs `f` on `devices`: on the real GPUs where there are as many as the list names,
/// else on the emulator's three.
pub fn on<R>(devices: &[Device], f: impl FnOnce() -> R) -> R {
    if gpus_named(devices) <= real_gpus() {
        with_devices(devices, f)
    } else {
        accel_runtime::cuda::with_emulator(|| with_devices(devices, f))
    }
}

/// Runs `f` on the GPU (or the emulator) and the CPU together. The GPU comes first: this
/// thread drives it and takes the first part, the CPU's thread starts after it, so both
/// run parts.
pub fn on_both<R>(f: impl FnOnce() -> R) -> R {
    on(&[Device::Cuda(0), Device::Cpu], f)
}

/// Whether there is a GPU or the emulator to run on (says visibly when not). Lists of
/// more GPUs than the machine has run on the emulator's three, where it is present.
pub fn device() -> bool {
    super::gpu_present() || super::emulator_present()
}

/// The lists of devices the differential tests run on: one to three GPUs (the emulator's
/// where there are fewer), with and without the CPU.
pub fn device_lists() -> Vec<Vec<Device>> {
    let mut lists = Vec::new();
    for k in 1..=3 {
        let some: Vec<Device> = (0..k).map(Device::Cuda).collect();
        lists.push([some.clone(), vec![Device::Cpu]].concat());
        if k > 1 {
            lists.push(some);
        }
    }
    lists.retain(|l| runnable(l));
    lists
}

/// The tests of this file one at a time: they count the bytes copied to the devices, and
/// the emulator's devices are busy enough with one.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Small parts, so that sites of a few thousand elements have many, and three emulated
/// GPUs (both set before any site runs: each is read once per process).
pub fn small_parts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once, before this test process's first site reads them.
    ONCE.call_once(|| unsafe {
        std::env::set_var("ACCEL_DEVICE_CHUNK", "1000");
        std::env::set_var("ACCEL_CUDA_EMULATOR_DEVICES", "3");
    });
}

pub fn ints(n: usize, seed: u64) -> Vec<i64> {
    super::noise(n, seed)
}
