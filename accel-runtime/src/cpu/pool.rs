//! The run-time side of compiled code: the thread pool a run uses, parallel launches on
//! it, allocation into the run's arena, and failure reports.

use crate::backend::abi::{Arena, Touch};
use crate::backend::failure::Failure;
use crate::backend::trace;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

mod linger;

/// The number of threads a site's compiled CPU code uses when it runs on this thread: the
/// size of the rayon pool the caller is running on (inside [`rayon::ThreadPool::install`]
/// or a parallel iterator), else `ACCEL_NUM_THREADS` when it is set, else the size of
/// rayon's global pool (all cores, or `RAYON_NUM_THREADS`). A site called from inside a
/// user's pool never starts threads of its own, so nested parallelism does not
/// oversubscribe the machine.
///
/// ```
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(pool.install(accel_runtime::num_threads), 1);
/// ```
pub fn num_threads() -> usize {
    match pool_to_enter() {
        Ok(Some(pool)) => pool.current_num_threads(),
        _ => rayon::current_num_threads(),
    }
}

/// Runs `run` on the pool [`num_threads`] describes; an error when `ACCEL_NUM_THREADS` is
/// not a number of threads.
pub fn on_pool<T: Send>(run: impl FnOnce() -> T + Send) -> Result<T, String> {
    Ok(match pool_to_enter()? {
        // A pool of one thread would only hand the run to its thread and back (two
        // context switches: 9 us against 1.4 for a 2000-element step): it runs here,
        // alone, instead.
        Some(pool) if pool.current_num_threads() == 1 => {
            let _alone = Alone::enter();
            run()
        }
        Some(pool) => pool.install(run),
        None => run(),
    })
}

thread_local! {
    /// Whether this thread runs a site alone (`ACCEL_NUM_THREADS=1`, see [`on_pool`]).
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as running a site alone until dropped (also when the run unwinds).
struct Alone(bool);

impl Alone {
    fn enter() -> Alone {
        Alone(ALONE.with(|a| a.replace(true)))
    }
}

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.with(|a| a.set(self.0));
    }
}

/// The number of threads launches on this thread share: one when it runs a site alone,
/// else the size of the rayon pool it is on.
fn launch_threads() -> u64 {
    match ALONE.with(std::cell::Cell::get) {
        true => 1,
        false => rayon::current_num_threads() as u64,
    }
}

/// The pool a run on this thread must enter: the `ACCEL_NUM_THREADS` pool, unless the
/// thread already works for a rayon pool (the caller's, which the run then uses).
fn pool_to_enter() -> Result<Option<&'static rayon::ThreadPool>, String> {
    Ok(own_pool()?.filter(|_| rayon::current_thread_index().is_none()))
}

/// The pool `ACCEL_NUM_THREADS` asks for (read once per process); `None` when it is unset.
fn own_pool() -> Result<Option<&'static rayon::ThreadPool>, String> {
    static POOL: OnceLock<Result<Option<rayon::ThreadPool>, String>> = OnceLock::new();
    POOL.get_or_init(|| {
        let Ok(value) = std::env::var("ACCEL_NUM_THREADS") else {
            return Ok(None);
        };
        let threads = pool_size(&value)?;
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("accel-{i}"))
            .build()
            .map(Some)
            .map_err(|e| format!("ACCEL_NUM_THREADS={value}: could not start the thread pool: {e}"))
    })
    .as_ref()
    .map(Option::as_ref)
    .map_err(Clone::clone)
}

/// The thread count an `ACCEL_NUM_THREADS` value names.
fn pool_size(value: &str) -> Result<usize, String> {
    match value.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "ACCEL_NUM_THREADS=`{value}` is not a number of threads: use a whole number from 1 \
             (or leave it unset to use every core)"
        )),
    }
}

