// Generates the CUDA kernels of every site recorded in accel-sites.json (written by
// running the program with ACCEL_RECORD=examples/aot/accel-sites.json) and compiles them
// to PTX, which main() embeds with embed_kernels!().
fn main() {
    accel_runtime::build::kernels("accel-sites.json").generate();
}
