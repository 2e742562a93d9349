//! Collectives between the processes (ranks) that hold a distributed sequence: the
//! [`Communicator`] trait that an MPI binding implements (the `accel-mpi` crate, over
//! rsmpi), and [`threads`]: ranks as threads of one process, for tests and for trying a
//! distributed program without MPI.
//!
//! Every collective is called by every rank of the communicator, in the same order, with
//! the same counts: the usual SPMD discipline. Distributed sites keep it by deciding
//! everything that leads to a collective from what every rank knows alike (types, the
//! partition of each distributed sequence), never from one rank's values.

pub mod threads;

/// The collectives distributed sequences and sites are built on: byte buffers gathered,
/// scattered and all-gathered between the ranks of one group. Rank `r`'s part of a
/// gathered buffer follows rank `r - 1`'s.
///
/// An implementation may assume the SPMD discipline (every rank calls each collective, in
/// the same order, with the same `counts`); a rank that dies or a transport error is the
/// implementation's to report (MPI aborts the job by default).
pub trait Communicator: Send + Sync {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// This rank's index among the ranks on its machine (distributed sites in cuda mode
    /// run on the GPU of this index, modulo the machine's GPUs); by default its rank.
    fn node_rank(&self) -> usize {
        self.rank()
    }
    /// Every rank's `mine` (of `counts[r]` bytes on rank `r`), concatenated in rank order
    /// into `out` (of `counts`' sum bytes), on every rank.
    fn all_gather_into(&self, mine: &[u8], counts: &[usize], out: &mut [u8]);
    /// Like [`all_gather_into`](Communicator::all_gather_into), but only rank `root`
    /// receives: its `out` is `Some`, every other rank's `None`.
    fn gather_into(&self, root: usize, mine: &[u8], counts: &[usize], out: Option<&mut [u8]>);
    /// Rank `root`'s `data` (`Some` on the root only: `counts`' sum bytes), cut into pieces
    /// of `counts[r]` bytes, piece `r` into rank `r`'s `out`.
    fn scatter_into(&self, root: usize, data: Option<&[u8]>, counts: &[usize], out: &mut [u8]);
}

/// Every rank's `mine`, in rank order (the counts are exchanged first).
pub fn exchange(comm: &dyn Communicator, mine: &[u8]) -> Vec<Vec<u8>> {
    let counts = all_gather_words(comm, mine.len() as u64)
        .into_iter()
        .map(|c| c as usize)
        .collect::<Vec<_>>();
    let mut all = vec![0u8; counts.iter().sum()];
    comm.all_gather_into(mine, &counts, &mut all);
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0;
    for c in counts {
        out.push(all[at..at + c].to_vec());
        at += c;
    }
    out
}

/// This rank's part (`out`, of its `new` range's elements) of a sequence of `size`-byte
/// elements spread as `old` (`mine`: this rank's part of it), spread again as `new` (both
/// `size + 1` starts over the same length): each rank sends each other rank only the
/// elements their ranges share, one gather to each rank in turn, as an all-to-all would.
pub fn redistribute(
    comm: &dyn Communicator,
    mine: &[u8],
    old: &[usize],
    new: &[usize],
    size: usize,
    out: &mut [u8],
) {
    let r = comm.rank();
    // The elements `old` part `src` and `new` part `dst` share (none: an empty range at
    // the start of `src`'s part).
    let shared = |src: usize, dst: usize| {
        let lo = old[src].max(new[dst]);
        let hi = old[src + 1].min(new[dst + 1]);
        if hi > lo {
            (lo, hi)
        } else {
            (old[src], old[src])
        }
    };
    gather_to_each(comm, out, |dst| {
        let (lo, hi) = shared(r, dst);
        let send = &mine[(lo - old[r]) * size..(hi - old[r]) * size];
        let counts = (0..comm.size())
            .map(|src| {
                let (lo, hi) = shared(src, dst);
                (hi - lo) * size
            })
            .collect();
        (send.into(), counts)
    });
}

