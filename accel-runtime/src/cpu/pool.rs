//! What compiled code calls back into: allocation, parallel launches on the rayon pool,
//! failure reports, and the math functions Cranelift has no instruction for.

use super::abi::Arena;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

/// The state of one compiled run, shared by all its kernels.
pub struct RunCtx {
    /// One arena per pool thread (and one for the calling thread), so that kernels that
    /// allocate (a row per element) do not contend for one lock.
    arenas: Vec<Mutex<Arena>>,
    pub error: Mutex<Option<Failure>>,
}

impl Default for RunCtx {
    fn default() -> Self {
        let shards = rayon::current_num_threads() + 1;
        RunCtx {
            arenas: (0..shards).map(|_| Mutex::new(Arena::default())).collect(),
            error: Mutex::new(None),
        }
    }
}

impl RunCtx {
    /// This thread's arena.
    fn arena(&self) -> &Mutex<Arena> {
        let shard = rayon::current_thread_index().map_or(0, |i| i + 1);
        &self.arenas[shard.min(self.arenas.len() - 1)]
    }

    /// Everything the run allocated, in one arena.
    pub fn take_arena(&self) -> Arena {
        let mut all = Arena::default();
        for a in &self.arenas {
            all.absorb(std::mem::take(
                &mut *a.lock().unwrap_or_else(|e| e.into_inner()),
            ));
        }
        all
    }
}

/// The first failure a compiled run reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Failure {
    pub kind: u32,
    pub a: u64,
    pub b: u64,
}

/// Failure kinds compiled code reports.
pub const FAIL_INDEX: u32 = 1;
pub const FAIL_DIV_ZERO: u32 = 2;
pub const FAIL_DIV_OVERFLOW: u32 = 3;
pub const FAIL_ALLOC: u32 = 4;
pub const FAIL_RANK: u32 = 5;
pub const FAIL_SLICE: u32 = 6;
pub const FAIL_LENGTHS: u32 = 7;
pub const FAIL_IRREGULAR: u32 = 8;
pub const FAIL_ROW_LENGTH: u32 = 9;

impl Failure {
    /// What went wrong, in words.
    pub fn describe(&self) -> String {
        match self.kind {
            FAIL_INDEX => format!(
                "index out of bounds: the len is {} but the index is {}",
                self.b, self.a
            ),
            FAIL_DIV_ZERO => "attempt to divide by zero".into(),
            FAIL_DIV_OVERFLOW => "attempt to divide with overflow".into(),
            FAIL_ALLOC => format!("could not allocate {} bytes", self.a),
            FAIL_RANK => format!(
                "a tensor index has {} coordinates, but the tensor has rank {}",
                self.a, self.b
            ),
            FAIL_SLICE => format!("slice bounds {}..{} are out of range", self.a, self.b),
            FAIL_LENGTHS => format!("map2 lengths differ: {} vs {}", self.a, self.b),
            FAIL_IRREGULAR => format!(
                "a produced sequence of sequences is irregular: row 0 has {} elements, another row {}",
                self.a, self.b
            ),
            FAIL_ROW_LENGTH => format!(
                "a reduce or scan over rows changed the row length: the neutral element has {} elements, a combined row {}",
                self.a, self.b
            ),
            k => format!("compiled code failed (kind {k})"),
        }
    }
}

/// Elements per chunk of a parallel launch of `n` iterations whose iterations are cheap
/// (`grain` large) or costly (`grain` 1, loops in the body): a function of `n` and the
/// code alone, so that float reductions group the same way on every machine; at most 256
/// chunks, enough for uneven work (Mandelbrot rows) to balance over the work-stealing pool.
pub fn chunk_size(n: u64, grain: u64) -> u64 {
    n.div_ceil(256).max(grain).max(1)
}

/// The number of chunks of a launch of `n` iterations.
pub extern "C" fn accel_chunks(n: u64, grain: u64) -> u64 {
    n.div_ceil(chunk_size(n, grain))
}

