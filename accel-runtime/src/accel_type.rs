//! The types accelerated code accepts: their IR types, and what debug mode needs of their
//! values (printing, tolerant comparison, structural checks).

use crate::checks::{CheckCtx, ValuePath};
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
/// let mut s = String::new();
/// Body { pos: [1.0, 2.0, 3.0], mass: 0.5 }.write_value(&mut s);
/// assert_eq!(s, "Body { pos: [1.0, 2.0, 3.0], mass: 0.5 }");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used in accelerated code",
    label = "not an accel type",
    note = "accelerated code handles i32 i64 u32 u64 usize f32 f64 bool, tuples, [T; N], sequences \
            (Vec<T>, &[T]), Tensor<T> and structs with #[derive(Accel)]; to pass an #[accel] function \
            to another function, wrap it in a closure: `|x| f(x)`"
)]
pub trait Accel {
    /// Whether values may hold sequences or tensors, which [`check`](Accel::check) inspects.
    const NESTED: bool;

    /// The IR type of values of this type.
    fn accel_type() -> Type;

    /// Writes the value as Rust would print it, for debug-mode messages.
    fn write_value(&self, out: &mut String);

    /// Whether `self` equals `other`: exactly for integers and booleans; for floats within
    /// a relative tolerance (1e-4 for `f32`, 1e-9 for `f64`) of the largest magnitude among
    /// the two and the corresponding parts of `inputs`, so that rounding alone is not a
    /// difference.
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool;

    /// Checks the value's structure: nested sequences are regular, tensors are within the
    /// rank bound (and are remembered, to name them in messages).
    fn check(&self, _path: &ValuePath<'_>, _ctx: &mut CheckCtx) -> Result<(), String> {
        Ok(())
    }

    /// The length, when the value is a sequence.
    fn seq_len(&self) -> Option<usize> {
        None
    }
}

macro_rules! int {
    ($($t:ty => $s:ident),*) => {$(
        impl Accel for $t {
            const NESTED: bool = false;
            fn accel_type() -> Type {
                Type::Scalar(ScalarType::$s)
            }
            fn write_value(&self, out: &mut String) {
                out.push_str(&self.to_string());
            }
            fn close_to(&self, other: &Self, _: &[&Self]) -> bool {
                self == other
            }
        }
    )*};
}
int!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, usize => Usize, bool => Bool);

macro_rules! float {
    ($($t:ty => $s:ident, $tol:expr),*) => {$(
        impl Accel for $t {
            const NESTED: bool = false;
            fn accel_type() -> Type {
                Type::Scalar(ScalarType::$s)
            }
            fn write_value(&self, out: &mut String) {
                out.push_str(&format!("{self:?}"));
            }
            fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
                if self == other || (self.is_nan() && other.is_nan()) {
                    return true;
                }
                let scale = inputs.iter().fold(self.abs().max(other.abs()), |m, x| m.max(x.abs()));
                (self - other).abs() <= $tol * scale
            }
        }
    )*};
}
float!(f32 => F32, 1e-4, f64 => F64, 1e-9);

impl Accel for () {
    const NESTED: bool = false;
    fn accel_type() -> Type {
        Type::Unit
    }
    fn write_value(&self, out: &mut String) {
        out.push_str("()");
    }
    fn close_to(&self, _: &Self, _: &[&Self]) -> bool {
        true
    }
}

macro_rules! tuple {
    ($($n:ident $i:tt),+) => {
        impl<$($n: Accel),+> Accel for ($($n,)+) {
            const NESTED: bool = $($n::NESTED)||+;
            fn accel_type() -> Type {
                Type::Tuple(vec![$($n::accel_type()),+])
            }
            fn write_value(&self, out: &mut String) {
                out.push('(');
                $(
                    if $i > 0 {
                        out.push_str(", ");
                    }
                    self.$i.write_value(out);
                )+
                out.push(')');
            }
            fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
                $(self.$i.close_to(&other.$i, &inputs.iter().map(|x| &x.$i).collect::<Vec<_>>()))&&+
            }
            fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
                $(
                    if $n::NESTED {
                        self.$i.check(&path.field(stringify!($i)), ctx)?;
                    }
                )+
                Ok(())
            }
        }
    };
}
tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);
tuple!(A 0, B 1, C 2, D 3, E 4);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Elementwise helpers shared by arrays, vectors and slices.
fn write_elems<T: Accel>(xs: &[T], out: &mut String) {
    out.push('[');
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        x.write_value(out);
    }
    out.push(']');
}

