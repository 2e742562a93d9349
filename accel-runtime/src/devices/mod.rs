//! Devices: which ones a site may run on (`ACCEL_DEVICES`, [`with_devices`]) and, when
//! several are named, one site split across all of them ([`fission`]).
//!
//! A list of one device runs every site there (as `ACCEL_MODE` would); a list of several
//! splits each site that ends in a `map`, `create`, `reduce`, `scan` or `filter` into parts
//! that the devices take from one queue, so a faster device takes more of them. What does
//! not split runs on the first device listed, and says why once.

mod derived;
pub mod distributed;
mod fission;
mod placed;
mod queue;
pub mod staged;

pub use derived::notice_id;

use crate::mode::Mode;
use std::cell::Cell;
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// A device a site can run on.
///
/// ```
/// use accel_runtime::Device;
/// assert_eq!(Device::parse_list("cpu, cuda:0"), Ok(vec![Device::Cpu, Device::Cuda(0)]));
/// assert_eq!(Device::Cuda(0).to_string(), "cuda:0");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// All CPU cores (the CPU backend's thread pool).
    Cpu,
    /// The GPU with this ordinal (the CUDA backend; under the emulator, the emulator).
    Cuda(u32),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(k) => write!(f, "cuda:{k}"),
        }
    }
}

impl Device {
    /// The mode that runs a site on this device alone.
    pub fn mode(self) -> Mode {
        match self {
            Device::Cpu => Mode::Cpu,
            Device::Cuda(_) => Mode::Cuda,
        }
    }

    /// Parses a list as `ACCEL_DEVICES` takes it: `cpu`, `cuda` (the first GPU),
    /// `cuda:N`, or `all` (every GPU this build can use, then the CPU), separated by
    /// commas.
    pub fn parse_list(list: &str) -> Result<Vec<Device>, String> {
        let mut devices = Vec::new();
        for word in list.split(',').map(str::trim) {
            let add: Vec<Device> = match word {
                "cpu" => vec![Device::Cpu],
                "cuda" => vec![Device::Cuda(0)],
                "all" => all(),
                w => match w.strip_prefix("cuda:").map(str::parse::<u32>) {
                    Some(Ok(k)) => vec![Device::Cuda(k)],
                    _ => {
                        return Err(format!(
                        "`{w}` is not a device: use cpu, cuda, cuda:N or all, separated by commas"
                    ))
                    }
                },
            };
            for d in add {
                if devices.contains(&d) {
                    return Err(format!("{d} is named twice"));
                }
                devices.push(d);
            }
        }
        for d in &devices {
            d.check()?;
        }
        Ok(devices)
    }

    /// Whether this build can drive the device (whether it is there is known when a
    /// site first runs on it).
    fn check(self) -> Result<(), String> {
        match self {
            Device::Cuda(_) if !cfg!(feature = "cuda") => Err(format!(
                "{self} needs accel-runtime's `cuda` feature (build with `--features cuda`)"
            )),
            _ => Ok(()),
        }
    }

    /// Runs `f` with this device as the thread's GPU (a GPU's parts run there).
    pub(crate) fn enter<R>(self, f: impl FnOnce() -> R) -> R {
        match self {
            #[cfg(feature = "cuda")]
            Device::Cuda(k) => crate::cuda::with_gpu(k, f),
            _ => f(),
        }
    }
}

/// Whether sites on `devices` split: across several devices, or across the lanes of one
/// GPU named alone where it has several (`ACCEL_CUDA_LANES`; a mistaken value is reported
/// by the split).
pub(crate) fn splits(devices: &[Device]) -> bool {
    match devices {
        #[cfg(feature = "cuda")]
        [Device::Cuda(_)] => crate::cuda::device::lanes().map_or(true, |n| n > 1),
        [_] | [] => false,
        _ => true,
    }
}

/// Every GPU that is usable, then the CPU (the first device listed starts with the first
/// part: a GPU, where there is one).
fn all() -> Vec<Device> {
    #[cfg(feature = "cuda")]
    if crate::cuda::available().is_ok() {
        let count = crate::cuda::gpu_count().unwrap_or(1);
        return (0..count).map(Device::Cuda).chain([Device::Cpu]).collect();
    }
    vec![Device::Cpu]
}

thread_local! {
    static OVERRIDE: Cell<Option<&'static [Device]>> = const { Cell::new(None) };
}

/// One copy of each list [`with_devices`] was given (a program names a few).
fn interned(devices: &[Device]) -> &'static [Device] {
    static LISTS: Mutex<Vec<&'static [Device]>> = Mutex::new(Vec::new());
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = lists.iter().find(|l| **l == devices) {
        return l;
    }
    let l: &'static [Device] = Box::leak(devices.to_vec().into_boxed_slice());
    lists.push(l);
    l
}

/// Runs `f` with accelerated code on this thread using `devices`, whatever
/// `ACCEL_DEVICES` says (an empty list: the mode decides, as without `ACCEL_DEVICES`).
///
/// ```
/// use accel_runtime::prelude::*;
/// use accel_runtime::{with_devices, Device};
/// let v: Vec<i64> = (0..100_000).collect();
/// let s = with_devices(&[Device::Cpu], || accelerate!(reduce(|a, b| a + b, 0, &v)));
/// assert_eq!(s, 4_999_950_000);
/// ```
pub fn with_devices<R>(devices: &[Device], f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&OVERRIDE, Some(interned(devices)), f)
}

/// The devices sites run on on this thread: those [`with_devices`] set, else
/// `ACCEL_DEVICES` (read once per process); empty when neither names any (the mode
/// decides), an error when `ACCEL_DEVICES` cannot be read.
pub fn selected() -> Result<&'static [Device], String> {
    if let Some(d) = OVERRIDE.with(Cell::get) {
        return Ok(d);
    }
    static ENV: OnceLock<Result<&'static [Device], String>> = OnceLock::new();
    ENV.get_or_init(|| match std::env::var("ACCEL_DEVICES") {
        Ok(v) if !v.trim().is_empty() => Device::parse_list(&v)
            .map(|d| interned(&d))
            .map_err(|e| format!("ACCEL_DEVICES={v:?}: {e}")),
        _ => Ok(&[]),
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_as_users_write_them_and_mistakes_are_named() {
        assert_eq!(Device::parse_list("cpu"), Ok(vec![Device::Cpu]));
        assert_eq!(
            Device::parse_list("cpu,cpu").unwrap_err(),
            "cpu is named twice"
        );
        assert_eq!(
            Device::parse_list("gpu").unwrap_err(),
            "`gpu` is not a device: use cpu, cuda, cuda:N or all, separated by commas"
        );
        assert!(Device::parse_list("all").unwrap().contains(&Device::Cpu));
        if cfg!(feature = "cuda") {
            assert_eq!(
                Device::parse_list("cuda:0,cpu"),
                Ok(vec![Device::Cuda(0), Device::Cpu])
            );
            assert_eq!(
                Device::parse_list("cuda:1, cuda:0"),
                Ok(vec![Device::Cuda(1), Device::Cuda(0)])
            );
            assert_eq!(
                Device::parse_list("cuda:x").unwrap_err(),
                "`cuda:x` is not a device: use cpu, cuda, cuda:N or all, separated by commas"
            );
        } else {
            assert!(Device::parse_list("cuda")
                .unwrap_err()
                .contains("`cuda` feature"));
        }
    }

    #[test]
    fn with_devices_holds_for_its_call_only() {
        let outside = selected();
        with_devices(&[Device::Cpu], || {
            assert_eq!(selected(), Ok(&[Device::Cpu][..]));
        });
        assert_eq!(selected(), outside);
    }
}
