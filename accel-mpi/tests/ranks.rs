//! Every operation over distributed sequences across MPI processes, against the result of
//! the whole sequence computed in one process (sequential Rust). Run under mpirun with 1
//! to 4 processes (`.ci/run`: `mpirun -n K cargo test --test ranks`'s binary); a failed
//! check prints which and exits non-zero, which stops the job (no rank is left waiting).

use accel_runtime::comm::{all_gather_words, Communicator};
use accel_runtime::prelude::*;
use accel_runtime::{DistVec, ErrorKind};
use std::sync::Arc;

type Comm = Arc<dyn Communicator>;

/// A check, run on every rank.
type Check = fn(&Comm);

/// A fixed pseudo-random sequence of values in `0..m` (every process makes the same).
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

/// `whole` spread unevenly: rank `r` holds a part whose length grows with `r`.
fn uneven<T: Accel + Clone>(comm: &Comm, whole: &[T]) -> DistVec<T> {
    let size = comm.size();
    let weight = size * (size + 1) / 2;
    let mut at = 0;
    let mut mine = 0..0;
    for r in 0..size {
        let next = if r + 1 == size {
            whole.len()
        } else {
            (at + (r + 1) * whole.len() / weight).min(whole.len())
        };
        if r == comm.rank() {
            mine = at..next;
        }
        at = next;
    }
    DistVec::from_local(comm, whole[mine].to_vec())
}

fn map_reduce_scan_filter(comm: &Comm) {
    for n in [0, 1, 3, 1000, 20_011] {
        let whole = ints(n, n as u64 + 1, 1000);
        let xs = DistVec::from_whole(comm, &whole);
        let kept = DistVec::from_site(comm, || accelerate!(map(|x| x * x - 7, &xs)));
        assert_eq!(kept.starts(), xs.starts(), "a map keeps the partition");
        let squares: Vec<i64> = whole.iter().map(|x| x * x - 7).collect();
        assert!(
            kept.local() == &squares[xs.range()],
            "map, local part, n = {n}"
        );
        let gathered: Vec<i64> = accelerate!(map(|x| x * x - 7, &xs));
        assert!(gathered == squares, "map, gathered, n = {n}");
        let total = accelerate!(reduce(|a, b| a + b, 0, &xs));
        assert_eq!(total, whole.iter().sum::<i64>(), "reduce, n = {n}");
        let scanned = DistVec::from_site(comm, || accelerate!(scan(|a, b| a + b, 0, &xs)));
        let prefix: Vec<i64> = whole
            .iter()
            .scan(0, |s, x| {
                *s += x;
                Some(*s)
            })
            .collect();
        assert!(scanned.gather() == prefix, "scan, n = {n}");
        let odd = DistVec::from_site(comm, || accelerate!(filter(|x| x % 2 == 1, &xs)));
        let expect: Vec<i64> = whole.iter().copied().filter(|x| x % 2 == 1).collect();
        assert!(odd.gather() == expect, "filter, n = {n}");
        let kept_here = xs.local().iter().filter(|x| *x % 2 == 1).count();
        assert_eq!(
            odd.local().len(),
            kept_here,
            "filter keeps each rank's elements"
        );
    }
}

fn floats_agree_on_every_rank(comm: &Comm) {
    let whole: Vec<f64> = ints(30_001, 9, 1 << 20)
        .into_iter()
        .map(|x| x as f64 * 0.25)
        .collect();
    let xs = uneven(comm, &whole);
    let total: f64 = accelerate!(reduce(|a, b| a + b, 0.0, &xs));
    assert_eq!(total, whole.iter().sum::<f64>(), "exact float sum");
    let waves: f64 = accelerate!(reduce(
        |a, b| a + b,
        0.0,
        map(|x: f64| (x * 1e-3).sin(), &xs)
    ));
    let bits = all_gather_words(&**comm, waves.to_bits());
    assert!(
        bits.iter().all(|&b| b == bits[0]),
        "every rank has the same bits: {bits:?}"
    );
    let sequential: f64 = whole.iter().map(|x| (x * 1e-3).sin()).sum();
    assert!(
        (waves - sequential).abs() <= 1e-9 * sequential.abs(),
        "{waves} vs {sequential}"
    );
}

