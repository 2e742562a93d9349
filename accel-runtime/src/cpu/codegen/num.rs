//! Scalar arithmetic: binary operators (integer division checked, shifts masked as in
//! release Rust, comparisons), casts with Rust's `as` semantics, float `min`/`max`.

use super::cx::*;
use crate::backend::failure::FailureKind;
use accel_ir::{BinOp, Expr, ScalarType, Type, UnOp};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types as ct, InstBuilder, MemFlagsData, Value};

impl FnCx<'_, '_> {
    /// `-x` and `!x`.
    pub(super) fn unary(&mut self, op: UnOp, x: &Expr) -> R<V> {
        let v = self.expr(x)?;
        let s = self.scalar(&v)?;
        let x = v.w[0];
        let w = match (op, s) {
            (UnOp::Neg, s) if s.is_float() => self.b.ins().fneg(x),
            (UnOp::Neg, _) => self.b.ins().ineg(x),
            (UnOp::Not, ScalarType::Bool) => self.b.ins().bxor_imm_u(x, 1),
            (UnOp::Not, _) => self.b.ins().bnot(x),
        };
        Ok(V {
            ty: v.ty,
            w: vec![w],
        })
    }

    /// `x as t`.
    pub(super) fn cast_expr(&mut self, x: &Expr, t: &Type) -> R<V> {
        let v = self.expr(x)?;
        let Type::Scalar(to) = t else {
            return Err(unsupported(format!("a cast to {t}")));
        };
        let w = self.cast(v.w[0], self.scalar(&v)?, *to);
        Ok(V {
            ty: t.clone(),
            w: vec![w],
        })
    }

