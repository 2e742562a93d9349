//! Arithmetic per lane: operators (integer division lane by lane, checked in the running
//! lanes), comparisons as masks, casts with Rust's `as` semantics.

use super::super::cx::*;
use super::super::num::comparison;
use super::coherence::mirrored;
use super::{Mask, Part, G};
use accel_ir::{BinOp, Expr, ScalarType, Type, UnOp};
use cranelift_codegen::ir::condcodes::{CondCode, IntCC};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};

impl FnCx<'_, '_> {
    /// `-x`, `!x`.
    pub(super) fn gunary(&mut self, op: UnOp, x: &Expr) -> R<G> {
        let g = self.gexpr(x)?;
        let s = Self::g_scalar(&g)?;
        if let Part::Uni(v) = g.w[0] {
            let w = match (op, s) {
                (UnOp::Neg, s) if s.is_float() => self.b.ins().fneg(v),
                (UnOp::Neg, _) => self.b.ins().ineg(v),
                (UnOp::Not, ScalarType::Bool) => self.b.ins().bxor_imm_u(v, 1),
                (UnOp::Not, _) => self.b.ins().bnot(v),
            };
            return Ok(G {
                ty: g.ty,
                w: vec![Part::Uni(w)],
            });
        }
        let vs = self.vectors(&g.w[0], s);
        let out = vs
            .iter()
            .map(|&v| match (op, s) {
                (UnOp::Neg, s) if s.is_float() => self.b.ins().fneg(v),
                (UnOp::Neg, _) => self.b.ins().ineg(v),
                (UnOp::Not, _) => self.b.ins().bnot(v),
            })
            .collect();
        Ok(G {
            ty: g.ty,
            w: vec![self.wrap_part(s, Part::Var(out))],
        })
    }

