//! What the macros generate for each `accelerate!` site and `#[accel]` function, the
//! compile-time checks over them, program assembly, and running a site.

use crate::accel_type::Accel;
use crate::checks::{self, Inspect, TensorName};
use crate::cpu::{self, CompiledSite};
use crate::mode::{mode, mode_was_chosen, Mode};
use accel_ir::passes::{classify, extract, resolve, IrError};
use accel_ir::{FnDef, Program, SiteDef};
use std::cell::Cell;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

/// Compiled code per key (a site with its captured and result types), compiled once
/// whichever thread asks first; concurrent first calls wait for that one compilation.
pub(crate) struct CompileCache<K, T> {
    slots: std::sync::OnceLock<Mutex<std::collections::HashMap<K, CacheSlot<T>>>>,
}

type CacheSlot<T> = Arc<std::sync::OnceLock<Result<Arc<T>, String>>>;

impl<K: std::hash::Hash + Eq, T> CompileCache<K, T> {
    pub(crate) const fn new() -> Self {
        CompileCache {
            slots: std::sync::OnceLock::new(),
        }
    }

    /// The compiled value for `key` (made by `compile` on first use), and whether it was
    /// there already.
    pub(crate) fn get(
        &self,
        key: K,
        compile: impl FnOnce() -> Result<Arc<T>, String>,
    ) -> (Result<Arc<T>, String>, bool) {
        let slot = {
            let mut map = self
                .slots
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            map.entry(key).or_default().clone()
        };
        let mut hit = true;
        let r = slot
            .get_or_init(|| {
                hit = false;
                compile()
            })
            .clone();
        (r, hit)
    }
}

/// One use of a parallel operation in a body, at a line and column of its file.
#[derive(Debug, Clone, Copy)]
pub struct OpUse {
    pub op: &'static str,
    pub imperative: bool,
    pub line: u32,
    pub column: u32,
}

/// The description `#[accel]` generates beside a function: its IR and the facts that the
/// compile-time checks of the sites that reach it need.
#[derive(Debug)]
pub struct FnDesc {
    pub name: &'static str,
    /// The function's full path (`my_crate::physics::step`), which names it in programs.
    pub path: &'static str,
    pub file: &'static str,
    pub line: u32,
    /// The function's IR (`accel_ir::FnDef`) as JSON.
    pub ir: &'static str,
    /// The functions the body calls or passes, keyed by the path as written.
    pub callees: &'static [(&'static str, &'static FnDesc)],
    /// The parallel operations the body uses directly.
    pub ops: &'static [OpUse],
    /// Whether it takes or returns a function.
    pub higher_order: bool,
    /// The constants the body names, by name, with their values.
    pub consts: &'static [(&'static str, &'static (dyn Inspect + Sync))],
}

/// The description of one `accelerate!` site.
#[derive(Debug)]
pub struct SiteDesc {
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
    /// The site's IR (`accel_ir::SiteDef`) as JSON.
    pub ir: &'static str,
    pub callees: &'static [(&'static str, &'static FnDesc)],
    pub ops: &'static [OpUse],
}

impl FnDesc {
    /// The name that identifies the function in a program: its full path.
    pub fn unique_name(&self) -> String {
        self.path.to_string()
    }
}

impl extract::FnSource for &'static FnDesc {
    fn unique_name(&self) -> String {
        FnDesc::unique_name(self)
    }
    fn load(&self) -> Result<FnDef, IrError> {
        let mut def: FnDef = serde_json::from_str(self.ir).map_err(|e| IrError::Corrupt {
            name: self.unique_name(),
            message: e.to_string(),
        })?;
        def.file = self.file.to_string();
        Ok(def)
    }
    fn callees(&self) -> Vec<(String, Self)> {
        self.callees
            .iter()
            .map(|(w, d)| (w.to_string(), *d))
            .collect()
    }
}

