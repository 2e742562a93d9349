//! MPI for accel's distributed sequences: [`Mpi::init`] starts MPI (through rsmpi) and
//! [`Mpi::world`] is a [`Communicator`] of every process of the job, over which
//! [`DistVec`](accel_runtime::DistVec)s are spread and `accelerate!` sites over them run
//! each process's part.
//!
//! ```no_run
//! use accel_runtime::prelude::*;
//! use accel_runtime::DistVec;
//!
//! let mpi = accel_mpi::Mpi::init().expect("MPI");
//! let world = mpi.world();
//! let n = 1_000_000;
//! let mine: Vec<f64> = DistVec::<f64>::even_range(&world, n).map(|i| i as f64).collect();
//! let xs = DistVec::from_local(&world, mine);
//! let total: f64 = accelerate!(reduce(|a, b| a + b, 0.0, &xs)); // on every process
//! ```
//!
//! Run it with `mpirun -n 4 ./program`. In cuda mode each process on a machine takes the
//! next of its GPUs (`node rank % GPUs`). Each process's CPU sites use its share of its
//! node's cores (`cores / processes on the node`; `RAYON_NUM_THREADS` or `ACCEL_NUM_THREADS` overrides). MPI is
//! started with `MPI_THREAD_MULTIPLE` where
//! the library offers it (else serialized: every call goes through one lock), and
//! finalized when the [`Mpi`] value is dropped: keep it alive until the end of `main`.

use accel_runtime::comm::Communicator;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::Communicator as _;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;
use std::sync::{Arc, Mutex};

/// MPI, started: its world communicator lives as long as this value.
pub struct Mpi {
    world: Arc<dyn Communicator>,
    // Dropped last: finalizes MPI.
    _universe: mpi::environment::Universe,
}

impl Mpi {
    /// Starts MPI (once per process), or says why it could not.
    pub fn init() -> Result<Mpi, String> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or("MPI is already initialized in this process")?;
        if threading < mpi::Threading::Serialized {
            return Err(format!(
                "the MPI library offers threads at {threading:?} only; accel needs at least Serialized"
            ));
        }
        let world = universe.world();
        let node_rank = share_cores(&world);
        let comm = MpiComm {
            rank: world.rank() as usize,
            size: world.size() as usize,
            node_rank,
            world: Mutex::new(world),
        };
        Ok(Mpi {
            world: Arc::new(comm),
            _universe: universe,
        })
    }

    /// Every process of the job.
    pub fn world(&self) -> Arc<dyn Communicator> {
        Arc::clone(&self.world)
    }
}

