//! A sequence result in rows (see `layout::row_leaves`): compiled code wrote each
//! element's scalars side by side, as Rust lays out a tuple or an array of them. Where
//! the element type's Rust layout is exactly that, the `Vec` adopts the memory as it is;
//! elsewhere (a record, whose layout Rust may reorder) each element is read from its
//! scalars.

use super::Accel;
use crate::backend::abi::{Arena, Unmarshal};
use crate::backend::layout::row_leaves;
use std::cell::Cell;

/// Elements from this many are read from their scalars in parallel.
const PARALLEL_READ: usize = 1 << 14;

thread_local! {
    /// How many sequence results in rows this thread adopted as they are, and how many it
    /// read element by element (tests check which path a type takes).
    pub static TAKEN: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Reads `len` elements of `T` from rows: the memory's address, one word per scalar (each
/// a row's scalar's address, a scalar apart), as compiled code returns a sequence in rows.
pub(crate) fn take_rows<T: Accel>(len: usize, u: &mut Unmarshal<'_>) -> Result<Vec<T>, String> {
    let ty = T::accel_type();
    let (bytes, leaves) =
        row_leaves(&ty).ok_or_else(|| format!("rows of {ty}, which has none (a bug in accel)"))?;
    let base = u.word()? as usize;
    for j in 1..leaves {
        if u.word()? as usize != base.wrapping_add(j * bytes) {
            return Err("the compiled result's scalars are not side by side in rows".into());
        }
    }
    if len == 0 {
        return Ok(Vec::new());
    }
    if base == 0 || !base.is_multiple_of(bytes) {
        return Err("the compiled result holds an invalid pointer".into());
    }
    let row = bytes * leaves;
    if rust_layout_is_rows::<T>(bytes, leaves) {
        let layout = std::alloc::Layout::array::<T>(len).map_err(|e| e.to_string())?;
        if let Some(size) = u.arena.adopt(base, layout, row) {
            TAKEN.set((TAKEN.get().0 + 1, TAKEN.get().1));
            // SAFETY: the arena allocated `base` with `T`'s alignment (its scalars', which
            // `T`'s is) and a size that is a whole number of rows, at least `len` of them;
            // a row is `T` in Rust's layout (checked above: the same size, every scalar at
            // its offset in the row), the compiled code wrote all `len` rows before
            // returning success, with scalars of `T`'s types (numbers, for which every bit
            // pattern is a value); the arena has given up ownership.
            return Ok(unsafe { Vec::from_raw_parts(base as *mut T, len, size / row) });
        }
    }
    TAKEN.set((TAKEN.get().0, TAKEN.get().1 + 1));
    // SAFETY: the compiled code wrote `len` whole rows from `base` (it returned success);
    // the arena, borrowed by `u`, holds that memory until after this read.
    let memory = unsafe { std::slice::from_raw_parts(base as *const u8, len * row) };
    // Each element from its scalars' words (an arena for the reads, which scalars never
    // use, per task).
    let element = |arena: &mut Arena, k: usize| -> Result<T, String> {
        let mut words = [0u64; 16];
        let scalars = words
            .get_mut(..leaves)
            .ok_or("rows of more than 16 scalars")?;
        for (j, w) in scalars.iter_mut().enumerate() {
            // A scalar's word: its bits, zero-extended (what `ScalarWord::from_word` reads).
            let at = k * row + j * bytes;
            let mut raw = [0u8; 8];
            raw[..bytes].copy_from_slice(&memory[at..at + bytes]);
            *w = u64::from_le_bytes(raw);
        }
        T::unmarshal(&mut Unmarshal {
            words: scalars,
            at: 0,
            arena,
            rows: false,
        })
    };
    if len < PARALLEL_READ {
        let mut arena = Arena::default();
        (0..len).map(|k| element(&mut arena, k)).collect()
    } else {
        use rayon::prelude::*;
        (0..len)
            .into_par_iter()
            .with_min_len(PARALLEL_READ / 4)
            .map_init(Arena::default, element)
            .collect()
    }
}

/// Whether a value of `T` is `leaves` scalars of `bytes` bytes each, side by side in the
/// order of its columns, as rows are.
fn rust_layout_is_rows<T: Accel>(bytes: usize, leaves: usize) -> bool {
    let mut offsets = Vec::with_capacity(leaves);
    T::leaf_offsets(0, &mut offsets)
        && offsets.len() == leaves
        && offsets.iter().enumerate().all(|(j, &o)| o == j * bytes)
        && std::mem::size_of::<T>() == leaves * bytes
        && std::mem::align_of::<T>() == bytes
}