/// A compiled kernel: `(env, lo, hi, partial, ctx) -> status`.
pub type Kernel = extern "C" fn(*const u64, u64, u64, *mut u64, *const RunCtx) -> u32;

/// Runs `kernel` over `0..n` in chunks on all cores; chunk `c` gets the partial-result slot
/// `partials + c * partial_words`. Returns the first non-zero status.
pub extern "C" fn accel_par(
    ctx: *const RunCtx,
    kernel: u64,
    env: u64,
    n: u64,
    partials: u64,
    partial_words: u64,
    grain: u64,
) -> u32 {
    // SAFETY: `kernel` is the address of a function the JIT compiled with the `Kernel`
    // signature (the code generator passes only such addresses).
    let kernel: Kernel = unsafe { std::mem::transmute::<usize, Kernel>(kernel as usize) };
    let launch = Arc::new(Launch {
        kernel,
        env,
        n,
        size: chunk_size(n, grain),
        chunks: accel_chunks(n, grain),
        partials,
        partial_words,
        ctx: ctx as usize,
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        status: AtomicU32::new(0),
        launcher: std::thread::current(),
    });
    // Chunks run on this thread, in order, while the launch has taken less than
    // `SEQUENTIAL_BUDGET`: a small launch never pays for waking the pool. Then helpers on
    // the pool claim chunks beside this thread, which goes on claiming too, so it never
    // sleeps waiting for them to wake. The partition is the same either way, so results
    // are too.
    let start = std::time::Instant::now();
    while start.elapsed() < SEQUENTIAL_BUDGET && launch.claim_one() {}
    let left = launch
        .chunks
        .saturating_sub(launch.next.load(Ordering::Relaxed));
    let helpers = (rayon::current_num_threads() as u64 - 1).min(left.saturating_sub(1));
    for _ in 0..helpers {
        let l = Arc::clone(&launch);
        rayon::spawn(move || while l.claim_one() {});
    }
    while launch.claim_one() {}
    // Only chunks that helpers claimed are still running: spin briefly, then sleep until
    // the last one wakes this thread (a timeout guards against a lost wake-up).
    let mut spins = 0u32;
    while launch.done.load(Ordering::Acquire) < launch.chunks {
        if spins < 2000 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::park_timeout(std::time::Duration::from_millis(1));
        }
    }
    launch.status.load(Ordering::Relaxed)
}

/// The chunks of one launch, claimed one at a time by the launching thread and helpers.
/// A helper that starts after every chunk is claimed touches nothing but the counters, so
/// it may outlive the launch.
struct Launch {
    kernel: Kernel,
    env: u64,
    n: u64,
    size: u64,
    chunks: u64,
    partials: u64,
    partial_words: u64,
    ctx: usize,
    next: AtomicU64,
    /// Chunks run (or skipped after a failure); the launcher waits for all of them.
    done: AtomicU64,
    /// The first non-zero status.
    status: AtomicU32,
    /// Woken when the last chunk is done.
    launcher: std::thread::Thread,
}

impl Launch {
    /// Claims the next chunk and runs it; false when none is left.
    fn claim_one(&self) -> bool {
        let c = self.next.fetch_add(1, Ordering::Relaxed);
        if c >= self.chunks {
            return false;
        }
        if self.status.load(Ordering::Relaxed) == 0 {
            let lo = c * self.size;
            let hi = (lo + self.size).min(self.n);
            let slot = (self.partials + c * self.partial_words * 8) as *mut u64;
            let s = (self.kernel)(
                self.env as *const u64,
                lo,
                hi,
                slot,
                self.ctx as *const RunCtx,
            );
            if s != 0 {
                let _ = self
                    .status
                    .compare_exchange(0, s, Ordering::Relaxed, Ordering::Relaxed);
            }
        }
        // Release: the chunk's writes are seen by the launcher, which acquires `done`.
        if self.done.fetch_add(1, Ordering::Release) + 1 == self.chunks {
            self.launcher.unpark();
        }
        true
    }
}

