//! Kernels compiled at build time and embedded in the binary (`embed_kernels!()`): PTX
//! per recorded site and architecture, looked up before the disk cache and NVRTC by the
//! disk cache's own key (a hash of the generated CUDA C, the architecture, the
//! fused-multiply-add setting and accel's version), so a hit needs no NVRTC and a bundle
//! can never hand a site kernels generated from another program.
//!
//! A miss says why: the site (with these types) was not recorded, its program changed
//! since it was recorded (the entry is stale), the build had no NVRTC, or no PTX fits the
//! GPU's architecture.

use crate::backend::dump::fnv1a;
use crate::backend::{log, FrontEnd};
use crate::record;
use serde::{Deserialize, Serialize};
use std::sync::RwLock;

/// The file the build-time generator writes into `OUT_DIR`.
pub const FILE_NAME: &str = "accel-kernels.json";

/// What `build.rs` generated from a site record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// The accel version that generated it.
    pub accel: String,
    /// Whether NVRTC was found at build time (without it the sites carry no PTX).
    pub compiled: bool,
    /// One entry per recorded site and signature.
    pub sites: Vec<BundledSite>,
}

/// A recorded site's kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundledSite {
    /// `src/main.rs:12:5`.
    pub site: String,
    /// `(v: [f64]) -> f64`.
    pub signature: String,
    /// The hash of the program the kernels were generated from.
    pub program_hash: String,
    /// The PTX, one per architecture.
    pub ptx: Vec<BundledPtx>,
}

/// A site's kernels for one architecture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BundledPtx {
    /// `compute_90`.
    pub arch: String,
    /// [`ptx_key`] of the CUDA C it was compiled from.
    pub key: String,
    /// The PTX (every kernel of the site in one module).
    pub ptx: String,
}

/// The key of the PTX of `source` for `arch`, in the disk cache and in bundles.
pub fn ptx_key(source: &str, arch: &str, fmad: bool) -> String {
    format!(
        "{:016x}",
        fnv1a(&[
            source.as_bytes(),
            arch.as_bytes(),
            if fmad { b"fmad" } else { b"nofmad" },
            env!("CARGO_PKG_VERSION").as_bytes()
        ])
    )
}

/// The bundles registered in this process.
static BUNDLES: RwLock<Vec<Bundle>> = RwLock::new(Vec::new());

/// Registers an embedded bundle (what `embed_kernels!()` expands to): from now on its
/// kernels are used before NVRTC. A bundle that cannot be read is reported and ignored
/// (the sites then compile at run time).
pub fn register(json: &str) {
    let bundle: Bundle = match serde_json::from_str(json) {
        Ok(b) => b,
        Err(e) => {
            log::warning!(
                "the embedded kernel bundle cannot be read ({e}); sites compile at run time"
            );
            return;
        }
    };
    let mut bundles = BUNDLES.write().unwrap_or_else(|e| e.into_inner());
    if bundles.contains(&bundle) {
        return;
    }
    let files: usize = bundle.sites.iter().map(|s| s.ptx.len()).sum();
    log::info!(
        "embedded kernel bundle: {} site(s), {files} PTX file(s){}",
        bundle.sites.len(),
        if bundle.compiled {
            ""
        } else {
            " (built without NVRTC)"
        }
    );
    bundles.push(bundle);
}

/// Whether a bundle is registered (a GPU then needs NVRTC only for what it misses).
pub fn registered() -> bool {
    !BUNDLES.read().unwrap_or_else(|e| e.into_inner()).is_empty()
}

/// What the registered bundles hold for a site's generated CUDA C on `arch`.
#[derive(Debug, PartialEq)]
pub enum Lookup {
    /// No bundle is registered.
    NoBundle,
    /// PTX for the site (for `arch` or an older architecture, which the driver compiles
    /// for the GPU).
    Hit(String),
    /// Why the bundles hold nothing for the site.
    Miss(String),
}

/// The PTX the registered bundles hold for `source` (generated from `front` at `site`)
/// on `arch`, or why they hold none.
pub fn lookup(site: &str, front: &FrontEnd, source: &str, arch: &str, fmad: bool) -> Lookup {
    let bundles = BUNDLES.read().unwrap_or_else(|e| e.into_inner());
    if bundles.is_empty() {
        return Lookup::NoBundle;
    }
    let wanted = arch_number(arch);
    let all_ptx = || bundles.iter().flat_map(|b| &b.sites).flat_map(|s| &s.ptx);
    // The architectures the GPU can run, newest first (the driver compiles older PTX for
    // it); the source is hashed once per architecture, not once per bundled site.
    let mut archs: Vec<&str> = all_ptx()
        .map(|p| p.arch.as_str())
        .filter(|a| arch_number(a) <= wanted)
        .collect();
    archs.sort_by_key(|a| (std::cmp::Reverse(arch_number(a)), *a));
    archs.dedup();
    for a in archs {
        let key = ptx_key(source, a, fmad);
        if let Some(p) = all_ptx().find(|p| p.arch == a && p.key == key) {
            return Lookup::Hit(p.ptx.clone());
        }
    }
    let signature = record::signature(&front.captures, &front.result);
    Lookup::Miss(miss_reason(
        &bundles,
        site,
        &signature,
        &front.program_hash,
        arch,
    ))
}