/// The state of one compiled run, shared by all its kernels.
pub struct RunCtx {
    /// One arena per pool thread (and one for the calling thread), so that kernels that
    /// allocate (a row per element) do not contend for one lock; made on the first such
    /// allocation (most runs make none).
    arenas: OnceLock<Box<[Mutex<Arena>]>>,
    threads: usize,
    /// Whether the run was called from outside every rayon pool (a call from a task of
    /// the pool shares it with the caller's other tasks).
    outside_pools: bool,
    /// What the site function (between launches) allocates: each its own allocation,
    /// recycled at each step of its loops once no variable holds it.
    host: Mutex<Arena>,
    /// The failure to report, with the chunk it happened in.
    error: Mutex<Option<(u64, Failure)>>,
    /// The most threads that ran chunks of one launch, for `ACCEL_LOG`.
    pub peak_threads: AtomicUsize,
    /// The site's kernels compiled again at the optimized tier, once ready, by the
    /// address of the code this run started with: each chunk runs the newest code of its
    /// kernel (see `cpu::tiers`), so a long run switches as soon as it can.
    pub upgrade: Option<KernelUpgrade>,
    /// The same for LLVM's code, which comes after the optimized code.
    pub llvm_upgrade: Option<KernelUpgrade>,
    /// Asked at chunks while the run has no LLVM code: whether the site has become hot
    /// during this run (then it queues its LLVM compile, see `cpu::tiers`).
    pub hot_check: Option<HotCheck>,
    /// Words the site keeps from call to call (a filter's guess at how much it keeps; see
    /// [`accel_site_word`]).
    pub site_words: Option<Arc<[AtomicU64]>>,
}

/// A site's check of whether it is hot, told how long a run has been running and whether
/// it has run on one thread of a pool of more so far.
pub type HotCheckFn = Arc<dyn Fn(std::time::Duration, bool) + Send + Sync>;

/// What a run asks, now and then as its chunks start, of the site it runs: whether it has
/// run long enough to become hot (see `cpu::tiers`).
pub struct HotCheck {
    /// Told how long the run has been running; the site's own, made once.
    pub check: HotCheckFn,
    /// When the run started.
    pub start: std::time::Instant,
    /// Chunks started so far.
    chunks: AtomicU32,
}

impl HotCheck {
    /// The check of a run that started at `start`.
    pub fn new(check: HotCheckFn, start: std::time::Instant) -> Self {
        HotCheck {
            check,
            start,
            chunks: AtomicU32::new(0),
        }
    }

    /// A chunk starts: every eighth asks the site (reading the clock at every chunk cost a
    /// loop of tiny launches 5% of its time; a run's first chunks have hardly run, and the
    /// site is asked again when the call ends). `alone` says whether the run has been
    /// alone (see [`RunCtx::ran_alone`]), asked only then.
    fn chunk_starts(&self, alone: impl FnOnce() -> bool) {
        if self.chunks.fetch_add(1, Ordering::Relaxed) % 8 == 7 {
            (self.check)(self.start.elapsed(), alone());
        }
    }
}

impl RunCtx {
    /// The context of a run on a pool of `threads` threads.
    pub fn new(threads: usize) -> Self {
        RunCtx {
            arenas: OnceLock::new(),
            threads,
            outside_pools: rayon::current_thread_index().is_none(),
            host: Mutex::new(Arena::default()),
            error: Mutex::new(None),
            peak_threads: AtomicUsize::new(1),
            upgrade: None,
            llvm_upgrade: None,
            hot_check: None,
            site_words: None,
        }
    }

    /// The newest code of `kernel`: LLVM's once that is compiled, else its optimized
    /// tier's once that is.
    fn kernel_now(&self, kernel: Kernel) -> Kernel {
        if let Some(check) = &self.hot_check {
            check.chunk_starts(|| self.ran_alone());
        }
        let llvm = self.llvm_upgrade.as_ref().and_then(|u| u.get());
        let Some(newer) = llvm.or_else(|| self.upgrade.as_ref().and_then(|u| u.get())) else {
            return kernel;
        };
        match newer.iter().find(|(old, _)| *old == kernel as usize as u64) {
            Some(&(_, new)) => {
                SWITCHED_CHUNKS.fetch_add(1, Ordering::Relaxed);
                if llvm.is_some() {
                    LLVM_SWITCHED_CHUNKS.fetch_add(1, Ordering::Relaxed);
                }
                // SAFETY: the upgrade maps a kernel's address to the address of the same
                // kernel compiled again (the same program and signature, see
                // `cpu::tiers`).
                unsafe { std::mem::transmute::<usize, Kernel>(new as usize) }
            }
            None => kernel,
        }
    }

