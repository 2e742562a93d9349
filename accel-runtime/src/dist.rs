//! Distributed sequences: [`DistVec`], a sequence whose parts live on the ranks of a
//! [`Communicator`] (MPI processes through the accel-mpi crate, or threads through
//! [`crate::comm::threads`]), each rank holding one consecutive part.
//!
//! An `accelerate!` site that captures a `DistVec` means what it would mean with the whole
//! sequence captured; it runs each rank's part where the site ends in an operation that
//! splits (`map`, `map2`, `create`, `reduce`, `scan`, `filter`, `reduce_by_index`,
//! `scatter`) and combines the parts with collectives. The guide's chapter on distributed
//! sequences says what each operation sends.

use crate::accel_type::Accel;
use crate::backend::abi::{Arena, DistCapture, Marshal, Touch, Unmarshal};
use crate::backend::layout;
use crate::comm::{self, Communicator};
use crate::seq::Seq;
use crate::structure::{CheckCtx, ValuePath};
use accel_ir::Type;
use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// A sequence spread across the ranks of a communicator: rank `r` holds the elements
/// `starts()[r]..starts()[r + 1]`, in ordinary memory.
///
/// Its elements are flat: scalars, tuples, arrays and records of them.
///
/// ```
/// use accel_runtime::prelude::*;
/// use accel_runtime::{comm::threads::ranks, DistVec};
/// // Three ranks (threads here; processes under MPI), each holding a third of 0..300.
/// let results = ranks(3, |comm| {
///     let mine: Vec<f64> = DistVec::<f64>::even_range(&comm, 300).map(|i| i as f64).collect();
///     let xs = DistVec::from_local(&comm, mine);
///     // A reduce over the whole sequence: the same value on every rank.
///     let total: f64 = accelerate!(reduce(|a, b| a + b, 0.0, &xs));
///     // A map keeps the partition: each rank computes and holds its own part.
///     let squares = DistVec::from_site(&comm, || accelerate!(map(|x| x * x, &xs)));
///     (total, squares.local().len(), squares.gather()[299])
/// });
/// assert_eq!(results, vec![(44_850.0, 100, 89_401.0); 3]);
/// ```
pub struct DistVec<T> {
    local: Vec<T>,
    starts: Arc<[usize]>,
    comm: Arc<dyn Communicator>,
    /// The whole sequence, once the sequential path (debug mode) has gathered it.
    whole: OnceLock<Vec<T>>,
}

/// The sizes of the columns of a sequence of `T`, or why its elements are not flat.
fn column_sizes<T: Accel>() -> Result<Vec<usize>, String> {
    let t = T::accel_type();
    let columns = layout::flat_columns(&t).map_err(|_| {
        format!("a distributed sequence's elements must be flat (scalars, tuples, arrays, records of them), not {t}")
    })?;
    Ok(columns.into_iter().map(layout::size_of).collect())
}

/// The sizes of `T`'s columns; panics (naming the type) where `T` is not flat.
fn flat_columns<T: Accel>() -> Vec<usize> {
    column_sizes::<T>().unwrap_or_else(|e| panic!("DistVec: {e}"))
}

/// Runs `f` on the columns of `xs` (their addresses and byte lengths).
fn with_columns<T: Accel, R>(xs: &[T], f: impl FnOnce(&[(usize, usize)]) -> R) -> R {
    let sizes = flat_columns::<T>();
    let mut m = Marshal::default();
    T::marshal_columns(xs, &mut m);
    let columns: Vec<(usize, usize)> = m
        .words
        .iter()
        .zip(&sizes)
        .map(|(&p, &s)| (p as usize, xs.len() * s))
        .collect();
    f(&columns)
}

