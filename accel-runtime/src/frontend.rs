//! The front end of the compiled modes: a site's program inlined, typed from the captured
//! values' and the result's types, and fused. It runs once per site and combination of
//! types, whichever backend compiles the site and whatever falls back to what; every
//! backend compiles from its result.

use crate::backend::cache::CompileCache;
use crate::backend::FrontEnd;
use crate::site::SiteDesc;
use accel_ir::passes::{fuse, inline, typecheck};
use accel_ir::Type;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How many times the front end ran in this process (tests check it runs once per site
/// and combination of types).
pub(crate) static RUNS: AtomicUsize = AtomicUsize::new(0);

/// The front end's result for `site` with these captured types (the functions' constants
/// included, in marshaling order) and result type: computed on first use, then cached.
pub(crate) fn front_end(
    site: &'static SiteDesc,
    capture_types: &[Type],
    result: &Type,
) -> Result<Arc<FrontEnd>, String> {
    type Key = (usize, Vec<Type>, Type);
    static FRONT_ENDS: CompileCache<Key, FrontEnd> = CompileCache::new();
    let key = (site.key().id, capture_types.to_vec(), result.clone());
    FRONT_ENDS.get(key, || run(site, capture_types, result)).0
}

fn run(
    site: &'static SiteDesc,
    capture_types: &[Type],
    result: &Type,
) -> Result<Arc<FrontEnd>, String> {
    RUNS.fetch_add(1, Ordering::Relaxed);
    let program = site.assembled()?;
    let body = inline::inline(&program).map_err(|e| e.to_string())?;
    let captures: Vec<(String, Type)> = program
        .site
        .captures
        .iter()
        .cloned()
        .zip(capture_types.iter().cloned())
        .collect();
    let typed = typecheck::typecheck(&body, &captures, result).map_err(|e| e.to_string())?;
    Ok(Arc::new(FrontEnd {
        fused: fuse::fuse(&typed),
        captures,
        result: result.clone(),
    }))
}
