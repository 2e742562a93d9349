//! The LLVM tier: a site's Cranelift functions translated to LLVM IR ([`translate`]) and
//! compiled by the LLVM library found at run time ([`api`]), for the host's CPU with its
//! whole instruction set. The code generator's decisions are made once, in the Cranelift
//! IR; this tier emits them again through LLVM's optimiser and instruction selection
//! (more registers with AVX-512, better scheduling), so both tiers compute the same
//! results, bit for bit.

#[cfg(all(feature = "llvm", target_os = "linux"))]
mod api;
#[cfg(all(feature = "llvm", target_os = "linux"))]
mod load;
mod ops;
#[cfg(test)]
mod tests;
mod translate;

pub(in crate::cpu) use translate::Callee;

#[cfg(not(all(feature = "llvm", target_os = "linux")))]
use api::load;
#[cfg(all(feature = "llvm", target_os = "linux"))]
use load::load;

use cranelift_codegen::ir::Function;

/// The passes run before code generation: LLVM's standard pipeline, which keeps IEEE
/// semantics (nothing here allows reassociation or contraction). `default<O1>` compiled
/// as slowly here and ran blur 1.2x slower; only `instcombine,simplifycfg` compiled twice
/// as fast (60 against 130 ms) but ran blur 1.6x slower.
const PASSES: &str = "default<O2>";

/// How many sites asked for LLVM code got Cranelift's instead (tests require none).
pub static FALLBACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Whether the LLVM library loads and compiles this tier's IR, and which: `Ok(name)` or
/// why not. A library older than 15 reads no opaque pointers (`ptr`): it is found out by
/// compiling a function that uses one, once per process.
pub fn available() -> Result<String, String> {
    static CHECKED: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let (name, _, _) = api::host()?;
            if !cfg!(target_arch = "x86_64") {
                return Err(format!(
                    "{name} is there, but loading LLVM's code is implemented for x86-64 only"
                ));
            }
            api::object(PROBE, "default<O0>").map_err(|e| {
                format!("{name} cannot compile this tier's IR (LLVM 15 or later is needed): {e}")
            })?;
            Ok(name)
        })
        .clone()
}

/// Makes this thread's exit, and the process's exit from it, wait for LLVM's library to
/// load and (from the main thread) for compiles under way: a background compile loads it,
/// and a process that exits meanwhile crashes (see `api::guard_exit_of_this_thread`).
/// Called by each thread that calls a site that may tier up to LLVM.
pub(in crate::cpu) fn guard_exit_of_this_thread() {
    api::guard_exit_of_this_thread();
}

/// The lanes of 32-bit numbers in one of the host's vector registers as LLVM compiles
/// for it: 16 with AVX-512, 8 with AVX2, else 4 (Cranelift's 128 bits). A gang's groups
/// are that wide at this tier (`codegen::spmd`). `ACCEL_LLVM_VECTOR_BITS=128|256|512`
/// asks for narrower vectors than the host's.
pub(in crate::cpu) fn group_lanes() -> usize {
    static LANES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LANES.get_or_init(|| {
        let host = host_lanes();
        match std::env::var("ACCEL_LLVM_VECTOR_BITS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            Some(bits @ (128 | 256 | 512)) => (bits / 32).min(host),
            _ => host,
        }
    })
}

/// The vector registers LLVM's code keeps a gang's values in: 32 with AVX-512 (whatever
/// the width of its vectors), else 16.
pub(in crate::cpu) fn vector_registers() -> usize {
    if host_lanes() == 16 {
        32
    } else {
        16
    }
}

/// The lanes of 32-bit numbers in the host's widest vector register.
fn host_lanes() -> usize {
    static LANES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LANES.get_or_init(|| {
        // A look at the disk cache has the record, and loads no library.
        let features = match recorded_host() {
            Some((_, _, features)) => Ok(features),
            None => api::host().map(|(_, _, features)| features),
        };
        match features {
            Ok(features) if features.contains("+avx512f") => 16,
            Ok(features) if features.contains("+avx2") => 8,
            _ => 4,
        }
    })
}

