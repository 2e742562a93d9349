//! `flatten`: a regular sequence of rows is already flat columns; only the length changes.

use super::super::cx::*;
use accel_ir::ops::Flatten;
use accel_ir::Type;
use cranelift_codegen::ir::InstBuilder;

impl FnCx<'_, '_> {
    /// `flatten(xss)`, at the top level and inside elements alike.
    pub(super) fn flattened(&mut self, op: Flatten<'_>) -> R<V> {
        let v = self.expr(op.xss)?;
        let Type::Seq(row) = &v.ty else {
            return Err("flatten of a value that is not a sequence".into());
        };
        let Type::Seq(elem) = &**row else {
            return Err("flatten of a sequence that is not nested".into());
        };
        let n = self.b.ins().imul(v.w[0], v.w[1]);
        Ok(V {
            ty: Type::Seq(elem.clone()),
            w: [vec![n], v.w[2..].to_vec()].concat(),
        })
    }
}
