//! A CPU stand-in for the GPU, so that the CUDA backend's host program, marshaling and
//! kernels are tested on machines without one: the generated CUDA C is compiled as C++
//! (with `g++`, or `ACCEL_EMULATOR_CXX`) against a header that supplies the CUDA built-ins
//! it uses, and linked with a support library that runs each launch's blocks, each block's
//! threads as real threads with a barrier for `__syncthreads` and arrays of its own for
//! `__shared__` ones. The library is built once per machine (see `support`). Device memory
//! is host memory. It is exact about the kernels' arithmetic and indexing, not about timing
//! or the memory model.
//!
//! It does not hide races: the blocks of a launch run in a random order, two at a time
//! (what they interleave is the operating system's choice), and a block's threads start in
//! a random order and yield their core at random points (at their start and around each
//! barrier), all drawn from `ACCEL_EMULATOR_SEED` (default 1) and the launch's number. A
//! kernel that needs block `b - 1` done before block `b`, updates memory another block
//! updates without an atomic, or reads another thread's write without a barrier between
//! them computes wrong values here. `__shared__` arrays start filled with `0xA5` bytes, so
//! reading one before writing it shows too.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The CUDA built-ins the generated code uses, in C++20 with GCC's built-ins and no
/// standard header (parsing those was most of a small site's compile time): what kernels
/// call inline, and libm's functions declared. Launching and scheduling live in the
/// support library ([`SUPPORT`]), compiled once.
const HEADER: &str = r#"struct accel_dim3 { unsigned x, y, z; };
extern thread_local accel_dim3 threadIdx, blockIdx, blockDim, gridDim;
extern "C" void accel_sync();
extern "C" void* accel_shared(unsigned id, unsigned long long bytes);
extern "C" void accel_run(unsigned grid, unsigned block, void (*kernel)(const unsigned long long*), const unsigned long long* params);
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define ACCEL_MATH(name) extern "C" double name(double) noexcept; extern "C" float name##f(float) noexcept;
#define ACCEL_MATH2(name) extern "C" double name(double, double) noexcept; extern "C" float name##f(float, float) noexcept;
ACCEL_MATH(sqrt) ACCEL_MATH(exp) ACCEL_MATH(exp2) ACCEL_MATH(log) ACCEL_MATH(log10) ACCEL_MATH(log2)
ACCEL_MATH(expm1) ACCEL_MATH(log1p) ACCEL_MATH(sin) ACCEL_MATH(cos) ACCEL_MATH(tan) ACCEL_MATH(asin)
ACCEL_MATH(acos) ACCEL_MATH(atan) ACCEL_MATH(sinh) ACCEL_MATH(cosh) ACCEL_MATH(tanh) ACCEL_MATH(asinh)
ACCEL_MATH(acosh) ACCEL_MATH(atanh) ACCEL_MATH(cbrt) ACCEL_MATH(floor) ACCEL_MATH(ceil) ACCEL_MATH(trunc)
ACCEL_MATH(round) ACCEL_MATH(fabs) ACCEL_MATH2(pow) ACCEL_MATH2(atan2) ACCEL_MATH2(hypot) ACCEL_MATH2(fmin)
ACCEL_MATH2(fmax) ACCEL_MATH2(copysign) ACCEL_MATH2(fmod)
extern "C" void* malloc(decltype(sizeof 0)) noexcept;
extern "C" void free(void*) noexcept;
extern "C" double fma(double, double, double) noexcept;
extern "C" float fmaf(float, float, float) noexcept;
static inline bool isnan(double x) { return __builtin_isnan(x); }
static inline bool isinf(double x) { return __builtin_isinf(x); }
static inline bool isfinite(double x) { return __builtin_isfinite(x); }
static inline void __syncthreads() { accel_sync(); }
#define ACCEL_SEQ __ATOMIC_SEQ_CST
// The pointer alone fixes an atomic's type; its values convert to it (as in CUDA).
template <typename T> struct accel_value { typedef T type; };
#define ACCEL_V(T) typename accel_value<T>::type
template <typename T> static inline T atomicCAS(T* p, ACCEL_V(T) c, ACCEL_V(T) v) {
    __atomic_compare_exchange(p, &c, &v, false, ACCEL_SEQ, ACCEL_SEQ);
    return c;
}
template <typename T> static inline T atomicExch(T* p, ACCEL_V(T) v) {
    T old;
    __atomic_exchange(p, &v, &old, ACCEL_SEQ);
    return old;
}
static inline void __threadfence() { __atomic_thread_fence(ACCEL_SEQ); }
// Read-modify-writes by compare-and-swap of the bits (floats included).
#define ACCEL_RMW(name, next, keep)                                      \
template <typename T> static inline T name(T* p, ACCEL_V(T) v) {        \
    T old, want;                                                         \
    __atomic_load(p, &old, ACCEL_SEQ);                                   \
    do { if (keep) break; want = next; }                                 \
    while (!__atomic_compare_exchange(p, &old, &want, false, ACCEL_SEQ, ACCEL_SEQ)); \
    return old;                                                          \
}
ACCEL_RMW(atomicAdd, old + v, false)
ACCEL_RMW(atomicMin, v, !(v < old))
ACCEL_RMW(atomicMax, v, !(old < v))
static inline unsigned __float_as_uint(float x) { unsigned u; __builtin_memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned u) { float x; __builtin_memcpy(&x, &u, 4); return x; }
static inline long long __double_as_longlong(double x) { long long u; __builtin_memcpy(&u, &x, 8); return u; }
static inline double __longlong_as_double(long long u) { double x; __builtin_memcpy(&x, &u, 8); return x; }
template <typename I, typename F> static inline I accel_saturate(F x, I lo, I hi) {
    if (x != x) return 0;
    if (x <= (F)lo) return lo;
    if (x >= (F)hi) return hi;
    return (I)x;
}
#define ACCEL_INT_LIMITS (-__INT_MAX__ - 1), __INT_MAX__
#define ACCEL_UINT_LIMITS 0u, (__INT_MAX__ * 2u + 1u)
#define ACCEL_LL_LIMITS (-__LONG_LONG_MAX__ - 1LL), __LONG_LONG_MAX__
#define ACCEL_ULL_LIMITS 0ULL, (__LONG_LONG_MAX__ * 2ULL + 1ULL)
#define __float2int_rz(x) accel_saturate<int, float>(x, ACCEL_INT_LIMITS)
#define __float2uint_rz(x) accel_saturate<unsigned, float>(x, ACCEL_UINT_LIMITS)
#define __float2ll_rz(x) accel_saturate<long long, float>(x, ACCEL_LL_LIMITS)
#define __float2ull_rz(x) accel_saturate<unsigned long long, float>(x, ACCEL_ULL_LIMITS)
#define __double2int_rz(x) accel_saturate<int, double>(x, ACCEL_INT_LIMITS)
#define __double2uint_rz(x) accel_saturate<unsigned, double>(x, ACCEL_UINT_LIMITS)
#define __double2ll_rz(x) accel_saturate<long long, double>(x, ACCEL_LL_LIMITS)
#define __double2ull_rz(x) accel_saturate<unsigned long long, double>(x, ACCEL_ULL_LIMITS)
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
"#;

