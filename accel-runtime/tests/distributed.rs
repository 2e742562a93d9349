//! Sites over distributed sequences (`DistVec`), with ranks as threads of this process
//! (`comm::threads`): every operation on 1 to 4 ranks against the sequential result of
//! the whole sequence, results kept distributed and gathered, debug mode against
//! compiled code, failures that every rank agrees on, and sites that do not split. The
//! accel-mpi crate runs the same kind of programs across MPI processes.

use accel_runtime::comm::threads::ranks;
use accel_runtime::prelude::*;
use accel_runtime::{DistVec, ErrorKind};
use std::sync::Arc;

type Comm = Arc<dyn accel_runtime::comm::Communicator>;

/// A fixed pseudo-random sequence (a linear congruential generator) of values in `0..m`.
fn ints(n: usize, seed: u64, m: i64) -> Vec<i64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 33) as i64) % m
        })
        .collect()
}

/// The sequence spread over the ranks unevenly: rank `r` holds a part of a length that
/// depends on `r` (the last rank the rest), so partitions other than the even one are
/// exercised.
fn uneven<T: Accel + Clone>(comm: &Comm, whole: &[T]) -> DistVec<T> {
    let size = comm.size();
    let mut starts = vec![0];
    for r in 0..size {
        let next = if r + 1 == size {
            whole.len()
        } else {
            (starts[r] + (r + 1) * whole.len() / (size * (size + 1) / 2)).min(whole.len())
        };
        starts.push(next);
    }
    let r = comm.rank();
    DistVec::from_local(comm, whole[starts[r]..starts[r + 1]].to_vec())
}

const SIZES: [usize; 6] = [0, 1, 3, 1000, 4097, 20_000];

#[test]
fn map_reduce_scan_and_filter_agree_with_the_whole_sequence_on_every_rank_count() {
    for rank_count in 1..=4 {
        for n in SIZES {
            let whole = ints(n, n as u64 + 1, 1000);
            let squares: Vec<i64> = whole.iter().map(|x| x * x - 7).collect();
            let sum: i64 = whole.iter().sum();
            let prefix: Vec<i64> = whole
                .iter()
                .scan(0, |s, x| {
                    *s += x;
                    Some(*s)
                })
                .collect();
            let odd: Vec<i64> = whole.iter().copied().filter(|x| x % 2 == 1).collect();
            let got = ranks(rank_count, |comm| {
                let xs = DistVec::from_whole(&comm, &whole);
                let kept = DistVec::from_site(&comm, || accelerate!(map(|x| x * x - 7, &xs)));
                assert_eq!(
                    kept.starts(),
                    xs.starts(),
                    "a map keeps its input's partition"
                );
                assert_eq!(kept.local(), &squares[xs.range()]);
                let gathered: Vec<i64> = accelerate!(map(|x| x * x - 7, &xs));
                let total = accelerate!(reduce(|a, b| a + b, 0, &xs));
                let scanned = DistVec::from_site(&comm, || accelerate!(scan(|a, b| a + b, 0, &xs)));
                let filtered =
                    DistVec::from_site(&comm, || accelerate!(filter(|x| x % 2 == 1, &xs)));
                (
                    gathered,
                    total,
                    scanned.gather(),
                    filtered.gather(),
                    filtered.local().len(),
                )
            });
            let at = format!("{n} elements on {rank_count} ranks");
            let mut kept_odd = 0;
            for (gathered, total, scanned, filtered, local_odd) in got {
                assert!(gathered == squares, "map, {at}");
                assert_eq!(total, sum, "reduce, {at}");
                assert!(scanned == prefix, "scan, {at}");
                assert!(filtered == odd, "filter, {at}");
                kept_odd += local_odd;
            }
            assert_eq!(
                kept_odd,
                odd.len(),
                "each rank keeps its own kept elements, {at}"
            );
        }
    }
}

#[test]
fn a_create_of_no_distributed_sequence_is_split_evenly_when_kept() {
    let n = 10_007;
    let table = ints(64, 8, 1000);
    for rank_count in 1..=4 {
        let got = ranks(rank_count, |comm| {
            let made = DistVec::from_site(&comm, || {
                accelerate!(create(n, |i| table[i % 64] * i as i64))
            });
            assert_eq!(
                made.starts(),
                &accel_runtime::comm::even_starts(n, rank_count)[..]
            );
            made.gather()
        });
        let expect: Vec<i64> = (0..n).map(|i| table[i % 64] * i as i64).collect();
        assert!(got.iter().all(|g| *g == expect), "{rank_count} ranks");
    }
}

