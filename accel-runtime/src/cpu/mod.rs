//! The CPU backend: the front end's fused program compiled with Cranelift into a host
//! function and kernels that run over chunks of the index space on all cores ([`pool`]).
//! Compiled sites are cached per combination of captured types, result type and
//! compiled-in values; concurrent first calls compile once.

pub mod codegen;
pub mod helpers;
pub mod llvm;
pub mod pool;
#[cfg(test)]
mod test_function;
pub mod tiers;

use crate::backend::abi::{Arena, Marshal};
use crate::backend::cache::CompileCache;
use crate::backend::dump::{dump_dir, file_stem, write_file};
use crate::backend::layout::RowLayout;
use crate::backend::{Backend, Captures, CompiledSite, FrontEnd, FrontEndFn, Run, SiteKey};
use accel_ir::Type;
use pool::RunCtx;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The CPU backend (`ACCEL_MODE=cpu`).
pub struct CpuBackend;

/// A site compiled for one combination of captured types.
pub struct CpuSite {
    /// The code of its first call, and its tier.
    code: Arc<codegen::Compiled>,
    tier: codegen::Tier,
    compile_ms: f64,
    /// Under the adaptive policies, the code the background compiles.
    upgrade: Option<Arc<tiers::Upgrade>>,
    /// What the background compiles from.
    program: Arc<Program>,
    /// The words its code keeps from call to call, whatever the tier.
    site_words: Arc<[std::sync::atomic::AtomicU64]>,
    /// What its runs ask while they run, until it is hot (made by the first that asks).
    hot_check: OnceLock<pool::HotCheckFn>,
    /// Which captures its code reads in place (see `codegen::row_inputs`), in marshaling
    /// order.
    in_place: Vec<bool>,
}

/// A site's fused program, its captures and its result type: what each tier compiles.
struct Program {
    fused: accel_ir::Expr,
    captures: Vec<(String, Type)>,
    result: Type,
    /// Whether the caller takes a sequence result in rows (every tier's code agrees).
    rows: bool,
    /// The captures read in place, with how they lie (every tier's code agrees).
    row_inputs: Vec<(String, RowLayout)>,
    location: String,
}

/// Captured integers compiled in as constants: by position among the captures, with
/// their word.
type Fixed = Vec<(usize, u64)>;

/// What a site's code is compiled for: the site, its captures' types, its result's type
/// and whether the caller takes it in rows, the constants compiled in and the tiers'
/// policy.
type CodeKey = (usize, Vec<Type>, (Type, bool), Fixed, tiers::Policy);

static CACHE: CompileCache<CodeKey, CpuSite> = CompileCache::new();

/// How many sites a thread remembers the code of (see `RECENT_SITES`).
const RECENT: usize = 4;