/// The emulator's scheduler, a shared library every site's kernels link against.
const SUPPORT: &str = r#"#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
struct accel_dim3 { unsigned x, y, z; };
thread_local accel_dim3 threadIdx, blockIdx, blockDim, gridDim;
static unsigned long long accel_mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
// Scheduling noise (seeded): each thread yields its core 0-3 times at its start and on
// each side of every barrier, so a kernel that reads what another thread writes without a
// barrier between them sees the write missing, whatever order the threads started in.
static thread_local unsigned long long accel_noise;
static void accel_jitter() {
    accel_noise = accel_mix(accel_noise);
    for (unsigned i = accel_noise % 4; i > 0; i--) std::this_thread::yield();
}
// What a block's threads share: their barrier and their `__shared__` arrays, which start
// filled with 0xA5 bytes (a GPU's shared memory starts with whatever was there).
struct accel_block {
    explicit accel_block(unsigned threads) : barrier(threads) {}
    ~accel_block() { for (auto& s : shared) std::free(s.second); }
    std::barrier<> barrier;
    std::mutex lock;
    std::vector<std::pair<unsigned, void*>> shared;
};
static thread_local accel_block* accel_current;
extern "C" void accel_sync() { accel_jitter(); accel_current->barrier.arrive_and_wait(); accel_jitter(); }
extern "C" void* accel_shared(unsigned id, unsigned long long bytes) {
    std::lock_guard<std::mutex> guard(accel_current->lock);
    for (auto& s : accel_current->shared) if (s.first == id) return s.second;
    void* p = std::malloc(bytes ? bytes : 1);
    std::memset(p, 0xA5, bytes);
    accel_current->shared.push_back({id, p});
    return p;
}
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
static const unsigned ACCEL_CONCURRENT_BLOCKS = 2;
// One block: its threads start in a random order and jitter (see accel_jitter).
static void accel_run_block(unsigned b, unsigned block, accel_dim3 grid, void (*kernel)(const unsigned long long*), const unsigned long long* params, unsigned long long seed) {
    accel_block shared(block);
    std::vector<std::thread> threads;
    for (unsigned t : accel_shuffled(block, seed)) {
        unsigned long long noise = accel_mix(seed ^ ((unsigned long long)b << 32 | t));
        threads.emplace_back([&, t, b, noise] {
            threadIdx = {t, 0, 0};
            blockIdx = {b, 0, 0};
            blockDim = {block, 1, 1};
            gridDim = grid;
            accel_current = &shared;
            accel_noise = noise;
            accel_jitter();
            kernel(params);
        });
    }
    for (auto& th : threads) th.join();
}
// The blocks run in a random order, ACCEL_CONCURRENT_BLOCKS at a time.
extern "C" void accel_run(unsigned grid, unsigned block, void (*kernel)(const unsigned long long*), const unsigned long long* params) {
    unsigned long long seed = accel_launch_seed();
    std::vector<unsigned> order = accel_shuffled(grid, seed);
    std::atomic<unsigned> next{0};
    auto worker = [&] {
        for (unsigned i; (i = next++) < grid;)
            accel_run_block(order[i], block, {grid, 1, 1}, kernel, params, accel_mix(seed ^ order[i]));
    };
    std::vector<std::thread> workers;
    for (unsigned w = 1; w < ACCEL_CONCURRENT_BLOCKS && w < grid; w++) workers.emplace_back(worker);
    worker();
    for (auto& th : workers) th.join();
}
"#;

