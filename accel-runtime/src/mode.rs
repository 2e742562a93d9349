//! `ACCEL_MODE`: how accelerated code runs, chosen once per process (the default, the
//! best available, is the dispatcher's to know).

use std::cell::Cell;
use std::fmt;
use thiserror::Error;

/// How accelerated code runs.
///
/// | `ACCEL_MODE` | what runs |
/// |---|---|
/// | `debug` | the expression as checked sequential Rust |
/// | `cpu` | the CPU backend |
/// | `cuda` | the CUDA backend (needs feature `cuda`) |
/// | unset | the best available |
///
/// ```
/// use accel_runtime::Mode;
/// assert_eq!("debug".parse::<Mode>(), Ok(Mode::Debug));
/// assert!("gpu".parse::<Mode>().unwrap_err().to_string().contains("debug, cpu, cuda"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Checked sequential Rust.
    Debug,
    /// The CPU backend.
    Cpu,
    /// The CUDA backend.
    Cuda,
}

impl Mode {
    /// The value of `ACCEL_MODE` that selects this mode.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Debug => "debug",
            Mode::Cpu => "cpu",
            Mode::Cuda => "cuda",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why `ACCEL_MODE` selects no usable mode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModeError {
    #[error("ACCEL_MODE={0:?} is not a mode: use one of debug, cpu, cuda (or leave it unset for the best available)")]
    /// A value that names no mode.
    Unknown(String),
    #[error("ACCEL_MODE=cuda, but accel-runtime was built without its `cuda` feature: build with `--features cuda`, or use ACCEL_MODE=cpu")]
    /// `cuda` in a build without the `cuda` feature.
    CudaNotBuilt,
}

impl std::str::FromStr for Mode {
    type Err = ModeError;
    fn from_str(s: &str) -> Result<Mode, ModeError> {
        match s {
            "debug" => Ok(Mode::Debug),
            "cpu" => Ok(Mode::Cpu),
            "cuda" => Ok(Mode::Cuda),
            other => Err(ModeError::Unknown(other.to_string())),
        }
    }
}

thread_local! {
    static OVERRIDE: Cell<Option<Mode>> = const { Cell::new(None) };
}

/// The mode [`with_mode`] set on this thread, if any.
pub(crate) fn overridden() -> Option<Mode> {
    OVERRIDE.with(Cell::get)
}

/// Whether the mode was chosen (by `ACCEL_MODE` or [`with_mode`]) rather than defaulted:
/// a chosen compiled mode reports what it cannot compile as an error, the default falls
/// back to sequential execution.
pub(crate) fn mode_was_chosen() -> bool {
    // Read once, as the mode itself is (the default's GPU asks at every call).
    static BY_ENV: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    overridden().is_some()
        || *BY_ENV.get_or_init(|| std::env::var("ACCEL_MODE").is_ok_and(|v| !v.is_empty()))
}

/// Runs `f` with accelerated code on this thread in `mode`, whatever `ACCEL_MODE` says:
/// differential tests run one site in every mode in one process.
///
/// ```
/// use accel_runtime::prelude::*;
/// let v = vec![1, 2, 3];
/// let s = with_mode(Mode::Debug, || accelerate!(reduce(|a, b| a + b, 0, &v)));
/// assert_eq!(s, 6);
/// ```
pub fn with_mode<R>(mode: Mode, f: impl FnOnce() -> R) -> R {
    crate::backend::scoped::with_cell(&OVERRIDE, Some(mode), f)
}

/// The mode a value of `ACCEL_MODE` selects: `built` says which modes this build has,
/// `best` gives the default.
pub(crate) fn select(
    var: Option<&str>,
    built: impl Fn(Mode) -> bool,
    best: impl FnOnce() -> Mode,
) -> Result<Mode, ModeError> {
    match var {
        None | Some("") => Ok(best()),
        Some(v) => match v.parse()? {
            Mode::Cuda if !built(Mode::Cuda) => Err(ModeError::CudaNotBuilt),
            m => Ok(m),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_modes_and_explains_bad_values() {
        let all = |_| true;
        let no_cuda = |m| m != Mode::Cuda;
        assert_eq!(select(None, all, || Mode::Cpu), Ok(Mode::Cpu));
        assert_eq!(select(Some(""), all, || Mode::Cuda), Ok(Mode::Cuda));
        assert_eq!(select(Some("debug"), all, || Mode::Cpu), Ok(Mode::Debug));
        assert_eq!(select(Some("cpu"), all, || Mode::Cuda), Ok(Mode::Cpu));
        assert_eq!(select(Some("cuda"), all, || Mode::Cpu), Ok(Mode::Cuda));
        assert_eq!(
            select(Some("cuda"), no_cuda, || Mode::Cpu),
            Err(ModeError::CudaNotBuilt)
        );
        assert_eq!(
            select(Some("Debug"), all, || Mode::Cpu).unwrap_err().to_string(),
            "ACCEL_MODE=\"Debug\" is not a mode: use one of debug, cpu, cuda (or leave it unset for the best available)"
        );
    }
}
