//! `ACCEL_MODE`: how accelerated code runs, chosen once per process.

use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;
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
    Debug,
    Cpu,
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
    Unknown(String),
    #[error("ACCEL_MODE=cuda, but accel-runtime was built without its `cuda` feature: build with `--features cuda`, or use ACCEL_MODE=cpu")]
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

/// The mode accelerated code runs in on this thread: the one [`with_mode`] set, else
/// `ACCEL_MODE` (read once per process), else the best available.
pub fn mode() -> Result<Mode, ModeError> {
    if let Some(m) = OVERRIDE.with(Cell::get) {
        return Ok(m);
    }
    static MODE: OnceLock<Result<Mode, ModeError>> = OnceLock::new();
    MODE.get_or_init(|| select(std::env::var("ACCEL_MODE").ok().as_deref()))
        .clone()
}

/// Whether the mode was chosen (by `ACCEL_MODE` or [`with_mode`]) rather than defaulted:
/// a chosen compiled mode reports what it cannot compile as an error, the default falls
/// back to sequential execution.
pub(crate) fn mode_was_chosen() -> bool {
    OVERRIDE.with(Cell::get).is_some() || std::env::var("ACCEL_MODE").is_ok_and(|v| !v.is_empty())
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
    with_cell(&OVERRIDE, Some(mode), f)
}

/// Runs `f` with the thread-local `cell` set to `value`, restoring the old value after it
/// (also when `f` panics).
pub(crate) fn with_cell<T: Copy + 'static, R>(
    cell: &'static std::thread::LocalKey<Cell<T>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<T: Copy + 'static>(&'static std::thread::LocalKey<Cell<T>>, T);
    impl<T: Copy + 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            self.0.with(|c| c.set(self.1));
        }
    }
    let _restore = Restore(cell, cell.with(|c| c.replace(value)));
    f()
}

/// The mode a value of `ACCEL_MODE` selects.
fn select(var: Option<&str>) -> Result<Mode, ModeError> {
    match var {
        None | Some("") => Ok(best_available()),
        Some(v) => match v.parse()? {
            Mode::Cuda if !cfg!(feature = "cuda") => Err(ModeError::CudaNotBuilt),
            m => Ok(m),
        },
    }
}

/// The default mode: the GPU when the `cuda` feature is built and a GPU and NVRTC are
/// there, else the CPU.
fn best_available() -> Mode {
    #[cfg(feature = "cuda")]
    match crate::cuda::available() {
        Ok(()) => return Mode::Cuda,
        Err(why) => {
            if crate::site::logging() {
                eprintln!("[accel] the CUDA backend is not used: {why}; sites run on the CPU");
            }
        }
    }
    Mode::Cpu
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_modes_and_explains_bad_values() {
        assert_eq!(select(None), Ok(best_available()));
        assert_eq!(select(Some("")), Ok(best_available()));
        assert_eq!(select(Some("debug")), Ok(Mode::Debug));
        assert_eq!(select(Some("cpu")), Ok(Mode::Cpu));
        if cfg!(feature = "cuda") {
            assert_eq!(select(Some("cuda")), Ok(Mode::Cuda));
        } else {
            assert_eq!(select(Some("cuda")), Err(ModeError::CudaNotBuilt));
        }
        assert_eq!(
            select(Some("Debug")).unwrap_err().to_string(),
            "ACCEL_MODE=\"Debug\" is not a mode: use one of debug, cpu, cuda (or leave it unset for the best available)"
        );
    }
}