/// A kernel compiled for the emulator: `(blocks, threads, params)`.
pub type EmuKernel = extern "C" fn(u32, u32, *const u64);

/// The kernels of `source` (generated CUDA C), compiled for the CPU.
pub fn load(source: &str, names: &[String]) -> Result<Vec<EmuKernel>, String> {
    let support = support()?;
    let mut code = format!("#include \"{}\"\n", support.header.display());
    code.push_str(&block_shared(source));
    for name in names {
        let arity = arity(source, name).ok_or_else(|| format!("no kernel {name}"))?;
        let args: Vec<String> = (0..arity).map(|k| format!("p[{k}]")).collect();
        code.push_str(&format!(
            "\nextern \"C\" void accel_launch_{name}(unsigned grid, unsigned block, const unsigned long long* p) {{\n    accel_run(grid, block, [](const unsigned long long* p) {{ {name}({}); }}, p);\n}}\n",
            args.join(", ")
        ));
    }
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Files straight in the temporary directory, named by process and count: a directory
    // per process would outlive its files (one empty directory left per test process).
    let stem = format!("accel-emulator-{}-site{k}", std::process::id());
    let src = std::env::temp_dir().join(format!("{stem}.cpp"));
    let lib = std::env::temp_dir().join(format!("{stem}.so"));
    std::fs::write(&src, &code).map_err(|e| e.to_string())?;
    let rpath = format!("-Wl,-rpath,{}", support.dir.display());
    compile_library(
        &lib,
        &[src.as_os_str(), support.library.as_os_str(), rpath.as_ref()],
    )
    .map_err(|e| {
        format!(
            "the emulator could not compile the generated code ({}):\n{e}",
            src.display()
        )
    })?;
    // SAFETY: the library is the one just built from generated code and the header above;
    // its initialisers only set up statics. It stays loaded for the life of the process
    // (leaked), so the function pointers taken from it stay valid.
    let library = unsafe { libloading::Library::new(&lib) }.map_err(|e| e.to_string())?;
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    // A loaded library needs no file: the files go, so that test runs leave nothing behind.
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&lib);
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

