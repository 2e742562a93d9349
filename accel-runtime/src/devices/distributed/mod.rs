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
//! - every other distributed capture (read at other indices, or partitioned otherwise) is
//!   all-gathered first, and the part reads the whole;
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
//! every rank. A site that does not split runs whole on every rank, from gathered
//! captures, and says so once.
//!
//! A `reduce_by_index` or `scatter` whose destination is itself distributed (and read
//! only by the combine) keeps it so: the bins or pairs go to the ranks that own them
//! ([`route`]), and each rank merges its part of the destination.

mod route;

use super::derived::{Base, Deriving};
use super::fission::{self, columns_of, Combined, FissionSite};
use super::Device;
use crate::backend::abi::{Arena, DistCapture, Marshal, Touch};
use crate::backend::failure::Failure;
use crate::backend::layout::size_of;
use crate::backend::{Backend, CompiledSite, FrontEndFn, Run, SiteKey};
use crate::comm::{self, Communicator};
use accel_ir::ScalarType;
use std::sync::Arc;
use std::time::Instant;

/// The role of the whole site's program (run on every rank when it does not split).
const WHOLE: usize = 9;

/// A site over distributed sequences, compiled for one device per rank.
pub struct DistSite {
    /// The split site (its part on the rank's device), or why it does not split.
    split: Result<FissionSite, String>,
    /// The whole site, where it does not split.
    whole: Option<Arc<dyn CompiledSite>>,
    device: Device,
    compile_ms: f64,
}

