//! Columns built from a captured sequence of tuples or records (compiled code reads
//! structures of arrays): one per part, in parallel for long sequences, in memory kept
//! from earlier calls, so that a site called again with a `Vec` of pairs copies them at
//! memory speed instead of page-faulting fresh columns every call.

use super::Accel;
use crate::backend::abi::{advise_huge_pages, Marshal};
use std::alloc::Layout;
use std::sync::Mutex;

/// Elements from this many have their parts' columns built in parallel.
const PARALLEL_COLUMNS: usize = 1 << 15;

/// The most bytes of columns kept for later calls (the least recently kept go first).
const SPARE_BYTES: usize = 256 << 20;

/// Column memory given back by finished runs: its address and layout, most recent last.
static SPARES: Mutex<Vec<(usize, Layout)>> = Mutex::new(Vec::new());

/// Builds the column of one part of every element, marshals it and keeps it alive. Long
/// sequences are split in parallel into memory an earlier call used: a `Vec` of 8M `(f32,
/// f32)` pairs took 25 ms a column on one thread in fresh memory, seven times a dot
/// product's kernel.
pub fn marshal_part<'m, T: Sync, F: Accel + 'm>(
    xs: &[T],
    part: impl Fn(&T) -> F + Sync,
    m: &mut Marshal<'m>,
) {
    m.copied += std::mem::size_of::<F>() * xs.len();
    if xs.len() < PARALLEL_COLUMNS {
        let column: Vec<F> = xs.iter().map(part).collect();
        F::marshal_columns(&column, m);
        m.keep.push(Box::new(column));
        return;
    }
    use rayon::prelude::*;
    let mut column = Spare(spare_vec::<F>(xs.len()));
    xs.par_iter()
        .with_min_len(PARALLEL_COLUMNS / 4)
        .map(&part)
        .collect_into_vec(&mut column.0);
    F::marshal_columns(&column.0, m);
    m.keep.push(Box::new(column));
}

/// An empty `Vec` with room for exactly `n` elements: memory a finished run gave back with
/// that layout, else new memory (with huge pages where the system gives them).
fn spare_vec<F>(n: usize) -> Vec<F> {
    let Ok(layout) = Layout::array::<F>(n) else {
        return Vec::with_capacity(n);
    };
    let found = {
        let mut spares = SPARES.lock().unwrap_or_else(|e| e.into_inner());
        let k = spares.iter().rposition(|&(_, l)| l == layout);
        k.map(|k| spares.remove(k).0)
    };
    match found {
        // SAFETY: the global allocator allocated `p` with `layout`, the layout of `n`
        // elements of `F` (a `Vec<G>` of that capacity, `G` of `F`'s size and alignment,
        // gave it back, see `Spare`), and nothing else holds it since it was removed from
        // the spares.
        Some(p) if layout.size() > 0 => unsafe { Vec::from_raw_parts(p as *mut F, 0, n) },
        _ => {
            let mut v = Vec::with_capacity(n);
            advise_huge_pages(v.as_mut_ptr() as *mut u8, layout.size());
            v
        }
    }
}

/// A column whose memory goes back to the spares when the run is over.
struct Spare<F>(Vec<F>);

impl<F> Drop for Spare<F> {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.0);
        v.clear();
        let Ok(layout) = Layout::array::<F>(v.capacity()) else {
            return;
        };
        if layout.size() == 0 || layout.size() > SPARE_BYTES {
            return;
        }
        let p = v.as_mut_ptr() as usize;
        std::mem::forget(v);
        let mut spares = SPARES.lock().unwrap_or_else(|e| e.into_inner());
        spares.push((p, layout));
        let mut total: usize = spares.iter().map(|(_, l)| l.size()).sum();
        while total > SPARE_BYTES {
            let (old, l) = spares.remove(0);
            total -= l.size();
            // SAFETY: `old` was allocated by the global allocator with `l` (see above) and
            // is no longer among the spares.
            unsafe { std::alloc::dealloc(old as *mut u8, l) };
        }
    }
}
