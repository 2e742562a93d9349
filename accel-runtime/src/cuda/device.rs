//! The GPU: the driver (loaded at run time), device memory, modules and launches. Every
//! call into the driver is in this file. The same interface runs on the emulator
//! ([`super::emulator`]) for tests on machines without a GPU.

use super::emulator::{self, EmuKernel};
use super::staging::{self, Staging};
use cudarc::driver::{result, sys};
use std::cell::Cell;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// A GPU, or the emulator standing in for one.
pub struct Gpu {
    ctx: Option<sys::CUcontext>,
    /// Its ordinal: `cuda:K` names it.
    pub ordinal: u32,
    /// The device's name.
    pub name: String,
    /// Compute capability (major, minor).
    pub arch: (i32, i32),
    /// How many multiprocessors it has.
    pub multiprocessors: u32,
    /// Threads per block of every launch.
    pub threads: u32,
    /// Its lanes: one site runs on a lane at a time (kernels of a site share its error
    /// word and their launches are ordered on the lane's stream); the parts of a split
    /// site may run on several lanes side by side (see [`lanes`]).
    lanes: [Lane; MAX_LANES],
    /// Pinned buffers for large copies, made on first use (or why they could not be).
    staging: Mutex<Option<Result<Staging, String>>>,
}

// SAFETY: a CUDA context handle may be used from any thread once made current there
// (`Gpu::enter` does so before every use); the handle itself is never mutated.
unsafe impl Send for Gpu {}
// SAFETY: as above; shared use is serialised by `lock`.
unsafe impl Sync for Gpu {}

/// The most lanes a GPU has.
pub const MAX_LANES: usize = 4;

/// A stream of a GPU and the lock of the site running on it. Lane 0 is the legacy default
/// stream (every copy and launch as without lanes); the others are non-blocking streams,
/// made on first use, so that one lane's copies run while another's kernels do.
#[derive(Default)]
struct Lane {
    lock: Mutex<()>,
    /// The stream (an address: `CUstream` is a pointer), or why it could not be made.
    stream: OnceLock<Result<usize, String>>,
}

/// How many lanes of each GPU the parts of a split site run on: `ACCEL_CUDA_LANES` (1 to
/// [`MAX_LANES`]; 1 by default until lanes are measured on a GPU). With two, one part's
/// copies overlap another part's kernels on the same GPU.
pub fn lanes() -> Result<usize, String> {
    static LANES: OnceLock<Result<usize, String>> = OnceLock::new();
    LANES
        .get_or_init(|| match std::env::var("ACCEL_CUDA_LANES") {
            Err(_) => Ok(1),
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LANES).contains(n))
                .ok_or_else(|| {
                    format!("ACCEL_CUDA_LANES={v:?} is not a number of lanes from 1 to {MAX_LANES}")
                }),
        })
        .clone()
}

thread_local! {
    static EMULATE: Cell<bool> = const { Cell::new(false) };
    /// The lane of its GPU this thread's sites run on.
    static LANE: Cell<usize> = const { Cell::new(0) };
    /// Whether this thread's large copies may go through pinned buffers (benchmarks
    /// compare both ways).
    static STAGING_ON: Cell<bool> = const { Cell::new(true) };
    static CURRENT: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with the emulator standing in for the GPU on this thread (tests).
pub fn with_emulator<R>(f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&EMULATE, true, f)
}

/// Whether this thread runs on the emulator: under [`with_emulator`], or in a process
/// started with `ACCEL_CUDA_EMULATOR=1` (tests of whole programs).
pub fn emulating() -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    EMULATE.with(Cell::get)
        || *ENV.get_or_init(|| std::env::var("ACCEL_CUDA_EMULATOR").is_ok_and(|v| v == "1"))
}

/// Runs `f` with large copies to the GPU on this thread going directly from the caller's
/// memory, not through pinned buffers (the GPU benchmark compares both).
pub fn without_staging<R>(f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&STAGING_ON, false, f)
}

/// Runs `f` with lane `lane` of its GPU as this thread's (lane 0 otherwise; see
/// [`lanes`]).
pub fn with_lane<R>(lane: usize, f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&LANE, lane.min(MAX_LANES - 1), f)
}