/// The module that tells whether the library reads this tier's IR (opaque pointers, from
/// LLVM 15). Its code is also a gang's kind of code (vectors of several types, a gather
/// through a vector of pointers, a masked blend), so that the code generator's statics
/// are made, and their destructors registered, before the exit handler that waits for
/// compiles (see `api::at_exit`).
const PROBE: &str = "define <16 x float> @f0(i64 %v0, <16 x i64> %v1, <16 x i1> %v2) {
entry:
  %p = inttoptr i64 %v0 to ptr
  %q = getelementptr float, ptr %p, <16 x i64> %v1
  %x = call <16 x float> @llvm.masked.gather.v16f32.v16p0(<16 x ptr> %q, i32 4, <16 x i1> %v2, <16 x float> zeroinitializer)
  %w = sitofp <16 x i64> %v1 to <16 x double>
  %n = fptrunc <16 x double> %w to <16 x float>
  %s = fadd <16 x float> %x, %n
  %t = select <16 x i1> %v2, <16 x float> %s, <16 x float> %x
  ret <16 x float> %t
}
declare <16 x float> @llvm.masked.gather.v16f32.v16p0(<16 x ptr>, i32, <16 x i1>, <16 x float>)
";

/// What to do when a module's code is not in the disk cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::cpu) enum OnMiss {
    /// Compile it (and keep it in the cache).
    Compile,
    /// Nothing: only code another process compiled is wanted.
    GiveUp,
}

/// A module's code, runnable.
pub(in crate::cpu) struct Code {
    /// Each function's address, in the order asked for.
    pub addresses: Vec<u64>,
    /// The module's text (listings).
    pub ir: String,
    /// Whether the object code came from the disk cache.
    pub from_disk: bool,
}

/// How many modules LLVM compiled, and how many came from the disk cache, in this
/// process (tests).
pub static COMPILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
pub static FROM_DISK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What LLVM compiles with on a host: its library, CPU name and features.
type Host = (String, String, String);

/// The functions `functions` (each with its Cranelift id) compiled by LLVM, or their code
/// from the disk cache (`None`: not there, and `on_miss` gives up). `callee` says what a
/// called id is; `helper` gives a helper's address by name.
///
/// The cache is looked in first with the record an earlier process kept of this host
/// ([`recorded_host`]), which loads no library: a process that exits while LLVM's library
/// loads crashes in its static destructors, and looks run in short processes too. Only a
/// compile loads the library, and keys the module again if the library says otherwise.
pub(in crate::cpu) fn compile(
    functions: &[(u32, Function)],
    callee: &dyn Fn(u32) -> Option<Callee>,
    helper: &dyn Fn(&str) -> Option<u64>,
    on_miss: OnMiss,
) -> Result<Option<Code>, String> {
    let names: Vec<String> = functions.iter().map(|(id, _)| format!("f{id}")).collect();
    let passes = std::env::var("ACCEL_LLVM_PASSES").unwrap_or(PASSES.to_string());
    let keyed = |host: &Host| -> Result<(String, String), String> {
        let (library, cpu, features) = host;
        let attributes = format!("\"target-cpu\"=\"{cpu}\" \"target-features\"=\"{features}\"");
        let refs: Vec<(u32, &Function)> = functions.iter().map(|(id, f)| (*id, f)).collect();
        let ir = translate::module(&refs, callee, &attributes)?;
        // The object code is a function of these alone: the module (which names helpers,
        // never addresses of this process), the passes and the library and CPU compiling
        // it; and it runs with the helpers of the runtime's source it was compiled for.
        let key = [
            "accel cpu-llvm object",
            env!("CARGO_PKG_VERSION"),
            env!("ACCEL_SOURCE_HASH"),
            library,
            cpu,
            features,
            &passes,
            &ir,
        ]
        .join("\n");
        Ok((ir, key))
    };
    let mut looked = None;
    if let Some(host) = recorded_host() {
        let (ir, key) = keyed(&host)?;
        if let Some(code) = from_cache(&key, &ir, &names, helper) {
            return Ok(Some(code));
        }
        looked = Some((host, ir, key));
    }
    if on_miss == OnMiss::GiveUp {
        return Ok(None);
    }
    let host = loaded_host()?;
    let (ir, key) = match looked {
        Some((recorded, ir, key)) if recorded == host => (ir, key),
        _ => {
            let (ir, key) = keyed(&host)?;
            if let Some(code) = from_cache(&key, &ir, &names, helper) {
                return Ok(Some(code));
            }
            (ir, key)
        }
    };
    let t = std::time::Instant::now();
    let object = api::object(&ir, &passes)?;
    COMPILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if std::env::var("ACCEL_LLVM_TIME").is_ok() {
        eprintln!(
            "llvm compile {:.1} ms, {} bytes of IR",
            t.elapsed().as_secs_f64() * 1e3,
            ir.len()
        );
    }
    let addresses = load(&object, &names, helper)?;
    if let Some(c) = disk_cache() {
        // A cache that cannot be written is no error: the next process compiles again.
        if let Err(why) = c.put(key.as_bytes(), &object) {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                crate::backend::log::warn(format_args!("LLVM's code is not kept on disk: {why}"))
            });
        }
    }
    Ok(Some(Code {
        addresses,
        ir,
        from_disk: false,
    }))
}