    /// `a op b`.
    pub(super) fn gbinary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<G> {
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.glogic(op, a, b);
        }
        if let Some(g) = self.row_division(op, a, b)? {
            return Ok(g);
        }
        let l = self.gexpr(a)?;
        let r = self.gexpr(b)?;
        let s = Self::g_scalar(&l)?;
        if let (Part::Uni(x), Part::Uni(y)) = (&l.w[0], &r.w[0]) {
            // The same in every lane (a variable bound once from the gang's index, divided
            // down): scalar code's operation, once.
            let (x, y) = (*x, *y);
            let (ty, w) = match comparison(op) {
                Some(cmp) => (Type::Scalar(ScalarType::Bool), self.compare(cmp, s, x, y)),
                None if s.is_float() => (l.ty, self.float_arith(op, s, x, y)?),
                None => {
                    let rv = V {
                        ty: r.ty.clone(),
                        w: vec![],
                    };
                    (l.ty, self.int_arith(op, s, x, y, &rv)?)
                }
            };
            return Ok(G {
                ty,
                w: vec![Part::Uni(w)],
            });
        }
        if let Some(cmp) = comparison(op) {
            let m = self.gcompare(cmp, s, &l.w[0], &r.w[0]);
            return Ok(Self::bool_of(m));
        }
        if let Some(w) = self.index_arith(op, s, &l.w[0], &r.w[0]) {
            return Ok(G {
                ty: l.ty,
                w: vec![w],
            });
        }
        let w = if s.is_float() {
            self.gfloat_arith(op, s, &l.w[0], &r.w[0])?
        } else {
            let w = self.gint_arith(op, s, &l.w[0], &r.w[0], &r)?;
            // Division, `>>` and the bitwise operators keep normalized lanes in range.
            if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl) {
                self.wrap_part(s, w)
            } else {
                w
            }
        };
        Ok(G {
            ty: l.ty,
            w: vec![w],
        })
    }

    /// `p / d` and `p % d` in a gang loop walking rows of `d` (see `RowWalk`): the row,
    /// the same for every lane, and the offsets in it, consecutive.
    fn row_division(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<Option<G>> {
        let Some(rows) = self.gang.as_ref().and_then(|g| g.rows.clone()) else {
            return Ok(None);
        };
        if !matches!(op, BinOp::Div | BinOp::Rem) {
            return Ok(None);
        }
        let dealias = |e: &Expr| super::aliases::dealias(e, &rows.aliases);
        if dealias(a) != Expr::Var(rows.param.clone()) {
            return Ok(None);
        }
        let b = dealias(b);
        let Some(d) = rows.divisors.iter().find(|d| d.expr == b) else {
            return Ok(None);
        };
        let part = match op {
            BinOp::Div => Part::Uni(self.b.use_var(d.row)),
            _ => {
                let Part::Seq(base, _) = self.gvar(&rows.param)?.w[0] else {
                    return Ok(None);
                };
                let start = self.b.use_var(d.row_start);
                Part::Seq(self.b.ins().isub(base, start), false)
            }
        };
        Ok(Some(G {
            ty: Type::Scalar(ScalarType::Usize),
            w: vec![part],
        }))
    }

    /// A comparison per lane: a mask.
    pub(super) fn gcompare(&mut self, cmp: IntCC, s: ScalarType, a: &Part, b: &Part) -> Mask {
        if let Some(m) = self.lane_equal(cmp, s, a, b) {
            return m;
        }
        if let Some(m) = self.lane_order(cmp, s, a, b) {
            return m;
        }
        self.lane_by_lane_compare(cmp, s, a, b)
    }

    /// A scalar true only when `a cmp b` holds in no lane (see
    /// `FnCx::holds_in_no_lane`): for uniform operands, and for the gang's consecutive
    /// 64-bit index against a uniform value (false where the lanes wrap). `None` for
    /// other operands.
    pub(super) fn compare_holds_nowhere(
        &mut self,
        given: IntCC,
        s: ScalarType,
        a: &Part,
        b: &Part,
    ) -> Option<Value> {
        if s.is_float() || s == ScalarType::Bool {
            return None;
        }
        if let (Part::Uni(x), Part::Uni(y)) = (a, b) {
            let c = self.compare(given, s, *x, *y);
            return Some(self.b.ins().bxor_imm_u(c, 1));
        }
        let (base, u, cmp) = self.consecutive_and_uniform(given, s, a, b)?;
        let lanes = self.lanes() as i64;
        match cmp {
            IntCC::Equal => {
                let lane = self.b.ins().isub(u, base);
                return Some(self.b.ins().icmp_imm_u(
                    IntCC::UnsignedGreaterThanOrEqual,
                    lane,
                    lanes,
                ));
            }
            IntCC::NotEqual => return Some(self.b.ins().iconst(ct::I8, 0)),
            _ => {}
        }
        let (base, u, cmp) = self.unsigned_order(s, cmp, base, u);
        let no_wrap = self.lanes_do_not_wrap(base);
        let last = self.b.ins().iadd_imm_s(base, lanes - 1);
        let none = match cmp {
            // No lane below `u` (or at it): the first is not.
            IntCC::UnsignedLessThan => self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, u, base),
            IntCC::UnsignedLessThanOrEqual => self.b.ins().icmp(IntCC::UnsignedLessThan, u, base),
            // No lane above `u` (or at it): the last is not.
            IntCC::UnsignedGreaterThan => {
                self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, last, u)
            }
            _ => self.b.ins().icmp(IntCC::UnsignedLessThan, last, u),
        };
        Some(self.b.ins().band(no_wrap, none))
    }

    /// The gang's consecutive index `base + lane` and a uniform `u` compared by `given`
    /// (either way round), as `(base, u, cmp)` with `cmp` comparing `base + lane` to
    /// `u`: for 64-bit integers only (the lanes' numbers fit 32-bit lanes beside them).
    fn consecutive_and_uniform(
        &self,
        given: IntCC,
        s: ScalarType,
        a: &Part,
        b: &Part,
    ) -> Option<(Value, Value, IntCC)> {
        let (base, u, cmp) = match (a, b) {
            (Part::Seq(base, _), Part::Uni(u)) => (*base, *u, given),
            (Part::Uni(u), Part::Seq(base, _)) => (*base, *u, given.swap_args()),
            _ => return None,
        };
        let is_64 = |v: Value| self.b.func.dfg.value_type(v) == ct::I64;
        let ok = !s.is_float() && s != ScalarType::Bool && is_64(base) && is_64(u);
        ok.then_some((base, u, cmp))
    }

    /// An order comparison of `base + lane` with `u` as unsigned order. Comparisons come
    /// in signed form, the type saying which order (as `FnCx::compare`'s); signed order
    /// is unsigned order with the sign bit flipped on both sides, and flipping it on
    /// `base` flips it on every lane's `base + lane`.
    fn unsigned_order(
        &mut self,
        s: ScalarType,
        cmp: IntCC,
        base: Value,
        u: Value,
    ) -> (Value, Value, IntCC) {
        let signed_order = signed(s)
            && matches!(
                cmp,
                IntCC::SignedLessThan
                    | IntCC::SignedLessThanOrEqual
                    | IntCC::SignedGreaterThan
                    | IntCC::SignedGreaterThanOrEqual
            );
        if !signed_order {
            return (base, u, cmp.unsigned());
        }
        let base = self.b.ins().bxor_imm_s(base, i64::MIN);
        let u = self.b.ins().bxor_imm_s(u, i64::MIN);
        (base, u, cmp.unsigned())
    }

    /// Whether `base + lane` stays below 2^64 for every lane of the gang (an `I8`).
    fn lanes_do_not_wrap(&mut self, base: Value) -> Value {
        let lanes = self.lanes() as i64;
        self.b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThanOrEqual, base, -lanes)
    }

    /// The numbers of group `g`'s lanes, as 32-bit lanes.
    fn lane_numbers(&mut self, g: usize) -> Value {
        let group = self.group() as u32;
        let first = group * g as u32;
        let t = self.mask_type();
        self.vconst_bytes(
            t,
            (first..first + group).flat_map(u32::to_le_bytes).collect(),
        )
    }

    /// Scalar code's comparison, on vectors lane by lane.
    fn lane_by_lane_compare(&mut self, cmp: IntCC, s: ScalarType, a: &Part, b: &Part) -> Mask {
        let av = self.vectors(a, s);
        let bv = self.vectors(b, s);
        let parts: Vec<Value> = av
            .iter()
            .zip(&bv)
            .map(|(&x, &y)| self.compare(cmp, s, x, y))
            .collect();
        self.narrow_mask(&parts)
    }

    /// `base + lane == u` (or `!=`) for consecutive lanes and a uniform 64-bit `u`: which
    /// lane, if any, is `u - base` (k-means' `assign[i] == c` with `c` the gang's index).
    /// One vector compare per group with its lanes' numbers instead of widening both sides
    /// to 64-bit lanes.
    fn lane_equal(&mut self, cmp: IntCC, s: ScalarType, a: &Part, b: &Part) -> Option<Mask> {
        if !matches!(cmp, IntCC::Equal | IntCC::NotEqual) {
            return None;
        }
        let (base, u, _) = self.consecutive_and_uniform(cmp, s, a, b)?;
        let lanes = self.lanes() as i64;
        // Wrapping, as the lanes' own `base + l` is.
        let lane = self.b.ins().isub(u, base);
        let in_gang = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, lane, lanes);
        let lane = self.b.ins().ireduce(ct::I32, lane);
        let none = self.b.ins().iconst(ct::I32, lanes);
        let lane = self.b.ins().select(in_gang, lane, none);
        let mt = self.mask_type();
        let lane = self.b.ins().splat(mt, lane);
        Some(
            (0..self.groups())
                .map(|g| {
                    let ids = self.lane_numbers(g);
                    let eq = self.b.ins().icmp(IntCC::Equal, lane, ids);
                    if cmp == IntCC::Equal {
                        eq
                    } else {
                        self.b.ins().bnot(eq)
                    }
                })
                .collect(),
        )
    }

    /// `base + lane < u` (or `<=`, `>`, `>=`, signed or not) for consecutive 64-bit lanes
    /// and a uniform `u`: a bounds guard (`i + k < n`, `i > 0`). Unless `base + lane`
    /// wraps past the type's largest value (then lane by lane), the lanes that hold are
    /// a run from the first: one compare of the lanes' numbers with its length per group
    /// of four lanes, instead of widening both sides to 64-bit lanes.
    fn lane_order(&mut self, given: IntCC, s: ScalarType, a: &Part, b: &Part) -> Option<Mask> {
        let (base, u, cmp) = self.consecutive_and_uniform(given, s, a, b)?;
        if matches!(cmp, IntCC::Equal | IntCC::NotEqual) {
            return None;
        }
        let (x, y) = (a.clone(), b.clone());
        let (base, u, cmp) = self.unsigned_order(s, cmp, base, u);
        // `x > u` is `!(x <= u)`, `x >= u` is `!(x < u)`.
        let (inclusive, negate) = match cmp {
            IntCC::UnsignedLessThan => (false, false),
            IntCC::UnsignedLessThanOrEqual => (true, false),
            IntCC::UnsignedGreaterThan => (true, true),
            _ => (false, true),
        };
        let lanes = self.lanes() as i64;
        let no_wrap = self.lanes_do_not_wrap(base);
        // A guard holds in every lane of most gangs (its border is one gang among many):
        // tested first (it holds everywhere where its complement holds nowhere).
        let everywhere = self.compare_holds_nowhere(given.complement(), s, a, b)?;
        let every = |f: &mut Self| Part::Var(f.all_lanes());
        let Part::Var(m) = self.either(everywhere, every, |f| {
            f.either(
                no_wrap,
                |f| {
                    // The run `0..count`: lanes with `base + lane` below `u` (or at it).
                    let room = f.b.ins().isub(u, base);
                    let (above, count) = if inclusive {
                        let above = f.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, u, base);
                        let last = f.b.ins().iconst(ct::I64, lanes - 1);
                        let r = f.b.ins().umin(room, last);
                        (above, f.b.ins().iadd_imm_s(r, 1))
                    } else {
                        let above = f.b.ins().icmp(IntCC::UnsignedGreaterThan, u, base);
                        let all = f.b.ins().iconst(ct::I64, lanes);
                        (above, f.b.ins().umin(room, all))
                    };
                    let zero = f.b.ins().iconst(ct::I64, 0);
                    let count = f.b.ins().select(above, count, zero);
                    let count = f.b.ins().ireduce(ct::I32, count);
                    let mt = f.mask_type();
                    let count = f.b.ins().splat(mt, count);
                    Part::Var(
                        (0..f.groups())
                            .map(|g| {
                                let ids = f.lane_numbers(g);
                                let m = f.b.ins().icmp(IntCC::SignedLessThan, ids, count);
                                if negate {
                                    f.b.ins().bnot(m)
                                } else {
                                    m
                                }
                            })
                            .collect(),
                    )
                },
                |f| Part::Var(f.lane_by_lane_compare(given, s, &x, &y)),
            )
        }) else {
            unreachable!("either gives vectors")
        };
        Some(m)
    }

    /// `x >= lo && x <= hi` on a varying integer `x` of at most 32 bits and constants
    /// `lo <= hi` (a character class, `c >= b'a' && c <= b'z'`): one unsigned test,
    /// `x - lo <= hi - lo` in the lanes' 32 bits, instead of two tests and an `and`.
    /// `None` for other operands.
    pub(super) fn range_test(&mut self, a: &Expr, b: &Expr) -> R<Option<Mask>> {
        let Some((x, lo, hi)) = range_bounds(a, b) else {
            return Ok(None);
        };
        if !self.varies(x) {
            return Ok(None);
        }
        let g = self.gexpr(x)?;
        let s = Self::g_scalar(&g)?;
        let narrow = s.is_small_int() || matches!(s, ScalarType::I32 | ScalarType::U32);
        let Part::Var(xs) = &g.w[0] else {
            return Ok(None);
        };
        if !narrow {
            return Ok(None);
        }
        let low = self.b.ins().iconst(ct::I32, lo);
        let mt = self.mask_type();
        let low = self.b.ins().splat(mt, low);
        let span = self.b.ins().iconst(ct::I32, hi - lo);
        let span = self.b.ins().splat(mt, span);
        let m = xs
            .iter()
            .map(|&v| {
                let from_low = self.b.ins().isub(v, low);
                self.b
                    .ins()
                    .icmp(IntCC::UnsignedLessThanOrEqual, from_low, span)
            })
            .collect();
        Ok(Some(m))
    }

    fn gfloat_arith(&mut self, op: BinOp, s: ScalarType, a: &Part, b: &Part) -> R<Part> {
        if op == BinOp::Rem {
            return self.per_lane(s, &[(a, s), (b, s)], |f, xs| f.math(s, "rem", xs));
        }
        let av = self.vectors(a, s);
        let bv = self.vectors(b, s);
        let mut out = Vec::new();
        for (&x, &y) in av.iter().zip(&bv) {
            out.push(match op {
                BinOp::Add => self.b.ins().fadd(x, y),
                BinOp::Sub => self.b.ins().fsub(x, y),
                BinOp::Mul => self.b.ins().fmul(x, y),
                BinOp::Div => self.b.ins().fdiv(x, y),
                _ => return Err(unsupported(format!("`{}` on floats", op.symbol()))),
            });
        }
        Ok(Part::Var(out))
    }

    fn gint_arith(&mut self, op: BinOp, s: ScalarType, a: &Part, b: &Part, r: &G) -> R<Part> {
        if matches!(op, BinOp::Div | BinOp::Rem) {
            return self.gdivide(op, s, a, b, r);
        }
        if matches!(op, BinOp::Shl | BinOp::Shr) {
            let rs = Self::g_scalar(r)?;
            let Part::Uni(amount) = b else {
                // Shifts by amounts that differ between lanes: lane by lane.
                return self.per_lane(s, &[(a, s), (b, rs)], |f, xs| {
                    let amount = f.cast(xs[1], rs, ScalarType::U32);
                    Ok(f.shift(op, s, xs[0], amount))
                });
            };
            // Cranelift masks vector shift amounts to the lane width, as release Rust does;
            // a small integer's 32-bit lanes need its own width's mask.
            let amount = self.cast(*amount, rs, ScalarType::U32);
            let amount = if s.is_small_int() {
                self.b.ins().band_imm_u(amount, i64::from(s.bits() - 1))
            } else {
                amount
            };
            let av = self.vectors(a, s);
            let out = av
                .iter()
                .map(|&x| match (op, signed(s)) {
                    (BinOp::Shl, _) => self.b.ins().ishl(x, amount),
                    (_, true) => self.b.ins().sshr(x, amount),
                    _ => self.b.ins().ushr(x, amount),
                })
                .collect();
            return Ok(Part::Var(out));
        }
        let av = self.vectors(a, s);
        let bv = self.vectors(b, s);
        let mut out = Vec::new();
        for (&x, &y) in av.iter().zip(&bv) {
            out.push(match op {
                BinOp::Add => self.b.ins().iadd(x, y),
                BinOp::Sub => self.b.ins().isub(x, y),
                BinOp::Mul => self.b.ins().imul(x, y),
                BinOp::BitAnd => self.b.ins().band(x, y),
                BinOp::BitOr => self.b.ins().bor(x, y),
                BinOp::BitXor => self.b.ins().bxor(x, y),
                _ => return Err(unsupported(format!("`{}`", op.symbol()))),
            });
        }
        Ok(Part::Var(out))
    }

    /// Integer division or remainder: by a constant power of two a shift or mask on the
    /// vectors, else lane by lane with scalar code's checks, lanes not running given a
    /// divisor of 1 so that they cannot fail.
    fn gdivide(&mut self, op: BinOp, s: ScalarType, a: &Part, b: &Part, r: &G) -> R<Part> {
        // The gang's aligned index over a constant multiple of its width: its lanes share
        // the quotient, and the remainders are consecutive (and aligned).
        if let (Part::Seq(base, true), Part::Uni(y)) = (a, b) {
            let lanes = self.lanes() as i64;
            if let Some(c) = self.iconst_value(*y).filter(|c| *c > 0 && c % lanes == 0) {
                return Ok(if op == BinOp::Div {
                    Part::Uni(self.b.ins().udiv_imm_u(*base, c))
                } else {
                    Part::Seq(self.b.ins().urem_imm_u(*base, c), true)
                });
            }
        }
        if let Part::Uni(y) = b {
            if let Some(c) = self.iconst_value(*y) {
                let c = c as u64;
                if !signed(s) && c.is_power_of_two() {
                    let av = self.vectors(a, s);
                    let out = av
                        .iter()
                        .map(|&x| {
                            if op == BinOp::Div {
                                self.b.ins().ushr_imm_u(x, i64::from(c.trailing_zeros()))
                            } else {
                                let m = match self.lane_vector(s).1 {
                                    2 => self.vconst_i64_splat((c - 1) as i64),
                                    _ => self.vconst_i32_splat((c - 1) as u32),
                                };
                                self.b.ins().band(x, m)
                            }
                        })
                        .collect();
                    return Ok(Part::Var(out));
                }
            }
        }
        self.no_division_in_varying_loop("by a divisor that is not a constant power of two")?;
        let b = match self.gang.as_ref().and_then(|g| g.mask.clone()) {
            Some(m) => {
                let one = self.b.ins().iconst(clif(s), 1);
                self.blend_part(&m, b, &Part::Uni(one), s)
            }
            None => b.clone(),
        };
        let rv = V {
            ty: r.ty.clone(),
            w: vec![],
        };
        self.per_lane(s, &[(a, s), (&b, s)], |f, xs| {
            f.int_arith(op, s, xs[0], xs[1], &rv)
        })
    }

    /// `x as t`.
    pub(super) fn gcast(&mut self, x: &Expr, t: &Type) -> R<G> {
        let g = self.gexpr(x)?;
        let from = Self::g_scalar(&g)?;
        let Type::Scalar(to) = *t else {
            return Err(unsupported(format!("a cast to {t}")));
        };
        let w = self.cast_part(&g.w[0], from, to)?;
        Ok(G {
            ty: t.clone(),
            w: vec![w],
        })
    }

    /// `l op r` where it keeps an index's shape (see [`Part`]): the gang's index, a
    /// descending, strided or clamped index plus or minus a uniform value, the gang's
    /// index times one. `None` for other operands.
    fn index_arith(&mut self, op: BinOp, s: ScalarType, l: &Part, r: &Part) -> Option<Part> {
        // The gang's index plus or minus a uniform value is still consecutive.
        let seq_and_uni = match (l, r, op) {
            (Part::Seq(b, al), Part::Uni(u), BinOp::Add | BinOp::Sub) => Some((*b, *al, *u)),
            (Part::Uni(u), Part::Seq(b, al), BinOp::Add) => Some((*b, *al, *u)),
            _ => None,
        };
        // A descending index plus or minus a uniform value stays one; a uniform value
        // minus the gang's index counts down, minus a descending index counts up.
        let shifted = match (l, r, op) {
            (Part::Rev(t), Part::Uni(u), BinOp::Add) | (Part::Uni(u), Part::Rev(t), BinOp::Add) => {
                Some(Part::Rev(self.b.ins().iadd(*t, *u)))
            }
            (Part::Rev(t), Part::Uni(u), BinOp::Sub) => Some(Part::Rev(self.b.ins().isub(*t, *u))),
            (Part::Uni(u), Part::Seq(b, _), BinOp::Sub) => {
                Some(Part::Rev(self.b.ins().isub(*u, *b)))
            }
            (Part::Uni(u), Part::Rev(t), BinOp::Sub) => {
                Some(Part::Seq(self.b.ins().isub(*u, *t), false))
            }
            _ => None,
        };
        let index_like = matches!(s, ScalarType::Usize | ScalarType::U64 | ScalarType::I64);
        // The gang's index times a uniform value steps by it; plus or minus a uniform
        // value it still does.
        let strided = match (l, r, op) {
            (Part::Seq(b, _), Part::Uni(u), BinOp::Mul)
            | (Part::Uni(u), Part::Seq(b, _), BinOp::Mul) => {
                Some(Part::Strided(self.b.ins().imul(*b, *u), *u))
            }
            (Part::Strided(b, st), Part::Uni(u), BinOp::Add)
            | (Part::Uni(u), Part::Strided(b, st), BinOp::Add) => {
                Some(Part::Strided(self.b.ins().iadd(*b, *u), *st))
            }
            (Part::Strided(b, st), Part::Uni(u), BinOp::Sub) => {
                Some(Part::Strided(self.b.ins().isub(*b, *u), *st))
            }
            _ => None,
        };
        // Wrapping, as the lanes' own arithmetic is.
        if let (Some(w), true) = (strided, index_like) {
            return Some(w);
        }
        if let (Some(w), true) = (shifted, index_like) {
            return Some(w);
        }
        // A clamped index plus or minus a uniform value stays one.
        let clamp_and_uni = match (l, r, op) {
            (Part::Clamp(c), Part::Uni(u), BinOp::Add | BinOp::Sub) => Some((*c, *u)),
            (Part::Uni(u), Part::Clamp(c), BinOp::Add) => Some((*c, *u)),
            _ => None,
        };
        if let Some((mut c, u)) = clamp_and_uni {
            c.off = if op == BinOp::Add {
                self.b.ins().iadd(c.off, u)
            } else {
                self.b.ins().isub(c.off, u)
            };
            return Some(Part::Clamp(c));
        }
        if let Some((base, aligned, u)) = seq_and_uni {
            let w = if op == BinOp::Add {
                self.b.ins().iadd(base, u)
            } else {
                self.b.ins().isub(base, u)
            };
            let lanes = self.lanes() as i64;
            let aligned = aligned && self.iconst_value(u).is_some_and(|c| c % lanes == 0);
            return Some(Part::Seq(w, aligned));
        }
        None
    }

    /// A word of `from` as `to`, per lane.
    pub(super) fn cast_part(&mut self, p: &Part, from: ScalarType, to: ScalarType) -> R<Part> {
        use ScalarType as S;
        let (ft, fn_) = self.lane_vector(from);
        let (tt, tn) = self.lane_vector(to);
        if let Part::Uni(x) = p {
            return Ok(Part::Uni(self.cast(*x, from, to)));
        }
        if from != to && (from.is_small_int() || to.is_small_int()) {
            return self.cast_small(p, from, to);
        }
        if from == to || (ft == tt && fn_ == tn && from != S::Bool && to != S::Bool) {
            // The same bits: a reinterpretation (`usize as u64`, `i32 as u32`).
            return Ok(match p {
                Part::Seq(b, al) if tn == 2 => Part::Seq(*b, *al),
                Part::Clamp(c) if tn == 2 => Part::Clamp(*c),
                Part::Rev(t) if tn == 2 => Part::Rev(*t),
                Part::Strided(b, st) if tn == 2 => Part::Strided(*b, *st),
                p => Part::Var(self.vectors(p, from)),
            });
        }
        let v = self.vectors(p, from);
        let per_group = fn_;
        let mut out = Vec::new();
        for v in v.chunks(per_group) {
            match self.cast_group(v, from, to) {
                Some(w) => out.extend(w),
                // The rest (float to 64-bit integers, f64 to 32-bit ones) lane by lane.
                None => {
                    return self.per_lane(to, &[(p, from)], |f, xs| Ok(f.cast(xs[0], from, to)))
                }
            }
        }
        Ok(Part::Var(out))
    }

    /// One group's vectors `v` of `from` as `to`, when vector instructions do it.
    fn cast_group(&mut self, v: &[Value], from: ScalarType, to: ScalarType) -> Option<Vec<Value>> {
        use ScalarType as S;
        let (f32s, i32s) = (self.lane_vector(S::F32).0, self.mask_type());
        let f64s = self.half_vector(ct::F64);
        Some(match (from, to) {
            (S::F32, S::F64) => self.promote_lanes(&v[..1]),
            (S::F64, S::F32) => self.demote_lanes(v),
            (S::I32, S::F32) => vec![self.b.ins().fcvt_from_sint(f32s, v[0])],
            (S::U32, S::F32) => vec![self.b.ins().fcvt_from_uint(f32s, v[0])],
            (S::F32, S::I32) => vec![self.b.ins().fcvt_to_sint_sat(i32s, v[0])],
            (S::F32, S::U32) => vec![self.b.ins().fcvt_to_uint_sat(i32s, v[0])],
            (S::I64, S::F64) => v
                .iter()
                .map(|&x| self.b.ins().fcvt_from_sint(f64s, x))
                .collect(),
            (S::U64 | S::Usize, S::F64) => v
                .iter()
                .map(|&x| self.b.ins().fcvt_from_uint(f64s, x))
                .collect(),
            (S::I32, S::I64 | S::U64 | S::Usize) => {
                vec![
                    self.b.ins().swiden_low(v[0]),
                    self.b.ins().swiden_high(v[0]),
                ]
            }
            (S::U32, S::I64 | S::U64 | S::Usize) => {
                vec![
                    self.b.ins().uwiden_low(v[0]),
                    self.b.ins().uwiden_high(v[0]),
                ]
            }
            (S::I32, S::F64) => {
                let w = [
                    self.b.ins().swiden_low(v[0]),
                    self.b.ins().swiden_high(v[0]),
                ];
                w.iter()
                    .map(|&x| self.b.ins().fcvt_from_sint(f64s, x))
                    .collect()
            }
            (S::U32, S::F64) => {
                let w = [
                    self.b.ins().uwiden_low(v[0]),
                    self.b.ins().uwiden_high(v[0]),
                ];
                w.iter()
                    .map(|&x| self.b.ins().fcvt_from_uint(f64s, x))
                    .collect()
            }
            (S::I64 | S::U64 | S::Usize, S::I32 | S::U32) => {
                // The low halves of the 64-bit lanes.
                let (a, b) = (self.vbitcast(i32s, v[0]), self.vbitcast(i32s, v[1]));
                let evens: Vec<u8> = (0..self.group() as u8).map(|l| 2 * l).collect();
                vec![self.shuffle32(a, b, &evens)]
            }
            (S::Bool, S::I32 | S::U32) => {
                let one = self.vconst_i32_splat(1);
                vec![self.b.ins().band(v[0], one)]
            }
            (S::Bool, S::I64 | S::U64 | S::Usize) => {
                let one = self.vconst_i64_splat(1);
                let wide = [
                    self.b.ins().swiden_low(v[0]),
                    self.b.ins().swiden_high(v[0]),
                ];
                wide.iter().map(|&x| self.b.ins().band(x, one)).collect()
            }
            _ => return None,
        })
    }
}

/// `(x, lo, hi)` when `a && b` is `x >= lo && x <= hi` (either comparison either way
/// round) for a variable `x` and integer constants `lo <= hi` below 2^31.
fn range_bounds<'e>(a: &'e Expr, b: &'e Expr) -> Option<(&'e Expr, i64, i64)> {
    let constant = |e: &Expr| match e {
        Expr::Lit(accel_ir::Lit::Int(c, _)) if *c < 1 << 31 => Some(*c as i64),
        _ => None,
    };
    // `x op c` as `(x, op)`, whichever side `x` is on.
    let side = |e: &'e Expr| -> Option<(&'e Expr, BinOp, i64)> {
        let Expr::Binary(op, l, r) = e else {
            return None;
        };
        match (&**l, constant(r), constant(l)) {
            (Expr::Var(_), Some(c), _) => Some((&**l, *op, c)),
            (_, _, Some(c)) if matches!(&**r, Expr::Var(_)) => Some((&**r, mirrored(*op), c)),
            _ => None,
        }
    };
    let (x, op_a, lo) = side(a)?;
    let (y, op_b, hi) = side(b)?;
    (x == y && op_a == BinOp::Ge && op_b == BinOp::Le && lo <= hi).then_some((x, lo, hi))
}
