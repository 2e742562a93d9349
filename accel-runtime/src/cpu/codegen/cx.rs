//! The function context of code generation (rustc_codegen_cranelift's `FunctionCx`): the
//! state of one function being generated, the values it computes ([`V`]: a type and its
//! words), the word layout in Cranelift types, and the small builder helpers every
//! construct uses.

use super::super::helpers::helpers;
use crate::backend::failure::FailureKind;
use crate::backend::layout::{self, Word};
use accel_ir::passes::typecheck::type_of;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::{
    types as ct, AbiParam, Block, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::{HashMap, HashSet};

/// What code generation gives: a value, or why the construct cannot be compiled.
pub(super) type R<T> = Result<T, String>;
/// A Cranelift type.
pub(super) type CType = cranelift_codegen::ir::Type;

pub(super) fn unsupported(what: impl std::fmt::Display) -> String {
    format!("the cpu backend cannot compile {what} yet")
}

pub(super) fn clif(s: ScalarType) -> CType {
    match s {
        ScalarType::I8 | ScalarType::U8 => ct::I8,
        ScalarType::I16 | ScalarType::U16 => ct::I16,
        ScalarType::I32 | ScalarType::U32 => ct::I32,
        ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => ct::I64,
        ScalarType::F32 => ct::F32,
        ScalarType::F64 => ct::F64,
        ScalarType::Bool => ct::I8,
    }
}

pub(super) fn size_of(s: ScalarType) -> i64 {
    i64::from(clif(s).bytes())
}

/// [`FnCx::scaled`] for code that holds the builder alone.
pub(super) fn scale(b: &mut FunctionBuilder, i: Value, s: ScalarType) -> Value {
    b.ins()
        .ishl_imm_u(i, i64::from(size_of(s).trailing_zeros()))
}

pub(super) fn signed(s: ScalarType) -> bool {
    s.is_signed_int()
}

pub(super) fn parts(t: &Type) -> Option<Vec<Type>> {
    match t {
        Type::Tuple(ts) => Some(ts.clone()),
        Type::Record(_, fs) => Some(fs.iter().map(|(_, t)| t.clone()).collect()),
        Type::Array(t, n) => Some(vec![(**t).clone(); *n]),
        Type::Unit => Some(vec![]),
        _ => None,
    }
}

/// The scalar types of the columns of an element type (rows of these can be packed).
pub(super) fn scalar_leaves(t: &Type) -> R<Vec<ScalarType>> {
    match t {
        Type::Scalar(s) => Ok(vec![*s]),
        Type::Seq(_) => Err(unsupported(
            "sequences nested three or more levels deep as results",
        )),
        t => Ok(parts(t)
            .ok_or_else(|| unsupported(format!("elements of type {t}")))?
            .iter()
            .map(scalar_leaves)
            .collect::<R<Vec<_>>>()?
            .concat()),
    }
}

/// The columns of each part of a compound element type, in order.
pub(super) fn split_columns<'c>(t: &Type, cols: &'c [Value]) -> R<Vec<(Type, &'c [Value])>> {
    let ps = parts(t).ok_or_else(|| unsupported(format!("elements of type {t}")))?;
    let mut out = Vec::new();
    let mut at = 0;
    for p in ps {
        let n = columns(&p)?.len();
        out.push((p, &cols[at..at + n]));
        at += n;
    }
    Ok(out)
}

/// The Cranelift type of a word.
pub(super) fn clif_word(w: Word) -> CType {
    match w {
        Word::Scalar(s) => clif(s),
        Word::Ptr(_) => ct::I64,
    }
}

/// The words of a value of type `t`.
pub fn words(t: &Type) -> R<Vec<CType>> {
    Ok(layout::words(t)
        .map_err(unsupported)?
        .into_iter()
        .map(clif_word)
        .collect())
}

/// The columns of a sequence of `e`.
pub(super) fn columns(e: &Type) -> R<Vec<CType>> {
    Ok(layout::columns(e)
        .map_err(unsupported)?
        .into_iter()
        .map(clif_word)
        .collect())
}

/// The type and word offset of a field (or tuple element, or array element) of `t`.
pub(super) fn field_offset(t: &Type, f: &str) -> R<(Type, usize)> {
    layout::field_offset(t, f)
}

