//! The CUDA backend (feature `cuda`): the front end's fused program is lowered to CUDA C
//! kernels plus a host program ([`codegen`]); NVRTC
//! compiles the kernels to PTX for the GPU's architecture ([`nvrtc`]), the driver loads
//! them ([`device`]), and each run uploads the captured values, evaluates the host program
//! with its launches and copies the result back ([`host`]).
//!
//! PTX is cached in memory per (site, captured types, result type) and on disk under
//! `ACCEL_CACHE_DIR` (or the user's cache directory), keyed by a hash of the generated
//! source (a function of the IR and the types) and the architecture, so a second process
//! does not call NVRTC. `ACCEL_DUMP=DIR` writes each site's CUDA C and PTX.

pub mod bundle;
mod c;
pub mod check;
pub mod codegen;
pub mod device;
pub mod emulator;
pub mod fault;
pub mod host;
pub(crate) mod inputs;
pub mod nvrtc;
mod staging;

use crate::backend::abi::{Arena, Marshal};
use crate::backend::cache::CompileCache;
use crate::backend::dump::{dump_dir, file_stem, write_file};
use crate::backend::log;
use crate::backend::{Backend, Captures, CompiledSite, FrontEnd, FrontEndFn, Run, SiteKey};
use accel_ir::Type;
use device::Kernel;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// The CUDA backend (`ACCEL_MODE=cuda`).
pub struct CudaBackend;

/// Each launch's loaded kernels.
type Kernels = Vec<Vec<Kernel>>;

/// A site compiled for the GPU, for one combination of captured types.
pub struct CudaSite {
    program: codegen::Program,
    /// Its PTX (empty on the emulator), which each GPU loads on the site's first run there.
    ptx: String,
    /// Each launch's kernels, per GPU that loaded them (by ordinal).
    loaded: std::sync::Mutex<Vec<(u32, Arc<Kernels>)>>,
    compile_ms: f64,
    /// Where its PTX came from.
    ptx_from: PtxFrom,
}

/// Where a compiled site's PTX came from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum PtxFrom {
    /// The emulator runs the CUDA C: no PTX was made.
    Nowhere,
    Nvrtc,
    DiskCache,
    EmbeddedBundle,
}

impl CudaSite {
    /// How many kernels the site has.
    pub fn kernels(&self) -> usize {
        self.program
            .launches
            .iter()
            .map(|l| l.kernel_names().len())
            .sum()
    }

    /// Each launch's kernels on `gpu` (loaded there on first use).
    fn kernels_on(&self, gpu: &device::Gpu) -> Result<Arc<Kernels>, String> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, k)) = loaded.iter().find(|(o, _)| *o == gpu.ordinal) {
            return Ok(Arc::clone(k));
        }
        let kernels = Arc::new(load(gpu, &self.program, &self.ptx)?);
        loaded.push((gpu.ordinal, Arc::clone(&kernels)));
        Ok(kernels)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn available(&self) -> Result<(), String> {
        available()
    }

    fn compiled(
        &self,
        site: SiteKey,
        captures: &Captures<'_>,
        result: &Type,
        // Its results come back as columns.
        _rows: bool,
        front: FrontEndFn<'_>,
    ) -> (Result<Arc<dyn CompiledSite>, String>, bool) {
        let key = (
            site.id,
            captures.types.to_vec(),
            result.clone(),
            device::emulating(),
        );
        let (compiled, hit) = CACHE.get(key, || compile(site, &*front()?));
        (compiled.map(|c| c as Arc<dyn CompiledSite>), hit)
    }

    fn check_other(&self, site: SiteKey, types: &[Type], result: &Type, front: FrontEndFn<'_>) {
        check::after_compile(site, types, result, front);
    }
}

/// Whether a GPU is usable with NVRTC or embedded kernels (the default mode then runs
/// sites on the GPU).
pub fn available() -> Result<(), String> {
    let gpu = device::gpu()?;
    if !gpu.is_emulator() && !nvrtc::available() && !bundle::registered() {
        return Err(nvrtc::MISSING.into());
    }
    Ok(())
}