/// The module `ir`'s code from the disk cache under `key`, loaded; `None` when it is not
/// there or does not load (said in a warning: it is compiled again).
fn from_cache(
    key: &str,
    ir: &str,
    names: &[String],
    helper: &dyn Fn(&str) -> Option<u64>,
) -> Option<Code> {
    let object = disk_cache()?.get(key.as_bytes())?;
    match load(&object, names, helper) {
        Ok(addresses) => {
            FROM_DISK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(Code {
                addresses,
                ir: ir.to_string(),
                from_disk: true,
            })
        }
        Err(why) => {
            crate::backend::log::warn(format_args!(
                "LLVM's code from the disk cache did not load ({why}): compiling it again"
            ));
            None
        }
    }
}

/// What the loaded LLVM library says of this host (loading it), kept on disk once per
/// process for later processes' looks (see [`recorded_host`]).
fn loaded_host() -> Result<Host, String> {
    available()?;
    let host = api::host()?;
    static KEPT: std::sync::Once = std::sync::Once::new();
    KEPT.call_once(|| {
        if let (Some(c), Some(key)) = (disk_cache(), host_key()) {
            let record = [host.0.as_str(), &host.1, &host.2].join("\n");
            // Not kept, a later process's look finds nothing and its hot sites compile.
            let _ = c.put(key.as_bytes(), record.as_bytes());
        }
    });
    Ok(host)
}

/// What LLVM said of this host to an earlier process with the same CPU and library
/// setting (its library, CPU name and features), from the disk cache; read once per
/// process.
pub(in crate::cpu) fn recorded_host() -> Option<Host> {
    static RECORD: std::sync::OnceLock<Option<Host>> = std::sync::OnceLock::new();
    RECORD
        .get_or_init(|| {
            // Looking creates no directory where no process kept LLVM's code.
            let dir = crate::backend::disk_cache::base_dir()?.join(CACHE_KIND);
            if !dir.is_dir() {
                return None;
            }
            let record = disk_cache()?.get(host_key()?.as_bytes())?;
            let record = String::from_utf8(record).ok()?;
            let mut parts = record.splitn(3, '\n').map(str::to_string);
            Some((parts.next()?, parts.next()?, parts.next()?))
        })
        .clone()
}

/// The disk cache's key of the host record: this runtime, the library setting and the
/// CPU as the processor describes itself (vendor, model and what it and the system
/// support), so that a cache shared by different machines never gives one another's.
fn host_key() -> Option<String> {
    Some(
        [
            "accel cpu-llvm host",
            env!("CARGO_PKG_VERSION"),
            env!("ACCEL_SOURCE_HASH"),
            &std::env::var("ACCEL_LLVM").unwrap_or_default(),
            &cpu_fingerprint()?,
        ]
        .join("\n"),
    )
}

