//! The Viterbi algorithm for a hidden Markov model, in the paper's two versions: a
//! functional one (`map` over the sequences; each a loop of `create`s over the states) that
//! computes the best path's log-probability, and an imperative one (`parallel_loop` over
//! the sequences, writing tensors) that also backtracks the best state path. Random data
//! at the paper's scale: 100 sequences, 600K signals in all (`--small` for a quick run).
//! Both are checked against a sequential reference, and the path against its score.
//!
//! `cargo run --release -p accel-examples --bin viterbi [-- --small]`

use crate::{measure, Report};
use accel_runtime::prelude::*;

/// The log-probability of the most likely state path that emits `obs`.
#[accel]
fn viterbi_score(
    obs: Vec<usize>,
    k: usize,
    m: usize,
    log_init: &[f64],
    log_trans: &[f64],
    log_emit: &[f64],
) -> f64 {
    let mut delta = create(k, |j| log_init[j] + log_emit[j * m + obs[0]]);
    for t in 1..obs.len() {
        delta = create(k, |j| {
            let mut best = f64::NEG_INFINITY;
            for i in 0..k {
                best = best.max(delta[i] + log_trans[i * k + j]);
            }
            best + log_emit[j * m + obs[t]]
        });
    }
    reduce(|a, b| a.max(b), f64::NEG_INFINITY, &delta)
}

/// A hidden Markov model with `k` states over `m` symbols, as log-probabilities.
struct Hmm {
    k: usize,
    m: usize,
    log_init: Vec<f64>,
    log_trans: Vec<f64>,
    log_emit: Vec<f64>,
}

/// Rows of positive weights normalised into log-probabilities.
fn log_rows(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    let mut w: Vec<f64> = (0..rows * cols)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1.0 + (x >> 40) as f64 / (1u64 << 24) as f64 * 9.0
        })
        .collect();
    for r in 0..rows {
        let sum: f64 = w[r * cols..(r + 1) * cols].iter().sum();
        w[r * cols..(r + 1) * cols]
            .iter_mut()
            .for_each(|v| *v = (*v / sum).ln());
    }
    w
}

/// Sequential reference: scores and best paths.
fn reference(hmm: &Hmm, seqs: &[Vec<usize>]) -> Vec<(f64, Vec<usize>)> {
    let (k, m) = (hmm.k, hmm.m);
    seqs.iter()
        .map(|obs| {
            let t_len = obs.len();
            let mut delta: Vec<f64> = (0..k)
                .map(|j| hmm.log_init[j] + hmm.log_emit[j * m + obs[0]])
                .collect();
            let mut back = vec![0usize; t_len * k];
            for t in 1..t_len {
                let next: Vec<f64> = (0..k)
                    .map(|j| {
                        let (mut best, mut arg) = (f64::NEG_INFINITY, 0);
                        for (i, d) in delta.iter().enumerate() {
                            let v = d + hmm.log_trans[i * k + j];
                            if v > best {
                                best = v;
                                arg = i;
                            }
                        }
                        back[t * k + j] = arg;
                        best + hmm.log_emit[j * m + obs[t]]
                    })
                    .collect();
                delta = next;
            }
            let (mut j, mut score) = (0, f64::NEG_INFINITY);
            for (s, &v) in delta.iter().enumerate() {
                if v > score {
                    score = v;
                    j = s;
                }
            }
            let mut path = vec![0; t_len];
            path[t_len - 1] = j;
            for t in (1..t_len).rev() {
                j = back[t * k + j];
                path[t - 1] = j;
            }
            (score, path)
        })
        .collect()
}

