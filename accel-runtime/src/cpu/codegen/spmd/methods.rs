//! Methods per lane: the number methods on vectors (the math library inlined on them),
//! those with no vector form lane by lane with scalar code's own, and associated
//! functions (`f32::max(a, b)`).

use super::super::cx::*;
use super::super::math::INLINE;
use super::{not_spmd, Part, G};
use crate::backend::failure::FailureKind;
use accel_ir::{Expr, ScalarType, Type};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types as ct, InstBuilder, Value};

impl FnCx<'_, '_> {
    /// A method call for the gang.
    pub(super) fn gmethod(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> R<G> {
        // `x.is_multiple_of(c)` by a constant power of two (an unsigned `x`, as Rust's
        // method has): `x & (c - 1) == 0` on the vectors, where it would go lane by lane.
        if let (Some(c), "is_multiple_of") = (is_power_of_two_literal(args), method) {
            let t = match args[0] {
                Expr::Lit(accel_ir::Lit::Int(_, t)) => t,
                _ => None,
            };
            let lit = |v: u64| Expr::Lit(accel_ir::Lit::Int(v, t));
            let masked = Expr::Binary(
                accel_ir::BinOp::BitAnd,
                Box::new(recv.clone()),
                Box::new(lit(c - 1)),
            );
            let test = Expr::Binary(accel_ir::BinOp::Eq, Box::new(masked), Box::new(lit(0)));
            return self.gexpr(&test);
        }
        let r = self.gexpr(recv)?;
        if let Type::Tensor(_) = r.ty {
            return self.gtensor(recv, &r, method, args);
        }
        if let (Type::Seq(_), "len", []) = (&r.ty, method, args) {
            // A sequence per lane: its length word.
            return Ok(G {
                ty: Type::Scalar(accel_ir::ScalarType::Usize),
                w: vec![r.w[0].clone()],
            });
        }
        let a = args.iter().map(|x| self.gexpr(x)).collect::<R<Vec<_>>>()?;
        let s = Self::g_scalar(&r)?;
        let all_uniform = std::iter::once(&r)
            .chain(&a)
            .all(|g| g.w.iter().all(|p| matches!(p, Part::Uni(_))));
        if all_uniform {
            let word = |g: &G| V {
                ty: g.ty.clone(),
                w: g.w
                    .iter()
                    .map(|p| match p {
                        Part::Uni(x) => *x,
                        _ => unreachable!("checked uniform"),
                    })
                    .collect(),
            };
            let rv = word(&r);
            let av: Vec<V> = a.iter().map(word).collect();
            let v = if s.is_float() {
                self.float_method(s, rv, method, &av)?
            } else {
                self.int_method(s, rv, method, &av)?
            };
            return Ok(G::uniform(v));
        }
        if s.is_float() {
            if let Some(g) = self.gfloat_method(s, &r, method, &a)? {
                return Ok(g);
            }
        } else if let Some(mut g) = self.gint_method(s, &r, method, &a)? {
            if g.ty == r.ty {
                // `abs` and the wrapping methods may leave a small integer's range.
                g.w = g.w.into_iter().map(|p| self.wrap_part(s, p)).collect();
            }
            return Ok(g);
        }
        self.method_per_lane(s, &r, method, &a)
    }

    /// `ty::func(args)` for the gang.
    pub(super) fn gassoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> R<G> {
        if ScalarType::from_name(ty).is_some() || ty == "cmp" {
            let (recv, rest) = args
                .split_first()
                .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
            return self.gmethod(recv, func, rest);
        }
        Err(not_spmd(format!("`{ty}::{func}` per lane")))
    }

    /// A float method with a vector form, or `None`.
    fn gfloat_method(&mut self, s: ScalarType, r: &G, method: &str, a: &[G]) -> R<Option<G>> {
        let (t, _) = self.lane_vector(s);
        let x = self.vectors(&r.w[0], s);
        let arg = |f: &mut Self, k: usize| -> Vec<Value> { f.vectors(&a[k].w[0], s) };
        let each = |_: &mut Self, xs: Vec<Value>| G {
            ty: r.ty.clone(),
            w: vec![Part::Var(xs)],
        };
        let mask = |f: &mut Self, ms: Vec<Value>| Self::bool_of(f.narrow_mask(&ms));
        let out = match method {
            "sqrt" | "abs" | "floor" | "ceil" | "trunc" | "fract" | "recip" | "to_degrees"
            | "to_radians" | "signum" => {
                let v = x
                    .iter()
                    .map(|&v| self.float_unary_lanes(s, t, method, v))
                    .collect();
                each(self, v)
            }
            "mul_add" => {
                let (b, c) = (arg(self, 0), arg(self, 1));
                let v = (0..x.len())
                    .map(|k| self.b.ins().fma(x[k], b[k], c[k]))
                    .collect();
                each(self, v)
            }
            "min" | "max" => {
                let y = arg(self, 0);
                let v = (0..x.len())
                    .map(|k| self.vminmax(t, method == "max", x[k], y[k]))
                    .collect();
                each(self, v)
            }
            "clamp" => {
                let (lo, hi) = (arg(self, 0), arg(self, 1));
                // Rust's assertion (`min <= max`, false for a NaN bound), then its order of
                // tests, as scalar code has them: a NaN `x` stays NaN.
                let reversed: Vec<Value> = (0..x.len())
                    .map(|k| {
                        self.b
                            .ins()
                            .fcmp(FloatCC::UnorderedOrGreaterThan, lo[k], hi[k])
                    })
                    .collect();
                let reversed = self.narrow_mask(&reversed);
                self.fail_lanes(
                    reversed,
                    FailureKind::ClampBounds,
                    (&a[0].w[0], s),
                    (&a[1].w[0], s),
                );
                let v = (0..x.len())
                    .map(|k| {
                        let below = self.b.ins().fcmp(FloatCC::LessThan, x[k], lo[k]);
                        let below = self.vbitcast(t, below);
                        let above = self.b.ins().fcmp(FloatCC::LessThan, hi[k], x[k]);
                        let above = self.vbitcast(t, above);
                        let up = self.b.ins().bitselect(below, lo[k], x[k]);
                        self.b.ins().bitselect(above, hi[k], up)
                    })
                    .collect();
                each(self, v)
            }
            "is_nan" | "is_finite" | "is_infinite" => {
                let ms = x
                    .iter()
                    .map(|&v| {
                        if method == "is_nan" {
                            return self.b.ins().fcmp(FloatCC::Unordered, v, v);
                        }
                        let abs = self.b.ins().fabs(v);
                        let inf = self.splat_f(s, f64::INFINITY);
                        let cc = if method == "is_infinite" {
                            FloatCC::Equal
                        } else {
                            FloatCC::LessThan
                        };
                        self.b.ins().fcmp(cc, abs, inf)
                    })
                    .collect();
                mask(self, ms)
            }
            "powi" => match &a[0].w[0] {
                Part::Uni(n) => {
                    let v = x.iter().map(|&v| self.powi(t, v, *n)).collect();
                    each(self, v)
                }
                _ => return Ok(None),
            },
            "sin_cos" => {
                let mut sin = Vec::new();
                let mut cos = Vec::new();
                for &v in &x {
                    let Some((a, b)) = self.inline_sin_cos(t, v) else {
                        return Ok(None);
                    };
                    sin.push(a);
                    cos.push(b);
                }
                G {
                    ty: Type::Tuple(vec![r.ty.clone(), r.ty.clone()]),
                    w: vec![Part::Var(sin), Part::Var(cos)],
                }
            }
            m if INLINE.contains(&m) => {
                let ys: Vec<Vec<Value>> = (0..a.len()).map(|k| arg(self, k)).collect();
                let mut out = Vec::new();
                for k in 0..x.len() {
                    let mut args = vec![x[k]];
                    args.extend(ys.iter().map(|y| y[k]));
                    match self.inline_math(t, m, &args) {
                        Some(v) => out.push(v),
                        None => return Ok(None),
                    }
                }
                each(self, out)
            }
            _ => return Ok(None),
        };
        Ok(Some(out))
    }

    /// A one-argument float method on a vector of lanes.
    fn float_unary_lanes(&mut self, s: ScalarType, t: CType, method: &str, v: Value) -> Value {
        match method {
            "sqrt" => self.b.ins().sqrt(v),
            "abs" => self.b.ins().fabs(v),
            "floor" => self.b.ins().floor(v),
            "ceil" => self.b.ins().ceil(v),
            "trunc" => self.b.ins().trunc(v),
            "fract" => {
                let tr = self.b.ins().trunc(v);
                self.b.ins().fsub(v, tr)
            }
            "recip" => {
                let one = self.splat_f(s, 1.0);
                self.b.ins().fdiv(one, v)
            }
            "to_degrees" | "to_radians" => {
                let k = if method == "to_degrees" {
                    180.0 / std::f64::consts::PI
                } else {
                    std::f64::consts::PI / 180.0
                };
                let k = self.splat_f(s, k);
                self.b.ins().fmul(v, k)
            }
            _ => {
                // signum: ±1 with the sign of v, NaN for NaN.
                let one = self.splat_f(s, 1.0);
                let sign = self.splat_f(s, -0.0);
                let it = t.as_int();
                let (vb, sb, ob) = (
                    self.vbitcast(it, v),
                    self.vbitcast(it, sign),
                    self.vbitcast(it, one),
                );
                let sbits = self.b.ins().band(vb, sb);
                let r = self.b.ins().bor(ob, sbits);
                let r = self.vbitcast(t, r);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, v, v);
                let nan = self.vbitcast(t, nan);
                self.b.ins().bitselect(nan, v, r)
            }
        }
    }

