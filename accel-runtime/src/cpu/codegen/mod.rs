//! Cranelift code generation for a typed, fused site.
//!
//! A site becomes one *host* function that runs on the calling thread; each parallel
//! operation at the site's top level (outside every closure) becomes a *kernel* over a range
//! of its index space, launched on all cores through [`super::pool::accel_par`]. Parallel
//! operations nested inside closures run as sequential loops inside the enclosing kernel.
//! Reductions fold four contiguous streams per chunk with four accumulators (which needs
//! only associativity), then combine chunks in order.
//!
//! Values are flat lists of Cranelift values following [`super::abi`]. Nothing traps:
//! indices are bounds-checked, integer division is checked, float-to-integer casts
//! saturate as Rust's `as` does; a failure is reported through `accel_fail` and the
//! function returns a non-zero status.

use super::helpers::{helpers, math_name};
use crate::backend::abi::MAX_RANK;
use crate::backend::failure::FailureKind;
use crate::backend::layout::{self, Word};
use accel_ir::consts::{const_type, constant_lit};
use accel_ir::passes::recognize::Prim;
use accel_ir::passes::typecheck::type_of;
use accel_ir::{BinOp, Expr, Lit, ParOp, Pat, ScalarType, Stmt, Type, UnOp};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types as ct, AbiParam, Block, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::{HashMap, HashSet};

type R<T> = Result<T, String>;
type CType = cranelift_codegen::ir::Type;

/// A compiled site.
pub struct Compiled {
    /// `extern "C" fn(args: *const u64, out: *mut u64, ctx: *const RunCtx) -> u32`.
    pub host: usize,
    pub result_words: usize,
    pub kernels: usize,
    /// Each function's optimised machine code, when asked for (`ACCEL_DUMP`).
    pub listing: Option<String>,
}

fn unsupported(what: impl std::fmt::Display) -> String {
    format!("the cpu backend cannot compile {what} yet")
}

fn clif(s: ScalarType) -> CType {
    match s {
        ScalarType::I32 | ScalarType::U32 => ct::I32,
        ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => ct::I64,
        ScalarType::F32 => ct::F32,
        ScalarType::F64 => ct::F64,
        ScalarType::Bool => ct::I8,
    }
}

fn size_of(s: ScalarType) -> i64 {
    i64::from(clif(s).bytes())
}

fn signed(s: ScalarType) -> bool {
    matches!(s, ScalarType::I32 | ScalarType::I64)
}

fn parts(t: &Type) -> Option<Vec<Type>> {
    match t {
        Type::Tuple(ts) => Some(ts.clone()),
        Type::Record(_, fs) => Some(fs.iter().map(|(_, t)| t.clone()).collect()),
        Type::Array(t, n) => Some(vec![(**t).clone(); *n]),
        Type::Unit => Some(vec![]),
        _ => None,
    }
}

