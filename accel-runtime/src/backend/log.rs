//! What the runtime reports of each site: records through the `log` facade (target
//! `accel`), which an application's logger receives; with no logger taking them,
//! `ACCEL_LOG=1` prints the same lines on stderr.

use log::Level;

/// The target of every record.
pub const TARGET: &str = "accel";

/// Whether anyone listens: `ACCEL_LOG` is set, or a logger takes `accel` records. Callers
/// check it before they build a message.
pub fn logging() -> bool {
    env_log() || log::log_enabled!(target: TARGET, Level::Error)
}

/// Reports `message` at `level`: to the application's logger when it takes the record,
/// else on stderr under `ACCEL_LOG`.
pub fn emit(level: Level, message: std::fmt::Arguments<'_>) {
    if log::log_enabled!(target: TARGET, level) {
        log::log!(target: TARGET, level, "{message}");
    } else if env_log() {
        eprintln!("[accel] {message}");
    }
}

/// Reports an informational line (what a site compiled, how it ran).
macro_rules! info {
    ($($arg:tt)*) => {
        $crate::backend::log::emit(::log::Level::Info, format_args!($($arg)*))
    };
}

/// Reports a line about a site that did not run as asked (a fallback, a backend not used).
macro_rules! warning {
    ($($arg:tt)*) => {
        $crate::backend::log::emit(::log::Level::Warn, format_args!($($arg)*))
    };
}

pub(crate) use {info, warning};

/// Reports that a site does not run as the mode asked (a fallback), once per site and
/// process and without any setting: to the application's logger when it takes `accel`
/// warnings, else on stderr, unless `ACCEL_LOG=0`.
pub fn fallback(site: usize, message: std::fmt::Arguments<'_>) {
    static WARNED: std::sync::Mutex<Option<std::collections::HashSet<usize>>> =
        std::sync::Mutex::new(None);
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !warned
        .get_or_insert_with(std::collections::HashSet::new)
        .insert(site)
    {
        return;
    }
    drop(warned);
    warn(message);
}

/// Reports, without any setting, what a user should know (a site's fallback, a cache
/// directory not used): to the application's logger when it takes `accel` warnings, else
/// on stderr, unless `ACCEL_LOG=0`. Callers say it once.
pub fn warn(message: std::fmt::Arguments<'_>) {
    if log::log_enabled!(target: TARGET, Level::Warn) {
        log::log!(target: TARGET, Level::Warn, "{message}");
    } else if !env_silenced() {
        eprintln!("[accel] warning: {message}");
    }
}

/// Whether `ACCEL_LOG=0` silences the warnings printed without a setting.
fn env_silenced() -> bool {
    static SILENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SILENT.get_or_init(|| std::env::var("ACCEL_LOG").is_ok_and(|v| v == "0"))
}

/// Whether `ACCEL_LOG` asks for a log (read once per process).
fn env_log() -> bool {
    static LOG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LOG.get_or_init(|| std::env::var("ACCEL_LOG").is_ok_and(|v| !v.is_empty() && v != "0"))
}
