//! Mutable n-dimensional tensors: shared handles to one buffer, with aliasing views.

use crate::accel_type::{write_elems, Accel};
use crate::backend::abi::{Marshal, Unmarshal, MAX_RANK};
use crate::checks;
use crate::report::violation;
use crate::structure::{CheckCtx, ValuePath};
use accel_ir::Type;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// A mutable n-dimensional array, stored row-major. A `Tensor` is a shared handle: clones
/// and [`sub`](Tensor::sub) views alias the same memory, and [`set`](Tensor::set) takes
/// `&self`, so closures given to `parallel_loop` can write through captured tensors.
///
/// ```
/// use accel_runtime::Tensor;
/// let t = Tensor::from_vec(vec![1, 2, 3, 4, 5, 6], &[3, 2]);
/// let rows = t.sub(1, 2); // rows 1 and 2, aliasing t
/// rows.set([0, 1], 40);
/// assert_eq!(t.get([1, 1]), 40);
/// assert_eq!(rows.shape(), &[2, 2]);
/// assert_eq!(t.to_vec(), vec![1, 2, 3, 40, 5, 6]);
/// ```
pub struct Tensor<T> {
    data: Arc<Mutex<Buffer<T>>>,
    /// Offset of this view's first element in `data`.
    offset: usize,
    /// The length of `data`, which never changes.
    buffer_len: usize,
    shape: Vec<usize>,
}

/// A tensor's elements: its own, or borrowed from the caller's memory (an `ndarray` array
/// written in place) between [`Tensor::borrowing`] and [`Tensor::detach`].
#[cfg_attr(not(feature = "ndarray"), allow(dead_code))]
pub(crate) enum Buffer<T> {
    Owned(Vec<T>),
    Borrowed { ptr: *mut T, len: usize },
}

impl<T> std::ops::Deref for Buffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Buffer::Owned(v) => v,
            // SAFETY: `Tensor::borrowing`'s contract: the memory is valid, and reached only
            // through this buffer (whose mutex orders every access), until `detach`
            // replaces the variant.
            Buffer::Borrowed { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl<T> std::ops::DerefMut for Buffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Buffer::Owned(v) => v,
            // SAFETY: as in `deref`; `&mut self` is the only access.
            Buffer::Borrowed { ptr, len } => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
        }
    }
}

// SAFETY: a borrowed buffer is the caller's `&mut [T]` in another form: sending or sharing
// it is sending or sharing that exclusive borrow, which is as safe as for `Vec<T>`.
unsafe impl<T: Send> Send for Buffer<T> {}
// SAFETY: as above (and every access goes through the tensor's mutex).
unsafe impl<T: Sync> Sync for Buffer<T> {}

impl<T> Clone for Tensor<T> {
    fn clone(&self) -> Self {
        Tensor {
            data: Arc::clone(&self.data),
            offset: self.offset,
            buffer_len: self.buffer_len,
            shape: self.shape.clone(),
        }
    }
}

impl<T: Clone> Tensor<T> {
    /// A tensor of the given shape filled with `T::default()` (zero, `false`).
    pub fn zeros(shape: &[usize]) -> Self
    where
        T: Default,
    {
        let len = element_count(shape);
        checks::check_new_tensor(shape);
        Tensor {
            data: Arc::new(Mutex::new(Buffer::Owned(vec![T::default(); len]))),
            offset: 0,
            buffer_len: len,
            shape: shape.to_vec(),
        }
    }

    /// A tensor of the given shape holding `v` in row-major order; `v.len()` must be the
    /// product of the dimensions.
    pub fn from_vec(v: Vec<T>, shape: &[usize]) -> Self {
        Self::over("Tensor::from_vec", Buffer::Owned(v), shape)
    }

    /// A tensor of `shape` over all of `buffer`, whose length `what` (the constructor, for
    /// the message) must have made the product of the dimensions.
    fn over(what: &str, buffer: Buffer<T>, shape: &[usize]) -> Self {
        let len = element_count(shape);
        if buffer.len() != len {
            violation(
                what,
                &format!(
                    "{} elements do not fill shape {shape:?} ({len} elements)",
                    buffer.len()
                ),
            );
        }
        checks::check_new_tensor(shape);
        Tensor {
            data: Arc::new(Mutex::new(buffer)),
            offset: 0,
            buffer_len: len,
            shape: shape.to_vec(),
        }
    }