impl SiteDesc {
    /// `src/main.rs:12:5`.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column + 1)
    }

    /// Assembles the site's program: the site plus exactly the functions it reaches, each
    /// once (extraction), with every name resolved to a unique one, checked by
    /// classification.
    ///
    /// ```
    /// use accel_runtime::prelude::*;
    /// #[accel]
    /// fn sq(x: i64) -> i64 { x * x }
    /// #[accel]
    /// fn sum_sq(xs: &[i64]) -> i64 { reduce(|a, b| a + b, 0, map(sq, xs)) }
    ///
    /// fn main() {
    ///     let v = vec![1i64, 2, 3];
    ///     let p = describe!(sum_sq(&v)).program().unwrap();
    ///     assert_eq!(p.function_names(), vec!["rust_out::sq", "rust_out::sum_sq"]);
    ///     assert_eq!(p.site.captures, vec!["v"]);
    /// }
    /// ```
    pub fn program(&'static self) -> Result<Program, IrError> {
        let mut site: SiteDef = serde_json::from_str(self.ir).map_err(|e| IrError::Corrupt {
            name: format!("accelerate! at {}", self.location()),
            message: e.to_string(),
        })?;
        site.file = self.file.to_string();
        site.loc = accel_ir::Loc {
            line: self.line,
            column: self.column,
        };
        let callees = self
            .callees
            .iter()
            .map(|(w, d)| (w.to_string(), *d))
            .collect();
        let mut program = extract::extract(site, callees)?;
        for f in &mut program.functions {
            *f = resolve::resolve_fn(f)?;
        }
        program.site.body = resolve::resolve_site(&program.site.body).body;
        // Constants named in functions become captures of the site: `path::NAME`.
        let reached = self.reached_functions();
        for f in &mut program.functions {
            if let Some(desc) = reached.iter().find(|d| d.path == f.name) {
                let names: Vec<&str> = desc.consts.iter().map(|(n, _)| *n).collect();
                constants_to_captures(&mut f.body, &f.name, &names);
            }
        }
        program
            .site
            .captures
            .extend(self.constants().into_iter().map(|(name, _)| name));
        classify::classify(&program)?;
        Ok(program)
    }

    /// The front of both compiled backends: the program, inlined, typed from the captured
    /// values' and the result's types, and fused. Returns the fused body and the captures
    /// with their types.
    pub(crate) fn fused(
        &'static self,
        capture_types: &[accel_ir::Type],
        result: &accel_ir::Type,
    ) -> Result<(accel_ir::Expr, Vec<(String, accel_ir::Type)>), String> {
        use accel_ir::passes::{fuse, inline, typecheck};
        let program = self.program().map_err(|e| e.to_string())?;
        let body = inline::inline(&program).map_err(|e| e.to_string())?;
        let captures: Vec<(String, accel_ir::Type)> = program
            .site
            .captures
            .iter()
            .cloned()
            .zip(capture_types.iter().cloned())
            .collect();
        let typed = typecheck::typecheck(&body, &captures, result).map_err(|e| e.to_string())?;
        Ok((fuse::fuse(&typed), captures))
    }

    /// The functions the site reaches, each once.
    fn reached_functions(&'static self) -> Vec<&'static FnDesc> {
        let mut out: Vec<&'static FnDesc> = Vec::new();
        let mut stack: Vec<&'static FnDesc> = self.callees.iter().map(|(_, d)| *d).collect();
        while let Some(f) = stack.pop() {
            if out.iter().any(|g| g.path == f.path) {
                continue;
            }
            out.push(f);
            stack.extend(f.callees.iter().map(|(_, d)| *d));
        }
        out
    }

    /// The constants the reached functions name, as extra captures (name, value), in the
    /// order the compiled code takes them.
    pub(crate) fn constants(&'static self) -> Vec<(String, &'static (dyn Inspect + Sync))> {
        let mut out = Vec::new();
        for f in self.reached_functions() {
            for (name, value) in f.consts {
                out.push((format!("{}::{name}", f.path), *value));
            }
        }
        out
    }
}

/// Replaces the constants `names` in a function body by the captures `function::NAME`.
fn constants_to_captures(e: &mut accel_ir::Expr, function: &str, names: &[&str]) {
    if let accel_ir::Expr::Const(c) = e {
        if names.contains(&c.as_str()) {
            *e = accel_ir::Expr::Var(format!("{function}::{c}"));
            return;
        }
    }
    e.for_each_child_mut(&mut |c| constants_to_captures(c, function, names));
}

