//! CUDA C spelling: scalar types, words as kernel parameters and results, literals and
//! Rust's `as` casts.

use crate::backend::layout::Word;
use accel_ir::{Lit, ScalarType};

type R<T> = Result<T, String>;

/// The C spelling of a scalar type.
pub fn cty(s: ScalarType) -> &'static str {
    match s {
        ScalarType::I8 => "signed char",
        ScalarType::I16 => "short",
        ScalarType::U8 => "unsigned char",
        ScalarType::U16 => "unsigned short",
        ScalarType::I32 => "int",
        ScalarType::I64 => "long long",
        ScalarType::U32 => "unsigned",
        ScalarType::U64 | ScalarType::Usize => "unsigned long long",
        ScalarType::F32 => "float",
        ScalarType::F64 => "double",
        ScalarType::Bool => "bool",
    }
}

/// The C type of a word.
pub(crate) fn word_cty(w: Word) -> String {
    match w {
        Word::Scalar(s) => cty(s).to_string(),
        Word::Ptr(s) => format!("{}*", cty(s)),
    }
}

/// A kernel parameter word as a typed C value.
pub(crate) fn from_word(w: Word, p: &str) -> String {
    match w {
        Word::Scalar(ScalarType::F32) => format!("__uint_as_float((unsigned){p})"),
        Word::Scalar(ScalarType::F64) => format!("__longlong_as_double((long long){p})"),
        Word::Scalar(ScalarType::Bool) => format!("({p} != 0)"),
        Word::Scalar(s) => format!("({}){p}", cty(s)),
        Word::Ptr(s) => format!("({}*){p}", cty(s)),
    }
}

/// A typed C value as a result word (floats as bits, integers sign- or zero-extended).
pub(crate) fn to_word(w: Word, x: &str) -> String {
    match w {
        Word::Scalar(ScalarType::F32) => format!("(unsigned long long)__float_as_uint({x})"),
        Word::Scalar(ScalarType::F64) => format!("(unsigned long long)__double_as_longlong({x})"),
        Word::Scalar(ScalarType::Bool) => format!("({x} ? 1ULL : 0ULL)"),
        Word::Scalar(s) if s.is_signed_int() => format!("(unsigned long long)(long long)({x})"),
        Word::Scalar(_) => format!("(unsigned long long)({x})"),
        Word::Ptr(_) => format!("(unsigned long long)({x})"),
    }
}

/// The least value of a signed integer type as a C literal, `0` for other types (what
/// `accel_div` and its kin compare with to detect `MIN / -1`).
pub(crate) fn int_min(s: ScalarType) -> &'static str {
    match s {
        ScalarType::I8 => "(signed char)-128",
        ScalarType::I16 => "(short)-32768",
        ScalarType::I32 => "(int)0x80000000",
        ScalarType::I64 => "(long long)0x8000000000000000ULL",
        _ => "0",
    }
}

/// Whether a scalar type is a signed integer.
pub(crate) fn signed(s: ScalarType) -> bool {
    s.is_signed_int()
}

/// The width of a scalar type in bits.
pub(crate) fn bits(s: ScalarType) -> u32 {
    s.bits()
}

/// The C type a column word points to.
pub(crate) fn cty_of_ptr(w: Word) -> &'static str {
    match w {
        Word::Ptr(s) => cty(s),
        Word::Scalar(_) => "ull",
    }
}

/// The conjunction of C conditions (`true` for none).
pub(crate) fn conj(cs: Vec<String>) -> String {
    if cs.is_empty() {
        "true".into()
    } else {
        format!("({})", cs.join(" && "))
    }
}

/// The scalar type of a typed literal.
pub(crate) fn lit_type(l: &Lit) -> R<ScalarType> {
    match l {
        Lit::Bool(_) => Ok(ScalarType::Bool),
        Lit::Int(_, Some(s)) | Lit::Float(_, Some(s)) => Ok(*s),
        _ => Err("an untyped literal".into()),
    }
}

/// A literal at another scalar type (patterns take the scrutinee's type).
pub(crate) fn retype(l: &Lit, s: ScalarType) -> Lit {
    match l {
        Lit::Int(v, _) if s.is_float() => Lit::Float(*v as f64, Some(s)),
        Lit::Int(v, _) => Lit::Int(*v, Some(s)),
        Lit::Float(v, _) => Lit::Float(*v, Some(s)),
        Lit::Bool(b) => Lit::Bool(*b),
    }
}

/// A literal in C.
pub(crate) fn literal_c(l: &Lit) -> R<String> {
    Ok(match l {
        Lit::Bool(b) => b.to_string(),
        Lit::Int(v, Some(s)) if s.is_float() => literal_c(&Lit::Float(*v as f64, Some(*s)))?,
        Lit::Int(v, Some(s)) => format!("(({}){v}ULL)", cty(*s)),
        Lit::Float(v, Some(ScalarType::F32)) => {
            let x = *v as f32;
            if x.is_finite() {
                format!("{x:?}f")
            } else {
                format!("__uint_as_float({:#x}u)", x.to_bits())
            }
        }
        Lit::Float(v, Some(ScalarType::F64)) => {
            if v.is_finite() {
                format!("{v:?}")
            } else {
                format!("__longlong_as_double({:#x}LL)", v.to_bits())
            }
        }
        Lit::Float(v, Some(s)) => literal_c(&Lit::Int(*v as u64, Some(*s)))?,
        _ => return Err("an untyped literal".into()),
    })
}

/// Rust's `as` between scalar types.
pub(crate) fn cast(x: &str, from: ScalarType, to: ScalarType) -> String {
    use ScalarType::*;
    if from == to {
        return x.to_string();
    }
    if from.is_float() && !to.is_float() && to != Bool {
        // The `_rz` conversions saturate and map NaN to 0, as `as` does.
        let f = if from == F32 { "float" } else { "double" };
        let i = match to {
            I32 => "int",
            U32 => "uint",
            I64 => "ll",
            U64 | Usize => "ull",
            small => {
                // Through `int` (exact for every value in range), then saturated.
                let (lo, hi) = small.int_range().unwrap_or((0, 0));
                return format!(
                    "({})accel_clamp_int(__{f}2int_rz({x}), {lo}, {hi})",
                    cty(to)
                );
            }
        };
        return format!("__{f}2{i}_rz({x})");
    }
    if from == Bool {
        return format!("({})({x} ? 1 : 0)", cty(to));
    }
    format!("({})({x})", cty(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_casts_follow_rust() {
        assert_eq!(
            literal_c(&Lit::Float(1.5, Some(ScalarType::F32))).unwrap(),
            "1.5f"
        );
        assert_eq!(
            literal_c(&Lit::Float(f64::INFINITY, Some(ScalarType::F32))).unwrap(),
            "__uint_as_float(0x7f800000u)"
        );
        assert_eq!(
            literal_c(&Lit::Int(7, Some(ScalarType::I64))).unwrap(),
            "((long long)7ULL)"
        );
        assert_eq!(
            cast("x", ScalarType::F32, ScalarType::I32),
            "__float2int_rz(x)"
        );
        assert_eq!(
            cast("x", ScalarType::F64, ScalarType::U64),
            "__double2ull_rz(x)"
        );
        assert_eq!(
            cast("b", ScalarType::Bool, ScalarType::I32),
            "(int)(b ? 1 : 0)"
        );
        assert_eq!(cast("x", ScalarType::I64, ScalarType::U32), "(unsigned)(x)");
        assert_eq!(
            cast("x", ScalarType::F32, ScalarType::U8),
            "(unsigned char)accel_clamp_int(__float2int_rz(x), 0, 255)"
        );
    }
}
