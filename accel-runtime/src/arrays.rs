//! `ndarray` arrays as accel values (feature `ndarray`).
//!
//! - A captured `Array1<T>` or `ArrayView1<T>` (or a reference to one) is a sequence; a
//!   2-d or 3-d array or view is a regular nested sequence, a sequence of rows. Arrays in
//!   standard (row-major, contiguous) layout are read in place by compiled code; others
//!   are copied once per run into that layout (`ACCEL_LOG`'s "copied to marshal" counts
//!   the bytes).
//! - A site's value may be an `Array1<T>` (`xs.par_iter().map(f).collect()` typed so), and
//!   sequences and regular nested sequences convert with [`array1`], [`array2`] and
//!   [`array3`] (a site's value is a `Vec`: Rust infers it from the expression, and an
//!   array type there would leave every other site's type ambiguous).
//! - [`with_tensor`] lends an array (or a mutable view) to accelerated code as a
//!   [`Tensor`] written in place by `parallel_loop`; `Tensor` converts to and from
//!   `ArrayD`.
//!
//! ```
//! use accel_runtime::prelude::*;
//! use ndarray::{array, Array1, Array2};
//!
//! let m: Array2<f64> = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
//! // A 2-d array is a sequence of rows.
//! let row_sums: Vec<f64> = accelerate!(map(|row| reduce(|a, b| a + b, 0.0, &row), &m));
//! assert_eq!(row_sums, vec![3.0, 7.0, 11.0]);
//! let v: Array1<f64> = Array1::linspace(0.0, 1.0, 5);
//! let doubled: Array1<f64> = accelerate!(v.par_iter().map(|x| x * 2.0).collect());
//! assert_eq!(doubled, Array1::linspace(0.0, 2.0, 5));
//! ```
//!
//! A chain cannot start from a 2-d or 3-d array: `iter()` visits its elements, while the
//! parallel operations see its rows, so the two readings would disagree. It is a compile
//! error (`` `Array2<f64>` cannot start an iterator chain in accelerated code ``):
//!
//! ```compile_fail,E0277
//! use accel_runtime::prelude::*;
//! let m = ndarray::Array2::<f64>::zeros((2, 2));
//! let n = accelerate!(m.par_iter().count());
//! ```

use crate::accel_type::{short_column, write_elems, Accel};
use crate::backend::abi::{Marshal, Unmarshal};
use crate::chains::ChainSource;
use crate::seq::Seq;
use crate::structure::{CheckCtx, ValuePath};
use crate::tensor::Tensor;
use accel_ir::Type;
use ndarray::{
    Array, Array1, Array2, Array3, ArrayBase, ArrayD, ArrayView, ArrayViewD, Axis, Data, DataMut,
    Dimension, Ix1, Ix2, Ix3, IxDyn, ShapeError,
};

/// The IR type of an array of `rank` dimensions of `T`: nested sequences.
fn nested_type<T: Accel>(rank: usize) -> Type {
    (0..rank).fold(T::accel_type(), |t, _| Type::Seq(Box::new(t)))
}

/// The words of an array: its dimensions, then the columns of its elements in row-major
/// order (the layout of a regular nested sequence). Standard-layout arrays are passed in
/// place; others are copied into that order for the run.
fn marshal_array<'a, T: Accel + 'a, D: Dimension>(a: ArrayView<'a, T, D>, m: &mut Marshal<'a>) {
    for &d in a.shape() {
        m.push(d as u64);
    }
    if let Some(flat) = a.to_slice() {
        T::marshal_columns(flat, m);
    } else {
        let flat: Vec<T> = a.iter().map(Accel::clone_value).collect();
        m.copied += std::mem::size_of_val(&flat[..]);
        T::marshal_columns(&flat, m);
        m.keep.push(Box::new(flat));
    }
}

/// Reads an array of `D`'s rank from compiled code's words.
fn unmarshal_array<T: Accel, D: Dimension>(u: &mut Unmarshal<'_>) -> Result<Array<T, D>, String> {
    let mut dims = D::zeros(D::NDIM.unwrap_or(1));
    for d in dims.slice_mut() {
        *d = usize::try_from(u.word()?).map_err(|_| "an array dimension past usize")?;
    }
    let total = dims
        .slice()
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or("an array result too large")?;
    let flat = T::unmarshal_columns(total, u)?;
    if flat.len() < total {
        return Err(short_column());
    }
    Array::from_shape_vec(dims, flat).map_err(|e| e.to_string())
}