/// Runs `f` with GPU `ordinal` as this thread's GPU (what sites run on; the first GPU
/// otherwise).
pub fn with_gpu<R>(ordinal: u32, f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&CURRENT, ordinal, f)
}

/// How many devices the emulator presents: `ACCEL_CUDA_EMULATOR_DEVICES` (default 1),
/// each with memory of its own.
fn emulated_devices() -> Result<u32, String> {
    static COUNT: OnceLock<Result<u32, String>> = OnceLock::new();
    COUNT
        .get_or_init(|| match std::env::var("ACCEL_CUDA_EMULATOR_DEVICES") {
            Err(_) => Ok(1),
            Ok(v) => v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| (1..=16).contains(&n))
                .ok_or_else(|| {
                    format!(
                        "ACCEL_CUDA_EMULATOR_DEVICES={v:?} is not a number of devices from 1 to 16"
                    )
                }),
        })
        .clone()
}

/// How many GPUs there are (the emulator's devices under it).
pub fn gpu_count() -> Result<u32, String> {
    if emulating() {
        emulated_devices()
    } else {
        Ok(gpus()?.len() as u32)
    }
}

/// This thread's GPU (see [`with_gpu`]), or the emulator's device of that ordinal,
/// initialised on first use, or why there is none.
pub fn gpu() -> Result<&'static Gpu, String> {
    gpu_at(CURRENT.with(Cell::get))
}

/// GPU `ordinal`, initialised on first use, or why there is none.
pub fn gpu_at(ordinal: u32) -> Result<&'static Gpu, String> {
    if emulating() {
        static EMU: OnceLock<Result<Vec<Gpu>, String>> = OnceLock::new();
        let devices = EMU
            .get_or_init(|| {
                if !emulator::available() {
                    return Err(
                        "the emulator needs a C++20 compiler (g++, or ACCEL_EMULATOR_CXX)".into(),
                    );
                }
                Ok((0..emulated_devices()?)
                    .map(|ordinal| Gpu {
                        ctx: None,
                        ordinal,
                        name: format!("emulator {ordinal}"),
                        arch: (9, 0),
                        multiprocessors: 1,
                        threads: 32,
                        lanes: Default::default(),
                        staging: Mutex::new(None),
                    })
                    .collect())
            })
            .as_ref()
            .map_err(|e| e.clone())?;
        return devices.get(ordinal as usize).ok_or_else(|| {
            format!(
                "cuda:{ordinal}: the emulator presents {} device(s) (ACCEL_CUDA_EMULATOR_DEVICES)",
                devices.len()
            )
        });
    }
    let gpus = gpus()?;
    let slot = gpus.get(ordinal as usize).ok_or_else(|| {
        format!(
            "cuda:{ordinal}: the CUDA driver reports {} GPU(s)",
            gpus.len()
        )
    })?;
    slot.get_or_init(|| init(ordinal))
        .as_ref()
        .map_err(|e| e.clone())
}

/// A GPU, initialised on first use (or why it cannot be used).
type GpuSlot = OnceLock<Result<Gpu, String>>;

/// A slot per GPU the driver reports, or why there are none.
fn gpus() -> Result<&'static [GpuSlot], String> {
    static GPUS: OnceLock<Result<Vec<GpuSlot>, String>> = OnceLock::new();
    GPUS.get_or_init(|| {
        // SAFETY: only tries to open the driver library by its candidate names; cudarc's
        // loader panics on first use when it is missing, so this is asked first.
        if !unsafe { sys::is_culib_present() } {
            return Err(
                "no CUDA driver (libcuda.so) was found: this machine has no NVIDIA GPU or driver"
                    .into(),
            );
        }
        result::init().map_err(|e| format!("the CUDA driver failed to start: {e}"))?;
        let count = result::device::get_count().map_err(|e| e.to_string())?;
        if count == 0 {
            return Err("the CUDA driver found no GPU".into());
        }
        Ok((0..count).map(|_| OnceLock::new()).collect())
    })
    .as_deref()
    .map_err(|e| e.clone())
}

