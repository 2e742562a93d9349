//! Expressions: each construct handed to the module that generates it.

use super::cx::*;
use accel_ir::{Expr, Type};
use cranelift_codegen::ir::Value;

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
                self.reuse = self.in_place_target(target, value);
                let v = self.expr(value);
                self.reuse = None;
                self.assign(target, v?)?;
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

    /// The sequence `target = value` may write in place (see `in_place`): the element
    /// function's address, the sequence's length and memory.
    fn in_place_target(&mut self, target: &Expr, value: &Expr) -> Option<(usize, Value, Value)> {
        let (Expr::Var(x), Expr::Par { args, .. }) = (target, value) else {
            return None;
        };
        let at = args.get(1)? as *const Expr as usize;
        if !self.host || !self.g.in_place.contains(&at) {
            return None;
        }
        match self.vars.get(x)? {
            (Type::Seq(e), words) if matches!(**e, Type::Scalar(_)) && words.len() == 2 => {
                let (len, ptr) = (words[0], words[1]);
                Some((at, self.b.use_var(len), self.b.use_var(ptr)))
            }
            _ => None,
        }
    }
}
