//! The plumbing every top-level parallel operation shares (rayon's plumbing, under the
//! operations of [`super::ops`]): a launch's output columns, per-chunk partial results and
//! environment (the host values its kernel reads, spilled to the stack), a kernel
//! function `(env, lo, hi, partial, ctx) -> status` around an operation's chunk body, and
//! the call that runs it on all cores through [`crate::cpu::pool::accel_par`].

use super::cx::*;
use super::spmd;
use accel_ir::{Expr, ParOp, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types as ct, AbiParam, InstBuilder, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};

/// A top-level operation's launch, set up on the host.
pub(super) struct Launch {
    /// The index space, `0..n`.
    pub(super) n: Value,
    /// The element type of the output, when the operation makes a sequence.
    out_elem: Option<Type>,
    /// Its columns (allocated for `n` elements).
    pub(super) out_cols: Vec<Value>,
    /// How many chunks the launch has, and their partial results (`partial_words` words
    /// each), when the operation reduces.
    pub(super) chunks: Value,
    pub(super) partials: Value,
    pub(super) partial_words: i64,
    /// The environment: the host values the kernel reads, then the output columns.
    env: Value,
    env_layout: Vec<(String, Type, Vec<CType>)>,
    out_at: usize,
    /// The least iterations per chunk (see `pool::chunk_size`); an operation may raise it.
    pub(super) grain: Value,
    /// Whether the pool is woken before the first chunk (see `pool::accel_par`): for
    /// operations whose chunks are large by construction.
    pub(super) eager: bool,
}

/// A chunk `lo..hi` of a launch, as its kernel sees it.
pub(super) struct Chunk {
    pub(super) lo: Value,
    pub(super) hi: Value,
    /// The chunk's partial result slot.
    pub(super) slot: Value,
    /// The output columns.
    pub(super) out_cols: Vec<Value>,
    /// The launch's scalar kernel, when this is its SPMD kernel and the operation's
    /// indices are independent (see [`FnCx::run_independent_chunks`]).
    pub(super) scalar: Option<ScalarKernel>,
}

/// A launch's scalar kernel as its SPMD kernel calls it: the function, and the caller's
/// environment and partial result slot to pass on.
#[derive(Clone, Copy)]
pub(super) struct ScalarKernel {
    id: FuncId,
    env: Value,
    slot: Value,
}

impl FnCx<'_, '_> {
    /// Sets up the launch of an operation with arguments `args` over `0..n`: columns for
    /// `out_elem` outputs, a partial result of type `partial` per chunk, and the
    /// environment its kernels read.
    pub(super) fn begin_launch(
        &mut self,
        args: &[&Expr],
        n: Value,
        out_elem: Option<Type>,
        partial: Option<&Type>,
    ) -> R<Launch> {
        let whole = self.iconst(0);
        self.begin_launch_touching(args, n, out_elem, partial, whole)
    }

    /// [`Self::begin_launch`] for a `create` of `elem`s that may write into the memory of
    /// the sequence `old` (its length and memory) it replaces (see `in_place`).
    pub(super) fn begin_launch_reusing(
        &mut self,
        args: &[&Expr],
        n: Value,
        elem: Type,
        old: (Value, Value),
    ) -> R<Launch> {
        self.out_reuse = Some(old);
        let l = self.begin_launch(args, n, Some(elem), None);
        self.out_reuse = None;
        l
    }

