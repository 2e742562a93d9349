//! The word layout of values, which every backend and the marshaling code follow (see
//! `abi`): a value is a flat list of words, each a scalar or a pointer to a
//! column of scalars.
//!
//! ```text
//! scalar                 the value
//! tuple, record, [T; N]  the parts' words, in order
//! sequence of E          its length, then the columns of E
//! tensor of scalars      pointer to the view's first element, rank, MAX_RANK dimensions
//! ```
//!
//! A site's own result may instead be a sequence in rows (see [`row_leaves`]): the same
//! words, but its columns are the addresses of the first row's scalars, a row apart in
//! one allocation, as Rust lays out a `Vec` of such elements. The backend says so in
//! `Run::rows`; only the user's `Vec` asks for it.
//!
//! Errors name the construct that has no layout (for a backend's "cannot compile" message).

use super::abi::MAX_RANK;
use accel_ir::{ScalarType, Type};

/// One word of a value: a scalar, or a pointer to a column of scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// A scalar of this type.
    Scalar(ScalarType),
    /// A pointer to a column of scalars of this type.
    Ptr(ScalarType),
}

/// The words of a value of type `t`.
///
/// ```
/// use accel_runtime::__private::layout::{words, Word};
/// use accel_runtime::__private::{ScalarType, Type};
/// let xs = Type::Seq(Box::new(Type::Tuple(vec![Type::Scalar(ScalarType::F32); 2])));
/// assert_eq!(
///     words(&xs).unwrap(),
///     vec![Word::Scalar(ScalarType::Usize), Word::Ptr(ScalarType::F32), Word::Ptr(ScalarType::F32)]
/// );
/// ```
pub fn words(t: &Type) -> Result<Vec<Word>, String> {
    Ok(match t {
        Type::Scalar(s) => vec![Word::Scalar(*s)],
        Type::Unit => vec![],
        Type::Tuple(_) | Type::Record(..) | Type::Array(..) => t
            .parts()
            .iter()
            .map(words)
            .collect::<Result<Vec<_>, _>>()?
            .concat(),
        Type::Seq(e) => [vec![Word::Scalar(ScalarType::Usize)], columns(e)?].concat(),
        Type::Tensor(e) => match **e {
            Type::Scalar(s) => [
                vec![Word::Ptr(s)],
                vec![Word::Scalar(ScalarType::Usize); 1 + MAX_RANK],
            ]
            .concat(),
            _ => return Err("tensors of compound elements".into()),
        },
        t => return Err(format!("values of type {t}")),
    })
}

/// How a sequence read in place lies in memory (see `accel_type::in_place`): the bytes
/// from one element to the next, and each scalar's offset in an element, in column order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowLayout {
    /// The bytes from one element to the next.
    pub stride: i64,
    /// Each scalar's offset in bytes in an element, in column order.
    pub offsets: Vec<i64>,
}

/// The first word of each of `captures` among their words, in order.
pub fn first_words(captures: &[(String, Type)]) -> Result<Vec<usize>, String> {
    let mut word = 0;
    captures
        .iter()
        .map(|(_, t)| {
            let first = word;
            word += words(t)?.len();
            Ok(first)
        })
        .collect()
}

/// The column words of a sequence of `e`: a pointer per scalar leaf; a nested sequence its
/// inner length and then the columns of its elements.
pub fn columns(e: &Type) -> Result<Vec<Word>, String> {
    Ok(match e {
        Type::Scalar(s) => vec![Word::Ptr(*s)],
        Type::Unit => vec![],
        Type::Tuple(_) | Type::Record(..) | Type::Array(..) => e
            .parts()
            .iter()
            .map(columns)
            .collect::<Result<Vec<_>, _>>()?
            .concat(),
        Type::Seq(t) => [vec![Word::Scalar(ScalarType::Usize)], columns(t)?].concat(),
        Type::Tensor(_) => return Err("sequences of tensors".into()),
        t => return Err(format!("sequences of {t}")),
    })
}