/// Site, captured types, result type, and whether the emulator runs it.
static CACHE: CompileCache<(usize, Vec<Type>, Type, bool), CudaSite> = CompileCache::new();

/// How many times a site was compiled for the GPU in this process, and how many of those
/// called NVRTC (tests check both caches with them).
pub static COMPILATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// How many of those compilations called NVRTC (the others found PTX on disk).
pub static NVRTC_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// When set, every launch waits for its kernels and adds their time to [`KERNEL_NANOS`]:
/// benchmarks read the device's time apart from the copies to and from it.
pub static PROFILE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Nanoseconds the kernels took, summed, while [`PROFILE`] is set.
pub static KERNEL_NANOS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Lowers the front end's result for the GPU and compiles its kernels (PTX from the
/// embedded bundle or the disk cache when there), dumping the CUDA C and PTX under
/// `ACCEL_DUMP`.
fn compile(site: SiteKey, front: &FrontEnd) -> Result<Arc<CudaSite>, String> {
    COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let program = codegen::generate(front)?;
    if let Some(message) = fault::compile_failure() {
        return Err(message);
    }
    let dump = dump_dir();
    let stem = file_stem(site, &program.source);
    if let Some(dir) = &dump {
        write_file(&dir.join(format!("{stem}.cu")), &program.source)?;
    }
    let gpu = device::gpu();
    let emulated = matches!(&gpu, Ok(g) if g.is_emulator());
    let arch = match &gpu {
        Ok(g) if !g.is_emulator() => g.compute_arch(),
        // No GPU to ask: `ACCEL_CUDA_ARCH` (for dumps), else Hopper.
        _ => std::env::var("ACCEL_CUDA_ARCH").unwrap_or_else(|_| "compute_90".to_string()),
    };
    let (ptx, ptx_from) = match bundle::lookup(
        &site.location(),
        front,
        &program.source,
        &arch,
        nvrtc::fmad(),
    ) {
        bundle::Lookup::Hit(ptx) => (ptx, PtxFrom::EmbeddedBundle),
        bundle::Lookup::Miss(why) => {
            log::info!(
                "{}: cuda: not in the embedded kernel bundle: {why}",
                site.location()
            );
            ptx_unbundled(Some(why), &program.source, &arch, emulated, dump.is_some())?
        }
        bundle::Lookup::NoBundle => {
            ptx_unbundled(None, &program.source, &arch, emulated, dump.is_some())?
        }
    };
    if let (Some(dir), false) = (&dump, ptx.is_empty()) {
        write_file(&dir.join(format!("{stem}.{arch}.ptx")), &ptx)?;
    }
    let gpu = gpu.map_err(|e| format!("ACCEL_MODE=cuda needs a GPU: {e}"))?;
    let kernels = Arc::new(load(gpu, &program, &ptx)?);
    let args = serde_json::json!({ "backend": "cuda", "ptx": format!("{ptx_from:?}") });
    crate::backend::trace::compiled(&site.location(), start, args);
    Ok(Arc::new(CudaSite {
        program,
        ptx,
        loaded: std::sync::Mutex::new(vec![(gpu.ordinal, kernels)]),
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        ptx_from,
    }))
}

/// Each launch's kernels, loaded on `gpu`.
fn load(gpu: &device::Gpu, program: &codegen::Program, ptx: &str) -> Result<Kernels, String> {
    program
        .launches
        .iter()
        .map(|l| gpu.load(&program.source, ptx, &l.kernel_names()))
        .collect()
}

/// PTX for a site the embedded bundle does not hold (`why`: the bundle's reason, when one
/// is registered). The emulator needs none (unless NVRTC is taken away, to stand for a
/// GPU machine without it); without a GPU, `ACCEL_DUMP` still gets PTX (for sm_90) and
/// the run then fails clearly.
fn ptx_unbundled(
    why: Option<String>,
    source: &str,
    arch: &str,
    emulated: bool,
    dumping: bool,
) -> Result<(String, PtxFrom), String> {
    let nvrtc_taken = fault::no_nvrtc();
    if emulated && !dumping && !nvrtc_taken {
        Ok((String::new(), PtxFrom::Nowhere))
    } else if nvrtc_taken || (!emulated && !nvrtc::available()) {
        Err(not_embedded(why))
    } else {
        ptx_for(source, arch)
    }
}

