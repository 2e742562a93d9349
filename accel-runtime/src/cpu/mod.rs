//! The CPU backend: a site's program is inlined, typed from its captured values, fused, and
//! compiled with Cranelift into a host function and kernels that run over chunks of the
//! index space on all cores (rayon). Compiled sites are cached per combination of captured
//! types and result type; concurrent first calls compile once.

pub mod abi;
pub mod codegen;
pub mod pool;

use crate::accel_type::Accel;
use crate::checks::Inspect;
use crate::site::{CompileCache, SiteDesc};
use abi::{Arena, Marshal, Unmarshal};
use accel_ir::Type;
use pool::RunCtx;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A site compiled for one combination of captured types.
pub struct CompiledSite {
    code: codegen::Compiled,
    pub compile_ms: f64,
}

type Fixed = Vec<(usize, u64)>;

static CACHE: CompileCache<(usize, Vec<Type>, Type, Fixed), CompiledSite> = CompileCache::new();

/// The compiled site for these types, compiling it on first use (once, whichever thread
/// asks first). Returns it and whether it came from the cache. `fixed` are captured
/// integers compiled in as constants (see [`fixed_values`]).
pub fn compiled(
    site: &'static SiteDesc,
    captures: &[Type],
    result: &Type,
    fixed: &[(usize, u64)],
) -> (Result<Arc<CompiledSite>, String>, bool) {
    let key = (
        site as *const SiteDesc as usize,
        captures.to_vec(),
        result.clone(),
        fixed.to_vec(),
    );
    CACHE.get(key, || compile(site, captures, result, fixed))
}

/// How many sets of compiled-in values one site may have: a capture named like a
/// constant whose value keeps changing gets the generic code after that.
const MAX_FIXED_VERSIONS: usize = 4;

