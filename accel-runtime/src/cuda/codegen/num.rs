//! Scalar arithmetic: operators (integer arithmetic wraps, division is checked), casts
//! with Rust's `as` semantics.

use super::kernel::*;
use crate::cuda::c::*;
use accel_ir::{BinOp, Expr, ScalarType, Type, UnOp};

impl KernelGen<'_> {
    /// `-x` and `!x`.
    pub(super) fn unary(&mut self, op: UnOp, x: &Expr) -> R<V> {
        let v = self.expr(x)?;
        let Type::Scalar(s) = v.ty else {
            let symbol = if op == UnOp::Neg { "-" } else { "!" };
            return Err(unsupported(format!("`{symbol}` on {}", v.ty)));
        };
        let x = &v.w[0];
        let r = match (op, s) {
            (UnOp::Not, ScalarType::Bool) => format!("!{x}"),
            (UnOp::Not, _) => format!("({})~{x}", cty(s)),
            (UnOp::Neg, s) if s.is_float() => format!("-{x}"),
            (UnOp::Neg, _) => format!("accel_neg({x})"),
        };
        let t = self.let_(cty(s), "u", &r);
        Ok(V::scalar(s, t))
    }

    /// `x as t`.
    pub(super) fn cast_expr(&mut self, x: &Expr, t: &Type) -> R<V> {
        let v = self.expr(x)?;
        let (Type::Scalar(from), Type::Scalar(to)) = (&v.ty, t) else {
            return Err(unsupported(format!("a cast from {} to {t}", v.ty)));
        };
        let c = cast(&v.w[0], *from, *to);
        let r = self.let_(cty(*to), "cast", &c);
        Ok(V::scalar(*to, r))
    }

    pub(super) fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<V> {
        if matches!(op, BinOp::And | BinOp::Or) {
            // Short-circuit: the right operand may index out of bounds when the left decides.
            let l = self.expr(a)?.w[0].clone();
            let out = self.let_("bool", "logic", &l);
            let test = if op == BinOp::And {
                out.clone()
            } else {
                format!("!{out}")
            };
            self.line(&format!("if ({test}) {{"));
            self.depth += 1;
            let r = self.expr(b)?.w[0].clone();
            self.line(&format!("{out} = {r};"));
            self.depth -= 1;
            self.line("}");
            return Ok(V::scalar(ScalarType::Bool, out));
        }
        let x = self.expr(a)?;
        let y = self.expr(b)?;
        let Type::Scalar(s) = x.ty else {
            if matches!(op, BinOp::Eq | BinOp::Ne) && x.w.len() == y.w.len() {
                let eq = conj(
                    x.w.iter()
                        .zip(&y.w)
                        .map(|(p, q)| format!("({p} == {q})"))
                        .collect(),
                );
                let r = if op == BinOp::Eq {
                    eq
                } else {
                    format!("!{eq}")
                };
                let v = self.let_("bool", "eq", &r);
                return Ok(V::scalar(ScalarType::Bool, v));
            }
            return Err(unsupported(format!("`{}` on {}", op.symbol(), x.ty)));
        };
        let (p, q) = (&x.w[0], &y.w[0]);
        let int = !s.is_float() && s != ScalarType::Bool;
        let min = int_min(s);
        let (r, rt) = match op {
            BinOp::Add if int => (format!("accel_add({p}, {q})"), s),
            BinOp::Sub if int => (format!("accel_sub({p}, {q})"), s),
            BinOp::Mul if int => (format!("accel_mul({p}, {q})"), s),
            BinOp::Div if int => (format!("accel_div<{}>({p}, {q}, {min}, err)", cty(s)), s),
            BinOp::Rem if int => (format!("accel_rem<{}>({p}, {q}, {min}, err)", cty(s)), s),
            BinOp::Rem => (
                format!(
                    "{}({p}, {q})",
                    if s == ScalarType::F32 {
                        "fmodf"
                    } else {
                        "fmod"
                    }
                ),
                s,
            ),
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {
                (format!("{p} {} {q}", op.symbol()), s)
            }
            BinOp::Shl => (format!("accel_shl({p}, (ull)({q}))"), s),
            BinOp::Shr => (format!("accel_shr({p}, (ull)({q}))"), s),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                (format!("({})({p} {} {q})", cty(s), op.symbol()), s)
            }
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                (format!("{p} {} {q}", op.symbol()), ScalarType::Bool)
            }
            BinOp::And | BinOp::Or => unreachable!("handled above"),
        };
        let v = self.let_(cty(rt), "bin", &r);
        Ok(V::scalar(rt, v))
    }
}