    /// Whether the run, called from outside every pool, has used one thread so far of a
    /// pool of more: the others idle, as far as accel knows (see
    /// `tiers::ALONE_LLVM_AFTER_MS`).
    pub fn ran_alone(&self) -> bool {
        self.outside_pools && self.threads > 1 && self.peak_threads.load(Ordering::Relaxed) == 1
    }

    /// This thread's arena.
    fn arena(&self) -> &Mutex<Arena> {
        let arenas = self.arenas.get_or_init(|| {
            (0..self.threads + 1)
                .map(|_| Mutex::new(Arena::default()))
                .collect()
        });
        let shard = rayon::current_thread_index().map_or(0, |i| i + 1);
        &arenas[shard.min(arenas.len() - 1)]
    }

    /// The failure the run reports, if one happened.
    pub fn take_failure(&mut self) -> Option<Failure> {
        let e = self.error.get_mut().unwrap_or_else(|e| e.into_inner());
        e.take().map(|(_, f)| f)
    }

    /// Everything the run allocated, in one arena.
    pub fn take_arena(&mut self) -> Arena {
        let mut all = std::mem::take(self.host.get_mut().unwrap_or_else(|e| e.into_inner()));
        for a in self.arenas.get_mut().into_iter().flat_map(|a| a.iter_mut()) {
            all.absorb(std::mem::take(
                a.get_mut().unwrap_or_else(|e| e.into_inner()),
            ));
        }
        all
    }
}

/// Elements per chunk of a parallel launch of `n` iterations whose iterations are cheap
/// (`grain` large) or costly (`grain` below a gang, loops in the body): a function of `n`
/// and the code alone, so that float reductions group the same way on every machine; at
/// most 256 chunks, enough for uneven work (Mandelbrot rows) to balance over the
/// work-stealing pool.
///
/// Fewer costly iterations than a gang (a wavefront's tiles, each a loop nest) fill no
/// gang and run as scalar code anyway: one chunk each, so they spread over the threads
/// instead of running one after another on one.
pub fn chunk_size(n: u64, grain: u64) -> u64 {
    if n < CHUNK_ALIGN && grain < CHUNK_ALIGN {
        return 1;
    }
    // Whole gangs (SPMD kernels run a chunk's last few indices as scalar code), each
    // starting at a multiple of its width.
    n.div_ceil(256)
        .max(grain)
        .max(1)
        .next_multiple_of(CHUNK_ALIGN)
}

/// What chunks of a launch start at multiples of: the widest gang of SPMD kernels.
pub const CHUNK_ALIGN: u64 = 32;

/// [`chunk_size`] for compiled code (a chunk's index is its start over this).
pub extern "C" fn accel_chunk_size(n: u64, grain: u64) -> u64 {
    chunk_size(n, grain)
}

/// The number of chunks of a launch of `n` iterations.
pub extern "C" fn accel_chunks(n: u64, grain: u64) -> u64 {
    n.div_ceil(chunk_size(n, grain))
}

/// The number of threads of the pool the run is on (compiled code sizes work by it where
/// the grouping cannot change a result).
pub extern "C" fn accel_threads() -> u64 {
    launch_threads()
}

/// Each kernel's address with the address of its optimized code, once compiled (see
/// `cpu::tiers`).
pub type KernelUpgrade = Arc<OnceLock<Vec<(u64, u64)>>>;

/// How many chunks (or single-chunk launches) of runs that started on quick code ran
/// their kernel's optimized code (tests of the tiers).
pub static SWITCHED_CHUNKS: AtomicUsize = AtomicUsize::new(0);

/// How many of those ran LLVM's code.
pub static LLVM_SWITCHED_CHUNKS: AtomicUsize = AtomicUsize::new(0);

/// The newest code of `kernel` in the run of `ctx` (see [`RunCtx::upgrade`]).
fn newest(ctx: *const RunCtx, kernel: Kernel) -> Kernel {
    if ctx.is_null() {
        return kernel;
    }
    // SAFETY: compiled code passes the context of the run calling it, alive until the run
    // returns (see `CpuSite::run`), and a launch's chunks run while the launch does.
    unsafe { &*ctx }.kernel_now(kernel)
}