/// The scalar types of the columns of an element type (rows of these can be packed).
fn scalar_leaves(t: &Type) -> R<Vec<ScalarType>> {
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
fn split_columns<'c>(t: &Type, cols: &'c [Value]) -> R<Vec<(Type, &'c [Value])>> {
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
fn clif_word(w: Word) -> CType {
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
fn columns(e: &Type) -> R<Vec<CType>> {
    Ok(layout::columns(e)
        .map_err(unsupported)?
        .into_iter()
        .map(clif_word)
        .collect())
}

/// The primitive a reduction operator is, when written as a closure whose body is the
/// operation itself.
fn primitive(op: &Expr) -> Option<Prim> {
    match op {
        Expr::Lambda { body, .. } if !matches!(**body, Expr::Block { .. }) => {
            accel_ir::passes::recognize::primitive(op)
        }
        _ => None,
    }
}

/// A value being computed: its type and its words.
#[derive(Clone)]
struct V {
    ty: Type,
    w: Vec<Value>,
}

/// Code generation state shared by a site's functions.
pub struct Gen {
    module: JITModule,
    helpers: HashMap<&'static str, FuncId>,
    records: HashMap<String, Vec<(String, Type)>>,
    kernels: usize,
    listing: Option<String>,
}

/// Compiles a typed, fused site body whose free variables are `captures`; with `listing`,
/// the result carries each function's machine code as text.
pub fn compile(
    body: &Expr,
    captures: &[(String, Type)],
    result: &Type,
    listing: bool,
) -> R<Compiled> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("no Cranelift backend for this host: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    for h in helpers() {
        jb.symbol(h.name, h.address);
    }
    let module = JITModule::new(jb);
    let mut records = HashMap::new();
    for (_, t) in captures {
        t.learn_records(&mut records);
    }
    result.learn_records(&mut records);
    let mut g = Gen {
        module,
        helpers: HashMap::new(),
        records,
        kernels: 0,
        listing: listing.then(String::new),
    };
    g.declare_helpers()?;

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
    g.module.finalize_definitions().map_err(|e| e.to_string())?;
    let host = g.module.get_finalized_function(id) as usize;
    let kernels = g.kernels;
    // The code lives as long as the process: compiled sites are cached for reuse.
    Box::leak(Box::new(g.module));
    Ok(Compiled {
        host,
        result_words,
        kernels,
        listing: g.listing,
    })
}

impl Gen {
    /// Compiles a function; its machine code joins the listing when there is one.
    fn define(&mut self, id: FuncId, ctx: &mut cranelift_codegen::Context, what: &str) -> R<()> {
        ctx.set_disasm(self.listing.is_some());
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

    /// Declares every helper compiled code may call.
    fn declare_helpers(&mut self) -> R<()> {
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
struct FnCx<'a, 'g> {
    b: FunctionBuilder<'a>,
    g: &'g mut Gen,
    vars: HashMap<String, (Type, Vec<Variable>)>,
    ctx: Value,
    /// Whether parallel operations launch kernels (only at the host's top level).
    host: bool,
    /// Returns status 1 (after `accel_fail` recorded why).
    fail: Block,
    refs: HashMap<&'static str, cranelift_codegen::ir::FuncRef>,
    /// `(sequence, index)` variable pairs known to be in bounds here: the index of a
    /// producer over that sequence, or the variable of a loop versioned on its length.
    safe: Vec<(String, String)>,
    /// Tensor accesses `t.get([coords])`/`t.set([coords], _)` known to be in bounds here
    /// (inside a loop versioned on them), by tensor name and coordinate expressions.
    safe_tensors: Vec<(String, Vec<Expr>)>,
    /// Loads `seq[index]` known to be in bounds here (inside a loop versioned on them): an
    /// index affine in the loop variable, by sequence name and index expression.
    safe_affine: Vec<(String, Expr)>,
    /// Whether element loads are proven in bounds (and so may be hoisted by Cranelift).
    movable_loads: bool,
    /// Inside a versioned vector loop: the offsets of loads `xs[off + i]`, by
    /// [`affine_key`], checked in bounds for the whole loop before it.
    affine: HashMap<String, Value>,
}

impl<'a, 'g> FnCx<'a, 'g> {
    fn new(b: FunctionBuilder<'a>, g: &'g mut Gen, host: bool) -> Self {
        let placeholder = Block::from_u32(0);
        FnCx {
            b,
            g,
            vars: HashMap::new(),
            ctx: Value::from_u32(0),
            host,
            fail: placeholder,
            refs: HashMap::new(),
            safe: Vec::new(),
            safe_tensors: Vec::new(),
            safe_affine: Vec::new(),
            movable_loads: false,
            affine: HashMap::new(),
        }
    }

    /// Creates the block that returns status 1; [`Self::finish`] fills it, last, so that
    /// the entry block stays first in the layout.
    fn make_fail_block(&mut self) {
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        self.fail = fail;
    }

    /// Returns status 0 from the current block, fills the failure block, and seals.
    fn finish(&mut self) {
        let zero = self.b.ins().iconst(ct::I32, 0);
        self.b.ins().return_(&[zero]);
        let fail = self.fail;
        self.b.switch_to_block(fail);
        let one = self.b.ins().iconst(ct::I32, 1);
        self.b.ins().return_(&[one]);
        self.b.seal_all_blocks();
    }

    fn flags() -> MemFlagsData {
        MemFlagsData::trusted()
    }

    fn load(&mut self, t: CType, base: Value, offset: i32) -> Value {
        self.b.ins().load(t, Self::flags(), base, offset)
    }

    fn store(&mut self, v: Value, base: Value, offset: i32) {
        self.b.ins().store(Self::flags(), v, base, offset);
    }

    fn helper(&mut self, name: &'static str, args: &[Value]) -> Vec<Value> {
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
    fn scaled(&mut self, i: Value, s: ScalarType) -> Value {
        let shift = size_of(s).trailing_zeros();
        self.b.ins().ishl_imm_u(i, i64::from(shift))
    }

    fn iconst(&mut self, v: i64) -> Value {
        self.b.ins().iconst(ct::I64, v)
    }

    /// Reports a failure when `bad` holds.
    fn fail_if(&mut self, bad: Value, kind: FailureKind, a: Value, b: Value) {
        let report = self.b.create_block();
        let ok = self.b.create_block();
        self.b.set_cold_block(report);
        self.b.ins().brif(bad, report, &[], ok, &[]);
        self.b.switch_to_block(report);
        let kind = self.b.ins().iconst(ct::I32, i64::from(kind.code()));
        let ctx = self.ctx;
        self.helper("accel_fail", &[ctx, kind, a, b]);
        let fail = self.fail;
        self.b.ins().jump(fail, &[]);
        self.b.switch_to_block(ok);
    }

    fn bind_var(&mut self, name: &str, v: V) {
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

    fn var(&mut self, name: &str) -> R<V> {
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

    fn scalar(&self, v: &V) -> R<ScalarType> {
        match v.ty {
            Type::Scalar(s) => Ok(s),
            ref t => Err(format!("expected a number or bool, found {t}")),
        }
    }

    // ---- types of expressions (binders are annotated, so types follow from the parts) ----

    fn type_of(&self, e: &Expr) -> R<Type> {
        let vars = |v: &str| self.vars.get(v).map(|(t, _)| t.clone());
        type_of(e, &vars, &self.g.records).map_err(|e| e.to_string())
    }

    // ---- expressions ----

    fn expr(&mut self, e: &Expr) -> R<V> {
        match e {
            Expr::Lit(l) => self.lit(l),
            Expr::Var(v) => self.var(v),
            Expr::Const(c) => self.constant(c),
            Expr::Tuple(es) => {
                let vs = es.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                let ty = if vs.is_empty() {
                    Type::Unit
                } else {
                    Type::Tuple(vs.iter().map(|v| v.ty.clone()).collect())
                };
                Ok(V {
                    ty,
                    w: vs.into_iter().flat_map(|v| v.w).collect(),
                })
            }
            Expr::Array(es) => {
                let vs = es.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                let elem = vs.first().map(|v| v.ty.clone()).unwrap_or(Type::Unit);
                Ok(V {
                    ty: Type::Array(Box::new(elem), vs.len()),
                    w: vs.into_iter().flat_map(|v| v.w).collect(),
                })
            }
            Expr::ArrayRepeat(x, n) => {
                let v = self.expr(x)?;
                let n = n
                    .literal_usize()
                    .ok_or_else(|| unsupported("`[x; n]` with a length that is not a literal"))?;
                Ok(V {
                    ty: Type::Array(Box::new(v.ty.clone()), n),
                    w: (0..n).flat_map(|_| v.w.clone()).collect(),
                })
            }
            Expr::Record { name, fields } => {
                let mut vals = HashMap::new();
                for (f, x) in fields {
                    vals.insert(f.clone(), self.expr(x)?);
                }
                let order: Vec<String> = match self.g.records.get(name) {
                    Some(decl) => decl.iter().map(|(f, _)| f.clone()).collect(),
                    None => fields.iter().map(|(f, _)| f.clone()).collect(),
                };
                let mut w = Vec::new();
                let mut tys = Vec::new();
                for f in order {
                    let v = vals
                        .remove(&f)
                        .ok_or_else(|| format!("record `{name}` needs field `{f}`"))?;
                    tys.push((f, v.ty));
                    w.extend(v.w);
                }
                Ok(V {
                    ty: Type::Record(name.clone(), tys),
                    w,
                })
            }
            Expr::Field(base, f) => {
                let v = self.expr(base)?;
                field(&v, f)
            }
            Expr::Index(base, i) => {
                let v = self.expr(base)?;
                let iv = self.expr(i)?;
                // An array element at a literal index is just its words.
                if let (Type::Array(_, _), Some(k)) = (&v.ty, i.literal_usize()) {
                    let len = self.iconst(match v.ty {
                        Type::Array(_, n) => n as i64,
                        _ => 0,
                    });
                    let at = self.iconst(k as i64);
                    let oob = self
                        .b
                        .ins()
                        .icmp(IntCC::UnsignedGreaterThanOrEqual, at, len);
                    self.fail_if(oob, FailureKind::Index, at, len);
                    return field(&v, &k.to_string());
                }
                if let (Expr::Var(s), Type::Seq(elem)) = (&**base, &v.ty) {
                    let by_var = matches!(&**i, Expr::Var(j) if self.safe.iter().any(|(a, b)| a == s && b == j));
                    let by_affine = self.safe_affine.iter().any(|(a, x)| a == s && x == &**i);
                    if by_var || by_affine {
                        // In bounds by construction: no check, and a load Cranelift may move.
                        self.movable_loads = true;
                        let w = self.load_elem(elem, &v.w[1..], iv.w[0]);
                        self.movable_loads = false;
                        return Ok(V {
                            ty: (**elem).clone(),
                            w: w?,
                        });
                    }
                }
                self.index(&v, iv.w[0])
            }
            Expr::Unary(op, x) => {
                let v = self.expr(x)?;
                let s = self.scalar(&v)?;
                let x = v.w[0];
                let w = match (op, s) {
                    (UnOp::Neg, s) if s.is_float() => self.b.ins().fneg(x),
                    (UnOp::Neg, _) => self.b.ins().ineg(x),
                    (UnOp::Not, ScalarType::Bool) => self.b.ins().bxor_imm_u(x, 1),
                    (UnOp::Not, _) => self.b.ins().bnot(x),
                };
                Ok(V {
                    ty: v.ty,
                    w: vec![w],
                })
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
            Expr::Cast(x, t) => {
                let v = self.expr(x)?;
                let Type::Scalar(to) = t else {
                    return Err(unsupported(format!("a cast to {t}")));
                };
                let w = self.cast(v.w[0], self.scalar(&v)?, *to);
                Ok(V {
                    ty: t.clone(),
                    w: vec![w],
                })
            }
            Expr::Method { recv, method, args } => self.method(recv, method, args),
            Expr::Assoc { ty, func, args } => self.assoc(ty, func, args),
            Expr::If { cond, then, els } => self.if_(cond, then, els.as_deref()),
            Expr::Match { scrutinee, arms } => self.match_(scrutinee, arms),
            Expr::Block { stmts, result } => {
                // Whether a loop follows statement k in this block.
                let has_loop = |e: &Expr| {
                    let mut found = false;
                    e.walk(&mut |x| found |= matches!(x, Expr::For { .. } | Expr::While { .. }));
                    found
                };
                let mut loop_after = vec![result.as_deref().is_some_and(has_loop); stmts.len()];
                for k in (0..stmts.len().saturating_sub(1)).rev() {
                    let next = match &stmts[k + 1] {
                        Stmt::Let { init: Some(x), .. } | Stmt::Expr(x) => has_loop(x),
                        Stmt::Let { init: None, .. } => false,
                    };
                    loop_after[k] = loop_after[k + 1] || next;
                }
                for (k, s) in stmts.iter().enumerate() {
                    match s {
                        Stmt::Let {
                            pat,
                            init: Some(init),
                            ..
                        } => {
                            let mut v = self.expr(init)?;
                            let computed = !matches!(init, Expr::Lit(_) | Expr::Var(_));
                            if loop_after[k] && computed && matches!(v.ty, Type::Scalar(_)) {
                                v = self.pin(v);
                            }
                            self.bind(pat, v)?;
                        }
                        Stmt::Let {
                            pat, init: None, ..
                        } => return Err(unsupported(format!("`let {pat};` without a value"))),
                        Stmt::Expr(x) => {
                            self.expr(x)?;
                        }
                    }
                }
                match result {
                    Some(r) => self.expr(r),
                    None => Ok(V {
                        ty: Type::Unit,
                        w: vec![],
                    }),
                }
            }
            Expr::Assign { target, value } => {
                let v = self.expr(value)?;
                self.assign(target, v)?;
                Ok(V {
                    ty: Type::Unit,
                    w: vec![],
                })
            }
            Expr::For { var, lo, hi, body } => {
                let lo = self.expr(lo)?;
                let hi = self.expr(hi)?;
                let s = self.scalar(&lo)?;
                let (lo, hi) = (lo.w[0], hi.w[0]);
                self.for_loop(var, lo, hi, s, body)?;
                Ok(V {
                    ty: Type::Unit,
                    w: vec![],
                })
            }
            Expr::While { cond, body } => {
                let head = self.b.create_block();
                let body_block = self.b.create_block();
                let exit = self.b.create_block();
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(head);
                let c = self.expr(cond)?;
                self.b.ins().brif(c.w[0], body_block, &[], exit, &[]);
                self.b.switch_to_block(body_block);
                self.expr(body)?;
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
                Ok(V {
                    ty: Type::Unit,
                    w: vec![],
                })
            }
            Expr::Par { op, args, .. } => self.par(*op, args),
            Expr::Seq(es) => {
                let elem = match es.first() {
                    Some(x) => self.type_of(x)?,
                    None => return Err(unsupported("an empty `vec![]`")),
                };
                let n = self.iconst(es.len() as i64);
                let cols = self.alloc_columns(&elem, n)?;
                for (k, x) in es.iter().enumerate() {
                    let v = self.expr(x)?;
                    let i = self.iconst(k as i64);
                    self.store_elem(&elem, &cols, i, &v.w)?;
                }
                let cols = self.finish_columns(&elem, n, cols)?;
                Ok(V {
                    ty: Type::Seq(Box::new(elem)),
                    w: [vec![n], cols].concat(),
                })
            }
            Expr::SeqRepeat(x, n) => {
                let v = self.expr(x)?;
                let n = self.expr(n)?.w[0];
                let cols = self.alloc_columns(&v.ty, n)?;
                let zero = self.iconst(0);
                let elem = v.ty.clone();
                let words = v.w.clone();
                self.counted_loop(zero, n, ScalarType::Usize, |f, i| {
                    f.store_elem(&elem, &cols, i, &words)
                })?;
                let cols = self.finish_columns(&elem, n, cols)?;
                Ok(V {
                    ty: Type::Seq(Box::new(v.ty)),
                    w: [vec![n], cols].concat(),
                })
            }
            Expr::Slice { seq, lo, hi } => {
                let v = self.expr(seq)?;
                let lo = self.expr(lo)?.w[0];
                let hi = self.expr(hi)?.w[0];
                let len = v.w[0];
                let backwards = self.b.ins().icmp(IntCC::UnsignedGreaterThan, lo, hi);
                let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, hi, len);
                let bad = self.b.ins().bor(backwards, past);
                self.fail_if(bad, FailureKind::Slice, lo, hi);
                let Type::Seq(elem) = &v.ty else {
                    return Err("slicing a value that is not a sequence".into());
                };
                let cols = self.offset_columns(elem, &v.w[1..], lo)?;
                let n = self.b.ins().isub(hi, lo);
                Ok(V {
                    ty: v.ty.clone(),
                    w: [vec![n], cols].concat(),
                })
            }
            Expr::Lambda { .. } => Err(unsupported(
                "a closure outside the function argument of a parallel operation",
            )),
            Expr::Call { .. } | Expr::FnRef(_) | Expr::Apply { .. } | Expr::Closure { .. } => {
                Err("calls remain after inlining".into())
            }
        }
    }

    fn lit(&mut self, l: &Lit) -> R<V> {
        let (s, w) = match l {
            Lit::Bool(b) => (ScalarType::Bool, self.b.ins().iconst(ct::I8, i64::from(*b))),
            Lit::Int(v, Some(s)) if s.is_float() => (*s, self.fconst(*s, *v as f64)),
            Lit::Int(v, Some(s)) => (*s, self.b.ins().iconst(clif(*s), *v as i64)),
            Lit::Float(v, Some(s)) => (*s, self.fconst(*s, *v)),
            Lit::Int(_, None) | Lit::Float(_, None) => {
                return Err("an untyped literal reached code generation".into())
            }
        };
        Ok(V {
            ty: Type::Scalar(s),
            w: vec![w],
        })
    }

    fn fconst(&mut self, s: ScalarType, v: f64) -> Value {
        if s == ScalarType::F32 {
            self.b.ins().f32const(v as f32)
        } else {
            self.b.ins().f64const(v)
        }
    }

    fn constant(&mut self, c: &str) -> R<V> {
        let s = const_type(c).ok_or_else(|| unsupported(format!("the constant `{c}`")))?;
        let lit = constant_lit(c, s);
        self.lit(&lit.ok_or_else(|| unsupported(format!("the constant `{c}`")))?)
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<V> {
        if matches!(op, BinOp::And | BinOp::Or) {
            // Short-circuit: the right operand may index out of bounds when the left decides.
            let l = self.expr(a)?;
            let right = self.b.create_block();
            let merge = self.b.create_block();
            let r_param = self.b.append_block_param(merge, ct::I8);
            if op == BinOp::And {
                self.b
                    .ins()
                    .brif(l.w[0], right, &[], merge, &[l.w[0].into()]);
            } else {
                self.b
                    .ins()
                    .brif(l.w[0], merge, &[l.w[0].into()], right, &[]);
            }
            self.b.switch_to_block(right);
            let r = self.expr(b)?;
            self.b.ins().jump(merge, &[r.w[0].into()]);
            self.b.switch_to_block(merge);
            return Ok(V {
                ty: Type::Scalar(ScalarType::Bool),
                w: vec![r_param],
            });
        }
        let l = self.expr(a)?;
        let r = self.expr(b)?;
        let s = self.scalar(&l)?;
        let (x, y) = (l.w[0], r.w[0]);
        let bool_ty = Type::Scalar(ScalarType::Bool);
        if let Some(cmp) = comparison(op) {
            let w = if s.is_float() {
                // `a > b` as `b < a` (the same for NaNs): the form whose select x64
                // lowers to one `maxsd`/`minsd` (`if v > best { best = v }`).
                match cmp {
                    IntCC::Equal => self.b.ins().fcmp(FloatCC::Equal, x, y),
                    IntCC::NotEqual => self.b.ins().fcmp(FloatCC::NotEqual, x, y),
                    IntCC::SignedLessThan => self.b.ins().fcmp(FloatCC::LessThan, x, y),
                    IntCC::SignedLessThanOrEqual => {
                        self.b.ins().fcmp(FloatCC::LessThanOrEqual, x, y)
                    }
                    IntCC::SignedGreaterThan => self.b.ins().fcmp(FloatCC::LessThan, y, x),
                    _ => self.b.ins().fcmp(FloatCC::LessThanOrEqual, y, x),
                }
            } else {
                let cc = if signed(s) || matches!(cmp, IntCC::Equal | IntCC::NotEqual) {
                    cmp
                } else {
                    cmp.unsigned()
                };
                self.b.ins().icmp(cc, x, y)
            };
            return Ok(V {
                ty: bool_ty,
                w: vec![w],
            });
        }
        let w = if s.is_float() {
            match op {
                BinOp::Add => self.b.ins().fadd(x, y),
                BinOp::Sub => self.b.ins().fsub(x, y),
                BinOp::Mul => self.b.ins().fmul(x, y),
                BinOp::Div => self.b.ins().fdiv(x, y),
                BinOp::Rem => self.math(s, "rem", &[x, y])?,
                _ => return Err(unsupported(format!("`{}` on floats", op.symbol()))),
            }
        } else {
            match op {
                BinOp::Add => self.b.ins().iadd(x, y),
                BinOp::Sub => self.b.ins().isub(x, y),
                BinOp::Mul => self.b.ins().imul(x, y),
                BinOp::Div | BinOp::Rem
                    if !signed(s)
                        && self
                            .iconst_value(y)
                            .is_some_and(|c| (c as u64).is_power_of_two()) =>
                {
                    // By a constant power of two (a compiled-in `const`): a shift or a mask.
                    let c = self.iconst_value(y).unwrap_or(1) as u64;
                    if op == BinOp::Div {
                        self.b.ins().ushr_imm_u(x, i64::from(c.trailing_zeros()))
                    } else {
                        self.b.ins().band_imm_u(x, (c - 1) as i64)
                    }
                }
                BinOp::Div | BinOp::Rem => {
                    let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                    let (xa, ya) = (self.widen(x, s), self.widen(y, s));
                    self.fail_if(zero, FailureKind::DivZero, xa, ya);
                    if signed(s) {
                        let min = if s == ScalarType::I32 {
                            i32::MIN as i64
                        } else {
                            i64::MIN
                        };
                        let is_min = self.b.ins().icmp_imm_s(IntCC::Equal, x, min);
                        let is_neg1 = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                        let overflow = self.b.ins().band(is_min, is_neg1);
                        self.fail_if(overflow, FailureKind::DivOverflow, xa, ya);
                        if op == BinOp::Div {
                            self.b.ins().sdiv(x, y)
                        } else {
                            self.b.ins().srem(x, y)
                        }
                    } else if op == BinOp::Div {
                        self.b.ins().udiv(x, y)
                    } else {
                        self.b.ins().urem(x, y)
                    }
                }
                BinOp::BitAnd => self.b.ins().band(x, y),
                BinOp::BitOr => self.b.ins().bor(x, y),
                BinOp::BitXor => self.b.ins().bxor(x, y),
                BinOp::Shl | BinOp::Shr => {
                    let t = self.b.func.dfg.value_type(x);
                    let amount = self.cast(y, self.scalar(&r)?, ScalarType::U32);
                    let amount = if t == ct::I64 {
                        self.b.ins().uextend(ct::I64, amount)
                    } else {
                        amount
                    };
                    match (op, signed(s)) {
                        (BinOp::Shl, _) => self.b.ins().ishl(x, amount),
                        (_, true) => self.b.ins().sshr(x, amount),
                        _ => self.b.ins().ushr(x, amount),
                    }
                }
                _ => return Err(unsupported(format!("`{}`", op.symbol()))),
            }
        };
        Ok(V {
            ty: l.ty,
            w: vec![w],
        })
    }

    /// A scalar as an i64 word (for failure reports).
    fn widen(&mut self, x: Value, s: ScalarType) -> Value {
        match clif(s) {
            t if t == ct::I64 => x,
            t if t == ct::F64 => self.b.ins().bitcast(ct::I64, MemFlagsData::new(), x),
            t if t == ct::F32 => {
                let i = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), x);
                self.b.ins().uextend(ct::I64, i)
            }
            _ if signed(s) => self.b.ins().sextend(ct::I64, x),
            _ => self.b.ins().uextend(ct::I64, x),
        }
    }

    fn cast(&mut self, x: Value, from: ScalarType, to: ScalarType) -> Value {
        let (ft, tt) = (clif(from), clif(to));
        match (from.is_float(), to.is_float()) {
            (true, true) if ft == tt => x,
            (true, true) if tt == ct::F64 => self.b.ins().fpromote(ct::F64, x),
            (true, true) => self.b.ins().fdemote(ct::F32, x),
            (true, false) if to == ScalarType::Bool => {
                let z = self.fconst(from, 0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            (true, false) if signed(to) => self.b.ins().fcvt_to_sint_sat(tt, x),
            (true, false) => self.b.ins().fcvt_to_uint_sat(tt, x),
            (false, true) if signed(from) => self.b.ins().fcvt_from_sint(tt, x),
            (false, true) => self.b.ins().fcvt_from_uint(tt, x),
            (false, false) => {
                if ft == tt {
                    x
                } else if ft.bits() > tt.bits() {
                    self.b.ins().ireduce(tt, x)
                } else if signed(from) {
                    self.b.ins().sextend(tt, x)
                } else {
                    self.b.ins().uextend(tt, x)
                }
            }
        }
    }

    fn math(&mut self, s: ScalarType, name: &str, args: &[Value]) -> R<Value> {
        let key = math_name(name, s).ok_or_else(|| unsupported(format!("`{name}` on {s:?}")))?;
        Ok(self.helper(key, args)[0])
    }

    fn method(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> R<V> {
        let r = self.expr(recv)?;
        let a = args.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
        if let Type::Seq(_) = r.ty {
            return match method {
                "len" => Ok(V {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![r.w[0]],
                }),
                "is_empty" => {
                    let w = self.b.ins().icmp_imm_s(IntCC::Equal, r.w[0], 0);
                    Ok(V {
                        ty: Type::Scalar(ScalarType::Bool),
                        w: vec![w],
                    })
                }
                "to_vec" => Ok(r),
                m => Err(unsupported(format!("`.{m}()` on a sequence"))),
            };
        }
        if let Type::Tensor(_) = r.ty {
            let proven = match (recv, args.first()) {
                (Expr::Var(t), Some(Expr::Array(coords))) => {
                    self.safe_tensors.iter().any(|(u, c)| u == t && c == coords)
                }
                _ => false,
            };
            return self.tensor_method(&r, method, &a, !proven);
        }
        if let Type::Array(_, n) = r.ty {
            if method == "len" {
                let w = self.iconst(n as i64);
                return Ok(V {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![w],
                });
            }
        }
        let s = self.scalar(&r)?;
        let x = r.w[0];
        let ty = r.ty.clone();
        let bool_ty = Type::Scalar(ScalarType::Bool);
        let w = if s.is_float() {
            match method {
                "sqrt" => self.b.ins().sqrt(x),
                "abs" => self.b.ins().fabs(x),
                "floor" => self.b.ins().floor(x),
                "ceil" => self.b.ins().ceil(x),
                "trunc" => self.b.ins().trunc(x),
                "fract" => {
                    let t = self.b.ins().trunc(x);
                    self.b.ins().fsub(x, t)
                }
                "recip" => {
                    let one = self.fconst(s, 1.0);
                    self.b.ins().fdiv(one, x)
                }
                "mul_add" => {
                    let m = self.b.ins().fmul(x, a[0].w[0]);
                    self.b.ins().fadd(m, a[1].w[0])
                }
                "min" | "max" => self.fminmax(method == "max", x, a[0].w[0]),
                "clamp" => {
                    let lo = self.fminmax(true, x, a[0].w[0]);
                    self.fminmax(false, lo, a[1].w[0])
                }
                "signum" => {
                    let one = self.fconst(s, 1.0);
                    let c = self.b.ins().fcopysign(one, x);
                    let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                    self.b.ins().select(nan, x, c)
                }
                "to_degrees" => {
                    let k = self.fconst(s, 180.0 / std::f64::consts::PI);
                    self.b.ins().fmul(x, k)
                }
                "to_radians" => {
                    let k = self.fconst(s, std::f64::consts::PI / 180.0);
                    self.b.ins().fmul(x, k)
                }
                "is_nan" => {
                    let w = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                    return Ok(V {
                        ty: bool_ty,
                        w: vec![w],
                    });
                }
                "is_finite" | "is_infinite" => {
                    let abs = self.b.ins().fabs(x);
                    let inf = self.fconst(s, f64::INFINITY);
                    let w = if method == "is_infinite" {
                        self.b.ins().fcmp(FloatCC::Equal, abs, inf)
                    } else {
                        self.b.ins().fcmp(FloatCC::LessThan, abs, inf)
                    };
                    return Ok(V {
                        ty: bool_ty,
                        w: vec![w],
                    });
                }
                "sin_cos" => {
                    let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        16,
                        3,
                    ));
                    let out = self.b.ins().stack_addr(ct::I64, slot, 0);
                    let name = if s == ScalarType::F32 {
                        "accel_sin_cos_f32"
                    } else {
                        "accel_sin_cos_f64"
                    };
                    self.helper(name, &[x, out]);
                    let t = clif(s);
                    let step = t.bytes() as i32;
                    let (sin, cos) = (self.load(t, out, 0), self.load(t, out, step));
                    return Ok(V {
                        ty: Type::Tuple(vec![ty.clone(), ty]),
                        w: vec![sin, cos],
                    });
                }
                "powi" => self.math(s, "powi", &[x, a[0].w[0]])?,
                "log" => self.math(s, "log", &[x, a[0].w[0]])?,
                "powf" | "atan2" | "hypot" => self.math(s, method, &[x, a[0].w[0]])?,
                m => self.math(s, m, &[x])?,
            }
        } else {
            match method {
                "abs" if signed(s) => self.b.ins().iabs(x),
                "abs" => x,
                "min" | "max" => {
                    let cc = match (method, signed(s)) {
                        ("max", true) => IntCC::SignedGreaterThan,
                        ("max", false) => IntCC::UnsignedGreaterThan,
                        (_, true) => IntCC::SignedLessThan,
                        _ => IntCC::UnsignedLessThan,
                    };
                    let c = self.b.ins().icmp(cc, x, a[0].w[0]);
                    self.b.ins().select(c, x, a[0].w[0])
                }
                "wrapping_add" => self.b.ins().iadd(x, a[0].w[0]),
                "wrapping_sub" => self.b.ins().isub(x, a[0].w[0]),
                "wrapping_mul" => self.b.ins().imul(x, a[0].w[0]),
                "count_ones" | "leading_zeros" | "trailing_zeros" => {
                    let c = match method {
                        "count_ones" => self.b.ins().popcnt(x),
                        "leading_zeros" => self.b.ins().clz(x),
                        _ => self.b.ins().ctz(x),
                    };
                    let w = self.cast(
                        c,
                        if clif(s) == ct::I64 {
                            ScalarType::U64
                        } else {
                            ScalarType::U32
                        },
                        ScalarType::U32,
                    );
                    return Ok(V {
                        ty: Type::Scalar(ScalarType::U32),
                        w: vec![w],
                    });
                }
                "is_multiple_of" => {
                    let y = a[0].w[0];
                    let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                    let safe = self.b.ins().select(zero, x, y);
                    let safe = {
                        let one = self.b.ins().iconst(clif(s), 1);
                        let is_zero = self.b.ins().icmp_imm_s(IntCC::Equal, safe, 0);
                        self.b.ins().select(is_zero, one, safe)
                    };
                    let rem = self.b.ins().urem(x, safe);
                    let by_rem = self.b.ins().icmp_imm_s(IntCC::Equal, rem, 0);
                    let x_zero = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                    let w = self.b.ins().select(zero, x_zero, by_rem);
                    return Ok(V {
                        ty: bool_ty,
                        w: vec![w],
                    });
                }
                "pow" => {
                    // Square-and-multiply over the u32 exponent, wrapping like release Rust.
                    let t = clif(s);
                    let acc = self.b.declare_var(t);
                    let base = self.b.declare_var(t);
                    let e = self.b.declare_var(ct::I32);
                    let one = self.b.ins().iconst(t, 1);
                    self.b.def_var(acc, one);
                    self.b.def_var(base, x);
                    self.b.def_var(e, a[0].w[0]);
                    let head = self.b.create_block();
                    let body = self.b.create_block();
                    let exit = self.b.create_block();
                    self.b.ins().jump(head, &[]);
                    self.b.switch_to_block(head);
                    let ev = self.b.use_var(e);
                    self.b.ins().brif(ev, body, &[], exit, &[]);
                    self.b.switch_to_block(body);
                    let ev = self.b.use_var(e);
                    let bit = self.b.ins().band_imm_u(ev, 1);
                    let av = self.b.use_var(acc);
                    let bv = self.b.use_var(base);
                    let prod = self.b.ins().imul(av, bv);
                    let nacc = self.b.ins().select(bit, prod, av);
                    self.b.def_var(acc, nacc);
                    let sq = self.b.ins().imul(bv, bv);
                    self.b.def_var(base, sq);
                    let ne = self.b.ins().ushr_imm_u(ev, 1);
                    self.b.def_var(e, ne);
                    self.b.ins().jump(head, &[]);
                    self.b.switch_to_block(exit);
                    self.b.use_var(acc)
                }
                m => return Err(unsupported(format!("`.{m}()` on {s:?}"))),
            }
        };
        Ok(V { ty, w: vec![w] })
    }

    /// Rust's `f32::max`/`min`: a NaN operand yields the other operand. Computed on
    /// one-lane vectors with masks (no branch: a float `select` would become one, and
    /// data-dependent maxima mispredict).
    /// Rust's `x.max(y)`/`x.min(y)` on floats (a NaN operand yields the other). The
    /// compare-and-select is the form x64 lowers to one `maxsd`/`minsd` (which yields `y`
    /// when either is NaN, right for a NaN `y`); a NaN `x`, rare and predictable, is
    /// patched after, off the dependency chain through `x` in a running maximum.
    fn fminmax(&mut self, max: bool, x: Value, y: Value) -> Value {
        let take_y = if max {
            self.b.ins().fcmp(FloatCC::LessThan, x, y)
        } else {
            self.b.ins().fcmp(FloatCC::LessThan, y, x)
        };
        let m = self.b.ins().select(take_y, y, x);
        let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        self.b.ins().select(x_nan, y, m)
    }

    fn assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> R<V> {
        if (ty, func) == ("accel", "same_len") {
            let n = self.expr(&args[0])?;
            let m = self.expr(&args[1])?;
            let differ = self.b.ins().icmp(IntCC::NotEqual, n.w[0], m.w[0]);
            self.fail_if(differ, FailureKind::Lengths, n.w[0], m.w[0]);
            return Ok(n);
        }
        match (ty, func) {
            ("cmp", "max" | "min") | (_, _)
                if ScalarType::from_name(ty).is_some() || ty == "cmp" =>
            {
                let (recv, rest) = args
                    .split_first()
                    .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
                self.method(recv, func, rest)
            }
            _ => Err(unsupported(format!("`{ty}::{func}`"))),
        }
    }

    /// A tensor method; `checked` false when the access is proven in bounds (the rank and
    /// every coordinate).
    fn tensor_method(&mut self, t: &V, method: &str, a: &[V], checked: bool) -> R<V> {
        let Type::Tensor(elem) = &t.ty else {
            unreachable!("a tensor")
        };
        let Type::Scalar(s) = **elem else {
            return Err(unsupported("tensors of compound elements"));
        };
        let usize_ty = Type::Scalar(ScalarType::Usize);
        match method {
            "rank" => Ok(V {
                ty: usize_ty,
                w: vec![t.w[1]],
            }),
            "get" | "set" => {
                let idx = &a[0];
                let coords = idx.w.len();
                if checked {
                    let wrong_rank =
                        self.b
                            .ins()
                            .icmp_imm_s(IntCC::NotEqual, t.w[1], coords as i64);
                    let c = self.iconst(coords as i64);
                    let rank = t.w[1];
                    self.fail_if(wrong_rank, FailureKind::Rank, c, rank);
                }
                let mut flat = self.iconst(0);
                for (k, &i) in idx.w.iter().enumerate() {
                    let dim = t.w[2 + k];
                    if checked {
                        let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, dim);
                        self.fail_if(oob, FailureKind::Index, i, dim);
                    }
                    let scaled = self.b.ins().imul(flat, dim);
                    flat = self.b.ins().iadd(scaled, i);
                }
                let off = self.scaled(flat, s);
                let addr = self.b.ins().iadd(t.w[0], off);
                if method == "get" {
                    let w = self.load(clif(s), addr, 0);
                    Ok(V {
                        ty: Type::Scalar(s),
                        w: vec![w],
                    })
                } else {
                    self.store(a[1].w[0], addr, 0);
                    Ok(V {
                        ty: Type::Unit,
                        w: vec![],
                    })
                }
            }
            "shape" => {
                // A shape as a sequence needs memory: copy the dimensions.
                let rank = t.w[1];
                let cols = self.alloc_columns(&usize_ty, rank)?;
                for k in 0..MAX_RANK {
                    let i = self.iconst(k as i64);
                    let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, i, rank);
                    let store = self.b.create_block();
                    let after = self.b.create_block();
                    self.b.ins().brif(inside, store, &[], after, &[]);
                    self.b.switch_to_block(store);
                    self.store_elem(&usize_ty, &cols, i, &[t.w[2 + k]])?;
                    self.b.ins().jump(after, &[]);
                    self.b.switch_to_block(after);
                }
                Ok(V {
                    ty: Type::Seq(Box::new(usize_ty)),
                    w: [vec![rank], cols].concat(),
                })
            }
            m => Err(unsupported(format!("`.{m}()` on a tensor"))),
        }
    }

    fn if_(&mut self, cond: &Expr, then: &Expr, els: Option<&Expr>) -> R<V> {
        if els.is_none() {
            if let Some(assigns) = self.plain_assignments(then) {
                return self.if_converted(cond, &assigns);
            }
        }
        let c = self.expr(cond)?;
        let then_block = self.b.create_block();
        let else_block = self.b.create_block();
        let merge = self.b.create_block();
        self.b.ins().brif(c.w[0], then_block, &[], else_block, &[]);
        self.b.switch_to_block(then_block);
        let tv = self.expr(then)?;
        let params: Vec<Value> =
            tv.w.iter()
                .map(|w| {
                    let t = self.b.func.dfg.value_type(*w);
                    self.b.append_block_param(merge, t)
                })
                .collect();
        let args: Vec<_> = tv.w.iter().map(|w| (*w).into()).collect();
        self.b.ins().jump(merge, &args);
        self.b.switch_to_block(else_block);
        match els {
            Some(e) => {
                let ev = self.expr(e)?;
                let args: Vec<_> = ev.w.iter().map(|w| (*w).into()).collect();
                self.b.ins().jump(merge, &args);
            }
            None => {
                self.b.ins().jump(merge, &[]);
            }
        }
        self.b.switch_to_block(merge);
        Ok(V {
            ty: tv.ty,
            w: params,
        })
    }

    fn match_(&mut self, scrutinee: &Expr, arms: &[accel_ir::MatchArm]) -> R<V> {
        let s = self.expr(scrutinee)?;
        let merge = self.b.create_block();
        let mut params: Option<(Type, Vec<Value>)> = None;
        for arm in arms {
            let matched = self.test_pat(&arm.pat, &s)?;
            let body = self.b.create_block();
            let next = self.b.create_block();
            self.b.ins().brif(matched, body, &[], next, &[]);
            self.b.switch_to_block(body);
            self.bind(&arm.pat, s.clone())?;
            if let Some(g) = &arm.guard {
                let gv = self.expr(g)?;
                let guarded = self.b.create_block();
                self.b.ins().brif(gv.w[0], guarded, &[], next, &[]);
                self.b.switch_to_block(guarded);
            }
            let v = self.expr(&arm.body)?;
            if params.is_none() {
                let ps =
                    v.w.iter()
                        .map(|w| {
                            let t = self.b.func.dfg.value_type(*w);
                            self.b.append_block_param(merge, t)
                        })
                        .collect();
                params = Some((v.ty.clone(), ps));
            }
            let args: Vec<_> = v.w.iter().map(|w| (*w).into()).collect();
            self.b.ins().jump(merge, &args);
            self.b.switch_to_block(next);
        }
        // Rust checked exhaustiveness: no arm matching cannot happen.
        let zero = self.iconst(0);
        let one = self.b.ins().iconst(ct::I8, 1);
        self.fail_if(one, FailureKind::NoArm, zero, zero);
        let (ty, ps) = params.unwrap_or((Type::Unit, vec![]));
        let dummy: Vec<_> = ps
            .iter()
            .map(|p| {
                let t = self.b.func.dfg.value_type(*p);
                let z = if t.is_float() {
                    if t == ct::F32 {
                        self.b.ins().f32const(0.0)
                    } else {
                        self.b.ins().f64const(0.0)
                    }
                } else {
                    self.b.ins().iconst(t, 0)
                };
                z.into()
            })
            .collect();
        self.b.ins().jump(merge, &dummy);
        self.b.switch_to_block(merge);
        Ok(V { ty, w: ps })
    }

    fn test_pat(&mut self, p: &Pat, v: &V) -> R<Value> {
        Ok(match p {
            Pat::Wild | Pat::Bind { .. } => self.b.ins().iconst(ct::I8, 1),
            Pat::Lit { negative, lit } => {
                let c = self.pat_const(*negative, lit, v)?;
                self.eq(v, c)?
            }
            Pat::Const(name) => {
                let c = self.constant(name)?.w[0];
                self.eq(v, c)?
            }
            Pat::Range { lo, hi, inclusive } => {
                let lo = self.bound(lo, v)?;
                let hi = self.bound(hi, v)?;
                let s = self.scalar(v)?;
                let x = v.w[0];
                let (ge, le) = if s.is_float() {
                    (
                        self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, lo),
                        self.b.ins().fcmp(
                            if *inclusive {
                                FloatCC::LessThanOrEqual
                            } else {
                                FloatCC::LessThan
                            },
                            x,
                            hi,
                        ),
                    )
                } else {
                    let (ge_cc, le_cc, lt_cc) = if signed(s) {
                        (
                            IntCC::SignedGreaterThanOrEqual,
                            IntCC::SignedLessThanOrEqual,
                            IntCC::SignedLessThan,
                        )
                    } else {
                        (
                            IntCC::UnsignedGreaterThanOrEqual,
                            IntCC::UnsignedLessThanOrEqual,
                            IntCC::UnsignedLessThan,
                        )
                    };
                    (
                        self.b.ins().icmp(ge_cc, x, lo),
                        self.b
                            .ins()
                            .icmp(if *inclusive { le_cc } else { lt_cc }, x, hi),
                    )
                };
                self.b.ins().band(ge, le)
            }
            Pat::Or(ps) => {
                let mut acc = self.b.ins().iconst(ct::I8, 0);
                for q in ps {
                    let t = self.test_pat(q, v)?;
                    acc = self.b.ins().bor(acc, t);
                }
                acc
            }
            Pat::Tuple(ps) => {
                let mut acc = self.b.ins().iconst(ct::I8, 1);
                for (k, q) in ps.iter().enumerate() {
                    let part = field(v, &k.to_string())?;
                    let t = self.test_pat(q, &part)?;
                    acc = self.b.ins().band(acc, t);
                }
                acc
            }
            Pat::Record { fields, .. } => {
                let mut acc = self.b.ins().iconst(ct::I8, 1);
                for (f, q) in fields {
                    let part = field(v, f)?;
                    let t = self.test_pat(q, &part)?;
                    acc = self.b.ins().band(acc, t);
                }
                acc
            }
        })
    }

    fn bound(&mut self, p: &Pat, v: &V) -> R<Value> {
        match p {
            Pat::Lit { negative, lit } => self.pat_const(*negative, lit, v),
            Pat::Const(name) => Ok(self.constant(name)?.w[0]),
            _ => Err(unsupported("this range bound")),
        }
    }

    fn pat_const(&mut self, negative: bool, lit: &Lit, v: &V) -> R<Value> {
        let s = self.scalar(v)?;
        let lit = match lit {
            Lit::Int(x, _) if s.is_float() => Lit::Float(*x as f64, Some(s)),
            Lit::Int(x, _) => Lit::Int(*x, Some(s)),
            Lit::Float(x, _) => Lit::Float(*x, Some(s)),
            Lit::Bool(b) => Lit::Bool(*b),
        };
        let c = self.lit(&lit)?.w[0];
        Ok(if negative {
            if s.is_float() {
                self.b.ins().fneg(c)
            } else {
                self.b.ins().ineg(c)
            }
        } else {
            c
        })
    }

    fn eq(&mut self, v: &V, c: Value) -> R<Value> {
        let s = self.scalar(v)?;
        Ok(if s.is_float() {
            self.b.ins().fcmp(FloatCC::Equal, v.w[0], c)
        } else {
            self.b.ins().icmp(IntCC::Equal, v.w[0], c)
        })
    }

    /// Binds an irrefutable pattern (or a matched one) to a value.
    fn bind(&mut self, p: &Pat, v: V) -> R<()> {
        match p {
            Pat::Bind { name, .. } => {
                self.bind_var(name, v);
                Ok(())
            }
            Pat::Tuple(ps) => {
                for (k, q) in ps.iter().enumerate() {
                    let part = field(&v, &k.to_string())?;
                    self.bind(q, part)?;
                }
                Ok(())
            }
            Pat::Record { fields, .. } => {
                for (f, q) in fields {
                    let part = field(&v, f)?;
                    self.bind(q, part)?;
                }
                Ok(())
            }
            Pat::Or(ps) => match ps.first() {
                Some(q) => self.bind(q, v),
                None => Ok(()),
            },
            Pat::Wild | Pat::Lit { .. } | Pat::Const(_) | Pat::Range { .. } => Ok(()),
        }
    }

    /// The assignments of an `if` without `else` whose body only assigns variables or
    /// literals to mutable scalar variables (`best = d; arg = i;`): it can run as selects
    /// instead of a branch that a data-dependent condition would mispredict.
    fn plain_assignments<'e>(&self, then: &'e Expr) -> Option<Vec<(&'e str, &'e Expr)>> {
        let stmts: Vec<&Expr> = match then {
            Expr::Block {
                stmts,
                result: None,
            } => stmts
                .iter()
                .map(|st| match st {
                    Stmt::Expr(e) => Some(e),
                    Stmt::Let { .. } => None,
                })
                .collect::<Option<Vec<_>>>()?,
            e @ Expr::Assign { .. } => vec![e],
            _ => return None,
        };
        let mut out = Vec::new();
        for e in stmts {
            let Expr::Assign { target, value } = e else {
                return None;
            };
            let (Expr::Var(name), Expr::Var(_) | Expr::Lit(_)) = (&**target, &**value) else {
                return None;
            };
            if !matches!(self.vars.get(name), Some((Type::Scalar(_), _))) {
                return None;
            }
            out.push((name.as_str(), &**value));
        }
        (!out.is_empty()).then_some(out)
    }

    /// `if cond { a = x; b = y; }` as `a = select(cond, x, a); b = select(cond, y, b)`.
    fn if_converted(&mut self, cond: &Expr, assigns: &[(&str, &Expr)]) -> R<V> {
        let c = self.expr(cond)?.w[0];
        for (name, value) in assigns {
            let new = self.expr(value)?;
            let (_, vars) = self.vars[*name].clone();
            let old = self.b.use_var(vars[0]);
            let w = self.b.ins().select(c, new.w[0], old);
            self.b.def_var(vars[0], w);
        }
        Ok(V {
            ty: Type::Unit,
            w: vec![],
        })
    }

    fn assign(&mut self, target: &Expr, v: V) -> R<()> {
        // The word range of the target inside its variable.
        fn place(
            e: &Expr,
            vars: &HashMap<String, (Type, Vec<Variable>)>,
        ) -> R<(String, Type, usize)> {
            match e {
                Expr::Var(n) => {
                    let (t, _) = vars.get(n).ok_or_else(|| format!("`{n}` is not bound"))?;
                    Ok((n.clone(), t.clone(), 0))
                }
                Expr::Field(base, f) => {
                    let (n, t, at) = place(base, vars)?;
                    let (ft, off) = field_offset(&t, f)?;
                    Ok((n, ft, at + off))
                }
                Expr::Index(base, i) => {
                    let (n, t, at) = place(base, vars)?;
                    let k = i.literal_usize().ok_or_else(|| {
                        unsupported("assigning to an array element at a computed index")
                    })?;
                    let (ft, off) = field_offset(&t, &k.to_string())?;
                    Ok((n, ft, at + off))
                }
                _ => Err(unsupported("this assignment target")),
            }
        }
        let (name, _, at) = place(target, &self.vars)?;
        let vars = self.vars[&name].1.clone();
        for (k, w) in v.w.iter().enumerate() {
            self.b.def_var(vars[at + k], *w);
        }
        Ok(())
    }

    // ---- sequences ----

    /// `xs[i]` for a sequence or an array value.
    fn index(&mut self, v: &V, i: Value) -> R<V> {
        match &v.ty {
            Type::Seq(elem) => {
                let len = v.w[0];
                let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
                self.fail_if(oob, FailureKind::Index, i, len);
                let w = self.load_elem(elem, &v.w[1..], i)?;
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            Type::Array(elem, n) => {
                let n = *n;
                let per = words(elem)?.len();
                let len = self.iconst(n as i64);
                let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
                self.fail_if(oob, FailureKind::Index, i, len);
                // Spill the array and load the element at the computed index.
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    (8 * v.w.len().max(1)) as u32,
                    3,
                ));
                let base = self.b.ins().stack_addr(ct::I64, slot, 0);
                for (k, w) in v.w.iter().enumerate() {
                    self.store(*w, base, 8 * k as i32);
                }
                let stride = self.b.ins().imul_imm_s(i, (8 * per) as i64);
                let at = self.b.ins().iadd(base, stride);
                let tys = words(elem)?;
                let w = tys
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| self.load(t, at, 8 * k as i32))
                    .collect();
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            t => Err(format!("indexing a value of type {t}")),
        }
    }

    /// The words of element `i` of columns `cols` of element type `elem`.
    fn load_elem(&mut self, elem: &Type, cols: &[Value], i: Value) -> R<Vec<Value>> {
        match elem {
            Type::Scalar(s) => {
                let off = self.scaled(i, *s);
                let addr = self.b.ins().iadd(cols[0], off);
                if self.movable_loads {
                    // Sequences never change during a run, and this element is in bounds.
                    let flags = MemFlagsData::trusted().with_readonly().with_can_move();
                    return Ok(vec![self.b.ins().load(clif(*s), flags, addr, 0)]);
                }
                Ok(vec![self.load(clif(*s), addr, 0)])
            }
            // Element `i` of a sequence of sequences is the sub-sequence at `i`.
            Type::Seq(_) => self.offset_columns(elem, cols, i),
            t => {
                let mut out = Vec::new();
                for (p, c) in split_columns(t, cols)? {
                    out.extend(self.load_elem(&p, c, i)?);
                }
                Ok(out)
            }
        }
    }

    /// Columns advanced by `k` elements.
    fn offset_columns(&mut self, elem: &Type, cols: &[Value], k: Value) -> R<Vec<Value>> {
        match elem {
            Type::Scalar(s) => {
                let off = self.scaled(k, *s);
                Ok(vec![self.b.ins().iadd(cols[0], off)])
            }
            Type::Seq(u) => {
                let inner = cols[0];
                let kk = self.b.ins().imul(k, inner);
                let sub = self.offset_columns(u, &cols[1..], kk)?;
                Ok([vec![inner], sub].concat())
            }
            t => {
                let mut out = Vec::new();
                for (p, c) in split_columns(t, cols)? {
                    out.extend(self.offset_columns(&p, c, k)?);
                }
                Ok(out)
            }
        }
    }

    fn store_elem(&mut self, elem: &Type, cols: &[Value], i: Value, w: &[Value]) -> R<()> {
        match elem {
            Type::Scalar(s) => {
                let off = self.scaled(i, *s);
                let addr = self.b.ins().iadd(cols[0], off);
                self.store(w[0], addr, 0);
                Ok(())
            }
            // A row: its length and its columns' pointers into the jagged columns.
            Type::Seq(_) => {
                for (k, word) in w.iter().enumerate() {
                    let off = self.b.ins().ishl_imm_u(i, 3);
                    let addr = self.b.ins().iadd(cols[k], off);
                    self.store(*word, addr, 0);
                }
                Ok(())
            }
            t => {
                let mut at = 0;
                for (p, c) in split_columns(t, cols)? {
                    let nw = words(&p)?.len();
                    self.store_elem(&p, c, i, &w[at..at + nw])?;
                    at += nw;
                }
                Ok(())
            }
        }
    }

    /// The final columns of `n` produced elements: the columns themselves, or for rows (a
    /// sequence of sequences) the common row length and the rows packed into flat columns,
    /// after checking that all rows have one length.
    fn finish_columns(&mut self, elem: &Type, n: Value, cols: Vec<Value>) -> R<Vec<Value>> {
        let Type::Seq(u) = elem else { return Ok(cols) };
        let leaves = scalar_leaves(u)?;
        let lens = cols[0];
        let inner = self.b.declare_var(ct::I64);
        let zero = self.iconst(0);
        self.b.def_var(inner, zero);
        let some = self.b.create_block();
        let after = self.b.create_block();
        let empty = self.b.ins().icmp_imm_s(IntCC::Equal, n, 0);
        self.b.ins().brif(empty, after, &[], some, &[]);
        self.b.switch_to_block(some);
        let first = self.load(ct::I64, lens, 0);
        self.b.def_var(inner, first);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        let width = self.b.use_var(inner);
        let one = self.iconst(1);
        self.counted_loop(one, n, ScalarType::Usize, |f, i| {
            let off = f.b.ins().ishl_imm_u(i, 3);
            let addr = f.b.ins().iadd(lens, off);
            let len = f.load(ct::I64, addr, 0);
            let differ = f.b.ins().icmp(IntCC::NotEqual, len, width);
            f.fail_if(differ, FailureKind::Irregular, width, len);
            Ok(())
        })?;
        let total = self.b.ins().imul(n, width);
        let mut flat = Vec::new();
        for (k, s) in leaves.iter().enumerate() {
            let dst = self.alloc_columns(&Type::Scalar(*s), total)?[0];
            let row_bytes = self.scaled(width, *s);
            let rows = cols[1 + k];
            let zero = self.iconst(0);
            self.counted_loop(zero, n, ScalarType::Usize, |f, i| {
                let off = f.b.ins().ishl_imm_u(i, 3);
                let addr = f.b.ins().iadd(rows, off);
                let src = f.load(ct::I64, addr, 0);
                let at = f.b.ins().imul(i, row_bytes);
                let to = f.b.ins().iadd(dst, at);
                f.helper("accel_copy", &[to, src, row_bytes]);
                Ok(())
            })?;
            flat.push(dst);
        }
        Ok([vec![width], flat].concat())
    }

    fn alloc_columns(&mut self, elem: &Type, n: Value) -> R<Vec<Value>> {
        match elem {
            Type::Scalar(s) => {
                let bytes = self.scaled(n, *s);
                let align = self.iconst(size_of(*s));
                let ctx = self.ctx;
                let p = self.helper("accel_alloc", &[ctx, bytes, align])[0];
                let null = self.b.ins().icmp_imm_s(IntCC::Equal, p, 0);
                self.fail_if(null, FailureKind::Alloc, bytes, bytes);
                Ok(vec![p])
            }
            // Rows are made one by one: their lengths and column pointers first ("jagged"
            // columns); `finish_columns` checks regularity and packs them.
            Type::Seq(u) => {
                let leaves = scalar_leaves(u)?;
                let bytes = self.b.ins().ishl_imm_u(n, 3);
                let eight = self.iconst(8);
                let ctx = self.ctx;
                let mut out = Vec::new();
                for _ in 0..=leaves.len() {
                    let p = self.helper("accel_alloc", &[ctx, bytes, eight])[0];
                    let null = self.b.ins().icmp_imm_s(IntCC::Equal, p, 0);
                    self.fail_if(null, FailureKind::Alloc, bytes, bytes);
                    out.push(p);
                }
                Ok(out)
            }
            t => {
                let ps = parts(t).ok_or_else(|| unsupported(format!("sequences of {t}")))?;
                let mut out = Vec::new();
                for p in &ps {
                    out.extend(self.alloc_columns(p, n)?);
                }
                Ok(out)
            }
        }
    }

    /// `for i in lo..hi { body(i) }`.
    fn counted_loop(
        &mut self,
        lo: Value,
        hi: Value,
        s: ScalarType,
        mut body: impl FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let t = clif(s);
        let i = self.b.declare_var(t);
        self.b.def_var(i, lo);
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let iv = self.b.use_var(i);
        let cc = if signed(s) {
            IntCC::SignedLessThan
        } else {
            IntCC::UnsignedLessThan
        };
        let go = self.b.ins().icmp(cc, iv, hi);
        self.b.ins().brif(go, body_block, &[], exit, &[]);
        self.b.switch_to_block(body_block);
        body(self, iv)?;
        let iv = self.b.use_var(i);
        let next = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// `for var in lo..hi { body }`, versioned: when every sequence the body indexes by the
    /// loop variable is at least `hi` long, one test up front replaces a check per access.
    fn for_loop(&mut self, var: &str, lo: Value, hi: Value, s: ScalarType, body: &Expr) -> R<()> {
        let run = |f: &mut Self| {
            f.counted_loop(lo, hi, s, |f, i| {
                f.bind_var(
                    var,
                    V {
                        ty: Type::Scalar(s),
                        w: vec![i],
                    },
                );
                f.expr(body).map(|_| ())
            })
        };
        if s != ScalarType::Usize {
            return run(self);
        }
        let proofs = Proofs {
            indexed: self.indexed_by(body, var),
            tensors: self.tensor_accesses(body, var),
            affine: self.affine_loads(body, var),
        };
        self.versioned(&proofs, var, lo, hi, run)
    }

    /// The tensor accesses in `body` whose coordinates are each `var`, a literal, or a
    /// variable `body` neither binds nor assigns: checkable once before a loop over `var`.
    fn tensor_accesses(&self, body: &Expr, var: &str) -> Vec<(String, Vec<Expr>)> {
        let changed = changed_in(body);
        let mut out: Vec<(String, Vec<Expr>)> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Method { recv, method, args } = e else {
                return;
            };
            let (Expr::Var(t), "get" | "set", Some(Expr::Array(coords))) =
                (&**recv, method.as_str(), args.first())
            else {
                return;
            };
            let tensor = matches!(self.vars.get(t), Some((Type::Tensor(_), _)));
            let invariant = coords.iter().all(|c| match c {
                Expr::Var(x) => x == var || (!changed.contains(x) && self.vars.contains_key(x)),
                Expr::Lit(Lit::Int(..)) => true,
                _ => false,
            });
            let uses_var = coords.iter().any(|c| matches!(c, Expr::Var(x) if x == var));
            let key = (t.clone(), coords.clone());
            if tensor && invariant && uses_var && coords.len() <= MAX_RANK && !out.contains(&key) {
                out.push(key);
            }
        });
        out
    }

    /// The loads `seq[index]` in `body` whose index is affine in `var` (`var * c + b`,
    /// `b + var`, …) with `c` and `b` made of literals and variables `body` neither binds
    /// nor assigns (no loads, no divisions: evaluating them early cannot fail): by
    /// sequence, index, stride `c` and offset `b`.
    fn affine_loads(&self, body: &Expr, var: &str) -> Vec<AffineLoad> {
        let changed = changed_in(body);
        if changed.contains(var) {
            return Vec::new();
        }
        let invariant = |e: &Expr| {
            let mut ok = true;
            e.walk(&mut |x| match x {
                Expr::Lit(Lit::Int(..)) => {}
                Expr::Var(v) => {
                    ok &= v != var
                        && !changed.contains(v)
                        && matches!(self.vars.get(v), Some((Type::Scalar(ScalarType::Usize), _)))
                }
                Expr::Binary(BinOp::Add | BinOp::Mul, ..) => {}
                _ => ok = false,
            });
            ok
        };
        let is_var = |e: &Expr| matches!(e, Expr::Var(v) if v == var);
        let one = Expr::Lit(Lit::Int(1, Some(ScalarType::Usize)));
        let zero = Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)));
        // `var`, `var * c` or `c * var`: the stride.
        let scaled = |e: &Expr| -> Option<Expr> {
            match e {
                v if is_var(v) => Some(one.clone()),
                Expr::Binary(BinOp::Mul, a, c) if is_var(a) && invariant(c) => Some((**c).clone()),
                Expr::Binary(BinOp::Mul, c, a) if is_var(a) && invariant(c) => Some((**c).clone()),
                _ => None,
            }
        };
        let mut out: Vec<AffineLoad> = Vec::new();
        body.walk(&mut |e| {
            let Expr::Index(base, index) = e else { return };
            let Expr::Var(seq) = &**base else { return };
            if !matches!(self.vars.get(seq), Some((Type::Seq(_), _))) || changed.contains(seq) {
                return;
            }
            let parts = match &**index {
                Expr::Binary(BinOp::Add, a, b) => match (scaled(a), scaled(b)) {
                    (Some(c), _) if invariant(b) => Some((c, (**b).clone())),
                    (_, Some(c)) if invariant(a) => Some((c, (**a).clone())),
                    _ => None,
                },
                // A plain `seq[var]` is the `safe` pairs' case.
                i if !is_var(i) => scaled(i).map(|c| (c, zero.clone())),
                _ => None,
            };
            if let Some((stride, offset)) = parts {
                if !out.iter().any(|l| l.seq == *seq && l.index == **index) {
                    out.push(AffineLoad {
                        seq: seq.clone(),
                        index: (**index).clone(),
                        stride,
                        offset,
                    });
                }
            }
        });
        out
    }

    /// Runs `run` twice behind one test: when every sequence in `indexed` is at least `hi`
    /// long, a copy in which indexing them by `var` (which stays below `hi`) is unchecked;
    /// otherwise the checked copy.
    fn versioned(
        &mut self,
        proofs: &Proofs,
        var: &str,
        lo: Value,
        hi: Value,
        run: impl Fn(&mut Self) -> R<()>,
    ) -> R<()> {
        let indexed: Vec<&String> = proofs
            .indexed
            .iter()
            .filter(|q| !self.safe.iter().any(|(a, b)| a == *q && b == var))
            .collect();
        let tensors: Vec<&(String, Vec<Expr>)> = proofs
            .tensors
            .iter()
            .filter(|t| !self.safe_tensors.contains(t))
            .collect();
        let affine: Vec<&AffineLoad> = proofs
            .affine
            .iter()
            .filter(|l| !self.safe_affine.contains(&(l.seq.clone(), l.index.clone())))
            .collect();
        if indexed.is_empty() && tensors.is_empty() && affine.is_empty() {
            return run(self);
        }
        let mut ok = self.b.ins().iconst(ct::I8, 1);
        for seq in &indexed {
            let len = self.var(seq)?.w[0];
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, len);
            ok = self.b.ins().band(ok, fits);
        }
        // A tensor access: the rank, then each coordinate below its dimension (the loop
        // variable through `hi`).
        for (t, coords) in &tensors {
            let tv = self.var(t)?;
            let rank = self
                .b
                .ins()
                .icmp_imm_s(IntCC::Equal, tv.w[1], coords.len() as i64);
            ok = self.b.ins().band(ok, rank);
            for (k, c) in coords.iter().enumerate() {
                let dim = tv.w[2 + k];
                let fits = match c {
                    Expr::Var(x) if x == var => {
                        self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, dim)
                    }
                    other => {
                        let i = self.expr(other)?.w[0];
                        self.b.ins().icmp(IntCC::UnsignedLessThan, i, dim)
                    }
                };
                ok = self.b.ins().band(ok, fits);
            }
        }
        // An affine load: its largest index, `(hi - 1) * stride + offset`, computed
        // without wrapping, below the length (or no iteration at all).
        for l in &affine {
            let stride = self.expr(&l.stride)?.w[0];
            let offset = self.expr(&l.offset)?.w[0];
            let len = self.var(&l.seq)?.w[0];
            let empty = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, lo);
            let last = self.b.ins().iadd_imm_s(hi, -1);
            let scaled = self.b.ins().imul(last, stride);
            let high = self.b.ins().umulhi(last, stride);
            let no_wrap = self.b.ins().icmp_imm_u(IntCC::Equal, high, 0);
            let top = self.b.ins().iadd(scaled, offset);
            let no_carry = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, top, scaled);
            let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, top, len);
            let fits = self.b.ins().band(no_wrap, no_carry);
            let fits = self.b.ins().band(fits, inside);
            let fits = self.b.ins().bor(empty, fits);
            ok = self.b.ins().band(ok, fits);
        }
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let after = self.b.create_block();
        self.b.ins().brif(ok, fast, &[], slow, &[]);
        self.b.switch_to_block(fast);
        let before = (
            self.safe.len(),
            self.safe_tensors.len(),
            self.safe_affine.len(),
        );
        self.safe
            .extend(indexed.iter().map(|q| ((*q).clone(), var.to_string())));
        self.safe_tensors
            .extend(tensors.iter().map(|t| (*t).clone()));
        self.safe_affine
            .extend(affine.iter().map(|l| (l.seq.clone(), l.index.clone())));
        let r = run(self);
        self.safe.truncate(before.0);
        self.safe_tensors.truncate(before.1);
        self.safe_affine.truncate(before.2);
        r?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(slow);
        run(self)?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        Ok(())
    }

    /// The sequence variables of the enclosing scope that `body` indexes by `var`.
    fn indexed_by(&self, body: &Expr, var: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        body.walk(&mut |e| {
            if let Expr::Index(b, i) = e {
                if let (Expr::Var(s), Expr::Var(j)) = (&**b, &**i) {
                    let is_seq = matches!(self.vars.get(s), Some((Type::Seq(_), _)));
                    if j == var && is_seq && !out.contains(s) {
                        out.push(s.clone());
                    }
                }
            }
        });
        out
    }

    /// The sequences whose length a producer's length expression is (`xs.len()`, or both
    /// of `same_len(xs.len(), ys.len())`): indexing them by the producer's index is safe.
    fn length_sources(n: &Expr) -> Vec<String> {
        match n {
            Expr::Method { recv, method, args } if method == "len" && args.is_empty() => {
                match &**recv {
                    Expr::Var(s) => vec![s.clone()],
                    _ => vec![],
                }
            }
            Expr::Assoc { func, args, .. } if func == "same_len" => {
                args.iter().flat_map(Self::length_sources).collect()
            }
            _ => vec![],
        }
    }

    /// One step of a fold: the accumulator in `accs` (of type `t`) combined by the
    /// operator `args[0]` with element `i` of the input `args[2]`; returns the new value.
    fn fold_step(&mut self, args: &[Expr], t: &Type, accs: &[Variable], i: Value) -> R<V> {
        let x = self.input_element(&args[2], i)?;
        let a = self.use_vars(t, accs);
        let r = self.apply(&args[0], vec![a, x])?;
        self.def_vars(accs, &r);
        Ok(r)
    }

    /// One iteration `i` of a `parallel_loop` body `f`.
    fn iteration(&mut self, f: &Expr, i: Value) -> R<()> {
        let usize_ty = Type::Scalar(ScalarType::Usize);
        self.apply(
            f,
            vec![V {
                ty: usize_ty,
                w: vec![i],
            }],
        )
        .map(|_| ())
    }

    /// Applies a lambda to arguments.
    fn apply(&mut self, f: &Expr, args: Vec<V>) -> R<V> {
        let Expr::Lambda { params, body } = f else {
            return Err(unsupported("a function argument that is not a closure"));
        };
        for ((p, _), a) in params.iter().zip(args) {
            self.bind(p, a)?;
        }
        self.expr(body)
    }

    // ---- parallel operations ----

    fn par(&mut self, op: ParOp, args: &[Expr]) -> R<V> {
        match op {
            ParOp::Flatten => {
                let v = self.expr(&args[0])?;
                let Type::Seq(row) = &v.ty else {
                    return Err("flatten of a value that is not a sequence".into());
                };
                let Type::Seq(elem) = &**row else {
                    return Err("flatten of a sequence that is not nested".into());
                };
                let n = self.b.ins().imul(v.w[0], v.w[1]);
                Ok(V {
                    ty: Type::Seq(elem.clone()),
                    w: [vec![n], v.w[2..].to_vec()].concat(),
                })
            }
            _ if self.host => self.launch(op, args),
            ParOp::Create | ParOp::Map | ParOp::Map2 => {
                let (n, elem) = self.producer_shape(op, args)?;
                let cols = self.alloc_columns(&elem, n)?;
                let zero = self.iconst(0);
                self.counted_loop(zero, n, ScalarType::Usize, |f, i| {
                    let v = f.element(op, args, i)?;
                    f.store_elem(&elem, &cols, i, &v.w)
                })?;
                let cols = self.finish_columns(&elem, n, cols)?;
                Ok(V {
                    ty: Type::Seq(Box::new(elem)),
                    w: [vec![n], cols].concat(),
                })
            }
            ParOp::Reduce => {
                let (n, _) = self.input_shape(&args[2])?;
                let zero = self.iconst(0);
                if let Some(v) = self.vector_reduce(args, zero, n)? {
                    return Ok(v);
                }
                // Four independent accumulators: the fold's latency chain split in four;
                // loads at indices affine in the element's index are checked once, before.
                let (param, proofs) = match delayed(&args[2]) {
                    Some((_, name, body)) => (name.to_string(), self.affine_loads(body, name)),
                    None => (String::new(), Vec::new()),
                };
                if proofs.is_empty() {
                    return self.stream_reduce(args, zero, n);
                }
                let proofs = Proofs {
                    affine: proofs,
                    ..Proofs::default()
                };
                let result: std::cell::RefCell<Option<(Type, Vec<Variable>)>> =
                    std::cell::RefCell::new(None);
                self.versioned(&proofs, &param, zero, n, |f| {
                    let v = f.stream_reduce(args, zero, n)?;
                    let mut r = result.borrow_mut();
                    match &*r {
                        Some((_, vars)) => f.def_vars(vars, &v),
                        None => *r = Some((v.ty.clone(), f.declare_like(&v))),
                    }
                    Ok(())
                })?;
                let (ty, vars) = result.into_inner().ok_or("a reduction without a result")?;
                Ok(self.use_vars(&ty, &vars))
            }
            ParOp::Scan => {
                let ne = self.expr(&args[1])?;
                let (n, _) = self.input_shape(&args[2])?;
                let acc_ty = ne.ty.clone();
                let cols = self.alloc_columns(&acc_ty, n)?;
                let accs = self.declare_like(&ne);
                let zero = self.iconst(0);
                self.counted_loop(zero, n, ScalarType::Usize, |f, i| {
                    let r = f.fold_step(args, &acc_ty, &accs, i)?;
                    f.store_elem(&acc_ty, &cols, i, &r.w)
                })?;
                let cols = self.finish_columns(&acc_ty, n, cols)?;
                Ok(V {
                    ty: Type::Seq(Box::new(acc_ty)),
                    w: [vec![n], cols].concat(),
                })
            }
            ParOp::ParallelLoop => {
                let n = self.expr(&args[0])?.w[0];
                let zero = self.iconst(0);
                self.counted_loop(zero, n, ScalarType::Usize, |f, i| f.iteration(&args[1], i))?;
                Ok(V {
                    ty: Type::Unit,
                    w: vec![],
                })
            }
        }
    }

    /// `v` stored to the stack and loaded back: computed here, where it is bound.
    /// Cranelift places pure computations at their first use, which for a value used only
    /// inside a loop that may run zero times is the loop body (two divisions per iteration
    /// in Mandelbrot's escape loop); a load from a stack slot stays where it is.
    fn pin(&mut self, v: V) -> V {
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
    fn iconst_value(&self, v: Value) -> Option<i64> {
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

    fn declare_like(&mut self, v: &V) -> Vec<Variable> {
        v.w.iter()
            .map(|w| {
                let t = self.b.func.dfg.value_type(*w);
                let var = self.b.declare_var(t);
                self.b.def_var(var, *w);
                var
            })
            .collect()
    }

    fn use_vars(&mut self, ty: &Type, vars: &[Variable]) -> V {
        V {
            ty: ty.clone(),
            w: vars.iter().map(|v| self.b.use_var(*v)).collect(),
        }
    }

    fn def_vars(&mut self, vars: &[Variable], v: &V) {
        for (var, w) in vars.iter().zip(&v.w) {
            self.b.def_var(*var, *w);
        }
    }

    /// The length and element type of a producer (`create`, `map`, `map2`).
    fn producer_shape(&mut self, op: ParOp, args: &[Expr]) -> R<(Value, Type)> {
        let elem = match self.type_of(&Expr::Par {
            op,
            args: args.to_vec(),
            loc: Default::default(),
        })? {
            Type::Seq(e) => *e,
            t => return Err(format!("a producer of type {t}")),
        };
        let n = match op {
            ParOp::Create => self.expr(&args[0])?.w[0],
            ParOp::Map => self.input_shape(&args[1])?.0,
            _ => {
                let (n, _) = self.input_shape(&args[1])?;
                let (m, _) = self.input_shape(&args[2])?;
                let differ = self.b.ins().icmp(IntCC::NotEqual, n, m);
                self.fail_if(differ, FailureKind::Lengths, n, m);
                n
            }
        };
        Ok((n, elem))
    }

    /// Element `i` of a producer.
    fn element(&mut self, op: ParOp, args: &[Expr], i: Value) -> R<V> {
        let usize_ty = Type::Scalar(ScalarType::Usize);
        match op {
            ParOp::Create => {
                // The index ranges over 0..n: sequences n is the length of are safe to index.
                let before = self.safe.len();
                if let Expr::Lambda { params, .. } = &args[1] {
                    if let Some((Pat::Bind { name, .. }, _)) = params.first() {
                        for s in Self::length_sources(&args[0]) {
                            self.safe.push((s, name.clone()));
                        }
                    }
                }
                let r = self.apply(
                    &args[1],
                    vec![V {
                        ty: usize_ty,
                        w: vec![i],
                    }],
                );
                self.safe.truncate(before);
                r
            }
            ParOp::Map => {
                let x = self.input_element(&args[1], i)?;
                self.apply(&args[0], vec![x])
            }
            _ => {
                let x = self.input_element(&args[1], i)?;
                let y = self.input_element(&args[2], i)?;
                self.apply(&args[0], vec![x, y])
            }
        }
    }

    /// The length of a sequence input: a delayed array's length, or a manifest one's.
    fn input_shape(&mut self, e: &Expr) -> R<(Value, Type)> {
        match e {
            Expr::Par {
                op: op @ (ParOp::Create | ParOp::Map | ParOp::Map2),
                args,
                ..
            } => self.producer_shape(*op, args),
            other => {
                let v = self.expr(other)?;
                match &v.ty {
                    Type::Seq(elem) => {
                        let elem = (**elem).clone();
                        // Remember the manifest value for element access.
                        self.manifest(other, v.clone());
                        Ok((v.w[0], elem))
                    }
                    Type::Array(elem, n) => {
                        let (elem, n) = ((**elem).clone(), *n as i64);
                        self.manifest(other, v.clone());
                        Ok((self.iconst(n), elem))
                    }
                    t => Err(format!("a sequence was expected, found {t}")),
                }
            }
        }
    }

    /// Element `i` of a sequence input, fusing a delayed producer.
    fn input_element(&mut self, e: &Expr, i: Value) -> R<V> {
        match e {
            Expr::Par {
                op: op @ (ParOp::Create | ParOp::Map | ParOp::Map2),
                args,
                ..
            } => self.element(*op, args, i),
            other => {
                let v = self.manifested(other)?;
                match &v.ty {
                    Type::Seq(elem) => {
                        let w = self.load_elem(elem, &v.w[1..], i)?;
                        Ok(V {
                            ty: (**elem).clone(),
                            w,
                        })
                    }
                    _ => self.index(&v, i),
                }
            }
        }
    }

    fn manifest(&mut self, e: &Expr, v: V) {
        let key = format!("manifest#{:p}", e as *const Expr);
        self.bind_var(&key, v);
    }

    fn manifested(&mut self, e: &Expr) -> R<V> {
        let key = format!("manifest#{:p}", e as *const Expr);
        if self.vars.contains_key(&key) {
            self.var(&key)
        } else {
            self.expr(e)
        }
    }

    /// A top-level parallel operation: computes what the kernel needs, spills it into an
    /// environment, and launches the kernel over the index space on all cores.
    fn launch(&mut self, op: ParOp, args: &[Expr]) -> R<V> {
        let usize_ty = Type::Scalar(ScalarType::Usize);
        // The index space and, for producers, the output columns.
        let (n, out_elem, partial_ty) = match op {
            ParOp::Create | ParOp::Map | ParOp::Map2 => {
                let (n, elem) = self.producer_shape(op, args)?;
                (n, Some(elem), None)
            }
            ParOp::Reduce | ParOp::Scan => {
                let (n, _) = self.input_shape(&args[2])?;
                let ty = self.type_of(&args[1])?;
                (
                    n,
                    if op == ParOp::Scan {
                        Some(ty.clone())
                    } else {
                        None
                    },
                    Some(ty),
                )
            }
            ParOp::ParallelLoop => (self.expr(&args[0])?.w[0], None, None),
            ParOp::Flatten => unreachable!("flatten needs no kernel"),
        };
        let out_cols = match &out_elem {
            Some(elem) => self.alloc_columns(elem, n)?,
            None => vec![],
        };
        // Partial results, one slot per chunk.
        let (chunks, partials, partial_words) = match &partial_ty {
            Some(t) => {
                let pw = words(t)?.len().max(1) as i64;
                let chunks = {
                    let grain = self.iconst(grain(args));
                    self.helper("accel_chunks", &[n, grain])[0]
                };
                let bytes = self.b.ins().imul_imm_s(chunks, 8 * pw);
                let eight = self.iconst(8);
                let ctx = self.ctx;
                let p = self.helper("accel_alloc", &[ctx, bytes, eight])[0];
                let null = self.b.ins().icmp_imm_s(IntCC::Equal, p, 0);
                self.fail_if(null, FailureKind::Alloc, bytes, bytes);
                (chunks, p, pw)
            }
            None => (self.iconst(0), self.iconst(0), 0),
        };

        // The environment: free variables of the operation, then the output columns.
        let op_expr = Expr::Par {
            op,
            args: args.to_vec(),
            loc: Default::default(),
        };
        let free = self.free_vars(&op_expr);
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

        // Scan: pass 1 reduces each chunk; the host turns partials into chunk offsets.
        if op == ParOp::Scan {
            let reduce_kernel = self.kernel(
                ParOp::Reduce,
                args,
                &env_layout,
                out_at,
                out_elem.as_ref(),
                partial_words as usize,
            )?;
            self.run_kernel(reduce_kernel, env, n, partials, partial_words, grain(args))?;
            let t = partial_ty.clone().unwrap_or(Type::Unit);
            let ne = self.expr(&args[1])?;
            let accs = self.declare_like(&ne);
            let zero = self.iconst(0);
            self.counted_loop(zero, chunks, ScalarType::Usize, |f, c| {
                let (addr, p) = f.partial_slot(&t, partials, c, partial_words)?;
                let offset = f.use_vars(&t, &accs);
                for (k, w) in offset.w.iter().enumerate() {
                    f.store(*w, addr, 8 * k as i32);
                }
                let next = f.apply(&args[0], vec![offset, p])?;
                f.def_vars(&accs, &next);
                Ok(())
            })?;
        }
        let kernel = self.kernel(
            op,
            args,
            &env_layout,
            out_at,
            out_elem.as_ref(),
            partial_words as usize,
        )?;
        self.run_kernel(kernel, env, n, partials, partial_words, grain(args))?;

        match op {
            ParOp::Reduce => {
                // Combine the chunks' partial results in order.
                let t = partial_ty.unwrap_or(Type::Unit);
                let ne = self.expr(&args[1])?;
                let accs = self.declare_like(&ne);
                let zero = self.iconst(0);
                self.counted_loop(zero, chunks, ScalarType::Usize, |f, c| {
                    let (_, p) = f.partial_slot(&t, partials, c, partial_words)?;
                    let a = f.use_vars(&t, &accs);
                    let r = f.apply(&args[0], vec![a, p])?;
                    f.def_vars(&accs, &r);
                    Ok(())
                })?;
                Ok(self.use_vars(&t, &accs))
            }
            ParOp::ParallelLoop => Ok(V {
                ty: Type::Unit,
                w: vec![],
            }),
            _ => {
                let elem = out_elem.unwrap_or(usize_ty);
                let out_cols = self.finish_columns(&elem, n, out_cols)?;
                Ok(V {
                    ty: Type::Seq(Box::new(elem)),
                    w: [vec![n], out_cols].concat(),
                })
            }
        }
    }

    /// The address and value of chunk `c`'s partial result of type `t`.
    fn partial_slot(
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

    fn run_kernel(
        &mut self,
        kernel: FuncId,
        env: Value,
        n: Value,
        partials: Value,
        partial_words: i64,
        grain: i64,
    ) -> R<()> {
        let fr = self.g.module.declare_func_in_func(kernel, self.b.func);
        let addr = self.b.ins().func_addr(ct::I64, fr);
        let pw = self.iconst(partial_words);
        let ctx = self.ctx;
        let g = self.iconst(grain);
        let status = self.helper("accel_par", &[ctx, addr, env, n, partials, pw, g])[0];
        let bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, status, 0);
        let fail = self.fail;
        let ok = self.b.create_block();
        self.b.ins().brif(bad, fail, &[], ok, &[]);
        self.b.switch_to_block(ok);
        Ok(())
    }

    /// A chunk of a reduction as four contiguous streams, one accumulator each
    /// (associativity suffices), combined in order.
    fn stream_reduce(&mut self, args: &[Expr], lo: Value, hi: Value) -> R<V> {
        let ne = self.expr(&args[1])?;
        let t = ne.ty.clone();
        let accs: Vec<Vec<Variable>> = (0..4).map(|_| self.declare_like(&ne)).collect();
        let len = self.b.ins().isub(hi, lo);
        let q = self.b.ins().ushr_imm_u(len, 2);
        let starts: Vec<Value> = (0..4i64)
            .map(|k| {
                let off = self.b.ins().imul_imm_s(q, k);
                self.b.ins().iadd(lo, off)
            })
            .collect();
        let zero = self.iconst(0);
        self.counted_loop(zero, q, ScalarType::Usize, |f, j| {
            for k in 0..4 {
                let i = f.b.ins().iadd(starts[k], j);
                f.fold_step(args, &t, &accs[k], i)?;
            }
            Ok(())
        })?;
        let four_q = self.b.ins().imul_imm_s(q, 4);
        let rest = self.b.ins().iadd(lo, four_q);
        self.counted_loop(rest, hi, ScalarType::Usize, |f, i| {
            f.fold_step(args, &t, &accs[3], i)?;
            Ok(())
        })?;
        let mut total = self.use_vars(&t, &accs[0]);
        for acc in &accs[1..] {
            let next = self.use_vars(&t, acc);
            total = self.apply(&args[0], vec![total, next])?;
        }
        Ok(total)
    }

    /// A chunk of a reduction with SIMD vectors, when the operator is a commutative
    /// primitive (`+`, `*`; integer `min`/`max`) on a scalar type and the element is
    /// straight-line arithmetic on in-bounds loads at the index: two vector accumulators
    /// over the chunk, a scalar loop for the rest, lanes folded at the end. `None` when
    /// the reduction does not qualify (the general four-stream path handles it).
    fn vector_reduce(&mut self, args: &[Expr], lo: Value, hi: Value) -> R<Option<V>> {
        let Some(prim) = primitive(&args[0]) else {
            return Ok(None);
        };
        let Type::Scalar(s) = self.type_of(&args[1])? else {
            return Ok(None);
        };
        let Some((vt, lanes)) = Self::vector_of(s) else {
            return Ok(None);
        };
        let min_max_ok = matches!(s, ScalarType::I32 | ScalarType::U32);
        if matches!(prim, Prim::Min | Prim::Max) && !min_max_ok {
            return Ok(None);
        }
        // The element as a body over an index parameter, and the sequences safe to load.
        let (param, body, safe): (String, Expr, Vec<String>) = match (&args[2], delayed(&args[2])) {
            (_, Some((n, name, body))) => (name.to_string(), body.clone(), Self::length_sources(n)),
            // A reduction over a variable runs over exactly its indices.
            (Expr::Var(xs), _) => (
                "vector#i".to_string(),
                Expr::Index(Box::new(Expr::var(xs)), Box::new(Expr::var("vector#i"))),
                vec![xs.clone()],
            ),
            _ => return Ok(None),
        };
        let mut locals = Vec::new();
        let mut affine = Some(Vec::new());
        if !self.vectorizable_affine(&body, &param, s, &safe, &mut locals, &mut affine) {
            return Ok(None);
        }
        let affine = affine.unwrap_or_default();
        if affine.is_empty() {
            return self
                .vector_reduce_loop(args, prim, s, vt, lanes, &body, lo, hi)
                .map(Some);
        }
        // Loads `xs[off + i]`: versioned on all of them being in bounds for `lo..hi`
        // (`off <= len` and `hi <= len - off`); otherwise the checked scalar loop runs.
        let mut all_ok: Option<Value> = None;
        let mut keys = Vec::new();
        for (seq, index, off) in &affine {
            let o = self.expr(off)?.w[0];
            let len = self.var(seq)?.w[0];
            let fits = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, o, len);
            let room = self.b.ins().isub(len, o);
            let within = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, room);
            let both = self.b.ins().band(fits, within);
            all_ok = Some(match all_ok {
                Some(x) => self.b.ins().band(x, both),
                None => both,
            });
            let key = affine_key(seq, index);
            self.affine.insert(key.clone(), o);
            keys.push(key);
        }
        let ne = self.expr(&args[1])?;
        let result = self.declare_like(&ne);
        let vector = self.b.create_block();
        let scalar = self.b.create_block();
        let merge = self.b.create_block();
        let ok = all_ok.expect("at least one affine load");
        self.b.ins().brif(ok, vector, &[], scalar, &[]);
        self.b.switch_to_block(vector);
        let v = self.vector_reduce_loop(args, prim, s, vt, lanes, &body, lo, hi)?;
        self.def_vars(&result, &v);
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(scalar);
        let t = ne.ty.clone();
        let acc = self.declare_like(&ne);
        self.counted_loop(lo, hi, ScalarType::Usize, |f, i| {
            f.fold_step(args, &t, &acc, i)?;
            Ok(())
        })?;
        let r = self.use_vars(&t, &acc);
        self.def_vars(&result, &r);
        self.b.ins().jump(merge, &[]);
        self.b.switch_to_block(merge);
        for k in keys {
            self.affine.remove(&k);
        }
        Ok(Some(self.use_vars(&t, &result)))
    }

    /// The vector loop of [`vector_reduce`](Self::vector_reduce) over `lo..hi` (its
    /// element `body` qualified), then the rest one element at a time.
    #[allow(clippy::too_many_arguments)]
    fn vector_reduce_loop(
        &mut self,
        args: &[Expr],
        prim: Prim,
        s: ScalarType,
        vt: CType,
        lanes: usize,
        body: &Expr,
        lo: Value,
        hi: Value,
    ) -> R<V> {
        let ne = self.expr(&args[1])?;
        let ne_v = self.b.ins().splat(vt, ne.w[0]);
        let accs = [self.b.declare_var(vt), self.b.declare_var(vt)];
        for a in accs {
            self.b.def_var(a, ne_v);
        }
        let step = 2 * lanes as i64;
        let len = self.b.ins().isub(hi, lo);
        let blocks = self.b.ins().udiv_imm_u(len, step);
        let zero = self.iconst(0);
        self.counted_loop(zero, blocks, ScalarType::Usize, |f, j| {
            let off = f.b.ins().imul_imm_s(j, step);
            let base = f.b.ins().iadd(lo, off);
            for (k, acc) in accs.iter().enumerate() {
                let at = f.b.ins().iadd_imm_s(base, (k * lanes) as i64);
                let v = f.vexpr(body, at, s, vt, &mut HashMap::new())?;
                let a = f.b.use_var(*acc);
                let r = f.vprim(prim, s, a, v);
                f.b.def_var(*acc, r);
            }
            Ok(())
        })?;
        // The rest, one element at a time.
        let acc = self.declare_like(&ne);
        let done = self.b.ins().imul_imm_s(blocks, step);
        let rest = self.b.ins().iadd(lo, done);
        let t = ne.ty.clone();
        self.counted_loop(rest, hi, ScalarType::Usize, |f, i| {
            f.fold_step(args, &t, &acc, i)?;
            Ok(())
        })?;
        let (a0, a1) = (self.b.use_var(accs[0]), self.b.use_var(accs[1]));
        let both = self.vprim(prim, s, a0, a1);
        let mut total = self.use_vars(&t, &acc).w[0];
        for k in 0..lanes {
            let lane = self.b.ins().extractlane(both, k as u8);
            total = self.vprim(prim, s, total, lane);
        }
        Ok(V {
            ty: t,
            w: vec![total],
        })
    }

    /// The vector lanes and type for a scalar type.
    fn vector_of(s: ScalarType) -> Option<(CType, usize)> {
        match s {
            ScalarType::F32 => Some((ct::F32X4, 4)),
            ScalarType::F64 => Some((ct::F64X2, 2)),
            ScalarType::I32 | ScalarType::U32 => Some((ct::I32X4, 4)),
            ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => Some((ct::I64X2, 2)),
            ScalarType::Bool => None,
        }
    }

    /// The bulk of a producer kernel's chunk with SIMD vectors, when its element is
    /// straight-line arithmetic of one scalar type on in-bounds loads at the index (SAXPY):
    /// returns where the scalar loop must continue, or `None` when it does not qualify.
    fn vector_map(
        &mut self,
        op: ParOp,
        args: &[Expr],
        elem: &Type,
        out: &[Value],
        lo: Value,
        hi: Value,
    ) -> R<Option<Value>> {
        let Type::Scalar(s) = *elem else {
            return Ok(None);
        };
        let Some((vt, lanes)) = Self::vector_of(s) else {
            return Ok(None);
        };
        // After fusion, producers are `create(n, |i| element)`.
        if op != ParOp::Create {
            return Ok(None);
        }
        let (param, body) = match &args[1] {
            Expr::Lambda { params, body } => match params.first() {
                Some((Pat::Bind { name, .. }, _)) => (name.clone(), (**body).clone()),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let safe = Self::length_sources(&args[0]);
        if !self.vectorizable(&body, &param, s, &safe, &mut Vec::new()) {
            return Ok(None);
        }
        let len = self.b.ins().isub(hi, lo);
        let blocks = self.b.ins().udiv_imm_u(len, lanes as i64);
        let zero = self.iconst(0);
        self.counted_loop(zero, blocks, ScalarType::Usize, |f, j| {
            let off = f.b.ins().imul_imm_s(j, lanes as i64);
            let at = f.b.ins().iadd(lo, off);
            let v = f.vexpr(&body, at, s, vt, &mut HashMap::new())?;
            let bytes = f.scaled(at, s);
            let addr = f.b.ins().iadd(out[0], bytes);
            f.b.ins()
                .store(MemFlagsData::new().with_notrap(), v, addr, 0);
            Ok(())
        })?;
        let done = self.b.ins().imul_imm_s(blocks, lanes as i64);
        Ok(Some(self.b.ins().iadd(lo, done)))
    }

    /// The primitive operator on scalars or vectors.
    fn vprim(&mut self, prim: Prim, s: ScalarType, a: Value, b: Value) -> Value {
        match (prim, s.is_float()) {
            (Prim::Add, true) => self.b.ins().fadd(a, b),
            (Prim::Add, false) => self.b.ins().iadd(a, b),
            (Prim::Mul, true) => self.b.ins().fmul(a, b),
            (Prim::Mul, false) => self.b.ins().imul(a, b),
            (Prim::Min, _) if signed(s) => self.b.ins().smin(a, b),
            (Prim::Min, _) => self.b.ins().umin(a, b),
            (Prim::Max, _) if signed(s) => self.b.ins().smax(a, b),
            (Prim::Max, _) => self.b.ins().umax(a, b),
        }
    }

    /// Whether `e` can be evaluated on vectors of consecutive indices `param`.
    fn vectorizable(
        &self,
        e: &Expr,
        param: &str,
        s: ScalarType,
        safe: &[String],
        locals: &mut Vec<String>,
    ) -> bool {
        self.vectorizable_affine(e, param, s, safe, locals, &mut None)
    }

    /// Like [`vectorizable`](Self::vectorizable); when `affine` is given, loads
    /// `xs[off + i]` (and `xs[i]` of a sequence not known to be long enough) qualify too,
    /// collected as `(xs, off)` for the caller to check in bounds before the loop.
    fn vectorizable_affine(
        &self,
        e: &Expr,
        param: &str,
        s: ScalarType,
        safe: &[String],
        locals: &mut Vec<String>,
        affine: &mut Option<Vec<(String, Expr, Expr)>>,
    ) -> bool {
        let scalar = Type::Scalar(s);
        match e {
            Expr::Lit(Lit::Int(_, Some(t)) | Lit::Float(_, Some(t))) => *t == s,
            Expr::Var(v) => {
                locals.contains(v) || matches!(self.vars.get(v), Some((t, _)) if *t == scalar)
            }
            Expr::Const(c) => const_type(c) == Some(s),
            Expr::Index(b, i) => {
                let Expr::Var(seq) = &**b else {
                    return false;
                };
                if !matches!(self.vars.get(seq), Some((Type::Seq(t), _)) if **t == scalar) {
                    return false;
                }
                if matches!(&**i, Expr::Var(j) if j == param) && safe.contains(seq) {
                    return true;
                }
                let Some(list) = affine else {
                    return false;
                };
                match affine_offset(i, param, locals) {
                    Some(off) => {
                        list.push((seq.clone(), (**i).clone(), off));
                        true
                    }
                    None => false,
                }
            }
            Expr::Binary(op, a, b) => {
                let ok = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul => true,
                    BinOp::Div => s.is_float(),
                    _ => false,
                };
                ok && self.vectorizable_affine(a, param, s, safe, locals, affine)
                    && self.vectorizable_affine(b, param, s, safe, locals, affine)
            }
            Expr::Unary(UnOp::Neg, a) => {
                (s.is_float() || signed(s))
                    && self.vectorizable_affine(a, param, s, safe, locals, affine)
            }
            Expr::Method { recv, method, args } => {
                let ok = match method.as_str() {
                    "sqrt" | "abs" => s.is_float() && args.is_empty(),
                    _ => false,
                };
                ok && self.vectorizable_affine(recv, param, s, safe, locals, affine)
            }
            Expr::Block {
                stmts,
                result: Some(r),
            } => {
                for st in stmts {
                    match st {
                        Stmt::Let {
                            pat:
                                Pat::Bind {
                                    name,
                                    mutable: false,
                                },
                            ty,
                            init: Some(init),
                        } if (*ty == scalar
                            || *ty == Type::Infer
                            || *ty == Type::Scalar(ScalarType::Usize)
                                && name.starts_with("i#")) =>
                        {
                            // An index rebinding (`let i#f1 = i#f2`) keeps its meaning.
                            if let Expr::Var(v) = init {
                                if v == param {
                                    return false;
                                }
                            }
                            if !self.vectorizable_affine(init, param, s, safe, locals, affine) {
                                return false;
                            }
                            locals.push(name.clone());
                        }
                        _ => return false,
                    }
                }
                self.vectorizable_affine(r, param, s, safe, locals, affine)
            }
            _ => false,
        }
    }

    /// Evaluates a vectorizable expression for the indices `base..base + lanes`.
    fn vexpr(
        &mut self,
        e: &Expr,
        base: Value,
        s: ScalarType,
        vt: CType,
        locals: &mut HashMap<String, Value>,
    ) -> R<Value> {
        Ok(match e {
            Expr::Var(v) => match locals.get(v) {
                Some(x) => *x,
                None => {
                    let x = self.var(v)?.w[0];
                    self.b.ins().splat(vt, x)
                }
            },
            Expr::Lit(_) | Expr::Const(_) => {
                let x = self.expr(e)?.w[0];
                self.b.ins().splat(vt, x)
            }
            Expr::Index(b, i) => {
                let Expr::Var(seq) = &**b else {
                    return Err("a vector load of a non-variable".into());
                };
                let cols = self.var(seq)?.w;
                let at = match self.affine.get(&affine_key(seq, i)) {
                    Some(&off) => self.b.ins().iadd(base, off),
                    None => base,
                };
                let off = self.scaled(at, s);
                let addr = self.b.ins().iadd(cols[1], off);
                let flags = MemFlagsData::new().with_notrap().with_readonly();
                self.b.ins().load(vt, flags, addr, 0)
            }
            Expr::Binary(op, a, b) => {
                let x = self.vexpr(a, base, s, vt, locals)?;
                let y = self.vexpr(b, base, s, vt, locals)?;
                match (op, s.is_float()) {
                    (BinOp::Add, true) => self.b.ins().fadd(x, y),
                    (BinOp::Add, false) => self.b.ins().iadd(x, y),
                    (BinOp::Sub, true) => self.b.ins().fsub(x, y),
                    (BinOp::Sub, false) => self.b.ins().isub(x, y),
                    (BinOp::Mul, true) => self.b.ins().fmul(x, y),
                    (BinOp::Mul, false) => self.b.ins().imul(x, y),
                    (BinOp::Div, _) => self.b.ins().fdiv(x, y),
                    _ => return Err("an operator that does not vectorize".into()),
                }
            }
            Expr::Unary(_, a) => {
                let x = self.vexpr(a, base, s, vt, locals)?;
                if s.is_float() {
                    self.b.ins().fneg(x)
                } else {
                    self.b.ins().ineg(x)
                }
            }
            Expr::Method { recv, method, .. } => {
                let x = self.vexpr(recv, base, s, vt, locals)?;
                if method == "sqrt" {
                    self.b.ins().sqrt(x)
                } else {
                    self.b.ins().fabs(x)
                }
            }
            Expr::Block {
                stmts,
                result: Some(r),
            } => {
                for st in stmts {
                    if let Stmt::Let {
                        pat: Pat::Bind { name, .. },
                        init: Some(init),
                        ..
                    } = st
                    {
                        let v = self.vexpr(init, base, s, vt, locals)?;
                        locals.insert(name.clone(), v);
                    }
                }
                self.vexpr(r, base, s, vt, locals)?
            }
            _ => return Err("an expression that does not vectorize".into()),
        })
    }

    /// The variables of the enclosing function that `e` uses.
    fn free_vars(&self, e: &Expr) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                if self.vars.contains_key(v) && !out.contains(v) {
                    out.push(v.clone());
                }
            }
        });
        // Manifest inputs computed by the host are variables too.
        for k in self.vars.keys() {
            if k.starts_with("manifest#") && !out.contains(k) {
                out.push(k.clone());
            }
        }
        out
    }

    /// Compiles the kernel of a top-level operation: `(env, lo, hi, partial, ctx) -> status`.
    fn kernel(
        &mut self,
        op: ParOp,
        args: &[Expr],
        env_layout: &[(String, Type, Vec<CType>)],
        out_at: usize,
        out_elem: Option<&Type>,
        partial_words: usize,
    ) -> R<FuncId> {
        let g: &mut Gen = self.g;
        g.kernels += 1;
        let mut sig = g.module.make_signature();
        for _ in 0..5 {
            sig.params.push(AbiParam::new(ct::I64));
        }
        sig.returns.push(AbiParam::new(ct::I32));
        let name = format!("kernel{}", g.kernels);
        let id = g
            .module
            .declare_function(&name, Linkage::Local, &sig)
            .map_err(|e| e.to_string())?;
        let mut ctx = g.module.make_context();
        ctx.func.signature = sig;
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
            for (name, ty, tys) in env_layout {
                let w: Vec<Value> = tys
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| f.load(t, env, 8 * (at + k) as i32))
                    .collect();
                at += tys.len();
                f.bind_var(name, V { ty: ty.clone(), w });
            }
            let out_cols: Vec<Value> = match out_elem {
                Some(e) => (0..columns(e)?.len())
                    .map(|k| f.load(ct::I64, env, 8 * (out_at + k) as i32))
                    .collect(),
                None => vec![],
            };
            match op {
                ParOp::Create | ParOp::Map | ParOp::Map2 => {
                    let elem = out_elem.cloned().unwrap_or(Type::Unit);
                    let rest = match f.vector_map(op, args, &elem, &out_cols, lo, hi)? {
                        Some(rest) => rest,
                        None => lo,
                    };
                    // Versioned on the sequences the element indexes by the index (beyond
                    // those the length already covers): N-body's `ys[i]` in its inner loop.
                    let (param, indexed) = match (op, &args[1]) {
                        (ParOp::Create, Expr::Lambda { params, body }) => match params.first() {
                            Some((Pat::Bind { name, .. }, _)) => {
                                (name.clone(), f.indexed_by(body, name))
                            }
                            _ => (String::new(), vec![]),
                        },
                        _ => (String::new(), vec![]),
                    };
                    let proofs = Proofs {
                        indexed,
                        ..Proofs::default()
                    };
                    f.versioned(&proofs, &param, lo, hi, |f| {
                        f.counted_loop(rest, hi, ScalarType::Usize, |f, i| {
                            let v = f.element(op, args, i)?;
                            f.store_elem(&elem, &out_cols, i, &v.w)
                        })
                    })?;
                }
                ParOp::ParallelLoop => {
                    f.counted_loop(lo, hi, ScalarType::Usize, |f, i| f.iteration(&args[1], i))?;
                }
                ParOp::Reduce => {
                    let total = match f.vector_reduce(args, lo, hi)? {
                        Some(v) => v,
                        None => f.stream_reduce(args, lo, hi)?,
                    };
                    for (k, w) in total
                        .w
                        .iter()
                        .enumerate()
                        .take(partial_words.max(total.w.len()))
                    {
                        f.store(*w, slot, 8 * k as i32);
                    }
                }
                ParOp::Scan => {
                    // Pass 2: start from this chunk's offset and write the running values.
                    let t = f.type_of(&args[1])?;
                    let tys = words(&t)?;
                    let offset = V {
                        ty: t.clone(),
                        w: tys
                            .iter()
                            .enumerate()
                            .map(|(k, &ty)| f.load(ty, slot, 8 * k as i32))
                            .collect(),
                    };
                    let accs = f.declare_like(&offset);
                    f.counted_loop(lo, hi, ScalarType::Usize, |f, i| {
                        let r = f.fold_step(args, &t, &accs, i)?;
                        f.store_elem(&t, &out_cols, i, &r.w)
                    })?;
                }
                ParOp::Flatten => unreachable!("flatten needs no kernel"),
            }
            f.finish();
            let config = f.g.module.target_config();
            f.b.finalize(config);
        }
        g.define(id, &mut ctx, &format!("{name}: the `{}` chunks", op.name()))?;
        g.module.clear_context(&mut ctx);
        Ok(id)
    }
}