/// The processor's identity and the vector features the system lets code use.
#[cfg(target_arch = "x86_64")]
fn cpu_fingerprint() -> Option<String> {
    use std::arch::x86_64::__cpuid_count;
    // Leaves past the maximum the processor reports are not read.
    let leaf = |l: u32, sub: u32| __cpuid_count(l, sub);
    let (max, max_ext) = (leaf(0, 0).eax, leaf(0x8000_0000, 0).eax);
    let mut words = Vec::new();
    for (l, sub) in [(0, 0), (1, 0), (7, 0), (7, 1), (0xd, 1)] {
        if l <= max {
            let r = leaf(l, sub);
            // Leaf 1's EBX holds the APIC id of the core asking: not the processor's.
            let ebx = if l == 1 { r.ebx & 0xffff } else { r.ebx };
            words.extend([r.eax, ebx, r.ecx, r.edx]);
        }
    }
    for l in [0x8000_0001, 0x8000_0002, 0x8000_0003, 0x8000_0004] {
        if l <= max_ext {
            let r = leaf(l, 0);
            words.extend([r.eax, r.ebx, r.ecx, r.edx]);
        }
    }
    macro_rules! usable {
        ($($f:tt),*) => { [$(std::arch::is_x86_feature_detected!($f)),*] };
    }
    let usable = usable!("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl");
    Some(format!("{words:08x?} {usable:?}"))
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_fingerprint() -> Option<String> {
    None
}

/// The directory LLVM's code is kept in, when the cache is on and usable (a directory
/// that is not private is reported once and not used).
#[cfg(target_os = "linux")]
fn disk_cache() -> Option<&'static crate::backend::disk_cache::DiskCache> {
    use crate::backend::disk_cache::{enabled, DiskCache};
    static CACHE: std::sync::OnceLock<Option<DiskCache>> = std::sync::OnceLock::new();
    if !enabled() {
        return None;
    }
    CACHE
        .get_or_init(|| match DiskCache::open(CACHE_KIND) {
            Ok(c) => Some(c),
            // Once per process, without a setting: every run compiles again.
            Err(why) => {
                crate::backend::log::warn(format_args!("LLVM's code is not cached on disk: {why}"));
                None
            }
        })
        .as_ref()
}

/// Off Linux there is no LLVM tier, and no cache of its code.
#[cfg(not(target_os = "linux"))]
fn disk_cache() -> Option<&'static NoCache> {
    None
}

#[cfg(not(target_os = "linux"))]
struct NoCache;

#[cfg(not(target_os = "linux"))]
impl NoCache {
    fn get(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn put(&self, _: &[u8], _: &[u8]) -> Result<(), String> {
        Ok(())
    }
}

/// Whether the disk cache may hold LLVM's code for this host (it is on, and an earlier
/// process recorded what LLVM compiles with here): a site's first calls then have the
/// background look for its code there.
pub(in crate::cpu) fn may_have_cached() -> bool {
    cfg!(all(feature = "llvm", target_os = "linux"))
        && crate::backend::disk_cache::enabled()
        && recorded_host().is_some()
}

/// The cache directory's name for LLVM's code.
pub(in crate::cpu) const CACHE_KIND: &str = "cpu-llvm";

/// Without the `llvm` feature (or off Linux) there is no library to load.
#[cfg(not(all(feature = "llvm", target_os = "linux")))]
mod api {
    const WHY: &str = "accel was built without its `llvm` feature (Linux only)";

    pub(super) fn host() -> Result<(String, String, String), String> {
        Err(WHY.into())
    }

    pub(super) fn object(_: &str, _: &str) -> Result<Vec<u8>, String> {
        Err(WHY.into())
    }

    pub(super) fn guard_exit_of_this_thread() {}

    pub(super) fn load(
        _: &[u8],
        _: &[String],
        _: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Vec<u64>, String> {
        Err(WHY.into())
    }
}
