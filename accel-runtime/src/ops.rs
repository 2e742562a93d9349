//! The parallel operations. These definitions are the reference semantics: they run
//! sequentially, in order, outside `accelerate!` and in debug mode, and every backend is
//! tested against them.

use crate::accel_type::Accel;
use crate::checks;
use crate::report::violation;
use crate::seq::Seq;

/// `[f(x0), f(x1), …]`.
///
/// ```
/// use accel_runtime::map;
/// assert_eq!(map(|x: i32| x * 2, &[1, 2, 3]), vec![2, 4, 6]);
/// ```
pub fn map<S: Seq, B>(f: impl Fn(S::Elem) -> B, xs: S) -> Vec<B> {
    xs.into_elems().into_iter().map(f).collect()
}

/// `[f(x0, y0), f(x1, y1), …]`; the sequences must have equal lengths.
///
/// ```
/// use accel_runtime::map2;
/// assert_eq!(map2(|x: i32, y: i32| x + y, &[1, 2], vec![10, 20]), vec![11, 22]);
/// ```
pub fn map2<S: Seq, T: Seq, C>(f: impl Fn(S::Elem, T::Elem) -> C, xs: S, ys: T) -> Vec<C> {
    let (n, m) = (xs.seq_len(), ys.seq_len());
    if n != m {
        violation("map2", &format!("lengths differ: {n} vs {m}"));
    }
    xs.into_elems()
        .into_iter()
        .zip(ys.into_elems())
        .map(|(x, y)| f(x, y))
        .collect()
}

/// Folds the sequence with `op`, starting from `ne`. `op` must be associative and `ne` its
/// neutral element: accelerated code folds in parallel, in any grouping.
///
/// ```
/// use accel_runtime::reduce;
/// assert_eq!(reduce(|a: i64, b: i64| a + b, 0, &[1, 2, 3]), 6);
/// ```
pub fn reduce<S: Seq>(op: impl Fn(S::Elem, S::Elem) -> S::Elem, ne: S::Elem, xs: S) -> S::Elem
where
    S::Elem: Accel + Clone,
{
    let elems = xs.into_elems();
    if checks::active() {
        checks::check_monoid("reduce", &op, &ne, &elems);
    }
    elems.into_iter().fold(ne, op)
}

/// The inclusive prefix folds of the sequence: `[x0, op(x0, x1), …]` (with `ne` folded in
/// first). Same assumptions as [`reduce`].
///
/// ```
/// use accel_runtime::scan;
/// assert_eq!(scan(|a: i32, b: i32| a + b, 0, &[1, 2, 3]), vec![1, 3, 6]);
/// ```
pub fn scan<S: Seq>(op: impl Fn(S::Elem, S::Elem) -> S::Elem, ne: S::Elem, xs: S) -> Vec<S::Elem>
where
    S::Elem: Accel + Clone,
{
    let elems = xs.into_elems();
    if checks::active() {
        checks::check_monoid("scan", &op, &ne, &elems);
    }
    let mut acc = ne;
    let mut out = Vec::with_capacity(elems.len());
    for x in elems {
        acc = op(acc, x);
        out.push(acc.clone());
    }
    out
}

/// Concatenates the rows of a regular nested sequence (all rows one length).
///
/// ```
/// use accel_runtime::flatten;
/// assert_eq!(flatten(vec![vec![1, 2], vec![3, 4]]), vec![1, 2, 3, 4]);
/// ```
pub fn flatten<S: Seq>(xss: S) -> Vec<<S::Elem as Seq>::Elem>
where
    S::Elem: Seq,
{
    let rows = xss.into_elems();
    let mut out = Vec::new();
    let width = rows.first().map(Seq::seq_len);
    for (i, row) in rows.into_iter().enumerate() {
        let len = row.seq_len();
        if Some(len) != width {
            violation(
                "flatten",
                &format!(
                    "the sequence is irregular: row 0 has {} elements, row {i} has {len}",
                    width.unwrap_or(0)
                ),
            );
        }
        out.extend(row.into_elems());
    }
    out
}

/// `[f(0), f(1), …, f(n - 1)]`.
///
/// ```
/// use accel_runtime::create;
/// assert_eq!(create(4, |i| i * i), vec![0, 1, 4, 9]);
/// ```
pub fn create<A>(n: usize, f: impl Fn(usize) -> A) -> Vec<A> {
    (0..n).map(f).collect()
}

/// Calls `f(i)` for every `i in 0..n`, in no particular order when accelerated: iterations
/// must be independent (no iteration writes what another reads or writes).
///
/// ```
/// use accel_runtime::{parallel_loop, Tensor};
/// let t = Tensor::<i32>::zeros(&[4]);
/// parallel_loop(4, |i| t.set([i], i as i32 * 10));
/// assert_eq!(t.to_vec(), vec![0, 10, 20, 30]);
/// ```
pub fn parallel_loop(n: usize, f: impl Fn(usize)) {
    if checks::active() {
        checks::checked_loop(n, &f);
    } else {
        (0..n).for_each(f)
    }
}