    /// `a op b`.
    pub(super) fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<V> {
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.logic(op, a, b);
        }
        let l = self.expr(a)?;
        let r = self.expr(b)?;
        let s = self.scalar(&l)?;
        let (x, y) = (l.w[0], r.w[0]);
        if let Some(cmp) = comparison(op) {
            let w = self.compare(cmp, s, x, y);
            return Ok(V {
                ty: Type::Scalar(ScalarType::Bool),
                w: vec![w],
            });
        }
        let w = if s.is_float() {
            self.float_arith(op, s, x, y)?
        } else {
            self.int_arith(op, s, x, y, &r)?
        };
        Ok(V {
            ty: l.ty,
            w: vec![w],
        })
    }

    /// `a && b`, `a || b`.
    fn logic(&mut self, op: BinOp, a: &Expr, b: &Expr) -> R<V> {
        // Short-circuit: the right operand may index out of bounds when the left decides.
        let l = self.expr(a)?;
        let right = self.b.create_block();
        let merge = self.b.create_block();
        let r_param = self.b.append_block_param(merge, ct::I8);
        if op == BinOp::And {
            self.b
                .ins()
                .brif(l.w[0], right, &[], merge, &[l.w[0].into()]);
        } else {
            self.b
                .ins()
                .brif(l.w[0], merge, &[l.w[0].into()], right, &[]);
        }
        self.b.switch_to_block(right);
        let r = self.expr(b)?;
        self.b.ins().jump(merge, &[r.w[0].into()]);
        self.b.switch_to_block(merge);
        Ok(V {
            ty: Type::Scalar(ScalarType::Bool),
            w: vec![r_param],
        })
    }

    /// A comparison of two scalars of type `s`.
    pub(super) fn compare(&mut self, cmp: IntCC, s: ScalarType, x: Value, y: Value) -> Value {
        if s.is_float() {
            // `a > b` as `b < a` (the same for NaNs): the form whose select x64
            // lowers to one `maxsd`/`minsd` (`if v > best { best = v }`).
            match cmp {
                IntCC::Equal => self.b.ins().fcmp(FloatCC::Equal, x, y),
                IntCC::NotEqual => self.b.ins().fcmp(FloatCC::NotEqual, x, y),
                IntCC::SignedLessThan => self.b.ins().fcmp(FloatCC::LessThan, x, y),
                IntCC::SignedLessThanOrEqual => self.b.ins().fcmp(FloatCC::LessThanOrEqual, x, y),
                IntCC::SignedGreaterThan => self.b.ins().fcmp(FloatCC::LessThan, y, x),
                _ => self.b.ins().fcmp(FloatCC::LessThanOrEqual, y, x),
            }
        } else {
            let cc = if signed(s) || matches!(cmp, IntCC::Equal | IntCC::NotEqual) {
                cmp
            } else {
                cmp.unsigned()
            };
            self.b.ins().icmp(cc, x, y)
        }
    }

    /// `x << n` or `x >> n` of one number of `s` (the amount a `u32`; `>>` arithmetic for
    /// signed types).
    pub(super) fn shift(&mut self, op: BinOp, s: ScalarType, x: Value, amount: Value) -> Value {
        let amount = if clif(s) == ct::I64 {
            self.b.ins().uextend(ct::I64, amount)
        } else {
            amount
        };
        match (op, signed(s)) {
            (BinOp::Shl, _) => self.b.ins().ishl(x, amount),
            (_, true) => self.b.ins().sshr(x, amount),
            _ => self.b.ins().ushr(x, amount),
        }
    }

    pub(super) fn float_arith(&mut self, op: BinOp, s: ScalarType, x: Value, y: Value) -> R<Value> {
        Ok(match op {
            BinOp::Add => self.b.ins().fadd(x, y),
            BinOp::Sub => self.b.ins().fsub(x, y),
            BinOp::Mul => self.b.ins().fmul(x, y),
            BinOp::Div => self.b.ins().fdiv(x, y),
            BinOp::Rem => self.math(s, "rem", &[x, y])?,
            _ => return Err(unsupported(format!("`{}` on floats", op.symbol()))),
        })
    }

    /// Integer arithmetic: wrapping, division checked, shifts masked (`r` is the right
    /// operand, whose type a shift amount has).
    pub(super) fn int_arith(
        &mut self,
        op: BinOp,
        s: ScalarType,
        x: Value,
        y: Value,
        r: &V,
    ) -> R<Value> {
        Ok(match op {
            BinOp::Add => self.b.ins().iadd(x, y),
            BinOp::Sub => self.b.ins().isub(x, y),
            BinOp::Mul => self.b.ins().imul(x, y),
            BinOp::Div | BinOp::Rem
                if !signed(s)
                    && self
                        .iconst_value(y)
                        .is_some_and(|c| (c as u64).is_power_of_two()) =>
            {
                // By a constant power of two (a compiled-in `const`): a shift or a mask.
                let c = self.iconst_value(y).unwrap_or(1) as u64;
                if op == BinOp::Div {
                    self.b.ins().ushr_imm_u(x, i64::from(c.trailing_zeros()))
                } else {
                    self.b.ins().band_imm_u(x, (c - 1) as i64)
                }
            }
            BinOp::Div | BinOp::Rem => {
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                let (xa, ya) = (self.widen(x, s), self.widen(y, s));
                self.fail_if(zero, FailureKind::DivZero, xa, ya);
                if signed(s) {
                    let min = i64::MIN >> (64 - s.bits());
                    let is_min = self.b.ins().icmp_imm_s(IntCC::Equal, x, min);
                    let is_neg1 = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                    let overflow = self.b.ins().band(is_min, is_neg1);
                    self.fail_if(overflow, FailureKind::DivOverflow, xa, ya);
                    if op == BinOp::Div {
                        self.b.ins().sdiv(x, y)
                    } else {
                        self.b.ins().srem(x, y)
                    }
                } else if op == BinOp::Div {
                    self.b.ins().udiv(x, y)
                } else {
                    self.b.ins().urem(x, y)
                }
            }
            BinOp::BitAnd => self.b.ins().band(x, y),
            BinOp::BitOr => self.b.ins().bor(x, y),
            BinOp::BitXor => self.b.ins().bxor(x, y),
            BinOp::Shl | BinOp::Shr => {
                let amount = self.cast(y, self.scalar(r)?, ScalarType::U32);
                self.shift(op, s, x, amount)
            }
            _ => return Err(unsupported(format!("`{}`", op.symbol()))),
        })
    }

    /// A scalar as an i64 word (for failure reports).
    pub(super) fn widen(&mut self, x: Value, s: ScalarType) -> Value {
        match clif(s) {
            t if t == ct::I64 => x,
            t if t == ct::F64 => self.b.ins().bitcast(ct::I64, MemFlagsData::new(), x),
            t if t == ct::F32 => {
                let i = self.b.ins().bitcast(ct::I32, MemFlagsData::new(), x);
                self.b.ins().uextend(ct::I64, i)
            }
            _ if signed(s) => self.b.ins().sextend(ct::I64, x),
            _ => self.b.ins().uextend(ct::I64, x),
        }
    }

    pub(super) fn cast(&mut self, x: Value, from: ScalarType, to: ScalarType) -> Value {
        let (ft, tt) = (clif(from), clif(to));
        match (from.is_float(), to.is_float()) {
            (true, true) if ft == tt => x,
            (true, true) if tt == ct::F64 => self.b.ins().fpromote(ct::F64, x),
            (true, true) => self.b.ins().fdemote(ct::F32, x),
            (true, false) if to == ScalarType::Bool => {
                let z = self.fconst(from, 0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            (true, false) if to.is_small_int() => self.float_to_small(x, to),
            (true, false) if signed(to) => self.b.ins().fcvt_to_sint_sat(tt, x),
            (true, false) => self.b.ins().fcvt_to_uint_sat(tt, x),
            (false, true) if from.is_small_int() => {
                // Exact in 32 bits; x64 converts from 32 or 64 bits only.
                let wide = self.cast(x, from, ScalarType::I32);
                self.b.ins().fcvt_from_sint(tt, wide)
            }
            (false, true) if signed(from) => self.b.ins().fcvt_from_sint(tt, x),
            (false, true) => self.b.ins().fcvt_from_uint(tt, x),
            (false, false) => {
                if ft == tt {
                    x
                } else if let Some(wide) = (tt.bits() >= 32 && ft.bits() < 32)
                    .then(|| self.extending_load(x, signed(from), tt))
                    .flatten()
                {
                    wide
                } else if ft.bits() > tt.bits() {
                    self.b.ins().ireduce(tt, x)
                } else if signed(from) {
                    self.b.ins().sextend(tt, x)
                } else {
                    self.b.ins().uextend(tt, x)
                }
            }
        }
    }

    /// `x` loaded again as the wider integer type `to`, extended by the load itself
    /// (`movzx`), when `x` is a load of an 8- or 16-bit integer: x64 does not merge a
    /// load with the extension that follows it, and a byte loop pays an instruction per
    /// element for it. Only for read-only memory (sequences), which no store between the two
    /// loads can change; the narrow load, unused then, is removed (it cannot trap).
    fn extending_load(&mut self, x: Value, signed: bool, to: CType) -> Option<Value> {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let ValueDef::Result(inst, 0) = self.b.func.dfg.value_def(x) else {
            return None;
        };
        let InstructionData::Load {
            opcode: Opcode::Load,
            arg,
            flags,
            offset,
        } = self.b.func.dfg.insts[inst]
        else {
            return None;
        };
        let flags = self.b.func.dfg.mem_flags[flags];
        // Only memory nothing writes during a run (sequences) may be read again later.
        if !flags.notrap() || !flags.readonly() {
            return None;
        }
        let offset: i32 = offset.into();
        let from = self.b.func.dfg.value_type(x);
        Some(match (from, signed) {
            (ct::I8, false) => self.b.ins().uload8(to, flags, arg, offset),
            (ct::I8, true) => self.b.ins().sload8(to, flags, arg, offset),
            (ct::I16, false) => self.b.ins().uload16(to, flags, arg, offset),
            (ct::I16, true) => self.b.ins().sload16(to, flags, arg, offset),
            _ => return None,
        })
    }

    /// A float `as` an 8- or 16-bit integer: saturated to the type's range (NaN is 0), as
    /// Rust's `as` does, through a saturating conversion to `i32`.
    fn float_to_small(&mut self, x: Value, to: ScalarType) -> Value {
        let wide = self.b.ins().fcvt_to_sint_sat(ct::I32, x);
        let (lo, hi) = to
            .int_range()
            .map_or((0, 0), |(lo, hi)| (lo as i64, hi as i64));
        let below = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, wide, lo);
        let lo = self.b.ins().iconst(ct::I32, lo & 0xffff_ffff);
        let w = self.b.ins().select(below, lo, wide);
        let above = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, w, hi);
        let hi = self.b.ins().iconst(ct::I32, hi);
        let w = self.b.ins().select(above, hi, w);
        self.b.ins().ireduce(clif(to), w)
    }

    /// Rust's `x.max(y)`/`x.min(y)` on floats (a NaN operand yields the other). The
    /// compare-and-select is the form x64 lowers to one `maxsd`/`minsd` (which yields `y`
    /// when either is NaN, right for a NaN `y`); a NaN `x`, rare and predictable, is
    /// patched after, off the dependency chain through `x` in a running maximum.
    pub(super) fn fminmax(&mut self, max: bool, x: Value, y: Value) -> Value {
        let take_y = if max {
            self.b.ins().fcmp(FloatCC::LessThan, x, y)
        } else {
            self.b.ins().fcmp(FloatCC::LessThan, y, x)
        };
        let m = self.b.ins().select(take_y, y, x);
        let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        self.b.ins().select(x_nan, y, m)
    }
}

pub(super) fn comparison(op: BinOp) -> Option<IntCC> {
    Some(match op {
        BinOp::Eq => IntCC::Equal,
        BinOp::Ne => IntCC::NotEqual,
        BinOp::Lt => IntCC::SignedLessThan,
        BinOp::Le => IntCC::SignedLessThanOrEqual,
        BinOp::Gt => IntCC::SignedGreaterThan,
        BinOp::Ge => IntCC::SignedGreaterThanOrEqual,
        _ => return None,
    })
}
