//! [`AccelError`]: what a site returns instead of panicking. `try_accelerate!(EXPR)` gives
//! `Result<T, AccelError>`; `accelerate!(EXPR)` panics with the error's message.
//!
//! Every failure of a run comes here as an error value: compiled code's failures (which
//! every backend reports with the same words, [`Failure::describe`]), the sequential
//! expression's panics (Rust's own words for the same failures), debug mode's broken
//! assumptions, and what the mode or the backend could not do. [`ErrorKind`] is read from
//! those words in one place, [`kind_of`], so a kind is the same whichever mode ran the site.
//!
//! [`Failure::describe`]: crate::backend::failure::Failure::describe

use thiserror::Error;

/// What kind of failure an [`AccelError`] is, to match on.
///
/// ```
/// use accel_runtime::prelude::*;
/// use accel_runtime::ErrorKind;
///
/// let xs = vec![1i64, 2, 3];
/// let is = vec![0usize, 7];
/// let r: Result<Vec<i64>, AccelError> = try_accelerate!(map(|i| xs[i], &is));
/// let e = r.unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::IndexOutOfBounds);
/// assert!(e.to_string().ends_with("index out of bounds: the len is 3 but the index is 7"));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An index or a slice out of bounds.
    IndexOutOfBounds,
    /// An integer division (or remainder) by zero.
    DivisionByZero,
    /// An arithmetic overflow (`MIN / -1`, or any overflow debug mode's checks catch).
    Overflow,
    /// Sequences whose lengths had to be equal were not (`map2`, `scatter`,
    /// `reduce_by_index`, a row operator that changed a row's length, `Tensor::from_vec`
    /// whose elements do not fill its shape).
    LengthMismatch,
    /// A sequence of sequences whose rows must have one length did not.
    Irregular,
    /// A tensor indexed with the wrong number of coordinates, or created with a rank above
    /// the bound.
    TensorRank,
    /// Memory (host or device) could not be allocated.
    OutOfMemory,
    /// Debug mode found an assumption of a parallel operation broken (an operator not
    /// associative, a neutral element that is not, iterations that are not independent,
    /// an index written twice).
    AssumptionViolated,
    /// The expression panicked for another reason while it ran sequentially.
    Panicked,
    /// A captured value that accelerated code cannot take (irregular nesting, a tensor of
    /// too high a rank).
    InvalidCapture,
    /// `ACCEL_MODE` names no mode this build has, or `ACCEL_NUM_THREADS` no number of
    /// threads.
    InvalidMode,
    /// The chosen mode's backend cannot run here (no GPU, driver or NVRTC).
    Unavailable,
    /// The chosen mode's backend cannot compile a construct the site uses.
    Unsupported,
    /// A generated kernel failed to compile (NVRTC or ptxas).
    KernelCompilation,
    /// The device failed otherwise (a launch, a copy, a module load).
    Device,
}

/// A failure of an accelerated site: its message (what `accelerate!` panics with), the
/// site, and its [`ErrorKind`].
///
/// ```
/// use accel_runtime::prelude::*;
///
/// fn mean(xs: &[f64]) -> Result<f64, AccelError> {
///     let n = xs.len();
///     let total: f64 = try_accelerate!(reduce(|a, b| a + b, 0.0, xs))?;
///     Ok(total / n as f64)
/// }
/// assert_eq!(mean(&[1.0, 2.0, 3.0]), Ok(2.0));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AccelError {
    /// The site failed while it ran: in compiled code, or in the expression run
    /// sequentially.
    #[error("accelerate! at {site}: {message}")]
    Failed {
        /// `file:line:col` of the site.
        site: String,
        /// What kind of failure.
        kind: ErrorKind,
        /// What went wrong.
        message: String,
    },
    /// Debug mode found an assumption of a parallel operation broken.
    #[error("{operation} at {site}: {message}")]
    Violation {
        /// `file:line:col` of the site.
        site: String,
        /// The operation whose assumption broke (`reduce`, `parallel_loop`, …).
        operation: String,
        /// The assumption and the values that broke it.
        message: String,
    },
    /// A captured value accelerated code cannot take.
    #[error("accelerate! at {site}: {message}")]
    Capture {
        /// `file:line:col` of the site.
        site: String,
        /// The value and what is wrong with it.
        message: String,
    },
    /// The mode, its backend or the device could not run the site.
    #[error("accelerate! at {site}: {message}")]
    Backend {
        /// `file:line:col` of the site.
        site: String,
        /// What kind of failure.
        kind: ErrorKind,
        /// What could not be done, and what to do instead.
        message: String,
    },
}