/// `len` elements read from columns that `fill` writes (column `k` of `sizes[k]`-byte
/// elements, given as a byte slice).
fn from_columns<T: Accel>(len: usize, fill: impl Fn(usize, &mut [u8])) -> Vec<T> {
    let sizes = flat_columns::<T>();
    let mut arena = Arena::default();
    let mut words = Vec::with_capacity(sizes.len());
    for (k, &size) in sizes.iter().enumerate() {
        let p = arena.alloc_own(len * size, size, Touch::Whole);
        assert!(
            !p.is_null(),
            "DistVec: could not allocate {} bytes",
            len * size
        );
        // Every rank fills every column, empty or not: filling is a collective.
        // SAFETY: `p` is a fresh allocation of `len * size` bytes (dangling but aligned
        // and non-null for none).
        fill(k, unsafe { std::slice::from_raw_parts_mut(p, len * size) });
        words.push(p as u64);
    }
    let mut u = Unmarshal {
        words: &words,
        at: 0,
        arena: &mut arena,
        rows: false,
    };
    T::unmarshal_columns(len, &mut u).unwrap_or_else(|e| panic!("DistVec: {e}"))
}

/// A column's bytes.
///
/// # Safety
/// `(ptr, bytes)` is a column of a live slice (`with_columns`).
unsafe fn column_bytes<'a>((ptr, bytes): (usize, usize)) -> &'a [u8] {
    if bytes == 0 {
        &[]
    } else {
        // SAFETY: the caller's column holds `bytes` initialised bytes at `ptr`.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, bytes) }
    }
}

impl<T: Accel + Clone> DistVec<T> {
    /// The sequence whose part on each rank is `local` (collective: the ranks exchange
    /// their parts' lengths).
    ///
    /// # Panics
    /// Where `T` is not flat (a `Vec`, a tensor).
    pub fn from_local(comm: &Arc<dyn Communicator>, local: Vec<T>) -> DistVec<T> {
        flat_columns::<T>();
        let lengths: Vec<usize> = comm::all_gather_words(&**comm, local.len() as u64)
            .into_iter()
            .map(|l| l as usize)
            .collect();
        DistVec {
            local,
            starts: comm::starts_of(&lengths).into(),
            comm: Arc::clone(comm),
            whole: OnceLock::new(),
        }
    }

    /// The sequence `whole`, which every rank holds alike, spread evenly: each rank keeps
    /// its part (no communication).
    pub fn from_whole(comm: &Arc<dyn Communicator>, whole: &[T]) -> DistVec<T> {
        flat_columns::<T>();
        let starts = comm::even_starts(whole.len(), comm.size());
        let r = comm.rank();
        DistVec {
            local: whole[starts[r]..starts[r + 1]].to_vec(),
            starts: starts.into(),
            comm: Arc::clone(comm),
            whole: OnceLock::new(),
        }
    }

    /// Rank `root`'s `whole` (`Some` on the root, `None` elsewhere) spread evenly across
    /// the ranks (collective: each rank receives its part only).
    pub fn scatter_from(
        comm: &Arc<dyn Communicator>,
        root: usize,
        whole: Option<&[T]>,
    ) -> DistVec<T> {
        let mine = whole.map_or(0, |w| w.len() as u64);
        let n = comm::all_gather_words(&**comm, mine)[root] as usize;
        let starts = comm::even_starts(n, comm.size());
        let r = comm.rank();
        let len = starts[r + 1] - starts[r];
        let sizes = flat_columns::<T>();
        let scatter = |columns: Option<&[(usize, usize)]>| {
            from_columns::<T>(len, |k, out| {
                // SAFETY: the root's columns come from `with_columns` over `whole`.
                let data = columns.map(|c| unsafe { column_bytes(c[k]) });
                comm.scatter_into(root, data, &comm::byte_counts(&starts, sizes[k]), out)
            })
        };
        let local = match whole {
            Some(w) if r == root => with_columns(w, |c| scatter(Some(c))),
            _ => scatter(None),
        };
        DistVec {
            local,
            starts: starts.into(),
            comm: Arc::clone(comm),
            whole: OnceLock::new(),
        }
    }

    /// The range of `0..n` that this rank holds when `n` elements are spread evenly (what
    /// [`from_whole`](DistVec::from_whole) and [`scatter_from`](DistVec::scatter_from)
    /// give it): build the local part of a large sequence without making all of it.
    pub fn even_range(comm: &Arc<dyn Communicator>, n: usize) -> Range<usize> {
        let s = comm::even_starts(n, comm.size());
        s[comm.rank()]..s[comm.rank() + 1]
    }

