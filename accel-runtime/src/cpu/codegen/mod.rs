//! Cranelift code generation for a typed, fused site.
//!
//! A site becomes one *host* function that runs on the calling thread; each parallel
//! operation at the site's top level (outside every closure) becomes a *kernel* over a range
//! of its index space, launched on all cores through [`super::pool::accel_par`]. Parallel
//! operations nested inside closures run as sequential loops inside the enclosing kernel.
//! Reductions fold four contiguous streams per chunk with four accumulators (which needs
//! only associativity), then combine chunks in order.
//!
//! Values are flat lists of Cranelift values following the backend contract's layout
//! ([`crate::backend::layout`]). Nothing traps: indices are bounds-checked, integer
//! division is checked, float-to-integer casts saturate as Rust's `as` does; a failure is
//! reported through `accel_fail` and the function returns a non-zero status.
//!
//! The code is split by construct, as rustc_codegen_cranelift splits it: [`cx`] (the
//! function context), [`expr`] (dispatch), [`values`], [`num`], [`methods`], [`control`],
//! [`memory`], [`loops`] with [`proofs`] (bounds checked once per loop), [`simd`], and one
//! module per parallel operation under [`ops`] over the shared [`kernel`] plumbing.

mod control;
mod cx;
mod expr;
mod forwarding;
mod in_place;
mod kept;
mod kernel;
mod local_arrays;
mod loops;
mod math;
mod memory;
mod methods;
mod num;
mod ops;
mod pipeline;
mod proofs;
pub(super) mod row_inputs;
mod simd;
mod spmd;
mod tensors;
mod trivial_params;
mod values;

pub use math::probe::{MathProbe, ProbeConfig};

use super::helpers::helpers;
use accel_ir::{Expr, Type};
use cranelift_codegen::ir::{types as ct, AbiParam, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use cx::{words, FnCx, Gen, R, V};
use std::collections::{HashMap, HashSet};

/// A compiled site.
pub struct Compiled {
    /// `extern "C" fn(args: *const u64, out: *mut u64, ctx: *const RunCtx) -> u32`.
    pub host: usize,
    /// Every function's address, in the order they were defined (kernels, then the site
    /// function): the same program compiled at another tier defines the same ones.
    pub functions: Vec<u64>,
    pub result_words: usize,
    pub kernels: usize,
    /// How many of its loops run on SIMD vectors.
    pub simd_loops: usize,
    /// The shapes gang code took (see [`cx::Gen`]'s `shapes`).
    pub shapes: Vec<&'static str>,
    /// Why kernels were generated as scalar code instead of for gangs of lanes.
    pub spmd_fallbacks: Vec<String>,
    /// Each function's optimised machine code, when asked for (`ACCEL_DUMP`).
    pub listing: Option<String>,
    /// Whether the code is LLVM's from the disk cache (compiled by an earlier process).
    pub from_disk: bool,
    /// How many words the site keeps from call to call (`pool::RunCtx::site_words`).
    pub site_words: usize,
    /// Whether the sequence result is in rows (see `layout::row_leaves`).
    pub result_rows: bool,
}

/// What a site's code is compiled from: its typed, fused body, whose free variables are
/// the captures, its result's type, and whether its caller takes a sequence result in
/// rows (then a result made by one producer is written so).
pub struct SiteCode<'a> {
    pub body: &'a Expr,
    pub captures: &'a [(String, Type)],
    pub result: &'a Type,
    pub rows: bool,
    /// The captures read in place, with how they lie (see [`row_inputs`]).
    pub row_inputs: &'a [(String, crate::backend::layout::RowLayout)],
}

/// Whether kernels may run elements on SIMD lanes (SPMD); `ACCEL_SIMD=0` turns it off
/// (scalar code only, for comparisons).
pub fn simd_enabled() -> bool {
    std::env::var("ACCEL_SIMD").map_or(true, |v| v != "0")
}

/// The records the captures' and the result's types name.
fn records_of(captures: &[(String, Type)], result: &Type) -> accel_ir::Records {
    let mut records = HashMap::new();
    for (_, t) in captures {
        t.learn_records(&mut records);
    }
    result.learn_records(&mut records);
    records
}

/// Whether `ACCEL_EXACT_MATH=1`: math functions then call the platform's libm, so results
/// are bit-identical to debug mode's.
pub fn exact_math() -> bool {
    std::env::var("ACCEL_EXACT_MATH").is_ok_and(|v| v == "1")
}

