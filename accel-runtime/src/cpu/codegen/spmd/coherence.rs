//! Where a condition holds across a gang, decided with scalar tests instead of masks: a
//! comparison of the gang's consecutive index with a uniform value (`i < k`, a stencil's
//! `i == 0 || j == n - 1`) holds in no lane, in every lane, or in some, which the first
//! and last lanes tell. An `if` on such a condition then runs one arm for the whole gang
//! where it can (see `control`'s `gif_summarized`).

use super::super::cx::*;
use super::super::num::comparison;
use super::state::never_zero;
use accel_ir::{BinOp, Expr, UnOp};
use cranelift_codegen::ir::condcodes::CondCode;
use cranelift_codegen::ir::{InstBuilder, Value};

impl FnCx<'_, '_> {
    /// A scalar that is true only when `cond` holds in no lane of the gang, computed
    /// without the condition's masks, for conditions made of `||`, `&&` and comparisons
    /// of the gang's consecutive index (plus uniform terms) or uniform values with
    /// uniform values (`i == 0 || j == 0 || i == n - 1 || j == n - 1` of a row walk).
    /// `None` for other conditions. It may be false where no lane holds (the gang wraps
    /// around the type's largest value), never true where one does.
    pub(super) fn holds_in_no_lane(&mut self, cond: &Expr) -> R<Option<Value>> {
        self.holds_alike(cond, Lanes::None)
    }

    /// A scalar that is true only when `cond` holds in every lane of the gang, for the
    /// conditions [`Self::holds_in_no_lane`] knows (a comparison holds everywhere where
    /// its opposite holds nowhere). `None` for other conditions; it may be false where
    /// every lane holds, never true where one does not.
    pub(super) fn holds_in_every_lane(&mut self, cond: &Expr) -> R<Option<Value>> {
        self.holds_alike(cond, Lanes::Every)
    }

    /// Whether `cond` holds in `lanes` of the gang (see the two callers).
    fn holds_alike(&mut self, cond: &Expr, lanes: Lanes) -> R<Option<Value>> {
        match cond {
            Expr::Binary(op @ (BinOp::Or | BinOp::And), a, b) => {
                let (Some(x), Some(y)) = (self.holds_alike(a, lanes)?, self.holds_alike(b, lanes)?)
                else {
                    return Ok(None);
                };
                // In no lane: `a || b` when neither holds, `a && b` when either does not.
                // In every lane: `a && b` when both hold, `a || b` at least when either
                // does.
                let both = matches!(
                    (op, lanes),
                    (BinOp::Or, Lanes::None) | (BinOp::And, Lanes::Every)
                );
                Ok(Some(match both {
                    true => self.b.ins().band(x, y),
                    false => self.b.ins().bor(x, y),
                }))
            }
            Expr::Binary(op, a, b) if comparison(*op).is_some() => {
                if !self.plain_arithmetic(a) || !self.plain_arithmetic(b) {
                    return Ok(None);
                }
                let (l, r) = (self.gexpr(a)?, self.gexpr(b)?);
                let s = Self::g_scalar(&l)?;
                let cmp = comparison(*op).expect("checked");
                let nowhere = match lanes {
                    Lanes::None => cmp,
                    Lanes::Every => cmp.complement(),
                };
                Ok(self.compare_holds_nowhere(nowhere, s, &l.w[0], &r.w[0]))
            }
            // `!c` holds in no lane where `c` holds in every lane, and the other way round.
            Expr::Unary(UnOp::Not, c) => self.holds_alike(c, lanes.opposite()),
            _ => Ok(None),
        }
    }

    /// Whether `e` is variables and literals under `+`, `-`, `*`, casts, and division or
    /// remainder by a non-zero literal or by a divisor of the rows walked (checked
    /// non-zero before any gang runs; `p % w` is then the column): code that cannot fail
    /// or have effects, so that evaluating it once more for a test costs nothing.
    fn plain_arithmetic(&self, e: &Expr) -> bool {
        match e {
            Expr::Var(_) | Expr::Lit(_) => true,
            Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
                self.plain_arithmetic(a) && self.plain_arithmetic(b)
            }
            Expr::Binary(BinOp::Div | BinOp::Rem, a, d) => {
                let divisors = self.gang.as_ref().and_then(|g| g.rows.as_ref());
                let divisors = divisors.map_or(&[][..], |r| &r.divisors[..]);
                never_zero(d, divisors) && self.plain_arithmetic(a)
            }
            Expr::Cast(x, _) => self.plain_arithmetic(x),
            _ => false,
        }
    }
}

/// The lanes a condition is tested to hold in.
#[derive(Clone, Copy)]
enum Lanes {
    None,
    Every,
}

impl Lanes {
    fn opposite(self) -> Lanes {
        match self {
            Lanes::None => Lanes::Every,
            Lanes::Every => Lanes::None,
        }
    }
}
