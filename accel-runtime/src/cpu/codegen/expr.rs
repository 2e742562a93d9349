//! Expressions: each construct handed to the module that generates it.

use super::cx::*;
use accel_ir::Expr;

impl FnCx<'_, '_> {
    /// Generates the code that computes `e`, giving its value.
    pub(super) fn expr(&mut self, e: &Expr) -> R<V> {
        match e {
            Expr::Lit(l) => self.lit(l),
            Expr::Var(v) => self.var(v),
            Expr::Const(c) => self.constant(c),
            Expr::Tuple(es) => self.tuple(es),
            Expr::Array(es) => self.array(es),
            Expr::ArrayRepeat(x, n) => self.array_repeat(x, n),
            Expr::Record { name, fields } => self.record(name, fields),
            Expr::Field(base, f) => {
                let v = self.expr(base)?;
                field(&v, f)
            }
            Expr::Index(base, i) => self.index_expr(base, i),
            Expr::Unary(op, x) => self.unary(*op, x),
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
            Expr::Cast(x, t) => self.cast_expr(x, t),
            Expr::Method { recv, method, args } => self.method(recv, method, args),
            Expr::Assoc { ty, func, args } => self.assoc(ty, func, args),
            Expr::If { cond, then, els } => self.if_(cond, then, els.as_deref()),
            Expr::Match { scrutinee, arms } => self.match_(scrutinee, arms),
            Expr::Block { stmts, result } => self.block(stmts, result.as_deref()),
            Expr::Assign { target, value } => {
                let v = self.expr(value)?;
                self.assign(target, v)?;
                Ok(V::unit())
            }
            Expr::For { var, lo, hi, body } => self.for_expr(var, lo, hi, body),
            Expr::While { cond, body } => self.while_loop(cond, body),
            Expr::Par { op, args, .. } => op.view(args).map_err(|e| e.to_string())?.lower(self),
            Expr::Seq(es) => self.seq_literal(es),
            Expr::SeqRepeat(x, n) => self.seq_repeat(x, n),
            Expr::Slice { seq, lo, hi } => self.slice(seq, lo, hi),
            Expr::Lambda { .. } => Err(unsupported(
                "a closure outside the function argument of a parallel operation",
            )),
            Expr::Call { .. } | Expr::FnRef(_) | Expr::Apply { .. } | Expr::Closure { .. } => {
                Err("calls remain after inlining".into())
            }
        }
    }
}
