//! A site over distributed sequences ([`DistVec`](crate::DistVec)): each rank runs the
//! part of the split site (`fission`) over the indices it holds, on its own device, and
//! the ranks combine the parts with collectives.
//!
//! Which captures a rank reads only in its part is decided from what every rank knows
//! alike (the split's sliced captures, each sequence's partition), so every rank makes
//! the same collectives in the same order:
//!
//! - a distributed capture the part reads only at the element's own index, partitioned
//!   like the first such capture, is read in place (its words point at this rank's part,
//!   shifted back by the part's start: see `abi::DistCapture`);
//! - one read so but partitioned otherwise (over the same length) is moved to that
//!   partition first (`comm::redistribute`: each rank receives what its part lacks);
//! - every other distributed capture (read at other indices) is all-gathered first, and
//!   the part reads the whole;
//! - the ranks' parts are the first read-in-place capture's partition (clipped to the
//!   operation's length), else even parts of it.
//!
//! Then every rank says whether its part failed (one all-gather of a status); a failure
//! anywhere is the same error on every rank, the first in rank order (the parts follow
//! index order). The combine: `map`, `create`, `filter` (and `scan`, after adding the
//! carry into each part) keep each rank's part where the caller keeps it distributed
//! ([`DistVec::from_site`](crate::DistVec::from_site)), else all-gather it; `reduce`
//! all-gathers the parts' partial results and folds them in rank order on every rank;
//! `reduce_by_index` and `scatter` all-gather the parts' bins or pairs and merge them on
//! every rank. A site of several operations runs its stages one after another
//! ([`compile`]), each split where it can be, a stage's sequence result staying spread
//! (a distributed capture of the later stages); what does not split runs whole on every
//! rank from the gathered captures, and says so once.
//!
//! A `reduce_by_index` or `scatter` whose destination is itself distributed (and read
//! only by the combine) keeps it so: the bins or pairs go to the ranks that own them
//! ([`route`]), and each rank merges its part of the destination.

mod compile;
mod route;

use super::derived::Base;
use super::fission::{columns_of, Combined, FissionSite};
use crate::backend::abi::{Arena, DistCapture, Marshal, Touch};
use crate::backend::failure::Failure;
use crate::backend::layout::size_of;
use crate::backend::{CompiledSite, Run};
use crate::comm::{self, Communicator};
use accel_ir::ScalarType;
use std::sync::Arc;

pub use compile::{compile, DistSite};
use compile::{Last, Program};

/// A run's result, and where each rank's part of it begins where each rank kept its part
/// of a sequence result.
type Ran = (Run, Option<Vec<usize>>);

/// The communicator of the captured distributed sequences and of the caller's
/// `DistVec::from_site` (one for all of them).
fn communicator(m: &Marshal<'_>) -> Result<Arc<dyn Communicator>, String> {
    let all: Vec<Arc<dyn Communicator>> = m
        .distributed
        .iter()
        .map(|c| Arc::clone(&c.comm))
        .chain(crate::dist::keeping_over())
        .collect();
    let first = all
        .first()
        .ok_or("a distributed site has no distributed capture (a bug in accel)")?;
    if all
        .iter()
        .any(|c| !std::ptr::addr_eq(Arc::as_ptr(c), Arc::as_ptr(first)))
    {
        return Err(
            "the captured distributed sequences (and DistVec::from_site's) belong to different communicators"
                .into(),
        );
    }
    Ok(Arc::clone(first))
}

/// Replaces capture `c`'s words by the whole sequence, all-gathered into `arena`.
fn gather_capture(
    c: &DistCapture,
    comm: &dyn Communicator,
    words: &mut [u64],
    arena: &mut Arena,
) -> Result<(), String> {
    let total = c.starts[c.starts.len() - 1];
    let to = [0, total];
    replace_columns(c, comm.rank(), (&to, 0), words, arena, |size, mine, out| {
        comm.all_gather_into(mine, &comm::byte_counts(&c.starts, size), out)
    })
}

/// Replaces capture `c`'s words by this rank's part of it spread as `to` (the parts'
/// partition), moved between the ranks into `arena`.
fn respread_capture(
    c: &DistCapture,
    to: &[usize],
    comm: &dyn Communicator,
    words: &mut [u64],
    arena: &mut Arena,
) -> Result<(), String> {
    let r = comm.rank();
    replace_columns(c, r, (to, r), words, arena, |size, mine, out| {
        comm::redistribute(comm, mine, &c.starts, to, size, out)
    })
}

