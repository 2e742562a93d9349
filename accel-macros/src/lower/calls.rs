//! Names, calls and methods: paths to values and constants, calls of `#[accel]`
//! functions and of parallel operations (with their function arguments and closures),
//! methods, and macros (only `vec!` is accelerated code).

use super::*;
use crate::ty::HEAP_TYPES;
use accel_ir::{Expr, ParOp, Pat, ScalarType, Type};
use syn::spanned::Spanned;

/// Iterator methods outside the chains accelerated code supports (`super::chains`).
const ITERATOR_METHODS: &[&str] = &[
    "rev", "position", "skip", "take", "step_by", "flat_map", "chain", "last", "nth", "find",
];
const MUTATING_METHODS: &[&str] = &[
    "push", "pop", "insert", "remove", "extend", "resize", "truncate", "clear", "append", "swap",
    "sort", "reverse",
];
const IO_MACROS: &[&str] = &[
    "println",
    "print",
    "eprintln",
    "eprint",
    "format",
    "write",
    "writeln",
    "dbg",
    "format_args",
    "panic",
    "todo",
    "unimplemented",
    "unreachable",
];

impl Lowerer {
    /// A path used as a value: a local, a captured local, or a constant.
    pub(super) fn path_value(&mut self, p: &syn::ExprPath) -> Expr {
        if p.qself.is_some() {
            return self.error(
                p,
                "qualified paths (`<T as Trait>::X`) are not supported in accelerated code",
            );
        }
        let name = path_string(&p.path);
        if let Some(ident) = p.path.get_ident() {
            let ident = ident.to_string();
            if self.is_local(&ident) {
                return Expr::Var(ident);
            }
            if matches!(ident.as_str(), "None" | "Some" | "Ok" | "Err") {
                return self.error(p, format!("`{ident}` is not supported in accelerated code (no `Option` or `Result`): use a flag or a sentinel value"));
            }
            if starts_uppercase(&ident) && self.captures_allowed {
                // A constant (`const SCALE: i64 = 10;`) at a site is captured like a local.
                return Expr::Var(ident);
            }
            if starts_uppercase(&ident) {
                if let Some(i) = p.path.get_ident() {
                    if !self.consts.iter().any(|c| c == i) {
                        self.consts.push(i.clone());
                    }
                }
            }
            if !starts_uppercase(&ident) {
                if self.captures_allowed {
                    return Expr::Var(ident);
                }
                return self.error(
                    p,
                    format!(
                        "`{ident}` is not a parameter or local of this function: #[accel] functions capture nothing \
                         (pass the value as a parameter), and a function is used by calling it or by passing it \
                         as the function argument of a parallel operation"
                    ),
                );
            }
        }
        Expr::Const(name)
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> Expr {
        let syn::Expr::Path(fp) = &*c.func else {
            return self.error(
                &c.func,
                "only #[accel] functions and parallel operations can be called in accelerated code",
            );
        };
        if fp.qself.is_some() {
            return self.error(
                fp,
                "qualified paths (`<T as Trait>::f`) are not supported in accelerated code",
            );
        }
        let path = &fp.path;
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let (Some(ident), 1) = (path.get_ident(), segs.len()) {
            let name = ident.to_string();
            if let Some(op) = ParOp::from_name(&name) {
                return self.par(op, c);
            }
            if self.is_local(&name) {
                let args = c.args.iter().map(|a| self.expr(a)).collect();
                return Expr::Apply {
                    func: Box::new(Expr::Var(name)),
                    args,
                };
            }
            if matches!(name.as_str(), "Some" | "Ok" | "Err") {
                return self.error(&c.func, format!("`{name}` is not supported in accelerated code (no `Option` or `Result`): use a flag or a sentinel value"));
            }
            if starts_uppercase(&name) {
                return self.error(&c.func, "tuple structs and enum variants are not supported in accelerated code: use a struct with named fields and #[derive(Accel)]");
            }
            if self.fn_name.as_deref() == Some(name.as_str()) {
                return self.error(&c.func, format!("recursion is not supported in accelerated code: `{name}` calls itself; rewrite it with a `while` loop"));
            }
        }
        let first = segs[0].as_str();
        if segs.len() >= 2
            && (starts_uppercase(first)
                || ScalarType::from_name(first).is_some()
                || first == "std"
                || first == "core")
        {
            return self.assoc(c, &segs);
        }
        let written = self.add_callee(path);
        let args = c.args.iter().map(|a| self.arg(a)).collect();
        Expr::Call {
            func: written,
            args,
            loc: loc(c.func.span()),
        }
    }

    /// An argument of an #[accel] function: closures may be passed.
    pub(super) fn arg(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Closure(c) => self.closure(c),
            e => self.expr(e),
        }
    }