pub(super) fn field(v: &V, f: &str) -> R<V> {
    let (ft, off) = field_offset(&v.ty, f)?;
    let n = words(&ft)?.len();
    Ok(V {
        ty: ft,
        w: v.w[off..off + n].to_vec(),
    })
}

/// A value being computed: its type and its words.
#[derive(Clone)]
pub(super) struct V {
    pub(super) ty: Type,
    pub(super) w: Vec<Value>,
}

impl V {
    /// `()`: no words.
    pub(super) fn unit() -> V {
        V {
            ty: Type::Unit,
            w: vec![],
        }
    }
}

/// Code generation state shared by a site's functions.
pub struct Gen {
    pub(super) module: JITModule,
    pub(super) helpers: HashMap<&'static str, FuncId>,
    pub(super) records: HashMap<String, Vec<(String, Type)>>,
    pub(super) kernels: usize,
    /// The most groups of four lanes a gang may have (see `spmd::gang_groups`): one at
    /// the quick tier, whose code is compiled while the first call waits.
    pub(super) max_groups: usize,
    /// The lanes of a gang whose element has a search loop (see `spmd::gang_groups`).
    pub(super) search_lanes: usize,
    /// The lanes of a gang's group, one vector of 32-bit lanes: four (128 bits) for
    /// Cranelift, the host's vector width for LLVM (16 with AVX-512, 8 with AVX2).
    pub(super) group_lanes: usize,
    /// The vector registers the tier's code keeps a gang's values in (16 for Cranelift on
    /// x86-64, 32 for LLVM with AVX-512): what bounds the lanes of a loop to convergence
    /// (see `FnCx::gang_shape`).
    pub(super) vector_registers: usize,
    /// The group lanes of the gang generated next (see `FnCx::gang_shape`): what values
    /// made for it before it starts (a reduction's accumulators) are vectors of.
    pub(super) next_group: usize,
    /// How many loops run on SIMD vectors.
    pub(super) simd_loops: usize,
    /// The shapes gang code took, in the order generated (tests check them): how each
    /// gang loop that walks rows visits them (`rows`, `tiles`, `blocked`; `row values`
    /// where a walk of rows computes divisions once per row; `blocked columns` for a 1-D
    /// one walking down columns), each `if` decided for whole
    /// gangs where their lanes agree (`coherent if`), and each gang loop over an element
    /// that is one such `if` whose runs of gangs between the condition's thresholds take
    /// one arm untested (`settled if`); each gang narrowed because its lanes walk rows of
    /// their own (`row walk per lane`); and each scalar loop that keeps the values it
    /// stores for its next step (`kept stores`, see `forwarding`).
    pub(super) shapes: Vec<&'static str>,
    /// How many words the site keeps from call to call (`pool::accel_site_word`).
    pub(super) site_words: usize,
    /// The number of each manifest input, by the address of its expression.
    pub(super) manifests: HashMap<usize, usize>,
    pub(super) listing: Option<String>,
    /// Whether the host fuses multiply-adds (FMA and AVX): the math library's
    /// polynomials use them.
    pub(super) fma: bool,
    /// Whether the host has SSE4.1's `blendv` (Cranelift lowers it on x86 only).
    pub(super) blendv: bool,
    /// `ACCEL_EXACT_MATH=1`: math functions call libm, as debug mode does.
    pub(super) exact_math: bool,
    /// Whether the kernel being generated runs elements for gangs of lanes (SPMD).
    pub(super) spmd: bool,
    /// Whether the kernel being generated runs independent inner loops of its scalar
    /// code for gangs of iterations (see `spmd::inner`).
    pub(super) inner_gangs: bool,
    /// Why kernels fell back to scalar code (shown in `ACCEL_DUMP` listings).
    pub(super) spmd_fallbacks: Vec<String>,
    /// The `create`s of the site function that may write into the memory of the sequence
    /// they replace, by their element function's address (see `in_place`).
    pub(super) in_place: HashSet<usize>,
    /// The captures read in place, by name, with their strides (see `row_inputs`).
    pub(super) row_inputs: HashMap<String, crate::backend::layout::RowLayout>,
    /// Whether the kernel being generated may write its output into memory its element
    /// reads at its own index: no gang may then compute an element twice.
    pub(super) writes_in_place: bool,
    /// The producer whose elements are the site's result in rows (see
    /// `layout::row_leaves`), by its element function's address, with the bytes of a
    /// row.
    pub(super) rows_result: Option<(usize, i64)>,
    /// Whether the site function wrote its result in rows.
    pub(super) wrote_rows: bool,
    /// The lanes of every gang while a reduction whose operator rounds (`f32`/`f64` sums
    /// and products) is generated: its partial results are the lanes' folds, and the same
    /// lanes at every tier make them the same bits (see `spmd::reduce`).
    pub(super) pinned_lanes: Option<usize>,
    /// The bytes of an output row where the kernel being generated writes its elements
    /// in rows, each scalar at its column's address plus the element's index times
    /// these bytes.
    pub(super) out_row_bytes: Option<i64>,
    /// Every function defined, in order (a tier's compile defines the same ones).
    pub(super) defined: Vec<FuncId>,
    /// Functions whose compilation waits for [`Gen::define_deferred`] or runs while the
    /// next are generated (`None`: each is compiled as it is defined).
    pub(super) deferred: Option<super::pipeline::Pipeline>,
    /// At the LLVM tier, the functions defined so far, translated and compiled together
    /// by [`Gen::finish`] (`cpu::llvm`).
    pub(super) llvm: Option<Vec<(FuncId, cranelift_codegen::ir::Function)>>,
    /// Whether LLVM compiles the functions when their code is not in the disk cache.
    pub(super) llvm_on_miss: crate::cpu::llvm::OnMiss,
    /// Whether their code came from the disk cache.
    pub(super) llvm_from_disk: bool,
    /// Whether the kernel being generated calls its launch's scalar kernel (see
    /// `run_independent_chunks`).
    pub(super) calls_scalar: bool,
}

