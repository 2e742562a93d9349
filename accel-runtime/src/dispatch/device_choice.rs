//! Which device a site runs on when nothing chose one. With a GPU there and neither
//! `ACCEL_MODE`, [`with_mode`](crate::with_mode) nor `ACCEL_DEVICES` set, each site's
//! first calls run on the GPU, the next ones on the CPU, and from then on the site keeps
//! to the device whose last probing call was faster: a choice from the site's own
//! history, as StarPU's schedulers calibrate theirs. A GPU wins where a call's work
//! outweighs its copies and launches; programs of few operations per byte copied, of many
//! tiny calls, or written for CPU threads ran many times slower there on an H100
//! (`benchmarks/results/h100/corpus-cuda.md`: a dot product 9.7x rayon's time on 16
//! cores, radix sort 59x, Durbin's 2,000 tiny calls 48x sequential Rust's).
//!
//! A site called once runs on the GPU, as before this choice existed. The probes cost at
//! most [`PROBES`] calls on the slower device. Each device's first call pays for what
//! happens once (its kernels loaded, inputs the GPU keeps copied, the CPU's first tier),
//! so its last probe counts. Calls of different sizes choose apart (as StarPU's models
//! are kept per footprint of the data): a call's size is what its captures size its work
//! by (`Accel::size_hint`: sequences' lengths, integers' values, tensors' elements),
//! summed, and sizes within a factor of about 4 share a history, so a site tried on small
//! inputs first is tried again on large ones. Float results of math functions and float reductions may
//! differ in their last bits between the devices (as between `cpu` and `cuda` modes), so
//! a site's probing calls and its later ones may too.

use crate::accel_type::Inspect;
use crate::devices::Device;
use crate::mode::Mode;
use crate::site::SiteDesc;
use crate::stats::{self, RanOn};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Calls a site makes on each device before the choice.
pub(super) const PROBES: usize = 2;

/// What one site's calls took on each device, and the choice once made.
#[derive(Default)]
struct History {
    gpu: Vec<Duration>,
    cpu: Vec<Duration>,
    chosen: Option<Mode>,
}

impl History {
    /// The mode of the site's next call.
    fn next(&self) -> Mode {
        match self.chosen {
            Some(m) => m,
            None if self.gpu.len() < PROBES => Mode::Cuda,
            None => Mode::Cpu,
        }
    }

    /// Records a call that ran on `device` (the backend's name); returns the choice when
    /// this call made it, with the last probe's time on the GPU and on the CPU.
    fn ran(&mut self, device: &str, took: Duration) -> Option<(Mode, Duration, Duration)> {
        let times = match device {
            "cuda" => &mut self.gpu,
            "cpu" => &mut self.cpu,
            _ => return None,
        };
        if self.chosen.is_some() || times.len() == PROBES {
            return None;
        }
        times.push(took);
        match (self.gpu.last(), self.cpu.last()) {
            (Some(&gpu), Some(&cpu)) if self.gpu.len() == PROBES && self.cpu.len() == PROBES => {
                let chosen = if cpu < gpu { Mode::Cpu } else { Mode::Cuda };
                self.chosen = Some(chosen);
                Some((chosen, gpu, cpu))
            }
            _ => None,
        }
    }
}

/// Each site's histories, by size class.
static HISTORIES: Mutex<Option<HashMap<(usize, u32), History>>> = Mutex::new(None);

/// Runs `f` on the history of the site with key `id` for calls of `size`.
fn with_history<T>(id: usize, size: usize, f: impl FnOnce(&mut History) -> T) -> T {
    let mut all = HISTORIES.lock().unwrap_or_else(|e| e.into_inner());
    let key = (id, size_class(size));
    f(all.get_or_insert_with(HashMap::new).entry(key).or_default())
}

/// The class of a call's size: sizes within a factor of about 4 share one.
fn size_class(size: usize) -> u32 {
    (usize::BITS - size.leading_zeros()) / 2
}

/// The mode this call of `site` with `captures` runs in, given the mode and the devices
/// named; and the call's size where its history chose the mode (where nothing chose a mode
/// or devices and the default is the GPU's).
pub(super) fn mode_of_call(
    site: &'static SiteDesc,
    captures: &[(&str, &dyn Inspect)],
    mode: Mode,
    devices: &[Device],
) -> (Mode, Option<usize>) {
    if mode != Mode::Cuda || !devices.is_empty() || crate::mode::mode_was_chosen() {
        return (mode, None);
    }
    let size = captures
        .iter()
        .map(|(_, v)| v.size_hint())
        .fold(0, usize::saturating_add);
    (with_history(site.key().id, size, |h| h.next()), Some(size))
}