thread_local! {
    /// The code this thread ran last, by the shared cache's key: a site called in a loop
    /// (a stencil's steps, a solver's rows) finds it without the shared cache's lock and
    /// hashing.
    static RECENT_SITES: std::cell::RefCell<Vec<(CodeKey, Arc<CpuSite>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn available(&self) -> Result<(), String> {
        Ok(())
    }

    fn compiled(
        &self,
        site: SiteKey,
        captures: &Captures<'_>,
        result: &Type,
        rows: bool,
        front: FrontEndFn<'_>,
    ) -> (Result<Arc<dyn CompiledSite>, String>, bool) {
        let fixed = fixed_values(site, captures);
        let policy = tiers::policy();
        let is_key = |(id, types, r, f, p): &CodeKey| {
            *id == site.id
                && types[..] == *captures.types
                && r.0 == *result
                && r.1 == rows
                && *f == fixed
                && *p == policy
        };
        let recent = RECENT_SITES.with_borrow(|sites| {
            sites
                .iter()
                .find(|(key, _)| is_key(key))
                .map(|(_, code)| Arc::clone(code))
        });
        if let Some(code) = recent {
            return (Ok(code as Arc<dyn CompiledSite>), true);
        }
        let (compiled, hit) = CACHE.get_borrowed(
            &(site.id, captures.types, (result, rows), &fixed, policy),
            is_key,
            || {
                (
                    site.id,
                    captures.types.to_vec(),
                    (result.clone(), rows),
                    fixed.clone(),
                    policy,
                )
            },
            || compile(site, &*front()?, &fixed, policy, rows, captures.row_layout),
        );
        if let Ok(code) = &compiled {
            RECENT_SITES.with_borrow_mut(|sites| {
                if sites.len() == RECENT {
                    sites.remove(0);
                }
                let key = (
                    site.id,
                    captures.types.to_vec(),
                    (result.clone(), rows),
                    fixed,
                    policy,
                );
                sites.push((key, Arc::clone(code)));
            });
        }
        (compiled.map(|c| c as Arc<dyn CompiledSite>), hit)
    }

    /// Unless a capture is an integer named like a constant (see [`fixed_values`]).
    fn code_depends_on_types_alone(&self, _site: SiteKey, captures: &Captures<'_>) -> bool {
        !captures
            .names
            .iter()
            .zip(captures.types)
            .any(|(path, t)| may_be_compiled_in(path, t))
    }
}

/// Whether the capture `path` of type `t` is an integer named like a Rust constant
/// (`HIDDEN`, `N_MAX`: `const` items by convention, so the same at every call), whose
/// value the code may take as a constant.
fn may_be_compiled_in(path: &str, t: &Type) -> bool {
    let Type::Scalar(s) = *t else {
        return false;
    };
    if s.is_float() || s == accel_ir::ScalarType::Bool {
        return false;
    }
    let name = path.rsplit(':').next().unwrap_or(path);
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// How many sets of compiled-in values one site may have: a capture named like a
/// constant whose value keeps changing gets the generic code after that.
const MAX_FIXED_VERSIONS: usize = 4;

/// The captured integers a site's code may take as constants: those named like Rust
/// constants ([`may_be_compiled_in`]) with a non-negative value, by position in
/// `captures` with their word. Constants make `k / HIDDEN` a shift and strides known to
/// Cranelift. A site sees at most [`MAX_FIXED_VERSIONS`] distinct sets; after that it
/// runs generic code for new ones.
fn fixed_values(site: SiteKey, captures: &Captures<'_>) -> Fixed {
    use accel_ir::ScalarType as S;
    let mut fixed = Vec::new();
    for (k, (path, t)) in captures.names.iter().zip(captures.types).enumerate() {
        if !may_be_compiled_in(path, t) {
            continue;
        }
        let Some(w) = (captures.scalar)(k) else {
            continue;
        };
        let negative = match *t {
            Type::Scalar(S::I32) => (w as u32 as i32) < 0,
            Type::Scalar(S::I64) => (w as i64) < 0,
            _ => false,
        };
        if !negative {
            fixed.push((k, w));
        }
    }
    if fixed.is_empty() {
        return fixed;
    }
    static SEEN: Mutex<Vec<(usize, Fixed)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.iter().any(|(s, f)| *s == site.id && *f == fixed) {
        return fixed;
    }
    if seen.iter().filter(|(s, _)| *s == site.id).count() >= MAX_FIXED_VERSIONS {
        return Vec::new();
    }
    seen.push((site.id, fixed.clone()));
    fixed
}

/// The compile time of every compilation, in order (for benchmarks).
pub static COMPILE_TIMES: Mutex<Vec<f64>> = Mutex::new(Vec::new());

/// What a compiled site's kernels run on SIMD lanes.
pub struct SimdReport {
    /// The site's location.
    pub location: String,
    /// How many of its loops run on SIMD vectors.
    pub simd_loops: usize,
    /// Why kernels fell back to scalar code.
    pub fallbacks: Vec<String>,
    /// The shapes its gang code took (`rows`, `tiles`, `blocked`, `row values`, `coherent
    /// if`, `settled if`, `row walk per lane`, `blocked columns`).
    pub shapes: Vec<String>,
}

/// Each compiled site's [`SimdReport`], in compilation order (tests check what
/// vectorizes).
pub static SIMD_LOOPS: Mutex<Vec<SimdReport>> = Mutex::new(Vec::new());

/// How many times a site was compiled in this process (tests check the cache with it).
pub static COMPILATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Compiles the front end's result (with the `fixed` captures compiled in, a sequence
/// result in rows where the caller takes `rows`) under the tiers' `policy` (see
/// [`tiers`]), dumping the fused program and the machine code under
/// `ACCEL_DUMP` (then the optimized code at once: what the listing shows is what runs).
fn compile(
    site: SiteKey,
    front: &FrontEnd,
    fixed: &[(usize, u64)],
    policy: tiers::Policy,
    rows: bool,
    row_layout: &dyn Fn(usize) -> (usize, Vec<usize>),
) -> Result<Arc<CpuSite>, String> {
    COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let mut fused = front.fused.clone();
    for &(k, word) in fixed {
        let (name, t) = &front.captures[k];
        if let Type::Scalar(s) = t {
            compile_in(&mut fused, name, &accel_ir::Lit::Int(word, Some(*s)));
        }
    }
    let dump = dump_dir();
    let policy = match dump {
        Some(_) if policy != tiers::Policy::Llvm => tiers::Policy::Optimized,
        _ => policy,
    };
    let mut tier = policy.first_tier();
    let (in_place, row_inputs) = read_in_place(&front.captures, &fused, row_layout);
    let site_code = codegen::SiteCode {
        body: &fused,
        captures: &front.captures,
        result: &front.result,
        rows,
        row_inputs: &row_inputs,
    };
    let mut code = codegen::compile(&site_code, dump.is_some(), tier);
    if let (Err(e), codegen::Tier::Llvm) = (&code, tier) {
        tier = codegen::Tier::Optimized;
        let cranelift = codegen::compile(&site_code, dump.is_some(), tier);
        // Code generation's own errors (constructs the backend lacks) are the site's
        // error, whatever the tier; only LLVM's are a fallback.
        if cranelift.is_ok() {
            llvm::FALLBACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::backend::log::fallback(
                site.id,
                format_args!(
                    "{}: cpu: the LLVM tier could not compile this site, Cranelift's optimized code runs: {e}",
                    site.location()
                ),
            );
        }
        code = cranelift;
    }
    let code = code?;
    if let (Some(dir), Some(listing)) = (&dump, &code.listing) {
        let text = format!(
            ";; {} on the CPU: the fused program, then each function's machine code\n;; {}\n{listing}",
            site.location(),
            fused.to_string().replace('\n', "\n;; ")
        );
        let stem = file_stem(site, &text);
        write_file(&dir.join(format!("{stem}.cpu.s")), &text)?;
    }
    SIMD_LOOPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(SimdReport {
            location: site.location(),
            simd_loops: code.simd_loops,
            fallbacks: code.spmd_fallbacks.clone(),
            shapes: code.shapes.iter().map(|w| w.to_string()).collect(),
        });
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let args =
        serde_json::json!({ "backend": "cpu", "kernels": code.kernels, "tier": tier.name() });
    crate::backend::trace::compiled(&site.location(), start, args);
    COMPILE_TIMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(compile_ms);
    let adaptive = matches!(policy, tiers::Policy::Adaptive | tiers::Policy::Cranelift);
    // Whether LLVM is present is asked in the background, when the site is hot: loading
    // the library takes 25 ms or more, which a first call must not wait for.
    let to_llvm = policy == tiers::Policy::Adaptive;
    let site_words = (0..code.site_words)
        .map(|_| std::sync::atomic::AtomicU64::new(0))
        .collect();
    let compiled = Arc::new(CpuSite {
        site_words,
        hot_check: OnceLock::new(),
        code: Arc::new(code),
        tier,
        compile_ms,
        upgrade: adaptive.then(|| {
            Arc::new(tiers::Upgrade::new(
                to_llvm.then(|| tiers::llvm_threshold_ms(compile_ms)),
            ))
        }),
        program: Arc::new(Program {
            fused,
            captures: front.captures.clone(),
            result: front.result.clone(),
            rows,
            row_inputs,
            location: site.location(),
        }),
        in_place,
    });
    if let Some(upgrade) = &compiled.upgrade {
        let (upgrade, quick) = (Arc::clone(upgrade), Arc::clone(&compiled.code));
        compiled.program.upgrade(
            codegen::Tier::Optimized,
            ("optimized code", "the quick code"),
            || true,
            move |code| {
                upgrade.install(&quick, code);
                tiers::TIER_UPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            },
        );
    }
    Ok(compiled)
}

/// Which captures the code reads where they lie (whose elements can be, by their
/// `row_layout`, and which the program `fused` reads only at its operations' indices: no
/// columns built per call), in marshaling order, and those captures with how they lie.
fn read_in_place(
    captures: &[(String, Type)],
    fused: &accel_ir::Expr,
    row_layout: &dyn Fn(usize) -> (usize, Vec<usize>),
) -> (Vec<bool>, Vec<(String, RowLayout)>) {
    let mut flags = Vec::new();
    let mut read = Vec::new();
    for (k, (name, _)) in captures.iter().enumerate() {
        // The program is walked only for captures whose elements could be read in place.
        let (stride, offsets) = row_layout(k);
        let in_place = stride > 0 && codegen::row_inputs::readable_in_place(fused, name);
        flags.push(in_place);
        if in_place {
            let row = RowLayout {
                stride: stride as i64,
                offsets: offsets.into_iter().map(|o| o as i64).collect(),
            };
            read.push((name.clone(), row));
        }
    }
    (flags, read)
}

/// Looks in the background for the site's LLVM code in the disk cache (an earlier
/// process's), once the site has run a while (`Upgrade::due_for_a_look`): found, it runs
/// from then on, as if the site had got hot; else the site gets hot as usual. Generating
/// the module to look for takes a few milliseconds of the background thread; it is done
/// only where an earlier process recorded what LLVM compiles with on this host, and it
/// loads no LLVM library (see `llvm::recorded_host`).
fn llvm_from_disk(
    upgrade: &Arc<tiers::Upgrade>,
    program: &Arc<Program>,
    quick: &Arc<codegen::Compiled>,
) {
    let (upgrade, program, quick) = (Arc::clone(upgrade), Arc::clone(program), Arc::clone(quick));
    let cache = crate::backend::disk_cache::enabled();
    tiers::in_background(
        move || {
            // The site got hot meanwhile: its compile, queued, looks in the cache first.
            if !upgrade.may_get_hot() {
                return;
            }
            let start = Instant::now();
            let location = &program.location;
            let found =
                crate::backend::disk_cache::with_disk_cache(cache, || program.cached_llvm_code());
            // Not there, the site gets hot, or not, as usual.
            if let Some(code) = found {
                if upgrade.install_llvm(&quick, code) {
                    tiers::LLVM_TIER_UPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                let ms = start.elapsed().as_secs_f64() * 1e3;
                crate::backend::log::info!(
                    "{location}: cpu: LLVM's code from the disk cache (an earlier process compiled it), loaded in {ms:.3} ms; runs from now on"
                );
            }
        },
        true,
    );
}

impl Program {
    fn site_code(&self) -> codegen::SiteCode<'_> {
        codegen::SiteCode {
            body: &self.fused,
            captures: &self.captures,
            result: &self.result,
            rows: self.rows,
            row_inputs: &self.row_inputs,
        }
    }

    fn compile(&self, tier: codegen::Tier) -> Result<codegen::Compiled, String> {
        codegen::compile(&self.site_code(), false, tier)
    }

    /// The site's LLVM code as another process compiled it, from the disk cache (loading
    /// no LLVM library); `None` when it is not there or does not load.
    fn cached_llvm_code(&self) -> Option<codegen::Compiled> {
        codegen::from_disk(&self.site_code()).ok().flatten()
    }

    /// Compiles the program at `tier` on the background thread and gives the code to
    /// `install`; the log names it `what` and, if the compile fails, the code that
    /// `stays`. LLVM's compile first asks whether the library is there (loading it is
    /// background work too), unless an earlier process's code may be on disk: that is
    /// looked for first, with no library loaded. Nothing is done when `needed` says, as the
    /// job starts, that the site has that code already (a look in the disk cache found it).
    fn upgrade(
        self: &Arc<Self>,
        tier: codegen::Tier,
        (what, stays): (&'static str, &'static str),
        needed: impl FnOnce() -> bool + Send + 'static,
        install: impl FnOnce(codegen::Compiled) + Send + 'static,
    ) {
        let program = Arc::clone(self);
        let first = tier != codegen::Tier::Llvm;
        let cache = crate::backend::disk_cache::enabled();
        tiers::in_background(
            move || {
                if !needed() {
                    return;
                }
                crate::backend::disk_cache::with_disk_cache(cache, || {
                    let start = Instant::now();
                    let location = &program.location;
                    // Where no earlier process's code may be in the disk cache (which
                    // `llvm::compile` looks in before loading the library), a missing
                    // library is found before the module is generated for nothing.
                    if tier == codegen::Tier::Llvm && !llvm::may_have_cached() {
                        if let Err(why) = llvm::available() {
                            crate::backend::log::info!(
                                "{location}: cpu: the site is hot, but {why}"
                            );
                            return;
                        }
                    }
                    match program.compile(tier) {
                        Ok(code) => {
                            let what = match code.from_disk {
                                true => "LLVM's code from the disk cache",
                                false => what,
                            };
                            install(code);
                            let ms = start.elapsed().as_secs_f64() * 1e3;
                            let args = serde_json::json!({ "backend": "cpu", "tier": tier.name() });
                            crate::backend::trace::compiled(location, start, args);
                            crate::backend::log::info!(
                        "{location}: cpu: {what} compiled in {ms:.3} ms in the background; runs from now on"
                    );
                        }
                        Err(e) => {
                            // No library, and the disk cache had no code (see above).
                            let missing = (tier == codegen::Tier::Llvm)
                                .then(llvm::available)
                                .and_then(Result::err);
                            match missing {
                                Some(why) => crate::backend::log::info!(
                                    "{location}: cpu: the site is hot, but {why}"
                                ),
                                None => crate::backend::log::warning!(
                                    "{location}: cpu: the {tier} compile failed ({stays} stays): {e}",
                                    tier = tier.name()
                                ),
                            }
                        }
                    }
                })
            },
            first,
        );
    }
}

/// What a site without LLVM's code does, given its calls so far and a call `running` this
/// long (`alone`: on one thread of a pool of more so far): queues its LLVM compile once it
/// is hot, else looks in the disk cache once it has run a while (where an earlier process
/// may have left code there).
fn upgrade_if_due(
    upgrade: &Arc<tiers::Upgrade>,
    program: &Arc<Program>,
    quick: &Arc<codegen::Compiled>,
    running: std::time::Duration,
    alone: bool,
) {
    if upgrade.hot(running, alone) {
        tier_up_to_llvm(upgrade, program, quick);
    } else if upgrade.due_for_a_look(running) && llvm::may_have_cached() {
        llvm_from_disk(upgrade, program, quick);
    }
}

/// Queues the LLVM compile of a hot site under the adaptive policy: its code replaces
/// Cranelift's for the calls that start after it is ready, and the remaining chunks of
/// calls running.
fn tier_up_to_llvm(
    upgrade: &Arc<tiers::Upgrade>,
    program: &Arc<Program>,
    quick: &Arc<codegen::Compiled>,
) {
    let (upgrade, quick) = (Arc::clone(upgrade), Arc::clone(quick));
    let before = Arc::clone(&upgrade);
    program.upgrade(
        codegen::Tier::Llvm,
        ("the site is hot; LLVM's code", "Cranelift's code"),
        move || before.llvm.get().is_none(),
        move |code| {
            if upgrade.install_llvm(&quick, code) {
                tiers::LLVM_TIER_UPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
}

/// Replaces the variable `name` by the literal `value` in `body`, unless the body binds
/// that name somewhere (then the capture stays a variable).
fn compile_in(body: &mut accel_ir::Expr, name: &str, value: &accel_ir::Lit) {
    use accel_ir::Expr;
    if body.binds(name) {
        return;
    }
    fn replace(e: &mut Expr, name: &str, value: &accel_ir::Lit) {
        if matches!(e, Expr::Var(v) if v == name) {
            *e = Expr::Lit(value.clone());
            return;
        }
        e.for_each_child_mut(&mut |c| replace(c, name, value));
    }
    replace(body, name, value);
}

impl CompiledSite for CpuSite {
    fn summary(&self) -> String {
        format!("{} parallel kernel(s)", self.code.kernels)
    }

    fn inputs_in_place(&self) -> &[bool] {
        &self.in_place
    }

    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    fn run(&self, m: &Marshal<'_>) -> Result<Run, String> {
        let mut ctx = RunCtx::new(pool::num_threads());
        ctx.site_words = Some(Arc::clone(&self.site_words));
        // LLVM's code once a hot site has it, else the optimized code once it is there;
        // until then the quick code, whose launches switch to the optimized kernels as
        // soon as they are ready.
        let llvm = self.upgrade.as_ref().and_then(|u| u.llvm.get());
        let optimized = self.upgrade.as_ref().and_then(|u| u.code.get());
        let code = llvm.or(optimized).unwrap_or(&*self.code);
        if let (None, Some(upgrade)) = (optimized, &self.upgrade) {
            ctx.upgrade = Some(Arc::clone(&upgrade.kernels));
        }
        let start = Instant::now();
        if let (None, Some(upgrade)) = (llvm, &self.upgrade) {
            ctx.llvm_upgrade = Some(Arc::clone(&upgrade.llvm_kernels));
            // A long call makes its site hot while it runs, and switches its remaining
            // chunks to LLVM's code once that is compiled.
            if upgrade.may_get_hot() {
                llvm::guard_exit_of_this_thread();
                let check = self.hot_check.get_or_init(|| {
                    let (upgrade, program) = (Arc::clone(upgrade), Arc::clone(&self.program));
                    let quick = Arc::clone(&self.code);
                    Arc::new(move |running, alone| {
                        upgrade_if_due(&upgrade, &program, &quick, running, alone)
                    })
                });
                ctx.hot_check = Some(pool::HotCheck::new(Arc::clone(check), start));
            }
        }
        let mut out = crate::backend::abi::word_buffer(code.result_words.max(1));
        out.resize(code.result_words.max(1), 0);
        type Host = extern "C" fn(*const u64, *mut u64, *const RunCtx) -> u32;
        // Addresses, so that the call can move to the pool's thread.
        let (host, words, result, context) = (
            code.host,
            m.words.as_ptr() as usize,
            out.as_mut_ptr() as usize,
            &ctx as *const RunCtx as usize,
        );
        // SAFETY: `host` is the address of the site function the JIT compiled with the
        // `Host` signature; `words` holds exactly the words of the captured values in the
        // order the code reads them, every pointer among them is valid for the whole call
        // (the values are borrowed and `m.keep` holds columns and buffer locks until after
        // it), `result` has room for the result's words, and this thread waits for the
        // pool to finish the call before `ctx`, `out` or `m` go away.
        let status = pool::on_pool(|| unsafe {
            let host: Host = std::mem::transmute::<usize, Host>(host);
            host(
                words as *const u64,
                result as *mut u64,
                context as *const RunCtx,
            )
        })?;
        if let (Some(upgrade), None) = (&self.upgrade, llvm) {
            let alone = ctx.ran_alone();
            upgrade.ran(start.elapsed(), alone);
            upgrade_if_due(
                upgrade,
                &self.program,
                &self.code,
                std::time::Duration::ZERO,
                alone,
            );
        }
        if status != 0 {
            let failure = ctx.take_failure();
            return Err(
                failure.map_or_else(|| "compiled code failed".to_string(), |f| f.describe())
            );
        }
        let arena: Arena = ctx.take_arena();
        Ok(Run {
            words: out,
            arena,
            rows: code.result_rows,
            // Only logs read it: a site called in a loop formats nothing.
            report: if crate::backend::log::logging() {
                let started = match (llvm, optimized, self.tier) {
                    (Some(_), _, _) | (None, None, codegen::Tier::Llvm) => "LLVM code",
                    (None, Some(_), _) | (None, None, codegen::Tier::Optimized) => "optimized code",
                    (None, None, codegen::Tier::Quick) => "quick code",
                };
                // Tiers that landed while it ran, which its remaining chunks switched to.
                let landed = |tier: Option<&codegen::Compiled>, was: Option<&codegen::Compiled>| {
                    was.is_none() && tier.is_some()
                };
                let upgrade = self.upgrade.as_ref();
                let switched: Vec<&str> = [
                    (landed(upgrade.and_then(|u| u.code.get()), optimized) && llvm.is_none())
                        .then_some("optimized"),
                    landed(upgrade.and_then(|u| u.llvm.get()), llvm).then_some("LLVM's"),
                ]
                .into_iter()
                .flatten()
                .collect();
                let tier = if switched.is_empty() {
                    started.to_string()
                } else {
                    format!(
                        "{started}, its kernels switching to {} code as it ran",
                        switched.join(", then ")
                    )
                };
                format!(
                    "{tier}; {} bytes in, {} of them copied to marshal; on {} thread(s)",
                    m.bytes,
                    m.copied,
                    ctx.peak_threads.load(std::sync::atomic::Ordering::Relaxed),
                )
            } else {
                String::new()
            },
        })
    }
}