/// Distributed sites with each rank's part on the GPU (the emulator where there is
/// none): the same results as on the CPU.
#[cfg(feature = "cuda")]
#[test]
fn each_ranks_part_runs_on_its_gpu() {
    let gpu = accel_runtime::cuda::available().is_ok();
    if !gpu {
        // Two emulated GPUs: each rank takes its own (read once, at the first site on the
        // emulator: no other test of this binary runs one).
        // SAFETY: no other thread of this test process reads this variable now.
        unsafe { std::env::set_var("ACCEL_CUDA_EMULATOR_DEVICES", "2") };
    }
    if !gpu && !accel_runtime::cuda::emulator::available() {
        eprintln!("[accel tests] SKIPPED: distributed sites in cuda mode: no GPU and no emulator (no C++20 compiler)");
        return;
    }
    let whole = ints(7_001, 12, 1000);
    let sum: i64 = whole.iter().map(|x| x * 3).sum();
    let prefix: Vec<i64> = whole
        .iter()
        .scan(0, |s, x| {
            *s += x;
            Some(*s)
        })
        .collect();
    let got = ranks(2, |comm| {
        let run = || {
            with_mode(Mode::Cuda, || {
                let xs = DistVec::from_whole(&comm, &whole);
                let s = accelerate!(reduce(|a, b| a + b, 0, map(|x| x * 3, &xs)));
                let sc = DistVec::from_site(&comm, || accelerate!(scan(|a, b| a + b, 0, &xs)));
                (s, sc.gather())
            })
        };
        if gpu {
            run()
        } else {
            accel_runtime::cuda::with_emulator(run)
        }
    });
    for (s, sc) in got {
        assert_eq!(s, sum);
        assert!(sc == prefix);
    }
}

#[test]
fn sites_of_several_operations_run_stage_by_stage() {
    let whole = ints(12_345, 13, 1000);
    let total: i64 = whole.iter().sum();
    let centred: Vec<i64> = whole.iter().map(|x| x * 1000 - total).collect();
    let thirds: i64 = whole.iter().filter(|x| *x % 3 == 0).sum();
    let (lo, hi) = (
        whole.iter().min().copied().unwrap(),
        whole.iter().max().copied().unwrap(),
    );
    for rank_count in 1..=4 {
        let got = ranks(rank_count, |comm| {
            let xs = uneven(&comm, &whole);
            // A reduction, then a map that reads it: each stage split.
            let c = DistVec::from_site(&comm, || {
                accelerate!({
                    let t = reduce(|a, b| a + b, 0, &xs);
                    map(|x| x * 1000 - t, &xs)
                })
            });
            assert_eq!(
                c.starts(),
                xs.starts(),
                "the map's stage keeps the partition"
            );
            // A filter whose kept parts stay spread for the reduction after it.
            let f = accelerate!({
                let kept = filter(|x| x % 3 == 0, &xs);
                reduce(|a, b| a + b, 0, &kept)
            });
            // Two reductions in a tuple: two stages and the tuple from their results.
            let range = accelerate!((
                reduce(|a: i64, b: i64| a.min(b), i64::MAX, &xs),
                reduce(|a: i64, b: i64| a.max(b), i64::MIN, &xs)
            ));
            // A scan whose parts stay spread for the stage that reads them.
            let peak = accelerate!({
                let p = scan(|a, b| a + b, 0, &xs);
                reduce(|a: i64, b: i64| a.max(b), i64::MIN, map(|v| v % 1009, &p))
            });
            let mods = DistVec::from_site(&comm, || {
                accelerate!({
                    let p = scan(|a, b| a + b, 0, &xs);
                    map(|v| v % 1009, &p)
                })
            });
            // The scan's parts stay where they are: the map's stage reads them in place.
            assert_eq!(mods.starts(), xs.starts());
            (c.gather(), f, range, peak, mods.gather())
        });
        let prefix_mods: Vec<i64> = whole
            .iter()
            .scan(0, |s, x| {
                *s += x;
                Some(*s % 1009)
            })
            .collect();
        let peak = prefix_mods.iter().copied().max().unwrap();
        for (c, f, range, p, mods) in got {
            assert_eq!(p, peak, "{rank_count} ranks");
            assert!(mods == prefix_mods, "{rank_count} ranks");
            assert!(c == centred, "{rank_count} ranks");
            assert_eq!(f, thirds, "{rank_count} ranks");
            assert_eq!(range, (lo, hi), "{rank_count} ranks");
        }
    }
}

