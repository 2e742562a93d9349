//! Where the parts of a split site put their results: straight into their place in the
//! site's result (a `map`, `map2` or `create`: part `lo..hi` is the result's `lo..hi`; a
//! GPU copies there from the device, the CPU's part is copied there as it finishes), or
//! concatenated in index order after the last part (a `filter`'s parts, whose lengths are
//! known once they ran; rows).

use super::Device;
use crate::backend::abi::{Arena, Touch};
use crate::backend::failure::{Failure, FailureKind};
use crate::backend::layout::size_of;
use crate::backend::Run;
use accel_ir::ScalarType;

/// Bytes one thread copies at a time.
const COPY_PIECE: usize = 1 << 20;

/// Puts a part's result of `len` elements (`[len, columns...]`) in its `slice` of the
/// site's result (a GPU's part was copied there from the device already): a run of
/// no memory of its own, and the bytes copied.
pub(super) fn put_in_place(
    run: Run,
    len: usize,
    slice: &[(usize, usize)],
) -> Result<(Run, usize), String> {
    if run.words.len() != 1 + slice.len() || run.words[0] as usize != len || run.rows {
        return Err(format!(
            "a part of {len} elements in {} columns returned {} words, the first {}{} (a bug \
             in accel's split of the site)",
            slice.len(),
            run.words.len(),
            run.words.first().copied().unwrap_or(0),
            if run.rows { ", in rows" } else { "" }
        ));
    }
    let mut pieces = Vec::new();
    for (&(to, bytes), &from) in slice.iter().zip(&run.words[1..]) {
        if from as usize != to {
            pieces.extend(copy_pieces(from as usize, to, bytes));
        }
    }
    let copied = pieces.iter().map(|&(_, _, bytes)| bytes).sum();
    // SAFETY: each piece lies in a column of the part's result (`len` elements, in
    // its arena, alive until `run` drops below) and in the part's slice of the site's
    // result (room for `len` elements, which no other part writes).
    unsafe { copy_on_pool(&pieces)? };
    Ok((
        Run {
            words: vec![len as u64],
            arena: Arena::default(),
            rows: false,
            report: run.report,
        },
        copied,
    ))
}

/// Columns for the site's `n` elements in `arena`, each aligned as its element so that
/// the caller's `Vec` adopts it (`abi::take_column`): the parts write their slices.
pub(super) fn result_columns(
    columns: &[ScalarType],
    n: usize,
    arena: &mut Arena,
) -> Result<Vec<u64>, String> {
    columns
        .iter()
        .map(|&s| {
            let bytes = n.checked_mul(size_of(s)).ok_or_else(|| {
                format!(
                    "a result of {n} elements of {} bytes is larger than memory",
                    size_of(s)
                )
            })?;
            let p = match bytes {
                0 => arena.alloc(0, 64),
                _ => arena.alloc_own(bytes, size_of(s), Touch::Whole),
            };
            match p.is_null() {
                true => Err(format!("could not allocate {bytes} bytes for the result")),
                false => Ok(p as u64),
            }
        })
        .collect()
}

/// Concatenates sequence results (each `[len, columns...]`) into new columns of
/// `arena`: the words of the whole.
pub(super) fn concat(
    runs: &[Run],
    (columns, in_rows): (&[ScalarType], bool),
    arena: &mut Arena,
) -> Result<Vec<u64>, String> {
    let rows: usize = runs.iter().map(|r| r.words[0] as usize).sum();
    let mut words = vec![rows as u64];
    // Rows: every part's rows are as long as the first non-empty part's (else the
    // result is irregular, as one device would find it).
    let per_row = if in_rows {
        let mut lengths = runs.iter().filter(|r| r.words[0] > 0).map(|r| r.words[1]);
        let first = lengths.next().unwrap_or(0);
        if let Some(other) = lengths.find(|&l| l != first) {
            return Err(Failure::new(FailureKind::Irregular, first, other).describe());
        }
        words.push(first);
        first as usize
    } else {
        1
    };
    let total = rows * per_row;
    let first_column = if in_rows { 2 } else { 1 };
    let made = result_columns(columns, total, arena)?;
    for (k, (s, &dst)) in columns.iter().zip(&made).enumerate() {
        let size = size_of(*s);
        let mut pieces = Vec::new();
        let mut at = dst as usize;
        for r in runs {
            let bytes = r.words[0] as usize * per_row * size;
            pieces.extend(copy_pieces(r.words[first_column + k] as usize, at, bytes));
            at += bytes;
        }
        // SAFETY: each part's column holds `len * per_row` elements of `size` bytes
        // (each piece's source lies in it); `dst` has room for `total` of them, and the
        // pieces' destinations, one after another, do not overlap.
        unsafe { copy_on_pool(&pieces)? };
    }
    words.extend(made);
    Ok(words)
}

/// The copy of `bytes` bytes from `from` to `to` in pieces of at most [`COPY_PIECE`]
/// (source, destination, bytes).
fn copy_pieces(from: usize, to: usize, bytes: usize) -> Vec<(usize, usize, usize)> {
    (0..bytes)
        .step_by(COPY_PIECE)
        .map(|off| (from + off, to + off, COPY_PIECE.min(bytes - off)))
        .collect()
}

/// Copies `pieces` (source, destination, bytes) on the pool: one thread copying a large
/// result into fresh pages took longer than computing it on a GPU and the CPU.
///
/// # Safety
///
/// Each source is valid for reads and each destination for writes of its bytes, and no
/// destination overlaps another piece's source or destination.
unsafe fn copy_on_pool(pieces: &[(usize, usize, usize)]) -> Result<(), String> {
    if pieces.is_empty() {
        return Ok(());
    }
    crate::cpu::pool::on_pool(|| {
        use rayon::prelude::*;
        pieces.par_iter().for_each(|&(from, to, bytes)| {
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
        });
    })
}

/// Runs `f`, a part on `device`, with a GPU copying its result straight into `slice`
/// (the part's place in the site's result) when there is one.
pub(super) fn place_result<T>(
    device: Device,
    slice: Option<&[(usize, usize)]>,
    f: impl FnOnce() -> T,
) -> T {
    match (device, slice) {
        #[cfg(feature = "cuda")]
        (Device::Cuda(_), Some(slice)) => crate::cuda::with_result_at(slice.to_vec(), f),
        _ => f(),
    }
}
