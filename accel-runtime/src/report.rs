//! Which site this thread is running, so that a broken assumption anywhere below it (a
//! debug-mode check, a tensor index) names the site.

use crate::backend::SiteKey;
use std::cell::Cell;

thread_local! {
    static CURRENT_SITE: Cell<Option<SiteKey>> = const { Cell::new(None) };
}

/// Runs `f` as the site `site` (restoring the enclosing site after, also on a panic).
pub(crate) fn in_site<R>(site: SiteKey, f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&CURRENT_SITE, Some(site), f)
}

/// Reports a broken assumption of accelerated code: panics with the operation, the site
/// being run (when there is one) and what was wrong.
#[track_caller]
pub(crate) fn violation(what: &str, message: &str) -> ! {
    match CURRENT_SITE.with(Cell::get) {
        Some(site) => panic!("{what} at {}: {message}", site.location()),
        None => panic!("{what}: {message}"),
    }
}
