//! Shared pieces of the benchmark binaries.

use std::time::Instant;

/// The result of `f` and its wall time in milliseconds.
pub fn ms<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let start = Instant::now();
    let r = std::hint::black_box(f());
    (r, start.elapsed().as_secs_f64() * 1e3)
}

/// The median of some times.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The median wall time of `runs` calls of `f`, in milliseconds.
pub fn median_ms<R>(runs: usize, mut f: impl FnMut() -> R) -> f64 {
    median((0..runs).map(|_| ms(&mut f).1).collect())
}

/// Writes a benchmark's results beside each other: `DIR/STEM.md` (a title, a preamble
/// and the table) and `DIR/STEM.json` (machine-readable rows), creating `DIR` if needed.
pub fn write_results(
    dir: &str,
    stem: &str,
    title: &str,
    preamble: &str,
    table: &str,
    json: &serde_json::Value,
) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {dir}: {e}"));
    let md = format!("# {title}\n\n{preamble}{table}");
    std::fs::write(format!("{dir}/{stem}.md"), md)
        .unwrap_or_else(|e| panic!("cannot write {dir}/{stem}.md: {e}"));
    let text = serde_json::to_string_pretty(json)
        .unwrap_or_else(|e| panic!("cannot serialize the results: {e}"));
    std::fs::write(format!("{dir}/{stem}.json"), text)
        .unwrap_or_else(|e| panic!("cannot write {dir}/{stem}.json: {e}"));
}

/// The hand-written Black-Scholes kernel the GPU suite compares with: the textbook
/// one-thread-per-option version, every parameter a 64-bit word as accel passes them.
pub const HAND_BLACK_SCHOLES: &str = r#"
__device__ float cnd(float d) {
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float poly = k * (0.31938153f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f))));
    float w = 1.0f - 0.3989423f * expf(-0.5f * d * d) * poly;
    return d < 0.0f ? 1.0f - w : w;
}
extern "C" __global__ void black_scholes(unsigned long long ps, unsigned long long px,
        unsigned long long pt, unsigned long long pout, unsigned long long n,
        unsigned long long rbits, unsigned long long vbits) {
    const float* s = (const float*)ps; const float* x = (const float*)px;
    const float* t = (const float*)pt; float* out = (float*)pout;
    float r = __uint_as_float((unsigned)rbits), v = __uint_as_float((unsigned)vbits);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float sqrt_t = sqrtf(t[i]);
        float d1 = (logf(s[i] / x[i]) + (r + 0.5f * v * v) * t[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        out[i] = s[i] * cnd(d1) - x[i] * expf(-r * t[i]) * cnd(d2);
    }
}
"#;

/// The N-body workload of `cpu_suite` and `limits`: `n` bodies' positions and masses,
/// random with fixed seeds, as `[x, y, z, mass]`.
pub fn bodies(n: usize) -> [Vec<f32>; 4] {
    use accel_examples::random::uniform;
    [
        uniform(n, 8, -100.0, 100.0),
        uniform(n, 9, -100.0, 100.0),
        uniform(n, 14, -50.0, 50.0),
        uniform(n, 10, 1.0, 8.0),
    ]
}

/// The x acceleration of body `i` (all pairs, softened): the references' formula.
pub fn n_body_x(i: usize, px: &[f32], py: &[f32], pz: &[f32], pm: &[f32]) -> f32 {
    let mut ax = 0.0f32;
    for j in 0..px.len() {
        let (dx, dy, dz) = (px[j] - px[i], py[j] - py[i], pz[j] - pz[i]);
        let d2 = dx * dx + dy * dy + dz * dz + 0.01;
        let inv = 1.0 / (d2 * d2.sqrt());
        ax += pm[j] * dx * inv;
    }
    ax
}

/// Every body's x acceleration as the suites' `accelerate!` site, written as a user would.
pub fn n_body_x_accel(px: &[f32], py: &[f32], pz: &[f32], pm: &[f32]) -> Vec<f32> {
    use accel_runtime::prelude::*;
    accelerate!(create(px.len(), |i| {
        let mut ax = 0.0f32;
        for j in 0..px.len() {
            let dx = px[j] - px[i];
            let dy = py[j] - py[i];
            let dz = pz[j] - pz[i];
            let d2 = dx * dx + dy * dy + dz * dz + 0.01;
            let inv = 1.0 / (d2 * d2.sqrt());
            ax += pm[j] * dx * inv;
        }
        ax
    }))
}