thread_local! {
    static CURRENT_SITE: Cell<Option<&'static SiteDesc>> = const { Cell::new(None) };
}

/// Reports a broken assumption of accelerated code: panics with the operation, the site
/// being run (when there is one) and what was wrong.
#[track_caller]
pub(crate) fn violation(what: &str, message: &str) -> ! {
    match CURRENT_SITE.with(Cell::get) {
        Some(site) => panic!("{what} at {}: {message}", site.location()),
        None => panic!("{what}: {message}"),
    }
}

/// Whether `ACCEL_LOG` asks for a log.
pub(crate) fn logging() -> bool {
    static LOG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LOG.get_or_init(|| std::env::var("ACCEL_LOG").is_ok_and(|v| !v.is_empty() && v != "0"))
}

/// Logs (under `ACCEL_LOG`) how `backend` compiled a site on its first run, or a cache hit.
fn log_compiled(site: &SiteDesc, hit: bool, backend: &str, compiled: impl FnOnce() -> String) {
    if !logging() {
        return;
    }
    let what = if hit {
        "cache hit".to_string()
    } else {
        compiled()
    };
    eprintln!("[accel] {}: {backend}: {what}", site.location());
}

/// How a site runs this time.
pub enum Plan<R> {
    /// Compiled code for the captured values' types.
    Compiled(Backend, PhantomData<fn() -> R>),
    /// The expression as sequential Rust (debug mode, or the fallback).
    Sequential,
}

/// A compiled site, for the backend that runs it.
pub enum Backend {
    Cpu(Arc<CompiledSite>),
    #[cfg(feature = "cuda")]
    Cuda(Arc<crate::cuda::CudaSite>),
}

/// Decides how a site runs: compiled for the cpu mode (compiling on first use), the
/// sequential path in debug mode and when the default mode cannot compile the site.
pub(crate) fn plan<R: Accel>(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
) -> Plan<R> {
    let mode = mode().unwrap_or_else(|e| panic!("accelerate! at {}: {e}", site.location()));
    if mode == Mode::Debug {
        return Plan::Sequential;
    }
    let constants = site.constants();
    let types: Vec<accel_ir::Type> = captures
        .iter()
        .map(|(_, v)| v.ir_type())
        .chain(constants.iter().map(|(_, v)| v.ir_type()))
        .collect();
    #[cfg(feature = "cuda")]
    if mode == Mode::Cuda {
        let (compiled, hit) = crate::cuda::compiled(site, &types, &R::accel_type());
        match compiled {
            Ok(c) => {
                log_compiled(site, hit, "cuda", || {
                    format!(
                        "compiled in {:.3} ms ({} kernel(s){})",
                        c.compile_ms,
                        c.kernels(),
                        if c.from_disk { "; PTX from the disk cache" } else { "" }
                    )
                });
                return Plan::Compiled(Backend::Cuda(c), PhantomData);
            }
            Err(e) if mode_was_chosen() => panic!(
                "accelerate! at {}: {e} (ACCEL_MODE=cuda); use ACCEL_MODE=cpu, or leave ACCEL_MODE unset to fall back to the CPU",
                site.location()
            ),
            Err(e) => {
                if logging() && !hit {
                    eprintln!("[accel] {}: cuda: {e}; running on the CPU instead", site.location());
                }
            }
        }
    }
    let fixed = cpu::fixed_values(
        site,
        captures.iter().copied().chain(
            constants
                .iter()
                .map(|(n, v)| (n.as_str(), *v as &dyn Inspect)),
        ),
    );
    let (compiled, hit) = cpu::compiled(site, &types, &R::accel_type(), &fixed);
    #[cfg(feature = "cuda")]
    if !hit {
        crate::cuda::check::after_cpu_compile(site, &types, &R::accel_type());
    }
    match compiled {
        Ok(c) => {
            log_compiled(site, hit, "cpu", || {
                format!(
                    "compiled in {:.3} ms ({} parallel kernel(s))",
                    c.compile_ms,
                    c.kernels()
                )
            });
            Plan::Compiled(Backend::Cpu(c), PhantomData)
        }
        Err(e) if mode_was_chosen() => panic!(
            "accelerate! at {}: {e} (ACCEL_MODE=cpu); run it with ACCEL_MODE=debug, or leave ACCEL_MODE unset to fall back to sequential execution",
            site.location()
        ),
        Err(e) => {
            if logging() && !hit {
                eprintln!("[accel] {}: cpu: {e}; running sequentially instead", site.location());
            }
            Plan::Sequential
        }
    }
}

