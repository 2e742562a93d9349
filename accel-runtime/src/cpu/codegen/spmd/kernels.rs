//! The gang loops of kernel chunks: a chunk's whole gangs of four consecutive indices,
//! each running the element (or iteration) for its four lanes; the caller runs the
//! indices left with scalar code.

use super::super::cx::*;
use super::super::ops::Producer;
use super::super::proofs::Proofs;
use super::uniform::varying_vars;
use super::{Gang, Slot, G};
use accel_ir::ops::{Create, ParallelLoop};
use accel_ir::{Expr, Pat, ScalarType, Type};
use cranelift_codegen::ir::{types as ct, InstBuilder, StackSlotData, StackSlotKind, Value};
use std::collections::HashMap;

impl FnCx<'_, '_> {
    /// Runs `each` for every whole gang of `lo..hi` (its first index given) with the
    /// element `body` over the index `param` generated for gangs: `param` is the gang's
    /// index and the sequences in `safe` are long enough for it. Returns where the
    /// indices left begin (`lo` when the bounds test failed: then no gang ran).
    pub(in crate::cpu::codegen) fn gang_loop(
        &mut self,
        body: &Expr,
        param: &str,
        safe: &[String],
        lo: Value,
        hi: Value,
        each: impl FnMut(&mut Self, Value) -> R<()>,
    ) -> R<Value> {
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4));
        let dummy = self.b.ins().stack_addr(ct::I64, slot, 0);
        let index = self.b.declare_var(ct::I64);
        let mut vars = HashMap::new();
        vars.insert(
            param.to_string(),
            (
                Type::Scalar(ScalarType::Usize),
                vec![Slot::Seq(index, true)],
            ),
        );
        self.vars
            .insert(param.to_string(), (Type::Scalar(ScalarType::Usize), vec![]));
        self.gang = Some(Gang {
            varying: varying_vars(body, &[param.to_string()]),
            vars,
            mask: None,
            dummy: Some(dummy),
            wide_masks: HashMap::new(),
        });
        let before = self.safe.len();
        for s in safe {
            self.safe.push((s.clone(), param.to_string()));
        }
        self.g.simd_loops += 1;
        let len = self.b.ins().isub(hi, lo);
        let gangs = self.b.ins().ushr_imm_u(len, 2);
        let top = self.b.ins().ishl_imm_u(gangs, 2);
        let top = self.b.ins().iadd(lo, top);
        // Sequences and tensors indexed by the gang's index checked once for the whole
        // chunk; when the test fails no gang runs, and the caller's checked scalar loop
        // takes every index (reporting the first that fails, as it would).
        let proofs = Proofs {
            indexed: self.indexed_by(body, param),
            tensors: self.tensor_accesses(body, param),
            affine: Vec::new(),
        };
        let each = std::cell::RefCell::new(each);
        let gangs_run = |f: &mut Self| {
            let zero = f.iconst(0);
            f.counted_loop(zero, gangs, ScalarType::Usize, |f, j| {
                let off = f.b.ins().ishl_imm_u(j, 2);
                let base = f.b.ins().iadd(lo, off);
                f.b.def_var(index, base);
                (each.borrow_mut())(f, base)
            })
        };
        let r = self.versioned_with(&proofs, param, lo, top, &gangs_run, None);
        self.safe.truncate(before);
        if let Some(g) = self.gang.take() {
            for name in g.vars.keys() {
                self.vars.remove(name);
            }
        }
        let proved = r?;
        Ok(self.b.ins().select(proved, top, lo))
    }
    /// A producer's chunk for gangs: each gang's element stored into the output columns.
    /// Returns where the scalar loop continues, or `None` when the producer is not a
    /// `create` over a named index.
    pub(in crate::cpu::codegen) fn gang_produce(
        &mut self,
        p: Producer<'_>,
        elem: &Type,
        out: &[Value],
        lo: Value,
        hi: Value,
    ) -> R<Option<Value>> {
        let Producer::Create(Create {
            n,
            f: Expr::Lambda { params, body },
        }) = p
        else {
            return Ok(None);
        };
        let Some((Pat::Bind { name, .. }, _)) = params.first() else {
            return Ok(None);
        };
        let safe = Self::length_sources(n);
        let rest = self.gang_loop(body, name, &safe, lo, hi, |f, base| {
            let g = f.gexpr(body)?;
            f.store_gang(elem, out, base, &g)
        })?;
        Ok(Some(rest))
    }

    /// A `parallel_loop` chunk for gangs: four iterations at a time. Returns where the
    /// scalar loop continues, or `None` when the body is not a closure over a named index.
    pub(in crate::cpu::codegen) fn gang_iterations(
        &mut self,
        p: ParallelLoop<'_>,
        lo: Value,
        hi: Value,
    ) -> R<Option<Value>> {
        let Expr::Lambda { params, body } = p.f else {
            return Ok(None);
        };
        let Some((Pat::Bind { name, .. }, _)) = params.first() else {
            return Ok(None);
        };
        let rest = self.gang_loop(body, name, &[], lo, hi, |f, _| {
            let _: G = f.gexpr(body)?;
            Ok(())
        })?;
        Ok(Some(rest))
    }
}
