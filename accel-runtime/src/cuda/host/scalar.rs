//! Host values (a type and its words: device addresses for columns) and the scalar
//! arithmetic the host program does between launches, with Rust's semantics.

use crate::backend::abi::MAX_RANK;
use crate::backend::failure::{Failure, FailureKind};
use crate::backend::layout;
use crate::cuda::codegen::kernel::words;
use accel_ir::{BinOp, Lit, ScalarType, Type};

type R<T> = Result<T, String>;

/// A host value: its type and its words (device addresses for columns).
#[derive(Clone, Debug)]
pub struct HostVal {
    /// Its type.
    pub ty: Type,
    /// Its words (see [`crate::backend::layout`]).
    pub w: Vec<u64>,
}

/// Scalar methods the host program evaluates (others make the site run elsewhere).
pub const HOST_METHODS: &[&str] = &[
    "sqrt",
    "abs",
    "min",
    "max",
    "floor",
    "ceil",
    "trunc",
    "round",
    "exp",
    "ln",
    "powi",
    "powf",
    "sin",
    "cos",
    "tan",
    "log2",
    "log10",
    "pow",
    "__chunk_size",
    "__window_size",
];

pub(crate) fn index_failure(k: u64, len: u64) -> String {
    Failure::new(FailureKind::Index, k, len).describe()
}

pub(crate) fn unit() -> HostVal {
    HostVal {
        ty: Type::Unit,
        w: vec![],
    }
}

pub(crate) fn field(v: &HostVal, f: &str) -> R<HostVal> {
    let (ft, off) = layout::field_offset(&v.ty, f)?;
    let n = words(&ft)?.len();
    Ok(HostVal {
        ty: ft,
        w: v.w[off..off + n].to_vec(),
    })
}

pub(crate) fn scalar(v: &HostVal) -> R<ScalarType> {
    match v.ty {
        Type::Scalar(s) => Ok(s),
        ref t => Err(format!("a scalar was expected on the host, found {t}")),
    }
}

pub(crate) fn lit(l: &Lit) -> R<HostVal> {
    let (s, w) = match l {
        Lit::Bool(b) => (ScalarType::Bool, *b as u64),
        Lit::Int(v, Some(s)) if s.is_float() => return lit(&Lit::Float(*v as f64, Some(*s))),
        Lit::Int(v, Some(s)) => (*s, *v),
        Lit::Float(v, Some(ScalarType::F32)) => (ScalarType::F32, (*v as f32).to_bits() as u64),
        Lit::Float(v, Some(ScalarType::F64)) => (ScalarType::F64, v.to_bits()),
        _ => return Err("an untyped literal".into()),
    };
    Ok(HostVal {
        ty: Type::Scalar(s),
        w: vec![normalize(s, w)],
    })
}

/// A word in the ABI's canonical form for its type (integers narrower than 64 bits sign-
/// or zero-extended).
pub(crate) fn normalize(s: ScalarType, w: u64) -> u64 {
    match s {
        ScalarType::F32 => w as u32 as u64,
        ScalarType::Bool => (w & 1 != 0) as u64,
        s => s.wrap(w),
    }
}

/// A scalar as a number the host computes with.
#[derive(Clone, Copy)]
pub(crate) enum Num {
    I(i128),
    F(f64),
}

pub(crate) fn num(s: ScalarType, w: u64) -> Num {
    match s {
        ScalarType::F32 => Num::F(f32::from_bits(w as u32) as f64),
        ScalarType::F64 => Num::F(f64::from_bits(w)),
        s if s.is_signed_int() => Num::I(s.wrap(w) as i64 as i128),
        s => Num::I(s.wrap(w) as i128),
    }
}