/// Runs compiled code on the captured values; a failure names the site.
pub(crate) fn run_compiled<R: Accel>(
    site: &'static SiteDesc,
    c: &Backend,
    captures: &[(&str, &dyn Inspect)],
) -> R {
    let constants = site.constants();
    let all: Vec<(&str, &dyn Inspect)> = captures
        .iter()
        .copied()
        .chain(
            constants
                .iter()
                .map(|(n, v)| (n.as_str(), *v as &dyn Inspect)),
        )
        .collect();
    let c = match c {
        Backend::Cpu(c) => c,
        #[cfg(feature = "cuda")]
        Backend::Cuda(g) => {
            return match crate::cuda::run::<R>(g, &all) {
                Ok((r, report)) => {
                    if logging() {
                        first_run_report(site);
                        eprintln!(
                            "[accel] {}: cuda: ran in {:.3} ms; {} bytes to the GPU, {} back; at most {} bytes of device memory held",
                            site.location(),
                            report.run_ms,
                            report.bytes_in,
                            report.bytes_out,
                            report.peak_bytes
                        );
                    }
                    r
                }
                Err(e) => panic!("accelerate! at {}: {e}", site.location()),
            }
        }
    };
    match cpu::run::<R>(c, &all) {
        Ok((r, report)) => {
            if logging() {
                first_run_report(site);
                eprintln!(
                    "[accel] {}: cpu: ran in {:.3} ms; {} bytes in, {} of them copied to marshal",
                    site.location(),
                    report.run_ms,
                    report.bytes,
                    report.copied
                );
            }
            r
        }
        Err(e) => panic!("accelerate! at {}: {e}", site.location()),
    }
}

/// What debug mode learned of a site's captured values before running it.
pub struct Inspected {
    tensors: Vec<TensorName>,
}

/// Inspects a site's captured values in debug mode (regular nesting, tensor ranks, tensor
/// names for messages); does nothing in the other modes.
pub(crate) fn inspect(site: &'static SiteDesc, captures: &[(&str, &dyn Inspect)]) -> Inspected {
    if mode() != Ok(Mode::Debug) {
        return Inspected {
            tensors: Vec::new(),
        };
    }
    match checks::inspect_captures(captures) {
        Ok(tensors) => Inspected { tensors },
        Err(e) => panic!("accelerate! at {}: captured {e}", site.location()),
    }
}