/// The imperative version: delta, backpointer and path tensors written by a parallel loop.
fn imperative(hmm: &Hmm, seqs: &Vec<Vec<usize>>) -> (Vec<f64>, Vec<usize>) {
    let (n, t_len, k, m) = (seqs.len(), seqs[0].len(), hmm.k, hmm.m);
    let (log_init, log_trans, log_emit) = (&hmm.log_init, &hmm.log_trans, &hmm.log_emit);
    let cur = Tensor::<f64>::zeros(&[n, k]);
    let next = Tensor::<f64>::zeros(&[n, k]);
    let back = Tensor::<usize>::zeros(&[n, t_len, k]);
    let path = Tensor::<usize>::zeros(&[n, t_len]);
    let score = Tensor::<f64>::zeros(&[n]);
    accelerate!(parallel_loop(n, |s| {
        for j in 0..k {
            cur.set([s, j], log_init[j] + log_emit[j * m + seqs[s][0]]);
        }
        for t in 1..t_len {
            for j in 0..k {
                let mut best = f64::NEG_INFINITY;
                let mut arg = 0;
                for i in 0..k {
                    let v = cur.get([s, i]) + log_trans[i * k + j];
                    if v > best {
                        best = v;
                        arg = i;
                    }
                }
                next.set([s, j], best + log_emit[j * m + seqs[s][t]]);
                back.set([s, t, j], arg);
            }
            for j in 0..k {
                cur.set([s, j], next.get([s, j]));
            }
        }
        let mut j = 0;
        for i in 1..k {
            if cur.get([s, i]) > cur.get([s, j]) {
                j = i;
            }
        }
        score.set([s], cur.get([s, j]));
        path.set([s, t_len - 1], j);
        let mut t = t_len - 1;
        while t > 0 {
            j = back.get([s, t, j]);
            path.set([s, t - 1], j);
            t -= 1;
        }
    }));
    (score.to_vec(), path.to_vec())
}

/// Runs both versions in every available mode at the paper's scale (or small), each checked
/// against the sequential reference; returns a header line and their reports.
pub fn run(small: bool) -> (String, Vec<Report>) {
    let (n, t_len, k, m) = if small {
        (10, 200, 8, 4)
    } else {
        (100, 6000, 16, 4)
    };
    let hmm = Hmm {
        k,
        m,
        log_init: log_rows(1, k, 1),
        log_trans: log_rows(k, k, 2),
        log_emit: log_rows(k, m, 3),
    };
    // Random observations (fixed seeds), as real signals are.
    let seqs: Vec<Vec<usize>> = (0..n)
        .map(|s| crate::random::below(t_len, 1000 + s as u64, m))
        .collect();
    let size = format!("{n} x {t_len} signals, {k} states");
    let (log_init, log_trans, log_emit) = (&hmm.log_init, &hmm.log_trans, &hmm.log_emit);
    let scores_close = |got: &[f64], want: &[f64]| -> Result<(), String> {
        match (0..want.len()).find(|&s| (got[s] - want[s]).abs() > 1e-9 * want[s].abs()) {
            Some(s) => Err(format!(
                "score of sequence {s} is {} but the reference says {}",
                got[s], want[s]
            )),
            None => Ok(()),
        }
    };
    let functional = measure(
        "viterbi (functional)",
        size.clone(),
        || {
            reference(&hmm, &seqs)
                .into_iter()
                .map(|(score, _)| score)
                .collect::<Vec<f64>>()
        },
        || {
            accelerate!(map(
                |obs| viterbi_score(obs, k, m, log_init, log_trans, log_emit),
                &seqs
            ))
        },
        |_, got, want| scores_close(got, want),
    );
    let imperative = measure(
        "viterbi (imperative)",
        size,
        || {
            let r = reference(&hmm, &seqs);
            let scores: Vec<f64> = r.iter().map(|(score, _)| *score).collect();
            let paths: Vec<usize> = r.into_iter().flat_map(|(_, path)| path).collect();
            (scores, paths)
        },
        || imperative(&hmm, &seqs),
        |_, got, want| {
            scores_close(&got.0, &want.0)?;
            match (0..n)
                .find(|&s| got.1[s * t_len..(s + 1) * t_len] != want.1[s * t_len..(s + 1) * t_len])
            {
                Some(s) => Err(format!("the best path of sequence {s} differs")),
                None => Ok(()),
            }
        },
    );
    (
        format!("viterbi: {n} sequences x {t_len} signals, {k} states"),
        vec![functional, imperative],
    )
}