    /// `Tensor::zeros(..)`, `f32::max(a, b)`, `std::cmp::max(a, b)`.
    pub(super) fn assoc(&mut self, c: &syn::ExprCall, segs: &[String]) -> Expr {
        let func = segs.last().cloned().unwrap_or_default();
        let ty = segs[segs.len() - 2].clone();
        let args: Vec<Expr> = c.args.iter().map(|a| self.expr(a)).collect();
        let first = segs[0].as_str();
        let ok = match ty.as_str() {
            "Tensor" => matches!(func.as_str(), "zeros" | "from_vec"),
            "cmp" => matches!(func.as_str(), "max" | "min") && (first == "std" || first == "core"),
            t if ScalarType::from_name(t).is_some() => {
                accel_ir::methods::number_method(&func).is_some()
            }
            _ => false,
        };
        if ok {
            return Expr::Assoc { ty, func, args };
        }
        let message = match ty.as_str() {
            "String" | "str" => crate::ty::NO_STRINGS.to_string(),
            "Vec" => "sequences are built with `create(n, |i| …)` or `map` in accelerated code, not with `Vec`'s functions".to_string(),
            t if HEAP_TYPES.contains(&t) => crate::ty::heap_type_message(t),
            _ if first == "std" || first == "core" => format!("`{}` is not supported in accelerated code", segs.join("::")),
            t => format!("`{t}::{func}` is not supported in accelerated code: call an #[accel] free function instead"),
        };
        self.error(&c.func, message)
    }

