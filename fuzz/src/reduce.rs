//! Reducing a failing program: simplify its choices while it keeps failing the same way.
//!
//! Each round regenerates the program from many simplified choice sequences (chunks
//! deleted, values zeroed or halved), keeps the candidates whose source is shorter, runs
//! them as one batch, and continues from the shortest that still fails the same way;
//! it stops when no candidate does.

use crate::choices::Choices;
use crate::gen::{generate, Program};
use crate::run::{Runner, Verdict};

/// Candidates built per round (one batch).
const PER_ROUND: usize = 48;
/// Rounds at most.
const ROUNDS: usize = 40;

/// The smallest program found that fails like `program` did, with its verdict.
pub fn reduce(
    runner: &Runner,
    program: &Program,
    verdict: &Verdict,
    log: bool,
) -> Result<(Program, Verdict), String> {
    let mut best = (program.clone(), verdict.clone());
    for round in 0..ROUNDS {
        let candidates = candidates(&best.0);
        if candidates.is_empty() {
            break;
        }
        let verdicts = runner.run(&candidates)?;
        let found = candidates
            .iter()
            .filter_map(|c| {
                verdicts
                    .get(&c.id)
                    .filter(|v| v.same_failure(verdict))
                    .map(|v| (c, v))
            })
            .min_by_key(|(c, _)| (c.source.len(), c.choices.len()));
        match found {
            Some((c, v)) => {
                if log {
                    eprintln!("  round {round}: {} bytes", c.source.len());
                }
                best = (regenerate(program.id, &c.choices), v.clone());
            }
            None => break,
        }
    }
    Ok(best)
}

/// Program `id` from `choices`.
pub fn regenerate(id: usize, choices: &[u32]) -> Program {
    generate(id, &mut Choices::replay(choices.to_vec()))
}

/// Simplifications of `p`'s choices that give a shorter source, shortest first.
fn candidates(p: &Program) -> Vec<Program> {
    let c = &p.choices;
    let mut seqs: Vec<Vec<u32>> = Vec::new();
    let mut size = c.len().next_power_of_two();
    while size >= 1 {
        for start in (0..c.len()).step_by(size) {
            let mut s = c.clone();
            s.drain(start..(start + size).min(c.len()));
            seqs.push(s);
        }
        size /= 2;
    }
    for k in 0..c.len() {
        if c[k] != 0 {
            let mut zero = c.clone();
            zero[k] = 0;
            seqs.push(zero);
            let mut half = c.clone();
            half[k] /= 2;
            seqs.push(half);
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Program> = seqs
        .into_iter()
        .map(|s| regenerate(0, &s))
        .filter(|q| q.source.len() < p.source.len() && seen.insert(q.source.clone()))
        .collect();
    out.sort_by_key(|q| q.source.len());
    out.truncate(PER_ROUND);
    // Numbered 0, 1, ... to run as one batch.
    out.iter()
        .enumerate()
        .map(|(k, q)| regenerate(k, &q.choices))
        .collect()
}
