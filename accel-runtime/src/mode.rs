//! `ACCEL_MODE`: how accelerated code runs, chosen once per process.

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

/// The mode of this process: `ACCEL_MODE`, read once, or the best available when unset.
pub fn mode() -> Result<Mode, ModeError> {
    static MODE: OnceLock<Result<Mode, ModeError>> = OnceLock::new();
    MODE.get_or_init(|| select(std::env::var("ACCEL_MODE").ok().as_deref())).clone()
}

/// The mode a value of `ACCEL_MODE` selects.
fn select(var: Option<&str>) -> Result<Mode, ModeError> {
    match var {
        None | Some("") => Ok(Mode::Cpu),
        Some(v) => match v.parse()? {
            Mode::Cuda => Err(ModeError::CudaNotBuilt),
            m => Ok(m),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_modes_and_explains_bad_values() {
        assert_eq!(select(None), Ok(Mode::Cpu));
        assert_eq!(select(Some("")), Ok(Mode::Cpu));
        assert_eq!(select(Some("debug")), Ok(Mode::Debug));
        assert_eq!(select(Some("cpu")), Ok(Mode::Cpu));
        assert_eq!(select(Some("cuda")), Err(ModeError::CudaNotBuilt));
        assert_eq!(
            select(Some("Debug")).unwrap_err().to_string(),
            "ACCEL_MODE=\"Debug\" is not a mode: use one of debug, cpu, cuda (or leave it unset for the best available)"
        );
    }
}
