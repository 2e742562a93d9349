//! Kernel checks without a GPU: when enabled ([`with_kernel_check`] on this thread, or
//! `ACCEL_CUDA_CHECK=1`), every site another backend compiles is also lowered for the GPU,
//! compiled by NVRTC for `compute_80` and `compute_90` and assembled by `ptxas` for
//! `sm_80` and `sm_90`. A kernel NVRTC or ptxas rejects, or a reduction kernel that spills
//! registers, fails the site; every kernel's registers are reported on stderr (and
//! appended to `ACCEL_KERNEL_REPORT` when it names a file). Without NVRTC or ptxas the
//! check says once, visibly, that it skipped.

use super::nvrtc::{self, KernelReport};
use crate::backend::{FrontEnd, FrontEndFn, SiteKey};
use accel_ir::Type;
use std::cell::Cell;
use std::collections::HashSet;
use std::io::Write;
use std::sync::{Mutex, Once};

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with kernel checks on for the sites it compiles on this thread.
pub fn with_kernel_check<R>(f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&ON, true, f)
}

fn enabled() -> bool {
    ON.with(Cell::get) || std::env::var("ACCEL_CUDA_CHECK").is_ok_and(|v| v == "1")
}

/// The architectures every kernel is checked for.
pub const ARCHES: [(&str, &str); 2] = [("compute_80", "sm_80"), ("compute_90", "sm_90")];

/// Why a check did not happen or what it found wrong.
#[derive(Debug)]
pub enum CheckError {
    /// NVRTC or ptxas is missing here.
    Skipped(String),
    /// The CUDA backend does not compile this site (it runs on the CPU instead).
    Unsupported(String),
    /// A kernel was rejected or spills.
    Failed(String),
}

/// Lowers a site (the front end's result), checks that no index is computed in 32 bits
/// ([`narrow_indices`], which needs no NVRTC), then compiles and assembles its kernels for
/// every architecture in [`ARCHES`].
pub fn check_kernels(front: Result<&FrontEnd, String>) -> Result<Vec<KernelReport>, CheckError> {
    let program = front
        .and_then(super::codegen::generate)
        .map_err(CheckError::Unsupported)?;
    if let Some(line) = narrow_indices(&program.source).first() {
        return Err(CheckError::Failed(format!(
            "an index is computed in 32 bits (it wraps past 2^32 elements): `{line}`"
        )));
    }
    if !nvrtc::available() {
        return Err(CheckError::Skipped(nvrtc::MISSING.into()));
    }
    if nvrtc::ptxas_path().is_none() {
        return Err(CheckError::Skipped(
            "ptxas was not found (set ACCEL_PTXAS, or put the CUDA toolkit's bin folder on PATH)"
                .into(),
        ));
    }
    let mut reports = Vec::new();
    for (compute, sm) in ARCHES {
        let ptx = nvrtc::compile(&program.source, compute).map_err(CheckError::Failed)?;
        let r = nvrtc::assemble(&ptx, sm).map_err(CheckError::Failed)?;
        for k in &r {
            let reduction = ["_part", "_final", "_carry"]
                .iter()
                .any(|s| k.kernel.ends_with(s));
            if reduction && (k.spill_stores > 0 || k.spill_loads > 0) {
                return Err(CheckError::Failed(format!(
                    "reduction kernel {} spills on {sm}: {} bytes stored, {} loaded",
                    k.kernel, k.spill_stores, k.spill_loads
                )));
            }
        }
        reports.extend(r);
    }
    Ok(reports)
}

