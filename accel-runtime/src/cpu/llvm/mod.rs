//! The LLVM tier: a site's Cranelift functions translated to LLVM IR ([`translate`]) and
//! compiled by the LLVM library found at run time ([`api`]), for the host's CPU with its
//! whole instruction set. The code generator's decisions are made once, in the Cranelift
//! IR; this tier emits them again through LLVM's optimiser and instruction selection
//! (more registers with AVX-512, better scheduling), so both tiers compute the same
//! results, bit for bit.

#[cfg(all(feature = "llvm", target_os = "linux"))]
mod api;
mod ops;
#[cfg(test)]
mod tests;
mod translate;

pub(in crate::cpu) use translate::Callee;

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
            let probe = "define i64 @f0(i64 %v0) {\nentry:\n  %p = inttoptr i64 %v0 to ptr\n  %q = ptrtoint ptr %p to i64\n  ret i64 %q\n}\n";
            api::compile(probe, "default<O0>", &["f0".to_string()]).map_err(|e| {
                format!("{name} cannot compile this tier's IR (LLVM 15 or later is needed): {e}")
            })?;
            Ok(name)
        })
        .clone()
}

/// The lanes of 32-bit numbers in one of the host's vector registers as LLVM compiles
/// for it: 16 with AVX-512, 8 with AVX2, else 4 (Cranelift's 128 bits). A gang's groups
/// are that wide at this tier (`codegen::spmd`). `ACCEL_LLVM_VECTOR_BITS=128|256|512`
/// asks for narrower vectors than the host's.
pub(in crate::cpu) fn group_lanes() -> usize {
    static LANES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LANES.get_or_init(|| {
        let host = match api::host() {
            Ok((_, _, features)) if features.contains("+avx512f") => 16,
            Ok((_, _, features)) if features.contains("+avx2") => 8,
            _ => 4,
        };
        match std::env::var("ACCEL_LLVM_VECTOR_BITS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            Some(bits @ (128 | 256 | 512)) => (bits / 32).min(host),
            _ => host,
        }
    })
}

/// The functions `functions` (each with its Cranelift id) compiled by LLVM: each one's
/// address, in order, and the module's text. `callee` says what a called id is.
pub(in crate::cpu) fn compile(
    functions: &[(u32, Function)],
    callee: &dyn Fn(u32) -> Option<Callee>,
) -> Result<(Vec<u64>, String), String> {
    available()?;
    let (_, cpu, features) = api::host()?;
    let attributes = format!("\"target-cpu\"=\"{cpu}\" \"target-features\"=\"{features}\"");
    let refs: Vec<(u32, &Function)> = functions.iter().map(|(id, f)| (*id, f)).collect();
    let ir = translate::module(&refs, callee, &attributes)?;
    let names: Vec<String> = functions.iter().map(|(id, _)| format!("f{id}")).collect();
    let passes = std::env::var("ACCEL_LLVM_PASSES").unwrap_or(PASSES.to_string());
    let t = std::time::Instant::now();
    let addresses = api::compile(&ir, &passes, &names)?;
    if std::env::var("ACCEL_LLVM_TIME").is_ok() {
        eprintln!(
            "llvm compile {:.1} ms, {} bytes of IR",
            t.elapsed().as_secs_f64() * 1e3,
            ir.len()
        );
    }
    Ok((addresses, ir))
}

/// Without the `llvm` feature (or off Linux) there is no library to load.
#[cfg(not(all(feature = "llvm", target_os = "linux")))]
mod api {
    const WHY: &str = "accel was built without its `llvm` feature (Linux only)";

    pub(super) fn host() -> Result<(String, String, String), String> {
        Err(WHY.into())
    }

    pub(in crate::cpu) fn compile(_: &str, _: &str, _: &[String]) -> Result<Vec<u64>, String> {
        Err(WHY.into())
    }
}