/// Replaces each column of capture `c` by new memory in `arena` for part `part` of the
/// partition `to` (`(to, part)`), which `fill(size, mine, out)` fills from this rank's
/// (`r`) part of the column; the column's word is then the new memory's address shifted
/// back by the part's start, as a distributed capture's words are.
fn replace_columns(
    c: &DistCapture,
    r: usize,
    (to, part): (&[usize], usize),
    words: &mut [u64],
    arena: &mut Arena,
    fill: impl Fn(usize, &[u8], &mut [u8]),
) -> Result<(), String> {
    let (start, len) = (c.starts[r], c.starts[r + 1] - c.starts[r]);
    let (new_start, new_len) = (to[part], to[part + 1] - to[part]);
    for (k, &size) in c.sizes.iter().enumerate() {
        let w = &mut words[c.word + 1 + k];
        let mine = w.wrapping_add((start * size) as u64) as usize;
        let dst = arena.alloc_own(new_len * size, size, Touch::Whole);
        if dst.is_null() {
            return Err(format!(
                "could not allocate {} bytes for a distributed sequence",
                new_len * size
            ));
        }
        // SAFETY: the capture's column holds this rank's `len` elements of `size` bytes
        // at `mine` (its word is that address shifted back by `start` elements); `dst` is
        // a fresh allocation of `new_len * size` bytes.
        let (mine, out) = unsafe {
            (
                std::slice::from_raw_parts(mine as *const u8, len * size),
                std::slice::from_raw_parts_mut(dst, new_len * size),
            )
        };
        fill(size, mine, out);
        *w = (dst as u64).wrapping_sub((new_start * size) as u64);
    }
    Ok(())
}

/// Every rank's outcome; the first failure in rank order is every rank's error.
/// One all-gather of a word when every part succeeded; the messages only when one
/// failed (every rank then knows it, and exchanges them).
fn agree(comm: &dyn Communicator, run: &Result<Run, String>) -> Result<(), String> {
    let failed = comm::all_gather_words(comm, run.is_err() as u64);
    if failed.iter().all(|&f| f == 0) {
        return Ok(());
    }
    let message = run.as_ref().err().map_or("", String::as_str);
    let all = comm::exchange(comm, message.as_bytes());
    let r = failed.iter().position(|&f| f != 0).unwrap_or(0);
    Err(format!(
        "{} (on rank {r} of {})",
        String::from_utf8_lossy(&all[r]),
        comm.size()
    ))
}

/// The words `[len, columns..]` of every rank's sequence `words` concatenated in rank
/// order (columns of `columns`' types, allocated in `arena`), and where each part begins.
fn all_gather_seq(
    comm: &dyn Communicator,
    words: &[u64],
    columns: &[ScalarType],
    arena: &mut Arena,
) -> Result<(Vec<u64>, Vec<usize>), String> {
    let len = words[0] as usize;
    let lengths: Vec<usize> = comm::all_gather_words(comm, len as u64)
        .into_iter()
        .map(|l| l as usize)
        .collect();
    let starts = comm::starts_of(&lengths);
    let total = starts[starts.len() - 1];
    let mut out = vec![total as u64];
    for (k, s) in columns.iter().enumerate() {
        let size = size_of(*s);
        let dst = arena.alloc_own(total * size, size, Touch::Whole);
        if dst.is_null() {
            return Err(format!(
                "could not allocate {} bytes for the result",
                total * size
            ));
        }
        // SAFETY: column `k` of the part's result holds `len` elements of `size` bytes;
        // `dst` is a fresh allocation of `total * size` bytes.
        let (mine, all) = unsafe {
            (
                std::slice::from_raw_parts(words[1 + k] as *const u8, len * size),
                std::slice::from_raw_parts_mut(dst, total * size),
            )
        };
        comm.all_gather_into(mine, &comm::byte_counts(&starts, size), all);
        out.push(dst as u64);
    }
    Ok((out, starts))
}

/// The last element of a sequence's columns (`words`: `[len, columns..]`, `len > 0`), a
/// word per column.
fn last_element(words: &[u64], columns: &[ScalarType]) -> Vec<u64> {
    let len = words[0] as usize;
    columns
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let size = size_of(*s);
            let mut v = [0u8; 8];
            // SAFETY: column `k` holds `len > 0` elements of `size <= 8` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (words[1 + k] as *const u8).add((len - 1) * size),
                    v.as_mut_ptr(),
                    size,
                )
            };
            u64::from_le_bytes(v)
        })
        .collect()
}