/// How long a launch runs its chunks on the calling thread before handing the rest to
/// the pool: about what waking the pool's threads and splitting the work costs.
const SEQUENTIAL_BUDGET: std::time::Duration = std::time::Duration::from_micros(40);

/// Allocates memory for compiled code (uninitialised: the code writes it before reading);
/// it belongs to the run's arena.
pub extern "C" fn accel_alloc(ctx: *const RunCtx, bytes: u64, align: u64) -> u64 {
    // SAFETY: compiled code passes the context pointer it was called with, which the
    // runtime keeps alive for the whole run.
    let ctx = unsafe { &*ctx };
    let mut arena = ctx.arena().lock().unwrap_or_else(|e| e.into_inner());
    arena.alloc(bytes as usize, align as usize) as u64
}

/// Copies `bytes` bytes between non-overlapping buffers of a run.
pub extern "C" fn accel_copy(dst: u64, src: u64, bytes: u64) {
    if bytes > 0 {
        // SAFETY: compiled code passes a destination it allocated for at least `bytes`
        // bytes and a source row of exactly that size (distinct allocations).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes as usize) };
    }
}

/// Records a failure (the first one wins); the reporting code then returns non-zero.
pub extern "C" fn accel_fail(ctx: *const RunCtx, kind: u32, a: u64, b: u64) {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let mut e = ctx.error.lock().unwrap_or_else(|e| e.into_inner());
    e.get_or_insert(Failure { kind, a, b });
}

macro_rules! math1 {
    ($($name:ident: $t:ty => $f:ident),* $(,)?) => {$(
        pub extern "C" fn $name(x: $t) -> $t {
            x.$f()
        }
    )*};
}
macro_rules! math2 {
    ($($name:ident: $t:ty => $f:ident),* $(,)?) => {$(
        pub extern "C" fn $name(x: $t, y: $t) -> $t {
            x.$f(y)
        }
    )*};
}

math1!(
    accel_exp_f32: f32 => exp, accel_exp_f64: f64 => exp,
    accel_exp2_f32: f32 => exp2, accel_exp2_f64: f64 => exp2,
    accel_ln_f32: f32 => ln, accel_ln_f64: f64 => ln,
    accel_log2_f32: f32 => log2, accel_log2_f64: f64 => log2,
    accel_log10_f32: f32 => log10, accel_log10_f64: f64 => log10,
    accel_sin_f32: f32 => sin, accel_sin_f64: f64 => sin,
    accel_cos_f32: f32 => cos, accel_cos_f64: f64 => cos,
    accel_tan_f32: f32 => tan, accel_tan_f64: f64 => tan,
    accel_asin_f32: f32 => asin, accel_asin_f64: f64 => asin,
    accel_acos_f32: f32 => acos, accel_acos_f64: f64 => acos,
    accel_atan_f32: f32 => atan, accel_atan_f64: f64 => atan,
    accel_sinh_f32: f32 => sinh, accel_sinh_f64: f64 => sinh,
    accel_cosh_f32: f32 => cosh, accel_cosh_f64: f64 => cosh,
    accel_tanh_f32: f32 => tanh, accel_tanh_f64: f64 => tanh,
    accel_asinh_f32: f32 => asinh, accel_asinh_f64: f64 => asinh,
    accel_acosh_f32: f32 => acosh, accel_acosh_f64: f64 => acosh,
    accel_atanh_f32: f32 => atanh, accel_atanh_f64: f64 => atanh,
    accel_cbrt_f32: f32 => cbrt, accel_cbrt_f64: f64 => cbrt,
    accel_round_f32: f32 => round, accel_round_f64: f64 => round,
);
math2!(
    accel_powf_f32: f32 => powf, accel_powf_f64: f64 => powf,
    accel_atan2_f32: f32 => atan2, accel_atan2_f64: f64 => atan2,
    accel_hypot_f32: f32 => hypot, accel_hypot_f64: f64 => hypot,
    accel_log_f32: f32 => log, accel_log_f64: f64 => log,
    accel_rem_f32: f32 => rem_euclid_plain, accel_rem_f64: f64 => rem_euclid_plain,
);

