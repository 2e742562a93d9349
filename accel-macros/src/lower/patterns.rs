//! Patterns: of `let`, closure parameters and `match` arms.

use super::*;
use accel_ir::Pat;

impl Lowerer {
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
    pub(super) fn lit_pat(&mut self, e: &syn::Expr) -> Pat {
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