/// Runs a site. `sequential` is the expression itself compiled by rustc: the debug path.
pub(crate) fn run<R: Accel>(
    site: &'static SiteDesc,
    inspected: Inspected,
    sequential: impl FnOnce() -> R,
) -> R {
    let mode = mode().unwrap_or_else(|e| panic!("accelerate! at {}: {e}", site.location()));
    let log = logging();
    if log {
        first_run_report(site);
    }
    let start = Instant::now();
    let previous = CURRENT_SITE.with(|c| c.replace(Some(site)));
    // Restores the enclosing site even when the expression panics.
    struct Restore(Option<&'static SiteDesc>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT_SITE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(previous);
    let result = match mode {
        Mode::Debug => run_checked(site, inspected, sequential),
        Mode::Cpu | Mode::Cuda => sequential(),
    };
    if log {
        let how = match mode {
            Mode::Debug => "debug: ran as checked sequential Rust",
            Mode::Cpu | Mode::Cuda => "ran as sequential Rust",
        };
        eprintln!(
            "[accel] {}: {how} in {:.3} ms",
            site.location(),
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    result
}

/// Debug mode: the expression with every check on. A panic raised by the expression
/// itself (an index out of bounds, an integer overflow in a build with overflow checks) is
/// re-raised naming the site.
fn run_checked<R: Accel>(
    site: &'static SiteDesc,
    inspected: Inspected,
    sequential: impl FnOnce() -> R,
) -> R {
    let result = {
        let _checks = checks::enable(inspected.tensors);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(sequential))
    };
    match result {
        Ok(r) => {
            if let Err(e) = checks::check_result(&r) {
                panic!("accelerate! at {}: {e}", site.location());
            }
            r
        }
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            match message {
                Some(m) if !m.contains(&site.location()) => {
                    panic!("accelerate! at {}: {m}", site.location())
                }
                _ => std::panic::resume_unwind(payload),
            }
        }
    }
}

fn first_run_report(site: &'static SiteDesc) {
    static SEEN: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen
        .get_or_insert_with(HashSet::new)
        .insert(site as *const SiteDesc as usize)
    {
        return;
    }
    drop(seen);
    match site.program() {
        Ok(p) => eprintln!(
            "[accel] {}: program of {} function(s) [{}], captures [{}]",
            site.location(),
            p.functions.len(),
            p.function_names().join(", "),
            p.site.captures.join(", ")
        ),
        Err(e) => eprintln!("[accel] {}: program assembly failed: {e}", site.location()),
    }
}

// ---------------------------------------------------------------------------------------
// Compile-time checks, evaluated by rustc as constants in the code `accelerate!` generates.

/// A message assembled during constant evaluation (no allocation there).
struct Msg {
    buf: [u8; 1024],
    len: usize,
}

impl Msg {
    const fn new() -> Msg {
        Msg {
            buf: [0; 1024],
            len: 0,
        }
    }

    const fn s(mut self, s: &str) -> Msg {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && self.len < self.buf.len() {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn n(mut self, mut n: u32) -> Msg {
        let mut digits = [0u8; 10];
        let mut k = 0;
        loop {
            digits[k] = b'0' + (n % 10) as u8;
            k += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        while k > 0 && self.len < self.buf.len() {
            k -= 1;
            self.buf[self.len] = digits[k];
            self.len += 1;
        }
        self
    }

    const fn fail(self) -> ! {
        let (bytes, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(bytes) {
            Ok(s) => panic!("{}", s),
            Err(_) => panic!("accelerated code was rejected"),
        }
    }
}

/// A parallel operation found in a program, and the function it is in (`None`: the site).
#[derive(Clone, Copy)]
struct Found {
    op: OpUse,
    owner: Option<&'static FnDesc>,
}

const fn first_op(
    ops: &'static [OpUse],
    callees: &'static [(&'static str, &'static FnDesc)],
    owner: Option<&'static FnDesc>,
    imperative: bool,
    depth: u32,
) -> Option<Found> {
    if depth as usize > MAX_DEPTH {
        return None;
    }
    let mut i = 0;
    while i < ops.len() {
        if ops[i].imperative == imperative {
            return Some(Found { op: ops[i], owner });
        }
        i += 1;
    }
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if let Some(found) = first_op(f.ops, f.callees, Some(f), imperative, depth + 1) {
            return Some(found);
        }
        i += 1;
    }
    None
}

/// Whether a function reached from `callees` failed to compile (its companion carries no IR).
const fn reaches_rejected(
    callees: &'static [(&'static str, &'static FnDesc)],
    depth: usize,
) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if f.ir.is_empty() || reaches_rejected(f.callees, depth + 1) {
            return true;
        }
        i += 1;
    }
    false
}

/// The first function reached from `callees` that breaks the imperative rules.
const fn first_imperative_violation(
    callees: &'static [(&'static str, &'static FnDesc)],
    depth: u32,
) -> Option<&'static FnDesc> {
    if depth as usize > MAX_DEPTH {
        return None;
    }
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if f.higher_order {
            return Some(f);
        }
        if let Some(v) = first_imperative_violation(f.callees, depth + 1) {
            return Some(v);
        }
        i += 1;
    }
    None
}