/// Every rank's element words (`Some` where its part was not empty), in rank order.
/// (One all-gather of `width + 1` words each: whether there is an element, then its
/// `width` words.)
fn exchange_elements(
    comm: &dyn Communicator,
    mine: Option<&[u64]>,
    width: usize,
) -> Vec<Option<Vec<u64>>> {
    let mut words = vec![0u64; width + 1];
    if let Some(w) = mine {
        words[0] = 1;
        for (to, from) in words[1..].iter_mut().zip(w) {
            *to = *from;
        }
    }
    comm::all_gather_fixed(comm, &words)
        .into_iter()
        .map(|w| (w[0] == 1).then(|| w[1..].to_vec()))
        .collect()
}

impl CompiledSite for DistSite {
    fn summary(&self) -> String {
        match &self.not_split {
            None if self.stages.len() > 1 => {
                format!(
                    "{} stages, each rank's part on {}",
                    self.stages.len(),
                    self.device
                )
            }
            None => format!("each rank's part on {}", self.device),
            Some(why) if self.stages.len() > 1 => format!(
                "{} stages, each rank's part on {} where they split ({why})",
                self.stages.len(),
                self.device
            ),
            Some(why) => format!("whole on every rank ({why})"),
        }
    }

    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    fn run(&self, captures: &Marshal<'_>) -> Result<Run, String> {
        let shared = communicator(captures)?;
        let comm = &*shared;
        let mut words = captures.words.clone();
        let mut spread: Vec<DistCapture> = captures.distributed.clone();
        let mut earlier: Vec<Run> = Vec::new();
        let mut reports = Vec::new();
        let final_stage = self.stages.len() - 1;
        for (k, stage) in self.stages.iter().enumerate() {
            let m = Marshal {
                distributed: spread.clone(),
                ..captures.with_words(words.clone())
            };
            let value = k == final_stage && self.last.is_none();
            // A stage's sequence result stays spread for the stages after it.
            let keep = !value || crate::dist::keeps_parts();
            let (run, kept) = self.run_program(&stage.program, &m, keep, comm)?;
            if value {
                if let Some(starts) = kept {
                    crate::dist::kept(starts);
                }
                return Ok(with_earlier(run, earlier, &reports));
            }
            reports.push(format!("stage {k}: {}", run.report));
            let word = words.len();
            match (kept, &stage.sizes) {
                (Some(starts), Some(sizes)) => {
                    // Its words as a distributed capture's: this rank's columns, shifted
                    // back by its part's start.
                    let start = starts[comm.rank()];
                    words.push(starts[starts.len() - 1] as u64);
                    for (c, size) in sizes.iter().enumerate() {
                        words.push(run.words[1 + c].wrapping_sub((start * size) as u64));
                    }
                    spread.push(DistCapture {
                        word,
                        sizes: sizes.clone(),
                        starts: starts.into(),
                        comm: Arc::clone(&shared),
                    });
                }
                _ => words.extend_from_slice(&run.words),
            }
            earlier.push(run);
        }
        let last = self
            .last
            .as_ref()
            .ok_or("a distributed site of stages without its value (a bug in accel)")?;
        self.run_last(last, words, &spread, captures, comm)
            .map(|run| with_earlier(run, earlier, &reports))
    }
}

/// `run` with the reports of the stages before it, keeping alive the earlier stages'
/// memory that it points into.
fn with_earlier(mut run: Run, earlier: Vec<Run>, reports: &[String]) -> Run {
    for e in earlier {
        if run.words.iter().any(|&w| e.arena.owns(w as usize, 1)) {
            run.arena.absorb(e.arena);
        }
    }
    if !reports.is_empty() {
        run.report = format!("{}; last: {}", reports.join("; "), run.report);
    }
    run
}

