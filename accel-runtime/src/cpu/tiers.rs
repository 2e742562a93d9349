//! Tiers of a site's CPU code (`ACCEL_TIER`). Cranelift's backtracking register
//! allocator is four fifths of a site's compile time; its single-pass allocator compiles
//! 3-6x faster (the corpus's largest sites: 18-43 ms against 5-13) but spills more in
//! loops short of registers (adi's sweeps ran 2.3x slower). So by default (`adaptive`) a
//! site's first call compiles the quick code and runs it at once, while one background
//! thread compiles the same program with the backtracking allocator; calls after it is
//! ready run that, and so does the rest of a call already running: its launches take each
//! chunk's kernel from the newest code (the two compiles define the same functions in the
//! same order, so kernel `k` of one is kernel `k` of the other). The quick code's gangs
//! are narrower (four lanes, see `codegen::Gen::max_groups`), but every lane runs the
//! same operations as at any width, so both tiers compute the same results, bit for bit.
//!
//! A site that keeps running (about as long as its LLVM compile is expected to take, see
//! [`llvm_threshold_ms`]) is compiled once more, by LLVM where its library is present
//! (`cpu::llvm`): the same Cranelift IR, so the same bits; calls that start after it is
//! ready run it (a running call keeps the code it has). A site whose calls leave the
//! pool's other threads idle (launches too small to split) is compiled sooner, on an idle
//! core (see [`ALONE_LLVM_AFTER_MS`]).
//!
//! `ACCEL_TIER=cranelift` never compiles with LLVM; `optimized` compiles the optimized
//! code on the first call (as before tiers: steady timings from the first call, no
//! background thread); `quick` never tiers up; `llvm` compiles LLVM's code on the first
//! call.

use super::codegen::{Compiled, Tier};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// Which code a site gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Quick code first, optimized code from the background when ready, and LLVM's code
    /// (where the library is present) once the site has run long enough to pay for its
    /// compile.
    Adaptive,
    /// As `Adaptive`, with Cranelift's code only.
    Cranelift,
    /// Quick code only.
    Quick,
    /// Optimized code from the first call.
    Optimized,
    /// LLVM's code from the first call (`cpu::llvm`); Cranelift's optimized code where
    /// LLVM cannot compile the site, with a warning saying why.
    Llvm,
}

impl Policy {
    /// The tier the first call's code is compiled at.
    pub fn first_tier(self) -> Tier {
        match self {
            Policy::Optimized => Tier::Optimized,
            Policy::Llvm => Tier::Llvm,
            Policy::Adaptive | Policy::Cranelift | Policy::Quick => Tier::Quick,
        }
    }
}

thread_local! {
    static FORCED: std::cell::Cell<Option<Policy>> = const { std::cell::Cell::new(None) };
}

/// The policy in force: [`with_policy`]'s on this thread, else `ACCEL_TIER`'s
/// (`adaptive`, the default; `quick`; `optimized`). An unknown value warns once and means
/// `adaptive`.
pub fn policy() -> Policy {
    if let Some(p) = FORCED.get() {
        return p;
    }
    static FROM_ENV: OnceLock<Policy> = OnceLock::new();
    *FROM_ENV.get_or_init(|| match std::env::var("ACCEL_TIER").as_deref() {
        Err(_) | Ok("adaptive") | Ok("") => Policy::Adaptive,
        Ok("quick") => Policy::Quick,
        Ok("optimized") => Policy::Optimized,
        Ok("llvm") => Policy::Llvm,
        Ok("cranelift") => Policy::Cranelift,
        Ok(other) => {
            crate::backend::log::warning!(
                "ACCEL_TIER={other} is not a tier (adaptive, cranelift, quick, optimized, llvm): adaptive"
            );
            Policy::Adaptive
        }
    })
}

/// Runs `f` with sites compiled under `p` on this thread (tests compare the tiers).
pub fn with_policy<T>(p: Policy, f: impl FnOnce() -> T) -> T {
    let before = FORCED.replace(Some(p));
    let r = f();
    FORCED.set(before);
    r
}

