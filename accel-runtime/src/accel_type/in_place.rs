//! Captured sequences of tuples, arrays or records that compiled code reads where they
//! lie (the CPU backend's `codegen::in_place_inputs` decides which): their words are the
//! address of each scalar in the first element, and element `i`'s scalar is `stride * i`
//! bytes further; no columns are built. Which element types can be read so is decided here,
//! from Rust's layout of the type.

use super::Accel;
use accel_ir::{ScalarType, Type};
use std::cell::Cell;

thread_local! {
    /// How many captured sequences this thread marshaled in place (tests).
    pub static MARSHALED: Cell<usize> = const { Cell::new(0) };
}

/// The bytes from one element of `T` to the next when compiled code can read sequences of
/// `T` in place: a tuple, array or record of at least two numbers of 4 or 8 bytes (what a
/// gang loads as whole vectors), each at an offset Rust's layout gives and whose size
/// divides the element's; else 0.
pub fn stride<T: Accel>() -> usize {
    let leaves = match T::accel_type() {
        t @ (Type::Tuple(_) | Type::Record(..) | Type::Array(..)) => match scalars(&t) {
            Some(l) if l.len() >= 2 => l,
            _ => return 0,
        },
        _ => return 0,
    };
    let size = std::mem::size_of::<T>();
    let mut offsets = Vec::new();
    if !T::leaf_offsets(0, &mut offsets) || offsets.len() != leaves.len() {
        return 0;
    }
    let fits = leaves.iter().zip(&offsets).all(|(s, &o)| {
        let b = crate::backend::layout::size_of(*s);
        matches!(b, 4 | 8)
            && !matches!(s, ScalarType::Bool)
            && size.is_multiple_of(b)
            && o.is_multiple_of(b)
    });
    if fits {
        size
    } else {
        0
    }
}

/// [`stride`] with each scalar's offset in an element, in column order (none where the
/// stride is 0).
pub fn layout<T: Accel>() -> (usize, Vec<usize>) {
    let stride = stride::<T>();
    let mut offsets = Vec::new();
    if stride == 0 || !T::leaf_offsets(0, &mut offsets) {
        return (0, Vec::new());
    }
    (stride, offsets)
}

/// The scalars of a flat element type, in column order; `None` where it holds sequences.
fn scalars(t: &Type) -> Option<Vec<ScalarType>> {
    match t {
        Type::Scalar(s) => Some(vec![*s]),
        Type::Tuple(_) | Type::Record(..) | Type::Array(..) => Some(
            t.parts()
                .iter()
                .map(scalars)
                .collect::<Option<Vec<_>>>()?
                .concat(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_and_arrays_of_4_and_8_byte_numbers_are_read_in_place() {
        assert_eq!(stride::<(f32, f32)>(), 8);
        assert_eq!(stride::<[f64; 3]>(), 24);
        assert_eq!(stride::<(u32, f32, i32)>(), 12);
        assert_eq!(stride::<(f32, f64)>(), 16);
        // Numbers alone, bytes, booleans and nested sequences are not.
        assert_eq!(stride::<f32>(), 0);
        assert_eq!(stride::<(u8, u8)>(), 0);
        assert_eq!(stride::<(f32, bool)>(), 0);
        assert_eq!(stride::<[f32; 1]>(), 0);
        assert_eq!(stride::<Vec<f32>>(), 0);
    }
}