    pub(super) fn par(&mut self, op: ParOp, c: &syn::ExprCall) -> Expr {
        let here = loc(c.func.span());
        if c.args.len() != op.arity() {
            let shape = match op {
                ParOp::Map => "map(f, xs)",
                ParOp::Map2 => "map2(f, xs, ys)",
                ParOp::Reduce => "reduce(op, ne, xs)",
                ParOp::Scan => "scan(op, ne, xs)",
                ParOp::Flatten => "flatten(xss)",
                ParOp::Create => "create(n, f)",
                ParOp::ParallelLoop => "parallel_loop(n, f)",
                ParOp::ReduceByIndex => "reduce_by_index(dest, op, ne, is, vs)",
                ParOp::Filter => "filter(p, xs)",
                ParOp::Scatter => "scatter(dest, is, vs)",
            };
            return self.error(
                c,
                format!(
                    "`{}` takes {} argument(s): `{shape}`; found {}",
                    op.name(),
                    op.arity(),
                    c.args.len()
                ),
            );
        }
        self.ops.push((op, here));
        let args = c
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if Some(i) == op.fn_arg() {
                    self.fn_arg(a, op)
                } else {
                    self.expr(a)
                }
            })
            .collect();
        Expr::Par {
            op,
            args,
            loc: here,
        }
    }

    /// The function argument of a parallel operation: a closure, a function parameter, or
    /// the name of an #[accel] function.
    pub(super) fn fn_arg(&mut self, e: &syn::Expr, op: ParOp) -> Expr {
        match e {
            syn::Expr::Closure(c) => self.closure(c),
            syn::Expr::Paren(p) => self.fn_arg(&p.expr, op),
            syn::Expr::Group(g) => self.fn_arg(&g.expr, op),
            syn::Expr::Reference(r) => self.fn_arg(&r.expr, op),
            syn::Expr::Path(p) if p.qself.is_none() => {
                if let Some(f) = number_function(&p.path) {
                    return f;
                }
                if let Some(ident) = p.path.get_ident() {
                    let name = ident.to_string();
                    if self.is_local(&name) {
                        return Expr::Var(name);
                    }
                    if self.fn_name.as_deref() == Some(name.as_str()) {
                        return self.error(p, format!("recursion is not supported in accelerated code: `{name}` passes itself to `{}`", op.name()));
                    }
                }
                let written = self.add_callee(&p.path);
                Expr::FnRef(written)
            }
            syn::Expr::If(_) | syn::Expr::Match(_) => self.error(
                e,
                format!(
                    "an `if` or `match` cannot produce a function in accelerated code: call the chosen function inside a closure, \
                     e.g. `{}(|x| if c {{ f(x) }} else {{ g(x) }}, …)`",
                    op.name()
                ),
            ),
            other => self.error(other, format!("the function argument of `{}` must be a closure or the name of an #[accel] function", op.name())),
        }
    }

    pub(super) fn closure(&mut self, c: &syn::ExprClosure) -> Expr {
        if let Some(a) = &c.asyncness {
            return self.error(a, "`async` closures are not supported in accelerated code");
        }
        if let Some(k) = &c.constness {
            return self.error(k, "`const` closures are not supported in accelerated code");
        }
        self.scoped(|l| {
            let params = c.inputs.iter().map(|p| l.typed_pat(p)).collect();
            let body = l.expr(&c.body);
            Expr::Lambda {
                params,
                body: Box::new(body),
            }
        })
    }

    /// The locals of the enclosing scopes that a lowered closure uses (its captures,
    /// other than the site's captured values, which cannot change inside it).
    pub(super) fn captured_locals(&self, lambda: &Expr) -> Vec<String> {
        let mut bound: Vec<String> = Vec::new();
        let mut used: Vec<String> = Vec::new();
        lambda.walk(&mut |e| match e {
            Expr::Lambda { params, .. } => {
                for (p, _) in params {
                    bound.extend(p.bound_names());
                }
            }
            Expr::Block { stmts, .. } => {
                for st in stmts {
                    if let accel_ir::Stmt::Let { pat, .. } = st {
                        bound.extend(pat.bound_names());
                    }
                }
            }
            Expr::For { var, .. } => bound.push(var.clone()),
            Expr::Var(v) if !used.contains(v) => used.push(v.clone()),
            _ => {}
        });
        used.into_iter()
            .filter(|v| !bound.contains(v) && self.is_local(v))
            .collect()
    }

    /// A pattern with an optional type annotation (closure parameters, `let`).
    pub(super) fn typed_pat(&mut self, p: &syn::Pat) -> (Pat, Type) {
        match p {
            syn::Pat::Type(t) => {
                let ty = match lower_type(&t.ty, &[]) {
                    Ok(ty) => ty,
                    Err(e) => {
                        self.errors.push(e);
                        Type::Infer
                    }
                };
                (self.pat(&t.pat), ty)
            }
            p => (self.pat(p), Type::Infer),
        }
    }

    pub(super) fn method(&mut self, m: &syn::ExprMethodCall) -> Expr {
        if let Some(e) = self.in_place(m) {
            return e;
        }
        if let Some(e) = self.byte_class(m).or_else(|| self.range_contains(m)) {
            return e;
        }
        let name = m.method.to_string();
        // `x.min(y)` is a number's method; `xs.iter().min()` a chain's.
        let number_method = matches!(name.as_str(), "min" | "max") && m.args.len() == 1;
        if super::chains::is_chain_method(&name) && !number_method {
            return self.chain(m);
        }
        let recv = self.expr(&m.receiver);
        if name == "clone" && m.args.is_empty() {
            return recv;
        }
        let n = name.as_str();
        if accel_ir::methods::method(n).is_some() {
            let args = m.args.iter().map(|a| self.expr(a)).collect();
            return Expr::Method {
                recv: Box::new(recv),
                method: name,
                args,
            };
        }
        let message = if matches!(
            n,
            "iter_mut" | "par_iter_mut" | "for_each" | "chunks_mut" | "par_chunks_mut"
        ) {
            format!("`.{n}()` is supported in accelerated code only as an in-place form over a captured sequence: `xs.par_iter_mut().for_each(|x| ..)` or `xs.par_chunks_mut(k).for_each(|row| ..)`, with `.enumerate()` or `.zip(ys)` before `.for_each`; to make new values, `map`/`collect` (`let ys: Vec<f32> = accelerate!(xs.par_iter().map(|x| x * 2.0).collect());`)")
        } else if ITERATOR_METHODS.contains(&n) {
            format!("the iterator method `.{n}()` is not supported in accelerated code: iterator chains may use `map`, `zip`, `enumerate`, `filter` and the consumers `sum`, `product`, `fold`, `reduce`, `count`, `all`, `any`, `collect`; otherwise use the parallel operations or a `for i in 0..n` loop")
        } else if MUTATING_METHODS.contains(&n) {
            format!("`.{n}()` is not supported: sequences are immutable in accelerated code; build new ones with `create` or `map` (`Tensor::set` writes tensors)")
        } else if matches!(n, "to_string" | "as_str" | "chars" | "bytes") {
            crate::ty::NO_STRINGS.to_string()
        } else if matches!(n, "unwrap" | "expect" | "unwrap_or" | "ok") {
            "`Option` and `Result` are not supported in accelerated code".to_string()
        } else {
            format!("the method `.{n}()` is not supported in accelerated code")
        };
        self.error(&m.method, message)
    }

    pub(super) fn macro_(&mut self, m: &syn::Macro) -> Expr {
        let name = m
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let message = if name == "accelerate" {
            "nested accelerate! is not supported: the enclosing accelerate! already accelerates this code; remove the inner one".to_string()
        } else if IO_MACROS.contains(&name.as_str()) {
            format!("`{name}!` is not supported in accelerated code: it has no I/O or formatting; compute values and print them after accelerate! returns")
        } else if name == "vec" {
            // A sequence literal: `vec![a, b]` or `vec![x; n]`, parsed as the array it mirrors.
            let tokens = &m.tokens;
            return match syn::parse2::<syn::Expr>(quote::quote!([#tokens])) {
                Ok(syn::Expr::Array(a)) => {
                    Expr::Seq(a.elems.iter().map(|e| self.expr(e)).collect())
                }
                Ok(syn::Expr::Repeat(r)) => {
                    Expr::SeqRepeat(Box::new(self.expr(&r.expr)), Box::new(self.expr(&r.len)))
                }
                _ => self.error(
                    m,
                    "`vec!` takes `vec![a, b, …]` or `vec![value; count]` in accelerated code",
                ),
            };
        } else if name.starts_with("assert") || name.starts_with("debug_assert") {
            format!("`{name}!` is not supported in accelerated code: debug mode (ACCEL_MODE=debug) checks the operations' assumptions")
        } else {
            format!("macros (`{name}!`) are not supported in accelerated code")
        };
        self.error(m, message)
    }
}

/// A number type's method named as a function (`i64::max` in `.fold(i64::MIN, i64::max)`):
/// the closure that calls it, `|a, b| i64::max(a, b)`.
fn number_function(path: &syn::Path) -> Option<Expr> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let [ty, func] = segs.as_slice() else {
        return None;
    };
    ScalarType::from_name(ty)?;
    let method = accel_ir::methods::number_method(func)?;
    let params: Vec<String> = (0..=method.args.len())
        .map(|k| format!("__accel_arg{k}"))
        .collect();
    Some(Expr::Lambda {
        params: params.iter().map(|p| (Pat::bind(p), Type::Infer)).collect(),
        body: Box::new(Expr::Assoc {
            ty: ty.clone(),
            func: func.clone(),
            args: params.iter().map(|p| Expr::var(p)).collect(),
        }),
    })
}
