//! The host side of a GPU run: captured values to device memory (tensors that share a
//! host buffer become views of one device allocation: the paper's Algorithm 2), the host
//! program ([`eval`]: scalar code between launches), the launches, and the result back to
//! host memory.

pub mod eval;
mod pages;
pub mod scalar;
mod tensors;

use super::codegen::kernel::KernelParams;
use super::codegen::launch::Launch;
use super::device::{DevBuf, Kernel, Session};
use crate::backend::abi::{Arena, MAX_RANK};
use crate::backend::failure::Failure;
use crate::backend::layout::{size_of, Word};
use crate::cuda::codegen::kernel::{columns, words};
use accel_ir::Type;
use scalar::{normalize, HostVal};
use std::collections::HashMap;

type R<T> = Result<T, String>;

/// A device copy of an input column: the GPU's ordinal, the column's host address and
/// size, and the copy.
type Resident = ((u32, usize, usize), DevBuf);

/// The input columns one GPU keeps for a call.
type GpuInputs = std::sync::Arc<std::sync::Mutex<Vec<Resident>>>;

/// The input columns the parts of one call of a site split across devices copied to the
/// GPUs, which the later parts on the same GPU reuse, whichever lane runs them.
#[derive(Clone, Default)]
pub struct ResidentInputs(std::sync::Arc<std::sync::Mutex<HashMap<u32, GpuInputs>>>);

impl ResidentInputs {
    /// Those of GPU `ordinal`.
    fn of(&self, ordinal: u32) -> GpuInputs {
        let mut gpus = self.0.lock().unwrap_or_else(|e| e.into_inner());
        gpus.entry(ordinal).or_default().clone()
    }

    /// Frees the copies, each GPU's with its context current (once every part ran).
    pub fn release(self) {
        let gpus = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        for (ordinal, inputs) in gpus {
            let session = super::device::gpu_at(ordinal).and_then(|g| g.enter());
            drop(inputs);
            drop(session);
        }
    }
}

thread_local! {
    /// Where this thread's runs keep their input columns ([`with_resident_inputs`]).
    static RESIDENT: std::cell::RefCell<Option<ResidentInputs>> =
        const { std::cell::RefCell::new(None) };
}

/// How the runs of one part of a loop split across devices move its tensors.
#[derive(Clone, Default)]
pub struct PartTensors {
    /// The host ranges copied back after the run (the part's rows).
    pub write_back: Vec<(usize, usize)>,
    /// Tensor buffers (by host base address) copied to the device from a copy made
    /// before the parts started (at its address): other devices write the buffer itself
    /// meanwhile.
    pub upload_from: Vec<(usize, usize)>,
}