impl Gen {
    /// Compiles a function; its machine code joins the listing when there is one.
    pub(super) fn define(
        &mut self,
        id: FuncId,
        ctx: &mut cranelift_codegen::Context,
        what: &str,
    ) -> R<()> {
        ctx.set_disasm(self.listing.is_some());
        self.defined.push(id);
        if let Some(functions) = &mut self.llvm {
            let func = std::mem::replace(&mut ctx.func, cranelift_codegen::ir::Function::new());
            functions.push((id, func));
            return Ok(());
        }
        if let (Some(deferred), None) = (&mut self.deferred, &self.listing) {
            let func = std::mem::replace(&mut ctx.func, cranelift_codegen::ir::Function::new());
            deferred.add(id, func, what.to_string());
            return Ok(());
        }
        super::trivial_params::remove_trivial_block_params(&mut ctx.func);
        self.module
            .define_function(id, ctx)
            .map_err(|e| format!("Cranelift rejected {what}: {e:?}"))?;
        if let Some(listing) = &mut self.listing {
            let code = ctx
                .compiled_code()
                .and_then(|c| c.vcode.clone())
                .unwrap_or_default();
            listing.push_str(&format!("\n;; {what}\n{code}"));
        }
        Ok(())
    }

    /// Gives the module the machine code of the functions [`Gen::define`] deferred, in
    /// the order they were defined.
    pub(super) fn define_deferred(&mut self) -> R<()> {
        let Some(pipeline) = self.deferred.take() else {
            return Ok(());
        };
        for c in pipeline.finish()? {
            self.module
                .define_function_bytes(c.id, c.alignment, &c.bytes, &c.relocs)
                .map_err(|e| format!("Cranelift rejected {}: {e:?}", c.what))?;
        }
        Ok(())
    }

    /// Declares every helper compiled code may call.
    pub(super) fn declare_helpers(&mut self) -> R<()> {
        for h in helpers() {
            let mut sig = self.module.make_signature();
            sig.params
                .extend(h.params.iter().map(|&t| AbiParam::new(t)));
            if let Some(r) = h.result {
                sig.returns.push(AbiParam::new(r));
            }
            let id = self
                .module
                .declare_function(h.name, Linkage::Import, &sig)
                .map_err(|e| e.to_string())?;
            self.helpers.insert(h.name, id);
        }
        Ok(())
    }
}

