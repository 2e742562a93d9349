//! Values: literals and named constants, and patterns (matching and binding).

use super::cx::*;
use accel_ir::consts::{const_type, constant_lit};
use accel_ir::{Expr, Lit, Pat, ScalarType, Type};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};
use std::collections::HashMap;

impl FnCx<'_, '_> {
    /// A tuple of the values of `es` (the empty tuple is `()`).
    pub(super) fn tuple(&mut self, es: &[Expr]) -> R<V> {
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

    /// `[a, b, c]`: the elements' words in order.
    pub(super) fn array(&mut self, es: &[Expr]) -> R<V> {
        let vs = es.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
        let elem = vs.first().map(|v| v.ty.clone()).unwrap_or(Type::Unit);
        Ok(V {
            ty: Type::Array(Box::new(elem), vs.len()),
            w: vs.into_iter().flat_map(|v| v.w).collect(),
        })
    }

    /// `[x; n]` with a literal `n`: `x`'s words `n` times.
    pub(super) fn array_repeat(&mut self, x: &Expr, n: &Expr) -> R<V> {
        let v = self.expr(x)?;
        let n = n
            .literal_usize()
            .ok_or_else(|| unsupported("`[x; n]` with a length that is not a literal"))?;
        Ok(V {
            ty: Type::Array(Box::new(v.ty.clone()), n),
            w: (0..n).flat_map(|_| v.w.clone()).collect(),
        })
    }

    /// A record: its fields' words in declaration order, whatever order they are written in.
    pub(super) fn record(&mut self, name: &str, fields: &[(String, Expr)]) -> R<V> {
        let (ty, w) = self.record_words(name, fields, |f, x| {
            let v = f.expr(x)?;
            Ok((v.ty, v.w))
        })?;
        Ok(V { ty, w })
    }

    /// A record's type and words, each field evaluated by `eval` (as its type and words,
    /// scalar or per lane) in the order written and laid out in declaration order.
    pub(super) fn record_words<W>(
        &mut self,
        name: &str,
        fields: &[(String, Expr)],
        mut eval: impl FnMut(&mut Self, &Expr) -> R<(Type, Vec<W>)>,
    ) -> R<(Type, Vec<W>)> {
        let mut vals = HashMap::new();
        for (f, x) in fields {
            vals.insert(f.clone(), eval(self, x)?);
        }
        let order: Vec<String> = match self.g.records.get(name) {
            Some(decl) => decl.iter().map(|(f, _)| f.clone()).collect(),
            None => fields.iter().map(|(f, _)| f.clone()).collect(),
        };
        let mut w = Vec::new();
        let mut tys = Vec::new();
        for f in order {
            let (ty, words) = vals
                .remove(&f)
                .ok_or_else(|| format!("record `{name}` needs field `{f}`"))?;
            tys.push((f, ty));
            w.extend(words);
        }
        Ok((Type::Record(name.to_string(), tys), w))
    }

    pub(super) fn lit(&mut self, l: &Lit) -> R<V> {
        let (s, w) = match l {
            Lit::Bool(b) => (ScalarType::Bool, self.b.ins().iconst(ct::I8, i64::from(*b))),
            Lit::Int(v, Some(s)) if s.is_float() => (*s, self.fconst(*s, *v as f64)),
            Lit::Int(v, Some(s)) => {
                // Cranelift takes a narrow constant's bits zero-extended.
                let bits = u64::MAX >> (64 - clif(*s).bits());
                (*s, self.b.ins().iconst(clif(*s), (*v & bits) as i64))
            }
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

    pub(super) fn fconst(&mut self, s: ScalarType, v: f64) -> Value {
        if s == ScalarType::F32 {
            self.b.ins().f32const(v as f32)
        } else {
            self.b.ins().f64const(v)
        }
    }

    pub(super) fn constant(&mut self, c: &str) -> R<V> {
        let s = const_type(c).ok_or_else(|| unsupported(format!("the constant `{c}`")))?;
        let lit = constant_lit(c, s);
        self.lit(&lit.ok_or_else(|| unsupported(format!("the constant `{c}`")))?)
    }

    pub(super) fn test_pat(&mut self, p: &Pat, v: &V) -> R<Value> {
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

    pub(super) fn bound(&mut self, p: &Pat, v: &V) -> R<Value> {
        match p {
            Pat::Lit { negative, lit } => self.pat_const(*negative, lit, v),
            Pat::Const(name) => Ok(self.constant(name)?.w[0]),
            _ => Err(unsupported("this range bound")),
        }
    }

    pub(super) fn pat_const(&mut self, negative: bool, lit: &Lit, v: &V) -> R<Value> {
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

    pub(super) fn eq(&mut self, v: &V, c: Value) -> R<Value> {
        let s = self.scalar(v)?;
        Ok(if s.is_float() {
            self.b.ins().fcmp(FloatCC::Equal, v.w[0], c)
        } else {
            self.b.ins().icmp(IntCC::Equal, v.w[0], c)
        })
    }

    /// Binds an irrefutable pattern (or a matched one) to a value.
    pub(super) fn bind(&mut self, p: &Pat, v: V) -> R<()> {
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
}
