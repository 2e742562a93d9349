//! The types accelerated code accepts, and their IR types.

use crate::tensor::Tensor;
use accel_ir::{ScalarType, Type};

/// A Rust type that accelerated code can take, return and capture. Implemented for the
/// scalars `i32 i64 u32 u64 usize f32 f64 bool`, tuples, `[T; N]`, sequences (`Vec<T>`,
/// `&[T]`), [`Tensor`], and structs with `#[derive(Accel)]`.
///
/// ```
/// use accel_runtime::prelude::*;
/// #[derive(Accel, Clone, Copy)]
/// struct Body { pos: [f32; 3], mass: f32 }
/// assert_eq!(<Vec<Body>>::accel_type().to_string(), "[Body { pos: [f32; 3], mass: f32 }]");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used in accelerated code",
    label = "not an accel type",
    note = "accelerated code handles i32 i64 u32 u64 usize f32 f64 bool, tuples, [T; N], sequences \
            (Vec<T>, &[T]), Tensor<T> and structs with #[derive(Accel)]"
)]
pub trait Accel {
    /// The IR type of values of this type.
    fn accel_type() -> Type;
}

macro_rules! scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl Accel for $t {
            fn accel_type() -> Type {
                Type::Scalar(ScalarType::$s)
            }
        }
    )*};
}
scalar!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, usize => Usize, f32 => F32, f64 => F64, bool => Bool);

impl Accel for () {
    fn accel_type() -> Type {
        Type::Unit
    }
}

macro_rules! tuple {
    ($($n:ident),+) => {
        impl<$($n: Accel),+> Accel for ($($n,)+) {
            fn accel_type() -> Type {
                Type::Tuple(vec![$($n::accel_type()),+])
            }
        }
    };
}
tuple!(A);
tuple!(A, B);
tuple!(A, B, C);
tuple!(A, B, C, D);
tuple!(A, B, C, D, E);
tuple!(A, B, C, D, E, F);
tuple!(A, B, C, D, E, F, G);
tuple!(A, B, C, D, E, F, G, H);

impl<T: Accel, const N: usize> Accel for [T; N] {
    fn accel_type() -> Type {
        Type::Array(Box::new(T::accel_type()), N)
    }
}

impl<T: Accel> Accel for Vec<T> {
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
}

impl<T: Accel> Accel for [T] {
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
}

impl<T: Accel + ?Sized> Accel for &T {
    fn accel_type() -> Type {
        T::accel_type()
    }
}

impl<T: Accel> Accel for Tensor<T> {
    fn accel_type() -> Type {
        Type::Tensor(Box::new(T::accel_type()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_forms_share_one_ir_type() {
        let seq = Type::Seq(Box::new(Type::Scalar(ScalarType::F32)));
        assert_eq!(<Vec<f32>>::accel_type(), seq);
        assert_eq!(<&Vec<f32>>::accel_type(), seq);
        assert_eq!(<&[f32]>::accel_type(), seq);
        assert_eq!(
            <(Vec<Vec<i64>>, [bool; 2], Tensor<u32>)>::accel_type().to_string(),
            "([[i64]], [bool; 2], Tensor<u32>)"
        );
    }
}