/// Compiles `site` for ranks that each run their part on `device`.
pub fn compile(
    site: SiteKey,
    front: FrontEndFn<'_>,
    device: Device,
    backend_of: &dyn Fn(Device) -> &'static dyn Backend,
) -> Result<DistSite, String> {
    let start = Instant::now();
    let fe = front()?;
    let d = Deriving {
        site,
        stage: 0,
        front: &fe,
    };
    let split = fission::compile(&d, &[device], backend_of, true).and_then(|s| match s.combine {
        Combined::Nothing => {
            Err("a parallel_loop writes tensors, which are not distributed".into())
        }
        _ if s.rows => Err("its elements are rows".into()),
        _ => Ok(s),
    });
    let whole = match &split {
        Ok(_) => None,
        Err(_) => Some(
            device.enter(|| d.on(backend_of(device), WHOLE, &fe.fused, &[], fe.result.clone()))?,
        ),
    };
    Ok(DistSite {
        split,
        whole,
        device,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

impl DistSite {
    /// Why the site runs whole on every rank, if it does.
    pub fn not_split(&self) -> Option<&str> {
        self.split.as_ref().err().map(String::as_str)
    }
}

/// The communicator of the captured distributed sequences (one for all of them).
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
    let r = comm.rank();
    let (start, len) = (c.starts[r], c.starts[r + 1] - c.starts[r]);
    let total = c.starts[c.starts.len() - 1];
    for (k, &size) in c.sizes.iter().enumerate() {
        let w = &mut words[c.word + 1 + k];
        let mine = w.wrapping_add((start * size) as u64) as usize;
        let dst = arena.alloc_own(total * size, size, Touch::Whole);
        if dst.is_null() {
            return Err(format!(
                "could not allocate {} bytes to gather a distributed sequence",
                total * size
            ));
        }
        // SAFETY: the capture's column holds this rank's `len` elements of `size` bytes
        // at `mine` (its word is that address shifted back by `start` elements); `dst` is
        // a fresh allocation of `total * size` bytes.
        let (mine, out) = unsafe {
            (
                std::slice::from_raw_parts(mine as *const u8, len * size),
                std::slice::from_raw_parts_mut(dst, total * size),
            )
        };
        comm.all_gather_into(mine, &comm::byte_counts(&c.starts, size), out);
        *w = dst as u64;
    }
    Ok(())
}

/// Every rank's outcome; the first failure in rank order is every rank's error.
fn agree(comm: &dyn Communicator, run: &Result<Run, String>) -> Result<(), String> {
    let status = match run {
        Ok(_) => vec![0u8],
        Err(e) => [&[1u8][..], e.as_bytes()].concat(),
    };
    let all = comm::exchange(comm, &status);
    match all.iter().enumerate().find(|(_, s)| s.first() == Some(&1)) {
        None => Ok(()),
        Some((r, s)) => Err(format!(
            "{} (on rank {r} of {})",
            String::from_utf8_lossy(&s[1..]),
            comm.size()
        )),
    }
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
fn exchange_elements(comm: &dyn Communicator, mine: Option<&[u64]>) -> Vec<Option<Vec<u64>>> {
    let bytes: Vec<u8> = match mine {
        None => Vec::new(),
        Some(w) => [
            &[1u8][..],
            &w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
        ]
        .concat(),
    };
    comm::exchange(comm, &bytes)
        .into_iter()
        .map(|b| {
            (!b.is_empty()).then(|| {
                b[1..]
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect()
            })
        })
        .collect()
}

impl CompiledSite for DistSite {
    fn summary(&self) -> String {
        match &self.split {
            Ok(_) => format!("each rank's part on {}", self.device),
            Err(why) => format!("whole on every rank ({why})"),
        }
    }

    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    fn run(&self, captures: &Marshal<'_>) -> Result<Run, String> {
        let comm = communicator(captures)?;
        let comm = &*comm;
        let sliced: Vec<usize> = match &self.split {
            Ok(s) => s.sliced.iter().map(|s| s.word).collect(),
            Err(_) => Vec::new(),
        };
        // The parts follow the first sequence read in place; the others read in place
        // share its partition.
        let reference = captures
            .distributed
            .iter()
            .find(|c| sliced.contains(&c.word))
            .map(|c| Arc::clone(&c.starts));
        // A histogram's or scatter's destination that is spread stays so.
        let destination = match &self.split {
            Ok(s) => s.destination,
            Err(_) => None,
        };
        let spread_destination = captures
            .distributed
            .iter()
            .find(|c| Some(c.word) == destination);
        let mut words = captures.words.clone();
        let mut gathered = Arena::default();
        for c in &captures.distributed {
            let in_place = sliced.contains(&c.word) && reference.as_ref() == Some(&c.starts);
            if !in_place && Some(c.word) != destination {
                gather_capture(c, comm, &mut words, &mut gathered)?;
            }
        }
        let m = Marshal {
            words,
            buffers: captures.buffers.clone(),
            tensor_buffers: captures.tensor_buffers.clone(),
            bytes: captures.bytes,
            ..Marshal::default()
        };
        let mut run = match (&self.split, &self.whole) {
            (Ok(split), _) => {
                let spread = Spread {
                    reference: reference.as_deref(),
                    destination: spread_destination,
                };
                self.run_split(split, &m, spread, comm)
            }
            (Err(_), Some(whole)) => {
                let run = self.device.enter(|| whole.run(&m));
                agree(comm, &run)?;
                run
            }
            (Err(why), None) => Err(why.clone()),
        }?;
        // Results may point into what was gathered (a capture returned as it is).
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
}

impl DistSite {
    /// Runs this rank's part of `split` and combines the ranks' parts.
    fn run_split(
        &self,
        split: &FissionSite,
        m: &Marshal<'_>,
        spread: Spread<'_>,
        comm: &dyn Communicator,
    ) -> Result<Run, String> {
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
            Combined::Concat => return self.concatenated(run, columns, comm, report),
            Combined::Nothing => {
                return Err("a distributed loop (a bug in accel: it is not split)".into())
            }
            Combined::Reduce(partials) => {
                let parts: Vec<Vec<u64>> =
                    exchange_elements(comm, (lo < hi).then_some(&run.words[..]))
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
                let d = spread.destination.expect("a spread destination");
                let histogram = matches!(split.combine, Combined::Histogram { .. });
                return self.merge_into_spread_destination(
                    program, run, d, histogram, columns, m, comm, report,
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
                let totals = exchange_elements(comm, mine.as_deref());
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
                return self.concatenated(fixed, columns, comm, report);
            }
        };
        Ok(Run { report, ..combined })
    }

    /// Merges the ranks' bins (`histogram`) or pairs (`run`, this rank's) into this rank's
    /// part of the spread destination `d` with `program` (the merge or the scatter), and
    /// keeps or gathers the result as [`concatenated`](DistSite::concatenated) does.
    #[allow(clippy::too_many_arguments)]
    fn merge_into_spread_destination(
        &self,
        program: &Arc<dyn CompiledSite>,
        run: Run,
        d: &DistCapture,
        histogram: bool,
        columns: &[ScalarType],
        m: &Marshal<'_>,
        comm: &dyn Communicator,
        report: String,
    ) -> Result<Run, String> {
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
        let local = Marshal {
            words,
            buffers: m.buffers.clone(),
            tensor_buffers: m.tensor_buffers.clone(),
            bytes: m.bytes,
            ..Marshal::default()
        };
        let merged = program.run(&Base::of(&local).with(&received));
        agree(comm, &merged)?;
        drop(arena);
        // A scatter's pairs lead with their index column; its result has the values'.
        let result_columns = if histogram { columns } else { &columns[1..] };
        let report = format!("{report}, routed to the destination's owners");
        self.concatenated(merged?, result_columns, comm, report)
    }

    /// A sequence result of this rank's part: kept as it is where the caller keeps it
    /// distributed (recording the ranks' parts), else all-gathered.
    fn concatenated(
        &self,
        run: Run,
        columns: &[ScalarType],
        comm: &dyn Communicator,
        report: String,
    ) -> Result<Run, String> {
        if crate::dist::keeps_parts() {
            let lengths: Vec<usize> = comm::all_gather_words(comm, run.words[0])
                .into_iter()
                .map(|l| l as usize)
                .collect();
            crate::dist::kept(comm::starts_of(&lengths));
            return Ok(Run {
                report: format!("{report}, kept distributed"),
                ..run
            });
        }
        let mut arena = Arena::default();
        let (words, _) = all_gather_seq(comm, &run.words, columns, &mut arena)?;
        drop(run);
        Ok(Run {
            words,
            arena,
            report: format!("{report}, all-gathered"),
        })
    }
}
