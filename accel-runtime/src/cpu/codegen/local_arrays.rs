//! Local arrays kept in memory: a `let mut` array that the code assigns at a computed
//! index (a histogram's `h[d] += 1`, `c[i] += b[i]`) lives in a stack slot, one 8-byte
//! word per word of its elements, so that an update is one load and one store instead of
//! a select per element (arrays otherwise live in registers, word by word). Reads at a
//! computed index load one element; reading the whole array loads every word.

use super::cx::*;
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, Pat, Stmt, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types as ct, InstBuilder, StackSlotData, StackSlotKind, Value};

impl FnCx<'_, '_> {
    /// Binds `name` to array `v` in a stack slot.
    pub(super) fn bind_local_array(&mut self, name: &str, v: V) -> R<()> {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (8 * v.w.len().max(1)) as u32,
            3,
        ));
        let addr = self.b.ins().stack_addr(ct::I64, slot, 0);
        for (k, w) in v.w.iter().enumerate() {
            self.store(*w, addr, 8 * k as i32);
        }
        self.vars.insert(name.to_string(), (v.ty.clone(), vec![]));
        self.mem_arrays.insert(name.to_string(), (v.ty, addr));
        Ok(())
    }

    /// The whole array of type `ty` at `addr`.
    pub(super) fn load_local_array(&mut self, ty: &Type, addr: Value) -> R<V> {
        let w = words(ty)?
            .iter()
            .enumerate()
            .map(|(k, &t)| self.load(t, addr, 8 * k as i32))
            .collect();
        Ok(V { ty: ty.clone(), w })
    }

    /// The address and type of `place` (a local array, or an element or field of one,
    /// indices checked), when it is rooted at a local array in memory.
    pub(super) fn local_place(&mut self, place: &Expr) -> R<Option<(Value, Type)>> {
        match place {
            Expr::Var(n) => Ok(self.mem_arrays.get(n).map(|(t, a)| (*a, t.clone()))),
            Expr::Field(base, f) => {
                let Some((addr, t)) = self.local_place(base)? else {
                    return Ok(None);
                };
                let (ft, off) = field_offset(&t, f)?;
                Ok(Some((self.b.ins().iadd_imm_s(addr, 8 * off as i64), ft)))
            }
            Expr::Index(base, i) => {
                let Some((addr, t)) = self.local_place(base)? else {
                    return Ok(None);
                };
                let Type::Array(elem, n) = &t else {
                    return Err(format!("indexing a value of type {t}"));
                };
                let (elem, n) = ((**elem).clone(), *n);
                let i = self.expr(i)?.w[0];
                let len = self.iconst(n as i64);
                let oob = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, i, len);
                self.fail_if(oob, FailureKind::Index, i, len);
                let per = words(&elem)?.len() as i64;
                let off = self.b.ins().imul_imm_s(i, 8 * per);
                Ok(Some((self.b.ins().iadd(addr, off), elem)))
            }
            _ => Ok(None),
        }
    }

    /// Stores `v` at a place of a local array in memory.
    pub(super) fn store_local(&mut self, addr: Value, v: &V) {
        for (k, w) in v.w.iter().enumerate() {
            self.store(*w, addr, 8 * k as i32);
        }
    }
}

/// Whether the code after a `let` binding `name` (`rest`, the block's later statements
/// and result) assigns an element of it at an index that is not a literal.
pub(super) fn assigned_at_computed_index(name: &str, rest: &[Stmt], result: Option<&Expr>) -> bool {
    let mut found = false;
    let mut visit = |e: &Expr| {
        e.walk(&mut |x| {
            if let Expr::Assign { target, .. } = x {
                let mut at = &**target;
                let mut computed = false;
                loop {
                    match at {
                        Expr::Index(b, i) => {
                            computed |= i.literal_usize().is_none();
                            at = b;
                        }
                        Expr::Field(b, _) => at = b,
                        _ => break,
                    }
                }
                found |= computed && matches!(at, Expr::Var(v) if v == name);
            }
        })
    };
    for st in rest {
        match st {
            Stmt::Let { init: Some(x), .. } | Stmt::Expr(x) => visit(x),
            Stmt::Let { init: None, .. } => {}
        }
    }
    if let Some(r) = result {
        visit(r);
    }
    found
}

/// Whether `pat` binds one mutable name, which it gives.
pub(super) fn mutable_name(pat: &Pat) -> Option<&str> {
    match pat {
        Pat::Bind {
            name,
            mutable: true,
        } => Some(name),
        _ => None,
    }
}
