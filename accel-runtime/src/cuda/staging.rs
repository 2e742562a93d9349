//! Large copies to the GPU through pinned host memory. A copy from ordinary (pageable)
//! memory makes the driver stage it through pinned buffers of its own, one piece after
//! another; here two pinned buffers of our own take turns, so the CPU fills one while the
//! GPU's copy engine moves the other: on an H100 machine 8.1 GB/s against 6.9 for 256 MiB
//! (`benchmarks/results/h100/gpu.md`). Copies back to the host go directly: through the
//! same buffers they ran at 7.2 GB/s against 11.4. `ACCEL_CUDA_STAGING=0` copies directly
//! both ways.

use cudarc::driver::{result, sys};
use std::ffi::c_void;

/// Copies of fewer bytes go directly (a staged copy's turns cost more than they save).
pub const STAGED_MIN: usize = 1 << 20;
/// Bytes per pinned buffer (two per GPU).
const PIECE: usize = 8 << 20;

/// Whether large copies to the GPU go through pinned buffers (`ACCEL_CUDA_STAGING`,
/// default on).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("ACCEL_CUDA_STAGING").map_or(true, |v| v != "0"))
}

/// One GPU's two pinned buffers and the events that say when the copy engine is done
/// with each.
pub struct Staging {
    buffers: [(*mut u8, sys::CUevent); 2],
}

// SAFETY: the buffers and events belong to one GPU's context and are only used by the
// thread holding that GPU's session (`Gpu::enter`), which makes the context current.
unsafe impl Send for Staging {}

impl Staging {
    /// Two pinned buffers in the current context.
    pub fn new() -> Result<Staging, String> {
        let piece = || -> Result<(*mut u8, sys::CUevent), String> {
            // SAFETY: a fresh pinned allocation of `PIECE` bytes; only written by us.
            let p = unsafe { result::malloc_host(PIECE, 0) }
                .map_err(|e| format!("could not pin {PIECE} bytes of host memory: {e}"))?;
            let e = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| format!("could not create a CUDA event: {e}"))?;
            Ok((p as *mut u8, e))
        };
        Ok(Staging {
            buffers: [piece()?, piece()?],
        })
    }

    /// Copies `data` to device address `dst` (which has room for it) on `stream` (null:
    /// the legacy default stream), returning once the copy is done.
    pub fn upload(&mut self, dst: u64, data: &[u8], stream: sys::CUstream) -> Result<(), String> {
        let failed = |e: result::DriverError| format!("copy to the GPU failed: {e}");
        for (k, piece) in data.chunks(PIECE).enumerate() {
            let (buf, done) = self.buffers[k % 2];
            // SAFETY: `done` was created in this context; waiting for an event never
            // recorded returns at once.
            unsafe { result::event::synchronize(done) }.map_err(failed)?;
            // SAFETY: `buf` holds `PIECE` bytes and no copy reads it any more (waited for
            // above); `piece` is at most `PIECE` bytes of the caller's data.
            let pinned = unsafe {
                std::ptr::copy_nonoverlapping(piece.as_ptr(), buf, piece.len());
                std::slice::from_raw_parts(buf, piece.len())
            };
            // SAFETY: `dst + k * PIECE` has room for `piece.len()` bytes (the caller's
            // buffer holds all of `data`); `pinned` stays untouched until `done` fires.
            unsafe {
                result::memcpy_htod_async(dst + (k * PIECE) as u64, pinned, stream)
                    .map_err(failed)?;
                result::event::record(done, stream).map_err(failed)?;
            }
        }
        for (_, done) in self.buffers {
            // SAFETY: as above.
            unsafe { result::event::synchronize(done) }.map_err(failed)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for (buf, done) in self.buffers {
            // SAFETY: allocated by `Staging::new` and freed once, here; the events were
            // waited for at the end of the last copy.
            unsafe {
                let _ = result::free_host(buf as *mut c_void);
                let _ = result::event::destroy(done);
            }
        }
    }
}
