//! One site on several devices: the split programs of `accel_ir::passes::fission`
//! compiled for each device, run from one queue of fixed-size parts, and combined.
//!
//! Part boundaries depend on the operation's size alone (`ACCEL_DEVICE_CHUNK`, or the size
//! over 64 and at least 65,536 elements), never on the devices or on which of them ran a
//! part, and the parts' results combine in index order: a site's result is the same
//! whatever the balancing was, for devices that compute alike. (The CPU's vector math
//! and a GPU's math library may differ in a float's last bits, as between `cpu` and `cuda`
//! modes; integers, and floats computed without math functions or reassociation, agree.)
//!
//! A part that fails stops the queue; the parts before it finish, and the first failure
//! in index order is the site's. Each part's result is its own memory until the combine
//! copies it out, so nothing a failed run wrote reaches the caller.

use super::derived::{Base, Deriving, Sliced};
use super::placed;
use super::queue::{self, Done};
use super::Device;
use crate::backend::abi::{Arena, Marshal};
use crate::backend::failure::{Failure, FailureKind};
use crate::backend::layout::{self, size_of};
use crate::backend::{trace, Backend, CompiledSite, Run};
use accel_ir::passes::fission::{self, Combine, CARRIES, CHUNK, HI, LO, PARTIALS, SCANNED};
use accel_ir::{ParOp, ScalarType, Type};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// A site compiled for several devices.
pub struct FissionSite {
    /// The devices, each with its part program.
    pub(super) parts: Vec<(Device, Arc<dyn CompiledSite>)>,
    /// The operation's size (on the CPU).
    pub(super) length: Arc<dyn CompiledSite>,
    /// What two inputs of different lengths are (a `map2`'s; the indices' and the values'
    /// of a histogram or a scatter): the failure one device reports.
    pub(super) lengths_differ: Option<FailureKind>,
    pub(super) combine: Combined,
    /// The captures each part gets only its range of.
    pub(super) sliced: Vec<Sliced>,
    /// The first word and element size of each captured tensor a loop's parts write,
    /// each only its range's rows.
    pub(super) written: Vec<(usize, usize)>,
    /// The scalar type of each column of the parts' elements (of their rows' elements,
    /// when they are rows).
    pub(super) columns: Vec<ScalarType>,
    /// Whether the parts' elements are rows (`create` of rows).
    pub(super) rows: bool,
    /// Whether the site's result is those rows flattened (`flatten` of a `create` of rows).
    pub(super) flattened: bool,
    /// Whether each part's elements go straight to their place in the site's result (a
    /// `map`, `map2` or `create` of flat elements: part `lo..hi` is the result's
    /// `lo..hi`), where other results are concatenated after all parts ran.
    pub(super) in_place: bool,
    /// The first word of a histogram's or scatter's destination whose elements only the
    /// combine reads (see `fission::Split::destination`).
    pub(super) destination: Option<usize>,
    pub(super) compile_ms: f64,
}

/// The combine programs (on the CPU).
pub(super) enum Combined {
    Concat,
    /// A loop's parts wrote their rows in place.
    Nothing,
    Reduce(Arc<dyn CompiledSite>),
    /// A program over the parts' results concatenated (a scatter's pairs).
    Apply(Arc<dyn CompiledSite>),
    /// The number of bins, and the merge of the initial bins with the parts' bins.
    Histogram {
        bins: Arc<dyn CompiledSite>,
        merge: Arc<dyn CompiledSite>,
    },
    Scan {
        carries: Arc<dyn CompiledSite>,
        fixup: Arc<dyn CompiledSite>,
        /// One part's scan with the carry into it (compiled for distributed sites only).
        carry_in: Option<Arc<dyn CompiledSite>>,
    },
}

/// The programs a split operation is made of (see [`Deriving`]).
const LENGTH: usize = 1;
const PART: usize = 2;
const COMBINE: usize = 3;
const FIXUP: usize = 4;
const BINS: usize = 5;
const CARRY_IN: usize = 8;