    /// The element at `index`, which has one coordinate per dimension.
    pub fn get<const R: usize>(&self, index: [usize; R]) -> T {
        let at = self.flat_index("get", &index);
        if checks::active() {
            checks::record_access(self.buffer_id(), self.buffer_len, at, false);
        }
        self.lock()[at].clone()
    }

    /// Writes the element at `index`.
    pub fn set<const R: usize>(&self, index: [usize; R], value: T) {
        let at = self.flat_index("set", &index);
        if checks::active() {
            checks::record_access(self.buffer_id(), self.buffer_len, at, true);
        }
        self.lock()[at] = value;
    }

    /// A view of `len` rows (along the first dimension) starting at row `offset`; it keeps
    /// the other dimensions and aliases this tensor's memory.
    pub fn sub(&self, offset: usize, len: usize) -> Tensor<T> {
        let rows = self.shape.first().copied().unwrap_or(1);
        if offset.checked_add(len).is_none_or(|end| end > rows) {
            violation(
                "Tensor::sub",
                &format!(
                    "rows {offset}..{} are out of bounds for shape {:?}",
                    offset.saturating_add(len),
                    self.shape
                ),
            );
        }
        let row_size: usize = self.shape.iter().skip(1).product();
        let mut shape = self.shape.clone();
        if let Some(first) = shape.first_mut() {
            *first = len;
        }
        Tensor {
            data: Arc::clone(&self.data),
            offset: self.offset + offset * row_size,
            buffer_len: self.buffer_len,
            shape,
        }
    }

    /// A tensor of `shape` whose elements are `elements`, written in place (no copy).
    ///
    /// # Safety
    ///
    /// `elements` must stay valid and untouched by anything but this tensor's handles
    /// until [`detach`](Tensor::detach) is called on it, which the caller must do before
    /// the borrow ends (also when unwinding).
    #[cfg_attr(not(feature = "ndarray"), allow(dead_code))]
    pub(crate) unsafe fn borrowing(elements: &mut [T], shape: &[usize]) -> Self {
        let buffer = Buffer::Borrowed {
            ptr: elements.as_mut_ptr(),
            len: elements.len(),
        };
        Self::over("Tensor::borrowing", buffer, shape)
    }

    /// Ends a borrow begun by [`borrowing`](Tensor::borrowing): handles that outlive it
    /// (clones kept by the caller's code) get a copy of the elements of their own.
    #[cfg_attr(not(feature = "ndarray"), allow(dead_code))]
    pub(crate) fn detach(&self) {
        let mut buffer = self.lock();
        if let Buffer::Borrowed { .. } = &*buffer {
            *buffer = if Arc::strong_count(&self.data) > 1 {
                Buffer::Owned(buffer.to_vec())
            } else {
                Buffer::Owned(Vec::new())
            };
        }
    }

    /// The dimensions of this tensor (or view).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements of this tensor (or view), row-major.
    pub fn to_vec(&self) -> Vec<T> {
        self.lock()[self.offset..self.offset + self.len()].to_vec()
    }

    /// Whether two tensors share memory (are views of one buffer).
    pub fn aliases(&self, other: &Tensor<T>) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    /// Identifies the buffer this tensor views (equal for aliasing views).
    pub(crate) fn buffer_id(&self) -> usize {
        Arc::as_ptr(&self.data) as *const () as usize
    }

    /// The offset of this view's first element in its buffer.
    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    /// Locks the buffer for a compiled run: its base address, and the guard that keeps it
    /// locked (so no other thread touches it while compiled code writes through it).
    pub(crate) fn lock_for_run(&self) -> (usize, MutexGuard<'_, Buffer<T>>) {
        let mut guard = self.lock();
        (guard.as_mut_ptr() as usize, guard)
    }

    /// The size of the whole buffer in bytes.
    pub(crate) fn buffer_bytes(&self) -> usize {
        self.buffer_len * std::mem::size_of::<T>()
    }