#[test]
fn iterator_chains_over_a_distributed_sequence_agree_in_every_mode() {
    let whole = ints(5_000, 14, 1000);
    let sum: i64 = whole.iter().map(|x| x * 2).sum();
    let big = whole.iter().filter(|x| **x > 500).count();
    for mode in [Mode::Debug, Mode::Cpu] {
        let got = ranks(3, |comm| {
            with_mode(mode, || {
                let xs = DistVec::from_whole(&comm, &whole);
                let s: i64 = accelerate!(xs.par_iter().map(|x| x * 2).sum::<i64>());
                let c = accelerate!(xs.par_iter().filter(|x| **x > 500).count());
                (s, c)
            })
        });
        assert!(got.iter().all(|&g| g == (sum, big)), "{mode:?}: {got:?}");
    }
}

#[test]
fn float_reductions_are_the_same_on_every_rank_and_exact_where_the_sum_is() {
    for rank_count in 1..=4 {
        let whole: Vec<f64> = ints(30_001, 9, 1 << 20)
            .into_iter()
            .map(|x| x as f64 * 0.25)
            .collect();
        // Multiples of 1/4 below 2^18: every partial sum is exact, in any grouping.
        let exact: f64 = whole.iter().sum();
        let got = ranks(rank_count, |comm| {
            let xs = uneven(&comm, &whole);
            let total: f64 = accelerate!(reduce(|a, b| a + b, 0.0, &xs));
            let waves: f64 = accelerate!(reduce(
                |a, b| a + b,
                0.0,
                map(|x: f64| (x * 1e-3).sin(), &xs)
            ));
            (total, waves.to_bits())
        });
        assert!(got.iter().all(|g| g.0 == exact), "{got:?} vs {exact}");
        assert!(
            got.iter().all(|g| g.1 == got[0].1),
            "every rank has the same bits: {got:?}"
        );
    }
}

#[test]
fn sequences_of_other_partitions_and_replicated_ones_combine_with_the_first() {
    for rank_count in 1..=4 {
        let n = 5_003;
        let a = ints(n, 1, 100);
        let b = ints(n, 2, 100);
        let expect: Vec<i64> = a.iter().zip(&b).map(|(x, y)| 3 * x - y).collect();
        let dot: i64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let got = ranks(rank_count, |comm| {
            let xs = DistVec::from_whole(&comm, &a);
            let ys = uneven(&comm, &b);
            let both = DistVec::from_site(&comm, || accelerate!(map2(|x, y| 3 * x - y, &xs, &ys)));
            assert_eq!(both.starts(), xs.starts(), "the first sequence's partition");
            let with_local: Vec<i64> = accelerate!(map2(|x, y| 3 * x - y, &xs, &b));
            let d = accelerate!(reduce(|p, q| p + q, 0, map2(|x, y| x * y, &ys, &xs)));
            (both.gather(), with_local, d)
        });
        for (both, with_local, d) in got {
            assert_eq!(both, expect);
            assert_eq!(with_local, expect);
            assert_eq!(d, dot);
        }
    }
}

