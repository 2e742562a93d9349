//! CUDA C generation for a typed, fused site.
//!
//! Every parallel operation at the site's top level (outside every closure) becomes one or
//! more kernels; what lies between them (scalar arithmetic, `let`s, tuples of results) is
//! the *host program*: the site's body with each such operation replaced by a launch
//! (`accel::launch#k`), which [`super::host`] evaluates. Parallel operations nested in a
//! closure run as sequential loops inside the enclosing kernel.
//!
//! Values follow the CPU backend's word layout ([`crate::cpu::abi`]), with device pointers
//! for columns: a kernel's parameters are the words of the host values it reads, each an
//! `unsigned long long`, so the host passes them without knowing their types.
//!
//! Reductions with a primitive commutative operator (`+`, `*`, `min`, `max` on scalars)
//! read coalesced with a grid-stride loop and combine in a shared-memory tree; every other
//! reduction and every scan keeps the order of the elements (associativity is all the API
//! promises): each block owns a contiguous chunk, each thread a contiguous part of it, and
//! the trees combine neighbours left to right. Scans take three kernels: block totals, the
//! carries into each block, and the final pass. Reductions and scans over rows keep each
//! thread's running row in device memory (one chunk per thread, one block to combine);
//! a `create` of equally long reductions may run as a segmented reduction (many blocks
//! per segment) when there are few segments.
//!
//! The host program also runs `for`/`while` loops over mutable variables between
//! launches; the data stays on the device from one iteration to the next.
//!
//! Nothing traps: indices are bounds-checked, integer division is checked, casts saturate
//! like Rust's `as`; the first failure is recorded in an error word the host reads, and
//! the failing thread goes on with a zero (the run's results are then discarded). Floats
//! follow CUDA's arithmetic: its math functions, and (as nvcc compiles) `a * b + c` may be
//! one fused multiply-add; `ACCEL_CUDA_FMAD=0` keeps Rust's two roundings.

use crate::backend::abi::MAX_RANK;
use crate::backend::failure::FailureKind;
use crate::backend::layout::{self, is_flat, Word};
use crate::backend::FrontEnd;
use accel_ir::consts::{const_type, constant_lit};
use accel_ir::passes::recognize::primitive;
use accel_ir::passes::typecheck::{bind_pattern, type_of};
use accel_ir::{BinOp, Expr, Lit, ParOp, Pat, ScalarType, Stmt, Type, UnOp};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

type R<T> = Result<T, String>;

/// Threads per block of every kernel.
pub const BLOCK: u32 = 256;

fn unsupported(what: impl std::fmt::Display) -> String {
    format!("the cuda backend cannot compile {what} yet")
}

/// A site lowered for the GPU.
#[derive(Debug)]
pub struct Program {
    /// The CUDA C of every kernel.
    pub source: String,
    /// The site's body with every top-level parallel operation replaced by a launch.
    pub host: Expr,
    pub launches: Vec<Launch>,
    /// The captured values' names, in marshaling order.
    pub captures: Vec<String>,
    /// Their types.
    pub capture_types: Vec<Type>,
}

/// What a launch does, and the host expressions it needs.
#[derive(Debug, Clone)]
pub enum LaunchKind {
    /// `create`: writes `n` elements of `elem` into new columns (kernel `NAME`).
    Map { elem: Type },
    /// `create` of rows of `elem` (each element a `create` itself): kernel `NAME_len`
    /// writes each row's length, `NAME` checks they are all the first's and writes the
    /// rows packed (a regular nested result).
    Rows { elem: Type },
    /// `create(n, |c| reduce(op, ne, create(m, g)))` with `m` the same for every `c`
    /// (a host expression): kernel `NAME` is the plain map (one thread per segment), for
    /// many segments; `NAME_part` and `NAME_final` reduce each segment with many blocks,
    /// for few long ones (k-means' per-cluster sums). The host picks at run time.
    SegReduce {
        elem: Type,
        commutative: bool,
        m: Expr,
    },
    /// `parallel_loop` (kernel `NAME`).
    Loop,
    /// `reduce` (kernels `NAME_part` and `NAME_final`); `commutative` selects the
    /// grid-stride partial kernel.
    Reduce { elem: Type, commutative: bool },
    /// Inclusive `scan` (kernels `NAME_part`, `NAME_carry`, `NAME_final`).
    Scan { elem: Type },
    /// `reduce` over rows of `elem` with a row as neutral element (the host variable `ne`,
    /// whose length is every row's): kernels `NAME_part` (each thread folds a contiguous
    /// chunk into its row of the totals) and `NAME_final` (one block folds the totals).
    RowReduce { elem: Type, ne: String },
    /// Inclusive `scan` over rows: `NAME_part` as for `RowReduce`, `NAME_carry` (one block:
    /// the carry into each thread's chunk), `NAME_final` (each chunk rescanned in place).
    RowScan { elem: Type, ne: String },
}

/// One top-level parallel operation.
#[derive(Debug, Clone)]
pub struct Launch {
    pub kind: LaunchKind,
    /// The kernel name (or its prefix).
    pub kernel: String,
    /// Its size, as a host expression.
    pub n: Expr,
    /// The host variables its kernels read, in parameter order.
    pub free: Vec<(String, Type)>,
}

impl Launch {
    /// The kernels of this launch, by name.
    pub fn kernel_names(&self) -> Vec<String> {
        let k = &self.kernel;
        match self.kind {
            LaunchKind::Map { .. } | LaunchKind::Loop => vec![k.clone()],
            LaunchKind::Rows { .. } => vec![format!("{k}_len"), k.clone()],
            LaunchKind::SegReduce { .. } => {
                vec![k.clone(), format!("{k}_part"), format!("{k}_final")]
            }
            LaunchKind::Reduce { .. } | LaunchKind::RowReduce { .. } => {
                vec![format!("{k}_part"), format!("{k}_final")]
            }
            LaunchKind::Scan { .. } | LaunchKind::RowScan { .. } => vec![
                format!("{k}_part"),
                format!("{k}_carry"),
                format!("{k}_final"),
            ],
        }
    }
}

/// The words of a value of type `t` (see [`layout`]).
pub fn words(t: &Type) -> R<Vec<Word>> {
    layout::words(t).map_err(unsupported)
}

/// The column words of a sequence of `e`.
pub fn columns(e: &Type) -> R<Vec<Word>> {
    layout::columns(e).map_err(unsupported)
}

/// The C spelling of a scalar type.
pub fn cty(s: ScalarType) -> &'static str {
    match s {
        ScalarType::I32 => "int",
        ScalarType::I64 => "long long",
        ScalarType::U32 => "unsigned",
        ScalarType::U64 | ScalarType::Usize => "unsigned long long",
        ScalarType::F32 => "float",
        ScalarType::F64 => "double",
        ScalarType::Bool => "bool",
    }
}

fn word_cty(w: Word) -> String {
    match w {
        Word::Scalar(s) => cty(s).to_string(),
        Word::Ptr(s) => format!("{}*", cty(s)),
    }
}

/// A kernel parameter word as a typed C value.
fn from_word(w: Word, p: &str) -> String {
    match w {
        Word::Scalar(ScalarType::F32) => format!("__uint_as_float((unsigned){p})"),
        Word::Scalar(ScalarType::F64) => format!("__longlong_as_double((long long){p})"),
        Word::Scalar(ScalarType::Bool) => format!("({p} != 0)"),
        Word::Scalar(s) => format!("({}){p}", cty(s)),
        Word::Ptr(s) => format!("({}*){p}", cty(s)),
    }
}

/// A typed C value as a result word (floats as bits, integers sign- or zero-extended).
fn to_word(w: Word, x: &str) -> String {
    match w {
        Word::Scalar(ScalarType::F32) => format!("(unsigned long long)__float_as_uint({x})"),
        Word::Scalar(ScalarType::F64) => format!("(unsigned long long)__double_as_longlong({x})"),
        Word::Scalar(ScalarType::Bool) => format!("({x} ? 1ULL : 0ULL)"),
        Word::Scalar(ScalarType::I32 | ScalarType::I64) => {
            format!("(unsigned long long)(long long)({x})")
        }
        Word::Scalar(_) => format!("(unsigned long long)({x})"),
        Word::Ptr(_) => format!("(unsigned long long)({x})"),
    }
}

fn signed(s: ScalarType) -> bool {
    matches!(s, ScalarType::I32 | ScalarType::I64)
}

fn bits(s: ScalarType) -> u32 {
    match s {
        ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 32,
        ScalarType::Bool => 8,
        _ => 64,
    }
}

/// The failure kinds kernels record (the codes every backend reports).
const FAIL_INDEX: u32 = FailureKind::Index.code();
const FAIL_SLICE: u32 = FailureKind::Slice.code();
const FAIL_RANK: u32 = FailureKind::Rank.code();
const FAIL_LENGTHS: u32 = FailureKind::Lengths.code();
const FAIL_IRREGULAR: u32 = FailureKind::Irregular.code();
const FAIL_ROW_LENGTH: u32 = FailureKind::RowLength.code();

/// Helpers every generated file starts with.
const PRELUDE: &str = r#"// Generated by accel (CUDA backend). Integer arithmetic wraps (it is done on unsigned
// types: signed overflow is undefined in C++); failures are recorded in `err`.
typedef unsigned long long ull;

__device__ __forceinline__ void accel_fail(ull* err, ull kind, ull a, ull b) {
    if (atomicCAS(err, 0ULL, kind) == 0ULL) { err[1] = a; err[2] = b; }
}

#define ACCEL_INT(T, U, BITS)                                                              \
__device__ __forceinline__ T accel_add(T a, T b) { return (T)((U)a + (U)b); }                \
__device__ __forceinline__ T accel_sub(T a, T b) { return (T)((U)a - (U)b); }                \
__device__ __forceinline__ T accel_mul(T a, T b) { return (T)((U)a * (U)b); }                \
__device__ __forceinline__ T accel_neg(T a) { return (T)((U)0 - (U)a); }                     \
__device__ __forceinline__ T accel_shl(T a, ull s) { return (T)((U)a << (s & (BITS - 1))); } \
__device__ __forceinline__ T accel_shr(T a, ull s) { return (T)(a >> (s & (BITS - 1))); }    \
__device__ __forceinline__ T accel_pow(T a, unsigned e) {                                   \
    U acc = 1, base = (U)a;                                                                 \
    while (e) { if (e & 1u) acc *= base; base *= base; e >>= 1; }                           \
    return (T)acc;                                                                          \
}
ACCEL_INT(int, unsigned, 32)
ACCEL_INT(long long, ull, 64)
ACCEL_INT(unsigned, unsigned, 32)
ACCEL_INT(ull, ull, 64)

template <typename T> __device__ __forceinline__ T accel_div(T a, T b, T min, ull* err) {
    if (b == 0) { accel_fail(err, 2, 0, 0); return 0; }
    if (min != 0 && a == min && b == (T)-1) { accel_fail(err, 3, 0, 0); return 0; }
    return a / b;
}
template <typename T> __device__ __forceinline__ T accel_rem(T a, T b, T min, ull* err) {
    if (b == 0) { accel_fail(err, 2, 0, 0); return 0; }
    if (min != 0 && a == min && b == (T)-1) { accel_fail(err, 3, 0, 0); return 0; }
    return a % b;
}
// Sequences made inside a kernel live in a per-thread arena: blocks from the device heap,
// chained, freed after each element (no value holding them outlives it) and at the end.
struct AccelArena { char* block; ull used; ull cap; };
__device__ void* accel_arena_alloc(AccelArena* a, ull bytes, ull* err) {
    bytes = (bytes + 15) & ~15ULL;
    if (a->block == nullptr || a->used + bytes > a->cap) {
        ull cap = bytes + 16 > 65536 ? bytes + 16 : 65536;
        char* b = (char*)malloc(cap);
        if (b == nullptr) { accel_fail(err, 4, bytes, 0); return nullptr; }
        *(char**)b = a->block;
        a->block = b; a->used = 16; a->cap = cap;
    }
    void* p = a->block + a->used;
    a->used += bytes;
    return p;
}
__device__ void accel_arena_reset(AccelArena* a) {
    char* b = a->block;
    while (b != nullptr) { char* prev = *(char**)b; free(b); b = prev; }
    a->block = nullptr; a->used = 0; a->cap = 0;
}
__device__ __forceinline__ unsigned accel_tz32(unsigned x) { return x ? __ffs(x) - 1 : 32; }
__device__ __forceinline__ unsigned accel_tz64(ull x) { return x ? __ffsll((long long)x) - 1 : 64; }
"#;

/// Lowers a typed, fused site (the front end's result).
pub fn generate(front: &FrontEnd) -> R<Program> {
    let (body, captures, result) = (&front.fused, &front.captures, &front.result);
    let mut records = HashMap::new();
    for (_, t) in captures {
        t.learn_records(&mut records);
    }
    result.learn_records(&mut records);
    let mut g = Gen {
        source: PRELUDE.to_string(),
        launches: Vec::new(),
        records,
        host_scope: captures.iter().cloned().collect(),
        structs: 0,
    };
    let host = g.host(body)?;
    Ok(Program {
        source: g.source,
        host,
        launches: g.launches,
        captures: captures.iter().map(|(n, _)| n.clone()).collect(),
        capture_types: captures.iter().map(|(_, t)| t.clone()).collect(),
    })
}

struct Gen {
    source: String,
    launches: Vec<Launch>,
    records: HashMap<String, Vec<(String, Type)>>,
    /// Types of the host program's variables.
    host_scope: HashMap<String, Type>,
    structs: usize,
}

/// The host-level name of launch `k`.
pub fn launch_name(k: usize) -> String {
    format!("accel::launch#{k}")
}

impl Gen {
    fn type_of(&mut self, e: &Expr) -> R<Type> {
        let vars = |v: &str| self.host_scope.get(v).cloned();
        type_of(e, &vars, &self.records).map_err(|e| e.to_string())
    }