/// The captured integers a site's code may take as constants: those named like Rust
/// constants (`HIDDEN`, `N_MAX`: `const` items by convention, so the same at every call)
/// with a non-negative value, by position in `captures` with their word. Constants make
/// `k / HIDDEN` a shift and strides known to Cranelift. A site sees at most
/// [`MAX_FIXED_VERSIONS`] distinct sets; after that it runs generic code for new ones.
pub fn fixed_values<'a>(
    site: &'static SiteDesc,
    captures: impl Iterator<Item = (&'a str, &'a dyn Inspect)>,
) -> Fixed {
    use accel_ir::ScalarType as S;
    let mut fixed = Vec::new();
    for (k, (path, v)) in captures.enumerate() {
        let name = path.rsplit("::").next().unwrap_or(path);
        let constant_like = name.chars().any(|c| c.is_ascii_uppercase())
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        let Type::Scalar(s) = v.ir_type() else {
            continue;
        };
        if !constant_like || s.is_float() || s == S::Bool {
            continue;
        }
        let mut m = Marshal::default();
        v.marshal_into(&mut m);
        let Some(&w) = m.words.first() else { continue };
        let negative = match s {
            S::I32 => (w as u32 as i32) < 0,
            S::I64 => (w as i64) < 0,
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
    let id = site as *const SiteDesc as usize;
    if seen.iter().any(|(s, f)| *s == id && *f == fixed) {
        return fixed;
    }
    if seen.iter().filter(|(s, _)| *s == id).count() >= MAX_FIXED_VERSIONS {
        return Vec::new();
    }
    seen.push((id, fixed.clone()));
    fixed
}

/// The compile time of every compilation, in order (for benchmarks).
pub static COMPILE_TIMES: Mutex<Vec<f64>> = Mutex::new(Vec::new());

/// How many times a site was compiled in this process (tests check the cache with it).
pub static COMPILATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The pipeline of a site's first run: extraction, inlining, type inference, fusion,
/// code generation.
fn compile(
    site: &'static SiteDesc,
    capture_types: &[Type],
    result: &Type,
    fixed: &[(usize, u64)],
) -> Result<Arc<CompiledSite>, String> {
    COMPILATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let start = Instant::now();
    let (mut fused, captures) = site.fused(capture_types, result)?;
    for &(k, word) in fixed {
        let (name, t) = &captures[k];
        if let Type::Scalar(s) = t {
            compile_in(&mut fused, name, &accel_ir::Lit::Int(word, Some(*s)));
        }
    }
    let dump = crate::dump::dump_dir();
    let code = codegen::compile(&fused, &captures, result, dump.is_some())?;
    if let (Some(dir), Some(listing)) = (&dump, &code.listing) {
        let text = format!(
            ";; {} on the CPU: the fused program, then each function's machine code\n;; {}\n{listing}",
            site.location(),
            fused.to_string().replace('\n', "\n;; ")
        );
        let stem = crate::dump::file_stem(site, &text);
        crate::dump::write_file(&dir.join(format!("{stem}.cpu.s")), &text)?;
    }
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    COMPILE_TIMES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(compile_ms);
    Ok(Arc::new(CompiledSite {
        code,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    }))
}

/// Replaces the variable `name` by the literal `value` in `body`, unless the body binds
/// that name somewhere (then the capture stays a variable).
fn compile_in(body: &mut accel_ir::Expr, name: &str, value: &accel_ir::Lit) {
    use accel_ir::{Expr, Stmt};
    let mut bound = false;
    body.walk(&mut |e| match e {
        Expr::Block { stmts, .. } => {
            for st in stmts {
                if let Stmt::Let { pat, .. } = st {
                    bound |= pat.bound_names().iter().any(|n| n == name);
                }
            }
        }
        Expr::Lambda { params, .. } => {
            bound |= params
                .iter()
                .any(|(p, _)| p.bound_names().iter().any(|n| n == name));
        }
        Expr::For { var, .. } => bound |= var == name,
        Expr::Match { arms, .. } => {
            bound |= arms
                .iter()
                .any(|a| a.pat.bound_names().iter().any(|n| n == name));
        }
        _ => {}
    });
    if bound {
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

impl CompiledSite {
    /// How many parallel kernels the site launches.
    pub fn kernels(&self) -> usize {
        self.code.kernels
    }
}

/// What one compiled run did, for ACCEL_LOG.
pub struct RunReport {
    pub bytes: usize,
    pub copied: usize,
    pub run_ms: f64,
}

/// Runs a compiled site on its captured values.
pub fn run<R: Accel>(
    c: &CompiledSite,
    captures: &[(&str, &dyn Inspect)],
) -> Result<(R, RunReport), String> {
    let start = Instant::now();
    let mut m = Marshal::default();
    for (_, v) in captures {
        v.marshal_into(&mut m);
    }
    if let Some(e) = m.error.take() {
        return Err(e);
    }
    let (bytes, copied) = (m.bytes, m.copied);
    let ctx = RunCtx::default();
    let mut out = vec![0u64; c.code.result_words.max(1)];
    type Host = extern "C" fn(*const u64, *mut u64, *const RunCtx) -> u32;
    // SAFETY: `host` is the address of the site function the JIT compiled with the `Host`
    // signature; `m.words` holds exactly the words of the captured values in the order
    // the code reads them, every pointer among them is valid for the whole call (the
    // values are borrowed and `m.keep` holds columns and buffer locks until after it),
    // and `out` has room for the result's words.
    let status = unsafe {
        let host: Host = std::mem::transmute::<usize, Host>(c.code.host);
        host(m.words.as_ptr(), out.as_mut_ptr(), &ctx)
    };
    if status != 0 {
        let failure = ctx.error.lock().unwrap_or_else(|e| e.into_inner()).take();
        return Err(failure.map_or_else(|| "compiled code failed".to_string(), |f| f.describe()));
    }
    let mut arena: Arena = ctx.take_arena();
    let mut u = Unmarshal {
        words: &out,
        at: 0,
        arena: &mut arena,
    };
    let r = R::unmarshal(&mut u)?;
    Ok((
        r,
        RunReport {
            bytes,
            copied,
            run_ms: start.elapsed().as_secs_f64() * 1e3,
        },
    ))
}
