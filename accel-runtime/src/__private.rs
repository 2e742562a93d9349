//! What the macros' expansions use. Not part of the API: names here may change at any time.

pub use crate::accel_type::{assemble, marshal_part, short_column};
pub use crate::backend::abi::{Marshal, Unmarshal};
pub use crate::backend::{failure, layout};
pub use crate::chains::{chain_fold, chain_into_iter, chain_reduce, ChainItem, ChainSource};
pub use crate::cpu::codegen::{MathProbe, ProbeConfig};
pub use crate::site::{check_site, FnDesc, OpUse, SiteDesc};
pub use crate::structure::{CheckCtx, ValuePath};
pub use accel_ir::{ScalarType, Type};

use crate::accel_type::Accel;
use crate::error::AccelError;

/// Implemented by the `Marker` in the companion module `#[accel]` generates beside each
/// function (a module with the function's name, so importing the function imports it too).
#[diagnostic::on_unimplemented(
    message = "accelerated code calls a function that is not #[accel]",
    label = "not an #[accel] function",
    note = "add #[accel] to its definition (a module-level fn) so accelerated code can call it; \
            a closure defined outside the site cannot be called from it: write it inline \
            (`map(|x| x * 2, &v)`) or bind it inside the site \
            (`accelerate!({{ let f = |x| x * 2; map(f, &v) }})`)"
)]
pub trait AccelFn {}

/// A callee's description, accepted only when `M` is the marker of an `#[accel]` function.
pub const fn callee<M: AccelFn>(desc: &'static FnDesc) -> &'static FnDesc {
    desc
}

/// The description a fallback (a name that is not an `#[accel]` function) carries; it is
/// never used, since the program does not compile.
pub static NOT_ACCEL: FnDesc = FnDesc {
    name: "",
    path: "",
    file: "",
    line: 0,
    ir: "",
    callees: &[],
    ops: &[],
    higher_order: false,
    consts: &[],
    records: &[],
};

/// A captured local, as debug mode inspects it; requires at compile time that its type is
/// an accel type.
pub fn capture<'a, T: Accel>(name: &'a str, value: &'a T) -> (&'a str, &'a dyn Inspect) {
    (name, value)
}

/// A captured sequence that the site writes in place (`xs.par_iter_mut()`), lent as a
/// tensor over its own memory.
pub fn capture_mut<'a, 'b, T: Accel>(
    name: &'a str,
    value: &'a MutSeq<'b, T>,
) -> (&'a str, &'a dyn Inspect) {
    (name, value)
}

pub use crate::tensor::MutSeq;

