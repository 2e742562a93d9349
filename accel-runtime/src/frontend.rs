//! The front end of the compiled modes: a site's program inlined, typed from the captured
//! values' and the result's types, and fused. It runs once per site and combination of
//! types, whichever backend compiles the site and whatever falls back to what; every
//! backend compiles from its result.

use crate::backend::cache::CompileCache;
use crate::backend::{log, FrontEnd};
use crate::record::{self, RecordedSite};
use crate::site::SiteDesc;
use accel_ir::passes::{fuse, inline, typecheck};
use accel_ir::{Program, Type};
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
    let front = front_end_of(&program, capture_types, result)?;
    if let Some(path) = record::record_path() {
        let entry = RecordedSite {
            site: site.location(),
            signature: record::signature(&front.captures, result),
            program_hash: front.program_hash.clone(),
            captures: front.captures.clone(),
            result: result.clone(),
            program: (*program).clone(),
        };
        // A record that cannot be written does not stop the program, but it was asked
        // for: say so even when nobody listens to the log.
        if let Err(e) = record::add(&path, entry) {
            if log::logging() {
                log::warning!("{}: not recorded: {e}", site.location());
            } else {
                eprintln!("[accel] {}: not recorded: {e}", site.location());
            }
        }
    }
    Ok(Arc::new(front))
}

/// The front end's result for an assembled program with these captured types (in the
/// program's capture order) and result type: inlined, typed and fused. The build-time
/// kernel generator runs it on recorded programs.
pub(crate) fn front_end_of(
    program: &Program,
    capture_types: &[Type],
    result: &Type,
) -> Result<FrontEnd, String> {
    let body = inline::inline(program).map_err(|e| e.to_string())?;
    let captures: Vec<(String, Type)> = program
        .site
        .captures
        .iter()
        .cloned()
        .zip(capture_types.iter().cloned())
        .collect();
    let typed = typecheck::typecheck_naming(&body, &captures, result, &program.records)
        .map_err(|e| e.to_string())?;
    Ok(FrontEnd {
        fused: fuse::fuse(&typed),
        captures,
        result: result.clone(),
        program_hash: record::program_hash(program),
    })
}