/// The scalar type of each column of a sequence of flat elements `e`, or why `e` is not
/// flat.
pub fn flat_columns(e: &Type) -> Result<Vec<ScalarType>, String> {
    columns(e)?
        .into_iter()
        .map(|w| match w {
            Word::Ptr(s) => Ok(s),
            Word::Scalar(_) => Err(format!("elements of type {e} are not flat")),
        })
        .collect()
}

/// The byte size of each column of `t` where it is a sequence of flat elements.
pub fn flat_sequence_sizes(t: &Type) -> Option<Vec<usize>> {
    let Type::Seq(e) = t else { return None };
    Some(flat_columns(e).ok()?.into_iter().map(size_of).collect())
}

/// How a sequence of flat elements `e` may come back from compiled code in rows (each
/// element's scalars side by side, leaf `j` at byte `j * bytes`: a tuple's or array's
/// layout in Rust for such elements) instead of one column per scalar: `Some((bytes,
/// leaves))` where `e` has two or more scalars, all numbers of one size, 4 or 8 bytes.
/// Written so, a `Vec<(f32, f32)>` is the compiled code's memory itself, where columns
/// need a pass that builds each tuple from them.
///
/// ```
/// use accel_runtime::__private::layout::row_leaves;
/// use accel_runtime::__private::{ScalarType, Type};
/// let f32s = Type::Tuple(vec![Type::Scalar(ScalarType::F32); 2]);
/// assert_eq!(row_leaves(&f32s), Some((4, 2)));
/// let mixed = Type::Tuple(vec![Type::Scalar(ScalarType::F64), Type::Scalar(ScalarType::F32)]);
/// assert_eq!(row_leaves(&mixed), None);
/// ```
pub fn row_leaves(e: &Type) -> Option<(usize, usize)> {
    if !is_flat(e) {
        return None;
    }
    let leaves = flat_columns(e).ok()?;
    let bytes = size_of(*leaves.first()?);
    let numbers = leaves
        .iter()
        .all(|&s| s != ScalarType::Bool && size_of(s) == bytes);
    (leaves.len() >= 2 && numbers && matches!(bytes, 4 | 8)).then_some((bytes, leaves.len()))
}

/// Whether `e` is flat: scalars, tuples, records and arrays of them.
pub fn is_flat(e: &Type) -> bool {
    match e {
        Type::Scalar(_) | Type::Unit => true,
        Type::Tuple(ts) => ts.iter().all(is_flat),
        Type::Record(_, fs) => fs.iter().all(|(_, t)| is_flat(t)),
        Type::Array(t, _) => is_flat(t),
        _ => false,
    }
}

/// The size in bytes of a scalar in memory (a column element).
pub fn size_of(s: ScalarType) -> usize {
    s.bytes() as usize
}

/// The type and word offset of field `f` of a value of type `t`.
pub fn field_offset(t: &Type, f: &str) -> Result<(Type, usize), String> {
    t.field_offset(f, |t| Ok(words(t)?.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_and_nested_sequences_have_their_words() {
        let f32_ = Type::Scalar(ScalarType::F32);
        let t = Type::Tensor(Box::new(f32_.clone()));
        assert_eq!(words(&t).unwrap().len(), 2 + MAX_RANK);
        let rows = Type::Seq(Box::new(Type::Seq(Box::new(f32_.clone()))));
        assert_eq!(
            words(&rows).unwrap(),
            vec![
                Word::Scalar(ScalarType::Usize),
                Word::Scalar(ScalarType::Usize),
                Word::Ptr(ScalarType::F32)
            ]
        );
        let pair = Type::Tuple(vec![f32_.clone(), Type::Scalar(ScalarType::I64)]);
        assert_eq!(field_offset(&pair, "1").unwrap().1, 1);
        assert_eq!(
            columns(&Type::Tensor(Box::new(f32_))).unwrap_err(),
            "sequences of tensors"
        );
    }
}