/// `source` with each `__shared__ T name[N];` made a reference to the running block's own
/// array (`accel_shared`), so that blocks can run at once as on a GPU.
fn block_shared(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for (id, line) in source.lines().enumerate() {
        let declaration = line
            .trim_start()
            .strip_prefix("__shared__ ")
            .and_then(|rest| {
                let (ty_and_name, size) = rest.trim_end().strip_suffix("];")?.split_once('[')?;
                let (ty, name) = ty_and_name.trim_end().rsplit_once(' ')?;
                Some((ty, name, size))
            });
        match declaration {
            Some((ty, name, size)) => out.push_str(&format!(
                "    {ty} (&{name})[{size}] = *({ty} (*)[{size}])accel_shared({id}, sizeof({ty}[{size}]));\n"
            )),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The flags every compilation shares. Kernels are compiled without optimisation: with
/// the header free of standard includes, a site compiles in a few hundredths of a second
/// plus its own code's share, and the emulator's inputs are small.
const FLAGS: [&str; 5] = ["-std=c++20", "-O0", "-fPIC", "-pthread", "-w"];

/// The header and the support library, built once per machine.
struct Support {
    dir: PathBuf,
    header: PathBuf,
    library: PathBuf,
}

/// The header and the support library, written once per text and compiler into a
/// directory of the temporary directory. Processes share them; each file is written under
/// a temporary name and renamed into place, so a concurrent reader sees all or nothing.
fn support() -> Result<&'static Support, String> {
    static SUPPORT_FILES: std::sync::OnceLock<Result<Support, String>> = std::sync::OnceLock::new();
    SUPPORT_FILES
        .get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut hash = std::collections::hash_map::DefaultHasher::new();
            (HEADER, SUPPORT, compiler(), FLAGS).hash(&mut hash);
            let dir =
                std::env::temp_dir().join(format!("accel-emulator-support-{:016x}", hash.finish()));
            let files = Support {
                header: dir.join("accel_emulator.h"),
                library: dir.join("libaccel_emulator.so"),
                dir,
            };
            if files.header.exists() && files.library.exists() {
                return Ok(files);
            }
            std::fs::create_dir_all(&files.dir).map_err(|e| e.to_string())?;
            let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
            let staged = |name: &str| files.dir.join(format!("staged-{unique}-{name}"));
            let (source, header, library) = (
                staged("support.cpp"),
                staged("header.h"),
                staged("library.so"),
            );
            std::fs::write(&header, HEADER).map_err(|e| e.to_string())?;
            std::fs::rename(&header, &files.header).map_err(|e| e.to_string())?;
            std::fs::write(&source, SUPPORT).map_err(|e| e.to_string())?;
            let built = compile_library(
                &library,
                &[
                    "-O1".as_ref(),
                    "-Wl,-soname,libaccel_emulator.so".as_ref(),
                    source.as_os_str(),
                ],
            );
            let _ = std::fs::remove_file(&source);
            built.map_err(|e| format!("the emulator's support library did not compile: {e}"))?;
            std::fs::rename(&library, &files.library).map_err(|e| e.to_string())?;
            Ok(files)
        })
        .as_ref()
        .map_err(String::clone)
}