/// A compiled kernel: `(env, lo, hi, partial, ctx) -> status`.
pub type Kernel = extern "C" fn(*const u64, u64, u64, *mut u64, *const RunCtx) -> u32;

/// Runs `kernel` over `0..n` in chunks on all cores; chunk `c` gets the partial-result slot
/// `partials + c * partial_words`. Returns the first non-zero status.
///
/// A launch runs its first chunks on the calling thread alone while they take less than
/// `SEQUENTIAL_BUDGET` (all of them on a pool of one thread), unless `eager` is non-zero:
/// then the pool's threads are woken before the first chunk. An operation whose chunks it
/// made large on purpose (a histogram's, a few private histograms long) asks for that,
/// since otherwise its whole first chunk would run alone.
#[allow(clippy::too_many_arguments)] // The ABI compiled code calls: one word per argument.
pub extern "C" fn accel_par(
    ctx: *const RunCtx,
    kernel: u64,
    env: u64,
    n: u64,
    partials: u64,
    partial_words: u64,
    grain: u64,
    eager: u64,
) -> u32 {
    // SAFETY: `kernel` is the address of a function the JIT compiled with the `Kernel`
    // signature (the code generator passes only such addresses).
    let kernel: Kernel = unsafe { std::mem::transmute::<usize, Kernel>(kernel as usize) };
    let kernel = newest(ctx, kernel);
    match accel_chunks(n, grain) {
        // No chunk: nothing runs (the caller allocated no partial results).
        0 => return 0,
        // One chunk (a small launch, a loop's step in a site): run it here, no bookkeeping.
        1 => {
            let run = || kernel(env as *const u64, 0, n, partials as *mut u64, ctx);
            return run_chunk(run, 0, 1, (0, n));
        }
        _ => {}
    }
    let threads = launch_threads();
    let chunks = accel_chunks(n, grain);
    // A launch from outside every pool (a site called from the program's own threads)
    // takes helpers still awake from the launches before (see `linger`).
    let shared = threads > 1 && rayon::current_thread_index().is_none();
    let launch = Arc::new(Launch {
        kernel,
        env,
        n,
        size: chunk_size(n, grain),
        chunks,
        partials,
        partial_words,
        ctx: ctx as usize,
        ends: AtomicU64::new(chunks << 32),
        failed: AtomicU64::new(u64::MAX),
        done: AtomicU64::new(0),
        helpers_ran: AtomicUsize::new(0),
        status: AtomicU32::new(0),
        launcher: std::thread::current(),
        seats: AtomicU64::new((threads - 1).min(chunks - 1)),
        shared,
    });
    if shared {
        linger::publish(&launch);
    }
    // Unless the launch is eager, chunks run on this thread, in order, while the launch
    // has taken less than `SEQUENTIAL_BUDGET`: a small launch never pays for waking the
    // pool (helpers already awake join it meanwhile). Then helpers on the pool claim
    // chunks beside this thread, which goes on claiming too, so it never sleeps waiting
    // for them to wake. The partition is the same either way, so results are too.
    let mut launcher_counted = true;
    if eager == 0 && threads > 1 {
        run_within_budget(&launch, &mut launcher_counted);
    }
    let left = launch.unclaimed();
    let helpers = launch
        .seats
        .load(Ordering::Relaxed)
        .min(left.saturating_sub(1));
    for _ in 0..helpers {
        let l = Arc::clone(&launch);
        rayon::spawn(move || linger::help(l));
    }
    while launch.claim_one(&mut launcher_counted, End::Front) {}
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
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let threads = 1 + launch.helpers_ran.load(Ordering::Relaxed);
    ctx.peak_threads.fetch_max(threads, Ordering::Relaxed);
    launch.status.load(Ordering::Relaxed)
}