    /// Rust's `x.max(y)`/`x.min(y)` on lanes, as scalar code computes it (one
    /// `maxps`/`minps`, then lanes where `x` is NaN take `y`).
    fn vminmax(&mut self, t: CType, max: bool, x: Value, y: Value) -> Value {
        let take_y = if max {
            self.b.ins().fcmp(FloatCC::LessThan, x, y)
        } else {
            self.b.ins().fcmp(FloatCC::LessThan, y, x)
        };
        let take_y = self.vbitcast(t, take_y);
        let m = self.b.ins().bitselect(take_y, y, x);
        let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let x_nan = self.vbitcast(t, x_nan);
        self.b.ins().bitselect(x_nan, y, m)
    }

    /// The float constant `v` in every lane of a vector of `s`.
    pub(super) fn splat_f(&mut self, s: ScalarType, v: f64) -> Value {
        let (t, _) = self.lane_vector(s);
        let n = t.lane_count();
        let bytes = if s == ScalarType::F32 {
            (0..n).flat_map(|_| (v as f32).to_le_bytes()).collect()
        } else {
            (0..n).flat_map(|_| v.to_le_bytes()).collect()
        };
        self.vconst_bytes(t, bytes)
    }

    /// An integer method with a vector form, or `None`.
    fn gint_method(&mut self, s: ScalarType, r: &G, method: &str, a: &[G]) -> R<Option<G>> {
        if let Some(c) = self.clamped_index(s, r, method, a) {
            return Ok(Some(G {
                ty: r.ty.clone(),
                w: vec![Part::Clamp(c)],
            }));
        }
        let (t, _) = self.lane_vector(s);
        if t != self.mask_type() {
            return Ok(None);
        }
        let x = self.vectors(&r.w[0], s);
        let y = a.first().map(|g| self.vectors(&g.w[0], s));
        let v: Vec<Value> = match (method, y) {
            ("abs", _) if signed(s) => x.iter().map(|&v| self.b.ins().iabs(v)).collect(),
            ("abs", _) => x,
            ("clamp", Some(lo)) => {
                let hi = self.vectors(&a[1].w[0], s);
                let cc = if signed(s) {
                    IntCC::SignedGreaterThan
                } else {
                    IntCC::UnsignedGreaterThan
                };
                let reversed: Vec<Value> = lo
                    .iter()
                    .zip(&hi)
                    .map(|(&l, &h)| self.b.ins().icmp(cc, l, h))
                    .collect();
                let reversed = self.narrow_mask(&reversed);
                self.fail_lanes(
                    reversed,
                    FailureKind::ClampBounds,
                    (&a[0].w[0], s),
                    (&a[1].w[0], s),
                );
                (0..x.len())
                    .map(|k| {
                        if signed(s) {
                            let up = self.b.ins().smax(x[k], lo[k]);
                            self.b.ins().smin(up, hi[k])
                        } else {
                            let up = self.b.ins().umax(x[k], lo[k]);
                            self.b.ins().umin(up, hi[k])
                        }
                    })
                    .collect()
            }
            (m, Some(y)) => {
                let op = |f: &mut Self, a: Value, b: Value| -> Option<Value> {
                    let i = f.b.ins();
                    Some(match (m, signed(s)) {
                        ("min", true) => i.smin(a, b),
                        ("min", false) => i.umin(a, b),
                        ("max", true) => i.smax(a, b),
                        ("max", false) => i.umax(a, b),
                        ("wrapping_add", _) => i.iadd(a, b),
                        ("wrapping_sub", _) => i.isub(a, b),
                        ("wrapping_mul", _) => i.imul(a, b),
                        _ => return None,
                    })
                };
                let mut out = Vec::with_capacity(x.len());
                for (&a, &b) in x.iter().zip(&y) {
                    match op(self, a, b) {
                        Some(v) => out.push(v),
                        None => return Ok(None),
                    }
                }
                out
            }
            _ => return Ok(None),
        };
        Ok(Some(G {
            ty: r.ty.clone(),
            w: vec![Part::Var(v)],
        }))
    }