/// Builds the shared library `output` with the shared flags and `args` (sources, libraries,
/// further flags); the error is the compiler's messages.
fn compile_library(output: &Path, args: &[&OsStr]) -> Result<(), String> {
    let cxx = compiler();
    let out = Command::new(&cxx)
        .args(FLAGS)
        .args(["-shared", "-o"])
        .arg(output)
        .args(args)
        .output()
        .map_err(|e| format!("could not run {}: {e}", cxx.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
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
__global__ void accel_unguarded_count(unsigned long long count_) {
    unsigned long long* count = (unsigned long long*)count_;
    unsigned long long seen = *count;
    __syncthreads();
    if (threadIdx.x == 0) *count = seen + 1;
}
__global__ void accel_meet(unsigned long long flags_, unsigned long long met_) {
    unsigned* flags = (unsigned*)flags_;
    if (threadIdx.x != 0) return;
    atomicExch(&flags[blockIdx.x], 1u);
    unsigned other = 0;
    for (long i = 0; i < 100000000 && !other; i++) other = atomicAdd(&flags[1 - blockIdx.x], 0u);
    ((unsigned*)met_)[blockIdx.x] = other;
}
__global__ void accel_own_shared(unsigned long long out_) {
    __shared__ unsigned long long mine[64];
    mine[threadIdx.x] = blockIdx.x;
    __syncthreads();
    __syncthreads();
    unsigned long long* out = (unsigned long long*)out_;
    out[blockIdx.x * blockDim.x + threadIdx.x] = mine[(threadIdx.x + 1) % blockDim.x];
}
"#;

    fn kernels() -> Option<Vec<EmuKernel>> {
        if !available() {
            eprintln!("[accel tests] SKIPPED: racy kernels on the emulator: no C++20 compiler");
            return None;
        }
        let names = [
            "accel_chain",
            "accel_neighbour",
            "accel_unguarded_count",
            "accel_meet",
            "accel_own_shared",
        ];
        Some(load(RACY, &names.map(String::from)).unwrap())
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

    #[test]
    fn blocks_run_at_once() {
        let Some(k) = kernels() else { return };
        // Each of two blocks waits for the other to start: only blocks running at once meet.
        let mut flags = [0u32; 2];
        let mut met = [0u32; 2];
        let params = [flags.as_mut_ptr() as u64, met.as_mut_ptr() as u64];
        k[3](2, 32, params.as_ptr());
        assert_eq!(met, [1, 1]);
    }

    #[test]
    fn an_update_without_an_atomic_loses_counts_between_blocks() {
        let Some(k) = kernels() else { return };
        let lost = (0..10).any(|_| {
            let mut count = 0u64;
            let params = [&mut count as *mut u64 as u64];
            k[2](64, 64, params.as_ptr());
            count < 64
        });
        assert!(lost, "10 launches of 64 blocks lost no count");
    }

    #[test]
    fn each_block_has_its_own_shared_arrays() {
        let Some(k) = kernels() else { return };
        for _ in 0..5 {
            let mut out = vec![u64::MAX; 16 * 64];
            let params = [out.as_mut_ptr() as u64];
            k[4](16, 64, params.as_ptr());
            let expected: Vec<u64> = (0..16 * 64).map(|i| i as u64 / 64).collect();
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn shared_declarations_become_the_blocks_own_arrays() {
        let source =
            "__global__ void k() {\n    __shared__ accel_k2_acc sh[256];\n    sh[0] = 1;\n}";
        assert_eq!(
            block_shared(source),
            "__global__ void k() {\n    accel_k2_acc (&sh)[256] = *(accel_k2_acc (*)[256])accel_shared(1, sizeof(accel_k2_acc[256]));\n    sh[0] = 1;\n}\n"
        );
    }
}
