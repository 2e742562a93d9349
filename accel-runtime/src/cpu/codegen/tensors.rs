//! Tensors made inside a site (`Tensor::zeros(shape)`, `Tensor::from_vec(v, shape)`,
//! `t.to_vec()`) and their elements in scalar code (`t.get(index)`, `t.set(index, v)`). A tensor is the words of its view (see `backend::abi`): its first
//! element's address, its rank and `MAX_RANK` dimensions (1 past the rank). A new
//! tensor's memory is the site function's own (a loop's step recycles what it no longer
//! holds) or, inside a kernel, the running thread's; either is freed when the run ends,
//! and `to_vec` copies, so that no sequence shares memory a tensor still writes.

use super::cx::*;
use crate::backend::abi::MAX_RANK;
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::{condcodes::IntCC, types as ct, InstBuilder, Value};

/// A shape's rank and dimensions (1 past the rank).
struct Shape {
    rank: Value,
    dims: [Value; MAX_RANK],
}

impl FnCx<'_, '_> {
    /// `Tensor::zeros(shape)` of elements `elem` (the type its `let` gives the tensor).
    pub(super) fn tensor_zeros(&mut self, elem: &Type, shape: &Expr) -> R<V> {
        let s = tensor_scalar(elem)?;
        let shape = self.expr(shape)?;
        let shape = self.shape(&shape)?;
        let count = self.element_count(&shape);
        let bytes = self.bytes_of(count, size_of(s));
        let align = self.iconst(size_of(s));
        let host = self.iconst(i64::from(self.host));
        let ctx = self.ctx;
        let p = self.allocated("accel_alloc_zeroed", &[ctx, bytes, align, host], bytes);
        Ok(tensor(elem, p, &shape))
    }

    /// `Tensor::from_vec(v, shape)`: a copy of `v`'s elements (the sequence may be the
    /// caller's), which must fill the shape.
    pub(super) fn tensor_from_vec(&mut self, v: &Expr, shape: &Expr) -> R<V> {
        let seq = self.expr(v)?;
        let Type::Seq(elem) = &seq.ty else {
            return Err(format!(
                "`Tensor::from_vec` of a {} (a bug in accel)",
                seq.ty
            ));
        };
        let s = tensor_scalar(elem)?;
        let shape = self.expr(shape)?;
        let shape = self.shape(&shape)?;
        let count = self.element_count(&shape);
        let len = seq.w[0];
        let unfilled = self.b.ins().icmp(IntCC::NotEqual, len, count);
        self.fail_if(unfilled, FailureKind::TensorFill, len, count);
        let copy = self.alloc_columns(elem, count)?[0];
        let bytes = self.scaled(count, s);
        self.helper("accel_copy", &[copy, seq.w[1], bytes]);
        Ok(tensor(elem, copy, &shape))
    }

    /// `t.to_vec()`: the view's elements in row-major order, copied.
    pub(super) fn tensor_to_vec(&mut self, t: &V) -> R<V> {
        let Type::Tensor(elem) = &t.ty else {
            unreachable!("a tensor")
        };
        let s = tensor_scalar(elem)?;
        let mut count = t.w[2];
        for k in 1..MAX_RANK {
            count = self.b.ins().imul(count, t.w[2 + k]);
        }
        let copy = self.alloc_columns(elem, count)?[0];
        let bytes = self.scaled(count, s);
        self.helper("accel_copy", &[copy, t.w[0], bytes]);
        Ok(V {
            ty: Type::Seq(elem.clone()),
            w: vec![count, copy],
        })
    }

