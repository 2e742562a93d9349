//! Sites over distributed sequences: compiled once per site, types and device
//! (`devices::distributed`), and what happens when they do not compile.

use super::{all_captures, backend_of, log_compiled, ran_on, Compiled, Plan};
use crate::accel_type::{Accel, Inspect};
use crate::backend::cache::CompileCache;
use crate::backend::log::{self, logging};
use crate::comm::Communicator;
use crate::devices::{self, Device};
use crate::error::{compile_kind_of, AccelError};
use crate::frontend;
use crate::mode::{self, Mode};
use crate::site::SiteDesc;
use crate::stats::{self, RanOn};
use accel_ir::Type;
use std::marker::PhantomData;
use std::sync::Arc;

/// Whether a site with these captures runs as a distributed site: it captures a `DistVec`,
/// runs inside `DistVec::from_site`, or its sequences are spread by the test hook.
pub(super) fn runs_distributed(captures: &[(&str, &dyn Inspect)]) -> bool {
    ranks_of(captures).is_some()
}

/// The ranks a distributed site runs on: its `DistVec`s', `DistVec::from_site`'s, or the
/// test hook's.
fn ranks_of(captures: &[(&str, &dyn Inspect)]) -> Option<Arc<dyn Communicator>> {
    let spreading = crate::dist::spreading();
    captures
        .iter()
        .find_map(|(_, v)| {
            v.distributed_over().or_else(|| {
                spreading
                    .then(|| crate::dist::spread_over(&v.ir_type()))
                    .flatten()
            })
        })
        .or_else(crate::dist::keeping_over)
}

/// The device a rank runs its parts on: the first named (`ACCEL_DEVICES`, `with_devices`),
/// else in cuda mode the GPU of its index among the ranks on its machine (modulo the
/// GPUs there: one rank per GPU), else the CPU.
fn rank_device(mode: Mode, devices: &[Device], ranks: Option<&dyn Communicator>) -> Device {
    if let Some(&first) = devices.first() {
        return first;
    }
    match mode {
        #[cfg(feature = "cuda")]
        Mode::Cuda => {
            let gpus = crate::cuda::gpu_count().unwrap_or(1).max(1) as usize;
            let k = ranks.map_or(0, |c| c.node_rank() % gpus);
            Device::Cuda(k as u32)
        }
        _ => {
            let _ = ranks;
            Device::Cpu
        }
    }
}

/// The backend name of sites over distributed sequences.
pub(super) const DISTRIBUTED: &str = "distributed";

/// A site over distributed sequences: each rank runs its part on the first device named
/// (else the mode's), compiled on first use. What does not compile runs sequentially on
/// the gathered sequences where the mode was defaulted, and is an error where it was
/// chosen.
pub(super) fn distributed_plan<R: Accel>(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
    mode: Mode,
    devices: &[Device],
) -> Result<Plan<R>, AccelError> {
    type Key = (usize, Vec<Type>, Type, Device, bool);
    static SITES: CompileCache<Key, devices::distributed::DistSite> = CompileCache::new();
    #[cfg(feature = "cuda")]
    let emulating = crate::cuda::device::emulating();
    #[cfg(not(feature = "cuda"))]
    let emulating = false;
    let ranks = ranks_of(captures);
    let device = rank_device(mode, devices, ranks.as_deref());
    let constants = site.constants();
    let all = all_captures(captures, constants);
    let types: Vec<Type> = all.iter().map(|(_, v)| v.ir_type()).collect();
    let result = R::accel_type();
    let key = site.key();
    let front = || frontend::front_end(site, &types, &result);
    let cache_key = (key.id, types.clone(), result.clone(), device, emulating);
    let (compiled, hit) = SITES.get(cache_key, || {
        devices::distributed::compile(key, &front, device, &backend_of).map(Arc::new)
    });
    match compiled {
        Ok(code) => {
            if !hit {
                stats::record(key.id, site.location(), ran_on(backend_of(device).name()), Vec::new());
                if let Some(why) = code.not_split() {
                    log::fallback(
                        devices::notice_id(key.id),
                        format_args!(
                            "{}: distributed sequences: {why}; every rank runs it whole on the gathered sequences (ACCEL_LOG=0 silences this)",
                            site.location()
                        ),
                    );
                }
                if logging() {
                    log_compiled(site, Some("first run of the site".into()), DISTRIBUTED, &*code);
                }
            }
            Ok(Plan::Compiled(
                Compiled {
                    backend: DISTRIBUTED,
                    code,
                    history_size: None,
                },
                PhantomData,
            ))
        }
        Err(e) if mode::mode_was_chosen() => Err(AccelError::Backend {
            site: site.location(),
            kind: compile_kind_of(&e),
            message: format!("{e} (a site over distributed sequences); run it with ACCEL_MODE=debug, or leave ACCEL_MODE unset to run it sequentially on the gathered sequences"),
        }),
        Err(e) => {
            if !hit {
                log::fallback(
                    key.id,
                    format_args!(
                        "{}: distributed sequences: {e}; running sequentially on the gathered sequences (ACCEL_LOG=0 silences this)",
                        site.location()
                    ),
                );
                stats::record(key.id, site.location(), RanOn::Sequential, vec![e]);
            }
            Ok(Plan::Sequential)
        }
    }
}