/// Writes an array as nested brackets, like the nested `Vec` it stands for.
fn write_array<T: Accel>(a: ArrayViewD<'_, T>, out: &mut String) {
    if a.ndim() <= 1 {
        write_elems(&a.iter().map(Accel::clone_value).collect::<Vec<_>>(), out);
        return;
    }
    out.push('[');
    for (i, row) in a.outer_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_array(row, out);
    }
    out.push(']');
}

/// Whether two arrays have one shape and elements within `Accel::close_to`'s tolerance.
fn arrays_close<T: Accel, D: Dimension>(a: ArrayView<'_, T, D>, b: ArrayView<'_, T, D>) -> bool {
    a.shape() == b.shape() && a.iter().zip(b.iter()).all(|(x, y)| x.close_to(y, &[]))
}

/// Checks the elements where they may hold sequences (a regular shape needs no check).
fn check_array<T: Accel, D: Dimension>(
    a: ArrayView<'_, T, D>,
    path: &ValuePath<'_>,
    ctx: &mut CheckCtx,
) -> Result<(), String> {
    if !T::NESTED {
        return Ok(());
    }
    a.iter()
        .enumerate()
        .try_for_each(|(k, x)| x.check(&path.index(k), ctx))
}

/// The failure for arrays as elements of other sequences.
fn nested_arrays(m: &mut Marshal<'_>) {
    m.fail(
        "sequences of ndarray arrays are not supported by the compiled backends: use an array \
         of one more dimension"
            .into(),
    );
}

/// The `Accel` methods every array type shares (through its view).
macro_rules! array_methods {
    ($rank:expr) => {
        fn accel_type() -> Type {
            nested_type::<T>($rank)
        }
        fn write_value(&self, out: &mut String) {
            write_array(self.view().into_dyn(), out)
        }
        fn close_to(&self, other: &Self, _: &[&Self]) -> bool {
            arrays_close(self.view(), other.view())
        }
        fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
            check_array(self.view(), path, ctx)
        }
        fn seq_len(&self) -> Option<usize> {
            Some(self.len_of(Axis(0)))
        }
        fn size_hint(&self) -> usize {
            self.len()
        }
        fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
            marshal_array(self.view(), m)
        }
        fn marshal_columns<'m>(_: &[Self], m: &mut Marshal<'m>)
        where
            Self: 'm,
        {
            nested_arrays(m)
        }
    };
}

macro_rules! array_accel {
    ($($dim:ty => $rank:expr),*) => {$(
        impl<T: Accel> Accel for Array<T, $dim> {
            const NESTED: bool = true;
            array_methods!($rank);
            fn clone_value(&self) -> Self {
                self.map(Accel::clone_value)
            }
            fn unmarshal(u: &mut Unmarshal<'_>) -> Result<Self, String> {
                unmarshal_array(u)
            }
            fn unmarshal_columns(_: usize, _: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
                Err("a sequence of ndarray arrays cannot be a result: use an array of one more \
                     dimension"
                    .into())
            }
        }

        impl<'v, T: Accel> Accel for ArrayView<'v, T, $dim> {
            const NESTED: bool = true;
            array_methods!($rank);
            fn clone_value(&self) -> Self {
                self.clone()
            }
            fn unmarshal(_: &mut Unmarshal<'_>) -> Result<Self, String> {
                Err("an array view cannot be a result of compiled code: use an owned array"
                    .into())
            }
            fn unmarshal_columns(_: usize, _: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
                Err("an array view cannot be a result of compiled code: use an owned array"
                    .into())
            }
        }
    )*};
}
array_accel!(Ix1 => 1, Ix2 => 2, Ix3 => 3);

// The sequences debug mode reads: a 1-d array's elements, a 2-d array's rows, a 3-d
// array's matrices (as the nested `Vec`s compiled code's values stand for).

impl<T: Clone, S: Data<Elem = T>> Seq for &ArrayBase<S, Ix1> {
    type Elem = T;
    fn seq_len(&self) -> usize {
        self.len()
    }
    fn into_elems(self) -> Vec<T> {
        self.to_vec()
    }
}

impl<T: Clone, S: Data<Elem = T>> Seq for &ArrayBase<S, Ix2> {
    type Elem = Vec<T>;
    fn seq_len(&self) -> usize {
        self.nrows()
    }
    fn into_elems(self) -> Vec<Vec<T>> {
        self.outer_iter().map(|row| row.to_vec()).collect()
    }
}

