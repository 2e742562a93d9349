//! Dispatch: how each run of a site goes. This is the one place that knows the modes'
//! order, the fallbacks and what `ACCEL_LOG` says. Debug mode runs the expression as
//! checked sequential Rust; a compiled mode tries its backends in order (the GPU, then
//! the CPU when the mode was not chosen), every one compiling from the front end's single
//! result; what no backend compiles runs sequentially when the mode was defaulted, and is
//! an error naming the site when it was chosen. Every failure is an [`AccelError`] value
//! here: `try_accelerate!` returns it, `accelerate!` panics with its message.

use crate::accel_type::{Accel, Inspect};
use crate::backend::abi::{self, Marshal, Unmarshal};
use crate::backend::cache::CompileCache;
use crate::backend::log::{self, logging};
use crate::backend::trace;
use crate::backend::{Backend, Captures, CompiledSite};
use crate::checks;
use crate::devices::{self, staged, Device};
use crate::error::{compile_kind_of, AccelError, ErrorKind, ViolationPayload};
use crate::frontend;
use crate::mode::{self, Mode, ModeError};
use crate::report;
use crate::site::SiteDesc;
use crate::stats::{self, RanOn};
use crate::structure::TensorName;
use accel_ir::Type;
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

mod device_choice;
mod distributed;
use distributed::{distributed_plan, runs_distributed, DISTRIBUTED};

/// One backend in a mode's chain, and what happens when it cannot compile a site.
struct Step {
    backend: &'static dyn Backend,
    /// The advice when the mode was chosen (the failure is an error).
    advice: &'static str,
    /// What runs instead when the mode was defaulted.
    instead: &'static str,
}

static CPU: crate::cpu::CpuBackend = crate::cpu::CpuBackend;
#[cfg(feature = "cuda")]
static CUDA: crate::cuda::CudaBackend = crate::cuda::CudaBackend;

const CPU_STEP: Step = Step {
    backend: &CPU,
    advice: "run it with ACCEL_MODE=debug, or leave ACCEL_MODE unset to fall back to sequential execution",
    instead: "running sequentially instead",
};
#[cfg(feature = "cuda")]
const CUDA_STEP: Step = Step {
    backend: &CUDA,
    advice: "use ACCEL_MODE=cpu, or leave ACCEL_MODE unset to fall back to the CPU",
    instead: "running on the CPU instead",
};

/// The backends a compiled mode tries, in order.
fn chain(mode: Mode) -> &'static [Step] {
    match mode {
        #[cfg(feature = "cuda")]
        Mode::Cuda => &[CUDA_STEP, CPU_STEP],
        _ => &[CPU_STEP],
    }
}

/// Every backend this build has.
fn backends() -> &'static [&'static dyn Backend] {
    #[cfg(feature = "cuda")]
    const ALL: &[&dyn Backend] = &[&CUDA, &CPU];
    #[cfg(not(feature = "cuda"))]
    const ALL: &[&dyn Backend] = &[&CPU];
    ALL
}

/// The mode accelerated code runs in on this thread: the one [`with_mode`] set, else
/// `ACCEL_MODE` (read once per process), else the best available (the GPU when the
/// `cuda` feature is built and a GPU and NVRTC are there, else the CPU).
///
/// [`with_mode`]: crate::with_mode
pub fn mode() -> Result<Mode, ModeError> {
    if let Some(m) = mode::overridden() {
        return Ok(m);
    }
    static MODE: OnceLock<Result<Mode, ModeError>> = OnceLock::new();
    MODE.get_or_init(|| {
        let var = std::env::var("ACCEL_MODE").ok();
        mode::select(
            var.as_deref(),
            |m| m != Mode::Cuda || cfg!(feature = "cuda"),
            best_available,
        )
    })
    .clone()
}

/// The modes the default tries, best first, with their backends and names in messages.
fn preferred() -> &'static [(Mode, &'static dyn Backend, &'static str)] {
    #[cfg(feature = "cuda")]
    const ALL: &[(Mode, &dyn Backend, &str)] =
        &[(Mode::Cuda, &CUDA, "CUDA"), (Mode::Cpu, &CPU, "CPU")];
    #[cfg(not(feature = "cuda"))]
    const ALL: &[(Mode, &dyn Backend, &str)] = &[(Mode::Cpu, &CPU, "CPU")];
    ALL
}

