//! The front end: Rust syntax (syn) to IR, for the subset of Rust that accelerated code
//! may use. Everything outside the subset becomes a `syn::Error` whose span points at the
//! offending code and says what to write instead; lowering goes on after an error, so one
//! compilation reports every problem.

use crate::ty::lower_type;
use accel_ir::{BinOp, Expr, Loc, ParOp, Type, UnOp};
use proc_macro2::Span;
use quote::ToTokens;

mod calls;
mod chains;
mod classes;
mod in_place;
mod patterns;
mod syntax;
#[cfg(test)]
mod tests;

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
    /// The temporaries named so far (iterator chains bind some).
    fresh: usize,
    /// The captured sequences the body writes in place (`xs.par_iter_mut()`), which the
    /// site lends as tensors over their own memory.
    pub in_place_targets: Vec<String>,
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
            fresh: 0,
            in_place_targets: Vec::new(),
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
                if let syn::Expr::Array(at) = &*i.index {
                    if !at.elems.is_empty() {
                        // `m[[i, j]]` (ndarray's indexing): row `i`, then element `j`.
                        return at.elems.iter().fold(seq, |base, k| {
                            Expr::Index(Box::new(base), Box::new(self.expr(k)))
                        });
                    }
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
                "closures are supported as arguments of parallel operations and #[accel] functions, \
                 and bound by `let` (`let f = |x| …;`), not as values inside other expressions",
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
}