impl<T: Clone, S: Data<Elem = T>> Seq for &ArrayBase<S, Ix3> {
    type Elem = Vec<Vec<T>>;
    fn seq_len(&self) -> usize {
        self.len_of(Axis(0))
    }
    fn into_elems(self) -> Vec<Vec<Vec<T>>> {
        self.outer_iter()
            .map(|m| m.outer_iter().map(|row| row.to_vec()).collect())
            .collect()
    }
}

/// Arrays and views by value read as the references above do.
macro_rules! seq_by_value {
    ($($dim:ty => $elem:ty),*) => {$(
        impl<T: Clone, S: Data<Elem = T>> Seq for ArrayBase<S, $dim> {
            type Elem = $elem;
            fn seq_len(&self) -> usize {
                (&self).seq_len()
            }
            fn into_elems(self) -> Vec<$elem> {
                (&self).into_elems()
            }
        }
    )*};
}
seq_by_value!(Ix1 => T, Ix2 => Vec<T>, Ix3 => Vec<Vec<T>>);

impl<'a, T: 'a, S: Data<Elem = T> + 'a> ChainSource<'a> for ArrayBase<S, Ix1> {
    type Iter = ndarray::iter::Iter<'a, T, Ix1>;
    fn chain_iter(&'a self) -> Self::Iter {
        self.iter()
    }
}

/// A sequence (a site's value, typically) as an `Array1`, without copying.
///
/// ```
/// use accel_runtime::{arrays, prelude::*};
/// let v = ndarray::array![1.0, 4.0, 9.0];
/// let roots = arrays::array1(accelerate!(map(|x: f64| x.sqrt(), &v)));
/// assert_eq!(roots, ndarray::array![1.0, 2.0, 3.0]);
/// ```
pub fn array1<T>(elements: Vec<T>) -> Array1<T> {
    Array1::from_vec(elements)
}

/// A regular nested sequence (a site's value, typically) as an `Array2`; an error when
/// rows differ in length.
///
/// ```
/// use accel_runtime::{arrays, prelude::*};
/// let m = ndarray::array![[1, 2], [3, 4]];
/// let doubled = arrays::array2(accelerate!(map(|row| map(|x| x * 2, &row), &m))).unwrap();
/// assert_eq!(doubled, ndarray::array![[2, 4], [6, 8]]);
/// ```
pub fn array2<T>(rows: Vec<Vec<T>>) -> Result<Array2<T>, ShapeError> {
    let shape = (rows.len(), rows.first().map_or(0, Vec::len));
    if rows.iter().any(|row| row.len() != shape.1) {
        return Err(ShapeError::from_kind(ndarray::ErrorKind::IncompatibleShape));
    }
    Array2::from_shape_vec(shape, rows.into_iter().flatten().collect())
}

/// A regular nested sequence of matrices as an `Array3`; an error when it is irregular.
pub fn array3<T>(matrices: Vec<Vec<Vec<T>>>) -> Result<Array3<T>, ShapeError> {
    let rows = matrices.first().map_or(0, Vec::len);
    let cols = matrices.first().and_then(|m| m.first()).map_or(0, Vec::len);
    if matrices
        .iter()
        .any(|m| m.len() != rows || m.iter().any(|row| row.len() != cols))
    {
        return Err(ShapeError::from_kind(ndarray::ErrorKind::IncompatibleShape));
    }
    let shape = (matrices.len(), rows, cols);
    Array3::from_shape_vec(shape, matrices.into_iter().flatten().flatten().collect())
}

