//! The LLVM tier: a site's Cranelift functions translated to LLVM IR ([`translate`]) and
//! compiled by the LLVM library found at run time ([`api`]), for the host's CPU with its
//! whole instruction set. The code generator's decisions are made once, in the Cranelift
//! IR; this tier emits them again through LLVM's optimiser and instruction selection
//! (more registers with AVX-512, better scheduling), so both tiers compute the same
//! results, bit for bit.

#[cfg(all(feature = "llvm", target_os = "linux"))]
mod api;
mod ops;
mod translate;

pub(in crate::cpu) use translate::Callee;

use cranelift_codegen::ir::Function;

/// The passes run before code generation: LLVM's standard pipeline, which keeps IEEE
/// semantics (nothing here allows reassociation or contraction).
const PASSES: &str = "default<O2>";

/// Whether the LLVM library loads, and which: `Ok(name)` or why not.
pub fn available() -> Result<String, String> {
    api::host().map(|(name, _, _)| name)
}

/// The functions `functions` (each with its Cranelift id) compiled by LLVM: each one's
/// address, in order, and the module's text. `callee` says what a called id is.
pub(in crate::cpu) fn compile(
    functions: &[(u32, Function)],
    callee: &dyn Fn(u32) -> Option<Callee>,
) -> Result<(Vec<u64>, String), String> {
    let (_, cpu, features) = api::host()?;
    let attributes = format!("\"target-cpu\"=\"{cpu}\" \"target-features\"=\"{features}\"");
    let refs: Vec<(u32, &Function)> = functions.iter().map(|(id, f)| (*id, f)).collect();
    let ir = translate::module(&refs, callee, &attributes)?;
    let names: Vec<String> = functions.iter().map(|(id, _)| format!("f{id}")).collect();
    let addresses = api::compile(&ir, PASSES, &names)?;
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
