//! The front end: Rust syntax (syn) to IR, for the subset of Rust that accelerated code
//! may use. Everything outside the subset becomes a `syn::Error` whose span points at the
//! offending code and says what to write instead; lowering goes on after an error, so one
//! compilation reports every problem.

use crate::ty::{lower_type, HEAP_TYPES};
use accel_ir::{BinOp, Expr, Lit, Loc, MatchArm, ParOp, Pat, ScalarType, Stmt, Type, UnOp};
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;

const ITERATOR_METHODS: &[&str] = &[
    "iter",
    "into_iter",
    "iter_mut",
    "map",
    "for_each",
    "fold",
    "sum",
    "product",
    "collect",
    "filter",
    "zip",
    "enumerate",
    "rev",
    "chunks",
    "windows",
    "any",
    "all",
    "position",
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

/// The location of a span's start in its file.
pub fn loc(span: Span) -> Loc {
    let start = span.start();
    Loc {
        line: start.line as u32,
        column: start.column as u32,
    }
}

/// Lowers one body (a site's expression or a function's body).
pub struct Lowerer {
    pub errors: Vec<syn::Error>,
    /// The functions the body calls or passes: the path as written, and the path.
    pub callees: Vec<(String, syn::Path)>,
    /// The constants a function body names (`const G: f64 = 9.81;`), with their idents:
    /// their values travel in the function's description.
    pub consts: Vec<syn::Ident>,
    /// The parallel operations the body uses directly.
    pub ops: Vec<(ParOp, Loc)>,
    scopes: Vec<Vec<String>>,
    /// The function being lowered, to reject direct recursion where it is written.
    fn_name: Option<String>,
    /// Whether free variables are captures (a site) or errors (a function).
    captures_allowed: bool,
}

fn path_string(p: &syn::Path) -> String {
    let mut s = String::new();
    if p.leading_colon.is_some() {
        s.push_str("::");
    }
    for (i, seg) in p.segments.iter().enumerate() {
        if i > 0 {
            s.push_str("::");
        }
        s.push_str(&seg.ident.to_string());
    }
    s
}

/// The name a path ends in (`Point` for `geo::Point`).
fn last_name(p: &syn::Path) -> String {
    p.segments
        .last()
        .map(|seg| seg.ident.to_string())
        .unwrap_or_default()
}

/// A field name, or a tuple index as text (`0`, `1`, …).
fn member_name(m: &syn::Member) -> String {
    match m {
        syn::Member::Named(n) => n.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}

fn is_negative(l: &syn::Lit) -> bool {
    match l {
        syn::Lit::Int(i) => i.base10_digits().starts_with('-'),
        syn::Lit::Float(f) => f.base10_digits().starts_with('-'),
        _ => false,
    }
}

fn starts_uppercase(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_uppercase)
}

impl Lowerer {
    /// A lowerer for a site (free variables are captures) or for the function `fn_name`
    /// with the given parameters.
    pub fn new(fn_name: Option<String>) -> Lowerer {
        let captures_allowed = fn_name.is_none();
        Lowerer {
            errors: Vec::new(),
            callees: Vec::new(),
            consts: Vec::new(),
            ops: Vec::new(),
            scopes: vec![Vec::new()],
            fn_name,
            captures_allowed,
        }
    }

    fn error(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) -> Expr {
        self.errors.push(syn::Error::new_spanned(tokens, message));
        Expr::Tuple(vec![])
    }

    fn is_local(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.iter().any(|n| n == name))
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(Vec::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    fn bind(&mut self, name: String) {
        self.scopes.last_mut().expect("a scope is open").push(name);
    }

    fn add_callee(&mut self, path: &syn::Path) -> String {
        let written = path_string(path);
        if !self.callees.iter().any(|(w, _)| *w == written) {
            self.callees.push((written.clone(), path.clone()));
        }
        written
    }

    /// Lowers an expression.
    pub fn expr(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Lit(l) => match self.lit(&l.lit) {
                Ok(lit) if is_negative(&l.lit) => Expr::Unary(UnOp::Neg, Box::new(Expr::Lit(lit))),
                Ok(lit) => Expr::Lit(lit),
                Err(err) => {
                    self.errors.push(err);
                    Expr::Tuple(vec![])
                }
            },
            syn::Expr::Path(p) => self.path_value(p),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Reference(r) => self.expr(&r.expr),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::MethodCall(m) => self.method(m),
            syn::Expr::Binary(b) => self.binary(b),
            syn::Expr::Unary(u) => {
                let inner = self.expr(&u.expr);
                match u.op {
                    syn::UnOp::Neg(_) => Expr::Unary(UnOp::Neg, Box::new(inner)),
                    syn::UnOp::Not(_) => Expr::Unary(UnOp::Not, Box::new(inner)),
                    // Ownership is invisible to accelerated code.
                    _ => inner,
                }
            }
            syn::Expr::Cast(c) => {
                let inner = self.expr(&c.expr);
                match lower_type(&c.ty, &[]) {
                    Ok(t @ Type::Scalar(_)) => Expr::Cast(Box::new(inner), t),
                    Ok(_) => self.error(&c.ty, "`as` casts in accelerated code convert between number and bool types only"),
                    Err(err) => {
                        self.errors.push(err);
                        Expr::Tuple(vec![])
                    }
                }
            }
            syn::Expr::Tuple(t) => Expr::Tuple(t.elems.iter().map(|e| self.expr(e)).collect()),
            syn::Expr::Array(a) => Expr::Array(a.elems.iter().map(|e| self.expr(e)).collect()),
            syn::Expr::Repeat(r) => Expr::ArrayRepeat(Box::new(self.expr(&r.expr)), Box::new(self.expr(&r.len))),
            syn::Expr::Struct(s) => self.record(s),
            syn::Expr::Field(f) => {
                let base = self.expr(&f.base);
                let member = member_name(&f.member);
                Expr::Field(Box::new(base), member)
            }
            syn::Expr::Index(i) => {
                let seq = self.expr(&i.expr);
                if let syn::Expr::Range(r) = &*i.index {
                    // `xs[lo..hi]`: a view of part of a sequence.
                    let lo = r.start.as_ref().map(|e| self.expr(e)).unwrap_or(Expr::int(0));
                    let mut hi = match &r.end {
                        Some(e) => self.expr(e),
                        None => Expr::Method { recv: Box::new(seq.clone()), method: "len".into(), args: vec![] },
                    };
                    if let syn::RangeLimits::Closed(_) = r.limits {
                        hi = Expr::Binary(BinOp::Add, Box::new(hi), Box::new(Expr::int(1)));
                    }
                    return Expr::Slice { seq: Box::new(seq), lo: Box::new(lo), hi: Box::new(hi) };
                }
                Expr::Index(Box::new(seq), Box::new(self.expr(&i.index)))
            }
            syn::Expr::If(i) => self.if_(i),
            syn::Expr::Match(m) => self.match_(m),
            syn::Expr::Block(b) => {
                if let Some(label) = &b.label {
                    return self.error(label, "labeled blocks are not supported in accelerated code");
                }
                self.block(&b.block)
            }
            syn::Expr::Assign(a) => {
                let target = self.place(&a.left);
                let value = self.expr(&a.right);
                Expr::Assign { target: Box::new(target), value: Box::new(value) }
            }
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::While(w) => {
                if let Some(label) = &w.label {
                    return self.error(label, "loop labels are not supported in accelerated code");
                }
                if let syn::Expr::Let(l) = &*w.cond {
                    return self.error(l, "`while let` is not supported in accelerated code: use `while` with a condition");
                }
                let cond = self.expr(&w.cond);
                let body = self.block(&w.body);
                Expr::While { cond: Box::new(cond), body: Box::new(body) }
            }
            syn::Expr::Closure(c) => self.error(
                c,
                "closures are supported only as arguments of parallel operations and #[accel] functions: \
                 write `map(|x| …, xs)`, or make it an #[accel] fn",
            ),
            syn::Expr::Macro(m) => self.macro_(&m.mac),
            syn::Expr::Loop(l) => self.error(l.loop_token, "`loop` is not supported in accelerated code: use `while` with a condition"),
            syn::Expr::Return(r) => self.error(
                r.return_token,
                "`return` is not supported in accelerated code: make the value the last expression of the block (use `if`/`else` for early results)",
            ),
            syn::Expr::Break(b) => self.error(b.break_token, "`break` is not supported in accelerated code: put the exit condition in a `while` loop"),
            syn::Expr::Continue(c) => self.error(c.continue_token, "`continue` is not supported in accelerated code: use `if` inside the loop body"),
            syn::Expr::Unsafe(u) => self.error(u.unsafe_token, "`unsafe` code is not allowed in accelerated code"),
            syn::Expr::Async(a) => self.error(a.async_token, "`async` is not supported in accelerated code"),
            syn::Expr::Await(a) => self.error(a.await_token, "`.await` is not supported in accelerated code"),
            syn::Expr::Try(t) => self.error(t.question_token, "the `?` operator is not supported in accelerated code (no `Option` or `Result`)"),
            syn::Expr::Range(r) => self.error(r, "ranges are supported only in `for i in a..b` loops in accelerated code"),
            syn::Expr::Let(l) => self.error(l, "`let` in a condition (`if let`, let chains) is not supported in accelerated code: use `match`"),
            syn::Expr::Const(c) => self.error(c.const_token, "inline `const` blocks are not supported in accelerated code"),
            other => self.error(other, "this expression is not supported in accelerated code"),
        }
    }

    fn lit(&mut self, l: &syn::Lit) -> syn::Result<Lit> {
        match l {
            syn::Lit::Int(i) => {
                let suffix = match i.suffix() {
                    "" => None,
                    s => Some(ScalarType::from_name(s).filter(|t| !t.is_float() && *t != ScalarType::Bool).ok_or_else(|| {
                        syn::Error::new(i.span(), format!("`{s}` is not supported in accelerated code: use i32, i64, u32, u64 or usize"))
                    })?),
                };
                // Negative literals reach here only in patterns; the caller handles the sign.
                let digits = i.base10_digits().trim_start_matches('-');
                let value = digits.parse::<u64>().map_err(|e| syn::Error::new(i.span(), e))?;
                Ok(Lit::Int(value, suffix))
            }
            syn::Lit::Float(f) => {
                let suffix = match f.suffix() {
                    "" => None,
                    "f32" => Some(ScalarType::F32),
                    "f64" => Some(ScalarType::F64),
                    s => return Err(syn::Error::new(f.span(), format!("`{s}` is not supported in accelerated code: use f32 or f64"))),
                };
                let digits = f.base10_digits().trim_start_matches('-');
                let value = digits.parse::<f64>().map_err(|e| syn::Error::new(f.span(), e))?;
                Ok(Lit::Float(value, suffix))
            }
            syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
            syn::Lit::Str(_) | syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => Err(syn::Error::new(
                l.span(),
                "strings (`String`, `&str`) are not supported in accelerated code: it handles numbers, booleans, tuples, arrays, sequences, tensors and records",
            )),
            _ => Err(syn::Error::new(l.span(), "characters and bytes are not supported in accelerated code: use integers")),
        }
    }

    /// A path used as a value: a local, a captured local, or a constant.
    fn path_value(&mut self, p: &syn::ExprPath) -> Expr {
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

    fn call(&mut self, c: &syn::ExprCall) -> Expr {
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
    fn arg(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Closure(c) => self.closure(c),
            e => self.expr(e),
        }
    }

    /// `Tensor::zeros(..)`, `f32::max(a, b)`, `std::cmp::max(a, b)`.
    fn assoc(&mut self, c: &syn::ExprCall, segs: &[String]) -> Expr {
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
            "String" | "str" => "strings (`String`, `&str`) are not supported in accelerated code".to_string(),
            "Vec" => "sequences are built with `create(n, |i| …)` or `map` in accelerated code, not with `Vec`'s functions".to_string(),
            t if HEAP_TYPES.contains(&t) => format!(
                "`{t}` is a heap type, which accelerated code does not support: only sequences (`Vec<T>`, `&[T]`) and `Tensor<T>` live on the heap there"
            ),
            _ if first == "std" || first == "core" => format!("`{}` is not supported in accelerated code", segs.join("::")),
            t => format!("`{t}::{func}` is not supported in accelerated code: call an #[accel] free function instead"),
        };
        self.error(&c.func, message)
    }

    fn par(&mut self, op: ParOp, c: &syn::ExprCall) -> Expr {
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
    fn fn_arg(&mut self, e: &syn::Expr, op: ParOp) -> Expr {
        match e {
            syn::Expr::Closure(c) => self.closure(c),
            syn::Expr::Paren(p) => self.fn_arg(&p.expr, op),
            syn::Expr::Group(g) => self.fn_arg(&g.expr, op),
            syn::Expr::Reference(r) => self.fn_arg(&r.expr, op),
            syn::Expr::Path(p) if p.qself.is_none() => {
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

    fn closure(&mut self, c: &syn::ExprClosure) -> Expr {
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

    /// A pattern with an optional type annotation (closure parameters, `let`).
    fn typed_pat(&mut self, p: &syn::Pat) -> (Pat, Type) {
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

    fn method(&mut self, m: &syn::ExprMethodCall) -> Expr {
        let name = m.method.to_string();
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
        let message = if ITERATOR_METHODS.contains(&n) {
            format!("iterator methods (`.{n}()`) are not supported in accelerated code: use the parallel operations (map, reduce, …) or a `for i in 0..n` loop")
        } else if MUTATING_METHODS.contains(&n) {
            format!("`.{n}()` is not supported: sequences are immutable in accelerated code; build new ones with `create` or `map` (`Tensor::set` writes tensors)")
        } else if matches!(n, "to_string" | "as_str" | "chars" | "bytes") {
            "strings (`String`, `&str`) are not supported in accelerated code".to_string()
        } else if matches!(n, "unwrap" | "expect" | "unwrap_or" | "ok") {
            "`Option` and `Result` are not supported in accelerated code".to_string()
        } else {
            format!("the method `.{n}()` is not supported in accelerated code")
        };
        self.error(&m.method, message)
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Expr {
        use syn::BinOp as B;
        let (op, assign) = match b.op {
            B::Add(_) => (BinOp::Add, false),
            B::Sub(_) => (BinOp::Sub, false),
            B::Mul(_) => (BinOp::Mul, false),
            B::Div(_) => (BinOp::Div, false),
            B::Rem(_) => (BinOp::Rem, false),
            B::And(_) => (BinOp::And, false),
            B::Or(_) => (BinOp::Or, false),
            B::BitXor(_) => (BinOp::BitXor, false),
            B::BitAnd(_) => (BinOp::BitAnd, false),
            B::BitOr(_) => (BinOp::BitOr, false),
            B::Shl(_) => (BinOp::Shl, false),
            B::Shr(_) => (BinOp::Shr, false),
            B::Eq(_) => (BinOp::Eq, false),
            B::Lt(_) => (BinOp::Lt, false),
            B::Le(_) => (BinOp::Le, false),
            B::Ne(_) => (BinOp::Ne, false),
            B::Ge(_) => (BinOp::Ge, false),
            B::Gt(_) => (BinOp::Gt, false),
            B::AddAssign(_) => (BinOp::Add, true),
            B::SubAssign(_) => (BinOp::Sub, true),
            B::MulAssign(_) => (BinOp::Mul, true),
            B::DivAssign(_) => (BinOp::Div, true),
            B::RemAssign(_) => (BinOp::Rem, true),
            B::BitXorAssign(_) => (BinOp::BitXor, true),
            B::BitAndAssign(_) => (BinOp::BitAnd, true),
            B::BitOrAssign(_) => (BinOp::BitOr, true),
            B::ShlAssign(_) => (BinOp::Shl, true),
            B::ShrAssign(_) => (BinOp::Shr, true),
            _ => return self.error(b.op, "this operator is not supported in accelerated code"),
        };
        if assign {
            let target = self.place(&b.left);
            let value = self.expr(&b.right);
            let combined = Expr::Binary(op, Box::new(target.clone()), Box::new(value));
            Expr::Assign {
                target: Box::new(target),
                value: Box::new(combined),
            }
        } else {
            let l = self.expr(&b.left);
            let r = self.expr(&b.right);
            Expr::Binary(op, Box::new(l), Box::new(r))
        }
    }

    /// The target of an assignment: a mutable local, or a field or element of one.
    fn place(&mut self, e: &syn::Expr) -> Expr {
        match e {
            syn::Expr::Path(p) => match p.path.get_ident() {
                Some(i) if self.is_local(&i.to_string()) => Expr::Var(i.to_string()),
                _ => self.error(
                    p,
                    "accelerated code can assign only to its own mutable locals: captured variables are read-only there \
                     (return the new value, or write a Tensor with `set`)",
                ),
            },
            syn::Expr::Field(f) => {
                let base = self.place(&f.base);
                let member = member_name(&f.member);
                Expr::Field(Box::new(base), member)
            }
            syn::Expr::Index(i) => {
                let base = self.place(&i.expr);
                Expr::Index(Box::new(base), Box::new(self.expr(&i.index)))
            }
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => self.place(expr),
            other => self.error(other, "this cannot be assigned to in accelerated code"),
        }
    }

    fn record(&mut self, s: &syn::ExprStruct) -> Expr {
        if let Some(rest) = &s.rest {
            return self.error(rest, "struct update syntax (`..base`) is not supported in accelerated code: write every field");
        }
        let name = last_name(&s.path);
        let mut fields = Vec::new();
        for f in &s.fields {
            let value = self.expr(&f.expr);
            match &f.member {
                syn::Member::Named(n) => fields.push((n.to_string(), value)),
                syn::Member::Unnamed(_) => {
                    return self.error(
                        &f.member,
                        "tuple structs are not supported in accelerated code: use named fields",
                    );
                }
            }
        }
        Expr::Record { name, fields }
    }

    fn if_(&mut self, i: &syn::ExprIf) -> Expr {
        if let syn::Expr::Let(l) = &*i.cond {
            return self.error(
                l,
                "`if let` is not supported in accelerated code: use `match`",
            );
        }
        let cond = self.expr(&i.cond);
        let then = self.block(&i.then_branch);
        let els = i.else_branch.as_ref().map(|(_, e)| Box::new(self.expr(e)));
        Expr::If {
            cond: Box::new(cond),
            then: Box::new(then),
            els,
        }
    }

    fn match_(&mut self, m: &syn::ExprMatch) -> Expr {
        let scrutinee = self.expr(&m.expr);
        let arms = m
            .arms
            .iter()
            .map(|arm| {
                self.scoped(|l| {
                    let pat = l.pat(&arm.pat);
                    let guard = arm.guard.as_ref().map(|(_, g)| l.expr(g));
                    let body = l.expr(&arm.body);
                    MatchArm { pat, guard, body }
                })
            })
            .collect();
        Expr::Match {
            scrutinee: Box::new(scrutinee),
            arms,
        }
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Expr {
        if let Some(label) = &f.label {
            return self.error(label, "loop labels are not supported in accelerated code");
        }
        let syn::Expr::Range(range) = &*f.expr else {
            return self.error(&f.expr, "accelerated code supports `for` over integer ranges only (`for i in a..b`): index sequences with `xs[i]`");
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return self.error(
                range,
                "a `for` range in accelerated code needs both bounds (`a..b` or `a..=b`)",
            );
        };
        let lo = self.expr(start);
        let mut hi = self.expr(end);
        if let syn::RangeLimits::Closed(_) = range.limits {
            hi = Expr::Binary(BinOp::Add, Box::new(hi), Box::new(Expr::int(1)));
        }
        self.scoped(|l| {
            let var = match &*f.pat {
                syn::Pat::Ident(i) => i.ident.to_string(),
                syn::Pat::Wild(_) => "_".to_string(),
                other => {
                    return l.error(
                        other,
                        "the loop variable of a `for` in accelerated code must be a name",
                    )
                }
            };
            l.bind(var.clone());
            let body = l.block(&f.body);
            Expr::For {
                var,
                lo: Box::new(lo),
                hi: Box::new(hi),
                body: Box::new(body),
            }
        })
    }

    fn macro_(&mut self, m: &syn::Macro) -> Expr {
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

    /// Lowers a block: its own scope, statements, and an optional result.
    pub fn block(&mut self, b: &syn::Block) -> Expr {
        self.scoped(|l| {
            let mut stmts = Vec::new();
            let mut result = None;
            let n = b.stmts.len();
            for (i, s) in b.stmts.iter().enumerate() {
                match s {
                    syn::Stmt::Local(local) => {
                        if let Some(init) = &local.init {
                            if let Some((else_token, _)) = &init.diverge {
                                l.error(else_token, "`let … else` is not supported in accelerated code: use `match`");
                                continue;
                            }
                        }
                        let init = local.init.as_ref().map(|i| l.expr(&i.expr));
                        let (pat, ty) = l.typed_pat(&local.pat);
                        stmts.push(Stmt::Let { pat, ty, init });
                    }
                    syn::Stmt::Item(item) => {
                        l.error(item, "items (fn, struct, use, …) cannot be declared inside accelerated code: declare them at module level");
                    }
                    syn::Stmt::Expr(e, semi) => {
                        let e = l.expr(e);
                        if semi.is_none() && i + 1 == n {
                            result = Some(Box::new(e));
                        } else {
                            stmts.push(Stmt::Expr(e));
                        }
                    }
                    syn::Stmt::Macro(m) => {
                        l.macro_(&m.mac);
                    }
                }
            }
            Expr::Block { stmts, result }
        })
    }

    /// Lowers a pattern and binds its names in the current scope.
    pub fn pat(&mut self, p: &syn::Pat) -> Pat {
        match p {
            syn::Pat::Ident(i) => {
                if let Some((at, _)) = &i.subpat {
                    self.error(
                        at,
                        "`name @ pattern` bindings are not supported in accelerated code",
                    );
                }
                let name = i.ident.to_string();
                if starts_uppercase(&name) {
                    self.error(i, "constants and unit structs cannot be matched in accelerated code: match on literals, tuples and structs");
                    return Pat::Wild;
                }
                self.bind(name.clone());
                Pat::Bind {
                    name,
                    mutable: i.mutability.is_some(),
                }
            }
            syn::Pat::Wild(_) => Pat::Wild,
            syn::Pat::Paren(p) => self.pat(&p.pat),
            syn::Pat::Reference(r) => self.pat(&r.pat),
            syn::Pat::Tuple(t) => Pat::Tuple(t.elems.iter().map(|p| self.pat(p)).collect()),
            syn::Pat::Struct(s) => {
                let name = last_name(&s.path);
                let mut fields = Vec::new();
                for f in &s.fields {
                    match &f.member {
                        syn::Member::Named(n) => fields.push((n.to_string(), self.pat(&f.pat))),
                        syn::Member::Unnamed(_) => {
                            self.error(&f.member, "tuple structs are not supported in accelerated code: use named fields");
                        }
                    }
                }
                Pat::Record {
                    name,
                    fields,
                    rest: s.rest.is_some(),
                }
            }
            syn::Pat::Lit(l) => match self.lit(&l.lit) {
                Ok(lit) => Pat::Lit {
                    negative: is_negative(&l.lit),
                    lit,
                },
                Err(e) => {
                    self.errors.push(e);
                    Pat::Wild
                }
            },
            syn::Pat::Range(r) => {
                let bound = |l: &mut Self, e: &Option<Box<syn::Expr>>| match e.as_deref() {
                    Some(e) => l.lit_pat(e),
                    None => {
                        l.error(r, "open ranges are not supported in accelerated code patterns: give both bounds");
                        Pat::Wild
                    }
                };
                let lo = bound(self, &r.start);
                let hi = bound(self, &r.end);
                Pat::Range {
                    lo: Box::new(lo),
                    hi: Box::new(hi),
                    inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                }
            }
            syn::Pat::Or(o) => Pat::Or(o.cases.iter().map(|p| self.pat(p)).collect()),
            syn::Pat::Type(t) => {
                self.error(
                    t,
                    "type annotations are supported on `let` and closure parameters only",
                );
                Pat::Wild
            }
            syn::Pat::TupleStruct(t) => {
                self.error(t, "tuple structs and enum variants are not supported in accelerated code: use a struct with named fields");
                Pat::Wild
            }
            other => {
                self.error(other, "this pattern is not supported in accelerated code: use names, `_`, literals, ranges, tuples and structs");
                Pat::Wild
            }
        }
    }

    /// A literal pattern given as an expression (range bounds, negative literals).
    fn lit_pat(&mut self, e: &syn::Expr) -> Pat {
        match e {
            syn::Expr::Lit(l) => match self.lit(&l.lit) {
                Ok(lit) => Pat::Lit {
                    negative: is_negative(&l.lit),
                    lit,
                },
                Err(err) => {
                    self.errors.push(err);
                    Pat::Wild
                }
            },
            syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() >= 2 => {
                Pat::Const(path_string(&p.path))
            }
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Neg(_),
                expr,
                ..
            }) => match self.lit_pat(expr) {
                Pat::Lit { lit, .. } => Pat::Lit {
                    negative: true,
                    lit,
                },
                p => p,
            },
            other => {
                self.error(other, "pattern bounds must be literals in accelerated code");
                Pat::Wild
            }
        }
    }

    /// Binds the names of a function parameter pattern.
    pub fn param(&mut self, p: &syn::Pat) -> Pat {
        self.pat(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(src: &str) -> Result<String, Vec<String>> {
        let e: syn::Expr = syn::parse_str(src).expect("test input parses");
        let mut l = Lowerer::new(None);
        let ir = l.expr(&e);
        if l.errors.is_empty() {
            Ok(ir.to_string())
        } else {
            Err(l.errors.iter().map(|e| e.to_string()).collect())
        }
    }

    fn function(name: &str, params: &[&str], body: &str) -> Result<String, Vec<String>> {
        let b: syn::Block = syn::parse_str(body).expect("test input parses");
        let mut l = Lowerer::new(Some(name.to_string()));
        for p in params {
            l.bind(p.to_string());
        }
        let ir = l.block(&b);
        if l.errors.is_empty() {
            Ok(ir.to_string())
        } else {
            Err(l.errors.iter().map(|e| e.to_string()).collect())
        }
    }

    #[test]
    fn lowers_operations_calls_and_captures() {
        assert_eq!(site("reduce(add, 0, &v)").unwrap(), "(reduce add 0 v)");
        assert_eq!(
            site("map(|x| c * x, &xs)").unwrap(),
            "(map (lambda (x) (* c x)) xs)"
        );
        assert_eq!(site("geo::dist(p, q)").unwrap(), "(geo::dist p q)");
        assert_eq!(
            site("map(|x: f32| x.sqrt() as f64, xs)").unwrap(),
            "(map (lambda (x: f32) (as (.sqrt x) f64)) xs)"
        );
        assert_eq!(
            site("create(n, |i| vec![i; 2])").unwrap(),
            "(create n (lambda (i) (seq-repeat i 2)))"
        );
        assert_eq!(
            site("map(|r| r[1..], &rows)").unwrap(),
            "(map (lambda (r) (slice r 1 (.len r))) rows)"
        );
        assert_eq!(
            site("Tensor::<f32>::zeros(&[2, 3])").unwrap(),
            "(Tensor::zeros [2 3])"
        );
    }

    #[test]
    fn desugars_compound_assignment_inclusive_ranges_and_negative_patterns() {
        let ir = function("f", &["n"], "{ let mut s = 0; for i in 0..=n { s += i; } match s { -1 | 0 => 0, i64::MIN..=-2 => 1, _ => s } }").unwrap();
        assert_eq!(
            ir,
            "(do (let mut s 0) (for i 0 (+ n 1) (do (set! s (+ s i)))) (match s (-1 | 0 => 0) (i64::MIN..=-2 => 1) (_ => s)))"
        );
    }

    #[test]
    fn records_the_callees_and_operations_it_finds() {
        let e: syn::Expr = syn::parse_str("map(f, map2(|a, b| g(a, b), xs, m::h(ys)))").unwrap();
        let mut l = Lowerer::new(None);
        l.expr(&e);
        let callees: Vec<&str> = l.callees.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(callees, vec!["f", "g", "m::h"]);
        let ops: Vec<&str> = l.ops.iter().map(|(op, _)| op.name()).collect();
        assert_eq!(ops, vec!["map", "map2"]);
    }

    #[test]
    fn locals_are_values_and_function_parameters_are_applied() {
        assert_eq!(
            function("apply", &["f", "x"], "{ f(x) }").unwrap(),
            "(do (apply f x))"
        );
        assert_eq!(
            function("g", &["f", "xs"], "{ map(f, xs) }").unwrap(),
            "(do (map f xs))"
        );
    }

    #[test]
    fn rejects_with_messages() {
        let err = |src: &str| site(src).unwrap_err().join("\n");
        assert!(err("map(|x| { println!(\"{}\", x); x }, v)")
            .starts_with("`println!` is not supported in accelerated code"));
        assert!(err("map(|x| x.iter().sum(), v)").starts_with("iterator methods (`.iter()`)"));
        assert!(err("accelerate!(map(f, v))").starts_with("nested accelerate! is not supported"));
        assert!(err("map(|x| Box::new(x), v)").starts_with("`Box` is a heap type"));
        assert!(err("map(|x| unsafe { x }, v)").starts_with("`unsafe` code is not allowed"));
        assert!(err("map(3, v)").starts_with("the function argument of `map` must be"));
        assert!(err("map(f)").starts_with("`map` takes 2 argument(s): `map(f, xs)`; found 1"));
        assert!(
            function("fact", &["n"], "{ n * fact(n - 1) }").unwrap_err()[0]
                .starts_with("recursion is not supported")
        );
        assert!(function("f", &[], "{ y + 1 }").unwrap_err()[0]
            .starts_with("`y` is not a parameter or local of this function"));
    }

    #[test]
    fn never_panics_on_unusual_input() {
        // Every expression form syn accepts either lowers or becomes an error.
        for src in [
            "loop { break 1 }",
            "async move { 1 }",
            "x?",
            "|| 1",
            "(|x| x)(1)",
            "a..b",
            "[1, 2][..]",
            "'a: { 1 }",
            "const { 1 }",
            "x.await",
            "S { ..base }",
            "T(1)",
            "if let Some(x) = y { x } else { 0 }",
            "match x { Some(y) => y, _ => 0 }",
            "let x = 1",
            "1u8",
            "1e400",
            "'c'",
            "b\"bytes\"",
            "<T as Tr>::f(1)",
            "x as String",
            "!!!!x",
            "f::<i32>(1)",
        ] {
            let _ = site(src);
        }
    }
}