/// Runs chunks of `launch` on this thread, in order, until they have taken
/// `SEQUENTIAL_BUDGET` or none is left. The clock is read after the first chunk, then once
/// per a share of the budget that the first chunk's time predicts (reading it costs about as
/// much as a small chunk on some virtual machines).
fn run_within_budget(launch: &Launch, counted: &mut bool) {
    let start = std::time::Instant::now();
    let (mut claimed, mut check_every) = (0u32, 1u32);
    while launch.claim_one(counted, End::Front) {
        claimed += 1;
        if claimed % check_every != 0 {
            continue;
        }
        let spent = start.elapsed();
        if spent >= SEQUENTIAL_BUDGET {
            return;
        }
        if claimed == 1 {
            // A launch whose chunks, at the first one's pace, would outlast the budget
            // wakes the pool now rather than after the budget.
            let left = launch.chunks.saturating_sub(1) as u128;
            if spent.as_nanos().saturating_mul(left) > SEQUENTIAL_BUDGET.as_nanos() {
                return;
            }
            // Chunks between readings: about an eighth of the budget's worth.
            let per_chunk = spent.as_nanos().max(1);
            let share = SEQUENTIAL_BUDGET.as_nanos() / 8 / per_chunk;
            check_every = share.clamp(1, 64) as u32;
        }
    }
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
    /// The chunks not claimed yet, `front..back`, packed as `back << 32 | front`. The
    /// launcher claims from the front, helpers from the back: each thread then walks a
    /// contiguous run of the data, as rayon's halving does (a stencil whose chunks two
    /// threads took in turn ran 1.4x slower: every chunk restarts the memory streams and
    /// rereads its neighbours' border rows).
    ends: AtomicU64,
    /// The lowest chunk that failed (`u64::MAX`: none). Chunks after it are skipped and
    /// those before still run, so the failure reported is the first in index order,
    /// whichever thread ran what.
    failed: AtomicU64,
    /// Chunks run (or skipped after a failure); the launcher waits for all of them.
    done: AtomicU64,
    /// The first non-zero status.
    status: AtomicU32,
    /// Helpers that ran at least one chunk (counted before it is done, so the launcher
    /// sees every one once all chunks are).
    helpers_ran: AtomicUsize,
    /// Woken when the last chunk is done.
    launcher: std::thread::Thread,
    /// How many more helpers may join (the pool's threads beside the launcher).
    seats: AtomicU64,
    /// Whether the launcher works for no pool: helpers of such launches wait a while
    /// for the next one (see `linger`).
    shared: bool,
}