impl DistSite {
    /// Runs one program of the site (a stage, or the site) on `captures`: split into each
    /// rank's part, or whole on every rank from the gathered sequences. A sequence result
    /// is kept spread where `keep` says so.
    fn run_program(
        &self,
        program: &Program,
        captures: &Marshal<'_>,
        keep: bool,
        comm: &dyn Communicator,
    ) -> Result<Ran, String> {
        let split = match program {
            Program::Split(s) => Some(s),
            Program::Whole(_) => None,
        };
        let sliced: Vec<usize> =
            split.map_or(Vec::new(), |s| s.sliced.iter().map(|s| s.word).collect());
        // The parts follow the first sequence read in place; the others read in place
        // share its partition.
        let reference = captures
            .distributed
            .iter()
            .find(|c| sliced.contains(&c.word))
            .map(|c| Arc::clone(&c.starts));
        // A histogram's or scatter's destination that is spread stays so.
        let destination = split.and_then(|s| s.destination);
        let spread_destination = captures
            .distributed
            .iter()
            .find(|c| Some(c.word) == destination);
        let mut words = captures.words.clone();
        let mut gathered = Arena::default();
        for c in &captures.distributed {
            let read_in_place = sliced.contains(&c.word);
            match &reference {
                _ if Some(c.word) == destination => {}
                Some(r) if read_in_place && *r == c.starts => {}
                // Spread otherwise over the same length: moved to the parts' partition.
                Some(r) if read_in_place && r.last() == c.starts.last() => {
                    respread_capture(c, r, comm, &mut words, &mut gathered)?
                }
                _ => gather_capture(c, comm, &mut words, &mut gathered)?,
            }
        }
        let m = captures.with_words(words);
        let (mut run, kept) = match program {
            Program::Split(split) => {
                let spread = Spread {
                    reference: reference.as_deref(),
                    destination: spread_destination,
                    keep,
                };
                self.run_split(split, &m, spread, comm)?
            }
            Program::Whole(whole) => {
                let run = self.device.enter(|| whole.run(&m));
                agree(comm, &run)?;
                (run?, None)
            }
        };
        // Results may point into what was gathered (a capture returned as it is).
        run.arena.absorb(gathered);
        Ok((run, kept))
    }

    /// The site's value from its captures and its stages' results (`words`), on every
    /// rank: the distributed ones it reads gathered first.
    fn run_last(
        &self,
        last: &Last,
        mut words: Vec<u64>,
        spread: &[DistCapture],
        captures: &Marshal<'_>,
        comm: &dyn Communicator,
    ) -> Result<Run, String> {
        let mut gathered = Arena::default();
        for c in spread.iter().filter(|c| last.reads.contains(&c.word)) {
            gather_capture(c, comm, &mut words, &mut gathered)?;
        }
        let m = captures.with_words(words);
        let run = last.code.run(&m);
        agree(comm, &run)?;
        let mut run = run?;
        run.arena.absorb(gathered);
        Ok(run)
    }
}

/// How a split site's captures are spread.
#[derive(Clone, Copy)]
struct Spread<'a> {
    /// The partition of the sequences read in place (the parts'), if any is.
    reference: Option<&'a [usize]>,
    /// A histogram's or scatter's destination spread across the ranks.
    destination: Option<&'a DistCapture>,
    /// Whether a sequence result stays spread (each rank keeps its part).
    keep: bool,
}

impl DistSite {
    /// Runs this rank's part of `split` and combines the ranks' parts.
    fn run_split(
        &self,
        split: &FissionSite,
        m: &Marshal<'_>,
        spread: Spread<'_>,
        comm: &dyn Communicator,
    ) -> Result<Ran, String> {
        let reference = spread.reference;
        let lengths = split.length.run(m)?.words;
        let n = lengths[0] as usize;
        if let (Some(kind), [a, b]) = (split.lengths_differ, &lengths[..]) {
            if a != b {
                return Err(Failure::new(kind, *a, *b).describe());
            }
        }
        let (r, size) = (comm.rank(), comm.size());
        let starts = match reference {
            Some(s) => s.iter().map(|&x| x.min(n)).collect(),
            None => comm::even_starts(n, size),
        };
        let (lo, hi) = (starts[r], starts[r + 1]);
        let base = Base::of(m);
        let (_, code) = &split.parts[0];
        let part = base.part(lo, hi, &split.sliced);
        let run = self.device.enter(|| code.run(&part));
        agree(comm, &run)?;
        let run = run?;
        let report = format!(
            "rank {r} of {size}: part {lo}..{hi} of {n} on {}",
            self.device
        );
        let columns = &split.columns;
        let combined = match &split.combine {
            Combined::Concat => return concatenated(run, columns, comm, report, spread.keep),
            Combined::Nothing => {
                return Err("a distributed loop (a bug in accel: it is not split)".into())
            }
            Combined::Reduce(partials) => {
                let parts: Vec<Vec<u64>> =
                    exchange_elements(comm, (lo < hi).then_some(&run.words[..]), columns.len())
                        .into_iter()
                        .flatten()
                        .collect();
                let mut keep = Vec::new();
                let cols = columns_of(
                    columns,
                    |c, k, _| parts[c][k].to_le_bytes(),
                    parts.len(),
                    &mut keep,
                );
                let out = partials.run(&base.with(&cols));
                drop(keep);
                out?
            }
            Combined::Histogram { merge: program, .. } | Combined::Apply(program)
                if spread.destination.is_some() =>
            {
                let histogram = matches!(split.combine, Combined::Histogram { .. });
                return merge_into_spread_destination(
                    program, run, spread, histogram, columns, m, comm, report,
                );
            }
            Combined::Histogram { merge: program, .. } | Combined::Apply(program) => {
                let mut arena = Arena::default();
                let (all, _) = all_gather_seq(comm, &run.words, columns, &mut arena)?;
                drop(run);
                program.run(&base.with(&all))?
            }
            Combined::Scan {
                carries, carry_in, ..
            } => {
                let mine = (lo < hi).then(|| last_element(&run.words, columns));
                let totals = exchange_elements(comm, mine.as_deref(), columns.len());
                // This rank's place among the parts that are not empty.
                let before = totals[..r].iter().flatten().count();
                let totals: Vec<Vec<u64>> = totals.into_iter().flatten().collect();
                let fixed = match (before, carry_in) {
                    (0, _) => run,
                    _ if lo == hi => run,
                    (_, None) => {
                        return Err(
                            "a distributed scan without its carry program (a bug in accel)".into(),
                        )
                    }
                    (_, Some(carry_in)) => {
                        let mut keep = Vec::new();
                        let cols = columns_of(
                            columns,
                            |c, k, _| totals[c][k].to_le_bytes(),
                            totals.len(),
                            &mut keep,
                        );
                        let carried = carries.run(&base.with(&cols))?;
                        // CARRIES[0]: the fold of the parts before this rank's.
                        let mut shifted = [&[1u64][..], &carried.words[1..]].concat();
                        for (k, s) in columns.iter().enumerate() {
                            shifted[1 + k] += ((before - 1) * size_of(*s)) as u64;
                        }
                        let extra = [run.words.clone(), shifted].concat();
                        let out = carry_in.run(&base.with(&extra));
                        drop((keep, carried, run));
                        out?
                    }
                };
                return concatenated(fixed, columns, comm, report, spread.keep);
            }
        };
        Ok((Run { report, ..combined }, None))
    }
}