/// Lends `array` (an owned array or a mutable view, of rank at most the tensor rank bound)
/// to `f` as a [`Tensor`]: accelerated code in `f` writes the array in place, as it writes
/// any tensor (`parallel_loop` with `t.set(..)`). A standard-layout array is written
/// without copying; any other layout is copied into a tensor and back (reported under
/// `ACCEL_LOG`). Clones of the tensor that `f` keeps get a copy of their own when `f`
/// returns, so none of them reaches the array afterwards.
///
/// ```
/// use accel_runtime::{arrays::with_tensor, prelude::*};
/// let mut image = ndarray::Array2::<f32>::zeros((2, 3));
/// with_tensor(&mut image, |t| {
///     accelerate!(parallel_loop(6, |k| t.set([k / 3, k % 3], k as f32)))
/// });
/// assert_eq!(image, ndarray::array![[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]);
/// ```
pub fn with_tensor<A, S, D, R>(array: &mut ArrayBase<S, D>, f: impl FnOnce(&Tensor<A>) -> R) -> R
where
    A: Clone,
    S: DataMut<Elem = A>,
    D: Dimension,
{
    let shape = array.shape().to_vec();
    if let Some(elements) = array.as_slice_mut() {
        /// Detaches the tensor when `f` returns or unwinds.
        struct Lent<A: Clone>(Tensor<A>);
        impl<A: Clone> Drop for Lent<A> {
            fn drop(&mut self) {
                self.0.detach();
            }
        }
        // SAFETY: `elements` is borrowed mutably for this whole call, and `Lent` detaches
        // the tensor (handles left over get elements of their own) before the borrow ends,
        // whether `f` returns or unwinds.
        let lent = Lent(unsafe { Tensor::borrowing(elements, &shape) });
        return f(&lent.0);
    }
    crate::backend::log::info!(
        "an array of shape {shape:?} not in standard layout was copied into a tensor and back \
         ({} bytes each way)",
        array.len() * std::mem::size_of::<A>()
    );
    let tensor = Tensor::from_vec(array.iter().cloned().collect(), &shape);
    let r = f(&tensor);
    for (a, v) in array.iter_mut().zip(tensor.to_vec()) {
        *a = v;
    }
    r
}

impl<T: Clone> From<ArrayD<T>> for Tensor<T> {
    /// The array's elements become the tensor's, without copying when it is in standard
    /// layout.
    fn from(a: ArrayD<T>) -> Self {
        let shape = a.shape().to_vec();
        let len = a.len();
        let elements = if a.is_standard_layout() {
            // The array's elements are contiguous from its offset, but its buffer may hold
            // more (an array sliced in place keeps the whole allocation).
            match a.into_raw_vec_and_offset() {
                (v, Some(0) | None) if v.len() == len => v,
                (v, offset) => {
                    let start = offset.unwrap_or(0);
                    v[start..start + len].to_vec()
                }
            }
        } else {
            a.iter().cloned().collect()
        };
        Tensor::from_vec(elements, &shape)
    }
}

impl<T: Clone> From<&Tensor<T>> for ArrayD<T> {
    /// A copy of the tensor's (or view's) elements with its shape.
    fn from(t: &Tensor<T>) -> Self {
        ArrayD::from_shape_vec(IxDyn(t.shape()), t.to_vec())
            .unwrap_or_else(|_| unreachable!("a tensor's elements fill its shape"))
    }
}

