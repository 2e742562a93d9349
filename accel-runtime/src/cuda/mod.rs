//! The CUDA backend (feature `cuda`): a site's program is inlined, typed, fused (as for the
//! CPU backend) and lowered to CUDA C kernels plus a host program ([`codegen`]); NVRTC
//! compiles the kernels to PTX for the GPU's architecture ([`nvrtc`]), the driver loads
//! them ([`device`]), and each run uploads the captured values, evaluates the host program
//! with its launches and copies the result back ([`host`]).
//!
//! PTX is cached in memory per (site, captured types, result type) and on disk under
//! `ACCEL_CACHE_DIR` (or the user's cache directory), keyed by a hash of the generated
//! source (a function of the IR and the types) and the architecture, so a second process
//! does not call NVRTC. `ACCEL_DUMP=DIR` writes each site's CUDA C and PTX.

pub mod check;
pub mod codegen;
pub mod device;
pub mod emulator;
pub mod host;
pub mod nvrtc;

use crate::accel_type::Accel;
use crate::checks::Inspect;
use crate::cpu::abi::{Arena, Marshal, Unmarshal};
use crate::dump::{dump_dir, file_stem, fnv1a, write_file};
use crate::site::{CompileCache, SiteDesc};
use accel_ir::Type;
use device::Kernel;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// A site compiled for the GPU, for one combination of captured types.
pub struct CudaSite {
    program: codegen::Program,
    kernels: Vec<Vec<Kernel>>,
    pub compile_ms: f64,
    /// Whether the PTX came from the disk cache (NVRTC was not called).
    pub from_disk: bool,
}

impl CudaSite {
    /// How many kernels the site has.
    pub fn kernels(&self) -> usize {
        self.kernels.iter().map(Vec::len).sum()
    }
}

/// Whether a GPU and NVRTC are both usable (the default mode then runs sites on the GPU).
pub fn available() -> Result<(), String> {
    let gpu = device::gpu()?;
    if !gpu.is_emulator() && !nvrtc::available() {
        return Err(nvrtc::MISSING.into());
    }
    Ok(())
}

/// Site, captured types, result type, and whether the emulator runs it.
static CACHE: CompileCache<(usize, Vec<Type>, Type, bool), CudaSite> = CompileCache::new();

/// How many times a site was compiled for the GPU in this process, and how many of those
/// called NVRTC (tests check both caches with them).
pub static COMPILATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static NVRTC_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// When set, every launch waits for its kernels and adds their time to [`KERNEL_NANOS`]:
/// benchmarks read the device's time apart from the copies to and from it.
pub static PROFILE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
pub static KERNEL_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The compiled site for these types (compiled once, whichever thread asks first), and
/// whether it came from the in-memory cache.
pub fn compiled(
    site: &'static SiteDesc,
    captures: &[Type],
    result: &Type,
) -> (Result<Arc<CudaSite>, String>, bool) {
    let key = (
        site as *const SiteDesc as usize,
        captures.to_vec(),
        result.clone(),
        device::emulating(),
    );
    CACHE.get(key, || compile(site, captures, result))
}

/// Lowers a site for the GPU: the CPU backend's front (extraction, inlining, typing,
/// fusion), then CUDA C generation.
pub fn lower(
    site: &'static SiteDesc,
    capture_types: &[Type],
    result: &Type,
) -> Result<codegen::Program, String> {
    let (fused, captures) = site.fused(capture_types, result)?;
    codegen::generate(&fused, &captures, result)
}

fn compile(
    site: &'static SiteDesc,
    capture_types: &[Type],
    result: &Type,
) -> Result<Arc<CudaSite>, String> {
    COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let program = lower(site, capture_types, result)?;
    let dump = dump_dir();
    let stem = file_stem(site, &program.source);
    if let Some(dir) = &dump {
        write_file(&dir.join(format!("{stem}.cu")), &program.source)?;
    }
    // Without a GPU, ACCEL_DUMP still gets PTX (for sm_90); the run then fails clearly.
    // The emulator needs no PTX.
    let gpu = device::gpu();
    let emulated = matches!(&gpu, Ok(g) if g.is_emulator());
    let (ptx, from_disk) = if emulated && dump.is_none() {
        (String::new(), false)
    } else {
        let arch = match &gpu {
            Ok(g) if !g.is_emulator() => g.compute_arch(),
            // No GPU to ask: `ACCEL_CUDA_ARCH` (for dumps), else Hopper.
            _ => std::env::var("ACCEL_CUDA_ARCH").unwrap_or_else(|_| "compute_90".to_string()),
        };
        let (ptx, from_disk) = ptx_for(&program.source, &arch)?;
        if let Some(dir) = &dump {
            write_file(&dir.join(format!("{stem}.{arch}.ptx")), &ptx)?;
        }
        (ptx, from_disk)
    };
    let gpu = gpu.map_err(|e| format!("ACCEL_MODE=cuda needs a GPU: {e}"))?;
    let mut kernels = Vec::new();
    for l in &program.launches {
        kernels.push(gpu.load(&program.source, &ptx, &l.kernel_names())?);
    }
    Ok(Arc::new(CudaSite {
        program,
        kernels,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        from_disk,
    }))
}