/// One gather to each rank in turn (an all-to-all): `part(dst)` is what this rank sends
/// rank `dst` and the byte counts every rank sends it; what every rank sends this rank
/// lands in `out`, in rank order.
pub fn gather_to_each<'a>(
    comm: &dyn Communicator,
    out: &mut [u8],
    part: impl Fn(usize) -> (std::borrow::Cow<'a, [u8]>, Vec<usize>),
) {
    let r = comm.rank();
    let mut out = Some(out);
    for dst in 0..comm.size() {
        let (send, counts) = part(dst);
        let into = if dst == r { out.take() } else { None };
        comm.gather_into(dst, &send, &counts, into);
    }
}

/// Every rank's word, in rank order.
pub fn all_gather_words(comm: &dyn Communicator, mine: u64) -> Vec<u64> {
    all_gather_fixed(comm, &[mine])
        .into_iter()
        .map(|w| w[0])
        .collect()
}

/// Every rank's `mine`, in rank order, where every rank gives as many words: one
/// all-gather.
pub fn all_gather_fixed(comm: &dyn Communicator, mine: &[u64]) -> Vec<Vec<u64>> {
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
    let each = bytes.len();
    let mut all = vec![0u8; each * comm.size()];
    comm.all_gather_into(&bytes, &vec![each; comm.size()], &mut all);
    (0..comm.size())
        .map(|r| {
            all[r * each..(r + 1) * each]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        })
        .collect()
}

/// Where each rank's part of `n` elements begins when they are spread evenly (the first
/// `n % size` ranks hold one more), and `n` at the end: `size + 1` entries.
///
/// ```
/// assert_eq!(accel_runtime::comm::even_starts(10, 4), vec![0, 3, 6, 8, 10]);
/// assert_eq!(accel_runtime::comm::even_starts(2, 3), vec![0, 1, 2, 2]);
/// ```
pub fn even_starts(n: usize, size: usize) -> Vec<usize> {
    let (q, r) = (n / size.max(1), n % size.max(1));
    (0..=size).map(|k| k * q + k.min(r)).collect()
}

/// The starts of parts of these lengths (rank order), and their total at the end.
pub fn starts_of(lengths: &[usize]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(lengths.len() + 1);
    let mut at = 0;
    starts.push(0);
    for l in lengths {
        at += l;
        starts.push(at);
    }
    starts
}

/// The byte counts of parts of `starts` for elements of `size` bytes.
pub fn byte_counts(starts: &[usize], size: usize) -> Vec<usize> {
    starts.windows(2).map(|w| (w[1] - w[0]) * size).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_parts_cover_every_element_once_in_order() {
        for n in [0, 1, 5, 64, 1001] {
            for size in 1..6 {
                let s = even_starts(n, size);
                assert_eq!((s[0], s[size]), (0, n));
                assert!(s
                    .windows(2)
                    .all(|w| w[1] >= w[0] && w[1] - w[0] <= n / size + 1));
            }
        }
        assert_eq!(starts_of(&[3, 0, 2]), vec![0, 3, 3, 5]);
        assert_eq!(byte_counts(&[0, 3, 3, 5], 4), vec![12, 0, 8]);
    }

    #[test]
    fn a_respread_sends_each_rank_the_elements_of_its_new_range() {
        let whole: Vec<u8> = (0..23).collect();
        let old = [0, 10, 12, 23];
        let new = even_starts(23, 3);
        let got = threads::ranks(3, |comm| {
            let r = comm.rank();
            let mut out = vec![0u8; new[r + 1] - new[r]];
            redistribute(&*comm, &whole[old[r]..old[r + 1]], &old, &new, 1, &mut out);
            out
        });
        assert_eq!(got.concat(), whole);
        assert_eq!(got[1], (8..16).collect::<Vec<u8>>());
    }

    #[test]
    fn exchange_gives_every_rank_every_part_in_rank_order() {
        let got = threads::ranks(3, |comm| {
            let mine = vec![comm.rank() as u8; comm.rank()];
            (
                exchange(&*comm, &mine),
                all_gather_words(&*comm, 10 + comm.rank() as u64),
            )
        });
        for (parts, words) in got {
            assert_eq!(parts, vec![vec![], vec![1], vec![2, 2]]);
            assert_eq!(words, vec![10, 11, 12]);
        }
    }
}
