//! The intermediate representation of accel, modelled on the paper's PMExpr: a small typed
//! expression language with parallel operations (`map map2 reduce scan flatten create
//! parallel_loop`), tensors and records, plus the passes that need no device.
//!
//! The front end (`accel-macros`) builds this IR from Rust syntax at compile time and embeds
//! it, serialized with serde, in the program; the runtime assembles a site's program from it
//! on the site's first run.
//!
//! ```
//! use accel_ir::{Expr, ParOp};
//! let e = Expr::par(ParOp::Reduce, vec![Expr::fn_ref("add"), Expr::int(0), Expr::var("v")]);
//! assert_eq!(e.to_string(), "(reduce add 0 v)");
//! ```

#![warn(missing_docs)]

mod expr;
mod print;
mod program;
mod types;

pub mod consts;
pub mod methods;
pub mod ops;
pub mod passes;

pub use expr::{BinOp, Expr, Lit, Loc, MatchArm, ParOp, Pat, Stmt, UnOp};
pub use program::{FnDef, Param, Program, SiteDef};
pub use types::{Records, ScalarType, Type};