/// How hard Cranelift works on a site's code (see `cpu::tiers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The single-pass register allocator: 3-6x faster to compile, with more spills in
    /// loops that run short of registers.
    Quick,
    /// The backtracking register allocator.
    Optimized,
    /// The optimized tier's Cranelift IR compiled by LLVM (`cpu::llvm`), for the host's
    /// whole instruction set.
    Llvm,
}

impl Tier {
    /// The tier's name in logs and traces.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Quick => "quick",
            Tier::Optimized => "optimized",
            Tier::Llvm => "llvm",
        }
    }
}

/// Whether Cranelift verifies the code it compiles: in debug builds (every test and the
/// fuzzer's programs) or with `ACCEL_VERIFY=1`; release builds skip it (a tenth to a
/// quarter of compile time; Wasmtime's default too).
fn verifying() -> bool {
    static FROM_ENV: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    cfg!(debug_assertions)
        || *FROM_ENV.get_or_init(|| std::env::var("ACCEL_VERIFY").is_ok_and(|v| v == "1"))
}

impl Gen {
    /// Takes the functions compiled as they were generated and makes the code runnable:
    /// the site function `site`'s address and every function's, in definition order.
    fn finish(&mut self, site: FuncId) -> R<Option<(usize, Vec<u64>)>> {
        if let Some(functions) = self.llvm.take() {
            return self.finish_llvm(site, functions);
        }
        self.define_deferred()?;
        self.module
            .finalize_definitions()
            .map_err(|e| e.to_string())?;
        let address = |f: &FuncId| self.module.get_finalized_function(*f) as u64;
        let functions = self.defined.iter().map(address).collect();
        Ok(Some((address(&site) as usize, functions)))
    }

    /// [`Self::finish`] at the LLVM tier: `functions` compiled by LLVM (or their code
    /// from the disk cache; `None` when it is not there and [`Gen::llvm_on_miss`] gives
    /// up), helpers called by name; with a listing, the module's text joins it.
    fn finish_llvm(
        &mut self,
        site: FuncId,
        functions: Vec<(FuncId, cranelift_codegen::ir::Function)>,
    ) -> R<Option<(usize, Vec<u64>)>> {
        let all = helpers();
        let helper_names: HashMap<u32, &'static str> = all
            .iter()
            .filter_map(|h| Some((self.helpers.get(h.name)?.as_u32(), h.name)))
            .collect();
        let defined: std::collections::HashSet<u32> =
            functions.iter().map(|(id, _)| id.as_u32()).collect();
        let callee = |id: u32| {
            if defined.contains(&id) {
                Some(crate::cpu::llvm::Callee::Defined)
            } else {
                helper_names
                    .get(&id)
                    .map(|&name| crate::cpu::llvm::Callee::Helper(name))
            }
        };
        let helper = |name: &str| {
            all.iter()
                .find(|h| h.name == name)
                .map(|h| h.address as u64)
        };
        let numbered: Vec<(u32, cranelift_codegen::ir::Function)> = functions
            .into_iter()
            .map(|(id, f)| (id.as_u32(), f))
            .collect();
        let Some(code) = crate::cpu::llvm::compile(&numbered, &callee, &helper, self.llvm_on_miss)?
        else {
            return Ok(None);
        };
        self.llvm_from_disk = code.from_disk;
        if let Some(listing) = &mut self.listing {
            listing.push_str(&format!("\n;; the LLVM module\n{}", code.ir));
        }
        // `define` collected the functions in the order it records them in `defined`.
        let host = self
            .defined
            .iter()
            .position(|&f| f == site)
            .and_then(|k| code.addresses.get(k).copied())
            .ok_or("LLVM did not compile the site function")?;
        Ok(Some((host as usize, code.addresses)))
    }