/// GPU `ordinal` (the driver is started: see [`gpus`]).
fn init(ordinal: u32) -> Result<Gpu, String> {
    let dev = result::device::get(ordinal as i32).map_err(|e| e.to_string())?;
    let attr = |a| {
        // SAFETY: `dev` came from `device::get`.
        unsafe { result::device::get_attribute(dev, a) }.map_err(|e| e.to_string())
    };
    use sys::CUdevice_attribute::*;
    let arch = (
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    let multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
    let name = result::device::get_name(dev).map_err(|e| e.to_string())?;
    // SAFETY: `dev` came from `device::get`; the primary context is retained for the life
    // of the process.
    let ctx = unsafe { result::primary_ctx::retain(dev) }.map_err(|e| e.to_string())?;
    // Sequences made inside kernels come from the device heap (8 MiB by default); it can
    // only grow before the first kernel that allocates.
    // SAFETY: `ctx` was just retained; setting it current has no other effect.
    unsafe { result::ctx::set_current(ctx) }.map_err(|e| e.to_string())?;
    result::ctx::set_limit(sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE, 1 << 30)
        .map_err(|e| format!("could not size the device heap: {e}"))?;
    Ok(Gpu {
        ctx: Some(ctx),
        ordinal,
        name,
        arch,
        multiprocessors,
        threads: super::codegen::BLOCK,
        lanes: Default::default(),
        staging: Mutex::new(None),
    })
}

/// Device memory, freed on drop.
pub struct DevBuf {
    /// The device address.
    pub ptr: u64,
    /// Its size.
    pub bytes: usize,
    emulated: bool,
    /// The GPU it was allocated on (its ordinal).
    device: u32,
    /// The stream of the lane that allocated it, unless lane 0's (see [`lanes`]): waited
    /// for before the memory is reused, so that a run that stopped early (a failed
    /// launch) leaves no kernel of its own still using memory another lane takes.
    stream: usize,
}

/// Freed device memory kept for the next allocation of the same size on the same GPU: a
/// site called in a loop allocates the same buffers every call, and `cuMemAlloc` and
/// `cuMemFree` of large buffers cost far more than a small kernel's run (`cuMemFree` also
/// waits for the whole device). At most [`CACHE_LIMIT`] bytes are kept; an allocation that
/// fails frees what its GPU keeps and tries again.
static CACHE: Mutex<Vec<(u32, usize, u64)>> = Mutex::new(Vec::new());
static CACHED_BYTES: AtomicUsize = AtomicUsize::new(0);
const CACHE_LIMIT: usize = 4 << 30;

/// What holds device memory beyond a run (kept inputs) gives it up through these when an
/// allocation on a GPU fails, before the allocation is tried again.
static RELEASERS: Mutex<Vec<fn(u32)>> = Mutex::new(Vec::new());

/// Registers `give_up(device)`, called when an allocation on GPU `device` fails (with its
/// context current), to drop what it keeps there.
pub(crate) fn on_memory_pressure(give_up: fn(u32)) {
    let mut releasers = RELEASERS.lock().unwrap_or_else(|e| e.into_inner());
    if !releasers.contains(&give_up) {
        releasers.push(give_up);
    }
}

/// A kept buffer of exactly `bytes` on GPU `device`.
fn cached(device: u32, bytes: usize) -> Option<u64> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let k = cache
        .iter()
        .rposition(|&(d, b, _)| d == device && b == bytes)?;
    CACHED_BYTES.fetch_sub(bytes, Ordering::Relaxed);
    Some(cache.swap_remove(k).2)
}

/// Frees every buffer GPU `device` keeps (its context is current).
fn release_cached(device: u32) {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.retain(|&(d, bytes, ptr)| {
        if d != device {
            return true;
        }
        CACHED_BYTES.fetch_sub(bytes, Ordering::Relaxed);
        // SAFETY: `ptr` came from `malloc_sync` on this device and no `DevBuf` holds it.
        let _ = unsafe { result::free_sync(ptr) };
        false
    });
}

fn emulated_layout(bytes: usize) -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(bytes, 16).expect("a valid layout")
}