    /// Whether two handles view the same elements of the same buffer.
    pub(crate) fn same_view(&self, other: &Tensor<T>) -> bool {
        self.aliases(other) && self.offset == other.offset && self.shape == other.shape
    }

    fn lock(&self) -> MutexGuard<'_, Buffer<T>> {
        // A panic while the lock is held cannot leave an element half-written (every write
        // is one assignment), so a poisoned lock still guards consistent data.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn flat_index(&self, what: &str, index: &[usize]) -> usize {
        if index.len() != self.shape.len() {
            violation(
                &format!("Tensor::{what}"),
                &format!(
                    "index {index:?} has {} coordinates, but the tensor has rank {}",
                    index.len(),
                    self.rank()
                ),
            );
        }
        let mut at = 0;
        for (&i, &d) in index.iter().zip(&self.shape) {
            if i >= d {
                violation(
                    &format!("Tensor::{what}"),
                    &format!(
                        "index {index:?} is out of bounds for shape {:?}",
                        self.shape
                    ),
                );
            }
            at = at * d + i;
        }
        self.offset + at
    }
}

fn element_count(shape: &[usize]) -> usize {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .unwrap_or_else(|| {
            violation(
                "Tensor",
                &format!("shape {shape:?} has more elements than memory can hold"),
            )
        })
}

impl<T: Clone + fmt::Debug> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape)
            .field("data", &self.to_vec())
            .finish()
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
    fn size_hint(&self) -> usize {
        self.len()
    }
    fn clone_value(&self) -> Self {
        self.clone()
    }
    /// A pointer to the view's first element, the rank and the dimensions. The buffer is
    /// locked once per run however many views of it are marshaled.
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
        if !matches!(T::accel_type(), Type::Scalar(_)) {
            m.fail(
                "tensors of compound elements are not supported by the compiled backends yet"
                    .into(),
            );
            return;
        }
        if self.rank() > MAX_RANK {
            m.fail(format!("tensors of rank {} are not supported by the compiled backends (at most {MAX_RANK})", self.rank()));
            return;
        }
        let base = match m.buffers.get(&self.buffer_id()) {
            Some(&base) => base,
            None => {
                let (base, guard) = self.lock_for_run();
                m.keep.push(Box::new(guard));
                m.buffers.insert(self.buffer_id(), base);
                m.bytes += self.buffer_bytes();
                m.tensor_buffers.push((base, self.buffer_bytes()));
                base
            }
        };
        m.push((base + self.offset() * std::mem::size_of::<T>()) as u64);
        m.push(self.rank() as u64);
        for k in 0..MAX_RANK {
            m.push(self.shape().get(k).copied().unwrap_or(1) as u64);
        }
    }
    fn marshal_columns<'m>(_: &[Self], m: &mut Marshal<'m>)
    where
        Self: 'm,
    {
        m.fail("sequences of tensors are not supported by the compiled backends".into());
    }
    fn unmarshal(_: &mut Unmarshal<'_>) -> Result<Self, String> {
        Err("a tensor cannot be a result of compiled code yet".into())
    }
    fn unmarshal_columns(_: usize, _: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
        Err("a tensor cannot be a result of compiled code yet".into())
    }
}

/// A captured mutable sequence (`xs` in `xs.par_iter_mut().for_each(..)`): lent to
/// compiled code as a rank-1 tensor over the sequence's own memory, so an in-place form
/// writes where the caller's `Vec` or slice lives, without a copy. It holds the exclusive
/// borrow for as long as the site runs.
#[doc(hidden)]
pub struct MutSeq<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: a `MutSeq` is an exclusive borrow of `[T]` (which is `Send`/`Sync` when `T` is);
// compiled code writes through its pointer only while the site runs, and distinct
// iterations write distinct elements (the in-place forms give each iteration its own).
unsafe impl<T: Send> Send for MutSeq<'_, T> {}
// SAFETY: as above; shared access reads the pointer and length only.
unsafe impl<T: Sync> Sync for MutSeq<'_, T> {}

