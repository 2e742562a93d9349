//! The compile cache every backend and the front end keep: compiled code per key (a site
//! with its captured and result types), compiled once whichever thread asks first;
//! concurrent first calls wait for that one compilation.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// Compiled values of type `T` by key `K`; a failure is cached too (as its message).
///
/// Entries are found by a fast hash of the key, and a site called in a loop looks its
/// code up from borrowed parts ([`CompileCache::get_borrowed`]) without building or
/// hashing an owned key with SipHash (about a third of a small site's call before).
pub struct CompileCache<K, T> {
    slots: OnceLock<Mutex<Buckets<K, T>>>,
}

type CacheSlot<T> = Arc<OnceLock<Result<Arc<T>, String>>>;

/// Entries by the hash of their key (keys that collide share a bucket).
type Buckets<K, T> = HashMap<u64, Vec<(K, CacheSlot<T>)>, BuildHasherDefault<rustc_hash::FxHasher>>;

/// The hash entries are filed under: of the key, or of borrowed parts that hash alike
/// (a `Vec` hashes as its slice, a reference as what it points to).
fn hash_of<Q: Hash + ?Sized>(q: &Q) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    q.hash(&mut h);
    h.finish()
}

impl<K: Hash + Eq, T> CompileCache<K, T> {
    /// An empty cache (usable in a `static`).
    pub const fn new() -> Self {
        CompileCache {
            slots: OnceLock::new(),
        }
    }

    /// The compiled value for `key` (made by `compile` on first use), and whether it was
    /// there already.
    pub fn get(
        &self,
        key: K,
        compile: impl FnOnce() -> Result<Arc<T>, String>,
    ) -> (Result<Arc<T>, String>, bool) {
        let hash = hash_of(&key);
        // Compared while looking, moved in on a miss: never both at once.
        let key = std::cell::RefCell::new(Some(key));
        self.get_hashed(
            hash,
            |k| key.borrow().as_ref() == Some(k),
            || key.borrow_mut().take().expect("moved in once"),
            compile,
        )
    }

    /// [`CompileCache::get`] for the key `owned()` would make, found by `borrowed` (which
    /// hashes as that key does) and `is_key` (which says whether an entry's key equals
    /// it): the owned key is only made on a miss.
    pub fn get_borrowed<Q: Hash + ?Sized>(
        &self,
        borrowed: &Q,
        is_key: impl Fn(&K) -> bool,
        owned: impl FnOnce() -> K,
        compile: impl FnOnce() -> Result<Arc<T>, String>,
    ) -> (Result<Arc<T>, String>, bool) {
        self.get_hashed(hash_of(borrowed), is_key, owned, compile)
    }

    fn get_hashed(
        &self,
        hash: u64,
        is_key: impl Fn(&K) -> bool,
        owned: impl FnOnce() -> K,
        compile: impl FnOnce() -> Result<Arc<T>, String>,
    ) -> (Result<Arc<T>, String>, bool) {
        let slot = {
            let mut map = self
                .slots
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let bucket = map.entry(hash).or_default();
            match bucket.iter().find(|(k, _)| is_key(k)) {
                Some((_, slot)) => slot.clone(),
                None => {
                    let slot = CacheSlot::default();
                    bucket.push((owned(), slot.clone()));
                    slot
                }
            }
        };
        let mut hit = true;
        let r = slot
            .get_or_init(|| {
                hit = false;
                compile()
            })
            .clone();
        (r, hit)
    }
}

impl<K: Hash + Eq, T> Default for CompileCache<K, T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_per_key_and_keeps_failures() {
        let cache: CompileCache<u32, u32> = CompileCache::new();
        let (a, hit) = cache.get(1, || Ok(Arc::new(10)));
        assert_eq!((*a.unwrap(), hit), (10, false));
        let (a, hit) = cache.get(1, || unreachable!("cached"));
        assert_eq!((*a.unwrap(), hit), (10, true));
        let (e, _) = cache.get(2, || Err("no".into()));
        assert_eq!(e.unwrap_err(), "no");
        let (e, hit) = cache.get(2, || Ok(Arc::new(0)));
        assert_eq!((e.unwrap_err(), hit), ("no".to_string(), true));
    }

    #[test]
    fn borrowed_parts_find_what_owned_keys_filed() {
        type Key = (usize, Vec<String>);
        let cache: CompileCache<Key, u32> = CompileCache::new();
        let names = ["a".to_string(), "b".to_string()];
        let find = |id: usize, names: &[String], value: u32| {
            cache.get_borrowed(
                &(id, names),
                |(i, n)| *i == id && n[..] == *names,
                || (id, names.to_vec()),
                || Ok(Arc::new(value)),
            )
        };
        let (a, hit) = cache.get((1, names.to_vec()), || Ok(Arc::new(7)));
        assert_eq!((*a.unwrap(), hit), (7, false));
        // The slice hashes as the Vec did: the owned key's entry.
        let (a, hit) = find(1, &names, 0);
        assert_eq!((*a.unwrap(), hit), (7, true));
        // Another key, then each found again.
        let (b, hit) = find(1, &names[..1], 8);
        assert_eq!((*b.unwrap(), hit), (8, false));
        assert_eq!(*find(1, &names[..1], 0).0.unwrap(), 8);
        assert_eq!(*find(1, &names, 0).0.unwrap(), 7);
    }
}