thread_local! {
    /// How this thread's runs move their tensors (every buffer whole when none).
    static PART_TENSORS: std::cell::RefCell<Option<PartTensors>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the runs on this thread moving their tensors as `io` says (a part of a
/// loop split across devices owns only its rows).
pub fn with_part_tensors<T>(io: PartTensors, f: impl FnOnce() -> T) -> T {
    crate::backend::scoped::with_ref_cell(&PART_TENSORS, Some(io), f)
}

thread_local! {
    /// Where this thread's next result columns go ([`with_result_at`]).
    static RESULT_AT: std::cell::RefCell<Option<Vec<Placed>>> =
        const { std::cell::RefCell::new(None) };
}

/// Host memory a result column may be copied into: its address and the bytes there.
pub type Placed = (usize, usize);

/// Runs `f` with the runs on this thread copying a result that is a sequence of flat
/// elements (no sequences inside) straight into `columns`, one per column of its
/// elements, where each has room for it (a part of a `map` split across devices: its
/// slice of the whole result); elsewhere, into memory of the run's own.
///
/// The caller keeps each `(address, bytes)` valid for writes, and read by nothing else,
/// for the duration of `f`.
pub fn with_result_at<T>(columns: Vec<Placed>, f: impl FnOnce() -> T) -> T {
    crate::backend::scoped::with_ref_cell(&RESULT_AT, Some(columns), f)
}

/// Runs `f` with the runs on this thread keeping their inputs in `inputs` (the parts a GPU
/// runs of one call of a split site, on any of its lanes, read them from one copy), until
/// [`ResidentInputs::release`]: captured sequences (values no kernel writes, which the
/// caller holds unchanged for the call) and tensors (which only a loop splits write, each
/// part its own rows, copied back by rows: the device's copy gathers its parts' rows).
pub fn with_resident_inputs<T>(inputs: &ResidentInputs, f: impl FnOnce() -> T) -> T {
    crate::backend::scoped::with_ref_cell(&RESIDENT, Some(inputs.clone()), f)
}

/// One run of a compiled site on the GPU.
pub struct Run<'a, 'g> {
    /// The GPU session.
    pub session: &'a Session<'g>,
    /// The site's launches.
    pub launches: &'a [Launch],
    /// Each launch's loaded kernels.
    pub kernels: &'a [Vec<Kernel>],
    /// Device memory alive until the run ends.
    pub keep: Vec<DevBuf>,
    /// Captured sequences' device copies kept between calls (`cuda::inputs`).
    pub kept_inputs: Vec<std::sync::Arc<DevBuf>>,
    /// The error word kernels record failures in: kind, a, b.
    pub err: u64,
    /// The host program's variables.
    pub env: HashMap<String, HostVal>,
    /// Bytes copied to and from the device, for ACCEL_LOG.
    pub bytes_in: usize,
    /// Bytes copied back from the device.
    pub bytes_out: usize,
    /// Bytes of captured sequences found on the device (`cuda::inputs`), not copied.
    pub bytes_found: usize,
    /// Device memory the run holds now, and the most it held.
    pub held: usize,
    /// The most device memory the run held at once.
    pub peak: usize,
}

/// One launch being run: its kernels, its size, the words of the host values its kernels
/// read, and the device's shape.
pub(crate) struct Launching {
    /// The launch's kernel name prefix, and its kernels' names.
    pub(crate) prefix: String,
    pub(crate) names: Vec<String>,
    pub(crate) kernels: Vec<Kernel>,
    /// The launch's size.
    pub(crate) n: u64,
    pub(crate) free: Vec<u64>,
    /// Multiprocessors, and threads per block.
    pub(crate) sms: u64,
    pub(crate) threads: u64,
}

impl Launching {
    /// Blocks enough for `n` threads, at least one and at most `cap`.
    pub(crate) fn grid(&self, n: u64, cap: u64) -> u32 {
        n.div_ceil(self.threads).clamp(1, cap) as u32
    }

    /// The kernel called `PREFIX` + `suffix`.
    fn kernel(&self, suffix: &str) -> R<Kernel> {
        let name = format!("{}{suffix}", self.prefix);
        self.names
            .iter()
            .position(|n| *n == name)
            .map(|k| self.kernels[k])
            .ok_or_else(|| format!("the launch has no kernel {name}"))
    }
}

impl Run<'_, '_> {
    /// Launches the launch's kernel `P` on `blocks` blocks with the arguments `params`.
    pub(crate) fn start<P: KernelParams>(
        &mut self,
        at: &Launching,
        blocks: u32,
        params: &P,
    ) -> R<()> {
        let kernel = at.kernel(P::SUFFIX)?;
        let args = [at.free.clone(), params.words(), vec![self.err]].concat();
        self.session.launch(kernel, blocks, &args)
    }

    pub(crate) fn alloc(&mut self, bytes: usize) -> R<u64> {
        let b = self.session.alloc(bytes)?;
        let p = b.ptr;
        self.hold(b);
        Ok(p)
    }

    /// Keeps a device buffer until the run ends (or a loop finds it unreachable).
    pub(crate) fn hold(&mut self, b: DevBuf) {
        self.held += b.bytes;
        self.peak = self.peak.max(self.held);
        self.keep.push(b);
    }

    /// Uploads every tensor buffer the captured values view (each once, however many
    /// views of it there are: one device allocation per host buffer); returns each
    /// buffer's host address, size and device address.
    pub(crate) fn upload_tensor_buffers(
        &mut self,
        buffers: &[(usize, usize)],
    ) -> R<Vec<(usize, usize, u64)>> {
        let mut roots = Vec::new();
        let copies = PART_TENSORS.with(|w| w.borrow().as_ref().map(|p| p.upload_from.clone()));
        for &(base, bytes) in buffers {
            let from = copies
                .iter()
                .flatten()
                .find(|(b, _)| *b == base)
                .map_or(base, |&(_, copy)| copy);
            let data: &[u8] = if bytes == 0 {
                &[]
            } else {
                // SAFETY: the marshal holds the buffer's lock for the run; it has `bytes`
                // bytes, and so has a copy of it made for a split loop's parts.
                unsafe { std::slice::from_raw_parts(from as *const u8, bytes) }
            };
            roots.push((base, bytes, self.upload_kept(base, data)?));
        }
        Ok(roots)
    }

    /// The device copy of `data`, the memory at host address `host`: the one made earlier
    /// in the call of a split site on this GPU ([`with_resident_inputs`]: a captured
    /// sequence no kernel writes, or a tensor a loop's parts on this device write, each
    /// its own rows, copied back by rows), else a new one.
    fn upload_kept(&mut self, host: usize, data: &[u8]) -> R<u64> {
        let key = (self.session.gpu().ordinal, host, data.len());
        let gpu = RESIDENT.with(|r| r.borrow().as_ref().map(|inputs| inputs.of(key.0)));
        // Held while copying: another lane of this GPU wanting the same column waits for
        // this copy instead of making its own (the copy is done when `upload` returns);
        // other GPUs copy meanwhile.
        let mut kept = gpu
            .as_ref()
            .map(|g| g.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some((_, b)) = kept.iter().flat_map(|k| k.iter()).find(|(k, _)| *k == key) {
            return Ok(b.ptr);
        }
        let buf = self.session.upload(data)?;
        self.bytes_in += data.len();
        let p = buf.ptr;
        match &mut kept {
            Some(kept) => kept.push((key, buf)),
            None => self.hold(buf),
        }
        Ok(p)
    }

    /// The device copy of a captured sequence's column `data` (which no kernel writes):
    /// the one kept from an earlier call with the same contents (`cuda::inputs`) when it
    /// is large enough, else the one made earlier in the call of a split site, else a new
    /// one (see [`Run::upload_kept`]).
    fn upload_input(&mut self, host: usize, data: &[u8]) -> R<u64> {
        if let Some((buf, copied)) = crate::cuda::inputs::kept_copy(self.session, data)? {
            if copied {
                self.bytes_in += data.len();
            } else {
                self.bytes_found += data.len();
            }
            let p = buf.ptr;
            self.kept_inputs.push(buf);
            return Ok(p);
        }
        self.upload_kept(host, data)
    }

    /// Copies the tensors the kernels wrote back to their host buffers (only the host
    /// ranges [`with_part_tensors`] names, when it does).
    pub(crate) fn download_tensor_buffers(&mut self, roots: &[(usize, usize, u64)]) -> R<()> {
        let windows = PART_TENSORS.with(|w| w.borrow().as_ref().map(|p| p.write_back.clone()));
        for &(base, bytes, dev) in roots {
            let whole = [(base, base + bytes)];
            for &(from, to) in windows.as_deref().unwrap_or(&whole) {
                let (from, to) = (from.max(base), to.min(base + bytes));
                if from < to {
                    // SAFETY: the marshal holds the buffer's lock until after the run; the
                    // range lies in the buffer, and only this part writes it meanwhile (a
                    // loop split across devices writes each part's rows on one device).
                    let dst = unsafe { std::slice::from_raw_parts_mut(from as *mut u8, to - from) };
                    self.session.download(dev + (from - base) as u64, dst)?;
                    self.bytes_out += to - from;
                }
            }
        }
        Ok(())
    }

    /// Uploads a captured value: `words` are its host words (host addresses).
    /// `roots` maps each tensor buffer's host base address to its device copy.
    pub(crate) fn upload(
        &mut self,
        t: &Type,
        words_in: &[u64],
        at: &mut usize,
        roots: &[(usize, usize, u64)],
    ) -> R<Vec<u64>> {
        let mut next = || -> R<u64> {
            let w = *words_in
                .get(*at)
                .ok_or("a captured value has fewer words than its type")?;
            *at += 1;
            Ok(w)
        };
        Ok(match t {
            Type::Scalar(_) => vec![next()?],
            Type::Unit => vec![],
            Type::Tuple(_) | Type::Record(..) | Type::Array(..) => {
                let mut out = Vec::new();
                for p in t.parts() {
                    out.extend(self.upload(&p, words_in, at, roots)?);
                }
                out
            }
            Type::Seq(e) => {
                let len = next()?;
                let mut out = vec![len];
                out.extend(self.upload_columns(e, len, words_in, at)?);
                out
            }
            Type::Tensor(_) => {
                let host = next()? as usize;
                let (base, _, dev) = roots
                    .iter()
                    .copied()
                    .find(|&(b, bytes, _)| host >= b && host <= b + bytes)
                    .ok_or("a captured tensor's buffer was not marshaled")?;
                let mut out = vec![dev + (host - base) as u64];
                for _ in 0..1 + MAX_RANK {
                    out.push(next()?);
                }
                out
            }
            t => return Err(format!("cannot pass a value of type {t} to the GPU")),
        })
    }

    pub(crate) fn upload_columns(
        &mut self,
        e: &Type,
        count: u64,
        words_in: &[u64],
        at: &mut usize,
    ) -> R<Vec<u64>> {
        Ok(match e {
            Type::Scalar(s) => {
                let host = *words_in.get(*at).ok_or("a column is missing")? as usize;
                *at += 1;
                let bytes = count as usize * size_of(*s);
                let data: &[u8] = if bytes == 0 {
                    &[]
                } else {
                    // SAFETY: marshaled columns hold `count` elements of `s` at `host` and
                    // stay alive (borrowed or kept by the marshal) for the whole run.
                    unsafe { std::slice::from_raw_parts(host as *const u8, bytes) }
                };
                vec![self.upload_input(host, data)?]
            }
            Type::Seq(inner) => {
                let n = *words_in.get(*at).ok_or("a row length is missing")?;
                *at += 1;
                let mut out = vec![n];
                out.extend(self.upload_columns(inner, count * n, words_in, at)?);
                out
            }
            Type::Unit => vec![],
            t => {
                let mut out = Vec::new();
                for p in t.parts() {
                    out.extend(self.upload_columns(&p, count, words_in, at)?);
                }
                out
            }
        })
    }

    /// Copies a result's columns back into memory of `arena` (or where
    /// [`with_result_at`] says), giving its host words.
    pub(crate) fn download(&mut self, v: &HostVal, arena: &mut Arena) -> R<Vec<u64>> {
        if let Some(words) = self.download_placed(v)? {
            return Ok(words);
        }
        let mut at = 0;
        let mut out = Vec::new();
        self.download_value(&v.ty, &v.w, &mut at, arena, &mut out)?;
        Ok(out)
    }

    /// Copies a result's column at device address `dev` into `dst` (its pages faulted in
    /// first: a large copy into fresh pages ran at a third of the speed).
    fn column_back(&mut self, dev: u64, dst: &mut [u8]) -> R<()> {
        pages::fault_in(dst);
        self.session.download(dev, dst)?;
        self.bytes_out += dst.len();
        Ok(())
    }

    /// Copies a sequence of flat elements into the columns [`with_result_at`] gave, if it
    /// gave as many as the elements have and each has room (else `None`).
    fn download_placed(&mut self, v: &HostVal) -> R<Option<Vec<u64>>> {
        let Type::Seq(e) = &v.ty else {
            return Ok(None);
        };
        let Some(placed) = RESULT_AT.with(|r| r.borrow().clone()) else {
            return Ok(None);
        };
        let Ok(columns) = crate::backend::layout::flat_columns(e) else {
            return Ok(None);
        };
        let len = v.w[0] as usize;
        let fits = columns.len() == placed.len()
            && v.w.len() == 1 + columns.len()
            && columns
                .iter()
                .zip(&placed)
                .all(|(s, &(_, room))| len.checked_mul(size_of(*s)).is_some_and(|b| b <= room));
        if !fits {
            return Ok(None);
        }
        let mut out = vec![len as u64];
        for ((s, &(host, _)), &dev) in columns.iter().zip(&placed).zip(&v.w[1..]) {
            let bytes = len * size_of(*s);
            if bytes > 0 {
                // SAFETY: `with_result_at`'s caller keeps `host` valid for writes of the
                // room checked above, which holds `bytes`, and lets nothing else read it.
                let dst = unsafe { std::slice::from_raw_parts_mut(host as *mut u8, bytes) };
                self.column_back(dev, dst)?;
            }
            out.push(host as u64);
        }
        Ok(Some(out))
    }

    pub(crate) fn download_value(
        &mut self,
        t: &Type,
        w: &[u64],
        at: &mut usize,
        arena: &mut Arena,
        out: &mut Vec<u64>,
    ) -> R<()> {
        match t {
            Type::Scalar(_) => {
                out.push(w[*at]);
                *at += 1;
            }
            Type::Unit => {}
            Type::Seq(e) => {
                let len = w[*at];
                *at += 1;
                out.push(len);
                self.download_columns(e, len, w, at, arena, out)?;
            }
            Type::Tensor(_) => {
                return Err("a tensor cannot be a result of compiled code yet".into())
            }
            t => {
                for p in t.parts() {
                    self.download_value(&p, w, at, arena, out)?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn download_columns(
        &mut self,
        e: &Type,
        count: u64,
        w: &[u64],
        at: &mut usize,
        arena: &mut Arena,
        out: &mut Vec<u64>,
    ) -> R<()> {
        match e {
            Type::Scalar(s) => {
                let dev = w[*at];
                *at += 1;
                let bytes = count as usize * size_of(*s);
                let host = arena.alloc(bytes, size_of(*s));
                if host.is_null() {
                    return Err(format!("could not allocate {bytes} bytes for a result"));
                }
                if bytes > 0 {
                    // SAFETY: the arena just allocated `bytes` bytes at `host`, nothing else
                    // refers to them yet.
                    let dst = unsafe { std::slice::from_raw_parts_mut(host, bytes) };
                    self.column_back(dev, dst)?;
                    // The column's device buffer outlives the run as a kept input (a next
                    // site passed this result finds it there); not a split site's part,
                    // whose result the caller only sees concatenated with the others'.
                    let part = RESIDENT.with(|r| r.borrow().is_some());
                    if bytes >= crate::cuda::inputs::KEPT_MIN && !part {
                        let mine = self
                            .keep
                            .iter()
                            .position(|b| b.ptr == dev && b.bytes == bytes);
                        if let Some(k) = mine {
                            let buf = self.keep.swap_remove(k);
                            self.held -= buf.bytes;
                            crate::cuda::inputs::keep_result(self.session, buf, dst);
                        }
                    }
                }
                out.push(host as u64);
            }
            Type::Seq(inner) => {
                let n = w[*at];
                *at += 1;
                out.push(n);
                self.download_columns(inner, count * n, w, at, arena, out)?;
            }
            Type::Unit => {}
            t => {
                for p in t.parts() {
                    self.download_columns(&p, count, w, at, arena, out)?;
                }
            }
        }
        Ok(())
    }

    /// The first failure a kernel recorded, if any (waits for the kernels).
    pub(crate) fn check_failure(&self) -> R<()> {
        self.session.synchronize()?;
        let mut bytes = [0u8; 24];
        self.session.download(self.err, &mut bytes)?;
        let word = |k: usize| u64::from_le_bytes(bytes[k * 8..k * 8 + 8].try_into().unwrap());
        match word(0) {
            0 => Ok(()),
            kind => Err(Failure {
                code: kind as u32,
                a: word(1),
                b: word(2),
            }
            .describe()),
        }
    }

    /// Element `k` of a sequence of `e` whose columns are `w[at..]` (read back from the
    /// device; a row stays a view on it).
    pub(crate) fn element_of(
        &mut self,
        e: &Type,
        w: &[u64],
        at: &mut usize,
        k: u64,
    ) -> R<Vec<u64>> {
        Ok(match e {
            Type::Scalar(s) => {
                let col = w[*at];
                *at += 1;
                let size = size_of(*s);
                let mut bytes = [0u8; 8];
                self.session
                    .download(col + k * size as u64, &mut bytes[..size])?;
                self.bytes_out += size;
                vec![normalize(*s, u64::from_le_bytes(bytes))]
            }
            Type::Seq(inner) => {
                let n = w[*at];
                let mut out = vec![n];
                let mut rest = *at + 1;
                offset_columns(inner, w, &mut rest, k * n, &mut out)?;
                *at = rest;
                out
            }
            Type::Unit => vec![],
            t => {
                let mut out = Vec::new();
                for p in t.parts() {
                    out.extend(self.element_of(&p, w, at, k)?);
                }
                out
            }
        })
    }

    /// A sequence of host values (flat elements) uploaded as columns.
    pub(crate) fn upload_elements(&mut self, elem: Type, vs: &[HostVal]) -> R<HostVal> {
        let kinds = words(&elem)?;
        let mut cols = vec![vs.len() as u64];
        for (j, kind) in kinds.iter().enumerate() {
            let Word::Scalar(s) = kind else {
                return Err("a `vec!` of sequences on the host".into());
            };
            let size = size_of(*s);
            let bytes: Vec<u8> = vs
                .iter()
                .flat_map(|v| v.w[j].to_le_bytes()[..size].to_vec())
                .collect();
            let buf = self.session.upload(&bytes)?;
            self.bytes_in += bytes.len();
            cols.push(buf.ptr);
            self.hold(buf);
        }
        Ok(HostVal {
            ty: Type::Seq(Box::new(elem)),
            w: cols,
        })
    }

    /// Columns for `rows` rows of `m` elements of `elem`.
    pub(crate) fn alloc_rows(&mut self, elem: &Type, rows: u64, m: u64) -> R<Vec<u64>> {
        let mut cols = Vec::new();
        for c in columns(elem)? {
            let Word::Ptr(s) = c else {
                return Err("a row column is not a pointer".into());
            };
            let bytes = (rows as usize)
                .checked_mul(m as usize)
                .and_then(|k| k.checked_mul(size_of(s)))
                .ok_or("the rows are too large")?;
            cols.push(self.alloc(bytes)?);
        }
        Ok(cols)
    }
}

/// Columns of a sequence of `e` (read from `w` at `at`), advanced by `k` elements.
pub(crate) fn offset_columns(
    e: &Type,
    w: &[u64],
    at: &mut usize,
    k: u64,
    out: &mut Vec<u64>,
) -> R<()> {
    match e {
        Type::Scalar(s) => {
            let p = w[*at];
            *at += 1;
            out.push(if p == 0 {
                0
            } else {
                p + k * size_of(*s) as u64
            });
        }
        Type::Seq(inner) => {
            let n = w[*at];
            *at += 1;
            out.push(n);
            offset_columns(inner, w, at, k * n, out)?;
        }
        Type::Unit => {}
        t => {
            for p in t.parts() {
                offset_columns(&p, w, at, k, out)?;
            }
        }
    }
    Ok(())
}