/// The state of one function being generated (the host or a kernel).
pub(super) struct FnCx<'a, 'g> {
    pub(super) b: FunctionBuilder<'a>,
    pub(super) g: &'g mut Gen,
    pub(super) vars: HashMap<String, (Type, Vec<Variable>)>,
    pub(super) ctx: Value,
    /// Whether parallel operations launch kernels (only at the host's top level).
    pub(super) host: bool,
    /// Returns status 1 (after `accel_fail` recorded why).
    pub(super) fail: Block,
    /// Records a failure (its kind and two numbers, the block's parameters) with
    /// `accel_fail`, then fails. One block for every check, so that no check adds a block
    /// of its own inside a loop: Cranelift 0.135's loop-invariant code motion stops
    /// hoisting in the rest of a loop body after it visits a block that leaves the loop.
    pub(super) report: Block,
    /// The report blocks of checks on a gang's lanes, by kind and shape of their values
    /// (see `fail_lanes`).
    pub(super) gang_reports: HashMap<String, Block>,
    pub(super) refs: HashMap<&'static str, cranelift_codegen::ir::FuncRef>,
    /// `(sequence, index)` variable pairs known to be in bounds here: the index of a
    /// producer over that sequence, or the variable of a loop versioned on its length.
    pub(super) safe: Vec<(String, String)>,
    /// Tensor accesses `t.get([coords])`/`t.set([coords], _)` known to be in bounds here
    /// (inside a loop versioned on them), by tensor name and coordinate expressions.
    pub(super) safe_tensors: Vec<(String, Vec<Expr>)>,
    /// Loads `seq[index]` known to be in bounds here (inside a loop versioned on them): an
    /// index affine in the loop variable, by sequence name and index expression.
    pub(super) safe_affine: Vec<(String, Expr)>,
    /// Whether element loads are proven in bounds (and so may be hoisted by Cranelift).
    pub(super) movable_loads: bool,
    /// Inside a versioned vector loop: the offsets of loads `xs[off + i]`, by
    /// [`super::proofs::affine_key`], checked in bounds for the whole loop before it.
    pub(super) affine: HashMap<String, Value>,
    /// Whether vector loads (in bounds, of inputs no kernel writes) may be placed where
    /// their values are used: in a reduction's loop, each accumulator's loads then come
    /// right before its operation. Left where they were written, all the accumulators'
    /// loads came first and Cranelift spilled seven of eight accumulators to the stack.
    pub(super) movable_vector_loads: bool,
    /// While generating an element for a gang of lanes (SPMD): its state.
    pub(super) gang: Option<super::spmd::state::Gang>,
    /// Local arrays kept in memory (assigned at computed indices: a histogram's
    /// `h[d] += 1`), by name: their type and the address of their stack slot.
    pub(super) mem_arrays: HashMap<String, (Type, Value)>,
    /// The loops around the code being generated that keep stored values for their next
    /// step (see `forwarding`), innermost last.
    pub(super) forwarding: Vec<super::kept::Forwarding>,
    /// The sequence (its length and memory) the `create` being lowered may write in
    /// place, with its element function's address (see `in_place`).
    pub(super) reuse: Option<(usize, Value, Value)>,
    /// The launch begun next may write its output there (see `begin_launch_reusing`).
    pub(super) out_reuse: Option<(Value, Value)>,
    /// The column reads a blocked loop's block reads from its buffers (see
    /// `spmd::packed`).
    pub(super) packed: Vec<super::spmd::state::PackedLoad>,
}

impl<'a, 'g> FnCx<'a, 'g> {
    pub(super) fn new(b: FunctionBuilder<'a>, g: &'g mut Gen, host: bool) -> Self {
        let placeholder = Block::from_u32(0);
        FnCx {
            b,
            g,
            vars: HashMap::new(),
            ctx: Value::from_u32(0),
            host,
            fail: placeholder,
            report: placeholder,
            gang_reports: HashMap::new(),
            refs: HashMap::new(),
            safe: Vec::new(),
            safe_tensors: Vec::new(),
            safe_affine: Vec::new(),
            movable_loads: false,
            affine: HashMap::new(),
            movable_vector_loads: false,
            gang: None,
            mem_arrays: HashMap::new(),
            forwarding: Vec::new(),
            reuse: None,
            out_reuse: None,
            packed: Vec::new(),
        }
    }