/// Why no bundled PTX matched the site.
fn miss_reason(
    bundles: &[Bundle],
    site: &str,
    signature: &str,
    program_hash: &str,
    arch: &str,
) -> String {
    let entries: Vec<(&Bundle, &BundledSite)> = bundles
        .iter()
        .flat_map(|b| b.sites.iter().map(move |s| (b, s)))
        .filter(|(_, s)| s.site == site && s.signature == signature)
        .collect();
    let Some(&(bundle, entry)) = entries.first() else {
        return format!("the site was not recorded with the types {signature}");
    };
    if entry.program_hash != program_hash {
        return "the record is stale: the site's program changed since it was recorded".to_string();
    }
    if !bundle.compiled {
        return "the bundle was built without NVRTC".to_string();
    }
    let archs: Vec<&str> = entry.ptx.iter().map(|p| p.arch.as_str()).collect();
    if !archs.iter().any(|a| arch_number(a) <= arch_number(arch)) {
        return format!(
            "it holds no PTX that {arch} can run (built for {})",
            archs.join(", ")
        );
    }
    format!(
        "its kernels were generated by accel {} with other settings (ACCEL_CUDA_FMAD)",
        bundle.accel
    )
}

/// `compute_90` -> 90 (0 when unreadable, which sorts first).
fn arch_number(arch: &str) -> u32 {
    arch.trim_start_matches("compute_")
        .trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .unwrap_or(0)
}

/// Removes every registered bundle (tests register bundles of their own).
pub fn clear() {
    BUNDLES.write().unwrap_or_else(|e| e.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use accel_ir::{Expr, Lit, ScalarType, Type};

    fn front(hash: &str) -> FrontEnd {
        FrontEnd {
            fused: Expr::Lit(Lit::Int(1, None)),
            captures: vec![(
                "v".into(),
                Type::Seq(Box::new(Type::Scalar(ScalarType::F64))),
            )],
            result: Type::Scalar(ScalarType::F64),
            program_hash: hash.into(),
        }
    }

    fn bundle(archs: &[&str], compiled: bool) -> Bundle {
        Bundle {
            accel: "0.1.0".into(),
            compiled,
            sites: vec![BundledSite {
                site: "src/main.rs:4:5".into(),
                signature: "(v: [f64]) -> f64".into(),
                program_hash: "h1".into(),
                ptx: archs
                    .iter()
                    .map(|a| BundledPtx {
                        arch: a.to_string(),
                        key: ptx_key("source", a, true),
                        ptx: format!("ptx for {a}"),
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn reads_architectures() {
        assert_eq!(arch_number("compute_90"), 90);
        assert_eq!(arch_number("compute_90a"), 90);
        assert_eq!(arch_number("sm_100"), 100);
        assert_eq!(arch_number("other"), 0);
    }

    #[test]
    fn misses_say_why() {
        let b = [bundle(&["compute_80", "compute_90"], true)];
        let reason =
            |site: &str, sig: &str, hash: &str, arch: &str| miss_reason(&b, site, sig, hash, arch);
        let sig = "(v: [f64]) -> f64";
        assert_eq!(
            reason("src/main.rs:9:5", sig, "h1", "compute_90"),
            "the site was not recorded with the types (v: [f64]) -> f64"
        );
        assert_eq!(
            reason("src/main.rs:4:5", "(v: [i64]) -> i64", "h1", "compute_90"),
            "the site was not recorded with the types (v: [i64]) -> i64"
        );
        assert_eq!(
            reason("src/main.rs:4:5", sig, "h2", "compute_90"),
            "the record is stale: the site's program changed since it was recorded"
        );
        assert_eq!(
            reason("src/main.rs:4:5", sig, "h1", "compute_75"),
            "it holds no PTX that compute_75 can run (built for compute_80, compute_90)"
        );
        assert_eq!(
            reason("src/main.rs:4:5", sig, "h1", "compute_90"),
            "its kernels were generated by accel 0.1.0 with other settings (ACCEL_CUDA_FMAD)"
        );
        let uncompiled = [bundle(&[], false)];
        assert_eq!(
            miss_reason(&uncompiled, "src/main.rs:4:5", sig, "h1", "compute_90"),
            "the bundle was built without NVRTC"
        );
    }

    #[test]
    fn the_newest_ptx_the_gpu_can_run_is_chosen() {
        clear();
        assert_eq!(
            lookup(
                "src/main.rs:4:5",
                &front("h1"),
                "source",
                "compute_90",
                true
            ),
            Lookup::NoBundle
        );
        register(&serde_json::to_string(&bundle(&["compute_80", "compute_90"], true)).unwrap());
        assert!(registered());
        let at =
            |arch: &str, fmad: bool| lookup("src/main.rs:4:5", &front("h1"), "source", arch, fmad);
        assert_eq!(
            at("compute_90", true),
            Lookup::Hit("ptx for compute_90".into())
        );
        assert_eq!(
            at("compute_100", true),
            Lookup::Hit("ptx for compute_90".into())
        );
        assert_eq!(
            at("compute_86", true),
            Lookup::Hit("ptx for compute_80".into())
        );
        assert!(matches!(at("compute_90", false), Lookup::Miss(_)));
        assert_eq!(
            lookup(
                "src/main.rs:4:5",
                &front("h2"),
                "edited",
                "compute_90",
                true
            ),
            Lookup::Miss(
                "the record is stale: the site's program changed since it was recorded".into()
            )
        );
        clear();
    }
}