/// The grain of a parallel operation: iterations with loops or nested parallel operations
/// are costly and may be spread one per chunk; cheap ones run at least 4096 per chunk,
/// so that launching a chunk costs little beside its work.
fn grain(args: &[Expr]) -> i64 {
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
    if costly {
        1
    } else {
        4096
    }
}

fn comparison(op: BinOp) -> Option<IntCC> {
    Some(match op {
        BinOp::Eq => IntCC::Equal,
        BinOp::Ne => IntCC::NotEqual,
        BinOp::Lt => IntCC::SignedLessThan,
        BinOp::Le => IntCC::SignedLessThanOrEqual,
        BinOp::Gt => IntCC::SignedGreaterThan,
        BinOp::Ge => IntCC::SignedGreaterThanOrEqual,
        _ => return None,
    })
}

/// The type and word offset of a field (or tuple element, or array element) of `t`.
fn field_offset(t: &Type, f: &str) -> R<(Type, usize)> {
    layout::field_offset(t, f)
}

fn field(v: &V, f: &str) -> R<V> {
    let (ft, off) = field_offset(&v.ty, f)?;
    let n = words(&ft)?.len();
    Ok(V {
        ty: ft,
        w: v.w[off..off + n].to_vec(),
    })
}

/// The loop-invariant offset of an index `off + i`, `i + off` or `i` (offset 0) over the
/// loop variable `param`.
/// What a loop over a variable is versioned on: sequences indexed by the variable, tensor
/// accesses, and affine loads (see [`FnCx::versioned`]).
#[derive(Default)]
struct Proofs {
    indexed: Vec<String>,
    tensors: Vec<(String, Vec<Expr>)>,
    affine: Vec<AffineLoad>,
}

