//! `ACCEL_DUMP=DIR`: what each compiled site ran, written where users can read it (the
//! CPU backend's optimised machine code per function, the CUDA backend's CUDA C and PTX).

use super::SiteKey;
use std::path::{Path, PathBuf};

/// The folder `ACCEL_DUMP` names, if any.
pub fn dump_dir() -> Option<PathBuf> {
    std::env::var_os("ACCEL_DUMP")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// FNV-1a over byte strings (each followed by a separator): stable across processes and
/// builds, for file names and the disk cache's keys.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// `file_line_col_hash` of a site, for dump file names (`text` is what is dumped, so that
/// each compiled version of a site gets its own file).
pub fn file_stem(site: SiteKey, text: &str) -> String {
    let loc: String = site
        .location()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{loc}_{:08x}", fnv1a(&[text.as_bytes()]) as u32)
}

/// Writes a file atomically (a temporary file renamed into place), creating its folder.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}
