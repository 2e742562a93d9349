//! Debug mode's forms of the iterator-chain consumers whose compiled forms assume more than
//! Rust promises: `fold(ne, op)` and rayon's `reduce(|| ne, op)` become parallel
//! reductions, so `ne` must be a neutral element of `op` and `op` associative. The
//! `accelerate!` and `#[accel]` expansions call these in place of the methods; they check
//! those assumptions on sampled elements (as [`crate::reduce`] does), then fold in order.

use crate::accel_type::Accel;
use crate::checks;

/// What `.par_iter()` may start a chain from in accelerated code: a sequence (`Vec<T>`,
/// `[T]`, `[T; N]`, references to them; with the `ndarray` feature, 1-d arrays and
/// views), read in debug mode as std's `iter()`. A 2-d or 3-d `ndarray` array is not one:
/// its `iter()` visits elements, while accelerated code sees a sequence of rows.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot start an iterator chain in accelerated code",
    label = "`.par_iter()` here needs a sequence: `Vec<T>`, `&[T]`, `[T; N]` or a 1-d array",
    note = "a 2-d or 3-d array is a sequence of rows to the parallel operations: use `map(|row| ..., &m)`, or iterate a 1-d view"
)]
pub trait ChainSource<'a> {
    /// The sequential iterator debug mode reads.
    type Iter: Iterator;
    /// The elements in order, as `iter()` gives them.
    fn chain_iter(&'a self) -> Self::Iter;
}

impl<'a, T: 'a> ChainSource<'a> for [T] {
    type Iter = std::slice::Iter<'a, T>;
    fn chain_iter(&'a self) -> Self::Iter {
        self.iter()
    }
}

impl<'a, T: 'a> ChainSource<'a> for Vec<T> {
    type Iter = std::slice::Iter<'a, T>;
    fn chain_iter(&'a self) -> Self::Iter {
        self.iter()
    }
}

impl<'a, T: 'a, const N: usize> ChainSource<'a> for [T; N] {
    type Iter = std::slice::Iter<'a, T>;
    fn chain_iter(&'a self) -> Self::Iter {
        self.iter()
    }
}

impl<'a, S: ChainSource<'a> + ?Sized> ChainSource<'a> for &S {
    type Iter = S::Iter;
    fn chain_iter(&'a self) -> Self::Iter {
        (**self).chain_iter()
    }
}

impl<'a, S: ChainSource<'a> + ?Sized> ChainSource<'a> for &mut S {
    type Iter = S::Iter;
    fn chain_iter(&'a self) -> Self::Iter {
        (**self).chain_iter()
    }
}

/// An element of a chain folded into accumulators of type `T`: `T` itself, or a reference
/// to one (`xs.iter().fold(0.0, |a, x| a + x)` folds `&f32`s into an `f32`).
#[diagnostic::on_unimplemented(
    message = "`fold` in accelerated code folds elements of type `{Self}` into an accumulator of another type, `{T}`",
    label = "a fold here is a parallel `reduce`: its operator takes and returns the element type",
    note = "convert the elements first, then fold or sum them: `.map(|x| *x as {T}).fold(ne, |a, b| a + b)` or `.map(|x| *x as {T}).sum::<{T}>()`"
)]
pub trait ChainItem<T>: Clone {
    /// Checks `fold`'s assumptions on sampled `items`: a monoid where the elements are
    /// accumulators, a left neutral element where they are references.
    fn check_fold(op: &impl Fn(T, Self) -> T, ne: &T, items: &[Self]);
}

impl<T: Accel + Clone> ChainItem<T> for T {
    fn check_fold(op: &impl Fn(T, T) -> T, ne: &T, items: &[T]) {
        checks::check_monoid("fold", op, ne, items);
    }
}

impl<T: Accel + Clone> ChainItem<T> for &T {
    fn check_fold(op: &impl Fn(T, Self) -> T, ne: &T, items: &[Self]) {
        checks::check_left_neutral("fold", op, ne, items, |x| (*x).clone());
    }
}

/// `x.into_par_iter()` as debug mode reads it: `x.into_iter()` (a call here, so that lints
/// on the user's code do not call the conversion of a range useless).
///
/// ```
/// use accel_runtime::__private::chain_into_iter;
/// assert_eq!(chain_into_iter(0..3).sum::<i32>(), 3);
/// ```
pub fn chain_into_iter<I: IntoIterator>(x: I) -> I::IntoIter {
    x.into_iter()
}

/// `it.fold(ne, op)`, with its assumptions checked in debug mode.
///
/// ```
/// use accel_runtime::__private::chain_fold;
/// let xs = vec![1.5f32, 2.0, 4.0];
/// assert_eq!(chain_fold(xs.iter(), 0.0, |a, x| a + x), 7.5);
/// ```
pub fn chain_fold<I, T>(it: I, ne: T, op: impl Fn(T, I::Item) -> T) -> T
where
    I: Iterator,
    I::Item: ChainItem<T>,
    T: Accel + Clone,
{
    if !checks::active() {
        return it.fold(ne, op);
    }
    let items: Vec<I::Item> = it.collect();
    <I::Item as ChainItem<T>>::check_fold(&op, &ne, &items);
    items.into_iter().fold(ne, op)
}

/// rayon's `it.reduce(identity, op)` read sequentially, with its assumptions checked in
/// debug mode.
///
/// ```
/// use accel_runtime::__private::chain_reduce;
/// assert_eq!(chain_reduce(1..=4, || 1, |a, b| a * b), 24);
/// ```
pub fn chain_reduce<I>(
    it: I,
    identity: impl Fn() -> I::Item,
    op: impl Fn(I::Item, I::Item) -> I::Item,
) -> I::Item
where
    I: Iterator,
    I::Item: Accel + Clone,
{
    let ne = identity();
    if !checks::active() {
        return it.fold(ne, op);
    }
    let items: Vec<I::Item> = it.collect();
    checks::check_monoid("reduce", &op, &ne, &items);
    items.into_iter().fold(ne, op)
}
