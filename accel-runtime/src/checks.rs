//! Debug mode's checks of the assumptions no static rule can verify (the paper leaves the
//! hardest to the user; here they are checked): `reduce`/`scan` operators are associative
//! with `ne` neutral (on a sample of the actual inputs), `parallel_loop` iterations are
//! independent (every tensor element an iteration writes is touched by no other iteration;
//! iterations run in a shuffled order), nested sequences are regular, tensors are within
//! the rank bound. A violation panics naming the site, the operation, the assumption and
//! the offending values or indices. In the accelerated modes the checks are off.
//!
//! Costs stay proportionate to the work checked: a fixed number of samples per `reduce` or
//! `scan`, one hash-map entry per tensor element a checked loop touches, one pass over
//! nested sequences.

use crate::accel_type::{Accel, Inspect};
use crate::report::violation;
use crate::structure::{max_tensor_rank, rank_message, CheckCtx, TensorName, ValuePath};
use std::cell::{Cell, RefCell};

/// "No iteration" in a [`Claims`] slot.
const NONE: usize = usize::MAX;

/// The iterations that touched one tensor element.
#[derive(Clone, Copy)]
struct Claims {
    writer: usize,
    /// Up to two distinct reading iterations: enough to know whether a writer conflicts.
    readers: [usize; 2],
}

const UNCLAIMED: Claims = Claims {
    writer: NONE,
    readers: [NONE, NONE],
};

/// Records, for one checked `parallel_loop`, who touched which element: one dense array of
/// claims per buffer touched, indexed by element.
struct Recorder {
    iteration: usize,
    /// Per buffer id; a loop touches few buffers, so a list beats hashing.
    claims: Vec<(usize, Vec<Claims>)>,
}

/// The checking state of the site running on this thread.
struct State {
    tensors: Vec<TensorName>,
    /// One recorder per enclosing checked `parallel_loop`, outermost first.
    recorders: Vec<Recorder>,
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static STATE: RefCell<State> = const { RefCell::new(State { tensors: Vec::new(), recorders: Vec::new() }) };
}

/// Whether debug-mode checks are on for this thread (a debug-mode site is running).
pub(crate) fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// Inspects the captured values of a site; returns the tensors they hold, to name them.
pub(crate) fn inspect_captures(
    captures: &[(&str, &dyn Inspect)],
) -> Result<Vec<TensorName>, String> {
    let mut ctx = CheckCtx::new(max_tensor_rank());
    for (name, value) in captures {
        value.inspect(name, &mut ctx)?;
    }
    Ok(ctx.tensors)
}

/// Turns checks on for the duration of a site's run; restores the previous state on drop.
pub(crate) struct Enabled {
    previous: bool,
    previous_tensors: Vec<TensorName>,
}

pub(crate) fn enable(tensors: Vec<TensorName>) -> Enabled {
    let previous = ACTIVE.with(|a| a.replace(true));
    let previous_tensors = STATE.with(|s| std::mem::replace(&mut s.borrow_mut().tensors, tensors));
    Enabled {
        previous,
        previous_tensors,
    }
}

impl Drop for Enabled {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.previous));
        STATE.with(|s| s.borrow_mut().tensors = std::mem::take(&mut self.previous_tensors));
    }
}

/// Checks the structure of a site's result.
pub(crate) fn check_result<R: Accel>(result: &R) -> Result<(), String> {
    if R::NESTED {
        let mut ctx = CheckCtx::new(max_tensor_rank());
        result.check(&ValuePath::root("the result"), &mut ctx)?;
    }
    Ok(())
}

/// Checks a tensor created inside checked code against the rank bound.
pub(crate) fn check_new_tensor(shape: &[usize]) {
    if active() {
        let max = max_tensor_rank();
        if shape.len() > max {
            violation("Tensor", &rank_message("a tensor created here", shape, max));
        }
    }
}

/// A small deterministic generator for samples and shuffles (reproducible messages).
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Samples per check: the first, last and random elements.
const SAMPLES: usize = 8;

fn show<T: Accel>(x: &T) -> String {
    let mut s = String::new();
    x.write_value(&mut s);
    s
}

