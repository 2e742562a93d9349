//! `ACCEL_TRACE=FILE`: a timeline of what accelerated code did, in Chrome's trace-event
//! format (opens in Perfetto or `chrome://tracing`): each site's run, its compilation,
//! and every chunk of its launches on the thread that ran it, so a user sees where the
//! time went instead of reading numbers.
//!
//! Events are appended as they end (the format's JSON array may lack its closing
//! bracket, so a trace is readable while the program runs and after it stops anywhere;
//! add `]` to read it as plain JSON) and flushed after each site's run. Tracing costs one relaxed check per chunk when off.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The open trace, if `ACCEL_TRACE` names a file that could be created.
struct Trace {
    /// The file, and whether an event was written (the next is preceded by a comma: the
    /// array lacks only its closing bracket, which the format allows).
    out: Mutex<(std::io::BufWriter<std::fs::File>, bool)>,
    start: Instant,
    pid: u32,
}

fn trace() -> Option<&'static Trace> {
    static TRACE: OnceLock<Option<Trace>> = OnceLock::new();
    TRACE
        .get_or_init(|| {
            let path = std::env::var_os("ACCEL_TRACE").filter(|p| !p.is_empty())?;
            match std::fs::File::create(&path) {
                Ok(file) => {
                    let mut out = std::io::BufWriter::new(file);
                    let _ = out.write_all(b"[");
                    Some(Trace {
                        out: Mutex::new((out, false)),
                        start: Instant::now(),
                        pid: std::process::id(),
                    })
                }
                Err(e) => {
                    super::log::warning!(
                        "ACCEL_TRACE: cannot create {}: {e}; no trace is written",
                        std::path::Path::new(&path).display()
                    );
                    None
                }
            }
        })
        .as_ref()
}

/// Whether a trace is being written (its clock starts at the first call: each site's
/// planning asks, before anything is compiled).
pub fn enabled() -> bool {
    trace().is_some()
}

/// This thread's number in the trace (named once, by its Rust name, on first use).
fn thread_number(t: &Trace) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NUMBER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    NUMBER.with(|n| {
        if n.get() == 0 {
            n.set(NEXT.fetch_add(1, Ordering::Relaxed));
            let current = std::thread::current();
            let name = current
                .name()
                .map_or_else(|| format!("thread {}", n.get()), |name| name.to_string());
            let line = serde_json::json!({
                "name": "thread_name", "ph": "M", "pid": t.pid, "tid": n.get(),
                "args": { "name": name },
            });
            write_line(t, &line);
        }
        n.get()
    })
}

fn write_line(t: &Trace, event: &serde_json::Value) {
    let mut guard = t.out.lock().unwrap_or_else(|e| e.into_inner());
    let (out, written) = &mut *guard;
    let comma = if *written { "," } else { "" };
    let _ = write!(out, "{comma}\n{event}");
    *written = true;
}

/// Records an event `name` of category `category` (`site`, `compile`, `chunk`, `copy`,
/// `kernel`) that ran on this thread from `start` until now, with `args` shown beside it.
pub fn complete(name: &str, category: &str, start: Instant, args: serde_json::Value) {
    let Some(t) = trace() else {
        return;
    };
    let dur = start.elapsed().as_secs_f64() * 1e6;
    let tid = thread_number(t);
    let ts = start.saturating_duration_since(t.start).as_secs_f64() * 1e6;
    let event = serde_json::json!({
        "name": name, "cat": category, "ph": "X", "pid": t.pid, "tid": tid,
        "ts": ts, "dur": dur, "args": args,
    });
    write_line(t, &event);
}

/// Records the run of the site at `location` since `start` (`backend` ran it; `ok`:
/// whether it succeeded), then writes what is buffered.
pub fn site_ran(location: &str, backend: &str, ok: bool, start: Instant) {
    let Some(t) = trace() else {
        return;
    };
    complete(
        location,
        "site",
        start,
        serde_json::json!({ "backend": backend, "ok": ok }),
    );
    let _ = t.out.lock().unwrap_or_else(|e| e.into_inner()).0.flush();
}

/// Records the compilation of the site at `location` since `start` (`args`: what the
/// backend made).
pub fn compiled(location: &str, start: Instant, args: serde_json::Value) {
    let Some(t) = trace() else {
        return;
    };
    complete(&format!("compile {location}"), "compile", start, args);
    // A background compile may end after the process's last site: written out now.
    let _ = t.out.lock().unwrap_or_else(|e| e.into_inner()).0.flush();
}
