//! Compiled code kept on disk for the next process: a directory of the user's own per
//! kind of code (`cpu-llvm`: LLVM's object code for the CPU), one file per entry.
//!
//! Code read from disk is code this process will run, so nothing is trusted that this
//! user did not write: the directory is created private (`0700`) and used only while it
//! is a real directory (no link) owned by the process's user and closed to everyone
//! else; an entry is used only when it is a regular file of that user's, not writable by
//! others, whose header names the key asked for and the SHA-256 of its contents, and
//! whose contents have that hash. Anything else is a miss (the code is compiled again
//! and the entry replaced). Entries are written to a fresh file and renamed into place,
//! so a reader never sees half an entry.
//!
//! `ACCEL_CACHE_DIR` (else `$XDG_CACHE_HOME/accel`, else `~/.cache/accel`) holds the
//! directories (and the CUDA backend's PTX, which the driver checks when it loads it);
//! `ACCEL_CACHE=0` turns the caches off. The directories of code are Linux's only.

#[cfg(target_os = "linux")]
use sha2::{Digest, Sha256};
#[cfg(target_os = "linux")]
use std::io::{Read, Write};
#[cfg(target_os = "linux")]
use std::path::Path;
use std::path::PathBuf;

/// The first bytes of every entry.
#[cfg(target_os = "linux")]
const MAGIC: &[u8; 16] = b"accel-cache-v1\n\0";

/// The directory the caches live in: `ACCEL_CACHE_DIR`, else `$XDG_CACHE_HOME/accel`, else
/// `~/.cache/accel`.
pub fn base_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("ACCEL_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("accel"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("accel"))
}

/// Whether disk caches are on: unless `ACCEL_CACHE=0`, or [`with_disk_cache`] says
/// otherwise on this thread.
pub fn enabled() -> bool {
    if let Some(on) = FORCED.get() {
        return on;
    }
    std::env::var("ACCEL_CACHE").map_or(true, |v| v != "0")
}

thread_local! {
    static FORCED: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with disk caches on or off on this thread (tests that count compiles).
pub fn with_disk_cache<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let before = FORCED.replace(Some(on));
    let r = f();
    FORCED.set(before);
    r
}

/// One kind of code's directory.
#[cfg(target_os = "linux")]
pub struct DiskCache {
    dir: PathBuf,
}

/// The hex digest of `bytes`.
#[cfg(target_os = "linux")]
fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(target_os = "linux")]
impl DiskCache {
    /// The directory of `kind` under [`base_dir`], created private where it is missing;
    /// `Err` says why it cannot be used (not private, someone else's, not a directory).
    pub fn open(kind: &str) -> Result<DiskCache, String> {
        let base = base_dir().ok_or("no cache directory (set ACCEL_CACHE_DIR or HOME)")?;
        Self::open_in(&base.join(kind))
    }

    /// [`DiskCache::open`] for the directory `dir`.
    pub fn open_in(dir: &Path) -> Result<DiskCache, String> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
        // Not followed: a link put in its place could lead anywhere.
        let meta = std::fs::symlink_metadata(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if !meta.file_type().is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        if meta.uid() != effective_user() {
            return Err(format!(
                "{} belongs to another user (uid {})",
                dir.display(),
                meta.uid()
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{} is open to other users (mode {:o}; the cache needs 700)",
                dir.display(),
                meta.mode() & 0o777
            ));
        }
        Ok(DiskCache {
            dir: dir.to_path_buf(),
        })
    }

    /// The file of the entry whose key is `key`.
    fn file(&self, key: &[u8; 32]) -> PathBuf {
        self.dir.join(&hex(key)[..40])
    }

