//! Literals, operators, assignment places, records, and control flow (`if`, `match`,
//! `for`, blocks).

use super::chains::{length_of, let_in};
use super::*;
use accel_ir::{BinOp, Expr, Lit, MatchArm, ScalarType, Stmt};

impl Lowerer {
    pub(super) fn lit(&mut self, l: &syn::Lit) -> syn::Result<Lit> {
        match l {
            syn::Lit::Int(i) => {
                let suffix = match i.suffix() {
                    "" => None,
                    s => Some(ScalarType::from_name(s).filter(|t| !t.is_float() && *t != ScalarType::Bool).ok_or_else(|| {
                        syn::Error::new(i.span(), format!("`{s}` is not supported in accelerated code: use i8, i16, i32, i64, u8, u16, u32, u64 or usize"))
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
            syn::Lit::Str(_) | syn::Lit::CStr(_) => Err(syn::Error::new(l.span(), crate::ty::NO_STRINGS)),
            syn::Lit::ByteStr(_) => Err(syn::Error::new(
                l.span(),
                "byte strings are not supported inside accelerated code: bind `b\"…\"` to a local outside the site and use it there (a `&[u8]` is captured as a sequence)",
            )),
            syn::Lit::Byte(b) => Ok(Lit::Int(u64::from(b.value()), Some(ScalarType::U8))),
            _ => Err(syn::Error::new(l.span(), crate::ty::NO_STRINGS)),
        }
    }

    pub(super) fn binary(&mut self, b: &syn::ExprBinary) -> Expr {
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
    pub(super) fn place(&mut self, e: &syn::Expr) -> Expr {
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
            other => self.error(
                other,
                "this cannot be assigned to in accelerated code: assign to a mutable local, a field or element of one, or write a Tensor with `t.set([i], value)`",
            ),
        }
    }

    pub(super) fn record(&mut self, s: &syn::ExprStruct) -> Expr {
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

    pub(super) fn if_(&mut self, i: &syn::ExprIf) -> Expr {
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

    pub(super) fn match_(&mut self, m: &syn::ExprMatch) -> Expr {
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

    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Expr {
        if let Some(label) = &f.label {
            return self.error(label, "loop labels are not supported in accelerated code");
        }
        let syn::Expr::Range(range) = &*f.expr else {
            return self.for_elements(f, &f.expr);
        };
        let Some((lo, hi)) = self.range_bounds(
            range,
            "a `for` range in accelerated code needs both bounds (`a..b` or `a..=b`)",
        ) else {
            return Expr::Tuple(vec![]);
        };
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

    /// The start and the end (excluded) of `a..b` or `a..=b`; `None`, with `missing`
    /// reported, when a bound is missing.
    pub(super) fn range_bounds(
        &mut self,
        r: &syn::ExprRange,
        missing: &str,
    ) -> Option<(Expr, Expr)> {
        let (lo, hi, inclusive) = self.range_ends(r, missing)?;
        let hi = match inclusive {
            true => Expr::Binary(BinOp::Add, Box::new(hi), Box::new(Expr::int(1))),
            false => hi,
        };
        Some((lo, hi))
    }

    /// The bounds of `a..b` or `a..=b` as written, and whether the end is included;
    /// `None`, with `missing` reported, when a bound is missing.
    pub(super) fn range_ends(
        &mut self,
        r: &syn::ExprRange,
        missing: &str,
    ) -> Option<(Expr, Expr, bool)> {
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            self.error(r, missing);
            return None;
        };
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        Some((self.expr(start), self.expr(end), inclusive))
    }

    /// `for x in xs.iter()` (or `xs.into_iter()`, `&xs`) and `for (i, x) in
    /// xs.iter().enumerate()`: a loop over the indices with the element bound in the body.
    fn for_elements(&mut self, f: &syn::ExprForLoop, e: &syn::Expr) -> Expr {
        let message = "accelerated code supports `for` over integer ranges (`for i in a..b`) and over a sequence's elements (`for x in xs.iter()`, `for (i, x) in xs.iter().enumerate()`)";
        let Some((seq, enumerated)) = sequence_of_loop(e) else {
            return self.error(e, message);
        };
        let xs = self.expr(seq);
        let (seq_name, i) = (self.fresh_name("seq"), self.fresh_name("i"));
        let seq = Expr::var(&seq_name);
        let len = length_of(&seq).unwrap_or_else(|| Expr::Tuple(vec![]));
        self.scoped(|l| {
            let pat = l.pat(&f.pat);
            let element = Expr::Index(Box::new(seq), Box::new(Expr::var(&i)));
            let value = if enumerated {
                Expr::Tuple(vec![Expr::var(&i), element])
            } else {
                element
            };
            let body = Expr::Block {
                stmts: vec![Stmt::Let {
                    pat,
                    ty: Type::Infer,
                    init: Some(value),
                }],
                result: Some(Box::new(l.block(&f.body))),
            };
            let each = Expr::For {
                var: i.clone(),
                lo: Box::new(Expr::Lit(Lit::Int(0, Some(ScalarType::Usize)))),
                hi: Box::new(len),
                body: Box::new(body),
            };
            let_in(&seq_name, xs, each)
        })
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
                        let closure = local.init.as_ref().and_then(|i| closure_of(&i.expr));
                        let init = match closure {
                            // A closure bound by `let`: substituted where it is used (the
                            // inliner), so it must see the locals it captures unchanged.
                            Some(c) => {
                                let lambda = l.closure(c);
                                let captured = l.captured_locals(&lambda);
                                if let Some(name) = assigned_later(&b.stmts[i + 1..], &captured) {
                                    l.error(
                                        c,
                                        format!(
                                            "this closure captures `{name}`, which is assigned after it; accelerated code \
                                             substitutes a closure bound by `let` where it is used, where `{name}` \
                                             may have changed: copy it first (`let {name}0 = {name};`) and \
                                             capture the copy"),
                                    );
                                }
                                Some(lambda)
                            }
                            None => local.init.as_ref().map(|i| l.expr(&i.expr)),
                        };
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
}

/// The closure a `let` binds, seen through parentheses.
fn closure_of(e: &syn::Expr) -> Option<&syn::ExprClosure> {
    match e {
        syn::Expr::Closure(c) => Some(c),
        syn::Expr::Paren(p) => closure_of(&p.expr),
        _ => None,
    }
}

/// The first of `names` that the statements assign (`x = …`, `x += …`, `x.f = …`), if any.
fn assigned_later(stmts: &[syn::Stmt], names: &[String]) -> Option<String> {
    use syn::visit::Visit;
    struct Assigned<'n> {
        names: &'n [String],
        found: Option<String>,
    }
    impl Assigned<'_> {
        fn target(&mut self, mut e: &syn::Expr) {
            loop {
                match e {
                    syn::Expr::Field(f) => e = &f.base,
                    syn::Expr::Index(i) => e = &i.expr,
                    syn::Expr::Paren(p) => e = &p.expr,
                    _ => break,
                }
            }
            if let syn::Expr::Path(p) = e {
                if let Some(id) = p.path.get_ident() {
                    let name = id.to_string();
                    if self.found.is_none() && self.names.contains(&name) {
                        self.found = Some(name);
                    }
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Assigned<'_> {
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            self.target(&a.left);
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            use syn::BinOp::*;
            if matches!(
                b.op,
                AddAssign(_)
                    | SubAssign(_)
                    | MulAssign(_)
                    | DivAssign(_)
                    | RemAssign(_)
                    | BitXorAssign(_)
                    | BitAndAssign(_)
                    | BitOrAssign(_)
                    | ShlAssign(_)
                    | ShrAssign(_)
            ) {
                self.target(&b.left);
            }
            syn::visit::visit_expr_binary(self, b);
        }
    }
    let mut v = Assigned { names, found: None };
    for s in stmts {
        v.visit_stmt(s);
    }
    v.found
}

/// The sequence a `for` loop walks, and whether it is enumerated: `xs.iter()`,
/// `xs.into_iter()`, `xs.iter().copied()`, `&xs`, each perhaps `.enumerate()`d.
fn sequence_of_loop(e: &syn::Expr) -> Option<(&syn::Expr, bool)> {
    match e {
        syn::Expr::Paren(p) => sequence_of_loop(&p.expr),
        syn::Expr::Reference(r) => Some((&r.expr, false)),
        syn::Expr::MethodCall(m) if m.args.is_empty() => match m.method.to_string().as_str() {
            "enumerate" => {
                let (seq, enumerated) = sequence_of_loop(&m.receiver)?;
                (!enumerated).then_some((seq, true))
            }
            "iter" | "into_iter" | "copied" | "cloned" => {
                sequence_of_loop(&m.receiver).or(Some((&m.receiver, false)))
            }
            _ => None,
        },
        _ => None,
    }
}
