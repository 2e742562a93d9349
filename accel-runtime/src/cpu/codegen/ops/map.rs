//! The producers, `map`, `map2` and `create`: delayed arrays whose consumers compute an
//! element where they need it; manifest (at the top level: a kernel writing each chunk's
//! elements, SIMD when the element allows; nested: a loop) when nothing consumes them.

use super::super::cx::*;
use super::super::proofs::Proofs;
use crate::backend::failure::FailureKind;
use accel_ir::ops::{one_param, Create, Map, Map2, OpView};
use accel_ir::{Expr, ParOp, Pat, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};

/// A producer, named.
#[derive(Clone, Copy)]
pub(in crate::cpu::codegen) enum Producer<'a> {
    Map(Map<'a>),
    Map2(Map2<'a>),
    Create(Create<'a>),
}

impl<'a> Producer<'a> {
    /// The producer `e` is, if it is one.
    pub(in crate::cpu::codegen) fn of(e: &'a Expr) -> Option<Producer<'a>> {
        let Expr::Par { op, args, .. } = e else {
            return None;
        };
        match op.view(args).ok()? {
            OpView::Map(m) => Some(Producer::Map(m)),
            OpView::Map2(m) => Some(Producer::Map2(m)),
            OpView::Create(c) => Some(Producer::Create(c)),
            _ => None,
        }
    }

    fn op(self) -> ParOp {
        match self {
            Producer::Map(_) => ParOp::Map,
            Producer::Map2(_) => ParOp::Map2,
            Producer::Create(_) => ParOp::Create,
        }
    }

    /// Its element function's address: which of the site's producers it is.
    pub(in crate::cpu::codegen) fn key(self) -> usize {
        let f = match self {
            Producer::Map(m) => m.f,
            Producer::Map2(m) => m.f,
            Producer::Create(c) => c.f,
        };
        f as *const Expr as usize
    }

    /// Its arguments, in order.
    pub(in crate::cpu::codegen) fn args(self) -> Vec<&'a Expr> {
        match self {
            Producer::Map(m) => vec![m.f, m.xs],
            Producer::Map2(m) => vec![m.f, m.xs, m.ys],
            Producer::Create(c) => vec![c.n, c.f],
        }
    }

    /// The producer as an expression (for its type).
    fn expr(self) -> Expr {
        Expr::Par {
            op: self.op(),
            args: self.args().into_iter().cloned().collect(),
            loc: Default::default(),
        }
    }
}

impl FnCx<'_, '_> {
    /// A producer made manifest: a launch at the top level, a loop inside an element.
    pub(super) fn producer(&mut self, p: Producer<'_>) -> R<V> {
        if self.host {
            return self.launch_producer(p);
        }
        let (n, elem) = self.producer_shape(p)?;
        let cols = self.alloc_columns(&elem, n)?;
        self.each(n, |f, i| {
            let v = f.element(p, i)?;
            f.store_elem(&elem, &cols, i, &v.w)
        })?;
        let cols = self.finish_columns(&elem, n, cols)?;
        Ok(V {
            ty: Type::Seq(Box::new(elem)),
            w: [vec![n], cols].concat(),
        })
    }

    /// The length and element type of a producer (checking that `map2`'s inputs have one
    /// length).
    pub(super) fn producer_shape(&mut self, p: Producer<'_>) -> R<(Value, Type)> {
        let elem = match self.type_of(&p.expr())? {
            Type::Seq(e) => *e,
            t => return Err(format!("a producer of type {t}")),
        };
        let n = match p {
            Producer::Create(c) => self.expr(c.n)?.w[0],
            Producer::Map(m) => self.input_shape(m.xs)?.0,
            Producer::Map2(m) => {
                let (n, _) = self.input_shape(m.xs)?;
                let (len, _) = self.input_shape(m.ys)?;
                let differ = self.b.ins().icmp(IntCC::NotEqual, n, len);
                self.fail_if(differ, FailureKind::Lengths, n, len);
                n
            }
        };
        Ok((n, elem))
    }

    /// Element `i` of a producer.
    pub(in crate::cpu::codegen) fn element(&mut self, p: Producer<'_>, i: Value) -> R<V> {
        let usize_ty = Type::Scalar(ScalarType::Usize);
        match p {
            Producer::Create(c) => {
                // The index ranges over 0..n: sequences n is the length of are safe to index.
                let before = self.safe.len();
                if let Expr::Lambda { params, .. } = c.f {
                    if let Some((Pat::Bind { name, .. }, _)) = params.first() {
                        for s in Self::length_sources(c.n) {
                            self.safe.push((s, name.clone()));
                        }
                    }
                }
                let r = self.apply(
                    c.f,
                    vec![V {
                        ty: usize_ty,
                        w: vec![i],
                    }],
                );
                self.safe.truncate(before);
                r
            }
            Producer::Map(m) => {
                let x = self.input_element(m.xs, i)?;
                self.apply(m.f, vec![x])
            }
            Producer::Map2(m) => {
                let x = self.input_element(m.xs, i)?;
                let y = self.input_element(m.ys, i)?;
                self.apply(m.f, vec![x, y])
            }
        }
    }

    /// Elements `from..to` of a producer, stored into the output columns.
    fn produce_elements(
        &mut self,
        p: Producer<'_>,
        elem: &Type,
        out: &[Value],
        from: Value,
        to: Value,
    ) -> R<()> {
        self.counted_loop(from, to, ScalarType::Usize, |f, i| {
            let v = f.element(p, i)?;
            f.store_output(elem, out, i, &v.w)
        })
    }

    /// A top-level producer: a kernel writes each chunk's elements into the output.
    fn launch_producer(&mut self, p: Producer<'_>) -> R<V> {
        // The sequence this `create` may write in place (see `in_place`).
        let reuse = match (self.reuse.take(), p) {
            (Some((at, len, ptr)), Producer::Create(c)) if at == c.f as *const Expr as usize => {
                Some((len, ptr))
            }
            _ => None,
        };
        let (n, elem) = self.producer_shape(p)?;
        // The site's result, written in rows (see `Gen::rows_result`).
        let rows = match self.g.rows_result {
            Some((key, row)) if reuse.is_none() && key == p.key() => Some(row),
            _ => None,
        };
        self.g.out_row_bytes = rows;
        let l = match reuse {
            Some(old) => self.begin_launch_reusing(&p.args(), n, elem.clone(), old)?,
            None => self.begin_launch(&p.args(), n, Some(elem.clone()), None)?,
        };
        self.g.writes_in_place = reuse.is_some();
        let ran = self.run_independent_chunks(&l, p.op(), |f, c| {
            if let (true, Some(k)) = (f.g.spmd, c.scalar) {
                if let Some(rest) = f.gang_produce(p, &elem, &c.out_cols, (c.lo, c.hi), k)? {
                    // After the gangs, a few indices (or, when the gangs' bounds test
                    // failed, all of them): the scalar kernel's.
                    f.call_scalar(k, rest, c.hi);
                    return Ok(());
                }
            }
            let vectors = match f.g.spmd {
                true => None,
                false => f.vector_map(p, &elem, &c.out_cols, c.lo, c.hi)?,
            };
            let rest = vectors.unwrap_or(c.lo);
            // Versioned on the sequences the element indexes by the index (beyond those
            // the length already covers): N-body's `ys[i]` in its inner loop.
            let (param, indexed) = match p {
                Producer::Create(Create { f: lambda, .. }) => match one_param(lambda) {
                    Some((name, body)) => (name.to_string(), f.indexed_by(body, name)),
                    None => (String::new(), vec![]),
                },
                _ => (String::new(), vec![]),
            };
            let proofs = Proofs {
                indexed,
                ..Proofs::default()
            };
            if vectors.is_some() {
                // After the vectors, a few indices: one checked copy, less code to compile.
                f.produce_elements(p, &elem, &c.out_cols, rest, c.hi)
            } else {
                f.versioned(&proofs, &param, c.lo, c.hi, |f| {
                    f.produce_elements(p, &elem, &c.out_cols, rest, c.hi)
                })
            }
        });
        self.g.writes_in_place = false;
        self.g.out_row_bytes = None;
        ran?;
        self.g.wrote_rows |= rows.is_some();
        let out_cols = self.finish_columns(&elem, n, l.out_cols.clone())?;
        Ok(V {
            ty: Type::Seq(Box::new(elem)),
            w: [vec![n], out_cols].concat(),
        })
    }
}
