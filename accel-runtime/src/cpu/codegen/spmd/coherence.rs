//! Where a condition holds across a gang, decided with scalar tests instead of masks: a
//! comparison of the gang's consecutive index with a uniform value (`i < k`, a stencil's
//! `i == 0 || j == n - 1`) holds in no lane, in every lane, or in some, which the first
//! and last lanes tell. An `if` on such a condition then runs one arm for the whole gang
//! where it can (see `control`'s `gif_summarized`). Where such an `if` is the whole
//! element (after `let`s, [`Settling`]), the decision stays the same from gang to gang
//! until the index passes one of the condition's thresholds ([`FnCx::steady_span`]):
//! runs of gangs up to there take the arm without testing it (`walks`).

use super::super::cx::*;
use super::super::num::comparison;
use super::state::never_zero;
use super::Part;
use accel_ir::{BinOp, Expr, Pat, Stmt, UnOp};
use cranelift_codegen::ir::condcodes::{CondCode, IntCC};
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

    /// Whether the decisions of [`Self::holds_in_no_lane`] and [`Self::holds_in_every_lane`]
    /// on `cond` hold for runs of gangs that [`Self::steady_span`] can measure: every
    /// comparison in it sets values bound outside the element against the index plus or
    /// minus such values, or against each other (names read through the element's
    /// `let`s).
    pub(super) fn settles(&self, cond: &Expr, scope: &Settling<'_>) -> bool {
        match cond {
            Expr::Binary(BinOp::Or | BinOp::And, a, b) => {
                self.settles(a, scope) && self.settles(b, scope)
            }
            Expr::Unary(UnOp::Not, c) => self.settles(c, scope),
            Expr::Binary(op, a, b) if comparison(*op).is_some() => {
                let (a, b) = (scope.expand(a), scope.expand(b));
                let (ia, ib) = (self.invariant(&a, scope), self.invariant(&b, scope));
                let a_settles = ia || self.index_plus(&a, scope);
                let b_settles = ib || self.index_plus(&b, scope);
                self.plain_arithmetic(&a)
                    && self.plain_arithmetic(&b)
                    && (ia || ib)
                    && a_settles
                    && b_settles
            }
            _ => false,
        }
    }

    /// For a condition that [`Self::settles`], how many indices past the gang's first
    /// the decisions on it stay the same: whether a comparison of the lanes `s..s + w`
    /// (indices: `usize`) with `u` holds in none or in every lane changes only where the
    /// last lane reaches `u` and where the first passes it (for `==`: `s = u - w + 1` and
    /// `s = u + 1`; for `<=` and `>` one later), and where the lanes would wrap, so the
    /// run ends at the first of those past `s` (`u64::MAX` when none is). `None` where
    /// the comparisons' values are not of that form after all.
    pub(super) fn steady_span(&mut self, cond: &Expr) -> R<Option<Value>> {
        match cond {
            Expr::Binary(BinOp::Or | BinOp::And, a, b) => {
                let (Some(x), Some(y)) = (self.steady_span(a)?, self.steady_span(b)?) else {
                    return Ok(None);
                };
                Ok(Some(self.b.ins().umin(x, y)))
            }
            Expr::Unary(UnOp::Not, c) => self.steady_span(c),
            Expr::Binary(op, a, b) if comparison(*op).is_some() => {
                let (l, r) = (self.gexpr(a)?, self.gexpr(b)?);
                // As `lanes cmp u`.
                let (first, u, cmp) = match (&l.w[0], &r.w[0]) {
                    (Part::Seq(s, _), Part::Uni(u)) => (*s, *u, *op),
                    (Part::Uni(u), Part::Seq(s, _)) => (*s, *u, mirrored(*op)),
                    // Values bound outside the element (see `settles`): the same throughout.
                    (Part::Uni(_), Part::Uni(_)) => return Ok(Some(self.iconst(-1))),
                    _ => return Ok(None),
                };
                let lanes = self.lanes() as i64;
                // Where the first lane reaches `u` or passes it, or the last lane does
                // (with `<=` and `>`: one later), and where the lanes would wrap.
                let (last_reaches, first_passes) = match cmp {
                    BinOp::Le | BinOp::Gt => (2 - lanes, 1),
                    BinOp::Lt | BinOp::Ge => (1 - lanes, 0),
                    _ => (1 - lanes, 1),
                };
                let mut points = vec![self.iconst(1 - lanes)];
                for d in [last_reaches, first_passes] {
                    points.push(self.b.ins().iadd_imm_s(u, d));
                }
                let mut steady = self.iconst(-1);
                for c in points {
                    let ahead = self.b.ins().icmp(IntCC::UnsignedGreaterThan, c, first);
                    let distance = self.b.ins().isub(c, first);
                    let never = self.iconst(-1);
                    let distance = self.b.ins().select(ahead, distance, never);
                    steady = self.b.ins().umin(steady, distance);
                }
                Ok(Some(steady))
            }
            _ => Ok(None),
        }
    }

    /// Whether `e` (its names read through the element's `let`s) reads only values bound
    /// outside the element: the same for every gang.
    fn invariant(&self, e: &Expr, scope: &Settling<'_>) -> bool {
        let mut inside = false;
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                inside |= v == scope.param || scope.body.binds(v);
            }
        });
        !inside && self.outer_value(e)
    }

    /// Whether `e` (read through the `let`s) is the index plus or minus values
    /// [`Self::invariant`].
    fn index_plus(&self, e: &Expr, scope: &Settling<'_>) -> bool {
        match e {
            Expr::Var(v) => v == scope.param,
            Expr::Binary(BinOp::Add, a, b) => {
                (self.index_plus(a, scope) && self.invariant(b, scope))
                    || (self.invariant(a, scope) && self.index_plus(b, scope))
            }
            Expr::Binary(BinOp::Sub, a, b) => self.index_plus(a, scope) && self.invariant(b, scope),
            _ => false,
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

/// An element that is `let`s and one `if` (`let m = k + 1; if i < m { .. } else { .. }`),
/// as runs of gangs settle its condition.
pub(super) struct Settling<'a> {
    /// The element's index.
    pub(super) param: &'a str,
    /// The element.
    pub(super) body: &'a Expr,
    /// The `let`s before the `if`, in order.
    pub(super) lets: &'a [Stmt],
    /// The condition.
    pub(super) cond: &'a Expr,
}

impl<'a> Settling<'a> {
    /// The element `body` over `param` as `let`s and one `if`, if it is one.
    pub(super) fn of(body: &'a Expr, param: &'a str) -> Option<Settling<'a>> {
        let (lets, cond): (&[Stmt], &Expr) = match body {
            Expr::Block {
                stmts,
                result: Some(r),
            } => match &**r {
                Expr::If { cond, .. } => (stmts, cond),
                _ => return None,
            },
            Expr::If { cond, .. } => (&[], cond),
            _ => return None,
        };
        let simple = |st: &Stmt| {
            matches!(
                st,
                Stmt::Let {
                    pat: Pat::Bind { mutable: false, .. },
                    init: Some(_),
                    ..
                }
            )
        };
        lets.iter().all(simple).then_some(Settling {
            param,
            body,
            lets,
            cond,
        })
    }

    /// `e` with the names the `let`s bind replaced by their values.
    pub(super) fn expand(&self, e: &Expr) -> Expr {
        super::aliases::expand_lets(e, self.lets, &super::aliases::Aliases::new())
    }
}

/// `op` with its operands swapped (`u < x` is `x > u`).
pub(super) fn mirrored(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

/// Whether `cond` may hold in every lane of a gang (of more than one lane), as far as its
/// form tells: `==` of consecutive lanes with one value holds in one lane at most.
pub(super) fn may_hold_in_every_lane(cond: &Expr) -> bool {
    may_hold_alike(cond, true)
}

/// Whether `cond` may hold in every lane (`every`) or in none, by its form.
fn may_hold_alike(cond: &Expr, every: bool) -> bool {
    match cond {
        // Every lane: `a || b` where either does, `a && b` where both do; no lane: `a || b`
        // where neither does, `a && b` where either does not.
        Expr::Binary(op @ (BinOp::Or | BinOp::And), a, b) => {
            let (x, y) = (may_hold_alike(a, every), may_hold_alike(b, every));
            match (op, every) {
                (BinOp::Or, true) | (BinOp::And, false) => x || y,
                _ => x && y,
            }
        }
        Expr::Unary(UnOp::Not, c) => may_hold_alike(c, !every),
        Expr::Binary(BinOp::Eq, ..) => !every,
        Expr::Binary(BinOp::Ne, ..) => every,
        _ => true,
    }
}