/// The default mode: the best one whose backend can run here.
fn best_available() -> Mode {
    for &(mode, backend, name) in preferred() {
        match backend.available() {
            Ok(()) => return mode,
            Err(why) => {
                log::warning!("the {name} backend is not used: {why}; sites run on the CPU");
            }
        }
    }
    Mode::Cpu
}

fn mode_at(site: &'static SiteDesc) -> Result<Mode, AccelError> {
    mode().map_err(|e| AccelError::Backend {
        site: site.location(),
        kind: ErrorKind::InvalidMode,
        message: e.to_string(),
    })
}

/// The mode a site runs in and the devices named for it (a site that is not split runs
/// on the first device named, as that device's mode would run it; debug mode stays
/// debug).
fn mode_and_devices(site: &'static SiteDesc) -> Result<(Mode, &'static [Device]), AccelError> {
    let mode = mode_at(site)?;
    if mode == Mode::Debug {
        return Ok((mode, &[]));
    }
    let devices = devices::selected().map_err(|message| AccelError::Backend {
        site: site.location(),
        kind: ErrorKind::InvalidMode,
        message,
    })?;
    Ok(match devices {
        [first, ..] => (first.mode(), devices),
        [] => (mode, devices),
    })
}

/// How a site runs this time.
pub enum Plan<R> {
    /// Compiled code for the captured values' types.
    Compiled(Compiled, PhantomData<fn() -> R>),
    /// The expression as sequential Rust (debug mode, or the fallback).
    Sequential,
}

/// A site compiled by one backend.
pub struct Compiled {
    backend: &'static str,
    code: Arc<dyn CompiledSite>,
    /// The call's size where the site's history chose its device (see
    /// `device_choice`): the run is timed for it.
    history_size: Option<usize>,
}

impl Compiled {
    /// The same code, its run timed for the site's history of calls of this size if
    /// `history_size` has it.
    fn timed(self, history_size: Option<usize>) -> Compiled {
        Compiled {
            history_size,
            ..self
        }
    }
}

/// The captured values and the constants of the functions a site reaches, in marshaling
/// order (the captures themselves where there are no constants: most sites).
fn all_captures<'a, 'c>(
    captures: &'c [(&'a str, &'a dyn Inspect)],
    constants: &'a [(String, &'static (dyn Inspect + Sync))],
) -> std::borrow::Cow<'c, [(&'a str, &'a dyn Inspect)]> {
    if constants.is_empty() {
        return std::borrow::Cow::Borrowed(captures);
    }
    captures
        .iter()
        .copied()
        .chain(
            constants
                .iter()
                .map(|(n, v)| (n.as_str(), *v as &dyn Inspect)),
        )
        .collect()
}

/// The word of a scalar value.
fn scalar_word(v: &dyn Inspect) -> Option<u64> {
    let Type::Scalar(_) = v.ir_type() else {
        return None;
    };
    let mut m = Marshal::default();
    v.marshal_into(&mut m);
    m.words.first().copied()
}

/// A plan this thread made for a site whose code depends on its captures' types alone,
/// reused while the site is called again in the same mode with captures of the same
/// types (by [`Inspect::type_key`]): such a call skips working out the types and asking
/// the backend, which took a third of a small site's call in a loop (a triangular solve's
/// dot product per row).
struct RecentPlan {
    site: usize,
    mode: Mode,
    /// The CPU tiers' policy the code was compiled under (`with_cpu_tier` may change it
    /// between calls on one thread).
    tier: crate::cpu::tiers::Policy,
    result: usize,
    captures: Vec<usize>,
    backend: &'static str,
    code: Arc<dyn CompiledSite>,
}

/// How many plans a thread remembers (the sites of a loop's body).
const RECENT_PLANS: usize = 4;