    /// A site's code generation state at `tier`, its functions compiled by `pipeline`;
    /// with `listing`, each function's machine code as text.
    fn for_site(
        module: JITModule,
        records: accel_ir::Records,
        tier: Tier,
        pipeline: pipeline::Pipeline,
        listing: bool,
    ) -> Gen {
        let has = |name: &str| {
            module
                .isa()
                .isa_flags()
                .iter()
                .any(|f| f.name == name && f.as_bool() == Some(true))
        };
        let fma = has("has_fma") && has("has_avx");
        let blendv = cfg!(target_arch = "x86_64") && has("has_sse41");
        Gen {
            module,
            helpers: HashMap::new(),
            records,
            kernels: 0,
            // Narrow gangs at the quick tier: a quarter of the code to generate and
            // compile for Canny's largest element, run only until the optimized code is
            // there. Up to 16 lanes at the optimized tier (more groups are more code for
            // Cranelift); up to the widest gang at LLVM's, compiled in the background, whose
            // wider groups give a small element's gang two to four independent chains.
            max_groups: match tier {
                Tier::Quick => 1,
                Tier::Optimized => 4,
                Tier::Llvm => spmd::MAX_LANES / spmd::GROUP,
            },
            // A search loop's gang (see `spmd::gang_groups`): Cranelift's code for word
            // count ran fastest at 4 lanes, LLVM's at 16 (2x its 4-lane speed, on AVX2).
            search_lanes: match tier {
                Tier::Quick | Tier::Optimized => spmd::GROUP,
                Tier::Llvm => 16,
            },
            group_lanes: match tier {
                Tier::Llvm => crate::cpu::llvm::group_lanes(),
                Tier::Quick | Tier::Optimized => spmd::GROUP,
            },
            vector_registers: match tier {
                Tier::Llvm => crate::cpu::llvm::vector_registers(),
                Tier::Quick | Tier::Optimized => spmd::CRANELIFT_VECTOR_REGISTERS,
            },
            next_group: spmd::GROUP,
            simd_loops: 0,
            shapes: Vec::new(),
            site_words: 0,
            manifests: HashMap::new(),
            listing: listing.then(String::new),
            fma,
            blendv,
            exact_math: exact_math(),
            spmd: false,
            inner_gangs: false,
            spmd_fallbacks: Vec::new(),
            in_place: HashSet::new(),
            row_inputs: HashMap::new(),
            writes_in_place: false,
            rows_result: None,
            wrote_rows: false,
            pinned_lanes: None,
            out_row_bytes: None,
            defined: Vec::new(),
            deferred: (tier != Tier::Llvm).then_some(pipeline),
            llvm: (tier == Tier::Llvm).then(Vec::new),
            llvm_on_miss: crate::cpu::llvm::OnMiss::Compile,
            llvm_from_disk: false,
            calls_scalar: false,
        }
    }
}