const fn where_(m: Msg, site: &SiteDesc, found: Found) -> Msg {
    let m = m.s(found.op.op);
    let (file, m) = match found.owner {
        Some(f) => (f.file, m.s(" in fn `").s(f.name).s("`")),
        None => (site.file, m),
    };
    m.s(" at ")
        .s(file)
        .s(":")
        .n(found.op.line)
        .s(":")
        .n(found.op.column + 1)
}

const fn site_head(site: &SiteDesc) -> Msg {
    Msg::new()
        .s("accelerate! at ")
        .s(site.file)
        .s(":")
        .n(site.line)
        .s(":")
        .n(site.column + 1)
        .s(" ")
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn same_fn(a: &FnDesc, b: &FnDesc) -> bool {
    str_eq(a.path, b.path)
}

/// The longest call chain compile-time checks follow.
const MAX_DEPTH: usize = 48;

/// A call chain reached from the site, to detect recursion.
struct Chain {
    fns: [Option<&'static FnDesc>; MAX_DEPTH],
    len: usize,
}

/// Finds a cycle among the functions reachable from `callees`; on return `chain` holds the
/// path from the site into the cycle, ending with the function that closes it.
const fn find_cycle(
    callees: &'static [(&'static str, &'static FnDesc)],
    chain: &mut Chain,
) -> bool {
    let mut i = 0;
    while i < callees.len() {
        let f = callees[i].1;
        if chain.len == MAX_DEPTH {
            return true;
        }
        let mut k = 0;
        while k < chain.len {
            if let Some(g) = chain.fns[k] {
                if same_fn(f, g) {
                    chain.fns[chain.len] = Some(f);
                    chain.len += 1;
                    return true;
                }
            }
            k += 1;
        }
        chain.fns[chain.len] = Some(f);
        chain.len += 1;
        if find_cycle(f.callees, chain) {
            return true;
        }
        chain.len -= 1;
        i += 1;
    }
    false
}

/// The compile-time classification and per-backend rules of a site, across `#[accel]`
/// function boundaries (the paper's section 4.2 and the imperative backend's rules), and
/// the absence of recursion. A violation stops compilation with a message naming the
/// functions and operations involved and where they are.
pub const fn check_site(site: &'static SiteDesc) {
    let mut chain = Chain {
        fns: [None; MAX_DEPTH],
        len: 0,
    };
    let cyclic = find_cycle(site.callees, &mut chain);
    // The walks below follow calls without memory; they terminate because there is no
    // cycle. A function that was rejected with its own error ends the checks quietly.
    if !cyclic && reaches_rejected(site.callees, 0) {
        return;
    }
    if cyclic {
        let mut m = site_head(site)
            .s("reaches recursive functions, which accelerated code does not support: ");
        let mut k = 0;
        while k < chain.len {
            if let Some(f) = chain.fns[k] {
                if k > 0 {
                    m = m.s(" -> ");
                }
                m = m.s(f.name);
            }
            k += 1;
        }
        m.s(". Rewrite the recursion as a `while` loop").fail()
    }
    let functional = first_op(site.ops, site.callees, None, false, 0);
    let imperative = first_op(site.ops, site.callees, None, true, 0);
    match (functional, imperative) {
        (None, None) => site_head(site)
            .s("uses no parallel operation (map, map2, reduce, scan, flatten, create or parallel_loop), ")
            .s("neither directly nor through the #[accel] functions it calls: it would run sequentially. ")
            .s("Use a parallel operation, or remove accelerate!")
            .fail(),
        (Some(f), Some(i)) => {
            let m = site_head(site).s("mixes functional operations (");
            let m = where_(m, site, f).s(") with parallel_loop (");
            where_(m, site, i).s("). One site runs on one backend: split it into two accelerate! sites").fail()
        }
        (None, Some(_)) => {
            if let Some(f) = first_imperative_violation(site.callees, 0) {
                site_head(site)
                    .s("uses parallel_loop (imperative code, which has no function values), but fn `")
                    .s(f.name)
                    .s("` at ")
                    .s(f.file)
                    .s(":")
                    .n(f.line)
                    .s(" takes or returns a function: call the function it needs directly instead")
                    .fail()
            }
        }
        (Some(_), None) => {}
    }
}