/// A site's optimized code, once compiled in the background.
#[derive(Default)]
pub struct Upgrade {
    /// The optimized code: the site function of calls from then on.
    pub code: OnceLock<Compiled>,
    /// Each quick function's address with its optimized one's, for runs already going
    /// (see `pool::RunCtx::upgrade`).
    pub kernels: super::pool::KernelUpgrade,
    /// LLVM's code, once the site is hot and its background compile is done: the site
    /// function of calls from then on.
    pub llvm: OnceLock<Compiled>,
    /// Each quick and optimized function's address with LLVM's, for runs already going.
    pub llvm_kernels: super::pool::KernelUpgrade,
    /// Whether the site tiers up to LLVM, and after how many milliseconds of running.
    llvm_after_ms: Option<f64>,
    /// Nanoseconds its calls have run.
    ran_ns: AtomicU64,
    /// Whether a call ran other than alone (`pool::RunCtx::ran_alone`: on more than one
    /// thread, on a pool of one, or from a pool's task; see [`Upgrade::hot`]).
    shared: AtomicBool,
    /// Whether its LLVM compile is queued.
    llvm_queued: AtomicBool,
    /// Whether its LLVM code was looked for in the disk cache.
    looked: AtomicBool,
}

/// Each function of the `older` codes with the same function of `newer`, for the chunks of
/// runs already going. The same program defines the same functions in the same order;
/// were it ever otherwise, that code is left out and only calls from now on switch.
fn switches(older: &[&Compiled], newer: &Compiled) -> Vec<(u64, u64)> {
    older
        .iter()
        .filter(|o| o.functions.len() == newer.functions.len())
        .flat_map(|o| {
            o.functions
                .iter()
                .copied()
                .zip(newer.functions.iter().copied())
        })
        .collect()
}

/// How long a site runs before its LLVM compile is queued, given how long its quick code
/// took to compile: about as long as LLVM's compile is expected to take (a rent-or-buy
/// rule: the time spent running slower code is at most the compile's own), which is
/// 30-80 times the quick compile (blur 3.2 against 226 ms, gemver 1.4 against 55, adi 5
/// against 250-335, nussinov 1.4 against 42, on 2 busy cores). On two cores the compile
/// takes one from the site's own work, so a program that stops soon should not pay it.
pub fn llvm_threshold_ms(quick_compile_ms: f64) -> f64 {
    (50.0 * quick_compile_ms).max(20.0)
}

/// How long a site whose calls run on one thread, while the pool has more, runs before its
/// LLVM compile is queued: the compile then takes a core the site leaves idle, not the
/// site's own time, so waiting for the rent-or-buy threshold only runs slower code
/// longer. A loop of launches too small to split (jacobi-1d's 2000-point steps, durbin,
/// trisolv) is such a site: its 128-bit Cranelift code runs at the sequential loop's pace,
/// LLVM's wider vectors 15-30% faster, and at 0.5-3 ms a call it would take 30-150 calls to
/// reach the rent-or-buy threshold.
pub const ALONE_LLVM_AFTER_MS: f64 = 5.0;

impl Upgrade {
    /// The upgrades of a site under the adaptive policies: LLVM's code after
    /// `llvm_after_ms` of running, when given.
    pub fn new(llvm_after_ms: Option<f64>) -> Upgrade {
        Upgrade {
            llvm_after_ms,
            ..Upgrade::default()
        }
    }

