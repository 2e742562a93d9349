//! A CPU stand-in for the GPU, so that the CUDA backend's host program, marshaling and
//! kernels are tested on machines without one: the generated CUDA C is compiled as C++
//! (with `g++`, or `ACCEL_EMULATOR_CXX`) against a header that supplies the CUDA built-ins
//! it uses, and each launch runs every block's threads as real threads, one block at a
//! time, with a barrier for `__syncthreads` (blocks run in turn, so `__shared__` arrays are
//! function statics). The header is precompiled once per machine (see
//! `precompiled_header`). Device memory is host memory. It is exact about the kernels'
//! arithmetic and indexing, not about timing or the memory model.
//!
//! It does not hide races: the blocks of a launch run in a random order, and a block's
//! threads start in a random order and yield their core at random points (at their start
//! and around each barrier), all drawn from `ACCEL_EMULATOR_SEED` (default 1) and the
//! launch's number. A kernel that needs block `b - 1` done before block `b`, or reads
//! another thread's write without a barrier between them, computes wrong values here.

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
// Scheduling noise (seeded): each thread yields its core 0-3 times at its start and on
// each side of every barrier, so a kernel that reads what another thread writes without a
// barrier between them sees the write missing, whatever order the threads started in.
static unsigned long long accel_mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static thread_local unsigned long long accel_noise;
static inline void accel_jitter() {
    accel_noise = accel_mix(accel_noise);
    for (unsigned i = accel_noise % 4; i > 0; i--) std::this_thread::yield();
}
static inline void __syncthreads() { accel_jitter(); accel_barrier->arrive_and_wait(); accel_jitter(); }
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
// Each launch's seed: ACCEL_EMULATOR_SEED (default 1) mixed with the launch's number.
static unsigned long long accel_launch_seed() {
    static const unsigned long long base = [] {
        const char* s = std::getenv("ACCEL_EMULATOR_SEED");
        return s ? std::strtoull(s, nullptr, 10) : 1ULL;
    }();
    static std::atomic<unsigned long long> launches{0};
    return accel_mix(base ^ accel_mix(launches++));
}
// A seeded random permutation of 0..n (Fisher-Yates).
static std::vector<unsigned> accel_shuffled(unsigned n, unsigned long long& seed) {
    std::vector<unsigned> order(n);
    for (unsigned i = 0; i < n; i++) order[i] = i;
    for (unsigned i = n; i > 1; i--) {
        seed = accel_mix(seed);
        std::swap(order[i - 1], order[seed % i]);
    }
    return order;
}
// Blocks run one at a time (`__shared__` arrays are function statics) in a random order;
// each block's threads start in a random order and jitter (see accel_jitter).
template <typename F> static void accel_run(unsigned grid, unsigned block, F f) {
    blockDim = {block, 1, 1};
    gridDim = {grid, 1, 1};
    unsigned long long seed = accel_launch_seed();
    for (unsigned b : accel_shuffled(grid, seed)) {
        std::barrier<> bar(block);
        accel_barrier = &bar;
        std::vector<std::thread> threads;
        for (unsigned t : accel_shuffled(block, seed)) {
            unsigned long long noise = accel_mix(seed ^ ((unsigned long long)b << 32 | t));
            threads.emplace_back([&, t, b, noise] {
                threadIdx = {t, 0, 0};
                blockIdx = {b, 0, 0};
                accel_noise = noise;
                accel_jitter();
                f();
            });
        }
        for (auto& th : threads) th.join();
    }
}
"#;

/// A kernel compiled for the emulator: `(blocks, threads, params)`.
pub type EmuKernel = extern "C" fn(u32, u32, *const u64);

