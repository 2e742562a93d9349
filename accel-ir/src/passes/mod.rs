//! The passes that need no device, each a module with one job and tests of its own.
//!
//! Order at a site's first run: [`resolve`] (unique names, captures), [`extract`] (the
//! paper's Algorithm 1: the site plus exactly the functions it reaches), [`classify`]
//! (functional or imperative, and the per-backend rules), [`lift`] (lambda lifting).

pub mod classify;
pub mod extract;
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
    #[error("function `{func}` uses `{name}`, which is neither a parameter nor a local of it")]
    UnboundInFunction { func: String, name: String },
    #[error("call of `{name}`, which is not an #[accel] function known to this program")]
    UnknownFunction { name: String },
    #[error("recursion is not supported in accelerated code: {cycle}")]
    Recursion { cycle: String },
    #[error("the IR of `{name}` could not be read: {message}")]
    Corrupt { name: String, message: String },
    #[error(
        "accelerated code uses no parallel operation (map, map2, reduce, scan, flatten, create, \
         parallel_loop); it would run sequentially, so it is not worth accelerating"
    )]
    NoParallelOp,
    #[error(
        "accelerated code mixes functional operations ({functional}) with parallel_loop \
         ({imperative}); one accelerate! site runs on one backend: split it into two sites"
    )]
    Mixed {
        functional: String,
        imperative: String,
    },
    #[error("type error in accelerated code: {message}")]
    Type { message: String },
    #[error("in imperative code (parallel_loop), {what} at line {}: {why}", loc.line)]
    Imperative { what: String, loc: Loc, why: String },
}
