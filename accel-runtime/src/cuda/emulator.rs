//! A CPU stand-in for the GPU, so that the CUDA backend's host program, marshaling and
//! kernels are tested on machines without one: the generated CUDA C is compiled as C++
//! (with `g++`, or `ACCEL_EMULATOR_CXX`) against a header that supplies the CUDA built-ins
//! it uses, and each launch runs every block's threads as real threads, one block at a
//! time, with a barrier for `__syncthreads` (blocks run in turn, so `__shared__` arrays are
//! function statics). Device memory is host memory. It is exact about the kernels'
//! arithmetic and indexing, not about timing or the memory model.

use std::path::PathBuf;
use std::process::Command;

/// The CUDA built-ins the generated code uses, in standard C++20.
const HEADER: &str = r#"#include <atomic>
#include <barrier>
#include <cmath>
#include <math.h>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>
using std::isfinite; using std::isinf; using std::isnan;
struct accel_dim3 { unsigned x, y, z; };
static thread_local accel_dim3 threadIdx, blockIdx;
static accel_dim3 blockDim, gridDim;
static std::barrier<>* accel_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
static inline void __syncthreads() { accel_barrier->arrive_and_wait(); }
static inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
    std::atomic_ref<unsigned long long> a(*p);
    a.compare_exchange_strong(c, v);
    return c;
}
static inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) {
    std::atomic_ref<unsigned> a(*p);
    a.compare_exchange_strong(c, v);
    return c;
}
template <typename T> static inline T atomicExch(T* p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <typename T> static inline T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <typename T> static inline T atomicMin(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <typename T> static inline T atomicMax(T* p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
static inline unsigned __float_as_uint(float x) { unsigned u; std::memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned u) { float x; std::memcpy(&x, &u, 4); return x; }
static inline long long __double_as_longlong(double x) { long long u; std::memcpy(&u, &x, 8); return u; }
static inline double __longlong_as_double(long long u) { double x; std::memcpy(&x, &u, 8); return x; }
template <typename I, typename F> static inline I accel_saturate(F x) {
    if (x != x) return 0;
    if (x <= (F)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (x >= (F)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)x;
}
#define __float2int_rz(x) accel_saturate<int, float>(x)
#define __float2uint_rz(x) accel_saturate<unsigned, float>(x)
#define __float2ll_rz(x) accel_saturate<long long, float>(x)
#define __float2ull_rz(x) accel_saturate<unsigned long long, float>(x)
#define __double2int_rz(x) accel_saturate<int, double>(x)
#define __double2uint_rz(x) accel_saturate<unsigned, double>(x)
#define __double2ll_rz(x) accel_saturate<long long, double>(x)
#define __double2ull_rz(x) accel_saturate<unsigned long long, double>(x)
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
template <typename F> static void accel_run(unsigned grid, unsigned block, F f) {
    blockDim = {block, 1, 1};
    gridDim = {grid, 1, 1};
    for (unsigned b = 0; b < grid; b++) {
        std::barrier<> bar(block);
        accel_barrier = &bar;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; t++)
            threads.emplace_back([&, t] { threadIdx = {t, 0, 0}; blockIdx = {b, 0, 0}; f(); });
        for (auto& th : threads) th.join();
    }
}
"#;

/// A kernel compiled for the emulator: `(blocks, threads, params)`.
pub type EmuKernel = extern "C" fn(u32, u32, *const u64);

/// The kernels of `source` (generated CUDA C), compiled for the CPU.
pub fn load(source: &str, names: &[String]) -> Result<Vec<EmuKernel>, String> {
    let mut code = String::from(HEADER);
    code.push_str(source);
    for name in names {
        let arity = arity(source, name).ok_or_else(|| format!("no kernel {name}"))?;
        let args: Vec<String> = (0..arity).map(|k| format!("p[{k}]")).collect();
        code.push_str(&format!(
            "\nextern \"C\" void accel_launch_{name}(unsigned grid, unsigned block, const unsigned long long* p) {{\n    accel_run(grid, block, [&] {{ {name}({}); }});\n}}\n",
            args.join(", ")
        ));
    }
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("accel-emulator-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join(format!("site{k}.cpp"));
    let lib = dir.join(format!("site{k}.so"));
    std::fs::write(&src, &code).map_err(|e| e.to_string())?;
    let cxx = compiler();
    let out = Command::new(&cxx)
        .args([
            "-std=c++20",
            "-O1",
            "-shared",
            "-fPIC",
            "-pthread",
            "-w",
            "-o",
        ])
        .arg(&lib)
        .arg(&src)
        .output()
        .map_err(|e| format!("could not run {}: {e}", cxx.display()))?;
    if !out.status.success() {
        return Err(format!(
            "the emulator could not compile the generated code:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // SAFETY: the library is the one just built from generated code and the header above;
    // its initialisers only set up statics. It stays loaded for the life of the process
    // (leaked), so the function pointers taken from it stay valid.
    let library = unsafe { libloading::Library::new(&lib) }.map_err(|e| e.to_string())?;
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    names
        .iter()
        .map(|name| {
            let symbol = format!("accel_launch_{name}");
            // SAFETY: `accel_launch_NAME` is defined above with exactly this signature.
            unsafe { library.get::<EmuKernel>(symbol.as_bytes()) }
                .map(|f| *f)
                .map_err(|e| format!("{symbol}: {e}"))
        })
        .collect()
}

/// How many parameters kernel `name` of the generated source takes (each an `ull`).
fn arity(source: &str, name: &str) -> Option<usize> {
    let head = format!("__global__ void {name}(");
    let start = source.find(&head)? + head.len();
    let end = source[start..].find(')')? + start;
    Some(
        source[start..end]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .count(),
    )
}

fn compiler() -> PathBuf {
    std::env::var_os("ACCEL_EMULATOR_CXX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("g++"))
}

/// Whether the emulator's C++ compiler runs here.
pub fn available() -> bool {
    Command::new(compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