    /// The host program: parallel operations become launches; everything else must be
    /// scalar code the host evaluates.
    fn host(&mut self, e: &Expr) -> R<Expr> {
        match e {
            Expr::Par { op, args, .. } => self.par(*op, args),
            Expr::Block { stmts, result } => {
                let mut out = Vec::new();
                for s in stmts {
                    match s {
                        Stmt::Let { pat, ty, init } => {
                            let Some(init) = init else {
                                return Err(unsupported(
                                    "a `let` without a value outside parallel operations",
                                ));
                            };
                            let t = match ty {
                                Type::Infer => self.type_of(init)?,
                                t => t.clone(),
                            };
                            let lowered = self.host(init)?;
                            bind_pattern(pat, &t, &mut self.host_scope, &self.records)
                                .map_err(|e| e.to_string())?;
                            out.push(Stmt::Let {
                                pat: pat.clone(),
                                ty: t,
                                init: Some(lowered),
                            });
                        }
                        Stmt::Expr(x) => out.push(Stmt::Expr(self.host(x)?)),
                    }
                }
                let result = match result {
                    Some(r) => Some(Box::new(self.host(r)?)),
                    None => None,
                };
                Ok(Expr::Block { stmts: out, result })
            }
            Expr::Lit(_) | Expr::Var(_) | Expr::Const(_) => Ok(e.clone()),
            // Loops between launches (an iterative algorithm whose data stays on the device).
            Expr::Assign { target, value } => match &**target {
                Expr::Var(v) if self.host_scope.contains_key(v) => Ok(Expr::Assign {
                    target: target.clone(),
                    value: Box::new(self.host(value)?),
                }),
                _ => Err(unsupported(
                    "assigning to a field or an element outside parallel operations",
                )),
            },
            Expr::For { var, lo, hi, body } => {
                let t = self.type_of(lo)?;
                let (lo, hi) = (self.host(lo)?, self.host(hi)?);
                self.host_scope.insert(var.clone(), t);
                Ok(Expr::For {
                    var: var.clone(),
                    lo: Box::new(lo),
                    hi: Box::new(hi),
                    body: Box::new(self.host(body)?),
                })
            }
            Expr::While { cond, body } => Ok(Expr::While {
                cond: Box::new(self.host(cond)?),
                body: Box::new(self.host(body)?),
            }),
            Expr::Slice { seq, lo, hi } => Ok(Expr::Slice {
                seq: Box::new(self.host(seq)?),
                lo: Box::new(self.host(lo)?),
                hi: Box::new(self.host(hi)?),
            }),
            Expr::Tuple(_)
            | Expr::Record { .. }
            | Expr::Field(..)
            | Expr::Unary(..)
            | Expr::Binary(..)
            | Expr::Cast(..)
            | Expr::If { .. }
            | Expr::Array(_) => self.host_children(e),
            Expr::Method { recv, method, args } => {
                let rt = self.type_of(recv)?;
                let scalar_method = matches!(rt, Type::Scalar(_))
                    && super::host::HOST_METHODS.contains(&method.as_str());
                let seq_len = matches!(rt, Type::Seq(_) | Type::Tensor(_) | Type::Array(..))
                    && matches!(method.as_str(), "len" | "is_empty")
                    && args.is_empty();
                let tensor_dims = matches!(rt, Type::Tensor(_))
                    && matches!(method.as_str(), "shape" | "rank")
                    && args.is_empty();
                if !(scalar_method || seq_len || tensor_dims) {
                    return Err(unsupported(format!(
                        "`.{method}()` outside parallel operations"
                    )));
                }
                Ok(Expr::Method {
                    recv: Box::new(self.host(recv)?),
                    method: method.clone(),
                    args: args.iter().map(|a| self.host(a)).collect::<R<_>>()?,
                })
            }
            Expr::Assoc { ty, func, args } => {
                let known = (ty == "accel" && func == "same_len")
                    || ((ScalarType::from_name(ty).is_some() || ty == "cmp")
                        && super::host::HOST_METHODS.contains(&func.as_str()));
                if !known {
                    return Err(unsupported(format!(
                        "`{ty}::{func}` outside parallel operations"
                    )));
                }
                Ok(Expr::Assoc {
                    ty: ty.clone(),
                    func: func.clone(),
                    args: args.iter().map(|a| self.host(a)).collect::<R<_>>()?,
                })
            }
            // Reading one element back, and small literal sequences sent to the device.
            Expr::Index(b, i) => {
                let readable = match self.type_of(b)? {
                    Type::Seq(e) => is_flat(&e) || matches!(*e, Type::Seq(ref r) if is_flat(r)),
                    Type::Array(e, _) => is_flat(&e),
                    _ => false,
                };
                if !readable {
                    return Err(unsupported(
                        "indexing this value outside parallel operations",
                    ));
                }
                Ok(Expr::Index(
                    Box::new(self.host(b)?),
                    Box::new(self.host(i)?),
                ))
            }
            Expr::Seq(es) if es.is_empty() => {
                Err(unsupported("an empty `vec![]` outside parallel operations"))
            }
            Expr::Seq(_) | Expr::SeqRepeat(..) => {
                match self.type_of(e)? {
                    Type::Seq(t) if is_flat(&t) => {}
                    t => {
                        return Err(unsupported(format!(
                            "a `vec!` of type {t} outside parallel operations"
                        )))
                    }
                }
                self.host_children(e)
            }
            other => Err(unsupported(format!(
                "{} outside parallel operations",
                describe(other)
            ))),
        }
    }

    /// `e` with each child lowered by [`Self::host`].
    fn host_children(&mut self, e: &Expr) -> R<Expr> {
        let mut out = e.clone();
        let mut err = None;
        out.for_each_child_mut(&mut |c| {
            if err.is_none() {
                match self.host(c) {
                    Ok(x) => *c = x,
                    Err(m) => err = Some(m),
                }
            }
        });
        err.map_or(Ok(out), Err)
    }

    /// A top-level parallel operation: its kernels, and the launch that replaces it.
    fn par(&mut self, op: ParOp, args: &[Expr]) -> R<Expr> {
        let (n, kind, elem_fn): (Expr, LaunchKind, Option<(Expr, Option<Expr>)>) = match op {
            ParOp::Create => {
                let t = self.type_of(&Expr::par(op, args.to_vec()))?;
                let Type::Seq(elem) = t else {
                    return Err("create of a non-sequence".into());
                };
                let kind = match *elem {
                    Type::Seq(ref row) if is_flat(row) => LaunchKind::Rows {
                        elem: (**row).clone(),
                    },
                    ref e if is_flat(e) => match self.segments(&args[1])? {
                        Some((m, commutative)) => LaunchKind::SegReduce {
                            elem: e.clone(),
                            commutative,
                            m,
                        },
                        None => LaunchKind::Map { elem: e.clone() },
                    },
                    _ => {
                        return Err(unsupported(format!(
                            "a parallel operation producing a sequence of {elem}"
                        )))
                    }
                };
                (args[0].clone(), kind, Some((args[1].clone(), None)))
            }
            ParOp::ParallelLoop => (
                args[0].clone(),
                LaunchKind::Loop,
                Some((args[1].clone(), None)),
            ),
            ParOp::Reduce | ParOp::Scan => {
                let (xs_len, element) = match &args[2] {
                    Expr::Par {
                        op: ParOp::Create,
                        args: c,
                        ..
                    } => (c[0].clone(), c[1].clone()),
                    Expr::Var(_) => (
                        Expr::Method {
                            recv: Box::new(args[2].clone()),
                            method: "len".into(),
                            args: vec![],
                        },
                        Expr::Lambda {
                            params: vec![(Pat::bind("accel#i"), Type::Scalar(ScalarType::Usize))],
                            body: Box::new(Expr::Index(
                                Box::new(args[2].clone()),
                                Box::new(Expr::var("accel#i")),
                            )),
                        },
                    ),
                    // Evaluate the input first (its own launch), then reduce over it.
                    _ => return self.with_host_arg(op, args, 2, "input"),
                };
                let elem = self.type_of(&args[1])?;
                if let Type::Seq(row) = &elem {
                    if is_flat(row) {
                        return self.row_fold(op, args, xs_len, element, row);
                    }
                }
                if !is_flat(&elem) {
                    return Err(unsupported(format!(
                        "a {} over elements of type {elem}",
                        op.name()
                    )));
                }
                if words(&elem)?.len() > 24 {
                    return Err(unsupported(format!(
                        "a {} over elements of more than 24 scalars",
                        op.name()
                    )));
                }
                let kind = if op == ParOp::Reduce {
                    LaunchKind::Reduce {
                        commutative: primitive(&args[0]).is_some(),
                        elem,
                    }
                } else {
                    LaunchKind::Scan { elem }
                };
                (xs_len, kind, Some((element, Some(args[0].clone()))))
            }
            ParOp::Flatten => {
                // A flattened sequence is the same columns with a longer length: no kernel.
                let inner = self.host(&args[0])?;
                return Ok(Expr::par(ParOp::Flatten, vec![inner]));
            }
            ParOp::Map | ParOp::Map2 => {
                // What fusion left (a map over a slice, say): the inputs become host values
                // and the map a `create` over them.
                let mut stmts = Vec::new();
                let mut inputs = Vec::new();
                for (k, xs) in args[1..].iter().enumerate() {
                    if let Expr::Var(_) = xs {
                        inputs.push(xs.clone());
                        continue;
                    }
                    let name = format!("accel#map{}_{k}", self.launches.len());
                    let t = self.type_of(xs)?;
                    let lowered = self.host(xs)?;
                    self.host_scope.insert(name.clone(), t.clone());
                    stmts.push(Stmt::Let {
                        pat: Pat::bind(&name),
                        ty: t,
                        init: Some(lowered),
                    });
                    inputs.push(Expr::var(&name));
                }
                let len = |xs: &Expr| Expr::Method {
                    recv: Box::new(xs.clone()),
                    method: "len".into(),
                    args: vec![],
                };
                let n = if inputs.len() == 2 {
                    Expr::Assoc {
                        ty: "accel".into(),
                        func: "same_len".into(),
                        args: vec![len(&inputs[0]), len(&inputs[1])],
                    }
                } else {
                    len(&inputs[0])
                };
                let i = Expr::var("accel#i");
                let elems = inputs
                    .iter()
                    .map(|xs| Expr::Index(Box::new(xs.clone()), Box::new(i.clone())))
                    .collect();
                let f = Expr::Lambda {
                    params: vec![(Pat::bind("accel#i"), Type::Scalar(ScalarType::Usize))],
                    body: Box::new(Expr::applied(&args[0], elems)),
                };
                let launch = self.par(ParOp::Create, &[n, f])?;
                return Ok(Expr::Block {
                    stmts,
                    result: Some(Box::new(launch)),
                });
            }
        };
        self.launch(op, args, n, kind, elem_fn)
    }

    /// The segment length (as a host expression) of a `create` whose elements are
    /// reductions of equally long delayed sequences: `m` must be computable on the host,
    /// before any element.
    fn segments(&mut self, f: &Expr) -> R<Option<(Expr, bool)>> {
        let Some(seg) = segment_parts(f) else {
            return Ok(None);
        };
        let mut local: HashSet<String> = seg.param.bound_names().into_iter().collect();
        for st in &seg.stmts {
            if let Stmt::Let { pat, .. } = st {
                local.extend(pat.bound_names());
            }
        }
        let mut on_host = true;
        seg.m.walk(&mut |x| match x {
            Expr::Var(v) if local.contains(v) || !self.host_scope.contains_key(v) => {
                on_host = false
            }
            Expr::Par { .. } | Expr::Lambda { .. } => on_host = false,
            _ => {}
        });
        if !on_host {
            return Ok(None);
        }
        Ok(self
            .host(&seg.m)
            .ok()
            .map(|m| (m, primitive(&seg.op).is_some())))
    }