/// Bytes of device (or emulated device) memory allocated and not yet freed.
static BYTES_IN_USE: AtomicUsize = AtomicUsize::new(0);
/// Bytes copied to devices since the process started.
static BYTES_UPLOADED: AtomicUsize = AtomicUsize::new(0);

/// Bytes copied from host memory to the devices so far in this process (tests check how
/// often inputs travel).
pub fn bytes_uploaded() -> usize {
    BYTES_UPLOADED.load(Ordering::Relaxed)
}

/// Bytes of device memory the backend holds now (tests check that failing runs free what
/// they allocated).
pub fn bytes_in_use() -> usize {
    BYTES_IN_USE.load(Ordering::Relaxed)
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        BYTES_IN_USE.fetch_sub(self.bytes, Ordering::Relaxed);
        if self.stream != 0 {
            // SAFETY: the lane's stream lives as long as the process; an error here is a
            // failed kernel's, which its run reported.
            let _ = unsafe { result::stream::synchronize(self.stream as sys::CUstream) };
        }
        if !self.emulated && CACHED_BYTES.load(Ordering::Relaxed) + self.bytes <= CACHE_LIMIT {
            CACHED_BYTES.fetch_add(self.bytes, Ordering::Relaxed);
            let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
            cache.push((self.device, self.bytes, self.ptr));
            return;
        }
        if self.emulated {
            // SAFETY: allocated by `Session::alloc` with this layout, freed once, here.
            unsafe { std::alloc::dealloc(self.ptr as *mut u8, emulated_layout(self.bytes)) };
        } else {
            // SAFETY: `ptr` was returned by `malloc_sync` and is freed once, here; no kernel
            // using it is still running (every run synchronises before its buffers drop;
            // for the same reason a kept buffer can be handed out again at once).
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}

/// A loaded kernel.
#[derive(Clone, Copy)]
pub enum Kernel {
    /// A kernel of a loaded module.
    Device(sys::CUfunction),
    /// A kernel the emulator runs.
    Emulated(EmuKernel),
}

// SAFETY: a function handle of a module that is never unloaded is valid in every thread
// that has the context current; emulated kernels are plain function pointers.
unsafe impl Send for Kernel {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Kernel {}

/// The device held for one site's run: its context is current on this thread.
pub struct Session<'g> {
    gpu: &'g Gpu,
    /// The lane's stream: null on lane 0 (the legacy default stream).
    stream: sys::CUstream,
    _guard: MutexGuard<'g, ()>,
}

impl Gpu {
    /// Whether this is the emulator.
    pub fn is_emulator(&self) -> bool {
        self.ctx.is_none()
    }

    /// Takes this thread's lane of the device (see [`with_lane`]) for one run on this
    /// thread.
    pub fn enter(&self) -> Result<Session<'_>, String> {
        let k = LANE.with(Cell::get);
        let lane = &self.lanes[k];
        let guard = lane.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut stream = std::ptr::null_mut();
        if let Some(ctx) = self.ctx {
            // SAFETY: `ctx` is the retained primary context of this device.
            unsafe { result::ctx::set_current(ctx) }.map_err(|e| e.to_string())?;
            if k > 0 {
                let made = lane.stream.get_or_init(|| {
                    result::stream::create(result::stream::StreamKind::NonBlocking)
                        .map(|s| s as usize)
                        .map_err(|e| format!("could not make a stream on the GPU: {e}"))
                });
                stream = made.clone()? as sys::CUstream;
            }
        }
        Ok(Session {
            gpu: self,
            stream,
            _guard: guard,
        })
    }

    /// The PTX architecture of this GPU (`"compute_90"`).
    pub fn compute_arch(&self) -> String {
        format!("compute_{}{}", self.arch.0, self.arch.1)
    }

    /// Loads a site's kernels: from PTX on a GPU, from the CUDA C on the emulator. Modules
    /// stay loaded for the life of the process.
    pub fn load(&self, source: &str, ptx: &str, names: &[String]) -> Result<Vec<Kernel>, String> {
        if self.is_emulator() {
            return Ok(emulator::load(source, names)?
                .into_iter()
                .map(Kernel::Emulated)
                .collect());
        }
        let _s = self.enter()?;
        let image = CString::new(ptx).map_err(|e| e.to_string())?;
        // SAFETY: `image` is a NUL-terminated PTX text, which the driver reads during the
        // call only.
        let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(|e| format!("the driver rejected the PTX: {e}"))?;
        names
            .iter()
            .map(|n| {
                let c = CString::new(n.as_str()).map_err(|e| e.to_string())?;
                // SAFETY: `module` was just loaded and is never unloaded.
                unsafe { result::module::get_function(module, c) }
                    .map(Kernel::Device)
                    .map_err(|e| format!("kernel {n}: {e}"))
            })
            .collect()
    }
}