fn close_elems<T: Accel>(xs: &[T], ys: &[T], inputs: &[&[T]]) -> bool {
    xs.len() == ys.len()
        && xs.iter().zip(ys).enumerate().all(|(i, (x, y))| {
            let parts: Vec<&T> = inputs.iter().filter_map(|s| s.get(i)).collect();
            x.close_to(y, &parts)
        })
}

/// Checks the elements; for sequences of sequences, also that all rows have one length.
fn check_elems<T: Accel>(xs: &[T], path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
    if !T::NESTED {
        return Ok(());
    }
    let width = xs.first().and_then(Accel::seq_len);
    for (i, x) in xs.iter().enumerate() {
        if let (Some(w), Some(len)) = (width, x.seq_len()) {
            if len != w {
                return Err(format!(
                    "{path} is irregular: row 0 has {w} elements, row {i} has {len}"
                ));
            }
        }
        x.check(&path.index(i), ctx)?;
    }
    Ok(())
}

impl<T: Accel, const N: usize> Accel for [T; N] {
    const NESTED: bool = T::NESTED;
    fn accel_type() -> Type {
        Type::Array(Box::new(T::accel_type()), N)
    }
    fn write_value(&self, out: &mut String) {
        write_elems(self, out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        close_elems(
            self,
            other,
            &inputs.iter().map(|x| &x[..]).collect::<Vec<_>>(),
        )
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        check_elems(self, path, ctx)
    }
}

impl<T: Accel> Accel for Vec<T> {
    const NESTED: bool = true;
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
    fn write_value(&self, out: &mut String) {
        write_elems(self, out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        close_elems(
            self,
            other,
            &inputs.iter().map(|x| &x[..]).collect::<Vec<_>>(),
        )
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        check_elems(self, path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<T: Accel> Accel for [T] {
    const NESTED: bool = true;
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
    fn write_value(&self, out: &mut String) {
        write_elems(self, out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        close_elems(self, other, inputs)
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        check_elems(self, path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        Some(self.len())
    }
}

impl<T: Accel + ?Sized> Accel for &T {
    const NESTED: bool = T::NESTED;
    fn accel_type() -> Type {
        T::accel_type()
    }
    fn write_value(&self, out: &mut String) {
        (**self).write_value(out)
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        (**self).close_to(other, &inputs.iter().map(|x| &***x).collect::<Vec<_>>())
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        (**self).check(path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        (**self).seq_len()
    }
}

impl<T: Accel + Clone> Accel for Tensor<T> {
    const NESTED: bool = true;
    fn accel_type() -> Type {
        Type::Tensor(Box::new(T::accel_type()))
    }
    fn write_value(&self, out: &mut String) {
        out.push_str(&format!("Tensor {{ shape: {:?}, data: ", self.shape()));
        write_elems(&self.to_vec(), out);
        out.push_str(" }");
    }
    /// Tensors are handles: two are equal when they view the same memory the same way.
    fn close_to(&self, other: &Self, _: &[&Self]) -> bool {
        self.same_view(other)
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        ctx.tensor(path, self.buffer_id(), self.offset(), self.shape())
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

    #[test]
    fn values_print_like_rust() {
        let mut s = String::new();
        (1i32, vec![0.5f64, 2.0], [true, false]).write_value(&mut s);
        assert_eq!(s, "(1, [0.5, 2.0], [true, false])");
    }

    #[test]
    fn floats_compare_within_a_tolerance_scaled_by_the_inputs() {
        assert!(1.0f32.close_to(&1.00001, &[]));
        assert!(!1.0f32.close_to(&1.001, &[]));
        // Cancellation: (1e8 + -1e8) + 1 versus 1e8 + (-1e8 + 1) differ by 1, tiny next to 1e8.
        assert!(1.0f32.close_to(&0.0, &[&1e8, &-1e8, &1.0]));
        assert!(f64::NAN.close_to(&f64::NAN, &[]));
        assert!(!3i64.close_to(&4, &[&1_000_000]));
        assert!(vec![(1.0f64, 2u32)].close_to(&vec![(1.0 + 1e-12, 2)], &[]));
        assert!(!vec![1.0f64].close_to(&vec![1.0, 2.0], &[]));
    }

    #[test]
    fn irregular_nesting_is_found_with_its_path() {
        let mut ctx = CheckCtx::new(3);
        let xss = vec![vec![vec![1, 2], vec![3, 4]], vec![vec![5, 6], vec![7]]];
        let err = xss.check(&ValuePath::root("xss"), &mut ctx).unwrap_err();
        assert_eq!(
            err,
            "xss[1] is irregular: row 0 has 2 elements, row 1 has 1"
        );
        assert!(vec![vec![1.0f32; 3]; 4]
            .check(&ValuePath::root("ok"), &mut ctx)
            .is_ok());
    }
}