/// The kernels of `source` (generated CUDA C), compiled for the CPU.
pub fn load(source: &str, names: &[String]) -> Result<Vec<EmuKernel>, String> {
    let mut code = match precompiled_header() {
        Some(header) => format!("#include \"{}\"\n", header.display()),
        None => String::from(HEADER),
    };
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
        .args(FLAGS)
        .args(["-shared", "-o"])
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

/// The flags every compilation shares (a precompiled header is used only with the flags it
/// was built with).
const FLAGS: [&str; 5] = ["-std=c++20", "-O1", "-fPIC", "-pthread", "-w"];

/// The header, written once per header text and compiler into a directory of the temporary
/// directory with its precompiled form beside it (parsing the standard headers it includes
/// is most of a small kernel's compile time: about 1.3 s against 0.35 s with it). Processes
/// share it; each file is written under a temporary name and renamed into place, so a
/// concurrent reader sees all or nothing. `None` when it cannot be written: the header is
/// then inlined. A compiler that cannot use the precompiled form ignores it and reads the
/// header.
fn precompiled_header() -> Option<&'static PathBuf> {
    static HEADER_PATH: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HEADER_PATH
        .get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut hash = std::collections::hash_map::DefaultHasher::new();
            (HEADER, compiler(), FLAGS).hash(&mut hash);
            let dir =
                std::env::temp_dir().join(format!("accel-emulator-header-{:016x}", hash.finish()));
            let header = dir.join("accel_emulator.h");
            let pch = dir.join("accel_emulator.h.gch");
            if header.exists() && pch.exists() {
                return Some(header);
            }
            std::fs::create_dir_all(&dir).ok()?;
            let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
            let staged = dir.join(format!("staged-{unique}.h"));
            std::fs::write(&staged, HEADER).ok()?;
            std::fs::rename(&staged, &header).ok()?;
            let staged = dir.join(format!("staged-{unique}.gch"));
            let built = Command::new(compiler())
                .args(FLAGS)
                .args(["-x", "c++-header", "-o"])
                .arg(&staged)
                .arg(&header)
                .output()
                .is_ok_and(|o| o.status.success());
            if built {
                let _ = std::fs::rename(&staged, &pch);
            }
            Some(header)
        })
        .as_ref()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernels that are right only if the emulator hides races: `accel_chain` needs block
    /// `b - 1` to have run before block `b`; `accel_neighbour` reads the shared element
    /// its predecessor thread wrote, with a barrier between only when asked.
    const RACY: &str = r#"
__global__ void accel_chain(unsigned long long out_) {
    long long* out = (long long*)out_;
    if (threadIdx.x == 0) out[blockIdx.x] = (blockIdx.x == 0 ? 0 : out[blockIdx.x - 1]) + 1;
}
__global__ void accel_neighbour(unsigned long long out_, unsigned long long round, unsigned long long barrier) {
    __shared__ long long s[256];
    unsigned t = threadIdx.x;
    s[t] = (long long)round * 1000 + t;
    if (barrier) __syncthreads();
    ((long long*)out_)[t] = s[(t + blockDim.x - 1) % blockDim.x];
}
"#;

    fn kernels() -> Option<Vec<EmuKernel>> {
        if !available() {
            eprintln!("[accel tests] SKIPPED: racy kernels on the emulator: no C++20 compiler");
            return None;
        }
        Some(load(RACY, &["accel_chain".into(), "accel_neighbour".into()]).unwrap())
    }

    #[test]
    fn a_kernel_that_depends_on_block_order_fails() {
        let Some(k) = kernels() else { return };
        let mut out = vec![0i64; 64];
        let params = [out.as_mut_ptr() as u64];
        k[0](64, 32, params.as_ptr());
        let in_order: Vec<i64> = (1..=64).collect();
        assert_ne!(out, in_order, "the blocks ran in order");
        // A block that ran before its predecessor read 0 there.
        assert!(out.iter().filter(|&&x| x == 1).count() > 1, "{out:?}");
    }

    #[test]
    fn a_missing_barrier_shows_and_the_barrier_cures_it() {
        let Some(k) = kernels() else { return };
        let n = 256usize;
        let expected = |round: u64| -> Vec<i64> {
            (0..n)
                .map(|t| round as i64 * 1000 + ((t + n - 1) % n) as i64)
                .collect()
        };
        let mut wrong = 0;
        for round in 1..=20u64 {
            let mut out = vec![0i64; n];
            let params = [out.as_mut_ptr() as u64, round, 0];
            k[1](1, n as u32, params.as_ptr());
            wrong += usize::from(out != expected(round));
        }
        assert!(
            wrong > 0,
            "20 launches without the barrier all read every write"
        );
        for round in 21..=40u64 {
            let mut out = vec![0i64; n];
            let params = [out.as_mut_ptr() as u64, round, 1];
            k[1](1, n as u32, params.as_ptr());
            assert_eq!(out, expected(round));
        }
    }
}