/// Checks on a sample of `xs` that `ne` is neutral for `op` and `op` is associative.
pub(crate) fn check_monoid<T: Accel + Clone>(
    what: &str,
    op: &impl Fn(T, T) -> T,
    ne: &T,
    xs: &[T],
) {
    if xs.is_empty() {
        return;
    }
    let n = xs.len();
    let mut rng = XorShift::new(n as u64);
    let mut pick = |k: usize| match k {
        0 => 0,
        1 => n - 1,
        _ => rng.below(n),
    };
    let sample: Vec<&T> = (0..SAMPLES.min(n)).map(|k| &xs[pick(k)]).collect();
    // Each sampled value `ne` is not neutral for, with the side that shows it.
    let failures: Vec<(&T, &str, T)> = sample
        .iter()
        .filter_map(|&x| {
            [
                ("op(ne, x)", op(ne.clone(), x.clone())),
                ("op(x, ne)", op(x.clone(), ne.clone())),
            ]
            .into_iter()
            .find(|(_, got)| !got.close_to(x, &[ne]))
            .map(|(side, got)| (x, side, got))
        })
        .collect();
    // They are fine when each is neutral itself (see `is_another_neutral`); else the first
    // is reported.
    if let Some((x, side, got)) = failures.first() {
        if !failures
            .iter()
            .all(|(x, ..)| is_another_neutral(op, ne, x, &sample))
        {
            violation(
                what,
                &format!(
                    "ne is not a neutral element of op: {side} = {} but x = {} (ne = {})",
                    show(got),
                    show(*x),
                    show(ne)
                ),
            );
        }
    }
    if n < 2 {
        return;
    }
    for k in 0..SAMPLES {
        let i = if k == 0 { 0 } else { rng.below(n - 1) };
        let (a, b) = (&xs[i], &xs[i + 1]);
        let c = &xs[rng.below(n)];
        let left = op(op(a.clone(), b.clone()), c.clone());
        let right = op(a.clone(), op(b.clone(), c.clone()));
        if !left.close_to(&right, &[a, b, c]) {
            violation(
                what,
                &format!(
                    "op is not associative: op(op(a, b), c) = {} but op(a, op(b, c)) = {} for a = {}, b = {}, c = {}",
                    show(&left),
                    show(&right),
                    show(a),
                    show(b),
                    show(c)
                ),
            );
        }
    }
}

/// Whether `x`, though `ne` is not neutral for it, is neutral itself on the sample, with
/// `ne` idempotent: then putting `ne` next to `x` cannot change a reduction, whatever its
/// grouping (a NaN under `f32::min`, which ignores NaNs: `min(∞, NaN) = ∞`, yet a min
/// reduction with `ne = ∞` is the same in every grouping).
fn is_another_neutral<T: Accel + Clone>(
    op: &impl Fn(T, T) -> T,
    ne: &T,
    x: &T,
    sample: &[&T],
) -> bool {
    let absorbs = |a: &T, b: &T, want: &T| op(a.clone(), b.clone()).close_to(want, &[]);
    absorbs(ne, ne, ne)
        && absorbs(ne, x, ne)
        && absorbs(x, ne, ne)
        && sample.iter().all(|&y| absorbs(x, y, y) && absorbs(y, x, y))
}

/// Checks on sampled elements of `xs` that `ne` is a left neutral element of `op`, for a
/// fold whose elements (`X`, perhaps references) are not accumulators (`T`): `op(ne, x)`
/// must be `x` itself (`owned(x)`).
pub(crate) fn check_left_neutral<T: Accel + Clone, X: Clone>(
    what: &str,
    op: &impl Fn(T, X) -> T,
    ne: &T,
    xs: &[X],
    owned: impl Fn(&X) -> T,
) {
    let n = xs.len();
    let mut rng = XorShift::new(n as u64);
    for k in 0..SAMPLES.min(n) {
        let x = &xs[if k == 0 { 0 } else { rng.below(n) }];
        let got = op(ne.clone(), x.clone());
        let want = owned(x);
        if !got.close_to(&want, &[ne]) {
            violation(
                what,
                &format!(
                    "ne is not a neutral element of op: op(ne, x) = {} but x = {} (ne = {})",
                    show(&got),
                    show(&want),
                    show(ne)
                ),
            );
        }
    }
}

/// Checks on sampled pairs of `xs` that `op` is commutative (what `reduce_by_index`
/// assumes besides a monoid: bins combine their values in any order).
pub(crate) fn check_commutative<T: Accel + Clone>(what: &str, op: &impl Fn(T, T) -> T, xs: &[T]) {
    let n = xs.len();
    if n < 2 {
        return;
    }
    let mut rng = XorShift::new(n as u64 ^ 0x5bd1_e995);
    for k in 0..SAMPLES {
        let (i, j) = if k == 0 {
            (0, n - 1)
        } else {
            (rng.below(n), rng.below(n))
        };
        let (a, b) = (&xs[i], &xs[j]);
        let ab = op(a.clone(), b.clone());
        let ba = op(b.clone(), a.clone());
        if !ab.close_to(&ba, &[a, b]) {
            violation(
                what,
                &format!(
                    "op is not commutative: op(a, b) = {} but op(b, a) = {} for a = {}, b = {}",
                    show(&ab),
                    show(&ba),
                    show(a),
                    show(b)
                ),
            );
        }
    }
}

/// Checks that no index below `len` appears twice in `is` (what `scatter` assumes: its
/// writes happen in any order); reports the first repeated index with both positions.
pub(crate) fn check_distinct(what: &str, is: &[usize], len: usize) {
    let mut first_at = vec![usize::MAX; len];
    for (k, &i) in is.iter().enumerate() {
        let Some(seen) = first_at.get_mut(i) else {
            continue;
        };
        if *seen != usize::MAX {
            violation(
                what,
                &format!(
                    "index {i} appears twice, at positions {} and {k} of the indices",
                    *seen
                ),
            );
        }
        *seen = k;
    }
}

/// Iterations per block of the shuffled order.
const BLOCK: usize = 64;

