//! The kernel generator's state (the function context of CUDA C generation): the kernel
//! being written, the values in scope ([`V`]: a type and its words as C expressions),
//! kernel signatures from the parameters each kernel declares once ([`KernelParams`]),
//! and the pieces reductions share (accumulator structs, trees in shared memory).

use crate::backend::failure::FailureKind;
use crate::backend::layout::{self, Word};
use crate::cuda::c::{cty_of_ptr, from_word, word_cty};
use accel_ir::passes::typecheck::type_of;
use accel_ir::{Expr, ScalarType, Type};
use std::collections::HashMap;
use std::fmt::Write;

/// What code generation gives: a value, or why the construct cannot be compiled.
pub(super) type R<T> = Result<T, String>;

/// Threads per block of every kernel.
pub const BLOCK: u32 = 256;

/// "the cuda backend cannot compile {what} yet".
pub(super) fn unsupported(what: impl std::fmt::Display) -> String {
    format!("the cuda backend cannot compile {what} yet")
}

/// The words of a value of type `t` (see [`layout`]).
pub fn words(t: &Type) -> R<Vec<Word>> {
    layout::words(t).map_err(unsupported)
}

/// The column words of a sequence of `e`.
pub fn columns(e: &Type) -> R<Vec<Word>> {
    layout::columns(e).map_err(unsupported)
}

/// The failure kinds kernels record (the codes every backend reports).
pub(super) const FAIL_INDEX: u32 = FailureKind::Index.code();
pub(super) const FAIL_SLICE: u32 = FailureKind::Slice.code();
pub(super) const FAIL_RANK: u32 = FailureKind::Rank.code();
pub(super) const FAIL_LENGTHS: u32 = FailureKind::Lengths.code();
pub(super) const FAIL_IRREGULAR: u32 = FailureKind::Irregular.code();
pub(super) const FAIL_ROW_LENGTH: u32 = FailureKind::RowLength.code();

/// A kernel's own parameters, after the words of the host values it reads and before
/// the error word: declared once (with [`kernel_params!`]), read by the generator for the
/// kernel's signature and by the launch for its arguments, so the two cannot disagree.
pub(crate) trait KernelParams {
    /// The kernel's name after its launch's prefix (`_part`; empty for the main kernel).
    const SUFFIX: &'static str;
    /// Its scalar parameters (counts, device pointers), in order.
    const SCALARS: &'static [&'static str];
    /// Its column sets, in order: each the columns of a sequence of the launch's element
    /// type, parameters `NAMEk`.
    const COLUMNS: &'static [&'static str];
    /// The argument words, in the order of the parameters.
    fn words(&self) -> Vec<u64>;
}

/// Declares a kernel's parameters: `kernel_params!(Part "_part" { n, chunk; out })`
/// declares struct `Part` with scalar fields `n`, `chunk` and a column set `out`.
macro_rules! kernel_params {
    ($(#[$doc:meta])* $name:ident $suffix:literal { $($scalar:ident),* $(; $($cols:ident),+)? }) => {
        $(#[$doc])*
        pub(crate) struct $name {
            $(pub(crate) $scalar: u64,)*
            $($(pub(crate) $cols: Vec<u64>,)+)?
        }

        impl $crate::cuda::codegen::kernel::KernelParams for $name {
            const SUFFIX: &'static str = $suffix;
            const SCALARS: &'static [&'static str] = &[$(stringify!($scalar)),*];
            const COLUMNS: &'static [&'static str] = &[$($(stringify!($cols)),+)?];
            fn words(&self) -> Vec<u64> {
                #[allow(unused_mut)]
                let mut w = vec![$(self.$scalar),*];
                $($(w.extend_from_slice(&self.$cols);)+)?
                w
            }
        }
    };
}
pub(crate) use kernel_params;

/// A value in kernel code: its type and its words as C expressions.
#[derive(Clone, Debug)]
pub(super) struct V {
    pub(super) ty: Type,
    pub(super) w: Vec<String>,
}