/// The lines of generated CUDA C that compute a global thread index or a grid stride in
/// 32 bits: `blockIdx`, `blockDim` and `gridDim` are `unsigned`, so their product wraps
/// past 2^32 unless one side is widened first (`blockIdx.x * (ull)blockDim.x`), and an
/// index computed from `blockIdx` into a 32-bit variable (`int`, `unsigned`, `unsigned
/// int`) wraps whatever its expression. (A block number alone, `int b = blockIdx.x`, fits;
/// `long` and `long long` are 64 bits on the GPU.)
pub fn narrow_indices(source: &str) -> Vec<&str> {
    const NARROW_PRODUCTS: [&str; 4] = [
        "blockIdx.x * blockDim.x",
        "blockDim.x * blockIdx.x",
        "gridDim.x * blockDim.x",
        "blockDim.x * gridDim.x",
    ];
    source
        .lines()
        .map(str::trim)
        .filter(|line| {
            let unwidened = NARROW_PRODUCTS.iter().any(|p| {
                line.match_indices(p)
                    .any(|(at, _)| !line[..at].ends_with("(ull)"))
            });
            let narrow_variable = line.split([';', '(', '{']).any(|decl| {
                let Some((declared, value)) = decl.split_once('=') else {
                    return false;
                };
                // The declared type: the words before the variable's name.
                let words: Vec<&str> = declared.split_whitespace().collect();
                let ty = words[..words.len().saturating_sub(1)].join(" ");
                let ty = ty.strip_prefix("const ").unwrap_or(&ty);
                ["int", "unsigned", "unsigned int"].contains(&ty)
                    && value.contains("blockIdx")
                    && value.contains(['*', '+'])
            });
            unwidened || narrow_variable
        })
        .collect()
}

/// Called after another backend compiled a site: checks its kernels when enabled (once
/// per site and types), panicking on a failure.
pub(crate) fn after_compile(
    site: SiteKey,
    captures: &[Type],
    result: &Type,
    front: FrontEndFn<'_>,
) {
    if !enabled() {
        return;
    }
    type Key = (usize, Vec<Type>, Type);
    static DONE: Mutex<Option<HashSet<Key>>> = Mutex::new(None);
    let key = (site.id, captures.to_vec(), result.clone());
    if !DONE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(key)
    {
        return;
    }
    // Written to stderr directly: the test harness captures `eprintln!`, and a skipped
    // or reported check must be visible.
    let mut err = std::io::stderr();
    let front = front();
    match check_kernels(front.as_deref().map_err(Clone::clone)) {
        Ok(reports) => {
            let mut lines = String::new();
            for k in &reports {
                lines.push_str(&format!(
                    "[accel] kernel {} {} {}: {} registers, {} bytes spilled\n",
                    site.location(),
                    k.kernel,
                    k.arch,
                    k.registers,
                    k.spill_stores + k.spill_loads
                ));
            }
            report(&lines);
        }
        Err(CheckError::Skipped(why)) => {
            static ONCE: Once = Once::new();
            ONCE.call_once(|| {
                let _ = writeln!(err, "[accel] SKIPPED: CUDA kernel checks: {why}");
            });
        }
        Err(CheckError::Unsupported(why)) => {
            report(&format!(
                "[accel] kernel {}: not compiled for CUDA: {why}\n",
                site.location()
            ));
        }
        Err(CheckError::Failed(why)) => {
            panic!(
                "accelerate! at {}: CUDA kernel check failed: {why}",
                site.location()
            )
        }
    }
}

/// Appends report lines to `ACCEL_KERNEL_REPORT` when set, else writes them to stderr.
fn report(lines: &str) {
    match std::env::var_os("ACCEL_KERNEL_REPORT").filter(|f| !f.is_empty()) {
        Some(file) => {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)
                .and_then(|mut f| f.write_all(lines.as_bytes()));
            if let Err(e) = written {
                let _ = writeln!(std::io::stderr(), "[accel] kernel report: {e}");
            }
        }
        None => {
            let _ = std::io::stderr().write_all(lines.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::narrow_indices;

    #[test]
    fn indices_computed_in_32_bits_are_found() {
        let source = "\
for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {
ull start = blockIdx.x * chunk;
if (threadIdx.x == 0) partials[blockIdx.x] = sh[0];
ull i = blockIdx.x * blockDim.x + threadIdx.x;
for (ull i = t; i < n; i += gridDim.x * blockDim.x) {
unsigned i = blockIdx.x * (ull)blockDim.x + threadIdx.x;
for (int b = blockIdx.x; b < m; b += 4) {
int g = blockIdx.x * 256 + threadIdx.x;
unsigned long long j = blockIdx.x * (ull)blockDim.x + threadIdx.x;
const long long k = blockIdx.x * (ull)blockDim.x + threadIdx.x;
";
        assert_eq!(
            narrow_indices(source),
            [
                "ull i = blockIdx.x * blockDim.x + threadIdx.x;",
                "for (ull i = t; i < n; i += gridDim.x * blockDim.x) {",
                "unsigned i = blockIdx.x * (ull)blockDim.x + threadIdx.x;",
                "int g = blockIdx.x * 256 + threadIdx.x;",
            ]
        );
    }
}
