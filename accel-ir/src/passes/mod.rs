//! The passes that need no device, each a module with one job and tests of its own.
//!
//! Order at a site's first run: [`resolve`] (unique names, captures), [`extract`] (the
//! paper's Algorithm 1: the site plus exactly the functions it reaches), [`classify`]
//! (functional or imperative, and the per-backend rules), [`lift`] (lambda lifting).

pub mod classify;
pub mod extract;
pub mod fission;
pub mod fuse;
pub mod inline;
pub mod lift;
pub mod recognize;
pub mod resolve;
pub mod typecheck;

use crate::expr::Loc;
use thiserror::Error;

/// An error found by a pass. The front end rejects these at compile time wherever it can;
/// the passes check again on the assembled program, so a program built by other means gets
/// the same message.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum IrError {
    /// A function body names something that is neither a parameter nor a local.
    #[error("function `{func}` uses `{name}`, which is neither a parameter nor a local of it")]
    UnboundInFunction {
        /// The function.
        func: String,
        /// The name.
        name: String,
    },
    /// A call of a function the program does not hold.
    #[error("call of `{name}`, which is not an #[accel] function known to this program")]
    UnknownFunction {
        /// The function called.
        name: String,
    },
    /// Functions that call themselves, directly or not.
    #[error("recursion is not supported in accelerated code: {cycle}")]
    Recursion {
        /// The cycle, `f -> g -> f`.
        cycle: String,
    },
    /// IR that could not be read back (a build of mismatched versions).
    #[error("the IR of `{name}` could not be read: {message}")]
    Corrupt {
        /// What the IR is of.
        name: String,
        /// Why it could not be read.
        message: String,
    },
    /// A site that uses no parallel operation.
    #[error(
        "accelerated code uses no parallel operation (map, map2, reduce, scan, flatten, create, \
         parallel_loop); it would run sequentially, so it is not worth accelerating"
    )]
    NoParallelOp,
    /// A site that uses functional operations and `parallel_loop`.
    #[error(
        "accelerated code mixes functional operations ({functional}) with parallel_loop \
         ({imperative}); one accelerate! site runs on one backend: split it into two sites"
    )]
    Mixed {
        /// The functional operations, where.
        functional: String,
        /// The imperative ones, where.
        imperative: String,
    },
    /// A type error found by inference.
    #[error("type error in accelerated code: {message}")]
    Type {
        /// What does not type-check, and where.
        message: String,
    },
    /// A construct imperative code does not allow.
    #[error("in imperative code (parallel_loop), {what} at line {}: {why}", loc.line)]
    Imperative {
        /// The construct.
        what: String,
        /// Where it is.
        loc: Loc,
        /// Why it is not allowed.
        why: String,
    },
}