impl AccelError {
    /// The site, `file:line:col`.
    pub fn site(&self) -> &str {
        match self {
            AccelError::Failed { site, .. }
            | AccelError::Violation { site, .. }
            | AccelError::Capture { site, .. }
            | AccelError::Backend { site, .. } => site,
        }
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AccelError::Failed { kind, .. } | AccelError::Backend { kind, .. } => *kind,
            // Debug mode reports a failure it checks for (unequal lengths, a tensor index of
            // the wrong rank) as its operation's; any other is a broken assumption.
            AccelError::Violation { message, .. } => match kind_of(message) {
                ErrorKind::Panicked => ErrorKind::AssumptionViolated,
                kind => kind,
            },
            AccelError::Capture { .. } => ErrorKind::InvalidCapture,
        }
    }

    /// A failure while the site ran, its kind read from the message.
    pub(crate) fn failed(site: String, message: String) -> AccelError {
        AccelError::Failed {
            kind: kind_of(&message),
            site,
            message,
        }
    }
}

/// The kind of a run's failure, from its words: compiled code's ([`Failure::describe`]),
/// the device's, and Rust's panic messages for the same failures (debug mode).
///
/// [`Failure::describe`]: crate::backend::failure::Failure::describe
pub(crate) fn kind_of(message: &str) -> ErrorKind {
    let has = |s: &str| message.contains(s);
    if has("index out of bounds")
        || has("is out of bounds for shape")
        || has("out of range for slice")
        || has("slice bounds")
        || has("slice index starts at")
    {
        ErrorKind::IndexOutOfBounds
    } else if has("divide by zero") || has("remainder with a divisor of zero") {
        ErrorKind::DivisionByZero
    } else if has("with overflow") {
        ErrorKind::Overflow
    } else if has("could not allocate")
        || has("OUT_OF_MEMORY")
        || has("memory allocation of")
        || has("more elements than memory can hold")
    {
        ErrorKind::OutOfMemory
    } else if has("lengths differ") || has("changed the row length") || has("do not fill") {
        ErrorKind::LengthMismatch
    } else if has("irregular") {
        ErrorKind::Irregular
    } else if has("a tensor index has")
        || has("coordinates, but the tensor has rank")
        || has("above the tensor rank bound")
        || has("above the rank compiled code holds")
    {
        ErrorKind::TensorRank
    } else if has("ACCEL_NUM_THREADS=") {
        ErrorKind::InvalidMode
    } else if has("CUDA_ERROR") || has("the GPU") {
        ErrorKind::Device
    } else {
        ErrorKind::Panicked
    }
}

/// The kind of a compile failure in a chosen mode whose backend is available.
pub(crate) fn compile_kind_of(message: &str) -> ErrorKind {
    if message.starts_with("NVRTC") || message.starts_with("ptxas") {
        ErrorKind::KernelCompilation
    } else {
        ErrorKind::Unsupported
    }
}

/// A broken assumption on its way from the check that found it to the site that runs
/// the check (an unwinding payload: [`std::panic::resume_unwind`] carries it without the
/// panic hook printing it, since the site reports it).
pub(crate) struct ViolationPayload {
    pub(crate) operation: String,
    pub(crate) message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::failure::{Failure, FailureKind};

    #[test]
    fn every_compiled_failure_has_its_kind() {
        let expected = |k: FailureKind| match k {
            FailureKind::Index | FailureKind::Slice => ErrorKind::IndexOutOfBounds,
            FailureKind::DivZero => ErrorKind::DivisionByZero,
            FailureKind::DivOverflow => ErrorKind::Overflow,
            FailureKind::Alloc => ErrorKind::OutOfMemory,
            FailureKind::Rank | FailureKind::TensorRank => ErrorKind::TensorRank,
            FailureKind::TensorFill
            | FailureKind::Lengths
            | FailureKind::RowLength
            | FailureKind::HistogramLengths
            | FailureKind::ScatterLengths => ErrorKind::LengthMismatch,
            FailureKind::Irregular => ErrorKind::Irregular,
            FailureKind::NoArm | FailureKind::ClampBounds | FailureKind::ZeroSize => {
                ErrorKind::Panicked
            }
        };
        for k in FailureKind::ALL {
            let words = Failure::new(k, 7, 3).describe();
            assert_eq!(kind_of(&words), expected(k), "{words}");
        }
    }

    #[test]
    fn rusts_panic_messages_have_the_same_kinds() {
        let cases = [
            (
                "index out of bounds: the len is 3 but the index is 7",
                ErrorKind::IndexOutOfBounds,
            ),
            (
                "range end index 9 out of range for slice of length 3",
                ErrorKind::IndexOutOfBounds,
            ),
            ("attempt to divide by zero", ErrorKind::DivisionByZero),
            (
                "attempt to calculate the remainder with a divisor of zero",
                ErrorKind::DivisionByZero,
            ),
            ("attempt to add with overflow", ErrorKind::Overflow),
            (
                "could not allocate 64 bytes on the GPU: CUDA_ERROR_OUT_OF_MEMORY",
                ErrorKind::OutOfMemory,
            ),
            ("explicit panic", ErrorKind::Panicked),
        ];
        for (words, kind) in cases {
            assert_eq!(kind_of(words), kind, "{words}");
        }
        assert_eq!(
            compile_kind_of("NVRTC rejected the generated CUDA C"),
            ErrorKind::KernelCompilation
        );
        assert_eq!(
            compile_kind_of("`scan` over rows is not supported"),
            ErrorKind::Unsupported
        );
    }
}