/// The failure of a site whose kernels the embedded bundle misses where NVRTC cannot
/// compile them.
fn not_embedded(why: Option<String>) -> String {
    format!(
        "its kernels are not in the embedded bundle ({}) and NVRTC is not available to \
         compile them: record the site (run with ACCEL_RECORD=accel-sites.json), rebuild so \
         that build.rs embeds its kernels, or install NVRTC",
        why.as_deref().unwrap_or("no bundle is embedded")
    )
}

/// PTX for `source` on `arch`: from the disk cache, else from NVRTC (then cached).
fn ptx_for(source: &str, arch: &str) -> Result<(String, PtxFrom), String> {
    let key = bundle::ptx_key(source, arch, nvrtc::fmad());
    let file = cache_dir().map(|d| d.join(format!("{key}.{arch}.ptx")));
    if let Some(f) = &file {
        if let Ok(ptx) = std::fs::read_to_string(f) {
            return Ok((ptx, PtxFrom::DiskCache));
        }
    }
    NVRTC_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ptx = nvrtc::compile(source, arch)?;
    if let Some(f) = &file {
        // A cache that cannot be written is not an error: the next process compiles again.
        let _ = write_file(f, &ptx);
    }
    Ok((ptx, PtxFrom::Nvrtc))
}

/// Where PTX is kept: `ACCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/accel`, else
/// `~/.cache/accel`; none under `ACCEL_CACHE=0`.
fn cache_dir() -> Option<PathBuf> {
    use crate::backend::disk_cache::{base_dir, enabled};
    enabled().then(base_dir).flatten()
}

impl CompiledSite for CudaSite {
    fn summary(&self) -> String {
        let from = match self.ptx_from {
            PtxFrom::Nowhere => "",
            PtxFrom::Nvrtc => "; PTX from NVRTC",
            PtxFrom::DiskCache => "; PTX from the disk cache",
            PtxFrom::EmbeddedBundle => "; PTX from the embedded bundle",
        };
        format!("{} kernel(s){from}", self.kernels())
    }

    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    /// Runs the site on the GPU: the captured values to device memory, the host program
    /// with its launches, the result back.
    fn run(&self, m: &Marshal<'_>) -> Result<Run, String> {
        let gpu = device::gpu()?;
        let kernels = self.kernels_on(gpu)?;
        let session = gpu.enter()?;
        let err_buf = session.upload(&[0u8; 32])?;
        let mut run = host::Run {
            session: &session,
            launches: &self.program.launches,
            kernels: &kernels,
            keep: Vec::new(),
            kept_inputs: Vec::new(),
            bytes_found: 0,
            err: err_buf.ptr,
            env: HashMap::new(),
            bytes_in: 0,
            bytes_out: 0,
            held: 0,
            peak: 0,
        };
        let roots = run.upload_tensor_buffers(&m.tensor_buffers)?;
        let mut at = 0;
        for (name, t) in self
            .program
            .captures
            .iter()
            .zip(&self.program.capture_types)
        {
            let w = run.upload(t, &m.words, &mut at, &roots)?;
            run.env
                .insert(name.clone(), host::scalar::HostVal { ty: t.clone(), w });
        }
        let value = run.eval(&self.program.host)?;
        run.check_failure()?;
        let mut arena = Arena::default();
        let words = run.download(&value, &mut arena)?;
        run.download_tensor_buffers(&roots)?;
        let report = format!(
            "{} bytes to the GPU ({} more found there from earlier calls), {} back; at most {} bytes of device memory held",
            run.bytes_in, run.bytes_found, run.bytes_out, run.peak
        );
        drop(run);
        drop(err_buf);
        Ok(Run {
            words,
            arena,
            report,
            rows: false,
        })
    }
}

pub use check::with_kernel_check;
pub use device::{bytes_in_use, bytes_uploaded, gpu_count, with_emulator, with_gpu};
pub use fault::{with_fault, Fault};
pub use host::{
    with_part_tensors, with_resident_inputs, with_result_at, PartTensors, Placed, ResidentInputs,
};
