//! Sequence arguments: `Vec<T>`, `&Vec<T>` and `&[T]` are all sequences of `T`.

/// A sequence argument of a parallel operation. Elements are handed to the operation's
/// function by value: owned sequences move them, borrowed ones clone them.
///
/// ```
/// use accel_runtime::Seq;
/// let v = vec![1, 2, 3];
/// assert_eq!((&v).seq_len(), 3);
/// assert_eq!((&v[1..]).into_elems(), vec![2, 3]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a sequence that parallel operations accept",
    label = "expected `Vec<T>`, `&Vec<T>` or `&[T]`",
    note = "pass the sequence itself or a reference to it: `map(f, &xs)`"
)]
pub trait Seq {
    /// The element type.
    type Elem;
    /// The number of elements.
    fn seq_len(&self) -> usize;
    /// The elements, by value, in order.
    fn into_elems(self) -> Vec<Self::Elem>;
}

impl<T> Seq for Vec<T> {
    type Elem = T;
    fn seq_len(&self) -> usize {
        self.len()
    }
    fn into_elems(self) -> Vec<T> {
        self
    }
}

impl<T: Clone> Seq for &Vec<T> {
    type Elem = T;
    fn seq_len(&self) -> usize {
        self.len()
    }
    fn into_elems(self) -> Vec<T> {
        self.clone()
    }
}

impl<T: Clone> Seq for &[T] {
    type Elem = T;
    fn seq_len(&self) -> usize {
        self.len()
    }
    fn into_elems(self) -> Vec<T> {
        self.to_vec()
    }
}

impl<T: Clone, const N: usize> Seq for &[T; N] {
    type Elem = T;
    fn seq_len(&self) -> usize {
        N
    }
    fn into_elems(self) -> Vec<T> {
        self.to_vec()
    }
}