/// A load `seq[index]` with `index = var * stride + offset` in a loop over `var`.
#[derive(Clone, Debug, PartialEq)]
struct AffineLoad {
    seq: String,
    index: Expr,
    stride: Expr,
    offset: Expr,
}

/// A delayed input `create(n, |p| body)` with a named parameter: `n`, `p` and `body`.
fn delayed(input: &Expr) -> Option<(&Expr, &str, &Expr)> {
    let Expr::Par {
        op: ParOp::Create,
        args,
        ..
    } = input
    else {
        return None;
    };
    let Expr::Lambda { params, body } = &args[1] else {
        return None;
    };
    match params.first() {
        Some((Pat::Bind { name, .. }, _)) => Some((&args[0], name, body)),
        _ => None,
    }
}

/// The variables `body` binds or assigns (which a loop over it may change).
fn changed_in(body: &Expr) -> HashSet<String> {
    let mut changed: HashSet<String> = HashSet::new();
    body.walk(&mut |e| match e {
        Expr::Assign { target, .. } => {
            let mut root = &**target;
            while let Expr::Field(b, _) | Expr::Index(b, _) = root {
                root = b;
            }
            if let Expr::Var(x) = root {
                changed.insert(x.clone());
            }
        }
        Expr::Block { stmts, .. } => {
            for st in stmts {
                if let Stmt::Let { pat, .. } = st {
                    changed.extend(pat.bound_names());
                }
            }
        }
        Expr::For { var, .. } => {
            changed.insert(var.clone());
        }
        Expr::Lambda { params, .. } => {
            for (p, _) in params {
                changed.extend(p.bound_names());
            }
        }
        Expr::Match { arms, .. } => {
            for arm in arms {
                changed.extend(arm.pat.bound_names());
            }
        }
        _ => {}
    });
    changed
}

fn affine_offset(i: &Expr, param: &str, locals: &[String]) -> Option<Expr> {
    let is_param = |e: &Expr| matches!(e, Expr::Var(v) if v == param);
    match i {
        e if is_param(e) => Some(Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)))),
        Expr::Binary(BinOp::Add, a, b) if is_param(b) && invariant(a, param, locals) => {
            Some((**a).clone())
        }
        Expr::Binary(BinOp::Add, a, b) if is_param(a) && invariant(b, param, locals) => {
            Some((**b).clone())
        }
        _ => None,
    }
}

/// Whether an index expression is the same on every iteration over `param`.
fn invariant(e: &Expr, param: &str, locals: &[String]) -> bool {
    match e {
        Expr::Var(v) => v != param && !locals.contains(v),
        Expr::Lit(_) | Expr::Const(_) => true,
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            invariant(a, param, locals) && invariant(b, param, locals)
        }
        Expr::Method { recv, method, args } => {
            method == "len" && args.is_empty() && invariant(recv, param, locals)
        }
        _ => false,
    }
}

/// The key of a versioned load `seq[index]` in [`FnCx::affine`].
fn affine_key(seq: &str, index: &Expr) -> String {
    format!("{seq}[{index:?}]")
}
