//! Captured sequences kept on the GPU between calls. A site called from a Rust loop with
//! the same large input (Cholesky's and Gram-Schmidt's site per column, a model's weights
//! in every batch) copied it to the GPU at every call: on an H100 machine thousands of
//! 32 MB copies made Cholesky 15x slower than rayon. Rust's borrows cannot say that a
//! `&Vec` passed again is unchanged, so its contents decide: a 256-bit BLAKE3 hash of
//! the bytes, computed on all cores faster than a host-to-GPU copy, finds the device copy
//! made by an earlier call of any site. Only sequences are kept, of
//! a MiB or more: kernels never write them (a scatter or histogram copies its
//! destination first), unlike tensors, which are copied every call. A sequence result's
//! device column is kept the same way when it is copied back, so the next site of a
//! pipeline finds its input there.

use super::device::{DevBuf, Session};
use std::sync::{Arc, Mutex};

/// Inputs smaller than this are copied every call (hashing and bookkeeping would cost
/// about what the copy does).
pub const KEPT_MIN: usize = 1 << 20;
/// Device memory the kept inputs may hold on one GPU by default, the least recently used
/// given up first (on the emulator, whose device memory is the tests' host memory, less).
const KEPT_LIMIT: usize = 4 << 30;
const KEPT_LIMIT_EMULATED: usize = 256 << 20;

/// A kept input: its GPU, its length and contents' hash, its device copy, when last used.
struct Kept {
    device: u32,
    bytes: usize,
    hash: [u8; 32],
    buf: Arc<DevBuf>,
    used: u64,
}

struct Inputs {
    kept: Vec<Kept>,
    clock: u64,
}

static INPUTS: Mutex<Inputs> = Mutex::new(Inputs {
    kept: Vec::new(),
    clock: 0,
});

/// `ACCEL_CUDA_KEEP_INPUTS`: the MiB of kept inputs per GPU (`0`: none, every input is
/// copied at every call), when set to a number.
fn limit_set() -> Option<usize> {
    static SET: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *SET.get_or_init(|| {
        std::env::var("ACCEL_CUDA_KEEP_INPUTS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(|mib| mib.saturating_mul(1 << 20))
    })
}

/// Whether inputs are kept (`ACCEL_CUDA_KEEP_INPUTS=0` copies every input at every call).
fn enabled() -> bool {
    limit_set() != Some(0)
}

/// The hash of `data`: BLAKE3 of each MiB, computed in parallel, then of their hashes and
/// the length (the same bytes give the same hash however the work is split). A
/// cryptographic hash: data crafted to collide with what an earlier call kept (another
/// user's, in a server that reuses its buffers) cannot be found.
fn hash(data: &[u8]) -> [u8; 32] {
    use rayon::prelude::*;
    // On the caller's rayon pool, else rayon's global one (the CPU backend's pool is a
    // layer above this one).
    let pieces: Vec<[u8; 32]> = data
        .par_chunks(1 << 20)
        .map(|piece| *blake3::hash(piece).as_bytes())
        .collect();
    let mut all = blake3::Hasher::new();
    for p in &pieces {
        all.update(p);
    }
    all.update(&(data.len() as u64).to_le_bytes());
    *all.finalize().as_bytes()
}

/// The device copy of `data` (a captured sequence's column) on the session's GPU, and
/// whether it was copied now: kept from an earlier call when one with the same contents
/// is there, else made now and kept. `None` when it is too small to keep, or keeping is
/// off.
pub fn kept_copy(
    session: &Session<'_>,
    data: &[u8],
) -> Result<Option<(Arc<DevBuf>, bool)>, String> {
    if data.len() < KEPT_MIN || !enabled() {
        return Ok(None);
    }
    register();
    let hash = hash(data);
    if let Some(buf) = lookup(session, data.len(), &hash) {
        return Ok(Some((buf, false)));
    }
    let buf = Arc::new(session.upload(data)?);
    keep(session, hash, data.len(), buf.clone());
    Ok(Some((buf, true)))
}

/// Keeps `buf`, a result's device column that `data` was just copied from, as if `data`
/// had been copied there as an input: a later call passing the result on (the next step
/// of a pipeline of sites) finds it on the GPU.
pub fn keep_result(session: &Session<'_>, buf: DevBuf, data: &[u8]) {
    if data.len() < KEPT_MIN || buf.bytes != data.len() || !enabled() {
        return;
    }
    register();
    let hash = hash(data);
    if lookup(session, data.len(), &hash).is_none() {
        keep(session, hash, data.len(), Arc::new(buf));
    }
}

/// The kept copy on the session's GPU of `bytes` bytes whose contents hash to `hash`,
/// now the most recently used, if there is one.
fn lookup(session: &Session<'_>, bytes: usize, hash: &[u8; 32]) -> Option<Arc<DevBuf>> {
    let device = session.gpu().ordinal;
    let mut inputs = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    inputs.clock += 1;
    let now = inputs.clock;
    let k = inputs
        .kept
        .iter_mut()
        .find(|k| k.device == device && k.bytes == bytes && k.hash == *hash)?;
    k.used = now;
    Some(k.buf.clone())
}

/// Registers [`release`] with the device layer, once.
fn register() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| super::device::on_memory_pressure(release));
}

/// Keeps `buf` (`bytes` bytes whose contents hash to `hash`) on the session's GPU, giving
/// up the least recently used of that GPU's kept inputs beyond its limit (its context is
/// current: a copy given up may be freed now; a run still holding one keeps it until it
/// ends).
fn keep(session: &Session<'_>, hash: [u8; 32], bytes: usize, buf: Arc<DevBuf>) {
    let device = session.gpu().ordinal;
    let mut inputs = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    inputs.clock += 1;
    let used = inputs.clock;
    inputs.kept.push(Kept {
        device,
        bytes,
        hash,
        buf,
        used,
    });
    let limit = limit_set().unwrap_or(if session.gpu().is_emulator() {
        KEPT_LIMIT_EMULATED
    } else {
        KEPT_LIMIT
    });
    let on_device = |inputs: &Inputs| -> usize {
        inputs
            .kept
            .iter()
            .filter(|k| k.device == device)
            .map(|k| k.bytes)
            .sum()
    };
    while on_device(&inputs) > limit {
        let oldest = (0..inputs.kept.len())
            .filter(|&k| inputs.kept[k].device == device)
            .min_by_key(|&k| inputs.kept[k].used);
        let Some(oldest) = oldest else { break };
        inputs.kept.swap_remove(oldest);
    }
}

/// Gives up the inputs kept on GPU `device` (its context is current): its memory runs
/// short (see `device::on_memory_pressure`).
fn release(device: u32) {
    let mut inputs = INPUTS.lock().unwrap_or_else(|e| e.into_inner());
    inputs.kept.retain(|k| k.device != device);
}

#[cfg(test)]
mod tests {
    use super::hash;

    #[test]
    fn the_hash_depends_on_every_byte_and_the_length_only() {
        let a: Vec<u8> = (0..3 << 20).map(|i| (i % 253) as u8).collect();
        let mut b = a.clone();
        assert_eq!(hash(&a), hash(&b));
        b[(3 << 20) - 1] ^= 1;
        assert_ne!(hash(&a), hash(&b));
        b[(3 << 20) - 1] ^= 1;
        b[1 << 20] ^= 0x80;
        assert_ne!(hash(&a), hash(&b));
        assert_ne!(hash(&a[..1 << 20]), hash(&a[..(1 << 20) + 1]));
    }
}
