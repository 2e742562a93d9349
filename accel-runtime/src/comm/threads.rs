//! Ranks as threads of one process: a [`Communicator`] whose collectives are exchanges
//! through shared memory. Distributed programs run unchanged on it, so they are tested
//! (and tried) without MPI; the accel-mpi crate runs the same programs across processes.

use super::Communicator;
use std::sync::{Arc, Condvar, Mutex};

/// What a rank panics with when another rank of its group panicked.
const FOLLOWER: &str = "another rank of the group panicked";

/// One rank of a group of threads made by [`ranks`].
pub struct ThreadComm {
    rank: usize,
    group: Arc<Group>,
}

/// What the threads of a group share: one slot per rank for the collective under way,
/// and a barrier that a panicking rank breaks (the others then panic too, instead of
/// waiting forever).
struct Group {
    size: usize,
    state: Mutex<State>,
    turned: Condvar,
}

struct State {
    slots: Vec<Vec<u8>>,
    arrived: usize,
    generation: u64,
    broken: bool,
}

impl Group {
    /// Waits until every rank has arrived (or one has panicked).
    fn wait(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.size {
            s.arrived = 0;
            s.generation += 1;
            self.turned.notify_all();
        } else {
            while s.generation == generation && !s.broken {
                s = self.turned.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
        if s.broken {
            drop(s);
            std::panic::panic_any(FOLLOWER);
        }
    }

    fn break_barrier(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.broken = true;
        self.turned.notify_all();
    }
}

impl ThreadComm {
    /// Every rank's `mine`, in rank order.
    fn exchange(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.group
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .slots[self.rank] = mine.to_vec();
        self.group.wait();
        let all = self
            .group
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .slots
            .clone();
        // No rank writes its slot for the next collective before every rank has read.
        self.group.wait();
        all
    }
}

/// Copies `parts` one after another into `out`, checking each against its count.
fn concat_into(parts: &[Vec<u8>], counts: &[usize], out: &mut [u8]) {
    let mut at = 0;
    for (r, (p, &c)) in parts.iter().zip(counts).enumerate() {
        assert_eq!(
            p.len(),
            c,
            "rank {r} gave {} bytes where {c} were expected",
            p.len()
        );
        out[at..at + c].copy_from_slice(p);
        at += c;
    }
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.group.size
    }

    fn all_gather_into(&self, mine: &[u8], counts: &[usize], out: &mut [u8]) {
        concat_into(&self.exchange(mine), counts, out);
    }

    fn gather_into(&self, root: usize, mine: &[u8], counts: &[usize], out: Option<&mut [u8]>) {
        let all = self.exchange(mine);
        if self.rank == root {
            concat_into(&all, counts, out.expect("the root's buffer"));
        }
    }

    fn scatter_into(&self, root: usize, data: Option<&[u8]>, counts: &[usize], out: &mut [u8]) {
        let all = self.exchange(data.unwrap_or(&[]));
        let at: usize = counts[..self.rank].iter().sum();
        out.copy_from_slice(&all[root][at..at + counts[self.rank]]);
    }
}

/// Runs `f` on `n` threads, each a rank of one group (its communicator the argument), and
/// returns their results in rank order. A panic on any rank panics here (the other ranks
/// stop at their next collective).
///
/// ```
/// use accel_runtime::comm::{threads::ranks, all_gather_words};
/// let sums = ranks(3, |comm| all_gather_words(&*comm, comm.rank() as u64).iter().sum::<u64>());
/// assert_eq!(sums, vec![3, 3, 3]);
/// ```
pub fn ranks<R: Send>(n: usize, f: impl Fn(Arc<dyn Communicator>) -> R + Sync) -> Vec<R> {
    assert!(n > 0, "a group has at least one rank");
    let group = Arc::new(Group {
        size: n,
        state: Mutex::new(State {
            slots: vec![Vec::new(); n],
            arrived: 0,
            generation: 0,
            broken: false,
        }),
        turned: Condvar::new(),
    });
    let outcomes: Vec<std::thread::Result<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let comm: Arc<dyn Communicator> = Arc::new(ThreadComm {
                    rank,
                    group: Arc::clone(&group),
                });
                let (f, group) = (&f, &group);
                s.spawn(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(comm)));
                    if r.is_err() {
                        group.break_barrier();
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(Err))
            .collect()
    });
    let mut results = Vec::with_capacity(n);
    let mut panics = Vec::new();
    for o in outcomes {
        match o {
            Ok(r) => results.push(r),
            Err(p) => panics.push(p),
        }
    }
    if !panics.is_empty() {
        // The rank that failed, not one that stopped because of it.
        let first = panics
            .iter()
            .position(|p| p.downcast_ref::<&str>() != Some(&FOLLOWER))
            .unwrap_or(0);
        std::panic::resume_unwind(panics.swap_remove(first));
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_and_scatter_move_each_part_to_its_rank() {
        let got = ranks(3, |comm| {
            let r = comm.rank();
            let counts = [1, 2, 3];
            let mine = vec![r as u8; counts[r]];
            let mut root = (r == 1).then(|| vec![0u8; 6]);
            comm.gather_into(1, &mine, &counts, root.as_deref_mut());
            let data: Vec<u8> = (10..16).collect();
            let mut part = vec![0u8; counts[r]];
            comm.scatter_into(2, (r == 2).then_some(&data[..]), &counts, &mut part);
            (root, part)
        });
        assert_eq!(got[1].0, Some(vec![0, 1, 1, 2, 2, 2]));
        assert_eq!(got[0].0, None);
        assert_eq!(got[0].1, vec![10]);
        assert_eq!(got[2].1, vec![13, 14, 15]);
    }

    #[test]
    fn a_rank_that_panics_stops_the_group_with_its_own_message() {
        let r = std::panic::catch_unwind(|| {
            ranks(3, |comm| {
                if comm.rank() == 1 {
                    panic!("rank one failed");
                }
                crate::comm::all_gather_words(&*comm, 1)
            })
        });
        let p = r.unwrap_err();
        assert_eq!(p.downcast_ref::<&str>(), Some(&"rank one failed"));
    }
}