thread_local! {
    static RECENT: std::cell::RefCell<Vec<RecentPlan>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The plan this thread made last for `site` in `mode` with captures of these types.
fn recent_plan(
    site: usize,
    mode: Mode,
    result: usize,
    captures: &[(&str, &dyn Inspect)],
) -> Option<Compiled> {
    let tier = crate::cpu::tiers::policy();
    RECENT.with_borrow(|plans| {
        plans
            .iter()
            .find(|p| {
                p.site == site
                    && p.mode == mode
                    && p.tier == tier
                    && p.result == result
                    && p.captures.len() == captures.len()
                    && captures
                        .iter()
                        .zip(&p.captures)
                        .all(|((_, v), &k)| v.type_key() == k)
            })
            .map(|p| Compiled {
                backend: p.backend,
                code: Arc::clone(&p.code),
                history_size: None,
            })
    })
}

/// Remembers a plan for [`recent_plan`].
fn remember_plan(plan: RecentPlan) {
    RECENT.with_borrow_mut(|plans| {
        plans.retain(|p| !(p.site == plan.site && p.mode == plan.mode));
        if plans.len() == RECENT_PLANS {
            plans.remove(0);
        }
        plans.push(plan);
    });
}

/// Decides how a site runs: compiled by the first backend of the mode's chain that
/// compiles it (compiling on first use), the sequential path in debug mode and when the
/// default mode cannot compile the site.
pub(crate) fn plan<R: Accel>(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
) -> Result<Plan<R>, AccelError> {
    // Starts the trace's clock (ACCEL_TRACE) before anything is compiled.
    let _ = trace::enabled();
    crate::dist::site_called();
    let (mode, devices) = mode_and_devices(site)?;
    if mode == Mode::Debug {
        stats::record_first(site.key().id, || site.location(), RanOn::Debug);
        return Ok(Plan::Sequential);
    }
    // Before the recent plans: their code must never see a distributed capture.
    if runs_distributed(captures) {
        return distributed_plan::<R>(site, captures, mode, devices);
    }
    let split = devices::splits(devices);
    let (mode, history_size) = device_choice::mode_of_call(site, captures, mode, devices);
    let result_key = R::accel_type as fn() -> Type as usize;
    // Logging reports every call's plan, so it takes the long way.
    if !logging() && !split {
        if let Some(c) = recent_plan(site.key().id, mode, result_key, captures) {
            return Ok(Plan::Compiled(c.timed(history_size), PhantomData));
        }
    }
    let constants = site.constants();
    let all = all_captures(captures, constants);
    let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
    let types: Vec<Type> = all.iter().map(|(_, v)| v.ir_type()).collect();
    let scalar = |k: usize| all.get(k).and_then(|(_, v)| scalar_word(*v));
    // Only one device's code reads captures in place (a split's parts read columns).
    let row_layout = |k: usize| match (split, all.get(k)) {
        (false, Some((_, v))) => v.row_layout(),
        _ => (0, Vec::new()),
    };
    let result = R::accel_type();
    let front = || frontend::front_end(site, &types, &result);
    let key = site.key();
    let desc = Captures {
        names: &names,
        types: &types,
        scalar: &scalar,
        row_layout: &row_layout,
    };
    if let Some(Some(c)) = split.then(|| split_plan(site, &desc, &result, &front, devices)) {
        return Ok(Plan::Compiled(c, PhantomData));
    }
    let (mut fallbacks, rows) = (Vec::new(), R::takes_rows());
    for step in chain(mode) {
        let name = step.backend.name();
        // On the first device named (a GPU's kernels are loaded on it).
        let compile = || step.backend.compiled(key, &desc, &result, rows, &front);
        let (compiled, hit) = devices.first().map_or_else(compile, |d| d.enter(compile));
        if !hit {
            for other in backends().iter().filter(|b| b.name() != name) {
                other.check_other(key, &types, &result, &front);
            }
        }
        match compiled {
            Ok(code) => {
                if !hit {
                    stats::record(key.id, site.location(), ran_on(name), fallbacks);
                }
                if logging() {
                    let why = (!hit).then(|| miss_reason(site, name, &desc, &result));
                    log_compiled(site, why, name, &*code);
                }
                // The functions' constants are the same at every call: only the call's
                // captures can make the code depend on values.
                let own = Captures {
                    names: &names[..captures.len()],
                    types: &types[..captures.len()],
                    ..desc
                };
                if step.backend.code_depends_on_types_alone(key, &own) {
                    remember_plan(RecentPlan {
                        site: key.id,
                        mode,
                        tier: crate::cpu::tiers::policy(),
                        result: result_key,
                        captures: captures.iter().map(|(_, v)| v.type_key()).collect(),
                        backend: name,
                        code: Arc::clone(&code),
                    });
                }
                let c = Compiled {
                    backend: name,
                    code,
                    history_size,
                };
                return Ok(Plan::Compiled(c, PhantomData));
            }
            // Read only on failure: it reads the environment.
            Err(e) if mode::mode_was_chosen() => {
                let kind = match step.backend.available() {
                    Err(_) => ErrorKind::Unavailable,
                    Ok(()) => compile_kind_of(&e),
                };
                return Err(AccelError::Backend {
                    site: site.location(),
                    kind,
                    message: format!("{e} (ACCEL_MODE={name}); {}", step.advice),
                });
            }
            Err(e) if !hit => fallbacks.push(fell_back(site, name, &e, step.instead)),
            Err(_) => {}
        }
    }
    if let (Some(size), Mode::Cpu) = (history_size, mode) {
        // A probe on the CPU, which cannot compile what the GPU ran: the GPU keeps it.
        device_choice::keep_on_gpu(site, size);
        return plan::<R>(site, captures);
    }
    if !fallbacks.is_empty() {
        stats::record(key.id, site.location(), RanOn::Sequential, fallbacks);
    }
    Ok(Plan::Sequential)
}

/// Says once that `site` does not compile on backend `name` (`e`) and what runs it
/// `instead`; the line for its statistics.
fn fell_back(site: &'static SiteDesc, name: &str, e: &str, instead: &str) -> String {
    log::fallback(
        site.key().id,
        format_args!(
            "{}: {name}: {e}; {instead} (what compiles: the guide's performance chapter; ACCEL_LOG=0 silences this)",
            site.location(),
        ),
    );
    format!("{name}: {e}")
}

/// The backend that runs parts on `device`.
fn backend_of(device: Device) -> &'static dyn Backend {
    match device {
        #[cfg(feature = "cuda")]
        Device::Cuda(_) => &CUDA,
        // Without the `cuda` feature no list names a GPU (`Device::parse_list`).
        _ => &CPU,
    }
}