    /// Evaluates argument `k` of a parallel operation first, on the host (launching what
    /// it needs), into a variable; then lowers the operation over that variable.
    fn with_host_arg(&mut self, op: ParOp, args: &[Expr], k: usize, what: &str) -> R<Expr> {
        let name = format!("accel#{what}{}", self.launches.len());
        let t = self.type_of(&args[k])?;
        let lowered = self.host(&args[k])?;
        self.host_scope.insert(name.clone(), t.clone());
        let mut again = args.to_vec();
        again[k] = Expr::var(&name);
        let launch = self.par(op, &again)?;
        Ok(Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind(&name),
                ty: t,
                init: Some(lowered),
            }],
            result: Some(Box::new(launch)),
        })
    }

    /// A `reduce` or `scan` whose elements are rows: the neutral element is evaluated once
    /// on the host (its length is the rows'), and the kernels keep their running rows in
    /// device memory.
    fn row_fold(
        &mut self,
        op: ParOp,
        args: &[Expr],
        n: Expr,
        element: Expr,
        row: &Type,
    ) -> R<Expr> {
        let ne = match &args[1] {
            Expr::Var(v) if self.host_scope.contains_key(v) => v.clone(),
            _ => return self.with_host_arg(op, args, 1, "ne"),
        };
        let elem = row.clone();
        let kind = if op == ParOp::Reduce {
            LaunchKind::RowReduce { elem, ne }
        } else {
            LaunchKind::RowScan { elem, ne }
        };
        self.launch(op, args, n, kind, Some((element, Some(args[0].clone()))))
    }

    /// Generates the kernels of one launch and returns the host program's call of it.
    fn launch(
        &mut self,
        op: ParOp,
        args: &[Expr],
        n: Expr,
        kind: LaunchKind,
        elem_fn: Option<(Expr, Option<Expr>)>,
    ) -> R<Expr> {
        let k = self.launches.len();
        let kernel = format!("accel_k{k}");
        // The host variables the kernels read: everything the operation mentions that the
        // host program binds.
        let mut free = Vec::new();
        let mut seen = HashSet::new();
        let whole = Expr::par(op, args.to_vec());
        whole.walk(&mut |x| {
            if let Expr::Var(v) = x {
                if let Some(t) = self.host_scope.get(v) {
                    if seen.insert(v.clone()) {
                        free.push((v.clone(), t.clone()));
                    }
                }
            }
        });
        let (f, op_fn) = elem_fn.expect("every kernel has a function");
        let n_host = self.host(&n)?;
        let launch = Launch {
            kind: kind.clone(),
            kernel: kernel.clone(),
            n: n_host,
            free: free.clone(),
        };
        let mut kg = KernelGen::new(&self.records, &free);
        match &kind {
            LaunchKind::Map { elem } => {
                let src = kg.map_kernel(&kernel, &f, elem)?;
                self.source.push_str(&src);
            }
            LaunchKind::SegReduce {
                elem, commutative, ..
            } => {
                let src = kg.map_kernel(&kernel, &f, elem)?;
                self.source.push_str(&src);
                let src = kg.segment_kernels(&kernel, &f, elem, *commutative)?;
                self.source.push_str(&src);
            }
            LaunchKind::Loop => {
                let src = kg.loop_kernel(&kernel, &f)?;
                self.source.push_str(&src);
            }
            LaunchKind::Rows { elem } => {
                let src = kg.rows_kernels(&kernel, &f, elem)?;
                self.source.push_str(&src);
            }
            LaunchKind::Reduce { elem, commutative } => {
                let op_fn = op_fn.expect("a reduction has an operator");
                self.structs += 1;
                let src = kg.reduce_kernels(&kernel, &f, &op_fn, &args[1], elem, *commutative)?;
                self.source.push_str(&src);
            }
            LaunchKind::Scan { elem } => {
                let op_fn = op_fn.expect("a scan has an operator");
                let src = kg.scan_kernels(&kernel, &f, &op_fn, &args[1], elem)?;
                self.source.push_str(&src);
            }
            LaunchKind::RowReduce { elem, ne } | LaunchKind::RowScan { elem, ne } => {
                let op_fn = op_fn.expect("a reduction has an operator");
                let scan = matches!(kind, LaunchKind::RowScan { .. });
                let src = kg.row_fold_kernels(&kernel, &f, &op_fn, ne, elem, scan)?;
                self.source.push_str(&src);
            }
        }
        self.launches.push(launch);
        Ok(Expr::Call {
            func: launch_name(k),
            args: vec![],
            loc: Default::default(),
        })
    }
}

/// A construct named for messages.
fn describe(e: &Expr) -> String {
    match e {
        Expr::Index(..) => "indexing".into(),
        Expr::Slice { .. } => "slicing".into(),
        Expr::Seq(_) | Expr::SeqRepeat(..) => "a `vec!`".into(),
        Expr::Match { .. } => "`match`".into(),
        Expr::For { .. } => "`for` loops".into(),
        Expr::While { .. } => "`while` loops".into(),
        Expr::Assign { .. } => "assignment".into(),
        Expr::ArrayRepeat(..) => "`[x; n]`".into(),
        _ => "this construct".into(),
    }
}

/// A value in kernel code: its type and its words as C expressions.
#[derive(Clone, Debug)]
struct V {
    ty: Type,
    w: Vec<String>,
}

impl V {
    fn unit() -> V {
        V {
            ty: Type::Unit,
            w: vec![],
        }
    }
    fn scalar(s: ScalarType, w: String) -> V {
        V {
            ty: Type::Scalar(s),
            w: vec![w],
        }
    }
}

/// Generates the code of one launch's kernels.
struct KernelGen<'r> {
    records: &'r HashMap<String, Vec<(String, Type)>>,
    free: Vec<(String, Type)>,
    code: String,
    depth: usize,
    tmp: usize,
    scope: HashMap<String, V>,
    types: HashMap<String, Type>,
}

fn usize_v(w: String) -> V {
    V::scalar(ScalarType::Usize, w)
}

impl<'r> KernelGen<'r> {
    fn new(records: &'r HashMap<String, Vec<(String, Type)>>, free: &[(String, Type)]) -> Self {
        KernelGen {
            records,
            free: free.to_vec(),
            code: String::new(),
            depth: 1,
            tmp: 0,
            scope: HashMap::new(),
            types: HashMap::new(),
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.code.push_str("    ");
        }
        self.code.push_str(s);
        self.code.push('\n');
    }

    fn fresh(&mut self, base: &str) -> String {
        self.tmp += 1;
        let clean: String = base
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(24)
            .collect();
        format!("{clean}_{}", self.tmp)
    }

    /// Declares a fresh variable holding `init`.
    fn let_(&mut self, ty: &str, base: &str, init: &str) -> String {
        let v = self.fresh(base);
        self.line(&format!("{ty} {v} = {init};"));
        v
    }

    /// Copies a value's words into fresh variables (so that later assignments to its
    /// source do not change it), mutable or not.
    fn copy(&mut self, v: &V, base: &str) -> R<V> {
        let kinds = words(&v.ty)?;
        let mut w = Vec::new();
        for (k, x) in kinds.iter().zip(&v.w) {
            w.push(self.let_(&word_cty(*k), base, x));
        }
        Ok(V {
            ty: v.ty.clone(),
            w,
        })
    }

    /// The start of a kernel: its signature and the typed locals of the host values it
    /// reads. `extra` are the kernel's own parameters after those.
    fn begin(&mut self, name: &str, extra: &[&str]) -> R<()> {
        let mut params = Vec::new();
        let mut prologue = Vec::new();
        let free = self.free.clone();
        for (name, t) in &free {
            let kinds = words(t)?;
            let mut w = Vec::new();
            for k in kinds {
                let p = format!("p{}", params.len());
                params.push(format!("ull {p}"));
                let local = self.fresh(name);
                prologue.push(format!("{} {local} = {};", word_cty(k), from_word(k, &p)));
                w.push(local);
            }
            self.scope.insert(name.clone(), V { ty: t.clone(), w });
            self.types.insert(name.clone(), t.clone());
        }
        for e in extra {
            params.push(format!("ull {e}"));
        }
        params.push("ull err_word".into());
        let _ = writeln!(
            self.code,
            "\nextern \"C\" __global__ void {name}({}) {{",
            params.join(", ")
        );
        self.line("ull* err = (ull*)err_word;");
        self.line("AccelArena arena = {nullptr, 0, 0};");
        for p in prologue {
            self.line(&p);
        }
        Ok(())
    }

    fn end(&mut self) -> String {
        self.line("accel_arena_reset(&arena);");
        self.code.push_str("}\n");
        std::mem::take(&mut self.code)
    }

    /// Applies a closure to argument values (binding its parameters).
    fn apply(&mut self, f: &Expr, args: Vec<V>) -> R<V> {
        let Expr::Lambda { params, body } = f else {
            return Err(unsupported("a function argument that is not a closure"));
        };
        for ((p, _), a) in params.iter().zip(args) {
            self.bind(p, a)?;
        }
        self.expr(body)
    }

    /// A loop body applied to index `i`.
    fn apply_index(&mut self, f: &Expr, i: &str) -> R<V> {
        self.apply(f, vec![usize_v(i.to_string())])
    }

    /// Writes a value's scalar leaves to output columns at index `i`.
    fn store_columns(&mut self, v: &V, cols: &[String], i: &str) {
        for (c, x) in cols.iter().zip(&v.w) {
            self.line(&format!("{c}[{i}] = {x};"));
        }
    }

    /// Starts kernel `name` with parameters `params`, then for each `(prefix, elem)` the
    /// columns of a sequence of `elem` (`PREFIXk`), declared as typed pointers
    /// `PREFIXk_c`, whose names it returns, a list per pair.
    fn begin_with_columns(
        &mut self,
        name: &str,
        params: &[&str],
        sets: &[(&str, &Type)],
    ) -> R<Vec<Vec<String>>> {
        let mut names = Vec::new();
        let mut decls = Vec::new();
        let mut typed = Vec::new();
        for (prefix, elem) in sets {
            let (n, d) = Self::named_columns(prefix, elem)?;
            typed.push(n.iter().map(|o| format!("{o}_c")).collect());
            names.extend(n);
            decls.extend(d);
        }
        let mut all = params.to_vec();
        all.extend(names.iter().map(|s| s.as_str()));
        self.begin(name, &all)?;
        for d in decls {
            self.line(&d);
        }
        Ok(typed)
    }

    /// [`Self::begin_with_columns`] with one set of columns, the output's (`outk`).
    fn begin_with_out(&mut self, name: &str, params: &[&str], elem: &Type) -> R<Vec<String>> {
        let mut sets = self.begin_with_columns(name, params, &[("out", elem)])?;
        Ok(sets.remove(0))
    }

    /// Kernel parameters `PREFIXk` for the columns of a sequence of `elem`, and the
    /// declarations of their typed pointers `PREFIXk_c`.
    fn named_columns(prefix: &str, elem: &Type) -> R<(Vec<String>, Vec<String>)> {
        let kinds = columns(elem)?;
        let names: Vec<String> = (0..kinds.len()).map(|k| format!("{prefix}{k}")).collect();
        let typed = kinds
            .iter()
            .zip(&names)
            .map(|(k, n)| format!("{}* {n}_c = ({}*){n};", cty_of_ptr(*k), cty_of_ptr(*k)))
            .collect();
        Ok((names, typed))
    }