fn partitions_combine(comm: &Comm) {
    let n = 5_003;
    let (a, b) = (ints(n, 1, 100), ints(n, 2, 100));
    let expect: Vec<i64> = a.iter().zip(&b).map(|(x, y)| 3 * x - y).collect();
    let xs = DistVec::from_whole(comm, &a);
    let ys = uneven(comm, &b);
    let both = DistVec::from_site(comm, || accelerate!(map2(|x, y| 3 * x - y, &xs, &ys)));
    assert_eq!(both.starts(), xs.starts());
    assert!(both.gather() == expect, "map2 of two partitions");
    let with_local: Vec<i64> = accelerate!(map2(|x, y| 3 * x - y, &xs, &b));
    assert!(with_local == expect, "map2 with a replicated Vec");
    let dot = accelerate!(reduce(|p, q| p + q, 0, map2(|x, y| x * y, &ys, &xs)));
    assert_eq!(dot, a.iter().zip(&b).map(|(x, y)| x * y).sum::<i64>());
}

fn histograms_and_scatters(comm: &Comm) {
    let n = 9_000;
    let keys: Vec<usize> = ints(n, 3, 37).into_iter().map(|k| k as usize).collect();
    let vals = ints(n, 4, 50);
    let perm: Vec<usize> = (0..n).map(|i| (i * 7919) % n).collect();
    let mut bins = vec![0i64; 37];
    let mut scattered = vec![-1i64; n];
    for i in 0..n {
        bins[keys[i]] += vals[i];
        scattered[perm[i]] = vals[i];
    }
    let ks = DistVec::from_whole(comm, &keys);
    let vs = uneven(comm, &vals);
    let ps = DistVec::from_whole(comm, &perm);
    let zero = vec![0i64; 37];
    let h = accelerate!(reduce_by_index(zero, |a, b| a + b, 0, &ks, &vs));
    assert_eq!(h, bins, "reduce_by_index");
    let dest = vec![-1i64; n];
    let s = accelerate!(scatter(dest, &ps, &vs));
    assert!(s == scattered, "scatter");
    // Into a spread destination: each rank merges its part of it.
    let spread_bins = DistVec::from_whole(comm, &vec![0i64; 37]);
    let kept = DistVec::from_site(comm, || {
        accelerate!(reduce_by_index(&spread_bins, |a, b| a + b, 0, &ks, &vs))
    });
    assert_eq!(kept.starts(), spread_bins.starts());
    assert_eq!(
        kept.gather(),
        bins,
        "reduce_by_index into a spread destination"
    );
    let spread_dest = uneven(comm, &vec![-1i64; n]);
    let into = DistVec::from_site(comm, || accelerate!(scatter(&spread_dest, &ps, &vs)));
    assert_eq!(into.starts(), spread_dest.starts());
    assert!(
        into.gather() == scattered,
        "scatter into a spread destination"
    );
}

fn records_and_collectives(comm: &Comm) {
    let pts: Vec<(f32, i32)> = (0..2_500i32).map(|i| (i as f32 * 0.5, i % 7)).collect();
    let root = comm.size() - 1;
    let xs = DistVec::scatter_from(comm, root, (comm.rank() == root).then_some(&pts[..]));
    assert!(xs.gather() == pts, "scatter_from then gather");
    let moved = DistVec::from_site(comm, || {
        accelerate!(map(|(x, k): (f32, i32)| (x + 1.0, k * 2), &xs))
    });
    let expect: Vec<(f32, i32)> = pts.iter().map(|&(x, k)| (x + 1.0, k * 2)).collect();
    assert_eq!(moved.gather_to(0), (comm.rank() == 0).then_some(expect));
    let skewed = uneven(comm, &pts);
    let even = skewed.rebalance();
    assert_eq!(even.starts(), xs.starts(), "rebalance spreads evenly");
}