/// A site split across `devices` (compiled on first use), or `None` when it does not
/// split: then it runs on the mode's backends, and says why once.
fn split_plan(
    site: &'static SiteDesc,
    captures: &Captures<'_>,
    result: &Type,
    front: &dyn Fn() -> Result<Arc<crate::backend::FrontEnd>, String>,
    devices: &'static [Device],
) -> Option<Compiled> {
    type Key = (usize, Vec<Type>, Type, &'static [Device], bool);
    static SPLIT: CompileCache<Key, staged::StagedSite> = CompileCache::new();
    #[cfg(feature = "cuda")]
    let emulating = crate::cuda::device::emulating();
    #[cfg(not(feature = "cuda"))]
    let emulating = false;
    let key = site.key();
    let cache_key = (
        key.id,
        captures.types.to_vec(),
        result.clone(),
        devices,
        emulating,
    );
    let (compiled, hit) = SPLIT.get(cache_key, || {
        staged::compile(key, front, devices, &backend_of).map(Arc::new)
    });
    match compiled {
        Ok(code) => {
            if !hit {
                stats::record(key.id, site.location(), RanOn::Devices, Vec::new());
                if logging() {
                    log_compiled(
                        site,
                        Some("first run of the site".into()),
                        "devices",
                        &*code,
                    );
                }
            }
            Some(Compiled {
                backend: "devices",
                code,
                history_size: None,
            })
        }
        Err(why) => {
            log::fallback(
                devices::notice_id(key.id),
                format_args!(
                    "{}: not split across {}: {why}; running on {} alone (ACCEL_LOG=0 silences this)",
                    site.location(),
                    devices.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                    devices[0],
                ),
            );
            None
        }
    }
}

/// What a backend's name says ran a site.
fn ran_on(backend: &str) -> RanOn {
    if backend == "cuda" {
        RanOn::Cuda
    } else {
        RanOn::Cpu
    }
}

/// The optimisation level accel-runtime was built at (`OPT_LEVEL` of its build script).
pub const BUILT_OPT_LEVEL: &str = env!("ACCEL_BUILT_OPT_LEVEL");

/// Says once, in the log, when accel-runtime was built without optimisations: in a user's
/// dev profile without an override Cranelift is too, and compiling a site takes 5-10
/// times longer.
fn notice_unoptimised_build() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if BUILT_OPT_LEVEL == "0" {
        ONCE.call_once(|| {
            log::info!(
                "accel-runtime was built without optimisations (opt-level 0); unless your profile optimises Cranelift, compiling a site takes 5-10x longer: add `[profile.dev.package.\"*\"] opt-level = 2` to your Cargo.toml"
            )
        });
    }
}