impl Session<'_> {
    /// The GPU the session runs on.
    pub fn gpu(&self) -> &Gpu {
        self.gpu
    }

    /// Uninitialised device memory.
    pub fn alloc(&self, bytes: usize) -> Result<DevBuf, String> {
        let emulated = self.gpu.is_emulator();
        if bytes == 0 {
            return Ok(DevBuf {
                ptr: 0,
                bytes: 0,
                emulated,
                device: self.gpu.ordinal,
                stream: 0,
            });
        }
        if let Some(message) = super::fault::allocation_failure(bytes) {
            return Err(message);
        }
        let ptr = if emulated {
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { std::alloc::alloc(emulated_layout(bytes)) };
            if p.is_null() {
                return Err(format!("could not allocate {bytes} bytes"));
            }
            p as u64
        } else if let Some(ptr) = cached(self.gpu.ordinal, bytes) {
            ptr
        } else {
            // SAFETY: allocates in the current context (this session's GPU's); the buffer
            // frees itself on drop (or is kept for reuse, see `CACHE`).
            let fresh = || unsafe { result::malloc_sync(bytes) };
            fresh()
                .or_else(|_| {
                    for give_up in RELEASERS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                        give_up(self.gpu.ordinal);
                    }
                    release_cached(self.gpu.ordinal);
                    fresh()
                })
                .map_err(|e| format!("could not allocate {bytes} bytes on the GPU: {e}"))?
        };
        BYTES_IN_USE.fetch_add(bytes, Ordering::Relaxed);
        Ok(DevBuf {
            ptr,
            bytes,
            emulated,
            device: self.gpu.ordinal,
            stream: self.stream as usize,
        })
    }

    /// Device memory holding a copy of `data`.
    pub fn upload(&self, data: &[u8]) -> Result<DevBuf, String> {
        let buf = self.alloc(data.len())?;
        if data.is_empty() {
            return Ok(buf);
        }
        let _traced = Traced::new(self, "copy to device", "copy", data.len() as u64);
        BYTES_UPLOADED.fetch_add(data.len(), Ordering::Relaxed);
        if buf.emulated {
            // SAFETY: `buf` has room for exactly `data.len()` bytes and is not `data`.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.ptr as *mut u8, data.len()) };
        } else if let Some(done) = self.upload_staged(buf.ptr, data) {
            done?;
        } else {
            self.copy_to_device(buf.ptr, data)?;
        }
        Ok(buf)
    }

    /// Copies `data` to device address `dst` through the GPU's pinned buffers when it is
    /// large enough and staging is on and possible; `None` when it should go directly.
    fn upload_staged(&self, dst: u64, data: &[u8]) -> Option<Result<(), String>> {
        if data.len() < staging::STAGED_MIN || !staging::enabled() || !STAGING_ON.with(Cell::get) {
            return None;
        }
        let mut slot = self.gpu.staging.lock().unwrap_or_else(|e| e.into_inner());
        match slot.get_or_insert_with(Staging::new) {
            Ok(s) => Some(s.upload(dst, data, self.stream)),
            Err(_) => None,
        }
    }

    /// Copies `out.len()` bytes from device address `src` (waits for running kernels).
    pub fn download(&self, src: u64, out: &mut [u8]) -> Result<(), String> {
        if out.is_empty() {
            return Ok(());
        }
        let _traced = Traced::new(self, "copy to host", "copy", out.len() as u64);
        if self.gpu.is_emulator() {
            // SAFETY: callers pass an address inside a live buffer with at least
            // `out.len()` bytes after it; emulated device memory is host memory.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, out.as_mut_ptr(), out.len()) };
            return Ok(());
        }
        let failed = |e: result::DriverError| format!("copy from the GPU failed: {e}");
        // SAFETY (both): callers pass an address inside a live buffer with at least
        // `out.len()` bytes after it (a column of a value whose length they read from its
        // words); on a stream of its own the copy is waited for before `out` is returned.
        match self.lane_stream() {
            None => unsafe { result::memcpy_dtoh_sync(out, src) }.map_err(failed),
            Some(s) => unsafe {
                result::memcpy_dtoh_async(out, src, s).map_err(failed)?;
                result::stream::synchronize(s).map_err(failed)
            },
        }
    }

    /// The lane's stream, unless it is the legacy default stream (lane 0).
    fn lane_stream(&self) -> Option<sys::CUstream> {
        (!self.stream.is_null()).then_some(self.stream)
    }

    /// Copies `data` to device address `dst` (room for it in a live buffer), waiting until
    /// the copy is done.
    fn copy_to_device(&self, dst: u64, data: &[u8]) -> Result<(), String> {
        let failed = |e: result::DriverError| format!("copy to the GPU failed: {e}");
        // SAFETY (both): callers pass an address with room for `data.len()` bytes; on a
        // stream of its own the copy is waited for before `data` is given back.
        match self.lane_stream() {
            None => unsafe { result::memcpy_htod_sync(dst, data) }.map_err(failed),
            Some(s) => unsafe {
                result::memcpy_htod_async(dst, data, s).map_err(failed)?;
                result::stream::synchronize(s).map_err(failed)
            },
        }
    }

    /// Copies `data` to device address `dst` inside a live buffer (a tensor element the
    /// host program sets; waits for running kernels).
    pub fn write(&self, dst: u64, data: &[u8]) -> Result<(), String> {
        if data.is_empty() {
            return Ok(());
        }
        BYTES_UPLOADED.fetch_add(data.len(), Ordering::Relaxed);
        if self.gpu.is_emulator() {
            // SAFETY: callers pass an address inside a live buffer with at least
            // `data.len()` bytes after it; emulated device memory is host memory.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len()) };
            return Ok(());
        }
        self.copy_to_device(dst, data)
    }

    /// Writes `bytes` zero bytes at device address `dst` (in order with the kernels
    /// launched before).
    pub fn fill_zero(&self, dst: u64, bytes: usize) -> Result<(), String> {
        if bytes == 0 {
            return Ok(());
        }
        if self.gpu.is_emulator() {
            // SAFETY: callers pass an address inside a live buffer with at least `bytes`
            // bytes after it; emulated device memory is host memory.
            unsafe { std::ptr::write_bytes(dst as *mut u8, 0, bytes) };
            return Ok(());
        }
        // SAFETY (both): as above, on the device; in order on the lane's stream.
        match self.lane_stream() {
            None => unsafe { result::memset_d8_sync(dst, 0, bytes) },
            Some(s) => unsafe { result::memset_d8_async(dst, 0, bytes, s) },
        }
        .map_err(|e| format!("clearing device memory failed: {e}"))
    }

    /// Copies `bytes` bytes from device address `src` to `dst` (distinct buffers; in
    /// order with the kernels launched before).
    pub fn copy_on_device(&self, dst: u64, src: u64, bytes: usize) -> Result<(), String> {
        if bytes == 0 {
            return Ok(());
        }
        let _traced = Traced::new(self, "copy on device", "copy", bytes as u64);
        if self.gpu.is_emulator() {
            // SAFETY: callers pass addresses inside live buffers with at least `bytes`
            // bytes after each, in different buffers.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes) };
            return Ok(());
        }
        // SAFETY (both): as above, on the device; in order on the lane's stream.
        match self.lane_stream() {
            None => unsafe { result::memcpy_dtod_sync(dst, src, bytes) },
            Some(s) => unsafe { result::memcpy_dtod_async(dst, src, bytes, s) },
        }
        .map_err(|e| format!("a copy on the GPU failed: {e}"))
    }

    /// Launches `kernel` on `blocks` blocks of the device's threads per block; every
    /// parameter is one 64-bit word.
    pub fn launch(&self, kernel: Kernel, blocks: u32, params: &[u64]) -> Result<(), String> {
        // On a GPU the span is the launch call (kernels run asynchronously, until the next
        // copy to the host waits for them); the emulator runs the kernel in it.
        let _traced = Traced::new(self, "kernel", "kernel", u64::from(blocks));
        let threads = self.gpu.threads;
        let f = match kernel {
            Kernel::Emulated(f) => {
                f(blocks.max(1), threads, params.as_ptr());
                return Ok(());
            }
            Kernel::Device(f) => f,
        };
        let mut words = params.to_vec();
        let mut ptrs: Vec<*mut c_void> = words
            .iter_mut()
            .map(|w| w as *mut u64 as *mut c_void)
            .collect();
        // SAFETY: the kernel was generated with exactly `params.len()` parameters, each an
        // `unsigned long long`; `ptrs` points into `words`, alive for the call (the driver
        // copies parameters at launch); every device address among the words is live until
        // the run synchronises.
        unsafe {
            result::launch_kernel(
                f,
                (blocks.max(1), 1, 1),
                (threads, 1, 1),
                0,
                self.stream,
                &mut ptrs,
            )
        }
        .map_err(|e| format!("kernel launch failed: {e}"))
    }

    /// The device's copy bandwidth in GB/s (bytes read plus bytes written per second), the
    /// median of `reps` device-to-device copies of `bytes` bytes: the ceiling memory-bound
    /// kernels are measured against.
    pub fn copy_bandwidth(&self, bytes: usize, reps: usize) -> Result<f64, String> {
        if self.gpu.is_emulator() {
            return Err("the emulator has no device memory to measure".into());
        }
        let src = self.alloc(bytes)?;
        let dst = self.alloc(bytes)?;
        let mut times = Vec::new();
        for _ in 0..reps.max(1) + 1 {
            self.synchronize()?;
            let start = std::time::Instant::now();
            // SAFETY: both buffers are live allocations of `bytes` bytes.
            unsafe { result::memcpy_dtod_sync(dst.ptr, src.ptr, bytes) }
                .map_err(|e| format!("device copy failed: {e}"))?;
            self.synchronize()?;
            times.push(start.elapsed().as_secs_f64());
        }
        times.remove(0); // the warm-up
        times.sort_by(|a, b| a.total_cmp(b));
        Ok(2.0 * bytes as f64 / times[times.len() / 2] / 1e9)
    }

    /// Waits for every kernel launched on the lane (on lane 0, on the device).
    pub fn synchronize(&self) -> Result<(), String> {
        if self.gpu.is_emulator() {
            return Ok(());
        }
        match self.lane_stream() {
            None => result::ctx::synchronize(),
            // SAFETY: the lane's stream lives as long as the process.
            Some(s) => unsafe { result::stream::synchronize(s) },
        }
        .map_err(|e| format!("a kernel failed: {e}"))
    }
}

/// A span of the trace (`ACCEL_TRACE`) recorded when dropped: a copy of `amount` bytes or
/// a kernel launch of `amount` blocks, on this device.
struct Traced {
    start: Option<std::time::Instant>,
    name: &'static str,
    category: &'static str,
    amount: u64,
    device: u32,
    emulated: bool,
}

impl Traced {
    fn new(
        session: &Session<'_>,
        name: &'static str,
        category: &'static str,
        amount: u64,
    ) -> Traced {
        Traced {
            start: crate::backend::trace::enabled().then(std::time::Instant::now),
            name,
            category,
            amount,
            device: session.gpu.ordinal,
            emulated: session.gpu.is_emulator(),
        }
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            let unit = if self.category == "copy" {
                "bytes"
            } else {
                "blocks"
            };
            let args = serde_json::json!({
                unit: self.amount,
                "device": format!("cuda:{}", self.device),
                "emulated": self.emulated,
            });
            crate::backend::trace::complete(self.name, self.category, start, args);
        }
    }
}