    fn map_kernel(&mut self, name: &str, f: &Expr, elem: &Type) -> R<String> {
        if !light(f) {
            let cols = self.begin_with_out(name, &["n"], elem)?;
            self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {");
            self.depth += 1;
            let v = self.apply_index(f, "i")?;
            self.store_columns(&v, &cols, "i");
            self.line("accel_arena_reset(&arena);");
            self.depth -= 1;
            self.line("}");
            return Ok(self.end());
        }
        // Cheap elements: four per iteration, all loaded before any is stored (outputs may
        // alias inputs as far as the compiler knows, so it would not hoist the loads of the
        // next iteration above this one's stores): four loads in flight per thread.
        let e = format!("{name}_e");
        let mut src = Self::acc_struct(&e, elem)?;
        let s = format!("{e}_acc");
        let cols = self.begin_with_out(name, &["n"], elem)?;
        self.line(&format!(
            "auto element = [&](ull i) __attribute__((always_inline)) -> {s} {{"
        ));
        self.depth += 1;
        let v = self.apply_index(f, "i")?;
        self.line(&format!("{s} r;"));
        self.assign_acc("r", &v);
        self.line("return r;");
        self.depth -= 1;
        self.line("};");
        self.line(&format!(
            "auto store = [&](ull i, const {s}& e) __attribute__((always_inline)) {{"
        ));
        self.depth += 1;
        let ev = Self::acc_value(elem, "e")?;
        self.store_columns(&ev, &cols, "i");
        self.depth -= 1;
        self.line("};");
        self.line("const ull stride = (ull)gridDim.x * blockDim.x;");
        self.line("ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
        self.line("for (; i + 3 * stride < n; i += 4 * stride) {");
        self.line(&format!("    {s} e0 = element(i), e1 = element(i + stride), e2 = element(i + 2 * stride), e3 = element(i + 3 * stride);"));
        self.line("    store(i, e0); store(i + stride, e1); store(i + 2 * stride, e2); store(i + 3 * stride, e3);");
        self.line("    accel_arena_reset(&arena);");
        self.line("}");
        self.line(
            "for (; i < n; i += stride) { store(i, element(i)); accel_arena_reset(&arena); }",
        );
        src.push_str(&self.end());
        Ok(src)
    }

    /// The kernels of a `create` whose elements are rows: their lengths first, then the
    /// rows, packed at `i * m`. A row made by a `create` (after the element's `let`s) has
    /// its length computed alone and is written straight into place; any other row (a
    /// `vec!` literal, a captured row, a sequential operation's result) is computed for
    /// its length, then again to be copied.
    fn rows_kernels(&mut self, name: &str, f: &Expr, elem: &Type) -> R<String> {
        let made = row_parts(f);
        let prefix = |stmts: &[Stmt], m: &Expr| Expr::Block {
            stmts: stmts.to_vec(),
            result: Some(Box::new(m.clone())),
        };
        let each = "for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {";
        self.begin(&format!("{name}_len"), &["n", "lens"])?;
        self.line(each);
        self.depth += 1;
        let len = match &made {
            Some((param, stmts, m, _)) => {
                self.bind(param, usize_v("i".into()))?;
                self.expr(&prefix(stmts, m))?.w[0].clone()
            }
            None => self.apply_index(f, "i")?.w[0].clone(),
        };
        self.line(&format!("((ull*)lens)[i] = {len};"));
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        let mut src = self.end();
        self.scope.clear();
        let cols = self.begin_with_out(name, &["n", "m", "lens"], elem)?;
        self.line(each);
        self.depth += 1;
        self.line(&format!(
            "if (((const ull*)lens)[i] != m) {{ accel_fail(err, {FAIL_IRREGULAR}, m, ((const ull*)lens)[i]); continue; }}"
        ));
        match &made {
            Some((param, stmts, _, g)) => {
                self.bind(param, usize_v("i".into()))?;
                self.expr(&prefix(stmts, &Expr::Tuple(vec![])))?;
                let j = self.fresh("j");
                self.line(&format!("for (ull {j} = 0; {j} < m; {j}++) {{"));
                self.depth += 1;
                let v = self.apply_index(g, &j)?;
                let at = self.let_("ull", "at", &format!("i * m + {j}"));
                self.store_columns(&v, &cols, &at);
                self.depth -= 1;
                self.line("}");
            }
            None => {
                let row = self.apply_index(f, "i")?;
                self.copy_row(&row, &cols, "i * m", "m");
            }
        }
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    /// Copies the first `m` elements of a row value (a sequence of flat elements) to
    /// columns `cols` from index `at` on.
    fn copy_row(&mut self, row: &V, cols: &[String], at: &str, m: &str) {
        let j = self.fresh("j");
        self.line(&format!("for (ull {j} = 0; {j} < {m}; {j}++) {{"));
        for (c, src) in cols.iter().zip(&row.w[1..]) {
            self.line(&format!("    {c}[{at} + {j}] = {src}[{j}];"));
        }
        self.line("}");
    }

    /// Row `at` (of length `m`) of rows of `elem` packed in columns `cols`, as a value.
    fn row_view(elem: &Type, cols: &[String], at: &str, m: &str) -> V {
        let w = cols.iter().map(|c| format!("({c} + ({at}) * {m})"));
        V {
            ty: Type::Seq(Box::new(elem.clone())),
            w: std::iter::once(m.to_string()).chain(w).collect(),
        }
    }

    /// `dst[at] = op(acc, x)` for rows of length `m` (a combined row of another length is
    /// a failure). Safe when the result is `acc` or `x` itself: `dst` row `at` is never
    /// `x`, and copying a row onto itself changes nothing.
    fn combine_rows_into(
        &mut self,
        op: &Expr,
        acc: V,
        x: V,
        dst: &[String],
        at: &str,
        m: &str,
    ) -> R<()> {
        let r = self.apply(op, vec![acc, x])?;
        self.line(&format!(
            "if ({} != {m}) accel_fail(err, {FAIL_ROW_LENGTH}, {m}, {}); else {{",
            r.w[0], r.w[0]
        ));
        self.depth += 1;
        self.copy_row(&r, dst, &format!("({at}) * {m}"), m);
        self.depth -= 1;
        self.line("}");
        self.line("accel_arena_reset(&arena);");
        Ok(())
    }

    /// `for (HEADER) dst[dt] = op(acc[at], x[xt]);` over rows of length `m` packed in
    /// columns (each pair: the columns and a row index).
    #[allow(clippy::too_many_arguments)]
    fn combine_rows_loop(
        &mut self,
        header: &str,
        op: &Expr,
        elem: &Type,
        (acc, at): (&[String], &str),
        (x, xt): (&[String], &str),
        (dst, dt): (&[String], &str),
        m: &str,
    ) -> R<()> {
        self.line(header);
        self.depth += 1;
        let a = Self::row_view(elem, acc, at, m);
        let b = Self::row_view(elem, x, xt, m);
        self.combine_rows_into(op, a, b, dst, dt, m)?;
        self.depth -= 1;
        self.line("}");
        Ok(())
    }

    /// The kernels of a `reduce` or `scan` over rows (see [`LaunchKind::RowReduce`]). The
    /// running rows live in device memory, each thread's in its own row: the totals
    /// (`tot`), for scans also the carries (`car`) and one block's scratch rows (`scr`).
    fn row_fold_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &str,
        elem: &Type,
        scan: bool,
    ) -> R<String> {
        // 1. Each thread folds its contiguous chunk into its row of the totals.
        let tot_c = self
            .begin_with_columns(&format!("{name}_part"), &["n", "chunk"], &[("tot", elem)])?
            .remove(0);
        let nev = self
            .scope
            .get(ne)
            .cloned()
            .ok_or("the neutral row is not bound")?;
        let m = nev.w[0].clone();
        self.line("const ull t = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
        self.line("const ull lo = t * chunk;");
        self.line("if (lo < n) {");
        self.depth += 1;
        self.line("const ull hi = lo + chunk < n ? lo + chunk : n;");
        self.copy_row(&nev, &tot_c, &format!("t * {m}"), &m);
        self.line("for (ull i = lo; i < hi; i++) {");
        self.depth += 1;
        let x = self.apply_index(f, "i")?;
        let acc = Self::row_view(elem, &tot_c, "t", &m);
        self.combine_rows_into(op, acc, x, &tot_c, "t", &m)?;
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        let mut src = self.end();

        if !scan {
            // 2. One block: each thread folds its part of the totals into the part's first
            // row, then an order-keeping tree over those rows; the result is row 0.
            self.scope.clear();
            let tot_c = self
                .begin_with_columns(&format!("{name}_final"), &["count"], &[("tot", elem)])?
                .remove(0);
            let m = self.scope.get(ne).ok_or("the neutral row is not bound")?.w[0].clone();
            self.line("const ull per = (count + blockDim.x - 1) / blockDim.x;");
            self.line("const ull lo = threadIdx.x * per;");
            self.line("const ull hi = lo + per < count ? lo + per : count;");
            self.combine_rows_loop(
                "for (ull r = lo + 1; r < hi; r++) {",
                op,
                elem,
                (&tot_c, "lo"),
                (&tot_c, "r"),
                (&tot_c, "lo"),
                &m,
            )?;
            self.line("const ull active = (count + per - 1) / per;");
            self.line("__syncthreads();");
            self.line("for (ull s = 1; s < active; s *= 2) {");
            self.depth += 1;
            self.combine_rows_loop(
                "if (threadIdx.x % (2 * s) == 0 && threadIdx.x + s < active) {",
                op,
                elem,
                (&tot_c, "lo"),
                (&tot_c, "(threadIdx.x + s) * per"),
                (&tot_c, "lo"),
                &m,
            )?;
            self.line("__syncthreads();");
            self.depth -= 1;
            self.line("}");
            src.push_str(&self.end());
            return Ok(src);
        }

        // 2. One block: the carry into each chunk (an exclusive scan of the totals). Each
        // thread totals its part of them (scratch rows 0..B), one thread scans those
        // (carries into the parts: scratch rows B..2B), each thread rescans its part.
        self.scope.clear();
        let sets = self.begin_with_columns(
            &format!("{name}_carry"),
            &["count"],
            &[("tot", elem), ("car", elem), ("scr", elem)],
        )?;
        let (tot_c, car_c, scr_c) = (&sets[0], &sets[1], &sets[2]);
        let nev = self
            .scope
            .get(ne)
            .cloned()
            .ok_or("the neutral row is not bound")?;
        let m = nev.w[0].clone();
        self.line("const ull b = threadIdx.x;");
        self.line("const ull per = (count + blockDim.x - 1) / blockDim.x;");
        self.line("const ull lo = b * per < count ? b * per : count;");
        self.line("const ull hi = lo + per < count ? lo + per : count;");
        self.copy_row(&nev, scr_c, &format!("b * {m}"), &m);
        self.combine_rows_loop(
            "for (ull r = lo; r < hi; r++) {",
            op,
            elem,
            (scr_c, "b"),
            (tot_c, "r"),
            (scr_c, "b"),
            &m,
        )?;
        self.line("__syncthreads();");
        self.line("if (b == 0) {");
        self.depth += 1;
        self.copy_row(&nev, scr_c, &format!("blockDim.x * {m}"), &m);
        self.combine_rows_loop(
            "for (ull p = 0; p + 1 < blockDim.x; p++) {",
            op,
            elem,
            (scr_c, "blockDim.x + p"),
            (scr_c, "p"),
            (scr_c, "blockDim.x + p + 1"),
            &m,
        )?;
        self.depth -= 1;
        self.line("}");
        self.line("__syncthreads();");
        self.line("if (lo < hi) {");
        self.depth += 1;
        let from = Self::row_view(elem, scr_c, "blockDim.x + b", &m);
        self.copy_row(&from, car_c, &format!("lo * {m}"), &m);
        self.combine_rows_loop(
            "for (ull r = lo; r + 1 < hi; r++) {",
            op,
            elem,
            (car_c, "r"),
            (tot_c, "r"),
            (car_c, "r + 1"),
            &m,
        )?;
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());

        // 3. Each thread rescans its chunk from its carry, straight into the result rows.
        self.scope.clear();
        let sets = self.begin_with_columns(
            &format!("{name}_final"),
            &["n", "chunk"],
            &[("car", elem), ("out", elem)],
        )?;
        let (car_c, out_c) = (&sets[0], &sets[1]);
        let m = self.scope.get(ne).ok_or("the neutral row is not bound")?.w[0].clone();
        self.line("const ull t = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
        self.line("const ull lo = t * chunk;");
        self.line("if (lo < n) {");
        self.depth += 1;
        self.line("const ull hi = lo + chunk < n ? lo + chunk : n;");
        let x = self.apply_index(f, "lo")?;
        let acc = Self::row_view(elem, car_c, "t", &m);
        self.combine_rows_into(op, acc, x, out_c, "lo", &m)?;
        self.line("for (ull i = lo + 1; i < hi; i++) {");
        self.depth += 1;
        let x = self.apply_index(f, "i")?;
        let acc = Self::row_view(elem, out_c, "i - 1", &m);
        self.combine_rows_into(op, acc, x, out_c, "i", &m)?;
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    fn loop_kernel(&mut self, name: &str, f: &Expr) -> R<String> {
        self.begin(name, &["n"])?;
        self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) {");
        self.depth += 1;
        self.apply_index(f, "i")?;
        self.line("accel_arena_reset(&arena);");
        self.depth -= 1;
        self.line("}");
        Ok(self.end())
    }

    /// The struct of a reduction's accumulator.
    fn acc_struct(name: &str, elem: &Type) -> R<String> {
        let kinds = words(elem)?;
        let mut s = format!("\nstruct {name}_acc {{");
        for (k, w) in kinds.iter().enumerate() {
            let _ = write!(s, " {} w{k};", word_cty(*w));
        }
        if kinds.is_empty() {
            s.push_str(" char unused;");
        }
        s.push_str(" };\n");
        Ok(s)
    }

    fn acc_value(elem: &Type, var: &str) -> R<V> {
        let n = words(elem)?.len();
        Ok(V {
            ty: elem.clone(),
            w: (0..n).map(|k| format!("{var}.w{k}")).collect(),
        })
    }

    fn assign_acc(&mut self, var: &str, v: &V) {
        for (k, x) in v.w.iter().enumerate() {
            self.line(&format!("{var}.w{k} = {x};"));
        }
    }

    /// Declares the C++ lambdas `combine(a, b)` and `element(i)` of a reduction or scan,
    /// and the neutral element `ne`, inside the current kernel.
    fn reduction_parts(
        &mut self,
        name: &str,
        element: Option<&Expr>,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
    ) -> R<()> {
        let acc = format!("{name}_acc");
        self.line(&format!(
            "auto combine = [&](const {acc} a, const {acc} b) __attribute__((always_inline)) -> {acc} {{"
        ));
        self.depth += 1;
        let a = Self::acc_value(elem, "a")?;
        let b = Self::acc_value(elem, "b")?;
        let r = self.apply(op, vec![a, b])?;
        self.line(&format!("{acc} r;"));
        self.assign_acc("r", &r);
        self.line("return r;");
        self.depth -= 1;
        self.line("};");
        if let Some(f) = element {
            self.line(&format!(
                "auto element = [&](ull i) __attribute__((always_inline)) -> {acc} {{"
            ));
            self.depth += 1;
            let v = self.apply_index(f, "i")?;
            self.line(&format!("{acc} r;"));
            self.assign_acc("r", &v);
            self.line("return r;");
            self.depth -= 1;
            self.line("};");
        }
        let v = self.expr(ne)?;
        self.line(&format!("{acc} ne;"));
        self.assign_acc("ne", &v);
        Ok(())
    }

    /// An order-keeping tree over `sh[0..blockDim.x]`: neighbours combine left to right;
    /// the block's total ends in `sh[0]`.
    fn ordered_tree(&mut self) {
        self.line("__syncthreads();");
        self.line("for (unsigned s = 1; s < blockDim.x; s *= 2) {");
        self.line("    if (threadIdx.x % (2 * s) == 0 && threadIdx.x + s < blockDim.x) sh[threadIdx.x] = combine(sh[threadIdx.x], sh[threadIdx.x + s]);");
        self.line("    __syncthreads();");
        self.line("}");
    }

    /// A tree over the threads' totals `t` in `sh` for a commutative operator (pairs
    /// half a block apart); the block's total ends in `sh[0]`.
    fn commutative_tree(&mut self) {
        self.line("sh[threadIdx.x] = t;");
        self.line("__syncthreads();");
        self.line("for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {");
        self.line("    if (threadIdx.x < s) sh[threadIdx.x] = combine(sh[threadIdx.x], sh[threadIdx.x + s]);");
        self.line("    __syncthreads();");
        self.line("}");
    }

    /// The kernels of a segmented reduction (see [`LaunchKind::SegReduce`]): `NAME_part`
    /// runs `per_seg` blocks per segment, each over a chunk of it, into `partials`;
    /// `NAME_final` runs a block per segment over its partials, in order.
    fn segment_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        elem: &Type,
        commutative: bool,
    ) -> R<String> {
        let seg = segment_parts(f).ok_or("a segmented reduction")?;
        let s = format!("{name}_s");
        let acc = format!("{s}_acc");
        let mut src = Self::acc_struct(&s, elem)?;
        let prologue = |kg: &mut Self, segment: &str| -> R<()> {
            kg.bind(&seg.param, usize_v(segment.into()))?;
            kg.expr(&Expr::Block {
                stmts: seg.stmts.clone(),
                result: None,
            })?;
            Ok(())
        };
        self.scope.clear();
        self.begin(
            &format!("{name}_part"),
            &["n", "m", "per_seg", "chunk", "partials"],
        )?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.line("const ull seg = blockIdx.x / per_seg;");
        self.line("const ull start = (blockIdx.x % per_seg) * chunk;");
        self.line("const ull end = start + chunk < m ? start + chunk : m;");
        prologue(self, "seg")?;
        self.reduction_parts(&s, Some(&seg.g), &seg.op, &seg.ne, elem)?;
        if commutative {
            self.line(&format!("{acc} t = ne;"));
            self.line("for (ull i = start + threadIdx.x; i < end; i += blockDim.x) { t = combine(t, element(i)); accel_arena_reset(&arena); }");
            self.commutative_tree();
        } else {
            self.fold_part(&acc, "element(i)");
            self.line("sh[threadIdx.x] = t;");
            self.ordered_tree();
        }
        self.line(&format!(
            "if (threadIdx.x == 0) (({acc}*)partials)[blockIdx.x] = sh[0];"
        ));
        src.push_str(&self.end());

        self.scope.clear();
        let cols = self.begin_with_out(
            &format!("{name}_final"),
            &["n", "per_seg", "partials"],
            elem,
        )?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.line("const ull seg = blockIdx.x;");
        prologue(self, "seg")?;
        self.reduction_parts(&s, None, &seg.op, &seg.ne, elem)?;
        self.line(&format!(
            "const {acc}* parts = (const {acc}*)partials + seg * per_seg;"
        ));
        self.line("ull start = 0, end = per_seg;");
        self.fold_part(&acc, "parts[i]");
        self.line("sh[threadIdx.x] = t;");
        self.ordered_tree();
        self.line("if (threadIdx.x == 0) {");
        self.depth += 1;
        let v = Self::acc_value(elem, "sh[0]")?;
        self.store_columns(&v, &cols, "seg");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    /// Each thread folds its contiguous part of the block's chunk `[start, end)`.
    fn fold_part(&mut self, acc: &str, get: &str) {
        self.line("ull per = (end - start + blockDim.x - 1) / blockDim.x;");
        self.line("ull lo = start + threadIdx.x * per;");
        self.line("ull hi = lo + per < end ? lo + per : end;");
        self.line(&format!("{acc} t = ne;"));
        self.line(&format!(
            "for (ull i = lo; i < hi; i++) {{ t = combine(t, {get}); accel_arena_reset(&arena); }}"
        ));
    }

    /// Kernel `NAME_part` of a reduction or scan: each block's total of its elements into
    /// `partials[block]` (grid-stride for a commutative operator, else in order over the
    /// block's chunk).
    fn partials_kernel(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
        commutative: bool,
    ) -> R<String> {
        let acc = format!("{name}_acc");
        self.begin(&format!("{name}_part"), &["n", "chunk", "partials"])?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.reduction_parts(name, Some(f), op, ne, elem)?;
        if commutative && !light(f) {
            self.line(&format!("{acc} t = ne;"));
            self.line("for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < n; i += (ull)gridDim.x * blockDim.x) { t = combine(t, element(i)); accel_arena_reset(&arena); }");
        } else if commutative {
            // Four accumulators: four independent loads in flight per thread.
            self.line(&format!("{acc} t0 = ne, t1 = ne, t2 = ne, t3 = ne;"));
            self.line("const ull stride = (ull)gridDim.x * blockDim.x;");
            self.line("ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x;");
            self.line("for (; i + 3 * stride < n; i += 4 * stride) {");
            self.line("    t0 = combine(t0, element(i)); t1 = combine(t1, element(i + stride));");
            self.line("    t2 = combine(t2, element(i + 2 * stride)); t3 = combine(t3, element(i + 3 * stride));");
            self.line("    accel_arena_reset(&arena);");
            self.line("}");
            self.line("for (; i < n; i += stride) { t0 = combine(t0, element(i)); accel_arena_reset(&arena); }");
            self.line(&format!(
                "{acc} t = combine(combine(t0, t1), combine(t2, t3));"
            ));
        }
        if commutative {
            self.commutative_tree();
        } else {
            self.line("ull start = blockIdx.x * chunk;");
            self.line("ull end = start + chunk < n ? start + chunk : n;");
            self.fold_part(&acc, "element(i)");
            self.line("sh[threadIdx.x] = t;");
            self.ordered_tree();
        }
        self.line(&format!(
            "if (threadIdx.x == 0) (({acc}*)partials)[blockIdx.x] = sh[0];"
        ));
        Ok(self.end())
    }

    fn reduce_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
        commutative: bool,
    ) -> R<String> {
        let acc = format!("{name}_acc");
        let mut src = Self::acc_struct(name, elem)?;
        src.push_str(&self.partials_kernel(name, f, op, ne, elem, commutative)?);
        // The final stage: one block over the partials, in order.
        self.scope.clear();
        self.begin(&format!("{name}_final"), &["count", "partials", "out"])?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.reduction_parts(name, None, op, ne, elem)?;
        self.line(&format!("const {acc}* parts = (const {acc}*)partials;"));
        self.line("ull start = 0, end = count;");
        self.fold_part(&acc, "parts[i]");
        self.line("sh[threadIdx.x] = t;");
        self.ordered_tree();
        self.line("if (threadIdx.x == 0) {");
        self.depth += 1;
        for (k, w) in words(elem)?.into_iter().enumerate() {
            let x = to_word(w, &format!("sh[0].w{k}"));
            self.line(&format!("((ull*)out)[{k}] = {x};"));
        }
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    fn scan_kernels(
        &mut self,
        name: &str,
        f: &Expr,
        op: &Expr,
        ne: &Expr,
        elem: &Type,
    ) -> R<String> {
        let acc = format!("{name}_acc");
        let mut src = Self::acc_struct(name, elem)?;
        // 1. Each block's total.
        src.push_str(&self.partials_kernel(name, f, op, ne, elem, false)?);
        // 2. The carry into each block: an exclusive scan of the totals, in one thread.
        self.scope.clear();
        self.begin(&format!("{name}_carry"), &["count", "partials", "carries"])?;
        self.reduction_parts(name, None, op, ne, elem)?;
        self.line("if (blockIdx.x == 0 && threadIdx.x == 0) {");
        self.line(&format!("    const {acc}* parts = (const {acc}*)partials;"));
        self.line(&format!("    {acc}* out = ({acc}*)carries;"));
        self.line(&format!("    {acc} run = ne;"));
        self.line(
            "    for (ull b = 0; b < count; b++) { out[b] = run; run = combine(run, parts[b]); }",
        );
        self.line("}");
        src.push_str(&self.end());
        // 3. Each thread rescans its part from its carry: the block's carry combined with
        // the totals of the threads before it (an order-keeping Hillis-Steele scan).
        self.scope.clear();
        let cols =
            self.begin_with_out(&format!("{name}_final"), &["n", "chunk", "carries"], elem)?;
        self.line(&format!("__shared__ {acc} sh[{BLOCK}];"));
        self.reduction_parts(name, Some(f), op, ne, elem)?;
        self.line("ull start = blockIdx.x * chunk;");
        self.line("ull end = start + chunk < n ? start + chunk : n;");
        self.fold_part(&acc, "element(i)");
        self.line("sh[threadIdx.x] = t;");
        self.line("__syncthreads();");
        self.line("for (unsigned d = 1; d < blockDim.x; d *= 2) {");
        self.line(&format!(
            "    {acc} v = threadIdx.x >= d ? combine(sh[threadIdx.x - d], sh[threadIdx.x]) : sh[threadIdx.x];"
        ));
        self.line("    __syncthreads();");
        self.line("    sh[threadIdx.x] = v;");
        self.line("    __syncthreads();");
        self.line("}");
        self.line(&format!("{acc} run = (({acc}*)carries)[blockIdx.x];"));
        self.line("if (threadIdx.x > 0) run = combine(run, sh[threadIdx.x - 1]);");
        self.line("for (ull i = lo; i < hi; i++) {");
        self.depth += 1;
        self.line("run = combine(run, element(i));");
        self.line("accel_arena_reset(&arena);");
        let v = Self::acc_value(elem, "run")?;
        self.store_columns(&v, &cols, "i");
        self.depth -= 1;
        self.line("}");
        src.push_str(&self.end());
        Ok(src)
    }

    // ---- patterns ----

    fn bind(&mut self, p: &Pat, v: V) -> R<()> {
        match p {
            Pat::Wild => Ok(()),
            Pat::Bind { name, .. } => {
                let c = self.copy(&v, name)?;
                self.types.insert(name.clone(), v.ty.clone());
                self.scope.insert(name.clone(), c);
                Ok(())
            }
            Pat::Tuple(ps) => {
                for (k, q) in ps.iter().enumerate() {
                    let f = self.field(&v, &k.to_string())?;
                    self.bind(q, f)?;
                }
                Ok(())
            }
            Pat::Record { fields, .. } => {
                for (f, q) in fields {
                    let x = self.field(&v, f)?;
                    self.bind(q, x)?;
                }
                Ok(())
            }
            Pat::Lit { .. } | Pat::Const(_) | Pat::Range { .. } => Ok(()),
            Pat::Or(ps) if ps.iter().all(|q| q.bound_names().is_empty()) => Ok(()),
            Pat::Or(_) => Err(unsupported("`|` patterns that bind names")),
        }
    }

    /// The C condition under which `p` matches `v`.
    fn matches(&mut self, p: &Pat, v: &V) -> R<String> {
        Ok(match p {
            Pat::Wild | Pat::Bind { .. } => "true".into(),
            Pat::Tuple(ps) => {
                let mut cs = Vec::new();
                for (k, q) in ps.iter().enumerate() {
                    let f = self.field(v, &k.to_string())?;
                    cs.push(self.matches(q, &f)?);
                }
                conj(cs)
            }
            Pat::Record { fields, .. } => {
                let mut cs = Vec::new();
                for (f, q) in fields {
                    let x = self.field(v, f)?;
                    cs.push(self.matches(q, &x)?);
                }
                conj(cs)
            }
            Pat::Lit { .. } | Pat::Const(_) => {
                let x = self.pat_value(p, v)?;
                format!("({} == {x})", v.w[0])
            }
            Pat::Range { lo, hi, inclusive } => {
                let l = self.pat_value(lo, v)?;
                let h = self.pat_value(hi, v)?;
                let cmp = if *inclusive { "<=" } else { "<" };
                format!("({} >= {l} && {} {cmp} {h})", v.w[0], v.w[0])
            }
            Pat::Or(ps) => {
                let cs = ps
                    .iter()
                    .map(|q| self.matches(q, v))
                    .collect::<R<Vec<_>>>()?;
                format!("({})", cs.join(" || "))
            }
        })
    }

    /// The value of a literal or constant pattern, at the scrutinee's type.
    fn pat_value(&mut self, p: &Pat, v: &V) -> R<String> {
        let Type::Scalar(s) = v.ty else {
            return Err(unsupported("a literal pattern on a compound value"));
        };
        match p {
            Pat::Lit { negative, lit } => {
                let x = literal_c(&retype(lit, s))?;
                Ok(if *negative {
                    if s.is_float() {
                        format!("(-{x})")
                    } else {
                        format!("accel_neg({x})")
                    }
                } else {
                    x
                })
            }
            Pat::Const(c) => literal_c(
                &constant_lit(c, s).ok_or_else(|| unsupported(format!("the constant `{c}`")))?,
            ),
            _ => Err(unsupported("this pattern")),
        }
    }

    // ---- expressions ----

    fn type_of(&mut self, e: &Expr) -> R<Type> {
        let vars = |v: &str| self.types.get(v).cloned();
        type_of(e, &vars, self.records).map_err(|e| e.to_string())
    }

    fn field(&mut self, v: &V, f: &str) -> R<V> {
        let (ft, off) = layout::field_offset(&v.ty, f)?;
        let n = words(&ft)?.len();
        Ok(V {
            ty: ft,
            w: v.w[off..off + n].to_vec(),
        })
    }

    fn expr(&mut self, e: &Expr) -> R<V> {
        match e {
            Expr::Lit(l) => {
                let s = lit_type(l)?;
                Ok(V::scalar(s, literal_c(l)?))
            }
            Expr::Var(v) => self
                .scope
                .get(v)
                .cloned()
                .ok_or_else(|| format!("`{v}` is not bound in kernel code")),
            Expr::Const(c) => {
                let s = const_type(c).ok_or_else(|| unsupported(format!("the constant `{c}`")))?;
                let l =
                    constant_lit(c, s).ok_or_else(|| unsupported(format!("the constant `{c}`")))?;
                Ok(V::scalar(s, literal_c(&l)?))
            }
            Expr::Tuple(es) | Expr::Array(es) => {
                let vs = es.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                let ty = match e {
                    Expr::Tuple(_) if vs.is_empty() => Type::Unit,
                    Expr::Tuple(_) => Type::Tuple(vs.iter().map(|v| v.ty.clone()).collect()),
                    _ => Type::Array(
                        Box::new(vs.first().map(|v| v.ty.clone()).unwrap_or(Type::Unit)),
                        vs.len(),
                    ),
                };
                Ok(V {
                    ty,
                    w: vs.into_iter().flat_map(|v| v.w).collect(),
                })
            }
            Expr::ArrayRepeat(x, n) => {
                let v = self.expr(x)?;
                let v = self.copy(&v, "rep")?;
                let n = n
                    .literal_usize()
                    .ok_or_else(|| unsupported("`[x; n]` with a length that is not a literal"))?;
                Ok(V {
                    ty: Type::Array(Box::new(v.ty.clone()), n),
                    w: (0..n).flat_map(|_| v.w.clone()).collect(),
                })
            }
            Expr::Record { name, fields } => {
                let decl = match self.records.get(name) {
                    Some(d) => d.clone(),
                    None => {
                        let mut d = Vec::new();
                        for (f, x) in fields {
                            d.push((f.clone(), self.type_of(x)?));
                        }
                        d
                    }
                };
                let mut w = Vec::new();
                for (f, _) in &decl {
                    let x = fields
                        .iter()
                        .find(|(g, _)| g == f)
                        .ok_or_else(|| format!("field `{f}` of `{name}` is missing"))?;
                    w.extend(self.expr(&x.1)?.w);
                }
                Ok(V {
                    ty: Type::Record(name.clone(), decl),
                    w,
                })
            }
            Expr::Field(b, f) => {
                let v = self.expr(b)?;
                self.field(&v, f)
            }
            Expr::Index(b, i) => {
                if let Expr::Method { recv, method, .. } = &**b {
                    if method == "shape" && matches!(self.type_of(recv)?, Type::Tensor(_)) {
                        let t = self.expr(recv)?;
                        // `t.shape()[k]`: one of the tensor's words, no sequence made.
                        let k = self.expr(i)?.w[0].clone();
                        let rank = &t.w[1];
                        self.line(&format!(
                            "if ({k} >= {rank}) accel_fail(err, {FAIL_INDEX}, {k}, {rank});"
                        ));
                        let mut d = "0ULL".to_string();
                        for j in (0..MAX_RANK).rev() {
                            d = format!("({k} == {j} ? {} : {d})", t.w[2 + j]);
                        }
                        return Ok(usize_v(self.let_("ull", "dim", &d)));
                    }
                }
                let v = self.expr(b)?;
                let i = self.expr(i)?;
                self.index(&v, &i.w[0])
            }
            Expr::Slice { seq, lo, hi } => {
                let v = self.expr(seq)?;
                let lo = self.expr(lo)?.w[0].clone();
                let hi = self.expr(hi)?.w[0].clone();
                let Type::Seq(elem) = &v.ty else {
                    return Err(unsupported(format!("slicing {}", v.ty)));
                };
                let ok = self.let_(
                    "bool",
                    "slice_ok",
                    &format!("({lo} <= {hi} && {hi} <= {})", v.w[0]),
                );
                self.line(&format!(
                    "if (!{ok}) accel_fail(err, {FAIL_SLICE}, {lo}, {hi});"
                ));
                let len = self.let_("ull", "slice_len", &format!("{ok} ? {hi} - {lo} : 0"));
                let start = self.let_("ull", "slice_lo", &format!("{ok} ? {lo} : 0"));
                let cols = self.offset_columns(elem, &v.w[1..], &start)?;
                Ok(V {
                    ty: v.ty.clone(),
                    w: [vec![len], cols].concat(),
                })
            }
            Expr::Unary(op, x) => {
                let v = self.expr(x)?;
                let Type::Scalar(s) = v.ty else {
                    return Err(unsupported(format!("`{op:?}` on {}", v.ty)));
                };
                let x = &v.w[0];
                let r = match (op, s) {
                    (UnOp::Not, ScalarType::Bool) => format!("!{x}"),
                    (UnOp::Not, _) => format!("({})~{x}", cty(s)),
                    (UnOp::Neg, s) if s.is_float() => format!("-{x}"),
                    (UnOp::Neg, _) => format!("accel_neg({x})"),
                };
                let t = self.let_(cty(s), "u", &r);
                Ok(V::scalar(s, t))
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
            Expr::Cast(x, t) => {
                let v = self.expr(x)?;
                let (Type::Scalar(from), Type::Scalar(to)) = (&v.ty, t) else {
                    return Err(unsupported(format!("a cast from {} to {t}", v.ty)));
                };
                let c = cast(&v.w[0], *from, *to);
                let r = self.let_(cty(*to), "cast", &c);
                Ok(V::scalar(*to, r))
            }
            Expr::Method { recv, method, args } => {
                let r = self.expr(recv)?;
                let a = args.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                self.method(r, method, a)
            }
            Expr::Assoc { ty, func, args } => {
                if (ty.as_str(), func.as_str()) == ("accel", "same_len") {
                    let n = self.expr(&args[0])?;
                    let m = self.expr(&args[1])?;
                    self.line(&format!(
                        "if ({} != {}) accel_fail(err, {FAIL_LENGTHS}, {}, {});",
                        n.w[0], m.w[0], n.w[0], m.w[0]
                    ));
                    return Ok(n);
                }
                if ScalarType::from_name(ty).is_some() || ty == "cmp" {
                    let (recv, rest) = args
                        .split_first()
                        .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
                    let r = self.expr(recv)?;
                    let a = rest.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                    return self.method(r, func, a);
                }
                Err(unsupported(format!("`{ty}::{func}` in kernel code")))
            }
            Expr::If { cond, then, els } => {
                let c = self.expr(cond)?.w[0].clone();
                let Some(els) = els else {
                    self.line(&format!("if ({c}) {{"));
                    self.depth += 1;
                    self.expr(then)?;
                    self.depth -= 1;
                    self.line("}");
                    return Ok(V::unit());
                };
                let t = self.type_of(then)?;
                let out = self.declare(&t, "if")?;
                self.line(&format!("if ({c}) {{"));
                self.depth += 1;
                let v = self.expr(then)?;
                self.assign_words(&out, &v);
                self.depth -= 1;
                self.line("} else {");
                self.depth += 1;
                let v = self.expr(els)?;
                self.assign_words(&out, &v);
                self.depth -= 1;
                self.line("}");
                Ok(out)
            }
            Expr::Match { scrutinee, arms } => {
                let s = self.expr(scrutinee)?;
                let s = self.copy(&s, "scrut")?;
                bind_types_of(
                    &arms.iter().map(|a| &a.pat).collect::<Vec<_>>(),
                    &s.ty,
                    &mut self.types,
                    self.records,
                )?;
                let t = match arms.first() {
                    Some(a) => self.type_of(&a.body)?,
                    None => Type::Unit,
                };
                let out = self.declare(&t, "match")?;
                let done = self.let_("bool", "matched", "false");
                for arm in arms {
                    let c = self.matches(&arm.pat, &s)?;
                    self.line(&format!("if (!{done} && {c}) {{"));
                    self.depth += 1;
                    self.bind(&arm.pat, s.clone())?;
                    let guard = match &arm.guard {
                        Some(g) => self.expr(g)?.w[0].clone(),
                        None => "true".into(),
                    };
                    self.line(&format!("if ({guard}) {{"));
                    self.depth += 1;
                    self.line(&format!("{done} = true;"));
                    let v = self.expr(&arm.body)?;
                    self.assign_words(&out, &v);
                    self.depth -= 1;
                    self.line("}");
                    self.depth -= 1;
                    self.line("}");
                }
                Ok(out)
            }
            Expr::Block { stmts, result } => {
                for s in stmts {
                    match s {
                        Stmt::Let { pat, init, ty } => match init {
                            Some(x) => {
                                let v = self.expr(x)?;
                                self.bind(pat, v)?;
                            }
                            None => {
                                let Pat::Bind { name, .. } = pat else {
                                    return Err(unsupported("a `let` pattern without a value"));
                                };
                                let v = self.declare(ty, name)?;
                                self.types.insert(name.clone(), ty.clone());
                                self.scope.insert(name.clone(), v);
                            }
                        },
                        Stmt::Expr(x) => {
                            self.expr(x)?;
                        }
                    }
                }
                match result {
                    Some(r) => self.expr(r),
                    None => Ok(V::unit()),
                }
            }
            Expr::Assign { target, value } => {
                let v = self.expr(value)?;
                self.assign(target, &v)?;
                Ok(V::unit())
            }
            Expr::For { var, lo, hi, body } => {
                let lo = self.expr(lo)?;
                let hi = self.expr(hi)?;
                let Type::Scalar(s) = lo.ty else {
                    return Err(unsupported("a `for` over a non-integer range"));
                };
                let i = self.fresh(var);
                let end = self.let_(cty(s), "end", &hi.w[0]);
                self.line(&format!(
                    "for ({} {i} = {}; {i} < {end}; {i}++) {{",
                    cty(s),
                    lo.w[0]
                ));
                self.depth += 1;
                let iv = V::scalar(s, i);
                self.bind(&Pat::bind(var), iv)?;
                self.expr(body)?;
                self.depth -= 1;
                self.line("}");
                Ok(V::unit())
            }
            Expr::While { cond, body } => {
                self.line("while (true) {");
                self.depth += 1;
                let c = self.expr(cond)?.w[0].clone();
                self.line(&format!("if (!({c})) break;"));
                self.expr(body)?;
                self.depth -= 1;
                self.line("}");
                Ok(V::unit())
            }
            Expr::Par { op, args, .. } => self.nested(*op, args),
            // `vec![a, b]` and `vec![x; n]` in the thread's arena, like a nested `create`.
            Expr::Seq(es) if !es.is_empty() => {
                let vs = es.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
                let elem = vs[0].ty.clone();
                let (n, cols) = self.arena_columns(&elem, &format!("{}ULL", vs.len()))?;
                for (k, v) in vs.iter().enumerate() {
                    self.line(&format!("if ({k}ULL < {n}) {{"));
                    self.store_columns(v, &cols, &format!("{k}"));
                    self.line("}");
                }
                Ok(V {
                    ty: Type::Seq(Box::new(elem)),
                    w: [vec![n], cols].concat(),
                })
            }
            Expr::SeqRepeat(x, count) => {
                let v = self.expr(x)?;
                let v = self.copy(&v, "fill")?;
                let count = self.expr(count)?.w[0].clone();
                let (n, cols) = self.arena_columns(&v.ty, &count)?;
                let j = self.fresh("j");
                self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
                self.store_columns(&v, &cols, &j);
                self.line("}");
                Ok(V {
                    ty: Type::Seq(Box::new(v.ty.clone())),
                    w: [vec![n], cols].concat(),
                })
            }
            Expr::Seq(_) => Err(unsupported("an empty `vec![]` inside a parallel operation")),
            Expr::Lambda { .. }
            | Expr::Call { .. }
            | Expr::FnRef(_)
            | Expr::Apply { .. }
            | Expr::Closure { .. } => Err(unsupported("a function value in kernel code")),
        }
    }

    /// Fresh variables for a value of type `t` (assigned later).
    fn declare(&mut self, t: &Type, base: &str) -> R<V> {
        let mut w = Vec::new();
        for k in words(t)? {
            let v = self.fresh(base);
            let init = match k {
                Word::Ptr(_) => "nullptr",
                Word::Scalar(ScalarType::Bool) => "false",
                Word::Scalar(_) => "0",
            };
            self.line(&format!("{} {v} = {init};", word_cty(k)));
            w.push(v);
        }
        Ok(V { ty: t.clone(), w })
    }

    fn assign_words(&mut self, out: &V, v: &V) {
        for (o, x) in out.w.iter().zip(&v.w) {
            self.line(&format!("{o} = {x};"));
        }
    }

    fn assign(&mut self, target: &Expr, v: &V) -> R<()> {
        match target {
            Expr::Var(_) | Expr::Field(..) => {
                let place = self.expr(target)?;
                self.assign_words(&place, v);
                Ok(())
            }
            Expr::Index(b, i) => {
                let place = self.expr(b)?;
                let Type::Array(elem, n) = &place.ty else {
                    return Err(unsupported(format!(
                        "assigning to an element of {}",
                        place.ty
                    )));
                };
                let i = self.expr(i)?.w[0].clone();
                let k = words(elem)?.len();
                self.line(&format!(
                    "if ({i} >= {n}) accel_fail(err, {FAIL_INDEX}, {i}, {n});"
                ));
                for j in 0..*n {
                    self.line(&format!("if ({i} == {j}) {{"));
                    self.depth += 1;
                    for (o, x) in place.w[j * k..(j + 1) * k].iter().zip(&v.w) {
                        self.line(&format!("{o} = {x};"));
                    }
                    self.depth -= 1;
                    self.line("}");
                }
                Ok(())
            }
            _ => Err(unsupported("this assignment target")),
        }
    }

    /// Columns `cols` of a sequence of `elem`, advanced by `k` elements.
    fn offset_columns(&mut self, elem: &Type, cols: &[String], k: &str) -> R<Vec<String>> {
        match elem {
            Type::Scalar(_) => Ok(vec![format!("({} + {k})", cols[0])]),
            Type::Unit => Ok(vec![]),
            Type::Tuple(_) | Type::Record(..) | Type::Array(..) => {
                let parts = elem.parts();
                let mut out = Vec::new();
                let mut at = 0;
                for p in parts {
                    let n = columns(&p)?.len();
                    out.extend(self.offset_columns(&p, &cols[at..at + n], k)?);
                    at += n;
                }
                Ok(out)
            }
            Type::Seq(inner) => {
                let scaled = format!("({k}) * {}", cols[0]);
                let rest = self.offset_columns(inner, &cols[1..], &scaled)?;
                Ok([vec![cols[0].clone()], rest].concat())
            }
            t => Err(unsupported(format!("sequences of {t}"))),
        }
    }

    /// Element `i` of a sequence or array value (bounds-checked).
    fn index(&mut self, v: &V, i: &str) -> R<V> {
        match &v.ty {
            Type::Seq(elem) => {
                let ok = self.let_("bool", "in_bounds", &format!("{i} < {}", v.w[0]));
                self.line(&format!(
                    "if (!{ok}) accel_fail(err, {FAIL_INDEX}, {i}, {});",
                    v.w[0]
                ));
                let at = self.let_("ull", "at", &format!("{ok} ? {i} : 0"));
                self.element(elem, &v.w[1..], &at, &ok)
            }
            Type::Array(elem, n) => {
                let k = words(elem)?.len();
                self.line(&format!(
                    "if ({i} >= {n}) accel_fail(err, {FAIL_INDEX}, {i}, {n});"
                ));
                let mut w = Vec::new();
                for j in 0..k {
                    // A chain of selects: arrays live in registers.
                    let mut x = v.w[j].clone();
                    for m in (1..*n).rev() {
                        x = format!("({i} == {m} ? {} : {x})", v.w[m * k + j]);
                    }
                    let kinds = words(elem)?;
                    w.push(self.let_(&word_cty(kinds[j]), "elem", &x));
                }
                Ok(V {
                    ty: (**elem).clone(),
                    w,
                })
            }
            t => Err(unsupported(format!("indexing {t}"))),
        }
    }

    /// The element at `at` of columns `cols` of a sequence of `elem`; `ok` says whether the
    /// index was in bounds (reads are skipped when not).
    fn element(&mut self, elem: &Type, cols: &[String], at: &str, ok: &str) -> R<V> {
        match elem {
            Type::Scalar(s) => {
                let x = self.let_(
                    cty(*s),
                    "elem",
                    &format!("{ok} ? {}[{at}] : ({})0", cols[0], cty(*s)),
                );
                Ok(V::scalar(*s, x))
            }
            Type::Unit => Ok(V::unit()),
            Type::Tuple(_) | Type::Record(..) | Type::Array(..) => {
                let parts = elem.parts();
                let mut w = Vec::new();
                let mut k = 0;
                for p in parts {
                    let n = columns(&p)?.len();
                    w.extend(self.element(&p, &cols[k..k + n], at, ok)?.w);
                    k += n;
                }
                Ok(V {
                    ty: elem.clone(),
                    w,
                })
            }
            Type::Seq(inner) => {
                let len = self.let_("ull", "row_len", &format!("{ok} ? {} : 0", cols[0]));
                let scaled = format!("({at}) * {}", cols[0]);
                let rest = self.offset_columns(inner, &cols[1..], &scaled)?;
                Ok(V {
                    ty: elem.clone(),
                    w: [vec![len], rest].concat(),
                })
            }
            t => Err(unsupported(format!("sequences of {t}"))),
        }
    }

    /// Columns for `n` elements of `elem` in the thread's arena: the length (0 when out of
    /// memory, which is recorded as a failure) and the column pointers.
    fn arena_columns(&mut self, elem: &Type, n: &str) -> R<(String, Vec<String>)> {
        if !is_flat(elem) {
            return Err(unsupported(format!(
                "a sequence of {elem} made inside a parallel operation"
            )));
        }
        let n = self.let_("ull", "len", n);
        let mut cols = Vec::new();
        for c in columns(elem)? {
            let Word::Ptr(s) = c else {
                return Err("a column that is not a pointer".into());
            };
            let ty = cty(s);
            cols.push(self.let_(
                &format!("{ty}*"),
                "col",
                &format!("({ty}*)accel_arena_alloc(&arena, {n} * sizeof({ty}), err)"),
            ));
        }
        for c in &cols {
            self.line(&format!("if ({c} == nullptr) {n} = 0;"));
        }
        Ok((n, cols))
    }

    /// A parallel operation inside a kernel: a sequential loop.
    fn nested(&mut self, op: ParOp, args: &[Expr]) -> R<V> {
        match op {
            ParOp::Reduce | ParOp::Scan => {
                let ne = self.expr(&args[1])?;
                let acc = self.copy(&ne, "acc")?;
                // The input: a delayed array (its closure applied per index) or a value.
                let (n, delayed, value) = match &args[2] {
                    Expr::Par {
                        op: ParOp::Create,
                        args: c,
                        ..
                    } => (self.expr(&c[0])?.w[0].clone(), Some(c[1].clone()), None),
                    xs => {
                        let v = self.expr(xs)?;
                        if !matches!(v.ty, Type::Seq(_)) {
                            return Err(unsupported(format!("a reduce over {}", v.ty)));
                        }
                        (v.w[0].clone(), None, Some(v))
                    }
                };
                // A scan's prefixes go to the arena.
                let out = if op == ParOp::Scan {
                    Some(self.arena_columns(&acc.ty, &n)?)
                } else {
                    None
                };
                let n = out.as_ref().map_or(n, |(len, _)| len.clone());
                let j = self.fresh("j");
                self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
                self.depth += 1;
                let x = match (&delayed, &value) {
                    (Some(f), _) => self.apply_index(f, &j)?,
                    (_, Some(v)) => self.index(v, &j)?,
                    _ => unreachable!("an input is delayed or a value"),
                };
                let r = self.apply(&args[0], vec![acc.clone(), x])?;
                self.assign_words(&acc, &r);
                if let Some((_, cols)) = &out {
                    self.store_columns(&acc, cols, &j);
                }
                self.depth -= 1;
                self.line("}");
                Ok(match out {
                    Some((len, cols)) => V {
                        ty: Type::Seq(Box::new(acc.ty)),
                        w: [vec![len], cols].concat(),
                    },
                    None => acc,
                })
            }
            ParOp::ParallelLoop => {
                let n = self.expr(&args[0])?.w[0].clone();
                let j = self.fresh("j");
                self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
                self.depth += 1;
                self.apply_index(&args[1], &j)?;
                self.depth -= 1;
                self.line("}");
                Ok(V::unit())
            }
            ParOp::Flatten => {
                let v = self.expr(&args[0])?;
                let Type::Seq(row) = &v.ty else {
                    return Err(unsupported(format!("flatten of {}", v.ty)));
                };
                let Type::Seq(_) = **row else {
                    return Err(unsupported(format!("flatten of {}", v.ty)));
                };
                let len = self.let_("ull", "flat_len", &format!("{} * {}", v.w[0], v.w[1]));
                Ok(V {
                    ty: (**row).clone(),
                    w: [vec![len], v.w[2..].to_vec()].concat(),
                })
            }
            ParOp::Create => {
                let t = self.type_of(&Expr::par(op, args.to_vec()))?;
                let Type::Seq(elem) = &t else {
                    return Err("create of a non-sequence".into());
                };
                let n = self.expr(&args[0])?.w[0].clone();
                let (n, cols) = self.arena_columns(elem, &n)?;
                let j = self.fresh("j");
                self.line(&format!("for (ull {j} = 0; {j} < {n}; {j}++) {{"));
                self.depth += 1;
                let v = self.apply_index(&args[1], &j)?;
                self.store_columns(&v, &cols, &j);
                self.depth -= 1;
                self.line("}");
                Ok(V {
                    ty: t.clone(),
                    w: [vec![n], cols].concat(),
                })
            }
            op => Err(unsupported(format!(
                "a `{}` that makes a sequence inside a parallel operation",
                op.name()
            ))),
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<V> {
        if matches!(op, BinOp::And | BinOp::Or) {
            // Short-circuit: the right operand may index out of bounds when the left decides.
            let l = self.expr(a)?.w[0].clone();
            let out = self.let_("bool", "logic", &l);
            let test = if op == BinOp::And {
                out.clone()
            } else {
                format!("!{out}")
            };
            self.line(&format!("if ({test}) {{"));
            self.depth += 1;
            let r = self.expr(b)?.w[0].clone();
            self.line(&format!("{out} = {r};"));
            self.depth -= 1;
            self.line("}");
            return Ok(V::scalar(ScalarType::Bool, out));
        }
        let x = self.expr(a)?;
        let y = self.expr(b)?;
        let Type::Scalar(s) = x.ty else {
            if matches!(op, BinOp::Eq | BinOp::Ne) && x.w.len() == y.w.len() {
                let eq = conj(
                    x.w.iter()
                        .zip(&y.w)
                        .map(|(p, q)| format!("({p} == {q})"))
                        .collect(),
                );
                let r = if op == BinOp::Eq {
                    eq
                } else {
                    format!("!{eq}")
                };
                let v = self.let_("bool", "eq", &r);
                return Ok(V::scalar(ScalarType::Bool, v));
            }
            return Err(unsupported(format!("`{}` on {}", op.symbol(), x.ty)));
        };
        let (p, q) = (&x.w[0], &y.w[0]);
        let int = !s.is_float() && s != ScalarType::Bool;
        let min = match s {
            ScalarType::I32 => "(int)0x80000000",
            ScalarType::I64 => "(long long)0x8000000000000000ULL",
            _ => "0",
        };
        let (r, rt) = match op {
            BinOp::Add if int => (format!("accel_add({p}, {q})"), s),
            BinOp::Sub if int => (format!("accel_sub({p}, {q})"), s),
            BinOp::Mul if int => (format!("accel_mul({p}, {q})"), s),
            BinOp::Div if int => (format!("accel_div<{}>({p}, {q}, {min}, err)", cty(s)), s),
            BinOp::Rem if int => (format!("accel_rem<{}>({p}, {q}, {min}, err)", cty(s)), s),
            BinOp::Rem => (
                format!(
                    "{}({p}, {q})",
                    if s == ScalarType::F32 {
                        "fmodf"
                    } else {
                        "fmod"
                    }
                ),
                s,
            ),
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {
                (format!("{p} {} {q}", op.symbol()), s)
            }
            BinOp::Shl => (format!("accel_shl({p}, (ull)({q}))"), s),
            BinOp::Shr => (format!("accel_shr({p}, (ull)({q}))"), s),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                (format!("({})({p} {} {q})", cty(s), op.symbol()), s)
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                (format!("{p} {} {q}", op.symbol()), ScalarType::Bool)
            }
            BinOp::And | BinOp::Or => unreachable!("handled above"),
        };
        let v = self.let_(cty(rt), "bin", &r);
        Ok(V::scalar(rt, v))
    }

    fn method(&mut self, r: V, method: &str, a: Vec<V>) -> R<V> {
        match &r.ty {
            Type::Seq(_) => {
                return match method {
                    "len" => Ok(usize_v(r.w[0].clone())),
                    "is_empty" => {
                        let v = self.let_("bool", "empty", &format!("{} == 0", r.w[0]));
                        Ok(V::scalar(ScalarType::Bool, v))
                    }
                    "to_vec" => Ok(r),
                    m => Err(unsupported(format!("`.{m}()` on a sequence"))),
                }
            }
            Type::Array(_, n) if method == "len" => return Ok(usize_v(format!("{n}ULL"))),
            Type::Tensor(_) => return self.tensor_method(&r, method, &a),
            _ => {}
        }
        let Type::Scalar(s) = r.ty else {
            return Err(unsupported(format!("`.{method}()` on {}", r.ty)));
        };
        let x = r.w[0].clone();
        let arg = |k: usize| -> R<String> {
            a.get(k)
                .map(|v| v.w[0].clone())
                .ok_or_else(|| format!("`.{method}()` needs {} argument(s)", k + 1))
        };
        let bool_result = |g: &mut Self, c: String| {
            let v = g.let_("bool", method, &c);
            Ok(V::scalar(ScalarType::Bool, v))
        };
        if s.is_float() {
            let f = |name: &str| {
                if s == ScalarType::F32 {
                    format!("{name}f")
                } else {
                    name.to_string()
                }
            };
            let t = cty(s);
            let c = match method {
                "sqrt" | "exp" | "exp2" | "log10" | "log2" | "sin" | "cos" | "tan" | "asin"
                | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh" | "acosh" | "atanh"
                | "cbrt" | "floor" | "ceil" | "trunc" | "round" => {
                    format!("{}({x})", f(method))
                }
                "ln" => format!("{}({x})", f("log")),
                "exp_m1" => format!("{}({x})", f("expm1")),
                "ln_1p" => format!("{}({x})", f("log1p")),
                "abs" => format!("{}({x})", f("fabs")),
                "powf" => format!("{}({x}, {})", f("pow"), arg(0)?),
                "powi" => format!("{}({x}, ({t})({}))", f("pow"), arg(0)?),
                "atan2" => format!("{}({x}, {})", f("atan2"), arg(0)?),
                "hypot" => format!("{}({x}, {})", f("hypot"), arg(0)?),
                "log" => format!("{}({x}) / {}({})", f("log"), f("log"), arg(0)?),
                "min" => format!("{}({x}, {})", f("fmin"), arg(0)?),
                "max" => format!("{}({x}, {})", f("fmax"), arg(0)?),
                "mul_add" => format!("{}({x}, {}, {})", f("fma"), arg(0)?, arg(1)?),
                "recip" => format!("({t})1 / {x}"),
                "fract" => format!("{x} - {}({x})", f("trunc")),
                "signum" => format!("isnan({x}) ? {x} : {}(({t})1, {x})", f("copysign")),
                "to_degrees" => format!("{x} * ({t})(180.0 / 3.14159265358979323846)"),
                "to_radians" => format!("{x} * ({t})(3.14159265358979323846 / 180.0)"),
                "clamp" => {
                    let (lo, hi) = (arg(0)?, arg(1)?);
                    format!("{x} < {lo} ? {lo} : ({x} > {hi} ? {hi} : {x})")
                }
                "is_nan" => return bool_result(self, format!("isnan({x})")),
                "is_finite" => return bool_result(self, format!("isfinite({x})")),
                "is_infinite" => return bool_result(self, format!("isinf({x})")),
                "sin_cos" => {
                    let sn = self.let_(t, "sin", &format!("{}({x})", f("sin")));
                    let cs = self.let_(t, "cos", &format!("{}({x})", f("cos")));
                    return Ok(V {
                        ty: Type::Tuple(vec![r.ty.clone(), r.ty.clone()]),
                        w: vec![sn, cs],
                    });
                }
                m => return Err(unsupported(format!("`.{m}()` on {}", s.name()))),
            };
            let v = self.let_(t, method, &c);
            return Ok(V::scalar(s, v));
        }
        let t = cty(s);
        let wide = bits(s) == 64;
        let c = match method {
            "abs" if signed(s) => format!("{x} < 0 ? accel_neg({x}) : {x}"),
            "abs" => x.clone(),
            "min" => format!("{x} < {0} ? {x} : {0}", arg(0)?),
            "max" => format!("{x} > {0} ? {x} : {0}", arg(0)?),
            "wrapping_add" => format!("accel_add({x}, {})", arg(0)?),
            "wrapping_sub" => format!("accel_sub({x}, {})", arg(0)?),
            "wrapping_mul" => format!("accel_mul({x}, {})", arg(0)?),
            "wrapping_neg" => format!("accel_neg({x})"),
            "pow" => format!("accel_pow({x}, (unsigned)({}))", arg(0)?),
            "count_ones" | "leading_zeros" | "trailing_zeros" => {
                let c = match (method, wide) {
                    ("count_ones", false) => format!("(unsigned)__popc((unsigned){x})"),
                    ("count_ones", true) => format!("(unsigned)__popcll((ull){x})"),
                    ("leading_zeros", false) => format!("(unsigned)__clz((int){x})"),
                    ("leading_zeros", true) => format!("(unsigned)__clzll((long long){x})"),
                    (_, false) => format!("accel_tz32((unsigned){x})"),
                    (_, true) => format!("accel_tz64((ull){x})"),
                };
                let v = self.let_("unsigned", method, &c);
                return Ok(V::scalar(ScalarType::U32, v));
            }
            "is_multiple_of" => {
                let y = arg(0)?;
                return bool_result(
                    self,
                    format!("{y} == 0 ? {x} == 0 : ({x} % ({y} == 0 ? 1 : {y})) == 0"),
                );
            }
            m => return Err(unsupported(format!("`.{m}()` on {}", s.name()))),
        };
        let v = self.let_(t, method, &c);
        Ok(V::scalar(s, v))
    }

    fn tensor_method(&mut self, t: &V, method: &str, a: &[V]) -> R<V> {
        let Type::Tensor(elem) = &t.ty else {
            unreachable!("a tensor")
        };
        let Type::Scalar(s) = **elem else {
            return Err(unsupported("tensors of compound elements"));
        };
        match method {
            "rank" => Ok(usize_v(t.w[1].clone())),
            "len" => {
                let v = self.let_(
                    "ull",
                    "tensor_len",
                    &format!(
                        "{1} > 0 ? {0} : 0",
                        (0..MAX_RANK)
                            .map(|k| t.w[2 + k].clone())
                            .collect::<Vec<_>>()
                            .join(" * "),
                        t.w[1]
                    ),
                );
                Ok(usize_v(v))
            }
            "get" | "set" => {
                let idx = a
                    .first()
                    .ok_or_else(|| format!("`.{method}()` needs an index"))?;
                let coords = idx.w.len();
                let rank = &t.w[1];
                let ok = self.let_("bool", "tensor_ok", &format!("{rank} == {coords}"));
                self.line(&format!(
                    "if (!{ok}) accel_fail(err, {FAIL_RANK}, {coords}, {rank});"
                ));
                let flat = self.let_("ull", "flat", "0");
                for (k, i) in idx.w.iter().enumerate() {
                    let dim = &t.w[2 + k];
                    self.line(&format!(
                        "if ({i} >= {dim}) {{ accel_fail(err, {FAIL_INDEX}, {i}, {dim}); {ok} = false; }}"
                    ));
                    self.line(&format!("{flat} = {flat} * {dim} + {i};"));
                }
                if method == "get" {
                    let v = self.let_(
                        cty(s),
                        "tget",
                        &format!("{ok} ? {}[{flat}] : ({})0", t.w[0], cty(s)),
                    );
                    Ok(V::scalar(s, v))
                } else {
                    let value = a.get(1).ok_or("`.set()` needs a value")?.w[0].clone();
                    self.line(&format!("if ({ok}) {}[{flat}] = {value};", t.w[0]));
                    Ok(V::unit())
                }
            }
            "shape" => {
                // A shape as a sequence needs memory: the dimensions copied to the arena.
                let usize_ty = Type::Scalar(ScalarType::Usize);
                let (n, cols) = self.arena_columns(&usize_ty, &t.w[1])?;
                for k in 0..MAX_RANK {
                    self.line(&format!(
                        "if ({k} < {n}) {}[{k}] = {};",
                        cols[0],
                        t.w[2 + k]
                    ));
                }
                Ok(V {
                    ty: Type::Seq(Box::new(usize_ty)),
                    w: [vec![n], cols].concat(),
                })
            }
            m => Err(unsupported(format!("`.{m}()` on a tensor in kernel code"))),
        }
    }
}

/// A one-parameter closure `|i| { lets…; e }` split into its parameter, the `let`s (of
/// nested blocks too) and its final expression `e`.
fn closure_parts(f: &Expr) -> Option<(Pat, Vec<Stmt>, &Expr)> {
    let Expr::Lambda { params, body } = f else {
        return None;
    };
    let param = params.first()?.0.clone();
    let mut stmts = Vec::new();
    let mut e: &Expr = body;
    while let Expr::Block {
        stmts: s,
        result: Some(r),
    } = e
    {
        stmts.extend(s.iter().cloned());
        e = r;
    }
    Some((param, stmts, e))
}

/// A row-producing closure `|i| { lets…; create(m, g) }` split into its parameter, the
/// `let`s, the row length and the row's closure.
fn row_parts(f: &Expr) -> Option<(Pat, Vec<Stmt>, Expr, Expr)> {
    let (param, stmts, e) = closure_parts(f)?;
    let Expr::Par {
        op: ParOp::Create,
        args,
        ..
    } = e
    else {
        return None;
    };
    Some((param, stmts, args[0].clone(), args[1].clone()))
}

/// The parts of `|c| { lets; reduce(op, ne, create(m, g)) }`.
struct Segments {
    param: Pat,
    stmts: Vec<Stmt>,
    op: Expr,
    ne: Expr,
    m: Expr,
    g: Expr,
}

fn segment_parts(f: &Expr) -> Option<Segments> {
    let (param, stmts, e) = closure_parts(f)?;
    let Expr::Par {
        op: ParOp::Reduce,
        args,
        ..
    } = e
    else {
        return None;
    };
    let Expr::Par {
        op: ParOp::Create,
        args: input,
        ..
    } = &args[2]
    else {
        return None;
    };
    Some(Segments {
        param,
        stmts,
        op: args[0].clone(),
        ne: args[1].clone(),
        m: input[0].clone(),
        g: input[1].clone(),
    })
}

/// Whether a closure's body is cheap enough to unroll: no loops, no nested parallel
/// operations.
fn light(f: &Expr) -> bool {
    let mut ok = true;
    f.walk(&mut |e| {
        if matches!(e, Expr::For { .. } | Expr::While { .. } | Expr::Par { .. }) {
            ok = false;
        }
    });
    ok
}

fn bind_types_of(
    pats: &[&Pat],
    t: &Type,
    scope: &mut HashMap<String, Type>,
    records: &HashMap<String, Vec<(String, Type)>>,
) -> R<()> {
    for p in pats {
        bind_pattern(p, t, scope, records).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn cty_of_ptr(w: Word) -> &'static str {
    match w {
        Word::Ptr(s) => cty(s),
        Word::Scalar(_) => "ull",
    }
}

fn conj(cs: Vec<String>) -> String {
    if cs.is_empty() {
        "true".into()
    } else {
        format!("({})", cs.join(" && "))
    }
}

fn lit_type(l: &Lit) -> R<ScalarType> {
    match l {
        Lit::Bool(_) => Ok(ScalarType::Bool),
        Lit::Int(_, Some(s)) | Lit::Float(_, Some(s)) => Ok(*s),
        _ => Err("an untyped literal".into()),
    }
}

/// A literal at another scalar type (patterns take the scrutinee's type).
fn retype(l: &Lit, s: ScalarType) -> Lit {
    match l {
        Lit::Int(v, _) if s.is_float() => Lit::Float(*v as f64, Some(s)),
        Lit::Int(v, _) => Lit::Int(*v, Some(s)),
        Lit::Float(v, _) => Lit::Float(*v, Some(s)),
        Lit::Bool(b) => Lit::Bool(*b),
    }
}

/// A literal in C.
fn literal_c(l: &Lit) -> R<String> {
    Ok(match l {
        Lit::Bool(b) => b.to_string(),
        Lit::Int(v, Some(s)) if s.is_float() => literal_c(&Lit::Float(*v as f64, Some(*s)))?,
        Lit::Int(v, Some(s)) => format!("(({}){v}ULL)", cty(*s)),
        Lit::Float(v, Some(ScalarType::F32)) => {
            let x = *v as f32;
            if x.is_finite() {
                format!("{x:?}f")
            } else {
                format!("__uint_as_float({:#x}u)", x.to_bits())
            }
        }
        Lit::Float(v, Some(ScalarType::F64)) => {
            if v.is_finite() {
                format!("{v:?}")
            } else {
                format!("__longlong_as_double({:#x}LL)", v.to_bits())
            }
        }
        Lit::Float(v, Some(s)) => literal_c(&Lit::Int(*v as u64, Some(*s)))?,
        _ => return Err("an untyped literal".into()),
    })
}

/// Rust's `as` between scalar types.
fn cast(x: &str, from: ScalarType, to: ScalarType) -> String {
    use ScalarType::*;
    if from == to {
        return x.to_string();
    }
    if from.is_float() && !to.is_float() && to != Bool {
        // The `_rz` conversions saturate and map NaN to 0, as `as` does.
        let f = if from == F32 { "float" } else { "double" };
        let i = match to {
            I32 => "int",
            U32 => "uint",
            I64 => "ll",
            _ => "ull",
        };
        return format!("__{f}2{i}_rz({x})");
    }
    if from == Bool {
        return format!("({})({x} ? 1 : 0)", cty(to));
    }
    format!("({})({x})", cty(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(body: &Expr, captures: &[(String, Type)], result: &Type) -> R<Program> {
        generate(&FrontEnd {
            fused: body.clone(),
            captures: captures.to_vec(),
            result: result.clone(),
        })
    }

    fn lam(params: &[&str], body: Expr) -> Expr {
        Expr::Lambda {
            params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
            body: Box::new(body),
        }
    }

    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn values_have_the_cpu_backends_word_layout() {
        let f32s = Type::Seq(Box::new(Type::Scalar(ScalarType::F32)));
        assert_eq!(
            words(&f32s).unwrap(),
            vec![Word::Scalar(ScalarType::Usize), Word::Ptr(ScalarType::F32)]
        );
        let rows = Type::Seq(Box::new(Type::Seq(Box::new(Type::Tuple(vec![
            Type::Scalar(ScalarType::I32),
            Type::Scalar(ScalarType::Bool),
        ])))));
        assert_eq!(
            words(&rows).unwrap(),
            vec![
                Word::Scalar(ScalarType::Usize),
                Word::Scalar(ScalarType::Usize),
                Word::Ptr(ScalarType::I32),
                Word::Ptr(ScalarType::Bool)
            ]
        );
        let t = Type::Tensor(Box::new(Type::Scalar(ScalarType::F64)));
        assert_eq!(words(&t).unwrap().len(), 2 + MAX_RANK);
    }

    #[test]
    fn literals_and_casts_follow_rust() {
        assert_eq!(
            literal_c(&Lit::Float(1.5, Some(ScalarType::F32))).unwrap(),
            "1.5f"
        );
        assert_eq!(
            literal_c(&Lit::Float(f64::INFINITY, Some(ScalarType::F32))).unwrap(),
            "__uint_as_float(0x7f800000u)"
        );
        assert_eq!(
            literal_c(&Lit::Int(7, Some(ScalarType::I64))).unwrap(),
            "((long long)7ULL)"
        );
        assert_eq!(
            cast("x", ScalarType::F32, ScalarType::I32),
            "__float2int_rz(x)"
        );
        assert_eq!(
            cast("x", ScalarType::F64, ScalarType::U64),
            "__double2ull_rz(x)"
        );
        assert_eq!(
            cast("b", ScalarType::Bool, ScalarType::I32),
            "(int)(b ? 1 : 0)"
        );
        assert_eq!(cast("x", ScalarType::I64, ScalarType::U32), "(unsigned)(x)");
    }

    #[test]
    fn top_level_operations_become_launches_and_the_rest_stays_on_the_host() {
        // let s = reduce(+, 0.0, xs); s * 2.0
        let f32_ = Type::Scalar(ScalarType::F32);
        let xs = Type::Seq(Box::new(f32_.clone()));
        let mut op = lam(&["a", "b"], bin(BinOp::Add, Expr::var("a"), Expr::var("b")));
        if let Expr::Lambda { params, .. } = &mut op {
            for p in params.iter_mut() {
                p.1 = f32_.clone();
            }
        }
        let two = Expr::Lit(Lit::Float(2.0, Some(ScalarType::F32)));
        let zero = Expr::Lit(Lit::Float(0.0, Some(ScalarType::F32)));
        let body = Expr::Block {
            stmts: vec![Stmt::Let {
                pat: Pat::bind("s"),
                ty: f32_.clone(),
                init: Some(Expr::par(ParOp::Reduce, vec![op, zero, Expr::var("xs")])),
            }],
            result: Some(Box::new(bin(BinOp::Mul, Expr::var("s"), two))),
        };
        let p = lowered(&body, &[("xs".into(), xs.clone())], &f32_).unwrap();
        assert_eq!(p.launches.len(), 1);
        assert_eq!(
            p.launches[0].kernel_names(),
            vec!["accel_k0_part", "accel_k0_final"]
        );
        assert_eq!(p.launches[0].free, vec![("xs".to_string(), xs)]);
        assert!(matches!(
            p.launches[0].kind,
            LaunchKind::Reduce {
                commutative: true,
                ..
            }
        ));
        let Expr::Block { stmts, .. } = &p.host else {
            panic!("a block")
        };
        let Stmt::Let {
            init: Some(Expr::Call { func, .. }),
            ..
        } = &stmts[0]
        else {
            panic!("a launch: {:?}", p.host)
        };
        assert_eq!(func, "accel::launch#0");
        assert!(p.source.contains("extern \"C\" __global__ void accel_k0_part(ull p0, ull p1, ull n, ull chunk, ull partials, ull err_word)"));
    }

    #[test]
    fn what_is_not_supported_yet_is_named() {
        // A result nested three levels deep.
        let usize_ = Type::Scalar(ScalarType::Usize);
        let seq = |t: &Type| Type::Seq(Box::new(t.clone()));
        let n = || Expr::Lit(Lit::Int(2, Some(ScalarType::Usize)));
        let typed = |name: &str, body: Expr| {
            let mut f = lam(&[name], body);
            if let Expr::Lambda { params, .. } = &mut f {
                params[0].1 = Type::Scalar(ScalarType::Usize);
            }
            f
        };
        let inner = Expr::par(ParOp::Create, vec![n(), typed("k", Expr::var("k"))]);
        let middle = Expr::par(ParOp::Create, vec![n(), typed("j", inner)]);
        let body = Expr::par(ParOp::Create, vec![n(), typed("i", middle)]);
        let result = seq(&seq(&seq(&usize_)));
        assert_eq!(
            lowered(&body, &[], &result).unwrap_err(),
            "the cuda backend cannot compile a parallel operation producing a sequence of [[usize]] yet"
        );
    }
}