/// Logs how a backend compiled a site (`why`: the cache missed), or a cache hit.
fn log_compiled(site: &SiteDesc, why: Option<String>, backend: &str, code: &dyn CompiledSite) {
    match why {
        None => log::info!("{}: {backend}: cache hit", site.location()),
        Some(why) => {
            notice_unoptimised_build();
            log::info!(
                "{}: {backend}: compiled in {:.3} ms ({}); {why}",
                site.location(),
                code.compile_ms(),
                code.summary()
            )
        }
    }
}

/// Why `backend` compiled `site` again: its first run, a capture or the result of a type
/// it has not had, or (the same types) new values compiled in as constants.
fn miss_reason(
    site: &'static SiteDesc,
    backend: &'static str,
    captures: &Captures<'_>,
    result: &Type,
) -> String {
    type Seen = HashMap<(&'static str, usize), Vec<(Vec<Type>, Type)>>;
    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let before = seen
        .get_or_insert_with(HashMap::new)
        .entry((backend, site.key().id))
        .or_default();
    let types = (captures.types.to_vec(), result.clone());
    let why = match before.last() {
        None => "first run of the site".to_string(),
        Some(_) if before.contains(&types) => {
            "new values of captures compiled in as constants".to_string()
        }
        Some((last, last_result)) => {
            let changed: Vec<String> = captures
                .names
                .iter()
                .zip(captures.types.iter().zip(last))
                .filter(|(_, (now, was))| now != was)
                .map(|(name, (now, was))| format!("`{name}` is {now} (was {was})"))
                .collect();
            if !changed.is_empty() {
                format!("new capture types: {}", changed.join(", "))
            } else if captures.types.len() != last.len() {
                "a new set of captures".to_string()
            } else {
                format!("a new result type: {result} (was {last_result})")
            }
        }
    };
    if !before.contains(&types) {
        before.push(types);
    }
    why
}

/// Runs compiled code on the captured values; a failure names the site.
pub(crate) fn run_compiled<R: Accel>(
    site: &'static SiteDesc,
    c: &Compiled,
    captures: &[(&str, &dyn Inspect)],
) -> Result<R, AccelError> {
    let start = logging().then(Instant::now);
    let traced = trace::enabled().then(Instant::now);
    let timed = c.history_size.map(|size| (size, Instant::now()));
    let constants = site.constants();
    let all = all_captures(captures, constants);
    // Devices named (`cuda:1`): a site that is not split runs on the first.
    let distributed = c.backend == DISTRIBUTED;
    let run = match devices::selected() {
        Ok([first, ..]) => first.enter(|| run_marshaled::<R>(&*c.code, &all, distributed)),
        _ => run_marshaled::<R>(&*c.code, &all, distributed),
    };
    if let Some(t) = traced {
        trace::site_ran(&site.location(), c.backend, run.is_ok(), t);
    }
    if let (Some((size, t)), Ok(_)) = (timed, &run) {
        device_choice::ran(site, size, c.backend, t.elapsed());
    }
    match run {
        Ok((r, report)) => {
            if let Some(start) = start {
                first_run_report(site);
                log::info!(
                    "{}: {}: ran in {:.3} ms; {report}",
                    site.location(),
                    c.backend,
                    start.elapsed().as_secs_f64() * 1e3
                );
            }
            Ok(r)
        }
        Err(RunFailure::Capture(message)) => Err(AccelError::Capture {
            site: site.location(),
            message,
        }),
        Err(RunFailure::Run(message)) => Err(AccelError::failed(site.location(), message)),
    }
}

/// Why a compiled run failed: a captured value could not be marshaled, or the run itself
/// failed (or its result could not be read back).
enum RunFailure {
    Capture(String),
    Run(String),
}

/// Marshals the captured values, runs the code, and reads the result back (the captured
/// values stay marshaled, their buffers locked, until it is read).
fn run_marshaled<R: Accel>(
    code: &dyn CompiledSite,
    captures: &[(&str, &dyn Inspect)],
    distributed: bool,
) -> Result<(R, String), RunFailure> {
    // Room for a few words per capture (a sequence's length and column, a scalar): no
    // growing for most sites.
    let mut m = Marshal {
        words: abi::word_buffer(4 * captures.len() + 4),
        ..Marshal::default()
    };
    let in_place = code.inputs_in_place();
    for (k, (_, v)) in captures.iter().enumerate() {
        let word = m.words.len();
        m.in_place = in_place.get(k).copied().unwrap_or(false);
        v.marshal_into(&mut m);
        m.in_place = false;
        if distributed && v.distributed_over().is_none() && crate::dist::spreading() {
            // Spread by the test hook: each rank reads its part of the whole in place.
            let t = v.ir_type();
            if let Some(comm) = crate::dist::spread_over(&t) {
                crate::dist::spread_capture(&mut m, word, &t, comm);
            }
        }
    }
    if let Some(e) = m.error.take() {
        return Err(RunFailure::Capture(e));
    }
    if !distributed && !m.distributed.is_empty() {
        // One inside another value (a tuple, a record): its words are a part's.
        return Err(RunFailure::Capture(
            "a distributed sequence inside another captured value: capture it on its own".into(),
        ));
    }
    let run = code.run(&m).map_err(RunFailure::Run)?;
    let mut arena = run.arena;
    let mut u = Unmarshal {
        words: &run.words,
        at: 0,
        arena: &mut arena,
        rows: run.rows,
    };
    let r = R::unmarshal(&mut u).map_err(RunFailure::Run)?;
    abi::give_back_words(run.words);
    abi::give_back_words(std::mem::take(&mut m.words));
    drop(m);
    Ok((r, run.report))
}

/// What debug mode learned of a site's captured values before running it.
pub struct Inspected {
    tensors: Vec<TensorName>,
}

/// Inspects a site's captured values in debug mode (regular nesting, tensor ranks, tensor
/// names for messages); does nothing in the other modes.
pub(crate) fn inspect(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
) -> Result<Inspected, AccelError> {
    if mode() != Ok(Mode::Debug) {
        return Ok(Inspected {
            tensors: Vec::new(),
        });
    }
    match checks::inspect_captures(captures) {
        Ok(tensors) => Ok(Inspected { tensors }),
        Err(e) => Err(AccelError::Capture {
            site: site.location(),
            message: format!("captured {e}"),
        }),
    }
}

/// Runs a site sequentially. `sequential` is the expression itself compiled by rustc: the
/// debug path (with every check on), or the fallback of a compiled mode. A panic of the
/// expression (an index out of bounds, an overflow in a build with overflow checks) and a
/// broken assumption are errors naming the site.
pub(crate) fn run_sequential<R: Accel>(
    site: &'static SiteDesc,
    inspected: Inspected,
    sequential: impl FnOnce() -> R,
) -> Result<R, AccelError> {
    let mode = mode_at(site)?;
    let log = logging();
    if log {
        first_run_report(site);
    }
    let start = Instant::now();
    let outcome = report::in_site(site.key(), || {
        let _checks = (mode == Mode::Debug).then(|| checks::enable(inspected.tensors));
        report::quietly(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(sequential)))
    });
    if trace::enabled() {
        let how = if mode == Mode::Debug {
            "debug"
        } else {
            "sequential"
        };
        trace::site_ran(&site.location(), how, outcome.is_ok(), start);
    }
    if log {
        let how = match mode {
            Mode::Debug => "debug: ran as checked sequential Rust",
            Mode::Cpu | Mode::Cuda => "ran as sequential Rust",
        };
        log::info!(
            "{}: {how} in {:.3} ms",
            site.location(),
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let r = outcome.map_err(|payload| unwound(site, payload))?;
    if mode == Mode::Debug {
        if let Err(message) = checks::check_result(&r) {
            return Err(AccelError::failed(site.location(), message));
        }
    }
    Ok(r)
}

/// The error a sequential run unwound with: a broken assumption, or a panic of the
/// expression with its message.
fn unwound(site: &'static SiteDesc, payload: Box<dyn std::any::Any + Send>) -> AccelError {
    let payload = match payload.downcast::<ViolationPayload>() {
        Ok(v) => {
            return AccelError::Violation {
                site: site.location(),
                operation: v.operation,
                message: v.message,
            }
        }
        Err(other) => other,
    };
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "the expression panicked".to_string());
    AccelError::failed(site.location(), message)
}

/// Logs a site's program, once per site.
fn first_run_report(site: &'static SiteDesc) {
    static SEEN: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.get_or_insert_with(HashSet::new).insert(site.key().id) {
        return;
    }
    drop(seen);
    match site.assembled() {
        Ok(p) => log::info!(
            "{}: program of {} function(s) [{}], captures [{}]",
            site.location(),
            p.functions.len(),
            p.function_names().join(", "),
            p.site.captures.join(", ")
        ),
        Err(e) => log::warning!("{}: program assembly failed: {e}", site.location()),
    }
}