    /// `x.clamp(lo, hi)`, `x.max(lo)` or `x.min(hi)` of the gang's index `x` (plus
    /// offsets) with bounds the same for every lane: a clamped index (`Part::Clamp`).
    fn clamped_index(
        &mut self,
        s: ScalarType,
        r: &G,
        method: &str,
        a: &[G],
    ) -> Option<super::Clamp> {
        let Part::Seq(base, _) = r.w[0] else {
            return None;
        };
        let uniform = |k: usize| match a.get(k).map(|g| &g.w[0]) {
            Some(Part::Uni(v)) => Some(*v),
            _ => None,
        };
        let signed = signed(s);
        let (min, max) = if signed {
            (i64::MIN, i64::MAX)
        } else {
            (0, -1)
        };
        let (lo, hi) = match method {
            "clamp" => {
                let (lo, hi) = (uniform(0)?, uniform(1)?);
                // Rust's assertion, for the lanes that run.
                let cc = if signed {
                    IntCC::SignedGreaterThan
                } else {
                    IntCC::UnsignedGreaterThan
                };
                let reversed = self.b.ins().icmp(cc, lo, hi);
                if self.gang.as_ref().is_some_and(|g| g.mask.is_some()) {
                    let all = self.b.ins().uextend(ct::I32, reversed);
                    let all = self.b.ins().ineg(all);
                    let mt = self.mask_type();
                    let all = self.b.ins().splat(mt, all);
                    let mask = vec![all; self.groups()];
                    self.fail_lanes(
                        mask,
                        FailureKind::ClampBounds,
                        (&a[0].w[0], s),
                        (&a[1].w[0], s),
                    );
                } else {
                    // Every lane runs: one test, as scalar code's.
                    self.fail_if(reversed, FailureKind::ClampBounds, lo, hi);
                }
                (lo, hi)
            }
            "max" => (uniform(0)?, self.b.ins().iconst(ct::I64, max)),
            "min" => (self.b.ins().iconst(ct::I64, min), uniform(0)?),
            _ => return None,
        };
        let off = self.b.ins().iconst(ct::I64, 0);
        Some(super::Clamp {
            base,
            lo,
            hi,
            off,
            signed,
        })
    }