/// A number back to a word of type `s` (integers wrap, floats round; float to integer
/// saturates, as `as` does).
pub(crate) fn word(s: ScalarType, n: Num) -> u64 {
    match (s, n) {
        (ScalarType::F32, Num::F(x)) => (x as f32).to_bits() as u64,
        (ScalarType::F32, Num::I(i)) => (i as f32).to_bits() as u64,
        (ScalarType::F64, Num::F(x)) => x.to_bits(),
        (ScalarType::F64, Num::I(i)) => (i as f64).to_bits(),
        (ScalarType::Bool, Num::I(i)) => (i != 0) as u64,
        (ScalarType::Bool, Num::F(x)) => (x != 0.0) as u64,
        (ScalarType::I64, Num::F(x)) => x as i64 as u64,
        (ScalarType::U64 | ScalarType::Usize, Num::F(x)) => x as u64,
        (s, Num::F(x)) => {
            let (lo, hi) = s.int_range().unwrap_or((0, 0));
            // `as` from a float: truncated, saturated, NaN as 0 (f64 holds these bounds).
            let i = if x.is_nan() {
                0
            } else {
                (x.trunc().clamp(lo as f64, hi as f64)) as i128
            };
            normalize(s, i as u64)
        }
        (s, Num::I(i)) => normalize(s, i as u64),
    }
}

pub(crate) fn cast(w: u64, from: ScalarType, to: ScalarType) -> u64 {
    word(to, num(from, w))
}

pub(crate) fn binary(op: BinOp, x: &HostVal, y: &HostVal) -> R<HostVal> {
    let s = scalar(x)?;
    let (a, b) = (num(s, x.w[0]), num(s, y.w[0]));
    let boolean = |c: bool| HostVal {
        ty: Type::Scalar(ScalarType::Bool),
        w: vec![c as u64],
    };
    let cmp = |o: std::cmp::Ordering| match op {
        BinOp::Eq => o.is_eq(),
        BinOp::Ne => !o.is_eq(),
        BinOp::Lt => o.is_lt(),
        BinOp::Le => o.is_le(),
        BinOp::Gt => o.is_gt(),
        _ => o.is_ge(),
    };
    if matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
    ) {
        return Ok(boolean(match (a, b) {
            (Num::I(p), Num::I(q)) => cmp(p.cmp(&q)),
            (Num::F(p), Num::F(q)) => match p.partial_cmp(&q) {
                Some(o) => cmp(o),
                None => op == BinOp::Ne,
            },
            _ => return Err("a comparison of mixed types".into()),
        }));
    }
    let r = match (a, b) {
        (Num::F(p), Num::F(q)) => {
            // f32 arithmetic rounds at f32: compute in the type's precision.
            if s == ScalarType::F32 {
                let (p, q) = (p as f32, q as f32);
                Num::F(match op {
                    BinOp::Add => p + q,
                    BinOp::Sub => p - q,
                    BinOp::Mul => p * q,
                    BinOp::Div => p / q,
                    BinOp::Rem => p % q,
                    _ => return Err(format!("`{}` on floats", op.symbol())),
                } as f64)
            } else {
                Num::F(match op {
                    BinOp::Add => p + q,
                    BinOp::Sub => p - q,
                    BinOp::Mul => p * q,
                    BinOp::Div => p / q,
                    BinOp::Rem => p % q,
                    _ => return Err(format!("`{}` on floats", op.symbol())),
                })
            }
        }
        (Num::I(p), Num::I(q)) => {
            let bits = s.bits();
            Num::I(match op {
                BinOp::Add => p + q,
                BinOp::Sub => p - q,
                BinOp::Mul => p.wrapping_mul(q),
                BinOp::Div | BinOp::Rem => {
                    if q == 0 {
                        return Err("attempt to divide by zero".into());
                    }
                    let min = s.int_range().map_or(0, |(lo, _)| lo);
                    if s.is_signed_int() && p == min && q == -1 {
                        return Err("attempt to divide with overflow".into());
                    }
                    if op == BinOp::Div {
                        p / q
                    } else {
                        p % q
                    }
                }
                BinOp::BitAnd => p & q,
                BinOp::BitOr => p | q,
                BinOp::BitXor => p ^ q,
                BinOp::Shl => p << (q as u32 & (bits - 1)),
                BinOp::Shr => p >> (q as u32 & (bits - 1)),
                _ => return Err(format!("`{}` on integers", op.symbol())),
            })
        }
        _ => return Err("arithmetic on mixed types".into()),
    };
    Ok(HostVal {
        ty: x.ty.clone(),
        w: vec![word(s, r)],
    })
}

