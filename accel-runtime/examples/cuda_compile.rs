//! Compiles a CUDA C file (for example one `ACCEL_DUMP` wrote) with NVRTC as the CUDA
//! backend does, assembles it with ptxas, and prints each kernel's registers and spills:
//! for looking into generated kernels on a machine without a GPU.
//!
//! `cargo run -p accel-runtime --features cuda --example cuda_compile -- FILE.cu [compute_90]`

#[cfg(feature = "cuda")]
fn main() -> Result<(), String> {
    use accel_runtime::cuda::nvrtc;
    let args: Vec<String> = std::env::args().collect();
    let file = args
        .get(1)
        .ok_or("usage: cuda_compile FILE.cu [compute_XY]")?;
    let arch = args.get(2).map(String::as_str).unwrap_or("compute_90");
    let source = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let ptx = nvrtc::compile(&source, arch)?;
    let sm = arch.replace("compute_", "sm_");
    for k in nvrtc::assemble(&ptx, &sm)? {
        println!(
            "{} {}: {} registers, {} bytes spill stores, {} bytes spill loads",
            k.kernel, k.arch, k.registers, k.spill_stores, k.spill_loads
        );
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("build with --features cuda");
}