/// `0..n` out of order at every distance, yet with locality: blocks of [`BLOCK`]
/// iterations in a random order, each block run backwards.
fn shuffled_order(n: usize) -> Vec<usize> {
    let blocks = n.div_ceil(BLOCK);
    let mut block_order: Vec<usize> = (0..blocks).collect();
    let mut rng = XorShift::new(n as u64 ^ 0x5EED);
    for i in (1..blocks).rev() {
        block_order.swap(i, rng.below(i + 1));
    }
    block_order
        .into_iter()
        .flat_map(|b| (b * BLOCK..((b + 1) * BLOCK).min(n)).rev())
        .collect()
}

/// Runs a `parallel_loop` with its iterations in a shuffled order, recording the tensor
/// elements each reads and writes and reporting any element one iteration writes and
/// another reads or writes.
pub(crate) fn checked_loop(n: usize, f: &impl Fn(usize)) {
    let order = shuffled_order(n);
    STATE.with(|s| {
        s.borrow_mut().recorders.push(Recorder {
            iteration: 0,
            claims: Vec::new(),
        })
    });
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            STATE.with(|s| s.borrow_mut().recorders.pop());
        }
    }
    let _pop = Pop;
    for i in order {
        STATE.with(|s| {
            if let Some(r) = s.borrow_mut().recorders.last_mut() {
                r.iteration = i;
            }
        });
        f(i);
    }
}

/// Records a read or write of element `offset` of the buffer `buffer` (of `len` elements)
/// by the current iteration of every enclosing checked loop.
/// Callers check [`active`] first.
pub(crate) fn record_access(buffer: usize, len: usize, offset: usize, write: bool) {
    let conflict = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let mut conflict = None;
        for r in s.recorders.iter_mut() {
            let it = r.iteration;
            let k = match r.claims.iter().position(|(b, _)| *b == buffer) {
                Some(k) => k,
                None => {
                    r.claims.push((buffer, vec![UNCLAIMED; len]));
                    r.claims.len() - 1
                }
            };
            let claims = &mut r.claims[k].1;
            let Some(c) = claims.get_mut(offset) else {
                continue;
            };
            let other_reader = c.readers.iter().copied().find(|&j| j != NONE && j != it);
            let found = if c.writer != NONE && c.writer != it {
                let j = c.writer;
                Some(if write {
                    format!("iterations {} and {} both write", j.min(it), j.max(it))
                } else {
                    format!("iteration {it} reads, and iteration {j} writes,")
                })
            } else if let (true, Some(j)) = (write, other_reader) {
                Some(format!("iteration {j} reads, and iteration {it} writes,"))
            } else {
                None
            };
            if write {
                c.writer = it;
            } else if c.readers[0] == NONE {
                c.readers[0] = it;
            } else if c.readers[0] != it && c.readers[1] == NONE {
                c.readers[1] = it;
            }
            if conflict.is_none() {
                conflict = found;
            }
        }
        conflict.map(|c| (c, element_name(&s.tensors, buffer, offset)))
    });
    if let Some((what, element)) = conflict {
        violation(
            "parallel_loop",
            &format!("{what} {element}: iterations must be independent"),
        );
    }
}

/// `t[1, 2]` for the first captured view that holds the element, else a description.
fn element_name(tensors: &[TensorName], buffer: usize, offset: usize) -> String {
    for t in tensors.iter().filter(|t| t.buffer == buffer) {
        let len: usize = t.shape.iter().product();
        if offset >= t.offset && offset < t.offset + len {
            let mut rest = offset - t.offset;
            let mut index = vec![0; t.shape.len()];
            for (k, &d) in t.shape.iter().enumerate().rev() {
                index[k] = rest % d;
                rest /= d;
            }
            let index: Vec<String> = index.iter().map(usize::to_string).collect();
            return format!("{}[{}]", t.name, index.join(", "));
        }
    }
    format!("element {offset} of a tensor created inside the site")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_names_use_the_captured_view_that_holds_them() {
        let tensors = vec![
            TensorName {
                name: "a".into(),
                buffer: 1,
                offset: 2,
                shape: vec![2, 3],
            },
            TensorName {
                name: "b".into(),
                buffer: 2,
                offset: 0,
                shape: vec![4],
            },
        ];
        assert_eq!(element_name(&tensors, 1, 7), "a[1, 2]");
        assert_eq!(element_name(&tensors, 2, 3), "b[3]");
        assert_eq!(
            element_name(&tensors, 1, 0),
            "element 0 of a tensor created inside the site"
        );
    }

    #[test]
    fn shuffled_orders_are_permutations_out_of_order() {
        for n in [0, 1, 2, 63, 64, 65, 1000] {
            let order = shuffled_order(n);
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            // Neighbours run in reverse, so no iteration directly follows its predecessor.
            assert!(order.windows(2).all(|w| w[1] != w[0] + 1), "{order:?}");
        }
        let order = shuffled_order(1000);
        assert_ne!(
            order[..BLOCK].to_vec(),
            (0..BLOCK).rev().collect::<Vec<_>>(),
            "blocks are shuffled too"
        );
    }
}