    /// The whole sequence, on every rank (collective).
    pub fn gather(&self) -> Vec<T> {
        let sizes = flat_columns::<T>();
        let n = self.len();
        with_columns(&self.local, |columns| {
            from_columns(n, |k, out| {
                // SAFETY: `columns` come from `with_columns` over `self.local`.
                let mine = unsafe { column_bytes(columns[k]) };
                self.comm
                    .all_gather_into(mine, &comm::byte_counts(&self.starts, sizes[k]), out)
            })
        })
    }

    /// The whole sequence as the sequential path reads it: gathered at its first use (a
    /// collective, which every rank's sequential run makes alike) and kept.
    fn gathered(&self) -> &Vec<T> {
        self.whole.get_or_init(|| self.gather())
    }

    /// The whole sequence on rank `root` (`None` on the others; collective).
    pub fn gather_to(&self, root: usize) -> Option<Vec<T>> {
        let sizes = flat_columns::<T>();
        let counts = |k: usize| comm::byte_counts(&self.starts, sizes[k]);
        with_columns(&self.local, |columns| {
            // SAFETY: `columns` come from `with_columns` over `self.local`.
            let mine = |k: usize| unsafe { column_bytes(columns[k]) };
            if self.comm.rank() == root {
                Some(from_columns(self.len(), |k, out| {
                    self.comm.gather_into(root, mine(k), &counts(k), Some(out))
                }))
            } else {
                for k in 0..sizes.len() {
                    self.comm.gather_into(root, mine(k), &counts(k), None);
                }
                None
            }
        })
    }

    /// The same sequence spread evenly (a `filter`'s result keeps each rank's kept
    /// elements where they were; collective: each rank receives only the elements of its
    /// new part that another rank held).
    pub fn rebalance(&self) -> DistVec<T> {
        let sizes = flat_columns::<T>();
        let new = comm::even_starts(self.len(), self.comm.size());
        let r = self.comm.rank();
        let local = with_columns(&self.local, |columns| {
            from_columns(new[r + 1] - new[r], |k, out| {
                // SAFETY: `columns` come from `with_columns` over `self.local`.
                let mine = unsafe { column_bytes(columns[k]) };
                comm::redistribute(&*self.comm, mine, &self.starts, &new, sizes[k], out)
            })
        });
        DistVec {
            local,
            starts: new.into(),
            comm: Arc::clone(&self.comm),
            whole: OnceLock::new(),
        }
    }

    /// The sequence a site makes (`f` runs one `accelerate!` site), kept distributed: where
    /// the site runs split, each rank keeps the part it computed (a `map`'s result has its
    /// input's partition; a `filter`'s each rank's kept elements); where it runs whole
    /// (debug mode, or a site that does not split), every rank keeps its even part of the
    /// whole result. Either way [`gather`](DistVec::gather) gives the same sequence. A
    /// site that captures no `DistVec` (`create(n, ..)`) runs split too: each rank computes
    /// its even part.
    ///
    /// # Panics
    /// Where `f` runs more or fewer than one site (its result could not be told apart
    /// from a part of another's).
    pub fn from_site(comm: &Arc<dyn Communicator>, f: impl FnOnce() -> Vec<T>) -> DistVec<T> {
        /// Puts back what `KEEP` was, also when `f` panics (a site that failed).
        struct Restore(Option<Arc<dyn Communicator>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                KEEP.set(self.0.take());
            }
        }
        let before = SITES.get();
        let restore = Restore(KEEP.replace(Some(Arc::clone(comm))));
        KEPT.take();
        let v = f();
        drop(restore);
        let sites = SITES.get() - before;
        assert!(
            sites == 1,
            "DistVec::from_site runs exactly one accelerate! site; its closure ran {sites}"
        );
        match KEPT.take() {
            Some(starts) if v.len() == starts[comm.rank() + 1] - starts[comm.rank()] => DistVec {
                local: v,
                starts,
                comm: Arc::clone(comm),
                whole: OnceLock::new(),
            },
            _ => DistVec::from_whole(comm, &v),
        }
    }
}