    /// The contents of the entry for the key material `key`, verified; `None` when there
    /// is none or it fails a check (see the module's documentation).
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let key: [u8; 32] = Sha256::digest(key).into();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.file(&key))
            .ok()?;
        let meta = file.metadata().ok()?;
        let trusted = meta.file_type().is_file()
            && meta.uid() == effective_user()
            && meta.mode() & 0o022 == 0;
        if !trusted {
            return None;
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes).ok()?;
        let contents = Self::verified(&bytes, &key)?.to_vec();
        // Used now: the last to go when the directory is trimmed.
        let _ = file.set_modified(std::time::SystemTime::now());
        Some(contents)
    }

    /// The contents of the entry `bytes` when its header names `key` and the contents'
    /// hash.
    fn verified<'a>(bytes: &'a [u8], key: &[u8; 32]) -> Option<&'a [u8]> {
        let header = MAGIC.len() + 32 + 32 + 8;
        if bytes.len() < header || &bytes[..MAGIC.len()] != MAGIC {
            return None;
        }
        let at = MAGIC.len();
        let (named, hash) = (&bytes[at..at + 32], &bytes[at + 32..at + 64]);
        let length = u64::from_le_bytes(bytes[at + 64..header].try_into().ok()?);
        let contents = &bytes[header..];
        let whole = named == key && contents.len() as u64 == length;
        (whole && Sha256::digest(contents).as_slice() == hash).then_some(contents)
    }

    /// Keeps `contents` as the entry for the key material `key` (written whole to a new
    /// file of this user's, readable by no one else, then renamed into place).
    pub fn put(&self, key: &[u8], contents: &[u8]) -> Result<(), String> {
        use std::os::unix::fs::OpenOptionsExt;
        let key: [u8; 32] = Sha256::digest(key).into();
        let mut entry = Vec::with_capacity(MAGIC.len() + 72 + contents.len());
        entry.extend_from_slice(MAGIC);
        entry.extend_from_slice(&key);
        entry.extend_from_slice(&Sha256::digest(contents));
        entry.extend_from_slice(&(contents.len() as u64).to_le_bytes());
        entry.extend_from_slice(contents);
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temporary = self.dir.join(format!(".new-{}-{n}", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)
            .and_then(|mut f| f.write_all(&entry))
            .and_then(|()| std::fs::rename(&temporary, self.file(&key)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(format!("cannot write to {}: {e}", self.dir.display()));
        }
        self.trim(MOST_ENTRIES, MOST_BYTES);
        Ok(())
    }

    /// Removes the entries used longest ago while there are more than `entries` or they
    /// take more than `bytes` (down to three quarters of either), and files of writes
    /// that died over an hour ago.
    fn trim(&self, entries: usize, bytes: u64) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        let mut kept: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
        for entry in dir.flatten() {
            let (Ok(meta), path) = (entry.metadata(), entry.path()) else {
                continue;
            };
            let used = meta.modified().unwrap_or(now);
            if entry.file_name().to_string_lossy().starts_with(".new-") {
                let age = now.duration_since(used).unwrap_or_default();
                if age > std::time::Duration::from_secs(3600) {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            kept.push((used, meta.len(), path));
        }
        let mut total: u64 = kept.iter().map(|k| k.1).sum();
        if kept.len() <= entries && total <= bytes {
            return;
        }
        kept.sort();
        let mut left = kept.len();
        for (_, size, path) in kept {
            if left <= entries * 3 / 4 && total <= bytes / 4 * 3 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                left -= 1;
                total -= size;
            }
        }
    }
}

/// How many entries, and how many bytes of them, a directory keeps before its entries
/// used longest ago are removed (a site's code is 5-200 KB).
#[cfg(target_os = "linux")]
const MOST_ENTRIES: usize = 1000;
#[cfg(target_os = "linux")]
const MOST_BYTES: u64 = 256 << 20;

/// The user this process acts as.
#[cfg(target_os = "linux")]
fn effective_user() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn fresh(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("accel-disk-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn an_entry_comes_back_only_for_its_key() {
        let dir = fresh("keys");
        let cache = DiskCache::open_in(&dir).expect("a fresh directory is usable");
        cache.put(b"key one", b"contents one").expect("written");
        assert_eq!(cache.get(b"key one").as_deref(), Some(&b"contents one"[..]));
        assert_eq!(cache.get(b"key two"), None);
        // A second process sees it.
        let again = DiskCache::open_in(&dir).expect("still usable");
        assert_eq!(again.get(b"key one").as_deref(), Some(&b"contents one"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_directory_loses_the_entries_used_longest_ago() {
        let dir = fresh("trim");
        let cache = DiskCache::open_in(&dir).expect("usable");
        for k in 0..8u8 {
            cache.put(&[k], &[k; 100]).unwrap();
            // Distinct times of use, oldest first.
            let key: [u8; 32] = Sha256::digest([k]).into();
            let at =
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + k as u64);
            let f = std::fs::File::options()
                .write(true)
                .open(cache.file(&key))
                .unwrap();
            f.set_modified(at).unwrap();
        }
        // Entry 1 is used again: it is now the newest.
        assert!(cache.get(&[1]).is_some());
        // Over four entries: down to three, the ones used last.
        cache.trim(4, u64::MAX);
        let left: Vec<u8> = (0..8u8).filter(|&k| cache.get(&[k]).is_some()).collect();
        assert_eq!(left, vec![1, 6, 7]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = fresh("private");
        DiskCache::open_in(&dir).expect("usable");
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Opened to others, it is refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = DiskCache::open_in(&dir).err().expect("refused");
        assert!(
            refused.contains("open to other users (mode 755"),
            "{refused}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_link_in_place_of_the_directory_is_refused() {
        let dir = fresh("link");
        let target = fresh("link-target");
        DiskCache::open_in(&target).expect("usable");
        std::os::unix::fs::symlink(&target, &dir).unwrap();
        let refused = DiskCache::open_in(&dir).err().expect("refused");
        assert!(refused.contains("is not a directory"), "{refused}");
        let _ = std::fs::remove_file(&dir);
        let _ = std::fs::remove_dir_all(&target);
    }

    #[test]
    fn altered_or_misplaced_entries_are_misses() {
        use std::os::unix::fs::PermissionsExt;
        let dir = fresh("altered");
        let cache = DiskCache::open_in(&dir).expect("usable");
        cache.put(b"k", b"the code").unwrap();
        let key: [u8; 32] = Sha256::digest(b"k").into();
        let file = cache.file(&key);
        let good = std::fs::read(&file).unwrap();
        // One byte of the contents changed.
        let mut bad = good.clone();
        *bad.last_mut().unwrap() ^= 1;
        std::fs::write(&file, &bad).unwrap();
        assert_eq!(
            cache.get(b"k"),
            None,
            "a changed byte is caught by the hash"
        );
        // Cut short.
        std::fs::write(&file, &good[..good.len() - 1]).unwrap();
        assert_eq!(cache.get(b"k"), None, "a short entry is a miss");
        // Another key's entry under this key's name.
        cache.put(b"other", b"other code").unwrap();
        let other: [u8; 32] = Sha256::digest(b"other").into();
        std::fs::copy(cache.file(&other), &file).unwrap();
        assert_eq!(cache.get(b"k"), None, "the header names the other key");
        // Writable by others.
        std::fs::write(&file, &good).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(
            cache.get(b"k"),
            None,
            "an entry others may write is not trusted"
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(cache.get(b"k").as_deref(), Some(&b"the code"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_entry_of_another_user_is_a_miss() {
        let dir = fresh("owner");
        let cache = DiskCache::open_in(&dir).expect("usable");
        cache.put(b"k", b"code").unwrap();
        let key: [u8; 32] = Sha256::digest(b"k").into();
        let file = cache.file(&key);
        let path = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `path` is a NUL-terminated path; `chown` touches only that file.
        if unsafe { libc::chown(path.as_ptr(), 65534, 65534) } != 0 {
            eprintln!("[accel tests] SKIPPED: giving a file to another user needs root");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
        assert_eq!(cache.get(b"k"), None, "another user's entry is never used");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