    /// `t.get(index)` or `t.set(index, value)` (`a`: the index, then the value); with
    /// `checked`, the rank and each coordinate are checked (not where proven in bounds).
    pub(super) fn tensor_element(
        &mut self,
        t: &V,
        s: ScalarType,
        method: &str,
        a: &[V],
        checked: bool,
    ) -> R<V> {
        let idx = &a[0];
        let coords = idx.w.len();
        if checked {
            let wrong_rank = self
                .b
                .ins()
                .icmp_imm_s(IntCC::NotEqual, t.w[1], coords as i64);
            let c = self.iconst(coords as i64);
            let rank = t.w[1];
            self.fail_if(wrong_rank, FailureKind::Rank, c, rank);
        }
        if coords > MAX_RANK {
            // No tensor compiled code holds has this rank: the access fails wherever it
            // runs.
            let always = self.b.ins().iconst(ct::I8, 1);
            let (c, rank) = (self.iconst(coords as i64), t.w[1]);
            self.fail_if(always, FailureKind::Rank, c, rank);
            return Ok(match method {
                "get" => V {
                    ty: Type::Scalar(s),
                    w: vec![self.zero(clif(s))],
                },
                _ => V::unit(),
            });
        }
        let mut flat = self.iconst(0);
        for (k, &i) in idx.w.iter().enumerate() {
            let dim = t.w[2 + k];
            if checked {
                let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, dim);
                self.fail_if(oob, FailureKind::Index, i, dim);
            }
            let scaled = self.b.ins().imul(flat, dim);
            flat = self.b.ins().iadd(scaled, i);
        }
        let off = self.scaled(flat, s);
        let addr = self.b.ins().iadd(t.w[0], off);
        if method == "get" {
            let w = self.load(clif(s), addr, 0);
            Ok(V {
                ty: Type::Scalar(s),
                w: vec![w],
            })
        } else {
            self.store(a[1].w[0], addr, 0);
            Ok(V::unit())
        }
    }

    /// The rank and dimensions of a shape: an array of `usize`s (its rank known here) or
    /// a sequence of them (its rank checked against `MAX_RANK` as the code runs).
    fn shape(&mut self, shape: &V) -> R<Shape> {
        let one = self.iconst(1);
        match &shape.ty {
            Type::Array(_, k) if *k > MAX_RANK => Err(unsupported(format!(
                "tensors of rank {k} (compiled code holds rank {MAX_RANK} at most)"
            ))),
            Type::Array(..) => {
                let mut dims = [one; MAX_RANK];
                dims[..shape.w.len()].copy_from_slice(&shape.w);
                let rank = self.iconst(shape.w.len() as i64);
                Ok(Shape { rank, dims })
            }
            Type::Seq(_) => {
                let (rank, at) = (shape.w[0], shape.w[1]);
                let most = self.iconst(MAX_RANK as i64);
                let high = self.b.ins().icmp(IntCC::UnsignedGreaterThan, rank, most);
                self.fail_if(high, FailureKind::TensorRank, rank, most);
                // Dimension `k` where the rank passes it, else 1: read under a branch,
                // since the sequence may be shorter.
                let mut dims = [one; MAX_RANK];
                for (k, dim) in dims.iter_mut().enumerate() {
                    let inside =
                        self.b
                            .ins()
                            .icmp_imm_u(IntCC::UnsignedGreaterThan, rank, k as i64);
                    let read = self.b.create_block();
                    let join = self.b.create_block();
                    let d = self.b.append_block_param(join, ct::I64);
                    self.b.ins().brif(inside, read, &[], join, &[one.into()]);
                    self.b.switch_to_block(read);
                    let x = self.load(ct::I64, at, 8 * k as i32);
                    self.b.ins().jump(join, &[x.into()]);
                    self.b.switch_to_block(join);
                    *dim = d;
                }
                Ok(Shape { rank, dims })
            }
            t => Err(format!("a tensor's shape of type {t} (a bug in accel)")),
        }
    }

    /// The product of a shape's dimensions; a product past 64 bits fails the run as an
    /// allocation too large (detail words `u64::MAX` and 0).
    fn element_count(&mut self, shape: &Shape) -> Value {
        let mut count = shape.dims[0];
        let mut wrapped = self.iconst(0);
        for &d in &shape.dims[1..] {
            let high = self.b.ins().umulhi(count, d);
            wrapped = self.b.ins().bor(wrapped, high);
            count = self.b.ins().imul(count, d);
        }
        let too_many = self.b.ins().icmp_imm_u(IntCC::NotEqual, wrapped, 0);
        let (all, none) = (self.iconst(-1), self.iconst(0));
        self.fail_if(too_many, FailureKind::Alloc, all, none);
        count
    }
}

/// The scalar type of a tensor's elements (compiled code holds tensors of scalars).
fn tensor_scalar(elem: &Type) -> R<ScalarType> {
    match elem {
        Type::Scalar(s) => Ok(*s),
        _ => Err(unsupported("tensors of compound elements")),
    }
}

/// The words of a whole tensor at `p` of `shape`.
fn tensor(elem: &Type, p: Value, shape: &Shape) -> V {
    V {
        ty: Type::Tensor(Box::new(elem.clone())),
        w: [vec![p, shape.rank], shape.dims.to_vec()].concat(),
    }
}