    /// The memory of `old` (length, memory) for `n` elements of `s` where its length is
    /// `n` and the site function allocated it itself (never a caller's sequence); else new
    /// memory.
    fn reused_or_new(&mut self, s: ScalarType, n: Value, (len, ptr): (Value, Value)) -> R<Value> {
        let bytes = self.scaled(n, s);
        let same = self.b.ins().icmp(IntCC::Equal, len, n);
        let (check, fresh, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.append_block_param(join, ct::I64);
        self.b.ins().brif(same, check, &[], fresh, &[]);
        self.b.switch_to_block(check);
        let ctx = self.ctx;
        let owned = self.helper("accel_host_owns", &[ctx, ptr, bytes])[0];
        self.b.ins().brif(owned, join, &[ptr.into()], fresh, &[]);
        self.b.switch_to_block(fresh);
        let whole = self.iconst(0);
        let p = self.alloc_columns_touching(&Type::Scalar(s), n, whole)?[0];
        self.b.ins().jump(join, &[p.into()]);
        self.b.switch_to_block(join);
        Ok(self.b.block_params(join)[0])
    }

    /// [`Self::begin_launch`] with output columns the kernels write in scattered parts
    /// where `sparse` (0 or 1) is 1.
    pub(super) fn begin_launch_touching(
        &mut self,
        args: &[&Expr],
        n: Value,
        out_elem: Option<Type>,
        partial: Option<&Type>,
        sparse: Value,
    ) -> R<Launch> {
        let out_cols = match (&out_elem, self.out_reuse.take()) {
            (Some(Type::Scalar(s)), Some(old)) => vec![self.reused_or_new(*s, n, old)?],
            (Some(elem), None) if self.g.out_row_bytes.is_some() => self.alloc_rows(elem, n)?,
            (Some(elem), _) => self.alloc_columns_touching(elem, n, sparse)?,
            (None, _) => vec![],
        };
        let mut grain = self.iconst(grain(args));
        if partial.is_none() && args.iter().any(|a| spmd::long_loop(a)) {
            // Elements with long loops (a matrix product's) in chunks of a sixteenth of a
            // thread's share: many rows per chunk, whose loops' reads stay in cache from
            // row to row (see `spmd::blocked`). Only where the partition cannot change the
            // result: no partial results to combine.
            // An element walking down columns in chunks of half a thread's share: a chunk
            // is a tile of gangs reading each row along its columns (see
            // `spmd::blocked`), the longer the faster, while two chunks a thread still
            // balance. 300 walks down 1900 rows of 2100 `f64` (atax's `A^T t`, 2 threads)
            // ran in 0.68 s against 0.90 in one chunk a thread, 1.11 in four and 1.10 in
            // sixteen (whole processes, medians of 10 interleaved pairs).
            let per_thread = match args.iter().any(|a| self.walks_down_columns(a)) {
                true => 2,
                false => 16,
            };
            let threads = self.helper("accel_threads", &[])[0];
            let parts = self.b.ins().imul_imm_s(threads, per_thread);
            let share = self.b.ins().udiv(n, parts);
            grain = self.b.ins().umax(grain, share);
        }
        let (chunks, partials, partial_words) = match partial {
            Some(t) => {
                let pw = words(t)?.len().max(1) as i64;
                let chunks = self.helper("accel_chunks", &[n, grain])[0];
                let bytes = self.b.ins().imul_imm_s(chunks, 8 * pw);
                let eight = self.iconst(8);
                let p = self.alloc_bytes(bytes, eight);
                (chunks, p, pw)
            }
            None => (self.iconst(0), self.iconst(0), 0),
        };
        // The environment: free variables of the operation, then the output columns.
        let free = self.free_vars(args);
        let mut env_words: Vec<Value> = Vec::new();
        let mut env_layout: Vec<(String, Type, Vec<CType>)> = Vec::new();
        for name in &free {
            let v = self.var(name)?;
            let tys = v.w.iter().map(|w| self.b.func.dfg.value_type(*w)).collect();
            env_layout.push((name.clone(), v.ty.clone(), tys));
            env_words.extend(v.w);
        }
        let out_at = env_words.len();
        env_words.extend(out_cols.iter().copied());
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (8 * env_words.len().max(1)) as u32,
            3,
        ));
        let env = self.b.ins().stack_addr(ct::I64, slot, 0);
        for (k, w) in env_words.iter().enumerate() {
            self.store(*w, env, 8 * k as i32);
        }
        Ok(Launch {
            n,
            out_elem,
            out_cols,
            chunks,
            partials,
            partial_words,
            env,
            env_layout,
            out_at,
            grain,
            eager: false,
        })
    }

    /// Compiles a kernel whose chunk body is `chunk` (`label` names it in listings) and
    /// runs it over the launch's chunks on all cores. The kernel is first generated with
    /// elements for gangs of lanes (SPMD); when some construct has no SPMD form, it is
    /// generated again with only its independent inner loops on lanes (see
    /// `spmd::inner`: an in-place form's rows), and then as scalar code.
    pub(super) fn run_chunks(
        &mut self,
        l: &Launch,
        label: ParOp,
        chunk: impl Fn(&mut FnCx<'_, '_>, Chunk) -> R<()>,
    ) -> R<()> {
        self.run_chunks_with(l, label, &chunk, false)
    }

    /// [`Self::run_chunks`] for an operation whose indices are independent (a producer's
    /// elements, a `parallel_loop`'s iterations, each computed once): its scalar kernel
    /// is a function of its own, which the SPMD kernel calls for the indices its gangs
    /// leave (a row's last few, a stencil's borders, every index when a bounds test
    /// fails) instead of carrying two or three copies of the scalar element. Less code to
    /// generate and compile, and the two kernels compile at once: Canny's Sobel kernel
    /// lost a third of its instructions.
    pub(super) fn run_independent_chunks(
        &mut self,
        l: &Launch,
        label: ParOp,
        chunk: impl Fn(&mut FnCx<'_, '_>, Chunk) -> R<()>,
    ) -> R<()> {
        self.run_chunks_with(l, label, &chunk, true)
    }

    fn run_chunks_with(
        &mut self,
        l: &Launch,
        label: ParOp,
        chunk: &dyn Fn(&mut FnCx<'_, '_>, Chunk) -> R<()>,
        independent: bool,
    ) -> R<()> {
        if !super::simd_enabled() {
            let kernel = self.kernel(l, label, chunk, Lanes::None, None)?;
            return self.run_kernel(kernel, l);
        }
        // Declared before the SPMD kernel that calls it, generated after it (the SPMD
        // kernel compiles meanwhile), and only where that kernel was made.
        let scalar = match independent {
            true => Some(Self::declare_kernel(
                self.g,
                &format!("scalar{}", self.g.kernels + 1),
            )?),
            false => None,
        };
        let mut kernel = Err(String::new());
        for lanes in [Lanes::Elements, Lanes::InnerLoops, Lanes::None] {
            let calls = scalar.filter(|_| lanes == Lanes::Elements);
            self.g.calls_scalar = false;
            kernel = self.kernel(l, label, chunk, lanes, calls);
            match &kernel {
                Err(why) if lanes != Lanes::None => self
                    .g
                    .spmd_fallbacks
                    .push(format!("{}: {why}", label.name())),
                _ => break,
            }
        }
        let kernel = kernel?;
        // Left undefined where the kernel made does not call it (nothing refers to it).
        if let (Some(id), true) = (scalar, std::mem::take(&mut self.g.calls_scalar)) {
            self.define_scalar_kernel(l, label, chunk, id)?;
        }
        self.run_kernel(kernel, l)
    }

    /// Runs the launch's scalar kernel over `from..to` (nothing when the range is
    /// empty); its failure fails this kernel (it has reported it).
    pub(super) fn call_scalar(&mut self, k: ScalarKernel, from: Value, to: Value) {
        let (call, after) = (self.b.create_block(), self.b.create_block());
        let some = self.b.ins().icmp(IntCC::UnsignedLessThan, from, to);
        self.b.ins().brif(some, call, &[], after, &[]);
        self.b.switch_to_block(call);
        self.g.calls_scalar = true;
        let fr = self.g.module.declare_func_in_func(k.id, self.b.func);
        let ctx = self.ctx;
        let inst = self.b.ins().call(fr, &[k.env, from, to, k.slot, ctx]);
        let status = self.b.inst_results(inst)[0];
        let bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
        let fail = self.fail;
        self.b.ins().brif(bad, fail, &[], after, &[]);
        self.b.switch_to_block(after);
    }

    /// The address and value of chunk `c`'s partial result of type `t`.
    pub(super) fn partial_slot(
        &mut self,
        t: &Type,
        partials: Value,
        c: Value,
        partial_words: i64,
    ) -> R<(Value, V)> {
        let base = self.b.ins().imul_imm_s(c, 8 * partial_words);
        let addr = self.b.ins().iadd(partials, base);
        let w = words(t)?
            .iter()
            .enumerate()
            .map(|(k, &ty)| self.load(ty, addr, 8 * k as i32))
            .collect();
        Ok((addr, V { ty: t.clone(), w }))
    }

    /// Launches `kernel` over the launch's index space; a failing chunk fails the host.
    fn run_kernel(&mut self, kernel: FuncId, l: &Launch) -> R<()> {
        let fr = self.g.module.declare_func_in_func(kernel, self.b.func);
        let addr = self.b.ins().func_addr(ct::I64, fr);
        let pw = self.iconst(l.partial_words);
        let eager = self.iconst(i64::from(l.eager));
        let ctx = self.ctx;
        let status = self.helper(
            "accel_par",
            &[ctx, addr, l.env, l.n, l.partials, pw, l.grain, eager],
        )[0];
        let bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
        let fail = self.fail;
        let ok = self.b.create_block();
        self.b.ins().brif(bad, fail, &[], ok, &[]);
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// The variables of the enclosing function that the operation's arguments use.
    fn free_vars(&self, args: &[&Expr]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for a in args {
            a.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    if self.vars.contains_key(v) && !out.contains(v) {
                        out.push(v.clone());
                    }
                }
            });
        }
        // Manifest inputs computed by the host are variables too, in a fixed order (the
        // same program makes the same code in every process: see `llvm`'s disk cache).
        let mut manifest: Vec<&String> = self
            .vars
            .keys()
            .filter(|k| k.starts_with("manifest#") && !out.contains(k))
            .collect();
        manifest.sort();
        out.extend(manifest.into_iter().cloned());
        out
    }

    /// Compiles the kernel of a launch: `(env, lo, hi, partial, ctx) -> status`, loading
    /// the environment and the output columns, then the chunk body; `lanes` says what
    /// runs for gangs. Nothing is left in the module when it fails.
    /// `scalar`: the launch's scalar kernel, which the chunk body may call.
    fn kernel(
        &mut self,
        l: &Launch,
        label: ParOp,
        chunk: &dyn Fn(&mut FnCx<'_, '_>, Chunk) -> R<()>,
        lanes: Lanes,
        scalar: Option<FuncId>,
    ) -> R<FuncId> {
        let g: &mut Gen = self.g;
        let (simd_loops, shapes) = (g.simd_loops, g.shapes.len());
        g.spmd = lanes == Lanes::Elements;
        g.inner_gangs = lanes != Lanes::None;
        let r = Self::kernel_function(g, l, label, chunk, scalar, None);
        g.spmd = false;
        g.inner_gangs = false;
        if r.is_err() {
            g.simd_loops = simd_loops;
            g.shapes.truncate(shapes);
        }
        r
    }

    /// Defines the scalar kernel `id` that the launch's SPMD kernel calls. It is not a
    /// launch of its own, and a vector loop in it (see `vector_map`) is not one of the
    /// site's gang loops: the site's kernels and SIMD loops are counted as before (the
    /// shapes its scalar code takes are the site's).
    fn define_scalar_kernel(
        &mut self,
        l: &Launch,
        label: ParOp,
        chunk: &dyn Fn(&mut FnCx<'_, '_>, Chunk) -> R<()>,
        id: FuncId,
    ) -> R<()> {
        let g: &mut Gen = self.g;
        let (kernels, simd_loops) = (g.kernels, g.simd_loops);
        let r = Self::kernel_function(g, l, label, chunk, None, Some(id));
        (g.kernels, g.simd_loops) = (kernels, simd_loops);
        r.map(|_| ())
    }

    /// The signature of kernels: `(env, lo, hi, partial, ctx) -> status`.
    fn kernel_signature(g: &Gen) -> cranelift_codegen::ir::Signature {
        let mut sig = g.module.make_signature();
        for _ in 0..5 {
            sig.params.push(AbiParam::new(ct::I64));
        }
        sig.returns.push(AbiParam::new(ct::I32));
        sig
    }

    /// A kernel function declared under `name`, to be defined later.
    fn declare_kernel(g: &mut Gen, name: &str) -> R<FuncId> {
        let sig = Self::kernel_signature(g);
        g.module
            .declare_function(name, Linkage::Local, &sig)
            .map_err(|e| e.to_string())
    }

    /// Generates and defines a kernel (`scalar`: the scalar kernel its chunk body may
    /// call) under the next kernel's name, or as the declared `id`.
    fn kernel_function(
        g: &mut Gen,
        l: &Launch,
        label: ParOp,
        chunk: &dyn Fn(&mut FnCx<'_, '_>, Chunk) -> R<()>,
        scalar: Option<FuncId>,
        id: Option<FuncId>,
    ) -> R<FuncId> {
        let mut ctx = g.module.make_context();
        ctx.func.signature = Self::kernel_signature(g);
        let mut fbc = FunctionBuilderContext::new();
        {
            let b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
            let mut f = FnCx::new(b, g, false);
            let entry = f.b.create_block();
            f.b.append_block_params_for_function_params(entry);
            f.b.switch_to_block(entry);
            let ps = f.b.block_params(entry).to_vec();
            let (env, lo, hi, slot) = (ps[0], ps[1], ps[2], ps[3]);
            f.ctx = ps[4];
            f.make_fail_block();
            let mut at = 0;
            for (name, ty, tys) in &l.env_layout {
                let w: Vec<Value> = tys
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| f.load(t, env, 8 * (at + k) as i32))
                    .collect();
                at += tys.len();
                f.bind_var(name, V { ty: ty.clone(), w });
            }
            let out_cols: Vec<Value> = match &l.out_elem {
                Some(e) => (0..columns(e)?.len())
                    .map(|k| f.load(ct::I64, env, 8 * (l.out_at + k) as i32))
                    .collect(),
                None => vec![],
            };
            let scalar = scalar.map(|id| ScalarKernel { id, env, slot });
            chunk(
                &mut f,
                Chunk {
                    lo,
                    hi,
                    slot,
                    out_cols,
                    scalar,
                },
            )?;
            f.finish();
            let config = f.g.module.target_config();
            f.b.finalize(config);
        }
        let what = match id {
            Some(_) => format!(
                "scalar{}: the `{}` chunks' indices left by gangs",
                g.kernels,
                label.name()
            ),
            None => format!("kernel{}: the `{}` chunks", g.kernels + 1, label.name()),
        };
        // Declared only now, under the name the next kernel gets: a failed attempt
        // leaves the name free for the next.
        let id = match id {
            Some(id) => id,
            None => Self::declare_kernel(g, &format!("kernel{}", g.kernels + 1))?,
        };
        g.define(id, &mut ctx, &what)?;
        g.module.clear_context(&mut ctx);
        g.kernels += 1;
        Ok(id)
    }
}

/// What code of a kernel runs for gangs of lanes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lanes {
    /// Elements (or iterations) of the launch, and inner loops of the scalar code left.
    Elements,
    /// Only independent inner loops of the elements' scalar code.
    InnerLoops,
    /// Nothing: scalar code.
    None,
}

/// The grain of a parallel operation: iterations with loops or nested parallel operations
/// are costly and may be spread one gang (four) per chunk; cheap ones run at least 4096
/// per chunk, so that launching a chunk costs little beside its work.
pub(super) fn grain(args: &[&Expr]) -> i64 {
    let mut costly = false;
    for a in args {
        a.walk(&mut |e| {
            if matches!(e, Expr::For { .. } | Expr::While { .. }) {
                costly = true;
            }
            if let Expr::Lambda { body, .. } = e {
                body.walk(&mut |x| costly |= matches!(x, Expr::Par { .. }));
            }
        });
    }
    // A costly element's chunk still holds a whole gang of lanes.
    if costly {
        4
    } else {
        4096
    }
}