    /// Adds a call's run time (see [`Upgrade::hot`]); `alone`: whether it ran on one
    /// thread of a pool of more.
    pub fn ran(&self, elapsed: std::time::Duration, alone: bool) {
        let ns = elapsed.as_nanos() as u64;
        self.ran_ns.fetch_add(ns, Ordering::Relaxed);
        if !alone {
            self.shared.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the site's calls so far and a call `running` this long make it hot; true
    /// once (the caller then queues its LLVM compile). `alone`: whether the running call
    /// has used one thread of a pool of more so far; when every call has, the site is hot
    /// after [`ALONE_LLVM_AFTER_MS`] (the compile takes an idle core) unless its
    /// rent-or-buy threshold comes first.
    pub fn hot(&self, running: std::time::Duration, alone: bool) -> bool {
        let Some(mut after_ms) = self.llvm_after_ms else {
            return false;
        };
        if alone && !self.shared.load(Ordering::Relaxed) {
            after_ms = after_ms.min(ALONE_LLVM_AFTER_MS);
        }
        let total = self.ran_ns.load(Ordering::Relaxed) + running.as_nanos() as u64;
        total as f64 >= after_ms * 1e6
            && !self.llvm_queued.load(Ordering::Relaxed)
            && !self.llvm_queued.swap(true, Ordering::AcqRel)
    }

    /// Whether the site's calls so far and a call `running` this long have run long enough
    /// (2 ms) for a look for its LLVM code in the disk cache; true once. (Looking generates
    /// the site's module for LLVM, a few milliseconds of a background thread, which a site
    /// that runs less would not repay.)
    pub fn due_for_a_look(&self, running: std::time::Duration) -> bool {
        if self.llvm_after_ms.is_none() {
            return false;
        }
        self.ran_ns.load(Ordering::Relaxed) + running.as_nanos() as u64 >= 2_000_000
            && !self.llvm_queued.load(Ordering::Relaxed)
            && !self.looked.swap(true, Ordering::AcqRel)
    }

    /// Whether the site may still become hot (it tiers up to LLVM and its compile is not
    /// queued yet).
    pub fn may_get_hot(&self) -> bool {
        self.llvm_after_ms.is_some() && !self.llvm_queued.load(Ordering::Relaxed)
    }

    /// Installs LLVM's code `llvm`, compiled from the program `quick` was (or loaded from
    /// disk): later calls run it, the chunks of runs already going switch to it, and the
    /// site no longer gets hot. False when the site had LLVM's code already (a compile
    /// queued while the disk cache was looked in finds the same code there).
    pub fn install_llvm(&self, quick: &Compiled, llvm: Compiled) -> bool {
        self.llvm_queued.store(true, Ordering::Release);
        if self.llvm.get().is_some() {
            return false;
        }
        let older: Vec<&Compiled> = std::iter::once(quick).chain(self.code.get()).collect();
        let _ = self.llvm_kernels.set(switches(&older, &llvm));
        self.llvm.set(llvm).is_ok()
    }

    /// Installs `optimized` as the code replacing `quick`.
    pub fn install(&self, quick: &Compiled, optimized: Compiled) {
        let _ = self.kernels.set(switches(&[quick], &optimized));
        let _ = self.code.set(optimized);
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Compiles still queued or running in the background.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// How many sites tiered up in this process.
pub static TIER_UPS: AtomicUsize = AtomicUsize::new(0);

/// How many hot sites got LLVM's code from the background in this process.
pub static LLVM_TIER_UPS: AtomicUsize = AtomicUsize::new(0);

/// The background thread's compiles, in two queues: optimized (Cranelift) code first,
/// which takes milliseconds and ends a site's quick code, then LLVM's, which takes 50-350
/// ms. In one queue, a site's optimized compile waited behind another site's LLVM compile,
/// and its calls ran quick code meanwhile (jacobi-1d, run right after heat-3d tiered up:
/// 1.3x of sequential Rust instead of 1.0x).
struct Queues {
    jobs: Mutex<(VecDeque<Job>, VecDeque<Job>)>,
    ready: Condvar,
}

static QUEUES: Queues = Queues {
    jobs: Mutex::new((VecDeque::new(), VecDeque::new())),
    ready: Condvar::new(),
};

/// Queues `job` (a site's compile at a higher tier) for the background thread, one at a
/// time so that compiling takes at most one core from the pool; `first` (optimized code)
/// runs before every job queued without it (LLVM's).
pub fn in_background(job: impl FnOnce() + Send + 'static, first: bool) {
    static STARTED: OnceLock<bool> = OnceLock::new();
    let started = *STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("accel-tier-up".into())
            .spawn(|| loop {
                let job = {
                    let mut jobs = QUEUES.jobs.lock().unwrap_or_else(|e| e.into_inner());
                    loop {
                        if let Some(job) = jobs.0.pop_front().or_else(|| jobs.1.pop_front()) {
                            break job;
                        }
                        jobs = QUEUES.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
                    }
                };
                // A panic in a compile (a bug) leaves that site on the code it has.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                PENDING.fetch_sub(1, Ordering::Release);
            });
        if spawned.is_err() {
            crate::backend::log::warning!(
                "no thread for background compiles: sites keep their quick code"
            );
        }
        spawned.is_ok()
    });
    if !started {
        return;
    }
    PENDING.fetch_add(1, Ordering::AcqRel);
    let mut jobs = QUEUES.jobs.lock().unwrap_or_else(|e| e.into_inner());
    match first {
        true => jobs.0.push_back(Box::new(job)),
        false => jobs.1.push_back(Box::new(job)),
    }
    QUEUES.ready.notify_one();
}

/// Waits until every queued background compile has finished (tests and benchmarks that
/// want the steady state).
pub fn wait_for_background() {
    while PENDING.load(Ordering::Acquire) != 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
