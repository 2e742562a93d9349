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

/// How sequences of `T` lie where compiled code can read them in place: the bytes from
/// one element to the next and each scalar's offset in an element, in column order, for a
/// tuple, array or record of at least two numbers of 4 or 8 bytes (what a gang loads as
/// whole vectors) at offsets Rust's layout gives, each size dividing the element's; else 0
/// and no offsets.
pub fn layout<T: Accel>() -> (usize, Vec<usize>) {
    let leaves = match T::accel_type() {
        t @ (Type::Tuple(_) | Type::Record(..) | Type::Array(..)) => match scalars(&t) {
            Some(l) if l.len() >= 2 => l,
            _ => return (0, Vec::new()),
        },
        _ => return (0, Vec::new()),
    };
    let size = std::mem::size_of::<T>();
    let mut offsets = Vec::new();
    if !T::leaf_offsets(0, &mut offsets) || offsets.len() != leaves.len() {
        return (0, Vec::new());
    }
    let fits = leaves.iter().zip(&offsets).all(|(s, &o)| {
        let b = crate::backend::layout::size_of(*s);
        matches!(b, 4 | 8)
            && !matches!(s, ScalarType::Bool)
            && size.is_multiple_of(b)
            && o.is_multiple_of(b)
    });
    match fits {
        true => (size, offsets),
        false => (0, Vec::new()),
    }
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

    /// The stride of `T`'s layout.
    fn stride<T: Accel>() -> usize {
        layout::<T>().0
    }

    #[test]
    fn tuples_and_arrays_of_4_and_8_byte_numbers_are_read_in_place() {
        assert_eq!(stride::<(f32, f32)>(), 8);
        assert_eq!(layout::<[f64; 3]>(), (24, vec![0, 8, 16]));
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
