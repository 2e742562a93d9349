//! Which site this thread is running, so that a broken assumption anywhere below it (a
//! debug-mode check, a tensor index) names the site.

use crate::backend::SiteKey;
use crate::error::ViolationPayload;
use std::cell::Cell;

thread_local! {
    static CURRENT_SITE: Cell<Option<SiteKey>> = const { Cell::new(None) };
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the panic hook silent on this thread: a site that runs the expression
/// sequentially catches its panics and reports them itself (as an error, or a panic
/// naming the site), so Rust's own report of the first panic would only say it twice.
/// The hook in place before is kept for every other panic.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> R {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info)
            }
        }));
    });
    crate::backend::scoped::with_cell(&QUIET, true, f)
}

/// Runs `f` as the site `site` (restoring the enclosing site after, also on a panic).
pub(crate) fn in_site<R>(site: SiteKey, f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&CURRENT_SITE, Some(site), f)
}

/// Reports a broken assumption of accelerated code. Inside a site, unwinds to the site
/// with the operation and what was wrong (the site returns it as an error, or panics with
/// it, naming itself); outside one (a parallel operation called from ordinary code),
/// panics with them.
#[track_caller]
pub(crate) fn violation(what: &str, message: &str) -> ! {
    match CURRENT_SITE.with(Cell::get) {
        Some(_) => std::panic::resume_unwind(Box::new(ViolationPayload {
            operation: what.to_string(),
            message: message.to_string(),
        })),
        None => panic!("{what}: {message}"),
    }
}
