//! Rust's named constants that accelerated code may use (`f32::MAX`,
//! `std::f64::consts::PI`, `i64::MIN`): their types and values.
//!
//! ```
//! use accel_ir::consts::{const_type, constant_lit};
//! use accel_ir::{Lit, ScalarType};
//! assert_eq!(const_type("std::f32::consts::PI"), Some(ScalarType::F32));
//! assert_eq!(constant_lit("i32::MAX", ScalarType::I32), Some(Lit::Int(i32::MAX as u64, Some(ScalarType::I32))));
//! ```

use crate::expr::Lit;
use crate::types::ScalarType;

/// The type of a standard constant: the scalar type its path names (`f32::MAX`,
/// `std::f64::consts::PI`, `i64::MIN`).
pub fn const_type(path: &str) -> Option<ScalarType> {
    let segs: Vec<&str> = path.split("::").collect();
    segs.iter()
        .rev()
        .skip(1)
        .find_map(|s| ScalarType::from_name(s))
}

/// The value of a named constant (`f32::MAX`, `std::f64::consts::PI`) of scalar type `s`.
pub fn constant_lit(c: &str, s: ScalarType) -> Option<Lit> {
    let name = c.rsplit("::").next().unwrap_or(c);
    let f = |x: f64| Some(Lit::Float(x, Some(s)));
    match (s, name) {
        (ScalarType::F32, "MAX") => f(f32::MAX as f64),
        (ScalarType::F32, "MIN") => f(f32::MIN as f64),
        (ScalarType::F32, "EPSILON") => f(f32::EPSILON as f64),
        (ScalarType::F32, "MIN_POSITIVE") => f(f32::MIN_POSITIVE as f64),
        (ScalarType::F64, "MAX") => f(f64::MAX),
        (ScalarType::F64, "MIN") => f(f64::MIN),
        (ScalarType::F64, "EPSILON") => f(f64::EPSILON),
        (ScalarType::F64, "MIN_POSITIVE") => f(f64::MIN_POSITIVE),
        (_, "INFINITY") => f(f64::INFINITY),
        (_, "NEG_INFINITY") => f(f64::NEG_INFINITY),
        (_, "NAN") => f(f64::NAN),
        (_, "PI") => f(std::f64::consts::PI),
        (_, "E") => f(std::f64::consts::E),
        (_, "TAU") => f(std::f64::consts::TAU),
        (_, "SQRT_2") => f(std::f64::consts::SQRT_2),
        (_, "LN_2") => f(std::f64::consts::LN_2),
        (_, "LN_10") => f(std::f64::consts::LN_10),
        (_, "FRAC_PI_2") => f(std::f64::consts::FRAC_PI_2),
        (_, "FRAC_1_SQRT_2") => f(std::f64::consts::FRAC_1_SQRT_2),
        (ScalarType::I8, "MAX") => Some(Lit::Int(i8::MAX as u64, Some(s))),
        (ScalarType::I8, "MIN") => Some(Lit::Int(i8::MIN as i64 as u64, Some(s))),
        (ScalarType::I16, "MAX") => Some(Lit::Int(i16::MAX as u64, Some(s))),
        (ScalarType::I16, "MIN") => Some(Lit::Int(i16::MIN as i64 as u64, Some(s))),
        (ScalarType::U8, "MAX") => Some(Lit::Int(u8::MAX as u64, Some(s))),
        (ScalarType::U16, "MAX") => Some(Lit::Int(u16::MAX as u64, Some(s))),
        (ScalarType::I32, "MAX") => Some(Lit::Int(i32::MAX as u64, Some(s))),
        (ScalarType::I32, "MIN") => Some(Lit::Int(i32::MIN as i64 as u64, Some(s))),
        (ScalarType::I64, "MAX") => Some(Lit::Int(i64::MAX as u64, Some(s))),
        (ScalarType::I64, "MIN") => Some(Lit::Int(i64::MIN as u64, Some(s))),
        (ScalarType::U32, "MAX") => Some(Lit::Int(u32::MAX as u64, Some(s))),
        (ScalarType::U64 | ScalarType::Usize, "MAX") => Some(Lit::Int(u64::MAX, Some(s))),
        (
            ScalarType::U8
            | ScalarType::U16
            | ScalarType::U32
            | ScalarType::U64
            | ScalarType::Usize,
            "MIN",
        ) => Some(Lit::Int(0, Some(s))),
        _ => None,
    }
}

/// The typed literal a named constant stands for, if accelerated code supports it.
pub fn constant(c: &str) -> Option<Lit> {
    constant_lit(c, const_type(c)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_have_the_type_their_path_names() {
        assert_eq!(const_type("f64::INFINITY"), Some(ScalarType::F64));
        assert_eq!(const_type("core::f32::consts::TAU"), Some(ScalarType::F32));
        assert_eq!(const_type("N"), None);
        assert_eq!(
            constant("u32::MAX"),
            Some(Lit::Int(u32::MAX as u64, Some(ScalarType::U32)))
        );
        assert_eq!(constant("f32::LOG2_E"), None);
    }
}