#[test]
fn histograms_scatters_and_random_reads_see_the_whole_sequence() {
    for rank_count in 1..=4 {
        let n = 9_000;
        let keys: Vec<usize> = ints(n, 3, 37).into_iter().map(|k| k as usize).collect();
        let vals = ints(n, 4, 50);
        let mut bins = vec![0i64; 37];
        for (k, v) in keys.iter().zip(&vals) {
            bins[*k] += v;
        }
        let perm: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
        let mut scattered = vec![-1i64; n];
        for (i, v) in perm.iter().zip(&vals) {
            scattered[*i] = *v;
        }
        let gathered_reads: Vec<i64> = perm.iter().map(|&i| vals[i]).collect();
        let got = ranks(rank_count, |comm| {
            let ks = DistVec::from_whole(&comm, &keys);
            let vs = uneven(&comm, &vals);
            let ps = DistVec::from_whole(&comm, &perm);
            let zero = vec![0i64; 37];
            let h = accelerate!(reduce_by_index(zero, |a, b| a + b, 0, &ks, &vs));
            let dest = vec![-1i64; n];
            let s = accelerate!(scatter(dest, &ps, &vs));
            // Read at other indices: gathered first (a DistVec has no indexing).
            let all = vs.gather();
            let reads = DistVec::from_site(&comm, || accelerate!(map(|i: usize| all[i], &ps)));
            (h, s, reads.gather())
        });
        for (h, s, reads) in got {
            assert_eq!(h, bins);
            assert_eq!(s, scattered);
            assert_eq!(reads, gathered_reads);
        }
    }
}

#[test]
fn histograms_and_scatters_into_a_spread_destination_stay_spread() {
    for rank_count in 1..=4 {
        let (n, m) = (9_000, 1_001);
        // Indices past the destination are skipped, as in one process.
        let keys: Vec<usize> = ints(n, 5, m as i64 + 20)
            .into_iter()
            .map(|k| k as usize)
            .collect();
        let vals = ints(n, 6, 50);
        let base = ints(m, 7, 10);
        let mut bins = base.clone();
        for (k, v) in keys.iter().zip(&vals) {
            if *k < m {
                bins[*k] += v;
            }
        }
        // A permutation of part of the destination's indices: no index twice.
        let perm: Vec<usize> = (0..n).map(|i| (i * 7919) % (2 * m)).collect();
        let mut seen = vec![false; 2 * m];
        let unique: Vec<(usize, i64)> = perm
            .iter()
            .zip(&vals)
            .filter(|(i, _)| !std::mem::replace(&mut seen[**i], true))
            .map(|(i, v)| (*i, *v))
            .collect();
        let (at, vs): (Vec<usize>, Vec<i64>) = unique.iter().copied().unzip();
        let mut scattered = base.clone();
        for (i, v) in &unique {
            if *i < m {
                scattered[*i] = *v;
            }
        }
        let got = ranks(rank_count, |comm| {
            let dest = uneven(&comm, &base);
            let ks = DistVec::from_whole(&comm, &keys);
            let xs = DistVec::from_whole(&comm, &vals);
            let h = DistVec::from_site(&comm, || {
                accelerate!(reduce_by_index(&dest, |a, b| a + b, 0, &ks, &xs))
            });
            assert_eq!(h.starts(), dest.starts(), "the destination's partition");
            let whole: Vec<i64> = accelerate!(reduce_by_index(&dest, |a, b| a + b, 0, &ks, &xs));
            let is = DistVec::from_whole(&comm, &at);
            let ws = uneven(&comm, &vs);
            let s = DistVec::from_site(&comm, || accelerate!(scatter(&dest, &is, &ws)));
            assert_eq!(s.starts(), dest.starts());
            (h.gather(), whole, s.gather())
        });
        for (h, whole, s) in got {
            assert!(h == bins, "reduce_by_index kept, {rank_count} ranks");
            assert!(
                whole == bins,
                "reduce_by_index gathered, {rank_count} ranks"
            );
            assert!(s == scattered, "scatter, {rank_count} ranks");
        }
    }
}

#[test]
fn a_failure_on_one_rank_is_the_same_error_on_every_rank() {
    let n = 4_000;
    let mut at: Vec<usize> = (0..n).map(|i| i % 100).collect();
    at[3_500] = 100; // out of bounds: on the last rank's part
    let table: Vec<i64> = (0..100).collect();
    let got = ranks(3, |comm| {
        let idx = DistVec::from_whole(&comm, &at);
        let e = try_accelerate!(map(|i: usize| table[i], &idx)).unwrap_err();
        let ts = DistVec::from_whole(&comm, &table);
        let d = try_accelerate!(reduce(|a, b| a + b, 0, map(|x: i64| 100 / (x - 50), &ts)));
        (e.kind(), e.to_string(), d.map_err(|e| e.kind()))
    });
    for (kind, message, division) in &got {
        assert_eq!(*kind, ErrorKind::IndexOutOfBounds, "{message}");
        assert!(
            message.contains("the index is 100") && message.contains("on rank 2 of 3"),
            "{message}"
        );
        assert_eq!(*message, got[0].1, "every rank reports the same failure");
        assert_eq!(*division, Err(ErrorKind::DivisionByZero));
    }
}

