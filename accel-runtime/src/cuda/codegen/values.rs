//! Values: literals and named constants, tuples, arrays and records, and patterns (their
//! conditions and bindings).

use super::kernel::*;
use crate::cuda::c::*;
use accel_ir::consts::{const_type, constant_lit};
use accel_ir::{Expr, Lit, Pat, Type};

impl KernelGen<'_> {
    /// A literal.
    pub(super) fn lit(&mut self, l: &Lit) -> R<V> {
        let s = lit_type(l)?;
        Ok(V::scalar(s, literal_c(l)?))
    }

    /// A named constant (`f32::MAX`).
    pub(super) fn constant(&mut self, c: &str) -> R<V> {
        let s = const_type(c).ok_or_else(|| unsupported(format!("the constant `{c}`")))?;
        let l = constant_lit(c, s).ok_or_else(|| unsupported(format!("the constant `{c}`")))?;
        Ok(V::scalar(s, literal_c(&l)?))
    }

    /// A tuple or an array: its parts' words in order.
    pub(super) fn aggregate(&mut self, e: &Expr, es: &[Expr]) -> R<V> {
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

    /// `[x; n]` with a literal `n`.
    pub(super) fn array_repeat(&mut self, x: &Expr, n: &Expr) -> R<V> {
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

    /// A record: its fields' words in declaration order.
    pub(super) fn record(&mut self, name: &str, fields: &[(String, Expr)]) -> R<V> {
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
            ty: Type::Record(name.to_string(), decl),
            w,
        })
    }

    pub(super) fn bind(&mut self, p: &Pat, v: V) -> R<()> {
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
    pub(super) fn matches(&mut self, p: &Pat, v: &V) -> R<String> {
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
    pub(super) fn pat_value(&mut self, p: &Pat, v: &V) -> R<String> {
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
}
