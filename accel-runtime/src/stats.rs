//! What ran each site: the record behind [`site_stats`], written by dispatch when a site
//! is planned anew (its first run, new capture types, a fallback), never on a cache hit.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// What ran a site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RanOn {
    /// Compiled code on a GPU.
    Cuda,
    /// Compiled code on the CPU cores.
    Cpu,
    /// Compiled code split across several devices (`ACCEL_DEVICES`).
    Devices,
    /// The expression as sequential Rust, because no backend of the mode compiled it
    /// (see [`SiteStats::fallbacks`]).
    Sequential,
    /// Debug mode: the expression as checked sequential Rust.
    Debug,
}

impl fmt::Display for RanOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RanOn::Cuda => "cuda",
            RanOn::Cpu => "cpu",
            RanOn::Devices => "devices",
            RanOn::Sequential => "sequential Rust (fallback)",
            RanOn::Debug => "debug",
        })
    }
}

/// How one site ran in this process, from [`site_stats`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SiteStats {
    /// Where the site is, `file:line:column`.
    pub site: String,
    /// What ran it most recently.
    pub ran_on: RanOn,
    /// Why the backends before it did not run it, one line each (empty when the mode's
    /// first choice ran it).
    pub fallbacks: Vec<String>,
}

static STATS: Mutex<Option<HashMap<usize, SiteStats>>> = Mutex::new(None);

/// Records what ran the site with key `id`.
pub(crate) fn record(id: usize, site: String, ran_on: RanOn, fallbacks: Vec<String>) {
    let mut stats = STATS.lock().unwrap_or_else(|e| e.into_inner());
    stats.get_or_insert_with(HashMap::new).insert(
        id,
        SiteStats {
            site,
            ran_on,
            fallbacks,
        },
    );
}

/// Records what ran the site with key `id` unless it has a record already (debug mode,
/// which plans every run: `site` is only made for the first).
pub(crate) fn record_first(id: usize, site: impl FnOnce() -> String, ran_on: RanOn) {
    let mut stats = STATS.lock().unwrap_or_else(|e| e.into_inner());
    stats
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_insert_with(|| SiteStats {
            site: site(),
            ran_on,
            fallbacks: Vec::new(),
        });
}

/// What ran each site that has run in this process, in the order of their locations: the
/// way to find a site that fell back to sequential code (it also says so once on stderr).
///
/// ```
/// use accel_runtime::prelude::*;
/// use accel_runtime::{site_stats, RanOn};
///
/// let xs = vec![1.0f32, 2.0, 3.0];
/// let ys: Vec<f32> = with_mode(Mode::Cpu, || accelerate!(map(|x| x * 2.0, &xs)));
/// let stats = site_stats();
/// assert_eq!(stats.len(), 1);
/// assert_eq!(stats[0].ran_on, RanOn::Cpu);
/// assert!(stats[0].fallbacks.is_empty());
/// ```
pub fn site_stats() -> Vec<SiteStats> {
    let stats = STATS.lock().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<SiteStats> = stats
        .as_ref()
        .map(|s| s.values().cloned().collect())
        .unwrap_or_default();
    all.sort_by(|a, b| a.site.cmp(&b.site));
    all
}
