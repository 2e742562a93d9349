//! Kernel expressions: each construct handed to the module that generates it.

use super::kernel::*;
use accel_ir::Expr;

impl KernelGen<'_> {
    /// Generates the C that computes `e` inside a kernel, giving its value.
    pub(super) fn expr(&mut self, e: &Expr) -> R<V> {
        match e {
            Expr::Lit(l) => self.lit(l),
            Expr::Var(v) => self
                .scope
                .get(v)
                .cloned()
                .ok_or_else(|| format!("`{v}` is not bound in kernel code")),
            Expr::Const(c) => self.constant(c),
            Expr::Tuple(es) | Expr::Array(es) => self.aggregate(e, es),
            Expr::ArrayRepeat(x, n) => self.array_repeat(x, n),
            Expr::Record { name, fields } => self.record(name, fields),
            Expr::Field(b, f) => {
                let v = self.expr(b)?;
                self.field(&v, f)
            }
            Expr::Index(b, i) => self.index_expr(b, i),
            Expr::Slice { seq, lo, hi } => self.slice(seq, lo, hi),
            Expr::Unary(op, x) => self.unary(*op, x),
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
            Expr::Cast(x, t) => self.cast_expr(x, t),
            Expr::Method { recv, method, args } => self.method_call(recv, method, args),
            Expr::Assoc { ty, func, args } => self.assoc(ty, func, args),
            Expr::If { cond, then, els } => self.if_(cond, then, els.as_deref()),
            Expr::Match { scrutinee, arms } => self.match_(scrutinee, arms),
            Expr::Block { stmts, result } => self.block(stmts, result.as_deref()),
            Expr::Assign { target, value } => {
                let v = self.expr(value)?;
                self.assign(target, &v)?;
                Ok(V::unit())
            }
            Expr::For { var, lo, hi, body } => self.for_loop(var, lo, hi, body),
            Expr::While { cond, body } => self.while_loop(cond, body),
            Expr::Par { op, args, .. } => op.view(args).map_err(|e| e.to_string())?.lower(self),
            Expr::Seq(es) if !es.is_empty() => self.seq_literal(es),
            Expr::SeqRepeat(x, count) => self.seq_repeat(x, count),
            Expr::Seq(_) => Err(unsupported("an empty `vec![]` inside a parallel operation")),
            Expr::Lambda { .. }
            | Expr::Call { .. }
            | Expr::FnRef(_)
            | Expr::Apply { .. }
            | Expr::Closure { .. } => Err(unsupported("a function value in kernel code")),
        }
    }
}
