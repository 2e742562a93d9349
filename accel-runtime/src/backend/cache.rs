//! The compile cache every backend and the front end keep: compiled code per key (a site
//! with its captured and result types), compiled once whichever thread asks first;
//! concurrent first calls wait for that one compilation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Compiled values of type `T` by key `K`; a failure is cached too (as its message).
pub struct CompileCache<K, T> {
    slots: OnceLock<Mutex<HashMap<K, CacheSlot<T>>>>,
}

type CacheSlot<T> = Arc<OnceLock<Result<Arc<T>, String>>>;

impl<K: std::hash::Hash + Eq, T> CompileCache<K, T> {
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
        let slot = {
            let mut map = self
                .slots
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            map.entry(key).or_default().clone()
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

impl<K: std::hash::Hash + Eq, T> Default for CompileCache<K, T> {
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
}