/// A histogram: a copy of `dest` in which every `vs[k]` is combined into bin `is[k]` with
/// `op` (`dest[is[k]] = op(dest[is[k]], vs[k])`); an index `>= dest.len()` is skipped.
/// `is` and `vs` must have equal lengths; `op` must be associative and commutative and
/// `ne` its neutral element: accelerated code combines a bin's values in any order.
///
/// ```
/// use accel_runtime::reduce_by_index;
/// let counts = reduce_by_index(vec![0u32; 3], |a, b| a + b, 0, vec![2, 0, 2, 7], vec![1, 1, 1, 1]);
/// assert_eq!(counts, vec![1, 0, 2]);
/// ```
pub fn reduce_by_index<D: Seq, I: Seq<Elem = usize>, S: Seq<Elem = D::Elem>>(
    dest: D,
    op: impl Fn(D::Elem, D::Elem) -> D::Elem,
    ne: D::Elem,
    is: I,
    vs: S,
) -> Vec<D::Elem>
where
    D::Elem: Accel + Clone,
{
    let (n, m) = (is.seq_len(), vs.seq_len());
    if n != m {
        violation(
            "reduce_by_index",
            &format!("lengths differ: {n} indices vs {m} values"),
        );
    }
    let values = vs.into_elems();
    if checks::active() {
        checks::check_monoid("reduce_by_index", &op, &ne, &values);
        checks::check_commutative("reduce_by_index", &op, &values);
    }
    let mut bins = dest.into_elems();
    for (i, v) in is.into_elems().into_iter().zip(values) {
        if let Some(bin) = bins.get_mut(i) {
            *bin = op(bin.clone(), v);
        }
    }
    bins
}

/// The elements `x` of `xs` for which `p(x)` holds, in their order.
///
/// ```
/// use accel_runtime::filter;
/// assert_eq!(filter(|x: i32| x % 2 == 0, vec![1, 2, 3, 4, 6]), vec![2, 4, 6]);
/// ```
pub fn filter<S: Seq>(p: impl Fn(S::Elem) -> bool, xs: S) -> Vec<S::Elem>
where
    S::Elem: Clone,
{
    xs.into_elems()
        .into_iter()
        .filter(|x| p(x.clone()))
        .collect()
}

/// A copy of `dest` with `vs[k]` written at `is[k]` for every `k`; an index `>= dest.len()`
/// is skipped. `is` and `vs` must have equal lengths, and no index may appear twice:
/// accelerated code writes in any order (debug mode reports both positions).
///
/// ```
/// use accel_runtime::scatter;
/// let out = scatter(vec![0i32; 4], vec![3, 0, 9], vec![30, 10, 90]);
/// assert_eq!(out, vec![10, 0, 0, 30]);
/// ```
pub fn scatter<D: Seq, I: Seq<Elem = usize>, S: Seq<Elem = D::Elem>>(
    dest: D,
    is: I,
    vs: S,
) -> Vec<D::Elem> {
    let (n, m) = (is.seq_len(), vs.seq_len());
    if n != m {
        violation(
            "scatter",
            &format!("lengths differ: {n} indices vs {m} values"),
        );
    }
    let mut out = dest.into_elems();
    let indices = is.into_elems();
    if checks::active() {
        checks::check_distinct("scatter", &indices, out.len());
    }
    for (i, v) in indices.into_iter().zip(vs.into_elems()) {
        if let Some(slot) = out.get_mut(i) {
            *slot = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_follow_their_definitions_on_edge_cases() {
        let empty: Vec<i64> = vec![];
        assert_eq!(map(|x: i64| x + 1, &empty), Vec::<i64>::new());
        assert_eq!(reduce(|a, b| a + b, 7, &empty), 7);
        assert_eq!(scan(|a, b| a + b, 0, &empty), Vec::<i64>::new());
        assert_eq!(
            scan(|a: i32, b| a.max(b), i32::MIN, vec![3, 1, 4, 1, 5]),
            vec![3, 3, 4, 4, 5]
        );
        assert_eq!(flatten(Vec::<Vec<u8>>::new()), Vec::<u8>::new());
        assert_eq!(
            reduce_by_index(
                vec![5i32, 6],
                |a, b| a + b,
                0,
                Vec::<usize>::new(),
                &empty32()
            ),
            vec![5, 6]
        );
        assert_eq!(
            reduce_by_index(
                Vec::<i32>::new(),
                |a, b| a + b,
                0,
                vec![0usize, 3],
                vec![1, 2]
            ),
            Vec::<i32>::new()
        );
        assert_eq!(
            reduce_by_index(
                vec![i32::MIN; 2],
                |a: i32, b| a.max(b),
                i32::MIN,
                vec![1usize, 1, 0, 9],
                vec![4, 7, -3, 100]
            ),
            vec![-3, 7]
        );
        assert_eq!(flatten(&vec![vec![1u8], vec![2]]), vec![1, 2]);
        assert_eq!(create(0, |i| i), Vec::<usize>::new());
        let rows = vec![vec![1, 2], vec![3, 4]];
        assert_eq!(
            reduce(
                |a: Vec<i32>, b: Vec<i32>| map2(|x, y| x + y, a, b),
                vec![0, 0],
                &rows
            ),
            vec![4, 6]
        );
    }

    fn empty32() -> Vec<i32> {
        vec![]
    }

    #[test]
    #[should_panic(expected = "reduce_by_index: lengths differ: 2 indices vs 1 values")]
    fn reduce_by_index_rejects_unequal_lengths() {
        reduce_by_index(vec![0; 4], |a: i32, b| a + b, 0, vec![1usize, 2], vec![1]);
    }

    #[test]
    #[should_panic(expected = "map2: lengths differ: 2 vs 1")]
    fn map2_rejects_unequal_lengths() {
        map2(|a: i32, b: i32| a + b, &[1, 2], &[1]);
    }

    #[test]
    #[should_panic(
        expected = "flatten: the sequence is irregular: row 0 has 2 elements, row 1 has 1"
    )]
    fn flatten_rejects_irregular_rows() {
        flatten(vec![vec![1, 2], vec![3]]);
    }
}
