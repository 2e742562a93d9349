//! The value operations of [`Translator`]: arithmetic, comparisons, conversions and
//! vector lanes, each with Cranelift's meaning (see the module doc of `translate`).

use super::translate::{mangle, ty, Translator, R};
use cranelift_codegen::ir::{
    self,
    condcodes::{FloatCC, IntCC},
    Inst, InstructionData, Opcode, Value,
};

impl Translator<'_> {
    /// Emits a value operation (everything but control, calls and memory).
    pub(super) fn operation(&mut self, inst: Inst, data: InstructionData, a: &[Value]) -> R<()> {
        let op = data.opcode();
        let rt = match self.f.dfg.inst_results(inst).first() {
            Some(&r) => self.t(r),
            None => return Err(format!("the LLVM tier cannot translate {op}")),
        };
        let rhs = match (op, data) {
            (Opcode::Iconst, InstructionData::UnaryImm { imm, .. }) => {
                let bits = rt.bits();
                let v: i64 = imm.into();
                let v = if bits < 64 {
                    (v << (64 - bits)) >> (64 - bits)
                } else {
                    v
                };
                format!("add {} 0, {v}", ty(rt)?)
            }
            (Opcode::F32const, InstructionData::UnaryIeee32 { imm, .. }) => {
                format!("bitcast i32 {} to float", imm.bits() as i32)
            }
            (Opcode::F64const, InstructionData::UnaryIeee64 { imm, .. }) => {
                format!("bitcast i64 {} to double", imm.bits() as i64)
            }
            (
                Opcode::Vconst,
                InstructionData::UnaryConst {
                    constant_handle, ..
                },
            ) => {
                let bytes = self
                    .f
                    .dfg
                    .constants
                    .get(constant_handle)
                    .as_slice()
                    .to_vec();
                let lanes: Vec<String> = bytes.iter().map(|b| format!("i8 {}", *b as i8)).collect();
                format!(
                    "bitcast <{} x i8> <{}> to {}",
                    bytes.len(),
                    lanes.join(", "),
                    ty(rt)?
                )
            }
            (Opcode::Shuffle, InstructionData::Shuffle { imm, .. }) => {
                let mask = self
                    .f
                    .dfg
                    .immediates
                    .get(imm)
                    .ok_or("a shuffle without a mask")?;
                let lanes = mask.as_slice();
                if lanes.iter().any(|&l| usize::from(l) >= 2 * lanes.len()) {
                    return Err("a shuffle lane out of range".into());
                }
                let m: Vec<String> = lanes.iter().map(|l| format!("i32 {l}")).collect();
                let (x, y) = (self.typed(a[0])?, self.typed(a[1])?);
                format!(
                    "shufflevector {x}, {y}, <{} x i32> <{}>",
                    m.len(),
                    m.join(", ")
                )
            }
            (Opcode::Extractlane, InstructionData::BinaryImm8 { imm, .. }) => {
                let x = self.typed(a[0])?;
                format!("extractelement {x}, i32 {}", imm)
            }
            (Opcode::Insertlane, InstructionData::TernaryImm8 { imm, .. }) => {
                let (x, y) = (self.typed(a[0])?, self.typed(a[1])?);
                format!("insertelement {x}, {y}, i32 {}", imm)
            }
            (Opcode::Icmp, InstructionData::IntCompare { cond, .. }) => {
                let c = self.emit(&format!(
                    "icmp {} {}, {}",
                    int_cc(cond),
                    self.typed(a[0])?,
                    self.v(a[1])
                ));
                self.boolean(c, rt)?
            }
            (Opcode::Fcmp, InstructionData::FloatCompare { cond, .. }) => {
                let c = self.emit(&format!(
                    "fcmp {} {}, {}",
                    float_cc(cond),
                    self.typed(a[0])?,
                    self.v(a[1])
                ));
                self.boolean(c, rt)?
            }
            _ => self.simple(op, a, rt)?,
        };
        self.define(inst, &rhs)
    }

    /// An `i1` (or `<N x i1>`) comparison as Cranelift's result: a `0`/`1` byte, or lanes
    /// of all ones.
    fn boolean(&mut self, c: String, rt: ir::Type) -> R<String> {
        Ok(if rt.is_vector() {
            format!("sext <{} x i1> {c} to {}", rt.lane_count(), ty(rt)?)
        } else {
            format!("zext i1 {c} to {}", ty(rt)?)
        })
    }

    /// The operations with no immediate.
    fn simple(&mut self, op: Opcode, a: &[Value], rt: ir::Type) -> R<String> {
        let binary = |name: &str, me: &Self| -> R<String> {
            Ok(format!("{name} {}, {}", me.typed(a[0])?, me.v(a[1])))
        };
        Ok(match op {
            Opcode::Iadd => binary("add", self)?,
            Opcode::Isub => binary("sub", self)?,
            Opcode::Imul => binary("mul", self)?,
            Opcode::Udiv => binary("udiv", self)?,
            Opcode::Sdiv => binary("sdiv", self)?,
            Opcode::Urem => binary("urem", self)?,
            Opcode::Srem => binary("srem", self)?,
            Opcode::Fadd => binary("fadd", self)?,
            Opcode::Fsub => binary("fsub", self)?,
            Opcode::Fmul => binary("fmul", self)?,
            Opcode::Fdiv => binary("fdiv", self)?,
            Opcode::Band | Opcode::Bor | Opcode::Bxor => self.bitwise(op, a[0], a[1])?,
            Opcode::Bnot => {
                let x = self.as_int(a[0])?;
                let it = rt.as_int();
                let r = self.emit(&format!("xor {} {x}, {}", ty(it)?, all_ones(it)?));
                from_int(&r, rt)?
            }
            Opcode::Ineg => format!("sub {} {}, {}", ty(rt)?, zero(rt), self.v(a[0])),
            Opcode::Fneg => format!("fneg {}", self.typed(a[0])?),
            Opcode::Ishl | Opcode::Ushr | Opcode::Sshr | Opcode::Rotl | Opcode::Rotr => {
                self.shift(op, a[0], a[1])?
            }
            Opcode::Smin => self.intrinsic("smin", rt, a)?,
            Opcode::Smax => self.intrinsic("smax", rt, a)?,
            Opcode::Umin => self.intrinsic("umin", rt, a)?,
            Opcode::Umax => self.intrinsic("umax", rt, a)?,
            Opcode::Fmin => self.intrinsic("minimum", rt, a)?,
            Opcode::Fmax => self.intrinsic("maximum", rt, a)?,
            Opcode::Fcopysign => self.intrinsic("copysign", rt, a)?,
            Opcode::Fma => self.intrinsic("fma", rt, a)?,
            Opcode::Fabs => self.intrinsic("fabs", rt, a)?,
            Opcode::Sqrt => self.intrinsic("sqrt", rt, a)?,
            Opcode::Floor => self.intrinsic("floor", rt, a)?,
            Opcode::Ceil => self.intrinsic("ceil", rt, a)?,
            Opcode::Trunc => self.intrinsic("trunc", rt, a)?,
            Opcode::Nearest => self.intrinsic("roundeven", rt, a)?,
            Opcode::Popcnt => self.intrinsic("ctpop", rt, a)?,
            Opcode::Bswap => self.intrinsic("bswap", rt, a)?,
            Opcode::Bitrev => self.intrinsic("bitreverse", rt, a)?,
            Opcode::Clz | Opcode::Ctz | Opcode::Iabs => {
                let name = match op {
                    Opcode::Clz => "ctlz",
                    Opcode::Ctz => "cttz",
                    _ => "abs",
                };
                let t = ty(rt)?;
                self.declare(format!("declare {t} @llvm.{name}.{}({t}, i1)", mangle(rt)));
                format!(
                    "call {t} @llvm.{name}.{}({}, i1 false)",
                    mangle(rt),
                    self.typed(a[0])?
                )
            }
            Opcode::Umulhi | Opcode::Smulhi => {
                let wide = if rt.is_vector() {
                    rt.lane_type().double_width().map(|l| l.by(rt.lane_count()))
                } else {
                    rt.double_width().map(Some)
                }
                .flatten()
                .ok_or("a high multiply without a wider type")?;
                let ext = if op == Opcode::Umulhi { "zext" } else { "sext" };
                let (w, t) = (ty(wide)?, ty(rt)?);
                let x = self.emit(&format!("{ext} {} to {w}", self.typed(a[0])?));
                let y = self.emit(&format!("{ext} {} to {w}", self.typed(a[1])?));
                let p = self.emit(&format!("mul {w} {x}, {y}"));
                let shift = splat_literal(wide, &rt.lane_bits().to_string())?;
                let h = self.emit(&format!("lshr {w} {p}, {shift}"));
                format!("trunc {w} {h} to {t}")
            }
            Opcode::Uextend => format!("zext {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::Sextend => format!("sext {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::Ireduce => format!("trunc {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::Fpromote => format!("fpext {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::Fdemote => format!("fptrunc {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::FcvtFromSint => format!("sitofp {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::FcvtFromUint => format!("uitofp {} to {}", self.typed(a[0])?, ty(rt)?),
            Opcode::FcvtToSintSat | Opcode::FcvtToUintSat => {
                let name = if op == Opcode::FcvtToSintSat {
                    "fptosi.sat"
                } else {
                    "fptoui.sat"
                };
                let xt = self.t(a[0]);
                let full = format!("llvm.{name}.{}.{}", mangle(rt), mangle(xt));
                self.declare(format!("declare {} @{full}({})", ty(rt)?, ty(xt)?));
                format!("call {} @{full}({})", ty(rt)?, self.typed(a[0])?)
            }
            Opcode::Bitcast => format!("bitcast {} to {}", self.typed(a[0])?, ty(rt)?),
            _ => self.vector(op, a, rt)?,
        })
    }

    /// Selections and the operations on vectors' lanes.
    fn vector(&mut self, op: Opcode, a: &[Value], rt: ir::Type) -> R<String> {
        Ok(match op {
            Opcode::Splat => {
                let one = self.emit(&format!(
                    "insertelement {} poison, {}, i32 0",
                    ty(rt)?,
                    self.typed(a[0])?
                ));
                format!(
                    "shufflevector {t} {one}, {t} poison, <{} x i32> zeroinitializer",
                    rt.lane_count(),
                    t = ty(rt)?
                )
            }
            Opcode::ScalarToVector => format!(
                "insertelement {} zeroinitializer, {}, i32 0",
                ty(rt)?,
                self.typed(a[0])?
            ),
            Opcode::Select | Opcode::SelectSpectreGuard => {
                let c = self.truthy(a[0])?;
                format!(
                    "select i1 {c}, {}, {}",
                    self.typed(a[1])?,
                    self.typed(a[2])?
                )
            }
            Opcode::Bitselect => {
                let (c, x, y) = (self.as_int(a[0])?, self.as_int(a[1])?, self.as_int(a[2])?);
                let it = ty(rt.as_int())?;
                let on = self.emit(&format!("and {it} {c}, {x}"));
                let not = self.emit(&format!("xor {it} {c}, {}", all_ones(rt.as_int())?));
                let off = self.emit(&format!("and {it} {not}, {y}"));
                let r = self.emit(&format!("or {it} {on}, {off}"));
                from_int(&r, rt)?
            }
            Opcode::Blendv => {
                let it = rt.as_int();
                let c = self.emit(&format!("bitcast {} to {}", self.typed(a[0])?, ty(it)?));
                let m = self.emit(&format!("icmp slt {} {c}, zeroinitializer", ty(it)?));
                format!(
                    "select <{} x i1> {m}, {}, {}",
                    rt.lane_count(),
                    self.typed(a[1])?,
                    self.typed(a[2])?
                )
            }
            Opcode::VanyTrue => {
                let xt = self.t(a[0]);
                let b = self.emit(&format!("bitcast {} to i{}", self.typed(a[0])?, xt.bits()));
                let c = self.emit(&format!("icmp ne i{} {b}, 0", xt.bits()));
                format!("zext i1 {c} to {}", ty(rt)?)
            }
            Opcode::VallTrue => {
                let xt = self.t(a[0]).as_int();
                let x = self.as_int(a[0])?;
                let n = xt.lane_count();
                let c = self.emit(&format!("icmp ne {} {x}, zeroinitializer", ty(xt)?));
                self.declare(format!(
                    "declare i1 @llvm.vector.reduce.and.v{n}i1(<{n} x i1>)"
                ));
                let all = self.emit(&format!(
                    "call i1 @llvm.vector.reduce.and.v{n}i1(<{n} x i1> {c})"
                ));
                format!("zext i1 {all} to {}", ty(rt)?)
            }
            Opcode::VhighBits => {
                let xt = self.t(a[0]).as_int();
                let x = self.as_int(a[0])?;
                let n = xt.lane_count();
                let c = self.emit(&format!("icmp slt {} {x}, zeroinitializer", ty(xt)?));
                let bits = self.emit(&format!("bitcast <{n} x i1> {c} to i{n}"));
                resize(&format!("i{n} {bits}"), n, rt)?
            }
            Opcode::SwidenLow | Opcode::SwidenHigh | Opcode::UwidenLow | Opcode::UwidenHigh => {
                let n = rt.lane_count();
                let from = if matches!(op, Opcode::SwidenLow | Opcode::UwidenLow) {
                    0
                } else {
                    n
                };
                let half = self.lanes(a[0], from, n)?;
                let ext = if matches!(op, Opcode::SwidenLow | Opcode::SwidenHigh) {
                    "sext"
                } else {
                    "zext"
                };
                let ht = self.t(a[0]).lane_type().by(n).ok_or("no half vector")?;
                format!("{ext} {} {half} to {}", ty(ht)?, ty(rt)?)
            }
            Opcode::FvpromoteLow => {
                let n = rt.lane_count();
                let half = self.lanes(a[0], 0, n)?;
                format!("fpext <{n} x float> {half} to {}", ty(rt)?)
            }
            Opcode::Fvdemote => {
                // The lanes rounded, then as many zero lanes.
                let n = self.t(a[0]).lane_count();
                let d = self.emit(&format!("fptrunc {} to <{n} x float>", self.typed(a[0])?));
                let idx: Vec<String> = (0..2 * n).map(|l| format!("i32 {l}")).collect();
                format!(
                    "shufflevector <{n} x float> {d}, <{n} x float> zeroinitializer, <{} x i32> <{}>",
                    2 * n,
                    idx.join(", ")
                )
            }
            Opcode::Snarrow | Opcode::Unarrow | Opcode::Uunarrow => self.narrow(op, a, rt)?,
            other => return Err(format!("the LLVM tier cannot translate {other}")),
        })
    }

    /// A call of the overloaded intrinsic `llvm.NAME` on `a`, all of type `t`.
    fn intrinsic(&mut self, name: &str, t: ir::Type, a: &[Value]) -> R<String> {
        let lt = ty(t)?;
        let params = vec![lt.clone(); a.len()].join(", ");
        self.declare(format!("declare {lt} @llvm.{name}.{}({params})", mangle(t)));
        let args = a.iter().map(|&x| self.typed(x)).collect::<R<Vec<_>>>()?;
        Ok(format!(
            "call {lt} @llvm.{name}.{}({})",
            mangle(t),
            args.join(", ")
        ))
    }

    /// `x` as integers of its width (a float value bitcast).
    fn as_int(&mut self, x: Value) -> R<String> {
        let t = self.t(x);
        if t.lane_type().is_float() {
            Ok(self.emit(&format!(
                "bitcast {} to {}",
                self.typed(x)?,
                ty(t.as_int())?
            )))
        } else {
            Ok(self.v(x))
        }
    }

    fn bitwise(&mut self, op: Opcode, x: Value, y: Value) -> R<String> {
        let t = self.t(x);
        let it = t.as_int();
        let (x, y) = (self.as_int(x)?, self.as_int(y)?);
        let name = match op {
            Opcode::Band => "and",
            Opcode::Bor => "or",
            _ => "xor",
        };
        let r = self.emit(&format!("{name} {} {x}, {y}", ty(it)?));
        from_int(&r, t)
    }

    /// Cranelift's shifts and rotations: the amount (a scalar, also for vectors) modulo
    /// the lane's width.
    fn shift(&mut self, op: Opcode, x: Value, amount: Value) -> R<String> {
        let t = self.t(x);
        let lane = t.lane_type();
        let at = self.t(amount);
        let masked = self.emit(&format!("and {}, {}", self.typed(amount)?, lane.bits() - 1));
        let fitted = if at.bits() > lane.bits() {
            self.emit(&format!("trunc {} {masked} to {}", ty(at)?, ty(lane)?))
        } else if at.bits() < lane.bits() {
            self.emit(&format!("zext {} {masked} to {}", ty(at)?, ty(lane)?))
        } else {
            masked
        };
        let n = if t.is_vector() {
            let one = self.emit(&format!(
                "insertelement {} poison, {} {fitted}, i32 0",
                ty(t)?,
                ty(lane)?
            ));
            self.emit(&format!(
                "shufflevector {tt} {one}, {tt} poison, <{} x i32> zeroinitializer",
                t.lane_count(),
                tt = ty(t)?
            ))
        } else {
            fitted
        };
        let tt = ty(t)?;
        Ok(match op {
            Opcode::Ishl => format!("shl {tt} {}, {n}", self.v(x)),
            Opcode::Ushr => format!("lshr {tt} {}, {n}", self.v(x)),
            Opcode::Sshr => format!("ashr {tt} {}, {n}", self.v(x)),
            _ => {
                let name = if op == Opcode::Rotl { "fshl" } else { "fshr" };
                self.declare(format!(
                    "declare {tt} @llvm.{name}.{m}({tt}, {tt}, {tt})",
                    m = mangle(t)
                ));
                let v = self.v(x);
                format!(
                    "call {tt} @llvm.{name}.{}({tt} {v}, {tt} {v}, {tt} {n})",
                    mangle(t)
                )
            }
        })
    }

    /// Lanes `from..from + n` of vector `x`.
    fn lanes(&mut self, x: Value, from: u32, n: u32) -> R<String> {
        let idx: Vec<String> = (from..from + n).map(|l| format!("i32 {l}")).collect();
        let tx = ty(self.t(x))?;
        Ok(self.emit(&format!(
            "shufflevector {} , {tx} poison, <{n} x i32> <{}>",
            self.typed(x)?,
            idx.join(", ")
        )))
    }

    /// The saturating narrows: both inputs' lanes, clamped to the narrow type's range.
    fn narrow(&mut self, op: Opcode, a: &[Value], rt: ir::Type) -> R<String> {
        let xt = self.t(a[0]);
        let n = rt.lane_count();
        let wide = xt.lane_type().by(n).ok_or("no wide vector")?;
        let wt = ty(wide)?;
        let idx: Vec<String> = (0..n).map(|l| format!("i32 {l}")).collect();
        let both = self.emit(&format!(
            "shufflevector {}, {}, <{n} x i32> <{}>",
            self.typed(a[0])?,
            self.typed(a[1])?,
            idx.join(", ")
        ));
        let bits = rt.lane_bits();
        let (lo, hi, signed) = match op {
            Opcode::Snarrow => (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1, true),
            Opcode::Unarrow => (0, (1i64 << bits) - 1, true),
            _ => (0, (1i64 << bits) - 1, false),
        };
        let m = mangle(wide);
        let clamped = if signed {
            self.declare(format!("declare {wt} @llvm.smax.{m}({wt}, {wt})"));
            self.declare(format!("declare {wt} @llvm.smin.{m}({wt}, {wt})"));
            let low = self.emit(&format!(
                "call {wt} @llvm.smax.{m}({wt} {both}, {wt} {})",
                splat_literal(wide, &lo.to_string())?
            ));
            self.emit(&format!(
                "call {wt} @llvm.smin.{m}({wt} {low}, {wt} {})",
                splat_literal(wide, &hi.to_string())?
            ))
        } else {
            self.declare(format!("declare {wt} @llvm.umin.{m}({wt}, {wt})"));
            self.emit(&format!(
                "call {wt} @llvm.umin.{m}({wt} {both}, {wt} {})",
                splat_literal(wide, &hi.to_string())?
            ))
        };
        Ok(format!("trunc {wt} {clamped} to {}", ty(rt)?))
    }
}

/// The right-hand side making `r` (integers of `t`'s width) a value of type `t`.
fn from_int(r: &str, t: ir::Type) -> R<String> {
    Ok(if t.lane_type().is_float() {
        format!("bitcast {} {r} to {}", ty(t.as_int())?, ty(t)?)
    } else {
        // A no-op that names `r` as the result.
        format!("bitcast {} {r} to {}", ty(t)?, ty(t)?)
    })
}

/// The right-hand side making an `i{n}` value a value of integer type `rt`.
fn resize(value: &str, n: u32, rt: ir::Type) -> R<String> {
    let t = ty(rt)?;
    Ok(match rt.bits().cmp(&n) {
        std::cmp::Ordering::Greater => format!("zext {value} to {t}"),
        std::cmp::Ordering::Less => format!("trunc {value} to {t}"),
        std::cmp::Ordering::Equal => format!("bitcast {value} to {t}"),
    })
}

/// A constant of type `t` (every lane) written as `value`.
fn splat_literal(t: ir::Type, value: &str) -> R<String> {
    if t.is_vector() {
        let lane = ty(t.lane_type())?;
        let lanes = vec![format!("{lane} {value}"); t.lane_count() as usize];
        Ok(format!("<{}>", lanes.join(", ")))
    } else {
        Ok(value.to_string())
    }
}

/// All ones of integer type `t`.
fn all_ones(t: ir::Type) -> R<String> {
    splat_literal(t, "-1")
}

/// Zero of type `t`.
fn zero(t: ir::Type) -> &'static str {
    if t.is_vector() {
        "zeroinitializer"
    } else if t.is_float() {
        "0.0"
    } else {
        "0"
    }
}

fn int_cc(c: IntCC) -> &'static str {
    match c {
        IntCC::Equal => "eq",
        IntCC::NotEqual => "ne",
        IntCC::SignedLessThan => "slt",
        IntCC::SignedGreaterThanOrEqual => "sge",
        IntCC::SignedGreaterThan => "sgt",
        IntCC::SignedLessThanOrEqual => "sle",
        IntCC::UnsignedLessThan => "ult",
        IntCC::UnsignedGreaterThanOrEqual => "uge",
        IntCC::UnsignedGreaterThan => "ugt",
        IntCC::UnsignedLessThanOrEqual => "ule",
    }
}

fn float_cc(c: FloatCC) -> &'static str {
    match c {
        FloatCC::Ordered => "ord",
        FloatCC::Unordered => "uno",
        FloatCC::Equal => "oeq",
        FloatCC::NotEqual => "une",
        FloatCC::OrderedNotEqual => "one",
        FloatCC::UnorderedOrEqual => "ueq",
        FloatCC::LessThan => "olt",
        FloatCC::LessThanOrEqual => "ole",
        FloatCC::GreaterThan => "ogt",
        FloatCC::GreaterThanOrEqual => "oge",
        FloatCC::UnorderedOrLessThan => "ult",
        FloatCC::UnorderedOrLessThanOrEqual => "ule",
        FloatCC::UnorderedOrGreaterThan => "ugt",
        FloatCC::UnorderedOrGreaterThanOrEqual => "uge",
    }
}