impl Launch {
    /// Takes a helper's seat; false when the launch has all the helpers it may have.
    fn take_seat(&self) -> bool {
        self.seats
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1))
            .is_ok()
    }

    /// Runs chunks until none is left, as a helper.
    fn help(&self) {
        let mut counted = false;
        while self.claim_one(&mut counted, End::Back) {}
    }

    /// How many chunks no thread has claimed yet.
    fn unclaimed(&self) -> u64 {
        let ends = self.ends.load(Ordering::Relaxed);
        (ends >> 32).saturating_sub(ends & 0xffff_ffff)
    }

    /// Claims the chunk at `end` of those left; `None` when none is left.
    fn claim(&self, end: End) -> Option<u64> {
        let mut ends = self.ends.load(Ordering::Relaxed);
        loop {
            let (front, back) = (ends & 0xffff_ffff, ends >> 32);
            if front >= back {
                return None;
            }
            let (next, c) = match end {
                End::Front => (back << 32 | (front + 1), front),
                End::Back => ((back - 1) << 32 | front, back - 1),
            };
            match self
                .ends
                .compare_exchange_weak(ends, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(c),
                Err(now) => ends = now,
            }
        }
    }

    /// Claims a chunk at `end` and runs it; false when none is left. A helper's first
    /// chunk counts it among those that ran (`counted` is its own flag).
    fn claim_one(&self, counted: &mut bool, end: End) -> bool {
        let Some(c) = self.claim(end) else {
            return false;
        };
        if !*counted {
            *counted = true;
            self.helpers_ran.fetch_add(1, Ordering::Relaxed);
        }
        if c < self.failed.load(Ordering::Relaxed) {
            let lo = c * self.size;
            let hi = (lo + self.size).min(self.n);
            let slot = (self.partials + c * self.partial_words * 8) as *mut u64;
            CHUNK.set(c);
            let kernel = newest(self.ctx as *const RunCtx, self.kernel);
            let run = || {
                kernel(
                    self.env as *const u64,
                    lo,
                    hi,
                    slot,
                    self.ctx as *const RunCtx,
                )
            };
            let s = run_chunk(run, c, self.chunks, (lo, hi));
            CHUNK.set(0);
            if s != 0 {
                self.failed.fetch_min(c, Ordering::Relaxed);
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

/// Runs chunk `c` of `chunks` (its indices `lo..hi`), recorded in the trace
/// (`ACCEL_TRACE`) when one is written; returns the kernel's status.
fn run_chunk(run: impl FnOnce() -> u32, c: u64, chunks: u64, (lo, hi): (u64, u64)) -> u32 {
    if !trace::enabled() {
        return run();
    }
    let start = std::time::Instant::now();
    let status = run();
    let args = serde_json::json!({ "chunk": c, "of": chunks, "indices": [lo, hi] });
    trace::complete("chunk", "chunk", start, args);
    status
}

/// Which end of a launch's chunks left a thread claims from.
#[derive(Clone, Copy)]
enum End {
    Front,
    Back,
}

thread_local! {
    /// The chunk this thread runs (0 outside launches): a failure's place in index order.
    static CHUNK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
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

/// Allocates memory of its own for the site function (between launches): results adopt
/// it, and loops recycle it (see [`accel_recycle`]). `sparse` (0 or 1) says the code will
/// write only parts of it ([`Touch::Sparse`]).
pub extern "C" fn accel_alloc_host(ctx: *const RunCtx, bytes: u64, align: u64, sparse: u64) -> u64 {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let mut host = ctx.host.lock().unwrap_or_else(|e| e.into_inner());
    let touch = if sparse == 0 {
        Touch::Whole
    } else {
        Touch::Sparse
    };
    host.alloc_own(bytes as usize, align as usize, touch) as u64
}

/// [`accel_alloc_host`] for a result in rows of `row` bytes (see `layout::row_leaves`),
/// written whole: the allocation a whole number of rows, which the result's `Vec` adopts.
pub extern "C" fn accel_alloc_rows(ctx: *const RunCtx, bytes: u64, align: u64, row: u64) -> u64 {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let mut host = ctx.host.lock().unwrap_or_else(|e| e.into_inner());
    host.alloc_own_of(bytes as usize, align as usize, Touch::Whole, row as usize) as u64
}

/// Zeroed memory for a tensor made in compiled code: of the site function's own where
/// `host` is 1 (loops recycle it), else from the running thread's arena.
pub extern "C" fn accel_alloc_zeroed(ctx: *const RunCtx, bytes: u64, align: u64, host: u64) -> u64 {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    if host == 1 {
        let mut host = ctx.host.lock().unwrap_or_else(|e| e.into_inner());
        return host.alloc_own_zeroed(bytes as usize, align as usize) as u64;
    }
    let mut arena = ctx.arena().lock().unwrap_or_else(|e| e.into_inner());
    let p = arena.alloc(bytes as usize, align as usize);
    if !p.is_null() {
        // SAFETY: the arena just gave `p`, `bytes` long.
        unsafe { std::ptr::write_bytes(p, 0, bytes as usize) };
    }
    p as u64
}

/// Whether the site function allocated `ptr` itself, at least `bytes` long (1) or not (0):
/// a sequence whose memory a `create` may write in place (see `codegen::in_place`), never a
/// caller's.
pub extern "C" fn accel_host_owns(ctx: *const RunCtx, ptr: u64, bytes: u64) -> u64 {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let host = ctx.host.lock().unwrap_or_else(|e| e.into_inner());
    let owns = host.owns(ptr as usize, bytes as usize);
    if owns {
        CREATES_IN_PLACE.fetch_add(1, Ordering::Relaxed);
    }
    u64::from(owns)
}

/// How many `create`s wrote in place (tests of `codegen::in_place`).
pub static CREATES_IN_PLACE: AtomicUsize = AtomicUsize::new(0);

/// The address of the site's word `k` (see [`RunCtx::site_words`]): code keeps no
/// address of this process in it, so that its object code can be kept on disk.
pub extern "C" fn accel_site_word(ctx: *const RunCtx, k: u64) -> u64 {
    // A site compiled for more words than it has (never: every tier compiles the same
    // program) reads and writes one spare word, a hint only.
    static SPARE: AtomicU64 = AtomicU64::new(0);
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let word = ctx
        .site_words
        .as_ref()
        .and_then(|w| w.get(k as usize))
        .unwrap_or(&SPARE);
    word as *const AtomicU64 as u64
}

/// A mark of the site function's allocations so far (a loop's start).
pub extern "C" fn accel_host_mark(ctx: *const RunCtx) -> u64 {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    ctx.host
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .own_mark() as u64
}

/// At the end of a step of a loop of the site function: takes back what it allocated
/// since `mark` that none of the `count` addresses at `live` (the pointers of the values
/// its variables hold) points into.
pub extern "C" fn accel_recycle(ctx: *const RunCtx, mark: u64, live: *const u64, count: u64) {
    // SAFETY: as in `accel_alloc`; compiled code passes a stack array of `count` words.
    let (ctx, live) = unsafe { (&*ctx, std::slice::from_raw_parts(live, count as usize)) };
    let mut host = ctx.host.lock().unwrap_or_else(|e| e.into_inner());
    host.recycle(mark as usize, live);
}

/// Copies `bytes` bytes between non-overlapping buffers of a run.
pub extern "C" fn accel_copy(dst: u64, src: u64, bytes: u64) {
    if bytes > 0 {
        // SAFETY: compiled code passes a destination it allocated for at least `bytes`
        // bytes and a source row of exactly that size (distinct allocations).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes as usize) };
    }
}

/// Records a failure: the one of the lowest chunk wins (the first of a chunk, which runs
/// in order); the reporting code then returns non-zero.
pub extern "C" fn accel_fail(ctx: *const RunCtx, kind: u32, a: u64, b: u64) {
    // SAFETY: as in `accel_alloc`.
    let ctx = unsafe { &*ctx };
    let chunk = CHUNK.get();
    let mut e = ctx.error.lock().unwrap_or_else(|e| e.into_inner());
    if e.as_ref().is_none_or(|(first, _)| chunk < *first) {
        *e = Some((chunk, Failure { code: kind, a, b }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_count_is_a_whole_number_from_one() {
        assert_eq!(pool_size("4"), Ok(4));
        assert_eq!(pool_size(" 1 "), Ok(1));
        for bad in ["0", "-2", "four", ""] {
            assert_eq!(
                pool_size(bad),
                Err(format!(
                    "ACCEL_NUM_THREADS=`{bad}` is not a number of threads: use a whole number \
                     from 1 (or leave it unset to use every core)"
                ))
            );
        }
    }

    #[test]
    fn chunking_depends_on_n_and_grain_alone_and_covers_it() {
        assert_eq!(accel_chunks(0, 4096), 0);
        assert_eq!(accel_chunks(1, 4096), 1);
        assert_eq!(accel_chunks(4096, 4096), 1);
        assert_eq!(accel_chunks(1 << 25, 4096), 256);
        // Chunks hold whole gangs (up to 32 lanes), so 1024 costly iterations make 32
        // chunks.
        assert_eq!(
            accel_chunks(1024, 1),
            32,
            "costly iterations spread over many chunks"
        );
        for n in [32u64, 33, 1000, 1 << 20] {
            assert_eq!(chunk_size(n, 1) % CHUNK_ALIGN, 0, "{n}");
        }
        // Fewer costly iterations than a gang: one chunk each; cheap ones: one chunk.
        assert_eq!(accel_chunks(15, 4), 15);
        assert_eq!(accel_chunks(15, 4096), 1);
        for grain in [1u64, 4, 4096] {
            for n in [1u64, 15, 16, 255, 257, 1000, 65_537, 1 << 20] {
                let (size, chunks) = (chunk_size(n, grain), accel_chunks(n, grain));
                assert!(size * chunks >= n && size * (chunks - 1) < n, "{n}");
            }
        }
    }
}
