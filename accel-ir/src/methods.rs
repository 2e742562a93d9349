//! The methods accelerated code may call, with their typing: one table that the front end
//! (which names it accepts), type inference and the type of typed expressions all read.
//! Backends implement the methods they can; one they cannot compile is reported by name.
//!
//! ```
//! use accel_ir::methods::{method, Returns};
//! assert!(matches!(method("sin_cos").unwrap().returns, Returns::PairOfReceiver));
//! assert!(method("push").is_none());
//! ```

use crate::types::ScalarType;

/// Which values a method is called on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receiver {
    /// Numbers (`x.sqrt()`); also callable as `f32::sqrt(x)`.
    Number,
    /// Sequences, arrays and tensors (`xs.len()`, `t.get([i])`).
    Data,
}

/// What an argument must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// The receiver's type (`a.max(b)`).
    Receiver,
    /// A given scalar type (`x.powi(2)` takes an `i32`).
    Scalar(ScalarType),
    /// A tensor index `[usize; RANK]`.
    TensorIndex,
    /// A value of the tensor's element type.
    TensorElement,
    /// Anything (checked by Rust).
    Any,
}

/// What a method returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returns {
    /// The receiver's type.
    Receiver,
    /// A given scalar type.
    Scalar(ScalarType),
    /// `(R, R)` for receiver type `R` (`sin_cos`).
    PairOfReceiver,
    /// The unsigned type of the receiver's width (`i32::abs_diff` returns `u32`).
    UnsignedOfReceiver,
    /// The element of the tensor it is called on (`get`).
    TensorElement,
    /// Nothing (`set`).
    Unit,
    /// The dimensions, a sequence of `usize` (`shape`).
    Shape,
    /// A tensor's elements as a sequence, or the sequence itself (`to_vec`).
    ToVec,
}

/// One method of the table.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    /// The name called.
    pub name: &'static str,
    /// What it is called on.
    pub receiver: Receiver,
    /// What its arguments must be.
    pub args: &'static [Arg],
    /// What it returns.
    pub returns: Returns,
}

const fn number(name: &'static str, args: &'static [Arg], returns: Returns) -> Method {
    Method {
        name,
        receiver: Receiver::Number,
        args,
        returns,
    }
}

const fn data(name: &'static str, args: &'static [Arg], returns: Returns) -> Method {
    Method {
        name,
        receiver: Receiver::Data,
        args,
        returns,
    }
}

const SAME: Returns = Returns::Receiver;
const R: Arg = Arg::Receiver;
const BOOL: Returns = Returns::Scalar(ScalarType::Bool);

/// Every method accelerated code may call.
pub const METHODS: &[Method] = &[
    number("sqrt", &[], SAME),
    number("exp", &[], SAME),
    number("exp2", &[], SAME),
    number("ln", &[], SAME),
    number("log", &[R], SAME),
    number("log2", &[], SAME),
    number("log10", &[], SAME),
    number("sin", &[], SAME),
    number("cos", &[], SAME),
    number("tan", &[], SAME),
    number("asin", &[], SAME),
    number("acos", &[], SAME),
    number("atan", &[], SAME),
    number("atan2", &[R], SAME),
    number("sinh", &[], SAME),
    number("cosh", &[], SAME),
    number("tanh", &[], SAME),
    number("asinh", &[], SAME),
    number("acosh", &[], SAME),
    number("atanh", &[], SAME),
    number("powf", &[R], SAME),
    number("powi", &[Arg::Scalar(ScalarType::I32)], SAME),
    number("pow", &[Arg::Scalar(ScalarType::U32)], SAME),
    number("abs", &[], SAME),
    number("min", &[R], SAME),
    number("max", &[R], SAME),
    number("floor", &[], SAME),
    number("ceil", &[], SAME),
    number("round", &[], SAME),
    number("trunc", &[], SAME),
    number("fract", &[], SAME),
    number("signum", &[], SAME),
    number("mul_add", &[R, R], SAME),
    number("hypot", &[R], SAME),
    number("recip", &[], SAME),
    number("cbrt", &[], SAME),
    number("clamp", &[R, R], SAME),
    // The size of `chunks(k)` and `windows(k)` (the lowering's, never the user's): the
    // receiver, failing as Rust does when it is zero.
    number("__chunk_size", &[], SAME),
    number("__window_size", &[], SAME),
    // A range in an iterator chain (the lowering's): `lo.__range_count(hi, 0 as _)` is the
    // length of `lo..hi`, `lo.__range_at(i, 0 as _)` its element `i`; the last argument
    // takes the bounds' type, and inference rewrites them (see `typecheck`).
    number("__range_count", &[R, R], Returns::Scalar(ScalarType::Usize)),
    number(
        "__range_count_inclusive",
        &[R, R],
        Returns::Scalar(ScalarType::Usize),
    ),
    number("__range_at", &[Arg::Scalar(ScalarType::Usize), R], SAME),
    number("to_degrees", &[], SAME),
    number("to_radians", &[], SAME),
    number("is_nan", &[], BOOL),
    number("is_finite", &[], BOOL),
    number("is_infinite", &[], BOOL),
    number("rem_euclid", &[R], SAME),
    number("div_euclid", &[R], SAME),
    number("div_ceil", &[R], SAME),
    number("abs_diff", &[R], Returns::UnsignedOfReceiver),
    number("wrapping_add", &[R], SAME),
    number("wrapping_sub", &[R], SAME),
    number("wrapping_mul", &[R], SAME),
    number("saturating_add", &[R], SAME),
    number("saturating_sub", &[R], SAME),
    number("count_ones", &[], Returns::Scalar(ScalarType::U32)),
    number("leading_zeros", &[], Returns::Scalar(ScalarType::U32)),
    number("trailing_zeros", &[], Returns::Scalar(ScalarType::U32)),
    number("is_multiple_of", &[R], BOOL),
    number("sin_cos", &[], Returns::PairOfReceiver),
    data("len", &[], Returns::Scalar(ScalarType::Usize)),
    data("is_empty", &[], BOOL),
    data("get", &[Arg::TensorIndex], Returns::TensorElement),
    data(
        "set",
        &[Arg::TensorIndex, Arg::TensorElement],
        Returns::Unit,
    ),
    data("sub", &[Arg::Any, Arg::Any], SAME),
    data("shape", &[], Returns::Shape),
    data("rank", &[], Returns::Scalar(ScalarType::Usize)),
    data("to_vec", &[], Returns::ToVec),
];

/// The method called `name`, if accelerated code may call it.
pub fn method(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// The number method called `name` (callable as `f32::name(x, ..)` too).
pub fn number_method(name: &str) -> Option<&'static Method> {
    method(name).filter(|m| m.receiver == Receiver::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_two_kinds_are_apart() {
        for (k, m) in METHODS.iter().enumerate() {
            assert!(
                METHODS[k + 1..].iter().all(|n| n.name != m.name),
                "{} twice",
                m.name
            );
        }
        assert!(number_method("sqrt").is_some());
        assert!(number_method("len").is_none());
        assert_eq!(method("len").unwrap().receiver, Receiver::Data);
    }
}