/// Elements per part: `ACCEL_DEVICE_CHUNK`, else `n / 64` rounded up to a multiple of
/// 1024 and at least 65,536 (enough parts for a fast device to take more, each long
/// enough to keep a GPU busy).
pub fn chunk_len(n: usize) -> usize {
    static SET: OnceLock<Option<usize>> = OnceLock::new();
    let set = SET.get_or_init(|| {
        std::env::var("ACCEL_DEVICE_CHUNK")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
    });
    set.unwrap_or_else(|| n.div_ceil(64).next_multiple_of(1024).max(1 << 16))
}

/// Compiles `site` for `devices` (the front end's result split; each part on its
/// device's backend, the length and combine on the CPU's), or says why it runs on one.
pub fn compile(
    d: &Deriving<'_>,
    devices: &[Device],
    backend_of: &dyn Fn(Device) -> &'static dyn Backend,
    distributed: bool,
) -> Result<FissionSite, String> {
    let start = Instant::now();
    let fe = d.front;
    let split = fission::split(&fe.fused, &fe.captures, &fe.result)?;
    // One length, or the indices' and the values' (`reduce_by_index`, `scatter`).
    let length_t = match &split.length {
        accel_ir::Expr::Tuple(ns) => Type::Tuple(vec![Type::Scalar(ScalarType::Usize); ns.len()]),
        _ => Type::Scalar(ScalarType::Usize),
    };
    let usize_t = Type::Scalar(ScalarType::Usize);
    let elems = Type::Seq(Box::new(split.elem.clone()));
    let range = [(LO, usize_t.clone()), (HI, usize_t.clone())];
    let parts = devices
        .iter()
        .map(|&device| {
            // A GPU's kernels are loaded on it.
            let backend = backend_of(device);
            device
                .enter(|| {
                    d.on(
                        backend,
                        PART,
                        &split.part,
                        &range,
                        split.part_result.clone(),
                    )
                })
                .map(|code| (device, code))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The parts' elements: a reduce's partial results, a scatter's pairs, rows.
    let part_elem = match &split.part_result {
        Type::Seq(e) => &**e,
        t => t,
    };
    let cpu = backend_of(Device::Cpu);
    let partials = [(PARTIALS, elems.clone())];
    let combine = match &split.combine {
        Combine::Concat => Combined::Concat,
        Combine::Nothing => Combined::Nothing,
        Combine::Reduce { partials: body } => {
            Combined::Reduce(d.on(cpu, COMBINE, body, &partials, split.elem.clone())?)
        }
        Combine::Scatter { apply } => {
            let pairs = Type::Seq(Box::new(part_elem.clone()));
            Combined::Apply(d.on(cpu, COMBINE, apply, &[(PARTIALS, pairs)], elems.clone())?)
        }
        Combine::Histogram { bins, merge } => Combined::Histogram {
            bins: d.on(cpu, BINS, bins, &[], usize_t.clone())?,
            merge: d.on(cpu, COMBINE, merge, &partials, elems.clone())?,
        },
        Combine::Scan {
            carries,
            fixup,
            carry_in,
        } => {
            let fixed = [
                (SCANNED, elems.clone()),
                (CARRIES, elems.clone()),
                (CHUNK, usize_t.clone()),
            ];
            let carry_in = match distributed {
                true => Some(d.on(cpu, CARRY_IN, carry_in, &fixed[..2], elems.clone())?),
                false => None,
            };
            Combined::Scan {
                carries: d.on(cpu, COMBINE, carries, &partials, elems.clone())?,
                fixup: d.on(cpu, FIXUP, fixup, &fixed, elems)?,
                carry_in,
            }
        }
    };
    Ok(FissionSite {
        parts,
        length: d.on(cpu, LENGTH, &split.length, &[], length_t)?,
        lengths_differ: match split.op {
            ParOp::Map2 => Some(FailureKind::Lengths),
            ParOp::ReduceByIndex => Some(FailureKind::HistogramLengths),
            ParOp::Scatter => Some(FailureKind::ScatterLengths),
            _ => None,
        },
        combine,
        sliced: sliced_captures(&fe.captures, &split.sliced)?,
        written: written_tensors(&fe.captures, &split.written)?,
        rows: matches!(part_elem, Type::Seq(_)),
        flattened: split.flattened,
        in_place: matches!(split.combine, Combine::Concat)
            && !split.flattened
            && !matches!(part_elem, Type::Seq(_))
            && matches!(split.op, ParOp::Map | ParOp::Map2 | ParOp::Create),
        destination: match &split.destination {
            Some(d) => first_word(&fe.captures, d)?,
            None => None,
        },
        columns: layout::flat_columns(match part_elem {
            Type::Seq(row) => row,
            e => e,
        })?,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

#[cfg(feature = "cuda")]
use crate::cuda::ResidentInputs;

/// The inputs the GPUs keep through one call (none without the CUDA backend).
#[cfg(not(feature = "cuda"))]
#[derive(Clone, Default)]
struct ResidentInputs;

#[cfg(not(feature = "cuda"))]
impl ResidentInputs {
    fn release(self) {}
}

/// Runs `f` with a GPU's inputs kept in `inputs` from one part to the next, whichever of
/// its lanes runs them.
fn resident<T>(inputs: &ResidentInputs, f: impl FnOnce() -> T) -> T {
    #[cfg(feature = "cuda")]
    return crate::cuda::with_resident_inputs(inputs, f);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = inputs;
        f()
    }
}

/// Where the `written` tensors' words are among `captures`', with their elements' size.
fn written_tensors(
    captures: &[(String, Type)],
    written: &[String],
) -> Result<Vec<(usize, usize)>, String> {
    let mut out = Vec::new();
    for ((name, t), word) in captures.iter().zip(layout::first_words(captures)?) {
        if written.contains(name) {
            let Type::Tensor(e) = t else {
                return Err(format!("`{name}` is written as a tensor but is a {t}"));
            };
            let [s] = layout::flat_columns(e)?[..] else {
                return Err(format!("`{name}` is a tensor of {e}"));
            };
            out.push((word, size_of(s)));
        }
    }
    Ok(out)
}

/// The first word of capture `name` among `captures`' words.
fn first_word(captures: &[(String, Type)], name: &str) -> Result<Option<usize>, String> {
    let words = layout::first_words(captures)?;
    Ok(captures
        .iter()
        .position(|(n, _)| n == name)
        .map(|k| words[k]))
}

/// Where the `sliced` captures' words are among `captures`', with their columns' sizes.
fn sliced_captures(captures: &[(String, Type)], sliced: &[String]) -> Result<Vec<Sliced>, String> {
    let mut out = Vec::new();
    for ((name, t), word) in captures.iter().zip(layout::first_words(captures)?) {
        if sliced.contains(name) {
            let Type::Seq(e) = t else {
                return Err(format!("`{name}` is sliced but is a {t}"));
            };
            let (rows, e) = match &**e {
                Type::Seq(r) => (true, &**r),
                e => (false, e),
            };
            let sizes = layout::flat_columns(e)?.into_iter().map(size_of).collect();
            out.push(Sliced { word, rows, sizes });
        }
    }
    Ok(out)
}

impl FissionSite {
    /// Runs chunks `0..count` of `chunk` elements (the last shorter) from one queue, each
    /// device taking the next chunks when it is free: one at a time, or where the combine
    /// concatenates (results do not depend on where parts begin) as many as keep its
    /// parts from running short (see [`queue::run`]).
    fn run_parts(
        &self,
        base: &Base,
        (n, chunk): (usize, usize),
        workers: &[(usize, usize)],
        result: Option<&[u64]>,
    ) -> Done<Result<Run, String>> {
        // A loop's GPU parts read the tensors from copies made now, before any part
        // writes them.
        let gpus = self.parts.iter().any(|(d, _)| matches!(d, Device::Cuda(_)));
        let copies: Vec<(usize, Vec<u8>)> = if gpus && !self.written.is_empty() {
            base.tensor_buffers()
                .iter()
                .map(|&(b, bytes)| {
                    // SAFETY: the caller's marshal holds the buffer's lock for the call; it
                    // has `bytes` bytes, and no part runs yet.
                    let data = unsafe { std::slice::from_raw_parts(b as *const u8, bytes) };
                    (b, data.to_vec())
                })
                .collect()
        } else {
            Vec::new()
        };
        let part = |w: usize, chunks: std::ops::Range<usize>| {
            let (k, lane) = workers[w];
            let (device, code) = &self.parts[k];
            let c = chunks.start;
            let (lo, hi) = (c * chunk, n.min(chunks.end * chunk));
            let m = base.part(lo, hi, &self.sliced);
            let traced = trace::enabled().then(Instant::now);
            // The part's slice of the result, where it goes straight there.
            let slice: Option<Vec<(usize, usize)>> = result.map(|columns| {
                columns
                    .iter()
                    .zip(&self.columns)
                    .map(|(&at, s)| (at as usize + lo * size_of(*s), (hi - lo) * size_of(*s)))
                    .collect()
            });
            let run = device.enter(|| {
                on_lane(lane, || {
                    self.write_back(*device, &m.words, (lo, hi), &copies, || {
                        placed::place_result(*device, slice.as_deref(), || code.run(&m))
                    })
                })
            });
            let (run, copied) = match (run, &slice) {
                (Ok(run), Some(slice)) => match placed::put_in_place(run, hi - lo, slice) {
                    Ok((run, copied)) => (Ok(run), copied),
                    Err(e) => (Err(e), 0),
                },
                (run, _) => (run, 0),
            };
            if let Some(t) = traced {
                trace::complete(
                    &format!("part {c} on {device}"),
                    "part",
                    t,
                    serde_json::json!({
                        "device": device.to_string(), "lane": lane, "lo": lo, "hi": hi,
                        "ok": run.is_ok(), "in_place": slice.is_some(), "copied_bytes": copied,
                    }),
                );
            }
            run
        };
        #[cfg(feature = "cuda")]
        let emulating = crate::cuda::device::emulating();
        let inputs = ResidentInputs::default();
        let on_thread = |work: &dyn Fn()| {
            // The emulator stands in for the GPU on the caller's thread: on this one too.
            #[cfg(feature = "cuda")]
            if emulating {
                return crate::cuda::device::with_emulator(|| resident(&inputs, work));
            }
            resident(&inputs, work)
        };
        let done = resident(&inputs, || {
            let concatenates = matches!(
                self.combine,
                Combined::Concat | Combined::Nothing | Combined::Apply(_)
            );
            queue::run(
                n.div_ceil(chunk),
                workers.len(),
                concatenates,
                &part,
                &|r| r.is_err(),
                &on_thread,
            )
        });
        inputs.release();
        done
    }

    /// The queue's workers: each device's index among `parts` and its lane, a GPU one per
    /// lane of it (`ACCEL_CUDA_LANES`: while one lane's part copies, another's computes),
    /// the CPU one.
    fn workers(&self) -> Result<Vec<(usize, usize)>, String> {
        let mut workers = Vec::new();
        for (k, (d, _)) in self.parts.iter().enumerate() {
            let lanes = if matches!(d, Device::Cuda(_)) {
                gpu_lanes()?
            } else {
                1
            };
            workers.extend((0..lanes).map(|lane| (k, lane)));
        }
        Ok(workers)
    }

    /// The parts' results concatenated (see [`placed::concat`]) into `arena`.
    fn concat(&self, runs: &[Run], arena: &mut Arena) -> Result<Vec<u64>, String> {
        placed::concat(runs, (&self.columns, self.rows), arena)
    }

    /// How many chunks each device's workers (see [`FissionSite::workers`]) ran, for the
    /// log: "cuda:0 12 on 2 lanes, cpu 4".
    fn taken_by_device(&self, workers: &[(usize, usize)], taken: &[usize]) -> String {
        let ran: Vec<String> = self
            .parts
            .iter()
            .enumerate()
            .map(|(k, (d, _))| {
                let mine = workers.iter().zip(taken).filter(|((p, _), _)| *p == k);
                let (lanes, chunks) = mine.fold((0, 0), |(l, t), (_, n)| (l + 1, t + n));
                match lanes {
                    1 => format!("{d} {chunks}"),
                    _ => format!("{d} {chunks} on {lanes} lanes"),
                }
            })
            .collect();
        ran.join(", ")
    }

    /// The part length for an operation of `n` elements: [`chunk_len`], and for a
    /// histogram of `m` bins at most `n / m` parts (their bins, `m` each, are merged
    /// after: no more of them than there are values).
    fn chunk(&self, captures: &Marshal<'_>, n: usize) -> Result<usize, String> {
        let chunk = chunk_len(n);
        let Combined::Histogram { bins, .. } = &self.combine else {
            return Ok(chunk);
        };
        let m = bins.run(captures)?.words[0] as usize;
        let parts = (n / m.max(1)).max(1);
        Ok(chunk.max(n.div_ceil(parts)))
    }

    /// Runs `f`, a part over `lo..hi` on `device`: on a GPU, the tensors a loop writes are
    /// copied to it from `copies` (made before the parts started: other devices write the
    /// buffers meanwhile) and back for the rows `lo..hi` only (the other rows are other
    /// parts').
    fn write_back<T>(
        &self,
        device: Device,
        words: &[u64],
        (lo, hi): (usize, usize),
        copies: &[(usize, Vec<u8>)],
        f: impl FnOnce() -> T,
    ) -> T {
        #[cfg(feature = "cuda")]
        if matches!(device, Device::Cuda(_)) && !self.written.is_empty() {
            let write_back = self
                .written
                .iter()
                .map(|&(at, size)| {
                    let (ptr, rank) = (words[at] as usize, words[at + 1] as usize);
                    let dims = &words[at + 2..at + 2 + rank.min(crate::backend::abi::MAX_RANK)];
                    let rows = dims.first().map_or(0, |&d| d as usize);
                    let row: usize = dims.iter().skip(1).map(|&d| d as usize).product();
                    let bytes = row * size;
                    (ptr + lo.min(rows) * bytes, ptr + hi.min(rows) * bytes)
                })
                .collect();
            let upload_from = copies
                .iter()
                .map(|(base, c)| (*base, c.as_ptr() as usize))
                .collect();
            let io = crate::cuda::PartTensors {
                write_back,
                upload_from,
            };
            return crate::cuda::with_part_tensors(io, f);
        }
        let _ = (device, words, lo, hi, copies);
        f()
    }
}

/// How many lanes each GPU runs parts on (`cuda::device::lanes`).
fn gpu_lanes() -> Result<usize, String> {
    #[cfg(feature = "cuda")]
    return crate::cuda::device::lanes();
    #[cfg(not(feature = "cuda"))]
    Ok(1)
}

/// Runs `f` on lane `lane` of this thread's GPU (see `cuda::device::lanes`).
fn on_lane<T>(lane: usize, f: impl FnOnce() -> T) -> T {
    #[cfg(feature = "cuda")]
    return crate::cuda::device::with_lane(lane, f);
    #[cfg(not(feature = "cuda"))]
    {
        let _ = lane;
        f()
    }
}

/// Columns of `count` elements built from each element's scalars, in `keep` (alive while
/// a combine reads them): their words `[count, columns...]`.
pub(super) fn columns_of(
    columns: &[ScalarType],
    element: impl Fn(usize, usize, usize) -> [u8; 8],
    count: usize,
    keep: &mut Vec<Vec<u64>>,
) -> Vec<u64> {
    let mut words = vec![count as u64];
    for (k, s) in columns.iter().enumerate() {
        let size = size_of(*s);
        let mut col = vec![0u64; (count * size).div_ceil(8).max(1)];
        let bytes = col.as_mut_ptr() as *mut u8;
        for c in 0..count {
            let v = element(c, k, size);
            // SAFETY: `col` has room for `count` elements of `size` (<= 8) bytes.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), bytes.add(c * size), size) };
        }
        words.push(col.as_ptr() as u64);
        keep.push(col);
    }
    words
}

impl CompiledSite for FissionSite {
    fn summary(&self) -> String {
        let lanes = gpu_lanes().unwrap_or(1);
        let devices: Vec<String> = self
            .parts
            .iter()
            .map(|(d, _)| match d {
                Device::Cuda(_) if lanes > 1 => format!("{d} ({lanes} lanes)"),
                _ => d.to_string(),
            })
            .collect();
        format!("split across {}", devices.join(", "))
    }

    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    fn run(&self, captures: &Marshal<'_>) -> Result<Run, String> {
        let lengths = self.length.run(captures)?.words;
        let n = lengths[0] as usize;
        if let (Some(kind), [a, b]) = (self.lengths_differ, &lengths[..]) {
            if a != b {
                return Err(Failure::new(kind, *a, *b).describe());
            }
        }
        let chunk = self.chunk(captures, n)?;
        let all_chunks = n.div_ceil(chunk);
        let base = Base::of(captures);
        let mut arena = Arena::default();
        let result = match self.in_place {
            true => Some(placed::result_columns(&self.columns, n, &mut arena)?),
            false => None,
        };
        let workers = self.workers()?;
        let parts = self.run_parts(&base, (n, chunk), &workers, result.as_deref());
        let mut runs = Vec::with_capacity(parts.parts.len());
        let mut covered = 0;
        for (chunks, run) in parts.parts {
            // Only chunks after a failure are not run, and the failure came first.
            if chunks.start != covered {
                return Err("a part of the site did not run".into());
            }
            covered = chunks.end;
            runs.push(run?);
        }
        if covered != all_chunks {
            return Err("a part of the site did not run".into());
        }
        let report = format!(
            "{all_chunks} chunks of up to {chunk} in {} parts ({})",
            runs.len(),
            self.taken_by_device(&workers, &parts.taken)
        );
        let count = runs.len();
        let words = match &self.combine {
            Combined::Concat if self.in_place => {
                [vec![n as u64], result.unwrap_or_default()].concat()
            }
            Combined::Concat if self.flattened => {
                // Rows concatenated: [rows, per row, columns..]; flattened, the same
                // columns of rows * per row elements.
                let words = self.concat(&runs, &mut arena)?;
                [vec![words[0] * words[1]], words[2..].to_vec()].concat()
            }
            Combined::Concat => self.concat(&runs, &mut arena)?,
            Combined::Nothing => Vec::new(),
            Combined::Reduce(partials) => {
                let mut keep = Vec::new();
                let cols = columns_of(
                    &self.columns,
                    |c, k, _| runs[c].words[k].to_le_bytes(),
                    count,
                    &mut keep,
                );
                let run = partials.run(&base.with(&cols))?;
                drop(keep);
                return Ok(Run { report, ..run });
            }
            Combined::Histogram { merge: program, .. } | Combined::Apply(program) => {
                let mut parts_arena = Arena::default();
                let partials = self.concat(&runs, &mut parts_arena)?;
                drop(runs);
                let run = program.run(&base.with(&partials))?;
                drop(parts_arena);
                return Ok(Run { report, ..run });
            }
            Combined::Scan { carries, fixup, .. } => {
                if count == 0 {
                    self.concat(&runs, &mut arena)?
                } else {
                    let mut keep = Vec::new();
                    // Each part's total: its last element.
                    let totals = columns_of(
                        &self.columns,
                        |c, k, size| {
                            let len = runs[c].words[0] as usize;
                            let mut v = [0u8; 8];
                            // SAFETY: part `c` is not empty (only the last part may be
                            // shorter than a chunk, and none is empty); its column `k`
                            // has `len` elements of `size` bytes.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    (runs[c].words[1 + k] as *const u8).add((len - 1) * size),
                                    v.as_mut_ptr(),
                                    size,
                                )
                            };
                            v
                        },
                        count,
                        &mut keep,
                    );
                    let carried = carries.run(&base.with(&totals))?;
                    let mut scanned_arena = Arena::default();
                    let scanned = self.concat(&runs, &mut scanned_arena)?;
                    let extra = [scanned, carried.words.clone(), vec![chunk as u64]].concat();
                    let run = fixup.run(&base.with(&extra))?;
                    drop((keep, carried, scanned_arena));
                    return Ok(Run { report, ..run });
                }
            }
        };
        drop(runs);
        Ok(Run {
            words,
            arena,
            report,
            rows: false,
        })
    }
}