/// PTX for `source` on `arch`: from the disk cache, else from NVRTC (then cached).
fn ptx_for(source: &str, arch: &str) -> Result<(String, bool), String> {
    let key = format!(
        "{:016x}",
        fnv1a(&[
            source.as_bytes(),
            arch.as_bytes(),
            if nvrtc::fmad() { b"fmad" } else { b"nofmad" },
            env!("CARGO_PKG_VERSION").as_bytes()
        ])
    );
    let file = cache_dir().map(|d| d.join(format!("{key}.{arch}.ptx")));
    if let Some(f) = &file {
        if let Ok(ptx) = std::fs::read_to_string(f) {
            return Ok((ptx, true));
        }
    }
    NVRTC_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ptx = nvrtc::compile(source, arch)?;
    if let Some(f) = &file {
        // A cache that cannot be written is not an error: the next process compiles again.
        let _ = write_file(f, &ptx);
    }
    Ok((ptx, false))
}

/// `ACCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/accel`, else `~/.cache/accel`.
fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("ACCEL_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("accel"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("accel"))
}

/// What one GPU run did, for ACCEL_LOG.
pub struct RunReport {
    pub bytes_in: usize,
    pub bytes_out: usize,
    /// The most device memory the run held at once (captured values included).
    pub peak_bytes: usize,
    pub run_ms: f64,
}

/// Runs a compiled site on the GPU.
pub fn run<R: Accel>(
    c: &CudaSite,
    captures: &[(&str, &dyn Inspect)],
) -> Result<(R, RunReport), String> {
    let start = Instant::now();
    let gpu = device::gpu()?;
    let session = gpu.enter()?;
    let mut m = Marshal::default();
    for (_, v) in captures {
        v.marshal_into(&mut m);
    }
    if let Some(e) = m.error.take() {
        return Err(e);
    }
    let err_buf = session.upload(&[0u8; 32])?;
    let mut run = host::Run {
        session: &session,
        launches: &c.program.launches,
        kernels: &c.kernels,
        keep: Vec::new(),
        err: err_buf.ptr,
        env: HashMap::new(),
        bytes_in: 0,
        bytes_out: 0,
        held: 0,
        peak: 0,
    };
    // Tensors: one device allocation per host buffer, however many views of it.
    let mut roots = Vec::new();
    for &(base, bytes) in &m.tensor_buffers {
        let data: &[u8] = if bytes == 0 {
            &[]
        } else {
            // SAFETY: the marshal holds the buffer's lock for the run; it has `bytes` bytes.
            unsafe { std::slice::from_raw_parts(base as *const u8, bytes) }
        };
        let buf = session.upload(data)?;
        run.bytes_in += bytes;
        roots.push((base, bytes, buf.ptr));
        run.hold(buf);
    }
    let mut at = 0;
    for (name, (_, v)) in c.program.captures.iter().zip(captures) {
        let t = v.ir_type();
        let w = run.upload(&t, &m.words, &mut at, &roots)?;
        run.env.insert(name.clone(), host::HostVal { ty: t, w });
    }
    let value = run.eval(&c.program.host)?;
    run.check_failure()?;
    let mut arena = Arena::default();
    let words = run.download(&value, &mut arena)?;
    // Tensors the kernels wrote go back to their host buffers.
    for &(base, bytes, dev) in &roots {
        if bytes > 0 {
            // SAFETY: the marshal holds the buffer's lock until it drops after this; the
            // buffer has `bytes` bytes and nothing else reads it meanwhile.
            let dst = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, bytes) };
            session.download(dev, dst)?;
            run.bytes_out += bytes;
        }
    }
    let report = RunReport {
        bytes_in: run.bytes_in,
        bytes_out: run.bytes_out,
        peak_bytes: run.peak,
        run_ms: 0.0,
    };
    drop(run);
    drop(err_buf);
    let mut u = Unmarshal {
        words: &words,
        at: 0,
        arena: &mut arena,
    };
    let r = R::unmarshal(&mut u)?;
    drop(m);
    Ok((
        r,
        RunReport {
            run_ms: start.elapsed().as_secs_f64() * 1e3,
            ..report
        },
    ))
}

pub use check::with_kernel_check;
pub use device::with_emulator;
