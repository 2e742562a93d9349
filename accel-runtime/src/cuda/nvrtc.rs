//! CUDA C to PTX with NVRTC (loaded at run time), and PTX to machine code with `ptxas`
//! for checks (registers and spills per kernel).

use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::path::PathBuf;
use std::process::Command;

/// Whether NVRTC's library can be loaded (cudarc's loader panics when it is missing, so
/// this is asked before any call).
pub fn available() -> bool {
    // SAFETY: `is_culib_present` only tries to open the library by its candidate names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Why NVRTC cannot be used, in words.
pub const MISSING: &str = "NVRTC (libnvrtc.so) was not found: install the CUDA toolkit, or \
`pip install nvidia-cuda-nvrtc` and put its `nvidia/cu13/lib` folder on LD_LIBRARY_PATH";

/// Compiles generated CUDA C to PTX for `arch` (`"compute_90"`). As in Rust, `a * b + c`
/// rounds twice (nvcc would contract it into one fused multiply-add) unless
/// `ACCEL_CUDA_FMAD=1`.
pub fn compile(source: &str, arch: &str) -> Result<String, String> {
    compile_with(source, arch, fmad())
}

/// Whether generated code is compiled with fused multiply-adds (`ACCEL_CUDA_FMAD=1`).
/// Off by default: the CPU backends never contract `a * b + c`, so a site's float
/// arithmetic gives the same bits on the GPU as on the CPU (the suite's exact checks, a
/// site split across devices). On, as nvcc compiles, `a * b + c` may round once.
pub fn fmad() -> bool {
    std::env::var("ACCEL_CUDA_FMAD").is_ok_and(|v| v == "1")
}

/// Compiles CUDA C to PTX for `arch`, contracting `a * b + c` into fused multiply-adds
/// when `fmad` (nvcc's default; benchmarks compile hand-written kernels so).
pub fn compile_with(source: &str, arch: &str, fmad: bool) -> Result<String, String> {
    if !available() {
        return Err(MISSING.into());
    }
    let opts = CompileOptions {
        fmad: Some(fmad),
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some("accel_site.cu".into()),
        ..Default::default()
    };
    match compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, .. }) => Err(format!(
            "NVRTC rejected the generated CUDA C (a bug in accel; ACCEL_DUMP=DIR writes it out):\n{}",
            log.to_string_lossy()
        )),
        Err(e) => Err(format!("NVRTC failed: {e}")),
    }
}

/// What `ptxas -v` reported for one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelReport {
    /// The kernel's name.
    pub kernel: String,
    /// The architecture it was assembled for (`sm_90`).
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
}

/// The `ptxas` to use: `ACCEL_PTXAS`, else the one on `PATH`.
pub fn ptxas_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ACCEL_PTXAS") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ptxas"))
            .find(|p| p.is_file())
    })
}

/// Assembles PTX for a real architecture (`"sm_90"`) with `ptxas -v`; returns each
/// kernel's registers and spills, or ptxas's complaint.
pub fn assemble(ptx: &str, arch: &str) -> Result<Vec<KernelReport>, String> {
    let ptxas = ptxas_path().ok_or("ptxas was not found (set ACCEL_PTXAS or put it on PATH)")?;
    // One directory per call, removed afterwards: a directory shared by the process's
    // calls outlived it (one left in the temporary directory per test process).
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("accel-ptxas-{}-{k}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let input = dir.join("kernel.ptx");
    let output = dir.join("kernel.cubin");
    let run = std::fs::write(&input, ptx)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg("-v")
                .arg(&input)
                .arg("-o")
                .arg(&output)
                .output()
                .map_err(|e| format!("could not run {}: {e}", ptxas.display()))
        });
    let _ = std::fs::remove_dir_all(&dir);
    let out = run?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!("ptxas failed for {arch}:\n{log}"));
    }
    Ok(parse_ptxas(&log, arch))
}

/// Reads `ptxas -v` output: "Compiling entry function 'k' for 'sm_90'", then "N bytes
/// stack frame, S bytes spill stores, L bytes spill loads" and "Used R registers".
fn parse_ptxas(log: &str, arch: &str) -> Vec<KernelReport> {
    let mut out: Vec<KernelReport> = Vec::new();
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let at = line.find(what)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(at) = line.find("Compiling entry function '") {
            let rest = &line[at + "Compiling entry function '".len()..];
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(KernelReport {
                kernel: name,
                arch: arch.to_string(),
                registers: 0,
                spill_stores: 0,
                spill_loads: 0,
            });
        } else if let Some(k) = out.last_mut() {
            if let Some(s) = number_before(line, "bytes spill stores") {
                k.spill_stores = s;
            }
            if let Some(l) = number_before(line, "bytes spill loads") {
                k.spill_loads = l;
            }
            if let Some(r) = number_before(line, "registers") {
                k.registers = r;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ptxas_reports() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'accel_k0_part' for 'sm_90'\n\
ptxas info    : Function properties for accel_k0_part\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 30 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'accel_k1' for 'sm_90'\n\
ptxas info    : Function properties for accel_k1\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 12 registers, 392 bytes cmem[0]\n";
        let r = parse_ptxas(log, "sm_90");
        assert_eq!(
            r,
            vec![
                KernelReport {
                    kernel: "accel_k0_part".into(),
                    arch: "sm_90".into(),
                    registers: 30,
                    spill_stores: 4,
                    spill_loads: 12
                },
                KernelReport {
                    kernel: "accel_k1".into(),
                    arch: "sm_90".into(),
                    registers: 12,
                    spill_stores: 0,
                    spill_loads: 0
                }
            ]
        );
    }
}
