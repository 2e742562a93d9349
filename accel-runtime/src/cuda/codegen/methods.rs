//! Methods: of sequences, arrays, tensors and numbers (CUDA's math functions).

use super::kernel::*;
use crate::backend::abi::MAX_RANK;
use crate::cuda::c::*;
use accel_ir::{Expr, ScalarType, Type};

impl KernelGen<'_> {
    /// `recv.method(args)`.
    pub(super) fn method_call(&mut self, recv: &Expr, method: &str, args: &[Expr]) -> R<V> {
        let r = self.expr(recv)?;
        let a = args.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
        self.method(r, method, a)
    }

    /// `T::func(args)`: a number method called by its type's name, or `same_len`.
    pub(super) fn assoc(&mut self, ty: &str, func: &str, args: &[Expr]) -> R<V> {
        if (ty, func) == ("accel", "same_len") {
            let n = self.expr(&args[0])?;
            let m = self.expr(&args[1])?;
            self.fail_unless_same_len(&n.w[0], &m.w[0]);
            return Ok(n);
        }
        if ScalarType::from_name(ty).is_some() || ty == "cmp" {
            let (recv, rest) = args
                .split_first()
                .ok_or_else(|| format!("`{ty}::{func}` needs arguments"))?;
            let r = self.expr(recv)?;
            let a = rest.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
            return self.method(r, func, a);
        }
        match (ty, func) {
            ("Tensor", "from_vec") => self.tensor_from_vec(&args[0], &args[1]),
            ("Tensor", "zeros") => Err(unsupported(
                "`Tensor::zeros` but where a `let` binds it (its element type)",
            )),
            _ => Err(unsupported(format!("`{ty}::{func}` in kernel code"))),
        }
    }

    /// Records a `Lengths` failure unless the lengths `a` and `b` (of `map2`'s inputs)
    /// are equal.
    pub(super) fn fail_unless_same_len(&mut self, a: &str, b: &str) {
        self.line(&format!(
            "if ({a} != {b}) accel_fail(err, {FAIL_LENGTHS}, {a}, {b});"
        ));
    }

    pub(super) fn method(&mut self, r: V, method: &str, a: Vec<V>) -> R<V> {
        match &r.ty {
            Type::Seq(_) => {
                return match method {
                    "len" => Ok(usize_v(r.w[0].clone())),
                    "is_empty" => {
                        let v = self.let_("bool", "empty", &format!("{} == 0", r.w[0]));
                        Ok(V::scalar(ScalarType::Bool, v))
                    }
                    "to_vec" => Ok(r),
                    m => Err(unsupported(format!("`.{m}()` on a sequence"))),
                }
            }
            Type::Array(_, n) if method == "len" => return Ok(usize_v(format!("{n}ULL"))),
            Type::Tensor(_) => return self.tensor_method(&r, method, &a),
            _ => {}
        }
        let Type::Scalar(s) = r.ty else {
            return Err(unsupported(format!("`.{method}()` on {}", r.ty)));
        };
        let x = r.w[0].clone();
        let arg = |k: usize| -> R<String> {
            a.get(k)
                .map(|v| v.w[0].clone())
                .ok_or_else(|| format!("`.{method}()` needs {} argument(s)", k + 1))
        };
        let bool_result = |g: &mut Self, c: String| {
            let v = g.let_("bool", method, &c);
            Ok(V::scalar(ScalarType::Bool, v))
        };
        if s.is_float() {
            let f = |name: &str| {
                if s == ScalarType::F32 {
                    format!("{name}f")
                } else {
                    name.to_string()
                }
            };
            let t = cty(s);
            let c = match method {
                "sqrt" | "exp" | "exp2" | "log10" | "log2" | "sin" | "cos" | "tan" | "asin"
                | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh" | "acosh" | "atanh"
                | "cbrt" | "floor" | "ceil" | "trunc" | "round" => {
                    format!("{}({x})", f(method))
                }
                "ln" => format!("{}({x})", f("log")),
                "exp_m1" => format!("{}({x})", f("expm1")),
                "ln_1p" => format!("{}({x})", f("log1p")),
                "abs" => format!("{}({x})", f("fabs")),
                "powf" => format!("{}({x}, {})", f("pow"), arg(0)?),
                "powi" => format!("{}({x}, ({t})({}))", f("pow"), arg(0)?),
                "atan2" => format!("{}({x}, {})", f("atan2"), arg(0)?),
                "hypot" => format!("{}({x}, {})", f("hypot"), arg(0)?),
                "log" => format!("{}({x}) / {}({})", f("log"), f("log"), arg(0)?),
                "min" => format!("{}({x}, {})", f("fmin"), arg(0)?),
                "max" => format!("{}({x}, {})", f("fmax"), arg(0)?),
                "mul_add" => format!("{}({x}, {}, {})", f("fma"), arg(0)?, arg(1)?),
                "recip" => format!("({t})1 / {x}"),
                "fract" => format!("{x} - {}({x})", f("trunc")),
                "signum" => format!("isnan({x}) ? {x} : {}(({t})1, {x})", f("copysign")),
                "to_degrees" => format!("{x} * ({t})(180.0 / 3.14159265358979323846)"),
                "to_radians" => format!("{x} * ({t})(3.14159265358979323846 / 180.0)"),
                "clamp" => format!("accel_clamp<{t}>({x}, {}, {}, err)", arg(0)?, arg(1)?),
                "rem_euclid" | "div_euclid" => format!("accel_{method}({x}, {})", arg(0)?),
                "is_nan" => return bool_result(self, format!("isnan({x})")),
                "is_finite" => return bool_result(self, format!("isfinite({x})")),
                "is_infinite" => return bool_result(self, format!("isinf({x})")),
                "sin_cos" => {
                    let sn = self.let_(t, "sin", &format!("{}({x})", f("sin")));
                    let cs = self.let_(t, "cos", &format!("{}({x})", f("cos")));
                    return Ok(V {
                        ty: Type::Tuple(vec![r.ty.clone(), r.ty.clone()]),
                        w: vec![sn, cs],
                    });
                }
                m => return Err(unsupported(format!("`.{m}()` on {}", s.name()))),
            };
            let v = self.let_(t, method, &c);
            return Ok(V::scalar(s, v));
        }
        self.int_method(s, x, method, &a)
    }

    /// A method of an integer type.
    fn int_method(&mut self, s: ScalarType, x: String, method: &str, a: &[V]) -> R<V> {
        let arg = |k: usize| -> R<String> {
            a.get(k)
                .map(|v| v.w[0].clone())
                .ok_or_else(|| format!("`.{method}()` needs {} argument(s)", k + 1))
        };
        let bool_result = |g: &mut Self, c: String| {
            let v = g.let_("bool", method, &c);
            Ok(V::scalar(ScalarType::Bool, v))
        };
        let t = cty(s);
        let wide = bits(s) == 64;
        let c = match method {
            "abs" if signed(s) => format!("{x} < 0 ? accel_neg({x}) : {x}"),
            "abs" => x.clone(),
            "min" => format!("{x} < {0} ? {x} : {0}", arg(0)?),
            "max" => format!("{x} > {0} ? {x} : {0}", arg(0)?),
            "wrapping_add" => format!("accel_add({x}, {})", arg(0)?),
            "wrapping_sub" => format!("accel_sub({x}, {})", arg(0)?),
            "wrapping_mul" => format!("accel_mul({x}, {})", arg(0)?),
            "wrapping_neg" => format!("accel_neg({x})"),
            "pow" => format!("accel_pow({x}, (unsigned)({}))", arg(0)?),
            "clamp" => format!("accel_clamp<{t}>({x}, {}, {}, err)", arg(0)?, arg(1)?),
            "__chunk_size" => format!("accel_nonzero_size<{t}>({x}, 0, err)"),
            "__window_size" => format!("accel_nonzero_size<{t}>({x}, 1, err)"),
            "signum" => format!("({t})(({x} > 0) - ({x} < 0))"),
            "div_ceil" => {
                let (y, min) = (arg(0)?, int_min(s));
                format!(
                    "accel_div<{t}>({x}, ({t})({y}), {min}, err) + (accel_rem<{t}>({x}, ({t})({y}), {min}, err) != 0 ? 1 : 0)"
                )
            }
            "saturating_add" => format!("accel_sat_add({x}, ({t})({}))", arg(0)?),
            "saturating_sub" => format!("accel_sat_sub({x}, ({t})({}))", arg(0)?),
            "rem_euclid" | "div_euclid" => {
                let min = int_min(s);
                format!("accel_{method}<{t}>({x}, ({t})({}), {min}, err)", arg(0)?)
            }
            "abs_diff" => {
                let u = s.unsigned();
                let v = self.let_(
                    cty(u),
                    method,
                    &format!("accel_abs_diff({x}, ({t})({}))", arg(0)?),
                );
                return Ok(V::scalar(u, v));
            }
            "count_ones" | "leading_zeros" | "trailing_zeros" => {
                let c = match (method, wide) {
                    ("count_ones", false) => format!("(unsigned)__popc((unsigned){x})"),
                    ("count_ones", true) => format!("(unsigned)__popcll((ull){x})"),
                    ("leading_zeros", false) => format!("(unsigned)__clz((int){x})"),
                    ("leading_zeros", true) => format!("(unsigned)__clzll((long long){x})"),
                    (_, false) => format!("accel_tz32((unsigned){x})"),
                    (_, true) => format!("accel_tz64((ull){x})"),
                };
                let v = self.let_("unsigned", method, &c);
                return Ok(V::scalar(ScalarType::U32, v));
            }
            "is_multiple_of" => {
                let y = arg(0)?;
                return bool_result(
                    self,
                    format!("{y} == 0 ? {x} == 0 : ({x} % ({y} == 0 ? 1 : {y})) == 0"),
                );
            }
            m => return Err(unsupported(format!("`.{m}()` on {}", s.name()))),
        };
        let v = self.let_(t, method, &c);
        Ok(V::scalar(s, v))
    }

    pub(super) fn tensor_method(&mut self, t: &V, method: &str, a: &[V]) -> R<V> {
        let Type::Tensor(elem) = &t.ty else {
            unreachable!("a tensor")
        };
        let Type::Scalar(s) = **elem else {
            return Err(unsupported("tensors of compound elements"));
        };
        match method {
            "rank" => Ok(usize_v(t.w[1].clone())),
            "len" => {
                let v = self.let_(
                    "ull",
                    "tensor_len",
                    &format!(
                        "{1} > 0 ? {0} : 0",
                        (0..MAX_RANK)
                            .map(|k| t.w[2 + k].clone())
                            .collect::<Vec<_>>()
                            .join(" * "),
                        t.w[1]
                    ),
                );
                Ok(usize_v(v))
            }
            "sub" => {
                // Rows `offset..offset + len` along the first dimension, a view.
                let (offset, len) = (&a[0].w[0], &a[1].w[0]);
                let rows = &t.w[2];
                self.line(&format!(
                    "if ({offset} > {rows} || {len} > {rows} - {offset}) accel_fail(err, {FAIL_SLICE}, {offset}, {offset} + {len});"
                ));
                let row_size = (1..MAX_RANK)
                    .map(|k| t.w[2 + k].clone())
                    .collect::<Vec<_>>()
                    .join(" * ");
                let base = self.let_(
                    &format!("{}*", cty(s)),
                    "sub",
                    &format!("{} + {offset} * {row_size}", t.w[0]),
                );
                let mut w = t.w.clone();
                w[0] = base;
                w[2] = len.clone();
                Ok(V {
                    ty: t.ty.clone(),
                    w,
                })
            }
            "get" | "set" => {
                let idx = a
                    .first()
                    .ok_or_else(|| format!("`.{method}()` needs an index"))?;
                let coords = idx.w.len();
                let rank = &t.w[1];
                let ok = self.let_("bool", "tensor_ok", &format!("{rank} == {coords}"));
                self.line(&format!(
                    "if (!{ok}) accel_fail(err, {FAIL_RANK}, {coords}, {rank});"
                ));
                let flat = self.let_("ull", "flat", "0");
                // An index of more coordinates than any tensor's rank failed above.
                for (k, i) in idx.w.iter().enumerate().take(MAX_RANK) {
                    let dim = &t.w[2 + k];
                    self.line(&format!(
                        "if ({i} >= {dim}) {{ accel_fail(err, {FAIL_INDEX}, {i}, {dim}); {ok} = false; }}"
                    ));
                    self.line(&format!("{flat} = {flat} * {dim} + {i};"));
                }
                if method == "get" {
                    let v = self.let_(
                        cty(s),
                        "tget",
                        &format!("{ok} ? {}[{flat}] : ({})0", t.w[0], cty(s)),
                    );
                    Ok(V::scalar(s, v))
                } else {
                    let value = a.get(1).ok_or("`.set()` needs a value")?.w[0].clone();
                    self.line(&format!("if ({ok}) {}[{flat}] = {value};", t.w[0]));
                    Ok(V::unit())
                }
            }
            "shape" => {
                // A shape as a sequence needs memory: the dimensions copied to the arena.
                let usize_ty = Type::Scalar(ScalarType::Usize);
                let (n, cols) = self.arena_columns(&usize_ty, &t.w[1])?;
                for k in 0..MAX_RANK {
                    self.line(&format!(
                        "if ({k} < {n}) {}[{k}] = {};",
                        cols[0],
                        t.w[2 + k]
                    ));
                }
                Ok(V {
                    ty: Type::Seq(Box::new(usize_ty)),
                    w: [vec![n], cols].concat(),
                })
            }
            "to_vec" => self.tensor_to_vec(t),
            m => Err(unsupported(format!("`.{m}()` on a tensor in kernel code"))),
        }
    }
}