/// The host's Cranelift target, its settings for `tier`.
fn host_isa(tier: Tier) -> R<cranelift_codegen::isa::OwnedTargetIsa> {
    let mut flags = settings::builder();
    // The quick tier is the baseline: no mid-end optimization (Cranelift's e-graph:
    // value numbering, loop-invariant code motion, constant folding) and the single-pass
    // register allocator. Its code runs only until the optimized code is there; without
    // the e-graph Canny's site compiled in 10.8 ms against 12.9 (medians of 20 processes)
    // and the quick code of eight corpus programs ran between 0.89x and 1.26x as long.
    let level = match tier {
        Tier::Quick => "none",
        Tier::Optimized | Tier::Llvm => "speed",
    };
    flags.set("opt_level", level).map_err(|e| e.to_string())?;
    let allocator = match tier {
        Tier::Quick => "single_pass",
        Tier::Optimized | Tier::Llvm => "backtracking",
    };
    flags
        .set("regalloc_algorithm", allocator)
        .map_err(|e| e.to_string())?;
    let verify = if verifying() { "true" } else { "false" };
    flags
        .set("enable_verifier", verify)
        .map_err(|e| e.to_string())?;
    cranelift_native::builder()
        .map_err(|e| format!("no Cranelift backend for this host: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())
}

/// Address space reserved for one module's code and data (reserved, not committed: pages
/// are mapped as the module grows).
const JIT_RESERVE: usize = 256 << 20;

/// A JIT module for `isa` whose functions and data all lie in one reservation of
/// [`JIT_RESERVE`] bytes, with the runtime's helpers as its external symbols. The
/// functions of a site call each other with 32-bit relative calls; Cranelift's default
/// memory provider takes each function's pages from the allocator of the thread that
/// compiled it, and on a machine with many cores two threads' arenas can lie more than
/// 2 GiB apart (a panic in the relocation, first seen on a 16-core GPU machine).
pub(crate) fn jit_module(isa: cranelift_codegen::isa::OwnedTargetIsa) -> R<JITModule> {
    let arena = cranelift_jit::ArenaMemoryProvider::new_with_size(JIT_RESERVE)
        .map_err(|e| format!("cannot reserve memory for compiled code: {e}"))?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    jb.memory_provider(Box::new(arena));
    for h in helpers() {
        jb.symbol(h.name, h.address);
    }
    Ok(JITModule::new(jb))
}

/// Compiles a site at `tier`; with `listing`, the result carries each function's machine
/// code as text.
pub fn compile(site: &SiteCode<'_>, listing: bool, tier: Tier) -> R<Compiled> {
    let on_miss = crate::cpu::llvm::OnMiss::Compile;
    compile_with(site, listing, tier, on_miss)?.ok_or_else(|| "LLVM compiled nothing".to_string())
}

/// The site's LLVM code as another process compiled it, from the disk cache; `None` when
/// it is not there.
pub fn from_disk(site: &SiteCode<'_>) -> R<Option<Compiled>> {
    let on_miss = crate::cpu::llvm::OnMiss::GiveUp;
    compile_with(site, false, Tier::Llvm, on_miss)
}

fn compile_with(
    site: &SiteCode<'_>,
    listing: bool,
    tier: Tier,
    on_miss: crate::cpu::llvm::OnMiss,
) -> R<Option<Compiled>> {
    let SiteCode {
        body,
        captures,
        result,
        ..
    } = *site;
    let isa = host_isa(tier)?;
    // Functions compile as they are generated, on the pool at the quick tier (the first
    // call waits for them); the background's optimized compile takes one core.
    let pipeline = pipeline::Pipeline::new(isa.clone(), tier == Tier::Quick);
    let mut g = Gen::for_site(
        jit_module(isa)?,
        records_of(captures, result),
        tier,
        pipeline,
        listing,
    );
    g.declare_helpers()?;
    g.llvm_on_miss = on_miss;

    let ptr = ct::I64;
    let mut sig = g.module.make_signature();
    for _ in 0..3 {
        sig.params.push(AbiParam::new(ptr));
    }
    sig.returns.push(AbiParam::new(ct::I32));
    let id = g
        .module
        .declare_function("site", Linkage::Local, &sig)
        .map_err(|e| e.to_string())?;
    let mut ctx = g.module.make_context();
    ctx.func.signature = sig;
    let mut fbc = FunctionBuilderContext::new();
    let result_words;
    {
        let b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let mut f = FnCx::new(b, &mut g, true);
        let entry = f.b.create_block();
        f.b.append_block_params_for_function_params(entry);
        f.b.switch_to_block(entry);
        let args = f.b.block_params(entry)[0];
        let out = f.b.block_params(entry)[1];
        f.ctx = f.b.block_params(entry)[2];
        f.make_fail_block();
        // Captured values, from the argument words.
        let mut at = 0;
        for (name, t) in captures {
            let tys = words(t)?;
            let ws: Vec<Value> = tys
                .iter()
                .enumerate()
                .map(|(k, &c)| f.load(c, args, 8 * (at + k) as i32))
                .collect();
            at += tys.len();
            f.bind_var(
                name,
                V {
                    ty: t.clone(),
                    w: ws,
                },
            );
        }
        f.g.in_place = in_place::eligible(body);
        f.g.row_inputs = site.row_inputs.iter().cloned().collect();
        f.g.rows_result = site.rows.then(|| rows_result(body, result)).flatten();
        let v = f.expr(body)?;
        result_words = v.w.len();
        for (k, w) in v.w.iter().enumerate() {
            f.store(*w, out, 8 * k as i32);
        }
        f.finish();
        let config = f.g.module.target_config();
        f.b.finalize(config);
    }
    g.define(id, &mut ctx, "the site function")?;
    g.module.clear_context(&mut ctx);
    let Some((host, functions)) = g.finish(id)? else {
        return Ok(None);
    };
    if let Some(listing) = &mut g.listing {
        for why in &g.spmd_fallbacks {
            listing.push_str(&format!("\n;; scalar kernel: {why}\n"));
        }
    }
    let (kernels, simd_loops) = (g.kernels, g.simd_loops);
    let shapes = std::mem::take(&mut g.shapes);
    let spmd_fallbacks = std::mem::take(&mut g.spmd_fallbacks);
    // The code lives as long as the process: compiled sites are cached for reuse.
    Box::leak(Box::new(g.module));
    Ok(Some(Compiled {
        host,
        functions,
        result_words,
        kernels,
        simd_loops,
        shapes,
        spmd_fallbacks,
        listing: g.listing,
        from_disk: g.llvm_from_disk,
        site_words: g.site_words,
        result_rows: g.wrote_rows,
    }))
}

/// Where a site's body is one producer of flat elements with rows (see
/// `layout::row_leaves`): its element function's address and the bytes of a row.
fn rows_result(body: &Expr, result: &Type) -> Option<(usize, i64)> {
    let Type::Seq(elem) = result else {
        return None;
    };
    let (bytes, leaves) = crate::backend::layout::row_leaves(elem)?;
    let p = ops::Producer::of(body)?;
    Some((p.key(), (bytes * leaves) as i64))
}
