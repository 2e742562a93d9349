//! Methods and associated functions: of sequences, tensors, arrays and numbers (the math
//! functions Cranelift has no instruction for call Rust's own, see [`super::super::helpers`]).

use super::super::helpers::math_name;
use super::cx::*;
use crate::backend::abi::MAX_RANK;
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types as ct, InstBuilder, StackSlotData, StackSlotKind, Value};

impl FnCx<'_, '_> {
    /// The math function `name` of `args` (numbers of type `s`): inline (see
    /// [`super::math`]) when the library has it, else the platform's libm.
    pub(super) fn math(&mut self, s: ScalarType, name: &str, args: &[Value]) -> R<Value> {
        if let Some(v) = self.inline_math(clif(s), name, args) {
            return Ok(v);
        }
        let key =
            math_name(name, s).ok_or_else(|| unsupported(format!("`{name}` on {}", s.name())))?;
        Ok(self.helper(key, args)[0])
    }

    /// A method call: on a sequence, a tensor, an array or a number.
    pub(super) fn method(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> R<V> {
        let r = self.expr(recv)?;
        let a = args.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
        if let Type::Seq(_) = r.ty {
            return self.seq_method(r, method);
        }
        if let Type::Tensor(_) = r.ty {
            let proven = match (recv, args.first()) {
                (Expr::Var(t), Some(Expr::Array(coords))) => {
                    self.safe_tensors.iter().any(|(u, c)| u == t && c == coords)
                }
                _ => false,
            };
            if method == "get" {
                let mut load = |f: &mut Self| f.tensor_method(&r, method, &a, !proven);
                if let Some(v) = self.forwarded_get(recv, method, args, &mut load) {
                    return v;
                }
            }
            let v = self.tensor_method(&r, method, &a, !proven)?;
            if method == "set" {
                self.note_forwarded_set(recv, method, args, a[1].w[0]);
            }
            return Ok(v);
        }
        if let Type::Array(_, n) = r.ty {
            if method == "len" {
                let w = self.iconst(n as i64);
                return Ok(V {
                    ty: Type::Scalar(ScalarType::Usize),
                    w: vec![w],
                });
            }
        }
        let s = self.scalar(&r)?;
        if s.is_float() {
            self.float_method(s, r, method, &a)
        } else {
            self.int_method(s, r, method, &a)
        }
    }

    /// `xs.len()`, `xs.is_empty()`, `xs.to_vec()`.
    fn seq_method(&mut self, r: V, method: &str) -> R<V> {
        match method {
            "len" => Ok(V {
                ty: Type::Scalar(ScalarType::Usize),
                w: vec![r.w[0]],
            }),
            "is_empty" => {
                let w = self.b.ins().icmp_imm_s(IntCC::Equal, r.w[0], 0);
                Ok(V {
                    ty: Type::Scalar(ScalarType::Bool),
                    w: vec![w],
                })
            }
            "to_vec" => Ok(r),
            m => Err(unsupported(format!("`.{m}()` on a sequence"))),
        }
    }

    /// A method of `f32` or `f64`.
    pub(super) fn float_method(&mut self, s: ScalarType, r: V, method: &str, a: &[V]) -> R<V> {
        let x = r.w[0];
        let ty = r.ty.clone();
        let bool_ty = Type::Scalar(ScalarType::Bool);
        let w = match method {
            "sqrt" => self.b.ins().sqrt(x),
            "abs" => self.b.ins().fabs(x),
            "floor" => self.b.ins().floor(x),
            "ceil" => self.b.ins().ceil(x),
            "trunc" => self.b.ins().trunc(x),
            "fract" => {
                let t = self.b.ins().trunc(x);
                self.b.ins().fsub(x, t)
            }
            "recip" => {
                let one = self.fconst(s, 1.0);
                self.b.ins().fdiv(one, x)
            }
            // Rust's `mul_add` rounds once (a libm `fma` call where the host has no FMA).
            "mul_add" => self.b.ins().fma(x, a[0].w[0], a[1].w[0]),
            "min" | "max" => self.fminmax(method == "max", x, a[0].w[0]),
            "clamp" => {
                let (lo, hi) = (a[0].w[0], a[1].w[0]);
                // Rust's assertion: `min <= max`, false for a NaN bound too.
                let reversed = self.b.ins().fcmp(FloatCC::UnorderedOrGreaterThan, lo, hi);
                let (wl, wh) = (self.widen(lo, s), self.widen(hi, s));
                self.fail_if(reversed, FailureKind::ClampBounds, wl, wh);
                // Rust's order of tests: a NaN `x` stays NaN.
                let below = self.b.ins().fcmp(FloatCC::LessThan, x, lo);
                let above = self.b.ins().fcmp(FloatCC::LessThan, hi, x);
                let up = self.b.ins().select(below, lo, x);
                self.b.ins().select(above, hi, up)
            }
            "signum" => {
                let one = self.fconst(s, 1.0);
                let c = self.b.ins().fcopysign(one, x);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                self.b.ins().select(nan, x, c)
            }
            "to_degrees" => {
                let k = self.fconst(s, 180.0 / std::f64::consts::PI);
                self.b.ins().fmul(x, k)
            }
            "to_radians" => {
                let k = self.fconst(s, std::f64::consts::PI / 180.0);
                self.b.ins().fmul(x, k)
            }
            "is_nan" => {
                let w = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                return Ok(V {
                    ty: bool_ty,
                    w: vec![w],
                });
            }
            "is_finite" | "is_infinite" => {
                let abs = self.b.ins().fabs(x);
                let inf = self.fconst(s, f64::INFINITY);
                let w = if method == "is_infinite" {
                    self.b.ins().fcmp(FloatCC::Equal, abs, inf)
                } else {
                    self.b.ins().fcmp(FloatCC::LessThan, abs, inf)
                };
                return Ok(V {
                    ty: bool_ty,
                    w: vec![w],
                });
            }
            "sin_cos" => {
                if let Some((sin, cos)) = self.inline_sin_cos(clif(s), x) {
                    return Ok(V {
                        ty: Type::Tuple(vec![ty.clone(), ty]),
                        w: vec![sin, cos],
                    });
                }
                let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    16,
                    3,
                ));
                let out = self.b.ins().stack_addr(ct::I64, slot, 0);
                let name = if s == ScalarType::F32 {
                    "accel_sin_cos_f32"
                } else {
                    "accel_sin_cos_f64"
                };
                self.helper(name, &[x, out]);
                let t = clif(s);
                let step = t.bytes() as i32;
                let (sin, cos) = (self.load(t, out, 0), self.load(t, out, step));
                return Ok(V {
                    ty: Type::Tuple(vec![ty.clone(), ty]),
                    w: vec![sin, cos],
                });
            }
            "powi" => self.powi(clif(s), x, a[0].w[0]),
            "log" => self.math(s, "log", &[x, a[0].w[0]])?,
            "powf" | "atan2" | "hypot" | "rem_euclid" | "div_euclid" => {
                self.math(s, method, &[x, a[0].w[0]])?
            }
            m => self.math(s, m, &[x])?,
        };
        Ok(V { ty, w: vec![w] })
    }

    /// A method of an integer type.
    pub(super) fn int_method(&mut self, s: ScalarType, r: V, method: &str, a: &[V]) -> R<V> {
        let x = r.w[0];
        let ty = r.ty.clone();
        let bool_ty = Type::Scalar(ScalarType::Bool);
        let w = match method {
            "abs" if signed(s) => self.b.ins().iabs(x),
            "abs" => x,
            "min" | "max" => {
                let cc = match (method, signed(s)) {
                    ("max", true) => IntCC::SignedGreaterThan,
                    ("max", false) => IntCC::UnsignedGreaterThan,
                    (_, true) => IntCC::SignedLessThan,
                    _ => IntCC::UnsignedLessThan,
                };
                let c = self.b.ins().icmp(cc, x, a[0].w[0]);
                self.b.ins().select(c, x, a[0].w[0])
            }
            "wrapping_add" => self.b.ins().iadd(x, a[0].w[0]),
            "wrapping_sub" => self.b.ins().isub(x, a[0].w[0]),
            "wrapping_mul" => self.b.ins().imul(x, a[0].w[0]),
            "count_ones" | "leading_zeros" | "trailing_zeros" => {
                let c = match method {
                    "count_ones" => self.b.ins().popcnt(x),
                    "leading_zeros" => self.b.ins().clz(x),
                    _ => self.b.ins().ctz(x),
                };
                let w = self.cast(
                    c,
                    if clif(s) == ct::I64 {
                        ScalarType::U64
                    } else {
                        ScalarType::U32
                    },
                    ScalarType::U32,
                );
                return Ok(V {
                    ty: Type::Scalar(ScalarType::U32),
                    w: vec![w],
                });
            }
            "is_multiple_of" => {
                let y = a[0].w[0];
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                let safe = self.b.ins().select(zero, x, y);
                let safe = {
                    let one = self.b.ins().iconst(clif(s), 1);
                    let is_zero = self.b.ins().icmp_imm_s(IntCC::Equal, safe, 0);
                    self.b.ins().select(is_zero, one, safe)
                };
                let rem = self.b.ins().urem(x, safe);
                let by_rem = self.b.ins().icmp_imm_s(IntCC::Equal, rem, 0);
                let x_zero = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                let w = self.b.ins().select(zero, x_zero, by_rem);
                return Ok(V {
                    ty: bool_ty,
                    w: vec![w],
                });
            }
            "pow" => self.int_pow(s, x, a[0].w[0]),
            m => match self.int_method_checked(s, x, m, a)? {
                Some(v) => return Ok(v),
                None => return Err(unsupported(format!("`.{m}()` on {}", s.name()))),
            },
        };
        Ok(V { ty, w: vec![w] })
    }

    /// The integer methods with Rust's rules for bounds, signs and division (`clamp`,
    /// `signum`, `abs_diff`, `rem_euclid`, `div_euclid`, `saturating_*`), or `None`.
    fn int_method_checked(
        &mut self,
        s: ScalarType,
        x: Value,
        method: &str,
        a: &[V],
    ) -> R<Option<V>> {
        let ty = Type::Scalar(s);
        let w = match method {
            "__chunk_size" | "__window_size" => {
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                let which = self.iconst(i64::from(method == "__window_size"));
                let none = self.iconst(0);
                self.fail_if(zero, FailureKind::ZeroSize, which, none);
                x
            }
            "clamp" => {
                let (lo, hi) = (a[0].w[0], a[1].w[0]);
                let reversed = self.compare(IntCC::SignedGreaterThan, s, lo, hi);
                let (wl, wh) = (self.widen(lo, s), self.widen(hi, s));
                self.fail_if(reversed, FailureKind::ClampBounds, wl, wh);
                let below = self.compare(IntCC::SignedLessThan, s, x, lo);
                let above = self.compare(IntCC::SignedGreaterThan, s, x, hi);
                let up = self.b.ins().select(below, lo, x);
                self.b.ins().select(above, hi, up)
            }
            "signum" => {
                let t = clif(s);
                let (one, zero, minus) = (
                    self.b.ins().iconst(t, 1),
                    self.b.ins().iconst(t, 0),
                    self.b.ins().iconst(t, -1),
                );
                let pos = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, x, 0);
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, 0);
                let p = self.b.ins().select(pos, one, zero);
                self.b.ins().select(neg, minus, p)
            }
            "abs_diff" => {
                // The difference in the unsigned type of the same width: wrapping
                // subtraction of the smaller from the larger is exact there.
                let y = a[0].w[0];
                let less = self.compare(IntCC::SignedLessThan, s, x, y);
                let up = self.b.ins().isub(y, x);
                let down = self.b.ins().isub(x, y);
                let w = self.b.ins().select(less, up, down);
                let ty = Type::Scalar(s.unsigned());
                return Ok(Some(V { ty, w: vec![w] }));
            }
            "rem_euclid" | "div_euclid" => {
                let y = a[0].w[0];
                let rem = self.int_arith(accel_ir::BinOp::Rem, s, x, y, &a[0])?;
                if !signed(s) {
                    if method == "rem_euclid" {
                        rem
                    } else {
                        self.int_arith(accel_ir::BinOp::Div, s, x, y, &a[0])?
                    }
                } else {
                    // Rust's: a negative remainder moves up by |y|, and the quotient one
                    // step away from zero on y's side.
                    let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, rem, 0);
                    if method == "rem_euclid" {
                        let abs = self.b.ins().iabs(y);
                        let up = self.b.ins().iadd(rem, abs);
                        self.b.ins().select(negative, up, rem)
                    } else {
                        let quo = self.int_arith(accel_ir::BinOp::Div, s, x, y, &a[0])?;
                        let t = clif(s);
                        let y_pos = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, y, 0);
                        let (minus, one) = (self.b.ins().iconst(t, -1), self.b.ins().iconst(t, 1));
                        let step = self.b.ins().select(y_pos, minus, one);
                        let moved = self.b.ins().iadd(quo, step);
                        self.b.ins().select(negative, moved, quo)
                    }
                }
            }
            "div_ceil" => {
                // Rust's (unsigned integers): the quotient, one more when a remainder is left.
                let y = a[0].w[0];
                let q = self.int_arith(accel_ir::BinOp::Div, s, x, y, &a[0])?;
                let r = self.int_arith(accel_ir::BinOp::Rem, s, x, y, &a[0])?;
                let left = self.b.ins().icmp_imm_u(IntCC::NotEqual, r, 0);
                let up = self.b.ins().iadd_imm_s(q, 1);
                self.b.ins().select(left, up, q)
            }
            "saturating_add" | "saturating_sub" => {
                let y = a[0].w[0];
                self.saturating(s, method == "saturating_add", x, y)
            }
            _ => return Ok(None),
        };
        Ok(Some(V { ty, w: vec![w] }))
    }

    /// `x.saturating_add(y)` (`add`) or `x.saturating_sub(y)`: the wrapped result, or the
    /// type's bound on the side it overflowed.
    fn saturating(&mut self, s: ScalarType, add: bool, x: Value, y: Value) -> Value {
        let t = clif(s);
        let r = if add {
            self.b.ins().iadd(x, y)
        } else {
            self.b.ins().isub(x, y)
        };
        if signed(s) {
            // Overflow when the result's sign differs from x's and (for +) y's sign is x's,
            // (for -) y's sign is not x's; it saturates toward x's side.
            let xr = self.b.ins().bxor(x, r);
            let xy = self.b.ins().bxor(x, y);
            let flip = if add {
                let same = self.b.ins().bnot(xy);
                self.b.ins().band(xr, same)
            } else {
                self.b.ins().band(xr, xy)
            };
            let overflow = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, flip, 0);
            let bits = t.bits();
            let max = self.b.ins().iconst(t, ((1u64 << (bits - 1)) - 1) as i64);
            let min = self.b.ins().iconst(t, (1u64 << (bits - 1)) as i64);
            let x_neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, 0);
            let bound = self.b.ins().select(x_neg, min, max);
            self.b.ins().select(overflow, bound, r)
        } else if add {
            let wrapped = self.b.ins().icmp(IntCC::UnsignedLessThan, r, x);
            let max = self.b.ins().iconst(t, -1);
            self.b.ins().select(wrapped, max, r)
        } else {
            let under = self.b.ins().icmp(IntCC::UnsignedLessThan, x, y);
            let zero = self.b.ins().iconst(t, 0);
            self.b.ins().select(under, zero, r)
        }
    }

    /// `x.pow(e)`: square-and-multiply over the `u32` exponent, wrapping like release Rust.
    fn int_pow(&mut self, s: ScalarType, x: Value, exponent: Value) -> Value {
        let t = clif(s);
        let acc = self.b.declare_var(t);
        let base = self.b.declare_var(t);
        let e = self.b.declare_var(ct::I32);
        let one = self.b.ins().iconst(t, 1);
        self.b.def_var(acc, one);
        self.b.def_var(base, x);
        self.b.def_var(e, exponent);
        let head = self.b.create_block();
        let body = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let ev = self.b.use_var(e);
        self.loop_test(ev, body, exit);
        self.b.switch_to_block(body);
        let ev = self.b.use_var(e);
        let bit = self.b.ins().band_imm_u(ev, 1);
        let av = self.b.use_var(acc);
        let bv = self.b.use_var(base);
        let prod = self.b.ins().imul(av, bv);
        let nacc = self.b.ins().select(bit, prod, av);
        self.b.def_var(acc, nacc);
        let sq = self.b.ins().imul(bv, bv);
        self.b.def_var(base, sq);
        let ne = self.b.ins().ushr_imm_u(ev, 1);
        self.b.def_var(e, ne);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        self.b.use_var(acc)
    }

    pub(super) fn assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> R<V> {
        if (ty, func) == ("accel", "same_len") {
            let n = self.expr(&args[0])?;
            let m = self.expr(&args[1])?;
            let differ = self.b.ins().icmp(IntCC::NotEqual, n.w[0], m.w[0]);
            self.fail_if(differ, FailureKind::Lengths, n.w[0], m.w[0]);
            return Ok(n);
        }
        match (ty, func) {
            ("cmp", "max" | "min") | (_, _)
                if ScalarType::from_name(ty).is_some() || ty == "cmp" =>
            {
                let (recv, rest) = args
                    .split_first()
                    .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
                self.method(recv, func, rest)
            }
            ("Tensor", "from_vec") => self.tensor_from_vec(&args[0], &args[1]),
            ("Tensor", "zeros") => Err(unsupported(
                "`Tensor::zeros` but where a `let` binds it (its element type)",
            )),
            _ => Err(unsupported(format!("`{ty}::{func}`"))),
        }
    }

    /// A tensor method; `checked` false when the access is proven in bounds (the rank and
    /// every coordinate).
    pub(super) fn tensor_method(&mut self, t: &V, method: &str, a: &[V], checked: bool) -> R<V> {
        let Type::Tensor(elem) = &t.ty else {
            unreachable!("a tensor")
        };
        let Type::Scalar(s) = **elem else {
            return Err(unsupported("tensors of compound elements"));
        };
        let usize_ty = Type::Scalar(ScalarType::Usize);
        match method {
            "rank" => Ok(V {
                ty: usize_ty,
                w: vec![t.w[1]],
            }),
            // The dimensions past the rank are 1.
            "len" => {
                let mut n = t.w[2];
                for k in 1..MAX_RANK {
                    n = self.b.ins().imul(n, t.w[2 + k]);
                }
                Ok(V {
                    ty: usize_ty,
                    w: vec![n],
                })
            }
            "sub" => {
                // Rows `offset..offset + len` along the first dimension, a view.
                let (offset, len) = (a[0].w[0], a[1].w[0]);
                let rows = t.w[2];
                if checked {
                    let past = self.b.ins().icmp(IntCC::UnsignedGreaterThan, offset, rows);
                    let room = self.b.ins().isub(rows, offset);
                    let long = self.b.ins().icmp(IntCC::UnsignedGreaterThan, len, room);
                    let bad = self.b.ins().bor(past, long);
                    let end = self.b.ins().iadd(offset, len);
                    self.fail_if(bad, FailureKind::Slice, offset, end);
                }
                let mut row_size = self.iconst(1);
                for k in 1..MAX_RANK {
                    row_size = self.b.ins().imul(row_size, t.w[2 + k]);
                }
                let first = self.b.ins().imul(offset, row_size);
                let bytes = self.scaled(first, s);
                let base = self.b.ins().iadd(t.w[0], bytes);
                let mut w = t.w.clone();
                w[0] = base;
                w[2] = len;
                Ok(V {
                    ty: t.ty.clone(),
                    w,
                })
            }
            "get" | "set" => self.tensor_element(t, s, method, a, checked),
            "shape" => {
                // A shape as a sequence needs memory: copy the dimensions.
                let rank = t.w[1];
                let cols = self.alloc_columns(&usize_ty, rank)?;
                for k in 0..MAX_RANK {
                    let i = self.iconst(k as i64);
                    let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, i, rank);
                    let store = self.b.create_block();
                    let after = self.b.create_block();
                    self.b.ins().brif(inside, store, &[], after, &[]);
                    self.b.switch_to_block(store);
                    self.store_elem(&usize_ty, &cols, i, &[t.w[2 + k]])?;
                    self.b.ins().jump(after, &[]);
                    self.b.switch_to_block(after);
                }
                Ok(V {
                    ty: Type::Seq(Box::new(usize_ty)),
                    w: [vec![rank], cols].concat(),
                })
            }
            "to_vec" => self.tensor_to_vec(t),
            m => Err(unsupported(format!("`.{m}()` on a tensor"))),
        }
    }
}