pub(crate) fn method_of(r: &HostVal, method: &str, a: &[HostVal]) -> R<HostVal> {
    let usize_val = |n: u64| HostVal {
        ty: Type::Scalar(ScalarType::Usize),
        w: vec![n],
    };
    match (&r.ty, method) {
        (Type::Seq(_), "len") => return Ok(usize_val(r.w[0])),
        (Type::Seq(_), "is_empty") => {
            return Ok(HostVal {
                ty: Type::Scalar(ScalarType::Bool),
                w: vec![(r.w[0] == 0) as u64],
            })
        }
        (Type::Array(_, n), "len") => return Ok(usize_val(*n as u64)),
        (Type::Tensor(_), "len") => return Ok(usize_val(tensor_dims(r).iter().product())),
        (Type::Tensor(_), "rank") => return Ok(usize_val(r.w[1])),
        _ => {}
    }
    let s = scalar(r)?;
    let x = num(s, r.w[0]);
    let arg = |k: usize| -> R<Num> {
        a.get(k)
            .map(|v| num(scalar(v).unwrap_or(s), v.w[0]))
            .ok_or_else(|| format!("`.{method}()` needs an argument"))
    };
    let r = match x {
        Num::F(v) => {
            let f32_ = s == ScalarType::F32;
            let y = |k| match arg(k) {
                Ok(Num::F(y)) => Ok(y),
                Ok(Num::I(i)) => Ok(i as f64),
                Err(e) => Err(e),
            };
            Num::F(match method {
                "sqrt" => v.sqrt(),
                "abs" => v.abs(),
                "floor" => v.floor(),
                "ceil" => v.ceil(),
                "trunc" => v.trunc(),
                "round" => v.round(),
                "exp" => v.exp(),
                "ln" => v.ln(),
                "sin" => v.sin(),
                "cos" => v.cos(),
                "tan" => v.tan(),
                "log2" => v.log2(),
                "log10" => v.log10(),
                "min" => v.min(y(0)?),
                "max" => v.max(y(0)?),
                "powf" => v.powf(y(0)?),
                "powi" => v.powi(y(0)? as i32),
                m => return Err(format!("`.{m}()` on the host")),
            })
            .round_to(f32_)
        }
        Num::I(v) => Num::I(match method {
            "abs" => v.abs(),
            "min" => match arg(0)? {
                Num::I(y) => v.min(y),
                _ => return Err("`.min()` of mixed types".into()),
            },
            "max" => match arg(0)? {
                Num::I(y) => v.max(y),
                _ => return Err("`.max()` of mixed types".into()),
            },
            "__chunk_size" | "__window_size" if v == 0 => {
                let which = u64::from(method == "__window_size");
                return Err(Failure::new(FailureKind::ZeroSize, which, 0).describe());
            }
            "__chunk_size" | "__window_size" => v,
            "pow" => match arg(0)? {
                Num::I(e) => {
                    let mut acc: i128 = 1;
                    for _ in 0..e.clamp(0, 128) {
                        acc = word_int(s, acc.wrapping_mul(v));
                    }
                    acc
                }
                _ => return Err("`.pow()` of a float".into()),
            },
            m => return Err(format!("`.{m}()` on the host")),
        }),
    };
    Ok(HostVal {
        ty: Type::Scalar(s),
        w: vec![word(s, r)],
    })
}

/// A tensor's dimensions (its words: pointer, rank, then `MAX_RANK` dimensions).
pub(crate) fn tensor_dims(t: &HostVal) -> &[u64] {
    let rank = (t.w[1] as usize).min(MAX_RANK);
    &t.w[2..2 + rank]
}

pub(crate) fn word_int(s: ScalarType, v: i128) -> i128 {
    match num(s, word(s, Num::I(v))) {
        Num::I(i) => i,
        Num::F(_) => v,
    }
}

pub(crate) trait RoundTo {
    fn round_to(self, f32_: bool) -> Num;
}

impl RoundTo for Num {
    fn round_to(self, f32_: bool) -> Num {
        match self {
            Num::F(v) if f32_ => Num::F(v as f32 as f64),
            n => n,
        }
    }
}
