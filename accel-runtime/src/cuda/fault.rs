//! Failures tests make the CUDA backend meet on purpose: NVRTC rejecting a kernel, the
//! device running out of memory and NVRTC missing on a GPU machine happen rarely or
//! cannot be caused from outside a process, yet
//! `try_accelerate!` must turn each into an error naming the site, with nothing leaked.
//! A fault is set for one thread and one scope, like [`super::with_emulator`].

use crate::backend::scoped::with_cell;
use std::cell::Cell;

/// A failure to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Compiling a site's kernels fails as an NVRTC rejection does.
    KernelCompilation,
    /// Device allocations succeed `n` times, then fail as the driver's out-of-memory does.
    OutOfMemoryAfter(usize),
    /// NVRTC cannot be loaded, and the emulator needs PTX as a GPU does: a site runs only
    /// from embedded kernels.
    NoNvrtc,
}

thread_local! {
    static FAULT: Cell<Option<Fault>> = const { Cell::new(None) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f` with `fault` injected into the CUDA backend on this thread.
///
/// ```
/// use accel_runtime::cuda::{with_fault, Fault};
/// let n = with_fault(Fault::OutOfMemoryAfter(2), || 1 + 1);
/// assert_eq!(n, 2);
/// ```
pub fn with_fault<R>(fault: Fault, f: impl FnOnce() -> R) -> R {
    with_cell(&FAULT, Some(fault), || with_cell(&ALLOCATIONS, 0, f))
}

/// The injected compile failure, if any: NVRTC's message shape.
pub(crate) fn compile_failure() -> Option<String> {
    (FAULT.with(Cell::get) == Some(Fault::KernelCompilation)).then(|| {
        "NVRTC rejected the generated CUDA C (a bug in accel; ACCEL_DUMP=DIR writes it out):\n\
         accel_site.cu(1): error: injected fault"
            .to_string()
    })
}

/// Whether NVRTC is taken away (and the emulator made to need PTX).
pub(crate) fn no_nvrtc() -> bool {
    FAULT.with(Cell::get) == Some(Fault::NoNvrtc)
}

/// The injected allocation failure for an allocation of `bytes`, if any: the driver's
/// message shape.
pub(crate) fn allocation_failure(bytes: usize) -> Option<String> {
    let Some(Fault::OutOfMemoryAfter(n)) = FAULT.with(Cell::get) else {
        return None;
    };
    let done = ALLOCATIONS.with(|c| {
        let done = c.get();
        c.set(done + 1);
        done
    });
    (done >= n).then(|| {
        format!("could not allocate {bytes} bytes on the GPU: CUDA_ERROR_OUT_OF_MEMORY (injected fault)")
    })
}
