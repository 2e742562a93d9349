//! Sequential loops: counted loops and `for` loops, versioned so that one test before the
//! loop replaces a bounds check per access inside it (see [`super::proofs`]).

use super::cx::*;
use super::proofs::Proofs;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};

impl FnCx<'_, '_> {
    /// `for var in lo..hi { body }`.
    pub(super) fn for_expr(&mut self, var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> R<V> {
        let lo = self.expr(lo)?;
        let hi = self.expr(hi)?;
        let s = self.scalar(&lo)?;
        let (lo, hi) = (lo.w[0], hi.w[0]);
        self.for_loop(var, lo, hi, s, body)?;
        Ok(V::unit())
    }

    /// `while cond { body }`.
    pub(super) fn while_loop(&mut self, cond: &Expr, body: &Expr) -> R<V> {
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let c = self.expr(cond)?;
        self.b.ins().brif(c.w[0], body_block, &[], exit, &[]);
        self.b.switch_to_block(body_block);
        self.expr(body)?;
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(V::unit())
    }

    /// `for i in lo..hi { body(i) }`.
    pub(super) fn counted_loop(
        &mut self,
        lo: Value,
        hi: Value,
        s: ScalarType,
        mut body: impl FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let t = clif(s);
        let i = self.b.declare_var(t);
        self.b.def_var(i, lo);
        let head = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let iv = self.b.use_var(i);
        let cc = if signed(s) {
            IntCC::SignedLessThan
        } else {
            IntCC::UnsignedLessThan
        };
        let go = self.b.ins().icmp(cc, iv, hi);
        self.b.ins().brif(go, body_block, &[], exit, &[]);
        self.b.switch_to_block(body_block);
        body(self, iv)?;
        let iv = self.b.use_var(i);
        let next = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// `for var in lo..hi { body }`, versioned: when every sequence the body indexes by the
    /// loop variable is at least `hi` long, one test up front replaces a check per access.
    pub(super) fn for_loop(
        &mut self,
        var: &str,
        lo: Value,
        hi: Value,
        s: ScalarType,
        body: &Expr,
    ) -> R<()> {
        let run = |f: &mut Self| {
            f.counted_loop(lo, hi, s, |f, i| {
                f.bind_var(
                    var,
                    V {
                        ty: Type::Scalar(s),
                        w: vec![i],
                    },
                );
                f.expr(body).map(|_| ())
            })
        };
        if s != ScalarType::Usize {
            return run(self);
        }
        let proofs = Proofs {
            indexed: self.indexed_by(body, var),
            tensors: self.tensor_accesses(body, var),
            affine: self.affine_loads(body, var),
        };
        self.versioned(&proofs, var, lo, hi, run)
    }
}