/// Float `%` as Rust defines it (the remainder with the dividend's sign).
trait PlainRem {
    fn rem_euclid_plain(self, y: Self) -> Self;
}
impl PlainRem for f32 {
    fn rem_euclid_plain(self, y: f32) -> f32 {
        self % y
    }
}
impl PlainRem for f64 {
    fn rem_euclid_plain(self, y: f64) -> f64 {
        self % y
    }
}

/// `x.sin_cos()`, written to `out[0]` and `out[1]` (one combined evaluation).
pub extern "C" fn accel_sin_cos_f64(x: f64, out: *mut f64) {
    let (s, c) = x.sin_cos();
    // SAFETY: compiled code passes a stack slot of two f64.
    unsafe {
        *out = s;
        *out.add(1) = c;
    }
}

/// `x.sin_cos()` for `f32`.
pub extern "C" fn accel_sin_cos_f32(x: f32, out: *mut f32) {
    let (s, c) = x.sin_cos();
    // SAFETY: compiled code passes a stack slot of two f32.
    unsafe {
        *out = s;
        *out.add(1) = c;
    }
}

pub extern "C" fn accel_powi_f32(x: f32, n: i32) -> f32 {
    x.powi(n)
}
pub extern "C" fn accel_powi_f64(x: f64, n: i32) -> f64 {
    x.powi(n)
}

/// The helpers compiled code may call, by the names the code generator imports them as.
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    macro_rules! syms {
        ($($f:ident),* $(,)?) => { vec![$((stringify!($f), $f as *const u8)),*] };
    }
    syms!(
        accel_chunks,
        accel_par,
        accel_alloc,
        accel_fail,
        accel_copy,
        accel_sin_cos_f32,
        accel_sin_cos_f64,
        accel_exp_f32,
        accel_exp_f64,
        accel_exp2_f32,
        accel_exp2_f64,
        accel_ln_f32,
        accel_ln_f64,
        accel_log2_f32,
        accel_log2_f64,
        accel_log10_f32,
        accel_log10_f64,
        accel_sin_f32,
        accel_sin_f64,
        accel_cos_f32,
        accel_cos_f64,
        accel_tan_f32,
        accel_tan_f64,
        accel_asin_f32,
        accel_asin_f64,
        accel_acos_f32,
        accel_acos_f64,
        accel_atan_f32,
        accel_atan_f64,
        accel_sinh_f32,
        accel_sinh_f64,
        accel_cosh_f32,
        accel_cosh_f64,
        accel_tanh_f32,
        accel_tanh_f64,
        accel_asinh_f32,
        accel_asinh_f64,
        accel_acosh_f32,
        accel_acosh_f64,
        accel_atanh_f32,
        accel_atanh_f64,
        accel_cbrt_f32,
        accel_cbrt_f64,
        accel_round_f32,
        accel_round_f64,
        accel_powf_f32,
        accel_powf_f64,
        accel_atan2_f32,
        accel_atan2_f64,
        accel_hypot_f32,
        accel_hypot_f64,
        accel_log_f32,
        accel_log_f64,
        accel_rem_f32,
        accel_rem_f64,
        accel_powi_f32,
        accel_powi_f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunking_depends_on_n_and_grain_alone_and_covers_it() {
        assert_eq!(accel_chunks(0, 4096), 0);
        assert_eq!(accel_chunks(1, 4096), 1);
        assert_eq!(accel_chunks(4096, 4096), 1);
        assert_eq!(accel_chunks(1 << 25, 4096), 256);
        assert_eq!(
            accel_chunks(1024, 1),
            256,
            "costly iterations spread over many chunks"
        );
        for grain in [1u64, 4096] {
            for n in [1u64, 255, 257, 1000, 65_537, 1 << 20] {
                let (size, chunks) = (chunk_size(n, grain), accel_chunks(n, grain));
                assert!(size * chunks >= n && size * (chunks - 1) < n, "{n}");
            }
        }
    }
}
