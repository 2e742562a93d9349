//! `ACCEL_LOG`: whether the runtime reports what each site did.

/// Whether `ACCEL_LOG` asks for a log (read once per process).
pub fn logging() -> bool {
    static LOG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LOG.get_or_init(|| std::env::var("ACCEL_LOG").is_ok_and(|v| !v.is_empty() && v != "0"))
}