impl<'a, T> MutSeq<'a, T> {
    /// Lends `xs` to a site that writes it in place.
    pub fn new(xs: &'a mut [T]) -> MutSeq<'a, T> {
        MutSeq {
            ptr: xs.as_mut_ptr(),
            len: xs.len(),
            _borrow: std::marker::PhantomData,
        }
    }
}

/// The type of a sequence lent to a site to write in place: a tensor.
fn lent_type<T: Accel>() -> Type {
    Type::Tensor(Box::new(T::accel_type()))
}

impl<T: Accel> crate::accel_type::Inspect for MutSeq<'_, T> {
    fn inspect(&self, _: &str, _: &mut CheckCtx) -> Result<(), String> {
        // Debug mode runs the in-place form as the Rust it is.
        Ok(())
    }
    fn ir_type(&self) -> Type {
        lent_type::<T>()
    }
    fn type_key(&self) -> usize {
        lent_type::<T> as fn() -> Type as usize
    }
    /// A rank-1 tensor's words: the first element's address, the rank, the length.
    fn marshal_into<'m>(&'m self, m: &mut Marshal<'m>) {
        if !matches!(T::accel_type(), Type::Scalar(_)) {
            m.fail(format!(
                "writing a sequence of {} in place is not supported by the compiled backends yet: write a sequence of numbers, or return a new sequence",
                T::accel_type()
            ));
            return;
        }
        let base = self.ptr as usize;
        let bytes = self.len * std::mem::size_of::<T>();
        if m.buffers.insert(base, base).is_none() {
            m.bytes += bytes;
            m.tensor_buffers.push((base, bytes));
        }
        m.push(base as u64);
        m.push(1);
        m.push(self.len as u64);
        for _ in 1..MAX_RANK {
            m.push(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_of_one_tensor_buffer_are_locked_once() {
        let t = Tensor::<i64>::zeros(&[4, 2]);
        let (a, b) = (t.sub(0, 2), t.sub(2, 2));
        let mut m = Marshal::default();
        a.marshal(&mut m);
        b.marshal(&mut m);
        assert_eq!(m.buffers.len(), 1);
        assert_eq!(
            m.words[0] + 4 * 8,
            m.words[5],
            "b starts 4 elements after a"
        );
        assert_eq!(&m.words[1..5], &[2, 2, 2, 1]);
    }

    #[test]
    fn views_alias_and_are_checked_against_their_own_shape() {
        let t = Tensor::<i32>::zeros(&[6]);
        let a = t.sub(1, 2);
        let b = t.sub(4, 2);
        a.set([0], 7);
        b.set([1], 2);
        assert_eq!(t.to_vec(), vec![0, 7, 0, 0, 0, 2]);
        assert!(a.aliases(&b));
        assert_eq!((a.shape(), a.rank(), a.len()), (&[2][..], 1, 2));
        let nested = t.sub(1, 4).sub(2, 1);
        assert_eq!(nested.to_vec(), vec![0]);
        nested.set([0], 9);
        assert_eq!(t.get([3]), 9);
    }

    #[test]
    fn three_dimensional_indexing_is_row_major() {
        let t = Tensor::from_vec((0..24).collect::<Vec<i64>>(), &[2, 3, 4]);
        assert_eq!(t.get([1, 2, 3]), 23);
        assert_eq!(t.get([0, 1, 0]), 4);
        assert_eq!(t.sub(1, 1).get([0, 0, 1]), 13);
    }

    #[test]
    #[should_panic(expected = "Tensor::get: index [2] is out of bounds for shape [2]")]
    fn view_indices_are_bounded_by_the_view() {
        Tensor::<u8>::zeros(&[6]).sub(0, 2).get([2]);
    }

    #[test]
    #[should_panic(
        expected = "Tensor::set: index [0] has 1 coordinates, but the tensor has rank 2"
    )]
    fn index_rank_must_match() {
        Tensor::<u8>::zeros(&[2, 2]).set([0], 1);
    }

    #[test]
    #[should_panic(expected = "Tensor::sub: rows 1..4 are out of bounds for shape [3, 2]")]
    fn sub_is_bounded() {
        Tensor::<u8>::zeros(&[3, 2]).sub(1, 3);
    }

    #[test]
    #[should_panic(expected = "Tensor::from_vec: 3 elements do not fill shape [2, 2] (4 elements)")]
    fn from_vec_checks_the_length() {
        Tensor::from_vec(vec![1, 2, 3], &[2, 2]);
    }
}