    /// Creates the block that returns status 1; [`Self::finish`] fills it, last, so that
    /// the entry block stays first in the layout.
    pub(super) fn make_fail_block(&mut self) {
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        self.fail = fail;
        let report = self.b.create_block();
        self.b.set_cold_block(report);
        self.b.append_block_param(report, ct::I32);
        self.b.append_block_param(report, ct::I64);
        self.b.append_block_param(report, ct::I64);
        self.report = report;
    }

    /// Returns status 0 from the current block, fills the failure block, and seals.
    pub(super) fn finish(&mut self) {
        let zero = self.b.ins().iconst(ct::I32, 0);
        self.b.ins().return_(&[zero]);
        let report = self.report;
        self.b.switch_to_block(report);
        let params = self.b.block_params(report).to_vec();
        let ctx = self.ctx;
        self.helper("accel_fail", &[ctx, params[0], params[1], params[2]]);
        let fail = self.fail;
        self.b.ins().jump(fail, &[]);
        self.b.switch_to_block(fail);
        let one = self.b.ins().iconst(ct::I32, 1);
        self.b.ins().return_(&[one]);
        self.b.seal_all_blocks();
    }

    pub(super) fn flags() -> MemFlagsData {
        MemFlagsData::trusted()
    }

    pub(super) fn load(&mut self, t: CType, base: Value, offset: i32) -> Value {
        self.b.ins().load(t, Self::flags(), base, offset)
    }

    pub(super) fn store(&mut self, v: Value, base: Value, offset: i32) {
        self.b.ins().store(Self::flags(), v, base, offset);
    }

    /// The address of a new word the site keeps from call to call (zero at first).
    pub(super) fn site_word(&mut self) -> Value {
        let k = self.iconst(self.g.site_words as i64);
        self.g.site_words += 1;
        let ctx = self.ctx;
        self.helper("accel_site_word", &[ctx, k])[0]
    }

    pub(super) fn helper(&mut self, name: &'static str, args: &[Value]) -> Vec<Value> {
        let fr = match self.refs.get(name) {
            Some(fr) => *fr,
            None => {
                let id = self.g.helpers[name];
                let fr = self.g.module.declare_func_in_func(id, self.b.func);
                self.refs.insert(name, fr);
                fr
            }
        };
        let call = self.b.ins().call(fr, args);
        self.b.inst_results(call).to_vec()
    }

    /// `i * size_of(s)`, as a shift (element sizes are powers of two), which the x64
    /// backend folds into a scaled addressing mode.
    pub(super) fn scaled(&mut self, i: Value, s: ScalarType) -> Value {
        scale(&mut self.b, i, s)
    }

    pub(super) fn iconst(&mut self, v: i64) -> Value {
        self.b.ins().iconst(ct::I64, v)
    }

    /// A zero of the scalar Cranelift type `t` (a placeholder where a value is never read).
    pub(super) fn zero(&mut self, t: CType) -> Value {
        match t {
            ct::F32 => self.b.ins().f32const(0.0),
            ct::F64 => self.b.ins().f64const(0.0),
            t => self.b.ins().iconst(t, 0),
        }
    }

    /// Reports a failure when `bad` holds.
    pub(super) fn fail_if(&mut self, bad: Value, kind: FailureKind, a: Value, b: Value) {
        let ok = self.b.create_block();
        let kind = self.b.ins().iconst(ct::I32, i64::from(kind.code()));
        let (a, b) = (self.word(a), self.word(b));
        let report = self.report;
        self.b
            .ins()
            .brif(bad, report, &[kind.into(), a.into(), b.into()], ok, &[]);
        self.b.switch_to_block(ok);
    }

    /// An integer or `bool` zero-extended to a 64-bit word (as `accel_fail` takes them).
    pub(super) fn word(&mut self, v: Value) -> Value {
        let t = self.b.func.dfg.value_type(v);
        if t == ct::I64 {
            v
        } else {
            self.b.ins().uextend(ct::I64, v)
        }
    }