impl V {
    /// `()`: no words.
    pub(super) fn unit() -> V {
        V {
            ty: Type::Unit,
            w: vec![],
        }
    }
    /// A scalar held in the C expression `w`.
    pub(super) fn scalar(s: ScalarType, w: String) -> V {
        V {
            ty: Type::Scalar(s),
            w: vec![w],
        }
    }
}

pub(super) fn usize_v(w: String) -> V {
    V::scalar(ScalarType::Usize, w)
}

/// Generates the code of one launch's kernels.
pub(super) struct KernelGen<'r> {
    pub(super) records: &'r HashMap<String, Vec<(String, Type)>>,
    pub(super) free: Vec<(String, Type)>,
    pub(super) code: String,
    pub(super) depth: usize,
    pub(super) tmp: usize,
    pub(super) scope: HashMap<String, V>,
    pub(super) types: HashMap<String, Type>,
}

impl<'r> KernelGen<'r> {
    pub(super) fn new(
        records: &'r HashMap<String, Vec<(String, Type)>>,
        free: &[(String, Type)],
    ) -> Self {
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

    pub(super) fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.code.push_str("    ");
        }
        self.code.push_str(s);
        self.code.push('\n');
    }

    pub(super) fn fresh(&mut self, base: &str) -> String {
        self.tmp += 1;
        let clean: String = base
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(24)
            .collect();
        format!("{clean}_{}", self.tmp)
    }

    /// Declares a fresh variable holding `init`.
    pub(super) fn let_(&mut self, ty: &str, base: &str, init: &str) -> String {
        let v = self.fresh(base);
        self.line(&format!("{ty} {v} = {init};"));
        v
    }

    /// Copies a value's words into fresh variables (so that later assignments to its
    /// source do not change it), mutable or not.
    pub(super) fn copy(&mut self, v: &V, base: &str) -> R<V> {
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
    pub(super) fn begin(&mut self, name: &str, extra: &[&str]) -> R<()> {
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

    pub(super) fn end(&mut self) -> String {
        self.line("accel_arena_reset(&arena);");
        self.code.push_str("}\n");
        std::mem::take(&mut self.code)
    }

    /// Applies a closure to argument values (binding its parameters).
    pub(super) fn apply(&mut self, f: &Expr, args: Vec<V>) -> R<V> {
        let Expr::Lambda { params, body } = f else {
            return Err(unsupported("a function argument that is not a closure"));
        };
        for ((p, _), a) in params.iter().zip(args) {
            self.bind(p, a)?;
        }
        self.expr(body)
    }

    /// A loop body applied to index `i`.
    pub(super) fn apply_index(&mut self, f: &Expr, i: &str) -> R<V> {
        self.apply(f, vec![usize_v(i.to_string())])
    }

    /// Writes a value's scalar leaves to output columns at index `i`.
    pub(super) fn store_columns(&mut self, v: &V, cols: &[String], i: &str) {
        for (c, x) in cols.iter().zip(&v.w) {
            self.line(&format!("{c}[{i}] = {x};"));
        }
    }

    /// Starts kernel `name` with parameters `params`, then for each `(prefix, elem)` the
    /// columns of a sequence of `elem` (`PREFIXk`), declared as typed pointers
    /// `PREFIXk_c`, whose names it returns, a list per pair.
    pub(super) fn begin_with_columns(
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

    /// Kernel parameters `PREFIXk` for the columns of a sequence of `elem`, and the
    /// declarations of their typed pointers `PREFIXk_c`.
    pub(super) fn named_columns(prefix: &str, elem: &Type) -> R<(Vec<String>, Vec<String>)> {
        let kinds = columns(elem)?;
        let names: Vec<String> = (0..kinds.len()).map(|k| format!("{prefix}{k}")).collect();
        let typed = kinds
            .iter()
            .zip(&names)
            .map(|(k, n)| format!("{}* {n}_c = ({}*){n};", cty_of_ptr(*k), cty_of_ptr(*k)))
            .collect();
        Ok((names, typed))
    }

    /// The struct of a reduction's accumulator.
    pub(super) fn acc_struct(name: &str, elem: &Type) -> R<String> {
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

    pub(super) fn acc_value(elem: &Type, var: &str) -> R<V> {
        let n = words(elem)?.len();
        Ok(V {
            ty: elem.clone(),
            w: (0..n).map(|k| format!("{var}.w{k}")).collect(),
        })
    }

    pub(super) fn assign_acc(&mut self, var: &str, v: &V) {
        for (k, x) in v.w.iter().enumerate() {
            self.line(&format!("{var}.w{k} = {x};"));
        }
    }

    /// Declares the C++ lambdas `combine(a, b)` and `element(i)` of a reduction or scan,
    /// and the neutral element `ne`, inside the current kernel.
    pub(super) fn reduction_parts(
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
    pub(super) fn ordered_tree(&mut self) {
        self.line("__syncthreads();");
        self.line("for (unsigned s = 1; s < blockDim.x; s *= 2) {");
        self.line("    if (threadIdx.x % (2 * s) == 0 && threadIdx.x + s < blockDim.x) sh[threadIdx.x] = combine(sh[threadIdx.x], sh[threadIdx.x + s]);");
        self.line("    __syncthreads();");
        self.line("}");
    }

    /// A tree over the threads' totals `t` in `sh` for a commutative operator (pairs
    /// half a block apart); the block's total ends in `sh[0]`.
    pub(super) fn commutative_tree(&mut self) {
        self.line("sh[threadIdx.x] = t;");
        self.line("__syncthreads();");
        self.line("for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {");
        self.line("    if (threadIdx.x < s) sh[threadIdx.x] = combine(sh[threadIdx.x], sh[threadIdx.x + s]);");
        self.line("    __syncthreads();");
        self.line("}");
    }

    /// Each thread folds its contiguous part of the block's chunk `[start, end)`.
    pub(super) fn fold_part(&mut self, acc: &str, get: &str) {
        self.line("ull per = (end - start + blockDim.x - 1) / blockDim.x;");
        self.line("ull lo = start + threadIdx.x * per;");
        self.line("ull hi = lo + per < end ? lo + per : end;");
        self.line(&format!("{acc} t = ne;"));
        self.line(&format!(
            "for (ull i = lo; i < hi; i++) {{ t = combine(t, {get}); accel_arena_reset(&arena); }}"
        ));
    }

    /// Fresh variables for a value of type `t` (assigned later).
    pub(super) fn declare(&mut self, t: &Type, base: &str) -> R<V> {
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

    pub(super) fn assign_words(&mut self, out: &V, v: &V) {
        for (o, x) in out.w.iter().zip(&v.w) {
            self.line(&format!("{o} = {x};"));
        }
    }

    pub(super) fn type_of(&mut self, e: &Expr) -> R<Type> {
        let vars = |v: &str| self.types.get(v).cloned();
        type_of(e, &vars, self.records).map_err(|e| e.to_string())
    }

    pub(super) fn field(&mut self, v: &V, f: &str) -> R<V> {
        let (ft, off) = layout::field_offset(&v.ty, f)?;
        let n = words(&ft)?.len();
        Ok(V {
            ty: ft,
            w: v.w[off..off + n].to_vec(),
        })
    }

    /// Starts the kernel `prefix` + `P::SUFFIX` with the parameters `P` declares (its
    /// column sets of element type `elem`); returns the typed column pointers of each set.
    pub(super) fn begin_params<P: KernelParams>(
        &mut self,
        prefix: &str,
        elem: &Type,
    ) -> R<Vec<Vec<String>>> {
        let sets: Vec<(&str, &Type)> = P::COLUMNS.iter().map(|c| (*c, elem)).collect();
        self.begin_with_columns(&format!("{prefix}{}", P::SUFFIX), P::SCALARS, &sets)
    }
}