impl<T: Clone> From<Tensor<T>> for ArrayD<T> {
    /// A copy of the tensor's (or view's) elements with its shape.
    fn from(t: Tensor<T>) -> Self {
        ArrayD::from(&t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, s};

    /// The words a value marshals to.
    fn words<T: Accel>(v: &T) -> (Vec<u64>, usize) {
        let mut m = Marshal::default();
        v.marshal(&mut m);
        assert_eq!(m.error, None);
        (m.words, m.copied)
    }

    #[test]
    fn arrays_have_the_types_and_words_of_nested_sequences() {
        assert_eq!(<Array2<f32>>::accel_type(), <Vec<Vec<f32>>>::accel_type());
        assert_eq!(
            <ArrayView<'_, i64, Ix3>>::accel_type(),
            <Vec<Vec<Vec<i64>>>>::accel_type()
        );
        let m = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let (w, copied) = words(&m);
        // Rows, width, then the elements in place (a pointer into the array: no copy).
        assert_eq!(&w[..2], &[2, 3]);
        assert_eq!(w[2], m.as_ptr() as u64);
        assert_eq!((w.len(), copied), (3, 0));
        let nested = vec![vec![1.0f64, 2.0, 3.0], vec![4.0, 5.0, 6.0]];
        assert_eq!(words(&nested).0[..2], w[..2]);
    }

    #[test]
    fn views_in_another_layout_are_copied_in_row_major_order() {
        let m = array![[1i32, 2], [3, 4], [5, 6]];
        let t = m.t();
        let mut marshal = Marshal::default();
        t.marshal(&mut marshal);
        assert_eq!(&marshal.words[..2], &[2, 3]);
        assert_eq!(marshal.copied, 6 * 4);
        let column = marshal.words[2] as *const i32;
        // SAFETY: the copied column is kept alive by `marshal`, 6 elements long.
        let copied = unsafe { std::slice::from_raw_parts(column, 6) };
        assert_eq!(copied, &[1, 3, 5, 2, 4, 6]);
        // A standard-layout slice of rows is still read in place.
        let rows = m.slice(s![1.., ..]);
        let (w, copied) = words(&rows);
        assert_eq!((w[2], copied), (rows.as_ptr() as u64, 0));
    }

    #[test]
    fn results_read_back_as_arrays() {
        let nested = vec![
            vec![vec![1u32, 2], vec![3, 4]],
            vec![vec![5, 6], vec![7, 8]],
        ];
        let mut m = Marshal::default();
        nested.marshal(&mut m);
        let mut arena = crate::backend::abi::Arena::default();
        let mut u = Unmarshal {
            words: &m.words,
            at: 0,
            arena: &mut arena,
            rows: false,
        };
        let a = <Array3<u32>>::unmarshal(&mut u).unwrap();
        assert_eq!(a, array![[[1, 2], [3, 4]], [[5, 6], [7, 8]]]);
    }

    #[test]
    fn values_print_and_compare_like_nested_vecs() {
        let mut out = String::new();
        array![[1.5f64, 2.0], [3.0, 4.0]].write_value(&mut out);
        assert_eq!(out, "[[1.5, 2.0], [3.0, 4.0]]");
        assert!(array![1.0f32, 2.0].close_to(&array![1.00001, 2.0], &[]));
        assert!(!array![[1.0f32, 2.0]].close_to(&array![[1.0], [2.0]], &[]));
    }

    #[test]
    fn irregular_nesting_is_no_array() {
        assert!(array2(vec![vec![1, 2], vec![3]]).is_err());
        assert_eq!(
            array2(vec![vec![1, 2], vec![3, 4]]).unwrap(),
            array![[1, 2], [3, 4]]
        );
        let empty: Vec<Vec<i32>> = vec![];
        assert_eq!(array2(empty).unwrap().shape(), &[0, 0]);
        assert!(array3(vec![vec![vec![1]], vec![vec![1, 2]]]).is_err());
        assert_eq!(
            array3(vec![vec![vec![1, 2]], vec![vec![3, 4]]]).unwrap(),
            array![[[1, 2]], [[3, 4]]]
        );
    }

    #[test]
    fn a_lent_array_is_written_in_place_and_escaping_handles_detach() {
        let mut a = Array2::<i64>::zeros((2, 2));
        let address = a.as_ptr();
        let kept = with_tensor(&mut a, |t| {
            t.set([1, 0], 7);
            t.clone()
        });
        assert_eq!(a, array![[0, 0], [7, 0]]);
        assert_eq!(a.as_ptr(), address);
        // The kept handle has its own copy now: writing it leaves the array alone.
        kept.set([0, 0], 1);
        assert_eq!(kept.to_vec(), vec![1, 0, 7, 0]);
        assert_eq!(a[[0, 0]], 0);
        // A transposed view: copied in and back.
        let mut b = array![[1, 2], [3, 4]];
        with_tensor(&mut b.view_mut().reversed_axes(), |t| t.set([0, 1], 30));
        assert_eq!(b, array![[1, 2], [30, 4]]);
    }

    #[test]
    fn tensors_convert_to_and_from_arrayd() {
        let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).collect()).unwrap();
        let t = Tensor::from(a.clone());
        assert_eq!(
            (t.shape(), t.to_vec()),
            (&[2usize, 3][..], (0..6).collect())
        );
        assert_eq!(ArrayD::from(&t), a);
        let view = t.sub(1, 1);
        assert_eq!(
            ArrayD::from(view),
            a.slice(s![1..2, ..]).into_owned().into_dyn()
        );
        // Sliced in place: standard layout over part of its buffer.
        let mut middle = a.clone();
        middle.slice_collapse(s![.., 1..2]);
        assert_eq!(Tensor::from(middle).to_vec(), vec![1, 4]);
        let mut rows = ArrayD::from_shape_vec(IxDyn(&[4, 2]), (0..8).collect()).unwrap();
        rows.slice_collapse(s![1..3, ..]);
        assert!(rows.is_standard_layout());
        assert_eq!(Tensor::from(rows).to_vec(), vec![2, 3, 4, 5]);
        let transposed = a.t().to_owned();
        assert_eq!(Tensor::from(transposed).to_vec(), vec![0, 3, 1, 4, 2, 5]);
    }
}