#[test]
fn debug_mode_and_compiled_code_agree_and_unsplit_sites_still_run() {
    let whole = ints(3_001, 5, 1000);
    let expect_sum: i64 = whole.iter().map(|x| x * 2).sum();
    let expect_both = expect_sum + whole.iter().max().copied().unwrap();
    for mode in [Mode::Debug, Mode::Cpu] {
        let got = with_mode(mode, || {
            ranks(3, |comm| {
                // ranks run on new threads: the mode is set on each.
                with_mode(mode, || {
                    let xs = DistVec::from_whole(&comm, &whole);
                    let doubled = DistVec::from_site(&comm, || accelerate!(map(|x| x * 2, &xs)));
                    let s = accelerate!(reduce(|a, b| a + b, 0, &doubled));
                    // Two operations: not one split, so every rank runs it whole.
                    let both = accelerate!(
                        reduce(|a, b| a + b, 0, &doubled)
                            + reduce(|a: i64, b: i64| a.max(b), 0, &xs)
                    );
                    (doubled.local().len(), s, both)
                })
            })
        });
        let parts: usize = got.iter().map(|g| g.0).sum();
        assert_eq!(parts, whole.len(), "{mode:?}");
        assert!(
            got.iter().all(|g| (g.1, g.2) == (expect_sum, expect_both)),
            "{mode:?}: {got:?}"
        );
    }
}

#[test]
fn records_and_tuples_are_distributed_column_by_column() {
    let pts: Vec<(f32, i32)> = (0..2_500i32).map(|i| (i as f32 * 0.5, i % 7)).collect();
    let got = ranks(4, |comm| {
        let xs = DistVec::scatter_from(&comm, 1, (comm.rank() == 1).then_some(&pts[..]));
        let shifted = DistVec::from_site(&comm, || {
            accelerate!(map(|(x, k): (f32, i32)| (x + 1.0, k * 2), &xs))
        });
        let to_root = shifted.gather_to(2);
        (xs.gather(), to_root, shifted.rebalance().local().len())
    });
    let expect: Vec<(f32, i32)> = pts.iter().map(|&(x, k)| (x + 1.0, k * 2)).collect();
    for (r, (all, root, even)) in got.into_iter().enumerate() {
        assert_eq!(all, pts);
        assert_eq!(root, (r == 2).then(|| expect.clone()));
        assert_eq!(even, 625);
    }
}

#[test]
fn misuse_is_reported_not_run() {
    let got = ranks(2, |comm| {
        let xs = DistVec::from_whole(&comm, &[1i64, 2, 3]);
        let pair = (xs.clone(), 1i64);
        let e = try_accelerate!(map(|x| x + pair.1, &pair.0));
        e.map_err(|e| (e.kind(), e.to_string()))
    });
    // A DistVec inside a tuple is a part only: refused rather than read as the whole.
    for g in got {
        let (_, message) = g.unwrap_err();
        assert!(
            message.contains("a distributed sequence inside another captured value"),
            "{message}"
        );
    }
    let two_sites = std::panic::catch_unwind(|| {
        ranks(1, |comm| {
            let xs = DistVec::from_whole(&comm, &[1i64, 2]);
            DistVec::from_site(&comm, || {
                let ys: Vec<i64> = accelerate!(map(|x| x + 1, &xs));
                accelerate!(map(|y| y * 2, &ys))
            })
        })
    });
    let Err(p) = two_sites else {
        panic!("two sites in from_site ran")
    };
    let message = p.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("exactly one accelerate! site; its closure ran 2"),
        "{message}"
    );
    // A site that fails inside from_site leaves later sites' results whole.
    let after = ranks(2, |comm| {
        let xs = DistVec::from_whole(&comm, &[4usize, 1, 0, 2]);
        let table = [10i64, 20];
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            DistVec::from_site(&comm, || accelerate!(map(|i: usize| table[i], &xs)))
        }));
        assert!(failed.is_err());
        let whole: Vec<usize> = accelerate!(map(|i| i + 1, &xs));
        whole
    });
    assert_eq!(after, vec![vec![5, 2, 1, 3]; 2]);
}