    /// A number method lane by lane, with scalar code's own (libm calls among them).
    /// Lanes not running get arguments that cannot fail (a divisor of 1, bounds of 0).
    fn method_per_lane(&mut self, s: ScalarType, r: &G, method: &str, a: &[G]) -> R<G> {
        let divides = DIVIDING.contains(&method);
        if divides {
            self.no_division_in_varying_loop(&format!("`.{method}()`"))?;
        }
        let mut a = a.to_vec();
        if let Some(m) = self.gang.as_ref().and_then(|g| g.mask.clone()) {
            let safe = match method {
                _ if divides => Some(1.0),
                "clamp" => Some(0.0),
                _ => None,
            };
            if let Some(c) = safe {
                for g in a.iter_mut() {
                    let gs = Self::g_scalar(g)?;
                    let v = if gs.is_float() {
                        self.fconst(gs, c)
                    } else {
                        self.b.ins().iconst(clif(gs), c as i64)
                    };
                    g.w[0] = self.blend_part(&m, &g.w[0], &Part::Uni(v), gs);
                }
            }
        }
        let a = &a[..];
        let mut lanes: Vec<V> = Vec::with_capacity(self.lanes());
        for k in 0..self.lanes() {
            let x = self.lane_of(&r.w[0], s, k);
            let args = a
                .iter()
                .map(|g| {
                    let gs = Self::g_scalar(g)?;
                    Ok(V {
                        ty: g.ty.clone(),
                        w: vec![self.lane_of(&g.w[0], gs, k)],
                    })
                })
                .collect::<R<Vec<_>>>()?;
            let rv = V {
                ty: r.ty.clone(),
                w: vec![x],
            };
            lanes.push(if s.is_float() {
                self.float_method(s, rv, method, &args)?
            } else {
                self.int_method(s, rv, method, &args)?
            });
        }
        let ty = lanes[0].ty.clone();
        let ss = Self::word_scalars(&ty)?;
        let w = ss
            .iter()
            .enumerate()
            .map(|(j, &ws)| {
                let xs: Vec<Value> = lanes.iter().map(|v| v.w[j]).collect();
                self.part_of_lanes(ws, &xs)
            })
            .collect();
        Ok(G { ty, w })
    }
}

/// The number methods that divide (lanes not running divide by 1).
const DIVIDING: [&str; 4] = ["rem_euclid", "div_euclid", "div_ceil", "is_multiple_of"];

/// `c` where `args` is one integer literal `c`, a power of two.
fn is_power_of_two_literal(args: &[Expr]) -> Option<u64> {
    match args {
        [Expr::Lit(accel_ir::Lit::Int(c, _))] if c.is_power_of_two() => Some(*c),
        _ => None,
    }
}