fn stages_and_chains(comm: &Comm) {
    let whole = ints(12_345, 13, 1000);
    let xs = uneven(comm, &whole);
    let total: i64 = whole.iter().sum();
    // A reduction, then a map that reads it: two stages, each split.
    let centred = DistVec::from_site(comm, || {
        accelerate!({
            let t = reduce(|a, b| a + b, 0, &xs);
            map(|x| x * 1000 - t, &xs)
        })
    });
    assert_eq!(centred.starts(), xs.starts());
    let expect: Vec<i64> = whole.iter().map(|x| x * 1000 - total).collect();
    assert!(centred.gather() == expect, "a reduction, then a map");
    // A scan, then a reduction of it.
    let peak = accelerate!({
        let p = scan(|a, b| a + b, 0, &xs);
        reduce(|a: i64, b: i64| a.max(b), i64::MIN, map(|v| v % 1009, &p))
    });
    let expect = whole
        .iter()
        .scan(0, |s, x| {
            *s += x;
            Some(*s % 1009)
        })
        .max()
        .unwrap();
    assert_eq!(peak, expect, "a scan, then a reduction");
    // An iterator chain.
    let big = accelerate!(xs.par_iter().filter(|x| **x > 500).count());
    assert_eq!(big, whole.iter().filter(|x| **x > 500).count());
}

fn failures_agree(comm: &Comm) {
    let n = 4_000;
    let mut at: Vec<usize> = (0..n).map(|i| i % 100).collect();
    at[n - 10] = 100; // out of bounds, in the last rank's part
    let table: Vec<i64> = (0..100).collect();
    let idx = DistVec::from_whole(comm, &at);
    let e = try_accelerate!(map(|i: usize| table[i], &idx)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::IndexOutOfBounds, "{e}");
    let last = comm.size() - 1;
    assert!(
        e.to_string()
            .contains(&format!("on rank {last} of {}", comm.size())),
        "{e}"
    );
    // A division by zero on one rank, and sequences of unequal lengths.
    let divisors: Vec<i64> = (0..n as i64)
        .map(|i| if i == 7 { 0 } else { i + 1 })
        .collect();
    let ds = DistVec::from_whole(comm, &divisors);
    let e = try_accelerate!(map(|d: i64| 1000 / d, &ds)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DivisionByZero, "{e}");
    assert!(e.to_string().contains("on rank 0 of"), "{e}");
    let shorter = DistVec::from_whole(comm, &divisors[..n - 1]);
    let e = try_accelerate!(map2(|a: i64, b: i64| a + b, &ds, &shorter)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LengthMismatch, "{e}");
    // Every rank goes on: a collective after the failure completes.
    let after = accelerate!(reduce(|a, b| a + b, 0, &idx));
    assert_eq!(after, at.iter().sum::<usize>());
}

fn main() {
    let mpi = accel_mpi::Mpi::init().expect("MPI starts");
    let world = mpi.world();
    let checks: [(&str, Check); 7] = [
        ("map, reduce, scan and filter", map_reduce_scan_filter),
        ("float reductions", floats_agree_on_every_rank),
        ("sequences of other partitions", partitions_combine),
        ("histograms and scatters", histograms_and_scatters),
        (
            "records, scatter_from, gather_to, rebalance",
            records_and_collectives,
        ),
        ("stages and chains", stages_and_chains),
        ("failures agree", failures_agree),
    ];
    for (name, check) in checks {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&world)));
        if ok.is_err() {
            eprintln!("rank {} of {}: FAILED: {name}", world.rank(), world.size());
            // Stops the job: mpirun ends every rank when one exits without finalizing.
            std::process::exit(1);
        }
        if world.rank() == 0 {
            println!("{} ranks: ok: {name}", world.size());
        }
    }
}