/// A constant named by an `#[accel]` function, as its description holds it; requires at
/// compile time that its type is an accel type.
pub const fn const_value<T: Accel + Sync>(value: &'static T) -> &'static (dyn Inspect + Sync) {
    value
}

/// The IR type of record `T`, which a site or function names (its descriptions list them,
/// so that the runtime knows records no captured or returned value carries).
pub fn record_type<T: Accel>() -> Type {
    T::accel_type()
}

/// Checks at compile time that a parameter or result type of an `#[accel]` fn is an accel type.
pub fn assert_accel_type<T: Accel + ?Sized>() {}

pub use crate::accel_type::Inspect;
pub use crate::dispatch::Inspected;

/// Inspects a site's captured values (in debug mode).
pub fn inspect(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
) -> Result<Inspected, AccelError> {
    crate::dispatch::inspect(site, captures)
}

pub use crate::dispatch::Plan;

/// Decides how a site runs this time.
pub fn plan<R: Accel>(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
) -> Result<Plan<R>, AccelError> {
    crate::dispatch::plan(site, captures)
}

/// Runs a compiled site.
pub fn run_compiled<R: Accel>(
    site: &'static SiteDesc,
    plan: Plan<R>,
    captures: &[(&str, &dyn Inspect)],
) -> Result<R, AccelError> {
    match plan {
        Plan::Compiled(c, _) => crate::dispatch::run_compiled(site, &c, captures),
        Plan::Sequential => unreachable!("the expansion runs sequential plans itself"),
    }
}

/// Runs `f` with every captured sequence treated as spread over `comm`'s ranks (see
/// `dist::with_sequences_spread`): accel-fuzz's `ranks` mode.
pub use crate::dist::with_sequences_spread;

/// Runs a site; `sequential` is the expression as plain Rust.
pub fn run_site<R: Accel>(
    site: &'static SiteDesc,
    inspected: Inspected,
    sequential: impl FnOnce() -> R,
) -> Result<R, AccelError> {
    crate::dispatch::run_sequential(site, inspected, sequential)
}

/// `accelerate!`'s value: the site's, or a panic with its error's message (at the site:
/// the panic's location is the macro call).
#[track_caller]
pub fn value_or_panic<R>(result: Result<R, AccelError>) -> R {
    match result {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    }
}

/// The compile times (ms) of every site the CPU backend compiled, in compilation order.
pub fn cpu_compile_times() -> Vec<f64> {
    crate::cpu::COMPILE_TIMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// How many loops of the CPU code of the site at `location` (`file:line:col`) run on SIMD
/// vectors, as it was last compiled (`None`: not compiled on the CPU).
pub fn cpu_simd_loops(location: &str) -> Option<usize> {
    last_cpu_compilation(location, |r| r.simd_loops)
}

/// Why the kernels of the CPU site compiled last at `location` run scalar code rather
/// than elements on SIMD lanes (empty: none fell back), if it was compiled.
pub fn cpu_spmd_fallbacks(location: &str) -> Option<Vec<String>> {
    last_cpu_compilation(location, |r| r.fallbacks.clone())
}

/// The shapes the gang code of the CPU site compiled last at `location` took, if it was
/// compiled: how gang loops that walk rows visit them (`rows`, `tiles`, `blocked`; `row
/// values` where divisions are computed once per row), 1-D gang loops walking down
/// columns in blocks (`blocked columns`), each `if` decided for whole gangs
/// where their lanes agree (`coherent if`), gang loops whose runs of gangs take such an
/// `if`'s one arm untested (`settled if`), and gangs narrowed because each lane walks a
/// row of its own (`row walk per lane`).
pub fn cpu_gang_shapes(location: &str) -> Option<Vec<String>> {
    last_cpu_compilation(location, |r| r.shapes.clone())
}

/// What `read` takes from the last compilation of the CPU site at `location`.
fn last_cpu_compilation<T>(
    location: &str,
    read: impl Fn(&crate::cpu::SimdReport) -> T,
) -> Option<T> {
    crate::cpu::SIMD_LOOPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .find(|r| r.location == location)
        .map(read)
}

/// How many site compilations the CPU backend has done in this process.
pub fn cpu_compilations() -> usize {
    crate::cpu::COMPILATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many times the front end (inline, typecheck, fuse) ran in this process.
pub fn front_end_runs() -> usize {
    crate::frontend::RUNS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many site programs were assembled in this process.
pub fn program_assemblies() -> usize {
    crate::assembly::ASSEMBLIES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Stands for the value of a site that failed to compile (its errors are reported
/// beside it, so this never runs).
pub fn rejected<T>() -> T {
    unreachable!("a site with compile errors never runs")
}

pub use crate::dispatch::BUILT_OPT_LEVEL;

/// Which code CPU sites get (see the CPU backend's tiers): `ACCEL_TIER`'s values.
pub use crate::cpu::tiers::Policy as CpuTier;

/// Runs `f` with CPU sites compiled under `tier` on this thread, whatever `ACCEL_TIER`
/// says (tests compare the tiers).
pub fn with_cpu_tier<T>(tier: CpuTier, f: impl FnOnce() -> T) -> T {
    crate::cpu::tiers::with_policy(tier, f)
}

/// Whether the CPU backend's LLVM tier can compile here: the library's name, or why not.
pub fn llvm_available() -> Result<String, String> {
    crate::cpu::llvm::available()
}

/// How many sites asked for LLVM code got Cranelift's instead in this process.
pub fn llvm_fallbacks() -> usize {
    crate::cpu::llvm::FALLBACKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many modules LLVM compiled, and how many came from the disk cache, in this process.
pub fn llvm_compiles_and_loads_from_disk() -> (usize, usize) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        crate::cpu::llvm::COMPILES.load(Relaxed),
        crate::cpu::llvm::FROM_DISK.load(Relaxed),
    )
}

/// Runs `f` with the disk cache of compiled code on or off on this thread (and in the
/// background compiles its sites queue).
pub fn with_disk_cache<T>(on: bool, f: impl FnOnce() -> T) -> T {
    crate::backend::disk_cache::with_disk_cache(on, f)
}

/// Waits for every background compile of optimized CPU code queued so far.
pub fn wait_for_cpu_tier_ups() {
    crate::cpu::tiers::wait_for_background()
}

/// How many `create`s of CPU runs wrote into the memory of the sequence they replaced.
pub fn cpu_creates_in_place() -> usize {
    crate::cpu::pool::CREATES_IN_PLACE.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many chunks of CPU runs that started on Cranelift's code ran LLVM's.
pub fn cpu_llvm_switched_chunks() -> usize {
    crate::cpu::pool::LLVM_SWITCHED_CHUNKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many hot CPU sites got LLVM's code from the background in this process.
pub fn cpu_llvm_tier_ups() -> usize {
    crate::cpu::tiers::LLVM_TIER_UPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many CPU sites got their optimized code from the background in this process.
pub fn cpu_tier_ups() -> usize {
    crate::cpu::tiers::TIER_UPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many chunks of CPU runs that started on quick code switched to the optimized code
/// of their kernel (compiled while the run went on).
pub fn cpu_switched_chunks() -> usize {
    crate::cpu::pool::SWITCHED_CHUNKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many captured sequences of tuples, arrays or records compiled code read where
/// they lie, on this thread (see `accel_type::in_place`).
pub fn inputs_read_in_place() -> usize {
    crate::accel_type::in_place::MARSHALED.get()
}

/// How many sequence results this thread got in rows (see `layout::row_leaves`) and
/// adopted as they are, and how many it read element by element (a record's).
pub fn rows_results() -> (usize, usize) {
    crate::accel_type::rows::TAKEN.get()
}