impl<T> DistVec<T> {
    /// This rank's part.
    pub fn local(&self) -> &[T] {
        &self.local
    }

    /// This rank's part, by value.
    pub fn into_local(self) -> Vec<T> {
        self.local
    }

    /// The whole sequence's length.
    pub fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// Whether the whole sequence is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indices of the whole sequence that this rank holds.
    pub fn range(&self) -> Range<usize> {
        let r = self.comm.rank();
        self.starts[r]..self.starts[r + 1]
    }

    /// Where each rank's part begins, and the length at the end (`size + 1` entries).
    pub fn starts(&self) -> &[usize] {
        &self.starts
    }

    /// The communicator of the ranks that hold the sequence.
    pub fn comm(&self) -> &Arc<dyn Communicator> {
        &self.comm
    }
}

/// Each rank's part copied (no communication).
impl<T: Clone> Clone for DistVec<T> {
    fn clone(&self) -> Self {
        DistVec {
            local: self.local.clone(),
            starts: Arc::clone(&self.starts),
            comm: Arc::clone(&self.comm),
            whole: self.whole.clone(),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for DistVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistVec")
            .field("rank", &self.comm.rank())
            .field("range", &self.range())
            .field("len", &self.len())
            .field("local", &self.local)
            .finish()
    }
}

thread_local! {
    /// The ranks every captured sequence is spread over (a test hook: see
    /// [`with_sequences_spread`]).
    static SPREAD: RefCell<Option<Arc<dyn Communicator>>> = const { RefCell::new(None) };
    /// The ranks a site's sequence result stays spread over (inside
    /// [`DistVec::from_site`]).
    static KEEP: RefCell<Option<Arc<dyn Communicator>>> = const { RefCell::new(None) };
    /// The partition of the part a distributed site kept.
    static KEPT: RefCell<Option<Arc<[usize]>>> = const { RefCell::new(None) };
    /// Sites called on this thread.
    static SITES: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f` with every captured sequence of flat elements treated as spread evenly over
/// `comm`'s ranks, each rank reading its part in place (every rank holds the whole
/// sequence alike: the usual SPMD program with its data replicated). A test hook: any
/// program then runs its sites as distributed sites, whose results must be the same.
pub fn with_sequences_spread<R>(comm: Arc<dyn Communicator>, f: impl FnOnce() -> R) -> R {
    let before = SPREAD.replace(Some(comm));
    struct Restore(Option<Arc<dyn Communicator>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SPREAD.set(self.0.take());
        }
    }
    let _restore = Restore(before);
    f()
}

/// Whether captured sequences are spread over ranks on this thread.
pub(crate) fn spreading() -> bool {
    SPREAD.with_borrow(Option::is_some)
}

/// The ranks captured sequences are spread over on this thread, if any
/// ([`with_sequences_spread`]), and whether a value of type `t` is spread (a sequence of
/// flat elements).
pub(crate) fn spread_over(t: &Type) -> Option<Arc<dyn Communicator>> {
    layout::flat_sequence_sizes(t)?;
    SPREAD.with_borrow(|s| s.clone())
}

/// Records captured sequence words at `word` (of a sequence of type `t`, whole on every
/// rank) as spread evenly over `comm`: its words already address element 0 of the whole.
pub(crate) fn spread_capture(
    m: &mut Marshal<'_>,
    word: usize,
    t: &Type,
    comm: Arc<dyn Communicator>,
) {
    let Some(sizes) = layout::flat_sequence_sizes(t) else {
        return;
    };
    let len = m.words[word] as usize;
    m.distributed.push(DistCapture {
        word,
        sizes,
        starts: comm::even_starts(len, comm.size()).into(),
        comm,
    });
}

/// Counts a site's call (every call, whatever runs it).
pub(crate) fn site_called() {
    SITES.set(SITES.get() + 1);
}

/// Whether the site running on this thread keeps a sequence result distributed.
pub(crate) fn keeps_parts() -> bool {
    KEEP.with_borrow(Option::is_some)
}

/// The ranks the site running on this thread keeps its sequence result spread over.
pub(crate) fn keeping_over() -> Option<Arc<dyn Communicator>> {
    KEEP.with_borrow(|k| k.clone())
}

/// Records the partition of the part a site kept ([`keeps_parts`]).
pub(crate) fn kept(starts: Vec<usize>) {
    KEPT.set(Some(starts.into()));
}

/// The whole sequence, as the sequential path (debug mode) reads it: gathered from every
/// rank (a collective, which every rank's sequential run makes alike).
impl<T: Accel + Clone> Seq for &DistVec<T> {
    type Elem = T;
    fn seq_len(&self) -> usize {
        self.len()
    }
    fn into_elems(self) -> Vec<T> {
        self.gathered().clone()
    }
}

/// `.par_iter()` on a `DistVec` in the sequential path (debug mode): the elements of the
/// whole sequence, gathered once.
impl<'a, T: Accel + Clone + 'a> crate::chains::ChainSource<'a> for DistVec<T> {
    type Iter = std::slice::Iter<'a, T>;
    fn chain_iter(&'a self) -> Self::Iter {
        self.gathered().iter()
    }
}

impl<T: Accel + Clone> Seq for DistVec<T> {
    type Elem = T;
    fn seq_len(&self) -> usize {
        self.len()
    }
    fn into_elems(self) -> Vec<T> {
        self.gather()
    }
}

impl<T: Accel + Clone> Accel for DistVec<T> {
    const NESTED: bool = true;
    fn accel_type() -> Type {
        Type::Seq(Box::new(T::accel_type()))
    }
    fn write_value(&self, out: &mut String) {
        let r = self.range();
        out.push_str(&format!(
            "DistVec(rank {}: {}..{} of {}: ",
            self.comm.rank(),
            r.start,
            r.end,
            self.len()
        ));
        self.local.write_value(out);
        out.push(')');
    }
    fn close_to(&self, other: &Self, inputs: &[&Self]) -> bool {
        let locals: Vec<&Vec<T>> = inputs.iter().map(|x| &x.local).collect();
        self.starts == other.starts && self.local.close_to(&other.local, &locals)
    }
    fn check(&self, path: &ValuePath<'_>, ctx: &mut CheckCtx) -> Result<(), String> {
        self.local.check(path, ctx)
    }
    fn seq_len(&self) -> Option<usize> {
        Some(self.len())
    }
    fn clone_value(&self) -> Self {
        self.clone()
    }
    fn distributed_over(&self) -> Option<Arc<dyn Communicator>> {
        Some(Arc::clone(&self.comm))
    }
    /// The whole sequence's length, then each column's address shifted back by this
    /// rank's start (integers only: compiled code reads a column only after the part's
    /// start is added back, within this rank's part; see `devices::distributed`).
    fn marshal<'a>(&'a self, m: &mut Marshal<'a>) {
        let sizes = match column_sizes::<T>() {
            Ok(s) => s,
            Err(e) => return m.fail(e),
        };
        let word = m.words.len();
        m.push(self.len() as u64);
        T::marshal_columns(&self.local, m);
        let start = self.range().start;
        for (k, size) in sizes.iter().enumerate() {
            let w = &mut m.words[word + 1 + k];
            *w = w.wrapping_sub((start * size) as u64);
        }
        m.bytes += self.local.len() * sizes.iter().sum::<usize>();
        m.distributed.push(DistCapture {
            word,
            sizes,
            starts: Arc::clone(&self.starts),
            comm: Arc::clone(&self.comm),
        });
    }
    fn marshal_columns<'m>(_: &[Self], m: &mut Marshal<'m>)
    where
        Self: 'm,
    {
        m.fail("a sequence of distributed sequences cannot be captured".into());
    }
    fn unmarshal(_: &mut Unmarshal<'_>) -> Result<Self, String> {
        Err("a site's result is not a DistVec: take it as a Vec, or keep it distributed with DistVec::from_site".into())
    }
    fn unmarshal_columns(_: usize, _: &mut Unmarshal<'_>) -> Result<Vec<Self>, String> {
        Err("a site's result cannot hold distributed sequences".into())
    }
}
