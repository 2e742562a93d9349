//! A `reduce_by_index` or `scatter` into a destination spread across the ranks: each
//! rank's bins or (index, value) pairs go to the ranks that own them (a gather to each
//! rank in turn: every rank sends each owner only what it owns, as an all-to-all would),
//! so each rank merges its part of the destination alone.

use crate::backend::abi::{Arena, Touch};
use crate::backend::layout::size_of;
use crate::comm::{self, Communicator};
use accel_ir::ScalarType;

/// Room for `len` elements of `size` bytes in `arena`, as a byte slice.
fn room<'a>(arena: &mut Arena, len: usize, size: usize) -> Result<&'a mut [u8], String> {
    let p = arena.alloc_own(len * size, size, Touch::Whole);
    if p.is_null() {
        return Err(format!(
            "could not allocate {} bytes for routed parts",
            len * size
        ));
    }
    // SAFETY: a fresh allocation of `len * size` bytes (dangling but aligned for none),
    // owned by `arena`, which outlives the slice's use by the caller's run.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len * size) })
}

/// The bytes of `len` elements of `size` bytes at `ptr`, from element `from`.
///
/// # Safety
/// `ptr` holds at least `from + len` elements of `size` bytes.
unsafe fn elements<'a>(ptr: u64, from: usize, len: usize, size: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's column holds elements `from..from + len`.
    unsafe { std::slice::from_raw_parts((ptr as *const u8).add(from * size), len * size) }
}

/// Each rank's slice of every rank's bins (`words`: `[m, columns..]`, all `m` bins of
/// the destination, which `starts` spreads): on this rank, its slice of the bins of rank
/// 0, then of rank 1, ..., as a histogram's merge reads its parts' bins (`[len,
/// columns..]` in `arena`).
pub fn bins(
    comm: &dyn Communicator,
    words: &[u64],
    columns: &[ScalarType],
    starts: &[usize],
    arena: &mut Arena,
) -> Result<Vec<u64>, String> {
    let (r, size) = (comm.rank(), comm.size());
    if words[0] as usize != starts[size] {
        return Err(
            "the parts' bins and the spread destination differ in length (a bug in accel)".into(),
        );
    }
    let mine = starts[r + 1] - starts[r];
    let mut out = vec![(size * mine) as u64];
    for (k, s) in columns.iter().enumerate() {
        let bytes = size_of(*s);
        let received = room(arena, size * mine, bytes)?;
        out.push(received.as_ptr() as u64);
        comm::gather_to_each(comm, received, |owner| {
            let len = starts[owner + 1] - starts[owner];
            // SAFETY: column `k` holds all `starts[size]` bins.
            let send = unsafe { elements(words[1 + k], starts[owner], len, bytes) };
            (send.into(), vec![len * bytes; size])
        });
    }
    Ok(out)
}

/// The (index, value) pairs of every rank (`words`: `[len, index column, value
/// columns..]`) whose index this rank owns in the destination that `starts` spreads, in
/// rank order, their indices made this rank's (`[len, columns..]` in `arena`). Indices
/// past the destination are dropped, as a scatter skips them.
pub fn pairs(
    comm: &dyn Communicator,
    words: &[u64],
    columns: &[ScalarType],
    starts: &[usize],
    arena: &mut Arena,
) -> Result<Vec<u64>, String> {
    let (r, size) = (comm.rank(), comm.size());
    let len = words[0] as usize;
    // SAFETY: the pairs' first column holds `len` indices.
    let indices: &[usize] = if len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(words[1] as *const usize, len) }
    };
    // Each owner's pairs, in order.
    let mut to: Vec<Vec<usize>> = vec![Vec::new(); size];
    for (p, &i) in indices.iter().enumerate() {
        if i < starts[size] {
            let owner = starts.partition_point(|&s| s <= i) - 1;
            to[owner].push(p);
        }
    }
    let mine: Vec<u64> = to.iter().map(|v| v.len() as u64).collect();
    // counts[src][owner]: how many pairs rank `src` sends rank `owner`.
    let counts: Vec<Vec<usize>> = comm::all_gather_fixed(comm, &mine)
        .into_iter()
        .map(|c| c.into_iter().map(|n| n as usize).collect())
        .collect();
    let total: usize = counts.iter().map(|c| c[r]).sum();
    let mut out = vec![total as u64];
    for (k, s) in columns.iter().enumerate() {
        let bytes = size_of(*s);
        let received = room(arena, total, bytes)?;
        out.push(received.as_ptr() as u64);
        comm::gather_to_each(comm, received, |owner| {
            let picked = &to[owner];
            let mut send = Vec::with_capacity(picked.len() * bytes);
            for &p in picked {
                if k == 0 {
                    // The owner's index into its part.
                    send.extend_from_slice(&(indices[p] - starts[owner]).to_le_bytes());
                } else {
                    // SAFETY: column `k` holds `len` elements; `p < len`.
                    send.extend_from_slice(unsafe { elements(words[1 + k], p, 1, bytes) });
                }
            }
            let counts = counts.iter().map(|c| c[owner] * bytes).collect();
            (send.into(), counts)
        });
    }
    Ok(out)
}