/// Merges the ranks' bins (`histogram`) or pairs (`run`, this rank's) into this rank's
/// part of the spread destination (`spread.destination`) with `program` (the merge or
/// the scatter), and keeps or gathers the result as [`concatenated`] does.
#[allow(clippy::too_many_arguments)]
fn merge_into_spread_destination(
    program: &Arc<dyn CompiledSite>,
    run: Run,
    spread: Spread<'_>,
    histogram: bool,
    columns: &[ScalarType],
    m: &Marshal<'_>,
    comm: &dyn Communicator,
    report: String,
) -> Result<Ran, String> {
    let d = spread
        .destination
        .ok_or("a spread destination is missing (a bug in accel)")?;
    let mut arena = Arena::default();
    let received = match histogram {
        true => route::bins(comm, &run.words, columns, &d.starts, &mut arena)?,
        false => route::pairs(comm, &run.words, columns, &d.starts, &mut arena)?,
    };
    drop(run);
    // The destination as this rank's part alone.
    let r = comm.rank();
    let mut words = m.words.clone();
    words[d.word] = (d.starts[r + 1] - d.starts[r]) as u64;
    for (k, size) in d.sizes.iter().enumerate() {
        let w = &mut words[d.word + 1 + k];
        *w = w.wrapping_add((d.starts[r] * size) as u64);
    }
    let local = m.with_words(words);
    let merged = program.run(&Base::of(&local).with(&received));
    agree(comm, &merged)?;
    drop(arena);
    // A scatter's pairs lead with their index column; its result has the values'.
    let result_columns = if histogram { columns } else { &columns[1..] };
    let report = format!("{report}, routed to the destination's owners");
    concatenated(merged?, result_columns, comm, report, spread.keep)
}

/// A sequence result of this rank's part: kept as it is where `keep` says so (with where
/// each rank's part begins), else all-gathered.
fn concatenated(
    run: Run,
    columns: &[ScalarType],
    comm: &dyn Communicator,
    report: String,
    keep: bool,
) -> Result<Ran, String> {
    if keep {
        let lengths: Vec<usize> = comm::all_gather_words(comm, run.words[0])
            .into_iter()
            .map(|l| l as usize)
            .collect();
        let run = Run {
            report: format!("{report}, kept distributed"),
            ..run
        };
        return Ok((run, Some(comm::starts_of(&lengths))));
    }
    let mut arena = Arena::default();
    let (words, _) = all_gather_seq(comm, &run.words, columns, &mut arena)?;
    drop(run);
    let run = Run {
        words,
        arena,
        report: format!("{report}, all-gathered"),
        rows: false,
    };
    Ok((run, None))
}