/// Keeps `site`'s calls of `size` on the GPU: the CPU cannot compile the site (its probe
/// there would run the sequential fallback).
pub(super) fn keep_on_gpu(site: &'static SiteDesc, size: usize) {
    with_history(site.key().id, size, |h| h.chosen = Some(Mode::Cuda));
}

/// Records how long a call of `site` of `size` took on `device` (the backend's name: a
/// site the GPU cannot compile runs on the CPU in cuda mode); when this call makes the
/// choice, says so in the log and in the site's statistics.
pub(super) fn ran(site: &'static SiteDesc, size: usize, device: &str, took: Duration) {
    let id = site.key().id;
    let Some((chosen, gpu, cpu)) = with_history(id, size, |h| h.ran(device, took)) else {
        return;
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (ran_on, why) = match chosen {
        Mode::Cpu => (
            RanOn::Cpu,
            vec![format!(
                "a call took {:.3} ms on the GPU and {:.3} ms on the CPU: it runs on the CPU for inputs of about {size} elements",
                ms(gpu),
                ms(cpu)
            )],
        ),
        _ => (RanOn::Cuda, Vec::new()),
    };
    crate::backend::log::info!(
        "{}: runs on the {} from now on for inputs of about {size} elements (a call took {:.3} ms on the GPU, {:.3} ms on the CPU)",
        site.location(),
        if chosen == Mode::Cpu { "CPU" } else { "GPU" },
        ms(gpu),
        ms(cpu)
    );
    stats::record(id, site.location(), ran_on, why);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Duration {
        Duration::from_millis(m)
    }

    /// The modes of a site's calls, each call taking what `took` says on its device.
    fn calls(h: &mut History, n: usize, took: impl Fn(Mode) -> Duration) -> Vec<Mode> {
        (0..n)
            .map(|_| {
                let m = h.next();
                h.ran(m.name(), took(m));
                m
            })
            .collect()
    }

    #[test]
    fn a_site_probes_both_devices_then_keeps_to_the_faster() {
        use Mode::{Cpu, Cuda};
        let mut h = History::default();
        let slow_gpu = |m| if m == Cuda { ms(9) } else { ms(2) };
        assert_eq!(calls(&mut h, 6, slow_gpu), [Cuda, Cuda, Cpu, Cpu, Cpu, Cpu]);
        let mut h = History::default();
        let fast_gpu = |m| if m == Cuda { ms(1) } else { ms(5) };
        assert_eq!(
            calls(&mut h, 6, fast_gpu),
            [Cuda, Cuda, Cpu, Cpu, Cuda, Cuda]
        );
    }

    #[test]
    fn the_last_probe_counts_not_the_first() {
        // The GPU's first call loads its kernels and copies its inputs; its second is
        // faster than either CPU call.
        let mut h = History::default();
        assert_eq!(h.ran("cuda", ms(50)), None);
        assert_eq!(h.ran("cuda", ms(1)), None);
        assert_eq!(h.ran("cpu", ms(3)), None);
        assert_eq!(h.ran("cpu", ms(2)), Some((Mode::Cuda, ms(1), ms(2))));
        // Later calls change nothing.
        assert_eq!(h.ran("cpu", ms(0)), None);
        assert_eq!(h.next(), Mode::Cuda);
    }

    #[test]
    fn sizes_within_a_factor_of_about_four_share_a_history() {
        let classes: Vec<u32> = [0, 1, 2, 3, 7, 8, 31, 32, 1000, 300_000, usize::MAX]
            .into_iter()
            .map(size_class)
            .collect();
        assert_eq!(classes, [0, 0, 1, 1, 1, 2, 2, 3, 5, 9, 32]);
    }

    #[test]
    fn a_site_the_gpu_cannot_compile_stays_in_cuda_mode_on_the_cpu() {
        // Cuda mode runs it on the CPU (its chain's fallback): no GPU time is ever
        // recorded, so no choice is made and the mode stays as the default has it.
        let mut h = History::default();
        for _ in 0..5 {
            assert_eq!(h.next(), Mode::Cuda);
            assert_eq!(h.ran("cpu", ms(1)), None);
        }
        assert_eq!(h.cpu.len(), PROBES);
    }
}