/// Sizes the CPU backend's threads (rayon's global pool) to this process's share of the
/// machine's cores: with `k` ranks on a node of `c` cores, `c / k` threads (at least one),
/// or fewer where the process is bound to fewer cores, so that ranks do not fight over
/// cores. `RAYON_NUM_THREADS` or `ACCEL_NUM_THREADS` set, or a pool already built, is left
/// as it is. A process bound to less than its share (Open MPI binds each process to one
/// core when it starts two or fewer) is told so on stderr, once per node. Returns this
/// process's index among those on its node.
fn share_cores(world: &SimpleCommunicator) -> usize {
    let node = world.split_shared(world.rank());
    let node_rank = node.rank() as usize;
    if ["RAYON_NUM_THREADS", "ACCEL_NUM_THREADS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
    {
        return node_rank;
    }
    let on_this_node = node.size().max(1) as usize;
    // The cores this process may run on (its affinity), and the node's.
    let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cores = online_cpus().unwrap_or(allowed);
    let share = (cores / on_this_node).max(1);
    if allowed < share && node.rank() == 0 {
        eprintln!(
            "[accel-mpi] each process is bound to {allowed} of this node's {cores} cores ({on_this_node} process(es) here): \
             sites use {allowed} thread(s); run with `mpirun --bind-to none` (Open MPI) to give each process {share}"
        );
    }
    let threads = share.min(allowed);
    // An error means the pool exists already: it stays as it was built.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global();
    node_rank
}

/// The number of CPUs online on this machine (Linux's `/sys/devices/system/cpu/online`:
/// `0-15`, `0,2-3`), whatever this process is bound to.
fn online_cpus() -> Option<usize> {
    cpu_count(&std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?)
}

/// The number of CPUs in a Linux CPU list.
fn cpu_count(list: &str) -> Option<usize> {
    list.trim().split(',').try_fold(0, |n, range| {
        let mut ends = range.split('-').map(|x| x.trim().parse::<usize>());
        let first = ends.next()?.ok()?;
        let last = ends.next().map_or(Ok(first), |l| l).ok()?;
        Some(n + last.checked_sub(first)? + 1)
    })
}

/// A communicator of MPI processes. Every call holds the lock: MPI is entered by one
/// thread at a time through it, which `MPI_THREAD_SERIALIZED` allows.
struct MpiComm {
    rank: usize,
    size: usize,
    /// Its index among the processes on its node.
    node_rank: usize,
    world: Mutex<SimpleCommunicator>,
}

// SAFETY: MPI was initialized with at least MPI_THREAD_SERIALIZED (`Mpi::init` checks),
// under which any thread may call MPI as long as no two do so at once; every use of the
// communicator goes through the mutex.
unsafe impl Send for MpiComm {}
// SAFETY: as for `Send`: shared use is serialized by the mutex.
unsafe impl Sync for MpiComm {}

/// The most bytes one rank moves in one MPI call: counts and displacements are `int`s.
const MAX_PIECE: usize = 1 << 30;

/// Pieces of parts of `counts` bytes moved in rounds, each round at most [`MAX_PIECE`]
/// bytes per rank and `Count`-sized in all: for round `j`, each rank's (offset within its
/// part, length).
fn rounds(counts: &[usize]) -> Vec<Vec<(usize, usize)>> {
    let piece = (i32::MAX as usize / counts.len().max(1)).min(MAX_PIECE);
    let most = counts.iter().copied().max().unwrap_or(0);
    let n = most.div_ceil(piece).max(1);
    (0..n)
        .map(|j| {
            counts
                .iter()
                .map(|&c| (j * piece).min(c))
                .zip(counts)
                .map(|(at, &c)| (at, piece.min(c - at)))
                .collect()
        })
        .collect()
}

/// Counts and displacements of pieces packed one after another.
fn packed(pieces: &[(usize, usize)]) -> (Vec<Count>, Vec<Count>) {
    let counts: Vec<Count> = pieces.iter().map(|p| p.1 as Count).collect();
    let displs = counts
        .iter()
        .scan(0, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect();
    (counts, displs)
}

/// Where each rank's part begins in the concatenation of parts of `counts` bytes.
fn starts(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect()
}

/// Memory that empty buffers point into. An empty Rust slice of bytes has the address 1,
/// which Open MPI reads as `MPI_IN_PLACE`.
static NOWHERE: [u8; 8] = [0; 8];

/// `s`, or an empty slice at a real address.
fn placed(s: &[u8]) -> &[u8] {
    if s.is_empty() {
        &NOWHERE[..0]
    } else {
        s
    }
}

/// `s`, or an empty slice of `spare`.
fn placed_mut<'a>(s: &'a mut [u8], spare: &'a mut [u8; 8]) -> &'a mut [u8] {
    if s.is_empty() {
        &mut spare[..0]
    } else {
        s
    }
}

/// Counts and displacements of parts of `counts` bytes in place, one after another, where
/// every count and the total fit an MPI `int` (else `None`: the parts move in rounds).
fn in_place(counts: &[usize]) -> Option<(Vec<Count>, Vec<Count>)> {
    let total: usize = counts.iter().sum();
    if total > MAX_PIECE {
        return None;
    }
    let c: Vec<Count> = counts.iter().map(|&c| c as Count).collect();
    let d = starts(counts).into_iter().map(|s| s as Count).collect();
    Some((c, d))
}

impl MpiComm {
    fn world(&self) -> std::sync::MutexGuard<'_, SimpleCommunicator> {
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Communicator for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn node_rank(&self) -> usize {
        self.node_rank
    }

    fn all_gather_into(&self, mine: &[u8], counts: &[usize], out: &mut [u8]) {
        let world = self.world();
        if let Some((c, d)) = in_place(counts) {
            let mut spare = [0u8; 8];
            let mut part = PartitionMut::new(placed_mut(out, &mut spare), c, &d[..]);
            world.all_gather_varcount_into(placed(mine), &mut part);
            return;
        }
        let at = starts(counts);
        for round in rounds(counts) {
            let (c, d) = packed(&round);
            let mut buf = vec![0u8; round.iter().map(|p| p.1).sum()];
            let (off, len) = round[self.rank];
            {
                let mut spare = [0u8; 8];
                let mut part = PartitionMut::new(placed_mut(&mut buf, &mut spare), c, &d[..]);
                world.all_gather_varcount_into(placed(&mine[off..off + len]), &mut part);
            }
            let mut from = 0;
            for (r, &(off, len)) in round.iter().enumerate() {
                out[at[r] + off..at[r] + off + len].copy_from_slice(&buf[from..from + len]);
                from += len;
            }
        }
    }

    fn gather_into(&self, root: usize, mine: &[u8], counts: &[usize], mut out: Option<&mut [u8]>) {
        let world = self.world();
        let at = starts(counts);
        let process = world.process_at_rank(root as i32);
        if let Some((c, d)) = in_place(counts) {
            match out {
                Some(out) if self.rank == root => {
                    let mut spare = [0u8; 8];
                    let mut part = PartitionMut::new(placed_mut(out, &mut spare), c, &d[..]);
                    process.gather_varcount_into_root(placed(mine), &mut part);
                }
                _ => process.gather_varcount_into(placed(mine)),
            }
            return;
        }
        for round in rounds(counts) {
            let (off, len) = round[self.rank];
            let send = placed(&mine[off..off + len]);
            match out.as_deref_mut() {
                Some(out) if self.rank == root => {
                    let (c, d) = packed(&round);
                    let mut buf = vec![0u8; round.iter().map(|p| p.1).sum()];
                    {
                        let mut spare = [0u8; 8];
                        let mut part =
                            PartitionMut::new(placed_mut(&mut buf, &mut spare), c, &d[..]);
                        process.gather_varcount_into_root(send, &mut part);
                    }
                    let mut from = 0;
                    for (r, &(off, len)) in round.iter().enumerate() {
                        out[at[r] + off..at[r] + off + len].copy_from_slice(&buf[from..from + len]);
                        from += len;
                    }
                }
                _ => process.gather_varcount_into(send),
            }
        }
    }

    fn scatter_into(&self, root: usize, data: Option<&[u8]>, counts: &[usize], out: &mut [u8]) {
        let world = self.world();
        let at = starts(counts);
        let process = world.process_at_rank(root as i32);
        if let Some((c, d)) = in_place(counts) {
            let mut spare = [0u8; 8];
            let recv = placed_mut(out, &mut spare);
            match data {
                Some(data) if self.rank == root => {
                    let part = Partition::new(placed(data), c, &d[..]);
                    process.scatter_varcount_into_root(&part, recv);
                }
                _ => process.scatter_varcount_into(recv),
            }
            return;
        }
        for round in rounds(counts) {
            let (off, len) = round[self.rank];
            let mut spare = [0u8; 8];
            let recv = placed_mut(&mut out[off..off + len], &mut spare);
            match data {
                Some(data) if self.rank == root => {
                    let mut buf = Vec::with_capacity(round.iter().map(|p| p.1).sum());
                    for (r, &(off, len)) in round.iter().enumerate() {
                        buf.extend_from_slice(&data[at[r] + off..at[r] + off + len]);
                    }
                    let (c, d) = packed(&round);
                    let part = Partition::new(placed(&buf), c, &d[..]);
                    process.scatter_varcount_into_root(&part, recv);
                }
                _ => process.scatter_varcount_into(recv),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_count_as_linux_writes_them() {
        assert_eq!(cpu_count("0-15\n"), Some(16));
        assert_eq!(cpu_count("0,2-3"), Some(3));
        assert_eq!(cpu_count("7"), Some(1));
        assert_eq!(cpu_count("x"), None);
    }

    #[test]
    fn large_parts_move_in_rounds_of_int_sized_pieces() {
        assert_eq!(rounds(&[3, 0, 5]), vec![vec![(0, 3), (0, 0), (0, 5)]]);
        let big = 3 * MAX_PIECE + 7;
        let r = rounds(&[big]);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0], vec![(0, MAX_PIECE)]);
        assert_eq!(r[3], vec![(3 * MAX_PIECE, 7)]);
        let r = rounds(&[big, 10, 0]);
        for round in &r {
            assert!(round.iter().map(|p| p.1).sum::<usize>() <= i32::MAX as usize);
        }
        let moved: Vec<usize> = (0..3)
            .map(|k| r.iter().map(|round| round[k].1).sum())
            .collect();
        assert_eq!(moved, vec![big, 10, 0]);
        assert_eq!(
            packed(&[(0, 3), (0, 0), (0, 5)]),
            (vec![3, 0, 5], vec![0, 3, 3])
        );
    }
}