    pub(super) fn bind_var(&mut self, name: &str, v: V) {
        let vars: Vec<Variable> =
            v.w.iter()
                .map(|w| {
                    let t = self.b.func.dfg.value_type(*w);
                    let var = self.b.declare_var(t);
                    self.b.def_var(var, *w);
                    var
                })
                .collect();
        self.vars.insert(name.to_string(), (v.ty, vars));
    }

    pub(super) fn var(&mut self, name: &str) -> R<V> {
        if let Some((ty, addr)) = self.mem_arrays.get(name).cloned() {
            return self.load_local_array(&ty, addr);
        }
        if self
            .gang
            .as_ref()
            .is_some_and(|g| g.vars.contains_key(name))
        {
            return Err(super::spmd::state::not_spmd(format!(
                "`{name}`, which differs between lanes, in uniform code"
            )));
        }
        let (ty, vars) = self
            .vars
            .get(name)
            .cloned()
            .ok_or_else(|| format!("`{name}` is not bound in compiled code"))?;
        Ok(V {
            ty,
            w: vars.iter().map(|v| self.b.use_var(*v)).collect(),
        })
    }

    pub(super) fn scalar(&self, v: &V) -> R<ScalarType> {
        match v.ty {
            Type::Scalar(s) => Ok(s),
            ref t => Err(format!("expected a number or bool, found {t}")),
        }
    }

    pub(super) fn type_of(&self, e: &Expr) -> R<Type> {
        let vars = |v: &str| self.vars.get(v).map(|(t, _)| t.clone());
        type_of(e, &vars, &self.g.records).map_err(|e| e.to_string())
    }

    /// `v` stored to the stack and loaded back: computed here, where it is bound.
    /// Cranelift places pure computations at their first use, which for a value used only
    /// inside a loop that may run zero times is the loop body (two divisions per iteration
    /// in Mandelbrot's escape loop); a load from a stack slot stays where it is.
    pub(super) fn pin(&mut self, v: V) -> V {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            8 * v.w.len() as u32,
            3,
        ));
        let w =
            v.w.iter()
                .enumerate()
                .map(|(k, &x)| {
                    let t = self.b.func.dfg.value_type(x);
                    self.b.ins().stack_store(ct::I64, x, slot, 8 * k as i32);
                    self.b.ins().stack_load(ct::I64, t, slot, 8 * k as i32)
                })
                .collect();
        V { ty: v.ty, w }
    }

    /// The value of `v` when it is an integer constant of this function.
    pub(super) fn iconst_value(&self, v: Value) -> Option<i64> {
        let dfg = &self.b.func.dfg;
        let cranelift_codegen::ir::ValueDef::Result(inst, _) = dfg.value_def(v) else {
            return None;
        };
        match dfg.insts[inst] {
            cranelift_codegen::ir::InstructionData::UnaryImm {
                opcode: cranelift_codegen::ir::Opcode::Iconst,
                imm,
            } => Some(imm.bits()),
            _ => None,
        }
    }

    pub(super) fn declare_like(&mut self, v: &V) -> Vec<Variable> {
        v.w.iter()
            .map(|w| {
                let t = self.b.func.dfg.value_type(*w);
                let var = self.b.declare_var(t);
                self.b.def_var(var, *w);
                var
            })
            .collect()
    }

    pub(super) fn use_vars(&mut self, ty: &Type, vars: &[Variable]) -> V {
        V {
            ty: ty.clone(),
            w: vars.iter().map(|v| self.b.use_var(*v)).collect(),
        }
    }

    pub(super) fn def_vars(&mut self, vars: &[Variable], v: &V) {
        for (var, w) in vars.iter().zip(&v.w) {
            self.b.def_var(*var, *w);
        }
    }

    /// Applies a lambda to arguments.
    pub(super) fn apply(&mut self, f: &Expr, args: Vec<V>) -> R<V> {
        let Expr::Lambda { params, body } = f else {
            return Err(unsupported("a function argument that is not a closure"));
        };
        for ((p, _), a) in params.iter().zip(args) {
            self.bind(p, a)?;
        }
        self.expr(body)
    }
}
